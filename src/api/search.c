/* libzeroth searches: a zeroth_search_t is a zt_search over the AlphaZero
 * model (agent/az_model.h) of its own copy of the game, whose evaluator is
 * either a net's (zeroth_search_new) or an adapter that calls the caller's
 * functions and checks what they return (zeroth_search_new_callbacks), or
 * over the caller's recurrent model (recurrent.c,
 * zeroth_search_new_recurrent).
 *
 * Per tree the handle remembers the position its statistics belong to, so
 * that a tree begun at another position than the one it was searched at (or
 * than the move told to zeroth_search_played leads to) starts afresh instead
 * of answering for the wrong position. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "core/alloc.h"
#include "search/search.h"
#include "search/settings.h"
#include "train/run.h"

/* The evaluator callbacks return the caller's status; a failure is also
 * kept in the handle and returned by zeroth_search_run. */
#define ADAPTER_RESULT zt_status
#define ADAPTER_RETURN(st) return (st)

enum { IDLE, BEGUN, SEARCHED };

struct zeroth_search {
    zt_game *game;
    zt_evaluator ev;
    zt_model *model;
    zt_search *search;
    int trees;
    /* the caller's model (NULL for a net's) */
    zeroth_eval_obs_fn eval_obs;
    zeroth_eval_states_fn eval_states;
    void *user;
    /* per tree */
    uint8_t *phase;
    bool *has_tree;    /* the zt_search slot may hold statistics of root[t] */
    uint8_t *root;     /* trees x state_size: the position of those statistics */
    uint8_t *named;    /* trees: marks of one call's tree list (duplicates) */
    bool in_run;       /* inside zt_search_run (the caller's model is running) */
    zt_status failure; /* the caller's model failed during this run */
    char failure_message[ZT_MESSAGE_MAX];
};

static uint8_t *root_of(zeroth_search_t *s, int t)
{
    return s->root + (size_t)t * s->game->state_size;
}

/* ---- the caller's model ---- */

/* Calls the caller's function on B positions and checks its answer; on a
 * failure records it in the handle, and writes logits and values that keep
 * the search's invariants so the run can end normally. After one failure the
 * caller is not called again in that run. */
static zt_status call_caller(zeroth_search_t *s, int B, const float *obs, const void *const *states,
                             float *logits, float *value)
{
    int A = s->game->num_actions;
    zt_status st = s->failure;
    if (st == ZT_OK) {
        zt_fail(ZT_OK, "%s", ""); /* so a message from zeroth_fail is told from a stale one */
        zeroth_status r = obs ? s->eval_obs(s->user, B, obs, logits, value)
                              : s->eval_states(s->user, B, states, logits, value);
        if (r != ZEROTH_OK) {
            const char *why = zt_error_message();
            zt_status code =
                r > ZEROTH_OK && r <= ZEROTH_ERR_UNSUPPORTED ? (zt_status)r : ZT_ERR_INVALID;
            st = zt_fail(code, "the caller's evaluator failed (status %d, %s)%s%s", (int)r,
                         zeroth_status_name(r), why[0] ? ": " : "", why);
        }
        for (int i = 0; i < B && st == ZT_OK; i++) {
            for (int a = 0; a < A && st == ZT_OK; a++)
                if (!isfinite(logits[(size_t)i * A + a]))
                    st = zt_fail(
                        ZT_ERR_INVALID,
                        "the caller's evaluator gave logit %g to action %d of position %d of "
                        "%d (logits must be finite)",
                        (double)logits[(size_t)i * A + a], a, i, B);
            if (st == ZT_OK && !(value[i] >= -1.0f && value[i] <= 1.0f))
                st =
                    zt_fail(ZT_ERR_INVALID,
                            "the caller's evaluator gave value %g to position %d of %d (values lie "
                            "in [-1, 1])",
                            (double)value[i], i, B);
        }
        if (st != ZT_OK) {
            s->failure = st;
            snprintf(s->failure_message, sizeof s->failure_message, "%s", zt_error_message());
        }
    }
    if (st != ZT_OK) {
        memset(logits, 0, (size_t)B * (size_t)A * sizeof *logits);
        memset(value, 0, (size_t)B * sizeof *value);
    }
    return st;
}

static ADAPTER_RESULT caller_obs(void *ctx, int B, const float *obs, float *logits, float *value)
{
    ADAPTER_RETURN(call_caller(ctx, B, obs, NULL, logits, value));
}

static ADAPTER_RESULT caller_states(void *ctx, int B, const void *const *states, float *logits,
                                    float *value)
{
    ADAPTER_RETURN(call_caller(ctx, B, NULL, states, logits, value));
}

/* ---- handles ---- */

