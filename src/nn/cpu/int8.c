/* int8 inference (see int8.h).
 *
 * Quantisation. A tensor read by a conv or dense is stored as u8 with a
 * per-tensor affine code x = scale * (q - zp): zp is 0 for the ReLU outputs
 * that are almost all of them, and the range [lo, hi] (lo <= 0 <= hi, so
 * that 0 is exact and zero padding is the code zp) comes from calibration.
 * Weights are s8 with a symmetric scale per output channel (max |w| / 127).
 * The int32 sum S = sum q_x q_w then gives
 *   y = s_x s_w[o] (S - zp sum q_w) + b[o],
 * the correction folded into the bias, then the residual (dequantised) is
 * added, the ReLU applied, and y requantised to the next tensor's u8 code or
 * written as fp32 where an fp32 op or an output reads it.
 *
 * Layout. A u8 tensor is NHWC with its channels padded to a multiple of 16
 * (the kernel writes 16 at a time) and, when a k x k conv reads it, k / 2
 * border pixels of code zp, so the kernel reads every tap without a bound
 * check. A dense layer is the same kernel over one position whose "channels"
 * are the whole stored sample (its weights are zero on the padding).
 *
 * Kernel. An implicit GEMM: 6 output positions x 64 output channels (24
 * zmm sums) per call; per 4 input channels one broadcast of each position's
 * 4 u8 and one load of 16 x 4 s8 weights per 16 output channels. Positions
 * are split across OpenMP threads. */
#include <cpuid.h>
#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "nn/cpu/int8.h"

#define TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")))
#define INLINE TARGET static inline __attribute__((always_inline))

enum { NP = 6, NOC = 4, CBLK = 16 };

bool zt_int8_supported(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512vnni");
}

typedef struct qtensor {
    zt_nn_shape s;
    bool u8;     /* read by a conv or dense: stored quantised */
    bool need_f; /* read by an fp32 op or an output: also stored as fp32 */
    int pad, cs; /* u8 layout: border pixels, stored channels */
    size_t qstride; /* u8 bytes per sample */
    int range;   /* index of its (lo, hi) pair, or -1 */
    float scale, inv_scale;
    int zp;
    uint8_t *q;
    float *f;
    bool f_borrowed; /* f is the caller's input */
    int alias;       /* u8 codes in this tensor's buffer (a dead residual's), or -1 */
} qtensor;

/* A oneDNN int8 convolution for one batch size, with its memories. */
typedef struct dn_prim {
    dnnl_primitive_t prim;
    dnnl_memory_t src, wei, bias, dst;
} dn_prim;

/* One conv or dense with what is fused into it. */
typedef struct qconv {
    int op;
    int in, out, res; /* tensors; res is the residual added, or -1 */
    bool relu;
    int ho, wo, cout;
    int ntaps, k4, nocb;
    int *tap_off;                  /* byte offsets of the taps from a position's base */
    long ystep, xstep, base0;      /* the base of output position (y, x) in the input */
    size_t ocb_stride;             /* bytes of weights per 16 output channels */
    int8_t *w;                     /* [nocb][ntaps][k4][16][4] */
    int32_t *wsum;                 /* per output channel (nocb * 16): sum of its codes */
    float *wscale, *bias;          /* per output channel */
    float *mul, *add;              /* the epilogue: y = S * mul + add */
    float res_scale, res_shift;    /* residual dequantisation: q * scale + shift */
    /* On AMX, convs between ReLU'd u8 tensors and wide dense layers run
     * oneDNN's int8 primitives (AMX tiles) instead of our kernel: */
    bool dnnl;
    int kin;                       /* plain's input codes per output and tap: the
                                    * stored channels (conv) or sample (dense) */
    int8_t *plain;                 /* [cs_out][kin][k][k] codes (oihw; dense: oi) */
    float *oscale, *dbias;         /* per stored output channel */
    float sum_scale;               /* the residual's codes into the output's */
    dn_prim *dp;                   /* per bucket size (dn_bucket) at [size - 1], built on first use */
    int ndp;
    bool in_place;                 /* oneDNN: out's buffer is res's (res dies here) */
} qconv;

static void dn_free(qconv *c);

enum { STEP_QCONV, STEP_FLOAT, STEP_QUANT, STEP_DEQUANT };

typedef struct qstep {
    int kind;
    int idx; /* qconv index, op index, or tensor */
} qstep;

struct zt_int8_plan {
    const zt_nn_graph *g;
    const float *params, *state;
    int threads;
    zt_nn_graph fg;     /* the folded graph */
    float *fp, *fs;     /* its parameters (refolded when dirty) */
    bool dirty;         /* host arrays changed since the last quantisation */
    bool calibrated;
    qtensor *t;
    qconv *qc;
    int nqc;
    qstep *steps;
    int nsteps;
    bool *fused;        /* per op of fg: run inside a qconv */
    int nranges;
    float *ranges;      /* [nranges][2] */
    int cap;
    dnnl_engine_t eng;  /* when any qconv runs on oneDNN */
    dnnl_stream_t stream;
};

static size_t round_up(size_t x, size_t m)
{
    return (x + m - 1) / m * m;
}

static const float *fparam(const zt_int8_plan *p, int id)
{
    const zt_nn_param *pr = &p->fg.params[id];
    return (pr->trainable ? p->fp : p->fs) + pr->offset;
}

/* ---- plan construction ---- */

static int sole_consumer(const zt_nn_graph *g, int t)
{
    int n = 0, who = -1;
    for (int i = 0; i < g->nops; i++)
        for (int j = 0; j < 2; j++)
            if (g->ops[i].in[j] == t) n++, who = i;
    for (int o = 0; o < g->noutputs; o++)
        if (g->outputs[o] == t) n++, who = -1;
    return n == 1 ? who : -1;
}

static void add_step(zt_int8_plan *p, int kind, int idx)
{
    p->steps = zt_xrealloc(p->steps, (size_t)(p->nsteps + 1) * sizeof *p->steps);
    p->steps[p->nsteps++] = (qstep){kind, idx};
}

/* Whether the convs and wide dense layers choose_dnnl() allows run
 * oneDNN's int8 primitives: where they run on AMX (CPUID.(7,0):EDX[25]
 * AMX-INT8, and a oneDNN allowed to use it). ZT_INT8_DNNL=0 keeps every op
 * on our kernel and ZT_INT8_DNNL=1 gives oneDNN those ops on any CPU (its
 * VNNI kernels without AMX), to compare. */
static bool use_dnnl(void)
{
    const char *env = getenv("ZT_INT8_DNNL");
    if (env && strcmp(env, "0") == 0) return false;
    if (env && strcmp(env, "1") == 0) return true;
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1u << 25))) return false;
    unsigned isa = (unsigned)dnnl_get_effective_cpu_isa();
    return (isa & (unsigned)dnnl_cpu_isa_avx512_core_amx) == (unsigned)dnnl_cpu_isa_avx512_core_amx;
}

/* Dense layers with fewer outputs than this stay on our kernel: the heads
 * of the resnets (1 to 64 outputs), where a oneDNN call's fixed cost would
 * outweigh its product. */
enum { DNNL_DENSE_MIN_OUT = 128 };

/* Which qconvs run on oneDNN, and the border pixels of every u8 tensor.
 * A oneDNN conv reads and writes dense NHWC (no border) u8 codes of zero
 * point 0: its input and its residual come from ReLU'd qconvs, and it ends
 * in a ReLU itself. A oneDNN dense layer (inner product) reads the whole
 * stored sample, border and all, with any zero point (its share goes into
 * the bias, as in our kernel); it writes fp32, or u8 codes of zero point 0
 * after a ReLU, with a residual only then. A tensor one of our k x k convs
 * reads keeps its border; a oneDNN op writing or adding such a tensor runs
 * our kernel instead. */
