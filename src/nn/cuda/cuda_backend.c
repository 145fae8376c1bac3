/* The CUDA backend (issue 12): the graph of backend.h on one NVIDIA GPU,
 * matrix products through cuBLAS (bf16 tensor cores with fp32 accumulation,
 * or fp32), the rest in kernels.cu.
 *
 * Layout: every activation and gradient is an fp32 NHWC device array of
 * its tensor (cap x size). A conv is an implicit GEMM done explicitly:
 * im2col writes the B*H*W x k*k*C operand (bf16 or fp32), whose column
 * order (ky, kx, c) is the OHWI weight's row, so Y = col W^T is one GEMM;
 * a dense layer is the same with k = 1 over the flattened input. Backward:
 * dW += col^T dY (beta 1 straight into the device gradient), dcol = dY W
 * and col2im gathers dcol into dx (1x1 and dense accumulate into dx
 * directly). In bf16 the GEMM operands (weights, im2col output, incoming
 * gradient) are bf16 and everything else fp32, a little more precise than
 * the reference's emulation, which rounds every activation.
 *
 * Inference runs a separate program over the graph with batch norm folded
 * (zt_nn_graph_fold_bn, host side, redone lazily after parameters or running
 * statistics change), each GEMM's bias, a following residual add and a
 * following ReLU/tanh fused into one epilogue. In bf16 a convolution (and a
 * small dense layer) is one kernel, zt_cu_conv_fused: the implicit GEMM
 * done implicitly, gather, tensor-core product and epilogue in one launch
 * (ZT_CUDA_IMPLICIT=0 turns it off, for comparison).
 *
 * Host traffic: parameters and running statistics go up in params_changed;
 * inputs and outputs pass through pinned buffers with asynchronous copies
 * on the plan's stream. With the optimizer on the host, parameter
 * gradients are summed on the device and come down once per backward, and
 * the trainer's params_changed sends the updated weights up. With the
 * optimizer here (opt_attach, what nn/train.c does when it can: weights,
 * gradients and moments stay on the device), nothing comes down per step
 * but two sums (the gradient's norm and the L2 term); the host parameters
 * are refreshed on demand (params_pull: a net's readers, the inference
 * fold). Updated running statistics come down after a training forward
 * that updates them, so the host's state array stays the truth. `threads` is
 * unused: one stream per plan, a plan used by one thread at a time.
 *
 * CUDA graphs (on unless ZT_CUDA_GRAPHS=0 when the plan is made): an
 * inference call of at most GRAPH_MAX_BATCH rows is captured
 * once per batch size (input copy, every kernel and GEMM, output copy) and
 * replayed, which saves the launch overhead that dominates small batches.
 * cuBLAS gets a workspace of its own so that nothing allocates during
 * capture; graphs die with the buffers they point into (reserve). */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "core/alloc.h"
#include "nn/backend.h"
#include "nn/cuda/kernels.h"
#include "nn/device.h"

/* Declared for device.c, which is built with or without this file. */
int zt_cuda_probe(char *why, size_t cap);
zt_status zt_cuda_device_name(int index, char *buf, size_t cap);
zt_status zt_cuda_set_default_device(int index);

/* ---- the probe ---- */

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static int probe_count;
static char probe_why[512];
static int default_device;
static pthread_mutex_t default_lock = PTHREAD_MUTEX_INITIALIZER;

static void probe(void)
{
    /* The static runtime loads the driver's library itself; without it
     * every call answers "insufficient driver", which misleads. */
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!driver) {
        snprintf(probe_why, sizeof probe_why,
                 "the NVIDIA driver library libcuda.so.1 is not installed");
        return;
    }
    dlclose(driver);
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        snprintf(probe_why, sizeof probe_why, "cudaGetDeviceCount: %s", cudaGetErrorString(e));
        (void)cudaGetLastError();
        probe_count = 0;
        return;
    }
    if (n == 0) {
        snprintf(probe_why, sizeof probe_why, "the driver reports no device");
        return;
    }
    /* A device counts when this build's kernels run on it (sm_90 code and
     * compute_90 PTX: Hopper and later). */
    struct cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess && cudaSetDevice(0) == cudaSuccess &&
        !zt_cu_kernels_runnable()) {
        snprintf(probe_why, sizeof probe_why,
                 "%s (compute capability %d.%d) cannot run this build's kernels "
                 "(CMAKE_CUDA_ARCHITECTURES)",
                 prop.name, prop.major, prop.minor);
        (void)cudaGetLastError();
        return;
    }
    probe_count = n;
}

int zt_cuda_probe(char *why, size_t cap)
{
    pthread_once(&probe_once, probe);
    if (probe_count == 0 && cap) {
        size_t n = strlen(probe_why);
        if (n >= cap) n = cap - 1;
        memcpy(why, probe_why, n);
        why[n] = '\0';
    }
    return probe_count;
}

zt_status zt_cuda_device_name(int index, char *buf, size_t cap)
{
    char why[200];
    int n = zt_cuda_probe(why, sizeof why);
    if (n == 0) return zt_fail(ZT_ERR_UNSUPPORTED, "no CUDA GPU found: %s", why);
    if (index < 0 || index >= n)
        return zt_fail(ZT_ERR_INVALID, "no CUDA GPU %d (this machine has %d)", index, n);
    struct cudaDeviceProp prop;
    cudaError_t e = cudaGetDeviceProperties(&prop, index);
    if (e != cudaSuccess)
        return zt_fail(ZT_ERR_UNSUPPORTED, "CUDA GPU %d: %s", index, cudaGetErrorString(e));
    snprintf(buf, cap, "%s", prop.name);
    return ZT_OK;
}

zt_status zt_cuda_set_default_device(int index)
{
    char why[200];
    int n = zt_cuda_probe(why, sizeof why);
    if (n == 0) return zt_fail(ZT_ERR_UNSUPPORTED, "no CUDA GPU found: %s", why);
    if (index < 0 || index >= n)
        return zt_fail(ZT_ERR_INVALID, "no CUDA GPU %d (this machine has %d)", index, n);
    pthread_mutex_lock(&default_lock);
    default_device = index;
    pthread_mutex_unlock(&default_lock);
    return ZT_OK;
}

/* ---- the plan ---- */

enum {
    GRAPH_MAX_BATCH = 256,
    GRAPH_WORKSPACE = 32 << 20,
    IMPLICIT_MIN_ROWS = 4096 /* the fused kernel from here (docs/cuda.md) */
};

/* A captured inference call for one batch size. */
typedef struct graph_entry {
    int B;
    int io; /* the pinned pair it copies through (zt_nn_plan.io) */
    cudaGraphExec_t exec;
} graph_entry;

/* One step of the inference program: op `op` of the folded graph writing
 * tensor `out`, with a fused residual input (-1: none) and activation. */
typedef struct infer_step {
    int op;
    int out;
    int resid;
    int act;
} infer_step;

/* Device copies of one graph's parameters: fp32 arrays laid out as the
 * host's, and the conv/dense weights in bf16 at 16-byte aligned offsets
 * (tensor cores want aligned operands). */
typedef struct dev_params {
    float *params;
    float *state;
    uint16_t *wlow;
    size_t *wlow_off; /* per op: offset into wlow (conv/dense only) */
    size_t wlow_len;
} dev_params;

struct zt_nn_plan {
    const zt_nn_graph *g;
    float *params, *state; /* the net's host arrays */
    zt_precision prec;
    bool bf16;
    int device;
    cudaStream_t stream;
    cublasHandle_t blas;

