#include "agent/az_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"

/* One position whose evaluation feeds output row `target`: its logits when
 * it is the new state itself, else weight x value into a chance expectation. */
typedef struct job {
    int target;
    float weight;
    bool wants_logits;
    const void *state;
    uint64_t key; /* position hash, with a cache */
} job;

typedef struct az_model {
    zt_model base;
    const zt_game *game;
    bool one_player; /* rewards on every transition, values never negated (game.h) */
    bool chance_net; /* chance states valued by one evaluation (evaluator.h, chance_values) */
    zt_evaluator ev;
    zt_nncache *cache;
    size_t game_bytes; /* game state padded to 8 (chance scratch stride) */
    int obs_size;
    int max_jobs;
    job *jobs;
    int *pending; /* jobs that missed the cache, in evaluator order */
    int *row_of;  /* per job: its evaluator row, or -1 when the cache answered */
    /* Positions repeated within one batch (transpositions reached by
     * several games or leaves at once) are evaluated once: an open-addressed
     * table key -> evaluator row, valid for the entries stamped with the
     * current generation, so it is never cleared. Measured: 31 % of a
     * 64-game Connect Four batch were such repeats. */
    uint64_t *dedup_key;
    int *dedup_row;
    uint32_t *dedup_gen;
    uint32_t gen;
    int dedup_mask;
    const void **eval_states;
    float *obs;       /* max_jobs x obs_size, only with ev.eval */
    float *logits;    /* max_jobs x num_actions evaluator rows, then one spare row */
    float *values;    /* max_jobs evaluator values */
    float *mass;      /* max_batch: probability resolved per chance output */
    uint8_t *scratch; /* successor states of chance outcomes */
} az_model;

/* The perspective byte follows the game state's own bytes, so a model state
 * is state_size + 1 bytes and stepping copies no more than that. */
static inline int8_t *perspective_of(az_model *m, void *state)
{
    return (int8_t *)((uint8_t *)state + m->game->state_size);
}

/* Sets illegal actions' logits to -INFINITY (masking at every node);
 * legal() lists actions in increasing order (game.h), so one merge pass. */
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

static void add_job(az_model *m, int *nj, int target, float weight, bool wants_logits,
                    const void *s)
{
    ZT_ASSERT(*nj < m->max_jobs);
    uint64_t key = m->cache ? m->game->hash(m->game, s) : 0;
    m->jobs[(*nj)++] = (job){target, weight, wants_logits, s, key};
}

static zt_status run_jobs(az_model *m, int nj, zt_model_output *out);

/* Rolls that lead to further rolls (backgammon: no legal move) are
 * expanded this many levels deep; beyond, the expectation is conditioned on
 * the outcomes resolved (both sides being stuck twice in a row can repeat
 * forever, so a full expansion would not end). */
#define CHANCE_DEPTH 2

/* Queues the outcomes of chance state `state` (weight: its probability
 * within output i's chance node) so that output i's value becomes the
 * expectation of the evaluator's values for player `from` (divided by the
 * mass resolved once all jobs ran). When the job list is full the queued
 * jobs are evaluated first (one extra evaluator call). */
static zt_status expect_chance(az_model *m, int i, const void *state, int from, float weight,
                               int depth, zt_model_output *out, int *nj)
{
    const zt_game *g = m->game;
    int outcomes[ZT_MAX_CHANCE_OUTCOMES];
    float probs[ZT_MAX_CHANCE_OUTCOMES];
    int n = g->chance_outcomes(g, state, outcomes, probs);
    for (int k = 0; k < n; k++) {
        if (!(probs[k] > 0)) continue;
        if (*nj == m->max_jobs) {
            ZT_TRY(run_jobs(m, *nj, out));
            *nj = 0;
        }
        void *succ = m->scratch + (size_t)*nj * m->game_bytes;
        memcpy(succ, state, g->state_size);
        g->apply(g, succ, outcomes[k]);
        int sp = g->current_player(g, succ);
        float w = weight * probs[k];
        /* One player: what the outcome pays, then the value after it (a
         * finished game is worth no more). Two players: the result. */
        if (m->one_player) out->value[i] += w * zt_game_reward(g, state, succ);
        if (sp == ZT_TERMINAL) {
            if (!m->one_player) out->value[i] += w * zt_game_value_of(g, succ, from);
            m->mass[i] += w;
        } else if (sp == ZT_CHANCE) {
            if (depth + 1 >= CHANCE_DEPTH) continue;
            uint64_t again[ZT_MAX_STATE_BYTES / 8];
            memcpy(again, succ, g->state_size);
            ZT_TRY(expect_chance(m, i, again, from, w, depth + 1, out, nj));
        } else {
            add_job(m, nj, i, sp == from ? w : -w, false, succ);
            m->mass[i] += w;
        }
    }
    return ZT_OK;
}