static void choose_dnnl(zt_int8_plan *p)
{
    const zt_nn_graph *g = &p->fg;
    bool amx = use_dnnl(); /* (AMX, or asked for) */
    bool *relu_out = zt_xcalloc((size_t)g->ntensors, sizeof *relu_out);
    for (int k = 0; k < p->nqc; k++)
        if (p->qc[k].relu) relu_out[p->qc[k].out] = true;
    for (int k = 0; k < p->nqc; k++) {
        qconv *c = &p->qc[k];
        bool u8_res = c->res < 0 || (relu_out[c->res] && p->t[c->res].u8);
        if (g->ops[c->op].kind == ZT_OP_CONV)
            c->dnnl = amx && c->relu && relu_out[c->in] && p->t[c->out].u8 && u8_res;
        else
            c->dnnl = amx && g->tensors[g->ops[c->op].out].c >= DNNL_DENSE_MIN_OUT &&
                      (p->t[c->out].u8 ? c->relu && u8_res : c->res < 0);
    }
    for (bool changed = true; changed;) {
        changed = false;
        for (int t = 0; t < g->ntensors; t++) p->t[t].pad = 0;
        for (int k = 0; k < p->nqc; k++) {
            const qconv *c = &p->qc[k];
            const zt_nn_op *op = &g->ops[c->op];
            if (!c->dnnl && op->kind == ZT_OP_CONV && op->k / 2 > p->t[c->in].pad)
                p->t[c->in].pad = op->k / 2;
        }
        for (int k = 0; k < p->nqc; k++) {
            qconv *c = &p->qc[k];
            bool in_pad = g->ops[c->op].kind == ZT_OP_CONV && p->t[c->in].pad;
            if (c->dnnl &&
                (in_pad || p->t[c->out].pad || (c->res >= 0 && p->t[c->res].pad))) {
                c->dnnl = false;
                changed = true;
            }
        }
    }
    free(relu_out);
}

/* A oneDNN conv that adds a residual takes it in its destination (the sum
 * post-op), so the residual's codes were copied there first. Where no
 * step after the conv reads the residual, the conv's output is made to
 * live in the residual's buffer instead, and the copy goes: a residual
 * network's block input dies at its block's second conv. Both are ReLU'd
 * u8 without padding (choose_dnnl), so the layouts match. */
static void share_residuals(zt_int8_plan *p)
{
    const zt_nn_graph *g = &p->fg;
    for (int s = 0; s < p->nsteps; s++) {
        if (p->steps[s].kind != STEP_QCONV) continue;
        qconv *c = &p->qc[p->steps[s].idx];
        if (!c->dnnl || c->res < 0 || c->res == g->input || c->res == c->in) continue;
        const qtensor *r = &p->t[c->res], *o = &p->t[c->out];
        if (!r->u8 || !o->u8 || r->pad || o->pad || r->qstride != o->qstride ||
            r->cs != o->cs)
            continue;
        bool read_later = false;
        for (int o2 = 0; o2 < g->noutputs; o2++) read_later |= g->outputs[o2] == c->res;
        for (int s2 = s + 1; s2 < p->nsteps && !read_later; s2++) {
            const qstep *st = &p->steps[s2];
            if (st->kind == STEP_QCONV)
                read_later = p->qc[st->idx].in == c->res || p->qc[st->idx].res == c->res;
            else if (st->kind == STEP_DEQUANT)
                read_later = st->idx == c->res;
            else if (st->kind == STEP_FLOAT)
                read_later = g->ops[st->idx].in[0] == c->res || g->ops[st->idx].in[1] == c->res;
        }
        if (read_later) continue;
        c->in_place = true;
        p->t[c->out].alias = c->res;
    }
}

static void build(zt_int8_plan *p)
{
    const zt_nn_graph *g = &p->fg;
    p->t = zt_xcalloc((size_t)g->ntensors, sizeof *p->t);
    p->fused = zt_xcalloc((size_t)g->nops + 1, sizeof *p->fused);
    p->qc = zt_xcalloc((size_t)g->nops + 1, sizeof *p->qc);
    for (int t = 0; t < g->ntensors; t++) {
        p->t[t].s = g->tensors[t];
        p->t[t].range = -1;
        p->t[t].alias = -1;
    }
    /* Fusion: conv/dense [-> add] [-> relu] when each link is the sole
     * reader of the one before. */
    for (int i = 0; i < g->nops; i++) {
        const zt_nn_op *op = &g->ops[i];
        if (op->kind != ZT_OP_CONV && op->kind != ZT_OP_DENSE) continue;
        qconv *c = &p->qc[p->nqc++];
        c->op = i;
        c->in = op->in[0];
        c->res = -1;
        int t = op->out, next = sole_consumer(g, t);
        if (next >= 0 && g->ops[next].kind == ZT_OP_ADD) {
            const zt_nn_op *a = &g->ops[next];
            c->res = a->in[0] == t ? a->in[1] : a->in[0];
            p->fused[next] = true;
            t = a->out;
            next = sole_consumer(g, t);
        }
        if (next >= 0 && g->ops[next].kind == ZT_OP_RELU) {
            c->relu = true;
            p->fused[next] = true;
            t = g->ops[next].out;
        }
        c->out = t;
    }
    /* Who reads what, in which form. */
    for (int i = 0; i < g->nops; i++) {
        const zt_nn_op *op = &g->ops[i];
        if (p->fused[i]) continue;
        if (op->kind == ZT_OP_CONV || op->kind == ZT_OP_DENSE) {
            p->t[op->in[0]].u8 = true;
        } else {
            for (int j = 0; j < 2; j++)
                if (op->in[j] >= 0) p->t[op->in[j]].need_f = true;
            p->t[op->out].need_f = true; /* an fp32 op writes fp32 */
        }
    }
    for (int o = 0; o < g->noutputs; o++) p->t[g->outputs[o]].need_f = true;
    for (int k = 0; k < p->nqc; k++)
        if (p->qc[k].res >= 0 && !p->t[p->qc[k].res].u8) p->t[p->qc[k].res].need_f = true;
    for (int k = 0; k < p->nqc; k++)
        if (!p->t[p->qc[k].out].u8) p->t[p->qc[k].out].need_f = true;
    choose_dnnl(p);
    for (int t = 0; t < g->ntensors; t++) {
        qtensor *q = &p->t[t];
        if (!q->u8) continue;
        q->cs = (int)round_up((size_t)q->s.c, CBLK);
        q->qstride = (size_t)(q->s.h + 2 * q->pad) * (size_t)(q->s.w + 2 * q->pad) * (size_t)q->cs;
        q->range = p->nranges++;
    }
    p->ranges = zt_xcalloc((size_t)p->nranges * 2 + 1, sizeof(float));
    /* The program, in graph order. */
    if (p->t[g->input].u8) add_step(p, STEP_QUANT, g->input);
    int k = 0;
    for (int i = 0; i < g->nops; i++) {
        if (p->fused[i]) continue;
        const zt_nn_op *op = &g->ops[i];
        int out;
        if (op->kind == ZT_OP_CONV || op->kind == ZT_OP_DENSE) {
            add_step(p, STEP_QCONV, k);
            out = p->qc[k++].out;
            if (p->t[out].u8 && p->t[out].need_f) add_step(p, STEP_DEQUANT, out);
        } else {
            add_step(p, STEP_FLOAT, i);
            out = op->out;
            if (p->t[out].u8) add_step(p, STEP_QUANT, out);
        }
    }
    share_residuals(p);
    /* Kernel geometry and weight buffers. */
    for (k = 0; k < p->nqc; k++) {
        qconv *c = &p->qc[k];
        const zt_nn_op *op = &g->ops[c->op];
        const qtensor *in = &p->t[c->in];
        zt_nn_shape os = g->tensors[op->out];
        c->cout = os.c;
        c->nocb = (c->cout + CBLK - 1) / CBLK;
        if (op->kind == ZT_OP_CONV) {
            int kk = op->k, wp = in->s.w + 2 * in->pad;
            c->ho = os.h, c->wo = os.w;
            c->ntaps = kk * kk;
            c->k4 = in->cs / 4;
            c->tap_off = zt_xmalloc((size_t)c->ntaps * sizeof *c->tap_off);
            for (int ky = 0; ky < kk; ky++)
                for (int kx = 0; kx < kk; kx++) c->tap_off[ky * kk + kx] = (ky * wp + kx) * in->cs;
            c->xstep = in->cs;
            c->ystep = (long)wp * in->cs;
            c->base0 = ((long)(in->pad - kk / 2) * wp + (in->pad - kk / 2)) * in->cs;
        } else {
            c->ho = c->wo = 1;
            c->ntaps = 1;
            c->k4 = (int)(in->qstride / 4);
            c->tap_off = zt_xcalloc(1, sizeof *c->tap_off);
        }
        c->ocb_stride = (size_t)c->ntaps * (size_t)c->k4 * 64;
        size_t nw = (size_t)c->nocb * c->ocb_stride, no = (size_t)c->nocb * CBLK;
        c->w = zt_aligned_alloc(64, nw);
        c->wsum = zt_xcalloc(no, sizeof *c->wsum);
        c->wscale = zt_xcalloc(no, sizeof(float));
        c->bias = zt_xcalloc(no, sizeof(float));
        c->mul = zt_aligned_alloc(64, no * sizeof(float));
        c->add = zt_aligned_alloc(64, no * sizeof(float));
        ZT_ASSERT(c->w && c->mul && c->add);
        if (c->dnnl) {
            c->kin = op->kind == ZT_OP_CONV ? in->cs : (int)in->qstride;
            c->plain = zt_xcalloc(no * (size_t)c->kin * (size_t)c->ntaps, 1);
            c->oscale = zt_xcalloc(no, sizeof(float));
            c->dbias = zt_xcalloc(no, sizeof(float));
        }
    }
}

