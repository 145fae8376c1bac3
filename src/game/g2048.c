/* 2048 (Gabriele Cirulli, 2014): one player slides the tiles of a 4x4 board
 * up, right, down or left; equal tiles that meet merge into their sum, which
 * the move scores; then a tile spawns in a uniformly chosen empty cell, a 2
 * with probability 0.9 or a 4 with 0.1 (a chance node). The game opens with
 * two spawns and ends when no move changes the board.
 *
 * The board is 16 nibbles of log2 tile values in one uint64 (cell i,
 * row-major from the top left, at bits 4i..4i+3; 0 empty), so a nibble holds
 * tiles up to 32768 = 2^15: two 32768 tiles do not merge. (A 65536 tile
 * needs about 30,000 moves of near-perfect play; no engine is known to have
 * made one in ordinary play.) A row is 16 bits, and a move of any direction
 * is four lookups in a 65536-entry table of row results, after transposing
 * the board for up and down.
 *
 * Outcome ids at a chance node: 2 * cell + (1 for a 4, 0 for a 2). */
#include "game/g2048.h"

#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "game/game.h"

enum { CELLS = 16, OUTCOMES = 32, MAX_RANK = 15, G2048_ZOBRIST = 0x2048 };

/* Longest game self-play keeps: every move adds 2 or 4 to the tile sum,
 * which 16 tiles of at most 32768 bound, but games past 16384 moves (a
 * score near 300,000) are beyond any player here. */
#define G2048_MAX_MOVES 16384

typedef struct g2048_state {
    uint64_t board;
    uint32_t score;  /* points banked: the sum of all tiles merged so far */
    uint8_t pending; /* spawns due before the next move: 2 at the start, 1 after a move */
    uint8_t over;    /* no spawn pending and no move changes the board */
    uint8_t pad[2];  /* zero, so memcmp compares positions */
} g2048_state;

/* ---- rows and moves ---- */

/* row_left[r]: row r (cell 0 in the low nibble) slid toward cell 0 with
 * merges, points_left[r] what that scores; row_right and points_right the
 * same toward cell 3 ([2,2,2,0] right gives [0,0,2,4], left [4,2,0,0]: the
 * pairs that merge depend on the direction). */
static uint16_t row_left[65536], row_right[65536];
static uint32_t points_left[65536], points_right[65536];
/* The cells with column - row = d, for the transpose. */
static uint64_t diag_mask[7];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

/* Slides the 4 ranks in line[] toward index 0: each tile merges at most
 * once, with the first equal tile it meets; returns the points. */
static uint32_t slide(uint8_t line[4])
{
    uint8_t out[4] = {0, 0, 0, 0};
    uint32_t points = 0;
    int n = 0;
    bool can_merge = false; /* out[n-1] was not made by a merge */
    for (int i = 0; i < 4; i++) {
        if (!line[i]) continue;
        if (can_merge && out[n - 1] == line[i] && line[i] < MAX_RANK) {
            out[n - 1]++;
            points += 1u << out[n - 1];
            can_merge = false;
        } else {
            out[n++] = line[i];
            can_merge = true;
        }
    }
    memcpy(line, out, 4);
    return points;
}

static uint16_t pack_row(const uint8_t c[4])
{
    return (uint16_t)(c[0] | c[1] << 4 | c[2] << 8 | c[3] << 12);
}

static void build_tables(void)
{
    for (int r = 0; r < 65536; r++) {
        uint8_t c[4], rev[4];
        for (int i = 0; i < 4; i++) c[i] = (uint8_t)((r >> (4 * i)) & 15);
        for (int i = 0; i < 4; i++) rev[i] = c[3 - i];
        points_left[r] = slide(c);
        row_left[r] = pack_row(c);
        points_right[r] = slide(rev);
        uint8_t back[4] = {rev[3], rev[2], rev[1], rev[0]};
        row_right[r] = pack_row(back);
    }
    for (int i = 0; i < CELLS; i++) diag_mask[(i & 3) - (i >> 2) + 3] |= 15ull << (4 * i);
}