/* Classifies state i (already written to states[i]) and queues what it
 * needs evaluated. `from` is the perspective of the state it came from,
 * `reward` what the transition into it paid (one-player games; 0 for two
 * players, whose result is the reward into a terminal state). */
static zt_status classify(az_model *m, int i, void *state, int from, bool is_root, float reward,
                          zt_model_output *out, int *nj)
{
    const zt_game *g = m->game;
    int O = m->base.max_outcomes > 0 ? m->base.max_outcomes : 1;
    int cp = g->current_player(g, state);
    out->value[i] = 0;
    out->reward[i] = reward;
    out->num_outcomes[i] = 0;
    if (cp >= 0) {
        out->kind[i] = ZT_NODE_DECISION;
        out->player[i] = (int8_t)cp;
        *perspective_of(m, state) = (int8_t)cp;
        /* Rolls that lead to rolls can fill the job list (expect_chance
         * flushes before each outcome, not after the last one). */
        if (*nj == m->max_jobs) {
            ZT_TRY(run_jobs(m, *nj, out));
            *nj = 0;
        }
        add_job(m, nj, i, 1.0f, true, state);
        return ZT_OK;
    }
    out->player[i] = (int8_t)from;
    *perspective_of(m, state) = (int8_t)from;
    if (cp == ZT_TERMINAL) {
        out->kind[i] = ZT_NODE_TERMINAL;
        if (!is_root && !m->one_player) out->reward[i] = zt_game_value_of(g, state, from);
        return ZT_OK;
    }
    ZT_ASSERT(cp == ZT_CHANCE);
    out->kind[i] = ZT_NODE_CHANCE;
    int *outcomes = out->outcomes + (size_t)i * O;
    float *probs = out->outcome_probs + (size_t)i * O;
    out->num_outcomes[i] = g->chance_outcomes(g, state, outcomes, probs);
    if (m->chance_net) {
        /* the net's own value of the chance state, for its observer */
        if (*nj == m->max_jobs) {
            ZT_TRY(run_jobs(m, *nj, out));
            *nj = 0;
        }
        add_job(m, nj, i, g->chance_observer(g, state) == from ? 1.0f : -1.0f, false, state);
        m->mass[i] = 1;
        return ZT_OK;
    }
    m->mass[i] = 0;
    return expect_chance(m, i, state, from, 1.0f, 0, out, nj);
}

/* Delivers the (masked) logits and value of job j to its output row. */
static inline void deliver(az_model *m, const job *jb, float value, zt_model_output *out)
{
    if (m->one_player) value = zt_game_value_from_net(m->game, value);
    if (jb->wants_logits)
        out->value[jb->target] = value;
    else
        out->value[jb->target] += jb->weight * value;
}

/* Looks jobs up in the cache (a hit writes straight into the output row),
 * evaluates the misses in one call, and masks, caches and delivers them. */
