/* libzeroth games: a zeroth_game_t is one zt_game (game/game.h); states are
 * the caller's byte arrays. Every batched call checks all its states before
 * it changes any, so a failing call leaves them as they were. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "core/alloc.h"
#include "core/hash.h"
#include "core/rng.h"

struct zeroth_game {
    zt_game *game;
    char spec[256];
};

/* The bytes of state i in a caller's array. */
static inline const void *state_at(const zt_game *g, const void *states, int i)
{
    return (const uint8_t *)states + (size_t)i * g->state_size;
}

static inline void *state_at_mut(const zt_game *g, void *states, int i)
{
    return (uint8_t *)states + (size_t)i * g->state_size;
}

const zt_game *zt_api_game_of(const zeroth_game_t *game)
{
    return game->game;
}

zt_status zt_api_decision_state(const zt_game *g, const void *state, int i, const char *fn)
{
    int p = g->current_player(g, state);
    if (p == ZT_TERMINAL) return zt_fail(ZT_ERR_INVALID, "%s: state %d is terminal", fn, i);
    if (p == ZT_CHANCE)
        return zt_fail(ZT_ERR_INVALID, "%s: state %d is a chance node (draw its outcome first)", fn,
                       i);
    return ZT_OK;
}

const char *zeroth_game_list(int i)
{
    if (i < 0 || i >= zt_game_registry_count || !zt_game_registry[i]) return NULL;
    return zt_game_registry[i]->name;
}

zeroth_status zeroth_game_new(const char *spec, zeroth_game_t **out)
{
    ZT_API_TRY(zt_api_need("zeroth_game_new", out, "out"));
    *out = NULL;
    ZT_API_TRY(zt_api_need("zeroth_game_new", spec, "spec"));
    zt_game *g;
    ZT_API_TRY(zt_game_from_spec(spec, &g));
    zeroth_game_t *h = zt_xcalloc(1, sizeof *h);
    h->game = g;
    zt_game_spec(g, h->spec, sizeof h->spec);
    *out = h;
    return ZEROTH_OK;
}

void zeroth_game_free(zeroth_game_t *game)
{
    if (!game) return;
    zt_game_free(game->game);
    free(game);
}

const char *zeroth_game_spec(const zeroth_game_t *game)
{
    return game->spec;
}

const char *zeroth_game_name(const zeroth_game_t *game)
{
    return game->game->name;
}

size_t zeroth_game_state_size(const zeroth_game_t *game)
{
    return game->game->state_size;
}

int zeroth_game_num_actions(const zeroth_game_t *game)
{
    return game->game->num_actions;
}

int zeroth_game_obs_shape(const zeroth_game_t *game, int shape[3])
{
    const int *s = game->game->obs_shape;
    if (shape) memcpy(shape, s, 3 * sizeof *s);
    return s[0] * s[1] * s[2];
}

int zeroth_game_max_chance_outcomes(const zeroth_game_t *game)
{
    return game->game->max_chance_outcomes;
}

int zeroth_game_max_length(const zeroth_game_t *game)
{
    return game->game->max_game_length;
}

float zeroth_game_max_return(const zeroth_game_t *game)
{
    return game->game->max_return;
}

/* ---- batched calls ---- */

/* The checks every batched call starts with. */
static zt_status batch(const char *fn, const zeroth_game_t *game, int n, const void *states)
{
    ZT_TRY(zt_api_need(fn, game, "game"));
    ZT_TRY(zt_api_count(fn, n, 0));
    if (n > 0) ZT_TRY(zt_api_need(fn, states, "states"));
    return ZT_OK;
}

zeroth_status zeroth_game_reset(const zeroth_game_t *game, int n, void *states)
{
    ZT_API_TRY(batch("zeroth_game_reset", game, n, states));
    const zt_game *g = game->game;
    for (int i = 0; i < n; i++) {
        void *s = state_at_mut(g, states, i);
        /* the whole state, padding too, so that equal positions are equal bytes */
        memset(s, 0, g->state_size);
        g->reset(g, s);
    }
    return ZEROTH_OK;
}

zeroth_status zeroth_game_players(const zeroth_game_t *game, int n, const void *states,
                                  int *players)
{
    ZT_API_TRY(batch("zeroth_game_players", game, n, states));
    if (n > 0) ZT_API_TRY(zt_api_need("zeroth_game_players", players, "players"));
    const zt_game *g = game->game;
    for (int i = 0; i < n; i++) players[i] = g->current_player(g, state_at(g, states, i));
    return ZEROTH_OK;
}

