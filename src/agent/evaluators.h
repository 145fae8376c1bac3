/* Evaluators that need no network, for tests and benchmarks: a uniform one
 * (all logits 0, value 0: the tree's cost alone) and a perfect oracle on the
 * exact solvers (game/solver.h). The caller owns what *_new returns and frees
 * it with zt_evaluator_oracle_free; the game must outlive it. */
#ifndef ZT_AGENT_EVALUATORS_H
#define ZT_AGENT_EVALUATORS_H

#include "agent/az_model.h"
#include "game/game.h"

/* ctx is the game (borrowed). */
zt_evaluator zt_evaluator_uniform(const zt_game *g);

/* Value from the solver for the player to move; logits 0 for the moves that
 * keep that value and -ZT_ORACLE_LOGIT_GAP for the others.
 * ZT_ERR_UNSUPPORTED where the game has no solver. */
#define ZT_ORACLE_LOGIT_GAP 8.0f
zt_status zt_evaluator_oracle_new(const zt_game *g, zt_evaluator *out);
void zt_evaluator_oracle_free(zt_evaluator *ev);

#endif