/* Quantises the folded weights of every qconv. */
static void quantise_weights(zt_int8_plan *p)
{
    const zt_nn_graph *g = &p->fg;
    for (int k = 0; k < p->nqc; k++) {
        qconv *c = &p->qc[k];
        const zt_nn_op *op = &g->ops[c->op];
        const qtensor *in = &p->t[c->in];
        const float *w = fparam(p, op->p[0]);
        const float *b = op->p[1] >= 0 ? fparam(p, op->p[1]) : NULL;
        size_t per = g->params[op->p[0]].count / (size_t)c->cout;
        memset(c->w, 0, (size_t)c->nocb * c->ocb_stride);
        for (int o = 0; o < c->nocb * CBLK; o++) {
            c->wsum[o] = 0;
            c->wscale[o] = 1.0f;
            c->bias[o] = 0.0f;
        }
        for (int o = 0; o < c->cout; o++) {
            const float *wo = w + (size_t)o * per;
            float amax = 0.0f;
            for (size_t e = 0; e < per; e++) amax = fmaxf(amax, fabsf(wo[e]));
            float s = amax > 0.0f ? amax / 127.0f : 1.0f;
            c->wscale[o] = s;
            c->bias[o] = b ? b[o] : 0.0f;
            int8_t *wb = c->w + (size_t)(o / CBLK) * c->ocb_stride + (o % CBLK) * 4;
            int32_t sum = 0;
            for (size_t e = 0; e < per; e++) {
                long v = lrintf(wo[e] / s);
                v = v > 127 ? 127 : v < -127 ? -127 : v;
                /* Where this weight's input byte sits in the stored sample. */
                size_t tap, ch;
                if (op->kind == ZT_OP_CONV) {
                    tap = e / (size_t)in->s.c;
                    ch = e % (size_t)in->s.c;
                } else {
                    size_t pix = e / (size_t)in->s.c, wp = (size_t)(in->s.w + 2 * in->pad);
                    size_t y = pix / (size_t)in->s.w + (size_t)in->pad;
                    size_t x = pix % (size_t)in->s.w + (size_t)in->pad;
                    tap = 0;
                    ch = (y * wp + x) * (size_t)in->cs + e % (size_t)in->s.c;
                }
                size_t grp = ch / 4, lane = ch % 4;
                wb[(tap * (size_t)c->k4 + grp) * 64 + lane] = (int8_t)v;
                if (c->plain) /* oihw: [o][ch][tap] */
                    c->plain[((size_t)o * (size_t)c->kin + ch) * (size_t)c->ntaps + tap] = (int8_t)v;
                sum += (int32_t)v;
            }
            c->wsum[o] = sum;
        }
    }
}

static void refold(zt_int8_plan *p)
{
    zt_nn_graph fresh;
    float *fp, *fs;
    zt_nn_graph_fold_bn(p->g, p->params, p->state, &fresh, &fp, &fs);
    ZT_ASSERT(fresh.nops == p->fg.nops && fresh.param_floats == p->fg.param_floats);
    zt_nn_graph_free(&fresh);
    free(p->fp);
    free(p->fs);
    p->fp = fp;
    p->fs = fs;
    quantise_weights(p);
    p->dirty = false;
}

zt_status zt_int8_plan_new(const zt_nn_graph *g, const float *params, const float *state,
                           int threads, zt_int8_plan **out)
{
    if (!zt_int8_supported())
        return zt_fail(ZT_ERR_UNSUPPORTED, "int8 inference needs AVX512_VNNI, which this CPU lacks");
    zt_int8_plan *p = zt_xcalloc(1, sizeof *p);
    p->g = g;
    p->params = params;
    p->state = state;
    p->threads = threads > 0 ? threads : 1;
    zt_nn_graph_fold_bn(g, params, state, &p->fg, &p->fp, &p->fs);
    build(p);
    p->dirty = true;
    bool any = false;
    for (int k = 0; k < p->nqc; k++) any = any || p->qc[k].dnnl;
    if (any && (dnnl_engine_create(&p->eng, dnnl_cpu, 0) != dnnl_success ||
                dnnl_stream_create(&p->stream, p->eng, dnnl_stream_default_flags) != dnnl_success)) {
        zt_int8_plan_free(p);
        return zt_fail(ZT_ERR_UNSUPPORTED, "oneDNN engine for int8 convs cannot be made");
    }
    *out = p;
    return ZT_OK;
}

static void free_buffers(zt_int8_plan *p)
{
    for (int t = 0; t < p->fg.ntensors; t++) {
        if (p->t[t].alias < 0) zt_aligned_free(p->t[t].q);
        if (!p->t[t].f_borrowed) zt_aligned_free(p->t[t].f);
        p->t[t].q = NULL;
        p->t[t].f = NULL;
        p->t[t].f_borrowed = false;
    }
    p->cap = 0;
}

void zt_int8_plan_free(zt_int8_plan *p)
{
    if (!p) return;
    free_buffers(p);
    for (int k = 0; k < p->nqc; k++) {
        qconv *c = &p->qc[k];
        free(c->tap_off);
        zt_aligned_free(c->w);
        free(c->wsum);
        free(c->wscale);
        free(c->bias);
        zt_aligned_free(c->mul);
        zt_aligned_free(c->add);
        dn_free(c);
        free(c->plain);
        free(c->oscale);
        free(c->dbias);
    }
    if (p->stream) dnnl_stream_destroy(p->stream);
    if (p->eng) dnnl_engine_destroy(p->eng);
    free(p->qc);
    free(p->t);
    free(p->steps);
    free(p->fused);
    free(p->ranges);
    free(p->fp);
    free(p->fs);
    zt_nn_graph_free(&p->fg);
    free(p);
}

