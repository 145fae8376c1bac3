/* The reference backend: every op as plain loops over NHWC arrays, sums in
 * double. It is the ground truth the fast backends are tested against, so it
 * is written to be obviously right, not fast; it runs on the calling thread.
 * bf16 is emulated: conv and dense weights, the input and every op's output
 * are rounded to bf16, and so is the gradient coming into a conv or dense
 * layer in backward (the fast backends' GEMM operand); products and sums
 * stay in double. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "nn/backend.h"

struct zt_nn_plan {
    const zt_nn_graph *g;
    float *params;
    float *state;
    float *weights; /* what conv/dense read: params, or their bf16 rounding */
    zt_precision prec;
    int cap;        /* batch capacity of the buffers below */
    bool cap_training;
    float **act;    /* per tensor: cap x size */
    float **grad;   /* per tensor, training only */
    double **mean;  /* per op: per channel (bn) or per sample (ln) */
    double **invstd;
    double *acc;    /* scratch for weight gradients and row sums */
    size_t acc_len;
};

static bool ref_supports(zt_precision p)
{
    return p == ZT_PRECISION_FP32 || p == ZT_PRECISION_BF16;
}

static zt_precision ref_auto_precision(void)
{
    return ZT_PRECISION_FP32;
}

static void ref_params_changed(zt_nn_plan *p)
{
    if (p->weights == p->params) return;
    const zt_nn_graph *g = p->g;
    memcpy(p->weights, p->params, g->param_floats * sizeof(float));
    for (int i = 0; i < g->nops; i++) {
        const zt_nn_op *op = &g->ops[i];
        if (op->kind != ZT_OP_CONV && op->kind != ZT_OP_DENSE) continue;
        const zt_nn_param *w = &g->params[op->p[0]];
        for (size_t e = 0; e < w->count; e++)
            p->weights[w->offset + e] = zt_bf16_round(p->params[w->offset + e]);
    }
}

static void free_buffers(zt_nn_plan *p)
{
    for (int t = 0; t < p->g->ntensors; t++) {
        zt_aligned_free(p->act[t]);
        zt_aligned_free(p->grad[t]);
        p->act[t] = p->grad[t] = NULL;
    }
    for (int i = 0; i < p->g->nops; i++) {
        free(p->mean[i]);
        free(p->invstd[i]);
        p->mean[i] = p->invstd[i] = NULL;
    }
    p->cap = 0;
}

static void ref_plan_free(zt_nn_plan *p)
{
    if (!p) return;
    free_buffers(p);
    free(p->act);
    free(p->grad);
    free(p->mean);
    free(p->invstd);
    free(p->acc);
    if (p->weights != p->params) zt_aligned_free(p->weights);
    free(p);
}

static zt_status ref_plan_new(const zt_nn_graph *g, float *params, float *state, zt_precision prec,
                              int threads, zt_nn_plan **out)
{
    zt_nn_plan *p = zt_xcalloc(1, sizeof *p);
    p->g = g;
    p->params = params;
    p->state = state;
    p->prec = prec;
    p->act = zt_xcalloc((size_t)g->ntensors, sizeof *p->act);
    p->grad = zt_xcalloc((size_t)g->ntensors, sizeof *p->grad);
    p->mean = zt_xcalloc((size_t)g->nops + 1, sizeof *p->mean);
    p->invstd = zt_xcalloc((size_t)g->nops + 1, sizeof *p->invstd);
    p->weights = params;
    if (prec == ZT_PRECISION_BF16) {
        p->weights = zt_aligned_alloc(ZT_CACHE_LINE, (g->param_floats + 1) * sizeof(float));
        if (!p->weights) {
            p->weights = params;
            ref_plan_free(p);
            return zt_fail(ZT_ERR_NOMEM, "no memory for bf16 weights");
        }
    }
    /* Weight gradients of the largest op, or one row of the widest tensor. */
    size_t len = 1;
    for (int i = 0; i < g->nparams; i++)
        if (g->params[i].count > len) len = g->params[i].count;
    for (int t = 0; t < g->ntensors; t++)
        if (zt_nn_shape_size(g->tensors[t]) > len) len = zt_nn_shape_size(g->tensors[t]);
    p->acc = zt_xmalloc(len * sizeof *p->acc);
    p->acc_len = len;
    ref_params_changed(p);
    *out = p;
    return ZT_OK;
}

