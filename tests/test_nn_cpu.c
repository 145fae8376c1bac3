/* Tests of the oneDNN CPU backend against the reference backend on small
 * resnets and MLPs with random weights and inputs, batch sizes 1, 3, 8 and 33:
 * fp32 inference and training forward to 1e-4 relative to the output scale,
 * running statistics after a training step, parameter and input gradients to
 * 1e-4 relative to each tensor's largest gradient, and bf16 forward and
 * gradients within stated bounds of fp32. In bf16 the Winograd convolution
 * (ZT_WINOGRAD) is held to the same bound alone (boards 6x7, 3x3, 8x8, 9x9,
 * 1x1; batches 1, 3, 64) and in a whole net against the oneDNN path at every
 * batch size 1 to 70; the Winograd weight gradient and the bf16 training
 * batch norm kernels alone against sums in doubles. Skips (exit 0) in a
 * build without the backend, and skips bf16 on a CPU without AVX512_BF16. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/rng.h"
#include "nn/backend.h"
#include "nn/cpu/bnorm.h"
#include "nn/cpu/winograd.h"
#include "nn/nn.h"

#include "zt_grad_test.h"

static int failures;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            failures++;                                                                            \
            printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                                 \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
        }                                                                                          \
    } while (0)

#define MUST(expr)                                                                                 \
    do {                                                                                           \
        zt_status s_ = (expr);                                                                     \
        if (s_ != ZT_OK) {                                                                         \
            printf("FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, #expr, zt_error_message());         \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* Bounds: fp32 differs from the double-accumulating reference by summation
 * order only. bf16 keeps 8 significant bits per activation and weight; its
 * distance from fp32 is bounded relative to the reference backend's bf16
 * emulation (bf16_within). */
#define TOL_FP32 1e-4
#define BF16_FACTOR 2.0
#define BF16_FWD_MARGIN 0.05
#define BF16_GRAD_MARGIN 0.15
#define BF16_OUT_SCALE 0.25 /* outputs are logits and values of order one */

static double worst_fp32_fwd, worst_fp32_grad, worst_bf16_fwd, worst_bf16_grad;
static double worst_emu_fwd, worst_emu_grad;
static double worst_wgrad[2]; /* the Winograd weight gradient kernel's: dot products, FMAs */

static void fill_normal(zt_rng *r, float *x, size_t n, double scale)
{
    for (size_t i = 0; i < n; i++) x[i] = (float)(scale * zt_rng_normal(r));
}

/* max |a - ref| over max |ref| (the scale of the tensor), at least `floor`. */
static double rel_err_floor(const float *a, const float *ref, size_t n, double floor)
{
    double diff = 0, scale = floor;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - ref[i]);
        if (!(d <= diff)) diff = d; /* NaN counts as worst */
        if (fabs(ref[i]) > scale) scale = fabs(ref[i]);
    }
    return diff / scale;
}

static double rel_err(const float *a, const float *ref, size_t n)
{
    return rel_err_floor(a, ref, n, 1e-12);
}

typedef struct net_case {
    const char *name;
    zt_net_config cfg;
} net_case;

typedef struct side {
    const zt_nn_backend *be;
    zt_nn_plan *plan;
    float *state;
    float *outs[4];
    float *grads, *d_in;
} side;

static void side_new(side *s, const zt_nn_backend *be, const zt_nn_graph *g, float *params,
                     const float *state, zt_precision prec, int threads, int max_b)
{
    s->be = be;
    s->state = zt_xmalloc((g->state_floats + 1) * sizeof(float));
    memcpy(s->state, state, g->state_floats * sizeof(float));
    for (int o = 0; o < g->noutputs; o++)
        s->outs[o] = zt_xmalloc((size_t)max_b * zt_nn_shape_size(g->tensors[g->outputs[o]]) *
                                sizeof(float));
    s->grads = zt_xmalloc((g->param_floats + 1) * sizeof(float));
    s->d_in = zt_xmalloc((size_t)max_b * zt_nn_shape_size(g->tensors[g->input]) * sizeof(float));
    MUST(be->plan_new(g, params, s->state, prec, threads, &s->plan));
}

static void side_free(side *s, const zt_nn_graph *g)
{
    s->be->plan_free(s->plan);
    free(s->state);
    for (int o = 0; o < g->noutputs; o++) free(s->outs[o]);
    free(s->grads);
    free(s->d_in);
}

static double out_err(const zt_nn_graph *g, int B, const side *a, const side *ref, int o,
                      double floor)
{
    return rel_err_floor(a->outs[o], ref->outs[o],
                         (size_t)B * zt_nn_shape_size(g->tensors[g->outputs[o]]), floor);
}

static double compare_outs(const zt_nn_graph *g, int B, const side *a, const side *ref,
                           const char *what, const char *name, double tol)
{
    double worst = 0;
    for (int o = 0; o < g->noutputs; o++) {
        double e = out_err(g, B, a, ref, o, 1e-12);
        CHECK(e <= tol, "%s %s B=%d output %d: relative error %.3g > %.1g", name, what, B, o, e,
              tol);
        if (e > worst) worst = e;
    }
    return worst;
}

/* The largest gradient element added to any trainable tensor. */
static double grad_scale(const zt_nn_graph *g, const float *ref, const float *init)
{
    double m = 1e-12;
    for (size_t k = 0; k < g->param_floats; k++)
        if (fabs((double)ref[k] - init[k]) > m) m = fabs((double)ref[k] - init[k]);
    return m;
}

