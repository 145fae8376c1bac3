/* Tests of the nn layer on the reference backend: every op's backward and
 * whole nets' gradients against central finite differences, the optimizers
 * driving a fixed synthetic set's loss near zero, schedules, clipping, batch
 * norm folding, bf16 conversion and the bf16 forward's distance from fp32;
 * the equity head: its gradient against finite differences, its consistency
 * caps, cubeless equity and its targets against hand computations; a
 * forward's rows independent of the batch's split, also when the call goes
 * in halves (zt_net_forward_submit and _wait, two slots in flight); the
 * architecture's text form round-trips, chance values included. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/rng.h"
#include "nn/backend.h"
#include "nn/nn.h"

#include "zt_grad_test.h"
#include "zt_test.h"

#define CHECK_OK(expr)                                                                             \
    do {                                                                                           \
        zt_status s_ = (expr);                                                                     \
        CHECK(s_ == ZT_OK, "%s", zt_error_message());                                              \
    } while (0)

static uint64_t seed;

static void fill_normal(zt_rng *r, float *x, size_t n, double scale)
{
    for (size_t i = 0; i < n; i++) x[i] = (float)(scale * zt_rng_normal(r));
}

/* ---- layer gradient checks through the backend interface ---- */

/* A graph run directly on the reference backend, with loss = sum of each
 * output times fixed random weights (so every output element matters). */
typedef struct harness {
    zt_nn_graph g;
    float *params, *state, *in, *d_in, *grads;
    float *outs[4], *proj[4];
    size_t out_n[4], in_n;
    zt_nn_plan *plan;
    int B;
} harness;

static void harness_init(harness *h, int B, zt_rng *r)
{
    const zt_nn_graph *g = &h->g;
    h->B = B;
    h->params = zt_xcalloc(g->param_floats + 1, sizeof(float));
    h->state = zt_xcalloc(g->state_floats + 1, sizeof(float));
    h->grads = zt_xcalloc(g->param_floats + 1, sizeof(float));
    for (int i = 0; i < g->nparams; i++) {
        const zt_nn_param *p = &g->params[i];
        float *d = (p->trainable ? h->params : h->state) + p->offset;
        for (size_t e = 0; e < p->count; e++)
            d[e] = p->fan_in > 0 ? (float)(zt_rng_normal(r) / sqrt(p->fan_in))
                                 : p->init_value + (float)(0.3 * zt_rng_normal(r));
        if (!p->trainable) /* running variances must stay positive */
            for (size_t e = 0; e < p->count; e++) d[e] = 0.5f + (float)zt_rng_uniform(r);
    }
    h->in_n = (size_t)B * zt_nn_shape_size(g->tensors[g->input]);
    h->in = zt_xmalloc(h->in_n * sizeof(float));
    h->d_in = zt_xmalloc(h->in_n * sizeof(float));
    fill_normal(r, h->in, h->in_n, 1.0);
    for (int o = 0; o < g->noutputs; o++) {
        h->out_n[o] = (size_t)B * zt_nn_shape_size(g->tensors[g->outputs[o]]);
        h->outs[o] = zt_xmalloc(h->out_n[o] * sizeof(float));
        h->proj[o] = zt_xmalloc(h->out_n[o] * sizeof(float));
        fill_normal(r, h->proj[o], h->out_n[o], 1.0);
    }
    zt_status s = zt_nn_backend_ref.plan_new(g, h->params, h->state, ZT_PRECISION_FP32, 1, &h->plan);
    ZT_ASSERT(s == ZT_OK);
}

static void harness_free(harness *h)
{
    zt_nn_backend_ref.plan_free(h->plan);
    for (int o = 0; o < h->g.noutputs; o++) {
        free(h->outs[o]);
        free(h->proj[o]);
    }
    free(h->params);
    free(h->state);
    free(h->grads);
    free(h->in);
    free(h->d_in);
    zt_nn_graph_free(&h->g);
}

static double harness_loss(harness *h)
{
    zt_status s = zt_nn_backend_ref.forward(h->plan, h->B, h->in, h->outs, true, false);
    ZT_ASSERT(s == ZT_OK);
    double loss = 0;
    for (int o = 0; o < h->g.noutputs; o++)
        for (size_t e = 0; e < h->out_n[o]; e++) loss += (double)h->outs[o][e] * h->proj[o][e];
    return loss;
}

static void harness_backward(harness *h)
{
    harness_loss(h);
    memset(h->grads, 0, h->g.param_floats * sizeof(float));
    const float *d_outs[4] = {h->proj[0], h->proj[1], h->proj[2], h->proj[3]};
    zt_status s = zt_nn_backend_ref.backward(h->plan, h->B, d_outs, h->grads, h->d_in);
    ZT_ASSERT(s == ZT_OK);
}

static void check_tally(const char *what, const char *which, const fd_tally *t, double tol)
{
    CHECK(t->worst < tol, "%s: %s gradient error %.2e", what, which, t->worst);
    /* A kink near more than a few points means something else is wrong. */
    CHECK(t->skipped * 20 <= t->checked + t->skipped, "%s: %s: %d of %d points skipped", what,
          which, t->skipped, t->checked + t->skipped);
}

/* The five evaluations fd_compare needs, restoring *x. */
static void probe(harness *h, float *x, double eps, double f[5])
{
    static const double at[5] = {-1, -0.25, 0, 0.25, 1};
    float keep = *x;
    for (int k = 0; k < 5; k++) {
        *x = (float)(keep + at[k] * eps);
        f[k] = harness_loss(h);
    }
    *x = keep;
}