static zt_status ref_reserve(zt_nn_plan *p, int max_batch, bool training)
{
    if (max_batch <= p->cap && (!training || p->cap_training)) return ZT_OK;
    if (max_batch < p->cap) max_batch = p->cap;
    training = training || p->cap_training;
    free_buffers(p);
    const zt_nn_graph *g = p->g;
    bool ok = true;
    for (int t = 0; t < g->ntensors && ok; t++) {
        size_t bytes = (size_t)max_batch * zt_nn_shape_size(g->tensors[t]) * sizeof(float);
        p->act[t] = zt_aligned_alloc(ZT_CACHE_LINE, bytes);
        if (training) p->grad[t] = zt_aligned_alloc(ZT_CACHE_LINE, bytes);
        ok = p->act[t] && (!training || p->grad[t]);
    }
    for (int i = 0; i < g->nops && ok; i++) {
        const zt_nn_op *op = &g->ops[i];
        size_t n = op->kind == ZT_OP_BN ? (size_t)g->tensors[op->out].c
                   : op->kind == ZT_OP_LN ? (size_t)max_batch : 0;
        if (n == 0) continue;
        p->mean[i] = malloc(n * sizeof(double));
        p->invstd[i] = malloc(n * sizeof(double));
        ok = p->mean[i] && p->invstd[i];
    }
    if (!ok) {
        free_buffers(p);
        return zt_fail(ZT_ERR_NOMEM, "no memory for activations of batch %d", max_batch);
    }
    p->cap = max_batch;
    p->cap_training = training;
    return ZT_OK;
}

/* ---- forward kernels ---- */

static void conv_forward(const float *in, float *out, int B, zt_nn_shape s, int out_c, int k,
                         const float *w, const float *bias)
{
    int pad = k / 2;
    for (int n = 0; n < B; n++)
        for (int y = 0; y < s.h; y++)
            for (int x = 0; x < s.w; x++) {
                float *o = out + (((size_t)n * s.h + y) * s.w + x) * out_c;
                for (int oc = 0; oc < out_c; oc++) {
                    double acc = bias ? bias[oc] : 0.0;
                    for (int ky = 0; ky < k; ky++) {
                        int iy = y + ky - pad;
                        if (iy < 0 || iy >= s.h) continue;
                        for (int kx = 0; kx < k; kx++) {
                            int ix = x + kx - pad;
                            if (ix < 0 || ix >= s.w) continue;
                            const float *xi = in + (((size_t)n * s.h + iy) * s.w + ix) * s.c;
                            const float *wi = w + (((size_t)oc * k + ky) * k + kx) * s.c;
                            for (int c = 0; c < s.c; c++) acc += (double)xi[c] * wi[c];
                        }
                    }
                    o[oc] = (float)acc;
                }
            }
}

static void dense_forward(const float *in, float *out, int B, int n_in, int units, const float *w,
                          const float *bias)
{
    for (int n = 0; n < B; n++)
        for (int u = 0; u < units; u++) {
            double acc = bias ? bias[u] : 0.0;
            const float *xi = in + (size_t)n * n_in, *wi = w + (size_t)u * n_in;
            for (int i = 0; i < n_in; i++) acc += (double)xi[i] * wi[i];
            out[(size_t)n * units + u] = (float)acc;
        }
}

