/* Tic-tac-toe on bitboards: bit i of a player's board is cell i (row-major,
 * 0 top-left). X is player 0 and moves first. The state is 6 bytes with no
 * padding, so memcmp compares positions. */
#include "core/hash.h"
#include "game/game.h"
#include "game/solver.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { TTT_CELLS = 9, TTT_FULL = 0x1ff, TTT_ZOBRIST_TABLE = 0x7474 };
enum { TTT_ONGOING = 0, TTT_WIN_X, TTT_WIN_O, TTT_DRAW };

typedef struct ttt_state {
    uint16_t board[2]; /* board[p]: cells taken by player p */
    uint8_t side;      /* player to move; after the end, the one who would move */
    uint8_t result;    /* TTT_ONGOING, TTT_WIN_X, TTT_WIN_O, TTT_DRAW */
} ttt_state;

static const uint16_t ttt_lines[8] = {
    0x007, 0x038, 0x1c0, /* rows */
    0x049, 0x092, 0x124, /* columns */
    0x111, 0x054,        /* diagonals */
};

/* The 8 symmetries of the square (D4) as cell maps: cell i goes to
 * ttt_sym[k][i]. Row 0 is the identity. */
static const uint8_t ttt_sym[8][TTT_CELLS] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8}, /* identity */
    {2, 5, 8, 1, 4, 7, 0, 3, 6}, /* rotate 90 degrees clockwise: (r, c) -> (c, 2 - r) */
    {8, 7, 6, 5, 4, 3, 2, 1, 0}, /* rotate 180 */
    {6, 3, 0, 7, 4, 1, 8, 5, 2}, /* rotate 90 degrees anticlockwise */
    {2, 1, 0, 5, 4, 3, 8, 7, 6}, /* mirror left-right */
    {6, 7, 8, 3, 4, 5, 0, 1, 2}, /* mirror top-bottom */
    {0, 3, 6, 1, 4, 7, 2, 5, 8}, /* transpose (main diagonal) */
    {8, 5, 2, 7, 4, 1, 6, 3, 0}, /* anti-diagonal */
};

static bool has_line(uint16_t b)
{
    for (int i = 0; i < 8; i++)
        if ((b & ttt_lines[i]) == ttt_lines[i]) return true;
    return false;
}

/* Result implied by a board whose legality has been checked. */
static uint8_t board_result(uint16_t x, uint16_t o)
{
    if (has_line(x)) return TTT_WIN_X;
    if (has_line(o)) return TTT_WIN_O;
    if ((x | o) == TTT_FULL) return TTT_DRAW;
    return TTT_ONGOING;
}

/* Checks that (x, o) can arise in play and fills s. */
static zt_status set_board(uint16_t x, uint16_t o, ttt_state *s)
{
    int nx = __builtin_popcount(x), no = __builtin_popcount(o);
    if (x & o) return zt_fail(ZT_ERR_INVALID, "tictactoe: a cell holds both X and O");
    if (nx != no && nx != no + 1)
        return zt_fail(ZT_ERR_INVALID,
                       "tictactoe: %d X and %d O stones cannot arise (X moves first)", nx, no);
    bool wx = has_line(x), wo = has_line(o);
    if (wx && wo) return zt_fail(ZT_ERR_INVALID, "tictactoe: both X and O have three in a row");
    if (wx && nx != no + 1)
        return zt_fail(ZT_ERR_INVALID, "tictactoe: X has three in a row but O has moved since");
    if (wo && nx != no)
        return zt_fail(ZT_ERR_INVALID, "tictactoe: O has three in a row but X has moved since");
    memset(s, 0, sizeof *s);
    s->board[0] = x;
    s->board[1] = o;
    s->side = nx == no ? 0 : 1;
    s->result = board_result(x, o);
    return ZT_OK;
}

static void ttt_reset(const zt_game *g, void *vs)
{
    memset(vs, 0, sizeof(ttt_state));
}

static int ttt_current_player(const zt_game *g, const void *vs)
{
    const ttt_state *s = vs;
    return s->result != TTT_ONGOING ? ZT_TERMINAL : s->side;
}

static int ttt_legal(const zt_game *g, const void *vs, uint16_t *actions)
{
    const ttt_state *s = vs;
    if (s->result != TTT_ONGOING) return 0;
    unsigned empty = TTT_FULL & ~(unsigned)(s->board[0] | s->board[1]);
    int n = 0;
    while (empty) {
        actions[n++] = (uint16_t)__builtin_ctz(empty);
        empty &= empty - 1;
    }
    return n;
}

static void ttt_apply(const zt_game *g, void *vs, int action)
{
    ttt_state *s = vs;
    ZT_ASSERT(s->result == TTT_ONGOING && action >= 0 && action < TTT_CELLS);
    uint16_t bit = (uint16_t)(1u << action);
    ZT_ASSERT(!((s->board[0] | s->board[1]) & bit));
    s->board[s->side] |= bit;
    if (has_line(s->board[s->side]))
        s->result = s->side == 0 ? TTT_WIN_X : TTT_WIN_O;
    else if ((s->board[0] | s->board[1]) == TTT_FULL)
        s->result = TTT_DRAW;
    s->side ^= 1;
}

