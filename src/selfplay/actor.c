#include "selfplay/actor.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "agent/az_model.h"
#include "core/alloc.h"
#include "core/hash.h"
#include "core/rng.h"
#include "core/timer.h"
#include "search/nncache.h"
#include "search/settings.h"
#include "agent/greedy.h"
#include "agent/player.h"

/* One game in its slot. */
typedef struct game_slot {
    uint64_t state[ZT_MAX_STATE_BYTES / 8];
    zt_replay_traj *traj;
    zt_rng rng;
    int ply;
    int random_plies;  /* opening moves still to be played at random */
    int opener;        /* the opening player of those plies, or -1: uniformly random */
    bool running;
    bool finished;     /* generation mode: over, waiting for zt_actor_flush */
    bool playout;      /* resignation disabled in this game */
    int would_resign;  /* played-out games: the first player who would have resigned, or -1 */
    float min_value[2]; /* played-out games: each player's lowest root value (calibration) */
    float return0;
} game_slot;

/* What a slot's game does this step (zt_actor_step). */
enum {
    SLOT_IDLE,   /* no search under way */
    SLOT_FULL,   /* a full search under way, perhaps since an earlier step */
    SLOT_FAST,   /* a playout cap's fast search under way */
    SLOT_GREEDY, /* a greedy move, chosen after the searches */
    SLOT_MOVED,  /* moved this step (closed at its end if the game ended) */
};

struct zt_actor {
    const zt_game *game;
    zt_actor_config cfg;
    zt_search_config search_cfg;
    zt_evaluator ev;  /* borrowed */
    int max_eval;     /* the largest batch the evaluator is called with */
    zt_nncache *cache;
    zt_model *model;
    /* One tree per game for both searches of a playout cap: a fast search
     * is the full one with fewer simulations, in the same rounds. */
    zt_search *search;
    bool fast;         /* playout-cap randomisation with fast searches */
    int tick_rounds;   /* rounds of a step (a fast search's); 0: until all end */
    zt_greedy *greedy; /* instead of fast searches with greedy_fast */
    game_slot *slots;
    int8_t *searched;       /* per slot: SLOT_* */
    float *policy;          /* num_actions */
    uint64_t start[ZT_MAX_STATE_BYTES / 8];
    bool start_is_decision;
    uint64_t games_started; /* continuous mode: the stream of the next game */
    zt_actor_stats stats;
    /* Resignation: the threshold in force and, when calibrated, the newest
     * ZT_RESIGN_WINDOW played-out sides (a ring) and a copy to sort. */
    float resign_at;
    zt_resign_side *sides, *sorted;
    int nsides, next_side;
    zt_player **openers; /* cfg.opening_players, made */
    int num_openers;
};

void zt_actor_config_default(zt_actor_config *c)
{
    memset(c, 0, sizeof *c);
    c->games = 16;
    zt_search_config_default(&c->search, ZT_SEARCH_GUMBEL);
    c->search.tree_reuse = true;
    c->full_search_fraction = 1.0;
    c->fast_simulations = 8;
    c->temperature_moves = 0;
    c->noise_plies = 0;
    c->temperature = 1.0f;
    c->resign = false;
    c->resign_threshold = -0.9f;
    c->resign_playout_fraction = 0.1;
    c->resign_false_rate = 0.05;
    c->nncache = true;
    c->nncache_entries = 1 << 18;
    c->root_cache = true;
    c->root_cache_simulations = 256;
    c->continuous = true;
    c->seed = 1;
}

static void start_game(zt_actor *a, int t, uint64_t stream);
static uint64_t continuous_stream(const zt_actor *a);

/* ---- searches ---- */

static void forget_tree(zt_search *s, int t)
{
    if (s) zt_search_forget(s, t);
}

static void free_searches(zt_actor *a)
{
    zt_search_free(a->search);
    a->search = NULL;
    if (a->searched) memset(a->searched, SLOT_IDLE, (size_t)a->cfg.games);
}

static zt_status build_root_cache(zt_actor *a)
{
    if (!a->cfg.root_cache || !a->start_is_decision) return ZT_OK;
    return zt_search_build_root_cache(a->search, a->start, a->cfg.root_cache_simulations);
}

static zt_status make_searches(zt_actor *a, uint64_t seed)
{
    free_searches(a);
    a->search_cfg.seed = seed;
    ZT_TRY(zt_search_new(&a->search_cfg, a->model, a->cfg.games, &a->search));
    return build_root_cache(a);
}