zeroth_status zeroth_game_legal(const zeroth_game_t *game, int n, const void *states, uint8_t *mask,
                                int *counts)
{
    ZT_API_TRY(batch("zeroth_game_legal", game, n, states));
    if (n > 0) ZT_API_TRY(zt_api_need("zeroth_game_legal", mask, "mask"));
    const zt_game *g = game->game;
    for (int i = 0; i < n; i++) {
        const void *s = state_at(g, states, i);
        uint8_t *row = mask + (size_t)i * (size_t)g->num_actions;
        int p = g->current_player(g, s), count = 0;
        if (p >= 0)
            count = zt_game_legal_mask(g, s, row);
        else
            memset(row, 0, (size_t)g->num_actions);
        if (counts) counts[i] = count;
    }
    return ZEROTH_OK;
}

zt_status zt_api_check_action(const zt_game *g, const void *s, int action, const char *fn,
                              const char *where, int index)
{
    char place[64];
    int p = g->current_player(g, s);
    if (p == ZT_CHANCE) {
        int outcomes[ZT_MAX_CHANCE_OUTCOMES];
        float probs[ZT_MAX_CHANCE_OUTCOMES];
        int k = g->chance_outcomes(g, s, outcomes, probs);
        for (int j = 0; j < k; j++)
            if (outcomes[j] == action && probs[j] > 0) return ZT_OK;
    } else if (p >= 0 && action >= 0 && action < g->num_actions) {
        uint16_t legal[ZT_MAX_ACTIONS];
        int k = g->legal(g, s, legal);
        for (int j = 0; j < k; j++)
            if (legal[j] == action) return ZT_OK;
    }
    snprintf(place, sizeof place, where, index);
    if (p == ZT_TERMINAL) return zt_fail(ZT_ERR_INVALID, "%s: %s is terminal", fn, place);
    if (p == ZT_CHANCE)
        return zt_fail(ZT_ERR_INVALID, "%s: %d is no outcome of chance node %s", fn, action, place);
    return zt_fail(ZT_ERR_INVALID, "%s: action %d is not legal in %s", fn, action, place);
}

zeroth_status zeroth_game_step(const zeroth_game_t *game, int n, void *states, const int *actions)
{
    ZT_API_TRY(batch("zeroth_game_step", game, n, states));
    if (n > 0) ZT_API_TRY(zt_api_need("zeroth_game_step", actions, "actions"));
    const zt_game *g = game->game;
    for (int i = 0; i < n; i++)
        ZT_API_TRY(zt_api_check_action(g, state_at(g, states, i), actions[i], "zeroth_game_step",
                                       "state %d", i));
    for (int i = 0; i < n; i++) g->apply(g, state_at_mut(g, states, i), actions[i]);
    return ZEROTH_OK;
}

zeroth_status zeroth_game_observe(const zeroth_game_t *game, int n, const void *states, float *obs)
{
    ZT_API_TRY(batch("zeroth_game_observe", game, n, states));
    if (n > 0) ZT_API_TRY(zt_api_need("zeroth_game_observe", obs, "obs"));
    const zt_game *g = game->game;
    size_t size = (size_t)zt_game_obs_size(g);
    for (int i = 0; i < n; i++) g->observe(g, state_at(g, states, i), obs + (size_t)i * size);
    return ZEROTH_OK;
}

zeroth_status zeroth_game_returns(const zeroth_game_t *game, int n, const void *states,
                                  float *returns)
{
    ZT_API_TRY(batch("zeroth_game_returns", game, n, states));
    if (n > 0) ZT_API_TRY(zt_api_need("zeroth_game_returns", returns, "returns"));
    const zt_game *g = game->game;
    for (int i = 0; i < n; i++) {
        const void *s = state_at(g, states, i);
        float *r = returns + 2 * (size_t)i;
        if (zt_game_is_terminal(g, s))
            g->returns(g, s, r);
        else
            r[0] = r[1] = 0.0f;
    }
    return ZEROTH_OK;
}

zeroth_status zeroth_game_chance_outcomes(const zeroth_game_t *game, int n, const void *states,
                                          int *counts, int *outcomes, float *probs)
{
    const char *fn = "zeroth_game_chance_outcomes";
    ZT_API_TRY(batch(fn, game, n, states));
    const zt_game *g = game->game;
    if (n > 0) {
        ZT_API_TRY(zt_api_need(fn, counts, "counts"));
        /* rows of zero width in games without chance: nothing is written */
        if (g->max_chance_outcomes > 0) {
            ZT_API_TRY(zt_api_need(fn, outcomes, "outcomes"));
            ZT_API_TRY(zt_api_need(fn, probs, "probs"));
        }
    }
    size_t O = (size_t)g->max_chance_outcomes;
    for (int i = 0; i < n; i++) {
        const void *s = state_at(g, states, i);
        counts[i] = g->current_player(g, s) == ZT_CHANCE
                        ? g->chance_outcomes(g, s, outcomes + (size_t)i * O, probs + (size_t)i * O)
                        : 0;
    }
    return ZEROTH_OK;
}

