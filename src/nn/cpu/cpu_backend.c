/* The oneDNN CPU backend (issue 3): the graph of backend.h compiled to oneDNN
 * primitives through its C API.
 *
 * Layout: every activation is NHWC in memory (a 4-D nhwc descriptor for
 * convolutions, norms, eltwise and binary ops; the same bytes as a 2-D {N,
 * H*W*C} matrix for inner products and layer norm), so the graph's input and
 * outputs need no reorder and oneDNN picks its brgemm kernels; only weights
 * take whatever layout a primitive asks for (format_tag_any), reordered from
 * the host's fp32 OHWI / [out][in] arrays when parameters change. A 1x1
 * conv over a board of one cell runs as an inner product (runs_as_conv).
 *
 * Inference runs a fused program: batch norm folded into the preceding
 * conv/dense (w' = w s, b' = (b - mean) s + beta, s = gamma / sqrt(var +
 * eps)), the residual add as a sum post-op and ReLU/tanh as eltwise
 * post-ops; tensors share a few liveness-assigned buffers. Primitives are
 * built at reserve time for every batch-size bucket (each size up to
 * EXACT_BATCH, then steps 1.5x apart up to the reserved maximum) and a batch
 * is padded to its bucket; padding rows never mix with real ones because
 * inference has no cross-sample op.
 *
 * Training runs with the exact batch size (batch statistics must not see
 * padding), keeping each tensor and its gradient; primitives for the last
 * few batch sizes are cached. Convolutions dominate a step, so their
 * backward passes use oneDNN's fastest kernels: the input gradient is a
 * forward convolution with mirrored weights (W_FLIP, accumulating through a
 * sum post-op), and in bf16 the weight gradient is a few matrix products
 * over rearranged chunks (conv_dw). A ReLU after a batch norm runs inside it
 * (fuse_norm_relu), the inputs of a residual add share its output's
 * gradient buffer, and batch norms over fewer than 16 channels run on the
 * host. Parameter gradients are fp32, added into the caller's host array.
 *
 * bf16: activations and conv/dense weights are bf16, biases, norm parameters
 * and statistics fp32, accumulation fp32 inside oneDNN; weight gradients are
 * produced in fp32. Every primitive uses a user scratchpad from one shared
 * buffer, so an inference call allocates nothing after reserve, nor a
 * training call once its batch size has been seen. Threads: oneDNN's OpenMP runtime takes
 * omp_get_max_threads() of the calling thread, so each call sets it to the plan's count.
 *
 * Winograd (winograd.h, Lavin & Gray 2016): in bf16, 3x3 convs with channels
 * in multiples of 16 run as host steps on our F(2x2, 3x3) kernel instead of
 * a oneDNN primitive, 1.58x fewer multiply-adds on a 6x7 board: in
 * inference with the fused epilogue (folded batch norm as bias, the residual
 * read from its own buffer, ReLU), in training the forward conv, the W_FLIP
 * input gradient and the weight gradient (in place of conv_dw) of bias-free
 * convs. Transformed weights are packed when the host arrays change
 * (fold_dirty, wino_train_stale); the kernels' scratch is the shared
 * SB_SCRATCH buffer. It is used on CPUs without AMX, where it beats
 * oneDNN; with AMX oneDNN's tile convs win. ZT_WINOGRAD=0 or 1 (read at plan
 * creation) overrides that choice. Its products run on bf16 dot products or
 * fp32 FMAs, whichever this core runs faster (ZT_WINOGRAD_FMA=0 or 1
 * overrides).
 *
 * bf16 training batch norms of 16k channels run on the host (bnorm.h) on
 * the plan's threads, ReLU fused as in oneDNN's. */
#define _GNU_SOURCE /* RTLD_DEFAULT */

enum { EXACT_BATCH = 64 }; /* inference batches up to this run unpadded */
#include <cpuid.h>
#include <dlfcn.h>
#include <immintrin.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

#include "core/alloc.h"
#include "nn/backend.h"
#include "nn/cpu/bnorm.h"
#include "nn/cpu/int8.h"
#include "nn/cpu/winograd.h"

#define MAX_ARGS 12
#define TRAIN_SETS 4

enum {
    SB_SCRATCH, /* user scratchpad of every primitive */
    SB_DW,      /* weight gradient in the primitive's layout, before the add */
    SB_COL,     /* the rearranged chunk of a conv_dw step */
    SB_COUNT,
    REF_GRADS = SB_COUNT, /* a memory over the caller's gradient array */
};

enum {
    F_DIN = 1u,    /* only when the caller asks for the input's gradient */
    F_UPDATE = 2u, /* only when running statistics are updated */
};

typedef struct zt_nn_plan plan;
typedef struct conv_dw conv_dw;

typedef struct step {
    dnnl_primitive_t prim; /* NULL: a host step */
    zt_status (*host)(plan *p, const struct step *s);
    dnnl_exec_arg_t args[MAX_ARGS];
    int nargs;
    unsigned flags;
    int op;
    const float *src; /* host steps: what to add or read */
    size_t offset, count;
    conv_dw *dw;
    void *buf[4]; /* host batch norm: x, y or dy, dx, the fused ReLU's output */
    bool acc;     /* host batch norm: add to dx */
    zt_winograd_conv wino; /* Winograd conv: all but the plan's scratch */
    zt_winograd_grad wgrad; /* Winograd weight gradient: all but scratch and grad */
} step;

/* A memory object whose data lives in a shared buffer (or the caller's
 * gradients) and is re-pointed when that moves. */
typedef struct mem_ref {
    dnnl_memory_t mem;
    int buf;
    size_t offset; /* bytes */
} mem_ref;

typedef struct exec_set {
    int batch;
    bool training;
    step *steps;
    int nsteps, cap_steps;
    int nfwd; /* steps [0, nfwd) are the forward pass, the rest backward */
    dnnl_memory_t *mems;
    int nmems, cap_mems;
    mem_ref *refs;
    int nrefs, cap_refs;
    unsigned long last_use;
    /* training: per tensor, where its gradient lives (inputs of an add may
     * share their output's buffer); owned extras */
    void **dptr;
    dnnl_memory_t *wspace; /* per op: its forward's workspace, or NULL */
    conv_dw **dws;
    int ndws, cap_dws;
    void **owned;
    int nowned, cap_owned;
} exec_set;

/* Which copy of an op's weights an entry holds. */
typedef enum wkind {
    W_RAW,  /* the parameters as they are */
    W_FOLD, /* with the following batch norm folded in (inference) */
    W_FLIP, /* a conv's weights mirrored in space with in and out swapped:
             * the input gradient of a stride-1 same-padded convolution is
             * the forward convolution of the output gradient with these */
} wkind;

/* Weights of one conv/dense op (one wkind) in one primitive layout. */
typedef struct weight_entry {
    int op;
    wkind kind;
    bool stale;
    dnnl_memory_desc_t md;
    void *buf; /* owned; NULL when dst wraps the host array */
    dnnl_memory_t src, dst;
    dnnl_primitive_t reorder;
    dnnl_exec_arg_t args[3];
    int nargs;
} weight_entry;

/* One step of the fused inference program. */
typedef struct inode {
    int op;   /* main graph op */
    int bn;   /* batch norm folded into it, or -1 */
    int sum;  /* tensor added by a sum post-op, or -1 */
    int elt;  /* ZT_OP_RELU / ZT_OP_TANH as a post-op, or -1 */
    int src, src1, out;
    bool inplace; /* the output overwrites `sum`'s buffer */
} inode;

typedef struct shared_buf {
    void *ptr;
    size_t bytes;
    size_t need;
} shared_buf;

struct zt_nn_plan {
    const zt_nn_graph *g;
    float *params, *state;
    zt_precision prec;
    dnnl_data_type_t dt;
    size_t dt_size;
    int threads;
    dnnl_engine_t eng;
    dnnl_stream_t stream;
    size_t max_tensor; /* floats per sample of the largest tensor */
    size_t max_param;  /* floats of the largest parameter */
    /* inference program */
    inode *nodes;
    int nnodes;
    int *tslot; /* per tensor: its buffer in the program, or -1 */
    int nslots;
    float **fold_w, **fold_b; /* per op: folded weights and bias (host layout) */
    float **flip_w;           /* per conv op: W_FLIP weights (host layout), or NULL */
    bool fold_dirty;
    bool winograd;      /* bf16 3x3 convs run zt_winograd_run (ZT_WINOGRAD=0: off) */
    bool wino_fma;      /* its products on fp32 FMAs (ZT_WINOGRAD_FMA=0 or 1) */
    void **wino_u;      /* per conv op run that way in inference: folded weights */
    void **wino_fwd, **wino_bwd; /* in training: raw and W_FLIP weights */
    bool wino_train_stale;
    bool host_bnorm; /* bf16 training batch norms of 16k channels run zt_bnorm_* */
    int cap_infer;
    void **slots;
    int *buckets;
    int nbuckets;
    exec_set **infer_sets; /* per bucket */
    /* training */
    int cap_train;
    void **act, **diff, *tmp;
    float **stat_mean, **stat_var; /* per op (bn: C, ln: cap_train) */
    float *dscale, *dshift;        /* bias / gamma / beta gradients before the add */
    int *fused_relu; /* per batch-norm op: the ReLU op run inside it in training, or -1 */
    bool *relu_in_bn; /* per op: a ReLU run inside the batch norm before it */
    exec_set *train_sets[TRAIN_SETS];
    exec_set *last_train;
    /* weights and shared buffers */
    weight_entry *entries;
    int nentries, cap_entries;
    shared_buf sb[SB_COUNT];
    mem_ref *prefs; /* plan-level memories into shared buffers */
    int nprefs, cap_prefs;
    unsigned long clock;
    float *call_grads; /* the gradient array of the backward in progress */
    zt_int8_plan *int8; /* int8 precision: everything runs there (inference only) */
};

/* ---- small helpers ---- */

/* Whether oneDNN runs on AMX tiles on this CPU (and OS). */
static bool dnnl_has_amx(void)
{
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    return ((unsigned)isa & (unsigned)dnnl_cpu_isa_avx512_core_amx) ==
           (unsigned)dnnl_cpu_isa_avx512_core_amx;
}

static zt_status dn_fail(const char *what, dnnl_status_t s)
{
    return zt_fail(ZT_ERR_UNSUPPORTED, "oneDNN %s failed: %s", what, dnnl_status2str(s));
}

#define DN(what, call)                                                                             \
    do {                                                                                           \
        dnnl_status_t dn_s_ = (call);                                                              \
        if (dn_s_ != dnnl_success) return dn_fail(what, dn_s_);                                    \
    } while (0)

static void (*omp_set_threads)(int);
static pthread_once_t omp_once = PTHREAD_ONCE_INIT;

/* libgomp is loaded as oneDNN's dependency; looking it up at run time keeps
 * the build free of an OpenMP flag. */
static void find_omp(void)
{
    void *f = dlsym(RTLD_DEFAULT, "omp_set_num_threads");
    memcpy(&omp_set_threads, &f, sizeof f);
}

/* oneDNN marks every primitive execution as an ITT task for VTune; level 0
 * turns that off (libdnnl's share of a batch-8 call in perf: 1.6 % -> 1.2 %).
 * oneDNN reads the level only from the environment (DNNL_ITT_TASK_LEVEL or
 * ONEDNN_ITT_TASK_LEVEL) at its first execution and has no API for it, and a
 * library must not change its host's environment: the `zeroth` program sets
 * it in main() (src/cli/main.c), and docs/api.md tells library users. */

static void use_threads(const plan *p)
{
    pthread_once(&omp_once, find_omp);
    if (omp_set_threads) omp_set_threads(p->threads);
}

static dnnl_memory_desc_t md_tag(int ndims, const int64_t *dims, dnnl_data_type_t dt,
                                 dnnl_format_tag_t tag)
{
    dnnl_memory_desc_t md;
    dnnl_dims_t d;
    for (int i = 0; i < ndims; i++) d[i] = dims[i];
    dnnl_status_t s = dnnl_memory_desc_init_by_tag(&md, ndims, d, dt, tag);
    ZT_ASSERT(s == dnnl_success);
    return md;
}

/* A tensor of n samples as {N, C, H, W} in NHWC order. */
static dnnl_memory_desc_t md_act(const plan *p, int n, zt_nn_shape s)
{
    int64_t d[4] = {n, s.c, s.h, s.w};
    return md_tag(4, d, p->dt, dnnl_nhwc);
}

/* The same bytes as n rows of f features. */
static dnnl_memory_desc_t md_flat(const plan *p, int n, size_t f)
{
    int64_t d[2] = {n, (int64_t)f};
    return md_tag(2, d, p->dt, dnnl_nc);
}

/* Tensor t of the graph: as NHWC activations, or flat (rows of features:
 * dense layers, and 1x1 convs over one cell, which run as inner products). */
static dnnl_memory_desc_t md_for(const plan *p, int n, int t, bool flat)
{
    zt_nn_shape s = p->g->tensors[t];
    return flat ? md_flat(p, n, zt_nn_shape_size(s)) : md_act(p, n, s);
}

static dnnl_memory_desc_t md_vec(size_t c)
{
    int64_t d[1] = {(int64_t)c};
    return md_tag(1, d, dnnl_f32, dnnl_x);
}

/* Whether op runs on oneDNN as a convolution. A 1x1 conv over a board of
 * one cell (backgammon's MuZero nets, `muzero.flat`) runs as an inner
 * product instead: the same bytes (NHWC of 1x1 is NC, OHWI of 1x1 is OI)
 * and the same sums, where oneDNN's convolution on 1x1 images runs well
 * below its matrix-product speed. */
static bool runs_as_conv(const zt_nn_graph *g, const zt_nn_op *op)
{
    zt_nn_shape in = g->tensors[op->in[0]];
    return op->kind == ZT_OP_CONV && !(op->k == 1 && in.h == 1 && in.w == 1);
}

/* Whether op's oneDNN primitives see its tensors as rows of features. */
static bool runs_flat(const zt_nn_graph *g, const zt_nn_op *op)
{
    return op->kind == ZT_OP_DENSE || op->kind == ZT_OP_LN ||
           (op->kind == ZT_OP_CONV && !runs_as_conv(g, op));
}

/* The host layout of an op's weights: conv OHWI, dense [out][in]. */
static dnnl_memory_desc_t md_user_weights(const plan *p, int op_i, dnnl_data_type_t dt,
                                          dnnl_format_tag_t tag)
{
    const zt_nn_op *op = &p->g->ops[op_i];
    zt_nn_shape in = p->g->tensors[op->in[0]];
    int out_c = p->g->tensors[op->out].c;
    if (runs_as_conv(p->g, op)) {
        int64_t d[4] = {out_c, in.c, op->k, op->k};
        return md_tag(4, d, dt, tag == dnnl_format_tag_any ? tag : dnnl_ohwi);
    }
    int64_t d[2] = {out_c, (int64_t)zt_nn_shape_size(in)};
    return md_tag(2, d, dt, tag == dnnl_format_tag_any ? tag : dnnl_oi);
}