    dev_params train; /* over g */
    dev_params infer; /* over fg, the folded graph */
    zt_nn_graph fg;
    bool fold_dirty;
    infer_step *steps;
    int nsteps;

    int cap;
    bool cap_training;
    float **act;                /* per tensor of g (training) */
    float **grad;               /* per tensor of g (training) */
    float **fact;               /* per tensor of fg (inference) */
    float **mean, **invstd;     /* per op of g: C (bn) or cap (ln) */
    float *ln_mean, *ln_invstd; /* inference layer norm scratch, cap */
    float *scale, *shift;       /* batch norm scratch, widest C */
    double *sums;               /* 2 x widest C */
    float *d_grads;             /* param_floats */
    float *d_outs;              /* output gradients going up (training) */
    void *col;                  /* im2col output */
    float *dcol;                /* its gradient (training) */
    void *dylow;                /* the incoming gradient in bf16 (training) */
    float *h_in, *h_out;        /* pinned */
    /* forward_submit's slots: slot 0 copies through h_in/h_out, slot 1
     * through its own pinned pair; io says which pair the inference
     * program being queued uses. done[s] is recorded after slot s's
     * outputs come down; slot_B[s] > 0 while slot s is in flight. */
    float *h_in1, *h_out1;
    int io;
    cudaEvent_t done[2];
    int slot_B[2];
    float *h_buf;               /* pinned, max(param_floats, state_floats) */
    /* The optimizer on the device (opt_attach): moments, the decay flags,
     * two double sums; `stale` while the host parameters are older than
     * train.params. */
    bool opt, adamw, stale;
    float *d_m, *d_v;
    unsigned char *d_decay;
    double *d_norms;
    bool use_graphs;            /* unless ZT_CUDA_GRAPHS=0 */
    bool use_implicit;          /* unless ZT_CUDA_IMPLICIT=0 (implicit_gemm) */
    long implicit_min_rows;     /* ZT_CUDA_IMPLICIT_MIN_ROWS, else IMPLICIT_MIN_ROWS */
    int implicit_variant;       /* ZT_CUDA_IMPLICIT_VARIANT (ZT_CU_CONV_*), else -1 */
    void *blas_workspace;       /* cuBLAS's, with graphs */
    graph_entry *graphs;
    int ngraphs, graphs_cap;
};

static zt_status cu_fail(const char *what, cudaError_t e)
{
    (void)cudaGetLastError(); /* clear a sticky launch error for the next call */
    return zt_fail(e == cudaErrorMemoryAllocation ? ZT_ERR_NOMEM : ZT_ERR_UNSUPPORTED,
                   "cuda: %s: %s", what, cudaGetErrorString(e));
}

#define CU(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) return cu_fail(#call, e_);                                          \
    } while (0)

#define BLAS(call)                                                                                 \
    do {                                                                                           \
        cublasStatus_t b_ = (call);                                                                \
        if (b_ != CUBLAS_STATUS_SUCCESS)                                                           \
            return zt_fail(ZT_ERR_UNSUPPORTED, "cublas: %s: %s", #call,                            \
                           cublasGetStatusString(b_));                                             \
    } while (0)

static bool is_gemm(const zt_nn_op *op)
{
    return op->kind == ZT_OP_CONV || op->kind == ZT_OP_DENSE;
}

static size_t param_off(const zt_nn_graph *g, int id)
{
    return g->params[id].offset;
}

static int consumers(const zt_nn_graph *g, int t)
{
    int n = 0;
    for (int i = 0; i < g->nops; i++) n += (g->ops[i].in[0] == t) + (g->ops[i].in[1] == t);
    for (int o = 0; o < g->noutputs; o++) n += g->outputs[o] == t;
    return n;
}

static int consumer(const zt_nn_graph *g, int t)
{
    for (int i = 0; i < g->nops; i++)
        if (g->ops[i].in[0] == t || g->ops[i].in[1] == t) return i;
    return -1;
}

static int producer(const zt_nn_graph *g, int t)
{
    for (int i = 0; i < g->nops; i++)
        if (g->ops[i].out == t) return i;
    return -1; /* the graph's input */
}

/* The inference program over fg: a GEMM absorbs a residual add whose other
 * input is already computed and then a ReLU or tanh, each when it is the
 * only consumer of what came before and not a graph output. */
static void build_program(zt_nn_plan *p)
{
    const zt_nn_graph *g = &p->fg;
    bool *done = zt_xcalloc((size_t)g->nops + 1, sizeof *done);
    p->steps = zt_xmalloc(((size_t)g->nops + 1) * sizeof *p->steps);
    p->nsteps = 0;
    for (int i = 0; i < g->nops; i++) {
        if (done[i]) continue;
        const zt_nn_op *op = &g->ops[i];
        infer_step st = {.op = i, .out = op->out, .resid = -1, .act = ZT_CU_ACT_NONE};
        if (is_gemm(op)) {
            int j;
            if (consumers(g, st.out) == 1 && (j = consumer(g, st.out)) >= 0 &&
                g->ops[j].kind == ZT_OP_ADD && g->ops[j].in[0] != g->ops[j].in[1]) {
                int other = g->ops[j].in[0] == st.out ? g->ops[j].in[1] : g->ops[j].in[0];
                if (producer(g, other) < i) {
                    st.resid = other;
                    st.out = g->ops[j].out;
                    done[j] = true;
                }
            }
            if (consumers(g, st.out) == 1 && (j = consumer(g, st.out)) >= 0 &&
                (g->ops[j].kind == ZT_OP_RELU || g->ops[j].kind == ZT_OP_TANH)) {
                st.act = g->ops[j].kind == ZT_OP_RELU ? ZT_CU_ACT_RELU : ZT_CU_ACT_TANH;
                st.out = g->ops[j].out;
                done[j] = true;
            }
        }
        p->steps[p->nsteps++] = st;
    }
    free(done);
}

static void dev_params_free(dev_params *d)
{
    cudaFree(d->params);
    cudaFree(d->state);
    cudaFree(d->wlow);
    free(d->wlow_off);
    memset(d, 0, sizeof *d);
}

static zt_status dev_params_alloc(const zt_nn_graph *g, bool bf16, dev_params *d)
{
    CU(cudaMalloc((void **)&d->params, (g->param_floats + 1) * sizeof(float)));
    CU(cudaMalloc((void **)&d->state, (g->state_floats + 1) * sizeof(float)));
    d->wlow_off = zt_xcalloc((size_t)g->nops + 1, sizeof *d->wlow_off);
    if (!bf16) return ZT_OK;
    size_t len = 0;
    for (int i = 0; i < g->nops; i++) {
        if (!is_gemm(&g->ops[i])) continue;
        d->wlow_off[i] = len;
        len += (g->params[g->ops[i].p[0]].count + 7) / 8 * 8;
    }
    d->wlow_len = len;
    CU(cudaMalloc((void **)&d->wlow, (len + 8) * sizeof(uint16_t)));
    return ZT_OK;
}

/* Rounds d's conv/dense weights to their bf16 copies (bf16 plans). */
static void refresh_low(zt_nn_plan *p, const zt_nn_graph *g, dev_params *d)
{
    if (!p->bf16) return;
    for (int i = 0; i < g->nops; i++) {
        const zt_nn_op *op = &g->ops[i];
        if (!is_gemm(op)) continue;
        const zt_nn_param *w = &g->params[op->p[0]];
        zt_cu_cast(p->stream, d->params + w->offset, d->wlow + d->wlow_off[i], true, w->count);
    }
}

