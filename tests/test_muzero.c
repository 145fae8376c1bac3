/* Tests of MuZero's networks and unrolled loss (src/nn/muzero.c): the
 * min-max scaling and its backward, the action planes, each loss term
 * against a hand computation, the whole unroll's gradient against finite
 * differences on the reference backend, the 0.5 scaling where the gradient
 * enters the dynamics, the oneDNN backend against the reference (fp32 and
 * bf16), the architecture string and weight files, and training lowering
 * the loss; for Stochastic MuZero nets (chance codes) the same, plus the
 * straight-through code and inference agreeing with the unroll; and the
 * categorical value heads (two-hot targets, expectations, their losses and
 * gradients); and the consistency term (its cosine against numbers worked
 * by hand and finite differences, the term against a hand computation from
 * h of the next observations, its gradient in g and f). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/rng.h"
#include "nn/backend.h"
#include "nn/muzero.h"
#include "nn/nn.h"

#include "zt_grad_test.h"
#include "zt_test.h"

#define CHECK_OK(expr)                                                                             \
    do {                                                                                           \
        zt_status s_ = (expr);                                                                     \
        CHECK(s_ == ZT_OK, "%s", zt_error_message());                                              \
    } while (0)

static uint64_t seed;

static zt_net_config small_mz(int h, int w, int c, int A)
{
    zt_net_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.kind = ZT_NET_MUZERO;
    cfg.in_h = h, cfg.in_w = w, cfg.in_c = c;
    cfg.num_actions = A;
    cfg.value_kind = ZT_VALUE_SCALAR;
    cfg.value_hidden = 5;
    cfg.channels = 4;
    cfg.blocks = 1;
    cfg.dyn_blocks = 1;
    cfg.pred_blocks = 1;
    cfg.policy_channels = 2;
    cfg.value_channels = 1;
    cfg.head_norm = h * w > 1; /* muzero.heads = auto */
    return cfg;
}

/* Norm gains and biases away from 1 and 0, so no ReLU sits on its kink for
 * a whole batch (as test_nn does). */
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

/* A net of c on the fp32 reference backend with random weights and norms. */
static zt_net *ref_net(const zt_net_config *c, zt_rng *r)
{
    zt_net *net = NULL;
    CHECK_OK(zt_net_new(c, "ref", ZT_PRECISION_FP32, 1, &net));
    if (!net) exit(zt_test_finish("test_muzero"));
    zt_net_init(net, r);
    randomise_norms(net, r);
    return net;
}

/* ---- unroll data ---- */

typedef struct unroll_data {
    int B, K, A;
    float *obs, *policy, *value, *reward;
    int32_t *actions;
    uint8_t *mask;
    float *next_obs;      /* chance codes only */
    uint8_t *chance_mask; /* chance codes only */
    float *turn;          /* to-play head only: B x K targets, 0 or 1 */
    int32_t *code;        /* chance codes with `labels`: B x K of the game's own */
} unroll_data;

/* data_make gives Stochastic MuZero batches the game's own codes
 * (muzero.chance = game) in place of the encoder's while this is set */
static bool labels;

/* data_make gives plain MuZero batches the observations after each step
 * (the consistency term's) while this is set */
static bool with_next_obs;

/* Random observations and actions, soft policy targets, values in [-1, 1],
 * rewards in [-0.5, 0.5]; the last steps of every other sample are past
 * the game's end (no policy target). */
static void data_make(unroll_data *d, const zt_net_config *c, int B, int K, zt_rng *r)
{
    d->B = B, d->K = K, d->A = c->num_actions;
    size_t obs_n = (size_t)c->in_h * c->in_w * c->in_c, rows = (size_t)B * (K + 1);
    d->obs = zt_xmalloc((size_t)B * obs_n * sizeof(float));
    for (size_t i = 0; i < (size_t)B * obs_n; i++) d->obs[i] = (float)zt_rng_normal(r);
    d->policy = zt_xcalloc(rows * d->A, sizeof(float));
    d->value = zt_xmalloc(rows * sizeof(float));
    d->mask = zt_xmalloc(rows);
    d->reward = zt_xmalloc((size_t)B * K * sizeof(float));
    d->actions = zt_xmalloc((size_t)B * K * sizeof(int32_t));
    for (int n = 0; n < B; n++)
        for (int k = 0; k <= K; k++) {
            size_t row = (size_t)n * (K + 1) + k;
            double sum = 0;
            for (int a = 0; a < d->A; a++)
                sum += d->policy[row * d->A + a] = (float)zt_rng_uniform(r);
            for (int a = 0; a < d->A; a++) d->policy[row * d->A + a] /= (float)sum;
            d->value[row] = (float)(2 * zt_rng_uniform(r) - 1);
            d->mask[row] = !(n % 2 == 1 && k >= K - 1);
            if (k < K) {
                d->reward[(size_t)n * K + k] = (float)(zt_rng_uniform(r) - 0.5);
                d->actions[(size_t)n * K + k] = (int32_t)zt_rng_below(r, (uint32_t)d->A);
            }
        }
    d->next_obs = NULL;
    d->chance_mask = NULL;
    d->turn = NULL;
    d->code = NULL;
    if (c->chance_codes > 0 && labels) {
        d->code = zt_xmalloc((size_t)B * K * sizeof(int32_t));
        for (size_t i = 0; i < (size_t)B * K; i++)
            d->code[i] = (int32_t)zt_rng_below(r, (uint32_t)c->chance_codes);
    }
    if (c->turn_head) {
        d->turn = zt_xmalloc((size_t)B * K * sizeof(float));
        for (size_t i = 0; i < (size_t)B * K; i++) d->turn[i] = (float)(zt_rng_uniform(r) < 0.5);
    }
    if (c->chance_codes == 0 && !with_next_obs) return;
    /* the observations after each step; step k + 1 past the end where the
     * policy mask says so */
    d->next_obs = zt_xmalloc((size_t)B * K * obs_n * sizeof(float));
    for (size_t i = 0; i < (size_t)B * K * obs_n; i++) d->next_obs[i] = (float)zt_rng_normal(r);
    d->chance_mask = zt_xmalloc((size_t)B * K);
    for (int n = 0; n < B; n++)
        for (int k = 0; k < K; k++)
            d->chance_mask[(size_t)n * K + k] = d->mask[(size_t)n * (K + 1) + k + 1];
}

static void data_free(unroll_data *d)
{
    free(d->obs);
    free(d->policy);
    free(d->value);
    free(d->reward);
    free(d->actions);
    free(d->mask);
    free(d->next_obs);
    free(d->chance_mask);
    free(d->turn);
    free(d->code);
}

static zt_train_batch data_batch(const unroll_data *d)
{
    return (zt_train_batch){.B = d->B,
                            .obs = d->obs,
                            .policy_target = d->policy,
                            .value_target = d->value,
                            .unroll = d->K,
                            .actions = d->actions,
                            .policy_mask = d->mask,
                            .reward_target = d->reward,
                            .next_obs = d->next_obs,
                            .chance_mask = d->chance_mask,
                            .turn_target = d->turn,
                            .chance_code = d->code};
}

/* small_mz with Stochastic MuZero's afterstates and `codes` chance codes. */
static zt_net_config small_smz(int h, int w, int c, int A, int codes)
{
    zt_net_config cfg = small_mz(h, w, c, A);
    cfg.chance_codes = codes;
    return cfg;
}

/* ---- the pieces ---- */

static void test_minmax(void)
{
    zt_rng r;
    zt_rng_seed(&r, seed, 1);
    enum { B = 3, N = 11 };
    float x[B * N], s[B * N], w[B * N], dx[B * N], range[B];
    int32_t lo[B], hi[B];
    for (int i = 0; i < B * N; i++) {
        x[i] = (float)zt_rng_normal(&r);
        w[i] = (float)zt_rng_normal(&r);
    }
    for (int i = 0; i < N; i++) x[2 * N + i] = 0.25f; /* a constant sample */
    zt_mz_minmax_forward(x, s, B, N, lo, hi, range);
    for (int b = 0; b < 2; b++) {
        float mn = 2, mx = -1;
        for (int i = 0; i < N; i++) {
            mn = fminf(mn, s[b * N + i]);
            mx = fmaxf(mx, s[b * N + i]);
        }
        CHECK(mn == 0.0f && fabsf(mx - 1.0f) < 1e-6f, "sample %d spans [%g, %g]", b, mn, mx);
    }
    for (int i = 0; i < N; i++) CHECK(s[2 * N + i] == 0.0f, "a constant sample scales to 0");
    CHECK(hi[2] == -1, "a constant sample's maximum carries no gradient");
    /* loss = sum w * s; its gradient against central differences */
    zt_mz_minmax_backward(w, s, B, N, lo, hi, range, dx);
    double worst = 0;
    for (int i = 0; i < B * N; i++) {
        double f[2];
        float keep = x[i];
        for (int k = 0; k < 2; k++) {
            x[i] = keep + (k ? 1e-3f : -1e-3f);
            float s2[B * N], rg[B];
            int32_t l2[B], h2[B];
            zt_mz_minmax_forward(x, s2, B, N, l2, h2, rg);
            f[k] = 0;
            for (int j = 0; j < B * N; j++) f[k] += (double)w[j] * s2[j];
        }
        x[i] = keep;
        double fd = (f[1] - f[0]) / ((double)(keep + 1e-3f) - (double)(keep - 1e-3f));
        if (i >= 2 * N) continue; /* the constant sample: x moves off the floor either way */
        worst = fmax(worst, fabs(fd - dx[i]) / (fabs(fd) + 1e-2));
    }
    CHECK(worst < 1e-2, "min-max backward error %.2e", worst);
}