static size_t param_off(const plan *p, int id)
{
    return p->g->params[id].offset;
}

/* Ops reading tensor t, plus one if t is a graph output. */
static int uses(const zt_nn_graph *g, int t)
{
    int n = 0;
    for (int i = 0; i < g->nops; i++) n += (g->ops[i].in[0] == t) + (g->ops[i].in[1] == t);
    for (int i = 0; i < g->noutputs; i++) n += g->outputs[i] == t;
    return n;
}

/* The one op reading t when nothing else does, else -1. */
static int sole_consumer(const zt_nn_graph *g, int t)
{
    if (uses(g, t) != 1) return -1;
    for (int i = 0; i < g->nops; i++)
        if (g->ops[i].in[0] == t || g->ops[i].in[1] == t) return i;
    return -1;
}

/* ---- execution sets: steps, memories, shared buffers ---- */

static zt_status set_mem(exec_set *s, const dnnl_memory_desc_t *md, const plan *p, void *ptr,
                         dnnl_memory_t *out)
{
    s->mems = zt_xgrow(s->mems, &s->cap_mems, s->nmems + 1, sizeof *s->mems);
    DN("memory_create", dnnl_memory_create(out, md, p->eng, ptr));
    s->mems[s->nmems++] = *out;
    return ZT_OK;
}

static void add_ref(mem_ref **refs, int *n, int *cap, dnnl_memory_t mem, int buf, size_t offset)
{
    *refs = zt_xgrow(*refs, cap, *n + 1, sizeof **refs);
    (*refs)[(*n)++] = (mem_ref){mem, buf, offset};
}

static void conv_dw_free(conv_dw *d);

static void set_free(exec_set *s)
{
    if (!s) return;
    for (int i = 0; i < s->ndws; i++) conv_dw_free(s->dws[i]);
    for (int i = 0; i < s->nowned; i++) zt_aligned_free(s->owned[i]);
    free(s->dws);
    free(s->owned);
    free(s->dptr);
    free(s->wspace);
    for (int i = 0; i < s->nsteps; i++)
        if (s->steps[i].prim) dnnl_primitive_destroy(s->steps[i].prim);
    for (int i = 0; i < s->nmems; i++) dnnl_memory_destroy(s->mems[i]);
    free(s->steps);
    free(s->mems);
    free(s->refs);
    free(s);
}

static zt_status create_pd(plan *p, const void *desc, dnnl_post_ops_t po,
                           const_dnnl_primitive_desc_t hint, dnnl_primitive_desc_t *pd)
{
    dnnl_primitive_attr_t attr;
    DN("attr_create", dnnl_primitive_attr_create(&attr));
    dnnl_status_t s = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    if (s == dnnl_success && po) s = dnnl_primitive_attr_set_post_ops(attr, po);
    if (s == dnnl_success) s = dnnl_primitive_desc_create(pd, desc, attr, p->eng, hint);
    dnnl_primitive_attr_destroy(attr);
    if (s != dnnl_success) return dn_fail("primitive_desc_create", s);
    return ZT_OK;
}

static zt_status reorder_pd(plan *p, const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to,
                            bool accumulate, dnnl_primitive_desc_t *pd)
{
    dnnl_primitive_attr_t attr;
    dnnl_post_ops_t po = NULL;
    DN("attr_create", dnnl_primitive_attr_create(&attr));
    dnnl_status_t s = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    if (s == dnnl_success && accumulate) {
        s = dnnl_post_ops_create(&po);
        if (s == dnnl_success) s = dnnl_post_ops_append_sum(po, 1.0f);
        if (s == dnnl_success) s = dnnl_primitive_attr_set_post_ops(attr, po);
    }
    if (s == dnnl_success) s = dnnl_reorder_primitive_desc_create(pd, from, p->eng, to, p->eng, attr);
    if (po) dnnl_post_ops_destroy(po);
    dnnl_primitive_attr_destroy(attr);
    if (s != dnnl_success) return dn_fail("reorder_primitive_desc_create", s);
    return ZT_OK;
}

static step *new_step(exec_set *s)
{
    s->steps = zt_xgrow(s->steps, &s->cap_steps, s->nsteps + 1, sizeof *s->steps);
    step *st = &s->steps[s->nsteps++];
    memset(st, 0, sizeof *st);
    st->op = -1;
    return st;
}

/* Scratchpad argument of pd, pointing into the shared buffer. */
static zt_status scratch_arg(plan *p, const_dnnl_primitive_desc_t pd, exec_set *s,
                             dnnl_exec_arg_t *args, int *nargs)
{
    const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    size_t bytes = md ? dnnl_memory_desc_get_size(md) : 0;
    if (bytes == 0) return ZT_OK;
    if (bytes > p->sb[SB_SCRATCH].need) p->sb[SB_SCRATCH].need = bytes;
    dnnl_memory_t m;
    if (s) {
        ZT_TRY(set_mem(s, md, p, p->sb[SB_SCRATCH].ptr, &m));
        add_ref(&s->refs, &s->nrefs, &s->cap_refs, m, SB_SCRATCH, 0);
    } else {
        DN("memory_create", dnnl_memory_create(&m, md, p->eng, p->sb[SB_SCRATCH].ptr));
        add_ref(&p->prefs, &p->nprefs, &p->cap_prefs, m, SB_SCRATCH, 0);
    }
    ZT_ASSERT(*nargs < MAX_ARGS);
    args[(*nargs)++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, m};
    return ZT_OK;
}

/* Appends a primitive step for pd (destroyed here) with the given args. */
static zt_status prim_step(plan *p, exec_set *s, dnnl_primitive_desc_t pd,
                           const dnnl_exec_arg_t *args, int nargs, unsigned flags)
{
    step *st = new_step(s);
    st->flags = flags;
    memcpy(st->args, args, (size_t)nargs * sizeof *args);
    st->nargs = nargs;
    zt_status z = scratch_arg(p, pd, s, st->args, &st->nargs);
    dnnl_status_t r = z == ZT_OK ? dnnl_primitive_create(&st->prim, pd) : dnnl_success;
    dnnl_primitive_desc_destroy(pd);
    if (z != ZT_OK) return z;
    if (r != dnnl_success) {
        st->prim = NULL;
        return dn_fail("primitive_create", r);
    }
    return ZT_OK;
}

static void repoint(plan *p, const mem_ref *refs, int n)
{
    for (int i = 0; i < n; i++) {
        if (refs[i].buf >= SB_COUNT) continue;
        dnnl_status_t s = dnnl_memory_set_data_handle(
            refs[i].mem, (char *)p->sb[refs[i].buf].ptr + refs[i].offset);
        ZT_ASSERT(s == dnnl_success);
    }
}

/* Grows shared buffers to what the primitives built so far need, and points
 * every memory over them at the new blocks. */
static zt_status grow_shared(plan *p)
{
    bool moved = false;
    for (int b = 0; b < SB_COUNT; b++) {
        shared_buf *sb = &p->sb[b];
        if (sb->need <= sb->bytes) continue;
        void *ptr = zt_aligned_alloc(ZT_CACHE_LINE, sb->need);
        if (!ptr) return zt_fail(ZT_ERR_NOMEM, "no memory for a %zu-byte oneDNN buffer", sb->need);
        zt_aligned_free(sb->ptr);
        sb->ptr = ptr;
        sb->bytes = sb->need;
        moved = true;
    }
    if (!moved) return ZT_OK;
    repoint(p, p->prefs, p->nprefs);
    for (int i = 0; i < p->nbuckets; i++)
        if (p->infer_sets[i]) repoint(p, p->infer_sets[i]->refs, p->infer_sets[i]->nrefs);
    for (int i = 0; i < TRAIN_SETS; i++)
        if (p->train_sets[i]) repoint(p, p->train_sets[i]->refs, p->train_sets[i]->nrefs);
    return ZT_OK;
}

/* ---- weights ---- */

/* The host layout of a conv's W_FLIP weights: OHWI of the mirrored conv,
 * whose outputs are the original's inputs. */
static dnnl_memory_desc_t md_flip_weights(const plan *p, int op_i, dnnl_format_tag_t tag)
{
    const zt_nn_op *op = &p->g->ops[op_i];
    int64_t d[4] = {p->g->tensors[op->in[0]].c, p->g->tensors[op->out].c, op->k, op->k};
    return md_tag(4, d, tag == dnnl_format_tag_any ? p->dt : dnnl_f32, tag);
}

/* The memory holding op's weights of kind `kind` in layout md, creating the
 * copy and its reorder from the host layout the first time. */
static zt_status weight_mem(plan *p, int op_i, wkind kind, const dnnl_memory_desc_t *md,
                            dnnl_memory_t *out)
{
    for (int i = 0; i < p->nentries; i++) {
        weight_entry *e = &p->entries[i];
        if (e->op == op_i && e->kind == kind && dnnl_memory_desc_equal(&e->md, md)) {
            *out = e->dst;
            return ZT_OK;
        }
    }
    p->entries = zt_xgrow(p->entries, &p->cap_entries, p->nentries + 1, sizeof *p->entries);
    weight_entry *e = &p->entries[p->nentries];
    memset(e, 0, sizeof *e);
    e->op = op_i;
    e->kind = kind;
    e->md = *md;
    e->stale = true;
    dnnl_memory_desc_t user = kind == W_FLIP
                                  ? md_flip_weights(p, op_i, dnnl_ohwi)
                                  : md_user_weights(p, op_i, dnnl_f32, dnnl_format_tag_undef);
    if (kind == W_FLIP && !p->flip_w[op_i])
        p->flip_w[op_i] = zt_xmalloc(p->g->params[p->g->ops[op_i].p[0]].count * sizeof(float));
    float *host = kind == W_FOLD   ? p->fold_w[op_i]
                  : kind == W_FLIP ? p->flip_w[op_i]
                                   : p->params + param_off(p, p->g->ops[op_i].p[0]);
    if (kind == W_RAW && dnnl_memory_desc_equal(md, &user)) {
        /* fp32 in the host layout: read the net's array directly. */
        DN("memory_create", dnnl_memory_create(&e->dst, md, p->eng, host));
        p->nentries++;
        *out = e->dst;
        return ZT_OK;
    }
    size_t bytes = dnnl_memory_desc_get_size(md);
    e->buf = zt_aligned_alloc(ZT_CACHE_LINE, bytes);
    if (!e->buf) return zt_fail(ZT_ERR_NOMEM, "no memory for %zu bytes of weights", bytes);
    p->nentries++; /* from here plan_free releases what is made */
    DN("memory_create", dnnl_memory_create(&e->dst, md, p->eng, e->buf));
    DN("memory_create", dnnl_memory_create(&e->src, &user, p->eng, host));
    dnnl_primitive_desc_t pd;
    ZT_TRY(reorder_pd(p, &user, md, false, &pd));
    e->args[0] = (dnnl_exec_arg_t){DNNL_ARG_FROM, e->src};
    e->args[1] = (dnnl_exec_arg_t){DNNL_ARG_TO, e->dst};
    e->nargs = 2;
    zt_status z = scratch_arg(p, pd, NULL, e->args, &e->nargs);
    dnnl_status_t r = z == ZT_OK ? dnnl_primitive_create(&e->reorder, pd) : dnnl_success;
    dnnl_primitive_desc_destroy(pd);
    if (z != ZT_OK) return z;
    if (r != dnnl_success) {
        e->reorder = NULL;
        return dn_fail("primitive_create", r);
    }
    *out = e->dst;
    return ZT_OK;
}

/* Batch norm folded into the conv/dense before it, as zt_nn_graph_fold_bn. */
static void compute_folds(plan *p)
{
    const zt_nn_graph *g = p->g;
    for (int k = 0; k < p->nnodes; k++) {
        const inode *nd = &p->nodes[k];
        if (nd->bn < 0) continue;
        const zt_nn_op *op = &g->ops[nd->op], *bn = &g->ops[nd->bn];
        const zt_nn_param *wp = &g->params[op->p[0]];
        const float *w = p->params + wp->offset;
        const float *b = op->p[1] >= 0 ? p->params + param_off(p, op->p[1]) : NULL;
        const float *gamma = p->params + param_off(p, bn->p[0]);
        const float *beta = p->params + param_off(p, bn->p[1]);
        const float *mean = p->state + param_off(p, bn->p[2]);
        const float *var = p->state + param_off(p, bn->p[3]);
        float *fw = p->fold_w[nd->op], *fb = p->fold_b[nd->op];
        int units = wp->shape[0];
        size_t per_unit = wp->count / (size_t)units;
        for (int u = 0; u < units; u++) {
            double s = gamma[u] / sqrt((double)var[u] + ZT_NN_BN_EPS);
            for (size_t e = 0; e < per_unit; e++)
                fw[(size_t)u * per_unit + e] = (float)(w[(size_t)u * per_unit + e] * s);
            fb[u] = (float)(((b ? b[u] : 0.0) - mean[u]) * s + beta[u]);
        }
    }
}

/* W_FLIP weights of conv op_i: flip[i][kh][kw][o] = w[o][k-1-kh][k-1-kw][i]. */
static void compute_flip(plan *p, int op_i)
{
    const zt_nn_op *op = &p->g->ops[op_i];
    const float *w = p->params + param_off(p, op->p[0]);
    float *f = p->flip_w[op_i];
    int k = op->k, ci = p->g->tensors[op->in[0]].c, co = p->g->tensors[op->out].c;
    for (int o = 0; o < co; o++)
        for (int kh = 0; kh < k; kh++)
            for (int kw = 0; kw < k; kw++) {
                const float *src = w + (((size_t)o * k + kh) * k + kw) * ci;
                size_t fo = ((size_t)(k - 1 - kh) * k + (k - 1 - kw)) * co + o;
                for (int i = 0; i < ci; i++) f[(size_t)i * k * k * co + fo] = src[i];
            }
}

/* The Winograd weights U = G g G^T of every conv the program runs that way,
 * from the folded weights where a batch norm follows. */
static void pack_winograd(plan *p)
{
    const zt_nn_graph *g = p->g;
    for (int k = 0; k < p->nnodes; k++) {
        const inode *nd = &p->nodes[k];
        if (!p->wino_u[nd->op]) continue;
        const zt_nn_op *op = &g->ops[nd->op];
        const float *w = nd->bn >= 0 ? p->fold_w[nd->op] : p->params + param_off(p, op->p[0]);
        zt_winograd_pack_weights(w, g->tensors[op->in[0]].c, g->tensors[op->out].c, false,
                                 p->wino_fma, p->wino_u[nd->op]);
    }
}

