/* A run's reanalyse worker (replay/reanalyse.h; DESIGN.md §1): its own net
 * and private evaluator beside the learner, brought to each weight version
 * the learner publishes, then searching reanalyse.fraction x batch stored
 * positions per learner step since the last publication and rewriting their
 * targets in the replay buffer. It runs on the run's thread right after a
 * publication, in the learner's place, so in concurrent mode its time slows
 * the learner and the replay ratio holds the actors back accordingly, and
 * in the alternate and deterministic modes it is one more step of the
 * schedule: which positions it draws and with which search noise depends on
 * the seed and the learner's step alone, so a resumed run repeats it
 * exactly (the buffer and the step are in the checkpoint).
 *
 * The worker owns its net, evaluator and reanalyser; it borrows the game
 * and the settings, which must outlive it. One thread uses it. */
#ifndef ZT_TRAIN_REANALYSIS_H
#define ZT_TRAIN_REANALYSIS_H

#include <stdint.h>

#include "core/status.h"
#include "game/game.h"
#include "nn/nn.h"
#include "replay/reanalyse.h"
#include "replay/replay.h"
#include "train/scheduler.h"
#include "train/train.h"

typedef struct zt_reanalysis zt_reanalysis;

/* *out is NULL (and nothing made) when S->reanalyse_fraction is 0. */
zt_status zt_reanalysis_new(const zt_game *g, const zt_train_settings *S, zt_reanalysis **out);
void zt_reanalysis_free(zt_reanalysis *ra);

/* After a publication of the learner's net `net`: takes its weights and
 * refreshes round(fraction x batch x steps) positions of rb, drawn from the
 * random stream `stream` (the run passes the learner's step). */
zt_status zt_reanalysis_after_publish(zt_reanalysis *ra, const zt_net *net, zt_replay *rb,
                                      int64_t steps, uint64_t stream);

/* A "reanalyse" record in metrics.jsonl when log.seconds have passed since
 * the last (or `force`) and positions were refreshed since: positions
 * (total), rate (refreshed per wall second since the last record), busy
 * (the share of that wall time spent reanalysing), policy_l1 (the mean L1
 * change of the stored policies since the last record), skipped (total). */
void zt_reanalysis_report(zt_reanalysis *ra, zt_scheduler *sched, bool force);

zt_reanalyse_stats zt_reanalysis_stats(const zt_reanalysis *ra);

#endif
