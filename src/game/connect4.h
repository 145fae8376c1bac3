/* Connect Four internals shared by the game (connect4.c), its exact solver
 * (connect4_solver.c) and the alpha-beta player (connect4_alphabeta.c).
 * Bitboards: bit 7*c + r is column c (0 = leftmost), row r (0 = bottom); row
 * 6 of each column is an always-empty sentinel, so that shifts by 1, 6, 7 and
 * 8 (vertical and the three other directions) never join stones across a
 * column edge. A position is `current` (stones of the side to move) and `mask`
 * (all stones), the layout of Pascal Pons' solver tutorial. */
#ifndef ZT_GAME_CONNECT4_H
#define ZT_GAME_CONNECT4_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "game/game.h"
#include "game/player.h"

#define C4_WIDTH 7
#define C4_HEIGHT 6
#define C4_CELLS (C4_WIDTH * C4_HEIGHT)
#define C4_COL_BITS (C4_HEIGHT + 1)

/* One bit at the bottom of every column / every playable cell. */
#define C4_BOTTOM 0x0000040810204081ULL
#define C4_BOARD (C4_BOTTOM * ((1ULL << C4_HEIGHT) - 1))
/* The top playable cell of every column. */
#define C4_TOP (C4_BOTTOM << (C4_HEIGHT - 1))

enum { C4_ONGOING = 0, C4_WON = 1, C4_DRAW = 2 };

/* The game state: 24 bytes, no padding left undefined (memcmp-comparable). */
typedef struct c4_state {
    uint64_t current; /* stones of the side to move */
    uint64_t mask;    /* all stones */
    uint8_t plies;    /* stones on the board; player plies & 1 moves next */
    uint8_t status;   /* C4_ONGOING, C4_WON (by the player who just moved), C4_DRAW */
    uint8_t pad[6];
} c4_state;

/* States arrive as byte buffers (uint8_t[ZT_MAX_STATE_BYTES] in generic
 * code) with no alignment promise; copying through memcpy compiles to plain
 * loads and stores and is defined for any alignment. */
static inline c4_state c4_load(const void *p)
{
    c4_state s;
    memcpy(&s, p, sizeof s);
    return s;
}

static inline void c4_store(void *p, const c4_state *s)
{
    memcpy(p, s, sizeof *s);
}

static inline uint64_t c4_column_mask(int col)
{
    return ((1ULL << C4_HEIGHT) - 1) << (col * C4_COL_BITS);
}

static inline uint64_t c4_bottom_cell(int col)
{
    return 1ULL << (col * C4_COL_BITS);
}

static inline uint64_t c4_top_cell(int col)
{
    return 1ULL << (col * C4_COL_BITS + C4_HEIGHT - 1);
}

/* The cell a stone dropped into each non-full column would occupy. */
static inline uint64_t c4_playable(uint64_t mask)
{
    return (mask + C4_BOTTOM) & C4_BOARD;
}

/* Does `stones` hold four in a row? Pairs at distance d, then pairs of pairs
 * at distance 2d, per direction (vertical 1, diagonals 6 and 8, horizontal 7). */
static inline bool c4_has_four(uint64_t stones)
{
    uint64_t m = stones & (stones >> 7);
    if (m & (m >> 14)) return true;
    m = stones & (stones >> 6);
    if (m & (m >> 12)) return true;
    m = stones & (stones >> 8);
    if (m & (m >> 16)) return true;
    m = stones & (stones >> 1);
    return (m & (m >> 2)) != 0;
}

/* Empty cells (playable now or later) that would complete a four for the
 * owner of `stones`. */
static inline uint64_t c4_winning_cells(uint64_t stones, uint64_t mask)
{
    /* Vertical: only the three cells below can complete it. */
    uint64_t r = (stones << 1) & (stones << 2) & (stones << 3);
    static const int dirs[3] = {6, 7, 8};
    for (int i = 0; i < 3; i++) {
        int d = dirs[i];
        uint64_t below2 = (stones << d) & (stones << 2 * d); /* x-d, x-2d own */
        r |= below2 & (stones << 3 * d);
        r |= below2 & (stones >> d);
        uint64_t above2 = (stones >> d) & (stones >> 2 * d); /* x+d, x+2d own */
        r |= above2 & (stones << d);
        r |= above2 & (stones >> 3 * d);
    }
    return r & (C4_BOARD ^ mask);
}

/* Pons' unique key: current + mask + bottom. Per column the stones of the
 * side to move below a single marker bit at the column height; 49 bits. */
static inline uint64_t c4_key(uint64_t current, uint64_t mask)
{
    return current + mask + C4_BOTTOM;
}

static inline int c4_popcount(uint64_t x)
{
    return __builtin_popcountll(x);
}

/* The baseline player "alphabeta:D" (connect4_alphabeta.c): depth-D
 * alpha-beta with a threat heuristic at the horizon. */
zt_status zt_player_new_alphabeta_connect4(const zt_game *g, int depth, zt_player **out);

#endif
