/* Connect Four, 7 columns x 6 rows, on bitboards (see connect4.h). Player 0
 * moves first; action c drops a stone in column c (Pons' column c + 1).
 * Notation: Pons' move strings, one digit 1..7 per ply ("" = start). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/hash.h"
#include "game/connect4.h"
#include "game/solver.h"

/* ---- rules ---- */

static void reset(const zt_game *g, void *sv)
{
    memset(sv, 0, sizeof(c4_state));
}

/* The hot functions read and write single fields (see c4_load). */
static int current_player(const zt_game *g, const void *sv)
{
    const uint8_t *b = sv;
    return b[offsetof(c4_state, status)] != C4_ONGOING ? ZT_TERMINAL
                                                       : (b[offsetof(c4_state, plies)] & 1);
}

static int legal(const zt_game *g, const void *sv, uint16_t *actions)
{
    const uint8_t *b = sv;
    if (b[offsetof(c4_state, status)] != C4_ONGOING) return 0;
    uint64_t mask;
    memcpy(&mask, b + offsetof(c4_state, mask), sizeof mask);
    /* Branch-free: write every column, advance past the open ones. */
    uint64_t open = ~mask & C4_TOP;
    int n = 0;
    for (int c = 0; c < C4_WIDTH; c++) {
        actions[n] = (uint16_t)c;
        n += (int)((open >> (c * C4_COL_BITS + C4_HEIGHT - 1)) & 1);
    }
    return n;
}

static void apply(const zt_game *g, void *sv, int action)
{
    uint8_t *b = sv;
    uint64_t current, mask;
    memcpy(&current, b + offsetof(c4_state, current), sizeof current);
    memcpy(&mask, b + offsetof(c4_state, mask), sizeof mask);
    uint64_t move = (mask + c4_bottom_cell(action & 7)) & c4_column_mask(action & 7);
    ZT_ASSERT(((unsigned)action < C4_WIDTH) & (move != 0) &
              (b[offsetof(c4_state, status)] == C4_ONGOING));
    uint64_t mover = current | move;
    mask |= move;
    current = mover ^ mask; /* the opponent moves next */
    int plies = ++b[offsetof(c4_state, plies)];
    memcpy(b + offsetof(c4_state, current), &current, sizeof current);
    memcpy(b + offsetof(c4_state, mask), &mask, sizeof mask);
    /* Only the mover can have made a four, and only with this stone; the
     * whole-board test costs about as much as a local one. */
    if (c4_has_four(mover))
        b[offsetof(c4_state, status)] = C4_WON;
    else if (plies == C4_CELLS)
        b[offsetof(c4_state, status)] = C4_DRAW;
}

static int chance_outcomes(const zt_game *g, const void *s, int *outcomes, float *probs)
{
    return 0;
}

static void returns(const zt_game *g, const void *sv, float *r)
{
    const c4_state st = c4_load(sv), *s = &st;
    r[0] = r[1] = 0.0f;
    if (s->status == C4_WON) {
        int winner = (s->plies - 1) & 1;
        r[winner] = 1.0f;
        r[1 - winner] = -1.0f;
    }
}

/* Planes {6, 7, 3}, row 0 at the top: the mover's stones, the opponent's,
 * and a constant 1 (marks the board edge under zero padding). */
static void observe(const zt_game *g, const void *sv, float *obs)
{
    const c4_state st = c4_load(sv), *s = &st;
    uint64_t opp = s->current ^ s->mask;
    for (int h = 0; h < C4_HEIGHT; h++) {
        int row = C4_HEIGHT - 1 - h;
        for (int c = 0; c < C4_WIDTH; c++) {
            int bit = c * C4_COL_BITS + row;
            float *o = obs + (h * C4_WIDTH + c) * 3;
            o[0] = (float)((s->current >> bit) & 1);
            o[1] = (float)((opp >> bit) & 1);
            o[2] = 1.0f;
        }
    }
}

static uint64_t hash(const zt_game *g, const void *sv)
{
    const c4_state st = c4_load(sv), *s = &st;
    /* The key is unique per position and the side to move is the parity of
     * its stone count, so a bijective mix of it is a collision-free hash. */
    return zt_hash_mix(c4_key(s->current, s->mask) ^ 0x6334c4c4ULL);
}

static uint64_t mirror(uint64_t b)
{
    uint64_t r = 0;
    for (int c = 0; c < C4_WIDTH; c++)
        r |= ((b >> (c * C4_COL_BITS)) & 0x7f) << ((C4_WIDTH - 1 - c) * C4_COL_BITS);
    return r;
}

