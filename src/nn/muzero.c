/* MuZero's networks (Schrittwieser et al. 2020, appendix F for board games)
 * and the K-step unrolled loss (appendix G); the design is in muzero.h. */
#include <immintrin.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "nn/muzero.h"

/* Plain MuZero has the first three; Stochastic MuZero all six: afterstate
 * dynamics phi, afterstate prediction psi and the chance encoder e after
 * them, so that a plain net's parameter layout is the same either way. */
enum { FN_REPR, FN_DYN, FN_PRED, FN_AFTER, FN_APRED, FN_ENC, FN_COUNT };

/* Stochastic MuZero's training buffers, K of each (step k: the afterstate
 * after the action from step k, its psi outputs, the code of the chance
 * outcome into step k + 1). */
typedef struct mz_chance_train {
    zt_nn_plan **after, **apred, **enc;
    float **as, **a_range; /* scaled afterstates, tcap x hidden; their ranges */
    int32_t **a_imin, **a_imax;
    float **clog, **d_clog;     /* sigma's logits, tcap x C, and their gradients */
    float **q, **d_q;           /* psi's Q, tcap */
    float **elog, **code; /* encoder logits, the one-hot code of their argmax */
    float *ein, *d_after, *d_elog, *d_code;
    double *code_count; /* codes chosen in the current step, C (the usage statistic) */
    double *usage;      /* the share of a micro-batch's transitions given each code, C */
    double *soft;       /* one transition's softmax over the codes, C */
} mz_chance_train;

struct zt_mz {
    zt_net_config cfg;
    int nfn, codes; /* graphs in use (3 or 6); chance codes C (0: plain MuZero) */
    int ksize;      /* the towers' kernel: 3, or 1 on a board of one cell */
    zt_nn_graph g[FN_COUNT];
    size_t poff[FN_COUNT], soff[FN_COUNT]; /* each graph's slice of the net's arrays */
    const zt_nn_backend *be;
    float *params, *state;
    zt_precision prec;
    int threads;
    zt_nn_plan *plan[FN_COUNT]; /* inference */
    /* inference scratch, for batches up to cap */
    int cap;
    float *gin, *raw, *hidden;
    int32_t *imin, *imax;
    float *range;
    float *icode;       /* Stochastic MuZero: one-hot codes, cap x C */
    float *ival, *irew; /* categorical heads: their logits, cap x (2N + 1) */
    float *iturn;       /* the to-play head's logits, cap */
    /* training: plan instances for an unroll of K steps and batches up to
     * tcap: h once, g K times, f K + 1 times */
    int K, tcap;
    zt_nn_plan *t_repr, **t_dyn, **t_pred;
    float **s; /* K + 1: scaled hidden states, tcap x hidden */
    int32_t **t_imin, **t_imax;
    float **t_range;                 /* K + 1 x tcap */
    float **pol, **val, **rew;       /* outputs per step */
    float **d_pol, **d_val, **d_rew; /* their loss gradients */
    float **turn, **d_turn;          /* to-play head: g's logits per step (k >= 1) */
    float *t_gin, *t_raw, *ds, *dx, *dtmp, *d_gin;
    int *t_act;         /* tcap: the actions of one step */
    mz_chance_train ct; /* Stochastic MuZero only */
    /* the consistency term (consistency_weight > 0): a plan of h for its
     * targets, run without gradient over the unroll's next observations
     * (c_cap rows: B x K), their raw and scaled hidden states */
    zt_nn_plan *c_plan;
    int c_cap;
    float *c_raw, *c_tgt, *c_range;
    int32_t *c_imin, *c_imax;
};

/* ---- graphs ---- */

/* The blocks of AlphaZero's tower (net.c) with layer norm in place of batch
 * norm. Batch norm's running statistics would average the distributions of
 * all K + 1 steps of the unroll (each plan instance updates them), so the
 * nets used in search would differ from the ones trained, more with every
 * dynamics step (measured: mean logit gaps of 0.26 at the root and 1.8 three
 * steps in on a fitted batch); layer norm normalises each sample by itself,
 * the same in training and in use. */
static const char *join(char *buf, size_t cap, const char *a, const char *b)
{
    int len = snprintf(buf, cap, "%s.%s", a, b);
    ZT_ASSERT(len > 0 && (size_t)len < cap);
    return buf;
}

static int conv_norm_relu(zt_nn_graph *g, const char *name, int x, int out_c, int k)
{
    char buf[64];
    /* no conv bias: the norm's beta that follows plays its part */
    x = zt_nn_graph_conv(g, join(buf, sizeof buf, name, "conv"), x, out_c, k, false);
    x = zt_nn_graph_ln(g, join(buf, sizeof buf, name, "norm"), x);
    return zt_nn_graph_relu(g, x);
}

static int residual(zt_nn_graph *g, const char *name, int x, int k)
{
    char buf[64];
    int c = g->tensors[x].c;
    int y = zt_nn_graph_conv(g, join(buf, sizeof buf, name, "conv1"), x, c, k, false);
    y = zt_nn_graph_ln(g, join(buf, sizeof buf, name, "norm1"), y);
    y = zt_nn_graph_relu(g, y);
    y = zt_nn_graph_conv(g, join(buf, sizeof buf, name, "conv2"), y, c, k, false);
    y = zt_nn_graph_ln(g, join(buf, sizeof buf, name, "norm2"), y);
    return zt_nn_graph_relu(g, zt_nn_graph_add(g, y, x));
}

/* The first layer of every head (value, reward, Q, to-play, policy, sigma,
 * encoder). AlphaZero's heads open with a 1x1 conv to a few planes and a
 * batch norm; with head_norm a layer norm takes batch norm's place (see
 * above), which normalises each sample's planes by their own mean and
 * spread: it takes away the planes' level, and on a one-cell board
 * (backgammon) with one plane it leaves only beta, so the value, reward, Q
 * and to-play heads were constants (the nets of before 2026-11-30). The
 * plain heads (head_norm = 0) have a conv with bias and a ReLU instead,
 * which is what batch norm at inference, an affine map per plane, makes of
 * AlphaZero's; on a one-cell board a few planes would be a head's whole
 * input, so there a head reads the state itself. */
static int head_planes(zt_nn_graph *g, const char *name, int x, int planes, const zt_net_config *c)
{
    if (c->head_norm) return conv_norm_relu(g, name, x, planes, 1);
    if (c->in_h * c->in_w == 1) return x;
    char buf[64];
    x = zt_nn_graph_conv(g, join(buf, sizeof buf, name, "conv"), x, planes, 1, true);
    return zt_nn_graph_relu(g, x);
}

/* A value head (the value's, the reward's, Q's): the head's planes,
 * dense-ReLU, then dense to one output and tanh (board games' values and
 * rewards lie in [-1, 1]), or with a support of N the 2N + 1 logits of a
 * categorical distribution over the atoms i / N, i = -N..N. */
static int value_head(zt_nn_graph *g, const char *name, int x, const zt_net_config *c)
{
    char buf[64];
    int outs = zt_mz_value_outputs(c);
    x = head_planes(g, name, x, c->value_channels, c);
    x = zt_nn_graph_dense(g, join(buf, sizeof buf, name, "fc1"), x, c->value_hidden, true);
    x = zt_nn_graph_relu(g, x);
    x = zt_nn_graph_dense(g, join(buf, sizeof buf, name, "fc2"), x, outs, true);
    return outs == 1 ? zt_nn_graph_tanh(g, x) : x;
}

/* The to-play head: the value head's shape ending in one logit (the
 * probability that the turn passed, through a sigmoid outside the graph). */
static int turn_head(zt_nn_graph *g, const char *name, int x, const zt_net_config *c)
{
    char buf[64];
    x = head_planes(g, name, x, c->value_channels, c);
    x = zt_nn_graph_dense(g, join(buf, sizeof buf, name, "fc1"), x, c->value_hidden, true);
    x = zt_nn_graph_relu(g, x);
    return zt_nn_graph_dense(g, join(buf, sizeof buf, name, "fc2"), x, 1, true);
}

