/* Exact Sim solver for n <= 6 (any k, either variant): negamax over every
 * reachable position with a memo indexed by the board in base 3 (3^15 bytes
 * on K6, filled on demand; the whole K6 game is about 1.35M positions). Each
 * entry holds the value and the plies to the end under the convention of the
 * shared K6 file: the winner ends the game as fast as it can, the loser drags
 * it out as long as it can (a draw always fills the board). */
#include "game/sim.h"

#include "core/alloc.h"
#include "game/solver.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SIM_SOLVER_MAX_N = 6 };

typedef struct sim_solver {
    const zt_sim_impl *im;
    uint32_t pow3[ZT_SIM_MAX_EDGES];
    /* 0 unknown; else bits 0-1 value + 2 (1 loss, 2 draw, 3 win) and bits
     * 2-7 the plies to the end, both for the side to move. */
    uint8_t *memo;
    size_t memo_size;
    long solved;
} sim_solver;

static inline int entry_value(uint8_t e)
{
    return (e & 3) - 2;
}

static inline int entry_plies(uint8_t e)
{
    return e >> 2;
}

static uint32_t board_index(const sim_solver *t, const zt_sim_state *s)
{
    const zt_sim_impl *im = t->im;
    uint32_t idx = 0;
    for (int a = 0; a < im->edges; a++) {
        int u = im->edge_u[a], v = im->edge_v[a];
        if (s->adj[0][u] >> v & 1) idx += t->pow3[a];
        if (s->adj[1][u] >> v & 1) idx += 2 * t->pow3[a];
    }
    return idx;
}

/* Is (v, p) better than (bv, bp) for the mover? Higher value first; then a
 * winner prefers fewer plies and a loser (or drawer) more. */
static inline bool better(int v, int p, int bv, int bp)
{
    if (v != bv) return v > bv;
    return v > 0 ? p < bp : p > bp;
}

static uint8_t solve_index(zt_solver *sv, const zt_sim_state *s, uint32_t idx);

/* Value and plies for the mover of s after playing edge a. */
static void child_outcome(zt_solver *sv, const zt_sim_state *s, uint32_t idx, int a, int *v, int *p)
{
    sim_solver *t = sv->impl;
    zt_sim_state child = *s;
    int mover = s->side;
    sv->game->apply(sv->game, &child, a);
    if (child.result != ZT_SIM_ONGOING) {
        *v = child.result == ZT_SIM_DRAW                     ? 0
             : (child.result == ZT_SIM_WIN0) == (mover == 0) ? 1
                                                             : -1;
        *p = 1;
        return;
    }
    uint8_t e = solve_index(sv, &child, idx + (uint32_t)(mover + 1) * t->pow3[a]);
    *v = -entry_value(e);
    *p = entry_plies(e) + 1;
}

static uint8_t solve_index(zt_solver *sv, const zt_sim_state *s, uint32_t idx)
{
    sim_solver *t = sv->impl;
    if (t->memo[idx]) return t->memo[idx];
    uint16_t actions[ZT_SIM_MAX_EDGES];
    int n = zt_sim_free_edges(t->im, s, actions), bv = -2, bp = 0;
    ZT_ASSERT(n > 0);
    for (int i = 0; i < n; i++) {
        int v, p;
        child_outcome(sv, s, idx, actions[i], &v, &p);
        if (better(v, p, bv, bp)) {
            bv = v;
            bp = p;
        }
    }
    t->solved++;
    t->memo[idx] = (uint8_t)((bv + 2) | bp << 2);
    return t->memo[idx];
}

static zt_status sim_solve(zt_solver *sv, const void *vs, bool moves, zt_solution *out)
{
    sim_solver *t = sv->impl;
    const zt_sim_state *s = vs;
    if (s->result != ZT_SIM_ONGOING)
        return zt_fail(ZT_ERR_INVALID, "%s solver: the position is already over", sv->game->title);
    uint32_t idx = board_index(t, s);
    uint8_t e = solve_index(sv, s, idx);
    out->value = entry_value(e);
    out->score = entry_plies(e);
    out->num_moves = out->num_best = 0;
    if (!moves) return ZT_OK;
    uint16_t actions[ZT_SIM_MAX_EDGES];
    int n = zt_sim_free_edges(t->im, s, actions);
    for (int i = 0; i < n; i++) {
        int v, p;
        child_outcome(sv, s, idx, actions[i], &v, &p);
        if (v != out->value) continue;
        out->moves[out->num_moves++] = actions[i];
        if (p == out->score) out->best[out->num_best++] = actions[i];
    }
    return ZT_OK;
}

/* A comma-separated increasing list of edge numbers; "-" is the empty list. */
static bool parse_moves(const char *tok, int edges, uint16_t *moves, int *n)
{
    *n = 0;
    if (strcmp(tok, "-") == 0) return true;
    const char *p = tok;
    while (*p) {
        if (!isdigit((unsigned char)*p)) return false;
        int a = 0;
        while (isdigit((unsigned char)*p) && a < edges) a = a * 10 + (*p++ - '0');
        if (a >= edges || (*n > 0 && a <= moves[*n - 1])) return false;
        moves[(*n)++] = (uint16_t)a;
        if (*p == ',')
            p++;
        else if (*p)
            return false;
    }
    return *n > 0;
}

/* "<edges> <side> <value> <plies> <value_moves> <best_moves>" as in
 * sim/sim_k6_positions.txt; trailing fields may be absent. */
