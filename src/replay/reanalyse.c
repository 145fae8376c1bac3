/* Reanalyse: see reanalyse.h. */
#include "replay/reanalyse.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/hash.h"
#include "core/rng.h"
#include "core/timer.h"
#include "search/settings.h"

struct zt_reanalyser {
    const zt_game *game;
    zt_reanalyse_config cfg;
    zt_model *model;
    zt_search *search; /* allocated once, reseeded by each call */
    int64_t *drawn;   /* trees: the indices of one round */
    uint8_t *states;  /* trees x ZT_MAX_STATE_BYTES */
    bool *searched;   /* trees */
    float *policy;    /* num_actions */
    zt_reanalyse_stats stats;
};

static int leaves_of(const zt_reanalyse_config *cfg)
{
    return cfg->search.leaves_per_round > 0 ? cfg->search.leaves_per_round : 1;
}

int zt_reanalyser_eval_batch(const zt_game *g, const zt_reanalyse_config *cfg)
{
    int per_item = g->max_chance_outcomes > 1 ? g->max_chance_outcomes : 1;
    return cfg->trees * leaves_of(cfg) * per_item;
}

zt_status zt_reanalyser_new(const zt_game *g, const zt_model_factory *mf, const zt_evaluator *ev,
                            const zt_reanalyse_config *cfg, zt_reanalyser **out)
{
    *out = NULL;
    if (cfg->trees < 1) return zt_fail(ZT_ERR_INVALID, "reanalyse: trees must be >= 1");
    zt_reanalyser *r = zt_xcalloc(1, sizeof *r);
    r->game = g;
    r->cfg = *cfg;
    /* every search starts from an empty tree: no root cache, no reuse */
    r->cfg.search.tree_reuse = false;
    zt_search_config_size(&r->cfg.search, g, 0);
    zt_status st = mf->create(mf->ctx, g, ev, cfg->trees * leaves_of(cfg), NULL, &r->model);
    if (st != ZT_OK) {
        free(r);
        return st;
    }
    st = zt_search_new(&r->cfg.search, r->model, cfg->trees, &r->search);
    if (st != ZT_OK) {
        zt_reanalyser_free(r);
        return st;
    }
    r->drawn = zt_xcalloc((size_t)cfg->trees, sizeof *r->drawn);
    r->states = zt_xcalloc((size_t)cfg->trees, ZT_MAX_STATE_BYTES);
    r->searched = zt_xcalloc((size_t)cfg->trees, sizeof *r->searched);
    r->policy = zt_xcalloc((size_t)g->num_actions, sizeof *r->policy);
    *out = r;
    return ZT_OK;
}

void zt_reanalyser_free(zt_reanalyser *r)
{
    if (!r) return;
    zt_search_free(r->search);
    zt_model_free(r->model);
    free(r->drawn);
    free(r->states);
    free(r->searched);
    free(r->policy);
    free(r);
}

/* One batched search over the n <= trees positions in r->drawn, written
 * back into rb. */
static zt_status refresh_round(zt_reanalyser *r, zt_search *s, zt_replay *rb, int n)
{
    bool any = false;
    for (int t = 0; t < n; t++) {
        zt_replay_position pos;
        r->searched[t] = false;
        zt_status st = zt_replay_get(rb, r->drawn[t], &pos, NULL);
        if (st == ZT_ERR_INVALID) { /* evicted since it was drawn */
            r->stats.skipped++;
            continue;
        }
        ZT_TRY(st);
        if (r->game->current_player(r->game, pos.state) < 0) {
            /* a chance state's record: a value target with no search */
            r->stats.skipped++;
            continue;
        }
        memcpy(r->states + (size_t)t * ZT_MAX_STATE_BYTES, pos.state, ZT_MAX_STATE_BYTES);
        zt_search_forget(s, t);
        zt_search_begin(s, t, r->states + (size_t)t * ZT_MAX_STATE_BYTES);
        r->searched[t] = any = true;
    }
    if (!any) return ZT_OK;
    ZT_TRY(zt_search_run(s));
    for (int t = 0; t < n; t++) {
        if (!r->searched[t]) continue;
        zt_search_policy(s, t, r->policy);
        float value = zt_search_root_value(s, t);
        double l1 = 0;
        bool had = false;
        zt_status st = zt_replay_refresh(rb, r->drawn[t], r->policy, value, &l1, &had);
        zt_search_forget(s, t);
        if (st == ZT_ERR_NOT_FOUND) {
            r->stats.skipped++;
            continue;
        }
        ZT_TRY(st);
        r->stats.positions++;
        r->stats.policies += had;
        r->stats.policy_l1 += l1;
    }
    return ZT_OK;
}

/* Draws (index NULL) or takes the positions, `trees` at a time. */
static zt_status refresh(zt_reanalyser *r, zt_replay *rb, const int64_t *index, int64_t count,
                         uint64_t stream)
{
    double t0 = zt_now_s();
    zt_rng rng;
    zt_rng_seed(&rng, r->cfg.seed, zt_hash_mix(stream ^ 0x7265616e616c7973ULL));
    zt_search *s = r->search;
    zt_search_reseed(s, zt_hash_mix(r->cfg.seed ^ zt_hash_mix(stream + 0x9e3779b97f4a7c15ULL)));
    zt_status st = ZT_OK;
    for (int64_t done = 0; done < count && st == ZT_OK;) {
        int n = count - done < r->cfg.trees ? (int)(count - done) : r->cfg.trees;
        if (index) {
            memcpy(r->drawn, index + done, (size_t)n * sizeof *r->drawn);
        } else {
            zt_replay_stats rs = zt_replay_get_stats(rb);
            if (rs.positions == 0) {
                st = zt_fail(ZT_ERR_INVALID, "reanalyse: the replay buffer is empty");
                break;
            }
            int64_t from = rs.positions_seen - rs.window;
            for (int i = 0; i < n; i++) {
                uint64_t x = zt_rng_u64(&rng);
                r->drawn[i] = from + (int64_t)(x % (uint64_t)rs.window);
            }
        }
        st = refresh_round(r, s, rb, n);
        done += n;
    }
    /* a round that failed may leave trees begun: the next call begins them again */
    if (st != ZT_OK) zt_search_cancel(s);
    r->stats.seconds += zt_now_s() - t0;
    return st;
}

zt_status zt_reanalyser_run(zt_reanalyser *r, zt_replay *rb, int64_t count, uint64_t stream)
{
    return refresh(r, rb, NULL, count, stream);
}

zt_status zt_reanalyser_refresh(zt_reanalyser *r, zt_replay *rb, const int64_t *index, int n,
                                uint64_t stream)
{
    return refresh(r, rb, index, n, stream);
}

zt_reanalyse_stats zt_reanalyser_get_stats(const zt_reanalyser *r)
{
    return r->stats;
}