/* The min-max forward's extremes are the first minimum and the first
 * maximum (what a plain scan finds), on every row length around the
 * 16-lane vector width, with many ties, signed zeros and NaNs (never chosen
 * unless first), and the scaled values follow them bit for bit. */
static void test_minmax_ties(void)
{
    zt_rng r;
    zt_rng_seed(&r, seed, 2);
    static const size_t lens[] = {1, 2, 15, 16, 17, 31, 33, 64, 100, 2688};
    int bad = 0;
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        enum { B = 6 };
        size_t n = lens[li];
        float *x = malloc(B * n * sizeof(float)), *s = malloc(B * n * sizeof(float));
        int32_t lo[B], hi[B];
        float range[B];
        for (int b = 0; b < B; b++)
            for (size_t i = 0; i < n; i++) {
                float v = (float)zt_rng_below(&r, 5) - 2.0f; /* -2..2: ties everywhere */
                x[b * n + i] = v == 0.0f && zt_rng_below(&r, 2) ? -0.0f : v;
            }
        if (n > 3) x[1 * n + n / 2] = NAN; /* a NaN inside a row */
        x[2 * n] = NAN;                     /* and first in one */
        zt_mz_minmax_forward(x, s, B, n, lo, hi, range);
        for (int b = 0; b < B; b++) {
            const float *xb = x + b * n;
            size_t l = 0, h = 0;
            for (size_t i = 1; i < n; i++) {
                if (xb[i] < xb[l]) l = i;
                if (xb[i] > xb[h]) h = i;
            }
            float rr = xb[h] - xb[l];
            bool flat = !(rr >= ZT_MZ_MIN_RANGE);
            if (flat) rr = ZT_MZ_MIN_RANGE;
            bool ok = lo[b] == (int32_t)l && hi[b] == (flat ? -1 : (int32_t)h) &&
                      memcmp(&range[b], &rr, sizeof rr) == 0;
            for (size_t i = 0; i < n && ok; i++) {
                float want = (xb[i] - xb[l]) / rr;
                ok = memcmp(&want, &s[b * n + i], sizeof want) == 0;
            }
            if (!ok && bad++ < 5)
                printf("  n %zu row %d: lo %d hi %d, want %zu %zu\n", n, b, (int)lo[b], (int)hi[b], l,
                       h);
        }
        free(x);
        free(s);
    }
    CHECK(bad == 0, "min-max extremes differ from a plain scan in %d rows", bad);
}

static void test_action_planes(void)
{
    zt_net_config c = small_mz(3, 3, 2, 9); /* the actions are the cells: one plane */
    c.channels = 2;
    CHECK(zt_net_action_planes(&c) == 1, "cell actions take one plane");
    float hidden[2 * 9 * 2], out[2 * 9 * 3];
    for (int i = 0; i < 36; i++) hidden[i] = (float)i;
    int actions[2] = {4, 8};
    zt_mz_dynamics_input(&c, 2, hidden, actions, out);
    for (int b = 0; b < 2; b++)
        for (int cell = 0; cell < 9; cell++) {
            const float *o = out + (b * 9 + cell) * 3;
            CHECK(o[0] == hidden[(b * 9 + cell) * 2] && o[1] == hidden[(b * 9 + cell) * 2 + 1],
                  "hidden channels copied");
            CHECK(o[2] == (cell == actions[b] ? 1.0f : 0.0f), "sample %d cell %d plane %g", b, cell,
                  o[2]);
        }
    c = small_mz(2, 3, 2, 3); /* column-like actions: a constant plane each */
    c.channels = 1;
    CHECK(zt_net_action_planes(&c) == 3, "3 actions on a 2x3 board take 3 planes");
    float h2[6], o2[6 * 4];
    for (int i = 0; i < 6; i++) h2[i] = (float)(i + 1);
    int a2 = 1;
    zt_mz_dynamics_input(&c, 1, h2, &a2, o2);
    for (int cell = 0; cell < 6; cell++) {
        const float *o = o2 + cell * 4;
        CHECK(o[0] == h2[cell] && o[1] == 0 && o[2] == 1 && o[3] == 0, "cell %d planes", cell);
    }
    /* the same actions read as the board's columns: one plane, ones down
     * the column the action names (cell % width) and zeros elsewhere */
    c.action_columns = 1;
    CHECK(zt_net_action_planes(&c) == 1, "column actions take one plane");
    for (a2 = 0; a2 < 3; a2++) {
        zt_mz_dynamics_input(&c, 1, h2, &a2, o2);
        for (int cell = 0; cell < 6; cell++) {
            const float *o = o2 + cell * 2;
            CHECK(o[0] == h2[cell] && o[1] == (cell % 3 == a2 ? 1.0f : 0.0f),
                  "action %d cell %d: %g %g", a2, cell, o[0], o[1]);
        }
    }
}

static void test_policy_loss(void)
{
    /* softmax of {0, ln 2, ln 3, ln 4} is {0.1, 0.2, 0.3, 0.4} */
    float logits[4] = {0, logf(2), logf(3), logf(4)}, target[4] = {0.5f, 0, 0.5f, 0}, d[4];
    double loss = zt_mz_policy_loss(logits, target, 4, 2.0, d);
    double want = -(0.5 * log(0.1) + 0.5 * log(0.3));
    CHECK(fabs(loss - want) < 1e-6, "cross-entropy %.8f, by hand %.8f", loss, want);
    const double dwant[4] = {2 * (0.1 - 0.5), 2 * 0.2, 2 * (0.3 - 0.5), 2 * 0.4};
    for (int a = 0; a < 4; a++)
        CHECK(fabs(d[a] - dwant[a]) < 1e-6, "d[%d] = %g, by hand %g", a, d[a], dwant[a]);
}

/* Each reported term against the same sums computed here from the unroll's
 * outputs: step 0 weighted 1, steps 1..K weighted 1/K, masked policies
 * skipped, means over the batch. */
/* The value-like term of one sample by hand: squared error, or with a
 * support the cross-entropy of the logits' softmax against the two-hot. */
static double value_by_hand(const float *out, float target, int N)
{
    if (N == 0) return pow(out[0] - target, 2);
    int V = 2 * N + 1;
    float t[2 * 16 + 1];
    zt_mz_two_hot(target, N, t);
    double z = 0, ce = 0;
    for (int i = 0; i < V; i++) z += exp(out[i]);
    for (int i = 0; i < V; i++) ce -= t[i] * (out[i] - log(z));
    return ce;
}

static void check_loss_terms(int support)
{
    zt_rng r;
    zt_rng_seed(&r, seed, 2);
    zt_net_config c = small_mz(3, 3, 3, 9);
    c.value_support = support;
    int V = zt_mz_value_outputs(&c);
    zt_net *net = ref_net(&c, &r);
    unroll_data d;
    data_make(&d, &c, 5, 3, &r);
    zt_train_config tc;
    zt_train_config_default(&tc);
    tc.value_weight = 0.7;
    tc.reward_weight = 0.6;
    tc.weight_decay = 0.01;
    zt_trainer *t;
    CHECK_OK(zt_trainer_new(net, &tc, &t));
    float *g = zt_xmalloc(zt_net_param_count(net) * sizeof(float));
    zt_train_batch b = data_batch(&d);
    zt_train_losses L;
    CHECK_OK(zt_trainer_loss_grad(t, &b, &L, g));
    double policy = 0, value = 0, reward = 0, policy0 = 0, value0 = 0;
    int K = d.K, A = d.A;
    for (int k = 0; k <= K; k++) {
        const float *pol, *val, *rew;
        zt_mz_unroll_outputs(zt_net_mz(net), k, &pol, &val, &rew);
        double w = k == 0 ? 1.0 : 1.0 / K;
        for (int n = 0; n < d.B; n++) {
            size_t row = (size_t)n * (K + 1) + k;
            if (d.mask[row]) {
                double z = 0;
                for (int a = 0; a < A; a++) z += exp(pol[n * A + a]);
                for (int a = 0; a < A; a++)
                    policy -= w * d.policy[row * A + a] * (pol[n * A + a] - log(z)) / d.B;
            }
            value += w * value_by_hand(val + (size_t)n * V, d.value[row], support) / d.B;
            if (k > 0)
                reward +=
                    w *
                    value_by_hand(rew + (size_t)n * V, d.reward[(size_t)n * K + k - 1], support) /
                    d.B;
        }
        if (k == 0) policy0 = policy, value0 = value;
    }
    CHECK(fabs(L.policy - policy) < 1e-6 * policy, "policy %.9f, by hand %.9f", L.policy, policy);
    CHECK(policy0 > 0 && fabs(L.policy0 - policy0) < 1e-6 * policy0,
          "step 0's policy %.9f, by hand %.9f", L.policy0, policy0);
    CHECK(value0 > 0 && value0 < value && fabs(L.value0 - value0) < 1e-6 * value0,
          "step 0's value %.9f, by hand %.9f", L.value0, value0);
    CHECK(fabs(L.value - value) < 1e-6 * value, "value %.9f, by hand %.9f", L.value, value);
    CHECK(fabs(L.reward - reward) < 1e-6 * reward, "reward %.9f, by hand %.9f", L.reward, reward);
    CHECK(fabs(L.total - (L.policy + 0.7 * L.value + 0.6 * L.reward + L.l2)) < 1e-9,
          "total is not the weighted sum");
    CHECK(L.policy > 0 && L.value > 0 && L.reward > 0 && L.l2 > 0, "a loss term is zero");
    free(g);
    zt_trainer_free(t);
    data_free(&d);
    zt_net_free(net);
}

