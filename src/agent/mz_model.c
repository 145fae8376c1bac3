#include "agent/mz_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "agent/az_model.h"
#include "core/alloc.h"

#define NO_HANDLE UINT32_MAX /* a terminal root's state: nothing stored */

/* What search stores per node. */
typedef struct mz_state {
    uint32_t handle;
    int8_t player;
    int8_t kind; /* ZT_NODE_DECISION, or ZT_NODE_CHANCE for a Stochastic MuZero afterstate */
    uint8_t pad[2];
} mz_state;

typedef struct mz_model {
    zt_model base;
    const zt_game *game;
    zt_evaluator ev;
    size_t hs;
    size_t obs_size;
    bool one_player; /* 2048: no alternation, values and rewards transformed */
    int codes;       /* Stochastic MuZero's chance codes C, 0 for plain MuZero */
    bool turns;      /* the net's to-play head says who moves after g (backgammon) */
    /* the store: hidden states by handle, their reference counts, the free
     * handles; it grows (doubling) when every handle is taken */
    float *hidden;
    int32_t *refs;
    uint32_t *free_handles;
    uint32_t cap, nfree;
    int64_t live;
    /* per call, max_batch rows */
    float *obs, *in_hidden, *out_hidden, *logits, *values, *rewards;
    float *sigma; /* max_batch x C: the afterstates' chance logits */
    float *turn;  /* max_batch: the to-play head's probabilities that the turn passed */
    int *actions, *row_of;
} mz_model;

static zt_status grow_store(mz_model *m)
{
    uint32_t cap = m->cap ? m->cap * 2 : 1024;
    if (cap <= m->cap || (size_t)cap * m->hs > SIZE_MAX / sizeof(float) / 2)
        return zt_fail(ZT_ERR_NOMEM, "muzero model: hidden-state store full at %u", m->cap);
    float *h = realloc(m->hidden, (size_t)cap * m->hs * sizeof(float));
    if (!h) return zt_fail(ZT_ERR_NOMEM, "muzero model: no memory for %u hidden states", cap);
    m->hidden = h;
    int32_t *r = realloc(m->refs, (size_t)cap * sizeof *r);
    if (!r) return zt_fail(ZT_ERR_NOMEM, "muzero model: no memory for %u hidden states", cap);
    m->refs = r;
    uint32_t *f = realloc(m->free_handles, (size_t)cap * sizeof *f);
    if (!f) return zt_fail(ZT_ERR_NOMEM, "muzero model: no memory for %u hidden states", cap);
    m->free_handles = f;
    /* handles handed out lowest first */
    for (uint32_t i = cap; i > m->cap; i--) m->free_handles[m->nfree++] = i - 1;
    for (uint32_t i = m->cap; i < cap; i++) m->refs[i] = 0;
    m->cap = cap;
    return ZT_OK;
}

/* Makes sure n handles can be taken without failing, so a call either
 * stores all its states or none. */
static zt_status reserve_handles(mz_model *m, int n)
{
    while (m->nfree < (uint32_t)n) ZT_TRY(grow_store(m));
    return ZT_OK;
}

static uint32_t take_handle(mz_model *m, const float *hidden)
{
    ZT_ASSERT(m->nfree > 0);
    uint32_t h = m->free_handles[--m->nfree];
    ZT_ASSERT(m->refs[h] == 0);
    m->refs[h] = 1;
    m->live++;
    memcpy(m->hidden + (size_t)h * m->hs, hidden, m->hs * sizeof(float));
    return h;
}

static void mask_illegal(const zt_game *g, const void *s, float *logits)
{
    uint16_t legal[ZT_MAX_ACTIONS];
    int n = g->legal(g, s, legal), k = 0;
    for (int a = 0; a < g->num_actions; a++) {
        if (k < n && legal[k] == a)
            k++;
        else
            logits[a] = -INFINITY;
    }
}

static void decision_output(zt_model_output *out, int i, int player, float value, float reward)
{
    out->value[i] = value;
    out->reward[i] = reward;
    out->kind[i] = ZT_NODE_DECISION;
    out->player[i] = (int8_t)player;
    out->num_outcomes[i] = 0;
}

