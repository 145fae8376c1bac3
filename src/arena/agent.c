/* Agents for the arena: baseline players, the raw policy of an evaluator,
 * and search on the AlphaZero model. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/greedy.h"
#include "arena/arena.h"
#include "core/alloc.h"

void zt_agent_free(zt_agent *a)
{
    if (a) a->free(a);
}

/* A player follows any number of games: it keeps nothing per game. */
#define PLAYER_MAX_GAMES (1 << 16)

typedef struct player_agent {
    zt_agent base;
    zt_player *player;
    bool own;
} player_agent;

static zt_status player_choose(zt_agent *a, int n, const int *slots, const void *const *states,
                               zt_rng *const *rngs, int *actions)
{
    zt_player *p = ((player_agent *)a)->player;
    for (int i = 0; i < n; i++) actions[i] = p->choose(p, states[i], rngs[i]);
    return ZT_OK;
}

static void player_free(zt_agent *a)
{
    player_agent *pa = (player_agent *)a;
    if (pa->own) zt_player_free(pa->player);
    free(pa);
}

zt_agent *zt_agent_from_player(zt_player *p, bool own)
{
    player_agent *pa = zt_xcalloc(1, sizeof *pa);
    pa->player = p;
    pa->own = own;
    pa->base.game = p->game;
    snprintf(pa->base.name, sizeof pa->base.name, "%s", p->name);
    pa->base.impl = pa;
    pa->base.max_games = PLAYER_MAX_GAMES;
    pa->base.choose = player_choose;
    pa->base.free = player_free;
    return &pa->base;
}

/* ---- the raw policy ---- */

typedef struct policy_agent {
    zt_agent base;
    zt_evaluator ev;
    int obs_size;
    float *obs, *logits, *values;
} policy_agent;

static zt_status policy_choose(zt_agent *a, int n, const int *slots, const void *const *states,
                               zt_rng *const *rngs, int *actions)
{
    policy_agent *pa = (policy_agent *)a;
    const zt_game *g = a->game;
    int A = g->num_actions;
    if (pa->ev.eval_states) {
        ZT_TRY(pa->ev.eval_states(pa->ev.ctx, n, states, pa->logits, pa->values));
    } else {
        for (int i = 0; i < n; i++)
            g->observe(g, states[i], pa->obs + (size_t)i * (size_t)pa->obs_size);
        ZT_TRY(pa->ev.eval(pa->ev.ctx, n, pa->obs, pa->logits, pa->values));
    }
    for (int i = 0; i < n; i++) {
        uint16_t legal[ZT_MAX_ACTIONS];
        int k = g->legal(g, states[i], legal);
        const float *l = pa->logits + (size_t)i * (size_t)A;
        int best = legal[0];
        for (int j = 1; j < k; j++)
            if (l[legal[j]] > l[best]) best = legal[j];
        actions[i] = best;
    }
    return ZT_OK;
}

static void policy_free(zt_agent *a)
{
    policy_agent *pa = (policy_agent *)a;
    zt_aligned_free(pa->obs);
    zt_aligned_free(pa->logits);
    zt_aligned_free(pa->values);
    free(pa);
}

zt_status zt_agent_policy_new(const zt_game *g, const zt_evaluator *ev, int max_games,
                              zt_agent **out)
{
    *out = NULL;
    if (max_games < 1) return zt_fail(ZT_ERR_INVALID, "policy agent: max_games %d < 1", max_games);
    policy_agent *pa = zt_xcalloc(1, sizeof *pa);
    pa->ev = *ev;
    pa->obs_size = zt_game_obs_size(g);
    size_t B = (size_t)max_games;
    pa->obs = zt_aligned_alloc(ZT_CACHE_LINE, B * (size_t)pa->obs_size * sizeof(float));
    pa->logits = zt_aligned_alloc(ZT_CACHE_LINE, B * (size_t)g->num_actions * sizeof(float));
    pa->values = zt_aligned_alloc(ZT_CACHE_LINE, B * sizeof(float));
    pa->base.game = g;
    snprintf(pa->base.name, sizeof pa->base.name, "policy");
    pa->base.impl = pa;
    pa->base.max_games = max_games;
    pa->base.choose = policy_choose;
    pa->base.free = policy_free;
    if (!pa->obs || !pa->logits || !pa->values) {
        policy_free(&pa->base);
        return zt_fail(ZT_ERR_NOMEM, "policy agent: no memory for %d games", max_games);
    }
    *out = &pa->base;
    return ZT_OK;
}