static void build_graphs(zt_mz *mz)
{
    const zt_net_config *c = &mz->cfg;
    char name[32], buf[64];
    int P = zt_net_action_planes(c), k = mz->ksize;

    zt_nn_graph *g = &mz->g[FN_REPR];
    zt_nn_graph_init(g);
    int x = zt_nn_graph_input(g, (zt_nn_shape){c->in_h, c->in_w, c->in_c});
    x = conv_norm_relu(g, "repr.stem", x, c->channels, k);
    for (int b = 0; b < c->blocks; b++) {
        snprintf(name, sizeof name, "repr.blocks.%d", b);
        x = residual(g, name, x, k);
    }
    zt_nn_graph_output(g, x);

    /* g: (hidden state, action planes), or Stochastic MuZero's (afterstate,
     * code planes) */
    g = &mz->g[FN_DYN];
    zt_nn_graph_init(g);
    x = zt_nn_graph_input(
        g, (zt_nn_shape){c->in_h, c->in_w, c->channels + (mz->codes ? mz->codes : P)});
    x = conv_norm_relu(g, "dyn.stem", x, c->channels, k);
    for (int b = 0; b < c->dyn_blocks; b++) {
        snprintf(name, sizeof name, "dyn.blocks.%d", b);
        x = residual(g, name, x, k);
    }
    int reward = value_head(g, "dyn.reward", x, c);
    int turn = c->turn_head ? turn_head(g, "dyn.turn", x, c) : -1;
    zt_nn_graph_output(g, x);
    zt_nn_graph_output(g, reward);
    if (turn >= 0) zt_nn_graph_output(g, turn);

    g = &mz->g[FN_PRED];
    zt_nn_graph_init(g);
    x = zt_nn_graph_input(g, (zt_nn_shape){c->in_h, c->in_w, c->channels});
    for (int b = 0; b < c->pred_blocks; b++) {
        snprintf(name, sizeof name, "pred.blocks.%d", b);
        x = residual(g, name, x, k);
    }
    int policy = head_planes(g, "pred.policy", x, c->policy_channels, c);
    policy = zt_nn_graph_dense(g, join(buf, sizeof buf, "pred.policy", "fc"), policy,
                               c->num_actions, true);
    int value = value_head(g, "pred.value", x, c);
    zt_nn_graph_output(g, policy);
    zt_nn_graph_output(g, value);
    if (!mz->codes) return;

    /* phi: g's trunk on (hidden state, action planes), no reward */
    g = &mz->g[FN_AFTER];
    zt_nn_graph_init(g);
    x = zt_nn_graph_input(g, (zt_nn_shape){c->in_h, c->in_w, c->channels + P});
    x = conv_norm_relu(g, "after.stem", x, c->channels, k);
    for (int b = 0; b < c->dyn_blocks; b++) {
        snprintf(name, sizeof name, "after.blocks.%d", b);
        x = residual(g, name, x, k);
    }
    zt_nn_graph_output(g, x);

    /* psi: f's shape, sigma's logits over the C codes in the policy's place
     * and Q in the value's */
    g = &mz->g[FN_APRED];
    zt_nn_graph_init(g);
    x = zt_nn_graph_input(g, (zt_nn_shape){c->in_h, c->in_w, c->channels});
    for (int b = 0; b < c->pred_blocks; b++) {
        snprintf(name, sizeof name, "apred.blocks.%d", b);
        x = residual(g, name, x, k);
    }
    int sigma = head_planes(g, "apred.chance", x, c->policy_channels, c);
    sigma =
        zt_nn_graph_dense(g, join(buf, sizeof buf, "apred.chance", "fc"), sigma, mz->codes, true);
    int q = value_head(g, "apred.value", x, c);
    zt_nn_graph_output(g, sigma);
    zt_nn_graph_output(g, q);

    /* e: the observations before and after chance, stacked along channels
     * (the difference shows what chance did), a stem and one block, then C
     * logits */
    g = &mz->g[FN_ENC];
    zt_nn_graph_init(g);
    x = zt_nn_graph_input(g, (zt_nn_shape){c->in_h, c->in_w, 2 * c->in_c});
    x = conv_norm_relu(g, "enc.stem", x, c->channels, k);
    x = residual(g, "enc.blocks.0", x, k);
    x = head_planes(g, "enc.head", x, c->policy_channels, c);
    x = zt_nn_graph_dense(g, join(buf, sizeof buf, "enc.head", "fc"), x, mz->codes, true);
    zt_nn_graph_output(g, x);
}

zt_mz *zt_mz_new(const zt_net_config *cfg, zt_nn_graph *table)
{
    ZT_ASSERT(cfg->kind == ZT_NET_MUZERO);
    zt_mz *mz = zt_xcalloc(1, sizeof *mz);
    mz->cfg = *cfg;
    mz->codes = cfg->chance_codes;
    mz->nfn = mz->codes ? FN_COUNT : FN_AFTER;
    /* a 3x3 kernel on one cell would hold 9x the weights for the same sums */
    mz->ksize = cfg->in_h * cfg->in_w == 1 ? 1 : 3;
    build_graphs(mz);
    zt_nn_graph_init(table);
    for (int f = 0; f < mz->nfn; f++) {
        const zt_nn_graph *g = &mz->g[f];
        mz->poff[f] = table->param_floats;
        mz->soff[f] = table->state_floats;
        table->params =
            zt_xrealloc(table->params, (size_t)(table->nparams + g->nparams) * sizeof *g->params);
        for (int i = 0; i < g->nparams; i++) {
            zt_nn_param p = g->params[i];
            p.offset += p.trainable ? mz->poff[f] : mz->soff[f];
            table->params[table->nparams++] = p;
        }
        table->param_floats += g->param_floats;
        table->state_floats += g->state_floats;
    }
    return mz;
}

/* Frees n rows and the array of them (either may be NULL). */
static void free_rows(void *rows, int n)
{
    void **r = rows;
    for (int k = 0; k < n && r; k++) free(r[k]);
    free(r);
}

static void free_plans(const zt_nn_backend *be, zt_nn_plan **plans, int n)
{
    for (int k = 0; k < n && plans; k++)
        if (plans[k]) be->plan_free(plans[k]);
    free(plans);
}

static void free_chance_train(zt_mz *mz)
{
    mz_chance_train *c = &mz->ct;
    int K = mz->K;
    free_plans(mz->be, c->after, K);
    free_plans(mz->be, c->apred, K);
    free_plans(mz->be, c->enc, K);
    float **arrays[] = {c->as, c->a_range, c->clog, c->d_clog, c->q, c->d_q, c->elog, c->code};
    for (size_t a = 0; a < sizeof arrays / sizeof arrays[0]; a++) free_rows(arrays[a], K);
    free_rows(c->a_imin, K);
    free_rows(c->a_imax, K);
    free(c->ein);
    free(c->d_after);
    free(c->d_elog);
    free(c->d_code);
    free(c->code_count);
    free(c->usage);
    free(c->soft);
    memset(c, 0, sizeof *c);
}

static void free_train(zt_mz *mz)
{
    free_chance_train(mz);
    if (mz->t_repr) mz->be->plan_free(mz->t_repr);
    for (int k = 0; k < mz->K; k++)
        if (mz->t_dyn[k]) mz->be->plan_free(mz->t_dyn[k]);
    for (int k = 0; k <= mz->K && mz->t_pred; k++)
        if (mz->t_pred[k]) mz->be->plan_free(mz->t_pred[k]);
    float **arrays[] = {mz->s,     mz->t_range, mz->pol,   mz->val,  mz->rew,
                        mz->d_pol, mz->d_val,   mz->d_rew, mz->turn, mz->d_turn};
    for (size_t a = 0; a < sizeof arrays / sizeof arrays[0]; a++) {
        for (int k = 0; k <= mz->K && arrays[a]; k++) free(arrays[a][k]);
        free(arrays[a]);
    }
    for (int k = 0; k <= mz->K && mz->t_imin; k++) {
        free(mz->t_imin[k]);
        free(mz->t_imax[k]);
    }
    free(mz->t_imin);
    free(mz->t_imax);
    free(mz->t_dyn);
    free(mz->t_pred);
    free(mz->t_gin);
    free(mz->t_raw);
    free(mz->ds);
    free(mz->dx);
    free(mz->dtmp);
    free(mz->d_gin);
    free(mz->t_act);
    mz->t_act = NULL;
    mz->t_repr = NULL;
    mz->t_dyn = mz->t_pred = NULL;
    mz->s = mz->t_range = mz->pol = mz->val = mz->rew = mz->d_pol = mz->d_val = mz->d_rew = NULL;
    mz->turn = mz->d_turn = NULL;
    mz->t_imin = mz->t_imax = NULL;
    mz->t_gin = mz->t_raw = mz->ds = mz->dx = mz->dtmp = mz->d_gin = NULL;
    mz->K = 0;
    mz->tcap = 0;
}

