/* TEMPORARY SHIM, to be replaced (issue 9 part 5). The resumable training
 * run that src/train/train.h will declare once the training loop is split,
 * with exactly the declarations below, implemented for now in train_shim.c
 * over today's blocking zt_train_run so that libzeroth's runs (run.c) build
 * against the final interface. When train.h declares these: delete
 * train_shim.h and train_shim.c, and in run.c include "train/train.h"
 * instead of "api/train_shim.h". zt_train_request_stop is train.c's own.
 *
 * The caller owns what zt_train_open returns and ends it with
 * zt_train_close; the options' config is borrowed and must outlive it. */
#ifndef ZT_API_TRAIN_SHIM_H
#define ZT_API_TRAIN_SHIM_H

#include <stdbool.h>
#include <stdint.h>

#include "core/status.h"
#include "nn/nn.h"
#include "train/train.h"

typedef struct zt_train zt_train;

typedef struct zt_train_progress {
    int64_t step;           /* learner steps, over all sessions */
    int64_t games;          /* self-play games finished */
    int64_t positions;      /* positions they produced */
    double elapsed;         /* wall seconds of training, over all sessions */
    zt_train_losses losses; /* the last reported averages; zero before any */
} zt_train_progress;

/* Resolves the config, the run directory and what it holds (resume); starts
 * nothing. Errors: unknown keys and bad values, "no game given", a run
 * directory that already holds a run (without resume) or none (with). */
zt_status zt_train_open(const zt_train_options *opt, zt_train **out);

/* Trains until `steps` more learner steps or `seconds` of wall time (0: no
 * such bound), or until the options' limits or a stop request (then *done
 * = true). */
zt_status zt_train_advance(zt_train *t, int64_t steps, double seconds, bool *done);

zt_train_progress zt_train_get_progress(const zt_train *t);

/* Writes the final checkpoint and frees t (NULL is accepted). */
zt_status zt_train_close(zt_train *t);

#endif
