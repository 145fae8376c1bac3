/* Random-play observations (see sample.h). */
#include "game/sample.h"

#include <stdint.h>
#include <string.h>

void zt_game_sample_observations(const zt_game *g, zt_rng *rng, int n, float *obs, uint8_t *legal)
{
    size_t per = (size_t)zt_game_obs_size(g);
    _Alignas(16) uint8_t state[ZT_MAX_STATE_BYTES];
    uint16_t actions[ZT_MAX_ACTIONS];
    ZT_ASSERT(g->state_size <= sizeof state);
    g->reset(g, state);
    int plies = 0;
    for (int i = 0; i < n;) {
        int who = g->current_player(g, state);
        if (who == ZT_TERMINAL || plies >= g->max_game_length) {
            g->reset(g, state);
            plies = 0;
            continue;
        }
        if (who == ZT_CHANCE) {
            g->apply(g, state, zt_game_sample_chance(g, state, rng));
            continue;
        }
        g->observe(g, state, obs + (size_t)i * per);
        int k = g->legal(g, state, actions);
        ZT_ASSERT(k > 0);
        if (legal) {
            uint8_t *row = legal + (size_t)i * (size_t)g->num_actions;
            memset(row, 0, (size_t)g->num_actions);
            for (int j = 0; j < k; j++) row[actions[j]] = 1;
        }
        i++;
        g->apply(g, state, actions[zt_rng_below(rng, (uint32_t)k)]);
        plies++;
    }
}