void zt_int8_params_changed(zt_int8_plan *p)
{
    p->dirty = true;
    p->calibrated = false;
}

/* Fills every u8 buffer with its zero code (the padding keeps it). */
static void fill_zero_codes(zt_int8_plan *p)
{
    for (int t = 0; t < p->fg.ntensors; t++)
        if (p->t[t].q && p->t[t].alias < 0)
            memset(p->t[t].q, p->t[t].zp, (size_t)p->cap * p->t[t].qstride);
}

/* The batch sizes oneDNN primitives are built for: every size up to 8,
 * then steps about 1.5x apart. A batch runs in the smallest that holds it,
 * on buffers with that many rows; the rows past the batch are scratch (no
 * inference op mixes samples). One primitive per size met (self-play meets
 * hundreds) held a reordered copy of the weights each: 540 MB for the
 * backgammon MLP in one self-play bench. */
static int dn_bucket(int B)
{
    if (B <= 8) return B;
    int b = 8;
    while (b < B) b += b / 2;
    return b;
}

zt_status zt_int8_reserve(zt_int8_plan *p, int max_batch)
{
    ZT_ASSERT(max_batch > 0);
    if (max_batch <= p->cap) return ZT_OK;
    max_batch = dn_bucket(max_batch);
    free_buffers(p);
    for (int t = 0; t < p->fg.ntensors; t++) {
        qtensor *q = &p->t[t];
        bool ok = true;
        if (q->u8 && q->alias < 0)
            ok = (q->q = zt_aligned_alloc(64, (size_t)max_batch * q->qstride + 64)) != NULL;
        if (q->need_f && t != p->fg.input && ok)
            ok = (q->f = zt_aligned_alloc(64, (size_t)max_batch * zt_nn_shape_size(q->s) *
                                                  sizeof(float) + 64)) != NULL;
        if (!ok) {
            free_buffers(p);
            return zt_fail(ZT_ERR_NOMEM, "no memory for int8 activations of batch %d", max_batch);
        }
    }
    /* shared buffers: each tensor in the buffer of its chain's first */
    for (int t = 0; t < p->fg.ntensors; t++) {
        int root = t;
        while (p->t[root].alias >= 0) root = p->t[root].alias;
        if (root != t) p->t[t].q = p->t[root].q;
    }
    p->cap = max_batch;
    fill_zero_codes(p);
    return ZT_OK;
}

/* ---- scales ---- */

size_t zt_int8_ranges_size(const zt_int8_plan *p)
{
    return (size_t)p->nranges * 2;
}

/* Scales and zero points from the ranges, and each qconv's epilogue. */
static void apply_ranges(zt_int8_plan *p)
{
    for (int t = 0; t < p->fg.ntensors; t++) {
        qtensor *q = &p->t[t];
        if (!q->u8) continue;
        float lo = p->ranges[2 * q->range], hi = p->ranges[2 * q->range + 1];
        float s = hi > lo ? (hi - lo) / 255.0f : 1.0f;
        long zp = lrintf(-lo / s);
        q->zp = (int)(zp < 0 ? 0 : zp > 255 ? 255 : zp);
        q->scale = s;
        q->inv_scale = 1.0f / s;
    }
    for (int k = 0; k < p->nqc; k++) {
        qconv *c = &p->qc[k];
        const qtensor *in = &p->t[c->in];
        for (int o = 0; o < c->nocb * CBLK; o++) {
            float m = in->scale * c->wscale[o];
            c->mul[o] = m;
            c->add[o] = c->bias[o] - m * (float)in->zp * (float)c->wsum[o];
        }
        if (c->res >= 0 && p->t[c->res].u8) {
            c->res_scale = p->t[c->res].scale;
            c->res_shift = -p->t[c->res].scale * (float)p->t[c->res].zp;
        }
        if (c->dnnl) {
            /* ReLU'd tensors: every zero point is 0 (their ranges start at 0);
             * a dense layer's input may have another, folded into the bias
             * (oneDNN adds the bias to the sum before the output scale) */
            const qtensor *out = &p->t[c->out];
            bool conv = p->fg.ops[c->op].kind == ZT_OP_CONV;
            ZT_ASSERT((!conv || in->zp == 0) && (!out->u8 || out->zp == 0) &&
                      (c->res < 0 || p->t[c->res].zp == 0));
            float out_inv = out->u8 ? out->inv_scale : 1.0f;
            for (int o = 0; o < c->nocb * CBLK; o++) {
                bool real = o < c->cout;
                float m = in->scale * c->wscale[o];
                c->oscale[o] = real ? m * out_inv : 0.0f;
                c->dbias[o] = real ? c->bias[o] / m - (float)in->zp * (float)c->wsum[o] : 0.0f;
            }
            c->sum_scale = c->res >= 0 ? p->t[c->res].scale * out_inv : 0.0f;
            dn_free(c); /* built again with these scales at first use */
        }
    }
    fill_zero_codes(p);
    p->calibrated = true;
}

bool zt_int8_ranges_get(const zt_int8_plan *p, float *ranges)
{
    if (!p->calibrated) return false;
    memcpy(ranges, p->ranges, zt_int8_ranges_size(p) * sizeof(float));
    return true;
}

zt_status zt_int8_ranges_set(zt_int8_plan *p, const float *ranges)
{
    for (int r = 0; r < p->nranges; r++) {
        float lo = ranges[2 * r], hi = ranges[2 * r + 1];
        if (!isfinite(lo) || !isfinite(hi) || lo > 0.0f || hi < 0.0f)
            return zt_fail(ZT_ERR_INVALID, "int8 activation range %d is [%g, %g]; it must be finite "
                                           "and hold 0", r, (double)lo, (double)hi);
    }
    if (p->dirty) refold(p);
    memcpy(p->ranges, ranges, zt_int8_ranges_size(p) * sizeof(float));
    apply_ranges(p);
    return ZT_OK;
}

/* ---- fp32 ops (the calibration forward, and layer norm/tanh at use) ---- */

/* 64 output channels (masks m) of one output pixel from o0: sum over the
 * valid taps and input channels, weights wt[tap][ic][oc]; two input
 * channels at a time into separate sums, 8 independent FMA chains. */
TARGET static void f_conv_pixel(const float *x, const float *wt, float *out, const float *b,
                                zt_nn_shape s, int oc, int k, int n, int yy, int xx)
{
    int pad = k / 2;
    for (int o0 = 0; o0 < oc; o0 += 64) {
        __mmask16 m[4];
        __m512 acc[4], acc2[4];
        for (int j = 0; j < 4; j++) {
            int left = oc - o0 - 16 * j;
            m[j] = zt_lanes16(left);
            acc[j] = b ? _mm512_maskz_loadu_ps(m[j], b + o0 + 16 * j) : _mm512_setzero_ps();
            acc2[j] = _mm512_setzero_ps();
        }
        for (int ky = 0; ky < k; ky++) {
            int iy = yy + ky - pad;
            if (iy < 0 || iy >= s.h) continue;
            for (int kx = 0; kx < k; kx++) {
                int ix = xx + kx - pad;
                if (ix < 0 || ix >= s.w) continue;
                const float *in = x + (((size_t)n * s.h + iy) * s.w + ix) * s.c;
                const float *wk = wt + (size_t)(ky * k + kx) * s.c * oc + o0;
                int ic = 0;
                for (; ic + 1 < s.c; ic += 2) {
                    __m512 v0 = _mm512_set1_ps(in[ic]), v1 = _mm512_set1_ps(in[ic + 1]);
                    const float *w0 = wk + (size_t)ic * oc, *w1 = w0 + oc;
#pragma GCC unroll 4
                    for (int j = 0; j < 4; j++) {
                        acc[j] = _mm512_fmadd_ps(v0, _mm512_maskz_loadu_ps(m[j], w0 + 16 * j), acc[j]);
                        acc2[j] = _mm512_fmadd_ps(v1, _mm512_maskz_loadu_ps(m[j], w1 + 16 * j), acc2[j]);
                    }
                }
                if (ic < s.c) {
                    __m512 v0 = _mm512_set1_ps(in[ic]);
                    const float *w0 = wk + (size_t)ic * oc;
#pragma GCC unroll 4
                    for (int j = 0; j < 4; j++)
                        acc[j] = _mm512_fmadd_ps(v0, _mm512_maskz_loadu_ps(m[j], w0 + 16 * j), acc[j]);
                }
            }
        }
        for (int j = 0; j < 4; j++)
            _mm512_mask_storeu_ps(out + o0 + 16 * j, m[j], _mm512_add_ps(acc[j], acc2[j]));
    }
}