static zt_status run_jobs(az_model *m, int nj, zt_model_output *out)
{
    const zt_game *g = m->game;
    int A = g->num_actions;
    float *spare_row = m->logits + (size_t)m->max_jobs * A;
    int misses = 0;
    m->base.stats.positions += (uint64_t)nj;
    m->gen++;
    for (int j = 0; j < nj; j++) {
        const job *jb = &m->jobs[j];
        float value;
        float *row = jb->wants_logits ? out->logits + (size_t)jb->target * A : spare_row;
        m->row_of[j] = -1;
        if (m->cache && zt_nncache_lookup(m->cache, jb->key, row, &value)) {
            deliver(m, jb, value, out);
            continue;
        }
        if (m->cache) {
            int h = (int)(jb->key & (uint64_t)m->dedup_mask);
            while (m->dedup_gen[h] == m->gen && m->dedup_key[h] != jb->key)
                h = (h + 1) & m->dedup_mask;
            if (m->dedup_gen[h] == m->gen) {
                m->row_of[j] = m->dedup_row[h];
                continue;
            }
            m->dedup_gen[h] = m->gen;
            m->dedup_key[h] = jb->key;
            m->dedup_row[h] = misses;
        }
        m->row_of[j] = misses;
        m->pending[misses] = j;
        m->eval_states[misses] = jb->state;
        if (!m->ev.eval_states) g->observe(g, jb->state, m->obs + (size_t)misses * m->obs_size);
        misses++;
    }
    if (misses == 0) return ZT_OK;
    if (m->ev.eval_states)
        ZT_TRY(m->ev.eval_states(m->ev.ctx, misses, m->eval_states, m->logits, m->values));
    else
        ZT_TRY(m->ev.eval(m->ev.ctx, misses, m->obs, m->logits, m->values));
    m->base.stats.evaluations += (uint64_t)misses;
    m->base.stats.eval_calls++;
    for (int k = 0; k < misses; k++) {
        const job *jb = &m->jobs[m->pending[k]];
        float *lg = m->logits + (size_t)k * A;
        mask_illegal(g, jb->state, lg);
        if (m->cache) zt_nncache_insert(m->cache, jb->key, lg, m->values[k]);
    }
    for (int j = 0; j < nj; j++) {
        int k = m->row_of[j];
        if (k < 0) continue;
        const job *jb = &m->jobs[j];
        if (jb->wants_logits)
            memcpy(out->logits + (size_t)jb->target * A, m->logits + (size_t)k * A,
                   (size_t)A * sizeof(float));
        deliver(m, jb, m->values[k], out);
    }
    return ZT_OK;
}

static void normalise_chance(az_model *m, int B, zt_model_output *out)
{
    for (int i = 0; i < B; i++)
        if (out->kind[i] == ZT_NODE_CHANCE)
            out->value[i] = m->mass[i] > 0 ? out->value[i] / m->mass[i] : 0.0f;
}

static zt_status az_initial(zt_model *base, int B, const void *const *roots, void *const *states,
                            zt_model_output *out)
{
    az_model *m = (az_model *)base;
    ZT_ASSERT(B <= base->max_batch);
    int nj = 0;
    for (int i = 0; i < B; i++) {
        memset(states[i], 0, base->state_size);
        memcpy(states[i], roots[i], m->game->state_size);
        ZT_TRY(classify(m, i, states[i], 0, true, 0.0f, out, &nj));
    }
    ZT_TRY(run_jobs(m, nj, out));
    normalise_chance(m, B, out);
    return ZT_OK;
}

static zt_status az_recurrent(zt_model *base, int B, const void *const *states, const int *actions,
                              void *const *next, zt_model_output *out)
{
    az_model *m = (az_model *)base;
    ZT_ASSERT(B <= base->max_batch);
    int nj = 0;
    for (int i = 0; i < B; i++) {
        /* the states live in search trees, cold at large batches */
        if (i + 4 < B) {
            __builtin_prefetch(states[i + 4]);
            __builtin_prefetch(next[i + 4], 1);
        }
        memcpy(next[i], states[i], base->state_size);
        int from = *perspective_of(m, next[i]);
        m->game->apply(m->game, next[i], actions[i]);
        float reward = m->one_player ? zt_game_reward(m->game, states[i], next[i]) : 0.0f;
        ZT_TRY(classify(m, i, next[i], from, false, reward, out, &nj));
    }
    ZT_TRY(run_jobs(m, nj, out));
    normalise_chance(m, B, out);
    return ZT_OK;
}

