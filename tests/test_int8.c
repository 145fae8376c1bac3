/* Tests of int8 inference (src/nn/cpu/int8.c) against the fp32 reference
 * backend on every net shape the configs use (Connect Four and sim resnets,
 * tic-tac-toe and backgammon MLPs, with WDL and batch-norm variants), with
 * random weights, randomised batch-norm statistics and observations of
 * random-play positions: calibrated on 256 positions, every batch size 1 to
 * 70 of 70 others is within the stated bounds of fp32 and gives each sample
 * bit for bit what the batch of 70 gives it; and the refusals: training an
 * int8 net, a forward before calibration or after the weights change, and
 * malformed ranges; ranges copied to a second net reproduce the first's
 * outputs exactly. Every net is checked twice: with int8 convs and wide
 * dense layers on oneDNN (ZT_INT8_DNNL=1, on AMX or not), and on our VNNI
 * kernel alone (ZT_INT8_DNNL=0).
 * Skips (exit 0) without the oneDNN backend or without AVX512_VNNI. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/rng.h"
#include "game/game.h"
#include "game/sample.h"
#include "nn/backend.h"
#include "nn/cpu/int8.h"
#include "nn/nn.h"
#include "zt_test.h"

#define MUST(expr)                                                                                 \
    do {                                                                                           \
        zt_status s_ = (expr);                                                                     \
        if (s_ != ZT_OK) {                                                                         \
            printf("FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, #expr, zt_error_message());         \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* Bounds against fp32, over all samples of a net: policy logits within
 * POLICY_TOL of the largest |logit| (and at most 1 in 100 top-1 moves
 * changed where the fp32 top two differ by more than POLICY_TOL of it),
 * scalar values (tanh) within VALUE_TOL absolute and VALUE_MEAN_TOL on
 * average, WDL logits within WDL_TOL of their largest. Random nets are
 * harder than trained ones (their activations are not normalised); int8's
 * worst errors, printed beside bf16's, are 2-7x bf16's own distance from
 * fp32. A random net's value can be far from fp32 in both precisions
 * (Connect Four's eight-plane head: 0.23 in int8 and 0.09 in bf16 at
 * worst), so the value bounds grow to BF16_FACTOR times bf16's distance
 * where that is larger. */
#define POLICY_TOL 0.10
#define VALUE_TOL 0.10
#define VALUE_MEAN_TOL 0.03
#define BF16_FACTOR 3.0
#define WDL_TOL 0.20
#define CAL_N 256
#define TEST_N 70

typedef struct net_case {
    const char *game;
    const char *what;
    void (*adjust)(zt_net_config *cfg);
} net_case;

static void c4_default(zt_net_config *c)
{
    c->value_channels = 8; /* configs/connect4.ini: 64 x 5, eight value planes */
}

static void c4_wdl(zt_net_config *c)
{
    c->value_kind = ZT_VALUE_WDL;
    c->channels = 32;
    c->blocks = 2;
}

static void sim_net(zt_net_config *c)
{
    c->channels = 32; /* configs/sim.ini */
    c->blocks = 3;
}

static void ttt_net(zt_net_config *c)
{
    c->kind = ZT_NET_MLP; /* configs/tictactoe.ini */
    c->mlp_hidden = 128;
    c->mlp_layers = 2;
    c->mlp_norm = ZT_NORM_LAYER;
}

static void ttt_bn(zt_net_config *c)
{
    ttt_net(c);
    c->mlp_norm = ZT_NORM_BATCH;
    c->value_kind = ZT_VALUE_WDL;
}

static void bg_net(zt_net_config *c)
{
    (void)c; /* configs/backgammon.ini: the default MLP 256 x 3, layer norm */
}

static const net_case cases[] = {
    {"connect4", "resnet 64x5 (connect4.ini)", c4_default},
    {"connect4", "resnet 32x2 wdl", c4_wdl},
    {"sim", "resnet 32x3 (sim.ini)", sim_net},
    {"tictactoe", "mlp 128x2 layer norm (tictactoe.ini)", ttt_net},
    {"tictactoe", "mlp 128x2 batch norm, wdl", ttt_bn},
    {"backgammon", "mlp 256x3 layer norm (backgammon.ini)", bg_net},
};

/* He-normal weights, then batch-norm statistics and gains away from their
 * initial values, so that folding them matters. */