static void f_conv(const zt_int8_plan *p, const zt_nn_op *op, int B, const float *x, float *y,
                   float *wt)
{
    zt_nn_shape s = p->fg.tensors[op->in[0]];
    int oc = p->fg.tensors[op->out].c, k = op->k;
    const float *w = fparam(p, op->p[0]);
    const float *b = op->p[1] >= 0 ? fparam(p, op->p[1]) : NULL;
    /* wt: [ky][kx][ic][oc], so that 16 output channels are one load. */
    for (int o = 0; o < oc; o++)
        for (int e = 0; e < k * k * s.c; e++) wt[(size_t)e * oc + o] = w[(size_t)o * k * k * s.c + e];
    for (int n = 0; n < B; n++)
        for (int yy = 0; yy < s.h; yy++)
            for (int xx = 0; xx < s.w; xx++)
                f_conv_pixel(x, wt, y + (((size_t)n * s.h + yy) * s.w + xx) * oc, b, s, oc, k, n, yy,
                             xx);
}

static void f_dense(const zt_int8_plan *p, const zt_nn_op *op, int B, const float *x, float *y)
{
    size_t in = zt_nn_shape_size(p->fg.tensors[op->in[0]]);
    int units = p->fg.tensors[op->out].c;
    const float *w = fparam(p, op->p[0]);
    const float *b = op->p[1] >= 0 ? fparam(p, op->p[1]) : NULL;
    for (int n = 0; n < B; n++)
        for (int u = 0; u < units; u++) {
            const float *xr = x + (size_t)n * in, *wr = w + (size_t)u * in;
            float acc = 0.0f;
            for (size_t e = 0; e < in; e++) acc += xr[e] * wr[e];
            y[(size_t)n * units + u] = acc + (b ? b[u] : 0.0f);
        }
}

/* Layer norm of one sample's n values, in fp32 (two passes: the mean, then
 * the variance about it). */
TARGET static void ln_row(const float *x, float *y, const float *gm, const float *bt, size_t n)
{
    __m512 acc = _mm512_setzero_ps();
    for (size_t j = 0; j < n; j += 16)
        acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(zt_lanes16((ptrdiff_t)(n - j)), x + j));
    __m512 mean = _mm512_set1_ps(_mm512_reduce_add_ps(acc) / (float)n);
    acc = _mm512_setzero_ps();
    for (size_t j = 0; j < n; j += 16) {
        __mmask16 m = zt_lanes16((ptrdiff_t)(n - j));
        __m512 d = _mm512_maskz_sub_ps(m, _mm512_maskz_loadu_ps(m, x + j), mean);
        acc = _mm512_fmadd_ps(d, d, acc);
    }
    float var = _mm512_reduce_add_ps(acc) / (float)n;
    __m512 inv = _mm512_set1_ps(1.0f / sqrtf(var + (float)ZT_NN_LN_EPS));
    for (size_t j = 0; j < n; j += 16) {
        __mmask16 m = zt_lanes16((ptrdiff_t)(n - j));
        __m512 d = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + j), mean), inv);
        _mm512_mask_storeu_ps(y + j, m,
                              _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, gm + j), d,
                                              _mm512_maskz_loadu_ps(m, bt + j)));
    }
}

/* Ops other than conv and dense, on fp32 arrays. */
TARGET static void f_other(const zt_int8_plan *p, const zt_nn_op *op, int B, const float *x,
                           const float *x1, float *y)
{
    zt_nn_shape s = p->fg.tensors[op->out];
    size_t per = zt_nn_shape_size(s), n = (size_t)B * per;
    switch (op->kind) {
    case ZT_OP_RELU:
        for (size_t e = 0; e < n; e += 16) {
            __mmask16 m = zt_lanes16((ptrdiff_t)(n - e));
            _mm512_mask_storeu_ps(y + e, m, _mm512_max_ps(_mm512_maskz_loadu_ps(m, x + e),
                                                          _mm512_setzero_ps()));
        }
        break;
    case ZT_OP_TANH:
        for (size_t e = 0; e < n; e++) y[e] = tanhf(x[e]);
        break;
    case ZT_OP_ADD:
        for (size_t e = 0; e < n; e += 16) {
            __mmask16 m = zt_lanes16((ptrdiff_t)(n - e));
            _mm512_mask_storeu_ps(y + e, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, x + e),
                                                          _mm512_maskz_loadu_ps(m, x1 + e)));
        }
        break;
    case ZT_OP_BN: {
        const float *gm = fparam(p, op->p[0]), *bt = fparam(p, op->p[1]);
        const float *mean = fparam(p, op->p[2]), *var = fparam(p, op->p[3]);
        for (size_t e = 0; e < n; e++) {
            int ch = (int)(e % (size_t)s.c);
            y[e] = (float)((x[e] - mean[ch]) / sqrt((double)var[ch] + ZT_NN_BN_EPS)) * gm[ch] + bt[ch];
        }
        break;
    }
    case ZT_OP_LN: {
        const float *gm = fparam(p, op->p[0]), *bt = fparam(p, op->p[1]);
        for (int b = 0; b < B; b++) ln_row(x + (size_t)b * per, y + (size_t)b * per, gm, bt, per);
        break;
    }
    case ZT_OP_CONV:
    case ZT_OP_DENSE: ZT_ASSERT(!"products run as qconv"); break;
    }
}

enum { CAL_CHUNK = 64 };

