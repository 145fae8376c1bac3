/* The `device` key and the CUDA probe as seen from builds with and without
 * the CUDA backend (device.h); the probe itself lives in
 * src/nn/cuda/cuda_backend.c. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/fileio.h"
#include "core/rng.h"
#include "core/timer.h"
#include "nn/backend.h"
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
    if (strcmp(text, "auto") == 0)
        out->kind = ZT_DEVICE_AUTO;
    else if (strcmp(text, "cpu") == 0)
        out->kind = ZT_DEVICE_CPU;
    else if (strcmp(text, "cuda") == 0)
        out->kind = ZT_DEVICE_CUDA;
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
    if (d.kind == ZT_DEVICE_AUTO)
        snprintf(buf, cap, "auto");
    else if (d.kind == ZT_DEVICE_CPU)
        snprintf(buf, cap, "cpu");
    else if (d.index == 0)
        snprintf(buf, cap, "cuda");
    else
        snprintf(buf, cap, "cuda:%d", d.index);
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
    return zt_fail(
        ZT_ERR_UNSUPPORTED,
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

zt_status zt_device_time_forward(zt_net *net, int B, double seconds, double *per_call)
{
    const zt_net_config *cfg = zt_net_config_of(net);
    size_t obs_n = (size_t)B * cfg->in_h * cfg->in_w * cfg->in_c;
    float *obs = zt_xmalloc(obs_n * sizeof(float));
    float *pol = zt_xmalloc((size_t)B * cfg->num_actions * sizeof(float));
    float *val = zt_xmalloc((size_t)B * 3 * sizeof(float));
    zt_rng r;
    zt_rng_seed(&r, 12, (uint64_t)B);
    for (size_t i = 0; i < obs_n; i++) obs[i] = zt_rng_uniform(&r) < 0.3 ? 1.0f : 0.0f;
    zt_status st = zt_net_reserve(net, B);
    for (int i = 0; i < 3 && st == ZT_OK; i++) st = zt_net_forward(net, B, obs, pol, val);
    long calls = 0;
    uint64_t t0 = zt_now_ns(), t = t0;
    while (st == ZT_OK && (calls < 3 || (double)(t - t0) * 1e-9 < seconds)) {
        st = zt_net_forward(net, B, obs, pol, val);
        calls++;
        t = zt_now_ns();
    }
    if (st == ZT_OK) *per_call = (double)(t - t0) * 1e-9 / (double)calls;
    free(obs);
    free(pol);
    free(val);
    return st;
}

/* The key of a cached crossover: one line without the number. */
static void crossover_key(const zt_net_config *cfg, zt_precision prec, int threads, char *buf,
                          size_t cap)
{
    char gpu[256] = "?", net[512];
    if (zt_cuda_gpu_name(0, gpu, sizeof gpu) != ZT_OK) snprintf(gpu, sizeof gpu, "?");
    zt_net_config_format(cfg, net, sizeof net);
    snprintf(buf, cap, "gpu=%s precision=%s threads=%d net=%s", gpu, zt_precision_name(prec),
             threads, net);
}

/* The cached crossover for `key` from path, or -1. */
static int cached_crossover(const char *path, const char *key)
{
    char *data;
    size_t len;
    if (zt_read_file(path, &data, &len) != ZT_OK) return -1;
    int found = -1;
    for (char *line = data; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = '\0';
        char *space = strchr(line, ' ');
        if (space && strcmp(space + 1, key) == 0) {
            if (strncmp(line, "never ", 6) == 0)
                found = INT_MAX;
            else {
                char *end;
                long v = strtol(line, &end, 10);
                if (end == space && v >= 1 && v < INT_MAX) found = (int)v;
            }
        }
        line = nl ? nl + 1 : NULL;
    }
    free(data);
    return found;
}

/* Appends (or replaces) key's line in path, written atomically. */
static zt_status cache_crossover(const char *path, const char *key, int crossover)
{
    char *old = NULL;
    size_t old_len = 0;
    if (zt_read_file(path, &old, &old_len) != ZT_OK) old = NULL;
    size_t cap = old_len + strlen(key) + 64;
    char *out = zt_xmalloc(cap);
    size_t n = 0;
    for (char *line = old; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = '\0';
        char *space = strchr(line, ' ');
        if (!(space && strcmp(space + 1, key) == 0))
            n += (size_t)snprintf(out + n, cap - n, "%s\n", line);
        line = nl ? nl + 1 : NULL;
    }
    if (crossover == INT_MAX)
        n += (size_t)snprintf(out + n, cap - n, "never %s\n", key);
    else
        n += (size_t)snprintf(out + n, cap - n, "%d %s\n", crossover, key);
    zt_status st = zt_write_file_atomic(path, out, n);
    free(old);
    free(out);
    return st;
}