/* An afterstate: a chance node over the C codes with sigma's softmax as
 * their probabilities, valued by Q for the player who acted. */
static void chance_output(zt_model_output *out, int i, int O, int player, float q,
                          const float *sigma, int C)
{
    out->value[i] = q;
    out->reward[i] = 0;
    out->kind[i] = ZT_NODE_CHANCE;
    out->player[i] = (int8_t)player;
    out->num_outcomes[i] = C;
    float top = sigma[0];
    for (int z = 1; z < C; z++) top = sigma[z] > top ? sigma[z] : top;
    double sum = 0;
    float *p = out->outcome_probs + (size_t)i * O;
    for (int z = 0; z < C; z++) {
        p[z] = expf(sigma[z] - top);
        sum += p[z];
        out->outcomes[(size_t)i * O + z] = z;
    }
    for (int z = 0; z < C; z++) p[z] = (float)(p[z] / sum);
}

static zt_status mz_initial(zt_model *base, int B, const void *const *roots, void *const *states,
                            zt_model_output *out)
{
    mz_model *m = base->impl;
    const zt_game *g = m->game;
    int A = g->num_actions, n = 0;
    ZT_ASSERT(B <= base->max_batch);
    for (int i = 0; i < B; i++) {
        int cp = g->current_player(g, roots[i]);
        if (cp == ZT_CHANCE)
            return zt_fail(ZT_ERR_UNSUPPORTED,
                           "muzero model: a chance position at the root needs stochastic muzero");
        m->row_of[i] = cp == ZT_TERMINAL ? -1 : n;
        if (cp != ZT_TERMINAL) g->observe(g, roots[i], m->obs + (size_t)n++ * m->obs_size);
    }
    if (n > 0) {
        ZT_TRY(reserve_handles(m, n));
        ZT_TRY(m->ev.initial(m->ev.ctx, n, m->obs, m->out_hidden, m->logits, m->values));
        base->stats.evaluations += (uint64_t)n;
        base->stats.eval_calls++;
    }
    base->stats.positions += (uint64_t)B;
    for (int i = 0; i < B; i++) {
        mz_state *st = states[i];
        memset(st, 0, sizeof *st);
        int r = m->row_of[i];
        if (r < 0) { /* a finished game: the terminal the real game says it is */
            st->handle = NO_HANDLE;
            out->value[i] = 0;
            out->reward[i] = 0;
            out->kind[i] = ZT_NODE_TERMINAL;
            out->player[i] = 0;
            out->num_outcomes[i] = 0;
            continue;
        }
        int cp = g->current_player(g, roots[i]);
        st->handle = take_handle(m, m->out_hidden + (size_t)r * m->hs);
        st->player = (int8_t)cp;
        st->kind = ZT_NODE_DECISION;
        float *lg = out->logits + (size_t)i * A;
        memcpy(lg, m->logits + (size_t)r * A, (size_t)A * sizeof(float));
        mask_illegal(g, roots[i], lg);
        float v = m->values[r];
        if (m->one_player) v = zt_game_value_from_net(g, v);
        decision_output(out, i, cp, v, 0.0f);
    }
    return ZT_OK;
}

/* Runs the net on rows [from, from + n) of the call's buffers: g then f
 * (plain MuZero; Stochastic MuZero's afterstates with codes), or phi then
 * psi (Stochastic MuZero's decision states with actions). */
static zt_status run_rows(zt_model *base, int from, int n, bool to_afterstate)
{
    mz_model *m = base->impl;
    if (n == 0) return ZT_OK;
    size_t f = (size_t)from, A = (size_t)m->game->num_actions;
    const float *in = m->in_hidden + f * m->hs;
    float *out = m->out_hidden + f * m->hs;
    if (to_afterstate)
        ZT_TRY(m->ev.afterstate(m->ev.ctx, n, in, m->actions + f, out, m->sigma + f * m->codes,
                                m->values + f));
    else
        ZT_TRY(m->ev.recurrent(m->ev.ctx, n, in, m->actions + f, out, m->rewards + f,
                               m->logits + f * A, m->values + f, m->turns ? m->turn + f : NULL));
    base->stats.evaluations += (uint64_t)n;
    base->stats.eval_calls++;
    return ZT_OK;
}