/* Batch norm over rows of C channels (rows = batch x H x W). */
static void bn_forward(const zt_nn_plan *p, int op_i, const float *in, float *out, size_t rows,
                       int C, bool training, bool update)
{
    const zt_nn_op *op = &p->g->ops[op_i];
    const zt_nn_param *pp = p->g->params;
    const float *gamma = p->params + pp[op->p[0]].offset;
    const float *beta = p->params + pp[op->p[1]].offset;
    float *rmean = p->state + pp[op->p[2]].offset;
    float *rvar = p->state + pp[op->p[3]].offset;
    for (int c = 0; c < C; c++) {
        double mean, invstd;
        if (training) {
            double sum = 0, sq = 0;
            for (size_t r = 0; r < rows; r++) sum += in[r * C + c];
            mean = sum / (double)rows;
            for (size_t r = 0; r < rows; r++) {
                double d = in[r * C + c] - mean;
                sq += d * d;
            }
            double var = sq / (double)rows;
            invstd = 1.0 / sqrt(var + ZT_NN_BN_EPS);
            p->mean[op_i][c] = mean;
            p->invstd[op_i][c] = invstd;
            if (update) {
                /* As PyTorch: the running variance takes the unbiased estimate. */
                double unbiased = rows > 1 ? var * (double)rows / (double)(rows - 1) : var;
                rmean[c] = (float)((1 - ZT_NN_BN_MOMENTUM) * rmean[c] + ZT_NN_BN_MOMENTUM * mean);
                rvar[c] = (float)((1 - ZT_NN_BN_MOMENTUM) * rvar[c] + ZT_NN_BN_MOMENTUM * unbiased);
            }
        } else {
            mean = rmean[c];
            invstd = 1.0 / sqrt((double)rvar[c] + ZT_NN_BN_EPS);
        }
        double scale = gamma[c] * invstd, shift = beta[c] - mean * scale;
        for (size_t r = 0; r < rows; r++) out[r * C + c] = (float)(in[r * C + c] * scale + shift);
    }
}

/* Layer norm over each sample's N features (Ba et al. 2016). */
static void ln_forward(const zt_nn_plan *p, int op_i, const float *in, float *out, int B, int N)
{
    const zt_nn_op *op = &p->g->ops[op_i];
    const float *gamma = p->params + p->g->params[op->p[0]].offset;
    const float *beta = p->params + p->g->params[op->p[1]].offset;
    for (int n = 0; n < B; n++) {
        const float *x = in + (size_t)n * N;
        double sum = 0, sq = 0;
        for (int j = 0; j < N; j++) sum += x[j];
        double mean = sum / N;
        for (int j = 0; j < N; j++) sq += (x[j] - mean) * (x[j] - mean);
        double invstd = 1.0 / sqrt(sq / N + ZT_NN_LN_EPS);
        p->mean[op_i][n] = mean;
        p->invstd[op_i][n] = invstd;
        for (int j = 0; j < N; j++)
            out[(size_t)n * N + j] = (float)(gamma[j] * (x[j] - mean) * invstd + beta[j]);
    }
}

static const float *param_or_null(const zt_nn_plan *p, const float *base, int id)
{
    return id >= 0 ? base + p->g->params[id].offset : NULL;
}

static void round_bf16(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) x[i] = zt_bf16_round(x[i]);
}

static zt_status ref_forward(zt_nn_plan *p, int B, const float *in, float *const *outs,
                             bool training, bool update_stats)
{
    ZT_TRY(ref_reserve(p, B, training));
    const zt_nn_graph *g = p->g;
    bool bf16 = p->prec == ZT_PRECISION_BF16;
    size_t in_n = (size_t)B * zt_nn_shape_size(g->tensors[g->input]);
    memcpy(p->act[g->input], in, in_n * sizeof(float));
    if (bf16) round_bf16(p->act[g->input], in_n);
    for (int i = 0; i < g->nops; i++) {
        const zt_nn_op *op = &g->ops[i];
        const float *x = p->act[op->in[0]];
        float *y = p->act[op->out];
        zt_nn_shape s = g->tensors[op->in[0]];
        size_t n = (size_t)B * zt_nn_shape_size(g->tensors[op->out]);
        switch (op->kind) {
        case ZT_OP_CONV:
            conv_forward(x, y, B, s, g->tensors[op->out].c, op->k,
                         param_or_null(p, p->weights, op->p[0]),
                         param_or_null(p, p->params, op->p[1]));
            break;
        case ZT_OP_DENSE:
            dense_forward(x, y, B, (int)zt_nn_shape_size(s), g->tensors[op->out].c,
                          param_or_null(p, p->weights, op->p[0]),
                          param_or_null(p, p->params, op->p[1]));
            break;
        case ZT_OP_BN:
            bn_forward(p, i, x, y, (size_t)B * s.h * s.w, s.c, training, update_stats);
            break;
        case ZT_OP_LN: ln_forward(p, i, x, y, B, (int)zt_nn_shape_size(s)); break;
        case ZT_OP_RELU:
            for (size_t e = 0; e < n; e++) y[e] = x[e] > 0 ? x[e] : 0.0f;
            break;
        case ZT_OP_TANH:
            for (size_t e = 0; e < n; e++) y[e] = tanhf(x[e]);
            break;
        case ZT_OP_ADD: {
            const float *x1 = p->act[op->in[1]];
            for (size_t e = 0; e < n; e++) y[e] = x[e] + x1[e];
            break;
        }
        }
        if (bf16) round_bf16(y, n);
    }
    for (int o = 0; o < g->noutputs; o++)
        memcpy(outs[o], p->act[g->outputs[o]],
               (size_t)B * zt_nn_shape_size(g->tensors[g->outputs[o]]) * sizeof(float));
    return ZT_OK;
}