static void check_layer(const char *what, harness *h, double eps, double tol)
{
    harness_backward(h);
    fd_tally in = {0}, par = {0};
    double f[5];
    for (size_t i = 0; i < h->in_n; i++) {
        probe(h, &h->in[i], eps, f);
        fd_compare(&in, h->d_in[i], f, eps, tol);
    }
    check_tally(what, "input", &in, tol);
    for (size_t i = 0; i < h->g.param_floats; i++) {
        probe(h, &h->params[i], eps, f);
        fd_compare(&par, h->grads[i], f, eps, tol);
    }
    check_tally(what, "parameter", &par, tol);
}

/* Moves inputs away from ReLU's kink so a finite difference never straddles it. */
static void away_from_zero(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (fabsf(x[i]) < 0.05f) x[i] = x[i] < 0 ? -0.05f - x[i] : 0.05f + x[i];
}

static void test_layers(void)
{
    zt_rng r;
    zt_rng_seed(&r, seed, 1);
    const double eps = 1e-2, tol = 2e-3;
    harness h;

    zt_nn_graph_init(&h.g);
    int x = zt_nn_graph_input(&h.g, (zt_nn_shape){4, 3, 2});
    zt_nn_graph_output(&h.g, zt_nn_graph_conv(&h.g, "c", x, 3, 3, true));
    harness_init(&h, 2, &r);
    check_layer("conv 3x3", &h, eps, tol);
    harness_free(&h);

    zt_nn_graph_init(&h.g);
    x = zt_nn_graph_input(&h.g, (zt_nn_shape){3, 3, 3});
    zt_nn_graph_output(&h.g, zt_nn_graph_conv(&h.g, "c", x, 2, 1, false));
    harness_init(&h, 2, &r);
    check_layer("conv 1x1", &h, eps, tol);
    harness_free(&h);

    zt_nn_graph_init(&h.g);
    x = zt_nn_graph_input(&h.g, (zt_nn_shape){2, 2, 3});
    zt_nn_graph_output(&h.g, zt_nn_graph_bn(&h.g, "bn", x));
    harness_init(&h, 3, &r);
    check_layer("batch norm (training)", &h, eps, tol);
    harness_free(&h);

    zt_nn_graph_init(&h.g);
    x = zt_nn_graph_input(&h.g, (zt_nn_shape){1, 1, 5});
    zt_nn_graph_output(&h.g, zt_nn_graph_ln(&h.g, "ln", x));
    harness_init(&h, 3, &r);
    check_layer("layer norm", &h, eps, tol);
    harness_free(&h);

    zt_nn_graph_init(&h.g);
    x = zt_nn_graph_input(&h.g, (zt_nn_shape){2, 3, 2});
    zt_nn_graph_output(&h.g, zt_nn_graph_dense(&h.g, "fc", x, 4, true));
    harness_init(&h, 3, &r);
    check_layer("dense", &h, eps, tol);
    harness_free(&h);

    zt_nn_graph_init(&h.g);
    x = zt_nn_graph_input(&h.g, (zt_nn_shape){2, 2, 2});
    zt_nn_graph_output(&h.g, zt_nn_graph_relu(&h.g, x));
    harness_init(&h, 2, &r);
    away_from_zero(h.in, h.in_n);
    check_layer("relu", &h, 1e-3, tol);
    harness_free(&h);

    zt_nn_graph_init(&h.g);
    x = zt_nn_graph_input(&h.g, (zt_nn_shape){2, 2, 2});
    zt_nn_graph_output(&h.g, zt_nn_graph_tanh(&h.g, x));
    harness_init(&h, 2, &r);
    check_layer("tanh", &h, eps, tol);
    harness_free(&h);

    /* The skip: the input reaches the output both directly and through a conv. */
    zt_nn_graph_init(&h.g);
    x = zt_nn_graph_input(&h.g, (zt_nn_shape){3, 3, 2});
    int y = zt_nn_graph_conv(&h.g, "c", x, 2, 3, false);
    zt_nn_graph_output(&h.g, zt_nn_graph_add(&h.g, y, x));
    harness_init(&h, 2, &r);
    check_layer("residual add", &h, eps, tol);
    harness_free(&h);

    /* A whole residual block with two outputs feeding the loss. */
    zt_nn_graph_init(&h.g);
    x = zt_nn_graph_input(&h.g, (zt_nn_shape){3, 3, 2});
    x = zt_nn_block_conv_bn_relu(&h.g, "stem", x, 3, 3);
    x = zt_nn_block_residual(&h.g, "block", x);
    zt_nn_graph_output(&h.g, zt_nn_block_policy_head(&h.g, "policy", x, 2, 5));
    zt_nn_graph_output(&h.g, zt_nn_block_value_head(&h.g, "value", x, 1, 4, ZT_VALUE_SCALAR));
    harness_init(&h, 3, &r);
    check_layer("resnet blocks", &h, 1e-3, 2e-2);
    harness_free(&h);
}

/* ---- whole nets through the trainer ---- */

static void randomise_norms(zt_net *net, zt_rng *r);

typedef struct dataset {
    int B, A, V;
    size_t obs_n;
    float *obs, *policy, *value;
    uint8_t *legal;
} dataset;

/* Random positions; a random non-empty legal subset per position; a one-hot
 * policy target (or a soft one) on a legal action; random value targets. */
