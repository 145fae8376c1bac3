/* Exact solvers (tic-tac-toe, Connect Four, small Sim) behind one interface,
 * and the parsers of the shared position files (../shared/data) that carry
 * their expected values. The caller owns what zt_solver_new returns and the
 * text a zt_position_file holds (zt_position_file_close frees it). */
#ifndef ZT_GAME_SOLVER_H
#define ZT_GAME_SOLVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "game/game.h"

typedef struct zt_solution {
    int value;     /* +1 win, 0 draw, -1 loss for the side to move */
    int score;     /* finer measure: Connect Four Pons score (22 - stones of
                      the winner at its winning move, signed); Sim plies to the
                      end (winner fastest, loser slowest); else == value */
    int num_moves; /* value-preserving moves (increasing), if asked for */
    uint16_t moves[ZT_MAX_ACTIONS];
    int num_best;  /* moves that also achieve `score` (Sim), if asked for */
    uint16_t best[ZT_MAX_ACTIONS];
    uint64_t nodes; /* positions this solve searched (0 where the solver does not
                       count them): a measure of how hard the position is */
    bool cut;       /* the solve stopped at the solver's node_limit: only
                       `nodes` is set */
} zt_solution;

/* Depth bands of a position, for breaking a mistake rate down by them. The
 * games that have them say where they start (Connect Four: Pascal Pons'
 * levels of his test sets, opening 1..14 plies, middle 15..28, end 29..41). */
enum { ZT_BAND_NONE = -1, ZT_BAND_OPENING = 0, ZT_BAND_MIDDLE, ZT_BAND_END, ZT_BANDS };
/* "opening", "middle", "end". */
extern const char *const zt_band_names[ZT_BANDS];

/* One line of a shared position file. */
typedef struct zt_position {
    uint8_t state[ZT_MAX_STATE_BYTES];
    bool has_value, has_score, has_moves, has_best;
    bool has_band;        /* the game sorts positions into depth bands */
    int band;             /* ZT_BAND_*, when has_band */
    zt_solution expected; /* the fields the file gives */
} zt_position;

typedef struct zt_solver zt_solver;
struct zt_solver {
    const zt_game *game;
    void *impl;
    /* Solves s (not terminal). With `moves`, also fills the value-preserving
     * (and for Sim best) move sets. */
    zt_status (*solve)(zt_solver *sv, const void *s, bool moves, zt_solution *out);
    /* Parses one line of the game's shared position-file format. */
    zt_status (*parse_line)(zt_solver *sv, const char *line, zt_position *pos);
    /* Does `got` agree with everything the file gave in `expected`? */
    bool (*agrees)(const zt_solution *expected, const zt_position *pos, const zt_solution *got);
    /* Statistics line after a run (nodes searched, table use), may be NULL. */
    void (*stats)(zt_solver *sv, char *buf, size_t cap);
    void (*free)(zt_solver *sv);
    /* Optional (NULL if absent): forget what earlier solves learnt (the
     * transposition table), so that the next solve's `nodes` depend on its
     * position alone, not on what was solved before. */
    void (*forget)(zt_solver *sv);
    /* > 0: a solve that would search more nodes than this stops and reports
     * `cut` (solvers that count nodes); 0: no limit. Set by the caller. */
    uint64_t node_limit;
};

/* ---- position files ----
 * One position a line, in the game's format (parse_line); blank lines and
 * lines starting with '#' are skipped. Lines may be of any length: the file
 * is read whole, so every reader (solve, eval, the arena) sees the same
 * positions, and a bad line is refused naming it as "PATH:LINE: ...". */
typedef struct zt_position_file {
    char *name; /* the path, for messages */
    char *text; /* the whole file, NUL-terminated; lines are cut in place */
    size_t len;
    size_t next;  /* offset of the first unread line */
    long line_no; /* 1-based number of the line last read */
    const char *line; /* the position line last read (in text), NULL before the first */
} zt_position_file;

/* Reads the file at path. A file with a NUL byte is refused (not text). */
zt_status zt_position_file_open(const char *path, zt_position_file *pf);
/* The same over len bytes of text already in memory (copied); `name`
 * stands for the path in messages. */
zt_status zt_position_file_open_text(const char *name, const char *text, size_t len,
                                     zt_position_file *pf);
/* Position lines from the next unread one to the end, at most limit when
 * limit > 0; reads nothing. */
long zt_position_file_count(const zt_position_file *pf, long limit);
/* Parses the next position line with sv into pos (zeroed first); a
 * position already over is refused (a position asks for a move). *got is
 * false at the end of the file (pos untouched). */
zt_status zt_position_file_next(zt_position_file *pf, zt_solver *sv, zt_position *pos, bool *got);
void zt_position_file_close(zt_position_file *pf);
/* Reads every position of the file at path with sv, in order, and calls
 * each(pos, ctx) on it; stops at the first error, the file's or each's. A
 * file without positions is refused: "WHAT: PATH holds no positions". */
zt_status zt_position_file_each(const char *path, zt_solver *sv, const char *what,
                                zt_status (*each)(const zt_position *pos, void *ctx), void *ctx);

/* The value-preserving moves of a parsed position into out (num_moves,
 * moves, and value where *has_value): the file's when its line gives
 * them, else sv's weak solve (out->cut as the solve leaves it). */
zt_status zt_position_moves(zt_solver *sv, const zt_position *pos, zt_solution *out,
                            bool *has_value);

/* A blank-separated field of a position line, for the games' parse_line. */
typedef struct zt_field {
    const char *text; /* not NUL-terminated */
    size_t len;
} zt_field;

/* Splits line at spaces and tabs into at most max fields; returns how many
 * the line has, max + 1 meaning "more than max". */
int zt_fields_split(const char *line, zt_field *fields, int max);

/* Copies field f into buf[cap] NUL-terminated; refuses one too long for
 * it, naming `what` ("tictactoe board"). */
zt_status zt_field_copy(zt_field f, const char *what, char *buf, size_t cap);

/* The solver the game's registry entry names (game.h, zt_game_def.solver).
 * ZT_ERR_UNSUPPORTED for games without one (backgammon) and instances too
 * large to solve (Sim beyond K6). */
zt_status zt_solver_new(const zt_game *g, zt_solver **out);
void zt_solver_free(zt_solver *sv);

/* Per-game constructors, named by the games' registry entries. */
zt_status zt_solver_new_tictactoe(const zt_game *g, zt_solver **out);
zt_status zt_solver_new_connect4(const zt_game *g, zt_solver **out);
zt_status zt_solver_new_sim(const zt_game *g, zt_solver **out);

#endif