static int ttt_chance_outcomes(const zt_game *g, const void *s, int *outcomes, float *probs)
{
    return 0;
}

static void ttt_returns(const zt_game *g, const void *vs, float *r)
{
    const ttt_state *s = vs;
    r[0] = s->result == TTT_WIN_X ? 1.0f : s->result == TTT_WIN_O ? -1.0f : 0.0f;
    r[1] = -r[0];
}

/* Planes: own stones, opponent stones, and a plane of ones when X is to move
 * (the side is not otherwise visible once the position is seen from the
 * mover's point of view). */
static void ttt_observe(const zt_game *g, const void *vs, float *obs)
{
    const ttt_state *s = vs;
    uint16_t own = s->board[s->side], opp = s->board[s->side ^ 1];
    for (int i = 0; i < TTT_CELLS; i++) {
        obs[i * 3 + 0] = (float)((own >> i) & 1);
        obs[i * 3 + 1] = (float)((opp >> i) & 1);
        obs[i * 3 + 2] = s->side == 0 ? 1.0f : 0.0f;
    }
}

/* Compact form: the board in base 3 (cell 0 least significant), 2 bytes;
 * the side and result follow from the board. */
static void ttt_encode(const zt_game *g, const void *vs, uint8_t *out)
{
    const ttt_state *s = vs;
    unsigned code = 0;
    for (int i = TTT_CELLS - 1; i >= 0; i--)
        code = code * 3 + ((s->board[0] >> i) & 1) + 2 * ((s->board[1] >> i) & 1);
    out[0] = (uint8_t)(code & 0xff);
    out[1] = (uint8_t)(code >> 8);
}

static zt_status ttt_decode(const zt_game *g, const uint8_t *in, void *vs)
{
    unsigned code = in[0] | (unsigned)in[1] << 8;
    if (code >= 19683)
        return zt_fail(ZT_ERR_CORRUPT, "tictactoe: compact code %u out of range", code);
    uint16_t x = 0, o = 0;
    for (int i = 0; i < TTT_CELLS; i++, code /= 3) {
        if (code % 3 == 1) x |= (uint16_t)(1u << i);
        if (code % 3 == 2) o |= (uint16_t)(1u << i);
    }
    if (set_board(x, o, vs) != ZT_OK) return zt_fail(ZT_ERR_CORRUPT, "%s", zt_error_message());
    return ZT_OK;
}

static uint16_t permute_cells(int sym, uint16_t b)
{
    uint16_t out = 0;
    for (int i = 0; i < TTT_CELLS; i++)
        if (b >> i & 1) out |= (uint16_t)(1u << ttt_sym[sym][i]);
    return out;
}

static void ttt_sym_state(const zt_game *g, int sym, const void *vs, void *vout)
{
    const ttt_state *s = vs;
    ttt_state *out = vout;
    ttt_state t = *s;
    t.board[0] = permute_cells(sym, s->board[0]);
    t.board[1] = permute_cells(sym, s->board[1]);
    *out = t;
}

static int ttt_sym_action(const zt_game *g, int sym, int action)
{
    return ttt_sym[sym][action];
}

static uint64_t ttt_hash(const zt_game *g, const void *vs)
{
    const ttt_state *s = vs;
    uint64_t h = s->side ? zt_zobrist(TTT_ZOBRIST_TABLE, 2 * TTT_CELLS) : 0;
    for (int p = 0; p < 2; p++)
        for (unsigned b = s->board[p]; b; b &= b - 1)
            h ^= zt_zobrist(TTT_ZOBRIST_TABLE, (uint32_t)(p * TTT_CELLS + __builtin_ctz(b)));
    return h;
}

static char cell_char(const ttt_state *s, int i)
{
    return (s->board[0] >> i & 1) ? 'X' : (s->board[1] >> i & 1) ? 'O' : '.';
}

/* "<board9> <side>", e.g. "X.O...... O" (the shared position files' form). */
static void ttt_to_text(const zt_game *g, const void *vs, char *buf, size_t cap)
{
    const ttt_state *s = vs;
    char b[TTT_CELLS + 1];
    for (int i = 0; i < TTT_CELLS; i++) b[i] = cell_char(s, i);
    b[TTT_CELLS] = '\0';
    snprintf(buf, cap, "%s %c", b, s->side == 0 ? 'X' : 'O');
}