static void dataset_make(dataset *d, const zt_net_config *cfg, int B, bool soft, zt_rng *r)
{
    d->B = B;
    d->A = cfg->num_actions;
    d->V = zt_net_value_size(cfg);
    d->obs_n = (size_t)cfg->in_h * cfg->in_w * cfg->in_c;
    d->obs = zt_xmalloc((size_t)B * d->obs_n * sizeof(float));
    d->policy = zt_xcalloc((size_t)B * d->A, sizeof(float));
    d->legal = zt_xcalloc((size_t)B * d->A, 1);
    d->value = zt_xmalloc((size_t)B * d->V * sizeof(float));
    for (size_t i = 0; i < (size_t)B * d->obs_n; i++) d->obs[i] = (float)zt_rng_below(r, 2);
    for (int n = 0; n < B; n++) {
        uint8_t *l = d->legal + (size_t)n * d->A;
        float *p = d->policy + (size_t)n * d->A;
        int count = 0;
        for (int a = 0; a < d->A; a++) count += l[a] = zt_rng_below(r, 3) != 0;
        if (count == 0) l[zt_rng_below(r, (uint32_t)d->A)] = 1;
        double sum = 0;
        for (int a = 0; a < d->A; a++)
            if (l[a]) sum += p[a] = soft ? (float)zt_rng_uniform(r) + 0.1f : 0.0f;
        if (!soft) {
            int pick;
            do pick = (int)zt_rng_below(r, (uint32_t)d->A);
            while (!l[pick]);
            p[pick] = 1;
        } else {
            for (int a = 0; a < d->A; a++) p[a] = (float)(p[a] / sum);
        }
        float *v = d->value + (size_t)n * d->V;
        if (d->V == 1) {
            v[0] = (float)(1.8 * zt_rng_uniform(r) - 0.9);
        } else if (d->V == ZT_EQ_OUTPUTS) {
            /* a random result: +-1, 2 or 3 points */
            float points = (float)(1 + zt_rng_below(r, 3)) * (zt_rng_below(r, 2) ? 1.0f : -1.0f);
            zt_equity_targets(points, v);
        } else {
            v[0] = v[1] = v[2] = 0;
            v[zt_rng_below(r, 3)] = 1;
        }
    }
}

static void dataset_free(dataset *d)
{
    free(d->obs);
    free(d->policy);
    free(d->legal);
    free(d->value);
}

static zt_train_batch dataset_batch(const dataset *d)
{
    return (zt_train_batch){.B = d->B,
                            .obs = d->obs,
                            .policy_target = d->policy,
                            .legal = d->legal,
                            .value_target = d->value};
}

static void check_net_gradient(const char *what, const zt_net_config *cfg, int B, int micro)
{
    zt_rng r;
    zt_rng_seed(&r, seed, 2);
    zt_net *net;
    CHECK_OK(zt_net_new(cfg, "ref", ZT_PRECISION_FP32, 1, &net));
    if (!net) return;
    zt_net_init(net, &r);
    /* Zero biases would put every ReLU fed by a zero input exactly on its
     * kink, where the finite difference halves the one-sided slopes. */
    randomise_norms(net, &r);
    dataset d;
    dataset_make(&d, cfg, B, true, &r);
    zt_train_config tc;
    zt_train_config_default(&tc);
    tc.weight_decay = 0.01;
    tc.micro_batch = micro;
    tc.value_weight = 0.7;
    zt_trainer *t;
    CHECK_OK(zt_trainer_new(net, &tc, &t));
    size_t n = zt_net_param_count(net);
    float *g = zt_xmalloc(n * sizeof(float)), *scratch = zt_xmalloc(n * sizeof(float));
    zt_train_batch b = dataset_batch(&d);
    zt_train_losses L;
    CHECK_OK(zt_trainer_loss_grad(t, &b, &L, g));
    float *w = zt_net_params(net);
    double eps = 1e-3;
    fd_tally tally = {0};
    for (size_t i = 0; i < n; i++) {
        static const double at[5] = {-1, -0.25, 0, 0.25, 1};
        float keep = w[i];
        double f[5];
        for (int k = 0; k < 5; k++) {
            zt_train_losses L1;
            w[i] = (float)(keep + at[k] * eps);
            zt_trainer_loss_grad(t, &b, &L1, scratch);
            f[k] = L1.total;
        }
        w[i] = keep;
        fd_compare(&tally, g[i], f, eps, 2e-2);
    }
    check_tally(what, "parameter", &tally, 2e-2);
    CHECK(fabs(L.total - (L.policy + 0.7 * L.value + L.l2)) < 1e-9, "%s: total is not the sum",
          what);
    CHECK(L.policy > 0 && L.value > 0 && L.l2 > 0, "%s: a loss term is zero", what);
    free(g);
    free(scratch);
    zt_trainer_free(t);
    dataset_free(&d);
    zt_net_free(net);
}

static zt_net_config small_resnet(zt_value_kind vk)
{
    zt_net_config c;
    zt_net_config_default(&c, 3, 3, 2, 9);
    c.channels = 4;
    c.blocks = 1;
    c.value_hidden = 6;
    c.value_kind = vk;
    return c;
}

static zt_net_config small_mlp(zt_norm_kind norm)
{
    zt_net_config c;
    zt_net_config_default(&c, 1, 1, 7, 5);
    c.mlp_hidden = 6;
    c.mlp_layers = 2;
    c.mlp_norm = norm;
    c.value_hidden = 4;
    c.value_kind = ZT_VALUE_WDL;
    return c;
}

static void test_net_gradients(void)
{
    zt_net_config c = small_resnet(ZT_VALUE_SCALAR);
    check_net_gradient("resnet scalar", &c, 4, 4);
    c = small_resnet(ZT_VALUE_WDL);
    check_net_gradient("resnet wdl, 2 micro-batches", &c, 6, 3);
    c = small_mlp(ZT_NORM_LAYER);
    check_net_gradient("mlp layer norm", &c, 5, 5);
    c = small_mlp(ZT_NORM_BATCH);
    check_net_gradient("mlp batch norm", &c, 6, 6);
    c = small_mlp(ZT_NORM_LAYER);
    c.value_kind = ZT_VALUE_EQUITY;
    check_net_gradient("mlp equity, 2 micro-batches", &c, 8, 4);
    c = small_resnet(ZT_VALUE_EQUITY);
    check_net_gradient("resnet equity", &c, 4, 4);
}

static float logit(double p)
{
    return (float)log(p / (1 - p));
}

