/* Observations of positions from uniformly random play, for what needs
 * plausible network inputs without a replay buffer: the int8 calibration of
 * a net opened for play or eval, and tests. The caller owns every buffer. */
#ifndef ZT_GAME_SAMPLE_H
#define ZT_GAME_SAMPLE_H

#include "core/rng.h"
#include "game/game.h"

/* Writes n observations (n * obs size floats) of the decision positions met
 * by random games played back to back from the start: every legal action
 * and chance outcome (by its probability) drawn from rng. legal (NULL: not
 * wanted) gets n * num_actions flags, 1 on the position's legal actions. */
void zt_game_sample_observations(const zt_game *g, zt_rng *rng, int n, float *obs, uint8_t *legal);

#endif