static zt_status mz_recurrent(zt_model *base, int B, const void *const *states, const int *actions,
                              void *const *next, zt_model_output *out)
{
    mz_model *m = base->impl;
    int A = m->game->num_actions, O = m->codes;
    ZT_ASSERT(B <= base->max_batch);
    /* Stochastic MuZero: decision states (to afterstates) in rows 0..nd-1,
     * afterstates (to states) after them; plain MuZero: all decisions,
     * stepped by g */
    int nd = 0;
    for (int i = 0; i < B; i++) {
        const mz_state *st = states[i];
        if (!m->codes || st->kind == ZT_NODE_DECISION) nd++;
    }
    int di = 0, ci = nd;
    for (int i = 0; i < B; i++) {
        const mz_state *st = states[i];
        ZT_ASSERT(st->handle < m->cap && m->refs[st->handle] > 0);
        int r = !m->codes || st->kind == ZT_NODE_DECISION ? di++ : ci++;
        m->row_of[i] = r;
        memcpy(m->in_hidden + (size_t)r * m->hs, m->hidden + (size_t)st->handle * m->hs,
               m->hs * sizeof(float));
        m->actions[r] = actions[i];
    }
    ZT_TRY(reserve_handles(m, B));
    if (m->codes) {
        ZT_TRY(run_rows(base, 0, nd, true));
        ZT_TRY(run_rows(base, nd, B - nd, false));
    } else {
        ZT_TRY(run_rows(base, 0, B, false));
    }
    base->stats.positions += (uint64_t)B;
    for (int i = 0; i < B; i++) {
        const mz_state *st = states[i];
        mz_state *nx = next[i];
        int r = m->row_of[i];
        memset(nx, 0, sizeof *nx);
        nx->handle = take_handle(m, m->out_hidden + (size_t)r * m->hs);
        float v = m->values[r];
        if (m->one_player) v = zt_game_value_from_net(m->game, v);
        if (m->codes && st->kind == ZT_NODE_DECISION) {
            /* the afterstate: still the acting player's */
            nx->player = st->player;
            nx->kind = ZT_NODE_CHANCE;
            chance_output(out, i, O, st->player, v, m->sigma + (size_t)r * m->codes, m->codes);
            continue;
        }
        /* one player moves throughout; two players alternate, or with a
         * to-play head the turn passes where the head says it more likely
         * than not (the search needs one player per node) */
        int player = m->one_player                   ? st->player
                     : m->turns && m->turn[r] < 0.5f ? st->player
                                                     : 1 - st->player;
        nx->player = (int8_t)player;
        nx->kind = ZT_NODE_DECISION;
        memcpy(out->logits + (size_t)i * A, m->logits + (size_t)r * A, (size_t)A * sizeof(float));
        /* g's reward is the acting player's, as model.h's reward is; a
         * one-player net's value and reward are on the transformed scale
         * they were trained on (replay's targets), and the search adds them
         * on the linear one (q = reward + value) */
        float rw = m->rewards[r];
        if (m->one_player) rw = zt_game_value_from_net(m->game, rw);
        decision_output(out, i, player, v, rw);
    }
    return ZT_OK;
}

static void mz_retain(zt_model *base, int n, const void *const *states)
{
    mz_model *m = base->impl;
    for (int i = 0; i < n; i++) {
        const mz_state *st = states[i];
        if (st->handle == NO_HANDLE) continue;
        ZT_ASSERT(st->handle < m->cap && m->refs[st->handle] > 0);
        m->refs[st->handle]++;
        m->live++;
    }
}

static void mz_release(zt_model *base, int n, const void *const *states)
{
    mz_model *m = base->impl;
    for (int i = 0; i < n; i++) {
        const mz_state *st = states[i];
        if (st->handle == NO_HANDLE) continue;
        ZT_ASSERT(st->handle < m->cap && m->refs[st->handle] > 0);
        m->live--;
        if (--m->refs[st->handle] == 0) m->free_handles[m->nfree++] = st->handle;
    }
}