/* The equity head's arithmetic against hand computations. */
static void test_equity(void)
{
    /* Consistent probabilities pass the caps unchanged (to float rounding). */
    const double want[5] = {0.6, 0.2, 0.05, 0.1, 0.01};
    float lg[5], p[5];
    for (int j = 0; j < 5; j++) lg[j] = logit(want[j]);
    zt_equity_probs(lg, p);
    for (int j = 0; j < 5; j++) CHECK(fabs(p[j] - want[j]) < 1e-6, "p[%d] = %g", j, p[j]);
    /* 0.6 - 0.4 + 0.2 - 0.1 + 0.05 - 0.01 */
    CHECK(fabs(zt_equity_points(p) - 0.34) < 1e-6, "equity %g, not 0.34", zt_equity_points(p));
    float v;
    zt_net_head_to_value(ZT_VALUE_EQUITY, 1, lg, &v);
    CHECK(fabs(v - 0.34 / 3) < 1e-6, "value %g, not 0.34 / 3", v);

    /* Inconsistent outputs are capped: a gammon no likelier than the win
     * (0.3), a backgammon no likelier than the gammon, a lost gammon no
     * likelier than the loss (0.7), a lost backgammon than the lost gammon. */
    const double raw[5] = {0.3, 0.9, 0.95, 0.8, 0.6};
    for (int j = 0; j < 5; j++) lg[j] = logit(raw[j]);
    zt_equity_probs(lg, p);
    CHECK(fabs(p[ZT_EQ_WIN] - 0.3) < 1e-6 && fabs(p[ZT_EQ_WIN_GAMMON] - 0.3) < 1e-6 &&
              fabs(p[ZT_EQ_WIN_BACKGAMMON] - 0.3) < 1e-6 &&
              fabs(p[ZT_EQ_LOSE_GAMMON] - 0.7) < 1e-6 &&
              fabs(p[ZT_EQ_LOSE_BACKGAMMON] - 0.6) < 1e-6,
          "caps: %g %g %g %g %g", p[0], p[1], p[2], p[3], p[4]);
    /* 0.3 - 0.7 + 0.3 - 0.7 + 0.3 - 0.6 */
    CHECK(fabs(zt_equity_points(p) - (-1.1)) < 1e-6, "capped equity %g", zt_equity_points(p));

    /* A certain result's targets, read as probabilities, are worth exactly
     * its points; a game without a winner counts half a win. */
    for (int points = -3; points <= 3; points++) {
        float t[5];
        zt_equity_targets((float)points + 1e-4f, t);
        CHECK(zt_equity_points(t) == (float)points, "targets of %+d are worth %g", points,
              zt_equity_points(t));
    }
    float t[5];
    zt_equity_targets(2.0f, t);
    CHECK(t[0] == 1 && t[1] == 1 && t[2] == 0 && t[3] == 0 && t[4] == 0, "gammon win targets");
    zt_equity_targets(-3.0f, t);
    CHECK(t[0] == 0 && t[1] == 0 && t[2] == 0 && t[3] == 1 && t[4] == 1, "backgammon loss targets");

    /* The loss of a single sample: logits 0 against targets of a single
     * win (1, 0, 0, 0, 0) cost 5 log 2; the gradient is sigmoid - target. */
    zt_net_config c;
    zt_net_config_default(&c, 1, 1, 3, 2);
    c.mlp_hidden = 2;
    c.mlp_layers = 1;
    c.value_hidden = 2;
    c.value_kind = ZT_VALUE_EQUITY;
    zt_net *net;
    CHECK_OK(zt_net_new(&c, "ref", ZT_PRECISION_FP32, 1, &net));
    if (!net) return;
    /* all parameters zero: every output logit is 0 */
    zt_train_config tc;
    zt_train_config_default(&tc);
    tc.weight_decay = 0;
    zt_trainer *tr;
    CHECK_OK(zt_trainer_new(net, &tc, &tr));
    float obs[3] = {1, 0, 1}, policy[2] = {1, 0}, target[5] = {1, 0, 0, 0, 0};
    uint8_t legal[2] = {1, 1};
    zt_train_batch b = {.B = 1, .obs = obs, .policy_target = policy, .legal = legal, .value_target = target};
    zt_train_losses L;
    float *g = zt_xmalloc(zt_net_param_count(net) * sizeof(float));
    CHECK_OK(zt_trainer_loss_grad(tr, &b, &L, g));
    CHECK(fabs(L.value - 5 * log(2.0)) < 1e-6, "equity loss %g, not 5 log 2", L.value);
    /* d loss / d fc2 bias = sigmoid(0) - target = -0.5, +0.5, +0.5, +0.5, +0.5 */
    bool found = false;
    for (int i = 0; i < zt_net_tensor_count(net); i++) {
        zt_net_tensor tt = zt_net_tensor_at(net, i);
        if (strcmp(tt.name, "value.fc2.bias") != 0) continue;
        found = true;
        size_t off = (size_t)(tt.data - zt_net_params(net));
        for (int j = 0; j < 5; j++)
            CHECK(fabs(g[off + (size_t)j] - (j == 0 ? -0.5 : 0.5)) < 1e-6, "bias grad %d: %g", j,
                  g[off + (size_t)j]);
    }
    CHECK(found, "no tensor value.fc2.bias");
    free(g);
    zt_trainer_free(tr);
    zt_net_free(net);
}

/* ---- training drives the loss near zero ---- */