static double compare_grads(const zt_nn_graph *g, const float *a, const float *ref,
                            const float *init, const char *what, const char *name, int B,
                            double tol)
{
    double worst = 0, floor = 0.01 * grad_scale(g, ref, init);
    for (int i = 0; i < g->nparams; i++) {
        const zt_nn_param *p = &g->params[i];
        if (!p->trainable) continue;
        double err = grad_err(p, a, ref, init, floor, false);
        CHECK(err <= tol, "%s %s B=%d gradient of %s: relative error %.3g > %.1g", name, what, B,
              p->name, err, tol);
        if (err > worst) worst = err;
    }
    return worst;
}

/* bf16 against fp32 is held to the reference's own bf16 emulation: at most
 * twice its distance from fp32 plus a margin, since how far bf16 lands depends
 * on the conditioning of the random net. The margin is wider for gradients:
 * the emulation rounds forward activations only, while oneDNN also carries
 * the incoming gradients in bf16, through batch norm's cancellations. */
static bool bf16_within(double e_cpu, double e_emu, double margin)
{
    return e_cpu <= BF16_FACTOR * e_emu + margin;
}

static void check_bf16_outs(const zt_nn_graph *g, int B, const side *bf, const side *emu,
                            const side *ref, const char *what, const char *name)
{
    for (int o = 0; o < g->noutputs; o++) {
        double e_cpu = out_err(g, B, bf, ref, o, BF16_OUT_SCALE);
        double e_emu = out_err(g, B, emu, ref, o, BF16_OUT_SCALE);
        CHECK(bf16_within(e_cpu, e_emu, BF16_FWD_MARGIN),
              "%s bf16 %s B=%d output %d: relative error %.3g (emulation %.3g)", name, what, B, o,
              e_cpu, e_emu);
        if (e_cpu > worst_bf16_fwd) worst_bf16_fwd = e_cpu;
        if (e_emu > worst_emu_fwd) worst_emu_fwd = e_emu;
    }
}

/* Random weights (1.5x He scale), biases and norm parameters near their
 * initial values, running variances in [0.5, 1.5). */
static void random_params(const zt_nn_graph *g, zt_rng *r, float *params, float *state)
{
    for (int i = 0; i < g->nparams; i++) {
        const zt_nn_param *p = &g->params[i];
        float *d = (p->trainable ? params : state) + p->offset;
        for (size_t e = 0; e < p->count; e++)
            d[e] = p->fan_in > 0 ? (float)(1.5 * zt_rng_normal(r) / sqrt(p->fan_in))
                                 : p->init_value + (float)(0.3 * zt_rng_normal(r));
        if (!p->trainable && strstr(p->name, "running_var"))
            for (size_t e = 0; e < p->count; e++) d[e] = 0.5f + (float)zt_rng_uniform(r);
    }
}