/* ---- backward kernels: each ADDS to dx and to the parameter gradients ---- */

static void conv_backward(const zt_nn_plan *p, const zt_nn_op *op, int B, const float *dy,
                          float *dx, float *grads)
{
    const zt_nn_graph *g = p->g;
    zt_nn_shape s = g->tensors[op->in[0]];
    int out_c = g->tensors[op->out].c, k = op->k, pad = k / 2;
    const float *in = p->act[op->in[0]];
    const zt_nn_param *wp = &g->params[op->p[0]];
    const float *w = p->weights + wp->offset;
    double *acc = p->acc;
    if (dx) {
        /* Gathered per input pixel: dx[iy,ix] = sum over (ky,kx,oc) of
         * dy[iy-ky+pad, ix-kx+pad, oc] * w[oc,ky,kx]. */
        for (int n = 0; n < B; n++)
            for (int iy = 0; iy < s.h; iy++)
                for (int ix = 0; ix < s.w; ix++) {
                    for (int c = 0; c < s.c; c++) acc[c] = 0;
                    for (int ky = 0; ky < k; ky++) {
                        int y = iy - ky + pad;
                        if (y < 0 || y >= s.h) continue;
                        for (int kx = 0; kx < k; kx++) {
                            int x = ix - kx + pad;
                            if (x < 0 || x >= s.w) continue;
                            const float *d = dy + (((size_t)n * s.h + y) * s.w + x) * out_c;
                            for (int oc = 0; oc < out_c; oc++) {
                                const float *wi = w + (((size_t)oc * k + ky) * k + kx) * s.c;
                                for (int c = 0; c < s.c; c++) acc[c] += (double)d[oc] * wi[c];
                            }
                        }
                    }
                    float *o = dx + (((size_t)n * s.h + iy) * s.w + ix) * s.c;
                    for (int c = 0; c < s.c; c++) o[c] += (float)acc[c];
                }
    }
    for (size_t e = 0; e < wp->count; e++) acc[e] = 0;
    for (int n = 0; n < B; n++)
        for (int y = 0; y < s.h; y++)
            for (int x = 0; x < s.w; x++) {
                const float *d = dy + (((size_t)n * s.h + y) * s.w + x) * out_c;
                for (int ky = 0; ky < k; ky++) {
                    int iy = y + ky - pad;
                    if (iy < 0 || iy >= s.h) continue;
                    for (int kx = 0; kx < k; kx++) {
                        int ix = x + kx - pad;
                        if (ix < 0 || ix >= s.w) continue;
                        const float *xi = in + (((size_t)n * s.h + iy) * s.w + ix) * s.c;
                        for (int oc = 0; oc < out_c; oc++) {
                            double *a = acc + (((size_t)oc * k + ky) * k + kx) * s.c;
                            for (int c = 0; c < s.c; c++) a[c] += (double)d[oc] * xi[c];
                        }
                    }
                }
            }
    float *gw = grads + wp->offset;
    for (size_t e = 0; e < wp->count; e++) gw[e] += (float)acc[e];
    if (op->p[1] >= 0) {
        float *gb = grads + g->params[op->p[1]].offset;
        size_t rows = (size_t)B * s.h * s.w;
        for (int oc = 0; oc < out_c; oc++) {
            double sum = 0;
            for (size_t r = 0; r < rows; r++) sum += dy[r * out_c + oc];
            gb[oc] += (float)sum;
        }
    }
}