/* The caller's recurrent model, for make(). */
typedef struct recurrent_spec {
    size_t embedding_size;
    zeroth_root_fn root_fn;
    zeroth_recurrent_fn recurrent_fn;
    void *user;
} recurrent_spec;

/* The search of `trees` trees over the AlphaZero model with evaluator ev,
 * or over the caller's recurrent model rs (ev NULL). */
static zt_status make(const zeroth_game_t *game, const zt_evaluator *ev, const recurrent_spec *rs,
                      zeroth_search_t *s, int trees, const char *settings)
{
    const char *fn = "zeroth_search_new";
    if (trees < 1 || trees > 1 << 20)
        return zt_fail(ZT_ERR_INVALID, "%s: trees = %d, must be in [1, %d]", fn, trees, 1 << 20);
    ZT_TRY(zt_game_from_spec(zeroth_game_spec(game), &s->game));
    zt_config *cfg;
    ZT_TRY(zt_api_settings(settings, "search settings", &cfg));
    zt_search_config sc;
    zt_search_read_options ro = {.use = ZT_SEARCH_PLAY, .debug = false, .gumbel_noise = false};
    zt_status st = zt_search_config_read(cfg, &ro, &sc);
    int64_t seed = 1;
    if (st == ZT_OK) st = zt_config_int(cfg, "seed", 1, 0, INT64_MAX, &seed);
    sc.seed = (uint64_t)seed;
    if (st == ZT_OK) st = zt_config_check_unused(cfg);
    if (st == ZT_OK) zt_search_config_size(&sc, s->game, 0);
    zt_config_free(cfg);
    ZT_TRY(st);
    s->trees = trees;
    if (ev) {
        s->ev = *ev;
        ZT_TRY(zt_az_model_new(s->game, &s->ev, trees * sc.leaves_per_round, NULL, &s->model));
    } else {
        ZT_TRY(zt_api_recurrent_model_new(s->game, rs->embedding_size, rs->root_fn,
                                          rs->recurrent_fn, rs->user, trees * sc.leaves_per_round,
                                          &s->model));
    }
    ZT_TRY(zt_search_new(&sc, s->model, trees, &s->search));
    s->phase = zt_xcalloc((size_t)trees, sizeof *s->phase);
    s->has_tree = zt_xcalloc((size_t)trees, sizeof *s->has_tree);
    s->root = zt_xcalloc((size_t)trees, s->game->state_size);
    s->named = zt_xcalloc((size_t)trees, sizeof *s->named);
    return ZT_OK;
}

zeroth_status zeroth_search_new(const zeroth_game_t *game, zeroth_net_t *net, int trees,
                                const char *settings, zeroth_search_t **out)
{
    const char *fn = "zeroth_search_new";
    ZT_API_TRY(zt_api_need(fn, out, "out"));
    *out = NULL;
    ZT_API_TRY(zt_api_need_net_for(fn, game, net));
    zeroth_search_t *s = zt_xcalloc(1, sizeof *s);
    zt_status st = make(game, zt_api_net_evaluator(net), NULL, s, trees, settings);
    if (st != ZT_OK) {
        zeroth_search_free(s);
        return zt_api_status(st);
    }
    *out = s;
    return ZEROTH_OK;
}

zeroth_status zeroth_search_new_callbacks(const zeroth_game_t *game, zeroth_eval_obs_fn eval_obs,
                                          zeroth_eval_states_fn eval_states, void *user, int trees,
                                          const char *settings, zeroth_search_t **out)
{
    const char *fn = "zeroth_search_new_callbacks";
    ZT_API_TRY(zt_api_need(fn, out, "out"));
    *out = NULL;
    ZT_API_TRY(zt_api_need(fn, game, "game"));
    if (!eval_obs == !eval_states)
        return zt_api_status(
            zt_fail(ZT_ERR_INVALID, "%s: give exactly one of eval_obs and eval_states", fn));
    zeroth_search_t *s = zt_xcalloc(1, sizeof *s);
    s->eval_obs = eval_obs;
    s->eval_states = eval_states;
    s->user = user;
    zt_evaluator ev = {.ctx = s};
    if (eval_obs)
        ev.eval = caller_obs;
    else
        ev.eval_states = caller_states;
    zt_status st = make(game, &ev, NULL, s, trees, settings);
    if (st != ZT_OK) {
        zeroth_search_free(s);
        return zt_api_status(st);
    }
    *out = s;
    return ZEROTH_OK;
}

