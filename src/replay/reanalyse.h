/* Reanalyse (Schrittwieser et al. 2021, "Online and Offline Reinforcement
 * Learning by Planning with a Learned Model"; DESIGN.md §1): positions
 * stored in the replay buffer are searched again with newer weights, and
 * the fresh search's policy and root value replace their stored targets in
 * place (zt_replay_refresh). The same search over the same model kinds as
 * self-play, so it serves AlphaZero runs (the model over the real game)
 * and MuZero runs (the learned model from the position's observation)
 * alike.
 *
 * A reanalyser owns its search and model (built by an injected model
 * factory over an injected evaluator, as an actor's); it borrows the game
 * and the evaluator, which must outlive it, and whoever owns the
 * evaluator's net changes its weights between calls (the reanalyser
 * caches no evaluation, so nothing goes stale). One thread uses it at a time. Which
 * positions a call refreshes depends only on its `stream` and the buffer,
 * so a deterministic run that reanalyses at fixed points repeats exactly. */
#ifndef ZT_REPLAY_REANALYSE_H
#define ZT_REPLAY_REANALYSE_H

#include <stdint.h>

#include "agent/evaluator.h"
#include "core/status.h"
#include "game/game.h"
#include "replay/replay.h"
#include "search/search.h"

typedef struct zt_reanalyse_config {
    zt_search_config search; /* the search run on each position (sized here) */
    int trees;               /* positions searched at once (one batched search) */
    uint64_t seed;           /* the positions drawn and the search's noise */
} zt_reanalyse_config;

typedef struct zt_reanalyse_stats {
    int64_t positions; /* refreshed */
    int64_t policies;  /* of which with a policy target */
    int64_t skipped;   /* drawn but evicted before their refresh, or chance states (no search) */
    double policy_l1;  /* sum over `policies` of the L1 change of the stored policy */
    double seconds;    /* spent in zt_reanalyser_run */
} zt_reanalyse_stats;

typedef struct zt_reanalyser zt_reanalyser;

/* The model mf builds over ev, with a search of cfg->trees trees. */
zt_status zt_reanalyser_new(const zt_game *g, const zt_model_factory *mf, const zt_evaluator *ev,
                            const zt_reanalyse_config *cfg, zt_reanalyser **out);
void zt_reanalyser_free(zt_reanalyser *r);

/* The largest batch the reanalyser sends its evaluator. */
int zt_reanalyser_eval_batch(const zt_game *g, const zt_reanalyse_config *cfg);

/* Refreshes `count` positions drawn uniformly (with replacement) from rb's
 * sampling window with a random stream of (seed, stream): each is decoded,
 * searched from scratch and rewritten (zt_replay_refresh). A position
 * evicted meanwhile (actors append concurrently) is skipped and counted.
 * ZT_ERR_INVALID if the buffer is empty. */
zt_status zt_reanalyser_run(zt_reanalyser *r, zt_replay *rb, int64_t count, uint64_t stream);

/* The same for the given positions (absolute indices), searched with the
 * search's noise from (seed, stream). */
zt_status zt_reanalyser_refresh(zt_reanalyser *r, zt_replay *rb, const int64_t *index, int n,
                                uint64_t stream);

/* Totals since zt_reanalyser_new. */
zt_reanalyse_stats zt_reanalyser_get_stats(const zt_reanalyser *r);

#endif