/* The training copies: the raw weights for the forward convolution, and
 * mirrored (W_FLIP) for the input gradient. */
static void pack_winograd_train(plan *p)
{
    const zt_nn_graph *g = p->g;
    for (int i = 0; i < g->nops; i++) {
        if (!p->wino_fwd[i]) continue;
        const zt_nn_op *op = &g->ops[i];
        const float *w = p->params + param_off(p, op->p[0]);
        int cin = g->tensors[op->in[0]].c, cout = g->tensors[op->out].c;
        zt_winograd_pack_weights(w, cin, cout, false, p->wino_fma, p->wino_fwd[i]);
        zt_winograd_pack_weights(w, cin, cout, true, p->wino_fma, p->wino_bwd[i]);
    }
    p->wino_train_stale = false;
}

/* Brings the weight copies a pass reads up to date with the host arrays.
 * fold_dirty is set by every change of parameters or statistics. */
static zt_status refresh(plan *p, bool training)
{
    if (!training && p->fold_dirty) {
        compute_folds(p);
        if (p->winograd) pack_winograd(p);
        p->fold_dirty = false;
        for (int i = 0; i < p->nentries; i++)
            if (p->entries[i].kind == W_FOLD) p->entries[i].stale = true;
    }
    if (training && p->wino_train_stale) pack_winograd_train(p);
    for (int i = 0; i < p->nentries; i++) {
        weight_entry *e = &p->entries[i];
        if (!e->stale || (e->kind == W_FOLD && training) || (e->kind == W_FLIP && !training))
            continue;
        if (e->kind == W_FLIP) compute_flip(p, e->op);
        if (e->reorder) DN("reorder", dnnl_primitive_execute(e->reorder, p->stream, e->nargs, e->args));
        e->stale = false;
    }
    return ZT_OK;
}

static void cpu_params_changed(plan *p)
{
    if (p->int8) {
        zt_int8_params_changed(p->int8);
        return;
    }
    /* Lazily: the next pass converts what it reads. */
    p->fold_dirty = true;
    p->wino_train_stale = true;
    for (int i = 0; i < p->nentries; i++) p->entries[i].stale = true;
}

/* ---- the fused inference program ---- */

static void build_program(plan *p)
{
    const zt_nn_graph *g = p->g;
    bool *absorbed = zt_xcalloc((size_t)g->nops + 1, sizeof *absorbed);
    bool *mat = zt_xcalloc((size_t)g->ntensors, sizeof *mat);
    p->nodes = zt_xcalloc((size_t)g->nops + 1, sizeof *p->nodes);
    mat[g->input] = true;
    for (int i = 0; i < g->nops; i++) {
        if (absorbed[i]) continue;
        const zt_nn_op *op = &g->ops[i];
        inode nd = {i, -1, -1, -1, op->in[0], op->in[1], op->out, false};
        if (op->kind == ZT_OP_CONV || op->kind == ZT_OP_DENSE) {
            int cur = op->out, c = sole_consumer(g, cur);
            if (c >= 0 && g->ops[c].kind == ZT_OP_BN) {
                nd.bn = c;
                absorbed[c] = true;
                cur = g->ops[c].out;
                c = sole_consumer(g, cur);
            }
            if (c >= 0 && g->ops[c].kind == ZT_OP_ADD) {
                /* The other summand must exist before this op runs. */
                int other = g->ops[c].in[0] == cur ? g->ops[c].in[1] : g->ops[c].in[0];
                if (other != cur && mat[other]) {
                    nd.sum = other;
                    absorbed[c] = true;
                    cur = g->ops[c].out;
                    c = sole_consumer(g, cur);
                }
            }
            if (c >= 0 && (g->ops[c].kind == ZT_OP_RELU || g->ops[c].kind == ZT_OP_TANH)) {
                nd.elt = g->ops[c].kind;
                absorbed[c] = true;
                cur = g->ops[c].out;
            }
            nd.out = cur;
        }
        mat[nd.out] = true;
        p->nodes[p->nnodes++] = nd;
    }
    /* Buffers by liveness: a tensor's buffer is free after its last reader. */
    int never = p->nnodes + 1;
    int *last = zt_xmalloc((size_t)g->ntensors * sizeof *last);
    for (int t = 0; t < g->ntensors; t++) last[t] = -1;
    for (int k = 0; k < p->nnodes; k++) {
        const inode *nd = &p->nodes[k];
        last[nd->src] = k;
        if (nd->src1 >= 0 && g->ops[nd->op].kind == ZT_OP_ADD) last[nd->src1] = k;
        if (nd->sum >= 0) last[nd->sum] = k;
    }
    for (int o = 0; o < g->noutputs; o++) last[g->outputs[o]] = never;
    p->tslot = zt_xmalloc((size_t)g->ntensors * sizeof *p->tslot);
    for (int t = 0; t < g->ntensors; t++) p->tslot[t] = -1;
    bool *held = zt_xcalloc((size_t)g->ntensors + 1, sizeof *held);
    int nslots = 0;
#define TAKE_SLOT(dst)                                                                             \
    do {                                                                                           \
        int s_ = 0;                                                                                \
        while (s_ < nslots && held[s_]) s_++;                                                      \
        if (s_ == nslots) nslots++;                                                                \
        held[s_] = true;                                                                           \
        (dst) = s_;                                                                                \
    } while (0)
    TAKE_SLOT(p->tslot[g->input]);
    for (int k = 0; k < p->nnodes; k++) {
        inode *nd = &p->nodes[k];
        nd->inplace = nd->sum >= 0 && last[nd->sum] == k && nd->sum != nd->src;
        if (nd->inplace) p->tslot[nd->out] = p->tslot[nd->sum];
        else TAKE_SLOT(p->tslot[nd->out]);
        int reads[3] = {nd->src, g->ops[nd->op].kind == ZT_OP_ADD ? nd->src1 : -1,
                        nd->inplace ? -1 : nd->sum};
        for (int r = 0; r < 3; r++)
            if (reads[r] >= 0 && last[reads[r]] == k) held[p->tslot[reads[r]]] = false;
    }
#undef TAKE_SLOT
    p->nslots = nslots;
    free(held);
    free(last);
    free(mat);
    free(absorbed);
}

/* Whether node nd runs on the Winograd kernel: a bf16 3x3 conv with
 * channels in multiples of 16 (not the stem, whose input has a few planes)
 * and no epilogue beyond bias, residual and ReLU. */
static bool use_winograd(const plan *p, const inode *nd)
{
    const zt_nn_op *op = &p->g->ops[nd->op];
    return p->winograd && op->kind == ZT_OP_CONV &&
           zt_winograd_fits(op->k, p->g->tensors[op->in[0]].c, p->g->tensors[op->out].c) &&
           (nd->elt < 0 || nd->elt == ZT_OP_RELU);
}

/* Whether training runs conv op i (forward, and its input gradient as the
 * forward conv with W_FLIP weights) on the Winograd kernel: as above, and
 * without a bias, whose gradient would need oneDNN's forward descriptor. */
static bool use_winograd_train(const plan *p, int i)
{
    const zt_nn_op *op = &p->g->ops[i];
    return p->winograd && op->kind == ZT_OP_CONV && op->p[1] < 0 &&
           zt_winograd_fits(op->k, p->g->tensors[op->in[0]].c, p->g->tensors[op->out].c);
}

/* A block for conv op i's transformed weights (either direction: the
 * count is symmetric in the channels), or NULL. */
static void *wino_weights(const plan *p, int i)
{
    const zt_nn_op *op = &p->g->ops[i];
    return zt_aligned_alloc(ZT_CACHE_LINE,
                            zt_winograd_weights_bytes(p->g->tensors[op->in[0]].c,
                                                      p->g->tensors[op->out].c, p->wino_fma));
}

static zt_status host_winograd(plan *p, const step *st)
{
    zt_winograd_conv c = st->wino;
    c.scratch = p->sb[SB_SCRATCH].ptr; /* the shared buffer may have moved */
    zt_winograd_run(&c);
    return ZT_OK;
}

static zt_status host_winograd_grad(plan *p, const step *st)
{
    zt_winograd_grad c = st->wgrad;
    c.grad = p->call_grads + param_off(p, p->g->ops[st->op].p[0]);
    c.scratch = p->sb[SB_SCRATCH].ptr;
    zt_winograd_grad_weights(&c);
    return ZT_OK;
}

/* The weight gradient of conv op i (use_winograd_train) in the Winograd
 * domain, in place of conv_dw's matrix products: fewer products on boards
 * like 6x7 (winograd.c). */
static void winograd_grad_step(plan *p, exec_set *s, int i)
{
    const zt_nn_op *op = &p->g->ops[i];
    zt_nn_shape si = p->g->tensors[op->in[0]];
    zt_winograd_grad c = {.batch = s->batch,
                          .h = si.h,
                          .w = si.w,
                          .cin = si.c,
                          .cout = p->g->tensors[op->out].c,
                          .src = p->act[op->in[0]],
                          .dy = s->dptr[op->out],
                          .fma = p->wino_fma,
                          .threads = p->threads};
    size_t need = zt_winograd_grad_scratch_size(c.cin, c.cout, c.threads, c.fma);
    if (need > p->sb[SB_SCRATCH].need) p->sb[SB_SCRATCH].need = need;
    step *st = new_step(s);
    st->host = host_winograd_grad;
    st->op = i;
    st->wgrad = c;
}

/* A host step running `c` (all but its scratch) on the Winograd kernel. */
static void winograd_step(plan *p, exec_set *s, int op, const zt_winograd_conv *c, unsigned flags)
{
    size_t need = zt_winograd_scratch_size(c->cin, c->cout, c->threads, c->fma);
    if (need > p->sb[SB_SCRATCH].need) p->sb[SB_SCRATCH].need = need;
    step *st = new_step(s);
    st->host = host_winograd;
    st->op = op;
    st->flags = flags;
    st->wino = *c;
}

/* Node k of the inference program; the residual is read from its own buffer
 * (in place or not), so no copy precedes it. */
static void winograd_node_step(plan *p, exec_set *s, int k)
{
    const inode *nd = &p->nodes[k];
    const zt_nn_op *op = &p->g->ops[nd->op];
    zt_nn_shape si = p->g->tensors[op->in[0]];
    zt_winograd_conv c = {
        .batch = s->batch,
        .h = si.h,
        .w = si.w,
        .cin = si.c,
        .cout = p->g->tensors[op->out].c,
        .src = p->slots[p->tslot[nd->src]],
        .u = p->wino_u[nd->op],
        .bias = nd->bn >= 0     ? p->fold_b[nd->op]
                : op->p[1] >= 0 ? p->params + param_off(p, op->p[1])
                                : NULL,
        .sum = nd->sum >= 0 ? p->slots[p->tslot[nd->sum]] : NULL,
        .dst = p->slots[p->tslot[nd->out]],
        .relu = nd->elt == ZT_OP_RELU,
        .fma = p->wino_fma,
        .threads = p->threads,
    };
    winograd_step(p, s, nd->op, &c, 0);
}