static void dense_backward(const zt_nn_plan *p, const zt_nn_op *op, int B, const float *dy,
                           float *dx, float *grads)
{
    const zt_nn_graph *g = p->g;
    int n_in = (int)zt_nn_shape_size(g->tensors[op->in[0]]);
    int units = g->tensors[op->out].c;
    const float *in = p->act[op->in[0]];
    const zt_nn_param *wp = &g->params[op->p[0]];
    const float *w = p->weights + wp->offset;
    double *acc = p->acc;
    if (dx) {
        for (int n = 0; n < B; n++) {
            for (int i = 0; i < n_in; i++) acc[i] = 0;
            for (int u = 0; u < units; u++) {
                double d = dy[(size_t)n * units + u];
                const float *wi = w + (size_t)u * n_in;
                for (int i = 0; i < n_in; i++) acc[i] += d * wi[i];
            }
            for (int i = 0; i < n_in; i++) dx[(size_t)n * n_in + i] += (float)acc[i];
        }
    }
    float *gw = grads + wp->offset;
    for (int u = 0; u < units; u++) {
        for (int i = 0; i < n_in; i++) acc[i] = 0;
        for (int n = 0; n < B; n++) {
            double d = dy[(size_t)n * units + u];
            const float *xi = in + (size_t)n * n_in;
            for (int i = 0; i < n_in; i++) acc[i] += d * xi[i];
        }
        for (int i = 0; i < n_in; i++) gw[(size_t)u * n_in + i] += (float)acc[i];
    }
    if (op->p[1] >= 0) {
        float *gb = grads + g->params[op->p[1]].offset;
        for (int u = 0; u < units; u++) {
            double sum = 0;
            for (int n = 0; n < B; n++) sum += dy[(size_t)n * units + u];
            gb[u] += (float)sum;
        }
    }
}

/* With xhat = (x - mean) * invstd over M values: dgamma = sum dy*xhat,
 * dbeta = sum dy, dx = gamma*invstd/M * (M*dy - dbeta - xhat*dgamma)
 * (Ioffe & Szegedy 2015, §3). */
static void bn_backward(const zt_nn_plan *p, int op_i, int B, const float *dy, float *dx,
                        float *grads)
{
    const zt_nn_graph *g = p->g;
    const zt_nn_op *op = &g->ops[op_i];
    zt_nn_shape s = g->tensors[op->in[0]];
    size_t rows = (size_t)B * s.h * s.w;
    int C = s.c;
    const float *in = p->act[op->in[0]];
    const float *gamma = p->params + g->params[op->p[0]].offset;
    float *ggamma = grads + g->params[op->p[0]].offset;
    float *gbeta = grads + g->params[op->p[1]].offset;
    for (int c = 0; c < C; c++) {
        double mean = p->mean[op_i][c], invstd = p->invstd[op_i][c];
        double sdy = 0, sdyx = 0;
        for (size_t r = 0; r < rows; r++) {
            double d = dy[r * C + c];
            sdy += d;
            sdyx += d * (in[r * C + c] - mean) * invstd;
        }
        ggamma[c] += (float)sdyx;
        gbeta[c] += (float)sdy;
        if (!dx) continue;
        double k = gamma[c] * invstd / (double)rows;
        for (size_t r = 0; r < rows; r++) {
            double xhat = (in[r * C + c] - mean) * invstd;
            dx[r * C + c] += (float)(k * ((double)rows * dy[r * C + c] - sdy - xhat * sdyx));
        }
    }
}

