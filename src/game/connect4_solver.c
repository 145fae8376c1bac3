/* Connect Four strong solver: the exact Pons score of a position (0 draw,
 * +-(22 - k) where k is the winner's stone count at its winning move).
 * Negamax with alpha-beta on bitboards after Pascal Pons' tutorial
 * ("Solving Connect 4", blog.gamesolver.org): scores bounded by the moves
 * left, null-window searches bisecting the score range, a transposition table
 * of bounds, centre-first ordering refined by the threats a move creates, and
 * pruning of moves that let the opponent win at once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "game/connect4.h"
#include "game/solver.h"

/* 2^23 entries of 8 bytes (64 MiB), allocated once with the solver; an entry
 * is the full 49-bit key with one bound in the top byte, 0 when empty. */
#define TT_BITS 23
#define TT_KEY_MASK ((1ULL << 49) - 1)
#define TT_LOWER 0x80u /* the stored score is a lower bound (else upper) */
#define TT_OFFSET 32   /* scores lie in [-21, 21] */

typedef struct c4_solver {
    uint64_t *table;
    uint64_t nodes;
    uint64_t solves;
} c4_solver;

static const int column_order[C4_WIDTH] = {3, 2, 4, 1, 5, 0, 6};

static inline size_t tt_index(uint64_t key)
{
    return (size_t)((key * 0x9e3779b97f4a7c15ULL) >> (64 - TT_BITS));
}

static inline void tt_store(c4_solver *sv, uint64_t key, int score, bool lower)
{
    uint64_t tag = (uint64_t)(score + TT_OFFSET) | (lower ? TT_LOWER : 0);
    sv->table[tt_index(key)] = key | tag << 56;
}

/* Score of the side to move in (cur, mask) after n plies, within the window
 * (alpha, beta) in the fail-soft sense: a result <= alpha is an upper bound,
 * >= beta a lower bound, else exact. The side to move must not be able to
 * win with its next stone (the caller checks). */
static int negamax(c4_solver *sv, uint64_t cur, uint64_t mask, int n, int alpha, int beta)
{
    sv->nodes++;
    uint64_t possible = c4_playable(mask);
    uint64_t opp = cur ^ mask;
    uint64_t opp_wins = c4_winning_cells(opp, mask);
    uint64_t forced = possible & opp_wins;
    if (forced) {
        /* Two open threats cannot both be blocked. */
        if (forced & (forced - 1)) return -(C4_CELLS - n) / 2;
        possible = forced;
    }
    /* Never play directly under a cell where the opponent would win. */
    possible &= ~(opp_wins >> 1);
    if (!possible) return -(C4_CELLS - n) / 2;
    if (n >= C4_CELLS - 2) return 0; /* neither side can complete a four now */

    /* The opponent cannot win with its next stone, and we cannot with ours:
     * both fastest outcomes are at least two own stones away. */
    int lo = -(C4_CELLS - 2 - n) / 2;
    if (alpha < lo) {
        alpha = lo;
        if (alpha >= beta) return alpha;
    }
    int hi = (C4_CELLS - 1 - n) / 2;
    if (beta > hi) {
        beta = hi;
        if (alpha >= beta) return beta;
    }

    uint64_t key = c4_key(cur, mask);
    uint64_t e = sv->table[tt_index(key)];
    if (e && (e & TT_KEY_MASK) == key) {
        unsigned tag = (unsigned)(e >> 56);
        int bound = (int)(tag & ~TT_LOWER) - TT_OFFSET;
        if (tag & TT_LOWER) {
            if (alpha < bound) {
                alpha = bound;
                if (alpha >= beta) return alpha;
            }
        } else if (beta > bound) {
            beta = bound;
            if (alpha >= beta) return beta;
        }
    }

    /* Centre first, then by the number of winning cells the move creates
     * (stable insertion sort keeps the centre order among equals). */
    uint64_t moves[C4_WIDTH];
    int scores[C4_WIDTH], count = 0;
    for (int i = 0; i < C4_WIDTH; i++) {
        uint64_t m = possible & c4_column_mask(column_order[i]);
        if (!m) continue;
        int sc = c4_popcount(c4_winning_cells(cur | m, mask | m));
        int j = count++;
        for (; j > 0 && scores[j - 1] < sc; j--) {
            moves[j] = moves[j - 1];
            scores[j] = scores[j - 1];
        }
        moves[j] = m;
        scores[j] = sc;
    }

    for (int i = 0; i < count; i++) {
        int v = -negamax(sv, opp, mask | moves[i], n + 1, -beta, -alpha);
        if (v >= beta) {
            tt_store(sv, key, v, true);
            return v;
        }
        if (v > alpha) alpha = v;
    }
    tt_store(sv, key, alpha, false);
    return alpha;
}

static bool wins_now(uint64_t cur, uint64_t mask)
{
    return (c4_winning_cells(cur, mask) & c4_playable(mask)) != 0;
}

/* Exact score: bisect [min, max] with null-window searches, trying 0 and
 * half-way to the bounds first (small windows near 0 are cheapest). */
static int solve_score(c4_solver *sv, uint64_t cur, uint64_t mask, int n)
{
    if (wins_now(cur, mask)) return (C4_CELLS + 1 - n) / 2;
    int min = -(C4_CELLS - n) / 2, max = (C4_CELLS + 1 - n) / 2;
    while (min < max) {
        int med = min + (max - min) / 2;
        if (med <= 0 && min / 2 < med)
            med = min / 2;
        else if (med >= 0 && max / 2 > med)
            med = max / 2;
        int r = negamax(sv, cur, mask, n, med, med + 1);
        if (r <= med)
            max = r;
        else
            min = r;
    }
    return min;
}