static void check_training(const char *what, zt_optimizer_kind opt, double lr, int steps)
{
    zt_rng r;
    zt_rng_seed(&r, seed, 3);
    zt_net_config c;
    zt_net_config_default(&c, 3, 3, 2, 9);
    c.channels = 16;
    c.blocks = 1;
    c.value_hidden = 16;
    /* One value channel through a ReLU can die on a set this small; four
     * keep 64 arbitrary value targets within reach. */
    c.value_channels = 4;
    zt_net *net;
    CHECK_OK(zt_net_new(&c, "ref", ZT_PRECISION_FP32, 1, &net));
    if (!net) return;
    zt_net_init(net, &r);
    dataset d;
    dataset_make(&d, &c, 64, false, &r);
    zt_train_config tc;
    zt_train_config_default(&tc);
    tc.optimizer = opt;
    tc.lr = lr;
    tc.weight_decay = 0;
    tc.micro_batch = 32;
    tc.warmup_steps = 10;
    tc.schedule = ZT_SCHED_COSINE;
    tc.total_steps = steps;
    tc.lr_min = lr * 0.1;
    tc.clip_norm = 10;
    zt_trainer *t;
    CHECK_OK(zt_trainer_new(net, &tc, &t));
    zt_train_batch b = dataset_batch(&d);
    zt_train_losses first, last;
    CHECK_OK(zt_trainer_step(t, &b, &first));
    for (int s = 1; s < steps; s++) CHECK_OK(zt_trainer_step(t, &b, &last));
    printf("%s: loss %.4f -> %.4f (policy %.4f value %.4f) after %d steps\n", what, first.total,
           last.total, last.policy, last.value, steps);
    CHECK(last.total < 0.02, "%s: loss %.4f after %d steps", what, last.total, steps);
    CHECK(zt_trainer_steps(t) == steps, "%s: step count", what);
    zt_trainer_free(t);
    dataset_free(&d);
    zt_net_free(net);
}

static void test_training(void)
{
    check_training("sgd nesterov", ZT_OPT_SGD, 0.1, 300);
    check_training("adamw", ZT_OPT_ADAMW, 0.01, 300);
}

/* ---- schedules and clipping ---- */

static void test_schedules(void)
{
    zt_train_config c;
    zt_train_config_default(&c);
    c.lr = 0.1;
    c.warmup_steps = 4;
    CHECK(fabs(zt_trainer_lr_at(&c, 0) - 0.025) < 1e-12, "warm-up starts at lr/warmup");
    CHECK(fabs(zt_trainer_lr_at(&c, 3) - 0.1) < 1e-12, "warm-up ends at lr");
    CHECK(fabs(zt_trainer_lr_at(&c, 100) - 0.1) < 1e-12, "constant");
    c.schedule = ZT_SCHED_STEP;
    c.step_size = 10;
    c.step_gamma = 0.5;
    CHECK(fabs(zt_trainer_lr_at(&c, 13) - 0.1) < 1e-12, "step: first stage");
    CHECK(fabs(zt_trainer_lr_at(&c, 14) - 0.05) < 1e-12, "step: second stage");
    CHECK(fabs(zt_trainer_lr_at(&c, 34) - 0.0125) < 1e-12, "step: fourth stage");
    c.schedule = ZT_SCHED_COSINE;
    c.total_steps = 104;
    c.lr_min = 0.01;
    CHECK(fabs(zt_trainer_lr_at(&c, 4) - 0.1) < 1e-12, "cosine start");
    CHECK(fabs(zt_trainer_lr_at(&c, 54) - 0.055) < 1e-12, "cosine midpoint");
    CHECK(fabs(zt_trainer_lr_at(&c, 104) - 0.01) < 1e-12, "cosine end");
    c.total_steps = 2;
    zt_net_config nc = small_resnet(ZT_VALUE_SCALAR);
    zt_net *net;
    CHECK_OK(zt_net_new(&nc, "ref", ZT_PRECISION_FP32, 1, &net));
    zt_trainer *t = NULL;
    CHECK(zt_trainer_new(net, &c, &t) == ZT_ERR_INVALID, "cosine with total < warmup accepted");
    /* total_steps 0: the cosine follows the progress the caller reports,
     * after the warm-up in steps; 0 until reported, clamped to [0, 1] */
    c.total_steps = 0;
    c.warmup_steps = 0;
    CHECK_OK(zt_trainer_new(net, &c, &t));
    if (t) {
        CHECK(fabs(zt_trainer_lr(t) - 0.1) < 1e-12, "progress: starts at lr");
        static const double at[][2] = {{0.5, 0.055}, {1, 0.01}, {2, 0.01}, {-1, 0.1}};
        for (int i = 0; i < 4; i++) {
            zt_trainer_set_progress(t, at[i][0]);
            CHECK(fabs(zt_trainer_lr(t) - at[i][1]) < 1e-12, "progress %g: lr %g, want %g",
                  at[i][0], zt_trainer_lr(t), at[i][1]);
        }
        zt_trainer_set_progress(t, 0.25);
        double want = 0.01 + 0.045 * (1 + cos(M_PI * 0.25));
        CHECK(fabs(zt_trainer_lr(t) - want) < 1e-12, "progress 0.25: lr %g, want %g",
              zt_trainer_lr(t), want);
        zt_trainer_free(t);
    }
    c.total_steps = -1;
    t = NULL;
    CHECK(zt_trainer_new(net, &c, &t) == ZT_ERR_INVALID, "a negative total_steps accepted");
    zt_net_free(net);
}

/* With clipping to a tiny norm and no decay, SGD's first step moves the
 * weights by exactly lr * (1 + momentum) * clip_norm in total norm. */
