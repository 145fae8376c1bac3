/* Connect Four strong solver: the exact Pons score of a position (0 draw,
 * +-(22 - k) where k is the winner's stone count at its winning move).
 * Negamax with alpha-beta on bitboards after Pascal Pons' tutorial
 * ("Solving Connect 4", blog.gamesolver.org): scores bounded by the moves
 * left, null-window searches bisecting the score range, a transposition table
 * of bounds, centre-first ordering refined by the threats a move creates, and
 * pruning of moves that let the opponent win at once. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "game/connect4.h"
#include "game/solver.h"

/* 2^23 entries of 8 bytes (64 MiB), allocated once with the solver; an entry
 * is the full 49-bit key, the table's generation in the next 7 bits and one
 * bound in the top byte, 0 when empty. forget() moves to a new generation,
 * which makes every older entry a miss without touching the table; the
 * table is cleared only when the 7 bits wrap. */
#define TT_BITS 23
#define TT_KEY_MASK ((1ULL << 49) - 1)
#define TT_GEN_SHIFT 49
#define TT_GEN_MAX 127u
#define TT_MATCH_MASK ((1ULL << 56) - 1) /* key and generation */
#define TT_LOWER 0x80u /* the stored score is a lower bound (else upper) */
#define TT_OFFSET 32   /* scores lie in [-21, 21] */

typedef struct c4_solver {
    uint64_t *table;
    uint64_t gen; /* 1..TT_GEN_MAX, shifted into place by tt_tag */
    uint64_t nodes;
    uint64_t solves;
    uint64_t limit; /* nodes (of the running total) at which a solve stops; 0 none */
    bool cut;       /* the running solve passed `limit`: unwind, store nothing */
} c4_solver;

static const int column_order[C4_WIDTH] = {3, 2, 4, 1, 5, 0, 6};

static inline size_t tt_index(uint64_t key)
{
    return (size_t)((key * 0x9e3779b97f4a7c15ULL) >> (64 - TT_BITS));
}

static inline void tt_store(c4_solver *sv, uint64_t key, int score, bool lower)
{
    uint64_t tag = (uint64_t)(score + TT_OFFSET) | (lower ? TT_LOWER : 0);
    sv->table[tt_index(key)] = key | sv->gen << TT_GEN_SHIFT | tag << 56;
}

/* Score of the side to move in (cur, mask) after n plies, within the window
 * (alpha, beta) in the fail-soft sense: a result <= alpha is an upper bound,
 * >= beta a lower bound, else exact. The side to move must not be able to
 * win with its next stone (the caller checks). */
