#include "agent/player.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/gnubg.h"
#include "core/alloc.h"
#include "core/config.h"
#include "game/solver.h"

static void free_plain(zt_player *p)
{
    free(p);
}

static int choose_random(zt_player *p, const void *s, zt_rng *rng)
{
    uint16_t actions[ZT_MAX_ACTIONS];
    int n = p->game->legal(p->game, s, actions);
    ZT_ASSERT(n > 0);
    return actions[zt_rng_below(rng, (uint32_t)n)];
}

/* The exact players: "perfect" picks uniformly among the value-preserving
 * moves; "solver" prefers the moves that also keep the best score (fastest
 * win, slowest loss) where the solver reports one. */
typedef struct exact_player {
    zt_solver *solver;
    bool best_score;
    zt_solution sol;
} exact_player;

/* The moves whose negated child score is the highest, for a solver that
 * reports scores but no best-move set (Connect Four's): each child is
 * solved, and a move that ends the game scores as the parent's own score
 * when it wins (no win is faster than at once), 0 for a draw, and below
 * every other move when it loses. */
static int choose_best_child(zt_player *p, exact_player *e, const void *s, zt_rng *rng)
{
    const zt_game *g = p->game;
    uint16_t actions[ZT_MAX_ACTIONS];
    uint8_t child[ZT_MAX_STATE_BYTES];
    int n = g->legal(g, s, actions), best[ZT_MAX_ACTIONS], nbest = 0;
    int best_score = INT_MIN;
    int mover = g->current_player(g, s);
    zt_solution cs;
    for (int i = 0; i < n; i++) {
        memcpy(child, s, g->state_size);
        g->apply(g, child, actions[i]);
        int sc;
        if (zt_game_is_terminal(g, child)) {
            float r[2];
            g->returns(g, child, r);
            sc = r[mover] > 0 ? e->sol.score : r[mover] < 0 ? INT_MIN + 1 : 0;
        } else {
            zt_status st = e->solver->solve(e->solver, child, false, &cs);
            ZT_ASSERT(st == ZT_OK);
            sc = -cs.score;
        }
        if (sc > best_score) {
            best_score = sc;
            nbest = 0;
        }
        if (sc == best_score) best[nbest++] = actions[i];
    }
    return best[zt_rng_below(rng, (uint32_t)nbest)];
}

static int choose_exact(zt_player *p, const void *s, zt_rng *rng)
{
    exact_player *e = p->impl;
    zt_status st = e->solver->solve(e->solver, s, true, &e->sol);
    ZT_ASSERT(st == ZT_OK);
    if (e->best_score && e->sol.num_best > 0)
        return e->sol.best[zt_rng_below(rng, (uint32_t)e->sol.num_best)];
    if (e->best_score) return choose_best_child(p, e, s, rng);
    ZT_ASSERT(e->sol.num_moves > 0);
    return e->sol.moves[zt_rng_below(rng, (uint32_t)e->sol.num_moves)];
}

static void free_exact(zt_player *p)
{
    exact_player *e = p->impl;
    zt_solver_free(e->solver);
    free(e);
    free(p);
}

static zt_player *player_alloc(const zt_game *g, const char *name)
{
    zt_player *p = zt_xcalloc(1, sizeof *p);
    p->game = g;
    snprintf(p->name, sizeof p->name, "%s", name);
    p->free = free_plain;
    return p;
}

/* "name:D" -> depth D (1..64). */
static zt_status parse_depth(const char *spec, const char *colon, int *depth)
{
    char *end;
    long d = strtol(colon + 1, &end, 10);
    if (colon[1] == '\0' || *end != '\0' || d < 1 || d > 64)
        return zt_fail(ZT_ERR_INVALID, "player '%s': depth must be an integer in [1, 64]", spec);
    *depth = (int)d;
    return ZT_OK;
}

/* Does `spec` name baseline b ("name", or "name:D" when it takes a depth)? */
static bool names_baseline(const zt_baseline *b, const char *spec)
{
    size_t len = strlen(b->name);
    if (strncmp(spec, b->name, len) != 0) return false;
    return b->takes_depth ? spec[len] == ':' : spec[len] == '\0';
}

