/* Exact tic-tac-toe solver: plain minimax with a memo over every board,
 * indexed by the game's compact code (the board in base 3, < 3^9), so the
 * whole game is solved once in well under a millisecond and every later query
 * is a lookup. Works through the game interface only. */
#include "core/alloc.h"
#include "game/solver.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { TTT_CODES = 19683 };

typedef struct ttt_solver {
    int8_t value[TTT_CODES]; /* for the side to move; valid where known[] */
    uint8_t known[TTT_CODES];
    long nodes;
} ttt_solver;

static int code_of(const zt_game *g, const void *s)
{
    uint8_t c[2];
    g->encode(g, s, c);
    return c[0] | c[1] << 8;
}

/* Value of non-terminal s for the side to move. */
static int negamax(zt_solver *sv, const void *s)
{
    ttt_solver *t = sv->impl;
    const zt_game *g = sv->game;
    int code = code_of(g, s);
    if (t->known[code]) return t->value[code];
    t->nodes++;
    uint16_t actions[ZT_MAX_ACTIONS];
    uint8_t child[ZT_MAX_STATE_BYTES];
    int n = g->legal(g, s, actions), mover = g->current_player(g, s), best = -1;
    for (int i = 0; i < n && best < 1; i++) {
        memcpy(child, s, g->state_size);
        g->apply(g, child, actions[i]);
        int v;
        if (zt_game_is_terminal(g, child)) {
            float r[2];
            g->returns(g, child, r);
            v = r[mover] > 0 ? 1 : r[mover] < 0 ? -1 : 0;
        } else {
            v = -negamax(sv, child);
        }
        if (v > best) best = v;
    }
    t->known[code] = 1;
    t->value[code] = (int8_t)best;
    return best;
}

static int child_value(zt_solver *sv, const void *s, int action, int mover)
{
    const zt_game *g = sv->game;
    uint8_t child[ZT_MAX_STATE_BYTES];
    memcpy(child, s, g->state_size);
    g->apply(g, child, action);
    if (!zt_game_is_terminal(g, child)) return -negamax(sv, child);
    float r[2];
    g->returns(g, child, r);
    return r[mover] > 0 ? 1 : r[mover] < 0 ? -1 : 0;
}

static zt_status ttt_solve(zt_solver *sv, const void *s, bool moves, zt_solution *out)
{
    const zt_game *g = sv->game;
    int mover = g->current_player(g, s);
    if (mover < 0) return zt_fail(ZT_ERR_INVALID, "tictactoe solver: the position is already over");
    out->value = negamax(sv, s);
    out->score = out->value;
    out->num_moves = out->num_best = 0;
    if (!moves) return ZT_OK;
    uint16_t actions[ZT_MAX_ACTIONS];
    int n = g->legal(g, s, actions);
    for (int i = 0; i < n; i++) {
        if (child_value(sv, s, actions[i], mover) != out->value) continue;
        out->moves[out->num_moves++] = actions[i];
        out->best[out->num_best++] = actions[i];
    }
    return ZT_OK;
}

/* "+1", "0", "-1". */
static bool parse_value(const char *tok, int *v)
{
    if (strcmp(tok, "+1") == 0 || strcmp(tok, "1") == 0)
        *v = 1;
    else if (strcmp(tok, "0") == 0 || strcmp(tok, "+0") == 0 || strcmp(tok, "-0") == 0)
        *v = 0;
    else if (strcmp(tok, "-1") == 0)
        *v = -1;
    else
        return false;
    return true;
}

/* A comma-separated increasing list of cells. */
static bool parse_moves(const char *tok, uint16_t *moves, int *n)
{
    *n = 0;
    const char *p = tok;
    while (*p) {
        if (!isdigit((unsigned char)*p)) return false;
        int a = 0;
        while (isdigit((unsigned char)*p) && a < 9) a = a * 10 + (*p++ - '0');
        if (a >= 9 || (*n > 0 && a <= moves[*n - 1])) return false;
        moves[(*n)++] = (uint16_t)a;
        if (*p == ',')
            p++;
        else if (*p)
            return false;
    }
    return *n > 0;
}

/* "<board9> <side> <value> <moves>" (tests/data/tictactoe/ttt_positions.txt). */
static zt_status ttt_parse_line(zt_solver *sv, const char *line, zt_position *pos)
{
    zt_field f[4];
    int got = zt_fields_split(line, f, 4);
    if (got < 2 || got > 4)
        return zt_fail(ZT_ERR_INVALID,
                       "tictactoe: expected '<board9> <side> [<value> [<moves>]]', got '%.60s%s'",
                       line, strlen(line) > 60 ? "..." : "");
    char board[16], side[8], value[8], moves[64];
    ZT_TRY(zt_field_copy(f[0], "tictactoe: the board", board, sizeof board));
    ZT_TRY(zt_field_copy(f[1], "tictactoe: the side", side, sizeof side));
    if (got >= 3) ZT_TRY(zt_field_copy(f[2], "tictactoe: the value", value, sizeof value));
    if (got >= 4) ZT_TRY(zt_field_copy(f[3], "tictactoe: the moves", moves, sizeof moves));
    char text[32];
    snprintf(text, sizeof text, "%s %s", board, side);
    memset(pos, 0, sizeof *pos);
    ZT_TRY(sv->game->from_text(sv->game, text, pos->state));
    if (got >= 3) {
        if (!parse_value(value, &pos->expected.value))
            return zt_fail(ZT_ERR_INVALID, "tictactoe: value must be +1, 0 or -1, got '%s'", value);
        pos->has_value = true;
        pos->expected.score = pos->expected.value;
    }
    if (got == 4) {
        if (!parse_moves(moves, pos->expected.moves, &pos->expected.num_moves))
            return zt_fail(
                ZT_ERR_INVALID,
                "tictactoe: moves must be increasing cells 0..8 separated by commas, got '%s'",
                moves);
        pos->has_moves = true;
    }
    return ZT_OK;
}

static bool same_moves(const uint16_t *a, int na, const uint16_t *b, int nb)
{
    return na == nb && memcmp(a, b, (size_t)na * sizeof *a) == 0;
}

static bool ttt_agrees(const zt_solution *expected, const zt_position *pos, const zt_solution *got)
{
    if (pos->has_value && expected->value != got->value) return false;
    if (pos->has_moves &&
        !same_moves(expected->moves, expected->num_moves, got->moves, got->num_moves))
        return false;
    return true;
}

static void ttt_stats(zt_solver *sv, char *buf, size_t cap)
{
    const ttt_solver *t = sv->impl;
    snprintf(buf, cap, "tictactoe solver: %ld positions solved", t->nodes);
}

static void ttt_free(zt_solver *sv)
{
    free(sv->impl);
    free(sv);
}

zt_status zt_solver_new_tictactoe(const zt_game *g, zt_solver **out)
{
    *out = NULL;
    if (strcmp(g->name, "tictactoe") != 0 || g->compact_size != 2)
        return zt_fail(ZT_ERR_INVALID, "tictactoe solver given %s", g->title);
    zt_solver *sv = zt_xcalloc(1, sizeof *sv);
    sv->game = g;
    sv->impl = zt_xcalloc(1, sizeof(ttt_solver));
    sv->solve = ttt_solve;
    sv->parse_line = ttt_parse_line;
    sv->agrees = ttt_agrees;
    sv->stats = ttt_stats;
    sv->free = ttt_free;
    *out = sv;
    return ZT_OK;
}
