/* The scheduler (DESIGN.md §1): a run's periodic work. Metrics records
 * (RUN/metrics.jsonl) and plain log lines on timers, the records denser in
 * a run's first minute; the status line on a terminal; a checkpoint every
 * checkpoint.minutes; the arena every arena.minutes, at the start of a fresh
 * run and at the end.
 *
 * The scheduler owns metrics.jsonl and log.txt (opened for appending by
 * zt_scheduler_new, which routes the log there), and the arena's net and NN
 * cache. It borrows everything in zt_scheduler_parts, which must outlive
 * it. One thread (the run's) calls it. */
#ifndef ZT_TRAIN_SCHEDULER_H
#define ZT_TRAIN_SCHEDULER_H

#include <stdbool.h>
#include <stdint.h>

#include "core/status.h"
#include "game/game.h"
#include "replay/replay.h"
#include "selfplay/runner.h"
#include "train/learner.h"
#include "train/train.h"

typedef struct zt_scheduler_parts {
    const zt_game *game;
    const char *spec; /* zt_game_spec */
    const char *run;  /* the run directory */
    const zt_train_settings *S;
    bool quiet; /* no status line */
    zt_learner *learner;
    zt_runner *runner;
    zt_replay *rb;
    double elapsed0; /* wall seconds of the run's earlier invocations */
    /* Writes a checkpoint (the composition knows the whole state). */
    void *ctx;
    zt_status (*checkpoint)(void *ctx);
} zt_scheduler_parts;

typedef struct zt_scheduler zt_scheduler;

/* Starts the clocks now. First drops the records of metrics.jsonl past
 * where the run continues from (a step beyond the learner's, or a time
 * beyond elapsed0: written after its checkpoint by a run that was killed,
 * or by a killed attempt without one when the run is new), so that steps
 * and times never go back; log.txt keeps every line. ZT_ERR_IO naming the
 * file if a log cannot be opened or rewritten. */
zt_status zt_scheduler_new(const zt_scheduler_parts *parts, zt_scheduler **out);
/* Closes the logs (and routes the log back to stderr alone). */
void zt_scheduler_free(zt_scheduler *s);

/* zt_now_s() when the scheduler was made: this invocation's start. */
double zt_scheduler_started(const zt_scheduler *s);
/* Wall seconds of the run over all its invocations. */
double zt_scheduler_elapsed(const zt_scheduler *s);

/* What is due: metrics records, log lines and the status line always;
 * checkpoints and the arena only where `boundary` says the state is
 * consistent for them (alternate mode: between phases). */
zt_status zt_scheduler_tick(zt_scheduler *s, bool boundary);
/* Appends a record of `kind` to metrics.jsonl: the common fields (t, step,
 * games, positions, kind), then fmt's (JSON members, without braces). */
void zt_scheduler_metric(zt_scheduler *s, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The last metrics records and log line of an invocation. */
void zt_scheduler_final_report(zt_scheduler *s);

/* The arena at the start of a fresh run (step 0, before any other), when
 * the arena has opponents or position sets. */
zt_status zt_scheduler_arena_at_start(zt_scheduler *s);
/* The arena on the final weights, unless it has already seen this step. */
zt_status zt_scheduler_arena_at_end(zt_scheduler *s);
/* True once an arena found every position set played perfectly. */
bool zt_scheduler_perfect(const zt_scheduler *s);

#endif