static void free_consistency(zt_mz *mz)
{
    if (mz->c_plan) mz->be->plan_free(mz->c_plan);
    free(mz->c_raw);
    free(mz->c_tgt);
    free(mz->c_range);
    free(mz->c_imin);
    free(mz->c_imax);
    mz->c_plan = NULL;
    mz->c_raw = mz->c_tgt = mz->c_range = NULL;
    mz->c_imin = mz->c_imax = NULL;
    mz->c_cap = 0;
}

static void free_scratch(zt_mz *mz)
{
    free(mz->gin);
    free(mz->raw);
    free(mz->hidden);
    free(mz->imin);
    free(mz->imax);
    free(mz->range);
    free(mz->icode);
    free(mz->ival);
    free(mz->irew);
    free(mz->iturn);
    mz->gin = mz->raw = mz->hidden = mz->range = mz->icode = mz->ival = mz->irew = NULL;
    mz->iturn = NULL;
    mz->imin = mz->imax = NULL;
    mz->cap = 0;
}

void zt_mz_free(zt_mz *mz)
{
    if (!mz) return;
    free_train(mz);
    free_consistency(mz);
    free_scratch(mz);
    for (int f = 0; f < mz->nfn; f++) {
        if (mz->plan[f]) mz->be->plan_free(mz->plan[f]);
        zt_nn_graph_free(&mz->g[f]);
    }
    free(mz);
}

static zt_status plan_of(zt_mz *mz, int f, zt_nn_plan **out)
{
    return mz->be->plan_new(&mz->g[f], mz->params + mz->poff[f], mz->state + mz->soff[f], mz->prec,
                            mz->threads, out);
}

zt_status zt_mz_plans_new(zt_mz *mz, const zt_nn_backend *be, float *params, float *state,
                          zt_precision prec, int threads)
{
    mz->be = be;
    mz->params = params;
    mz->state = state;
    mz->prec = prec;
    mz->threads = threads;
    /* the encoder runs in training only */
    for (int f = 0; f < mz->nfn; f++)
        if (f != FN_ENC) ZT_TRY(plan_of(mz, f, &mz->plan[f]));
    return ZT_OK;
}

void zt_mz_params_changed(zt_mz *mz)
{
    if (!mz->be->params_changed) return;
    for (int f = 0; f < mz->nfn; f++)
        if (mz->plan[f]) mz->be->params_changed(mz->plan[f]);
    if (mz->c_plan) mz->be->params_changed(mz->c_plan);
    if (!mz->t_repr) return;
    mz->be->params_changed(mz->t_repr);
    for (int k = 0; k < mz->K; k++) mz->be->params_changed(mz->t_dyn[k]);
    for (int k = 0; k <= mz->K; k++) mz->be->params_changed(mz->t_pred[k]);
    for (int k = 0; k < mz->K && mz->ct.after; k++) {
        mz->be->params_changed(mz->ct.after[k]);
        mz->be->params_changed(mz->ct.apred[k]);
        mz->be->params_changed(mz->ct.enc[k]);
    }
}

/* Floats per sample of g's or phi's input: the hidden state with the
 * action's planes or the code's, whichever is wider. */
static size_t gin_size(const zt_mz *mz)
{
    const zt_net_config *c = &mz->cfg;
    int P = zt_net_action_planes(c), extra = mz->codes > P ? mz->codes : P;
    return (size_t)c->in_h * c->in_w * (size_t)(c->channels + extra);
}

zt_status zt_mz_reserve(zt_mz *mz, int max_batch)
{
    if (max_batch > mz->cap) {
        free_scratch(mz);
        size_t n = (size_t)max_batch, hs = zt_net_hidden_size(&mz->cfg);
        mz->gin = malloc(n * gin_size(mz) * sizeof(float));
        mz->raw = malloc(n * hs * sizeof(float));
        mz->hidden = malloc(n * hs * sizeof(float));
        mz->imin = malloc(n * sizeof(int32_t));
        mz->imax = malloc(n * sizeof(int32_t));
        mz->range = malloc(n * sizeof(float));
        mz->icode = malloc(n * (size_t)mz->codes * sizeof(float) + 1);
        size_t V = (size_t)zt_mz_value_outputs(&mz->cfg);
        mz->ival = malloc(n * V * sizeof(float));
        mz->irew = malloc(n * V * sizeof(float));
        mz->iturn = malloc(n * sizeof(float));
        if (!mz->gin || !mz->raw || !mz->hidden || !mz->imin || !mz->imax || !mz->range ||
            !mz->icode || !mz->ival || !mz->irew || !mz->iturn) {
            free_scratch(mz);
            return zt_fail(ZT_ERR_NOMEM, "no memory for muzero buffers of batch %d", max_batch);
        }
        mz->cap = max_batch;
    }
    for (int f = 0; f < mz->nfn; f++)
        if (mz->plan[f]) ZT_TRY(mz->be->reserve(mz->plan[f], max_batch, false));
    return ZT_OK;
}

/* ---- the host-side joins ---- */

/* The first minimum and the first maximum of x[0..n) (a NaN is neither,
 * unless it is x[0]): the scalar form, and the AVX-512 one, which finds the
 * two values in 16 lanes and then their first places, and leaves rows with
 * a NaN to the scalar form, so both give the same indices. */
static void extremes_scalar(const float *x, size_t n, size_t *lo, size_t *hi)
{
    size_t l = 0, h = 0;
    for (size_t i = 1; i < n; i++) {
        if (x[i] < x[l]) l = i;
        if (x[i] > x[h]) h = i;
    }
    *lo = l;
    *hi = h;
}

#define AVX512_TARGET __attribute__((target("avx512f")))

AVX512_TARGET static void extremes_avx512(const float *x, size_t n, size_t *lo, size_t *hi)
{
    __m512 first = _mm512_set1_ps(x[0]), mn = first, mx = first;
    __mmask16 nan = 0;
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 m = zt_lanes16((ptrdiff_t)(n - i));
        __m512 v = _mm512_mask_loadu_ps(first, m, x + i);
        nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
        mn = _mm512_min_ps(mn, v);
        mx = _mm512_max_ps(mx, v);
    }
    if (nan) {
        extremes_scalar(x, n, lo, hi);
        return;
    }
    __m512 vmin = _mm512_set1_ps(_mm512_reduce_min_ps(mn));
    __m512 vmax = _mm512_set1_ps(_mm512_reduce_max_ps(mx));
    size_t l = n, h = n;
    for (size_t i = 0; i < n && (l == n || h == n); i += 16) {
        __mmask16 m = zt_lanes16((ptrdiff_t)(n - i));
        __m512 v = _mm512_maskz_loadu_ps(m, x + i);
        __mmask16 at_min = _mm512_mask_cmp_ps_mask(m, v, vmin, _CMP_EQ_OQ);
        __mmask16 at_max = _mm512_mask_cmp_ps_mask(m, v, vmax, _CMP_EQ_OQ);
        if (l == n && at_min) l = i + (size_t)__builtin_ctz(at_min);
        if (h == n && at_max) h = i + (size_t)__builtin_ctz(at_max);
    }
    *lo = l;
    *hi = h;
}

/* s = (x - lo) / r, element by element as the scalar loop rounds it. */
AVX512_TARGET static void scale_avx512(const float *x, float *s, size_t n, float lo, float r)
{
    __m512 vlo = _mm512_set1_ps(lo), vr = _mm512_set1_ps(r);
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 m = zt_lanes16((ptrdiff_t)(n - i));
        __m512 v = _mm512_maskz_loadu_ps(m, x + i);
        _mm512_mask_storeu_ps(s + i, m, _mm512_div_ps(_mm512_sub_ps(v, vlo), vr));
    }
}

static bool have_avx512(void)
{
    __builtin_cpu_init(); /* cheap once done: libgcc keeps the answer */
    return __builtin_cpu_supports("avx512f");
}

void zt_mz_minmax_forward(const float *x, float *s, int B, size_t n, int32_t *imin, int32_t *imax,
                          float *range)
{
    bool wide = have_avx512();
    for (int b = 0; b < B; b++) {
        const float *xi = x + (size_t)b * n;
        float *si = s + (size_t)b * n;
        size_t lo, hi;
        if (wide) extremes_avx512(xi, n, &lo, &hi);
        else extremes_scalar(xi, n, &lo, &hi);
        float r = xi[hi] - xi[lo];
        imin[b] = (int32_t)lo;
        imax[b] = (int32_t)hi;
        /* A constant hidden state (a dead trunk) would divide by zero; the
         * floor makes it 0 everywhere and its maximum no variable. */
        if (!(r >= ZT_MZ_MIN_RANGE)) {
            r = ZT_MZ_MIN_RANGE;
            imax[b] = -1;
        }
        range[b] = r;
        float lo_v = xi[lo];
        if (wide) scale_avx512(xi, si, n, lo_v, r);
        else
            for (size_t i = 0; i < n; i++) si[i] = (xi[i] - lo_v) / r;
    }
}