static void sym_state(const zt_game *g, int sym, const void *sv, void *outv)
{
    const c4_state st = c4_load(sv), *s = &st;
    c4_state t = *s;
    if (sym == 1) {
        t.current = mirror(s->current);
        t.mask = mirror(s->mask);
    }
    c4_store(outv, &t);
}

static int sym_action(const zt_game *g, int sym, int action)
{
    return sym == 1 ? C4_WIDTH - 1 - action : action;
}

/* ---- reachability: a move order that builds a position ----
 * A position is legal when some alternating, gravity-respecting order of its
 * stones builds it without a four before the last stone. Fours are monotone
 * (a subset of stones without a four has none), so only the last move needs
 * the four test; the rest is a search over column heights, memoised on the
 * height vector (7^7 codes) when a cheap unmemoised search runs too long. */

typedef struct order_search {
    uint64_t first;       /* player 0's stones */
    int8_t target[C4_WIDTH];
    int8_t h[C4_WIDTH];
    int total;            /* stones to place */
    uint8_t *seq;         /* columns, in order */
    long budget;          /* nodes left before giving up (unmemoised) */
    uint8_t *failed;      /* bitset over height codes, or NULL */
} order_search;

#define C4_HEIGHT_CODES 823543 /* 7^7 */

static const uint32_t pow7[C4_WIDTH] = {1, 7, 49, 343, 2401, 16807, 117649};

/* 1 found, 0 impossible from here, -1 out of budget. */
static int order_dfs(order_search *x, int ply, uint32_t code)
{
    if (ply == x->total) return 1;
    if (x->failed && (x->failed[code >> 3] >> (code & 7) & 1)) return 0;
    if (!x->failed && x->budget-- <= 0) return -1;
    uint64_t want_first = (ply & 1) == 0;
    for (int c = 0; c < C4_WIDTH; c++) {
        if (x->h[c] >= x->target[c]) continue;
        if (((x->first >> (c * C4_COL_BITS + x->h[c])) & 1) != want_first) continue;
        x->seq[ply] = (uint8_t)c;
        x->h[c]++;
        int r = order_dfs(x, ply + 1, code + pow7[c]);
        x->h[c]--;
        if (r != 0) return r;
    }
    if (x->failed) x->failed[code >> 3] |= (uint8_t)(1u << (code & 7));
    return 0;
}

static bool order_stones(order_search *x)
{
    memset(x->h, 0, sizeof x->h);
    x->budget = 20000;
    x->failed = NULL;
    int r = order_dfs(x, 0, 0);
    if (r >= 0) return r == 1;
    /* Rare: positions whose orders are hard to find (or unreachable ones
     * that the cheap search could not rule out). */
    x->failed = zt_xcalloc(C4_HEIGHT_CODES / 8 + 1, 1);
    r = order_dfs(x, 0, 0);
    free(x->failed);
    x->failed = NULL;
    return r == 1;
}

/* Fills seq[0..plies-1] with columns that build (current, mask) from the
 * start; false if no legal game reaches it. */
static bool find_move_order(uint64_t current, uint64_t mask, uint8_t *seq)
{
    int plies = c4_popcount(mask);
    if (plies == 0) return true;
    uint64_t moved = current ^ mask; /* the stones of the player who moved last */
    if (c4_has_four(current)) return false;
    order_search x = {.first = (plies & 1) ? moved : current, .total = plies, .seq = seq};
    for (int c = 0; c < C4_WIDTH; c++) x.target[c] = (int8_t)c4_popcount(mask & c4_column_mask(c));
    if (!c4_has_four(moved)) return order_stones(&x);
    /* The game ended with the last stone: it must be a top stone of the
     * winner whose removal leaves no four. */
    x.total = plies - 1;
    for (int c = 0; c < C4_WIDTH; c++) {
        if (x.target[c] == 0) continue;
        uint64_t top = 1ULL << (c * C4_COL_BITS + x.target[c] - 1);
        if (!(moved & top) || c4_has_four(moved ^ top)) continue;
        x.target[c]--;
        bool ok = order_stones(&x);
        x.target[c]++;
        if (ok) {
            seq[plies - 1] = (uint8_t)c;
            return true;
        }
    }
    return false;
}

/* Rebuilds the state from a position, checking it: every column code
 * well formed, stone counts alternating, reachable by a legal game. */