static void run_case(const net_case *nc, const zt_nn_backend *cpu, bool bf16, zt_rng *r)
{
    zt_nn_graph g;
    zt_nn_graph_build(&g, &nc->cfg);
    float *params = zt_xmalloc((g.param_floats + 1) * sizeof(float));
    float *state = zt_xmalloc((g.state_floats + 1) * sizeof(float));
    random_params(&g, r, params, state);
    const int batches[] = {1, 3, 8, 33};
    const int max_b = 33;
    size_t in_size = zt_nn_shape_size(g.tensors[g.input]);
    float *in = zt_xmalloc((size_t)max_b * in_size * sizeof(float));
    float *d_outs[4];
    for (int o = 0; o < g.noutputs; o++)
        d_outs[o] = zt_xmalloc((size_t)max_b * zt_nn_shape_size(g.tensors[g.outputs[o]]) *
                               sizeof(float));
    float *init = zt_xmalloc((g.param_floats + 1) * sizeof(float));

    side ref, fp, bf, emu;
    side_new(&ref, &zt_nn_backend_ref, &g, params, state, ZT_PRECISION_FP32, 1, max_b);
    /* Two threads on the fp32 plan, one on the bf16 plan: both paths run. */
    side_new(&fp, cpu, &g, params, state, ZT_PRECISION_FP32, 2, max_b);
    if (bf16) {
        side_new(&bf, cpu, &g, params, state, ZT_PRECISION_BF16, 1, max_b);
        side_new(&emu, &zt_nn_backend_ref, &g, params, state, ZT_PRECISION_BF16, 1, max_b);
    }
    /* Inference buckets up to 64: B=33 runs padded to 48. */
    MUST(cpu->reserve(fp.plan, 64, false));

    for (size_t bi = 0; bi < sizeof batches / sizeof batches[0]; bi++) {
        int B = batches[bi];
        fill_normal(r, in, (size_t)B * in_size, 1.0);
        for (int o = 0; o < g.noutputs; o++)
            fill_normal(r, d_outs[o], (size_t)B * zt_nn_shape_size(g.tensors[g.outputs[o]]), 1.0);

        /* Inference (running statistics, BN folded on the oneDNN side). */
        MUST(ref.be->forward(ref.plan, B, in, ref.outs, false, false));
        MUST(fp.be->forward(fp.plan, B, in, fp.outs, false, false));
        double e = compare_outs(&g, B, &fp, &ref, "fp32 inference", nc->name, TOL_FP32);
        if (e > worst_fp32_fwd) worst_fp32_fwd = e;
        if (bf16) {
            MUST(bf.be->forward(bf.plan, B, in, bf.outs, false, false));
            MUST(emu.be->forward(emu.plan, B, in, emu.outs, false, false));
            check_bf16_outs(&g, B, &bf, &emu, &ref, "inference", nc->name);
        }

        /* Training forward with running-statistics update, then backward
         * with the input gradient. */
        MUST(ref.be->forward(ref.plan, B, in, ref.outs, true, true));
        MUST(fp.be->forward(fp.plan, B, in, fp.outs, true, true));
        e = compare_outs(&g, B, &fp, &ref, "fp32 training forward", nc->name, TOL_FP32);
        if (e > worst_fp32_fwd) worst_fp32_fwd = e;
        e = rel_err(fp.state, ref.state, g.state_floats);
        CHECK(e <= TOL_FP32, "%s B=%d running statistics: relative error %.3g", nc->name, B, e);
        fill_normal(r, init, g.param_floats, 0.1);
        memcpy(ref.grads, init, g.param_floats * sizeof(float));
        memcpy(fp.grads, init, g.param_floats * sizeof(float));
        MUST(ref.be->backward(ref.plan, B, (const float *const *)d_outs, ref.grads, ref.d_in));
        MUST(fp.be->backward(fp.plan, B, (const float *const *)d_outs, fp.grads, fp.d_in));
        e = compare_grads(&g, fp.grads, ref.grads, init, "fp32", nc->name, B, TOL_FP32);
        if (e > worst_fp32_grad) worst_fp32_grad = e;
        e = rel_err(fp.d_in, ref.d_in, (size_t)B * in_size);
        CHECK(e <= TOL_FP32, "%s B=%d input gradient: relative error %.3g", nc->name, B, e);
        if (e > worst_fp32_grad) worst_fp32_grad = e;

        /* Again without the input gradient and without the update: the
         * gradients are added on top of the previous ones. */
        memcpy(init, ref.grads, g.param_floats * sizeof(float));
        MUST(ref.be->forward(ref.plan, B, in, ref.outs, true, false));
        MUST(fp.be->forward(fp.plan, B, in, fp.outs, true, false));
        MUST(ref.be->backward(ref.plan, B, (const float *const *)d_outs, ref.grads, NULL));
        MUST(fp.be->backward(fp.plan, B, (const float *const *)d_outs, fp.grads, NULL));
        e = compare_grads(&g, fp.grads, ref.grads, init, "fp32 accumulated", nc->name, B,
                          2 * TOL_FP32);
        if (e > worst_fp32_grad) worst_fp32_grad = e;

        if (bf16) {
            side *all[3] = {&ref, &bf, &emu};
            fill_normal(r, init, g.param_floats, 0.1);
            for (int k = 0; k < 3; k++) {
                if (k > 0) {
                    memcpy(all[k]->state, ref.state, g.state_floats * sizeof(float));
                    all[k]->be->params_changed(all[k]->plan);
                }
                memcpy(all[k]->grads, init, g.param_floats * sizeof(float));
                MUST(all[k]->be->forward(all[k]->plan, B, in, all[k]->outs, true, false));
                MUST(all[k]->be->backward(all[k]->plan, B, (const float *const *)d_outs,
                                          all[k]->grads, NULL));
            }
            check_bf16_outs(&g, B, &bf, &emu, &ref, "training forward", nc->name);
            /* bf16 carries the incoming gradient in 8 bits: the floor is 5%. */
            double floor = 0.05 * grad_scale(&g, ref.grads, init);
            for (int i = 0; i < g.nparams; i++) {
                const zt_nn_param *p = &g.params[i];
                if (!p->trainable) continue;
                double e_cpu = grad_err(p, bf.grads, ref.grads, init, floor, true);
                double e_emu = grad_err(p, emu.grads, ref.grads, init, floor, true);
                CHECK(bf16_within(e_cpu, e_emu, BF16_GRAD_MARGIN),
                      "%s bf16 B=%d gradient of %s: relative L2 error %.3g (emulation %.3g)",
                      nc->name, B, p->name, e_cpu, e_emu);
                if (e_cpu > worst_bf16_grad) worst_bf16_grad = e_cpu;
                if (e_emu > worst_emu_grad) worst_emu_grad = e_emu;
            }
        }
    }

    /* New weights reach the backend through params_changed. */
    for (size_t e = 0; e < g.param_floats; e++) params[e] *= 0.9f;
    ref.be->params_changed(ref.plan);
    fp.be->params_changed(fp.plan);
    fill_normal(r, in, 5 * in_size, 1.0);
    MUST(ref.be->forward(ref.plan, 5, in, ref.outs, false, false));
    MUST(fp.be->forward(fp.plan, 5, in, fp.outs, false, false));
    compare_outs(&g, 5, &fp, &ref, "fp32 inference after params_changed", nc->name, TOL_FP32);
    /* Padding rows do not leak: sample 0 alone equals sample 0 of five. */
    float *first = zt_xmalloc(zt_nn_shape_size(g.tensors[g.outputs[0]]) * sizeof(float));
    memcpy(first, fp.outs[0], zt_nn_shape_size(g.tensors[g.outputs[0]]) * sizeof(float));
    MUST(fp.be->forward(fp.plan, 1, in, fp.outs, false, false));
    double e = rel_err(fp.outs[0], first, zt_nn_shape_size(g.tensors[g.outputs[0]]));
    CHECK(e <= TOL_FP32, "%s: sample 0 alone differs from it in a batch by %.3g", nc->name, e);
    free(first);

    side_free(&ref, &g);
    side_free(&fp, &g);
    if (bf16) {
        side_free(&bf, &g);
        side_free(&emu, &g);
    }
    for (int o = 0; o < g.noutputs; o++) free(d_outs[o]);
    free(init);
    free(in);
    free(params);
    free(state);
    zt_nn_graph_free(&g);
}

/* Whether two outputs differ in any element: the Winograd and direct paths
 * round differently, so identical outputs mean one path ran twice. */
static bool differ(const float *a, const float *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i]) return true;
    return false;
}

/* Whether the Winograd cases run their products on FMAs (winograd.h). */
static bool wino_fma;