/* ---- greedy play ---- */

typedef struct greedy_agent {
    zt_agent base;
    zt_greedy *greedy;
} greedy_agent;

static zt_status greedy_choose(zt_agent *a, int n, const int *slots, const void *const *states,
                               zt_rng *const *rngs, int *actions)
{
    (void)rngs;
    greedy_agent *ga = (greedy_agent *)a;
    for (int i = 0; i < n; i++) {
        float value;
        ZT_TRY(zt_greedy_choose(ga->greedy, slots[i], states[i], &actions[i], &value));
    }
    return ZT_OK;
}

static void greedy_free(zt_agent *a)
{
    greedy_agent *ga = (greedy_agent *)a;
    zt_greedy_free(ga->greedy);
    free(ga);
}

zt_status zt_agent_greedy_new(const zt_game *g, const zt_evaluator *ev, int max_games, int plies,
                              zt_agent **out)
{
    *out = NULL;
    if (max_games < 1) return zt_fail(ZT_ERR_INVALID, "greedy agent: max_games %d < 1", max_games);
    greedy_agent *ga = zt_xcalloc(1, sizeof *ga);
    /* A turn's positions in batches of 256: backgammon's ordinary turns
     * in one or two calls. */
    zt_status st = zt_greedy_new(g, ev, max_games, 256, plies, &ga->greedy);
    if (st != ZT_OK) {
        free(ga);
        return st;
    }
    ga->base.game = g;
    if (plies)
        snprintf(ga->base.name, sizeof ga->base.name, "greedy %d-ply", plies);
    else
        snprintf(ga->base.name, sizeof ga->base.name, "greedy");
    ga->base.impl = ga;
    ga->base.max_games = max_games;
    ga->base.choose = greedy_choose;
    ga->base.free = greedy_free;
    *out = &ga->base;
    return ZT_OK;
}

/* ---- search ---- */

typedef struct search_agent {
    zt_agent base;
    zt_model *model;
    zt_search *search;
} search_agent;

static zt_status search_choose(zt_agent *a, int n, const int *slots, const void *const *states,
                               zt_rng *const *rngs, int *actions)
{
    search_agent *sa = (search_agent *)a;
    for (int i = 0; i < n; i++) zt_search_begin(sa->search, slots[i], states[i]);
    ZT_TRY(zt_search_run(sa->search));
    for (int i = 0; i < n; i++) {
        actions[i] = zt_search_choose(sa->search, slots[i], 0.0f);
        /* Tree reuse is off (see zt_agent_search_new): this forgets the tree,
         * so the slot's next search, of whatever position, starts afresh. */
        zt_search_played(sa->search, slots[i], actions[i]);
    }
    return ZT_OK;
}

static void search_free(zt_agent *a)
{
    search_agent *sa = (search_agent *)a;
    zt_search_free(sa->search);
    zt_model_free(sa->model);
    free(sa);
}

zt_status zt_agent_search_new(const zt_game *g, const zt_evaluator *ev, const zt_search_config *cfg,
                              int max_games, zt_nncache *cache, zt_agent **out)
{
    *out = NULL;
    if (max_games < 1) return zt_fail(ZT_ERR_INVALID, "search agent: max_games %d < 1", max_games);
    /* search.h has no call that drops a tree kept for a slot, and an arena
     * slot moves on to an unrelated game or test position; so every search
     * starts from its root. */
    zt_search_config c = *cfg;
    c.tree_reuse = false;
    search_agent *sa = zt_xcalloc(1, sizeof *sa);
    zt_status st = zt_model_for_evaluator(g, ev, max_games * c.leaves_per_round, cache, &sa->model);
    if (st == ZT_OK) st = zt_search_new(&c, sa->model, max_games, &sa->search);
    if (st != ZT_OK) {
        zt_model_free(sa->model);
        free(sa);
        return st;
    }
    sa->base.game = g;
    snprintf(sa->base.name, sizeof sa->base.name, "%s:%d",
             c.algorithm == ZT_SEARCH_GUMBEL ? "gumbel" : "puct", c.num_simulations);
    sa->base.impl = sa;
    sa->base.max_games = max_games;
    sa->base.choose = search_choose;
    sa->base.free = search_free;
    *out = &sa->base;
    return ZT_OK;
}