static bool state_from_key(uint64_t key, c4_state *s)
{
    memset(s, 0, sizeof *s);
    if (key >> (C4_WIDTH * C4_COL_BITS)) return false;
    uint64_t current = 0, mask = 0;
    for (int c = 0; c < C4_WIDTH; c++) {
        uint64_t col = (key >> (c * C4_COL_BITS)) & 0x7f;
        if (col == 0) return false; /* no height marker */
        int height = 63 - __builtin_clzll(col);
        current |= (col ^ (1ULL << height)) << (c * C4_COL_BITS);
        mask |= ((1ULL << height) - 1) << (c * C4_COL_BITS);
    }
    int plies = c4_popcount(mask);
    if (c4_popcount(current) != plies / 2) return false;
    uint8_t seq[C4_CELLS];
    if (!find_move_order(current, mask, seq)) return false;
    s->current = current;
    s->mask = mask;
    s->plies = (uint8_t)plies;
    if (c4_has_four(current ^ mask))
        s->status = C4_WON;
    else if (plies == C4_CELLS)
        s->status = C4_DRAW;
    return true;
}

/* ---- encodings ---- */

static void encode(const zt_game *g, const void *sv, uint8_t *out)
{
    const c4_state st = c4_load(sv), *s = &st;
    uint64_t key = c4_key(s->current, s->mask);
    for (int i = 0; i < 8; i++) out[i] = (uint8_t)(key >> (8 * i));
}

static zt_status decode(const zt_game *g, const uint8_t *in, void *sv)
{
    uint64_t key = 0;
    for (int i = 0; i < 8; i++) key |= (uint64_t)in[i] << (8 * i);
    c4_state s;
    bool ok = state_from_key(key, &s);
    c4_store(sv, &s); /* the start position when refused */
    if (!ok) {
        return zt_fail(ZT_ERR_CORRUPT, "connect4: bytes %016llx are not a reachable position",
                       (unsigned long long)key);
    }
    return ZT_OK;
}

static void to_text(const zt_game *g, const void *sv, char *buf, size_t cap)
{
    const c4_state st = c4_load(sv), *s = &st;
    uint8_t seq[C4_CELLS];
    bool ok = find_move_order(s->current, s->mask, seq);
    ZT_ASSERT(ok); /* every state is built by apply, decode or from_text */
    size_t n = 0;
    for (int i = 0; i < s->plies && n + 1 < cap; i++) buf[n++] = (char)('1' + seq[i]);
    if (cap) buf[n < cap ? n : cap - 1] = '\0';
}

static void describe_char(char ch, char *buf, size_t cap)
{
    if (ch > ' ' && ch < 127)
        snprintf(buf, cap, "'%c'", ch);
    else
        snprintf(buf, cap, "byte 0x%02x", (unsigned char)ch);
}

static zt_status from_text(const zt_game *g, const char *text, void *sv)
{
    /* Built in a local (the caller's buffer has no alignment promise) and
     * written back as the start position on error. */
    c4_state st, *s = &st;
    reset(g, s);
    for (int i = 0; text[i]; i++) {
        char what[16];
        describe_char(text[i], what, sizeof what);
        if (text[i] < '1' || text[i] > '7') {
            reset(g, s);
            c4_store(sv, s);
            return zt_fail(ZT_ERR_INVALID, "connect4: move %d is %s, expected a column 1..7", i + 1,
                           what);
        }
        int col = text[i] - '1';
        if (s->status != C4_ONGOING) {
            reset(g, s);
            c4_store(sv, s);
            return zt_fail(ZT_ERR_INVALID, "connect4: move %d (%s) comes after the game ended", i + 1,
                           what);
        }
        if (s->mask & c4_top_cell(col)) {
            reset(g, s);
            c4_store(sv, s);
            return zt_fail(ZT_ERR_INVALID, "connect4: move %d (%s): column %d is full", i + 1, what,
                           col + 1);
        }
        apply(g, s, col);
    }
    c4_store(sv, s);
    return ZT_OK;
}