static void test_loss_terms(void)
{
    check_loss_terms(0);
    check_loss_terms(5);
}

/* The to-play term against a hand computation from g's turn logits: the
 * binary cross-entropy softplus(x) - t x of every unrolled step, weighted
 * 1/K, averaged over the batch and added to the total with weight 1; on a
 * board of one cell (backgammon's flat input), plain and stochastic. */
static void check_turn_loss(int codes)
{
    zt_rng r;
    zt_rng_seed(&r, seed, 9);
    zt_net_config c = small_smz(1, 1, 7, 5, codes);
    c.turn_head = 1;
    zt_net *net = ref_net(&c, &r);
    unroll_data d;
    data_make(&d, &c, 6, 3, &r);
    zt_train_config tc;
    zt_train_config_default(&tc);
    tc.value_weight = 0.7;
    tc.reward_weight = 0.6;
    zt_trainer *t;
    CHECK_OK(zt_trainer_new(net, &tc, &t));
    float *g = zt_xmalloc(zt_net_param_count(net) * sizeof(float));
    zt_train_batch b = data_batch(&d);
    zt_train_losses L;
    CHECK_OK(zt_trainer_loss_grad(t, &b, &L, g));
    double turn = 0;
    int K = d.K;
    for (int k = 1; k <= K; k++) {
        const float *x = zt_mz_turn_outputs(zt_net_mz(net), k);
        for (int n = 0; n < d.B; n++) {
            double tt = d.turn[(size_t)n * K + k - 1];
            turn += (log(1 + exp((double)x[n])) - tt * x[n]) / K / d.B;
        }
    }
    CHECK(turn > 0 && fabs(L.turn - turn) < 1e-6 * turn, "turn %.9f, by hand %.9f", L.turn, turn);
    double rest = L.policy + 0.7 * (L.value + L.afterstate) + 0.6 * L.reward +
                  tc.chance_weight * L.chance + tc.commitment_weight * L.commitment + L.l2;
    CHECK(fabs(L.total - (rest + L.turn)) < 1e-9, "the total does not add the turn term");
    free(g);
    zt_trainer_free(t);
    data_free(&d);
    zt_net_free(net);
}

static void test_turn_loss(void)
{
    check_turn_loss(0);
    check_turn_loss(3);
}

/* Two-hot targets sum to 1 on at most two neighbouring atoms whose mean is
 * x (clamped to [-1, 1]); the expectation of logits log(two-hot) is x. */
static void test_support(void)
{
    enum { N = 4, V = 2 * N + 1 };
    const float xs[] = {-1.5f, -1, -0.9f, -0.13f, 0, 0.25f, 0.6f, 0.99f, 1, 3};
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) {
        float t[V], lg[V];
        zt_mz_two_hot(xs[i], N, t);
        double sum = 0, mean = 0, want = xs[i] < -1 ? -1 : xs[i] > 1 ? 1 : xs[i];
        int nonzero = 0, first = -1, last = -1;
        for (int a = 0; a < V; a++) {
            sum += t[a];
            mean += t[a] * (double)(a - N) / N;
            if (t[a] != 0) {
                nonzero++;
                last = a;
                if (first < 0) first = a;
            }
            lg[a] = t[a] > 0 ? logf(t[a]) : -60.0f;
        }
        CHECK(fabs(sum - 1) < 1e-6 && nonzero <= 2 && last - first <= 1,
              "two-hot of %g: sum %g over %d atoms", xs[i], sum, nonzero);
        CHECK(fabs(mean - want) < 1e-6, "two-hot of %g has mean %g", xs[i], mean);
        double e = zt_mz_support_expectation(lg, N);
        CHECK(fabs(e - want) < 1e-5, "expectation of log two-hot(%g): %g", xs[i], e);
    }
}

/* The cosine term against numbers worked by hand: s = (3, 4), t = (4, 3)
 * have cos 24/25, so the loss is 1/25 and its gradient in s is
 * (cos s / |s|^2 - t / (|s||t|)) = (3 * 24/625 - 4/25, 4 * 24/625 - 3/25)
 * = (-0.04480, 0.03360); added to d times the scale. A zero vector gives 1
 * and no gradient; parallel vectors 0. Then its gradient on random vectors
 * against central differences. */
static void test_cosine_loss(void)
{
    float s[2] = {3, 4}, t[2] = {4, 3}, d[2] = {1, 1};
    double l = zt_mz_cosine_loss(s, t, 2, 0.5, d);
    CHECK(fabs(l - 0.04) < 1e-12, "cosine loss %.12f, by hand 0.04", l);
    CHECK(fabs(d[0] - (1 + 0.5 * -0.0448)) < 1e-6 && fabs(d[1] - (1 + 0.5 * 0.0336)) < 1e-6,
          "cosine gradient (%.6f, %.6f) not added as worked by hand", d[0], d[1]);
    float z[2] = {0, 0}, dz[2] = {0, 0};
    CHECK(zt_mz_cosine_loss(z, t, 2, 1, dz) == 1.0 && dz[0] == 0 && dz[1] == 0,
          "a zero vector has a gradient or a loss other than 1");
    float p[2] = {6, 8}, dp[2] = {0, 0};
    CHECK(fabs(zt_mz_cosine_loss(s, p, 2, 1, dp)) < 1e-12 && fabs(dp[0]) < 1e-7 &&
              fabs(dp[1]) < 1e-7,
          "parallel vectors have a loss or a gradient");
    zt_rng r;
    zt_rng_seed(&r, seed, 21);
    enum { N = 17 };
    float a[N], b[N], g[N] = {0};
    for (int i = 0; i < N; i++) a[i] = (float)zt_rng_uniform(&r), b[i] = (float)zt_rng_uniform(&r);
    zt_mz_cosine_loss(a, b, N, 1, g);
    double worst = 0;
    for (int i = 0; i < N; i++) {
        float keep = a[i], scratch[N];
        double eps = 1e-3;
        a[i] = (float)(keep + eps);
        double up = zt_mz_cosine_loss(a, b, N, 0, scratch);
        a[i] = (float)(keep - eps);
        double down = zt_mz_cosine_loss(a, b, N, 0, scratch);
        a[i] = keep;
        double num = (up - down) / (2 * eps);
        worst = fmax(worst, fabs(num - g[i]) / (fabs(num) + fabs(g[i]) + 1e-3));
    }
    CHECK(worst < 1e-2, "cosine gradient against finite differences: error %.2e", worst);
}

/* The consistency term against a hand computation: 1 - cos(s_k, t) for
 * every unrolled step k >= 1 inside the game (the chance mask), t h's
 * scaled hidden state of the observation at step k (zt_mz_initial, as the
 * search would make it), weighted 1/K, averaged over the batch, and added
 * to the total with its weight; the other terms as without it. */