/* With s_j = (x_j - x_m) / (x_M - x_m), G = sum ds_j and S = sum ds_j s_j:
 * dx_i = ds_i / r, plus (S - G) / r at the minimum m and -S / r at the
 * maximum M. */
void zt_mz_minmax_backward(const float *ds, const float *s, int B, size_t n, const int32_t *imin,
                           const int32_t *imax, const float *range, float *dx)
{
    for (int b = 0; b < B; b++) {
        const float *d = ds + (size_t)b * n, *si = s + (size_t)b * n;
        float *o = dx + (size_t)b * n;
        double G = 0, S = 0, inv = 1.0 / range[b];
        for (size_t i = 0; i < n; i++) {
            G += d[i];
            S += (double)d[i] * si[i];
            o[i] = (float)(d[i] * inv);
        }
        o[imin[b]] += (float)((S - G) * inv);
        if (imax[b] >= 0) o[imax[b]] += (float)(-S * inv);
    }
}

void zt_mz_dynamics_input(const zt_net_config *cfg, int B, const float *hidden, const int *actions,
                          float *out)
{
    int C = cfg->channels, P = zt_net_action_planes(cfg), cells = cfg->in_h * cfg->in_w;
    for (int b = 0; b < B; b++) {
        int a = actions[b];
        ZT_ASSERT(a >= 0 && a < cfg->num_actions);
        for (int cell = 0; cell < cells; cell++) {
            const float *h = hidden + ((size_t)b * cells + cell) * C;
            float *o = out + ((size_t)b * cells + cell) * (size_t)(C + P);
            memcpy(o, h, (size_t)C * sizeof(float));
            if (cfg->action_columns)
                o[C] = cell % cfg->in_w == a ? 1.0f : 0.0f;
            else if (P == 1)
                o[C] = cell == a ? 1.0f : 0.0f;
            else
                for (int p = 0; p < P; p++) o[C + p] = p == a ? 1.0f : 0.0f;
        }
    }
}

void zt_mz_code_input(const zt_net_config *cfg, int B, const float *after, const float *codes,
                      float *out)
{
    int C = cfg->channels, Z = cfg->chance_codes, cells = cfg->in_h * cfg->in_w;
    ZT_ASSERT(Z > 0);
    for (int b = 0; b < B; b++) {
        const float *z = codes + (size_t)b * Z;
        for (int cell = 0; cell < cells; cell++) {
            const float *h = after + ((size_t)b * cells + cell) * C;
            float *o = out + ((size_t)b * cells + cell) * (size_t)(C + Z);
            memcpy(o, h, (size_t)C * sizeof(float));
            memcpy(o + C, z, (size_t)Z * sizeof(float));
        }
    }
}

double zt_mz_policy_loss(const float *logits, const float *target, int A, double scale, float *d)
{
    double max = -INFINITY, mass = 0;
    for (int a = 0; a < A; a++) {
        if (logits[a] > max) max = logits[a];
        mass += target[a];
    }
    double z = 0;
    for (int a = 0; a < A; a++) z += exp(logits[a] - max);
    double lse = max + log(z), loss = 0;
    for (int a = 0; a < A; a++) {
        double logp = logits[a] - lse;
        if (target[a] > 0) loss -= target[a] * logp;
        d[a] = (float)(scale * (exp(logp) * mass - target[a]));
    }
    return loss;
}

/* ---- categorical heads ---- */

double zt_mz_support_expectation(const float *logits, int N)
{
    int V = 2 * N + 1;
    float top = logits[0];
    for (int i = 1; i < V; i++) top = logits[i] > top ? logits[i] : top;
    double z = 0, sum = 0;
    for (int i = 0; i < V; i++) {
        double e = exp((double)logits[i] - top);
        z += e;
        sum += e * (double)(i - N) / N;
    }
    return sum / z;
}

void zt_mz_two_hot(float x, int N, float *target)
{
    int V = 2 * N + 1;
    memset(target, 0, (size_t)V * sizeof(float));
    if (!(x > -1)) x = -1; /* and NaN: the lowest atom */
    if (x > 1) x = 1;
    double at = ((double)x + 1) * N;
    int lo = (int)floor(at);
    if (lo >= V - 1) {
        target[V - 1] = 1;
        return;
    }
    float hi = (float)(at - lo);
    target[lo] = 1 - hi;
    target[lo + 1] = hi;
}

/* The caller's scalars from B heads' outputs: the outputs themselves (tanh
 * heads, written in place) or each categorical head's expectation. */
static void head_values(const zt_mz *mz, int B, const float *out, float *dst)
{
    int N = mz->cfg.value_support, V = zt_mz_value_outputs(&mz->cfg);
    if (V == 1) return;
    for (int b = 0; b < B; b++) dst[b] = (float)zt_mz_support_expectation(out + (size_t)b * V, N);
}

/* Where a forward writes B heads' outputs for the caller's `dst`: dst
 * itself for a tanh head, else the scratch of logits. */
static float *head_out(const zt_mz *mz, float *dst, float *scratch)
{
    return zt_mz_value_outputs(&mz->cfg) == 1 ? dst : scratch;
}

/* ---- inference ---- */

zt_status zt_mz_initial(zt_mz *mz, int B, const float *obs, float *hidden, float *policy,
                        float *value)
{
    ZT_TRY(zt_mz_reserve(mz, B));
    size_t hs = zt_net_hidden_size(&mz->cfg);
    float *h = hidden ? hidden : mz->hidden;
    float *outs[1] = {mz->raw};
    ZT_TRY(mz->be->forward(mz->plan[FN_REPR], B, obs, outs, false, false));
    zt_mz_minmax_forward(mz->raw, h, B, hs, mz->imin, mz->imax, mz->range);
    float *pouts[2] = {policy, head_out(mz, value, mz->ival)};
    ZT_TRY(mz->be->forward(mz->plan[FN_PRED], B, h, pouts, false, false));
    head_values(mz, B, mz->ival, value);
    return ZT_OK;
}

zt_status zt_mz_afterstate(zt_mz *mz, int B, const float *hidden, const int *actions, float *after,
                           float *chance_logits, float *q)
{
    ZT_ASSERT(mz->codes > 0);
    ZT_TRY(zt_mz_reserve(mz, B));
    size_t hs = zt_net_hidden_size(&mz->cfg);
    zt_mz_dynamics_input(&mz->cfg, B, hidden, actions, mz->gin);
    float *outs[1] = {mz->raw};
    ZT_TRY(mz->be->forward(mz->plan[FN_AFTER], B, mz->gin, outs, false, false));
    zt_mz_minmax_forward(mz->raw, after, B, hs, mz->imin, mz->imax, mz->range);
    float *pouts[2] = {chance_logits, head_out(mz, q, mz->ival)};
    ZT_TRY(mz->be->forward(mz->plan[FN_APRED], B, after, pouts, false, false));
    head_values(mz, B, mz->ival, q);
    return ZT_OK;
}

zt_status zt_mz_recurrent(zt_mz *mz, int B, const float *hidden, const int *actions,
                          float *next_hidden, float *reward, float *policy, float *value,
                          float *turn)
{
    ZT_TRY(zt_mz_reserve(mz, B));
    size_t hs = zt_net_hidden_size(&mz->cfg);
    if (mz->codes > 0) { /* an afterstate and a chance code */
        int Z = mz->codes;
        memset(mz->icode, 0, (size_t)B * Z * sizeof(float));
        for (int b = 0; b < B; b++) {
            ZT_ASSERT(actions[b] >= 0 && actions[b] < Z);
            mz->icode[(size_t)b * Z + actions[b]] = 1.0f;
        }
        zt_mz_code_input(&mz->cfg, B, hidden, mz->icode, mz->gin);
    } else {
        zt_mz_dynamics_input(&mz->cfg, B, hidden, actions, mz->gin);
    }
    float *outs[3] = {mz->raw, head_out(mz, reward, mz->irew), mz->iturn};
    ZT_TRY(mz->be->forward(mz->plan[FN_DYN], B, mz->gin, outs, false, false));
    head_values(mz, B, mz->irew, reward);
    if (mz->cfg.turn_head && turn)
        for (int b = 0; b < B; b++) turn[b] = 1.0f / (1.0f + expf(-mz->iturn[b]));
    zt_mz_minmax_forward(mz->raw, next_hidden, B, hs, mz->imin, mz->imax, mz->range);
    float *pouts[2] = {policy, head_out(mz, value, mz->ival)};
    ZT_TRY(mz->be->forward(mz->plan[FN_PRED], B, next_hidden, pouts, false, false));
    head_values(mz, B, mz->ival, value);
    return ZT_OK;
}