static void random_weights(zt_net *net, zt_rng *rng)
{
    zt_net_init(net, rng);
    for (int i = 0; i < zt_net_tensor_count(net); i++) {
        zt_net_tensor t = zt_net_tensor_at(net, i);
        const char *dot = strrchr(t.name, '.');
        bool norm = strstr(t.name, "bn") || strstr(t.name, "norm");
        if (!norm || t.ndim != 1) continue;
        for (size_t e = 0; e < t.count; e++) {
            double u = zt_rng_uniform(rng);
            if (strcmp(dot, ".running_mean") == 0) t.data[e] = (float)(0.2 * (u - 0.5));
            else if (strcmp(dot, ".running_var") == 0) t.data[e] = (float)(0.5 + u);
            else if (strcmp(dot, ".weight") == 0) t.data[e] = (float)(0.7 + 0.6 * u);
            else if (strcmp(dot, ".bias") == 0) t.data[e] = (float)(0.2 * (u - 0.5));
        }
    }
    zt_net_params_changed(net);
}

static void copy_weights(zt_net *dst, const zt_net *src)
{
    for (int i = 0; i < zt_net_tensor_count(src); i++) {
        zt_net_tensor a = zt_net_tensor_at(src, i), b = zt_net_tensor_at(dst, i);
        memcpy(b.data, a.data, a.count * sizeof(float));
    }
    zt_net_params_changed(dst);
}

/* The worst and the mean distance of n values from the reference's: absolute
 * for scalar values, in units of scale for WDL logits. A NaN makes the worst
 * NaN, which no bound passes. */
static void value_error(const float *got, const float *want, size_t n, double scale, double *worst,
                        double *mean)
{
    *worst = *mean = 0;
    for (size_t e = 0; e < n; e++) {
        double d = fabs((double)got[e] - want[e]) / scale;
        if (!(d <= *worst)) *worst = d;
        *mean += d / (double)n;
    }
}