static zt_status node_step(plan *p, exec_set *s, const inode *nd)
{
    const zt_nn_graph *g = p->g;
    const zt_nn_op *op = &g->ops[nd->op];
    int n = s->batch;
    void *src = p->slots[p->tslot[nd->src]], *dst = p->slots[p->tslot[nd->out]];
    zt_nn_shape si = g->tensors[nd->src], so = g->tensors[op->out];
    dnnl_exec_arg_t args[MAX_ARGS];
    int na = 0;
    dnnl_memory_t m;
    dnnl_primitive_desc_t pd;
    if (op->kind == ZT_OP_CONV || op->kind == ZT_OP_DENSE) {
        bool conv = runs_as_conv(g, op);
        dnnl_memory_desc_t smd = md_for(p, n, nd->src, !conv), dmd = md_for(p, n, op->out, !conv);
        dnnl_memory_desc_t wmd = md_user_weights(p, nd->op, p->dt, dnnl_format_tag_any);
        dnnl_memory_desc_t bmd = md_vec((size_t)so.c);
        bool bias = op->p[1] >= 0 || nd->bn >= 0;
        if (nd->sum >= 0 && !nd->inplace) {
            /* The sum post-op adds to what dst holds: copy the summand in. */
            dnnl_primitive_desc_t cpd;
            ZT_TRY(reorder_pd(p, &dmd, &dmd, false, &cpd));
            dnnl_memory_t a, b;
            ZT_TRY(set_mem(s, &dmd, p, p->slots[p->tslot[nd->sum]], &a));
            ZT_TRY(set_mem(s, &dmd, p, dst, &b));
            dnnl_exec_arg_t cargs[2] = {{DNNL_ARG_FROM, a}, {DNNL_ARG_TO, b}};
            ZT_TRY(prim_step(p, s, cpd, cargs, 2, 0));
        }
        dnnl_post_ops_t po;
        DN("post_ops_create", dnnl_post_ops_create(&po));
        dnnl_status_t r = dnnl_success;
        if (nd->sum >= 0) r = dnnl_post_ops_append_sum(po, 1.0f);
        if (r == dnnl_success && nd->elt >= 0)
            r = dnnl_post_ops_append_eltwise(
                po, 1.0f, nd->elt == ZT_OP_RELU ? dnnl_eltwise_relu : dnnl_eltwise_tanh, 0.0f, 0.0f);
        if (r != dnnl_success) {
            dnnl_post_ops_destroy(po);
            return dn_fail("post_ops_append", r);
        }
        zt_status z;
        if (conv) {
            dnnl_convolution_desc_t cd;
            dnnl_dims_t strides = {1, 1}, pad = {op->k / 2, op->k / 2};
            r = dnnl_convolution_forward_desc_init(&cd, dnnl_forward_inference,
                                                   dnnl_convolution_direct, &smd, &wmd,
                                                   bias ? &bmd : NULL, &dmd, strides, pad, pad);
            z = r == dnnl_success ? create_pd(p, &cd, po, NULL, &pd) : dn_fail("conv_desc", r);
        } else {
            dnnl_inner_product_desc_t id;
            r = dnnl_inner_product_forward_desc_init(&id, dnnl_forward_inference, &smd, &wmd,
                                                     bias ? &bmd : NULL, &dmd);
            z = r == dnnl_success ? create_pd(p, &id, po, NULL, &pd) : dn_fail("ip_desc", r);
        }
        dnnl_post_ops_destroy(po);
        ZT_TRY(z);
        dnnl_memory_t w;
        z = weight_mem(p, nd->op, nd->bn >= 0 ? W_FOLD : W_RAW,
                       dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), &w);
        if (z != ZT_OK) {
            dnnl_primitive_desc_destroy(pd);
            return z;
        }
        if ((z = set_mem(s, &smd, p, src, &m)) != ZT_OK) goto fail;
        args[na++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, m};
        args[na++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, w};
        if (bias) {
            float *b = nd->bn >= 0 ? p->fold_b[nd->op] : p->params + param_off(p, op->p[1]);
            if ((z = set_mem(s, &bmd, p, b, &m)) != ZT_OK) goto fail;
            args[na++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, m};
        }
        if ((z = set_mem(s, &dmd, p, dst, &m)) != ZT_OK) goto fail;
        args[na++] = (dnnl_exec_arg_t){DNNL_ARG_DST, m};
        return prim_step(p, s, pd, args, na, 0);
    fail:
        dnnl_primitive_desc_destroy(pd);
        return z;
    }
    dnnl_memory_desc_t md = md_act(p, n, si);
    switch (op->kind) {
    case ZT_OP_BN: {
        dnnl_batch_normalization_desc_t d;
        DN("bnorm_desc", dnnl_batch_normalization_forward_desc_init(
                             &d, dnnl_forward_inference, &md, (float)ZT_NN_BN_EPS,
                             dnnl_use_global_stats | dnnl_use_scale | dnnl_use_shift));
        ZT_TRY(create_pd(p, &d, NULL, NULL, &pd));
        dnnl_memory_desc_t v = md_vec((size_t)si.c);
        float *ptrs[4] = {p->params + param_off(p, op->p[0]), p->params + param_off(p, op->p[1]),
                          p->state + param_off(p, op->p[2]), p->state + param_off(p, op->p[3])};
        int kinds[4] = {DNNL_ARG_SCALE, DNNL_ARG_SHIFT, DNNL_ARG_MEAN, DNNL_ARG_VARIANCE};
        for (int j = 0; j < 4; j++) {
            ZT_TRY(set_mem(s, &v, p, ptrs[j], &m));
            args[na++] = (dnnl_exec_arg_t){kinds[j], m};
        }
        break;
    }
    case ZT_OP_LN: {
        size_t f = zt_nn_shape_size(si);
        md = md_flat(p, n, f);
        dnnl_layer_normalization_desc_t d;
        DN("lnorm_desc",
           dnnl_layer_normalization_forward_desc_init(&d, dnnl_forward_inference, &md, NULL,
                                                      (float)ZT_NN_LN_EPS,
                                                      dnnl_use_scale | dnnl_use_shift));
        ZT_TRY(create_pd(p, &d, NULL, NULL, &pd));
        dnnl_memory_desc_t v = md_vec(f);
        ZT_TRY(set_mem(s, &v, p, p->params + param_off(p, op->p[0]), &m));
        args[na++] = (dnnl_exec_arg_t){DNNL_ARG_SCALE, m};
        ZT_TRY(set_mem(s, &v, p, p->params + param_off(p, op->p[1]), &m));
        args[na++] = (dnnl_exec_arg_t){DNNL_ARG_SHIFT, m};
        break;
    }
    case ZT_OP_RELU:
    case ZT_OP_TANH: {
        dnnl_eltwise_desc_t d;
        DN("eltwise_desc",
           dnnl_eltwise_forward_desc_init(&d, dnnl_forward_inference,
                                          op->kind == ZT_OP_RELU ? dnnl_eltwise_relu
                                                                 : dnnl_eltwise_tanh,
                                          &md, 0.0f, 0.0f));
        ZT_TRY(create_pd(p, &d, NULL, NULL, &pd));
        break;
    }
    case ZT_OP_ADD: {
        dnnl_binary_desc_t d;
        DN("binary_desc", dnnl_binary_desc_init(&d, dnnl_binary_add, &md, &md, &md));
        ZT_TRY(create_pd(p, &d, NULL, NULL, &pd));
        ZT_TRY(set_mem(s, &md, p, p->slots[p->tslot[nd->src1]], &m));
        args[na++] = (dnnl_exec_arg_t){DNNL_ARG_SRC_1, m};
        break;
    }
    default: return zt_fail(ZT_ERR_INVALID, "op kind %d in a fused node", (int)op->kind);
    }
    ZT_TRY(set_mem(s, &md, p, src, &m));
    args[na++] = (dnnl_exec_arg_t){op->kind == ZT_OP_ADD ? DNNL_ARG_SRC_0 : DNNL_ARG_SRC, m};
    ZT_TRY(set_mem(s, &md, p, dst, &m));
    args[na++] = (dnnl_exec_arg_t){DNNL_ARG_DST, m};
    return prim_step(p, s, pd, args, na, 0);
}

static zt_status build_infer_set(plan *p, int bucket, exec_set **out)
{
    exec_set *s = zt_xcalloc(1, sizeof *s);
    s->batch = p->buckets[bucket];
    zt_status z = ZT_OK;
    for (int k = 0; k < p->nnodes && z == ZT_OK; k++) {
        if (use_winograd(p, &p->nodes[k])) winograd_node_step(p, s, k);
        else z = node_step(p, s, &p->nodes[k]);
    }
    s->nfwd = s->nsteps;
    if (z == ZT_OK) {
        p->infer_sets[bucket] = s; /* so that grow_shared repoints it too */
        z = grow_shared(p);
    }
    if (z != ZT_OK) {
        p->infer_sets[bucket] = NULL;
        set_free(s);
        return z;
    }
    *out = s;
    return ZT_OK;
}

/* ---- the training program ---- */

static zt_status host_bn_update(plan *p, const step *st)
{
    /* As the reference (and PyTorch): the running variance takes the
     * unbiased estimate of the batch variance. */
    const zt_nn_op *op = &p->g->ops[st->op];
    float *rmean = p->state + param_off(p, op->p[2]), *rvar = p->state + param_off(p, op->p[3]);
    const float *mean = p->stat_mean[st->op], *var = p->stat_var[st->op];
    double rows = (double)st->offset, m = ZT_NN_BN_MOMENTUM;
    for (size_t c = 0; c < st->count; c++) {
        double unbiased = rows > 1 ? var[c] * rows / (rows - 1) : var[c];
        rmean[c] = (float)((1 - m) * rmean[c] + m * mean[c]);
        rvar[c] = (float)((1 - m) * rvar[c] + m * unbiased);
    }
    return ZT_OK;
}

static zt_status host_add_grad(plan *p, const step *st)
{
    float *g = p->call_grads + st->offset;
    for (size_t i = 0; i < st->count; i++) g[i] += st->src[i];
    return ZT_OK;
}

static void host_grad_step(exec_set *s, const float *src, size_t offset, size_t count)
{
    step *st = new_step(s);
    st->host = host_add_grad;
    st->src = src;
    st->offset = offset;
    st->count = count;
}

/* The workspace of op i's training forward (kept for its backward). */
static zt_status workspace_arg(plan *p, exec_set *s, const_dnnl_primitive_desc_t pd, int i,
                               dnnl_exec_arg_t *args, int *na)
{
    const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, dnnl_query_workspace_md, 0);
    size_t bytes = md ? dnnl_memory_desc_get_size(md) : 0;
    if (bytes == 0) return ZT_OK;
    void *buf = zt_aligned_alloc(ZT_CACHE_LINE, bytes);
    if (!buf) return zt_fail(ZT_ERR_NOMEM, "no memory for a %zu-byte workspace", bytes);
    s->owned = zt_xgrow(s->owned, &s->cap_owned, s->nowned + 1, sizeof *s->owned);
    s->owned[s->nowned++] = buf;
    ZT_TRY(set_mem(s, md, p, buf, &s->wspace[i]));
    args[(*na)++] = (dnnl_exec_arg_t){DNNL_ARG_WORKSPACE, s->wspace[i]};
    return ZT_OK;
}

static void bn_update_step(plan *p, exec_set *s, int i)
{
    zt_nn_shape sh = p->g->tensors[p->g->ops[i].in[0]];
    step *st = new_step(s);
    st->host = host_bn_update;
    st->op = i;
    st->flags = F_UPDATE;
    st->offset = (size_t)s->batch * sh.h * sh.w;
    st->count = (size_t)sh.c;
}

/* ---- batch norm over a few channels, on the host ----
 * oneDNN's kernels for NHWC batch norm work on 16-channel blocks; with
 * fewer channels (the heads' 1x1 convs) it falls back to generic code that
 * cost 4.8 ms of a 64x5 step for tensors of 21k values. */

static bool host_bn(const plan *p, int i)
{
    const zt_nn_op *op = &p->g->ops[i];
    return op->kind == ZT_OP_BN && p->g->tensors[op->in[0]].c < 16;
}

static float ld(const plan *p, const void *a, size_t i)
{
    return p->dt == dnnl_bf16 ? zt_f32_from_bf16(((const uint16_t *)a)[i]) : ((const float *)a)[i];
}

static void st_val(const plan *p, void *a, size_t i, float v)
{
    if (p->dt == dnnl_bf16) ((uint16_t *)a)[i] = zt_bf16_from_f32(v);
    else ((float *)a)[i] = v;
}

/* Training forward: batch statistics (biased variance, as oneDNN's) into
 * stat_mean/stat_var, y = gamma (x - mean) / sqrt(var + eps) + beta. */
static zt_status host_bn_fwd(plan *p, const step *st)
{
    const zt_nn_op *op = &p->g->ops[st->op];
    size_t rows = st->offset, C = st->count;
    const void *x = st->buf[0];
    void *y = st->buf[1];
    float *mean = p->stat_mean[st->op], *var = p->stat_var[st->op];
    const float *gamma = p->params + param_off(p, op->p[0]);
    const float *beta = p->params + param_off(p, op->p[1]);
    for (size_t c = 0; c < C; c++) {
        double sum = 0, sq = 0;
        for (size_t r = 0; r < rows; r++) sum += ld(p, x, r * C + c);
        double m = sum / (double)rows;
        for (size_t r = 0; r < rows; r++) {
            double d = ld(p, x, r * C + c) - m;
            sq += d * d;
        }
        mean[c] = (float)m;
        var[c] = (float)(sq / (double)rows);
        double k = gamma[c] / sqrt((double)var[c] + ZT_NN_BN_EPS);
        for (size_t r = 0; r < rows; r++)
            st_val(p, y, r * C + c, (float)((ld(p, x, r * C + c) - mean[c]) * k + beta[c]));
    }
    return ZT_OK;
}

/* Backward: dbeta = sum dy, dgamma = sum dy xhat (added to the gradients),
 * dx = gamma / sigma (dy - dbeta / R - xhat dgamma / R). */
static zt_status host_bn_bwd(plan *p, const step *st)
{
    const zt_nn_op *op = &p->g->ops[st->op];
    size_t rows = st->offset, C = st->count;
    const void *x = st->buf[0], *dy = st->buf[1];
    void *dx = st->buf[2];
    const float *mean = p->stat_mean[st->op], *var = p->stat_var[st->op];
    const float *gamma = p->params + param_off(p, op->p[0]);
    float *dgamma = p->call_grads + param_off(p, op->p[0]);
    float *dbeta = p->call_grads + param_off(p, op->p[1]);
    for (size_t c = 0; c < C; c++) {
        double inv = 1 / sqrt((double)var[c] + ZT_NN_BN_EPS), db = 0, dg = 0;
        for (size_t r = 0; r < rows; r++) {
            double g = ld(p, dy, r * C + c);
            db += g;
            dg += g * (ld(p, x, r * C + c) - mean[c]) * inv;
        }
        dgamma[c] += (float)dg;
        dbeta[c] += (float)db;
        double k = gamma[c] * inv, mdb = db / (double)rows, mdg = dg / (double)rows;
        for (size_t r = 0; r < rows; r++) {
            size_t e = r * C + c;
            double xhat = (ld(p, x, e) - mean[c]) * inv;
            double v = k * (ld(p, dy, e) - mdb - xhat * mdg);
            st_val(p, dx, e, (float)(st->acc ? ld(p, dx, e) + v : v));
        }
    }
    return ZT_OK;
}

static void host_bn_step(plan *p, exec_set *s, int i, zt_status (*fn)(plan *, const step *),
                         void *a, void *b, void *c, bool acc, unsigned flags)
{
    zt_nn_shape sh = p->g->tensors[p->g->ops[i].in[0]];
    step *st = new_step(s);
    st->host = fn;
    st->op = i;
    st->flags = flags;
    st->offset = (size_t)s->batch * sh.h * sh.w;
    st->count = (size_t)sh.c;
    st->buf[0] = a;
    st->buf[1] = b;
    st->buf[2] = c;
    st->acc = acc;
}

/* ---- bf16 batch norm on the host's AVX-512 kernels (bnorm.h) ----
 * In place of oneDNN's bnorm_jit: per 64-channel norm at batch 256 on one
 * thread, its forward and backward took about 0.5 ms each (ONEDNN_VERBOSE),
 * these about 0.2 and 0.4 ms (perf). They run on the plan's OpenMP threads
 * with results independent of the thread count. */

static bool host_bnorm(const plan *p, int i)
{
    const zt_nn_op *op = &p->g->ops[i];
    return p->host_bnorm && op->kind == ZT_OP_BN && zt_bnorm_fits(p->g->tensors[op->in[0]].c);
}

static zt_status host_bnorm_fwd(plan *p, const step *st)
{
    const zt_nn_op *op = &p->g->ops[st->op];
    zt_bnorm_forward(st->buf[0], st->buf[1], st->offset, (int)st->count,
                     p->params + param_off(p, op->p[0]), p->params + param_off(p, op->p[1]),
                     ZT_NN_BN_EPS, p->fused_relu[st->op] >= 0, p->stat_mean[st->op],
                     p->stat_var[st->op], p->threads);
    return ZT_OK;
}

static zt_status host_bnorm_bwd(plan *p, const step *st)
{
    const zt_nn_op *op = &p->g->ops[st->op];
    zt_bnorm_backward(st->buf[0], st->buf[3], st->buf[1], st->buf[2], st->acc, st->offset,
                      (int)st->count, p->params + param_off(p, op->p[0]), p->stat_mean[st->op],
                      p->stat_var[st->op], ZT_NN_BN_EPS, p->call_grads + param_off(p, op->p[0]),
                      p->call_grads + param_off(p, op->p[1]), p->threads);
    return ZT_OK;
}

