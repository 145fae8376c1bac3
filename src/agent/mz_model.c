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
    uint8_t pad[3];
} mz_state;

typedef struct mz_model {
    zt_model base;
    const zt_game *game;
    zt_evaluator ev;
    size_t hs;
    size_t obs_size;
    bool one_player; /* 2048: no alternation, values and rewards transformed */
    /* the store: hidden states by handle, their reference counts, the free
     * handles; it grows (doubling) when every handle is taken */
    float *hidden;
    int32_t *refs;
    uint32_t *free_handles;
    uint32_t cap, nfree;
    int64_t live;
    /* per call, max_batch rows */
    float *obs, *in_hidden, *out_hidden, *logits, *values, *rewards;
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
        float *lg = out->logits + (size_t)i * A;
        memcpy(lg, m->logits + (size_t)r * A, (size_t)A * sizeof(float));
        mask_illegal(g, roots[i], lg);
        float v = m->values[r];
        if (m->one_player) v = zt_game_value_from_net(g, v);
        decision_output(out, i, cp, v, 0.0f);
    }
    return ZT_OK;
}

static zt_status mz_recurrent(zt_model *base, int B, const void *const *states, const int *actions,
                              void *const *next, zt_model_output *out)
{
    mz_model *m = base->impl;
    int A = m->game->num_actions;
    ZT_ASSERT(B <= base->max_batch);
    for (int i = 0; i < B; i++) {
        const mz_state *st = states[i];
        ZT_ASSERT(st->handle < m->cap && m->refs[st->handle] > 0);
        memcpy(m->in_hidden + (size_t)i * m->hs, m->hidden + (size_t)st->handle * m->hs,
               m->hs * sizeof(float));
        m->actions[i] = actions[i];
    }
    ZT_TRY(reserve_handles(m, B));
    ZT_TRY(m->ev.recurrent(m->ev.ctx, B, m->in_hidden, m->actions, m->out_hidden, m->rewards,
                           m->logits, m->values));
    base->stats.positions += (uint64_t)B;
    base->stats.evaluations += (uint64_t)B;
    base->stats.eval_calls++;
    for (int i = 0; i < B; i++) {
        const mz_state *st = states[i];
        mz_state *nx = next[i];
        /* two players: turns alternate; one player moves throughout */
        int player = m->one_player ? st->player : 1 - st->player;
        memset(nx, 0, sizeof *nx);
        nx->handle = take_handle(m, m->out_hidden + (size_t)i * m->hs);
        nx->player = (int8_t)player;
        memcpy(out->logits + (size_t)i * A, m->logits + (size_t)i * A, (size_t)A * sizeof(float));
        /* g's reward is the acting player's, as model.h's reward is; a
         * one-player net's value and reward are on the transformed scale
         * they were trained on (replay's targets), and the search adds them
         * on the linear one (q = reward + value) */
        float v = m->values[i], r = m->rewards[i];
        if (m->one_player) {
            v = zt_game_value_from_net(m->game, v);
            r = zt_game_value_from_net(m->game, r);
        }
        decision_output(out, i, player, v, r);
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
        return zt_fail(ZT_ERR_INVALID,
                       "muzero model: the evaluator runs no muzero net (a muzero run needs "
                       "selfplay.evaluator = private)");
    mz_model *m = zt_xcalloc(1, sizeof *m);
    m->game = g;
    m->ev = *ev;
    m->hs = ev->hidden_size;
    m->obs_size = (size_t)g->obs_shape[0] * g->obs_shape[1] * g->obs_shape[2];
    m->one_player = zt_game_num_players(g) == 1;
    size_t n = (size_t)max_batch, A = (size_t)g->num_actions;
    m->obs = malloc(n * m->obs_size * sizeof(float));
    m->in_hidden = malloc(n * m->hs * sizeof(float));
    m->out_hidden = malloc(n * m->hs * sizeof(float));
    m->logits = malloc(n * A * sizeof(float));
    m->values = malloc(n * sizeof(float));
    m->rewards = malloc(n * sizeof(float));
    m->actions = malloc(n * sizeof(int));
    m->row_of = malloc(n * sizeof(int));
    m->base.impl = m;
    m->base.free = mz_free;
    if (!m->obs || !m->in_hidden || !m->out_hidden || !m->logits || !m->values || !m->rewards ||
        !m->actions || !m->row_of || grow_store(m) != ZT_OK) {
        mz_free(&m->base);
        return zt_fail(ZT_ERR_NOMEM, "muzero model buffers for batch %d", max_batch);
    }
    m->base.num_actions = g->num_actions;
    m->base.max_outcomes = 0;
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