static int argmax(const float *x, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

static void run_case(const net_case *nc, uint64_t seed)
{
    zt_game *g;
    MUST(zt_game_new(nc->game, NULL, &g));
    zt_net_config cfg;
    zt_net_config_default(&cfg, g->obs_shape[0], g->obs_shape[1], g->obs_shape[2], g->num_actions);
    nc->adjust(&cfg);
    zt_rng rng;
    zt_rng_seed(&rng, seed, 0);
    zt_net *ref, *q;
    MUST(zt_net_new(&cfg, "ref", ZT_PRECISION_FP32, 1, &ref));
    MUST(zt_net_new(&cfg, "cpu", ZT_PRECISION_INT8, 2, &q));
    random_weights(ref, &rng);
    copy_weights(q, ref);
    int A = cfg.num_actions, V = zt_net_value_size(&cfg);
    size_t per = (size_t)cfg.in_h * cfg.in_w * cfg.in_c;
    float *obs = zt_xmalloc((size_t)(CAL_N + TEST_N) * per * sizeof(float));
    zt_game_sample_observations(g, &rng, CAL_N + TEST_N, obs, NULL);
    const float *test = obs + (size_t)CAL_N * per;
    float *rp = zt_xmalloc((size_t)TEST_N * A * sizeof(float)), *rv = zt_xmalloc(TEST_N * 3 * sizeof(float));
    float *qp = zt_xmalloc((size_t)TEST_N * A * sizeof(float)), *qv = zt_xmalloc(TEST_N * 3 * sizeof(float));
    float *fp = zt_xmalloc((size_t)TEST_N * A * sizeof(float)), *fv = zt_xmalloc(TEST_N * 3 * sizeof(float));

    /* Before calibration: a one-line refusal. */
    CHECK(zt_net_forward(q, 1, test, qp, qv) == ZT_ERR_INVALID, "%s: uncalibrated forward ran",
          nc->what);
    CHECK(strstr(zt_error_message(), "not calibrated") != NULL, "%s: message '%s'", nc->what,
          zt_error_message());
    CHECK(!zt_net_ranges_get(q, NULL), "%s: ranges before calibration", nc->what);

    MUST(zt_net_calibrate(q, CAL_N, obs));
    MUST(zt_net_forward(ref, TEST_N, test, rp, rv));
    MUST(zt_net_forward(q, TEST_N, test, fp, fv));
    double pscale = 1e-3, vscale = 1e-3;
    for (size_t e = 0; e < (size_t)TEST_N * A; e++) pscale = fmax(pscale, fabs(rp[e]));
    for (size_t e = 0; e < (size_t)TEST_N * V; e++) vscale = fmax(vscale, fabs(rv[e]));
    double worst_p = 0, worst_v = 0, mean_v = 0, bf_p = 0, bf_v = 0, bf_mean_v = 0;
    zt_net *bf;
    if (zt_net_new(&cfg, "cpu", ZT_PRECISION_BF16, 1, &bf) == ZT_OK) {
        copy_weights(bf, ref);
        MUST(zt_net_forward(bf, TEST_N, test, qp, qv));
        for (size_t e = 0; e < (size_t)TEST_N * A; e++) bf_p = fmax(bf_p, fabs(qp[e] - rp[e]) / pscale);
        value_error(qv, rv, (size_t)TEST_N * V, V == 3 ? vscale : 1.0, &bf_v, &bf_mean_v);
        zt_net_free(bf);
    }
    value_error(fv, rv, (size_t)TEST_N * V, V == 3 ? vscale : 1.0, &worst_v, &mean_v);
    int agree = 0, decided = 0;
    bool same = true;
    for (int B = 1; B <= TEST_N; B++) {
        MUST(zt_net_forward(q, B, test, qp, qv));
        same = same && memcmp(qp, fp, (size_t)B * A * sizeof(float)) == 0 &&
               memcmp(qv, fv, (size_t)B * V * sizeof(float)) == 0;
    }
    for (int n = 0; n < TEST_N; n++) {
        for (int a = 0; a < A; a++) {
            double d = fabs((double)fp[n * A + a] - rp[n * A + a]) / pscale;
            if (!(d <= worst_p)) worst_p = d;
        }
        int best = argmax(rp + n * A, A);
        double second = -INFINITY;
        for (int a = 0; a < A; a++)
            if (a != best && rp[n * A + a] > second) second = rp[n * A + a];
        if (rp[n * A + best] - second > POLICY_TOL * pscale) {
            decided++;
            agree += argmax(fp + n * A, A) == best;
        }
    }
    printf("  %-38s policy %.4f of %.2f, value %.4f%s (mean %.4f), top-1 %d/%d; "
           "bf16: %.4f, %.4f (mean %.4f)\n",
           nc->what, worst_p, pscale, worst_v, V == 3 ? " of scale" : " abs", mean_v, agree,
           decided, bf_p, bf_v, bf_mean_v);
    CHECK(worst_p <= POLICY_TOL, "%s: policy error %.4f", nc->what, worst_p);
    double value_tol = fmax(V == 3 ? WDL_TOL : VALUE_TOL, BF16_FACTOR * bf_v);
    double mean_tol = fmax(VALUE_MEAN_TOL, BF16_FACTOR * bf_mean_v);
    CHECK(worst_v <= value_tol, "%s: value error %.4f > %.4f", nc->what, worst_v, value_tol);
    CHECK(V == 3 || mean_v <= mean_tol, "%s: mean value error %.4f > %.4f", nc->what, mean_v,
          mean_tol);
    CHECK(agree * 100 >= decided * 99, "%s: top-1 %d of %d", nc->what, agree, decided);
    CHECK(same, "%s: a sample's outputs depend on the batch size", nc->what);

    /* Ranges carried to a second net of the same weights: the same outputs. */
    size_t nr = zt_net_ranges_size(q);
    CHECK(nr > 0, "%s: no ranges", nc->what);
    float *ranges = zt_xmalloc(nr * sizeof(float));
    CHECK(zt_net_ranges_get(q, ranges), "%s: ranges_get", nc->what);
    zt_net *q2;
    MUST(zt_net_new(&cfg, "cpu", ZT_PRECISION_INT8, 1, &q2));
    copy_weights(q2, ref);
    MUST(zt_net_ranges_set(q2, ranges));
    MUST(zt_net_forward(q2, TEST_N, test, qp, qv));
    CHECK(memcmp(qp, fp, (size_t)TEST_N * A * sizeof(float)) == 0 &&
              memcmp(qv, fv, (size_t)TEST_N * V * sizeof(float)) == 0,
          "%s: ranges set on another net (1 thread) give other outputs", nc->what);
    /* Bad ranges are refused; new weights drop the ranges. */
    ranges[1] = -1.0f;
    CHECK(zt_net_ranges_set(q2, ranges) == ZT_ERR_INVALID, "%s: a range without 0 accepted",
          nc->what);
    ranges[1] = NAN;
    CHECK(zt_net_ranges_set(q2, ranges) == ZT_ERR_INVALID, "%s: a NaN range accepted", nc->what);
    zt_net_params_changed(q2);
    CHECK(zt_net_forward(q2, 1, test, qp, qv) == ZT_ERR_INVALID,
          "%s: forward ran on ranges of old weights", nc->what);
    zt_net_free(q2);
    free(ranges);

    free(obs);
    free(rp), free(rv), free(qp), free(qv), free(fp), free(fv);
    zt_net_free(ref);
    zt_net_free(q);
    zt_game_free(g);
}

static void test_refusals(void)
{
    zt_precision p;
    CHECK(zt_precision_parse("int8", &p) == ZT_OK && p == ZT_PRECISION_INT8, "parse int8");
    CHECK(strcmp(zt_precision_name(ZT_PRECISION_INT8), "int8") == 0, "name");
    zt_net_config cfg;
    zt_net_config_default(&cfg, 6, 7, 3, 7);
    cfg.channels = 16;
    cfg.blocks = 1;
    zt_net *net;
    MUST(zt_net_new(&cfg, "cpu", ZT_PRECISION_INT8, 1, &net));
    zt_train_config tc;
    zt_train_config_default(&tc);
    zt_trainer *t = NULL;
    CHECK(zt_trainer_new(net, &tc, &t) == ZT_ERR_UNSUPPORTED && !t, "an int8 trainer was made");
    CHECK(strstr(zt_error_message(), "int8") != NULL, "message '%s'", zt_error_message());
    const zt_nn_backend *be = zt_net_backend(net);
    CHECK(be->reserve(zt_net_plan(net), 4, true) == ZT_ERR_UNSUPPORTED, "training reserve ran");
    float obs[6 * 7 * 3] = {0}, out[7], v, *outs[2] = {out, &v};
    CHECK(be->forward(zt_net_plan(net), 1, obs, outs, true, false) == ZT_ERR_UNSUPPORTED,
          "training forward ran");
    CHECK(be->backward(zt_net_plan(net), 1, (const float *const *)outs, out, NULL) ==
              ZT_ERR_UNSUPPORTED,
          "backward ran");
    /* AUTO never means int8 for a net: it needs ranges. */
    zt_net *a;
    MUST(zt_net_new(&cfg, "cpu", ZT_PRECISION_AUTO, 1, &a));
    CHECK(zt_net_precision(a) != ZT_PRECISION_INT8, "auto chose int8");
    CHECK(zt_net_ranges_size(a) == 0, "a %s net has ranges", zt_precision_name(zt_net_precision(a)));
    MUST(zt_net_calibrate(a, 1, obs)); /* a no-op there */
    zt_net_free(a);
    zt_net_free(net);
    /* The reference backend has no int8. */
    CHECK(zt_net_new(&cfg, "ref", ZT_PRECISION_INT8, 1, &a) == ZT_ERR_UNSUPPORTED, "ref int8");
}

int main(void)
{
    const zt_nn_backend *be;
    if (zt_nn_backend_find("cpu", &be) != ZT_OK) {
        printf("test_int8: skipped (built without the oneDNN backend)\n");
        return 0;
    }
    if (!zt_int8_supported()) {
        printf("test_int8: skipped (this CPU has no AVX512_VNNI)\n");
        return 0;
    }
    uint64_t seed = 20261126;
    printf("test_int8: seed %llu\n", (unsigned long long)seed);
    test_refusals();
    /* Every net with the trunk's convs and the dense layers of 128 outputs
     * or more on oneDNN's int8 primitives (the default on AMX; elsewhere
     * ZT_INT8_DNNL=1 asks for them), then on our VNNI kernel alone. */
    setenv("ZT_INT8_DNNL", "1", 1);
    printf("  oneDNN where it may run (ZT_INT8_DNNL=1):\n");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i], seed + i);
    setenv("ZT_INT8_DNNL", "0", 1);
    printf("  our kernel alone (ZT_INT8_DNNL=0):\n");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i], seed + i);
    return zt_test_finish("test_int8");
}