static zt_status ttt_from_text(const zt_game *g, const char *text, void *vs)
{
    uint16_t x = 0, o = 0;
    const char *p = text;
    while (*p == ' ' || *p == '\t') p++;
    for (int i = 0; i < TTT_CELLS; i++, p++) {
        char c = (char)toupper((unsigned char)*p);
        if (c == 'X')
            x |= (uint16_t)(1u << i);
        else if (c == 'O')
            o |= (uint16_t)(1u << i);
        else if (c != '.')
            return zt_fail(ZT_ERR_INVALID,
                           "tictactoe: expected '<9 cells of X, O or .> <X|O>', got '%s'", text);
    }
    if (*p != ' ' && *p != '\t')
        return zt_fail(ZT_ERR_INVALID,
                       "tictactoe: expected 9 cells then the side to move, got '%s'", text);
    while (*p == ' ' || *p == '\t') p++;
    char side = (char)toupper((unsigned char)*p);
    if (side != 'X' && side != 'O')
        return zt_fail(ZT_ERR_INVALID, "tictactoe: side to move must be X or O in '%s'", text);
    p++;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    if (*p) return zt_fail(ZT_ERR_INVALID, "tictactoe: unexpected '%s' after the side to move", p);
    ttt_state s;
    ZT_TRY(set_board(x, o, &s));
    if (s.side != (side == 'X' ? 0 : 1))
        return zt_fail(ZT_ERR_INVALID, "tictactoe: %c cannot be to move with %d X and %d O stones",
                       side, __builtin_popcount(x), __builtin_popcount(o));
    memcpy(vs, &s, sizeof s);
    return ZT_OK;
}

static void ttt_render(const zt_game *g, const void *vs, char *buf, size_t cap)
{
    const ttt_state *s = vs;
    static const char *status[] = {"to move", "X wins", "O wins", "draw"};
    char out[256];
    int len = 0;
    for (int r = 0; r < 3; r++) {
        len += snprintf(out + len, sizeof out - (size_t)len, " %c | %c | %c     %d %d %d\n",
                        cell_char(s, 3 * r), cell_char(s, 3 * r + 1), cell_char(s, 3 * r + 2),
                        3 * r, 3 * r + 1, 3 * r + 2);
        if (r < 2) len += snprintf(out + len, sizeof out - (size_t)len, "---+---+---\n");
    }
    if (s->result == TTT_ONGOING)
        snprintf(out + len, sizeof out - (size_t)len, "%c to move\n", s->side == 0 ? 'X' : 'O');
    else
        snprintf(out + len, sizeof out - (size_t)len, "%s\n", status[s->result]);
    snprintf(buf, cap, "%s", out);
}

static void ttt_action_to_text(const zt_game *g, const void *s, int action, char *buf, size_t cap)
{
    snprintf(buf, cap, "%d", action);
}

/* The cell number 0..8 (row-major from the top left). Legality is the
 * caller's check against legal(). */
static zt_status ttt_action_from_text(const zt_game *g, const void *s, const char *text,
                                      int *action)
{
    const char *p = text;
    while (*p == ' ' || *p == '\t') p++;
    if (*p < '0' || *p > '8')
        return zt_fail(ZT_ERR_INVALID, "tictactoe: expected a cell 0..8, got '%s'", text);
    int a = *p++ - '0';
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    if (*p) return zt_fail(ZT_ERR_INVALID, "tictactoe: expected a cell 0..8, got '%s'", text);
    *action = a;
    return ZT_OK;
}

static zt_status ttt_create(zt_config *cfg, zt_game *g)
{
    g->name = "tictactoe";
    snprintf(g->title, sizeof g->title, "tictactoe");
    g->state_size = sizeof(ttt_state);
    g->num_actions = TTT_CELLS;
    g->max_chance_outcomes = 0;
    g->max_game_length = TTT_CELLS;
    g->max_return = 1.0f;
    g->obs_kind = ZT_OBS_PLANES;
    g->obs_shape[0] = 3;
    g->obs_shape[1] = 3;
    g->obs_shape[2] = 3;
    g->compact_size = 2;
    g->num_symmetries = 8;
    g->impl = NULL;
    g->reset = ttt_reset;
    g->current_player = ttt_current_player;
    g->legal = ttt_legal;
    g->apply = ttt_apply;
    g->chance_outcomes = ttt_chance_outcomes;
    g->returns = ttt_returns;
    g->observe = ttt_observe;
    g->encode = ttt_encode;
    g->decode = ttt_decode;
    g->sym_state = ttt_sym_state;
    g->sym_action = ttt_sym_action;
    g->hash = ttt_hash;
    g->to_text = ttt_to_text;
    g->from_text = ttt_from_text;
    g->render = ttt_render;
    g->action_to_text = ttt_action_to_text;
    g->action_from_text = ttt_action_from_text;
    g->destroy = NULL;
    return ZT_OK;
}

/* Every non-terminal position reachable from the start, with its value and
 * value-preserving moves. */
static const zt_position_set ttt_sets[] = {{"tictactoe/ttt_positions.txt", ZT_JUDGE_OPTIMAL}};

static int ttt_position_sets(const zt_game *g, const zt_position_set **sets)
{
    (void)g;
    *sets = ttt_sets;
    return 1;
}

const zt_game_def zt_game_tictactoe = {
    .name = "tictactoe",
    .summary = "Tic-tac-toe on a 3x3 board (X moves first; three in a row wins)",
    .create = ttt_create,
    .solver = zt_solver_new_tictactoe,
    .position_sets = ttt_position_sets,
    .arena_opponents = "random,perfect",
};