/* ---- training: the unrolled loss ---- */

static float **alloc_rows(int n, size_t count, bool *ok)
{
    float **r = zt_xcalloc((size_t)n, sizeof *r);
    for (int i = 0; i < n; i++) {
        r[i] = malloc(count * sizeof(float) + 1);
        *ok = *ok && r[i];
    }
    return r;
}

/* Stochastic MuZero's plans and buffers for an unroll of K (mz->K) steps of
 * batches up to mb; *ok false if memory ran out. */
static zt_status reserve_chance_train(zt_mz *mz, int mb, bool *ok)
{
    mz_chance_train *c = &mz->ct;
    int K = mz->K;
    c->after = zt_xcalloc((size_t)K, sizeof *c->after);
    c->apred = zt_xcalloc((size_t)K, sizeof *c->apred);
    c->enc = zt_xcalloc((size_t)K, sizeof *c->enc);
    for (int k = 0; k < K; k++) {
        ZT_TRY(plan_of(mz, FN_AFTER, &c->after[k]));
        ZT_TRY(plan_of(mz, FN_APRED, &c->apred[k]));
        ZT_TRY(plan_of(mz, FN_ENC, &c->enc[k]));
        ZT_TRY(mz->be->reserve(c->after[k], mb, true));
        ZT_TRY(mz->be->reserve(c->apred[k], mb, true));
        ZT_TRY(mz->be->reserve(c->enc[k], mb, true));
    }
    const zt_net_config *cfg = &mz->cfg;
    size_t n = (size_t)mb, hs = zt_net_hidden_size(cfg), Z = (size_t)mz->codes;
    c->as = alloc_rows(K, n * hs, ok);
    c->a_range = alloc_rows(K, n, ok);
    c->clog = alloc_rows(K, n * Z, ok);
    c->d_clog = alloc_rows(K, n * Z, ok);
    size_t V = (size_t)zt_mz_value_outputs(cfg);
    c->q = alloc_rows(K, n * V, ok);
    c->d_q = alloc_rows(K, n * V, ok);
    c->elog = alloc_rows(K, n * Z, ok);
    c->code = alloc_rows(K, n * Z, ok);
    c->a_imin = zt_xcalloc((size_t)K, sizeof *c->a_imin);
    c->a_imax = zt_xcalloc((size_t)K, sizeof *c->a_imax);
    for (int k = 0; k < K; k++) {
        c->a_imin[k] = malloc(n * sizeof(int32_t));
        c->a_imax[k] = malloc(n * sizeof(int32_t));
        *ok = *ok && c->a_imin[k] && c->a_imax[k];
    }
    c->ein = malloc(n * (size_t)cfg->in_h * cfg->in_w * 2 * (size_t)cfg->in_c * sizeof(float));
    c->d_after = malloc(n * hs * sizeof(float));
    c->d_elog = malloc(n * Z * sizeof(float));
    c->d_code = malloc(n * Z * sizeof(float));
    c->code_count = calloc(Z, sizeof(double));
    c->usage = calloc(Z, sizeof(double));
    c->soft = calloc(Z, sizeof(double));
    *ok = *ok && c->ein && c->d_after && c->d_elog && c->d_code && c->code_count && c->usage &&
          c->soft;
    return ZT_OK;
}

static zt_status reserve_train(zt_mz *mz, int mb, int K)
{
    if (K == mz->K && mb <= mz->tcap) return ZT_OK;
    free_train(mz);
    mz->K = K;
    mz->t_dyn = zt_xcalloc((size_t)K, sizeof *mz->t_dyn);
    mz->t_pred = zt_xcalloc((size_t)K + 1, sizeof *mz->t_pred);
    zt_status st = plan_of(mz, FN_REPR, &mz->t_repr);
    for (int k = 0; k < K && st == ZT_OK; k++) st = plan_of(mz, FN_DYN, &mz->t_dyn[k]);
    for (int k = 0; k <= K && st == ZT_OK; k++) st = plan_of(mz, FN_PRED, &mz->t_pred[k]);
    if (st == ZT_OK) st = mz->be->reserve(mz->t_repr, mb, true);
    for (int k = 0; k < K && st == ZT_OK; k++) st = mz->be->reserve(mz->t_dyn[k], mb, true);
    for (int k = 0; k <= K && st == ZT_OK; k++) st = mz->be->reserve(mz->t_pred[k], mb, true);
    if (st != ZT_OK) {
        free_train(mz);
        return st;
    }
    size_t n = (size_t)mb, hs = zt_net_hidden_size(&mz->cfg), A = (size_t)mz->cfg.num_actions;
    bool ok = true;
    mz->s = alloc_rows(K + 1, n * hs, &ok);
    mz->t_range = alloc_rows(K + 1, n, &ok);
    mz->pol = alloc_rows(K + 1, n * A, &ok);
    mz->d_pol = alloc_rows(K + 1, n * A, &ok);
    size_t V = (size_t)zt_mz_value_outputs(&mz->cfg);
    mz->val = alloc_rows(K + 1, n * V, &ok);
    mz->d_val = alloc_rows(K + 1, n * V, &ok);
    mz->rew = alloc_rows(K + 1, n * V, &ok);
    mz->d_rew = alloc_rows(K + 1, n * V, &ok);
    mz->turn = alloc_rows(K + 1, n, &ok);
    mz->d_turn = alloc_rows(K + 1, n, &ok);
    mz->t_imin = zt_xcalloc((size_t)K + 1, sizeof *mz->t_imin);
    mz->t_imax = zt_xcalloc((size_t)K + 1, sizeof *mz->t_imax);
    for (int k = 0; k <= K; k++) {
        mz->t_imin[k] = malloc(n * sizeof(int32_t));
        mz->t_imax[k] = malloc(n * sizeof(int32_t));
        ok = ok && mz->t_imin[k] && mz->t_imax[k];
    }
    mz->t_gin = malloc(n * gin_size(mz) * sizeof(float));
    mz->d_gin = malloc(n * gin_size(mz) * sizeof(float));
    mz->t_raw = malloc(n * hs * sizeof(float));
    mz->ds = malloc(n * hs * sizeof(float));
    mz->dx = malloc(n * hs * sizeof(float));
    mz->dtmp = malloc(n * hs * sizeof(float));
    mz->t_act = malloc(n * sizeof(int));
    if (mz->codes > 0) {
        st = reserve_chance_train(mz, mb, &ok);
        if (st != ZT_OK) {
            free_train(mz);
            return st;
        }
    }
    if (!ok || !mz->t_act || !mz->t_gin || !mz->d_gin || !mz->t_raw || !mz->ds || !mz->dx ||
        !mz->dtmp) {
        free_train(mz);
        return zt_fail(ZT_ERR_NOMEM, "no memory for a muzero unroll of %d x %d", mb, K);
    }
    mz->tcap = mb;
    return ZT_OK;
}

/* One sample's value-like term (value, reward, Q) against `target`: the
 * squared error of a tanh head, or a categorical head's cross-entropy
 * against the target's two-hot on the support; d (1 or 2N + 1 floats)
 * gets the term's gradient times `scale`. */
static double value_term(const zt_mz *mz, const float *out, float target, double scale, float *d)
{
    int N = mz->cfg.value_support;
    if (N == 0) {
        double err = out[0] - target;
        d[0] = (float)(2 * err * scale);
        return err * err;
    }
    float two_hot[2 * ZT_MZ_MAX_SUPPORT + 1];
    zt_mz_two_hot(target, N, two_hot);
    return zt_mz_policy_loss(out, two_hot, 2 * N + 1, scale, d);
}

/* The to-play term of one sample: the binary cross-entropy of logit x
 * against target t, softplus(x) - t x; d gets its gradient
 * (sigmoid(x) - t) times `scale`. */