int zt_actor_round_batch(const zt_actor_config *cfg)
{
    int K = cfg->search.leaves_per_round > 0 ? cfg->search.leaves_per_round : 1;
    return cfg->games * K;
}

int zt_actor_eval_batch(const zt_game *g, const zt_actor_config *cfg)
{
    /* the model may send one position per chance outcome of each state */
    int per_item = g->max_chance_outcomes > 1 ? g->max_chance_outcomes : 1;
    return zt_actor_round_batch(cfg) * per_item;
}

/* The opening players of cfg.opening_players, one per spec. */
static zt_status make_openers(zt_actor *a)
{
    if (a->cfg.opening_players && *a->cfg.opening_players &&
        !(a->cfg.opening_noise >= 0 && a->cfg.opening_noise <= 1))
        return zt_fail(ZT_ERR_INVALID, "opening_noise must be in [0, 1]");
    return zt_players_new(a->game, a->cfg.opening_players, "opening_players", &a->openers,
                          &a->num_openers);
}

zt_status zt_actor_new(const zt_game *g, const zt_model_factory *mf, const zt_evaluator *ev,
                       const zt_actor_config *cfg, zt_actor **out)
{
    *out = NULL;
    if (cfg->games < 1) return zt_fail(ZT_ERR_INVALID, "games_per_actor must be >= 1");
    if (!(cfg->full_search_fraction >= 0 && cfg->full_search_fraction <= 1))
        return zt_fail(ZT_ERR_INVALID, "full_search_fraction must be in [0, 1]");
    if (!(cfg->resign_false_rate >= 0 && cfg->resign_false_rate < 1))
        return zt_fail(ZT_ERR_INVALID, "resign_false_rate must be in [0, 1)");
    if (cfg->full_search_fraction < 1.0 && !cfg->greedy_fast &&
        (cfg->fast_simulations < 1 || cfg->fast_simulations > cfg->search.num_simulations))
        return zt_fail(ZT_ERR_INVALID, "fast_sims must be in [1, search.sims = %d], got %d",
                       cfg->search.num_simulations, cfg->fast_simulations);
    zt_actor *a = zt_xcalloc(1, sizeof *a);
    a->game = g;
    a->cfg = *cfg;
    a->search_cfg = cfg->search;
    /* Room for the root cache's tree, cloned into every new game. */
    int root_cache_sims = cfg->root_cache ? cfg->root_cache_simulations : 0;
    zt_search_config_size(&a->search_cfg, g, root_cache_sims);
    a->ev = *ev;
    int K = cfg->search.leaves_per_round > 0 ? cfg->search.leaves_per_round : 1;
    /* A playout cap's fast search ends in tick_rounds rounds: each step
     * runs that many, the full searches going on across steps, so that
     * every round's batch holds all G games (with the whole full search in
     * each step, the fast games would wait through most of its rounds). */
    a->fast = cfg->full_search_fraction < 1.0 && !cfg->greedy_fast;
    a->tick_rounds = a->fast ? (cfg->fast_simulations + K - 1) / K : 0;
    int max_batch = cfg->games * K;
    a->max_eval = zt_actor_eval_batch(g, cfg);
    zt_status st = ZT_OK;
    if (cfg->nncache) {
        a->cache = zt_nncache_new((size_t)cfg->nncache_entries, g->num_actions);
        if (!a->cache) st = zt_fail(ZT_ERR_NOMEM, "actor: NN cache of %d entries", cfg->nncache_entries);
    }
    if (st == ZT_OK) st = mf->create(mf->ctx, g, &a->ev, max_batch, a->cache, &a->model);
    if (st == ZT_OK && cfg->greedy_fast && cfg->full_search_fraction < 1.0)
        st = zt_greedy_new(g, &a->ev, cfg->games, a->max_eval, 0, &a->greedy);
    a->slots = zt_xcalloc((size_t)cfg->games, sizeof *a->slots);
    a->searched = zt_xcalloc((size_t)cfg->games, sizeof *a->searched);
    a->policy = zt_xcalloc((size_t)g->num_actions, sizeof *a->policy);
    a->resign_at = cfg->resign && cfg->resign_false_rate == 0 ? cfg->resign_threshold : ZT_RESIGN_NONE;
    if (cfg->resign && cfg->resign_false_rate > 0) {
        a->sides = zt_xcalloc(ZT_RESIGN_WINDOW, sizeof *a->sides);
        a->sorted = zt_xcalloc(ZT_RESIGN_WINDOW, sizeof *a->sorted);
    }
    for (int t = 0; t < cfg->games && st == ZT_OK; t++) st = zt_replay_traj_new(g, &a->slots[t].traj);
    if (st == ZT_OK) st = make_openers(a);
    g->reset(g, a->start);
    a->start_is_decision = g->current_player(g, a->start) >= 0;
    if (st == ZT_OK) st = make_searches(a, zt_hash_mix(cfg->seed * 0x9e3779b97f4a7c15ULL + (uint64_t)cfg->id));
    for (int t = 0; t < cfg->games && st == ZT_OK && cfg->continuous; t++) {
        start_game(a, t, continuous_stream(a));
        a->games_started++;
    }
    if (st != ZT_OK) {
        zt_actor_free(a);
        return st;
    }
    *out = a;
    return ZT_OK;
}