static void mz_free(zt_model *base)
{
    mz_model *m = base->impl;
    free(m->hidden);
    free(m->refs);
    free(m->free_handles);
    free(m->obs);
    free(m->in_hidden);
    free(m->out_hidden);
    free(m->logits);
    free(m->values);
    free(m->rewards);
    free(m->sigma);
    free(m->turn);
    free(m->actions);
    free(m->row_of);
    free(m);
}

int64_t zt_mz_model_live_states(const zt_model *base)
{
    const mz_model *m = base->impl;
    return m->live;
}

zt_status zt_mz_model_new(const zt_game *g, const zt_evaluator *ev, int max_batch, zt_model **out)
{
    *out = NULL;
    if (max_batch < 1) return zt_fail(ZT_ERR_INVALID, "muzero model: max_batch must be >= 1");
    if (!ev->initial || !ev->recurrent || ev->hidden_size == 0)
        return zt_fail(ZT_ERR_INVALID, "muzero model: the evaluator runs no muzero net");
    mz_model *m = zt_xcalloc(1, sizeof *m);
    m->game = g;
    m->ev = *ev;
    m->hs = ev->hidden_size;
    m->obs_size = (size_t)zt_game_obs_size(g);
    m->one_player = zt_game_num_players(g) == 1;
    m->codes = ev->chance_codes;
    m->turns = ev->turns;
    if (m->codes > 0 && !ev->afterstate) {
        free(m);
        return zt_fail(ZT_ERR_INVALID, "muzero model: chance codes without an afterstate function");
    }
    size_t n = (size_t)max_batch, A = (size_t)g->num_actions;
    m->obs = malloc(n * m->obs_size * sizeof(float));
    m->in_hidden = malloc(n * m->hs * sizeof(float));
    m->out_hidden = malloc(n * m->hs * sizeof(float));
    m->logits = malloc(n * A * sizeof(float));
    m->values = malloc(n * sizeof(float));
    m->rewards = malloc(n * sizeof(float));
    m->sigma = malloc(n * (size_t)m->codes * sizeof(float) + 1);
    m->turn = malloc(n * sizeof(float));
    m->actions = malloc(n * sizeof(int));
    m->row_of = malloc(n * sizeof(int));
    m->base.impl = m;
    m->base.free = mz_free;
    if (!m->obs || !m->in_hidden || !m->out_hidden || !m->logits || !m->values || !m->rewards ||
        !m->sigma || !m->turn || !m->actions || !m->row_of || grow_store(m) != ZT_OK) {
        mz_free(&m->base);
        return zt_fail(ZT_ERR_NOMEM, "muzero model buffers for batch %d", max_batch);
    }
    m->base.num_actions = g->num_actions;
    m->base.max_outcomes = m->codes;
    m->base.state_size = sizeof(mz_state);
    m->base.input_size = g->state_size;
    m->base.max_batch = max_batch;
    m->base.root_from_initial = true;
    m->base.initial = mz_initial;
    m->base.recurrent = mz_recurrent;
    m->base.retain = mz_retain;
    m->base.release = mz_release;
    *out = &m->base;
    return ZT_OK;
}

static zt_status factory_create(void *ctx, const zt_game *g, const zt_evaluator *ev, int max_batch,
                                zt_nncache *cache, zt_model **out)
{
    (void)ctx;
    (void)cache;
    return zt_mz_model_new(g, ev, max_batch, out);
}

zt_model_factory zt_mz_model_factory(void)
{
    return (zt_model_factory){.ctx = NULL, .create = factory_create};
}

zt_status zt_model_for_evaluator(const zt_game *g, const zt_evaluator *ev, int max_batch,
                                 zt_nncache *cache, zt_model **out)
{
    if (ev->initial) return zt_mz_model_new(g, ev, max_batch, out);
    return zt_az_model_new(g, ev, max_batch, cache, out);
}

static zt_status either_create(void *ctx, const zt_game *g, const zt_evaluator *ev, int max_batch,
                               zt_nncache *cache, zt_model **out)
{
    (void)ctx;
    return zt_model_for_evaluator(g, ev, max_batch, cache, out);
}

zt_model_factory zt_model_factory_for_evaluator(void)
{
    return (zt_model_factory){.ctx = NULL, .create = either_create};
}