static void test_clipping(void)
{
    zt_rng r;
    zt_rng_seed(&r, seed, 4);
    zt_net_config c = small_resnet(ZT_VALUE_SCALAR);
    zt_net *net;
    CHECK_OK(zt_net_new(&c, "ref", ZT_PRECISION_FP32, 1, &net));
    zt_net_init(net, &r);
    dataset d;
    dataset_make(&d, &c, 8, false, &r);
    zt_train_config tc;
    zt_train_config_default(&tc);
    tc.weight_decay = 0;
    tc.lr = 0.5;
    tc.clip_norm = 1e-3;
    zt_trainer *t;
    CHECK_OK(zt_trainer_new(net, &tc, &t));
    size_t n = zt_net_param_count(net);
    float *before = zt_xmalloc(n * sizeof(float));
    memcpy(before, zt_net_params(net), n * sizeof(float));
    zt_train_batch b = dataset_batch(&d);
    zt_train_losses L;
    CHECK_OK(zt_trainer_step(t, &b, &L));
    double sq = 0;
    for (size_t i = 0; i < n; i++) {
        double dw = (double)zt_net_params(net)[i] - before[i];
        sq += dw * dw;
    }
    double want = 0.5 * 1.9 * 1e-3;
    CHECK(L.grad_norm > 1e-3, "gradient norm %.3g already below the bound", L.grad_norm);
    CHECK(fabs(sqrt(sq) - want) < 1e-3 * want, "clipped step %.6g, want %.6g", sqrt(sq), want);
    free(before);
    zt_trainer_free(t);
    dataset_free(&d);
    zt_net_free(net);
}

/* ---- inference-time transformations ---- */

/* Random biases, gains and running statistics (instead of 0 and 1). */
static void randomise_norms(zt_net *net, zt_rng *r)
{
    for (int i = 0; i < zt_net_tensor_count(net); i++) {
        zt_net_tensor t = zt_net_tensor_at(net, i);
        if (t.decay) continue;
        bool var = strstr(t.name, "running_var") != NULL;
        for (size_t e = 0; e < t.count; e++)
            t.data[e] = var ? 0.2f + (float)zt_rng_uniform(r) : (float)(0.5 * zt_rng_normal(r));
    }
    zt_net_params_changed(net);
}

static void check_fold(const char *what, const zt_net_config *c)
{
    zt_rng r;
    zt_rng_seed(&r, seed, 5);
    zt_net *net;
    CHECK_OK(zt_net_new(c, "ref", ZT_PRECISION_FP32, 1, &net));
    zt_net_init(net, &r);
    randomise_norms(net, &r);
    int B = 5, A = c->num_actions, V = zt_net_value_size(c);
    size_t obs_n = (size_t)B * c->in_h * c->in_w * c->in_c;
    float *obs = zt_xmalloc(obs_n * sizeof(float));
    fill_normal(&r, obs, obs_n, 1.0);
    float *p0 = zt_xmalloc((size_t)B * A * sizeof(float)), *v0 = zt_xmalloc((size_t)B * V * sizeof(float));
    float *p1 = zt_xmalloc((size_t)B * A * sizeof(float)), *v1 = zt_xmalloc((size_t)B * V * sizeof(float));
    CHECK_OK(zt_net_forward(net, B, obs, p0, v0));

    zt_nn_graph folded;
    float *fp, *fs;
    zt_nn_graph_fold_bn(zt_net_graph(net), zt_net_params(net), zt_net_state(net), &folded, &fp, &fs);
    int bn = 0;
    for (int i = 0; i < folded.nops; i++) bn += folded.ops[i].kind == ZT_OP_BN;
    CHECK(bn == 0, "%s: %d batch norms left after folding", what, bn);
    zt_nn_plan *plan;
    CHECK_OK(zt_nn_backend_ref.plan_new(&folded, fp, fs, ZT_PRECISION_FP32, 1, &plan));
    float *outs[2] = {p1, v1};
    CHECK_OK(zt_nn_backend_ref.forward(plan, B, obs, outs, false, false));
    double worst = 0;
    for (int i = 0; i < B * A; i++) worst = fmax(worst, fabs(p0[i] - p1[i]));
    for (int i = 0; i < B * V; i++) worst = fmax(worst, fabs(v0[i] - v1[i]));
    CHECK(worst < 1e-5, "%s: folding changed outputs by %.3g", what, worst);
    zt_nn_backend_ref.plan_free(plan);
    zt_nn_graph_free(&folded);
    free(fp);
    free(fs);
    free(obs);
    free(p0);
    free(v0);
    free(p1);
    free(v1);
    zt_net_free(net);
}

static void test_fold(void)
{
    zt_net_config c = small_resnet(ZT_VALUE_SCALAR);
    c.channels = 8;
    c.blocks = 2;
    check_fold("resnet", &c);
    c = small_mlp(ZT_NORM_BATCH);
    check_fold("mlp batch norm", &c);
}

/* The flat form: its size is every tensor's floats, and a net set from
 * another's flat weights computes what that one does. */