/* Uploads host params/state into d and rounds the weights to bf16. */
static zt_status dev_params_upload(zt_nn_plan *p, const zt_nn_graph *g, dev_params *d,
                                   const float *params, const float *state)
{
    memcpy(p->h_buf, params, g->param_floats * sizeof(float));
    CU(cudaMemcpyAsync(d->params, p->h_buf, g->param_floats * sizeof(float), cudaMemcpyHostToDevice,
                       p->stream));
    refresh_low(p, g, d);
    /* The pinned buffer is reused for the state: wait for the first copy. */
    CU(cudaStreamSynchronize(p->stream));
    if (g->state_floats) {
        memcpy(p->h_buf, state, g->state_floats * sizeof(float));
        CU(cudaMemcpyAsync(d->state, p->h_buf, g->state_floats * sizeof(float),
                           cudaMemcpyHostToDevice, p->stream));
        CU(cudaStreamSynchronize(p->stream));
    }
    CU(cudaGetLastError());
    return ZT_OK;
}

static zt_status cuda_params_pull(zt_nn_plan *p);

static zt_status refold(zt_nn_plan *p)
{
    /* the fold is made on the host, from the host's parameters */
    ZT_TRY(cuda_params_pull(p));
    zt_nn_graph tmp;
    float *fparams, *fstate;
    zt_nn_graph_fold_bn(p->g, p->params, p->state, &tmp, &fparams, &fstate);
    ZT_ASSERT(tmp.param_floats == p->fg.param_floats && tmp.nops == p->fg.nops);
    zt_nn_graph_free(&tmp);
    zt_status s = dev_params_upload(p, &p->fg, &p->infer, fparams, fstate);
    free(fparams);
    free(fstate);
    if (s == ZT_OK) p->fold_dirty = false;
    return s;
}

static zt_status use_device(const zt_nn_plan *p)
{
    CU(cudaSetDevice(p->device));
    return ZT_OK;
}

static bool cuda_supports(zt_precision prec)
{
    char why[200];
    if (zt_cuda_probe(why, sizeof why) == 0) return false;
    return prec == ZT_PRECISION_FP32 || prec == ZT_PRECISION_BF16;
}

static zt_precision cuda_auto_precision(void)
{
    return ZT_PRECISION_BF16;
}

static void free_graphs(zt_nn_plan *p)
{
    for (int i = 0; i < p->ngraphs; i++) cudaGraphExecDestroy(p->graphs[i].exec);
    p->ngraphs = 0;
}

static void free_buffers(zt_nn_plan *p)
{
    free_graphs(p);
    for (int t = 0; t < p->g->ntensors; t++) {
        cudaFree(p->act[t]);
        cudaFree(p->grad[t]);
        p->act[t] = p->grad[t] = NULL;
    }
    for (int t = 0; t < p->fg.ntensors; t++) {
        cudaFree(p->fact[t]);
        p->fact[t] = NULL;
    }
    for (int i = 0; i < p->g->nops; i++) {
        cudaFree(p->mean[i]);
        cudaFree(p->invstd[i]);
        p->mean[i] = p->invstd[i] = NULL;
    }
    cudaFree(p->ln_mean);
    cudaFree(p->ln_invstd);
    cudaFree(p->col);
    cudaFree(p->dcol);
    cudaFree(p->dylow);
    cudaFree(p->d_outs);
    cudaFreeHost(p->h_in);
    cudaFreeHost(p->h_out);
    cudaFreeHost(p->h_in1);
    cudaFreeHost(p->h_out1);
    p->h_in1 = p->h_out1 = NULL;
    p->ln_mean = p->ln_invstd = NULL;
    p->col = p->dylow = NULL;
    p->dcol = p->d_outs = NULL;
    p->h_in = p->h_out = NULL;
    p->cap = 0;
    p->cap_training = false;
}

static void cuda_plan_free(zt_nn_plan *p)
{
    if (!p) return;
    cudaSetDevice(p->device);
    if (p->stream) cudaStreamSynchronize(p->stream);
    if (p->act) free_buffers(p);
    free(p->act);
    free(p->grad);
    free(p->fact);
    free(p->mean);
    free(p->invstd);
    free(p->steps);
    free(p->graphs);
    cudaFree(p->blas_workspace);
    dev_params_free(&p->train);
    dev_params_free(&p->infer);
    cudaFree(p->scale);
    cudaFree(p->shift);
    cudaFree(p->sums);
    cudaFree(p->d_grads);
    cudaFree(p->d_m);
    cudaFree(p->d_v);
    cudaFree(p->d_decay);
    cudaFree(p->d_norms);
    cudaFreeHost(p->h_buf);
    for (int i = 0; i < 2; i++)
        if (p->done[i]) cudaEventDestroy(p->done[i]);
    if (p->blas) cublasDestroy(p->blas);
    if (p->stream) cudaStreamDestroy(p->stream);
    zt_nn_graph_free(&p->fg);
    (void)cudaGetLastError();
    free(p);
}

static void cuda_params_changed(zt_nn_plan *p)
{
    /* The interface gives this no status: a failure here is a broken
     * device (out of memory was ruled out at plan_new), so it stops. */
    zt_status s = use_device(p);
    if (s == ZT_OK) s = dev_params_upload(p, p->g, &p->train, p->params, p->state);
    if (s != ZT_OK) {
        fprintf(stderr, "zeroth: %s\n", zt_error_message());
        ZT_ASSERT(s == ZT_OK);
    }
    p->stale = false; /* the host's arrays are the truth again */
    p->fold_dirty = true;
}

static zt_status plan_init(zt_nn_plan *p)
{
    const zt_nn_graph *g = p->g;
    ZT_TRY(use_device(p));
    CU(cudaStreamCreateWithFlags(&p->stream, cudaStreamNonBlocking));
    BLAS(cublasCreate(&p->blas));
    BLAS(cublasSetStream(p->blas, p->stream));
    /* fp32 stays IEEE fp32 products (no TF32), as the reference. */
    BLAS(cublasSetMathMode(p->blas, CUBLAS_DEFAULT_MATH));
    const char *graphs = getenv("ZT_CUDA_GRAPHS");
    p->use_graphs = !(graphs && strcmp(graphs, "0") == 0);
    const char *implicit = getenv("ZT_CUDA_IMPLICIT");
    p->use_implicit = !(implicit && strcmp(implicit, "0") == 0);
    const char *min_rows = getenv("ZT_CUDA_IMPLICIT_MIN_ROWS");
    p->implicit_min_rows = min_rows ? atol(min_rows) : IMPLICIT_MIN_ROWS;
    const char *variant = getenv("ZT_CUDA_IMPLICIT_VARIANT");
    p->implicit_variant = variant ? atoi(variant) : -1;
    if (p->implicit_variant < ZT_CU_CONV_BK32_1 || p->implicit_variant > ZT_CU_CONV_BK64_2)
        p->implicit_variant = -1;
    if (p->use_graphs) {
        CU(cudaMalloc(&p->blas_workspace, GRAPH_WORKSPACE));
        BLAS(cublasSetWorkspace(p->blas, p->blas_workspace, GRAPH_WORKSPACE));
    }
    float *fparams, *fstate;
    zt_nn_graph_fold_bn(g, p->params, p->state, &p->fg, &fparams, &fstate);
    free(fparams);
    free(fstate);
    build_program(p);
    p->act = zt_xcalloc((size_t)g->ntensors, sizeof *p->act);
    p->grad = zt_xcalloc((size_t)g->ntensors, sizeof *p->grad);
    p->fact = zt_xcalloc((size_t)p->fg.ntensors, sizeof *p->fact);
    p->mean = zt_xcalloc((size_t)g->nops + 1, sizeof *p->mean);
    p->invstd = zt_xcalloc((size_t)g->nops + 1, sizeof *p->invstd);
    ZT_TRY(dev_params_alloc(g, p->bf16, &p->train));
    ZT_TRY(dev_params_alloc(&p->fg, p->bf16, &p->infer));
    int widest = 1;
    for (int t = 0; t < g->ntensors; t++)
        if (g->tensors[t].c > widest) widest = g->tensors[t].c;
    CU(cudaMalloc((void **)&p->scale, (size_t)widest * sizeof(float)));
    CU(cudaMalloc((void **)&p->shift, (size_t)widest * sizeof(float)));
    CU(cudaMalloc((void **)&p->sums, 2 * (size_t)widest * sizeof(double)));
    CU(cudaMalloc((void **)&p->d_grads, (g->param_floats + 1) * sizeof(float)));
    CU(cudaMemsetAsync(p->d_grads, 0, (g->param_floats + 1) * sizeof(float), p->stream));
    size_t hb = g->param_floats;
    if (g->state_floats > hb) hb = g->state_floats;
    if (p->fg.param_floats > hb) hb = p->fg.param_floats;
    if (p->fg.state_floats > hb) hb = p->fg.state_floats;
    CU(cudaMallocHost((void **)&p->h_buf, (hb + 1) * sizeof(float)));
    return dev_params_upload(p, g, &p->train, p->params, p->state);
}