static zt_status train_forward_op(plan *p, exec_set *s, int i, dnnl_primitive_desc_t *fwd_pd)
{
    const zt_nn_graph *g = p->g;
    const zt_nn_op *op = &g->ops[i];
    int n = s->batch, out_t = op->out;
    if (p->relu_in_bn[i]) return ZT_OK;
    if (host_bn(p, i)) {
        host_bn_step(p, s, i, host_bn_fwd, p->act[op->in[0]], p->act[op->out], NULL, false, 0);
        bn_update_step(p, s, i);
        return ZT_OK;
    }
    if (host_bnorm(p, i)) {
        /* With a fused ReLU the output is the ReLU's tensor. */
        int relu = p->fused_relu[i];
        host_bn_step(p, s, i, host_bnorm_fwd, p->act[op->in[0]],
                     p->act[relu >= 0 ? g->ops[relu].out : op->out], NULL, false, 0);
        bn_update_step(p, s, i);
        return ZT_OK;
    }
    if (use_winograd_train(p, i)) {
        zt_nn_shape si = g->tensors[op->in[0]];
        zt_winograd_conv c = {.batch = n,
                              .h = si.h,
                              .w = si.w,
                              .cin = si.c,
                              .cout = g->tensors[op->out].c,
                              .src = p->act[op->in[0]],
                              .u = p->wino_fwd[i],
                              .dst = p->act[op->out],
                              .fma = p->wino_fma,
                              .threads = p->threads};
        winograd_step(p, s, i, &c, 0);
        return ZT_OK;
    }
    bool flat = runs_flat(g, op);
    dnnl_memory_desc_t smd = md_for(p, n, op->in[0], flat), dmd = md_for(p, n, op->out, flat);
    dnnl_exec_arg_t args[MAX_ARGS];
    int na = 0;
    dnnl_memory_t m;
    dnnl_primitive_desc_t pd;
    switch (op->kind) {
    case ZT_OP_CONV:
    case ZT_OP_DENSE: {
        dnnl_memory_desc_t wmd = md_user_weights(p, i, p->dt, dnnl_format_tag_any);
        dnnl_memory_desc_t bmd = md_vec((size_t)g->tensors[op->out].c);
        bool bias = op->p[1] >= 0;
        if (runs_as_conv(g, op)) {
            dnnl_convolution_desc_t d;
            dnnl_dims_t strides = {1, 1}, pad = {op->k / 2, op->k / 2};
            DN("conv_desc", dnnl_convolution_forward_desc_init(
                                &d, dnnl_forward_training, dnnl_convolution_direct, &smd, &wmd,
                                bias ? &bmd : NULL, &dmd, strides, pad, pad));
            ZT_TRY(create_pd(p, &d, NULL, NULL, &pd));
        } else {
            dnnl_inner_product_desc_t d;
            DN("ip_desc", dnnl_inner_product_forward_desc_init(&d, dnnl_forward_training, &smd,
                                                               &wmd, bias ? &bmd : NULL, &dmd));
            ZT_TRY(create_pd(p, &d, NULL, NULL, &pd));
        }
        dnnl_memory_t w;
        zt_status z =
            weight_mem(p, i, W_RAW, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), &w);
        if (z == ZT_OK) z = set_mem(s, &smd, p, p->act[op->in[0]], &m);
        args[na++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, m};
        args[na++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, w};
        if (z == ZT_OK && bias) {
            z = set_mem(s, &bmd, p, p->params + param_off(p, op->p[1]), &m);
            args[na++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, m};
        }
        if (z != ZT_OK) {
            dnnl_primitive_desc_destroy(pd);
            return z;
        }
        break;
    }
    case ZT_OP_BN:
    case ZT_OP_LN: {
        bool bn = op->kind == ZT_OP_BN;
        size_t f = bn ? (size_t)g->tensors[op->in[0]].c : zt_nn_shape_size(g->tensors[op->in[0]]);
        unsigned flags = dnnl_use_scale | dnnl_use_shift;
        if (bn) {
            /* A ReLU after the norm runs inside it (its output is the ReLU's
             * tensor), keeping a bit mask for the backward pass. */
            int relu = p->fused_relu[i];
            if (relu >= 0) {
                flags |= dnnl_fuse_norm_relu;
                out_t = g->ops[relu].out;
            }
            dnnl_batch_normalization_desc_t d;
            DN("bnorm_desc", dnnl_batch_normalization_forward_desc_init(
                                 &d, dnnl_forward_training, &smd, (float)ZT_NN_BN_EPS, flags));
            ZT_TRY(create_pd(p, &d, NULL, NULL, &pd));
            if (relu >= 0) ZT_TRY(workspace_arg(p, s, pd, i, args, &na));
        } else {
            dnnl_layer_normalization_desc_t d;
            DN("lnorm_desc", dnnl_layer_normalization_forward_desc_init(
                                 &d, dnnl_forward_training, &smd, NULL, (float)ZT_NN_LN_EPS, flags));
            ZT_TRY(create_pd(p, &d, NULL, NULL, &pd));
        }
        dnnl_memory_desc_t v = md_vec(f), st = md_vec(bn ? f : (size_t)n);
        ZT_TRY(set_mem(s, &v, p, p->params + param_off(p, op->p[0]), &m));
        args[na++] = (dnnl_exec_arg_t){DNNL_ARG_SCALE, m};
        ZT_TRY(set_mem(s, &v, p, p->params + param_off(p, op->p[1]), &m));
        args[na++] = (dnnl_exec_arg_t){DNNL_ARG_SHIFT, m};
        ZT_TRY(set_mem(s, &st, p, p->stat_mean[i], &m));
        args[na++] = (dnnl_exec_arg_t){DNNL_ARG_MEAN, m};
        ZT_TRY(set_mem(s, &st, p, p->stat_var[i], &m));
        args[na++] = (dnnl_exec_arg_t){DNNL_ARG_VARIANCE, m};
        ZT_TRY(set_mem(s, &smd, p, p->act[op->in[0]], &m));
        args[na++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, m};
        break;
    }
    case ZT_OP_RELU:
    case ZT_OP_TANH: {
        dnnl_eltwise_desc_t d;
        DN("eltwise_desc", dnnl_eltwise_forward_desc_init(
                               &d, dnnl_forward_training,
                               op->kind == ZT_OP_RELU ? dnnl_eltwise_relu_use_dst_for_bwd
                                                      : dnnl_eltwise_tanh_use_dst_for_bwd,
                               &smd, 0.0f, 0.0f));
        ZT_TRY(create_pd(p, &d, NULL, NULL, &pd));
        ZT_TRY(set_mem(s, &smd, p, p->act[op->in[0]], &m));
        args[na++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, m};
        break;
    }
    case ZT_OP_ADD: {
        dnnl_binary_desc_t d;
        DN("binary_desc", dnnl_binary_desc_init(&d, dnnl_binary_add, &smd, &smd, &dmd));
        ZT_TRY(create_pd(p, &d, NULL, NULL, &pd));
        ZT_TRY(set_mem(s, &smd, p, p->act[op->in[0]], &m));
        args[na++] = (dnnl_exec_arg_t){DNNL_ARG_SRC_0, m};
        ZT_TRY(set_mem(s, &smd, p, p->act[op->in[1]], &m));
        args[na++] = (dnnl_exec_arg_t){DNNL_ARG_SRC_1, m};
        break;
    }
    default: return zt_fail(ZT_ERR_INVALID, "unknown op kind %d", (int)op->kind);
    }
    ZT_TRY(set_mem(s, &dmd, p, p->act[out_t], &m));
    args[na++] = (dnnl_exec_arg_t){DNNL_ARG_DST, m};
    /* Keep a clone as the hint of the backward primitives. */
    DN("pd_clone", dnnl_primitive_desc_clone(fwd_pd, pd));
    ZT_TRY(prim_step(p, s, pd, args, na, 0));
    if (op->kind == ZT_OP_BN) bn_update_step(p, s, i);
    return ZT_OK;
}

/* Where a backward op writes the gradient of tensor t: its own buffer when
 * nothing has yet, else the temporary, added afterwards by add_into. */
static void *grad_target(plan *p, exec_set *s, bool *written, int t, bool *accumulate)
{
    *accumulate = written[t];
    written[t] = true;
    return *accumulate ? p->tmp : s->dptr[t];
}

/* grad[t] += what (a binary add in place). */
static zt_status add_into(plan *p, exec_set *s, const dnnl_memory_desc_t *md, int t, void *what,
                          unsigned flags)
{
    dnnl_binary_desc_t d;
    DN("binary_desc", dnnl_binary_desc_init(&d, dnnl_binary_add, md, md, md));
    dnnl_primitive_desc_t pd;
    ZT_TRY(create_pd(p, &d, NULL, NULL, &pd));
    dnnl_memory_t a, b;
    ZT_TRY(set_mem(s, md, p, s->dptr[t], &a));
    ZT_TRY(set_mem(s, md, p, what, &b));
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC_0, a}, {DNNL_ARG_SRC_1, b}, {DNNL_ARG_DST, a}};
    return prim_step(p, s, pd, args, 3, flags);
}

/* Input gradient of conv op i as the forward convolution of its output
 * gradient with the W_FLIP weights; a sum post-op adds it to a gradient
 * already there. */
static zt_status conv_bwd_data(plan *p, exec_set *s, int i, bool *written, unsigned flags)
{
    const zt_nn_graph *g = p->g;
    const zt_nn_op *op = &g->ops[i];
    int n = s->batch, t = op->in[0];
    dnnl_memory_desc_t smd = md_act(p, n, g->tensors[t]), dmd = md_act(p, n, g->tensors[op->out]);
    dnnl_memory_desc_t wmd = md_flip_weights(p, i, dnnl_format_tag_any);
    bool acc = written[t];
    written[t] = true;
    if (use_winograd_train(p, i)) {
        zt_nn_shape so = g->tensors[op->out];
        zt_winograd_conv c = {.batch = n,
                              .h = so.h,
                              .w = so.w,
                              .cin = so.c,
                              .cout = g->tensors[t].c,
                              .src = s->dptr[op->out],
                              .u = p->wino_bwd[i],
                              .sum = acc ? s->dptr[t] : NULL,
                              .dst = s->dptr[t],
                              .fma = p->wino_fma,
                              .threads = p->threads};
        winograd_step(p, s, i, &c, flags);
        return ZT_OK;
    }
    dnnl_post_ops_t po;
    DN("post_ops_create", dnnl_post_ops_create(&po));
    dnnl_status_t r = acc ? dnnl_post_ops_append_sum(po, 1.0f) : dnnl_success;
    dnnl_convolution_desc_t cd;
    dnnl_dims_t strides = {1, 1}, pad = {op->k / 2, op->k / 2};
    if (r == dnnl_success)
        r = dnnl_convolution_forward_desc_init(&cd, dnnl_forward_inference,
                                               dnnl_convolution_direct, &dmd, &wmd, NULL, &smd,
                                               strides, pad, pad);
    dnnl_primitive_desc_t pd;
    zt_status z = r == dnnl_success ? create_pd(p, &cd, po, NULL, &pd) : dn_fail("conv_desc", r);
    dnnl_post_ops_destroy(po);
    ZT_TRY(z);
    dnnl_memory_t w, dy, dx;
    z = weight_mem(p, i, W_FLIP, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), &w);
    if (z == ZT_OK) z = set_mem(s, &dmd, p, s->dptr[op->out], &dy);
    if (z == ZT_OK) z = set_mem(s, &smd, p, s->dptr[t], &dx);
    if (z != ZT_OK) {
        dnnl_primitive_desc_destroy(pd);
        return z;
    }
    dnnl_exec_arg_t a[3] = {{DNNL_ARG_SRC, dy}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, dx}};
    return prim_step(p, s, pd, a, 3, flags);
}

/* ---- bf16 convolution weight gradients as matrix products ----
 *
 * oneDNN's bf16 backward-weights convolution is far slower than its forward
 * one; a matrix product is not. For stride 1 and same padding P, the
 * gradient of w[o][kh][kw][i] sums dy[n][h][w][o] * x[n][h+kh-P][w+kw-P][i]
 * over positions where the input position is inside the image. Samples are
 * taken in chunks. Each chunk is rearranged row-major by image row h (rows
 * (h, n, w)): dy as it is, x widened to the k horizontal taps (x3[h][n][w]
 * [kw][i], zero outside). Then for each kh the valid rows h of dy and rows
 * h+kh-P of x3 are two contiguous blocks, and one product
 *   grad[o][kh][.][.] += dy_rows^T x3_rows
 * adds that kernel row's gradient (k products per chunk, no padding work). */

struct conv_dw {
    int op;
    int n, h, w, ci, co, k, chunk;
    size_t es, dy_bytes; /* element size; bytes of the dy part of SB_COL */
    const char *x, *dy;
    /* per (full chunk, tail chunk) x kh: product, its arguments */
    dnnl_primitive_t *mm;
    dnnl_exec_arg_t (*args)[4];
    int *nargs;
};

static void conv_dw_free(conv_dw *d)
{
    if (!d) return;
    for (int j = 0; j < 2 * d->k; j++)
        if (d->mm[j]) dnnl_primitive_destroy(d->mm[j]);
    free(d->mm);
    free(d->args);
    free(d->nargs);
    free(d);
}

/* Rows [hlo, hhi) of the image where kernel row kh reads inside it. */
static void kh_rows(const conv_dw *d, int kh, int *lo, int *hi)
{
    int pad = d->k / 2;
    *lo = pad - kh > 0 ? pad - kh : 0;
    *hi = d->h + pad - kh < d->h ? d->h + pad - kh : d->h;
}

static void conv_dw_rearrange(const conv_dw *d, int n0, int sc, char *dyh, char *x3)
{
    size_t px = (size_t)d->ci * d->es, pdy = (size_t)d->co * d->es;
    int k = d->k, pad = k / 2, W = d->w, H = d->h;
    for (int h = 0; h < H; h++)
        for (int n = 0; n < sc; n++) {
            size_t row = ((size_t)h * sc + n) * W, img = ((size_t)(n0 + n) * H + h) * W;
            memcpy(dyh + row * pdy, d->dy + img * pdy, W * pdy);
            const char *xs = d->x + img * px;
            char *o = x3 + row * k * px;
            for (int w = 0; w < W; w++, o += k * px) {
                int lo = pad - w > 0 ? pad - w : 0, hi = W + pad - w < k ? W + pad - w : k;
                if (lo > 0) memset(o, 0, (size_t)lo * px);
                memcpy(o + lo * px, xs + (size_t)(w + lo - pad) * px, (size_t)(hi - lo) * px);
                if (hi < k) memset(o + hi * px, 0, (size_t)(k - hi) * px);
            }
        }
}

