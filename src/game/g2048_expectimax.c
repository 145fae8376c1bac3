/* The "expectimax:D" baseline of 2048: D moves deep, each followed by the
 * exact expectation over the spawns (every empty cell, a 2 with 0.9 and a 4
 * with 0.1), a heuristic at the leaves. Expectimax for 2048 and the kinds
 * of terms below are the folklore of the 2048 AIs of 2014: Matt Overlan's
 * "2048-AI" (smoothness, monotonicity, empty cells, the largest tile) and
 * Robert Xiao's expectimax AI (empty cells, merges, monotonicity scored per
 * row with tables). The code and the weights here are our own.
 *
 * The heuristic sums, over the four rows and the four columns of a board,
 *   EMPTY x the empty cells
 * + MERGE x the pairs of equal adjacent tiles (a merge is ready)
 * - MONO  x min(rises, falls), where rises sums the increases of rank^2
 *           along the line and falls its decreases: a line sorted either
 *           way costs nothing, one that goes up and down costs
 * and adds CORNER x rank of the largest tile when it lies in a corner. A
 * board with no move left is worth DEAD. Each line's part comes from a
 * 65536-entry table, so a board costs eight lookups. The player ignores the
 * points a move scores: the heuristic stands for everything to come. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "game/g2048.h"

#define EMPTY 20.0
#define MERGE 10.0
#define MONO 4.0
#define CORNER 20.0
#define DEAD (-10000.0)
#define MAX_DEPTH 4

static float line_value[65536];
static pthread_once_t line_once = PTHREAD_ONCE_INIT;

static void build_lines(void)
{
    for (int r = 0; r < 65536; r++) {
        int k[4];
        for (int i = 0; i < 4; i++) k[i] = (r >> (4 * i)) & 15;
        double v = 0, rises = 0, falls = 0;
        for (int i = 0; i < 4; i++) v += k[i] == 0 ? EMPTY : 0;
        for (int i = 0; i < 3; i++) {
            if (k[i] && k[i] == k[i + 1]) v += MERGE;
            int d = k[i + 1] * k[i + 1] - k[i] * k[i];
            if (d > 0)
                rises += d;
            else
                falls -= d;
        }
        v -= MONO * (rises < falls ? rises : falls);
        line_value[r] = (float)v;
    }
}

static int rank_at(uint64_t b, int cell)
{
    return (int)((b >> (4 * cell)) & 15);
}

double zt_g2048_heuristic(uint64_t b)
{
    pthread_once(&line_once, build_lines);
    double v = 0;
    for (int r = 0; r < 4; r++) v += line_value[(b >> (16 * r)) & 0xffff];
    for (int c = 0; c < 4; c++) {
        int col = 0;
        for (int r = 0; r < 4; r++) col |= rank_at(b, 4 * r + c) << (4 * r);
        v += line_value[col];
    }
    int top = 0, at = 0;
    for (int i = 0; i < 16; i++)
        if (rank_at(b, i) > top) top = rank_at(b, i), at = i;
    if (at == 0 || at == 3 || at == 12 || at == 15) v += CORNER * top;
    return v;
}

static double best_move(uint64_t b, int depth, int *action);

/* The expectation over the spawns on b (after a move), looking `depth`
 * more moves ahead. */
static double spawn_value(uint64_t b, int depth)
{
    int empty = 0;
    double total = 0;
    for (int i = 0; i < 16; i++) {
        if (rank_at(b, i)) continue;
        empty++;
        uint64_t two = b | 1ull << (4 * i), four = b | 2ull << (4 * i);
        if (depth == 0)
            total += 0.9 * zt_g2048_heuristic(two) + 0.1 * zt_g2048_heuristic(four);
        else
            total += 0.9 * best_move(two, depth, NULL) + 0.1 * best_move(four, depth, NULL);
    }
    /* a move always empties or keeps a cell: there is one at least */
    return empty ? total / empty : zt_g2048_heuristic(b);
}

/* The best of the moves of b, `depth` moves deep; DEAD without one. */
static double best_move(uint64_t b, int depth, int *action)
{
    double best = DEAD;
    for (int a = 0; a < 4; a++) {
        uint64_t next = zt_g2048_move(b, a, NULL);
        if (next == b) continue;
        double v = spawn_value(next, depth - 1);
        if (v > best || (action && *action < 0)) {
            best = v;
            if (action) *action = a;
        }
    }
    return best;
}

static int choose(zt_player *p, const void *s, zt_rng *rng)
{
    (void)rng;
    int depth = *(const int *)p->impl, action = -1;
    best_move(zt_g2048_board(s), depth, &action);
    ZT_ASSERT(action >= 0); /* asked at a player node: some move is legal */
    return action;
}

static void free_player(zt_player *p)
{
    free(p->impl);
    free(p);
}

zt_status zt_g2048_expectimax_new(const zt_game *g, int depth, zt_player **out)
{
    *out = NULL;
    if (strcmp(g->name, "2048") != 0)
        return zt_fail(ZT_ERR_INVALID, "expectimax player is for 2048, not %s", g->name);
    if (depth < 1 || depth > MAX_DEPTH)
        return zt_fail(ZT_ERR_INVALID,
                       "expectimax depth %d outside [1, %d] (each level multiplies the work by about 100)",
                       depth, MAX_DEPTH);
    int *d = zt_xcalloc(1, sizeof *d);
    *d = depth;
    zt_player *p = zt_xcalloc(1, sizeof *p);
    p->game = g;
    snprintf(p->name, sizeof p->name, "expectimax:%d", depth);
    p->impl = d;
    p->choose = choose;
    p->free = free_player;
    *out = p;
    return ZT_OK;
}