/* Cell (r, c) to (c, r): the cells with c - r = d move by 12 d bits. */
static uint64_t transpose(uint64_t b)
{
    uint64_t t = b & diag_mask[3];
    for (int d = 1; d <= 3; d++) {
        t |= (b & diag_mask[3 + d]) << (12 * d);
        t |= (b & diag_mask[3 - d]) >> (12 * d);
    }
    return t;
}

/* Slides every row left (toward column 0) or right. */
static uint64_t rows_move(uint64_t b, bool left, uint32_t *points)
{
    uint64_t out = 0;
    uint32_t p = 0;
    for (int r = 0; r < 4; r++) {
        uint16_t row = (uint16_t)(b >> (16 * r));
        out |= (uint64_t)(left ? row_left[row] : row_right[row]) << (16 * r);
        p += left ? points_left[row] : points_right[row];
    }
    *points = p;
    return out;
}

uint64_t zt_g2048_move(uint64_t board, int action, uint32_t *reward)
{
    pthread_once(&tables_once, build_tables);
    uint32_t p = 0;
    uint64_t out;
    switch (action) {
    case ZT_G2048_LEFT: out = rows_move(board, true, &p); break;
    case ZT_G2048_RIGHT: out = rows_move(board, false, &p); break;
    /* columns are rows of the transpose; up is toward row 0 */
    case ZT_G2048_UP: out = transpose(rows_move(transpose(board), true, &p)); break;
    case ZT_G2048_DOWN: out = transpose(rows_move(transpose(board), false, &p)); break;
    default: ZT_ASSERT(!"2048: action out of range"); out = board;
    }
    if (reward) *reward = p;
    return out;
}

static inline int rank_at(uint64_t b, int cell)
{
    return (int)((b >> (4 * cell)) & 15);
}

static int empty_cells(uint64_t b)
{
    int n = 0;
    for (int i = 0; i < CELLS; i++) n += rank_at(b, i) == 0;
    return n;
}

static bool can_move(uint64_t b)
{
    for (int a = 0; a < 4; a++)
        if (zt_g2048_move(b, a, NULL) != b) return true;
    return false;
}

/* ---- the interface ---- */

static void g_reset(const zt_game *g, void *vs)
{
    (void)g;
    g2048_state *s = vs;
    memset(s, 0, sizeof *s);
    s->pending = 2;
}

static int g_current_player(const zt_game *g, const void *vs)
{
    (void)g;
    const g2048_state *s = vs;
    if (s->pending) return ZT_CHANCE;
    return s->over ? ZT_TERMINAL : 0;
}

static int g_legal(const zt_game *g, const void *vs, uint16_t *actions)
{
    (void)g;
    const g2048_state *s = vs;
    int n = 0;
    if (s->pending || s->over) return 0;
    for (int a = 0; a < 4; a++)
        if (zt_g2048_move(s->board, a, NULL) != s->board) actions[n++] = (uint16_t)a;
    return n;
}

static void g_apply(const zt_game *g, void *vs, int action)
{
    (void)g;
    g2048_state *s = vs;
    if (s->pending) {
        int cell = action >> 1;
        ZT_ASSERT(action >= 0 && action < OUTCOMES && rank_at(s->board, cell) == 0);
        s->board |= (uint64_t)(1 + (action & 1)) << (4 * cell);
        s->pending--;
        s->over = s->pending == 0 && !can_move(s->board);
        return;
    }
    ZT_ASSERT(!s->over && action >= 0 && action < 4);
    uint32_t points;
    uint64_t next = zt_g2048_move(s->board, action, &points);
    ZT_ASSERT(next != s->board); /* only moves that change the board are legal */
    s->board = next;
    s->score += points;
    s->pending = 1;
}