static void test_consistency_terms(void)
{
    zt_rng r;
    zt_rng_seed(&r, seed, 22);
    zt_net_config c = small_mz(3, 3, 3, 9);
    zt_net *net = ref_net(&c, &r);
    unroll_data d;
    with_next_obs = true;
    data_make(&d, &c, 5, 3, &r);
    with_next_obs = false;
    zt_train_config tc;
    zt_train_config_default(&tc);
    zt_trainer *t;
    CHECK_OK(zt_trainer_new(net, &tc, &t));
    float *g = zt_xmalloc(zt_net_param_count(net) * sizeof(float));
    zt_train_batch b = data_batch(&d);
    zt_train_losses off, on;
    CHECK_OK(zt_trainer_loss_grad(t, &b, &off, g));
    zt_trainer_free(t);
    tc.consistency_weight = 1.5;
    CHECK_OK(zt_trainer_new(net, &tc, &t));
    CHECK_OK(zt_trainer_loss_grad(t, &b, &on, g));
    zt_mz *mz = zt_net_mz(net);
    int K = d.K;
    size_t hs = zt_net_hidden_size(&c), obs_n = (size_t)c.in_h * c.in_w * c.in_c;
    float *tgt = zt_xmalloc(hs * sizeof(float)), *pol = zt_xmalloc((size_t)d.A * sizeof(float));
    float val;
    double by_hand = 0;
    int counted = 0;
    for (int k = 1; k <= K; k++) {
        const float *sk = zt_mz_unroll_hidden(mz, k);
        for (int n = 0; n < d.B; n++) {
            size_t row = (size_t)n * K + (size_t)(k - 1);
            if (!d.chance_mask[row]) continue;
            CHECK_OK(zt_mz_initial(mz, 1, d.next_obs + row * obs_n, tgt, pol, &val));
            double st = 0, ss = 0, tt = 0;
            for (size_t i = 0; i < hs; i++) {
                st += (double)sk[n * hs + i] * tgt[i];
                ss += (double)sk[n * hs + i] * sk[n * hs + i];
                tt += (double)tgt[i] * tgt[i];
            }
            by_hand += (1 - st / sqrt(ss * tt)) / K / d.B;
            counted++;
        }
    }
    CHECK(counted > 0 && counted < d.B * K, "the mask counts %d of %d steps", counted, d.B * K);
    CHECK(by_hand > 0 && fabs(on.consistency - by_hand) < 1e-5 * by_hand,
          "consistency %.9f, by hand %.9f", on.consistency, by_hand);
    CHECK(off.consistency == 0, "the term is computed with weight 0: %g", off.consistency);
    CHECK(fabs(on.policy - off.policy) < 1e-12 && fabs(on.value - off.value) < 1e-12 &&
              fabs(on.reward - off.reward) < 1e-12,
          "the consistency term changed the other terms");
    CHECK(fabs(on.total - (off.total + 1.5 * on.consistency)) < 1e-9,
          "total %.9f is not the others' %.9f + 1.5 x consistency %.9f", on.total, off.total,
          on.consistency);
    free(tgt);
    free(pol);
    free(g);
    zt_trainer_free(t);
    data_free(&d);
    zt_net_free(net);
}

/* ---- gradients ---- */

/* the consistency term's weight in check_unroll_gradient */
static double consistency;

/* With chance codes the straight-through share is 0: the one-hot code is
 * piecewise constant, so the loss's exact gradient leaves it out
 * (test_straight_through checks what it adds). */
