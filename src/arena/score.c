/* One-player games (2048): an agent plays games and its scores are gathered,
 * with the distribution of the level each game reached. Games run in slots
 * so that an agent on a batched search sees many positions per call. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena/arena.h"
#include "core/alloc.h"

#define SCORE_DEFAULT_CONCURRENCY 256

typedef struct score_slot {
    uint8_t state[ZT_MAX_STATE_BYTES];
    zt_rng rng;
    int index; /* game number, -1 while free */
} score_slot;

static void add_level(zt_score_result *r, int level)
{
    int i = 0;
    while (i < r->num_levels && r->level_value[i] < level) i++;
    if (i < r->num_levels && r->level_value[i] == level) {
        r->level_games[i]++;
        return;
    }
    if (r->num_levels == ZT_SCORE_MAX_LEVELS) { /* fold into the highest kept */
        r->level_games[r->num_levels - 1]++;
        return;
    }
    memmove(r->level_value + i + 1, r->level_value + i, sizeof(int) * (size_t)(r->num_levels - i));
    memmove(r->level_games + i + 1, r->level_games + i, sizeof(int) * (size_t)(r->num_levels - i));
    r->level_value[i] = level;
    r->level_games[i] = 1;
    r->num_levels++;
}

static void count(zt_score_result *r, double score)
{
    r->games++;
    r->total += score;
    r->total_sq += score * score;
    if (r->games == 1 || score < r->min) r->min = score;
    if (r->games == 1 || score > r->max) r->max = score;
    r->mean = r->total / r->games;
    double var = r->games > 1 ? (r->total_sq - r->total * r->mean) / (r->games - 1) : 0;
    r->ci95 = var > 0 ? 1.96 * sqrt(var / r->games) : 0;
}

zt_status zt_arena_score(const zt_game *g, zt_agent *agent, const zt_score_config *cfg,
                         zt_score_result *out)
{
    memset(out, 0, sizeof *out);
    if (zt_game_num_players(g) != 1)
        return zt_fail(ZT_ERR_INVALID, "score: %s is not a one-player game", g->title);
    if (cfg->games < 1) return zt_fail(ZT_ERR_INVALID, "score: games %d < 1", cfg->games);
    int conc = agent->max_games;
    if (cfg->concurrency > 0 && cfg->concurrency < conc) conc = cfg->concurrency;
    if (cfg->concurrency <= 0 && conc > SCORE_DEFAULT_CONCURRENCY) conc = SCORE_DEFAULT_CONCURRENCY;
    if (conc > cfg->games) conc = cfg->games;
    score_slot *slots = zt_xcalloc((size_t)conc, sizeof *slots);
    double *scores = zt_xcalloc((size_t)cfg->games, sizeof *scores);
    int *levels = zt_xcalloc((size_t)cfg->games, sizeof *levels);
    int8_t *finished = zt_xcalloc((size_t)cfg->games, 1);
    int *slot_ids = zt_xcalloc((size_t)conc, sizeof *slot_ids);
    int *actions = zt_xcalloc((size_t)conc, sizeof *actions);
    const void **states = zt_xcalloc((size_t)conc, sizeof *states);
    zt_rng **rngs = zt_xcalloc((size_t)conc, sizeof *rngs);
    int next_game = 0, counted = 0;
    zt_status st = ZT_OK;
    for (int i = 0; i < conc; i++) slots[i].index = -1;

    for (;;) {
        /* settle: play spawns, finish games, start new ones */
        int n = 0;
        for (int i = 0; i < conc; i++) {
            score_slot *sl = &slots[i];
            for (;;) {
                if (sl->index < 0) {
                    if (next_game >= cfg->games) break;
                    sl->index = next_game++;
                    zt_rng_seed(&sl->rng, cfg->seed, (uint64_t)sl->index);
                    g->reset(g, sl->state);
                    if (agent->new_game) agent->new_game(agent, i);
                }
                int p = g->current_player(g, sl->state);
                if (p >= 0) {
                    slot_ids[n] = i;
                    states[n] = sl->state;
                    rngs[n] = &sl->rng;
                    n++;
                    break;
                }
                if (p == ZT_TERMINAL) {
                    scores[sl->index] = zt_game_score(g, sl->state);
                    levels[sl->index] = g->level ? g->level(g, sl->state) : 0;
                    finished[sl->index] = 1;
                    sl->index = -1;
                    while (counted < next_game && finished[counted]) {
                        count(out, scores[counted]);
                        if (g->level) add_level(out, levels[counted]);
                        counted++;
                        if (cfg->progress) cfg->progress(cfg->progress_ctx, out);
                    }
                    continue;
                }
                int o = zt_game_sample_chance(g, sl->state, &sl->rng);
                g->apply(g, sl->state, o);
                if (agent->played) agent->played(agent, i, o);
            }
        }
        if (n == 0) break;
        if ((st = agent->choose(agent, n, slot_ids, states, rngs, actions)) != ZT_OK) break;
        for (int k = 0; k < n; k++) {
            score_slot *sl = &slots[slot_ids[k]];
            uint8_t mask[ZT_MAX_ACTIONS];
            zt_game_legal_mask(g, sl->state, mask);
            if (actions[k] < 0 || actions[k] >= g->num_actions || !mask[actions[k]]) {
                st = zt_fail(ZT_ERR_INVALID, "score: %s chose illegal action %d", agent->name,
                             actions[k]);
                break;
            }
            g->apply(g, sl->state, actions[k]);
            out->moves++;
            if (agent->played) agent->played(agent, slot_ids[k], actions[k]);
        }
        if (st != ZT_OK) break;
    }
    free(slots);
    free(scores);
    free(levels);
    free(finished);
    free(slot_ids);
    free(actions);
    free(states);
    free(rngs);
    return st;
}

void zt_score_format(const zt_score_result *r, char *buf, size_t cap)
{
    snprintf(buf, cap, "mean score %.0f +- %.0f (95 %%), min %.0f, max %.0f, %d games", r->mean,
             r->ci95, r->min, r->max, r->games);
}

void zt_score_levels_format(const zt_game *g, const zt_score_result *r, char *buf, size_t cap)
{
    buf[0] = '\0';
    if (!r->num_levels || cap == 0) return;
    size_t used = 0;
    int n = snprintf(buf, cap, "%s:", g->level_name ? g->level_name : "level");
    for (int i = 0; n >= 0 && i < r->num_levels; i++) {
        used = used + (size_t)n < cap ? used + (size_t)n : cap - 1;
        double share = 100.0 * r->level_games[i] / r->games;
        n = snprintf(buf + used, cap - used, " %d %.*f %%%s", r->level_value[i], share < 1 ? 1 : 0,
                     share, i + 1 < r->num_levels ? "," : "");
    }
}
