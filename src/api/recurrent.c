/* libzeroth: the caller's recurrent model (zeroth_search_new_recurrent) as a
 * zt_model (search/model.h). A model state is the caller's embedding
 * followed by one byte, the state's perspective player; roots are game
 * states, handed to root_fn with their observations, and the game's legal
 * actions mask root_fn's logits.
 * Every answer is checked before search sees it (search ZT_ASSERTs its
 * invariants; a caller's mistake must be a status, not an abort). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "core/alloc.h"

typedef struct recurrent_model {
    zt_model base;
    const zt_game *game;
    size_t emb; /* embedding bytes */
    zeroth_root_fn root_fn;
    zeroth_recurrent_fn recurrent_fn;
    void *user;
    int obs_size;
    float *obs;      /* max_batch x obs_size */
    uint8_t *roots;  /* max_batch x game state_size */
    uint8_t *in;     /* max_batch x emb: the embeddings handed to recurrent_fn */
    uint8_t *out;    /* max_batch x emb: what the caller writes */
    float *discount; /* max_batch */
} recurrent_model;

/* The caller's status as a zt_status with the message naming `fn`. */
static zt_status caller_failed(zeroth_status r, const char *fn)
{
    char why[ZT_MESSAGE_MAX];
    snprintf(why, sizeof why, "%s", zt_error_message());
    zt_status code = r > ZEROTH_OK && r <= ZEROTH_ERR_UNSUPPORTED ? (zt_status)r : ZT_ERR_INVALID;
    return zt_fail(code, "the caller's %s failed (status %d, %s)%s%s", fn, (int)r,
                   zeroth_status_name(r), why[0] ? ": " : "", why);
}

static zt_status check_value(const char *fn, const char *what, float v, int i, int n)
{
    if (v >= -1.0f && v <= 1.0f) return ZT_OK;
    return zt_fail(ZT_ERR_INVALID,
                   "the caller's %s gave %s %g to position %d of %d (it must lie in [-1, 1])", fn,
                   what, (double)v, i, n);
}

static zt_status initial(zt_model *base, int B, const void *const *roots, void *const *states,
                         zt_model_output *out)
{
    recurrent_model *m = (recurrent_model *)base;
    const zt_game *g = m->game;
    int A = g->num_actions;
    for (int i = 0; i < B; i++) {
        memcpy(m->roots + (size_t)i * g->state_size, roots[i], g->state_size);
        g->observe(g, roots[i], m->obs + (size_t)i * m->obs_size);
    }
    zt_fail(ZT_OK, "%s", ""); /* so a message from zeroth_fail is told from a stale one */
    zeroth_status r = m->root_fn(m->user, B, m->roots, m->obs, m->out, out->logits, out->value);
    if (r != ZEROTH_OK) return caller_failed(r, "root_fn");
    for (int i = 0; i < B; i++) {
        float *lg = out->logits + (size_t)i * A;
        uint8_t mask[ZT_MAX_ACTIONS];
        zt_game_legal_mask(g, roots[i], mask);
        for (int a = 0; a < A; a++) {
            if (!mask[a]) {
                lg[a] = -INFINITY;
            } else if (!isfinite(lg[a])) {
                return zt_fail(ZT_ERR_INVALID,
                               "the caller's root_fn gave logit %g to legal action %d of position "
                               "%d of %d (logits of legal actions must be finite)",
                               (double)lg[a], a, i, B);
            }
        }
        ZT_TRY(check_value("root_fn", "value", out->value[i], i, B));
        int8_t player = (int8_t)g->current_player(g, roots[i]);
        ZT_ASSERT(player >= 0); /* zeroth_search_begin takes decision states only */
        memcpy(states[i], m->out + (size_t)i * m->emb, m->emb);
        ((int8_t *)states[i])[m->emb] = player;
        out->reward[i] = 0;
        out->kind[i] = ZT_NODE_DECISION;
        out->player[i] = player;
        out->num_outcomes[i] = 0;
    }
    return ZT_OK;
}