/* bf16 plans with Winograd on (two threads, its products as wino_fma says)
 * and off, from the environment variables the plan reads at creation. */
static void winograd_sides(side *on, side *off, const zt_nn_backend *cpu, const zt_nn_graph *g,
                           float *params, const float *state, int max_b)
{
    setenv("ZT_WINOGRAD", "1", 1);
    setenv("ZT_WINOGRAD_FMA", wino_fma ? "1" : "0", 1);
    side_new(on, cpu, g, params, state, ZT_PRECISION_BF16, 2, max_b);
    unsetenv("ZT_WINOGRAD_FMA");
    setenv("ZT_WINOGRAD", "0", 1);
    side_new(off, cpu, g, params, state, ZT_PRECISION_BF16, 1, max_b);
    unsetenv("ZT_WINOGRAD");
}

/* One 3x3 conv on the Winograd kernel, against the reference in fp32 and
 * within the bf16 bound of its emulation: 64 -> 64 channels with the
 * residual block's epilogue (folded batch norm, the skip added in place,
 * ReLU), or 16 -> 80 with a bias only (a partial block of output channels). */
static void winograd_conv_case(const zt_nn_backend *cpu, zt_rng *r, int h, int w, bool block)
{
    int cin = block ? 64 : 16, cout = block ? 64 : 80;
    zt_nn_graph g;
    zt_nn_graph_init(&g);
    int x = zt_nn_graph_input(&g, (zt_nn_shape){h, w, cin});
    int y = zt_nn_graph_conv(&g, "conv", x, cout, 3, !block);
    if (block) y = zt_nn_graph_relu(&g, zt_nn_graph_add(&g, zt_nn_graph_bn(&g, "bn", y), x));
    zt_nn_graph_output(&g, y);
    float *params = zt_xmalloc((g.param_floats + 1) * sizeof(float));
    float *state = zt_xmalloc((g.state_floats + 1) * sizeof(float));
    random_params(&g, r, params, state);
    const int batches[] = {1, 3, 64}, max_b = 64;
    size_t in_size = zt_nn_shape_size(g.tensors[g.input]);
    size_t out_size = zt_nn_shape_size(g.tensors[y]);
    float *in = zt_xmalloc((size_t)max_b * in_size * sizeof(float));
    side ref, emu, on, off, other;
    side_new(&ref, &zt_nn_backend_ref, &g, params, state, ZT_PRECISION_FP32, 1, max_b);
    side_new(&emu, &zt_nn_backend_ref, &g, params, state, ZT_PRECISION_BF16, 1, max_b);
    winograd_sides(&on, &off, cpu, &g, params, state, max_b);
    /* the other products, to see that the setting took */
    setenv("ZT_WINOGRAD", "1", 1);
    setenv("ZT_WINOGRAD_FMA", wino_fma ? "0" : "1", 1);
    side_new(&other, cpu, &g, params, state, ZT_PRECISION_BF16, 1, max_b);
    unsetenv("ZT_WINOGRAD");
    unsetenv("ZT_WINOGRAD_FMA");
    char name[64];
    snprintf(name, sizeof name, "winograd%s conv %dx%d %d->%d", wino_fma ? " fma" : "", h, w, cin,
             cout);
    for (size_t bi = 0; bi < sizeof batches / sizeof batches[0]; bi++) {
        int B = batches[bi];
        fill_normal(r, in, (size_t)B * in_size, 1.0);
        side *all[5] = {&ref, &emu, &on, &off, &other};
        for (int k = 0; k < 5; k++)
            MUST(all[k]->be->forward(all[k]->plan, B, in, all[k]->outs, false, false));
        check_bf16_outs(&g, B, &on, &emu, &ref, "inference", name);
        check_bf16_outs(&g, B, &off, &emu, &ref, "inference (oneDNN)", name);
        CHECK(differ(on.outs[0], off.outs[0], (size_t)B * out_size),
              "%s B=%d: Winograd and oneDNN outputs are identical (Winograd did not run)", name,
              B);
        CHECK(differ(on.outs[0], other.outs[0], (size_t)B * out_size),
              "%s B=%d: FMA and dot-product outputs are identical (ZT_WINOGRAD_FMA ignored)", name,
              B);
    }
    side_free(&ref, &g);
    side_free(&emu, &g);
    side_free(&on, &g);
    side_free(&off, &g);
    side_free(&other, &g);
    free(in);
    free(params);
    free(state);
    zt_nn_graph_free(&g);
}

/* A resnet with Winograd on and off at every batch size 1 .. 70 (buckets
 * pad 65 .. 70 to 96): both within the bf16 bound of the reference, each
 * sample as it is in the batch of 70 (padding rows never leak); then a
 * training step's outputs and gradients. */