static zt_status cuda_plan_new(const zt_nn_graph *g, float *params, float *state, zt_precision prec,
                               int threads, zt_nn_plan **out)
{
    (void)threads;
    char why[200];
    if (zt_cuda_probe(why, sizeof why) == 0)
        return zt_fail(ZT_ERR_UNSUPPORTED, "no CUDA GPU found: %s", why);
    zt_nn_plan *p = zt_xcalloc(1, sizeof *p);
    p->g = g;
    p->params = params;
    p->state = state;
    p->prec = prec;
    p->bf16 = prec == ZT_PRECISION_BF16;
    pthread_mutex_lock(&default_lock);
    p->device = default_device;
    pthread_mutex_unlock(&default_lock);
    p->fold_dirty = true;
    zt_status s = plan_init(p);
    if (s != ZT_OK) {
        char msg[ZT_MESSAGE_MAX];
        snprintf(msg, sizeof msg, "%s", zt_error_message());
        cuda_plan_free(p);
        return zt_fail(s, "%s", msg);
    }
    *out = p;
    return ZT_OK;
}

/* The GEMM operand sizes of op i of graph g: rows M per sample, K. */
static void gemm_dims(const zt_nn_graph *g, const zt_nn_op *op, int *H, int *W, int *C, int *k)
{
    zt_nn_shape s = g->tensors[op->in[0]];
    if (op->kind == ZT_OP_CONV) {
        *H = s.h;
        *W = s.w;
        *C = s.c;
        *k = op->k;
    } else {
        *H = *W = 1;
        *C = (int)zt_nn_shape_size(s);
        *k = 1;
    }
}

static zt_status alloc_dev(void **ptr, size_t bytes)
{
    CU(cudaMalloc(ptr, bytes ? bytes : 16));
    return ZT_OK;
}

static zt_status reserve_buffers(zt_nn_plan *p, int cap, bool training)
{
    const zt_nn_graph *g = p->g;
    size_t col = 1, outs = 1;
    for (int i = 0; i < g->nops; i++) {
        const zt_nn_op *op = &g->ops[i];
        if (!is_gemm(op)) continue;
        int H, W, C, k;
        gemm_dims(g, op, &H, &W, &C, &k);
        size_t n = (size_t)cap * H * W * k * k * C;
        if (n > col) col = n;
        size_t o = (size_t)cap * zt_nn_shape_size(g->tensors[op->out]);
        if (o > outs) outs = o;
    }
    size_t lowsz = p->bf16 ? sizeof(uint16_t) : sizeof(float);
    ZT_TRY(alloc_dev(&p->col, col * lowsz));
    for (int t = 0; t < p->fg.ntensors; t++)
        ZT_TRY(alloc_dev((void **)&p->fact[t],
                         (size_t)cap * zt_nn_shape_size(p->fg.tensors[t]) * sizeof(float)));
    ZT_TRY(alloc_dev((void **)&p->ln_mean, (size_t)cap * sizeof(float)));
    ZT_TRY(alloc_dev((void **)&p->ln_invstd, (size_t)cap * sizeof(float)));
    size_t in_n = (size_t)cap * zt_nn_shape_size(g->tensors[g->input]), out_n = 0;
    for (int o = 0; o < g->noutputs; o++)
        out_n += (size_t)cap * zt_nn_shape_size(g->tensors[g->outputs[o]]);
    if (training && in_n > out_n) out_n = in_n; /* d_in comes down through h_out too */
    CU(cudaMallocHost((void **)&p->h_in, in_n * sizeof(float)));
    CU(cudaMallocHost((void **)&p->h_out, out_n * sizeof(float)));
    CU(cudaMallocHost((void **)&p->h_in1, in_n * sizeof(float)));
    CU(cudaMallocHost((void **)&p->h_out1, out_n * sizeof(float)));
    if (!training) return ZT_OK;
    for (int t = 0; t < g->ntensors; t++) {
        size_t bytes = (size_t)cap * zt_nn_shape_size(g->tensors[t]) * sizeof(float);
        ZT_TRY(alloc_dev((void **)&p->act[t], bytes));
        ZT_TRY(alloc_dev((void **)&p->grad[t], bytes));
    }
    for (int i = 0; i < g->nops; i++) {
        const zt_nn_op *op = &g->ops[i];
        size_t n = op->kind == ZT_OP_BN   ? (size_t)g->tensors[op->out].c
                   : op->kind == ZT_OP_LN ? (size_t)cap
                                          : 0;
        if (n == 0) continue;
        ZT_TRY(alloc_dev((void **)&p->mean[i], n * sizeof(float)));
        ZT_TRY(alloc_dev((void **)&p->invstd[i], n * sizeof(float)));
    }
    ZT_TRY(alloc_dev((void **)&p->dcol, col * sizeof(float)));
    ZT_TRY(alloc_dev((void **)&p->d_outs, out_n * sizeof(float)));
    if (p->bf16) ZT_TRY(alloc_dev(&p->dylow, outs * sizeof(uint16_t)));
    return ZT_OK;
}

static zt_status cuda_reserve(zt_nn_plan *p, int max_batch, bool training)
{
    if (max_batch <= p->cap && (!training || p->cap_training)) return ZT_OK;
    if (max_batch < p->cap) max_batch = p->cap;
    training = training || p->cap_training;
    ZT_TRY(use_device(p));
    CU(cudaStreamSynchronize(p->stream));
    free_buffers(p);
    zt_status s = reserve_buffers(p, max_batch, training);
    if (s != ZT_OK) {
        char msg[ZT_MESSAGE_MAX];
        snprintf(msg, sizeof msg, "%s", zt_error_message());
        free_buffers(p);
        return zt_fail(s, "batch %d on the GPU: %s", max_batch, msg);
    }
    p->cap = max_batch;
    p->cap_training = training;
    return ZT_OK;
}

/* ---- the ops ---- */

static cudaDataType_t low_type(const zt_nn_plan *p)
{
    return p->bf16 ? CUDA_R_16BF : CUDA_R_32F;
}