static void ln_backward(const zt_nn_plan *p, int op_i, int B, const float *dy, float *dx,
                        float *grads)
{
    const zt_nn_graph *g = p->g;
    const zt_nn_op *op = &g->ops[op_i];
    int N = (int)zt_nn_shape_size(g->tensors[op->in[0]]);
    const float *in = p->act[op->in[0]];
    const float *gamma = p->params + g->params[op->p[0]].offset;
    float *ggamma = grads + g->params[op->p[0]].offset;
    float *gbeta = grads + g->params[op->p[1]].offset;
    double *acc = p->acc;
    for (int j = 0; j < N; j++) acc[j] = 0;
    for (int n = 0; n < B; n++) {
        const float *x = in + (size_t)n * N, *d = dy + (size_t)n * N;
        double mean = p->mean[op_i][n], invstd = p->invstd[op_i][n];
        double sdxh = 0, sdxhx = 0;
        for (int j = 0; j < N; j++) {
            double xhat = (x[j] - mean) * invstd;
            double dxhat = (double)d[j] * gamma[j];
            sdxh += dxhat;
            sdxhx += dxhat * xhat;
            acc[j] += d[j] * xhat;
        }
        if (!dx) continue;
        for (int j = 0; j < N; j++) {
            double xhat = (x[j] - mean) * invstd;
            double dxhat = (double)d[j] * gamma[j];
            dx[(size_t)n * N + j] += (float)(invstd / N * (N * dxhat - sdxh - xhat * sdxhx));
        }
    }
    for (int j = 0; j < N; j++) {
        ggamma[j] += (float)acc[j];
        double sum = 0;
        for (int n = 0; n < B; n++) sum += dy[(size_t)n * N + j];
        gbeta[j] += (float)sum;
    }
}

static zt_status ref_backward(zt_nn_plan *p, int B, const float *const *d_outs, float *grads,
                              float *d_in)
{
    const zt_nn_graph *g = p->g;
    ZT_ASSERT(p->cap_training && B <= p->cap);
    for (int t = 0; t < g->ntensors; t++)
        memset(p->grad[t], 0, (size_t)B * zt_nn_shape_size(g->tensors[t]) * sizeof(float));
    for (int o = 0; o < g->noutputs; o++) {
        size_t n = (size_t)B * zt_nn_shape_size(g->tensors[g->outputs[o]]);
        float *d = p->grad[g->outputs[o]];
        for (size_t e = 0; e < n; e++) d[e] += d_outs[o][e];
    }
    for (int i = g->nops - 1; i >= 0; i--) {
        const zt_nn_op *op = &g->ops[i];
        const float *dy = p->grad[op->out];
        const float *y = p->act[op->out];
        /* The input's gradient is needed unless it is the graph's input and
         * nobody asked for it. */
        float *dx = op->in[0] == g->input && !d_in ? NULL : p->grad[op->in[0]];
        size_t n = (size_t)B * zt_nn_shape_size(g->tensors[op->out]);
        if (p->prec == ZT_PRECISION_BF16 && (op->kind == ZT_OP_CONV || op->kind == ZT_OP_DENSE))
            round_bf16(p->grad[op->out], n); /* complete: its consumers came first */
        switch (op->kind) {
        case ZT_OP_CONV: conv_backward(p, op, B, dy, dx, grads); break;
        case ZT_OP_DENSE: dense_backward(p, op, B, dy, dx, grads); break;
        case ZT_OP_BN: bn_backward(p, i, B, dy, dx, grads); break;
        case ZT_OP_LN: ln_backward(p, i, B, dy, dx, grads); break;
        case ZT_OP_RELU:
            if (dx)
                for (size_t e = 0; e < n; e++) dx[e] += y[e] > 0 ? dy[e] : 0.0f;
            break;
        case ZT_OP_TANH:
            if (dx)
                for (size_t e = 0; e < n; e++) dx[e] += dy[e] * (1.0f - y[e] * y[e]);
            break;
        case ZT_OP_ADD: {
            float *dx1 = op->in[1] == g->input && !d_in ? NULL : p->grad[op->in[1]];
            for (size_t e = 0; e < n; e++) {
                if (dx) dx[e] += dy[e];
                if (dx1) dx1[e] += dy[e];
            }
            break;
        }
        }
    }
    if (d_in)
        memcpy(d_in, p->grad[g->input],
               (size_t)B * zt_nn_shape_size(g->tensors[g->input]) * sizeof(float));
    return ZT_OK;
}

const zt_nn_backend zt_nn_backend_ref = {
    .name = "ref",
    .supports = ref_supports,
    .auto_precision = ref_auto_precision,
    .plan_new = ref_plan_new,
    .plan_free = ref_plan_free,
    .reserve = ref_reserve,
    .params_changed = ref_params_changed,
    .forward = ref_forward,
    .backward = ref_backward,
};