static void test_flat(void)
{
    zt_net_config c = small_resnet(ZT_VALUE_WDL);
    c.channels = 8;
    c.blocks = 1;
    zt_net *a, *b;
    CHECK_OK(zt_net_new(&c, "ref", ZT_PRECISION_FP32, 1, &a));
    CHECK_OK(zt_net_new(&c, "ref", ZT_PRECISION_FP32, 1, &b));
    zt_rng r;
    zt_rng_seed(&r, seed, 9);
    zt_net_init(a, &r);
    randomise_norms(a, &r);
    size_t n = 0;
    for (int i = 0; i < zt_net_tensor_count(a); i++) n += zt_net_tensor_at(a, i).count;
    CHECK(zt_net_flat_size(a) == n, "flat size %zu, tensors hold %zu", zt_net_flat_size(a), n);
    float *flat = zt_xmalloc((n + 1) * sizeof(float));
    flat[n] = 7.0f;
    CHECK(zt_net_flat_get(a, flat) == flat + n, "get ends elsewhere than past the tensors");
    CHECK(flat[n] == 7.0f, "get wrote past the tensors");
    CHECK(zt_net_flat_set(b, flat) == flat + n, "set ends elsewhere than past the tensors");
    int B = 3, A = c.num_actions;
    size_t obs_n = (size_t)B * c.in_h * c.in_w * c.in_c;
    float *obs = zt_xmalloc(obs_n * sizeof(float));
    fill_normal(&r, obs, obs_n, 1.0);
    float pa[3 * 9], va[3 * 3], pb[3 * 9], vb[3 * 3];
    CHECK_OK(zt_net_forward(a, B, obs, pa, va));
    CHECK_OK(zt_net_forward(b, B, obs, pb, vb));
    CHECK(memcmp(pa, pb, (size_t)B * A * sizeof(float)) == 0, "policies differ after set");
    CHECK(memcmp(va, vb, sizeof va) == 0, "values differ after set");
    /* the average: avg + w (net - avg) in the same order, running
     * statistics included, to float rounding (relative to the operands);
     * w = 1 makes it the net */
    float *avg = zt_xmalloc((n + 1) * sizeof(float)), *old = zt_xmalloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) avg[i] = old[i] = (float)i * 0.001f - 0.5f;
    avg[n] = 7.0f;
    zt_net_flat_average(a, avg, 0.25f);
    double err = 0;
    for (size_t i = 0; i < n; i++) {
        double w = old[i] + 0.25 * ((double)flat[i] - old[i]);
        err = fmax(err, fabs(avg[i] - w) / (fabs(old[i]) + fabs(flat[i]) + 1e-30));
    }
    CHECK(err < 1e-6 && avg[n] == 7.0f, "the average strays from avg + 0.25 (net - avg) by %.2e",
          err);
    memcpy(old, avg, n * sizeof(float));
    zt_net_flat_average(a, avg, 1.0f);
    err = 0;
    for (size_t i = 0; i < n; i++)
        err = fmax(err, fabs(avg[i] - flat[i]) / (fabs(old[i]) + fabs(flat[i]) + 1e-30));
    CHECK(err < 1e-6, "an average of weight 1 strays from the net by %.2e", err);
    free(avg);
    free(old);
    free(obs);
    free(flat);
    zt_net_free(a);
    zt_net_free(b);
}

static void test_bf16(void)
{
    CHECK(zt_bf16_from_f32(1.0f) == 0x3f80, "1.0");
    CHECK(zt_bf16_from_f32(-2.0f) == 0xc000, "-2.0");
    /* 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: ties go to even (1.0). */
    CHECK(zt_bf16_from_f32(1.00390625f) == 0x3f80, "tie to even, down");
    /* 1 + 3*2^-8 is halfway between 1+2^-7 (odd) and 1+2^-6: up to even. */
    CHECK(zt_bf16_from_f32(1.01171875f) == 0x3f82, "tie to even, up");
    CHECK(zt_bf16_from_f32(nextafterf(1.00390625f, 2.0f)) == 0x3f81, "just above a tie rounds up");
    CHECK(zt_bf16_from_f32(INFINITY) == 0x7f80, "inf");
    CHECK(zt_bf16_from_f32(3.4e38f) == 0x7f80, "overflow rounds to inf");
    CHECK(isnan(zt_f32_from_bf16(zt_bf16_from_f32(NAN))), "nan stays nan");
    CHECK(zt_f32_from_bf16(0x4049) == 3.140625f, "widening is exact");
    zt_rng r;
    zt_rng_seed(&r, seed, 6);
    for (int i = 0; i < 10000; i++) {
        float f = (float)(zt_rng_normal(&r) * 100);
        float g = zt_bf16_round(f);
        CHECK(fabsf(f - g) <= fabsf(f) * 0x1p-8f, "rounding error of %g is %g", f, f - g);
    }

    /* bf16 forward against fp32: relative error per output bounded by the
     * bound stated here (bf16 keeps 8 significant bits, 2^-8 = 0.4%). */
    zt_net_config c = small_resnet(ZT_VALUE_WDL);
    c.channels = 16;
    c.blocks = 2;
    zt_net *a, *b;
    CHECK_OK(zt_net_new(&c, "ref", ZT_PRECISION_FP32, 1, &a));
    CHECK_OK(zt_net_new(&c, "ref", ZT_PRECISION_BF16, 1, &b));
    zt_rng_seed(&r, seed, 7);
    zt_net_init(a, &r);
    randomise_norms(a, &r);
    float *flat = zt_xmalloc(zt_net_flat_size(a) * sizeof(float));
    zt_net_flat_get(a, flat);
    zt_net_flat_set(b, flat);
    free(flat);
    int B = 8, A = c.num_actions;
    size_t obs_n = (size_t)B * c.in_h * c.in_w * c.in_c;
    float *obs = zt_xmalloc(obs_n * sizeof(float));
    for (size_t i = 0; i < obs_n; i++) obs[i] = (float)zt_rng_below(&r, 2);
    float pa[8 * 9], va[8 * 3], pb[8 * 9], vb[8 * 3];
    CHECK_OK(zt_net_forward(a, B, obs, pa, va));
    CHECK_OK(zt_net_forward(b, B, obs, pb, vb));
    double scale = 0, worst = 0;
    for (int i = 0; i < B * A; i++) scale = fmax(scale, fabs(pa[i]));
    for (int i = 0; i < B * A; i++) worst = fmax(worst, fabs(pa[i] - pb[i]));
    printf("bf16 forward: max policy logit error %.4f of max |logit| %.3f\n", worst, scale);
    CHECK(worst <= 0.05 * scale, "bf16 policy error %.4f exceeds 5%% of %.3f", worst, scale);
    CHECK(worst > 0, "bf16 forward is identical to fp32: not emulated");
    free(obs);
    zt_net_free(a);
    zt_net_free(b);
}

