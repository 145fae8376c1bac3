#include "agent/player.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
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

static int choose_exact(zt_player *p, const void *s, zt_rng *rng)
{
    exact_player *e = p->impl;
    zt_status st = e->solver->solve(e->solver, s, true, &e->sol);
    ZT_ASSERT(st == ZT_OK);
    if (e->best_score && e->sol.num_best > 0)
        return e->sol.best[zt_rng_below(rng, (uint32_t)e->sol.num_best)];
    if (e->best_score && strcmp(p->game->name, "connect4") == 0) {
        /* Connect Four's solver gives scores, not best-move sets: solve the
         * children and keep those whose negated score equals the value. */
        uint16_t actions[ZT_MAX_ACTIONS];
        uint8_t child[ZT_MAX_STATE_BYTES];
        int n = p->game->legal(p->game, s, actions), best[ZT_MAX_ACTIONS], nbest = 0;
        int best_score = -1000;
        zt_solution cs;
        for (int i = 0; i < n; i++) {
            memcpy(child, s, p->game->state_size);
            p->game->apply(p->game, child, actions[i]);
            int sc;
            if (zt_game_is_terminal(p->game, child)) {
                float r[2];
                p->game->returns(p->game, child, r);
                int mover = p->game->current_player(p->game, s);
                /* A move that ends the game: a win scores 22 - stones of the
                 * winner, which the solver of the parent already gives. */
                sc = r[mover] > 0 ? e->sol.score : 0;
            } else {
                st = e->solver->solve(e->solver, child, false, &cs);
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

zt_status zt_player_new(const zt_game *g, const char *spec, zt_player **out)
{
    *out = NULL;
    const char *colon = strchr(spec, ':');
    size_t base = colon ? (size_t)(colon - spec) : strlen(spec);
    int depth = 0;

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
    if (base == 9 && strncmp(spec, "alphabeta", 9) == 0 && colon) {
        ZT_TRY(parse_depth(spec, colon, &depth));
        if (strcmp(g->name, "connect4") != 0)
            return zt_fail(ZT_ERR_UNSUPPORTED, "player 'alphabeta' exists for connect4, not %s",
                           g->title);
        return zt_player_new_alphabeta_connect4(g, depth, out);
    }
    if (base == 7 && strncmp(spec, "negamax", 7) == 0 && colon) {
        ZT_TRY(parse_depth(spec, colon, &depth));
        if (strcmp(g->name, "sim") != 0)
            return zt_fail(ZT_ERR_UNSUPPORTED, "player 'negamax' exists for sim, not %s", g->title);
        return zt_player_new_negamax_sim(g, depth, out);
    }
    if (strcmp(spec, "pubeval") == 0) {
        if (strcmp(g->name, "backgammon") != 0)
            return zt_fail(ZT_ERR_UNSUPPORTED, "player 'pubeval' exists for backgammon, not %s",
                           g->title);
        return zt_player_new_pubeval(g, out);
    }
    return zt_fail(ZT_ERR_INVALID,
                   "unknown player '%s' (random, perfect, solver, alphabeta:D, negamax:D, pubeval)",
                   spec);
}

void zt_player_free(zt_player *p)
{
    if (p) p->free(p);
}