static zt_status host_conv_dw(plan *p, const step *st)
{
    const conv_dw *d = st->dw;
    float *grad = p->call_grads + param_off(p, p->g->ops[d->op].p[0]);
    char *dyh = p->sb[SB_COL].ptr, *x3 = dyh + d->dy_bytes;
    size_t px = (size_t)d->ci * d->es, pdy = (size_t)d->co * d->es;
    for (int n0 = 0; n0 < d->n; n0 += d->chunk) {
        int sc = d->n - n0 < d->chunk ? d->n - n0 : d->chunk, v = sc == d->chunk ? 0 : 1;
        conv_dw_rearrange(d, n0, sc, dyh, x3);
        size_t rows = (size_t)sc * d->w; /* per image row */
        for (int kh = 0; kh < d->k; kh++) {
            int j = v * d->k + kh, lo, hi;
            if (!d->mm[j]) continue;
            kh_rows(d, kh, &lo, &hi);
            void *ptrs[3] = {dyh + lo * rows * pdy, x3 + (lo + kh - d->k / 2) * rows * d->k * px,
                             grad + (size_t)kh * d->k * d->ci};
            for (int a = 0; a < 3; a++)
                DN("set_data_handle", dnnl_memory_set_data_handle(d->args[j][a].memory, ptrs[a]));
            DN("execute", dnnl_primitive_execute(d->mm[j], p->stream, d->nargs[j], d->args[j]));
        }
    }
    return ZT_OK;
}

/* The product for kernel row kh over a chunk of sc samples (none when the
 * row never reads inside the image). */
static zt_status conv_dw_product(plan *p, exec_set *s, conv_dw *d, int sc, int kh, int j)
{
    int lo, hi;
    kh_rows(d, kh, &lo, &hi);
    if (hi <= lo) return ZT_OK;
    int64_t K = (int64_t)sc * d->w * (hi - lo), N = (int64_t)d->k * d->ci;
    dnnl_memory_desc_t a, b, c;
    dnnl_dims_t ad = {d->co, K}, as = {1, d->co}, bd = {K, N}, bs = {N, 1};
    dnnl_dims_t cdims = {d->co, N}, cs = {N * d->k, 1};
    DN("md", dnnl_memory_desc_init_by_strides(&a, 2, ad, p->dt, as));
    DN("md", dnnl_memory_desc_init_by_strides(&b, 2, bd, p->dt, bs));
    DN("md", dnnl_memory_desc_init_by_strides(&c, 2, cdims, dnnl_f32, cs));
    dnnl_matmul_desc_t md;
    DN("matmul_desc", dnnl_matmul_desc_init(&md, &a, &b, NULL, &c));
    dnnl_post_ops_t po;
    DN("post_ops_create", dnnl_post_ops_create(&po));
    dnnl_status_t r = dnnl_post_ops_append_sum(po, 1.0f);
    dnnl_primitive_desc_t pd;
    zt_status z = r == dnnl_success ? create_pd(p, &md, po, NULL, &pd) : dn_fail("post_ops", r);
    dnnl_post_ops_destroy(po);
    ZT_TRY(z);
    dnnl_memory_t m[3];
    const dnnl_memory_desc_t *mds[3] = {&a, &b, &c};
    int kinds[3] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST};
    d->nargs[j] = 0;
    for (int q = 0; q < 3 && z == ZT_OK; q++) {
        z = set_mem(s, mds[q], p, DNNL_MEMORY_NONE, &m[q]);
        d->args[j][d->nargs[j]++] = (dnnl_exec_arg_t){kinds[q], m[q]};
    }
    if (z == ZT_OK) z = scratch_arg(p, pd, s, d->args[j], &d->nargs[j]);
    r = z == ZT_OK ? dnnl_primitive_create(&d->mm[j], pd) : dnnl_success;
    dnnl_primitive_desc_destroy(pd);
    if (z != ZT_OK) return z;
    if (r != dnnl_success) {
        d->mm[j] = NULL;
        return dn_fail("primitive_create", r);
    }
    return ZT_OK;
}

/* Adds a conv_dw step for conv op i (bf16, no bias). */
static zt_status conv_dw_step(plan *p, exec_set *s, int i)
{
    const zt_nn_graph *g = p->g;
    const zt_nn_op *op = &g->ops[i];
    zt_nn_shape in = g->tensors[op->in[0]];
    conv_dw *d = zt_xcalloc(1, sizeof *d);
    s->dws = zt_xgrow(s->dws, &s->cap_dws, s->ndws + 1, sizeof *s->dws);
    s->dws[s->ndws++] = d;
    d->op = i;
    d->n = s->batch;
    d->h = in.h;
    d->w = in.w;
    d->ci = in.c;
    d->co = g->tensors[op->out].c;
    d->k = op->k;
    d->es = p->dt_size;
    d->x = p->act[op->in[0]];
    d->dy = s->dptr[op->out];
    /* About 1300 rows a chunk keeps its rearranged copy in L2 at 64
     * channels; measured 3.9 ms against oneDNN's 5.3 ms at 64 channels. */
    d->chunk = 1344 / (in.h * in.w);
    if (d->chunk < 1) d->chunk = 1;
    if (d->chunk > d->n) d->chunk = d->n;
    size_t rows = (size_t)d->chunk * in.h * in.w;
    d->dy_bytes = (rows * d->co * d->es + ZT_CACHE_LINE - 1) / ZT_CACHE_LINE * ZT_CACHE_LINE;
    size_t need = d->dy_bytes + rows * d->k * d->ci * d->es;
    if (need > p->sb[SB_COL].need) p->sb[SB_COL].need = need;
    d->mm = zt_xcalloc((size_t)(2 * d->k), sizeof *d->mm);
    d->args = zt_xcalloc((size_t)(2 * d->k), sizeof *d->args);
    d->nargs = zt_xcalloc((size_t)(2 * d->k), sizeof *d->nargs);
    int tail = d->n % d->chunk;
    for (int kh = 0; kh < d->k; kh++) {
        ZT_TRY(conv_dw_product(p, s, d, d->chunk, kh, kh));
        if (tail) ZT_TRY(conv_dw_product(p, s, d, tail, kh, d->k + kh));
    }
    step *st = new_step(s);
    st->host = host_conv_dw;
    st->dw = d;
    return ZT_OK;
}

/* The op writing tensor t, or -1 for the graph's input. */
static int producer(const zt_nn_graph *g, int t)
{
    for (int i = 0; i < g->nops; i++)
        if (g->ops[i].out == t) return i;
    return -1;
}

/* Whether both inputs a and b of add op i may share its output's gradient
 * buffer: b's gradient is final (only the add reads b) and is read by b's
 * producer before any other consumer of a adds into the shared buffer. */
static bool share_both(const zt_nn_graph *g, int i, int a, int b)
{
    if (a == b || uses(g, b) != 1) return false;
    int pb = producer(g, b);
    if (pb < 0) return false;
    for (int j = pb; j < i; j++)
        if (g->ops[j].in[0] == a || g->ops[j].in[1] == a) return false;
    return true;
}


/* Whether, when op i's backward runs, no tensor but t whose gradient is
 * still to be read (produced before op i, or the graph's input) has its
 * gradient in t's buffer. */
static bool buffer_exclusive(const plan *p, const exec_set *s, int i, int t)
{
    const zt_nn_graph *g = p->g;
    for (int u = 0; u < g->ntensors; u++)
        if (u != t && s->dptr[u] == s->dptr[t] && producer(g, u) < i) return false;
    return true;
}

static zt_status train_backward_op(plan *p, exec_set *s, int i, const_dnnl_primitive_desc_t fpd,
                                   bool *written)
{
    const zt_nn_graph *g = p->g;
    const zt_nn_op *op = &g->ops[i];
    int n = s->batch, t = op->in[0];
    unsigned fl = t == g->input ? F_DIN : 0;
    bool flat = runs_flat(g, op);
    dnnl_memory_desc_t smd = md_for(p, n, t, flat), dmd = md_for(p, n, op->out, flat);
    dnnl_memory_t m, dy;
    dnnl_primitive_desc_t pd;
    if (p->relu_in_bn[i]) {
        /* Its batch norm's backward applies it: the norm's output gradient
         * is this op's (the norm's output has no other reader). */
        written[t] = true;
        if (buffer_exclusive(p, s, i, op->out)) {
            s->dptr[t] = s->dptr[op->out];
            return ZT_OK;
        }
        ZT_TRY(reorder_pd(p, &smd, &smd, false, &pd));
        ZT_TRY(set_mem(s, &smd, p, s->dptr[op->out], &dy));
        ZT_TRY(set_mem(s, &smd, p, s->dptr[t], &m));
        dnnl_exec_arg_t c[2] = {{DNNL_ARG_FROM, dy}, {DNNL_ARG_TO, m}};
        return prim_step(p, s, pd, c, 2, 0);
    }
    if (op->kind != ZT_OP_ADD) ZT_TRY(set_mem(s, &dmd, p, s->dptr[op->out], &dy));
    dnnl_exec_arg_t args[MAX_ARGS];
    int na = 0;
    bool acc;
    switch (op->kind) {
    case ZT_OP_CONV:
    case ZT_OP_DENSE: {
        bool conv = runs_as_conv(g, op), bias = op->p[1] >= 0;
        dnnl_dims_t strides = {1, 1}, pad = {op->k / 2, op->k / 2};
        dnnl_memory_desc_t wmd = md_user_weights(p, i, p->dt, dnnl_format_tag_any);
        /* Input gradient. */
        if (conv) {
            ZT_TRY(conv_bwd_data(p, s, i, written, fl));
        } else {
            dnnl_inner_product_desc_t d;
            DN("ip_bwd_data_desc", dnnl_inner_product_backward_data_desc_init(&d, &smd, &wmd, &dmd));
            ZT_TRY(create_pd(p, &d, NULL, fpd, &pd));
            dnnl_memory_t w;
            const dnnl_memory_desc_t *wq =
                dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
            zt_status z = weight_mem(p, i, W_RAW, wq, &w);
            void *dx = grad_target(p, s, written, t, &acc);
            if (z == ZT_OK) z = set_mem(s, &smd, p, dx, &m);
            if (z != ZT_OK) {
                dnnl_primitive_desc_destroy(pd);
                return z;
            }
            dnnl_exec_arg_t a1[3] = {
                {DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DIFF_SRC, m}};
            ZT_TRY(prim_step(p, s, pd, a1, 3, fl));
            if (acc) ZT_TRY(add_into(p, s, &smd, t, dx, fl));
        }
        /* Weight and bias gradients, in fp32. */
        if (conv && use_winograd_train(p, i)) {
            winograd_grad_step(p, s, i);
            return ZT_OK;
        }
        if (conv && !bias && p->dt == dnnl_bf16 && op->k % 2 == 1) return conv_dw_step(p, s, i);
        dnnl_memory_desc_t dwmd = md_user_weights(p, i, dnnl_f32, dnnl_format_tag_any);
        dnnl_memory_desc_t bmd = md_vec((size_t)g->tensors[op->out].c);
        if (conv) {
            dnnl_convolution_desc_t d;
            DN("conv_bwd_weights_desc",
               dnnl_convolution_backward_weights_desc_init(&d, dnnl_convolution_direct, &smd,
                                                           &dwmd, bias ? &bmd : NULL, &dmd,
                                                           strides, pad, pad));
            ZT_TRY(create_pd(p, &d, NULL, fpd, &pd));
        } else {
            dnnl_inner_product_desc_t d;
            DN("ip_bwd_weights_desc", dnnl_inner_product_backward_weights_desc_init(
                                          &d, &smd, &dwmd, bias ? &bmd : NULL, &dmd));
            ZT_TRY(create_pd(p, &d, NULL, fpd, &pd));
        }
        dnnl_memory_desc_t got = *dnnl_primitive_desc_query_md(pd, dnnl_query_diff_weights_md, 0);
        size_t bytes = dnnl_memory_desc_get_size(&got);
        if (bytes > p->sb[SB_DW].need) p->sb[SB_DW].need = bytes;
        dnnl_memory_t dw, db = NULL, x;
        zt_status z = set_mem(s, &got, p, p->sb[SB_DW].ptr, &dw);
        if (z == ZT_OK) z = set_mem(s, &smd, p, p->act[t], &x);
        if (z == ZT_OK && bias) z = set_mem(s, &bmd, p, p->dscale, &db);
        if (z != ZT_OK) {
            dnnl_primitive_desc_destroy(pd);
            return z;
        }
        add_ref(&s->refs, &s->nrefs, &s->cap_refs, dw, SB_DW, 0);
        na = 0;
        args[na++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, x};
        args[na++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_DST, dy};
        args[na++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_WEIGHTS, dw};
        if (bias) args[na++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_BIAS, db};
        ZT_TRY(prim_step(p, s, pd, args, na, 0));
        /* grads += dw, through a reorder to the host layout with a sum. */
        dnnl_memory_desc_t user = md_user_weights(p, i, dnnl_f32, dnnl_format_tag_undef);
        ZT_TRY(reorder_pd(p, &got, &user, true, &pd));
        dnnl_memory_t gm;
        ZT_TRY(set_mem(s, &user, p, DNNL_MEMORY_NONE, &gm));
        add_ref(&s->refs, &s->nrefs, &s->cap_refs, gm, REF_GRADS,
                param_off(p, op->p[0]) * sizeof(float));
        dnnl_exec_arg_t a2[2] = {{DNNL_ARG_FROM, dw}, {DNNL_ARG_TO, gm}};
        ZT_TRY(prim_step(p, s, pd, a2, 2, 0));
        if (bias)
            host_grad_step(s, p->dscale, param_off(p, op->p[1]),
                           (size_t)g->tensors[op->out].c);
        return ZT_OK;
    }
    case ZT_OP_BN:
    case ZT_OP_LN: {
        bool bn = op->kind == ZT_OP_BN;
        if (host_bn(p, i)) {
            acc = written[t];
            written[t] = true;
            host_bn_step(p, s, i, host_bn_bwd, p->act[t], s->dptr[op->out], s->dptr[t], acc, fl);
            return ZT_OK;
        }
        if (host_bnorm(p, i)) {
            acc = written[t];
            written[t] = true;
            host_bn_step(p, s, i, host_bnorm_bwd, p->act[t], s->dptr[op->out], s->dptr[t], acc,
                         fl);
            int relu = p->fused_relu[i];
            s->steps[s->nsteps - 1].buf[3] = relu >= 0 ? p->act[g->ops[relu].out] : NULL;
            return ZT_OK;
        }
        size_t f = bn ? (size_t)g->tensors[t].c : zt_nn_shape_size(g->tensors[t]);
        unsigned flags = dnnl_use_scale | dnnl_use_shift;
        if (bn && p->fused_relu[i] >= 0) flags |= dnnl_fuse_norm_relu;
        if (bn) {
            dnnl_batch_normalization_desc_t d;
            DN("bnorm_bwd_desc", dnnl_batch_normalization_backward_desc_init(
                                     &d, dnnl_backward, &smd, &smd, (float)ZT_NN_BN_EPS, flags));
            ZT_TRY(create_pd(p, &d, NULL, fpd, &pd));
        } else {
            dnnl_layer_normalization_desc_t d;
            DN("lnorm_bwd_desc",
               dnnl_layer_normalization_backward_desc_init(&d, dnnl_backward, &smd, &smd, NULL,
                                                           (float)ZT_NN_LN_EPS, flags));
            ZT_TRY(create_pd(p, &d, NULL, fpd, &pd));
        }
        if (s->wspace[i]) args[na++] = (dnnl_exec_arg_t){DNNL_ARG_WORKSPACE, s->wspace[i]};
        dnnl_memory_desc_t v = md_vec(f), st = md_vec(bn ? f : (size_t)n);
        struct {
            int arg;
            const dnnl_memory_desc_t *md;
            void *ptr;
        } a[] = {
            {DNNL_ARG_SRC, &smd, p->act[t]},
            {DNNL_ARG_MEAN, &st, p->stat_mean[i]},
            {DNNL_ARG_VARIANCE, &st, p->stat_var[i]},
            {DNNL_ARG_SCALE, &v, p->params + param_off(p, op->p[0])},
            {DNNL_ARG_SHIFT, &v, p->params + param_off(p, op->p[1])},
            {DNNL_ARG_DIFF_SCALE, &v, p->dscale},
            {DNNL_ARG_DIFF_SHIFT, &v, p->dshift},
        };
        for (size_t j = 0; j < sizeof a / sizeof a[0]; j++) {
            zt_status z = set_mem(s, a[j].md, p, a[j].ptr, &m);
            if (z != ZT_OK) {
                dnnl_primitive_desc_destroy(pd);
                return z;
            }
            args[na++] = (dnnl_exec_arg_t){a[j].arg, m};
        }
        args[na++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_DST, dy};
        void *dx = grad_target(p, s, written, t, &acc);
        zt_status z = set_mem(s, &smd, p, dx, &m);
        if (z != ZT_OK) {
            dnnl_primitive_desc_destroy(pd);
            return z;
        }
        args[na++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_SRC, m};
        ZT_TRY(prim_step(p, s, pd, args, na, 0));
        if (acc) ZT_TRY(add_into(p, s, &smd, t, dx, fl));
        host_grad_step(s, p->dscale, param_off(p, op->p[0]), f);
        host_grad_step(s, p->dshift, param_off(p, op->p[1]), f);
        return ZT_OK;
    }
    case ZT_OP_RELU:
    case ZT_OP_TANH: {
        dnnl_eltwise_desc_t d;
        DN("eltwise_bwd_desc", dnnl_eltwise_backward_desc_init(
                                   &d,
                                   op->kind == ZT_OP_RELU ? dnnl_eltwise_relu_use_dst_for_bwd
                                                          : dnnl_eltwise_tanh_use_dst_for_bwd,
                                   &smd, &dmd, 0.0f, 0.0f));
        ZT_TRY(create_pd(p, &d, NULL, fpd, &pd));
        void *dx = grad_target(p, s, written, t, &acc);
        dnnl_memory_t y;
        zt_status z = set_mem(s, &dmd, p, p->act[op->out], &y);
        if (z == ZT_OK) z = set_mem(s, &smd, p, dx, &m);
        if (z != ZT_OK) {
            dnnl_primitive_desc_destroy(pd);
            return z;
        }
        dnnl_exec_arg_t a[3] = {{DNNL_ARG_DST, y}, {DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_DIFF_SRC, m}};
        ZT_TRY(prim_step(p, s, pd, a, 3, fl));
        if (acc) ZT_TRY(add_into(p, s, &smd, t, dx, fl));
        return ZT_OK;
    }
    case ZT_OP_ADD: {
        /* Both input gradients equal the output's, which is not read after
         * this op: an input whose gradient is still empty takes the output's
         * buffer instead of a copy. */
        int a = op->in[0], b = op->in[1];
        void *dout = s->dptr[op->out];
        for (int j = 0; j < 2; j++) {
            int tj = op->in[j];
            if (written[tj] && !(j == 1 && b == a))
                ZT_TRY(add_into(p, s, &smd, tj, dout, tj == g->input ? F_DIN : 0));
        }
        bool fa = !written[a], fb = !written[b] && b != a;
        bool excl = buffer_exclusive(p, s, i, op->out);
        /* Sharing with one input is safe; with both, only as share_both says. */
        bool share_b = excl && fb && (!fa || share_both(g, i, a, b) || share_both(g, i, b, a));
        bool share_a = excl && fa;
        for (int j = 0; j < 2; j++) {
            int tj = op->in[j];
            if (!(j == 0 ? fa : fb)) continue;
            written[tj] = true;
            if (j == 0 ? share_a : share_b) {
                s->dptr[tj] = dout;
                continue;
            }
            ZT_TRY(reorder_pd(p, &smd, &smd, false, &pd));
            ZT_TRY(set_mem(s, &smd, p, s->dptr[tj], &m));
            ZT_TRY(set_mem(s, &smd, p, dout, &dy));
            dnnl_exec_arg_t c[2] = {{DNNL_ARG_FROM, dy}, {DNNL_ARG_TO, m}};
            ZT_TRY(prim_step(p, s, pd, c, 2, tj == g->input ? F_DIN : 0));
        }
        /* add(x, x): twice the output's gradient. */
        if (b == a) ZT_TRY(add_into(p, s, &smd, a, dout, a == g->input ? F_DIN : 0));
        return ZT_OK;
    }
    }
    return zt_fail(ZT_ERR_INVALID, "unknown op kind %d", (int)op->kind);
}