void zt_player_specs(char *buf, size_t cap)
{
    size_t used = 0;
    int n = snprintf(buf, cap, "random, perfect, solver, mcts:N");
    if (n < 0 || (size_t)n >= cap) return;
    used = (size_t)n;
    for (int i = 0; i < zt_game_registry_count; i++) {
        const zt_baseline *b = zt_game_registry[i]->baselines;
        for (; b && b->name && used < cap; b++) {
            n = snprintf(buf + used, cap - used, ", %s%s", b->name, b->takes_depth ? ":D" : "");
            if (n < 0) return;
            used = used + (size_t)n < cap ? used + (size_t)n : cap;
        }
    }
    if (used < cap) snprintf(buf + used, cap - used, ", gnubg:P");
}

zt_status zt_player_new(const zt_game *g, const char *spec, zt_player **out)
{
    *out = NULL;
    if (strcmp(spec, "random") == 0) {
        zt_player *p = player_alloc(g, "random");
        p->choose = choose_random;
        *out = p;
        return ZT_OK;
    }
    if (strcmp(spec, "perfect") == 0 || strcmp(spec, "solver") == 0) {
        zt_solver *sv;
        ZT_TRY(zt_solver_new(g, &sv));
        exact_player *e = zt_xcalloc(1, sizeof *e);
        e->solver = sv;
        e->best_score = strcmp(spec, "solver") == 0;
        zt_player *p = player_alloc(g, spec);
        p->impl = e;
        p->choose = choose_exact;
        p->free = free_exact;
        *out = p;
        return ZT_OK;
    }
    /* GNU Backgammon, an outside engine (agent/gnubg.h) */
    if (zt_gnubg_names(spec)) return zt_player_new_gnubg(g, spec, out);
    if (strcmp(spec, "mcts") == 0 || strncmp(spec, "mcts:", 5) == 0) {
        if (spec[4] == '\0')
            return zt_fail(ZT_ERR_INVALID, "player 'mcts': say how many simulations (mcts:N)");
        return zt_player_new_mcts(g, spec, out);
    }
    /* The game's own baselines first, then those of other games, which
     * are named in the refusal. */
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < zt_game_registry_count; i++) {
            const zt_game_def *def = zt_game_registry[i];
            bool own = g->def ? def == g->def : strcmp(def->name, g->name) == 0;
            if (own != (pass == 0)) continue;
            for (const zt_baseline *b = def->baselines; b && b->name; b++) {
                if (!names_baseline(b, spec)) continue;
                int depth = 0;
                if (b->takes_depth) ZT_TRY(parse_depth(spec, strchr(spec, ':'), &depth));
                if (!own)
                    return zt_fail(ZT_ERR_UNSUPPORTED, "player '%s' exists for %s, not %s",
                                   b->name, def->name, g->title);
                return b->create(g, depth, out);
            }
        }
    }
    char known[256];
    zt_player_specs(known, sizeof known);
    return zt_fail(ZT_ERR_INVALID, "unknown player '%s' (%s)", spec, known);
}

void zt_players_free(zt_player **players, int n)
{
    for (int i = 0; i < n; i++) zt_player_free(players[i]);
    free(players);
}

zt_status zt_player_list_split(const char *list, const char *what, char *specs, size_t len, int max,
                               int *n)
{
    *n = 0;
    if (!list) return ZT_OK;
    char item[ZT_PLAYER_SPEC_LEN];
    size_t cap = len < sizeof item ? len : sizeof item;
    for (const char *p = list;;) {
        bool got;
        ZT_TRY(zt_list_next(list, &p, what, item, cap, &got));
        if (!got) return ZT_OK;
        if (*n == max)
            return zt_fail(ZT_ERR_INVALID, "%s: more than %d players in '%s'", what, max, list);
        memcpy(specs + (size_t)(*n)++ * len, item, strlen(item) + 1);
    }
}

zt_status zt_players_new(const zt_game *g, const char *list, const char *what, zt_player ***out,
                         int *n)
{
    *out = NULL;
    *n = 0;
    char specs[ZT_PLAYER_LIST_MAX][ZT_PLAYER_SPEC_LEN];
    int count;
    ZT_TRY(zt_player_list_split(list, what, &specs[0][0], sizeof specs[0], ZT_PLAYER_LIST_MAX,
                                &count));
    zt_player **players = count ? zt_xmalloc((size_t)count * sizeof *players) : NULL;
    for (int i = 0; i < count; i++) {
        zt_status st = zt_player_new(g, specs[i], &players[i]);
        if (st != ZT_OK) {
            char why[ZT_MESSAGE_MAX];
            snprintf(why, sizeof why, "%s", zt_error_message());
            zt_players_free(players, i);
            return zt_fail(st, "%s: '%s': %s", what, specs[i], why);
        }
    }
    *out = players;
    *n = count;
    return ZT_OK;
}
