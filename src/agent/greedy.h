/* Greedy move choice without search (selfplay.fast_moves = greedy,
 * and the arena's greedy agent, eval --greedy): every
 * position the mover's turn can end in (in backgammon, every complete play of
 * the dice: all checker moves of the turn) is valued by the network, and the
 * best one is played. This is TD-Gammon's way of playing (Tesauro 1995) and
 * GNU Backgammon's "0-ply" move choice. A turn that ends at the opponent's
 * roll is valued by the network directly where it learned the values of
 * positions before a roll (evaluator.h, chance_values), else as the exact
 * expectation over the 21 rolls of the network's values after each.
 *
 * The whole turn's plan is kept per game, so the later checker moves of a
 * turn cost nothing. The caller owns what zt_greedy_new returns
 * (zt_greedy_free); the game and the evaluator's context are borrowed. */
#ifndef ZT_AGENT_GREEDY_H
#define ZT_AGENT_GREEDY_H

#include <stdint.h>

#include "agent/evaluator.h"
#include "core/status.h"
#include "game/game.h"

typedef struct zt_greedy zt_greedy;

/* For `games` game slots; the evaluator is called with at most max_batch
 * positions at a time. plies, the lookahead: 0 values each end of the turn
 * by the network (TD-Gammon's play, gnubg's "0-ply"); 1 values the best 8
 * ends at 0 ply again one ply deeper, as the expectation over the
 * opponent's roll of the value of the opponent's best reply, itself valued
 * at 0 ply (gnubg's "1-ply"; in a game without chance, the value of the
 * best reply); ends that finish the game keep their exact value. In
 * backgammon 1 ply costs about 8 x 21 x the replies' count network
 * evaluations a turn, a few thousand. Errors: games or max_batch below 1,
 * plies outside [0, 1]. */
zt_status zt_greedy_new(const zt_game *g, const zt_evaluator *ev, int games, int max_batch,
                        int plies, zt_greedy **out);
void zt_greedy_free(zt_greedy *gr);

/* The action to play at decision state s of the game in `slot`, and the
 * value of the turn it begins for the player to move (in [-1, 1], the
 * search's scale). Ties go to the turn found first (legal actions in
 * increasing order). A failed network call is returned as it came. */
zt_status zt_greedy_choose(zt_greedy *gr, int slot, const void *s, int *action, float *value);

/* Positions valued by the network so far, and network calls. */
uint64_t zt_greedy_evaluations(const zt_greedy *gr);
uint64_t zt_greedy_calls(const zt_greedy *gr);

#endif