/* Draws chance outcomes of state s until it is not at a chance node. */
static void draw_chance(const zt_game *g, void *s, zt_rng *rng);

/* Plays `action` in game i's state s, then its chance draws (rng, NULL for
 * deterministic games), and writes row i of the outputs of
 * zeroth_game_step_env, starting a game that ended again with auto_reset. */
static void env_advance(const zt_game *g, void *s, int i, int action, zt_rng *rng, int auto_reset,
                        float *rewards, uint8_t *done, int *players, uint8_t *mask)
{
    g->apply(g, s, action);
    if (rng) draw_chance(g, s, rng);
    int p = g->current_player(g, s);
    float *r = rewards + 2 * (size_t)i;
    done[i] = p == ZT_TERMINAL;
    if (done[i]) {
        g->returns(g, s, r);
        if (auto_reset) {
            memset(s, 0, g->state_size);
            g->reset(g, s);
            if (rng) draw_chance(g, s, rng);
            p = g->current_player(g, s);
        }
    } else {
        r[0] = r[1] = 0.0f;
    }
    if (players) players[i] = p;
    if (mask) {
        uint8_t *row = mask + (size_t)i * (size_t)g->num_actions;
        if (p >= 0)
            zt_game_legal_mask(g, s, row);
        else
            memset(row, 0, (size_t)g->num_actions);
    }
}

static void draw_chance(const zt_game *g, void *s, zt_rng *rng)
{
    while (g->current_player(g, s) == ZT_CHANCE) g->apply(g, s, zt_game_sample_chance(g, s, rng));
}

zeroth_status zeroth_game_sample_chance(const zeroth_game_t *game, int n, void *states,
                                        uint64_t seed)
{
    ZT_API_TRY(batch("zeroth_game_sample_chance", game, n, states));
    const zt_game *g = game->game;
    for (int i = 0; i < n; i++) {
        zt_rng rng;
        zt_rng_seed(&rng, seed, (uint64_t)i);
        draw_chance(g, state_at_mut(g, states, i), &rng);
    }
    return ZEROTH_OK;
}

zeroth_status zeroth_game_step_env(const zeroth_game_t *game, int n, void *states,
                                   const int *actions, uint64_t seed, int auto_reset,
                                   float *rewards, uint8_t *done, int *players, uint8_t *mask)
{
    const char *fn = "zeroth_game_step_env";
    ZT_API_TRY(batch(fn, game, n, states));
    if (n > 0) {
        ZT_API_TRY(zt_api_need(fn, actions, "actions"));
        ZT_API_TRY(zt_api_need(fn, rewards, "rewards"));
        ZT_API_TRY(zt_api_need(fn, done, "done"));
    }
    const zt_game *g = game->game;
    for (int i = 0; i < n; i++)
        ZT_API_TRY(zt_api_check_action(g, state_at(g, states, i), actions[i], fn, "state %d", i));
    bool chance = g->max_chance_outcomes > 0;
    for (int i = 0; i < n; i++) {
        zt_rng rng;
        if (chance) zt_rng_seed(&rng, seed, (uint64_t)i);
        env_advance(g, state_at_mut(g, states, i), i, actions[i], chance ? &rng : NULL, auto_reset,
                    rewards, done, players, mask);
    }
    return ZEROTH_OK;
}

zeroth_status zeroth_game_step_env_random(const zeroth_game_t *game, int n, void *states,
                                          uint64_t seed, int auto_reset, int *actions,
                                          float *rewards, uint8_t *done, int *players,
                                          uint8_t *mask)
{
    const char *fn = "zeroth_game_step_env_random";
    ZT_API_TRY(batch(fn, game, n, states));
    if (n > 0) {
        ZT_API_TRY(zt_api_need(fn, actions, "actions"));
        ZT_API_TRY(zt_api_need(fn, rewards, "rewards"));
        ZT_API_TRY(zt_api_need(fn, done, "done"));
    }
    const zt_game *g = game->game;
    for (int i = 0; i < n; i++)
        if (g->current_player(g, state_at(g, states, i)) < 0)
            return zt_api_status(zt_fail(ZT_ERR_INVALID, "%s: state %d waits for no player (the game is over "
                                                         "or at a chance node)", fn, i));
    bool chance = g->max_chance_outcomes > 0;
    for (int i = 0; i < n; i++) {
        void *s = state_at_mut(g, states, i);
        /* the move from one hash of (seed, i): a full stream is seeded
         * only where chance draws follow */
        uint64_t h = zt_hash_mix(seed ^ ((uint64_t)i * 0x9e3779b97f4a7c15ULL));
        uint16_t legal[ZT_MAX_ACTIONS];
        int k = g->legal(g, s, legal);
        actions[i] = legal[(uint32_t)(((h >> 32) * (uint64_t)k) >> 32)];
        zt_rng rng;
        if (chance) zt_rng_seed(&rng, h, (uint64_t)i);
        env_advance(g, s, i, actions[i], chance ? &rng : NULL, auto_reset, rewards, done, players,
                    mask);
    }
    return ZEROTH_OK;
}