static double turn_term(float x, float t, double scale, float *d)
{
    double sig = 1.0 / (1.0 + exp(-(double)x));
    *d = (float)((sig - t) * scale);
    /* softplus without overflow */
    double sp = x > 0 ? x + log1p(exp(-(double)x)) : log1p(exp((double)x));
    return sp - (double)t * x;
}

/* The step-k loss terms of every sample, their gradients into d_pol[k],
 * d_val[k], d_rew[k] (weight w: 1 at k = 0, 1/K after, appendix G). */
static void step_losses(zt_mz *mz, const zt_train_config *tc, const zt_train_batch *b, int off,
                        int B, int k, zt_train_losses *acc)
{
    int K = b->unroll, A = mz->cfg.num_actions;
    double w = k == 0 ? 1.0 : 1.0 / K, scale = 1.0 / b->B;
    double policy = 0, value = 0, reward = 0, turn = 0;
    for (int n = 0; n < B; n++) {
        size_t row = (size_t)(off + n) * (size_t)(K + 1) + (size_t)k;
        float *dp = mz->d_pol[k] + (size_t)n * A;
        if (b->policy_mask[row]) {
            policy += zt_mz_policy_loss(mz->pol[k] + (size_t)n * A,
                                        b->policy_target + row * (size_t)A, A, w * scale, dp);
        } else {
            memset(dp, 0, (size_t)A * sizeof(float));
        }
        size_t V = (size_t)zt_mz_value_outputs(&mz->cfg);
        value += value_term(mz, mz->val[k] + n * V, b->value_target[row],
                            w * scale * tc->value_weight, mz->d_val[k] + n * V);
        if (k > 0)
            reward += value_term(mz, mz->rew[k] + n * V,
                                 b->reward_target[(size_t)(off + n) * K + (k - 1)],
                                 w * scale * tc->reward_weight, mz->d_rew[k] + n * V);
        if (k > 0 && mz->cfg.turn_head)
            turn += turn_term(mz->turn[k][n], b->turn_target[(size_t)(off + n) * K + (k - 1)],
                              w * scale, mz->d_turn[k] + n);
    }
    acc->policy += w * policy * scale;
    acc->value += w * value * scale;
    if (k == 0) acc->policy0 += policy * scale, acc->value0 += value * scale;
    acc->reward += w * reward * scale;
    acc->turn += w * turn * scale;
}

/* ---- Stochastic MuZero's unroll ---- */

/* The encoder's input for step k of samples [off, off + B): the
 * observations of steps k and k + 1 stacked along each cell's channels. */
static void encoder_input(const zt_mz *mz, const zt_train_batch *b, int off, int B, int k,
                          float *out)
{
    const zt_net_config *c = &mz->cfg;
    size_t cells = (size_t)c->in_h * c->in_w, ch = (size_t)c->in_c, obs_n = cells * ch;
    size_t K = (size_t)b->unroll;
    for (int n = 0; n < B; n++) {
        size_t row = (size_t)(off + n);
        const float *before =
            k == 0 ? b->obs + row * obs_n : b->next_obs + (row * K + (size_t)(k - 1)) * obs_n;
        const float *after = b->next_obs + (row * K + (size_t)k) * obs_n;
        float *o = out + (size_t)n * cells * 2 * ch;
        for (size_t cell = 0; cell < cells; cell++) {
            memcpy(o + cell * 2 * ch, before + cell * ch, ch * sizeof(float));
            memcpy(o + cell * 2 * ch + ch, after + cell * ch, ch * sizeof(float));
        }
    }
}

/* The encoder's code for each sample at step k: the one-hot of its
 * logits' argmax, which g reads; the straight-through estimator hands g's
 * gradient on the code to the logits themselves. (Through a softmax it
 * would vanish once the softmax saturates, and the commitment term drives
 * it there: measured on 2048, every transition then got one code within
 * about 100 steps, sigma predicting it to a loss of 1e-6 later.) */
static void quantise(mz_chance_train *c, int Z, int B, int k)
{
    for (int n = 0; n < B; n++) {
        const float *l = c->elog[k] + (size_t)n * Z;
        float *z = c->code[k] + (size_t)n * Z;
        int best = 0;
        for (int j = 1; j < Z; j++)
            if (l[j] > l[best]) best = j;
        for (int j = 0; j < Z; j++) z[j] = j == best ? 1.0f : 0.0f;
    }
}

/* The game's own chance outcomes as the codes of step k (muzero.chance =
 * game): the one-hot of each sample's label. */
static void label_codes(zt_mz *mz, const zt_train_batch *b, int off, int B, int k)
{
    int Z = mz->codes, K = b->unroll;
    for (int n = 0; n < B; n++) {
        int code = b->chance_code[(size_t)(off + n) * K + (size_t)k];
        ZT_ASSERT(code >= 0 && code < Z);
        float *z = mz->ct.code[k] + (size_t)n * Z;
        for (int j = 0; j < Z; j++) z[j] = j == code ? 1.0f : 0.0f;
    }
}

static bool chance_counts(const zt_train_batch *b, int off, int n, int k)
{
    return b->chance_mask[(size_t)(off + n) * (size_t)b->unroll + (size_t)k] != 0;
}

/* The share of the in-game transitions of samples [off, off + B) at step k
 * given each code, into mz->ct.usage; returns how many there are. */
static int code_usage(zt_mz *mz, const zt_train_batch *b, int off, int B, int k)
{
    mz_chance_train *c = &mz->ct;
    int Z = mz->codes, m = 0;
    memset(c->usage, 0, (size_t)Z * sizeof(double));
    for (int n = 0; n < B; n++) {
        if (!chance_counts(b, off, n, k)) continue;
        const float *z = c->code[k] + (size_t)n * Z;
        for (int j = 0; j < Z; j++) c->usage[j] += z[j];
        m++;
    }
    for (int j = 0; j < Z && m > 0; j++) c->usage[j] /= m;
    return m;
}

/* softmax(l) of Z logits into p */
static void softmax_of(const float *l, int Z, double *p)
{
    double mx = l[0], sum = 0;
    for (int j = 1; j < Z; j++) mx = l[j] > mx ? l[j] : mx;
    for (int j = 0; j < Z; j++) sum += p[j] = exp(l[j] - mx);
    for (int j = 0; j < Z; j++) p[j] /= sum;
}

/* The balance term of step k over the micro-batch's in-game transitions
 * (the auxiliary load-balancing loss of Switch Transformers, Fedus et al.
 * 2021, with codes for experts): Z sum_j f_j P_j, where f_j is the share of
 * the transitions whose code is j (mz->ct.usage, piecewise constant) and P_j
 * the mean of softmax(e)_j over them. It is 1 where the codes are used
 * uniformly; its gradient lowers the logits of the codes used most, so the
 * transitions whose encoder leans least to the common code leave it
 * first. Like batch norm's statistics it is taken per micro-batch, each
 * weighted by its share B / batch of the batch. With grad, its gradient
 * times `weight` is added into d_elog (rows of the micro-batch). */
static double balance_term(zt_mz *mz, const zt_train_batch *b, int off, int B, int k,
                           double weight, float *grad)
{
    mz_chance_train *c = &mz->ct;
    int Z = mz->codes, m = code_usage(mz, b, off, B, k);
    double share = (double)B / b->B, loss = 0, *p = c->soft;
    if (m == 0) return 0;
    for (int n = 0; n < B; n++) {
        if (!chance_counts(b, off, n, k)) continue;
        softmax_of(c->elog[k] + (size_t)n * Z, Z, p);
        double fp = 0;
        for (int j = 0; j < Z; j++) fp += c->usage[j] * p[j];
        loss += fp;
        if (!grad) continue;
        for (int j = 0; j < Z; j++)
            grad[(size_t)n * Z + j] += (float)(weight * share * Z / m * p[j] * (c->usage[j] - fp));
    }
    return share * Z * loss / m;
}

/* The chance terms of step k (the afterstate after the action from step k),
 * each weighted 1/K: psi's Q against step k's value target (an afterstate's
 * value is the acting player's, the player to move at step k), sigma against
 * the encoder's code (a target: no gradient reaches the encoder this way),
 * the commitment |logits - code|^2 of the encoder's logits to their one-hot
 * and the codes' balance (both with their gradients taken in the
 * backward). Where step k + 1 lies past the end of the game only Q counts.
 * Each code chosen is counted for the step's usage statistic. */