static void check_unroll_gradient(const char *what, zt_net_config c, int K, int B, int micro)
{
    zt_rng r;
    zt_rng_seed(&r, seed, 3);
    zt_net *net = ref_net(&c, &r);
    unroll_data d;
    with_next_obs = consistency > 0;
    data_make(&d, &c, B, K, &r);
    with_next_obs = false;
    zt_train_config tc;
    zt_train_config_default(&tc);
    tc.weight_decay = 0.01;
    tc.value_weight = 0.7;
    tc.reward_weight = 0.6;
    tc.micro_batch = micro;
    tc.dynamics_grad_scale = 1; /* the loss's exact gradient */
    tc.straight_through = 0;
    tc.chance_weight = 0.8;
    tc.commitment_weight = 0.3;
    tc.code_balance_weight = 0.5;
    tc.consistency_weight = consistency;
    zt_trainer *t;
    CHECK_OK(zt_trainer_new(net, &tc, &t));
    size_t n = zt_net_param_count(net);
    /* with the consistency term h's parameters also move its targets,
     * through which no gradient flows (the stop-gradient): g's and f's are
     * checked, and h's are left to the runs without it, whose chain into h
     * is the same */
    size_t first = consistency > 0 ? zt_mz_repr_params(zt_net_mz(net)) : 0;
    float *g = zt_xmalloc(n * sizeof(float)), *scratch = zt_xmalloc(n * sizeof(float));
    zt_train_batch b = data_batch(&d);
    zt_train_losses L;
    CHECK_OK(zt_trainer_loss_grad(t, &b, &L, g));
    float *w = zt_net_params(net);
    double eps = 1e-3;
    fd_tally tally = {0};
    /* every parameter, or under the sanitizers (which look for memory
     * errors, not for numbers, and run these loss evaluations ten times
     * slower) every seventh */
    size_t stride = SANITIZED ? 7 : 1;
    for (size_t i = first; i < n; i += stride) {
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
    printf("%s: %zu parameters, %d checked, %d skipped, worst error %.2e\n", what, n, tally.checked,
           tally.skipped, tally.worst);
    CHECK(tally.worst < 2e-2, "%s: gradient error %.2e", what, tally.worst);
    CHECK(tally.skipped * 20 <= tally.checked + tally.skipped, "%s: %d of %d points skipped", what,
          tally.skipped, tally.checked + tally.skipped);
    free(g);
    free(scratch);
    zt_trainer_free(t);
    data_free(&d);
    zt_net_free(net);
}

static void test_unroll_gradients(void)
{
    check_unroll_gradient("unroll K=3, cell action planes", small_mz(3, 3, 3, 9), 3, 4, 4);
    check_unroll_gradient("unroll K=2, a plane per action, 2 micro-batches", small_mz(2, 3, 2, 3),
                          2, 6, 3);
    check_unroll_gradient("stochastic unroll K=3, cell action planes, 4 codes",
                          small_smz(3, 3, 3, 9, 4), 3, 4, 4);
    check_unroll_gradient("stochastic unroll K=2, a plane per action, 2 micro-batches",
                          small_smz(2, 3, 2, 3, 3), 2, 6, 3);
    zt_net_config cat = small_smz(3, 3, 3, 9, 4);
    cat.value_support = 3;
    check_unroll_gradient("stochastic unroll K=2, categorical heads (support 3)", cat, 2, 4, 4);
    zt_net_config plain = small_smz(3, 3, 3, 9, 4);
    plain.head_norm = 0;
    check_unroll_gradient("stochastic unroll K=2, plain heads", plain, 2, 4, 4);
    labels = true;
    check_unroll_gradient("stochastic unroll K=3, the game's codes, 2 micro-batches",
                          small_smz(3, 3, 3, 9, 5), 3, 6, 3);
    labels = false;
    /* backgammon's shape: one cell (1x1 kernels), a plane per action, g's
     * to-play head */
    zt_net_config turns = small_mz(1, 1, 6, 4);
    turns.turn_head = 1;
    check_unroll_gradient("unroll K=3, one cell, to-play head", turns, 3, 5, 5);
    turns.chance_codes = 3;
    check_unroll_gradient("stochastic unroll K=2, one cell, to-play head, 2 micro-batches", turns,
                          2, 6, 3);
    consistency = 0.9;
    check_unroll_gradient("unroll K=3, consistency, g and f", small_mz(3, 3, 3, 9), 3, 4, 4);
    check_unroll_gradient("stochastic unroll K=2, consistency, 2 micro-batches",
                          small_smz(2, 3, 2, 3, 3), 2, 6, 3);
    consistency = 0;
}

/* Stochastic MuZero's chance terms against a hand computation from the
 * unroll's outputs: Q's squared error against the value target of its step,
 * sigma's cross-entropy against the code, the commitment |logits - code|^2,
 * the codes' balance Z sum_j f_j P_j (f_j the share of the step's counted
 * transitions given code j, P_j their mean softmax(logits)_j), each
 * weighted 1/K and counted where the next step is in the game (Q
 * everywhere); the code is the one-hot of the encoder's argmax; the total
 * weighs them as zt_train_config says; the codes' perplexity is exp of the
 * entropy of the codes counted. */
static void check_chance_loss_terms(void)
{
    zt_rng r;
    zt_rng_seed(&r, seed, 8);
    zt_net_config c = small_smz(3, 3, 3, 9, 5);
    zt_net *net = ref_net(&c, &r);
    unroll_data d;
    data_make(&d, &c, 6, 3, &r);
    zt_train_config tc;
    zt_train_config_default(&tc);
    tc.value_weight = 0.7;
    tc.reward_weight = 0.6;
    tc.chance_weight = 0.9;
    tc.commitment_weight = 0.4;
    tc.code_balance_weight = 0.3;
    tc.weight_decay = 0.01;
    zt_trainer *t;
    CHECK_OK(zt_trainer_new(net, &tc, &t));
    float *g = zt_xmalloc(zt_net_param_count(net) * sizeof(float));
    zt_train_batch b = data_batch(&d);
    zt_train_losses L;
    CHECK_OK(zt_trainer_loss_grad(t, &b, &L, g));
    int K = d.K, Z = c.chance_codes, counted = 0, skipped = 0;
    double q = 0, chance = 0, commit = 0, balance = 0, w = 1.0 / K, used[16] = {0};
    CHECK(Z <= 16, "codes");
    for (int k = 0; k < K; k++) {
        const float *sigma, *qv, *code, *enc;
        zt_mz_chance_outputs(zt_net_mz(net), k, &sigma, &qv, &code, &enc);
        double f[16] = {0}, P[16] = {0};
        int m = 0;
        for (int n = 0; n < d.B; n++) {
            const float *l = enc + (size_t)n * Z, *z = code + (size_t)n * Z,
                        *s = sigma + (size_t)n * Z;
            int best = 0, ones = 0;
            for (int j = 0; j < Z; j++) {
                if (l[j] > l[best]) best = j;
                ones += z[j] == 1.0f;
            }
            if (labels) best = d.code[(size_t)n * K + k];
            CHECK(ones == 1 && z[best] == 1.0f,
                  "step %d sample %d: the code is not the one-hot of the %s", k, n,
                  labels ? "game's outcome" : "encoder's argmax");
            q += w * pow(qv[n] - d.value[(size_t)n * (K + 1) + k], 2) / d.B;
            if (!d.chance_mask[(size_t)n * K + k]) {
                skipped++;
                continue;
            }
            counted++;
            double zs = 0;
            for (int j = 0; j < Z; j++) zs += exp(s[j]);
            chance -= w * (s[best] - log(zs)) / d.B;
            if (!labels)
                for (int j = 0; j < Z; j++) commit += w * pow(l[j] - z[j], 2) / d.B;
            used[best]++;
            double el = 0;
            for (int j = 0; j < Z; j++) el += exp(l[j]);
            for (int j = 0; j < Z; j++) P[j] += exp(l[j]) / el;
            f[best]++;
            m++;
        }
        for (int j = 0; j < Z && m > 0 && !labels; j++) balance += w * Z * (f[j] / m) * (P[j] / m);
    }
    CHECK(counted > 0 && skipped > 0, "the data has steps in and past the game (%d, %d)", counted,
          skipped);
    CHECK(fabs(L.afterstate - q) < 1e-6 * q, "afterstate %.9f, by hand %.9f", L.afterstate, q);
    CHECK(fabs(L.chance - chance) < 1e-6 * chance, "chance %.9f, by hand %.9f", L.chance, chance);
    CHECK(labels ? L.commitment == 0 : fabs(L.commitment - commit) < 1e-5 * commit,
          "commitment %.9f, by hand %.9f", L.commitment, commit);
    CHECK(labels ? L.code_balance == 0 : fabs(L.code_balance - balance) < 1e-6 * balance,
          "code balance %.9f, by hand %.9f", L.code_balance, balance);
    double h = 0;
    for (int j = 0; j < Z; j++)
        if (used[j] > 0) h -= used[j] / counted * log(used[j] / counted);
    CHECK(fabs(L.code_perplexity - exp(h)) < 1e-9 && L.code_perplexity >= 1,
          "code perplexity %.9f, by hand %.9f", L.code_perplexity, exp(h));
    double total = L.policy + 0.7 * (L.value + L.afterstate) + 0.6 * L.reward + 0.9 * L.chance +
                   0.4 * L.commitment + 0.3 * L.code_balance + L.l2;
    CHECK(fabs(L.total - total) < 1e-9, "total %.9f is not the weighted sum %.9f", L.total, total);
    free(g);
    zt_trainer_free(t);
    data_free(&d);
    zt_net_free(net);
}

static void test_chance_loss_terms(void)
{
    check_chance_loss_terms();
    labels = true; /* the game's codes: no encoder, no commitment */
    check_chance_loss_terms();
    labels = false;
}

/* The straight-through estimator changes the encoder's gradient only: with
 * share 1 against 0 every other tensor's gradient is the same, and the
 * encoder's moves by g's gradient on the code. */
static void test_straight_through(void)
{
    zt_rng r;
    zt_rng_seed(&r, seed, 9);
    zt_net_config c = small_smz(3, 3, 3, 9, 4);
    zt_net *net = ref_net(&c, &r);
    unroll_data d;
    data_make(&d, &c, 4, 2, &r);
    zt_train_batch b = data_batch(&d);
    size_t n = zt_net_param_count(net);
    float *g[2];
    for (int i = 0; i < 2; i++) {
        zt_train_config tc;
        zt_train_config_default(&tc);
        tc.straight_through = i;
        zt_trainer *t;
        CHECK_OK(zt_trainer_new(net, &tc, &t));
        g[i] = zt_xmalloc(n * sizeof(float));
        zt_train_losses L;
        CHECK_OK(zt_trainer_loss_grad(t, &b, &L, g[i]));
        zt_trainer_free(t);
    }
    const zt_nn_graph *tab = zt_net_graph(net);
    double enc_moved = 0;
    int enc_tensors = 0;
    for (int p = 0; p < tab->nparams; p++) {
        const zt_nn_param *pp = &tab->params[p];
        if (!pp->trainable) continue;
        bool enc = strncmp(pp->name, "enc.", 4) == 0;
        enc_tensors += enc;
        for (size_t e = 0; e < pp->count; e++) {
            float a = g[0][pp->offset + e], bb = g[1][pp->offset + e];
            if (enc)
                enc_moved = fmax(enc_moved, fabs((double)a - bb));
            else
                CHECK(a == bb, "%s's gradient moved with the straight-through share", pp->name);
        }
    }
    CHECK(enc_tensors > 0 && enc_moved > 1e-5,
          "the straight-through share changed no encoder "
          "gradient (%d tensors, %.2e)",
          enc_tensors, enc_moved);
    for (int i = 0; i < 2; i++) free(g[i]);
    data_free(&d);
    zt_net_free(net);
}

/* Inference steps as the unroll does: initial, afterstate with the action,
 * recurrent with the encoder's code give step 1's outputs of a K = 1
 * unroll (layer norm: the same in training and in use). */
static void check_stochastic_inference(int support)
{
    zt_rng r;
    zt_rng_seed(&r, seed, 10);
    zt_net_config c = small_smz(3, 3, 3, 9, 4);
    c.value_support = support;
    int V = zt_mz_value_outputs(&c);
    zt_net *net = ref_net(&c, &r);
    enum { B = 3 };
    unroll_data d;
    data_make(&d, &c, B, 1, &r);
    zt_train_config tc;
    zt_train_config_default(&tc);
    zt_trainer *t;
    CHECK_OK(zt_trainer_new(net, &tc, &t));
    float *g = zt_xmalloc(zt_net_param_count(net) * sizeof(float));
    zt_train_batch b = data_batch(&d);
    zt_train_losses L;
    CHECK_OK(zt_trainer_loss_grad(t, &b, &L, g));
    const float *pol, *val, *rew, *sigma, *q, *code, *enc;
    zt_mz_unroll_outputs(zt_net_mz(net), 1, &pol, &val, &rew);
    zt_mz_chance_outputs(zt_net_mz(net), 0, &sigma, &q, &code, &enc);
    int Z = c.chance_codes, A = c.num_actions, actions[B], codes[B];
    size_t hs = zt_net_hidden_size(&c);
    float h[B * 36], after[B * 36], h2[B * 36], p0[B * 9], v0[B], s1[B * 4], q1[B], p1[B * 9],
        v1[B], r1[B];
    CHECK(hs == 36, "hidden size %zu", hs);
    for (int n = 0; n < B; n++) {
        actions[n] = d.actions[n];
        codes[n] = 0;
        for (int j = 0; j < Z; j++)
            if (code[n * Z + j] == 1.0f) codes[n] = j;
    }
    CHECK_OK(zt_net_initial(net, B, d.obs, h, p0, v0));
    CHECK_OK(zt_net_afterstate(net, B, h, actions, after, s1, q1));
    CHECK_OK(zt_net_recurrent(net, B, after, codes, h2, r1, p1, v1, NULL));
    double worst = 0;
    for (int n = 0; n < B; n++) {
        /* the unroll keeps a categorical head's logits, inference gives
         * their expectation */
        double qe = V == 1 ? q[n] : zt_mz_support_expectation(q + n * V, support),
               ve = V == 1 ? val[n] : zt_mz_support_expectation(val + n * V, support),
               re = V == 1 ? rew[n] : zt_mz_support_expectation(rew + n * V, support);
        worst = fmax(worst, fabs(q1[n] - qe));
        worst = fmax(worst, fabs(v1[n] - ve));
        worst = fmax(worst, fabs(r1[n] - re));
        for (int j = 0; j < Z; j++) worst = fmax(worst, fabs(s1[n * Z + j] - sigma[n * Z + j]));
        for (int a = 0; a < A; a++) worst = fmax(worst, fabs(p1[n * A + a] - pol[n * A + a]));
    }
    printf("stochastic inference against the unroll (support %d): worst difference %.2e\n", support,
           worst);
    CHECK(worst < 1e-5, "inference differs from the unroll by %.2e", worst);
    free(g);
    zt_trainer_free(t);
    data_free(&d);
    zt_net_free(net);
}

static void test_stochastic_inference(void)
{
    check_stochastic_inference(0);
    check_stochastic_inference(6);
}

/* With K = 1 the only path through the dynamics input is h's parameters
 * via step 1's terms, so their gradient is linear in the scale:
 * g(0.5) = (g(0) + g(1)) / 2, and g's and f's are untouched by it. */
static void test_dynamics_scale(void)
{
    zt_rng r;
    zt_rng_seed(&r, seed, 4);
    zt_net_config c = small_mz(3, 3, 3, 9);
    zt_net *net = ref_net(&c, &r);
    unroll_data d;
    data_make(&d, &c, 4, 1, &r);
    zt_train_batch b = data_batch(&d);
    size_t n = zt_net_param_count(net);
    float *g[3];
    const double scales[3] = {0, 0.5, 1};
    for (int i = 0; i < 3; i++) {
        zt_train_config tc;
        zt_train_config_default(&tc);
        tc.dynamics_grad_scale = scales[i];
        zt_trainer *t;
        CHECK_OK(zt_trainer_new(net, &tc, &t));
        g[i] = zt_xmalloc(n * sizeof(float));
        zt_train_losses L;
        CHECK_OK(zt_trainer_loss_grad(t, &b, &L, g[i]));
        zt_trainer_free(t);
    }
    double worst = 0, moved = 0;
    for (size_t i = 0; i < n; i++) {
        double mid = 0.5 * ((double)g[0][i] + g[2][i]);
        worst = fmax(worst, fabs(g[1][i] - mid) / (fabs(mid) + 1e-3));
        moved = fmax(moved, fabs((double)g[2][i] - g[0][i]));
    }
    CHECK(worst < 1e-3, "gradient at scale 0.5 off the midpoint by %.2e", worst);
    CHECK(moved > 1e-4, "the scale changed no gradient");
    /* the gradient of g's and f's parameters does not depend on it */
    const zt_nn_graph *tab = zt_net_graph(net);
    for (int p = 0; p < tab->nparams; p++) {
        const zt_nn_param *pp = &tab->params[p];
        if (!pp->trainable || strncmp(pp->name, "repr.", 5) == 0) continue;
        for (size_t e = 0; e < pp->count; e++)
            CHECK(fabsf(g[0][pp->offset + e] - g[2][pp->offset + e]) <=
                      1e-5f * (1 + fabsf(g[2][pp->offset + e])),
                  "%s moved with the scale", pp->name);
    }
    for (int i = 0; i < 3; i++) free(g[i]);
    data_free(&d);
    zt_net_free(net);
}

/* ---- the oneDNN backend against the reference ---- */

static double rel_err(const float *a, const float *b, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        den += (double)b[i] * b[i];
    }
    return sqrt(num / (den + 1e-30));
}