zeroth_status zeroth_search_new_recurrent(const zeroth_game_t *game, size_t embedding_size,
                                          zeroth_root_fn root_fn, zeroth_recurrent_fn recurrent_fn,
                                          void *user, int trees, const char *settings,
                                          zeroth_search_t **out)
{
    const char *fn = "zeroth_search_new_recurrent";
    ZT_API_TRY(zt_api_need(fn, out, "out"));
    *out = NULL;
    ZT_API_TRY(zt_api_need(fn, game, "game"));
    ZT_API_TRY(zt_api_need(fn, (const void *)(uintptr_t)root_fn, "root_fn"));
    ZT_API_TRY(zt_api_need(fn, (const void *)(uintptr_t)recurrent_fn, "recurrent_fn"));
    if (embedding_size < 1 || embedding_size > 65536)
        return zt_api_status(zt_fail(
            ZT_ERR_INVALID, "%s: embedding_size = %zu, must be in [1, 65536]", fn, embedding_size));
    recurrent_spec rs = {embedding_size, root_fn, recurrent_fn, user};
    zeroth_search_t *s = zt_xcalloc(1, sizeof *s);
    zt_status st = make(game, NULL, &rs, s, trees, settings);
    if (st != ZT_OK) {
        zeroth_search_free(s);
        return zt_api_status(st);
    }
    *out = s;
    return ZEROTH_OK;
}

void zeroth_search_free(zeroth_search_t *search)
{
    if (!search) return;
    zt_search_free(search->search);
    zt_model_free(search->model);
    zt_game_free(search->game);
    free(search->phase);
    free(search->has_tree);
    free(search->root);
    free(search->named);
    free(search);
}

int zeroth_search_num_trees(const zeroth_search_t *search)
{
    return search->trees;
}

/* ---- tree lists ---- */

/* Checks a call's tree list: handle, n in [0, trees], indices in range, no
 * tree named twice, and every named tree in one of the phases of `allowed`
 * (a bit per phase; 0 for any). Tree k of the list is tree_at(trees, k). */
static zt_status tree_list(const zeroth_search_t *s, const char *fn, int n, const int *trees,
                           unsigned allowed)
{
    ZT_TRY(zt_api_need(fn, s, "search"));
    if (s->in_run)
        return zt_fail(ZT_ERR_INVALID, "%s: called from inside the search's own evaluator", fn);
    if (n < 0 || n > s->trees)
        return zt_fail(ZT_ERR_INVALID, "%s: n = %d, must be in [0, %d] (the trees)", fn, n,
                       s->trees);
    zt_status st = ZT_OK;
    for (int k = 0; k < n && st == ZT_OK; k++) {
        int t = trees ? trees[k] : k;
        if (t < 0 || t >= s->trees) {
            st = zt_fail(ZT_ERR_INVALID, "%s: tree %d does not exist (%d trees)", fn, t, s->trees);
        } else if (s->named[t]) {
            st = zt_fail(ZT_ERR_INVALID, "%s: tree %d is named twice", fn, t);
        } else {
            s->named[t] = 1;
            if (allowed && !(allowed >> s->phase[t] & 1u)) {
                const char *why = s->phase[t] == BEGUN
                                      ? "is begun but not yet run (zeroth_search_run)"
                                      : "has not been searched since it was begun";
                st = zt_fail(ZT_ERR_INVALID, "%s: tree %d %s", fn, t, why);
            }
        }
    }
    for (int k = 0; k < n; k++) {
        int t = trees ? trees[k] : k;
        if (t >= 0 && t < s->trees) s->named[t] = 0;
    }
    return st;
}

static inline int tree_at(const int *trees, int k)
{
    return trees ? trees[k] : k;
}

/* ---- searching ---- */

zeroth_status zeroth_search_begin(zeroth_search_t *search, int n, const int *trees,
                                  const void *states)
{
    const char *fn = "zeroth_search_begin";
    ZT_API_TRY(tree_list(search, fn, n, trees, 0));
    if (n > 0) ZT_API_TRY(zt_api_need(fn, states, "states"));
    const zt_game *g = search->game;
    for (int k = 0; k < n; k++)
        ZT_API_TRY(
            zt_api_decision_state(g, (const uint8_t *)states + (size_t)k * g->state_size, k, fn));
    for (int k = 0; k < n; k++) {
        int t = tree_at(trees, k);
        const void *state = (const uint8_t *)states + (size_t)k * g->state_size;
        if (search->has_tree[t] && memcmp(root_of(search, t), state, g->state_size) != 0)
            zt_search_forget(search->search, t);
        memcpy(root_of(search, t), state, g->state_size);
        search->has_tree[t] = true;
        search->phase[t] = BEGUN;
        zt_search_begin(search->search, t, state);
    }
    return ZEROTH_OK;
}

