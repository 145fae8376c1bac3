/* The AlphaZero model (DESIGN.md §3): implements search/model.h by stepping
 * the real game and evaluating new positions through a batched evaluator, one
 * evaluator call per model call. Terminal states return the game's result
 * with no evaluation. A chance state's value is the exact expectation of the
 * evaluator's values over its outcomes, evaluated in the same call (rolls
 * that lead to rolls are expanded in turn), or, with a net that learned
 * chance states' values (evaluator.h, chance_values), the net's value of the
 * chance state itself: one evaluation where backgammon's roll took 21.
 *
 * A model state is the game state followed by its perspective player (see
 * model.h); a root input is a bare game state. The caller owns the model
 * (zt_model_free); the game, evaluator context and NN cache are borrowed and
 * must outlive it. */
#ifndef ZT_AGENT_AZ_MODEL_H
#define ZT_AGENT_AZ_MODEL_H

#include <stdint.h>

#include "core/status.h"
#include "game/game.h"
#include "search/model.h"
#include "agent/evaluator.h"
#include "search/nncache.h"

/* max_batch: the most (state, action) pairs one call takes (trees x K).
 * cache may be NULL. */
zt_status zt_az_model_new(const zt_game *g, const zt_evaluator *ev, int max_batch, zt_nncache *cache,
                          zt_model **out);

/* The factory of AlphaZero models, for actors (evaluator.h). */
zt_model_factory zt_az_model_factory(void);
zt_status zt_az_model_factory_create(void *ctx, const zt_game *g, const zt_evaluator *ev, int max_batch,
                                    zt_nncache *cache, zt_model **out);

#endif