static void copy_params(zt_net *dst, zt_net *src)
{
    for (int i = 0; i < zt_net_tensor_count(src); i++) {
        zt_net_tensor a = zt_net_tensor_at(src, i), b = zt_net_tensor_at(dst, i);
        memcpy(b.data, a.data, a.count * sizeof(float));
    }
    zt_net_params_changed(dst);
}

/* check_backend builds its nets with plain heads while this is set */
static bool backend_plain_heads;

/* codes > 0: a Stochastic MuZero net, its afterstates compared too and the
 * recurrent step taken from them with codes. */
/* turns: backgammon's shape, one cell (1x1 kernels) with g's to-play head */
static void check_backend(zt_precision prec, int codes, bool turns, double out_tol,
                          double grad_tol)
{
    const char *pn = zt_precision_name(prec);
    zt_rng r;
    zt_rng_seed(&r, seed, 5);
    zt_net_config c = turns ? small_smz(1, 1, 12, 7, codes) : small_smz(6, 7, 2, 7, codes);
    c.turn_head = turns;
    if (backend_plain_heads) c.head_norm = 0;
    c.channels = 16;
    c.value_hidden = 16;
    zt_net *ref, *cpu;
    CHECK_OK(zt_net_new(&c, "ref", prec, 1, &ref));
    if (zt_net_new(&c, "cpu", prec, 1, &cpu) != ZT_OK) {
        printf("cpu backend %s: not here (%s), skipped\n", pn, zt_error_message());
        zt_net_free(ref);
        return;
    }
    zt_net_init(ref, &r);
    randomise_norms(ref, &r);
    copy_params(cpu, ref);
    int B = 8, A = c.num_actions;
    size_t hs = zt_net_hidden_size(&c), obs_n = (size_t)c.in_h * c.in_w * c.in_c;
    float *obs = zt_xmalloc((size_t)B * obs_n * sizeof(float));
    for (size_t i = 0; i < (size_t)B * obs_n; i++) obs[i] = (float)(zt_rng_uniform(&r) < 0.3);
    float *h[2], *h2[2], *pol[2], *val[2], *rew[2];
    zt_net *nets[2] = {ref, cpu};
    int actions[8], code_of[8];
    for (int i = 0; i < B; i++) {
        actions[i] = (int)zt_rng_below(&r, (uint32_t)A);
        code_of[i] = codes ? (int)zt_rng_below(&r, (uint32_t)codes) : 0;
    }
    for (int i = 0; i < 2; i++) {
        h[i] = zt_xmalloc((size_t)B * hs * sizeof(float));
        h2[i] = zt_xmalloc((size_t)B * hs * sizeof(float));
        pol[i] = zt_xmalloc((size_t)B * A * sizeof(float));
        val[i] = zt_xmalloc((size_t)B * sizeof(float));
        rew[i] = zt_xmalloc((size_t)B * sizeof(float));
        CHECK_OK(zt_net_initial(nets[i], B, obs, h[i], pol[i], val[i]));
    }
    double eh = rel_err(h[1], h[0], (size_t)B * hs), ep = rel_err(pol[1], pol[0], (size_t)B * A),
           ev = rel_err(val[1], val[0], (size_t)B);
    printf("cpu %s%s initial: hidden %.2e policy %.2e value %.2e\n", pn,
           backend_plain_heads ? ", plain heads" : "", eh, ep, ev);
    CHECK(eh < out_tol && ep < out_tol && ev < out_tol, "cpu %s initial differs", pn);
    const float *from = h[0];
    const int *steps = actions;
    float *after[2] = {NULL, NULL}, *sig[2] = {NULL, NULL};
    if (codes) {
        for (int i = 0; i < 2; i++) {
            after[i] = zt_xmalloc((size_t)B * hs * sizeof(float));
            sig[i] = zt_xmalloc((size_t)B * codes * sizeof(float));
            CHECK_OK(zt_net_afterstate(nets[i], B, h[0], actions, after[i], sig[i], val[i]));
        }
        eh = rel_err(after[1], after[0], (size_t)B * hs);
        double es = rel_err(sig[1], sig[0], (size_t)B * codes);
        ev = rel_err(val[1], val[0], (size_t)B);
        printf("cpu %s afterstate: afterstate %.2e sigma %.2e q %.2e\n", pn, eh, es, ev);
        CHECK(eh < out_tol && es < out_tol && ev < out_tol, "cpu %s afterstate differs", pn);
        from = after[0];
        steps = code_of;
    }
    float turn[2][8];
    for (int i = 0; i < 2; i++)
        CHECK_OK(
            zt_net_recurrent(nets[i], B, from, steps, h2[i], rew[i], pol[i], val[i], turn[i]));
    if (turns) {
        double et = rel_err(turn[1], turn[0], (size_t)B);
        printf("cpu %s recurrent, one cell: to-play %.2e\n", pn, et);
        CHECK(et < out_tol, "cpu %s to-play head differs", pn);
    }
    eh = rel_err(h2[1], h2[0], (size_t)B * hs), ep = rel_err(pol[1], pol[0], (size_t)B * A);
    ev = rel_err(val[1], val[0], (size_t)B);
    double er = rel_err(rew[1], rew[0], (size_t)B);
    printf("cpu %s recurrent: hidden %.2e policy %.2e value %.2e reward %.2e\n", pn, eh, ep, ev,
           er);
    CHECK(eh < out_tol && ep < out_tol && ev < out_tol && er < out_tol, "cpu %s recurrent differs",
          pn);
    /* the unrolled loss's gradient; bf16 is held to the reference's own
     * bf16 emulation, as test_nn_cpu does: at most twice its distance from
     * fp32 plus 5 % (oneDNN also carries the incoming gradients in bf16) */
    unroll_data d;
    data_make(&d, &c, B, 3, &r);
    zt_train_batch b = data_batch(&d);
    size_t n = zt_net_param_count(ref);
    float *g[3];
    zt_train_losses L[3];
    zt_net *exact = NULL;
    CHECK_OK(zt_net_new(&c, "ref", ZT_PRECISION_FP32, 1, &exact));
    copy_params(exact, ref);
    zt_net *gnets[3] = {ref, cpu, exact};
    for (int i = 0; i < 3; i++) {
        zt_train_config tc;
        zt_train_config_default(&tc);
        zt_trainer *t;
        CHECK_OK(zt_trainer_new(gnets[i], &tc, &t));
        g[i] = zt_xmalloc(n * sizeof(float));
        CHECK_OK(zt_trainer_loss_grad(t, &b, &L[i], g[i]));
        zt_trainer_free(t);
    }
    double eg = rel_err(g[1], g[0], n), el = fabs(L[1].total - L[0].total) / L[0].total;
    double e_cpu = rel_err(g[1], g[2], n), e_emu = rel_err(g[0], g[2], n);
    printf("cpu %s unroll: loss %.2e gradient %.2e (from fp32: cpu %.2e, reference %.2e)\n", pn, el,
           eg, e_cpu, e_emu);
    CHECK(el < out_tol, "cpu %s unroll loss differs by %.2e", pn, el);
    if (prec == ZT_PRECISION_FP32)
        CHECK(eg < grad_tol, "cpu %s unroll gradient differs by %.2e", pn, eg);
    else
        CHECK(e_cpu <= 2 * e_emu + grad_tol, "cpu bf16 gradient %.2e from fp32, reference %.2e",
              e_cpu, e_emu);
    free(g[2]);
    zt_net_free(exact);
    for (int i = 0; i < 2; i++) {
        free(h[i]), free(h2[i]), free(pol[i]), free(val[i]), free(rew[i]), free(g[i]);
        free(after[i]), free(sig[i]);
    }
    free(obs);
    data_free(&d);
    zt_net_free(ref);
    zt_net_free(cpu);
}