zt_status zt_int8_calibrate(zt_int8_plan *p, int B, const float *obs)
{
    if (B < 1) return zt_fail(ZT_ERR_INVALID, "int8 calibration needs at least 1 observation");
    if (p->dirty) refold(p);
    const zt_nn_graph *g = &p->fg;
    float **act = zt_xcalloc((size_t)g->ntensors, sizeof *act);
    size_t maxw = 1;
    for (int i = 0; i < g->nops; i++)
        if (g->ops[i].kind == ZT_OP_CONV && g->params[g->ops[i].p[0]].count > maxw)
            maxw = g->params[g->ops[i].p[0]].count;
    float *wt = malloc(maxw * sizeof(float));
    bool ok = wt != NULL;
    for (int t = 0; t < g->ntensors && ok; t++)
        if (t != g->input)
            ok = (act[t] = malloc(CAL_CHUNK * zt_nn_shape_size(g->tensors[t]) * sizeof(float)));
    if (!ok) {
        for (int t = 0; t < g->ntensors; t++) free(act[t]);
        free(act);
        free(wt);
        return zt_fail(ZT_ERR_NOMEM, "no memory for int8 calibration");
    }
    for (int r = 0; r < p->nranges; r++) p->ranges[2 * r] = p->ranges[2 * r + 1] = 0.0f;
    size_t in_size = zt_nn_shape_size(g->tensors[g->input]);
    for (int b0 = 0; b0 < B; b0 += CAL_CHUNK) {
        int n = B - b0 < CAL_CHUNK ? B - b0 : CAL_CHUNK;
        act[g->input] = (float *)(obs + (size_t)b0 * in_size);
        for (int i = 0; i < g->nops; i++) {
            const zt_nn_op *op = &g->ops[i];
            const float *x = act[op->in[0]], *x1 = op->in[1] >= 0 ? act[op->in[1]] : NULL;
            if (op->kind == ZT_OP_CONV) f_conv(p, op, n, x, act[op->out], wt);
            else if (op->kind == ZT_OP_DENSE) f_dense(p, op, n, x, act[op->out]);
            else f_other(p, op, n, x, x1, act[op->out]);
        }
        for (int t = 0; t < g->ntensors; t++) {
            const qtensor *q = &p->t[t];
            if (!q->u8) continue;
            float *lo = &p->ranges[2 * q->range], *hi = lo + 1;
            size_t cnt = (size_t)n * zt_nn_shape_size(q->s);
            float mn = *lo, mx = *hi, bad = 0.0f;
            for (size_t e = 0; e < cnt; e++) {
                float v = act[t][e];
                mn = v < mn ? v : mn;
                mx = v > mx ? v : mx;
                bad += v * 0.0f; /* NaN once any value is NaN or infinite */
            }
            {
                if (!(bad == 0.0f)) {
                    act[g->input] = NULL;
                    for (int u = 0; u < g->ntensors; u++) free(act[u]);
                    free(act);
                    free(wt);
                    p->calibrated = false;
                    return zt_fail(ZT_ERR_INVALID, "int8 calibration met a non-finite activation");
                }
                *lo = mn;
                *hi = mx;
            }
        }
    }
    act[g->input] = NULL;
    for (int t = 0; t < g->ntensors; t++) free(act[t]);
    free(act);
    free(wt);
    apply_ranges(p);
    return ZT_OK;
}

/* ---- the int8 kernel ---- */

typedef struct tile_args {
    const uint8_t *src[NP];
    void *dst[NP];          /* u8 or fp32 output of each position */
    const void *res[NP];    /* its residual, or NULL */
} tile_args;

INLINE void epilogue(const qconv *c, const qtensor *out, const qtensor *res, __m512i acc,
                     int o0, void *dst, const void *rsrc)
{
    __m512 v = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc), _mm512_load_ps(c->mul + o0),
                               _mm512_load_ps(c->add + o0));
    int left = c->cout - o0;
    __mmask16 m = zt_lanes16(left);
    if (rsrc) {
        if (res->u8) {
            __m512 r = _mm512_cvtepi32_ps(
                _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)((const uint8_t *)rsrc + o0))));
            v = _mm512_add_ps(v, _mm512_fmadd_ps(r, _mm512_set1_ps(c->res_scale),
                                                 _mm512_set1_ps(c->res_shift)));
        } else {
            v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, (const float *)rsrc + o0));
        }
    }
    if (c->relu) v = _mm512_max_ps(v, _mm512_setzero_ps());
    if (out->u8) {
        __m512 z = _mm512_fmadd_ps(v, _mm512_set1_ps(out->inv_scale), _mm512_set1_ps((float)out->zp));
        __m512i qi = _mm512_max_epi32(_mm512_cvtps_epi32(z), _mm512_setzero_si512());
        _mm_storeu_si128((__m128i *)((uint8_t *)dst + o0), _mm512_cvtusepi32_epi8(qi));
    } else {
        _mm512_mask_storeu_ps((float *)dst + o0, m, v);
    }
}

/* The sums live in named variables, not an array, and each product is an
 * asm statement that adds into its sum in place: from the intrinsic, GCC 12
 * copied every sum to a second register and, short of registers with 24
 * sums, stored them on the stack after each product. np and noc are
 * constants where this is inlined, so the unused sums and products vanish.
 * AT&T order: vpdpbusd w (s8), x (u8), sum. */
#define DPBUSD(sum, x, w) __asm__("vpdpbusd %2, %1, %0" : "+v"(sum) : "v"(x), "v"(w))
#define ACC_ROW(i)                                                                                 \
    __m512i a##i##0 = _mm512_setzero_si512(), a##i##1 = a##i##0, a##i##2 = a##i##0,               \
            a##i##3 = a##i##0
