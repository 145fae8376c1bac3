/* The MuZero model (Schrittwieser et al. 2020): implements search/model.h
 * over a learned model. initial observes the real game at the root (h, then
 * f; the root's illegal actions masked from the real game); recurrent steps
 * hidden states with the dynamics function (g, then f) and knows no
 * legality and no terminal states below the root. Hidden states live in the
 * model's own store; a model state in the tree is a handle into it with the
 * perspective player, counted through model.h's retain and release.
 *
 * Players: a two-player game's turns alternate (zero-sum), so a child's
 * perspective player is the other one and search negates values between
 * them (model.h); a one-player game's (2048) player moves throughout and
 * nothing is negated, and its net's values and rewards are read back
 * through zt_game_value_from_net (replay trains them through
 * zt_game_value_to_net). Chance below the root (2048's spawn) is
 * folded into the dynamics, which learn its expectation, unless the net is
 * Stochastic MuZero's (chance codes): then a decision state steps to an
 * afterstate, a chance node of the acting player over the C codes with the
 * net's probabilities, and an afterstate with a code to the next decision
 * state. Chance positions at the root are refused (the actor resolves the
 * real game's chance before it searches). Games whose players do not
 * alternate move by move (backgammon) are refused by the run's settings.
 *
 * The caller owns the model (zt_model_free); the game and the evaluator
 * (which must offer initial and recurrent: a MuZero net's) are borrowed. */
#ifndef ZT_AGENT_MZ_MODEL_H
#define ZT_AGENT_MZ_MODEL_H

#include <stdint.h>

#include "agent/evaluator.h"
#include "core/status.h"
#include "game/game.h"
#include "search/model.h"

/* max_batch: the most states one call takes. */
zt_status zt_mz_model_new(const zt_game *g, const zt_evaluator *ev, int max_batch, zt_model **out);

/* References the store holds (one per state in some tree), for tests. */
int64_t zt_mz_model_live_states(const zt_model *m);

/* The factory of MuZero models, for actors (evaluator.h); the NN cache is
 * not used (hidden states have no position to key them by). */
zt_model_factory zt_mz_model_factory(void);

/* The model an evaluator's net calls for: MuZero's when the evaluator runs
 * a MuZero net (ev->initial set), else AlphaZero's (az_model.h) with the NN
 * cache (may be NULL). What every caller holding a net of either kind uses
 * (self-play, the arena, eval, play, serve, bench). */
zt_status zt_model_for_evaluator(const zt_game *g, const zt_evaluator *ev, int max_batch,
                                 zt_nncache *cache, zt_model **out);
zt_model_factory zt_model_factory_for_evaluator(void);

#endif