static void test_cpu_backend(void)
{
    check_backend(ZT_PRECISION_FP32, 0, false, 1e-4, 1e-3);
    /* fp32 only: in bf16 an encoder logit's rounding can flip a code */
    check_backend(ZT_PRECISION_FP32, 5, false, 1e-4, 1e-3);
    check_backend(ZT_PRECISION_FP32, 4, true, 1e-4, 1e-3);
    backend_plain_heads = true;
    check_backend(ZT_PRECISION_FP32, 5, false, 1e-4, 1e-3);
    backend_plain_heads = false;
    /* bf16 on both: each rounds at different points, so the bound is what a
     * few roundings of 2^-8 add up to through three nets. */
    zt_net_config c = small_mz(6, 7, 2, 7);
    zt_net *probe;
    if (zt_net_new(&c, "cpu", ZT_PRECISION_BF16, 1, &probe) == ZT_OK) {
        zt_net_free(probe);
        check_backend(ZT_PRECISION_BF16, 0, false, 5e-2, 5e-2);
        /* one cell: its 1x1 convs run as oneDNN inner products */
        check_backend(ZT_PRECISION_BF16, 0, true, 5e-2, 5e-2);
    } else {
        printf("cpu bf16: not here, skipped\n");
    }
}

/* ---- architecture string, files, forward ---- */

/* c's architecture string is WANT, and it parses back to c */
static void check_round_trip(const zt_net_config *c, const char *want, const char *what)
{
    char text[256];
    zt_net_config back;
    zt_net_config_format(c, text, sizeof text);
    CHECK(strcmp(text, want) == 0, "format (%s): %s", what, text);
    CHECK(zt_net_config_parse(text, &back) == ZT_OK, "parse (%s): %s", what, zt_error_message());
    CHECK(memcmp(&back, c, sizeof back) == 0, "parse(format(%s)) != it", what);
}

/* X (a net of kind XS) saves its weights and loads them back while Y (of
 * kind YS) refuses them; then X refuses Y's. */
static void check_refused_both_ways(zt_net *x, const char *xs, zt_net *y, const char *ys,
                                    const char *path)
{
    CHECK_OK(zt_net_save(x, "tictactoe", path));
    CHECK(zt_net_load(y, "tictactoe", path) != ZT_OK, "a %s net loaded %s weights", ys, xs);
    printf("%s net loading %s weights: %s\n", ys, xs, zt_error_message());
    CHECK_OK(zt_net_load(x, "tictactoe", path));
    CHECK_OK(zt_net_save(y, "tictactoe", path));
    CHECK(zt_net_load(x, "tictactoe", path) != ZT_OK, "a %s net loaded %s weights", xs, ys);
}

static void test_config_and_files(void)
{
    zt_rng r;
    zt_rng_seed(&r, seed, 6);
    zt_net_config c = small_mz(3, 3, 3, 9), back;
    char text[256];
    check_round_trip(&c,
                     "muzero in=3x3x3 actions=9 value=scalar:5 ch=4 blocks=1 dyn=1 pred=1 pol=2 "
                     "valc=1",
                     "c");
    c.value_kind = ZT_VALUE_WDL;
    CHECK(zt_net_config_check(&c) != ZT_OK, "a wdl muzero net is refused");
    c.value_kind = ZT_VALUE_SCALAR;

    zt_net *a, *b2;
    CHECK_OK(zt_net_new(&c, "ref", ZT_PRECISION_FP32, 1, &a));
    CHECK_OK(zt_net_new(&c, "ref", ZT_PRECISION_FP32, 1, &b2));
    zt_net_init(a, &r);
    randomise_norms(a, &r);
    char path[] = "/tmp/zt_test_muzero_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp");
    if (fd >= 0) close(fd);
    CHECK_OK(zt_net_save(a, "tictactoe", path));
    CHECK_OK(zt_net_load(b2, "tictactoe", path));
    float obs[27], pa[9], pb[9], va, vb, h[36];
    for (int i = 0; i < 27; i++) obs[i] = (float)(i % 3 == 0);
    CHECK_OK(zt_net_forward(a, 1, obs, pa, &va));
    CHECK_OK(zt_net_forward(b2, 1, obs, pb, &vb));
    CHECK(memcmp(pa, pb, sizeof pa) == 0 && va == vb, "a loaded muzero net differs");
    CHECK_OK(zt_net_initial(a, 1, obs, h, pb, &vb));
    CHECK(memcmp(pa, pb, sizeof pa) == 0 && va == vb, "forward is not f(h(obs))");
    /* an AlphaZero net refuses the file */
    zt_net_config az;
    zt_net_config_default(&az, 3, 3, 3, 9);
    zt_net *z;
    CHECK_OK(zt_net_new(&az, "ref", ZT_PRECISION_FP32, 1, &z));
    CHECK(zt_net_load(z, "tictactoe", path) != ZT_OK, "an alphazero net loaded muzero weights");
    printf("alphazero net loading muzero weights: %s\n", zt_error_message());
    CHECK_OK(zt_net_save(z, "tictactoe", path));
    CHECK(zt_net_load(a, "tictactoe", path) != ZT_OK, "a muzero net loaded alphazero weights");
    printf("muzero net loading alphazero weights: %s\n", zt_error_message());
    /* Stochastic MuZero: the codebook in the string, and each kind refuses
     * the other's weights */
    zt_net_config sc = small_smz(3, 3, 3, 9, 6);
    check_round_trip(&sc,
                     "muzero in=3x3x3 actions=9 value=scalar:5 ch=4 blocks=1 dyn=1 pred=1 pol=2 "
                     "valc=1 codes=6",
                     "stochastic c");
    CHECK(zt_net_config_parse("muzero in=3x3x3 actions=9 value=scalar:5 ch=4 blocks=1 dyn=1 pred=1 "
                              "pol=2 valc=1 codes=",
                              &back) != ZT_OK,
          "a truncated codebook parsed");
    sc.value_support = 10;
    check_round_trip(&sc,
                     "muzero in=3x3x3 actions=9 value=scalar:5 ch=4 blocks=1 dyn=1 pred=1 pol=2 "
                     "valc=1 codes=6 support=10",
                     "c with a support");
    CHECK(zt_net_config_parse("muzero in=3x3x3 actions=9 value=scalar:5 ch=4 blocks=1 dyn=1 pred=1 "
                              "pol=2 valc=1 support=10 codes=6",
                              &back) != ZT_OK,
          "a non-canonical order parsed");
    sc.value_support = ZT_MZ_MAX_SUPPORT + 1;
    CHECK(zt_net_config_check(&sc) != ZT_OK, "a support above the maximum accepted");
    sc.value_support = 0;
    zt_net_config bad = sc;
    bad.chance_codes = -1;
    CHECK(zt_net_config_check(&bad) != ZT_OK, "negative chance codes accepted");
    zt_net_config az_codes = az;
    az_codes.chance_codes = 4;
    CHECK(zt_net_config_check(&az_codes) != ZT_OK, "a resnet with chance codes accepted");
    /* the to-play head: last in the string, muzero nets only, 0 or 1 */
    zt_net_config tc = small_mz(1, 1, 7, 5);
    tc.turn_head = 1;
    check_round_trip(&tc,
                     "muzero in=1x1x7 actions=5 value=scalar:5 ch=4 blocks=1 dyn=1 pred=1 pol=2 "
                     "valc=1 turns heads=plain",
                     "c with a to-play head");
    CHECK(zt_net_config_parse("muzero in=1x1x7 actions=5 value=scalar:5 ch=4 blocks=1 dyn=1 "
                              "pred=1 pol=2 valc=1 turns codes=2",
                              &back) != ZT_OK,
          "a to-play head before the codebook parsed");
    tc.turn_head = 2;
    CHECK(zt_net_config_check(&tc) != ZT_OK, "turn_head 2 accepted");
    az_codes = az;
    az_codes.turn_head = 1;
    CHECK(zt_net_config_check(&az_codes) != ZT_OK, "a resnet with a to-play head accepted");
    /* column actions: last in the string (after a to-play head), muzero
     * nets only, and one action per board column */
    zt_net_config cc = small_mz(6, 7, 3, 7);
    cc.action_columns = 1;
    CHECK_OK(zt_net_config_check(&cc));
    check_round_trip(&cc,
                     "muzero in=6x7x3 actions=7 value=scalar:5 ch=4 blocks=1 dyn=1 pred=1 pol=2 "
                     "valc=1 columns",
                     "c with column actions");
    tc.turn_head = 1;
    tc.in_w = 5;
    tc.action_columns = 1;
    zt_net_config_format(&tc, text, sizeof text);
    CHECK_OK(zt_net_config_parse(text, &back));
    CHECK(back.turn_head == 1 && back.action_columns == 1, "turns and columns: %s", text);
    CHECK(zt_net_config_parse("muzero in=6x7x3 actions=7 value=scalar:5 ch=4 blocks=1 dyn=1 "
                              "pred=1 pol=2 valc=1 columns turns",
                              &back) != ZT_OK,
          "columns before a to-play head parsed");
    tc.in_w = 1;
    tc.action_columns = 0;
    cc.num_actions = 6;
    CHECK(zt_net_config_check(&cc) != ZT_OK, "column actions with 6 actions on 7 columns accepted");
    cc.num_actions = 7;
    cc.action_columns = 2;
    CHECK(zt_net_config_check(&cc) != ZT_OK, "action_columns 2 accepted");
    az_codes = az;
    az_codes.action_columns = 1;
    CHECK(zt_net_config_check(&az_codes) != ZT_OK, "a resnet with column actions accepted");
    /* plain heads: " heads=plain" last; without it the heads have layer
     * norms; each kind refuses the other's weights */
    zt_net_config plain = small_mz(6, 7, 3, 7);
    plain.action_columns = 1;
    plain.head_norm = 0;
    check_round_trip(&plain,
                     "muzero in=6x7x3 actions=7 value=scalar:5 ch=4 blocks=1 dyn=1 pred=1 pol=2 "
                     "valc=1 columns heads=plain",
                     "c with column actions and plain heads");
    zt_net_config old;
    CHECK_OK(zt_net_config_parse("muzero in=6x7x3 actions=7 value=scalar:5 ch=4 blocks=1 dyn=1 "
                                 "pred=1 pol=2 valc=1 columns",
                                 &old));
    CHECK(old.head_norm == 1 && old.action_columns == 1, "no heads=plain: head_norm %d",
          old.head_norm);
    CHECK(zt_net_config_parse("muzero in=6x7x3 actions=7 value=scalar:5 ch=4 blocks=1 dyn=1 "
                              "pred=1 pol=2 valc=1 heads=plain columns",
                              &back) != ZT_OK,
          "plain heads before column actions parsed");
    az_codes = az;
    az_codes.head_norm = 1;
    CHECK(zt_net_config_check(&az_codes) != ZT_OK, "a resnet with normed heads accepted");
    zt_net_config pc = c;
    pc.head_norm = 0;
    zt_net *pn;
    CHECK_OK(zt_net_new(&pc, "ref", ZT_PRECISION_FP32, 1, &pn));
    zt_net_init(pn, &r);
    CHECK(zt_net_tensor_count(pn) != zt_net_tensor_count(a), "normed and plain heads: %d tensors",
          zt_net_tensor_count(pn));
    check_refused_both_ways(pn, "plain-head", a, "normed-head", path);
    zt_net_free(pn);
    /* one cell: 1x1 kernels, so a 3x3 tower's weights are not carried */
    tc.turn_head = 1;
    zt_net *one;
    CHECK_OK(zt_net_new(&tc, "ref", ZT_PRECISION_FP32, 1, &one));
    bool found = false;
    for (int i = 0; i < zt_net_tensor_count(one); i++) {
        zt_net_tensor tt = zt_net_tensor_at(one, i);
        if (strcmp(tt.name, "repr.blocks.0.conv1.weight") == 0) {
            found = true;
            CHECK(tt.count == 4 * 4, "a one-cell block's conv holds %zu weights, not 16", tt.count);
        }
    }
    CHECK(found, "no repr.blocks.0.conv1.weight tensor");
    zt_net_free(one);
    zt_net *st;
    CHECK_OK(zt_net_new(&sc, "ref", ZT_PRECISION_FP32, 1, &st));
    zt_net_init(st, &r);
    check_refused_both_ways(st, "stochastic muzero", b2, "muzero", path);
    zt_net_free(st);
    remove(path);
    zt_net_free(z);
    zt_net_free(a);
    zt_net_free(b2);
}