static void winograd_net_case(const zt_nn_backend *cpu, zt_rng *r)
{
    zt_net_config cfg;
    zt_net_config_default(&cfg, 6, 7, 2, 7);
    cfg.channels = 32;
    cfg.blocks = 2;
    cfg.value_hidden = 16;
    MUST(zt_net_config_check(&cfg));
    zt_nn_graph g;
    zt_nn_graph_build(&g, &cfg);
    float *params = zt_xmalloc((g.param_floats + 1) * sizeof(float));
    float *state = zt_xmalloc((g.state_floats + 1) * sizeof(float));
    random_params(&g, r, params, state);
    const int max_b = 70;
    size_t in_size = zt_nn_shape_size(g.tensors[g.input]);
    float *in = zt_xmalloc((size_t)max_b * in_size * sizeof(float));
    fill_normal(r, in, (size_t)max_b * in_size, 1.0);
    side ref, emu, on, off;
    side_new(&ref, &zt_nn_backend_ref, &g, params, state, ZT_PRECISION_FP32, 1, max_b);
    side_new(&emu, &zt_nn_backend_ref, &g, params, state, ZT_PRECISION_BF16, 1, max_b);
    winograd_sides(&on, &off, cpu, &g, params, state, max_b);
    MUST(cpu->reserve(on.plan, 96, false));
    MUST(cpu->reserve(off.plan, 96, false));
    const char *name =
        wino_fma ? "resnet 6x7x2 ch32 x2 winograd fma" : "resnet 6x7x2 ch32 x2 winograd";
    side *all[4] = {&ref, &emu, &on, &off};
    for (int k = 0; k < 4; k++)
        MUST(all[k]->be->forward(all[k]->plan, max_b, in, all[k]->outs, false, false));
    check_bf16_outs(&g, max_b, &on, &emu, &ref, "inference", name);
    check_bf16_outs(&g, max_b, &off, &emu, &ref, "inference (oneDNN)", name);
    double e_emu[4];
    float *full[4]; /* Winograd's outputs for the whole batch */
    for (int o = 0; o < g.noutputs; o++) {
        size_t n = (size_t)max_b * zt_nn_shape_size(g.tensors[g.outputs[o]]);
        e_emu[o] = out_err(&g, max_b, &emu, &ref, o, BF16_OUT_SCALE);
        full[o] = zt_xmalloc(n * sizeof(float));
        memcpy(full[o], on.outs[o], n * sizeof(float));
    }
    for (int B = 1; B <= max_b; B++) {
        MUST(on.be->forward(on.plan, B, in, on.outs, false, false));
        MUST(off.be->forward(off.plan, B, in, off.outs, false, false));
        for (int o = 0; o < g.noutputs; o++) {
            double e = out_err(&g, B, &on, &off, o, BF16_OUT_SCALE);
            CHECK(bf16_within(e, e_emu[o], BF16_FWD_MARGIN),
                  "%s B=%d output %d: Winograd on and off differ by %.3g (emulation %.3g)", name,
                  B, o, e, e_emu[o]);
            e = rel_err_floor(on.outs[o], full[o],
                              (size_t)B * zt_nn_shape_size(g.tensors[g.outputs[o]]),
                              BF16_OUT_SCALE);
            CHECK(bf16_within(e, e_emu[o], BF16_FWD_MARGIN),
                  "%s B=%d output %d: differs from the same samples in a batch of %d by %.3g",
                  name, B, o, max_b, e);
        }
    }

    /* Training (forward convs and input gradients on the kernel, no
     * statistics update): outputs and parameter gradients within the bounds
     * of run_case. */
    const int B = 24;
    float *d_outs[4], *init = zt_xmalloc((g.param_floats + 1) * sizeof(float));
    for (int o = 0; o < g.noutputs; o++) {
        size_t n = (size_t)B * zt_nn_shape_size(g.tensors[g.outputs[o]]);
        d_outs[o] = zt_xmalloc(n * sizeof(float));
        fill_normal(r, d_outs[o], n, 1.0);
    }
    fill_normal(r, init, g.param_floats, 0.1);
    for (int k = 0; k < 4; k++) {
        memcpy(all[k]->grads, init, g.param_floats * sizeof(float));
        MUST(all[k]->be->forward(all[k]->plan, B, in, all[k]->outs, true, false));
        MUST(all[k]->be->backward(all[k]->plan, B, (const float *const *)d_outs, all[k]->grads,
                                  NULL));
    }
    check_bf16_outs(&g, B, &on, &emu, &ref, "training forward", name);
    CHECK(differ(on.grads, off.grads, g.param_floats),
          "%s: training gradients with Winograd on and off are identical", name);
    double floor = 0.05 * grad_scale(&g, ref.grads, init);
    for (int i = 0; i < g.nparams; i++) {
        const zt_nn_param *p = &g.params[i];
        if (!p->trainable) continue;
        double e_cpu = grad_err(p, on.grads, ref.grads, init, floor, true);
        double e_ref = grad_err(p, emu.grads, ref.grads, init, floor, true);
        CHECK(bf16_within(e_cpu, e_ref, BF16_GRAD_MARGIN),
              "%s bf16 B=%d gradient of %s: relative L2 error %.3g (emulation %.3g)", name, B,
              p->name, e_cpu, e_ref);
        if (e_cpu > worst_bf16_grad) worst_bf16_grad = e_cpu;
    }
    for (int o = 0; o < g.noutputs; o++) free(d_outs[o]);
    free(init);
    for (int k = 0; k < 4; k++) side_free(all[k], &g);
    for (int o = 0; o < g.noutputs; o++) free(full[o]);
    free(in);
    free(params);
    free(state);
    zt_nn_graph_free(&g);
}

/* The Winograd weight gradient alone against the direct sum in doubles on
 * the same bf16 inputs, on even, odd and 1x1 boards, with one and two
 * threads, 64 -> 64 channels and 80 -> 16 (a partial block of input
 * channels), added to a gradient already there. V and dM are rounded to
 * bf16 (2^-9 relative each) before their products, as the forward conv
 * rounds V and U: the relative L2 error is held to 2 %. With `fma` they
 * stay fp32 and the bound is 0.1 %. On more than one thread, threads claim
 * the slots as they go: a second call must give the same bits. */