#define DOT_ROW(i)                                                                                 \
    if (np > i) {                                                                                  \
        int32_t four;                                                                              \
        memcpy(&four, s##i + 4 * gq, 4);                                                           \
        __m512i x = _mm512_set1_epi32(four);                                                       \
        DPBUSD(a##i##0, x, w0);                                             \
        if (noc > 1) DPBUSD(a##i##1, x, w1);                                \
        if (noc > 2) DPBUSD(a##i##2, x, w2);                                \
        if (noc > 3) DPBUSD(a##i##3, x, w3);                                \
    }
#define EPI_ROW(i)                                                                                 \
    if (np > i) {                                                                                  \
        epilogue(c, out, res, a##i##0, ocb0 * CBLK, a->dst[i], a->res[i]);                        \
        if (noc > 1) epilogue(c, out, res, a##i##1, (ocb0 + 1) * CBLK, a->dst[i], a->res[i]);     \
        if (noc > 2) epilogue(c, out, res, a##i##2, (ocb0 + 2) * CBLK, a->dst[i], a->res[i]);     \
        if (noc > 3) epilogue(c, out, res, a##i##3, (ocb0 + 3) * CBLK, a->dst[i], a->res[i]);     \
    }

INLINE void tile(const qconv *c, const qtensor *out, const qtensor *res, const tile_args *a,
                 int np, int ocb0, int noc)
{
    ACC_ROW(0);
    ACC_ROW(1);
    ACC_ROW(2);
    ACC_ROW(3);
    ACC_ROW(4);
    ACC_ROW(5);
    const int8_t *w = c->w + (size_t)ocb0 * c->ocb_stride;
    size_t ocs = c->ocb_stride;
    for (int t = 0; t < c->ntaps; t++) {
        int off = c->tap_off[t];
        const uint8_t *s0 = a->src[0] + off, *s1 = np > 1 ? a->src[1] + off : s0;
        const uint8_t *s2 = np > 2 ? a->src[2] + off : s0, *s3 = np > 3 ? a->src[3] + off : s0;
        const uint8_t *s4 = np > 4 ? a->src[4] + off : s0, *s5 = np > 5 ? a->src[5] + off : s0;
        const int8_t *wt = w + (size_t)t * c->k4 * 64;
        for (int gq = 0; gq < c->k4; gq++) {
            const int8_t *wg = wt + (size_t)gq * 64;
            __m512i w0 = _mm512_load_si512((const void *)wg);
            __m512i w1 = noc > 1 ? _mm512_load_si512((const void *)(wg + ocs)) : w0;
            __m512i w2 = noc > 2 ? _mm512_load_si512((const void *)(wg + 2 * ocs)) : w0;
            __m512i w3 = noc > 3 ? _mm512_load_si512((const void *)(wg + 3 * ocs)) : w0;
            DOT_ROW(0)
            DOT_ROW(1)
            DOT_ROW(2)
            DOT_ROW(3)
            DOT_ROW(4)
            DOT_ROW(5)
        }
    }
    EPI_ROW(0)
    EPI_ROW(1)
    EPI_ROW(2)
    EPI_ROW(3)
    EPI_ROW(4)
    EPI_ROW(5)
}

#define TILE_FN(NPV, NOCV)                                                                       \
    TARGET static void tile_##NPV##_##NOCV(const qconv *c, const qtensor *out, const qtensor *res, \
                                           const tile_args *a, int ocb0)                          \
    {                                                                                            \
        tile(c, out, res, a, NPV, ocb0, NOCV);                                                   \
    }
#define TILE_ROW(NPV) TILE_FN(NPV, 1) TILE_FN(NPV, 2) TILE_FN(NPV, 3) TILE_FN(NPV, 4)
TILE_ROW(1)
TILE_ROW(2)
TILE_ROW(3)
TILE_ROW(4)
TILE_ROW(5)
TILE_ROW(6)

typedef void (*tile_fn)(const qconv *, const qtensor *, const qtensor *, const tile_args *, int);
#define TILE_PTRS(NPV) {tile_##NPV##_1, tile_##NPV##_2, tile_##NPV##_3, tile_##NPV##_4}
static const tile_fn tiles[NP][NOC] = {TILE_PTRS(1), TILE_PTRS(2), TILE_PTRS(3),
                                       TILE_PTRS(4), TILE_PTRS(5), TILE_PTRS(6)};

static void *pixel(const qtensor *q, int b, int y, int x)
{
    if (q->u8) {
        int wp = q->s.w + 2 * q->pad;
        return q->q + (size_t)b * q->qstride +
               ((size_t)(y + q->pad) * (size_t)wp + (size_t)(x + q->pad)) * (size_t)q->cs;
    }
    return q->f + (((size_t)b * q->s.h + y) * q->s.w + x) * (size_t)q->s.c;
}

static void run_blocks(const zt_int8_plan *p, const qconv *c, long first, long last, long npos)
{
    const qtensor *in = &p->t[c->in], *out = &p->t[c->out];
    const qtensor *res = c->res >= 0 ? &p->t[c->res] : NULL;
    int hw = c->ho * c->wo;
    for (long blk = first; blk < last; blk++) {
        tile_args a;
        long p0 = blk * NP;
        int np = npos - p0 < NP ? (int)(npos - p0) : NP;
        for (int i = 0; i < np; i++) {
            long pos = p0 + i;
            int b = (int)(pos / hw), r = (int)(pos % hw), y = r / c->wo, x = r % c->wo;
            a.src[i] = in->q + (size_t)b * in->qstride + c->base0 + y * c->ystep + x * c->xstep;
            a.dst[i] = pixel(out, b, y, x);
            a.res[i] = res ? pixel(res, b, y, x) : NULL;
        }
        for (int ocb = 0; ocb < c->nocb; ocb += NOC) {
            int noc = c->nocb - ocb < NOC ? c->nocb - ocb : NOC;
            tiles[np - 1][noc - 1](c, out, res, &a, ocb);
        }
    }
}

static void dn_free(qconv *c)
{
    for (int b = 0; b < c->ndp; b++) {
        dn_prim *d = &c->dp[b];
        if (d->prim) dnnl_primitive_destroy(d->prim);
        if (d->src) dnnl_memory_destroy(d->src);
        if (d->wei) dnnl_memory_destroy(d->wei);
        if (d->bias) dnnl_memory_destroy(d->bias);
        if (d->dst) dnnl_memory_destroy(d->dst);
    }
    free(c->dp);
    c->dp = NULL;
    c->ndp = 0;
}

#define DN_TRY(what, call)                                                                         \
    do {                                                                                           \
        dnnl_status_t r_ = (call);                                                                 \
        if (r_ != dnnl_success) {                                                                  \
            st = zt_fail(ZT_ERR_UNSUPPORTED, "oneDNN int8 %s: %s failed (%d)",                    \
                         p->fg.ops[c->op].kind == ZT_OP_CONV ? "conv" : "dense", what, (int)r_);    \
            goto done;                                                                             \
        }                                                                                          \
    } while (0)

/* The primitive of qconv c at batch B with the current scales, s8 weights
 * reordered from c->plain and an f32 bias in the sum's units (oneDNN adds
 * it before the output scales), then the residual (sum) and the ReLU as
 * post-ops. A conv: u8 NHWC in and out. A dense layer (inner product): the
 * stored u8 sample in, u8 codes (every stored channel) or fp32 (the real
 * outputs) out. */
static zt_status dn_build(zt_int8_plan *p, qconv *c, int B, dn_prim *d)
{
    zt_status st = ZT_OK;
    const zt_nn_op *op = &p->fg.ops[c->op];
    const qtensor *in = &p->t[c->in], *out = &p->t[c->out];
    bool conv = op->kind == ZT_OP_CONV;
    int k = op->k, oc = out->u8 ? out->cs : c->cout;
    dnnl_memory_desc_t src, wei, wplain, bia, dst;
    dnnl_dims_t bd = {oc};
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t pd = NULL, rpd = NULL;
    dnnl_primitive_t reorder = NULL;
    dnnl_memory_t mplain = NULL;
    DN_TRY("attr", dnnl_primitive_attr_create(&attr));
    DN_TRY("post ops", dnnl_post_ops_create(&po));
    if (c->res >= 0) DN_TRY("sum", dnnl_post_ops_append_sum(po, c->sum_scale));
    if (c->relu) DN_TRY("relu", dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f));
    DN_TRY("set post ops", dnnl_primitive_attr_set_post_ops(attr, po));
    DN_TRY("output scales", dnnl_primitive_attr_set_output_scales(attr, oc, 1 << 1, c->oscale));
    DN_TRY("bias desc", dnnl_memory_desc_init_by_tag(&bia, 1, bd, dnnl_f32, dnnl_x));
    if (conv) {
        dnnl_dims_t sd = {B, in->cs, in->s.h, in->s.w}, dd = {B, oc, out->s.h, out->s.w};
        dnnl_dims_t wd = {oc, in->cs, k, k};
        dnnl_dims_t strides = {1, 1}, pad = {k / 2, k / 2};
        DN_TRY("src desc", dnnl_memory_desc_init_by_tag(&src, 4, sd, dnnl_u8, dnnl_nhwc));
        DN_TRY("dst desc", dnnl_memory_desc_init_by_tag(&dst, 4, dd, dnnl_u8, dnnl_nhwc));
        DN_TRY("weights desc", dnnl_memory_desc_init_by_tag(&wei, 4, wd, dnnl_s8, dnnl_format_tag_any));
        DN_TRY("weights desc", dnnl_memory_desc_init_by_tag(&wplain, 4, wd, dnnl_s8, dnnl_oihw));
        dnnl_convolution_desc_t cd;
        DN_TRY("conv desc", dnnl_convolution_forward_desc_init(&cd, dnnl_forward_inference,
                                                                dnnl_convolution_direct, &src, &wei,
                                                                &bia, &dst, strides, pad, pad));
        DN_TRY("primitive desc", dnnl_primitive_desc_create(&pd, &cd, attr, p->eng, NULL));
    } else {
        dnnl_dims_t sd = {B, c->kin}, dd = {B, oc}, wd = {oc, c->kin};
        DN_TRY("src desc", dnnl_memory_desc_init_by_tag(&src, 2, sd, dnnl_u8, dnnl_nc));
        DN_TRY("dst desc", dnnl_memory_desc_init_by_tag(&dst, 2, dd, out->u8 ? dnnl_u8 : dnnl_f32,
                                                        dnnl_nc));
        DN_TRY("weights desc", dnnl_memory_desc_init_by_tag(&wei, 2, wd, dnnl_s8, dnnl_format_tag_any));
        DN_TRY("weights desc", dnnl_memory_desc_init_by_tag(&wplain, 2, wd, dnnl_s8, dnnl_oi));
        dnnl_inner_product_desc_t id;
        DN_TRY("inner product desc", dnnl_inner_product_forward_desc_init(
                                         &id, dnnl_forward_inference, &src, &wei, &bia, &dst));
        DN_TRY("primitive desc", dnnl_primitive_desc_create(&pd, &id, attr, p->eng, NULL));
    }
    DN_TRY("primitive", dnnl_primitive_create(&d->prim, pd));
    const dnnl_memory_desc_t *wq = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    DN_TRY("weights", dnnl_memory_create(&d->wei, wq, p->eng, DNNL_MEMORY_ALLOCATE));
    DN_TRY("plain weights", dnnl_memory_create(&mplain, &wplain, p->eng, c->plain));
    DN_TRY("reorder desc", dnnl_reorder_primitive_desc_create(&rpd, &wplain, p->eng, wq, p->eng, NULL));
    DN_TRY("reorder", dnnl_primitive_create(&reorder, rpd));
    dnnl_exec_arg_t rargs[2] = {{DNNL_ARG_FROM, mplain}, {DNNL_ARG_TO, d->wei}};
    DN_TRY("reorder run", dnnl_primitive_execute(reorder, p->stream, 2, rargs));
    DN_TRY("reorder wait", dnnl_stream_wait(p->stream));
    DN_TRY("bias", dnnl_memory_create(&d->bias, &bia, p->eng, c->dbias));
    DN_TRY("src", dnnl_memory_create(&d->src, &src, p->eng, DNNL_MEMORY_NONE));
    DN_TRY("dst", dnnl_memory_create(&d->dst, &dst, p->eng, DNNL_MEMORY_NONE));
done:
    if (reorder) dnnl_primitive_destroy(reorder);
    if (rpd) dnnl_primitive_desc_destroy(rpd);
    if (mplain) dnnl_memory_destroy(mplain);
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (po) dnnl_post_ops_destroy(po);
    if (attr) dnnl_primitive_attr_destroy(attr);
    return st;
}

static zt_status run_dnnl(zt_int8_plan *p, qconv *c, int B)
{
    int rows = dn_bucket(B); /* within p->cap, itself a bucket (zt_int8_reserve) */
    if (rows > c->ndp) {
        c->dp = zt_xrealloc(c->dp, (size_t)rows * sizeof *c->dp);
        memset(c->dp + c->ndp, 0, (size_t)(rows - c->ndp) * sizeof *c->dp);
        c->ndp = rows;
    }
    dn_prim *d = &c->dp[rows - 1];
    /* before the build too: oneDNN sizes a primitive's work split by the
     * threads OpenMP would give it then (2 threads' barriers on a 1-thread
     * net made every call 15-25 ms on the loaded machine) */
    omp_set_num_threads(p->threads);
    if (!d->prim) {
        zt_status st = dn_build(p, c, rows, d);
        if (st != ZT_OK) {
            if (d->prim) dnnl_primitive_destroy(d->prim);
            memset(d, 0, sizeof *d);
            return st;
        }
    }
    const qtensor *in = &p->t[c->in], *out = &p->t[c->out];
    if (c->res >= 0 && !c->in_place) memcpy(out->q, p->t[c->res].q, (size_t)B * out->qstride);
    zt_status st = ZT_OK;
    DN_TRY("src handle", dnnl_memory_set_data_handle(d->src, in->q));
    DN_TRY("dst handle", dnnl_memory_set_data_handle(d->dst, out->u8 ? (void *)out->q : out->f));
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, d->src},
                               {DNNL_ARG_WEIGHTS, d->wei},
                               {DNNL_ARG_BIAS, d->bias},
                               {DNNL_ARG_DST, d->dst}};
    DN_TRY("execute", dnnl_primitive_execute(d->prim, p->stream, 4, args));
    DN_TRY("wait", dnnl_stream_wait(p->stream));
done:
    return st;
}

static void run_qconv(const zt_int8_plan *p, const qconv *c, int B)
{
    long npos = (long)B * c->ho * c->wo, nblk = (npos + NP - 1) / NP;
    int nth = p->threads < nblk ? p->threads : (int)nblk;
    if (nth <= 1) {
        run_blocks(p, c, 0, nblk, npos);
        return;
    }
#pragma omp parallel num_threads(nth)
    {
        int ith = omp_get_thread_num(), team = omp_get_num_threads();
        long lo = nblk * ith / team, hi = nblk * (ith + 1) / team;
        run_blocks(p, c, lo, hi, npos);
    }
}

/* fp32 -> u8 codes of tensor t (its padding keeps the zero code): q =
 * clamp(round(x / scale) + zp), rounding to nearest even as lrintf does. */
TARGET static void quantise(const zt_int8_plan *p, int t, int B, const float *src)
{
    const qtensor *q = &p->t[t];
    __m512 inv = _mm512_set1_ps(q->inv_scale);
    __m512i zp = _mm512_set1_epi32(q->zp), top = _mm512_set1_epi32(255);
    for (int b = 0; b < B; b++)
        for (int y = 0; y < q->s.h; y++)
            for (int x = 0; x < q->s.w; x++) {
                const float *f = src + (((size_t)b * q->s.h + y) * q->s.w + x) * (size_t)q->s.c;
                uint8_t *d = pixel(q, b, y, x);
                for (int ch = 0; ch < q->s.c; ch += 16) {
                    __mmask16 m = zt_lanes16(q->s.c - ch);
                    __m512i v = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, f + ch), inv));
                    v = _mm512_min_epi32(_mm512_max_epi32(_mm512_add_epi32(v, zp), _mm512_setzero_si512()),
                                         top);
                    _mm_mask_storeu_epi8(d + ch, m, _mm512_cvtepi32_epi8(v));
                }
            }
}

TARGET static void dequantise(const zt_int8_plan *p, int t, int B)
{
    const qtensor *q = &p->t[t];
    __m512 scale = _mm512_set1_ps(q->scale);
    __m512i zp = _mm512_set1_epi32(q->zp);
    for (int b = 0; b < B; b++)
        for (int y = 0; y < q->s.h; y++)
            for (int x = 0; x < q->s.w; x++) {
                float *f = q->f + (((size_t)b * q->s.h + y) * q->s.w + x) * (size_t)q->s.c;
                const uint8_t *s = pixel(q, b, y, x);
                for (int ch = 0; ch < q->s.c; ch += 16) {
                    __mmask16 m = zt_lanes16(q->s.c - ch);
                    __m512i v = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, s + ch));
                    _mm512_mask_storeu_ps(f + ch, m,
                                          _mm512_mul_ps(scale, _mm512_cvtepi32_ps(_mm512_sub_epi32(v, zp))));
                }
            }
}