static void test_config(void)
{
    zt_net_config c = small_resnet(ZT_VALUE_WDL), back;
    char buf[256];
    zt_net_config_format(&c, buf, sizeof buf);
    CHECK_OK(zt_net_config_parse(buf, &back));
    CHECK(memcmp(&c, &back, sizeof c) == 0, "resnet round trip of '%s'", buf);
    c = small_mlp(ZT_NORM_BATCH);
    zt_net_config_format(&c, buf, sizeof buf);
    CHECK_OK(zt_net_config_parse(buf, &back));
    CHECK(memcmp(&c, &back, sizeof c) == 0, "mlp round trip of '%s'", buf);
    c.value_kind = ZT_VALUE_EQUITY;
    zt_net_config_format(&c, buf, sizeof buf);
    CHECK(strstr(buf, " value=equity:") != NULL, "equity architecture '%s'", buf);
    CHECK_OK(zt_net_config_parse(buf, &back));
    CHECK(memcmp(&c, &back, sizeof c) == 0, "equity round trip of '%s'", buf);
    /* a net that learns chance states' values says so at the end, and
     * only AlphaZero nets may */
    for (int k = 0; k < 2; k++) {
        c = k ? small_mlp(ZT_NORM_LAYER) : small_resnet(ZT_VALUE_SCALAR);
        c.chance_values = 1;
        zt_net_config_format(&c, buf, sizeof buf);
        size_t n = strlen(buf);
        CHECK(n > 7 && strcmp(buf + n - 7, " chance") == 0, "chance architecture '%s'", buf);
        CHECK_OK(zt_net_config_parse(buf, &back));
        CHECK(memcmp(&c, &back, sizeof c) == 0, "chance round trip of '%s'", buf);
        strcat(buf, " chance");
        CHECK(zt_net_config_parse(buf, &back) == ZT_ERR_INVALID, "'%s' accepted", buf);
    }
    c.kind = ZT_NET_MUZERO;
    CHECK(zt_net_config_check(&c) == ZT_ERR_INVALID, "a muzero net with chance values accepted");
    c = small_mlp(ZT_NORM_BATCH);
    zt_net_config_format(&c, buf, sizeof buf);
    CHECK(zt_net_config_parse("resnet in=3x3x2 actions=9", &back) == ZT_ERR_INVALID, "short");
    strcat(buf, " x=1");
    CHECK(zt_net_config_parse(buf, &back) == ZT_ERR_INVALID, "trailing field accepted");
    c.mlp_layers = 0;
    CHECK(zt_net_config_check(&c) == ZT_ERR_INVALID, "zero layers accepted");
    CHECK(strstr(zt_error_message(), "mlp_layers") != NULL, "message '%s'", zt_error_message());
    zt_net *net = NULL;
    c = small_mlp(ZT_NORM_LAYER);
    CHECK(zt_net_new(&c, "nonesuch", ZT_PRECISION_FP32, 1, &net) == ZT_ERR_NOT_FOUND,
          "unknown backend");
    CHECK(strstr(zt_error_message(), "nonesuch") != NULL, "message '%s'", zt_error_message());
    CHECK_OK(zt_net_new(&c, "auto", ZT_PRECISION_AUTO, 1, &net));
    if (net) CHECK(zt_net_precision(net) != ZT_PRECISION_AUTO, "auto precision not resolved");
    zt_net_free(net);
    zt_precision p;
    CHECK(zt_precision_parse("bf16", &p) == ZT_OK && p == ZT_PRECISION_BF16, "parse bf16");
    CHECK(zt_precision_parse("fp64", &p) == ZT_ERR_INVALID, "parse fp64");

    /* Forward results do not depend on how the batch is split. */
    zt_rng r;
    zt_rng_seed(&r, seed, 8);
    c = small_resnet(ZT_VALUE_SCALAR);
    CHECK_OK(zt_net_new(&c, "ref", ZT_PRECISION_FP32, 1, &net));
    zt_net_init(net, &r);
    randomise_norms(net, &r);
    float obs[6 * 18], p6[6 * 9], v6[6], p1[9], v1[1];
    fill_normal(&r, obs, 6 * 18, 1.0);
    CHECK_OK(zt_net_reserve(net, 2));
    CHECK_OK(zt_net_forward(net, 6, obs, p6, v6));
    CHECK(v6[0] >= -1 && v6[0] <= 1, "scalar value %g outside [-1, 1]", v6[0]);
    for (int n = 0; n < 6; n++) {
        CHECK_OK(zt_net_forward(net, 1, obs + n * 18, p1, v1));
        CHECK(memcmp(p1, p6 + n * 9, sizeof p1) == 0 && v1[0] == v6[n], "sample %d differs", n);
    }
    /* The forward in halves (two slots in flight, waited for in order)
     * gives what one call gives; a CPU net's calls run at their wait. */
    CHECK(!zt_net_overlaps(net), "the reference backend says it overlaps");
    float pa[4 * 9], va[4], pb[2 * 9], vb[2];
    CHECK_OK(zt_net_forward_submit(net, 0, 4, obs));
    CHECK_OK(zt_net_forward_submit(net, 1, 2, obs + 4 * 18));
    CHECK_OK(zt_net_forward_wait(net, 0, pa, va));
    CHECK_OK(zt_net_forward_submit(net, 0, 1, obs));
    CHECK_OK(zt_net_forward_wait(net, 1, pb, vb));
    CHECK_OK(zt_net_forward_wait(net, 0, p1, v1));
    CHECK(memcmp(pa, p6, sizeof pa) == 0 && memcmp(va, v6, sizeof va) == 0 &&
              memcmp(pb, p6 + 4 * 9, sizeof pb) == 0 && memcmp(vb, v6 + 4, sizeof vb) == 0 &&
              memcmp(p1, p6, sizeof p1) == 0 && v1[0] == v6[0],
          "the forward in halves differs from the whole call");
    zt_net_free(net);
}

int main(void)
{
    seed = zt_test_seed(20240601);
    test_config();
    test_layers();
    test_net_gradients();
    test_equity();
    test_schedules();
    test_clipping();
    test_fold();
    test_flat();
    test_bf16();
    test_training();
    return zt_test_finish("test_nn");
}