/* The weight operand of GEMM op i: bf16 copy or fp32 parameters. */
static const void *weight_ptr(const zt_nn_plan *p, const zt_nn_graph *g, const dev_params *d, int i)
{
    if (p->bf16) return d->wlow + d->wlow_off[i];
    return d->params + param_off(g, g->ops[i].p[0]);
}

/* The GEMM operand of x: x itself (fp32 1x1 or dense), else im2col's. */
static const void *operand(zt_nn_plan *p, const float *x, int B, int H, int W, int C, int k)
{
    if (!p->bf16 && k == 1) return x;
    zt_cu_im2col(p->stream, x, p->col, p->bf16, B, H, W, C, k);
    return p->col;
}

/* y = conv/dense(x) without bias: Y (M x O) = col (M x K) W^T. */
static zt_status gemm_forward(zt_nn_plan *p, const zt_nn_graph *g, const dev_params *d, int i,
                              int B, const float *x, float *y)
{
    const zt_nn_op *op = &g->ops[i];
    int H, W, C, k;
    gemm_dims(g, op, &H, &W, &C, &k);
    int O = g->tensors[op->out].c, M = B * H * W, K = k * k * C;
    const void *a = operand(p, x, B, H, W, C, k);
    const float one = 1.0f, zero = 0.0f;
    BLAS(cublasGemmEx(p->blas, CUBLAS_OP_T, CUBLAS_OP_N, O, M, K, &one, weight_ptr(p, g, d, i),
                      low_type(p), K, a, low_type(p), K, &zero, y, CUDA_R_32F, O,
                      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return ZT_OK;
}

static const float *bias_ptr(const zt_nn_graph *g, const dev_params *d, const zt_nn_op *op)
{
    return op->p[1] >= 0 ? d->params + param_off(g, op->p[1]) : NULL;
}

/* Whether a forward pass on B rows runs op i of g (fg in inference) as one
 * implicit-GEMM kernel (zt_cu_conv_fused): in bf16, convolutions and dense
 * layers of at most 64 K weights (the heads; wide layers stay on cuBLAS,
 * faster on them at large batches) over at least implicit_min_rows output
 * rows (below, there are few blocks, each walking all of K alone, and
 * im2col + cuBLAS is faster: docs/cuda.md has the measured crossover). fp32
 * keeps cuBLAS, as the reference. */
static bool implicit_gemm(const zt_nn_plan *p, const zt_nn_graph *g, int i, int B)
{
    if (!p->bf16 || !p->use_implicit) return false;
    const zt_nn_op *op = &g->ops[i];
    zt_nn_shape in = g->tensors[op->in[0]];
    if (op->kind == ZT_OP_CONV) return (long)B * in.h * in.w >= p->implicit_min_rows;
    return B >= p->implicit_min_rows &&
           (size_t)g->tensors[op->out].c * zt_nn_shape_size(in) <= 65536;
}

/* y = act(op i (x) + bias + resid) through zt_cu_conv_fused, in its K-32
 * two-stage shape (on an H100 the fastest or within 1 % of it from batch
 * 128 to 4096 of the Connect Four net, docs/cuda.md), or the one
 * ZT_CUDA_IMPLICIT_VARIANT names. */
static void conv_fused(const zt_nn_plan *p, const zt_nn_graph *g, const dev_params *d, int i,
                       int B, const float *x, const float *resid, int act, float *y)
{
    const zt_nn_op *op = &g->ops[i];
    int H, W, C, k;
    gemm_dims(g, op, &H, &W, &C, &k);
    int variant = p->implicit_variant < 0 ? ZT_CU_CONV_BK32_2 : p->implicit_variant;
    zt_cu_conv_fused(p->stream, variant, x, weight_ptr(p, g, d, i), bias_ptr(g, d, op), resid, act,
                     y, B, H, W, C, g->tensors[op->out].c, k);
}

/* The pinned input and output buffers of the pair p->io. */
static float *io_in(const zt_nn_plan *p)
{
    return p->io ? p->h_in1 : p->h_in;
}

static float *io_out(const zt_nn_plan *p)
{
    return p->io ? p->h_out1 : p->h_out;
}

/* The input goes up from io_in, which the caller filled. */
static zt_status queue_upload(zt_nn_plan *p, int B, float *dst)
{
    size_t n = (size_t)B * zt_nn_shape_size(p->g->tensors[p->g->input]);
    CU(cudaMemcpyAsync(dst, io_in(p), n * sizeof(float), cudaMemcpyHostToDevice, p->stream));
    return ZT_OK;
}

static zt_status upload_input(zt_nn_plan *p, int B, const float *in, float *dst)
{
    memcpy(p->h_in, in, (size_t)B * zt_nn_shape_size(p->g->tensors[p->g->input]) * sizeof(float));
    return queue_upload(p, B, dst);
}

/* The graph outputs (device arrays src[o]) come down into io_out. */
static zt_status queue_download(zt_nn_plan *p, int B, float *const *src)
{
    const zt_nn_graph *g = p->g;
    size_t off = 0;
    for (int o = 0; o < g->noutputs; o++) {
        size_t n = (size_t)B * zt_nn_shape_size(g->tensors[g->outputs[o]]);
        CU(cudaMemcpyAsync(io_out(p) + off, src[o], n * sizeof(float), cudaMemcpyDeviceToHost,
                           p->stream));
        off += n;
    }
    return ZT_OK;
}

/* Copies the B rows of outputs in the pinned buffer h to the caller's
 * outs. */
static void copy_outputs(const zt_nn_plan *p, int B, const float *h, float *const *outs)
{
    const zt_nn_graph *g = p->g;
    size_t off = 0;
    for (int o = 0; o < g->noutputs; o++) {
        size_t n = (size_t)B * zt_nn_shape_size(g->tensors[g->outputs[o]]);
        memcpy(outs[o], h + off, n * sizeof(float));
        off += n;
    }
}

/* Waits for the stream, then copies h_out to the caller's outs. */
static zt_status finish_outputs(zt_nn_plan *p, int B, float *const *outs)
{
    CU(cudaStreamSynchronize(p->stream));
    CU(cudaGetLastError());
    copy_outputs(p, B, p->h_out, outs);
    return ZT_OK;
}

static zt_status download_outputs(zt_nn_plan *p, int B, float *const *src, float *const *outs)
{
    ZT_TRY(queue_download(p, B, src));
    return finish_outputs(p, B, outs);
}

/* Queues one inference call: h_in up, the program, outputs into h_out. */
static zt_status infer_queue(zt_nn_plan *p, int B)
{
    const zt_nn_graph *g = &p->fg;
    const dev_params *d = &p->infer;
    ZT_TRY(queue_upload(p, B, p->fact[g->input]));
    for (int s = 0; s < p->nsteps; s++) {
        const infer_step *st = &p->steps[s];
        const zt_nn_op *op = &g->ops[st->op];
        const float *x = p->fact[op->in[0]];
        float *y = p->fact[st->out];
        zt_nn_shape sh = g->tensors[op->in[0]];
        size_t n = (size_t)B * zt_nn_shape_size(g->tensors[op->out]);
        switch (op->kind) {
        case ZT_OP_CONV:
        case ZT_OP_DENSE: {
            int O = g->tensors[op->out].c;
            if (implicit_gemm(p, g, st->op, B)) {
                conv_fused(p, g, d, st->op, B, x, st->resid >= 0 ? p->fact[st->resid] : NULL,
                           st->act, y);
                break;
            }
            ZT_TRY(gemm_forward(p, g, d, st->op, B, x, y));
            zt_cu_epilogue(p->stream, y, n / (size_t)O, O, bias_ptr(g, d, op),
                           st->resid >= 0 ? p->fact[st->resid] : NULL, st->act);
            break;
        }
        case ZT_OP_BN: {
            size_t rows = (size_t)B * sh.h * sh.w;
            zt_cu_bn_finalize(p->stream, NULL, rows, sh.c, d->params + param_off(g, op->p[0]),
                              d->params + param_off(g, op->p[1]), d->state + param_off(g, op->p[2]),
                              d->state + param_off(g, op->p[3]), false, false, NULL, NULL, p->scale,
                              p->shift);
            zt_cu_bn_apply(p->stream, x, y, rows, sh.c, p->scale, p->shift);
            break;
        }
        case ZT_OP_LN:
            zt_cu_ln_forward(p->stream, x, y, B, (int)zt_nn_shape_size(sh),
                             d->params + param_off(g, op->p[0]), d->params + param_off(g, op->p[1]),
                             p->ln_mean, p->ln_invstd);
            break;
        case ZT_OP_RELU:
            zt_cu_relu(p->stream, x, y, n);
            break;
        case ZT_OP_TANH:
            zt_cu_tanh(p->stream, x, y, n);
            break;
        case ZT_OP_ADD:
            zt_cu_add(p->stream, x, p->fact[op->in[1]], y, n);
            break;
        }
    }
    float *src[4];
    for (int o = 0; o < g->noutputs; o++) src[o] = p->fact[g->outputs[o]];
    return queue_download(p, B, src);
}

/* The captured call for batch B, captured now if new; NULL when capture
 * fails (graphs are then off for this plan, and the call runs plainly). */
static cudaGraphExec_t graph_for(zt_nn_plan *p, int B)
{
    for (int i = 0; i < p->ngraphs; i++)
        if (p->graphs[i].B == B && p->graphs[i].io == p->io) return p->graphs[i].exec;
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    if (cudaStreamBeginCapture(p->stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
        (void)cudaGetLastError();
        p->use_graphs = false;
        return NULL;
    }
    zt_status s = infer_queue(p, B);
    cudaError_t e = cudaStreamEndCapture(p->stream, &graph);
    if (s == ZT_OK && e == cudaSuccess) e = cudaGraphInstantiate(&exec, graph, 0);
    if (graph) cudaGraphDestroy(graph);
    if (s != ZT_OK || e != cudaSuccess) {
        (void)cudaGetLastError();
        fprintf(stderr, "zeroth: cuda: CUDA graph capture failed (%s); running without graphs\n",
                s != ZT_OK ? zt_error_message() : cudaGetErrorString(e));
        p->use_graphs = false;
        return NULL;
    }
    p->graphs = zt_xgrow(p->graphs, &p->graphs_cap, p->ngraphs + 1, sizeof *p->graphs);
    p->graphs[p->ngraphs++] = (graph_entry){.B = B, .io = p->io, .exec = exec};
    return exec;
}

/* Queues an inference call on B inputs `in` through the pinned pair io:
 * the input into its buffer, then the captured call for B or the program. */
static zt_status infer_launch(zt_nn_plan *p, int io, int B, const float *in)
{
    if (p->fold_dirty) ZT_TRY(refold(p));
    p->io = io;
    memcpy(io_in(p), in, (size_t)B * zt_nn_shape_size(p->g->tensors[p->g->input]) * sizeof(float));
    cudaGraphExec_t exec = p->use_graphs && B <= GRAPH_MAX_BATCH ? graph_for(p, B) : NULL;
    zt_status s = ZT_OK;
    if (exec) {
        cudaError_t e = cudaGraphLaunch(exec, p->stream);
        if (e != cudaSuccess) s = cu_fail("cudaGraphLaunch", e);
    } else {
        s = infer_queue(p, B);
    }
    p->io = 0;
    return s;
}

static zt_status infer_forward(zt_nn_plan *p, int B, const float *in, float *const *outs)
{
    ZT_TRY(infer_launch(p, 0, B, in));
    return finish_outputs(p, B, outs);
}

static zt_status train_forward(zt_nn_plan *p, int B, const float *in, float *const *outs,
                               bool update)
{
    const zt_nn_graph *g = p->g;
    const dev_params *d = &p->train;
    ZT_TRY(upload_input(p, B, in, p->act[g->input]));
    for (int i = 0; i < g->nops; i++) {
        const zt_nn_op *op = &g->ops[i];
        const float *x = p->act[op->in[0]];
        float *y = p->act[op->out];
        zt_nn_shape sh = g->tensors[op->in[0]];
        size_t n = (size_t)B * zt_nn_shape_size(g->tensors[op->out]);
        switch (op->kind) {
        case ZT_OP_CONV:
        case ZT_OP_DENSE: {
            int O = g->tensors[op->out].c;
            if (implicit_gemm(p, g, i, B)) { /* the same product, bias on the way out */
                conv_fused(p, g, d, i, B, x, NULL, ZT_CU_ACT_NONE, y);
                break;
            }
            ZT_TRY(gemm_forward(p, g, d, i, B, x, y));
            zt_cu_epilogue(p->stream, y, n / (size_t)O, O, bias_ptr(g, d, op), NULL,
                           ZT_CU_ACT_NONE);
            break;
        }
        case ZT_OP_BN: {
            size_t rows = (size_t)B * sh.h * sh.w;
            zt_cu_bn_stats(p->stream, x, rows, sh.c, p->sums);
            zt_cu_bn_finalize(p->stream, p->sums, rows, sh.c, d->params + param_off(g, op->p[0]),
                              d->params + param_off(g, op->p[1]), d->state + param_off(g, op->p[2]),
                              d->state + param_off(g, op->p[3]), true, update, p->mean[i],
                              p->invstd[i], p->scale, p->shift);
            zt_cu_bn_apply(p->stream, x, y, rows, sh.c, p->scale, p->shift);
            break;
        }
        case ZT_OP_LN:
            zt_cu_ln_forward(p->stream, x, y, B, (int)zt_nn_shape_size(sh),
                             d->params + param_off(g, op->p[0]), d->params + param_off(g, op->p[1]),
                             p->mean[i], p->invstd[i]);
            break;
        case ZT_OP_RELU:
            zt_cu_relu(p->stream, x, y, n);
            break;
        case ZT_OP_TANH:
            zt_cu_tanh(p->stream, x, y, n);
            break;
        case ZT_OP_ADD:
            zt_cu_add(p->stream, x, p->act[op->in[1]], y, n);
            break;
        }
    }
    float *src[4];
    for (int o = 0; o < g->noutputs; o++) src[o] = p->act[g->outputs[o]];
    ZT_TRY(download_outputs(p, B, src, outs));
    if (update && g->state_floats) {
        /* The running statistics moved: bring them home (the host arrays
         * are what is saved) and refold before the next inference. */
        CU(cudaMemcpyAsync(p->h_buf, d->state, g->state_floats * sizeof(float),
                           cudaMemcpyDeviceToHost, p->stream));
        CU(cudaStreamSynchronize(p->stream));
        memcpy(p->state, p->h_buf, g->state_floats * sizeof(float));
        p->fold_dirty = true;
    }
    return ZT_OK;
}

static zt_status cuda_forward(zt_nn_plan *p, int B, const float *in, float *const *outs,
                              bool training, bool update_stats)
{
    ZT_TRY(use_device(p));
    ZT_TRY(cuda_reserve(p, B, training));
    return training ? train_forward(p, B, in, outs, update_stats) : infer_forward(p, B, in, outs);
}

/* forward_submit / forward_wait (backend.h): slot s's call copies through
 * its own pinned pair and records done[s]; the two slots' programs share
 * the device activations, which the stream's order keeps apart. */
static zt_status cuda_forward_submit(zt_nn_plan *p, int slot, int B, const float *in)
{
    ZT_TRY(use_device(p));
    if (B > p->cap) {
        /* growing frees the pinned buffers the other slot's outputs come down into */
        if (p->slot_B[0] || p->slot_B[1])
            return zt_fail(ZT_ERR_INVALID, "cuda: batch %d beyond the %d reserved while a call "
                                           "is in flight", B, p->cap);
        ZT_TRY(cuda_reserve(p, B, false));
    }
    for (int i = 0; i < 2; i++)
        if (!p->done[i]) CU(cudaEventCreateWithFlags(&p->done[i], cudaEventDisableTiming));
    ZT_TRY(infer_launch(p, slot, B, in));
    CU(cudaEventRecord(p->done[slot], p->stream));
    p->slot_B[slot] = B;
    return ZT_OK;
}

static zt_status cuda_forward_wait(zt_nn_plan *p, int slot, float *const *outs)
{
    int B = p->slot_B[slot];
    ZT_ASSERT(B > 0);
    p->slot_B[slot] = 0;
    ZT_TRY(use_device(p));
    CU(cudaEventSynchronize(p->done[slot]));
    CU(cudaGetLastError());
    copy_outputs(p, B, slot ? p->h_out1 : p->h_out, outs);
    return ZT_OK;
}

static zt_status gemm_backward(zt_nn_plan *p, int i, int B, const float *dy, float *dx)
{
    const zt_nn_graph *g = p->g;
    const zt_nn_op *op = &g->ops[i];
    int H, W, C, k;
    gemm_dims(g, op, &H, &W, &C, &k);
    int O = g->tensors[op->out].c, M = B * H * W, K = k * k * C;
    const void *a = operand(p, p->act[op->in[0]], B, H, W, C, k);
    const void *d = dy;
    if (p->bf16) {
        zt_cu_cast(p->stream, dy, p->dylow, true, (size_t)M * O);
        d = p->dylow;
    }
    const float one = 1.0f, zero = 0.0f;
    float *gw = p->d_grads + param_off(g, op->p[0]);
    /* dW (O x K) += dY^T col: column-major K x O = col (K x M) dY^T. */
    BLAS(cublasGemmEx(p->blas, CUBLAS_OP_N, CUBLAS_OP_T, K, O, M, &one, a, low_type(p), K, d,
                      low_type(p), O, &one, gw, CUDA_R_32F, K, CUBLAS_COMPUTE_32F,
                      CUBLAS_GEMM_DEFAULT));
    if (op->p[1] >= 0)
        zt_cu_colsum_add(p->stream, dy, (size_t)M, O, p->d_grads + param_off(g, op->p[1]));
    if (!dx) return ZT_OK;
    /* dcol (M x K) = dY W: column-major K x M = W (K x O) dY^T (O x M).
     * With k = 1 dcol is dx's layout: accumulate into it directly. */
    const void *w = weight_ptr(p, g, &p->train, i);
    if (k == 1) {
        BLAS(cublasGemmEx(p->blas, CUBLAS_OP_N, CUBLAS_OP_N, K, M, O, &one, w, low_type(p), K, d,
                          low_type(p), O, &one, dx, CUDA_R_32F, K, CUBLAS_COMPUTE_32F,
                          CUBLAS_GEMM_DEFAULT));
        return ZT_OK;
    }
    BLAS(cublasGemmEx(p->blas, CUBLAS_OP_N, CUBLAS_OP_N, K, M, O, &one, w, low_type(p), K, d,
                      low_type(p), O, &zero, p->dcol, CUDA_R_32F, K, CUBLAS_COMPUTE_32F,
                      CUBLAS_GEMM_DEFAULT));
    zt_cu_col2im_add(p->stream, p->dcol, dx, B, H, W, C, k);
    return ZT_OK;
}

static zt_status cuda_backward(zt_nn_plan *p, int B, const float *const *d_outs, float *grads,
                               float *d_in)
{
    const zt_nn_graph *g = p->g;
    ZT_ASSERT(p->cap_training && B <= p->cap);
    ZT_TRY(use_device(p));
    const dev_params *dp = &p->train;
    for (int t = 0; t < g->ntensors; t++)
        CU(cudaMemsetAsync(p->grad[t], 0,
                           (size_t)B * zt_nn_shape_size(g->tensors[t]) * sizeof(float), p->stream));
    /* grads == NULL (opt_attach): onto the device accumulator; else from
     * an empty one */
    ZT_ASSERT(grads || p->opt);
    if (grads) CU(cudaMemsetAsync(p->d_grads, 0, g->param_floats * sizeof(float), p->stream));
    /* The output gradients go up through h_out, then into grad (+=: an
     * output may also feed another op). */
    size_t off = 0;
    for (int o = 0; o < g->noutputs; o++) {
        size_t n = (size_t)B * zt_nn_shape_size(g->tensors[g->outputs[o]]);
        memcpy(p->h_out + off, d_outs[o], n * sizeof(float));
        off += n;
    }
    CU(cudaMemcpyAsync(p->d_outs, p->h_out, off * sizeof(float), cudaMemcpyHostToDevice,
                       p->stream));
    off = 0;
    for (int o = 0; o < g->noutputs; o++) {
        size_t n = (size_t)B * zt_nn_shape_size(g->tensors[g->outputs[o]]);
        zt_cu_add_into(p->stream, p->grad[g->outputs[o]], p->d_outs + off, n);
        off += n;
    }
    for (int i = g->nops - 1; i >= 0; i--) {
        const zt_nn_op *op = &g->ops[i];
        const float *dy = p->grad[op->out];
        const float *y = p->act[op->out];
        float *dx = op->in[0] == g->input && !d_in ? NULL : p->grad[op->in[0]];
        zt_nn_shape sh = g->tensors[op->in[0]];
        size_t n = (size_t)B * zt_nn_shape_size(g->tensors[op->out]);
        switch (op->kind) {
        case ZT_OP_CONV:
        case ZT_OP_DENSE:
            ZT_TRY(gemm_backward(p, i, B, dy, dx));
            break;
        case ZT_OP_BN:
            zt_cu_bn_backward(p->stream, dy, p->act[op->in[0]], dx, (size_t)B * sh.h * sh.w, sh.c,
                              p->mean[i], p->invstd[i], dp->params + param_off(g, op->p[0]),
                              p->sums, p->d_grads + param_off(g, op->p[0]),
                              p->d_grads + param_off(g, op->p[1]));
            break;
        case ZT_OP_LN:
            zt_cu_ln_backward(p->stream, dy, p->act[op->in[0]], dx, B, (int)zt_nn_shape_size(sh),
                              dp->params + param_off(g, op->p[0]), p->mean[i], p->invstd[i],
                              p->d_grads + param_off(g, op->p[0]),
                              p->d_grads + param_off(g, op->p[1]));
            break;
        case ZT_OP_RELU:
            if (dx) zt_cu_relu_backward(p->stream, y, dy, dx, n);
            break;
        case ZT_OP_TANH:
            if (dx) zt_cu_tanh_backward(p->stream, y, dy, dx, n);
            break;
        case ZT_OP_ADD: {
            float *dx1 = op->in[1] == g->input && !d_in ? NULL : p->grad[op->in[1]];
            if (dx) zt_cu_add_into(p->stream, dx, dy, n);
            if (dx1) zt_cu_add_into(p->stream, dx1, dy, n);
            break;
        }
        }
    }
    if (grads) {
        CU(cudaMemcpyAsync(p->h_buf, p->d_grads, g->param_floats * sizeof(float),
                           cudaMemcpyDeviceToHost, p->stream));
        CU(cudaMemsetAsync(p->d_grads, 0, g->param_floats * sizeof(float), p->stream));
    }
    size_t in_n = (size_t)B * zt_nn_shape_size(g->tensors[g->input]);
    if (d_in)
        CU(cudaMemcpyAsync(p->h_out, p->grad[g->input], in_n * sizeof(float),
                           cudaMemcpyDeviceToHost, p->stream));
    if (!grads && !d_in) {
        /* nothing comes down: the next call on the stream waits for this
         * one's kernels, and opt_norms synchronises */
        CU(cudaGetLastError());
        return ZT_OK;
    }
    CU(cudaStreamSynchronize(p->stream));
    CU(cudaGetLastError());
    if (grads)
        for (size_t e = 0; e < g->param_floats; e++) grads[e] += p->h_buf[e];
    if (d_in) memcpy(d_in, p->h_out, in_n * sizeof(float));
    return ZT_OK;
}

/* ---- the optimizer on the device (backend.h: opt_attach ...) ---- */

static zt_status cuda_opt_attach(zt_nn_plan *p, bool adamw, const bool *decay)
{
    const zt_nn_graph *g = p->g;
    size_t n = g->param_floats, bytes = (n + 1) * sizeof(float);
    ZT_TRY(use_device(p));
    if (!p->d_m) CU(cudaMalloc((void **)&p->d_m, bytes));
    if (adamw && !p->d_v) CU(cudaMalloc((void **)&p->d_v, bytes));
    if (!p->d_decay) CU(cudaMalloc((void **)&p->d_decay, n + 1));
    if (!p->d_norms) CU(cudaMalloc((void **)&p->d_norms, 2 * sizeof(double)));
    CU(cudaMemsetAsync(p->d_m, 0, bytes, p->stream));
    if (adamw) CU(cudaMemsetAsync(p->d_v, 0, bytes, p->stream));
    CU(cudaMemsetAsync(p->d_grads, 0, bytes, p->stream));
    /* the flags go up as bytes through the pinned buffer (4 bytes a float) */
    unsigned char *flags = (unsigned char *)p->h_buf;
    for (size_t e = 0; e < n; e++) flags[e] = decay[e] ? 1 : 0;
    CU(cudaMemcpyAsync(p->d_decay, flags, n, cudaMemcpyHostToDevice, p->stream));
    CU(cudaStreamSynchronize(p->stream));
    CU(cudaGetLastError());
    p->opt = true;
    p->adamw = adamw;
    return ZT_OK;
}

static zt_status cuda_opt_norms(zt_nn_plan *p, double *grad_sq, double *decay_sq)
{
    ZT_ASSERT(p->opt);
    size_t n = p->g->param_floats;
    ZT_TRY(use_device(p));
    CU(cudaMemsetAsync(p->d_norms, 0, 2 * sizeof(double), p->stream));
    zt_cu_sumsq(p->stream, p->d_grads, NULL, n, p->d_norms);
    zt_cu_sumsq(p->stream, p->train.params, p->d_decay, n, p->d_norms + 1);
    CU(cudaMemcpyAsync(p->h_buf, p->d_norms, 2 * sizeof(double), cudaMemcpyDeviceToHost,
                       p->stream));
    CU(cudaStreamSynchronize(p->stream));
    CU(cudaGetLastError());
    double sums[2];
    memcpy(sums, p->h_buf, sizeof sums);
    *grad_sq = sums[0];
    *decay_sq = sums[1];
    return ZT_OK;
}

static zt_status cuda_opt_step(zt_nn_plan *p, const zt_nn_opt *o, float clip, const float *grads)
{
    ZT_ASSERT(p->opt && o->adamw == p->adamw && o->t >= 1);
    const zt_nn_graph *g = p->g;
    size_t n = g->param_floats;
    ZT_TRY(use_device(p));
    if (grads) {
        memcpy(p->h_buf, grads, n * sizeof(float));
        CU(cudaMemcpyAsync(p->d_grads, p->h_buf, n * sizeof(float), cudaMemcpyHostToDevice,
                           p->stream));
        CU(cudaStreamSynchronize(p->stream));
    }
    float *w = p->train.params;
    if (o->adamw) {
        /* the host's constants, computed as nn/train.c computes them */
        double bc1 = 1 - pow(o->beta1, (double)o->t), bc2 = 1 - pow(o->beta2, (double)o->t);
        zt_cu_adamw(p->stream, w, p->d_grads, p->d_m, p->d_v, p->d_decay, n,
                    (float)(o->lr / bc1), (float)o->beta1, (float)o->beta2, (float)(1 / bc2),
                    (float)o->eps, (float)(1 - o->lr * o->weight_decay), clip);
    } else {
        zt_cu_sgd_nesterov(p->stream, w, p->d_grads, p->d_m, p->d_decay, n, (float)o->lr,
                           (float)o->momentum, (float)o->weight_decay, clip);
    }
    refresh_low(p, g, &p->train);
    CU(cudaGetLastError());
    p->stale = true;
    p->fold_dirty = true;
    return ZT_OK;
}

static zt_status cuda_opt_moments(zt_nn_plan *p, float *m, float *v, bool upload)
{
    ZT_ASSERT(p->opt && (v != NULL) == p->adamw);
    size_t bytes = p->g->param_floats * sizeof(float);
    ZT_TRY(use_device(p));
    for (int k = 0; k < (v ? 2 : 1); k++) {
        float *host = k == 0 ? m : v, *dev = k == 0 ? p->d_m : p->d_v;
        if (upload) {
            memcpy(p->h_buf, host, bytes);
            CU(cudaMemcpyAsync(dev, p->h_buf, bytes, cudaMemcpyHostToDevice, p->stream));
            CU(cudaStreamSynchronize(p->stream));
        } else {
            CU(cudaMemcpyAsync(p->h_buf, dev, bytes, cudaMemcpyDeviceToHost, p->stream));
            CU(cudaStreamSynchronize(p->stream));
            memcpy(host, p->h_buf, bytes);
        }
    }
    CU(cudaGetLastError());
    return ZT_OK;
}

static zt_status cuda_params_pull(zt_nn_plan *p)
{
    if (!p->stale) return ZT_OK;
    size_t bytes = p->g->param_floats * sizeof(float);
    ZT_TRY(use_device(p));
    CU(cudaMemcpyAsync(p->h_buf, p->train.params, bytes, cudaMemcpyDeviceToHost, p->stream));
    CU(cudaStreamSynchronize(p->stream));
    CU(cudaGetLastError());
    memcpy(p->params, p->h_buf, bytes);
    p->stale = false;
    return ZT_OK;
}

const zt_nn_backend zt_nn_backend_cuda = {
    .name = "cuda",
    .supports = cuda_supports,
    .auto_precision = cuda_auto_precision,
    .plan_new = cuda_plan_new,
    .plan_free = cuda_plan_free,
    .reserve = cuda_reserve,
    .params_changed = cuda_params_changed,
    .forward = cuda_forward,
    .forward_submit = cuda_forward_submit,
    .forward_wait = cuda_forward_wait,
    .backward = cuda_backward,
    .opt_attach = cuda_opt_attach,
    .opt_norms = cuda_opt_norms,
    .opt_step = cuda_opt_step,
    .opt_moments = cuda_opt_moments,
    .params_pull = cuda_params_pull,
};