/* ---- text ---- */

/* Copies text into the caller's buffer, or fails naming the size needed. */
static zt_status give_text(const char *fn, const char *text, char *buf, size_t cap)
{
    size_t len = strlen(text);
    if (len >= cap)
        return zt_fail(ZT_ERR_INVALID, "%s: buffer of %zu bytes, %zu needed", fn, cap, len + 1);
    memcpy(buf, text, len + 1);
    return ZT_OK;
}

zeroth_status zeroth_game_to_text(const zeroth_game_t *game, const void *state, char *buf,
                                  size_t cap)
{
    const char *fn = "zeroth_game_to_text";
    ZT_API_TRY(zt_api_need(fn, game, "game"));
    ZT_API_TRY(zt_api_need(fn, state, "state"));
    ZT_API_TRY(zt_api_need(fn, buf, "buf"));
    char text[ZT_MAX_TEXT];
    game->game->to_text(game->game, state, text, sizeof text);
    return zt_api_status(give_text(fn, text, buf, cap));
}

zeroth_status zeroth_game_from_text(const zeroth_game_t *game, const char *text, void *state)
{
    const char *fn = "zeroth_game_from_text";
    ZT_API_TRY(zt_api_need(fn, game, "game"));
    ZT_API_TRY(zt_api_need(fn, text, "text"));
    ZT_API_TRY(zt_api_need(fn, state, "state"));
    const zt_game *g = game->game;
    /* parsed aside, so that a refused text leaves the caller's state alone */
    uint64_t parsed[ZT_MAX_STATE_BYTES / 8];
    memset(parsed, 0, sizeof parsed);
    ZT_API_TRY(g->from_text(g, text, parsed));
    memcpy(state, parsed, g->state_size);
    return ZEROTH_OK;
}

zeroth_status zeroth_game_render(const zeroth_game_t *game, const void *state, char *buf,
                                 size_t cap)
{
    const char *fn = "zeroth_game_render";
    ZT_API_TRY(zt_api_need(fn, game, "game"));
    ZT_API_TRY(zt_api_need(fn, state, "state"));
    ZT_API_TRY(zt_api_need(fn, buf, "buf"));
    char text[4 * ZT_MAX_TEXT];
    game->game->render(game->game, state, text, sizeof text);
    return zt_api_status(give_text(fn, text, buf, cap));
}

zeroth_status zeroth_game_action_to_text(const zeroth_game_t *game, const void *state, int action,
                                         char *buf, size_t cap)
{
    const char *fn = "zeroth_game_action_to_text";
    ZT_API_TRY(zt_api_need(fn, game, "game"));
    ZT_API_TRY(zt_api_need(fn, state, "state"));
    ZT_API_TRY(zt_api_need(fn, buf, "buf"));
    const zt_game *g = game->game;
    ZT_API_TRY(zt_api_check_action(g, state, action, fn, "the state", 0));
    char text[ZT_MAX_TEXT];
    g->action_to_text(g, state, action, text, sizeof text);
    return zt_api_status(give_text(fn, text, buf, cap));
}

zeroth_status zeroth_game_action_from_text(const zeroth_game_t *game, const void *state,
                                           const char *text, int *action)
{
    const char *fn = "zeroth_game_action_from_text";
    ZT_API_TRY(zt_api_need(fn, game, "game"));
    ZT_API_TRY(zt_api_need(fn, state, "state"));
    ZT_API_TRY(zt_api_need(fn, text, "text"));
    ZT_API_TRY(zt_api_need(fn, action, "action"));
    const zt_game *g = game->game;
    ZT_API_TRY(zt_api_decision_state(g, state, 0, fn));
    int a;
    ZT_API_TRY(g->action_from_text(g, state, text, &a));
    ZT_API_TRY(zt_api_check_action(g, state, a, fn, "the state", 0));
    *action = a;
    return ZEROTH_OK;
}