static void winograd_grad_case(zt_rng *r, int B, int h, int w, int cin, int cout, int threads,
                               bool fma)
{
    size_t nx = (size_t)B * h * w * cin, ny = (size_t)B * h * w * cout;
    size_t nw = (size_t)cout * 9 * cin;
    uint16_t *x = zt_xmalloc(nx * sizeof *x), *dy = zt_xmalloc(ny * sizeof *dy);
    float *grad = zt_xmalloc(nw * sizeof *grad);
    void *scratch = zt_aligned_alloc(64, zt_winograd_grad_scratch_size(cin, cout, threads, fma));
    for (size_t e = 0; e < nx; e++) x[e] = zt_bf16_from_f32((float)zt_rng_normal(r));
    for (size_t e = 0; e < ny; e++) dy[e] = zt_bf16_from_f32((float)zt_rng_normal(r));
    for (size_t e = 0; e < nw; e++) grad[e] = 1.0f;
    zt_winograd_grad c = {B, h, w, cin, cout, x, dy, grad, fma, threads, scratch};
    zt_winograd_grad_weights(&c);
    double err = 0, norm = 0;
    for (int o = 0; o < cout; o++)
        for (int kh = 0; kh < 3; kh++)
            for (int kw = 0; kw < 3; kw++)
                for (int i = 0; i < cin; i++) {
                    double want = 0;
                    for (int n = 0; n < B; n++)
                        for (int y = 0; y < h; y++)
                            for (int xx = 0; xx < w; xx++) {
                                int sy = y + kh - 1, sx = xx + kw - 1;
                                if (sy < 0 || sy >= h || sx < 0 || sx >= w) continue;
                                size_t at_y = (((size_t)n * h + y) * w + xx) * cout + o;
                                size_t at_x = (((size_t)n * h + sy) * w + sx) * cin + i;
                                want += (double)zt_f32_from_bf16(dy[at_y]) *
                                        zt_f32_from_bf16(x[at_x]);
                            }
                    double got = grad[(((size_t)o * 3 + kh) * 3 + kw) * cin + i] - 1.0;
                    err += (got - want) * (got - want);
                    norm += want * want;
                }
    double rel = sqrt(err / (norm > 0 ? norm : 1));
    CHECK(rel < (fma ? 0.001 : 0.02),
          "winograd%s weight gradient %dx%d %d->%d, %d threads: relative L2 error %.3g",
          fma ? " fma" : "", h, w, cin, cout, threads, rel);
    if (rel > worst_wgrad[fma]) worst_wgrad[fma] = rel;
    if (threads > 1) {
        float *again = zt_xmalloc(nw * sizeof *again);
        for (size_t e = 0; e < nw; e++) again[e] = 1.0f;
        c.grad = again;
        zt_winograd_grad_weights(&c);
        CHECK(memcmp(again, grad, nw * sizeof *grad) == 0,
              "winograd%s weight gradient %dx%d batch %d, %d threads: a second call differs",
              fma ? " fma" : "", h, w, B, threads);
        free(again);
    }
    free(x);
    free(dy);
    free(grad);
    zt_aligned_free(scratch);
}

/* The Winograd conv on 2 and 3 threads, which claim its blocks as they go,
 * gives one thread's bits: each output comes from one block's products,
 * summed in the same order whoever runs it. 40 boards of 6x7: 480 tiles. */
static void winograd_threads_case(zt_rng *r, bool fma)
{
    enum { B = 40, H = 6, W = 7, C = 64 };
    size_t n = (size_t)B * H * W * C, nw = (size_t)C * 9 * C;
    uint16_t *x = zt_xmalloc(n * sizeof *x), *y1 = zt_xmalloc(n * sizeof *y1);
    uint16_t *yt = zt_xmalloc(n * sizeof *yt);
    float *wt = zt_xmalloc(nw * sizeof *wt), bias[C];
    for (size_t e = 0; e < n; e++) x[e] = zt_bf16_from_f32((float)zt_rng_normal(r));
    for (size_t e = 0; e < nw; e++) wt[e] = (float)(0.1 * zt_rng_normal(r));
    for (int o = 0; o < C; o++) bias[o] = (float)(0.1 * zt_rng_normal(r));
    void *u = zt_aligned_alloc(64, zt_winograd_weights_bytes(C, C, fma));
    zt_winograd_pack_weights(wt, C, C, false, fma, u);
    void *scratch = zt_aligned_alloc(64, zt_winograd_scratch_size(C, C, 3, fma));
    for (int threads = 1; threads <= 3; threads++) {
        zt_winograd_conv c = {.batch = B,
                              .h = H,
                              .w = W,
                              .cin = C,
                              .cout = C,
                              .src = x,
                              .u = u,
                              .bias = bias,
                              .dst = threads == 1 ? y1 : yt,
                              .relu = true,
                              .fma = fma,
                              .threads = threads,
                              .scratch = scratch};
        zt_winograd_run(&c);
        if (threads > 1)
            CHECK(memcmp(y1, yt, n * sizeof *yt) == 0,
                  "winograd%s conv on %d threads differs from one thread's", fma ? " fma" : "",
                  threads);
    }
    zt_aligned_free(scratch);
    zt_aligned_free(u);
    free(x);
    free(y1);
    free(yt);
    free(wt);
}

/* The bf16 training batch norm kernels (bnorm.h) against the same algebra in
 * doubles on the same bf16 inputs: 1000 rows (not a whole number of the
 * kernel's fp32 runs), 48 channels whose means sit 50 standard deviations
 * from zero (the statistics must not cancel), the fused ReLU's mask, and a
 * backward that adds into dx and into dgamma/dbeta. Outputs are bf16, so
 * each may be off by its rounding (up to 2^-8 relative, 8 significant bits)
 * plus fp32 noise, given 1e-3. Then the same on 2 and 3 threads (3 blocks
 * of 16 channels split 1 + 2 and 1 + 1 + 1) must match one thread bit for
 * bit: each channel's sums are taken by one thread in row order. */