static zt_status sim_parse_line(zt_solver *sv, const char *line, zt_position *pos)
{
    const zt_game *g = sv->game;
    const zt_sim_impl *im = ((sim_solver *)sv->impl)->im;
    zt_field f[6];
    int got = zt_fields_split(line, f, 6);
    if (got < 2 || got > 6)
        return zt_fail(
            ZT_ERR_INVALID,
            "%s: expected '<edges> <side> [<value> <plies> <value_moves> <best_moves>]', got "
            "'%.60s%s'",
            g->title, line, strlen(line) > 60 ? "..." : "");
    char edges[ZT_SIM_MAX_EDGES + 2], side[8], value[8], plies[8], vm[1024], bm[1024];
    char *const dst[6] = {edges, side, value, plies, vm, bm};
    const size_t cap[6] = {sizeof edges, sizeof side, sizeof value,
                           sizeof plies, sizeof vm,   sizeof bm};
    static const char *const what[6] = {"the edges", "the side",        "the value",
                                        "the plies", "the value moves", "the best moves"};
    for (int i = 0; i < got; i++) {
        char name[96];
        snprintf(name, sizeof name, "%s: %s", g->title, what[i]);
        ZT_TRY(zt_field_copy(f[i], name, dst[i], cap[i]));
    }
    char text[ZT_SIM_MAX_EDGES + 16];
    snprintf(text, sizeof text, "%s %s", edges, side);
    memset(pos, 0, sizeof *pos);
    ZT_TRY(g->from_text(g, text, pos->state));
    zt_solution *e = &pos->expected;
    if (got >= 3) {
        if (strcmp(value, "+1") == 0 || strcmp(value, "1") == 0)
            e->value = 1;
        else if (strcmp(value, "-1") == 0)
            e->value = -1;
        else if (strcmp(value, "0") == 0)
            e->value = 0;
        else
            return zt_fail(ZT_ERR_INVALID, "%s: value must be +1, 0 or -1, got '%s'", g->title,
                           value);
        pos->has_value = true;
    }
    if (got >= 4) {
        char *end;
        long p = strtol(plies, &end, 10);
        if (*end || p < 1 || p > im->edges)
            return zt_fail(ZT_ERR_INVALID, "%s: plies must be 1..%d, got '%s'", g->title, im->edges,
                           plies);
        e->score = (int)p;
        pos->has_score = true;
    }
    if (got >= 5) {
        if (!parse_moves(vm, im->edges, e->moves, &e->num_moves))
            return zt_fail(ZT_ERR_INVALID,
                           "%s: value moves must be increasing edge numbers 0..%d, got '%s'",
                           g->title, im->edges - 1, vm);
        pos->has_moves = true;
    }
    if (got >= 6) {
        if (!parse_moves(bm, im->edges, e->best, &e->num_best))
            return zt_fail(ZT_ERR_INVALID,
                           "%s: best moves must be increasing edge numbers 0..%d, got '%s'",
                           g->title, im->edges - 1, bm);
        pos->has_best = true;
    }
    return ZT_OK;
}

static bool same_moves(const uint16_t *a, int na, const uint16_t *b, int nb)
{
    return na == nb && memcmp(a, b, (size_t)na * sizeof *a) == 0;
}

static bool sim_agrees(const zt_solution *expected, const zt_position *pos, const zt_solution *got)
{
    if (pos->has_value && expected->value != got->value) return false;
    if (pos->has_score && expected->score != got->score) return false;
    if (pos->has_moves &&
        !same_moves(expected->moves, expected->num_moves, got->moves, got->num_moves))
        return false;
    if (pos->has_best && !same_moves(expected->best, expected->num_best, got->best, got->num_best))
        return false;
    return true;
}

static void sim_stats(zt_solver *sv, char *buf, size_t cap)
{
    const sim_solver *t = sv->impl;
    snprintf(buf, cap, "%s solver: %ld positions solved, memo %.1f MB", sv->game->title, t->solved,
             (double)t->memo_size / 1e6);
}

static void sim_free(zt_solver *sv)
{
    sim_solver *t = sv->impl;
    free(t->memo);
    free(t);
    free(sv);
}

zt_status zt_solver_new_sim(const zt_game *g, zt_solver **out)
{
    *out = NULL;
    if (strcmp(g->name, "sim") != 0)
        return zt_fail(ZT_ERR_INVALID, "sim solver given %s", g->title);
    const zt_sim_impl *im = g->impl;
    if (im->n > SIM_SOLVER_MAX_N)
        return zt_fail(ZT_ERR_UNSUPPORTED, "no exact solver for %s: only n <= %d", g->title,
                       SIM_SOLVER_MAX_N);
    sim_solver *t = zt_xcalloc(1, sizeof *t);
    t->im = im;
    t->memo_size = 1;
    for (int a = 0; a < im->edges; a++) {
        t->pow3[a] = (uint32_t)t->memo_size;
        t->memo_size *= 3;
    }
    t->memo = calloc(t->memo_size, 1);
    if (!t->memo) {
        size_t bytes = t->memo_size;
        free(t);
        return zt_fail(ZT_ERR_NOMEM, "%s solver: cannot allocate %zu bytes of memo", g->title,
                       bytes);
    }
    zt_solver *sv = zt_xcalloc(1, sizeof *sv);
    sv->game = g;
    sv->impl = t;
    sv->solve = sim_solve;
    sv->parse_line = sim_parse_line;
    sv->agrees = sim_agrees;
    sv->stats = sim_stats;
    sv->free = sim_free;
    *out = sv;
    return ZT_OK;
}