static zt_status build_train_set(plan *p, int n, exec_set *s)
{
    const zt_nn_graph *g = p->g;
    s->batch = n;
    s->training = true;
    s->dptr = zt_xmalloc((size_t)g->ntensors * sizeof *s->dptr);
    memcpy(s->dptr, p->diff, (size_t)g->ntensors * sizeof *s->dptr);
    s->wspace = zt_xcalloc((size_t)g->nops + 1, sizeof *s->wspace);
    dnnl_primitive_desc_t *fwd = zt_xcalloc((size_t)g->nops + 1, sizeof *fwd);
    bool *written = zt_xcalloc((size_t)g->ntensors, sizeof *written);
    zt_status z = ZT_OK;
    for (int i = 0; i < g->nops && z == ZT_OK; i++) z = train_forward_op(p, s, i, &fwd[i]);
    s->nfwd = s->nsteps;
    for (int o = 0; o < g->noutputs; o++) written[g->outputs[o]] = true;
    for (int i = g->nops - 1; i >= 0 && z == ZT_OK; i--)
        if (written[g->ops[i].out]) z = train_backward_op(p, s, i, fwd[i], written);
    for (int i = 0; i < g->nops; i++)
        if (fwd[i]) dnnl_primitive_desc_destroy(fwd[i]);
    free(fwd);
    free(written);
    return z;
}

/* ---- buffers ---- */

static void free_infer(plan *p)
{
    for (int i = 0; i < p->nbuckets; i++) set_free(p->infer_sets[i]);
    free(p->infer_sets);
    p->infer_sets = NULL;
    for (int i = 0; p->slots && i < p->nslots; i++) zt_aligned_free(p->slots[i]);
    free(p->slots);
    p->slots = NULL;
    free(p->buckets);
    p->buckets = NULL;
    p->nbuckets = 0;
    p->cap_infer = 0;
}

static void free_train(plan *p)
{
    const zt_nn_graph *g = p->g;
    for (int i = 0; i < TRAIN_SETS; i++) {
        set_free(p->train_sets[i]);
        p->train_sets[i] = NULL;
    }
    p->last_train = NULL;
    if (p->act)
        for (int t = 0; t < g->ntensors; t++) {
            zt_aligned_free(p->act[t]);
            zt_aligned_free(p->diff[t]);
        }
    if (p->stat_mean)
        for (int i = 0; i < g->nops; i++) {
            free(p->stat_mean[i]);
            free(p->stat_var[i]);
        }
    free(p->act);
    free(p->diff);
    free(p->stat_mean);
    free(p->stat_var);
    zt_aligned_free(p->tmp);
    p->act = p->diff = NULL;
    p->stat_mean = p->stat_var = NULL;
    p->tmp = NULL;
    p->cap_train = 0;
}

static zt_status reserve_infer(plan *p, int max_batch)
{
    if (max_batch <= p->cap_infer) return ZT_OK;
    free_infer(p);
    size_t bytes = (size_t)max_batch * p->max_tensor * p->dt_size;
    p->slots = zt_xcalloc((size_t)p->nslots, sizeof *p->slots);
    for (int i = 0; i < p->nslots; i++) {
        p->slots[i] = zt_aligned_alloc(ZT_CACHE_LINE, bytes);
        if (!p->slots[i]) {
            free_infer(p);
            return zt_fail(ZT_ERR_NOMEM, "no memory for activations of batch %d", max_batch);
        }
    }
    /* Buckets 1, 2, 3, ..., EXACT_BATCH, then 1.5x and 2x steps: batches
     * up to EXACT_BATCH (self-play's) run unpadded; above, padding wastes at
     * most a third. Sets are built on first use. */
    p->buckets = zt_xmalloc((EXACT_BATCH + 64) * sizeof *p->buckets);
    for (int b = 1; b < max_batch && b <= EXACT_BATCH; b++) p->buckets[p->nbuckets++] = b;
    for (int b = EXACT_BATCH; b < max_batch; b *= 2) {
        if (b > EXACT_BATCH) p->buckets[p->nbuckets++] = b;
        if (b + b / 2 < max_batch) p->buckets[p->nbuckets++] = b + b / 2;
    }
    p->buckets[p->nbuckets++] = max_batch;
    p->infer_sets = zt_xcalloc((size_t)p->nbuckets, sizeof *p->infer_sets);
    p->cap_infer = max_batch;
    /* Every bucket's primitives now (oneDNN generates their kernels, a few
     * ms each), so that no later call of at most max_batch pays for it: a
     * self-play actor meets most sizes up to its G x K. */
    for (int b = 0; b < p->nbuckets; b++) {
        exec_set *s;
        zt_status st = build_infer_set(p, b, &s);
        if (st != ZT_OK) {
            free_infer(p);
            return st;
        }
    }
    return ZT_OK;
}

static zt_status reserve_train(plan *p, int max_batch)
{
    if (max_batch <= p->cap_train) return ZT_OK;
    free_train(p);
    const zt_nn_graph *g = p->g;
    bool ok = true;
    /* Winograd weights for training, once: inference-only plans (self-play)
     * never hold them. */
    for (int i = 0; i < g->nops && ok; i++) {
        if (!use_winograd_train(p, i) || p->wino_fwd[i]) continue;
        p->wino_fwd[i] = wino_weights(p, i);
        p->wino_bwd[i] = wino_weights(p, i);
        p->wino_train_stale = true;
        ok = p->wino_fwd[i] && p->wino_bwd[i];
    }
    p->act = zt_xcalloc((size_t)g->ntensors, sizeof *p->act);
    p->diff = zt_xcalloc((size_t)g->ntensors, sizeof *p->diff);
    p->stat_mean = zt_xcalloc((size_t)g->nops + 1, sizeof *p->stat_mean);
    p->stat_var = zt_xcalloc((size_t)g->nops + 1, sizeof *p->stat_var);
    for (int t = 0; t < g->ntensors && ok; t++) {
        size_t bytes = (size_t)max_batch * zt_nn_shape_size(g->tensors[t]) * p->dt_size;
        p->act[t] = zt_aligned_alloc(ZT_CACHE_LINE, bytes);
        p->diff[t] = zt_aligned_alloc(ZT_CACHE_LINE, bytes);
        ok = p->act[t] && p->diff[t];
    }
    p->tmp = zt_aligned_alloc(ZT_CACHE_LINE, (size_t)max_batch * p->max_tensor * p->dt_size);
    ok = ok && p->tmp;
    for (int i = 0; i < g->nops && ok; i++) {
        const zt_nn_op *op = &g->ops[i];
        size_t n = op->kind == ZT_OP_BN ? (size_t)g->tensors[op->out].c
                   : op->kind == ZT_OP_LN ? (size_t)max_batch : 0;
        if (n == 0) continue;
        p->stat_mean[i] = zt_xmalloc(n * sizeof(float));
        p->stat_var[i] = zt_xmalloc(n * sizeof(float));
    }
    if (!ok) {
        free_train(p);
        return zt_fail(ZT_ERR_NOMEM, "no memory for training activations of batch %d", max_batch);
    }
    p->cap_train = max_batch;
    return ZT_OK;
}

static zt_status int8_refuse_training(void)
{
    return zt_fail(ZT_ERR_UNSUPPORTED, "int8 nets are for inference only: train in bf16 or fp32 "
                                       "and quantise the published weights");
}

static zt_status cpu_reserve(plan *p, int max_batch, bool training)
{
    ZT_ASSERT(max_batch > 0);
    if (p->int8) return training ? int8_refuse_training() : zt_int8_reserve(p->int8, max_batch);
    return training ? reserve_train(p, max_batch) : reserve_infer(p, max_batch);
}

/* ---- the vtable ---- */

static bool cpu_supports(zt_precision prec)
{
    if (prec == ZT_PRECISION_FP32) return true;
    if (prec == ZT_PRECISION_INT8) return zt_int8_supported();
    if (prec != ZT_PRECISION_BF16) return false;
    /* Native bf16 dot products (AVX512_BF16: CPUID.(EAX=7,ECX=1):EAX[5]), and
     * a oneDNN allowed to use them (DNNL_MAX_CPU_ISA may forbid it). */
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 1, &a, &b, &c, &d) || !(a & (1u << 5))) return false;
    unsigned isa = (unsigned)dnnl_get_effective_cpu_isa();
    return (isa & (unsigned)dnnl_cpu_isa_avx512_core_bf16) == (unsigned)dnnl_cpu_isa_avx512_core_bf16;
}

static zt_precision cpu_auto_precision(void)
{
    return cpu_supports(ZT_PRECISION_BF16) ? ZT_PRECISION_BF16 : ZT_PRECISION_FP32;
}