static void chance_losses(zt_mz *mz, const zt_train_config *tc, const zt_train_batch *b, int off,
                          int B, int k, zt_train_losses *acc)
{
    mz_chance_train *c = &mz->ct;
    int K = b->unroll, Z = mz->codes;
    double w = 1.0 / K, scale = 1.0 / b->B, q = 0, chance = 0, commit = 0;
    for (int n = 0; n < B; n++) {
        size_t row = (size_t)(off + n);
        size_t V = (size_t)zt_mz_value_outputs(&mz->cfg);
        q += value_term(mz, c->q[k] + n * V, b->value_target[row * (size_t)(K + 1) + (size_t)k],
                        w * scale * tc->value_weight, c->d_q[k] + n * V);
        float *dl = c->d_clog[k] + (size_t)n * Z;
        if (!chance_counts(b, off, n, k)) {
            memset(dl, 0, (size_t)Z * sizeof(float));
            continue;
        }
        const float *z = c->code[k] + (size_t)n * Z, *l = c->elog[k] + (size_t)n * Z;
        chance +=
            zt_mz_policy_loss(c->clog[k] + (size_t)n * Z, z, Z, w * scale * tc->chance_weight, dl);
        for (int j = 0; j < Z; j++) {
            if (!b->chance_code) commit += ((double)l[j] - z[j]) * ((double)l[j] - z[j]);
            c->code_count[j] += z[j];
        }
    }
    acc->afterstate += w * q * scale;
    acc->chance += w * chance * scale;
    acc->commitment += w * commit * scale;
    if (!b->chance_code) acc->code_balance += w * balance_term(mz, b, off, B, k, 0, NULL);
}

/* d loss / d encoder logits of step k: d_code (g's gradient on the code,
 * passed straight through to the logits, times the straight-through share)
 * plus the commitment's, 2 beta (l_j - code_j) w / B, and the balance
 * term's. */
static void encoder_grad(zt_mz *mz, const zt_train_config *tc, const zt_train_batch *b, int off,
                         int B, int k)
{
    mz_chance_train *c = &mz->ct;
    int Z = mz->codes;
    double w = 1.0 / b->unroll, scale = 1.0 / b->B;
    for (int n = 0; n < B; n++) {
        float *dl = c->d_elog + (size_t)n * Z, *d = c->d_code + (size_t)n * Z;
        if (!chance_counts(b, off, n, k)) {
            memset(dl, 0, (size_t)Z * sizeof(float));
            continue;
        }
        const float *l = c->elog[k] + (size_t)n * Z, *z = c->code[k] + (size_t)n * Z;
        for (int j = 0; j < Z; j++)
            dl[j] = (float)(tc->straight_through * d[j] +
                            2 * ((double)l[j] - z[j]) * w * scale * tc->commitment_weight);
    }
    if (tc->code_balance_weight > 0)
        balance_term(mz, b, off, B, k, w * tc->code_balance_weight, c->d_elog);
}

/* exp of the entropy of the codes counted over the step (1 when every
 * transition got the same code: the codebook collapsed; at most C). */
static double code_perplexity(const zt_mz *mz)
{
    const double *n = mz->ct.code_count;
    double total = 0, h = 0;
    for (int j = 0; j < mz->codes; j++) total += n[j];
    if (total <= 0) return 0;
    for (int j = 0; j < mz->codes; j++)
        if (n[j] > 0) h -= n[j] / total * log(n[j] / total);
    return exp(h);
}

/* Step k's transition forward, s_{k-1} -> s_k (k >= 1): g(s_{k-1}, a_{k-1})
 * for plain MuZero; for Stochastic MuZero the afterstate
 * as = phi(s_{k-1}, a_{k-1}), psi(as) -> (sigma, Q), the code
 * c = e(o_{k-1}, o_k) with its chance terms, then g(as, c). g's reward goes
 * to rew[k], the scaled next state to s[k]. */
static zt_status forward_transition(zt_mz *mz, const zt_train_config *tc, const zt_train_batch *b,
                                    int off, int B, int k, bool update_stats, zt_train_losses *acc)
{
    int K = b->unroll, j = k - 1;
    const zt_net_config *c = &mz->cfg;
    const zt_nn_backend *be = mz->be;
    size_t hs = zt_net_hidden_size(c);
    for (int n = 0; n < B; n++) mz->t_act[n] = b->actions[(size_t)(off + n) * K + j];
    zt_mz_dynamics_input(c, B, mz->s[j], mz->t_act, mz->t_gin);
    if (mz->codes > 0) {
        mz_chance_train *ct = &mz->ct;
        float *aouts[1] = {mz->t_raw};
        ZT_TRY(be->forward(ct->after[j], B, mz->t_gin, aouts, true, update_stats));
        zt_mz_minmax_forward(mz->t_raw, ct->as[j], B, hs, ct->a_imin[j], ct->a_imax[j],
                             ct->a_range[j]);
        float *pouts[2] = {ct->clog[j], ct->q[j]};
        ZT_TRY(be->forward(ct->apred[j], B, ct->as[j], pouts, true, update_stats));
        if (b->chance_code) {
            label_codes(mz, b, off, B, j);
        } else {
            encoder_input(mz, b, off, B, j, ct->ein);
            float *eouts[1] = {ct->elog[j]};
            ZT_TRY(be->forward(ct->enc[j], B, ct->ein, eouts, true, update_stats));
            quantise(ct, mz->codes, B, j);
        }
        chance_losses(mz, tc, b, off, B, j, acc);
        zt_mz_code_input(c, B, ct->as[j], ct->code[j], mz->t_gin);
    }
    float *douts[3] = {mz->t_raw, mz->rew[k], mz->turn[k]};
    ZT_TRY(be->forward(mz->t_dyn[j], B, mz->t_gin, douts, true, update_stats));
    zt_mz_minmax_forward(mz->t_raw, mz->s[k], B, hs, mz->t_imin[k], mz->t_imax[k], mz->t_range[k]);
    return ZT_OK;
}

/* Step k's transition backward, from mz->dx (d loss / d g's raw output at
 * step k) and d_rew[k] to mz->ds = d loss / d s_{k-1} through it, scaled
 * where the hidden state enters the dynamics (g, or Stochastic MuZero's
 * phi; appendix G). Stochastic MuZero passes on the way through psi, the
 * afterstate's min-max scaling and phi, and hands g's gradient on the code
 * straight through to the encoder. */
static zt_status backward_transition(zt_mz *mz, const zt_train_config *tc, const zt_train_batch *b,
                                     int off, int B, int k, float *grads)
{
    int j = k - 1;
    const zt_net_config *c = &mz->cfg;
    const zt_nn_backend *be = mz->be;
    size_t hs = zt_net_hidden_size(c), cells = (size_t)c->in_h * c->in_w;
    int C = c->channels, P = zt_net_action_planes(c), Z = mz->codes;
    const float *dd[3] = {mz->dx, mz->d_rew[k], mz->d_turn[k]};
    ZT_TRY(be->backward(mz->t_dyn[j], B, dd, grads + mz->poff[FN_DYN], mz->d_gin));
    if (Z > 0) {
        mz_chance_train *ct = &mz->ct;
        /* g's input: its afterstate channels to d_after, its code channels
         * summed over the cells (constant planes) to d_code */
        memset(ct->d_code, 0, (size_t)B * Z * sizeof(float));
        for (int n = 0; n < B; n++)
            for (size_t cell = 0; cell < cells; cell++) {
                const float *d = mz->d_gin + ((size_t)n * cells + cell) * (size_t)(C + Z);
                memcpy(ct->d_after + ((size_t)n * cells + cell) * C, d, (size_t)C * sizeof(float));
                for (int z = 0; z < Z; z++) ct->d_code[(size_t)n * Z + z] += d[C + z];
            }
        const float *ad[2] = {ct->d_clog[j], ct->d_q[j]};
        ZT_TRY(be->backward(ct->apred[j], B, ad, grads + mz->poff[FN_APRED], mz->dtmp));
        for (size_t i = 0; i < (size_t)B * hs; i++) ct->d_after[i] += mz->dtmp[i];
        zt_mz_minmax_backward(ct->d_after, ct->as[j], B, hs, ct->a_imin[j], ct->a_imax[j],
                              ct->a_range[j], mz->dx);
        const float *fd[1] = {mz->dx};
        ZT_TRY(be->backward(ct->after[j], B, fd, grads + mz->poff[FN_AFTER], mz->d_gin));
        if (!b->chance_code) {
            encoder_grad(mz, tc, b, off, B, j);
            const float *ed[1] = {ct->d_elog};
            ZT_TRY(be->backward(ct->enc[j], B, ed, grads + mz->poff[FN_ENC], NULL));
        }
    }
    /* the hidden-state channels of g's (or phi's) input gradient */
    float dyn_scale = (float)tc->dynamics_grad_scale;
    for (size_t cell = 0; cell < (size_t)B * cells; cell++)
        for (int ch = 0; ch < C; ch++)
            mz->ds[cell * C + ch] = dyn_scale * mz->d_gin[cell * (size_t)(C + P) + ch];
    return ZT_OK;
}

