/* A run's reanalyse worker (replay/reanalyse.h; DESIGN.md §1): its own net
 * and private evaluator beside the learner, brought to each weight version
 * the learner publishes (from the learner's weight source, as the actors
 * are: int8 where the version passed the int8 gate), then searching stored
 * positions again and
 * rewriting their targets in the replay buffer: reanalyse.fraction x batch
 * positions per learner step since the last publication.
 *
 * Where it runs. By default on the run's thread right after a publication,
 * in the learner's place: in concurrent mode its time slows the learner and
 * the replay ratio holds the actors back accordingly; in the alternate and
 * deterministic modes it is one more step of the schedule, and which
 * positions it draws and with which search noise depends on the seed and
 * the learner's step alone, so a resumed run repeats it exactly (the buffer
 * and the step are in the checkpoint).
 *
 * With reanalyse.idle (concurrent mode only) it runs on a thread of its own
 * at the scheduler's idle priority (SCHED_IDLE on Linux), so it takes only
 * the core time the learner and the actors leave unused: on two cores the
 * learner sets a Connect Four run's pace and the actor waits part of its
 * time, and that wait becomes reanalyse at no cost to the learner's steps.
 * The fraction is then a ceiling, not a promise: at most fraction x batch
 * positions per learner step, as many as the idle time allows. Which
 * positions it draws depends on thread timing; such a run is not
 * repeatable, as no concurrent run is.
 *
 * The worker owns its net, evaluator, reanalyser and thread; it borrows the
 * game, the settings and (while started) the replay buffer, which must
 * outlive it. Apart from its own thread, one thread calls it. */
#ifndef ZT_TRAIN_REANALYSIS_H
#define ZT_TRAIN_REANALYSIS_H

#include <stdint.h>

#include "core/status.h"
#include "game/game.h"
#include "nn/nn.h"
#include "replay/reanalyse.h"
#include "replay/replay.h"
#include "selfplay/weights.h"
#include "train/scheduler.h"
#include "train/train.h"

typedef struct zt_reanalysis zt_reanalysis;

/* *out is NULL (and nothing made) when S->reanalyse_fraction is 0.
 * `weights` are the learner's published versions (zt_learner_weight_source:
 * every tensor, then the int8 tail where S->int8_actors), borrowed. */
zt_status zt_reanalysis_new(const zt_game *g, const zt_train_settings *S,
                            const zt_weight_source *weights, zt_reanalysis **out);
/* Stops the idle thread first if it runs. */
void zt_reanalysis_free(zt_reanalysis *ra);

/* After a publication of the learner's, for the `steps` learner steps
 * since the last one: on the caller's thread, takes the newest version and
 * refreshes round(fraction x batch x steps) positions of rb, drawn from
 * the random stream `stream` (the run passes the learner's step). With
 * reanalyse.idle, hands that many positions' allowance to the idle thread
 * instead (which takes the newest version before each batched search) and
 * returns at once (rb must be the buffer given to zt_reanalysis_start); an
 * error the thread met since the last call is returned here, with its
 * message. */
zt_status zt_reanalysis_after_publish(zt_reanalysis *ra, zt_replay *rb, int64_t steps,
                                      uint64_t stream);

/* reanalyse.idle: starts the idle thread over rb (nothing without idle, or
 * if it runs). The first publication after the start gives it weights. */
zt_status zt_reanalysis_start(zt_reanalysis *ra, zt_replay *rb);
/* Stops and joins the idle thread, which finishes the batched search it is
 * in (nothing if none runs). The allowance not yet used is kept for the
 * next start. Returns an error the thread met, with its message. */
zt_status zt_reanalysis_stop(zt_reanalysis *ra);

/* A "reanalyse" record in metrics.jsonl when log.seconds have passed since
 * the last (or `force`) and positions were refreshed since: positions
 * (total), rate (refreshed per wall second since the last record), busy
 * (the share of that wall time spent reanalysing; on the idle thread,
 * wall time inside its searches, including time the scheduler gave to
 * other threads), policy_l1 (the mean L1 change of the stored policies
 * since the last record), skipped (total). */
void zt_reanalysis_report(zt_reanalysis *ra, zt_scheduler *sched, bool force);

zt_reanalyse_stats zt_reanalysis_stats(zt_reanalysis *ra);

#endif
