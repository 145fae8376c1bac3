/* libzeroth's greedy play: a zeroth_greedy_t is a zt_greedy (agent/greedy.h)
 * over a net's evaluator, on its own copy of the game. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/greedy.h"
#include "api/api.h"
#include "core/alloc.h"

struct zeroth_greedy {
    zt_game *game;
    zt_greedy *greedy;
    int slots;
};

void zeroth_greedy_free(zeroth_greedy_t *gr)
{
    if (!gr) return;
    zt_greedy_free(gr->greedy);
    zt_game_free(gr->game);
    free(gr);
}

zeroth_status zeroth_greedy_new(const zeroth_game_t *game, zeroth_net_t *net, int slots, int plies,
                                zeroth_greedy_t **out)
{
    const char *fn = "zeroth_greedy_new";
    ZT_API_TRY(zt_api_need(fn, out, "out"));
    *out = NULL;
    ZT_API_TRY(zt_api_need_net_for(fn, game, net));
    if (slots < 1 || slots > 1 << 20)
        return zt_api_status(
            zt_fail(ZT_ERR_INVALID, "%s: slots = %d, must be in [1, %d]", fn, slots, 1 << 20));
    zeroth_greedy_t *gr = zt_xcalloc(1, sizeof *gr);
    gr->slots = slots;
    /* a turn's positions in batches of 256, as the arena's greedy agent */
    zt_status st = zt_game_from_spec(zeroth_game_spec(game), &gr->game);
    if (st == ZT_OK)
        st = zt_greedy_new(gr->game, zt_api_net_evaluator(net), slots, 256, plies, &gr->greedy);
    if (st != ZT_OK) {
        zeroth_greedy_free(gr);
        return zt_api_status(st);
    }
    *out = gr;
    return ZEROTH_OK;
}

zeroth_status zeroth_greedy_choose(zeroth_greedy_t *gr, int n, const int *slots, const void *states,
                                   int *actions, float *values)
{
    const char *fn = "zeroth_greedy_choose";
    ZT_API_TRY(zt_api_need(fn, gr, "greedy"));
    if (n < 0 || n > gr->slots)
        return zt_api_status(
            zt_fail(ZT_ERR_INVALID, "%s: n = %d, must be in [0, %d]", fn, n, gr->slots));
    if (n == 0) return ZEROTH_OK;
    ZT_API_TRY(zt_api_need(fn, states, "states"));
    ZT_API_TRY(zt_api_need(fn, actions, "actions"));
    const zt_game *g = gr->game;
    for (int k = 0; k < n; k++) {
        int slot = slots ? slots[k] : k;
        if (slot < 0 || slot >= gr->slots)
            return zt_api_status(zt_fail(ZT_ERR_INVALID, "%s: slots[%d] = %d, must be in [0, %d)",
                                         fn, k, slot, gr->slots));
        ZT_API_TRY(
            zt_api_decision_state(g, (const uint8_t *)states + (size_t)k * g->state_size, k, fn));
    }
    for (int k = 0; k < n; k++) {
        float v;
        ZT_API_TRY(zt_greedy_choose(gr->greedy, slots ? slots[k] : k,
                                    (const uint8_t *)states + (size_t)k * g->state_size,
                                    &actions[k], &v));
        if (values) values[k] = v;
    }
    return ZEROTH_OK;
}