void zt_actor_free(zt_actor *a)
{
    if (!a) return;
    free_searches(a);
    zt_greedy_free(a->greedy);
    zt_model_free(a->model);
    zt_nncache_free(a->cache);
    if (a->slots)
        for (int t = 0; t < a->cfg.games; t++) zt_replay_traj_free(a->slots[t].traj);
    free(a->slots);
    free(a->searched);
    free(a->policy);
    free(a->sides);
    free(a->sorted);
    zt_players_free(a->openers, a->num_openers);
    free(a);
}

zt_status zt_actor_weights_changed(zt_actor *a)
{
    if (a->cache) zt_nncache_clear(a->cache);
    a->stats.weight_updates++;
    return build_root_cache(a);
}

/* ---- games ---- */

/* The random stream of a game: the actor's seed, its id and the game's
 * number (continuous) or the generation and slot (generations). */
static void start_game(zt_actor *a, int t, uint64_t stream)
{
    game_slot *s = &a->slots[t];
    zt_rng_seed(&s->rng, a->cfg.seed, stream);
    a->game->reset(a->game, s->state);
    zt_replay_traj_clear(s->traj);
    s->ply = 0;
    s->running = true;
    s->finished = false;
    s->would_resign = -1;
    s->min_value[0] = s->min_value[1] = INFINITY;
    s->playout = !a->cfg.resign || zt_rng_uniform(&s->rng) < a->cfg.resign_playout_fraction;
    s->return0 = 0;
    s->random_plies = 0;
    s->opener = -1;
    if (a->cfg.random_opening_plies > 0 && zt_rng_uniform(&s->rng) < a->cfg.random_opening_fraction) {
        s->random_plies = 1 + (int)zt_rng_below(&s->rng, (uint32_t)a->cfg.random_opening_plies);
        /* (no draw without opening players: other runs keep their streams) */
        if (a->num_openers > 0) s->opener = (int)zt_rng_below(&s->rng, (uint32_t)a->num_openers);
    }
    /* (no draw without start states: other runs keep their random streams) */
    if (a->cfg.num_start_states > 0 && zt_rng_uniform(&s->rng) < a->cfg.start_fraction) {
        size_t i = zt_rng_below(&s->rng, (uint32_t)a->cfg.num_start_states);
        memcpy(s->state, a->cfg.start_states + i * a->game->state_size, a->game->state_size);
        s->random_plies = 0;
    }
    forget_tree(a->search, t);
}

static uint64_t continuous_stream(const zt_actor *a)
{
    return ((uint64_t)(a->cfg.id + 1) << 44) ^ a->games_started;
}

static zt_status append_game(zt_actor *a, const game_slot *s, const zt_traj_sink *sink)
{
    int n = zt_replay_traj_length(s->traj);
    if (n == 0) return ZT_OK;
    ZT_TRY(sink->push(sink->ctx, s->traj, s->return0));
    a->stats.games_added++;
    a->stats.positions_added += (uint64_t)n;
    return ZT_OK;
}

/* ---- resignation ---- */

static int by_min_value(const void *x, const void *y)
{
    const zt_resign_side *a = x, *b = y;
    if (a->min_value != b->min_value) return a->min_value < b->min_value ? -1 : 1;
    return (int)a->lost - (int)b->lost;
}