static void render(const zt_game *g, const void *sv, char *buf, size_t cap)
{
    const c4_state st = c4_load(sv), *s = &st;
    /* X is player 0 (first to move), O player 1. */
    uint64_t first = (s->plies & 1) ? s->current ^ s->mask : s->current;
    size_t n = 0;
    n += (size_t)snprintf(buf + n, n < cap ? cap - n : 0, " 1 2 3 4 5 6 7\n");
    for (int row = C4_HEIGHT - 1; row >= 0; row--) {
        char line[2 * C4_WIDTH + 2];
        for (int c = 0; c < C4_WIDTH; c++) {
            uint64_t bit = 1ULL << (c * C4_COL_BITS + row);
            line[2 * c] = ' ';
            line[2 * c + 1] = !(s->mask & bit) ? '.' : (first & bit) ? 'X' : 'O';
        }
        line[2 * C4_WIDTH] = '\0';
        n += (size_t)snprintf(buf + n, n < cap ? cap - n : 0, "%s\n", line);
    }
    if (s->status == C4_WON)
        snprintf(buf + n, n < cap ? cap - n : 0, "%c wins\n", ((s->plies - 1) & 1) ? 'O' : 'X');
    else if (s->status == C4_DRAW)
        snprintf(buf + n, n < cap ? cap - n : 0, "draw\n");
    else
        snprintf(buf + n, n < cap ? cap - n : 0, "%c to move\n", (s->plies & 1) ? 'O' : 'X');
}

static void action_to_text(const zt_game *g, const void *s, int action, char *buf, size_t cap)
{
    snprintf(buf, cap, "%d", action + 1);
}

static zt_status action_from_text(const zt_game *g, const void *sv, const char *text, int *action)
{
    const c4_state st = c4_load(sv), *s = &st;
    if (!(text[0] >= '1' && text[0] <= '7' && text[1] == '\0'))
        return zt_fail(ZT_ERR_INVALID, "connect4: '%s' is not a column 1..7", text);
    int col = text[0] - '1';
    if (s->status != C4_ONGOING) return zt_fail(ZT_ERR_INVALID, "connect4: the game is over");
    if (s->mask & c4_top_cell(col))
        return zt_fail(ZT_ERR_INVALID, "connect4: column %d is full", col + 1);
    *action = col;
    return ZT_OK;
}

static zt_status create(zt_config *cfg, zt_game *g)
{
    g->name = "connect4";
    snprintf(g->title, sizeof g->title, "connect4 7x6");
    g->state_size = sizeof(c4_state);
    g->num_actions = C4_WIDTH;
    g->max_chance_outcomes = 0;
    g->max_game_length = C4_CELLS;
    g->max_return = 1.0f;
    g->obs_kind = ZT_OBS_PLANES;
    g->obs_shape[0] = C4_HEIGHT;
    g->obs_shape[1] = C4_WIDTH;
    g->obs_shape[2] = 3;
    g->compact_size = 8;
    g->num_symmetries = 2;
    g->impl = NULL;
    g->reset = reset;
    g->current_player = current_player;
    g->legal = legal;
    g->apply = apply;
    g->chance_outcomes = chance_outcomes;
    g->returns = returns;
    g->observe = observe;
    g->encode = encode;
    g->decode = decode;
    g->sym_state = sym_state;
    g->sym_action = sym_action;
    g->hash = hash;
    g->to_text = to_text;
    g->from_text = from_text;
    g->render = render;
    g->action_to_text = action_to_text;
    g->action_from_text = action_from_text;
    g->destroy = NULL;
    return ZT_OK;
}

/* Pascal Pons' test sets (middle game and end game, easy), and ours made
 * his way by `zeroth positions` (tests/data/README.md): medium opening and
 * middle-game positions and hard opening ones, where a net that plays
 * Pons' easy sets well still errs. All quoted as mistakes. */
static const zt_position_set c4_sets[] = {
    {"connect4/Test_L2_R1", ZT_JUDGE_MISTAKES},
    {"connect4/Test_L3_R1", ZT_JUDGE_MISTAKES},
    {"connect4/middle_medium", ZT_JUDGE_MISTAKES},
    {"connect4/opening_medium", ZT_JUDGE_MISTAKES},
    {"connect4/opening_hard", ZT_JUDGE_MISTAKES},
};

static int c4_position_sets(const zt_game *g, const zt_position_set **sets)
{
    (void)g;
    *sets = c4_sets;
    return (int)(sizeof c4_sets / sizeof c4_sets[0]);
}

static const zt_baseline c4_baselines[] = {
    {"alphabeta", true, zt_player_new_alphabeta_connect4},
    {NULL, false, NULL},
};

const zt_game_def zt_game_connect4 = {
    .name = "connect4",
    .summary = "Connect Four, 7x6; moves are columns 1..7 (Pons notation); exact solver",
    .create = create,
    .solver = zt_solver_new_connect4,
    .position_sets = c4_position_sets,
    .baselines = c4_baselines,
    /* Each Pons set has 1000 positions, ours 300; 200 of each keep an
     * arena to seconds. */
    .arena_opponents = "random,alphabeta:6",
    .arena_positions_limit = 200,
};
