/* Connect Four baseline: depth-limited negamax with alpha-beta over the
 * bitboards of game/connect4.h, a static evaluation of threats and centre
 * control at the horizon, immediate wins taken and immediate losses blocked,
 * and a uniformly random choice among equally scored best moves. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/player.h"
#include "core/alloc.h"
#include "game/connect4.h"

#define AB_INF (1 << 20)
#define AB_WIN 100000 /* plus the cells left: faster wins score higher */

typedef struct ab_player {
    int depth;
    uint64_t nodes;
} ab_player;

static const int column_order[C4_WIDTH] = {3, 2, 4, 1, 5, 0, 6};

/* Score of a win by the side to move with the stone that makes ply n + 1. */
static int win_score(int n)
{
    return AB_WIN + (C4_CELLS - n);
}

/* The side to move's prospects from the board alone: cells where a stone
 * would complete a four (threats; the lower ones are the more urgent) and
 * stones in the central columns, which take part in the most fours. */
static int evaluate(uint64_t cur, uint64_t mask)
{
    uint64_t opp = cur ^ mask;
    uint64_t own_t = c4_winning_cells(cur, mask), opp_t = c4_winning_cells(opp, mask);
    /* Threats on the bottom three rows are the ones that decide endgames. */
    const uint64_t low = C4_BOTTOM * 0x7;
    int score = 8 * (c4_popcount(own_t) - c4_popcount(opp_t)) +
                4 * (c4_popcount(own_t & low) - c4_popcount(opp_t & low));
    static const int column_weight[C4_WIDTH] = {0, 1, 2, 4, 2, 1, 0};
    for (int c = 0; c < C4_WIDTH; c++) {
        uint64_t col = c4_column_mask(c);
        score += column_weight[c] * (c4_popcount(cur & col) - c4_popcount(opp & col));
    }
    return score;
}

/* Negamax value for the side to move, fail-soft within (alpha, beta). */
static int search(ab_player *ab, uint64_t cur, uint64_t mask, int n, int depth, int alpha,
                  int beta)
{
    ab->nodes++;
    uint64_t possible = c4_playable(mask);
    if (c4_winning_cells(cur, mask) & possible) return win_score(n);
    if (n >= C4_CELLS) return 0;
    uint64_t opp = cur ^ mask;
    uint64_t opp_wins = c4_winning_cells(opp, mask);
    uint64_t forced = possible & opp_wins;
    if (forced) {
        if (forced & (forced - 1)) return -win_score(n + 1);
        possible = forced;
    } else {
        possible &= ~(opp_wins >> 1);
        if (!possible) return -win_score(n + 1);
    }
    if (depth <= 0) return evaluate(cur, mask);
    int best = -AB_INF;
    for (int i = 0; i < C4_WIDTH; i++) {
        uint64_t m = possible & c4_column_mask(column_order[i]);
        if (!m) continue;
        int v = -search(ab, opp, mask | m, n + 1, depth - 1, -beta, -alpha);
        if (v > best) {
            best = v;
            if (v > alpha) alpha = v;
            if (alpha >= beta) break;
        }
    }
    return best;
}

static int pick(const uint64_t cells, zt_rng *rng)
{
    int cols[C4_WIDTH], n = 0;
    for (int c = 0; c < C4_WIDTH; c++)
        if (cells & c4_column_mask(c)) cols[n++] = c;
    ZT_ASSERT(n > 0);
    return cols[zt_rng_below(rng, (uint32_t)n)];
}

static int choose(zt_player *p, const void *s, zt_rng *rng)
{
    ab_player *ab = p->impl;
    const c4_state state = c4_load(s), *st = &state;
    ZT_ASSERT(st->status == C4_ONGOING);
    uint64_t cur = st->current, mask = st->mask, opp = cur ^ mask;
    int n = st->plies;
    uint64_t possible = c4_playable(mask);

    uint64_t wins = c4_winning_cells(cur, mask) & possible;
    if (wins) return pick(wins, rng);
    uint64_t opp_wins = c4_winning_cells(opp, mask);
    uint64_t blocks = opp_wins & possible;
    if (blocks) return pick(blocks, rng);
    /* Moves that do not hand the opponent a win; if none, any move loses. */
    uint64_t candidates = possible & ~(opp_wins >> 1);
    if (!candidates) return pick(possible, rng);

    /* Each root move is searched with the window (best - 1, inf), so moves
     * scoring exactly `best` are recognised as ties. */
    int best = -AB_INF, cols[C4_WIDTH], nbest = 0;
    for (int c = 0; c < C4_WIDTH; c++) {
        uint64_t m = candidates & c4_column_mask(c);
        if (!m) continue;
        int v = -search(ab, opp, mask | m, n + 1, ab->depth - 1, -AB_INF, -(best - 1));
        if (v > best) {
            best = v;
            nbest = 0;
        }
        if (v == best) cols[nbest++] = c;
    }
    return cols[zt_rng_below(rng, (uint32_t)nbest)];
}

static void free_player(zt_player *p)
{
    free(p->impl);
    free(p);
}

zt_status zt_player_new_alphabeta_connect4(const zt_game *g, int depth, zt_player **out)
{
    *out = NULL;
    if (strcmp(g->name, "connect4") != 0)
        return zt_fail(ZT_ERR_INVALID, "alphabeta player is for connect4, not %s", g->name);
    if (depth < 1 || depth > 64)
        return zt_fail(ZT_ERR_INVALID, "alphabeta depth %d outside [1, 64]", depth);
    ab_player *ab = zt_xcalloc(1, sizeof *ab);
    ab->depth = depth;
    zt_player *p = zt_xcalloc(1, sizeof *p);
    p->game = g;
    snprintf(p->name, sizeof p->name, "alphabeta:%d", depth);
    p->impl = ab;
    p->choose = choose;
    p->free = free_player;
    *out = p;
    return ZT_OK;
}