float zt_resign_calibrate(zt_resign_side *sides, int n, float ceiling, double false_rate)
{
    if (n < ZT_RESIGN_MIN_SIDES) return ZT_RESIGN_NONE;
    qsort(sides, (size_t)n, sizeof *sides, by_min_value);
    /* A threshold t resigns the sides with min_value < t: with sides
     * sorted, the first k for t in (min_value[k - 1], min_value[k]]. The
     * largest k whose share of sides that did not lose is small enough
     * (counted in integers: no rounding decides it) gives t = min_value[k],
     * or the ceiling where that is lower; equal values go together. */
    float at = ZT_RESIGN_NONE;
    int wrong = 0;
    for (int k = 1; k <= n && sides[k - 1].min_value < ceiling; k++) {
        wrong += !sides[k - 1].lost;
        if (k < n && sides[k].min_value == sides[k - 1].min_value) continue;
        if ((double)wrong <= false_rate * k)
            at = k < n && sides[k].min_value < ceiling ? sides[k].min_value : ceiling;
    }
    return at;
}

/* A played-out game's sides join the window and the threshold is set again
 * from it. return0 is player 0's result. */
static void calibrate_resignation(zt_actor *a, const game_slot *s, float return0)
{
    int players = zt_game_num_players(a->game) == 1 ? 1 : 2;
    for (int p = 0; p < players; p++) {
        if (!(s->min_value[p] <= 1.0f)) continue; /* it never moved */
        float r = p == 0 ? return0 : -return0;
        a->sides[a->next_side] = (zt_resign_side){.min_value = s->min_value[p], .lost = r < 0};
        a->next_side = (a->next_side + 1) % ZT_RESIGN_WINDOW;
        if (a->nsides < ZT_RESIGN_WINDOW) a->nsides++;
    }
    memcpy(a->sorted, a->sides, (size_t)a->nsides * sizeof *a->sorted);
    a->resign_at = zt_resign_calibrate(a->sorted, a->nsides, a->cfg.resign_threshold,
                                       a->cfg.resign_false_rate);
}

float zt_actor_resign_threshold(const zt_actor *a)
{
    return a->resign_at;
}

static zt_status end_game(zt_actor *a, int t, float return0, const zt_traj_sink *sink)
{
    game_slot *s = &a->slots[t];
    s->return0 = return0;
    s->running = false;
    a->stats.games++;
    if (s->would_resign >= 0) {
        a->stats.playouts_would_resign++;
        float r = s->would_resign == 0 ? return0 : -return0;
        if (r >= 0) a->stats.false_resignations++;
    }
    if (s->playout && a->sides) calibrate_resignation(a, s, return0);
    forget_tree(a->search, t);
    if (!a->cfg.continuous) {
        s->finished = true;
        return ZT_OK;
    }
    ZT_TRY(append_game(a, s, sink));
    start_game(a, t, continuous_stream(a));
    a->games_started++;
    return ZT_OK;
}

/* A game that reached max_game_length plies without an outcome (backgammon
 * can go on without bound in principle), or whose records filled its
 * trajectory (with the positions before the rolls, zt_replay_traj_full):
 * its positions have no return to learn, so it is dropped, never appended. */
static zt_status abandon_game(zt_actor *a, int t)
{
    game_slot *s = &a->slots[t];
    zt_replay_traj_clear(s->traj);
    s->running = false;
    a->stats.games_abandoned++;
    forget_tree(a->search, t);
    if (!a->cfg.continuous) {
        s->finished = true;
        return ZT_OK;
    }
    start_game(a, t, continuous_stream(a));
    a->games_started++;
    return ZT_OK;
}

/* Plays chance outcomes and ends finished games until slot t's game waits
 * for a player's move; returns false if the slot has no game to play. */
static zt_status reach_decision(zt_actor *a, int t, const zt_traj_sink *sink, bool *ready)
{
    const zt_game *g = a->game;
    game_slot *s = &a->slots[t];
    *ready = false;
    while (s->running) {
        int cp = g->current_player(g, s->state);
        if (cp >= 0 && s->random_plies > 0) {
            uint16_t legal[ZT_MAX_ACTIONS];
            int n = g->legal(g, s->state, legal);
            int action;
            if (s->opener >= 0 && zt_rng_uniform(&s->rng) >= a->cfg.opening_noise) {
                zt_player *pl = a->openers[s->opener];
                action = pl->choose(pl, s->state, &s->rng);
            } else {
                action = legal[zt_rng_below(&s->rng, (uint32_t)n)];
            }
            g->apply(g, s->state, action);
            s->random_plies--;
            s->ply++;
            zt_search_played(a->search, t, action);
            continue;
        }
        /* too long, or (recording the positions before the rolls too) its
         * records fill the trajectory: rolls without moves, on and on */
        if ((cp >= 0 && s->ply >= g->max_game_length) ||
            (cp != ZT_TERMINAL && zt_replay_traj_full(s->traj))) {
            ZT_TRY(abandon_game(a, t));
            continue;
        }
        if (cp >= 0) {
            *ready = true;
            return ZT_OK;
        }
        if (cp == ZT_TERMINAL) {
            ZT_TRY(end_game(a, t, zt_game_value_of(g, s->state, 0), sink));
            continue;
        }
        /* A net that values chance states learns them from their outcomes
         * too: the position before the roll, a value target alone. */
        if (a->ev.chance_values && g->chance_observer)
            zt_replay_traj_add(s->traj, s->state, NULL, 0.0f, false);
        int o = zt_game_sample_chance(g, s->state, &s->rng);
        g->apply(g, s->state, o);
        if (a->search) zt_search_played(a->search, t, o);
    }
    return ZT_OK;
}