zeroth_status zeroth_search_run(zeroth_search_t *search)
{
    ZT_API_TRY(tree_list(search, "zeroth_search_run", 0, NULL, 0));
    search->failure = ZT_OK;
    search->in_run = true;
    zt_status run_st = zt_search_run(search->search);
    search->in_run = false;
    if (run_st != ZT_OK && search->failure == ZT_OK) {
        /* the net's evaluator failed (not the caller's function) */
        search->failure = run_st;
        snprintf(search->failure_message, sizeof search->failure_message, "%s", zt_error_message());
    }
    for (int t = 0; t < search->trees; t++)
        if (search->phase[t] == BEGUN) search->phase[t] = SEARCHED;
    if (search->failure == ZT_OK) return ZEROTH_OK;
    /* the statistics hold the placeholder evaluations of the failed calls */
    for (int t = 0; t < search->trees; t++) {
        zt_search_forget(search->search, t);
        search->has_tree[t] = false;
        search->phase[t] = IDLE;
    }
    return zt_api_status(zt_fail(search->failure, "%s", search->failure_message));
}

zeroth_status zeroth_search_choose(zeroth_search_t *search, int n, const int *trees,
                                   float temperature, int *actions)
{
    const char *fn = "zeroth_search_choose";
    ZT_API_TRY(tree_list(search, fn, n, trees, 1u << SEARCHED));
    if (n > 0) ZT_API_TRY(zt_api_need(fn, actions, "actions"));
    if (!(temperature >= 0) || isinf(temperature))
        return zt_api_status(zt_fail(ZT_ERR_INVALID, "%s: temperature %g, must be finite and >= 0",
                                     fn, (double)temperature));
    for (int k = 0; k < n; k++)
        actions[k] = zt_search_choose(search->search, tree_at(trees, k), temperature);
    return ZEROTH_OK;
}

zeroth_status zeroth_search_policy(const zeroth_search_t *search, int n, const int *trees,
                                   float *policy)
{
    const char *fn = "zeroth_search_policy";
    ZT_API_TRY(tree_list(search, fn, n, trees, 1u << SEARCHED));
    if (n > 0) ZT_API_TRY(zt_api_need(fn, policy, "policy"));
    size_t A = (size_t)search->game->num_actions;
    for (int k = 0; k < n; k++)
        zt_search_policy(search->search, tree_at(trees, k), policy + (size_t)k * A);
    return ZEROTH_OK;
}

zeroth_status zeroth_search_visits(const zeroth_search_t *search, int n, const int *trees,
                                   int32_t *visits)
{
    const char *fn = "zeroth_search_visits";
    ZT_API_TRY(tree_list(search, fn, n, trees, 1u << SEARCHED));
    if (n > 0) ZT_API_TRY(zt_api_need(fn, visits, "visits"));
    size_t A = (size_t)search->game->num_actions;
    for (int k = 0; k < n; k++)
        zt_search_root_visits(search->search, tree_at(trees, k), visits + (size_t)k * A);
    return ZEROTH_OK;
}

zeroth_status zeroth_search_root_value(const zeroth_search_t *search, int n, const int *trees,
                                       float *values)
{
    const char *fn = "zeroth_search_root_value";
    ZT_API_TRY(tree_list(search, fn, n, trees, 1u << SEARCHED));
    if (n > 0) ZT_API_TRY(zt_api_need(fn, values, "values"));
    for (int k = 0; k < n; k++) values[k] = zt_search_root_value(search->search, tree_at(trees, k));
    return ZEROTH_OK;
}

zeroth_status zeroth_search_played(zeroth_search_t *search, int n, const int *trees,
                                   const int *actions)
{
    const char *fn = "zeroth_search_played";
    ZT_API_TRY(tree_list(search, fn, n, trees, 1u << IDLE | 1u << SEARCHED));
    if (n > 0) ZT_API_TRY(zt_api_need(fn, actions, "actions"));
    const zt_game *g = search->game;
    for (int k = 0; k < n; k++) {
        int t = tree_at(trees, k);
        if (search->has_tree[t])
            ZT_API_TRY(zt_api_check_action(g, root_of(search, t), actions[k], fn,
                                           "the root of tree %d", t));
    }
    for (int k = 0; k < n; k++) {
        int t = tree_at(trees, k);
        search->phase[t] = IDLE;
        if (!search->has_tree[t]) continue;
        zt_search_played(search->search, t, actions[k]);
        g->apply(g, root_of(search, t), actions[k]);
    }
    return ZEROTH_OK;
}

zeroth_status zeroth_search_forget(zeroth_search_t *search, int n, const int *trees)
{
    ZT_API_TRY(tree_list(search, "zeroth_search_forget", n, trees, 1u << IDLE | 1u << SEARCHED));
    for (int k = 0; k < n; k++) {
        int t = tree_at(trees, k);
        zt_search_forget(search->search, t);
        search->has_tree[t] = false;
        search->phase[t] = IDLE;
    }
    return ZEROTH_OK;
}