/* Is the side to move's result better than `threshold` (> threshold)?
 * One null-window search around it. */
static bool score_above(c4_solver *sv, uint64_t cur, uint64_t mask, int n, int threshold)
{
    if (wins_now(cur, mask)) return (C4_CELLS + 1 - n) / 2 > threshold;
    return negamax(sv, cur, mask, n, threshold, threshold + 1) > threshold;
}

static int sign(int x)
{
    return (x > 0) - (x < 0);
}

/* The sign of the child's value from the mover's side, found with the
 * weakest test that decides whether it equals `value`. */
static bool keeps_value(c4_solver *sv, uint64_t cur, uint64_t mask, int n, int col, int value)
{
    uint64_t m = c4_playable(mask) & c4_column_mask(col);
    if (c4_has_four(cur | m)) return value == 1;
    if (n + 1 == C4_CELLS) return value == 0;
    uint64_t opp = cur ^ mask, cmask = mask | m;
    /* The child's side to move is the opponent: our value is minus its. */
    if (value == 1) return !score_above(sv, opp, cmask, n + 1, -1);
    if (value == 0) {
        /* One search with the window (-1, 1): a result of 0 is exact. */
        if (wins_now(opp, cmask)) return false;
        return negamax(sv, opp, cmask, n + 1, -1, 1) == 0;
    }
    return true; /* a lost position: no move can do better */
}

static zt_status solve(zt_solver *solver, const void *s, bool want_moves, zt_solution *out)
{
    c4_solver *sv = solver->impl;
    const c4_state state = c4_load(s), *st = &state;
    if (st->status != C4_ONGOING)
        return zt_fail(ZT_ERR_INVALID, "connect4 solver: the position is already over");
    sv->solves++;
    int n = st->plies;
    out->score = solve_score(sv, st->current, st->mask, n);
    out->value = sign(out->score);
    out->num_moves = 0;
    out->num_best = 0;
    if (!want_moves) return ZT_OK;
    for (int col = 0; col < C4_WIDTH; col++) {
        if (st->mask & c4_top_cell(col)) continue;
        if (keeps_value(sv, st->current, st->mask, n, col, out->value))
            out->moves[out->num_moves++] = (uint16_t)col;
    }
    return ZT_OK;
}

/* Pons' test-set line: "<moves> <score>", the score optional. */
static zt_status parse_line(zt_solver *solver, const char *line, zt_position *pos)
{
    const zt_game *g = solver->game;
    char moves[C4_CELLS + 2];
    size_t len = strcspn(line, " \t");
    if (len > C4_CELLS)
        return zt_fail(ZT_ERR_INVALID, "connect4: move string of %zu plies (at most %d)", len,
                       C4_CELLS);
    memcpy(moves, line, len);
    moves[len] = '\0';
    ZT_TRY(g->from_text(g, moves, pos->state));
    const char *rest = line + len;
    while (*rest == ' ' || *rest == '\t') rest++;
    if (*rest == '\0') return ZT_OK;
    char *end;
    long score = strtol(rest, &end, 10);
    while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n') end++;
    if (end == rest || *end != '\0' || score < -C4_CELLS / 2 || score > C4_CELLS / 2)
        return zt_fail(ZT_ERR_INVALID,
                       "connect4: bad score '%.30s%s' (expected an integer in [-21, 21])", rest,
                       strlen(rest) > 30 ? "..." : "");
    pos->has_score = pos->has_value = true;
    pos->expected.score = (int)score;
    pos->expected.value = sign((int)score);
    return ZT_OK;
}

static bool agrees(const zt_solution *expected, const zt_position *pos, const zt_solution *got)
{
    if (pos->has_score && got->score != expected->score) return false;
    if (pos->has_value && got->value != expected->value) return false;
    if (pos->has_moves) {
        if (got->num_moves != expected->num_moves) return false;
        for (int i = 0; i < got->num_moves; i++)
            if (got->moves[i] != expected->moves[i]) return false;
    }
    return true;
}

static void stats(zt_solver *solver, char *buf, size_t cap)
{
    c4_solver *sv = solver->impl;
    size_t used = 0, size = (size_t)1 << TT_BITS;
    for (size_t i = 0; i < size; i++) used += sv->table[i] != 0;
    snprintf(buf, cap, "connect4 solver: %llu nodes in %llu solves, table %.1f%% of %zu entries used",
             (unsigned long long)sv->nodes, (unsigned long long)sv->solves,
             100.0 * (double)used / (double)size, size);
}

static void solver_free(zt_solver *solver)
{
    c4_solver *sv = solver->impl;
    zt_aligned_free(sv->table);
    free(sv);
    free(solver);
}

zt_status zt_solver_new_connect4(const zt_game *g, zt_solver **out)
{
    *out = NULL;
    if (strcmp(g->name, "connect4") != 0)
        return zt_fail(ZT_ERR_INVALID, "connect4 solver given game %s", g->name);
    c4_solver *sv = zt_xcalloc(1, sizeof *sv);
    sv->table = zt_aligned_alloc(ZT_CACHE_LINE, sizeof(uint64_t) << TT_BITS);
    if (!sv->table) {
        free(sv);
        return zt_fail(ZT_ERR_NOMEM, "connect4 solver: cannot allocate its %zu MiB table",
                       (sizeof(uint64_t) << TT_BITS) >> 20);
    }
    zt_solver *s = zt_xcalloc(1, sizeof *s);
    s->game = g;
    s->impl = sv;
    s->solve = solve;
    s->parse_line = parse_line;
    s->agrees = agrees;
    s->stats = stats;
    s->free = solver_free;
    *out = s;
    return ZT_OK;
}