zt_status zt_actor_begin_generation(zt_actor *a, uint64_t generation)
{
    uint64_t seed = zt_hash_mix(a->cfg.seed ^ zt_hash_mix(((uint64_t)a->cfg.id << 40) ^ generation));
    /* Fresh searches and an empty NN cache, so that the generation's games
     * depend on its seed and the weights alone. */
    if (a->cache) zt_nncache_clear(a->cache);
    ZT_TRY(make_searches(a, seed));
    for (int t = 0; t < a->cfg.games; t++)
        start_game(a, t, ((uint64_t)(a->cfg.id + 1) << 44) ^ (generation << 16) ^ (uint64_t)t);
    return ZT_OK;
}

bool zt_actor_idle(const zt_actor *a)
{
    for (int t = 0; t < a->cfg.games; t++)
        if (a->slots[t].running) return false;
    return true;
}

zt_status zt_actor_flush(zt_actor *a, const zt_traj_sink *sink)
{
    for (int t = 0; t < a->cfg.games; t++) {
        game_slot *s = &a->slots[t];
        if (!s->finished) continue;
        s->finished = false;
        ZT_TRY(append_game(a, s, sink));
    }
    return ZT_OK;
}

zt_status zt_actor_step(zt_actor *a, const zt_traj_sink *sink)
{
    const zt_game *g = a->game;
    int G = a->cfg.games;
    bool any_search = false;
    for (int t = 0; t < G; t++) {
        if (a->searched[t] == SLOT_FULL || a->searched[t] == SLOT_FAST) {
            any_search = true; /* under way since an earlier step */
            continue;
        }
        bool ready;
        a->searched[t] = SLOT_IDLE;
        ZT_TRY(reach_decision(a, t, sink, &ready));
        if (!ready) continue;
        game_slot *s = &a->slots[t];
        bool full = (!a->fast && !a->greedy) ||
                    zt_rng_uniform(&s->rng) < a->cfg.full_search_fraction;
        if (!full && a->greedy) {
            a->searched[t] = SLOT_GREEDY; /* chosen below, after the searches */
            continue;
        }
        zt_search_set_quiet(a->search, t, a->cfg.noise_plies > 0 && s->ply >= a->cfg.noise_plies);
        zt_search_begin_sims(a->search, t, s->state,
                             full ? a->cfg.search.num_simulations : a->cfg.fast_simulations);
        a->searched[t] = full ? SLOT_FULL : SLOT_FAST;
        any_search = true;
    }
    zt_model_stats before = a->model->stats;
    zt_status st = any_search ? zt_search_run_rounds(a->search, a->tick_rounds) : ZT_OK;
    if (st != ZT_OK) {
        /* the failed search dropped its trees: the games go on from their
         * positions next step */
        zt_search_cancel(a->search);
        for (int t = 0; t < G; t++)
            if (a->searched[t] == SLOT_FULL || a->searched[t] == SLOT_FAST)
                a->searched[t] = SLOT_IDLE;
        return st;
    }
    zt_model_stats after = a->model->stats;
    a->stats.inferences += after.evaluations - before.evaluations;
    a->stats.net_calls += after.eval_calls - before.eval_calls;
    a->stats.positions_valued += after.positions - before.positions;
    a->stats.nncache_hits += (after.positions - before.positions) - (after.evaluations - before.evaluations);

    uint64_t greedy_evals = a->greedy ? zt_greedy_evaluations(a->greedy) : 0;
    uint64_t greedy_calls = a->greedy ? zt_greedy_calls(a->greedy) : 0;
    for (int t = 0; t < G; t++) {
        int what = a->searched[t];
        if (what == SLOT_IDLE) continue;
        if (what != SLOT_GREEDY && zt_search_searching(a->search, t)) continue; /* next step */
        a->searched[t] = SLOT_MOVED;
        game_slot *s = &a->slots[t];
        bool full = what == SLOT_FULL, greedy = what == SLOT_GREEDY;
        zt_search *sr = a->search;
        int player = g->current_player(g, s->state);
        int greedy_action = -1;
        float root_value;
        if (greedy)
            ZT_TRY(zt_greedy_choose(a->greedy, t, s->state, &greedy_action, &root_value));
        else
            root_value = zt_search_root_value(sr, t);
        float surprise = 0;
        if (full) {
            zt_search_policy(sr, t, a->policy);
            if (a->cfg.record_surprise) {
                float prior[ZT_MAX_ACTIONS];
                uint8_t mask[ZT_MAX_ACTIONS];
                zt_search_root_prior(sr, t, prior);
                zt_game_legal_mask(g, s->state, mask);
                surprise = zt_replay_surprise(g, mask, a->policy, prior);
            }
        }
        a->stats.moves++;
        a->stats.full_searches += full;
        if (s->playout && player >= 0 && player < 2 && root_value < s->min_value[player])
            s->min_value[player] = root_value;
        if (a->cfg.resign && root_value < a->resign_at) {
            if (!s->playout) {
                zt_replay_traj_add_surprise(s->traj, s->state, full ? a->policy : NULL,
                                            root_value, full, -1, 0.0f, surprise);
                a->stats.resignations++;
                ZT_TRY(end_game(a, t, player == 0 ? -1.0f : 1.0f, sink));
                continue;
            }
            if (s->would_resign < 0) s->would_resign = player;
        }
        float temperature = s->ply < a->cfg.temperature_moves ? a->cfg.temperature : 0.0f;
        int action = greedy ? greedy_action : zt_search_choose(sr, t, temperature);
        if (a->cfg.random_move_fraction > 0 &&
            zt_rng_uniform(&s->rng) < a->cfg.random_move_fraction) {
            uint16_t legal[ZT_MAX_ACTIONS];
            int n = g->legal(g, s->state, legal);
            action = legal[zt_rng_below(&s->rng, (uint32_t)n)];
        }
        /* The move's reward (model.h: the acting player's): a two-player
         * game's is 0 (its returns are the outcome); a one-player game's is
         * the score the move banks (2048: its merges). A chance node that
         * follows (2048's spawn) pays nothing, so the records' rewards sum
         * to the game's final return. Both are recorded for MuZero only
         * (AlphaZero's records stay as small as before). */
        uint8_t moved_from[ZT_MAX_STATE_BYTES];
        memcpy(moved_from, s->state, g->state_size);
        g->apply(g, s->state, action);
        bool steps = a->cfg.record_actions;
        zt_replay_traj_add_surprise(s->traj, moved_from, full ? a->policy : NULL, root_value,
                                    full, steps ? action : -1,
                                    steps ? zt_game_reward(g, moved_from, s->state) : 0.0f,
                                    surprise);
        s->ply++;
        zt_search_played(a->search, t, action);
    }
    if (a->greedy) {
        uint64_t evals = zt_greedy_evaluations(a->greedy) - greedy_evals;
        a->stats.inferences += evals;
        a->stats.positions_valued += evals;
        a->stats.net_calls += zt_greedy_calls(a->greedy) - greedy_calls;
    }
    /* Games that just ended are closed now rather than at the next step, so
     * that a generation is over as soon as its last move is played. */
    for (int t = 0; t < G; t++) {
        if (a->searched[t] != SLOT_MOVED) continue;
        a->searched[t] = SLOT_IDLE;
        if (!a->slots[t].running) continue;
        bool ready;
        ZT_TRY(reach_decision(a, t, sink, &ready));
    }
    return ZT_OK;
}

int zt_actor_max_batch(const zt_actor *a)
{
    return a->max_eval;
}

zt_actor_stats zt_actor_get_stats(const zt_actor *a)
{
    return a->stats;
}

zt_actor_memory zt_actor_get_memory(const zt_actor *a)
{
    zt_actor_memory m = {0};
    /* a search holds its G trees, the root cache's and a spare for reuse
     * (search.c: G + 2 trees of zt_search_tree_bytes each) */
    if (a->search) m.trees = (size_t)(a->cfg.games + 2) * zt_search_tree_bytes(a->search);
    if (a->cache) m.nncache = zt_nncache_get_stats(a->cache).bytes;
    return m;
}