static zt_status recurrent(zt_model *base, int B, const void *const *states, const int *actions,
                           void *const *next_states, zt_model_output *out)
{
    recurrent_model *m = (recurrent_model *)base;
    int A = m->base.num_actions;
    for (int i = 0; i < B; i++) memcpy(m->in + (size_t)i * m->emb, states[i], m->emb);
    zt_fail(ZT_OK, "%s", "");
    zeroth_status r = m->recurrent_fn(m->user, B, m->in, actions, m->out, out->logits, out->value,
                                      out->reward, m->discount);
    if (r != ZEROTH_OK) return caller_failed(r, "recurrent_fn");
    for (int i = 0; i < B; i++) {
        float d = m->discount[i];
        if (d != -1.0f && d != 0.0f && d != 1.0f)
            return zt_fail(ZT_ERR_INVALID,
                           "the caller's recurrent_fn gave discount %g to position %d of %d (-1: "
                           "the opponent moves next, +1: the same player, 0: the game ended)",
                           (double)d, i, B);
        ZT_TRY(check_value("recurrent_fn", "reward", out->reward[i], i, B));
        int8_t from = ((const int8_t *)states[i])[m->emb];
        float *lg = out->logits + (size_t)i * A;
        out->num_outcomes[i] = 0;
        if (d == 0.0f) {
            /* terminal: value 0, the result is the reward (model.h) */
            out->kind[i] = ZT_NODE_TERMINAL;
            out->player[i] = from;
            out->value[i] = 0;
        } else {
            int finite = 0;
            for (int a = 0; a < A; a++) {
                if (isnan(lg[a]) || lg[a] == INFINITY)
                    return zt_fail(ZT_ERR_INVALID,
                                   "the caller's recurrent_fn gave logit %g to action %d of "
                                   "position %d of %d (finite, or -inf for an action that cannot "
                                   "be taken)",
                                   (double)lg[a], a, i, B);
                finite += lg[a] != -INFINITY;
            }
            if (finite == 0)
                return zt_fail(ZT_ERR_INVALID,
                               "the caller's recurrent_fn gave position %d of %d no action with a "
                               "finite logit (discount 0 ends a game)",
                               i, B);
            ZT_TRY(check_value("recurrent_fn", "value", out->value[i], i, B));
            out->kind[i] = ZT_NODE_DECISION;
            out->player[i] = (int8_t)(d < 0 ? 1 - from : from);
        }
        memcpy(next_states[i], m->out + (size_t)i * m->emb, m->emb);
        ((int8_t *)next_states[i])[m->emb] = out->player[i];
    }
    return ZT_OK;
}

static void free_model(zt_model *base)
{
    recurrent_model *m = (recurrent_model *)base;
    free(m->obs);
    free(m->roots);
    free(m->in);
    free(m->out);
    free(m->discount);
    free(m);
}

zt_status zt_api_recurrent_model_new(const zt_game *g, size_t embedding_size,
                                     zeroth_root_fn root_fn, zeroth_recurrent_fn recurrent_fn,
                                     void *user, int max_batch, zt_model **out)
{
    ZT_ASSERT(max_batch > 0 && embedding_size > 0);
    recurrent_model *m = zt_xcalloc(1, sizeof *m);
    m->game = g;
    m->emb = embedding_size;
    m->root_fn = root_fn;
    m->recurrent_fn = recurrent_fn;
    m->user = user;
    m->obs_size = zt_game_obs_size(g);
    m->obs = zt_xcalloc((size_t)max_batch * (size_t)m->obs_size, sizeof *m->obs);
    m->roots = zt_xcalloc((size_t)max_batch, g->state_size);
    m->in = zt_xcalloc((size_t)max_batch, embedding_size);
    m->out = zt_xcalloc((size_t)max_batch, embedding_size);
    m->discount = zt_xcalloc((size_t)max_batch, sizeof *m->discount);
    m->base = (zt_model){
        .num_actions = g->num_actions,
        .max_outcomes = 0,
        .state_size = embedding_size + 1,
        .input_size = g->state_size,
        .max_batch = max_batch,
        .impl = m,
        .initial = initial,
        .recurrent = recurrent,
        .free = free_model,
    };
    *out = &m->base;
    return ZT_OK;
}