static int negamax(c4_solver *sv, uint64_t cur, uint64_t mask, int n, int alpha, int beta)
{
    if (++sv->nodes == sv->limit) sv->cut = true;
    if (sv->cut) return 0; /* unwinding: the caller ignores every result */
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
    if ((e & TT_MATCH_MASK) == (key | sv->gen << TT_GEN_SHIFT)) {
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
        if (sv->cut) return 0;
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
    uint64_t start = sv->nodes;
    sv->limit = solver->node_limit ? start + solver->node_limit + 1 : 0;
    sv->cut = false;
    out->num_moves = 0;
    out->num_best = 0;
    out->cut = false;
    out->score = solve_score(sv, st->current, st->mask, n);
    out->value = sign(out->score);
    for (int col = 0; want_moves && !sv->cut && col < C4_WIDTH; col++) {
        if (st->mask & c4_top_cell(col)) continue;
        if (keeps_value(sv, st->current, st->mask, n, col, out->value))
            out->moves[out->num_moves++] = (uint16_t)col;
    }
    out->nodes = sv->nodes - start;
    if (sv->cut) {
        /* Bounds stored before the cut are sound, but the solve's own are
         * not all stored: nothing is wrong in the table, it is kept. */
        out->cut = true;
        out->nodes = solver->node_limit;
        out->score = out->value = out->num_moves = 0;
    }
    sv->limit = 0;
    sv->cut = false;
    return ZT_OK;
}

static void forget(zt_solver *solver)
{
    c4_solver *sv = solver->impl;
    if (++sv->gen > TT_GEN_MAX) {
        memset(sv->table, 0, sizeof(uint64_t) << TT_BITS);
        sv->gen = 1;
    }
}

/* Pascal Pons' levels of his test sets by plies played: L1 (opening) up to
 * 14, L2 (middle) up to 28, L3 (end) beyond (his Test_L2_R1 holds 15..28,
 * Test_L3_R1 29..41). */
static int depth_band(int plies)
{
    return plies <= 14 ? ZT_BAND_OPENING : plies <= 28 ? ZT_BAND_MIDDLE : ZT_BAND_END;
}

/* The optional third field: the value-preserving columns, 1..7 increasing
 * ("345"), which spares a reader the solve of the position's children. */
static zt_status parse_moves(zt_field f, const void *state, zt_position *pos)
{
    const c4_state st = c4_load(state);
    int last = -1;
    pos->expected.num_moves = 0;
    for (size_t i = 0; i < f.len; i++) {
        int col = f.text[i] - '1';
        if (col < 0 || col >= C4_WIDTH || col <= last)
            return zt_fail(ZT_ERR_INVALID,
                           "connect4: bad value-preserving moves '%.*s' (columns 1..7, "
                           "increasing)",
                           (int)(f.len < 30 ? f.len : 30), f.text);
        if (st.mask & c4_top_cell(col))
            return zt_fail(ZT_ERR_INVALID, "connect4: value-preserving move %d is a full column",
                           col + 1);
        pos->expected.moves[pos->expected.num_moves++] = (uint16_t)col;
        last = col;
    }
    pos->has_moves = true;
    return ZT_OK;
}

/* Pons' test-set line: "<moves> <score>", the score optional; our own sets
 * (zeroth positions) add the value-preserving columns: "<moves> <score>
 * <columns>". */
static zt_status parse_line(zt_solver *solver, const char *line, zt_position *pos)
{
    const zt_game *g = solver->game;
    zt_field f[3];
    int nf = zt_fields_split(line, f, 3);
    if (nf > 3)
        return zt_fail(ZT_ERR_INVALID,
                       "connect4: more than three fields (expected '<moves> [<score> [<columns>]]')");
    char moves[C4_CELLS + 2];
    size_t len = nf > 0 ? f[0].len : 0;
    if (len > C4_CELLS)
        return zt_fail(ZT_ERR_INVALID, "connect4: move string of %zu plies (at most %d)", len,
                       C4_CELLS);
    memcpy(moves, nf > 0 ? f[0].text : "", len);
    moves[len] = '\0';
    ZT_TRY(g->from_text(g, moves, pos->state));
    pos->has_band = true;
    pos->band = depth_band((int)len);
    if (nf < 2) return ZT_OK;
    char text[16], *end;
    long score = LONG_MAX;
    if (f[1].len < sizeof text) {
        memcpy(text, f[1].text, f[1].len);
        text[f[1].len] = '\0';
        score = strtol(text, &end, 10);
        if (end == text || *end != '\0') score = LONG_MAX;
    }
    if (score < -C4_CELLS / 2 || score > C4_CELLS / 2)
        return zt_fail(ZT_ERR_INVALID,
                       "connect4: bad score '%.*s%s' (expected an integer in [-21, 21])",
                       (int)(f[1].len < 30 ? f[1].len : 30), f[1].text, f[1].len > 30 ? "..." : "");
    pos->has_score = pos->has_value = true;
    pos->expected.score = (int)score;
    pos->expected.value = sign((int)score);
    if (nf == 3) ZT_TRY(parse_moves(f[2], pos->state, pos));
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
    s->forget = forget;
    sv->gen = 1;
    *out = s;
    return ZT_OK;
}