static int g_chance_outcomes(const zt_game *g, const void *vs, int *outcomes, float *probs)
{
    (void)g;
    const g2048_state *s = vs;
    int k = empty_cells(s->board), n = 0;
    if (!s->pending || k == 0) return 0;
    for (int cell = 0; cell < CELLS; cell++) {
        if (rank_at(s->board, cell)) continue;
        outcomes[n] = 2 * cell;
        probs[n++] = 0.9f / (float)k;
        outcomes[n] = 2 * cell + 1;
        probs[n++] = 0.1f / (float)k;
    }
    return n;
}

static void g_returns(const zt_game *g, const void *vs, float *r)
{
    (void)g;
    const g2048_state *s = vs;
    r[0] = (float)s->score;
    r[1] = 0.0f;
}

/* One-hot of the rank per cell: channel 0 empty, channel k a 2^k tile. */
static void g_observe(const zt_game *g, const void *vs, float *obs)
{
    (void)g;
    const g2048_state *s = vs;
    memset(obs, 0, CELLS * 16 * sizeof *obs);
    for (int i = 0; i < CELLS; i++) obs[i * 16 + rank_at(s->board, i)] = 1.0f;
}

/* Compact: the board (8 bytes), the score (4), pending (1), little-endian.
 * `over` follows from the board. */
static void g_encode(const zt_game *g, const void *vs, uint8_t *out)
{
    (void)g;
    const g2048_state *s = vs;
    for (int i = 0; i < 8; i++) out[i] = (uint8_t)(s->board >> (8 * i));
    for (int i = 0; i < 4; i++) out[8 + i] = (uint8_t)(s->score >> (8 * i));
    out[12] = s->pending;
}

/* Checks that (board, score, pending) can be a position and fills s. */
static zt_status set_state(uint64_t board, uint32_t score, int pending, g2048_state *s)
{
    int empty = empty_cells(board);
    if (pending < 0 || pending > 2)
        return zt_fail(ZT_ERR_INVALID, "2048: %d spawns pending (0, 1 or 2)", pending);
    if (pending == 2 && (board != 0 || score != 0))
        return zt_fail(ZT_ERR_INVALID, "2048: two spawns pending on a board that is not empty");
    if (pending == 1 && empty == 0)
        return zt_fail(ZT_ERR_INVALID, "2048: a spawn pending on a full board");
    /* one spawn pending follows a move (which leaves a tile) or the first of
     * the two opening spawns: never on an empty board (that is spawn2) */
    if (pending == 1 && empty == CELLS)
        return zt_fail(ZT_ERR_INVALID, "2048: one spawn pending on an empty board (the start is "
                                       "'spawn2')");
    if (pending == 0 && empty > 14)
        return zt_fail(ZT_ERR_INVALID, "2048: a board to move on holds %d tiles (at least 2)",
                       CELLS - empty);
    if (score & 3u)
        return zt_fail(ZT_ERR_INVALID, "2048: score %u is not a multiple of 4 (each merge scores 4 or more)",
                       score);
    memset(s, 0, sizeof *s);
    s->board = board;
    s->score = score;
    s->pending = (uint8_t)pending;
    s->over = pending == 0 && !can_move(board);
    return ZT_OK;
}

static zt_status g_decode(const zt_game *g, const uint8_t *in, void *vs)
{
    (void)g;
    uint64_t board = 0;
    uint32_t score = 0;
    for (int i = 0; i < 8; i++) board |= (uint64_t)in[i] << (8 * i);
    for (int i = 0; i < 4; i++) score |= (uint32_t)in[8 + i] << (8 * i);
    g2048_state s;
    zt_status st = set_state(board, score, in[12], &s);
    if (st != ZT_OK) return zt_fail(ZT_ERR_CORRUPT, "%s", zt_error_message());
    memcpy(vs, &s, sizeof s);
    return ZT_OK;
}

