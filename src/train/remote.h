/* Remote actors (DESIGN.md §5): what a training run needs from whoever runs
 * its actors in other processes. src/dist/ implements it over MPI for the
 * learner's rank; train.c knows only this interface (dist comes after train
 * in the layers), so a run without it is the one-process run of old.
 *
 * With opt->remote set, the run builds no local actors: its runner has zero
 * actors and counts what the remote side reports (zt_runner_add_remote),
 * and the remote side feeds the replay buffer and reads the learner's weight
 * store. The implementation owns its context; the run borrows it. */
#ifndef ZT_TRAIN_REMOTE_H
#define ZT_TRAIN_REMOTE_H

#include "core/status.h"
#include "game/game.h"
#include "replay/replay.h"
#include "selfplay/runner.h"
#include "train/learner.h"
#include "train/train.h"

/* The parts of an open run that the remote side uses, all borrowed from the
 * run and valid until stop returns. */
typedef struct zt_train_remote_run {
    const zt_game *game;
    const char *spec; /* zt_game_spec of game */
    const char *run;  /* the run directory (config.ini is written) */
    const zt_train_settings *S;
    zt_replay *rb;       /* trajectories go here (zt_replay_add_game) */
    zt_runner *runner;   /* zero local actors: zt_runner_add_remote */
    zt_learner *learner; /* its weight source, its samples trained */
} zt_train_remote_run;

typedef struct zt_train_remote {
    void *ctx;
    /* Learner threads where learner.threads = 0 (this process's share of
     * its host's cores); 0 leaves the one-process default. */
    int learner_threads;
    /* Called by zt_train_open once the run is set up and config.ini written,
     * before the first weights are published: starts the remote actors. An
     * error stops the run before it starts. */
    zt_status (*start)(void *ctx, const zt_train_remote_run *run);
    /* Called when the run is freed (zt_train_close after its last
     * checkpoint, or zt_train_free), before the parts above are: stops the
     * remote actors. Only after a start that succeeded. */
    void (*stop)(void *ctx);
    /* Polled by the learner's thread while the run goes on: NULL while the
     * remote side can play, else why it cannot (every actor rank lost). The
     * run then ends as done, without the final arena: its checkpoint is
     * written, and zt_train_close (so zt_train_run) returns ZT_ERR_IO with
     * that message. NULL here: never. */
    const char *(*failure)(void *ctx);
} zt_train_remote;

#endif