static void bnorm_case(zt_rng *r)
{
    enum { ROWS = 1000, C = 48 };
    uint16_t *x = zt_xmalloc(ROWS * C * sizeof *x), *y = zt_xmalloc(ROWS * C * sizeof *y);
    uint16_t *dy = zt_xmalloc(ROWS * C * sizeof *dy), *dx = zt_xmalloc(ROWS * C * sizeof *dx);
    float *dx0 = zt_xmalloc(ROWS * C * sizeof *dx0);
    float gamma[C], beta[C], mean[C], var[C], dgamma[C], dbeta[C];
    double m[C], v[C];
    for (int c = 0; c < C; c++) {
        gamma[c] = (float)(1 + 0.3 * zt_rng_normal(r));
        beta[c] = (float)(0.3 * zt_rng_normal(r));
        dgamma[c] = dbeta[c] = 1.0f;
    }
    for (int e = 0; e < ROWS * C; e++) {
        x[e] = zt_bf16_from_f32((float)(50 + zt_rng_normal(r)));
        dy[e] = zt_bf16_from_f32((float)zt_rng_normal(r));
        dx0[e] = zt_bf16_round((float)zt_rng_normal(r));
        dx[e] = zt_bf16_from_f32(dx0[e]);
    }
    uint16_t *dx_in = zt_xmalloc(ROWS * C * sizeof *dx_in);
    memcpy(dx_in, dx, ROWS * C * sizeof *dx);
    zt_bnorm_forward(x, y, ROWS, C, gamma, beta, ZT_NN_BN_EPS, true, mean, var, 1);
    double worst_stat = 0, worst_y = 0;
    for (int c = 0; c < C; c++) {
        double s = 0, q = 0;
        for (int i = 0; i < ROWS; i++) s += zt_f32_from_bf16(x[i * C + c]);
        m[c] = s / ROWS;
        for (int i = 0; i < ROWS; i++) {
            double d = zt_f32_from_bf16(x[i * C + c]) - m[c];
            q += d * d;
        }
        v[c] = q / ROWS;
        double e = fmax(fabs(mean[c] - m[c]) / sqrt(v[c]), fabs(var[c] - v[c]) / v[c]);
        if (e > worst_stat) worst_stat = e;
        for (int i = 0; i < ROWS; i++) {
            double want = (zt_f32_from_bf16(x[i * C + c]) - m[c]) * gamma[c] /
                              sqrt(v[c] + ZT_NN_BN_EPS) + beta[c];
            want = want > 0 ? want : 0;
            double err = fabs(zt_f32_from_bf16(y[i * C + c]) - want) / (fabs(want) + 0.01);
            if (err > worst_y) worst_y = err;
        }
    }
    CHECK(worst_stat < 1e-4, "bnorm: statistics off by %.3g of a standard deviation", worst_stat);
    CHECK(worst_y < 1.0 / 256 + 1e-3, "bnorm: forward off by %.3g relative", worst_y);

    zt_bnorm_backward(x, y, dy, dx, true, ROWS, C, gamma, mean, var, ZT_NN_BN_EPS, dgamma, dbeta,
                      1);
    double worst_p = 0, worst_dx = 0;
    for (int c = 0; c < C; c++) {
        double inv = 1 / sqrt(v[c] + ZT_NN_BN_EPS), db = 0, dg = 0, scale = 0;
        for (int i = 0; i < ROWS; i++) {
            int e = i * C + c;
            double g = zt_f32_from_bf16(y[e]) > 0 ? zt_f32_from_bf16(dy[e]) : 0;
            db += g;
            dg += g * (zt_f32_from_bf16(x[e]) - m[c]) * inv;
            scale += fabs(g);
        }
        worst_p = fmax(worst_p, fabs(dbeta[c] - 1 - db) / scale);
        worst_p = fmax(worst_p, fabs(dgamma[c] - 1 - dg) / scale);
        for (int i = 0; i < ROWS; i++) {
            int e = i * C + c;
            double g = zt_f32_from_bf16(y[e]) > 0 ? zt_f32_from_bf16(dy[e]) : 0;
            double xhat = (zt_f32_from_bf16(x[e]) - m[c]) * inv;
            double want = dx0[e] + gamma[c] * inv * (g - db / ROWS - xhat * dg / ROWS);
            double err = fabs(zt_f32_from_bf16(dx[e]) - want) / (fabs(want) + 0.01);
            if (err > worst_dx) worst_dx = err;
        }
    }
    CHECK(worst_p < 1e-5, "bnorm: dgamma/dbeta off by %.3g of sum |dy|", worst_p);
    CHECK(worst_dx < 1.0 / 256 + 1e-3, "bnorm: dx off by %.3g relative", worst_dx);
    printf("test_nn_cpu: bnorm kernels: statistics %.2g, forward %.2g, dgamma/dbeta %.2g, "
           "dx %.2g\n",
           worst_stat, worst_y, worst_p, worst_dx);

    uint16_t *yt = zt_xmalloc(ROWS * C * sizeof *yt), *dxt = zt_xmalloc(ROWS * C * sizeof *dxt);
    for (int threads = 2; threads <= 3; threads++) {
        float mt[C], vt[C], dgt[C], dbt[C];
        for (int c = 0; c < C; c++) dgt[c] = dbt[c] = 1.0f;
        memcpy(dxt, dx_in, ROWS * C * sizeof *dxt);
        zt_bnorm_forward(x, yt, ROWS, C, gamma, beta, ZT_NN_BN_EPS, true, mt, vt, threads);
        zt_bnorm_backward(x, yt, dy, dxt, true, ROWS, C, gamma, mt, vt, ZT_NN_BN_EPS, dgt, dbt,
                          threads);
        CHECK(memcmp(mt, mean, sizeof mt) == 0 && memcmp(vt, var, sizeof vt) == 0,
              "bnorm: %d threads' statistics differ from one thread's", threads);
        CHECK(memcmp(yt, y, ROWS * C * sizeof *y) == 0,
              "bnorm: %d threads' forward differs from one thread's", threads);
        CHECK(memcmp(dgt, dgamma, sizeof dgt) == 0 && memcmp(dbt, dbeta, sizeof dbt) == 0,
              "bnorm: %d threads' dgamma/dbeta differ from one thread's", threads);
        CHECK(memcmp(dxt, dx, ROWS * C * sizeof *dx) == 0,
              "bnorm: %d threads' dx differs from one thread's", threads);
    }
    free(yt);
    free(dxt);
    free(dx_in);
    free(x);
    free(y);
    free(dy);
    free(dx);
    free(dx0);
}