/* The 8 symmetries of the square: cell (r, c) goes to sym_cell(k, r, c). */
static int sym_cell(int k, int r, int c)
{
    int nr, nc;
    switch (k) {
    case 0: nr = r, nc = c; break;
    case 1: nr = c, nc = 3 - r; break;         /* rotate 90 degrees clockwise */
    case 2: nr = 3 - r, nc = 3 - c; break;     /* rotate 180 */
    case 3: nr = 3 - c, nc = r; break;         /* rotate 90 degrees anticlockwise */
    case 4: nr = r, nc = 3 - c; break;         /* mirror left-right */
    case 5: nr = 3 - r, nc = c; break;         /* mirror top-bottom */
    case 6: nr = c, nc = r; break;             /* transpose */
    default: nr = 3 - c, nc = 3 - r; break;    /* anti-transpose */
    }
    return 4 * nr + nc;
}

static void g_sym_state(const zt_game *g, int sym, const void *vs, void *vout)
{
    (void)g;
    const g2048_state *s = vs;
    g2048_state out = *s;
    out.board = 0;
    for (int i = 0; i < CELLS; i++)
        out.board |= (uint64_t)rank_at(s->board, i) << (4 * sym_cell(sym, i >> 2, i & 3));
    memcpy(vout, &out, sizeof out);
}

/* A direction maps as the board does: the image of a step from cell (1, 1)
 * along it. Outcome ids map with their cell. */
static int g_sym_action(const zt_game *g, int sym, int action)
{
    (void)g;
    static const int dr[4] = {-1, 0, 1, 0}, dc[4] = {0, 1, 0, -1};
    if (action >= 4) return 2 * sym_cell(sym, (action >> 1) >> 2, (action >> 1) & 3) + (action & 1);
    int from = sym_cell(sym, 1, 1), to = sym_cell(sym, 1 + dr[action], 1 + dc[action]);
    int ddr = (to >> 2) - (from >> 2), ddc = (to & 3) - (from & 3);
    for (int a = 0; a < 4; a++)
        if (dr[a] == ddr && dc[a] == ddc) return a;
    ZT_ASSERT(!"2048: a symmetry maps no direction");
    return 0;
}

/* The score is not in the key: what follows a position does not depend on
 * it (the NN cache and transpositions share values across scores). */
static uint64_t g_hash(const zt_game *g, const void *vs)
{
    (void)g;
    const g2048_state *s = vs;
    return zt_hash_mix(s->board ^ zt_zobrist(G2048_ZOBRIST, s->pending));
}

static const char *const pending_words[3] = {"move", "spawn", "spawn2"};

/* Notation: four rows top to bottom separated by '/', each four tile values
 * separated by ',' (0 for an empty cell), then the score and what comes
 * next: "move" (the player's turn, or the end if no move changes the board),
 * "spawn" (a tile spawns first) or "spawn2" (the start: two spawns).
 * "2,0,0,0/0,0,4,0/0,0,0,0/0,0,0,2 0 move". */
static void g_to_text(const zt_game *g, const void *vs, char *buf, size_t cap)
{
    (void)g;
    const g2048_state *s = vs;
    char out[160];
    int len = 0;
    for (int i = 0; i < CELLS; i++) {
        int k = rank_at(s->board, i);
        len += snprintf(out + len, sizeof out - (size_t)len, "%u%s", k ? 1u << k : 0u,
                        i == 15 ? "" : (i & 3) == 3 ? "/" : ",");
    }
    snprintf(out + len, sizeof out - (size_t)len, " %u %s", s->score, pending_words[s->pending]);
    snprintf(buf, cap, "%s", out);
}

