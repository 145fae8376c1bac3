/* Which device a net runs on: the `device` config key (auto | cpu | cuda |
 * cuda:N) and what a process can learn about its CUDA GPUs. Built with or
 * without the CUDA backend (ZT_CUDA): without it no GPU is ever found and
 * the reason says why. Strings written are the caller's buffers. */
#ifndef ZT_NN_DEVICE_H
#define ZT_NN_DEVICE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"
#include "nn/nn.h"

typedef enum zt_device_kind {
    ZT_DEVICE_AUTO, /* the GPU where it is faster, else the CPU (docs/cuda.md) */
    ZT_DEVICE_CPU,
    ZT_DEVICE_CUDA,
} zt_device_kind;

typedef struct zt_device {
    zt_device_kind kind;
    int index; /* CUDA device ordinal (cuda:N); 0 for "cuda" */
} zt_device;

/* "auto", "cpu", "cuda" or "cuda:N"; anything else is a one-line error. */
zt_status zt_device_parse(const char *text, zt_device *out);
/* The text form parse accepts ("cuda:1"). */
void zt_device_format(zt_device d, char *buf, size_t cap);

/* Usable CUDA GPUs (0 when the build has no CUDA backend, the driver is
 * missing, or no device runs this build's kernels; *why then says which,
 * in a few words). Probed once per process. */
int zt_cuda_gpu_count(char *why, size_t cap);
/* The name of GPU `index` ("NVIDIA H100 80GB HBM3"), or an error. */
zt_status zt_cuda_gpu_name(int index, char *buf, size_t cap);
/* The GPU that nets created from now on (backend "cuda") run on; fails
 * with "no CUDA GPU found: ..." or an out-of-range index. */
zt_status zt_cuda_use_gpu(int index);

/* The nn backend a net on device `d` uses, for device = cpu or cuda[:N]
 * (cpu: `cpu_backend`, normally "auto"; cuda: "cuda", after selecting the
 * GPU, or "no CUDA GPU found: <why>"). AUTO resolves here to the CPU when
 * no GPU is found and to "cuda" otherwise; callers that route by batch
 * size (the evaluator pool) look at the kind themselves. */
zt_status zt_device_backend(zt_device d, const char *cpu_backend, const char **backend);

/* As zt_device_backend, for nets of architecture cfg at precision prec
 * (CPU side on `threads` threads), where AUTO with a GPU means the routed
 * backend: the batch size from which the GPU is faster is measured (a few
 * seconds: both devices timed at batch sizes 1, 2, 4, ... until the GPU
 * wins twice running) or read from cache_dir/device_crossover.txt (keyed
 * by the GPU, precision, threads and the net's config line; the file is
 * written atomically; cache_dir NULL: no cache), registered for the net's
 * shape and printed as one line on stderr. */
zt_status zt_device_resolve(zt_device d, const zt_net_config *cfg, const char *cpu_backend,
                            zt_precision prec, int threads, const char *cache_dir,
                            const char **backend);

/* Times zt_net_forward of `net` at batch B on random observations: the mean
 * seconds per call over at least `seconds` (after warm-up calls). */
zt_status zt_device_time_forward(zt_net *net, int B, double seconds, double *per_call);

/* The routed backend's crossover for nets of graph g's shape (first batch
 * size run on the GPU; INT_MAX: never). Set by zt_device_resolve. */
struct zt_nn_graph;
void zt_routed_set_crossover(const struct zt_nn_graph *g, int crossover);

#endif
