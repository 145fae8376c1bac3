/* Data-parallel learners (learners.c): the allreduce of ranks 0..L-1 behind
 * a zt_learner_reducer, and the learner ranks other than 0. Internal to
 * src/dist/. */
#ifndef ZT_DIST_LEARNERS_H
#define ZT_DIST_LEARNERS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/status.h"
#include "train/learner.h"
#include "train/train.h"

typedef struct zt_dist_dp zt_dist_dp;

/* Collective over ranks 0..learners-1: their communicator, rank 0's
 * weights, optimizer state and *step given to the others (so a resumed run
 * starts them all from its checkpoint), and l's reducer set. The caller
 * owns *out (zt_dist_dp_free, after l stops using it). */
zt_status zt_dist_dp_new(int learners, zt_learner *l, const zt_train_settings *S, int64_t *step,
                         zt_dist_dp **out);
/* Rank 0 at the end: the allreduce that tells the other learners to stop
 * (their step is skipped). */
zt_status zt_dist_dp_stop(zt_dist_dp *dp);
/* True once a collective failed or timed out (a learner rank is lost). */
bool zt_dist_dp_broken(const zt_dist_dp *dp);
void zt_dist_dp_free(zt_dist_dp *dp);

/* A learner rank other than 0, given the run's config: trains in step with
 * rank 0 on the trajectories rank 0 forwards until rank 0 stops it. Talks
 * to rank 0 over the same messages as an actor rank (HELLO with no actors,
 * TRAJ in, STOP, BYE). Errors are warned and reported to rank 0. */
void zt_dist_learner_rank_main(const char *config_text, int learners);

#endif