static zt_status g_from_text(const zt_game *g, const char *text, void *vs)
{
    (void)g;
    const char *p = text;
    uint64_t board = 0;
    while (*p == ' ' || *p == '\t') p++;
    for (int i = 0; i < CELLS; i++) {
        if (!isdigit((unsigned char)*p))
            return zt_fail(ZT_ERR_INVALID, "2048: expected the value of cell %d (row %d), got '%.12s'",
                           i, i / 4 + 1, p);
        unsigned long v = 0;
        while (isdigit((unsigned char)*p) && v < 1000000) v = v * 10 + (unsigned long)(*p++ - '0');
        int k = 0;
        if (v != 0) {
            while (k <= MAX_RANK && (1ul << k) != v) k++;
            if (k < 1 || k > MAX_RANK)
                return zt_fail(ZT_ERR_INVALID, "2048: cell %d holds %lu, not a tile (2, 4, ..., 32768, or 0)",
                               i, v);
        }
        board |= (uint64_t)k << (4 * i);
        char sep = i == 15 ? ' ' : (i & 3) == 3 ? '/' : ',';
        if (*p != sep)
            return zt_fail(ZT_ERR_INVALID, "2048: expected '%c' after cell %d, got '%.12s'", sep, i, p);
        p++;
    }
    while (*p == ' ') p++;
    if (!isdigit((unsigned char)*p))
        return zt_fail(ZT_ERR_INVALID, "2048: expected the score after the board, got '%.12s'", p);
    unsigned long long score = 0;
    while (isdigit((unsigned char)*p) && score <= UINT32_MAX) score = score * 10 + (unsigned)(*p++ - '0');
    if (score > UINT32_MAX) return zt_fail(ZT_ERR_INVALID, "2048: score too large");
    if (*p != ' ') return zt_fail(ZT_ERR_INVALID, "2048: expected ' move', ' spawn' or ' spawn2' after the score");
    while (*p == ' ') p++;
    size_t n = 0;
    while (p[n] && !isspace((unsigned char)p[n])) n++;
    int pending = -1;
    for (int k = 0; k < 3; k++)
        if (strlen(pending_words[k]) == n && strncmp(p, pending_words[k], n) == 0) pending = k;
    if (pending < 0)
        return zt_fail(ZT_ERR_INVALID, "2048: expected move, spawn or spawn2, got '%.*s'", (int)(n < 12 ? n : 12), p);
    p += n;
    while (isspace((unsigned char)*p)) p++;
    if (*p) return zt_fail(ZT_ERR_INVALID, "2048: unexpected '%.12s' after the position", p);
    g2048_state s;
    ZT_TRY(set_state(board, (uint32_t)score, pending, &s));
    memcpy(vs, &s, sizeof s);
    return ZT_OK;
}

static void g_render(const zt_game *g, const void *vs, char *buf, size_t cap)
{
    (void)g;
    const g2048_state *s = vs;
    char out[512];
    int len = 0;
    for (int r = 0; r < 4; r++) {
        for (int c = 0; c < 4; c++) {
            int k = rank_at(s->board, 4 * r + c);
            if (k)
                len += snprintf(out + len, sizeof out - (size_t)len, "%6u", 1u << k);
            else
                len += snprintf(out + len, sizeof out - (size_t)len, "%6s", ".");
        }
        len += snprintf(out + len, sizeof out - (size_t)len, "\n");
    }
    snprintf(out + len, sizeof out - (size_t)len, "score %u, %s\n", s->score,
             s->pending ? "a tile spawns" : s->over ? "game over" : "to move");
    snprintf(buf, cap, "%s", out);
}

static const char *const action_words[4] = {"up", "right", "down", "left"};

/* Moves are up, right, down, left; spawns "2@5" / "4@5" (a tile at cell 5,
 * row-major from 0 at the top left). */
static void g_action_to_text(const zt_game *g, const void *vs, int action, char *buf, size_t cap)
{
    (void)g;
    const g2048_state *s = vs;
    if (s->pending)
        snprintf(buf, cap, "%d@%d", (action & 1) ? 4 : 2, action >> 1);
    else
        snprintf(buf, cap, "%s", action >= 0 && action < 4 ? action_words[action] : "?");
}

