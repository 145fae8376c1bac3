/* The `device` key and the CUDA probe as seen from builds with and without
 * the CUDA backend (device.h); the probe itself lives in
 * src/nn/cuda/cuda_backend.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/device.h"

#ifdef ZT_HAVE_CUDA
/* src/nn/cuda/cuda_backend.c */
int zt_cuda_probe(char *why, size_t cap);
zt_status zt_cuda_device_name(int index, char *buf, size_t cap);
zt_status zt_cuda_set_default_device(int index);
#endif

zt_status zt_device_parse(const char *text, zt_device *out)
{
    out->index = 0;
    if (strcmp(text, "auto") == 0) out->kind = ZT_DEVICE_AUTO;
    else if (strcmp(text, "cpu") == 0) out->kind = ZT_DEVICE_CPU;
    else if (strcmp(text, "cuda") == 0) out->kind = ZT_DEVICE_CUDA;
    else if (strncmp(text, "cuda:", 5) == 0 && text[5] >= '0' && text[5] <= '9') {
        char *end;
        long v = strtol(text + 5, &end, 10);
        if (*end != '\0' || v > 1024)
            return zt_fail(ZT_ERR_INVALID, "device '%s': the GPU index must be a number 0..1024",
                           text);
        out->kind = ZT_DEVICE_CUDA;
        out->index = (int)v;
    } else {
        return zt_fail(ZT_ERR_INVALID, "unknown device '%s' (known: auto, cpu, cuda, cuda:N)",
                       text);
    }
    return ZT_OK;
}

void zt_device_format(zt_device d, char *buf, size_t cap)
{
    if (d.kind == ZT_DEVICE_AUTO) snprintf(buf, cap, "auto");
    else if (d.kind == ZT_DEVICE_CPU) snprintf(buf, cap, "cpu");
    else if (d.index == 0) snprintf(buf, cap, "cuda");
    else snprintf(buf, cap, "cuda:%d", d.index);
}

int zt_cuda_gpu_count(char *why, size_t cap)
{
#ifdef ZT_HAVE_CUDA
    return zt_cuda_probe(why, cap);
#else
    if (cap) snprintf(why, cap, "this build has no CUDA backend (configure with -DZT_CUDA=ON)");
    return 0;
#endif
}

zt_status zt_cuda_gpu_name(int index, char *buf, size_t cap)
{
#ifdef ZT_HAVE_CUDA
    return zt_cuda_device_name(index, buf, cap);
#else
    (void)index;
    if (cap) buf[0] = '\0';
    return zt_fail(ZT_ERR_UNSUPPORTED,
                   "no CUDA GPU found: this build has no CUDA backend (configure with -DZT_CUDA=ON)");
#endif
}

zt_status zt_cuda_use_gpu(int index)
{
    char why[200];
    int n = zt_cuda_gpu_count(why, sizeof why);
    if (n == 0) return zt_fail(ZT_ERR_UNSUPPORTED, "no CUDA GPU found: %s", why);
    if (index < 0 || index >= n)
        return zt_fail(ZT_ERR_INVALID, "device cuda:%d: this machine has %d CUDA GPU%s (0..%d)",
                       index, n, n == 1 ? "" : "s", n - 1);
#ifdef ZT_HAVE_CUDA
    return zt_cuda_set_default_device(index);
#else
    return ZT_OK;
#endif
}

zt_status zt_device_backend(zt_device d, const char *cpu_backend, const char **backend)
{
    if (d.kind == ZT_DEVICE_CPU) {
        *backend = cpu_backend;
        return ZT_OK;
    }
    if (d.kind == ZT_DEVICE_AUTO) {
        char why[200];
        if (zt_cuda_gpu_count(why, sizeof why) == 0) {
            *backend = cpu_backend;
            return ZT_OK;
        }
    }
    ZT_TRY(zt_cuda_use_gpu(d.index));
    *backend = "cuda";
    return ZT_OK;
}
