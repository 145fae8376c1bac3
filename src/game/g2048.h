/* 2048 (Gabriele Cirulli, 2014), one player on a 4x4 board: the rules in
 * g2048.c, the expectimax baseline in g2048_expectimax.c. These functions
 * work on the bare board, 16 nibbles of log2 tile values (cell i = row-major
 * from the top left at bits 4i..4i+3, 0 empty), so that the baseline's
 * search needs no game states. */
#ifndef ZT_GAME_G2048_H
#define ZT_GAME_G2048_H

#include <stdint.h>

#include "game/player.h"

enum { ZT_G2048_UP = 0, ZT_G2048_RIGHT, ZT_G2048_DOWN, ZT_G2048_LEFT };

/* The board after sliding it in direction `action` (ZT_G2048_*), and the
 * points the merges made (*reward, may be NULL). Equal to `board` when the
 * move changes nothing (an illegal move). Thread-safe; tables are built on
 * first use. */
uint64_t zt_g2048_move(uint64_t board, int action, uint32_t *reward);

/* The board of a 2048 game state. */
uint64_t zt_g2048_board(const void *state);

/* The "expectimax:D" baseline: depth-D expectimax over g's moves and exact
 * spawns with the heuristic of g2048_expectimax.c. */
zt_status zt_g2048_expectimax_new(const zt_game *g, int depth, zt_player **out);

/* The heuristic value of a board the expectimax baseline uses at its leaves. */
double zt_g2048_heuristic(uint64_t board);

#endif