static zt_status g_action_from_text(const zt_game *g, const void *vs, const char *text, int *action)
{
    (void)g;
    const g2048_state *s = vs;
    char word[16];
    size_t n = 0;
    const char *p = text;
    while (isspace((unsigned char)*p)) p++;
    while (*p && !isspace((unsigned char)*p) && n + 1 < sizeof word) word[n++] = (char)tolower((unsigned char)*p++);
    word[n] = '\0';
    while (isspace((unsigned char)*p)) p++;
    if (*p || n == 0) return zt_fail(ZT_ERR_INVALID, "2048: expected a move (up, right, down, left), got '%s'", text);
    if (s->pending) {
        int v, cell, used = 0;
        if (sscanf(word, "%d@%d%n", &v, &cell, &used) == 2 && (size_t)used == n && (v == 2 || v == 4) &&
            cell >= 0 && cell < CELLS) {
            if (rank_at(s->board, cell))
                return zt_fail(ZT_ERR_INVALID, "2048: cell %d is not empty: no tile spawns there", cell);
            *action = 2 * cell + (v == 4);
            return ZT_OK;
        }
        return zt_fail(ZT_ERR_INVALID, "2048: expected a spawn like 2@5 (tile 2 or 4 at cell 0..15), got '%s'", text);
    }
    for (int a = 0; a < 4; a++)
        if (strcmp(word, action_words[a]) == 0 || (n == 1 && word[0] == action_words[a][0])) {
            *action = a;
            return ZT_OK;
        }
    return zt_fail(ZT_ERR_INVALID, "2048: expected a move (up, right, down, left), got '%s'", text);
}

uint64_t zt_g2048_board(const void *state)
{
    return ((const g2048_state *)state)->board;
}

static int g_level(const zt_game *g, const void *vs)
{
    (void)g;
    const g2048_state *s = vs;
    int top = 0;
    for (int i = 0; i < CELLS; i++)
        if (rank_at(s->board, i) > top) top = rank_at(s->board, i);
    return top ? 1 << top : 0;
}

static zt_status g_create(zt_config *cfg, zt_game *g)
{
    float scale;
    /* Points per unit of value (game.h, max_return): search adds rewards
     * and values as points / value_scale, and the network's value 1 stands
     * for value_scale points through the h transform (zt_game_value_to_net).
     * 65536 is beyond the scores of every player here but expectimax:3's
     * best games, and h keeps a 100-point return at 0.03. */
    ZT_TRY(zt_config_float(cfg, "value_scale", 65536, 1, 1e7, &scale));
    pthread_once(&tables_once, build_tables);
    g->name = "2048";
    snprintf(g->title, sizeof g->title, "2048");
    snprintf(g->settings, sizeof g->settings, "value_scale=%g", (double)scale);
    g->state_size = sizeof(g2048_state);
    g->num_actions = 4;
    g->max_chance_outcomes = OUTCOMES;
    g->max_game_length = G2048_MAX_MOVES;
    g->max_return = scale;
    g->num_players = 1;
    g->obs_kind = ZT_OBS_PLANES;
    g->obs_shape[0] = 4;
    g->obs_shape[1] = 4;
    g->obs_shape[2] = 16;
    g->compact_size = 13;
    g->num_symmetries = 8;
    g->reset = g_reset;
    g->current_player = g_current_player;
    g->legal = g_legal;
    g->apply = g_apply;
    g->chance_outcomes = g_chance_outcomes;
    g->returns = g_returns;
    g->observe = g_observe;
    g->encode = g_encode;
    g->decode = g_decode;
    g->sym_state = g_sym_state;
    g->sym_action = g_sym_action;
    g->hash = g_hash;
    g->to_text = g_to_text;
    g->from_text = g_from_text;
    g->render = g_render;
    g->action_to_text = g_action_to_text;
    g->action_from_text = g_action_from_text;
    g->level = g_level;
    g->level_name = "highest tile";
    return ZT_OK;
}

static const zt_baseline g2048_baselines[] = {
    {"expectimax", true, zt_g2048_expectimax_new},
    {NULL, false, NULL},
};

const zt_game_def zt_game_g2048 = {
    .name = "2048",
    .summary = "2048 on a 4x4 board (one player; a 2 or 4 spawns after each move; score = merges)",
    .create = g_create,
    .baselines = g2048_baselines,
    .arena_opponents = "random,expectimax:1,expectimax:2",
};