static void cpu_plan_free(plan *p)
{
    if (!p) return;
    if (p->int8) {
        zt_int8_plan_free(p->int8);
        free(p);
        return;
    }
    free_infer(p);
    free_train(p);
    for (int i = 0; i < p->nentries; i++) {
        weight_entry *e = &p->entries[i];
        if (e->reorder) dnnl_primitive_destroy(e->reorder);
        if (e->src) dnnl_memory_destroy(e->src);
        if (e->dst) dnnl_memory_destroy(e->dst);
        zt_aligned_free(e->buf);
    }
    free(p->entries);
    for (int i = 0; i < p->nprefs; i++) dnnl_memory_destroy(p->prefs[i].mem);
    free(p->prefs);
    for (int b = 0; b < SB_COUNT; b++) zt_aligned_free(p->sb[b].ptr);
    if (p->fold_w)
        for (int i = 0; i < p->g->nops; i++) {
            free(p->fold_w[i]);
            free(p->fold_b[i]);
        }
    if (p->flip_w)
        for (int i = 0; i < p->g->nops; i++) free(p->flip_w[i]);
    if (p->wino_u)
        for (int i = 0; i < p->g->nops; i++) {
            zt_aligned_free(p->wino_u[i]);
            zt_aligned_free(p->wino_fwd[i]);
            zt_aligned_free(p->wino_bwd[i]);
        }
    free(p->wino_u);
    free(p->wino_fwd);
    free(p->wino_bwd);
    free(p->fold_w);
    free(p->fold_b);
    free(p->flip_w);
    free(p->fused_relu);
    free(p->relu_in_bn);
    free(p->nodes);
    free(p->tslot);
    free(p->dscale);
    free(p->dshift);
    if (p->stream) dnnl_stream_destroy(p->stream);
    if (p->eng) dnnl_engine_destroy(p->eng);
    free(p);
}

static zt_status cpu_plan_new(const zt_nn_graph *g, float *params, float *state, zt_precision prec,
                              int threads, plan **out)
{
    if (prec == ZT_PRECISION_INT8) {
        zt_int8_plan *q;
        ZT_TRY(zt_int8_plan_new(g, params, state, threads, &q));
        plan *p = zt_xcalloc(1, sizeof *p);
        p->g = g;
        p->prec = prec;
        p->int8 = q;
        *out = p;
        return ZT_OK;
    }
    ZT_ASSERT(prec == ZT_PRECISION_FP32 || prec == ZT_PRECISION_BF16);
    if (prec == ZT_PRECISION_BF16 && !cpu_supports(prec))
        return zt_fail(ZT_ERR_UNSUPPORTED, "this CPU has no native bf16 (AVX512_BF16)");
    plan *p = zt_xcalloc(1, sizeof *p);
    p->g = g;
    p->params = params;
    p->state = state;
    p->prec = prec;
    p->dt = prec == ZT_PRECISION_BF16 ? dnnl_bf16 : dnnl_f32;
    p->dt_size = prec == ZT_PRECISION_BF16 ? 2 : 4;
    p->threads = threads > 0 ? threads : 1;
    p->fold_dirty = true;
    p->max_tensor = 1;
    for (int t = 0; t < g->ntensors; t++)
        if (zt_nn_shape_size(g->tensors[t]) > p->max_tensor)
            p->max_tensor = zt_nn_shape_size(g->tensors[t]);
    p->max_param = 1;
    for (int i = 0; i < g->nparams; i++)
        if (g->params[i].count > p->max_param) p->max_param = g->params[i].count;
    p->dscale = zt_xcalloc(p->max_param, sizeof(float));
    p->dshift = zt_xcalloc(p->max_param, sizeof(float));
    build_program(p);
    p->fold_w = zt_xcalloc((size_t)g->nops + 1, sizeof *p->fold_w);
    p->fold_b = zt_xcalloc((size_t)g->nops + 1, sizeof *p->fold_b);
    p->flip_w = zt_xcalloc((size_t)g->nops + 1, sizeof *p->flip_w);
    p->fused_relu = zt_xmalloc(((size_t)g->nops + 1) * sizeof *p->fused_relu);
    p->relu_in_bn = zt_xcalloc((size_t)g->nops + 1, sizeof *p->relu_in_bn);
    for (int i = 0; i < g->nops; i++) {
        int c = g->ops[i].kind == ZT_OP_BN && !host_bn(p, i) ? sole_consumer(g, g->ops[i].out) : -1;
        p->fused_relu[i] = c >= 0 && g->ops[c].kind == ZT_OP_RELU ? c : -1;
        if (p->fused_relu[i] >= 0) p->relu_in_bn[c] = true;
    }
    for (int k = 0; k < p->nnodes; k++) {
        const inode *nd = &p->nodes[k];
        if (nd->bn < 0) continue;
        p->fold_w[nd->op] = zt_xmalloc(g->params[g->ops[nd->op].p[0]].count * sizeof(float));
        p->fold_b[nd->op] = zt_xmalloc((size_t)g->tensors[g->ops[nd->op].out].c * sizeof(float));
    }
    /* The Winograd kernel runs where it beats oneDNN: on CPUs with
     * AVX512-BF16 but no AMX. Where oneDNN has AMX tiles its bf16 convs are
     * faster (measured on a Xeon with AMX, c4-64x5 on one thread: 2.5x the
     * Winograd kernel's inferences/s at batch 8, 3-5x at batch 256).
     * ZT_WINOGRAD=0 or 1 overrides the choice (to compare both paths). */
    const char *wino = getenv("ZT_WINOGRAD");
    bool wino_wanted = wino && *wino ? strcmp(wino, "0") != 0 : !dnnl_has_amx();
    p->winograd = prec == ZT_PRECISION_BF16 && wino_wanted && zt_winograd_supported();
    /* Its products on fp32 FMAs where this core runs them faster than bf16
     * dot products (winograd.h); ZT_WINOGRAD_FMA=0 or 1 overrides. */
    const char *fma = getenv("ZT_WINOGRAD_FMA");
    p->wino_fma = p->winograd && (fma && *fma ? strcmp(fma, "0") != 0 : zt_winograd_fma_faster());
    p->wino_u = zt_xcalloc((size_t)g->nops + 1, sizeof *p->wino_u);
    p->wino_fwd = zt_xcalloc((size_t)g->nops + 1, sizeof *p->wino_fwd);
    p->wino_bwd = zt_xcalloc((size_t)g->nops + 1, sizeof *p->wino_bwd);
    p->wino_train_stale = true;
    p->host_bnorm = prec == ZT_PRECISION_BF16 && zt_winograd_supported();
    for (int k = 0; k < p->nnodes; k++) {
        const inode *nd = &p->nodes[k];
        if (!use_winograd(p, nd)) continue;
        if (!(p->wino_u[nd->op] = wino_weights(p, nd->op))) {
            cpu_plan_free(p);
            return zt_fail(ZT_ERR_NOMEM, "no memory for Winograd weights");
        }
    }
    use_threads(p);
    dnnl_status_t r = dnnl_engine_create(&p->eng, dnnl_cpu, 0);
    if (r == dnnl_success) r = dnnl_stream_create(&p->stream, p->eng, dnnl_stream_default_flags);
    if (r != dnnl_success) {
        cpu_plan_free(p);
        return dn_fail("engine/stream create", r);
    }
    *out = p;
    return ZT_OK;
}

static zt_status run_steps(plan *p, const exec_set *s, int from, int to, unsigned skip)
{
    for (int i = from; i < to; i++) {
        const step *st = &s->steps[i];
        if (st->flags & skip) continue;
        if (st->host) {
            ZT_TRY(st->host(p, st));
            continue;
        }
        DN("execute", dnnl_primitive_execute(st->prim, p->stream, st->nargs, st->args));
    }
    DN("stream_wait", dnnl_stream_wait(p->stream));
    return ZT_OK;
}

/* fp32 <-> bf16 over arrays, 16 at a time, bit for bit what
 * zt_bf16_from_f32 (round to nearest even, NaN kept quiet) and
 * zt_f32_from_bf16 give. Only bf16 plans call them, and bf16 plans exist
 * only where the CPU has AVX512_BF16 (cpu_supports), so AVX-512 is there. */
#define BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl")))

BF16_TARGET static void bf16_from_f32_array(uint16_t *d, const float *s, size_t n)
{
    const __m512i abs = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
    const __m512i one = _mm512_set1_epi32(1), half = _mm512_set1_epi32(0x7fff);
    const __m512i quiet = _mm512_set1_epi32(0x0040);
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 m = zt_lanes16((ptrdiff_t)(n - i));
        __m512i u = _mm512_castps_si512(_mm512_maskz_loadu_ps(m, s + i));
        __m512i hi = _mm512_srli_epi32(u, 16);
        __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, abs), inf);
        __m512i r = _mm512_srli_epi32(
            _mm512_add_epi32(u, _mm512_add_epi32(half, _mm512_and_si512(hi, one))), 16);
        r = _mm512_mask_or_epi32(r, nan, hi, quiet);
        _mm256_mask_storeu_epi16(d + i, m, _mm512_cvtepi32_epi16(r));
    }
}

BF16_TARGET static void f32_from_bf16_array(float *d, const uint16_t *s, size_t n)
{
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 m = zt_lanes16((ptrdiff_t)(n - i));
        __m512i u = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, s + i));
        _mm512_mask_storeu_ps(d + i, m, _mm512_castsi512_ps(_mm512_slli_epi32(u, 16)));
    }
}

static void load_input(const plan *p, void *dst, const float *src, size_t n, size_t padded)
{
    if (p->dt == dnnl_f32) {
        memcpy(dst, src, n * sizeof(float));
        memset((float *)dst + n, 0, (padded - n) * sizeof(float));
        return;
    }
    uint16_t *d = dst;
    bf16_from_f32_array(d, src, n);
    memset(d + n, 0, (padded - n) * sizeof *d);
}

static void store_output(const plan *p, float *dst, const void *src, size_t n)
{
    if (p->dt == dnnl_f32) {
        memcpy(dst, src, n * sizeof(float));
        return;
    }
    f32_from_bf16_array(dst, src, n);
}

static zt_status train_set(plan *p, int n, exec_set **out)
{
    int victim = 0;
    for (int i = 0; i < TRAIN_SETS; i++) {
        exec_set *s = p->train_sets[i];
        if (s && s->batch == n) {
            s->last_use = ++p->clock;
            *out = s;
            return ZT_OK;
        }
        if (!s) victim = i;
        else if (p->train_sets[victim] && s->last_use < p->train_sets[victim]->last_use) victim = i;
    }
    if (p->train_sets[victim] == p->last_train) p->last_train = NULL;
    set_free(p->train_sets[victim]);
    exec_set *s = zt_xcalloc(1, sizeof *s);
    p->train_sets[victim] = s; /* so that grow_shared repoints it too */
    zt_status z = build_train_set(p, n, s);
    if (z == ZT_OK) z = grow_shared(p);
    if (z != ZT_OK) {
        p->train_sets[victim] = NULL;
        set_free(s);
        return z;
    }
    s->last_use = ++p->clock;
    *out = s;
    return ZT_OK;
}

static zt_status cpu_forward(plan *p, int B, const float *in, float *const *outs, bool training,
                             bool update_stats)
{
    if (p->int8) return training ? int8_refuse_training() : zt_int8_forward(p->int8, B, in, outs);
    const zt_nn_graph *g = p->g;
    use_threads(p);
    size_t in_size = zt_nn_shape_size(g->tensors[g->input]);
    if (training) {
        ZT_TRY(reserve_train(p, B));
        exec_set *s;
        ZT_TRY(train_set(p, B, &s));
        ZT_TRY(refresh(p, true));
        load_input(p, p->act[g->input], in, (size_t)B * in_size, (size_t)B * in_size);
        ZT_TRY(run_steps(p, s, 0, s->nfwd, update_stats ? 0 : F_UPDATE));
        if (update_stats) p->fold_dirty = true;
        for (int o = 0; o < g->noutputs; o++)
            store_output(p, outs[o], p->act[g->outputs[o]],
                         (size_t)B * zt_nn_shape_size(g->tensors[g->outputs[o]]));
        p->last_train = s;
        return ZT_OK;
    }
    ZT_TRY(reserve_infer(p, B));
    int b = 0;
    while (p->buckets[b] < B) b++;
    exec_set *s = p->infer_sets[b];
    if (!s) ZT_TRY(build_infer_set(p, b, &s));
    ZT_TRY(refresh(p, false));
    int n = s->batch;
    load_input(p, p->slots[p->tslot[g->input]], in, (size_t)B * in_size, (size_t)n * in_size);
    ZT_TRY(run_steps(p, s, 0, s->nsteps, 0));
    for (int o = 0; o < g->noutputs; o++) {
        int t = g->outputs[o];
        store_output(p, outs[o], p->slots[p->tslot[t]], (size_t)B * zt_nn_shape_size(g->tensors[t]));
    }
    return ZT_OK;
}

static zt_status cpu_backward(plan *p, int B, const float *const *d_outs, float *grads, float *d_in)
{
    if (p->int8) return int8_refuse_training();
    const zt_nn_graph *g = p->g;
    exec_set *s = p->last_train;
    ZT_ASSERT(s && s->batch == B);
    use_threads(p);
    for (int o = 0; o < g->noutputs; o++) {
        int t = g->outputs[o];
        size_t n = (size_t)B * zt_nn_shape_size(g->tensors[t]);
        load_input(p, s->dptr[t], d_outs[o], n, n);
    }
    for (int i = 0; i < s->nrefs; i++) {
        if (s->refs[i].buf != REF_GRADS) continue;
        DN("set_data_handle", dnnl_memory_set_data_handle(
                                  s->refs[i].mem, (char *)grads + s->refs[i].offset));
    }
    p->call_grads = grads;
    ZT_TRY(run_steps(p, s, s->nfwd, s->nsteps, d_in ? 0 : F_DIN));
    p->call_grads = NULL;
    if (d_in)
        store_output(p, d_in, s->dptr[g->input],
                     (size_t)B * zt_nn_shape_size(g->tensors[g->input]));
    return ZT_OK;
}

static size_t cpu_ranges_size(plan *p)
{
    return p->int8 ? zt_int8_ranges_size(p->int8) : 0;
}

static zt_status cpu_calibrate(plan *p, int B, const float *in)
{
    return p->int8 ? zt_int8_calibrate(p->int8, B, in) : ZT_OK;
}

static bool cpu_ranges_get(plan *p, float *ranges)
{
    return p->int8 && zt_int8_ranges_get(p->int8, ranges);
}

static zt_status cpu_ranges_set(plan *p, const float *ranges)
{
    return p->int8 ? zt_int8_ranges_set(p->int8, ranges) : ZT_OK;
}

const zt_nn_backend zt_nn_backend_cpu = {
    .name = "cpu",
    .supports = cpu_supports,
    .auto_precision = cpu_auto_precision,
    .plan_new = cpu_plan_new,
    .plan_free = cpu_plan_free,
    .reserve = cpu_reserve,
    .params_changed = cpu_params_changed,
    .forward = cpu_forward,
    .backward = cpu_backward,
    .ranges_size = cpu_ranges_size,
    .calibrate = cpu_calibrate,
    .ranges_get = cpu_ranges_get,
    .ranges_set = cpu_ranges_set,
};
