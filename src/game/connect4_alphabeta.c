/* Connect Four baseline: depth-limited negamax with alpha-beta over the
 * bitboards of game/connect4.h, a static evaluation of threats and centre
 * control at the horizon, immediate wins taken and immediate losses blocked,
 * and a uniformly random choice among equally scored best moves. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "game/player.h"
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

/* Window starts per direction: the cells from which four cells at steps of
 * d (1 up, 7 right, 8 up-right, 6 down-right) stay on the board. */
#define C4_ROWS_0_2 (C4_BOTTOM * 0x07)
#define C4_ROWS_3_5 (C4_BOTTOM * 0x38)
#define C4_COLS_0_3 0x000000000fffffffULL

/* Lines of four with exactly two / three stones of `own` and none of `other`,
 * counted by a bit-sliced adder over the four shifted boards. */
static void count_windows(uint64_t own, uint64_t other, int *twos, int *threes)
{
    static const int dirs[4] = {1, 7, 8, 6};
    static const uint64_t starts[4] = {C4_ROWS_0_2, C4_BOARD & C4_COLS_0_3,
                                       C4_ROWS_0_2 & C4_COLS_0_3, C4_ROWS_3_5 & C4_COLS_0_3};
    *twos = *threes = 0;
    for (int i = 0; i < 4; i++) {
        int d = dirs[i];
        uint64_t a = own, b = own >> d, c = own >> 2 * d, e = own >> 3 * d;
        uint64_t open = starts[i] & ~(other | other >> d | other >> 2 * d | other >> 3 * d);
        uint64_t s1 = a ^ b, c1 = a & b, s2 = c ^ e, c2 = c & e;
        uint64_t bit0 = s1 ^ s2, carry = s1 & s2;
        uint64_t bit1 = c1 ^ c2 ^ carry, bit2 = (c1 & c2) | (carry & (c1 ^ c2));
        *twos += c4_popcount(open & ~bit0 & bit1 & ~bit2);
        *threes += c4_popcount(open & bit0 & bit1 & ~bit2);
    }
}

/* The side to move's prospects from the board alone: open lines of three
 * and two (unblocked windows of four), stones in the central columns, which
 * take part in the most lines, and a bonus for threats (cells completing a
 * four) on the low rows, which decide endgames by zugzwang. */
static int evaluate(uint64_t cur, uint64_t mask)
{
    uint64_t opp = cur ^ mask;
    int own2, own3, opp2, opp3;
    count_windows(cur, opp, &own2, &own3);
    count_windows(opp, cur, &opp2, &opp3);
    int score = 8 * (own3 - opp3) + 2 * (own2 - opp2);
    uint64_t own_t = c4_winning_cells(cur, mask), opp_t = c4_winning_cells(opp, mask);
    score += 4 * (c4_popcount(own_t & C4_ROWS_0_2) - c4_popcount(opp_t & C4_ROWS_0_2));
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
