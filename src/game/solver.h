/* Exact solvers (tic-tac-toe, Connect Four, small Sim) behind one interface,
 * and the parsers of the shared position files (../shared/data) that carry
 * their expected values. The caller owns what zt_solver_new returns. */
#ifndef ZT_GAME_SOLVER_H
#define ZT_GAME_SOLVER_H

#include <stdbool.h>
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
} zt_solution;

/* One line of a shared position file. */
typedef struct zt_position {
    uint8_t state[ZT_MAX_STATE_BYTES];
    bool has_value, has_score, has_moves, has_best;
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
};

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