/* ---- the consistency term ---- */

double zt_mz_cosine_loss(const float *s, const float *t, size_t n, double scale, float *d)
{
    double st = 0, ss = 0, tt = 0;
    for (size_t i = 0; i < n; i++) {
        st += (double)s[i] * t[i];
        ss += (double)s[i] * s[i];
        tt += (double)t[i] * t[i];
    }
    if (!(ss > 0 && tt > 0)) return 1.0;
    double inv = 1.0 / sqrt(ss * tt), cos = st * inv;
    for (size_t i = 0; i < n; i++) d[i] += (float)(scale * (cos * s[i] / ss - t[i] * inv));
    return 1.0 - cos;
}

static zt_status reserve_consistency(zt_mz *mz, int rows)
{
    if (rows <= mz->c_cap) return ZT_OK;
    free_consistency(mz);
    ZT_TRY(plan_of(mz, FN_REPR, &mz->c_plan));
    zt_status st = mz->be->reserve(mz->c_plan, rows, false);
    if (st != ZT_OK) {
        free_consistency(mz);
        return st;
    }
    size_t n = (size_t)rows, hs = zt_net_hidden_size(&mz->cfg);
    mz->c_raw = malloc(n * hs * sizeof(float));
    mz->c_tgt = malloc(n * hs * sizeof(float));
    mz->c_range = malloc(n * sizeof(float));
    mz->c_imin = malloc(n * sizeof(int32_t));
    mz->c_imax = malloc(n * sizeof(int32_t));
    if (!mz->c_raw || !mz->c_tgt || !mz->c_range || !mz->c_imin || !mz->c_imax) {
        free_consistency(mz);
        return zt_fail(ZT_ERR_NOMEM, "no memory for muzero's consistency targets of %d rows", rows);
    }
    mz->c_cap = rows;
    return ZT_OK;
}

/* The consistency targets of samples [off, off + B): h of the observation
 * at every unrolled step, scaled as a hidden state, in inference (no
 * gradient flows into them: EfficientZero's stop-gradient); step k of
 * sample n at row n * K + k - 1, as next_obs. */
static zt_status consistency_targets(zt_mz *mz, const zt_train_batch *b, int off, int B)
{
    int rows = B * b->unroll;
    ZT_TRY(reserve_consistency(mz, rows));
    const zt_net_config *c = &mz->cfg;
    size_t obs_n = (size_t)c->in_h * c->in_w * c->in_c;
    float *outs[1] = {mz->c_raw};
    ZT_TRY(mz->be->forward(mz->c_plan, rows, b->next_obs + (size_t)off * b->unroll * obs_n, outs,
                           false, false));
    zt_mz_minmax_forward(mz->c_raw, mz->c_tgt, rows, zt_net_hidden_size(c), mz->c_imin, mz->c_imax,
                         mz->c_range);
    return ZT_OK;
}

/* Step k's consistency term (k >= 1, weight 1/K, the steps inside the
 * game): 1 - cos(s_k, target), its gradient added to mz->ds (d loss / d
 * s_k). */
static void consistency_term(zt_mz *mz, const zt_train_config *tc, const zt_train_batch *b, int off,
                             int B, int k, zt_train_losses *acc)
{
    int K = b->unroll;
    size_t hs = zt_net_hidden_size(&mz->cfg);
    double scale = 1.0 / ((double)K * b->B), sum = 0;
    for (int n = 0; n < B; n++) {
        size_t row = (size_t)n * K + (size_t)(k - 1);
        if (!b->chance_mask[(size_t)off * K + row]) continue;
        sum += zt_mz_cosine_loss(mz->s[k] + (size_t)n * hs, mz->c_tgt + row * hs, hs,
                                 scale * tc->consistency_weight, mz->ds + (size_t)n * hs);
    }
    acc->consistency += sum * scale;
}

zt_status zt_mz_micro_batch(zt_mz *mz, const zt_train_config *tc, const zt_train_batch *b, int off,
                            int B, bool update_stats, float *grads, zt_train_losses *acc)
{
    int K = b->unroll;
    ZT_ASSERT(K >= 1 && b->actions && b->policy_mask && b->reward_target);
    ZT_ASSERT(mz->codes == 0 || (b->next_obs && b->chance_mask));
    ZT_ASSERT(!mz->cfg.turn_head || b->turn_target);
    bool consistency = tc->consistency_weight > 0;
    ZT_ASSERT(!consistency || (b->next_obs && b->chance_mask));
    ZT_TRY(reserve_train(mz, B, K));
    if (consistency) ZT_TRY(consistency_targets(mz, b, off, B));
    const zt_net_config *c = &mz->cfg;
    const zt_nn_backend *be = mz->be;
    size_t hs = zt_net_hidden_size(c), obs_n = (size_t)c->in_h * c->in_w * c->in_c;

    if (mz->codes > 0 && off == 0) memset(mz->ct.code_count, 0, (size_t)mz->codes * sizeof(double));
    /* forward: s_0 = h(obs), then each step's transition; f at every step */
    float *routs[1] = {mz->t_raw};
    ZT_TRY(be->forward(mz->t_repr, B, b->obs + (size_t)off * obs_n, routs, true, update_stats));
    zt_mz_minmax_forward(mz->t_raw, mz->s[0], B, hs, mz->t_imin[0], mz->t_imax[0], mz->t_range[0]);
    for (int k = 0; k <= K; k++) {
        if (k > 0) ZT_TRY(forward_transition(mz, tc, b, off, B, k, update_stats, acc));
        float *pouts[2] = {mz->pol[k], mz->val[k]};
        ZT_TRY(be->forward(mz->t_pred[k], B, mz->s[k], pouts, true, update_stats));
        step_losses(mz, tc, b, off, B, k, acc);
    }
    if (mz->codes > 0 && off + B == b->B) acc->code_perplexity = code_perplexity(mz);

    /* backward, from the last step to the first; ds gathers d loss / d s_k */
    memset(mz->ds, 0, (size_t)B * hs * sizeof(float));
    for (int k = K; k >= 0; k--) {
        const float *pd[2] = {mz->d_pol[k], mz->d_val[k]};
        ZT_TRY(be->backward(mz->t_pred[k], B, pd, grads + mz->poff[FN_PRED], mz->dtmp));
        for (size_t i = 0; i < (size_t)B * hs; i++) mz->ds[i] += mz->dtmp[i];
        if (consistency && k > 0) consistency_term(mz, tc, b, off, B, k, acc);
        zt_mz_minmax_backward(mz->ds, mz->s[k], B, hs, mz->t_imin[k], mz->t_imax[k], mz->t_range[k],
                              mz->dx);
        if (k == 0) {
            const float *rd[1] = {mz->dx};
            return be->backward(mz->t_repr, B, rd, grads + mz->poff[FN_REPR], NULL);
        }
        ZT_TRY(backward_transition(mz, tc, b, off, B, k, grads));
    }
    return ZT_OK;
}

void zt_mz_unroll_outputs(const zt_mz *mz, int k, const float **policy, const float **value,
                          const float **reward)
{
    ZT_ASSERT(k >= 0 && k <= mz->K);
    *policy = mz->pol[k];
    *value = mz->val[k];
    *reward = mz->rew[k];
}

void zt_mz_chance_outputs(const zt_mz *mz, int k, const float **sigma, const float **q,
                          const float **code, const float **encoder)
{
    ZT_ASSERT(mz->codes > 0 && k >= 0 && k < mz->K);
    *sigma = mz->ct.clog[k];
    *q = mz->ct.q[k];
    *code = mz->ct.code[k];
    *encoder = mz->ct.elog[k];
}

const float *zt_mz_unroll_hidden(const zt_mz *mz, int k)
{
    ZT_ASSERT(k >= 0 && k <= mz->K);
    return mz->s[k];
}

size_t zt_mz_repr_params(const zt_mz *mz)
{
    return mz->poff[FN_DYN] - mz->poff[FN_REPR];
}

const float *zt_mz_turn_outputs(const zt_mz *mz, int k)
{
    ZT_ASSERT(mz->cfg.turn_head && k >= 1 && k <= mz->K);
    return mz->turn[k];
}