/* Both devices timed at batch 1, 2, 4, ...: the first size of the GPU's
 * winning streak that reached two sizes (or the largest), INT_MAX if the
 * CPU wins throughout. */
static zt_status measure_crossover(const zt_net_config *cfg, const char *cpu_backend,
                                   zt_precision prec, int threads, int *crossover)
{
    zt_net *cpu = NULL, *gpu = NULL;
    zt_status st = zt_net_new(cfg, "cuda", prec, 1, &gpu);
    if (st == ZT_OK) {
        const zt_nn_backend *be;
        zt_precision cprec = prec;
        if (zt_nn_backend_find(cpu_backend, &be) == ZT_OK && !be->supports(prec))
            cprec = ZT_PRECISION_AUTO;
        st = zt_net_new(cfg, cpu_backend, cprec, threads, &cpu);
    }
    if (st == ZT_OK) {
        zt_rng r;
        zt_rng_seed(&r, 7, 0);
        zt_net_init(cpu, &r);
        zt_rng_seed(&r, 7, 0);
        zt_net_init(gpu, &r);
    }
    *crossover = INT_MAX;
    int streak_start = -1, streak = 0;
    for (int B = 1; B <= 4096 && st == ZT_OK; B *= 2) {
        double tc = 0, tg = 0;
        st = zt_device_time_forward(cpu, B, 0.03, &tc);
        if (st == ZT_OK) st = zt_device_time_forward(gpu, B, 0.03, &tg);
        if (st != ZT_OK) break;
        if (tg < tc) {
            if (streak++ == 0) streak_start = B;
            if (streak == 2) break;
        } else {
            streak = 0;
        }
    }
    if (st == ZT_OK && streak > 0) *crossover = streak_start;
    zt_net_free(cpu);
    zt_net_free(gpu);
    return st;
}

zt_status zt_device_resolve(zt_device d, const zt_net_config *cfg, const char *cpu_backend,
                            zt_precision prec, int threads, const char *cache_dir,
                            const char **backend)
{
    char why[200];
    if (d.kind != ZT_DEVICE_AUTO || zt_cuda_gpu_count(why, sizeof why) == 0)
        return zt_device_backend(d, cpu_backend, backend);
    ZT_TRY(zt_cuda_use_gpu(0));
    if (prec == ZT_PRECISION_AUTO) prec = ZT_PRECISION_BF16;
    char key[1024], path[4096] = "";
    crossover_key(cfg, prec, threads, key, sizeof key);
    int crossover = -1;
    if (cache_dir) {
        snprintf(path, sizeof path, "%s/device_crossover.txt", cache_dir);
        crossover = cached_crossover(path, key);
    }
    bool cached = crossover > 0;
    if (!cached) {
        char msg[ZT_MESSAGE_MAX];
        zt_status st = measure_crossover(cfg, cpu_backend, prec, threads, &crossover);
        if (st != ZT_OK) {
            snprintf(msg, sizeof msg, "%s", zt_error_message());
            return zt_fail(st, "device=auto: measuring the GPU crossover: %s", msg);
        }
        if (cache_dir) ZT_TRY(cache_crossover(path, key, crossover));
    }
    zt_nn_graph g;
    zt_nn_graph_build(&g, cfg);
    zt_routed_set_crossover(&g, crossover);
    zt_nn_graph_free(&g);
    char gpu[256] = "";
    zt_cuda_gpu_name(0, gpu, sizeof gpu);
    if (crossover == INT_MAX)
        fprintf(stderr, "device auto: the CPU was faster than %s at every batch up to 4096%s\n",
                gpu, cached ? " (cached)" : "");
    else
        fprintf(stderr,
                "device auto: batches of %d and more run on %s, smaller ones on the CPU%s\n",
                crossover, gpu, cached ? " (cached)" : "");
    *backend = "routed";
    return ZT_OK;
}
