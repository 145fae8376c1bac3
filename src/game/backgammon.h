/* Backgammon internals shared by the game (backgammon.c), the pubeval player
 * (backgammon_pubeval.c), `zeroth moves` (cli/cmd_moves.c), tests and benchmarks:
 * the state layout, the enumeration of complete plays, GNU Backgammon
 * position ids and gnubg's play notation. Nothing here allocates; the caller
 * owns every buffer (a bg_playlist is large: allocate it once, off the stack).
 *
 * Rules: standard backgammon without the doubling cube. Points are numbered
 * from each player's own side: a player moves from its point 24 towards its
 * point 1 and bears off from points 1..6; its point p is the opponent's point
 * 25 - p. A game's opening roll has no doubles and player 0 plays it. */
#ifndef ZT_GAME_BACKGAMMON_H
#define ZT_GAME_BACKGAMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "game/player.h"

#define BG_CHECKERS 15
#define BG_BAR 24 /* index of the bar in bg_state.board[side] */
/* Actions: source * 6 + (die - 1); source 0..23 is the mover's point 1..24
 * (index p - 1), source 24 (BG_BAR) the bar. */
#define BG_NUM_ACTIONS 150
#define BG_NUM_ROLLS 21 /* chance outcomes: the unordered dice pairs */
/* More than the largest number of distinct plays any position has (gnubg
 * bounds it by 3060; the reference data peaks at 396). */
#define BG_MAX_PLAYS 4096
#define BG_ID_LEN 14 /* characters of a gnubg position id */
#define BG_KEY_BYTES 10

/* The game state: 60 bytes of uint8_t, no padding, canonical (unused dice
 * slots and pad are zero), so memcmp compares positions.
 * At a chance node n_dice == 0 and `turn` is the player about to roll; at the
 * end n_dice == 0 and `turn` is the loser (off[1 - turn] == 15). */
typedef struct bg_state {
    uint8_t board[2][25]; /* board[p][i]: p's checkers on its point i + 1; [p][24] on the bar */
    uint8_t off[2];       /* checkers borne off */
    uint8_t turn;         /* the player to move (or to roll) */
    uint8_t n_dice;       /* dice still to play: 0..2, or 0..4 for doubles */
    uint8_t dice[4];      /* the dice still to play, largest first, unused slots 0 */
    uint8_t opening;      /* 1 at the opening roll (15 non-double outcomes) */
    uint8_t pad;
} bg_state;

/* One complete play: the checker moves in the order played, and the state
 * once the turn is over (the opponent's roll, or the end of the game). */
typedef struct bg_play {
    bg_state after;
    uint8_t n_moves;
    uint8_t from[4]; /* mover's point 1..24, 25 = bar */
    uint8_t to[4];   /* mover's point 1..24, 0 = off */
    uint8_t die[4];
} bg_play;

/* Every distinct complete play (distinct resulting positions) for the side
 * to move with its remaining dice, under the rules GNU Backgammon applies:
 * play as many dice as possible, and the larger die when only one of two
 * different dice can be played. Plays come in gnubg's generation order
 * (larger die first, sources from the back), each with the first move
 * sequence that reaches it. */
typedef struct bg_playlist {
    int count;
    bg_play plays[BG_MAX_PLAYS];
    int16_t slot[2 * BG_MAX_PLAYS]; /* scratch: open-addressing index of plays */
} bg_playlist;

/* The start position at the opening roll. */
void zt_bg_reset(bg_state *s);

/* Fills `out` for s, which must have dice to play (n_dice > 0). */
void zt_bg_plays(const bg_state *s, bg_playlist *out);

/* gnubg's notation of a play from `before` (the state the play starts
 * from), e.g. "24/18 13/10*", "bar/20 13/9", "13/9(2)", "6/off 5/off". */
void zt_bg_play_notation(const bg_state *before, const bg_play *play, char *buf, size_t cap);

/* The legal actions (increasing) at a state with dice: the first checker
 * moves of the maximal plays. Returns how many. */
int zt_bg_legal(const bg_state *s, uint16_t *actions);
/* Plays one action (a checker move, or a roll id at a chance node). A turn
 * that cannot go on passes at once to the opponent's roll. */
void zt_bg_apply(bg_state *s, int action);

/* Roll ids 0..20: (hi, lo) with hi >= lo; id = hi * (hi - 1) / 2 + lo - 1. */
int zt_bg_roll_id(int hi, int lo);
void zt_bg_roll_dice(int id, int *hi, int *lo);

/* gnubg position id (14 base64 characters, NUL-terminated in out[15]) of a
 * board seen from `mover`: the opponent's checkers first, then the mover's,
 * each from its own side (see gnubg's manual, "Position ID"). */
void zt_bg_id_encode(const uint8_t mover[25], const uint8_t opp[25], char out[BG_ID_LEN + 1]);
/* Parses an id into the mover's and the opponent's checkers; rejects a bad
 * length, a character outside base64, more than 15 checkers a side, or both
 * sides on one point, naming the problem. */
zt_status zt_bg_id_decode(const char *id, uint8_t mover[25], uint8_t opp[25]);

/* The position `id` with player 0 to move. roll: "AB" (a fresh roll, doubles
 * give four moves) or NULL for the chance node before the roll. The roll may
 * leave no legal move (then s->n_dice > 0 and zt_bg_legal returns 0: such a
 * state is only for zt_bg_plays). Errors name a malformed id or roll and
 * refuse a finished game. */
zt_status zt_bg_position(const char *id, const char *roll, bg_state *s);

/* Single-move notation: "24/18", "13/10*" (hit), "bar/22", "5/off", and
 * "5/off[6]" for a bear-off with a higher die than the distance. */
void zt_bg_move_text(const bg_state *s, int action, char *buf, size_t cap);

/* No checker of either side can reach an opponent's checker any more. */
bool zt_bg_is_race(const bg_state *s);

/* Hand-made inputs (backgammon_features.c; docs/backgammon.md), from the
 * side to move's view, each in [0, 1] but the pip counts (x / 167, 1 at the
 * start): pip counts of both sides, 1 while the sides are in contact (0 in a
 * race), the share of the 36 rolls with which each side could hit a blot of
 * the other, and 1 when the dice in hand can hit now. */
enum {
    BG_FEAT_PIPS_OWN,
    BG_FEAT_PIPS_OPP,
    BG_FEAT_CONTACT,
    BG_FEAT_SHOTS_OWN,
    BG_FEAT_SHOTS_OPP,
    BG_FEAT_HIT_NOW,
    BG_NUM_FEATURES
};
void zt_bg_features(const bg_state *s, float *out);

/* The baseline player "pubeval" (backgammon_pubeval.c): Tesauro's linear
 * evaluator, its weights read from the reference data. */
zt_status zt_player_new_pubeval(const zt_game *g, zt_player **out);

#endif