int main(void)
{
    const zt_nn_backend *cpu;
    if (zt_nn_backend_find("cpu", &cpu) != ZT_OK) {
        printf("test_nn_cpu: SKIP (built without the oneDNN backend)\n");
        return 0;
    }
    uint64_t seed = 20240611;
    const char *env = getenv("ZT_SEED");
    if (env) seed = strtoull(env, NULL, 10);
    printf("test_nn_cpu: seed %llu\n", (unsigned long long)seed);
    zt_rng r;
    zt_rng_seed(&r, seed, 0);
    bool bf16 = cpu->supports(ZT_PRECISION_BF16);
    CHECK(cpu->supports(ZT_PRECISION_FP32), "fp32 unsupported");
    CHECK(cpu->auto_precision() == (bf16 ? ZT_PRECISION_BF16 : ZT_PRECISION_FP32),
          "auto precision is not the fastest supported");
    if (!bf16) printf("test_nn_cpu: bf16 SKIPPED (no AVX512_BF16 here)\n");

    net_case cases[4];
    memset(cases, 0, sizeof cases);
    cases[0].name = "resnet 6x7x2 ch16 x2 scalar";
    zt_net_config_default(&cases[0].cfg, 6, 7, 2, 7);
    cases[0].cfg.channels = 16;
    cases[0].cfg.blocks = 2;
    cases[0].cfg.value_hidden = 16;
    cases[1].name = "resnet 5x5x3 ch8 x1 wdl";
    zt_net_config_default(&cases[1].cfg, 5, 5, 3, 26);
    cases[1].cfg.channels = 8;
    cases[1].cfg.blocks = 1;
    cases[1].cfg.value_kind = ZT_VALUE_WDL;
    cases[1].cfg.policy_channels = 3;
    cases[1].cfg.value_channels = 2;
    cases[1].cfg.value_hidden = 8;
    cases[2].name = "mlp 40 layernorm 2x32";
    zt_net_config_default(&cases[2].cfg, 1, 1, 40, 26);
    cases[2].cfg.mlp_hidden = 32;
    cases[2].cfg.mlp_layers = 2;
    cases[2].cfg.value_hidden = 16;
    cases[3].name = "mlp 40 batchnorm 2x32 wdl";
    cases[3].cfg = cases[2].cfg;
    cases[3].cfg.mlp_norm = ZT_NORM_BATCH;
    cases[3].cfg.value_kind = ZT_VALUE_WDL;
    for (int i = 0; i < 4; i++) {
        MUST(zt_net_config_check(&cases[i].cfg));
        run_case(&cases[i], cpu, bf16, &r);
    }
    if (bf16 && zt_winograd_supported()) {
        const int boards[5][2] = {{6, 7}, {3, 3}, {8, 8}, {9, 9}, {1, 1}};
        for (int fma = 0; fma < 2; fma++) {
            wino_fma = fma;
            for (int b = 0; b < 5; b++)
                for (int block = 0; block < 2; block++)
                    winograd_conv_case(cpu, &r, boards[b][0], boards[b][1], block);
            winograd_net_case(cpu, &r);
            for (int b = 0; b < 5; b++)
                for (int threads = 1; threads <= 2; threads++) {
                    winograd_grad_case(&r, 3, boards[b][0], boards[b][1], 64, 64, threads, fma);
                    winograd_grad_case(&r, 3, boards[b][0], boards[b][1], 80, 16, threads, fma);
                }
            /* Enough tiles for every slot (15 blocks on 2 and 3 threads). */
            for (int threads = 2; threads <= 3; threads++)
                winograd_grad_case(&r, 40, 6, 7, 64, 64, threads, fma);
            winograd_threads_case(&r, fma);
        }
        printf("test_nn_cpu: Winograd weight gradient: worst relative L2 error %.2g (bf16 dot "
               "products), %.2g (fp32 FMAs); this core's products run faster on %s\n",
               worst_wgrad[0], worst_wgrad[1], zt_winograd_fma_faster() ? "FMAs" : "dot products");
        bnorm_case(&r);
    } else if (bf16) {
        printf("test_nn_cpu: Winograd SKIPPED (no AVX-512 BW/VL/DQ here)\n");
    }
    printf("test_nn_cpu: worst relative error fp32 forward %.2g, gradients %.2g", worst_fp32_fwd,
           worst_fp32_grad);
    if (bf16)
        printf("; bf16 forward %.2g, gradients (L2) %.2g (reference's bf16 emulation: %.2g, %.2g)",
               worst_bf16_fwd, worst_bf16_grad, worst_emu_fwd, worst_emu_grad);
    printf("\n");
    if (failures) {
        printf("test_nn_cpu: %d FAILED\n", failures);
        return 1;
    }
    printf("test_nn_cpu: all passed\n");
    return 0;
}