static void az_free(zt_model *base)
{
    az_model *m = (az_model *)base;
    free(m->jobs);
    free(m->pending);
    free(m->row_of);
    free(m->dedup_key);
    free(m->dedup_row);
    free(m->dedup_gen);
    free(m->eval_states);
    free(m->obs);
    free(m->logits);
    free(m->values);
    free(m->mass);
    zt_aligned_free(m->scratch);
    free(m);
}

zt_status zt_az_model_new(const zt_game *g, const zt_evaluator *ev, int max_batch,
                          zt_nncache *cache, zt_model **out)
{
    *out = NULL;
    if (max_batch < 1) return zt_fail(ZT_ERR_INVALID, "az model: max_batch must be >= 1");
    if (!ev->eval && !ev->eval_states)
        return zt_fail(ZT_ERR_INVALID, "az model: evaluator has no function");
    az_model *m = zt_xcalloc(1, sizeof *m);
    m->game = g;
    m->one_player = zt_game_num_players(g) == 1;
    m->chance_net = ev->chance_values && g->chance_observer;
    m->ev = *ev;
    m->cache = cache;
    m->game_bytes = (g->state_size + 7) / 8 * 8;
    m->obs_size = zt_game_obs_size(g);
    /* A chance state queues one job per outcome. */
    int per_item = g->max_chance_outcomes > 1 ? g->max_chance_outcomes : 1;
    m->max_jobs = max_batch * per_item;
    size_t J = (size_t)m->max_jobs, A = (size_t)g->num_actions;
    m->jobs = malloc(J * sizeof *m->jobs);
    m->pending = malloc(J * sizeof *m->pending);
    m->row_of = malloc(J * sizeof *m->row_of);
    size_t slots = 16;
    while (slots < 2 * J) slots *= 2;
    m->dedup_mask = (int)slots - 1;
    m->dedup_key = malloc(slots * sizeof *m->dedup_key);
    m->dedup_row = malloc(slots * sizeof *m->dedup_row);
    m->dedup_gen = calloc(slots, sizeof *m->dedup_gen);
    m->eval_states = malloc(J * sizeof *m->eval_states);
    m->obs = ev->eval_states ? NULL : malloc(J * (size_t)m->obs_size * sizeof *m->obs);
    m->logits = malloc((J + 1) * A * sizeof *m->logits);
    m->values = malloc(J * sizeof *m->values);
    m->mass = malloc((size_t)max_batch * sizeof *m->mass);
    m->scratch = zt_aligned_alloc(64, J * m->game_bytes);
    if (!m->jobs || !m->pending || !m->row_of || !m->dedup_key || !m->dedup_row || !m->dedup_gen ||
        !m->eval_states || (!ev->eval_states && !m->obs) || !m->logits || !m->values || !m->mass ||
        !m->scratch) {
        az_free(&m->base);
        return zt_fail(ZT_ERR_NOMEM, "az model buffers for batch %d", max_batch);
    }
    m->base.num_actions = g->num_actions;
    m->base.max_outcomes = g->max_chance_outcomes;
    m->base.state_size = g->state_size + 1;
    m->base.input_size = g->state_size;
    m->base.max_batch = max_batch;
    m->base.impl = m;
    m->base.initial = az_initial;
    m->base.recurrent = az_recurrent;
    m->base.free = az_free;
    *out = &m->base;
    return ZT_OK;
}

zt_status zt_az_model_factory_create(void *ctx, const zt_game *g, const zt_evaluator *ev, int max_batch,
                                    zt_nncache *cache, zt_model **out)
{
    (void)ctx;
    return zt_az_model_new(g, ev, max_batch, cache, out);
}

zt_model_factory zt_az_model_factory(void)
{
    return (zt_model_factory){.ctx = NULL, .create = zt_az_model_factory_create};
}