/* One cell (backgammon's feature vector): the value, Q, reward and to-play
 * heads answer the state. With layer norms in the heads (over one plane of
 * one cell; what backgammon's nets had before 2026-11-30, and what
 * muzero.heads now refuses there) each was its norm's beta, whatever the
 * observation; the plain heads give eight observations eight values. */
/* max - min of n values */
static double spread(const float *x, int n)
{
    float lo = x[0], hi = x[0];
    for (int i = 1; i < n; i++) {
        lo = x[i] < lo ? x[i] : lo;
        hi = x[i] > hi ? x[i] : hi;
    }
    return (double)hi - lo;
}

static void test_one_cell_heads(void)
{
    enum { B = 8, A = 5, Z = 3 };
    zt_rng r;
    zt_rng_seed(&r, seed, 8);
    for (int old = 0; old <= 1; old++) {
        zt_net_config c = small_smz(1, 1, 7, A, Z);
        c.turn_head = 1;
        c.head_norm = old;
        c.channels = 8;
        c.value_hidden = 16;
        zt_net *net = ref_net(&c, &r);
        size_t hs = zt_net_hidden_size(&c);
        float obs[B * 7], hidden[B * 8], after[B * 8], next[B * 8], pol[B * A], sig[B * Z];
        float val[B], q[B], rew[B], next_val[B], turn[B];
        int act[B], code[B];
        CHECK(hs == 8, "hidden size %zu", hs);
        for (int i = 0; i < B * 7; i++) obs[i] = (float)zt_rng_normal(&r);
        for (int i = 0; i < B; i++) act[i] = i % A, code[i] = i % Z;
        CHECK_OK(zt_net_initial(net, B, obs, hidden, pol, val));
        CHECK_OK(zt_net_afterstate(net, B, hidden, act, after, sig, q));
        CHECK_OK(zt_net_recurrent(net, B, after, code, next, rew, pol, next_val, turn));
        double dv = spread(val, B), dq = spread(q, B), dr = spread(rew, B), dt = spread(turn, B);
        printf("one cell, %s heads: the spread of %d observations' value %.2e, Q %.2e, reward "
               "%.2e, to-play %.2e\n",
               old ? "normed" : "plain", B, dv, dq, dr, dt);
        if (old)
            CHECK(dv < 1e-6 && dq < 1e-6 && dr < 1e-6 && dt < 1e-6,
                  "the normed heads were not constant on one cell");
        else
            CHECK(dv > 1e-3 && dq > 1e-3 && dr > 1e-3 && dt > 1e-3,
                  "a one-cell head ignores the state: %.2e %.2e %.2e %.2e", dv, dq, dr, dt);
        zt_net_free(net);
    }
}

/* A few hundred Adam steps on one fixed batch fit it: the unrolled loss
 * falls to a fraction of where it started. */
static void check_training(int codes)
{
    zt_rng r;
    zt_rng_seed(&r, seed, 7);
    zt_net_config c = small_smz(3, 3, 3, 9, codes);
    c.channels = 8;
    zt_net *net;
    CHECK_OK(zt_net_new(&c, "auto", ZT_PRECISION_FP32, 1, &net));
    zt_net_init(net, &r);
    unroll_data d;
    data_make(&d, &c, 16, 3, &r);
    for (size_t i = 0; i < (size_t)16 * 4; i++) { /* sharp policy targets */
        int best = (int)zt_rng_below(&r, 9);
        for (int a = 0; a < 9; a++) d.policy[i * 9 + a] = a == best;
    }
    zt_train_config tc;
    zt_train_config_default(&tc);
    tc.optimizer = ZT_OPT_ADAMW;
    tc.lr = 3e-3;
    tc.weight_decay = 0;
    zt_trainer *t;
    CHECK_OK(zt_trainer_new(net, &tc, &t));
    zt_train_batch b = data_batch(&d);
    zt_train_losses first, last;
    CHECK_OK(zt_trainer_step(t, &b, &first));
    for (int s = 0; s < 300; s++) CHECK_OK(zt_trainer_step(t, &b, &last));
    printf("training (%d codes): loss %.4f -> %.4f (policy %.4f value %.4f reward %.4f "
           "afterstate %.4f chance %.4f commitment %.4f)\n",
           codes, first.total, last.total, last.policy, last.value, last.reward, last.afterstate,
           last.chance, last.commitment);
    CHECK(last.total < 0.25 * first.total, "loss %.4f -> %.4f", first.total, last.total);
    zt_trainer_free(t);
    data_free(&d);
    zt_net_free(net);
}

static void test_training(void)
{
    check_training(0);
    check_training(4);
}

int main(void)
{
    seed = zt_test_seed(11);
    test_minmax();
    test_minmax_ties();
    test_action_planes();
    test_policy_loss();
    test_cosine_loss();
    test_support();
    test_loss_terms();
    test_chance_loss_terms();
    test_turn_loss();
    test_consistency_terms();
    test_unroll_gradients();
    test_straight_through();
    test_dynamics_scale();
    test_stochastic_inference();
    test_cpu_backend();
    test_config_and_files();
    test_one_cell_heads();
    test_training();
    return zt_test_finish("test_muzero");
}