zt_status zt_int8_forward(zt_int8_plan *p, int B, const float *in, float *const *outs)
{
    if (!p->calibrated)
        return zt_fail(ZT_ERR_INVALID, "int8 net is not calibrated for its current weights "
                                       "(zt_net_calibrate on sample observations first)");
    if (p->dirty) {
        refold(p);
        apply_ranges(p);
    }
    ZT_TRY(zt_int8_reserve(p, B));
    const zt_nn_graph *g = &p->fg;
    qtensor *ti = &p->t[g->input];
    ti->f = (float *)in; /* read only: no step writes the input's fp32 form */
    ti->f_borrowed = true;
    for (int s = 0; s < p->nsteps; s++) {
        const qstep *st = &p->steps[s];
        switch (st->kind) {
        case STEP_QCONV:
            if (p->qc[st->idx].dnnl) ZT_TRY(run_dnnl(p, &p->qc[st->idx], B));
            else run_qconv(p, &p->qc[st->idx], B);
            break;
        case STEP_QUANT: quantise(p, st->idx, B, p->t[st->idx].f); break;
        case STEP_DEQUANT: dequantise(p, st->idx, B); break;
        case STEP_FLOAT: {
            const zt_nn_op *op = &g->ops[st->idx];
            f_other(p, op, B, p->t[op->in[0]].f, op->in[1] >= 0 ? p->t[op->in[1]].f : NULL,
                    p->t[op->out].f);
            break;
        }
        }
    }
    for (int o = 0; o < g->noutputs; o++) {
        const qtensor *q = &p->t[g->outputs[o]];
        memcpy(outs[o], q->f, (size_t)B * zt_nn_shape_size(q->s) * sizeof(float));
    }
    ti->f = NULL;
    ti->f_borrowed = false;
    return ZT_OK;
}
