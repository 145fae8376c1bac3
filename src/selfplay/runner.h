/* The actor runner (DESIGN.md §1): the actors of one process and their
 * threads. It takes newer weights from the weight source between moves,
 * hands finished games to the trajectory sink, counts the games and
 * positions it pushed, and sums its actors' statistics.
 *
 * Two schedules. Concurrent (zt_runner_start .. zt_runner_stop): each actor
 * steps its games continuously on its own thread, polling the source
 * before every step and waiting while the hold hook says the actors are
 * ahead (the replay ratio). Generations (zt_runner_play_generation, then
 * zt_runner_flush): every actor plays one generation from its seed, several
 * actors on a pool, one on the calling thread; the flush pushes the games in
 * actor order, so thread timing changes nothing (exact resume).
 *
 * Remote actors (DESIGN.md §5): a runner of zero actors stands for actors
 * in other processes (the learner's MPI rank). Its games, positions and
 * statistics are what zt_runner_add_remote reports, so whoever reads the
 * counters (the replay ratio, the status line, metrics) counts every rank.
 *
 * The runner owns its actors and threads (zt_runner_free); it borrows the
 * game, the sink, the source and the hooks' context, which must outlive it.
 * Its functions are called from one thread, the run's; the counters and
 * zt_runner_failed may be read from any. */
#ifndef ZT_SELFPLAY_RUNNER_H
#define ZT_SELFPLAY_RUNNER_H

#include <stdbool.h>
#include <stdint.h>

#include "core/status.h"
#include "game/game.h"
#include "agent/evaluator.h"
#include "nn/nn.h"
#include "selfplay/actor.h"
#include "selfplay/sink.h"
#include "selfplay/weights.h"

/* What the runner asks its owner. Every hook is optional (NULL). */
typedef struct zt_runner_hooks {
    void *ctx;
    /* Concurrent: true while the actors must wait, given the positions
     * pushed so far. Called from actor threads with the runner's lock held,
     * at least every 50 ms while it holds them. */
    bool (*hold)(void *ctx, int64_t positions);
    /* Generations: true to abandon the generation being played (Ctrl-C). */
    bool (*stop)(void *ctx);
    /* Generations with one actor (on the calling thread): after each step,
     * for the status line; an error ends the generation. */
    zt_status (*tick)(void *ctx);
} zt_runner_hooks;

typedef struct zt_runner_config {
    int actors; /* 0: no local actors, only remote ones (zt_runner_add_remote) */
    zt_actor_config actor; /* each actor's id is its index */
    /* the model the actors search with (zero: AlphaZero's) */
    zt_model_factory model;
    /* the actors' nets: one each on its actor's thread (private), or one
     * behind an evaluator service on shared_threads threads (shared) */
    zt_net_config net;
    const char *backend;
    zt_precision precision;
    /* int8 actors: floats of the int8 tail after the published tensors
     * (zt_net_take_int8_tail; 0: none). The nets start in `precision` and
     * switch with each version's tail. */
    size_t weights_tail;
    zt_evaluator_kind evaluator;
    int shared_threads;
    int inflight; /* shared: merged batches in flight (zt_eval_service_new; 0: 1) */
} zt_runner_config;

typedef struct zt_runner zt_runner;

zt_status zt_runner_new(const zt_game *g, const zt_runner_config *cfg, const zt_traj_sink *sink,
                        const zt_weight_source *source, const zt_runner_hooks *hooks,
                        zt_runner **out);
/* Stops the threads if running, frees the actors. */
void zt_runner_free(zt_runner *r);

int zt_runner_actors(const zt_runner *r);
/* The counts to continue from (a resumed run's buffer). */
void zt_runner_set_totals(zt_runner *r, int64_t games, int64_t positions);
/* Games and positions pushed to the sink (and the totals set before). */
int64_t zt_runner_games(const zt_runner *r);
int64_t zt_runner_positions(const zt_runner *r);
/* The actors' statistics summed, as of each one's last step. */
zt_actor_stats zt_runner_stats(zt_runner *r);
/* The highest resignation threshold the local actors use, as of each one's
 * last step (zt_actor_resign_threshold); ZT_RESIGN_NONE when none does. */
float zt_runner_resign_threshold(zt_runner *r);

/* Remote actors (any thread): adds games and positions that reached the
 * sink from elsewhere to the counts, sets what the remote actors' statistics
 * sum to now (NULL: unchanged), and wakes whoever waits for games. */
void zt_runner_add_remote(zt_runner *r, int64_t games, int64_t positions,
                          const zt_actor_stats *remote_stats);

/* Wakes the actors waiting on the hold hook (and whoever waits for games),
 * so that they ask it again now: its inputs changed (an MPI allowance). */
void zt_runner_wake(zt_runner *r);

/* Every actor takes the newest version of the source now (if it holds an
 * older one). Not while the threads run. */
zt_status zt_runner_pull_weights(zt_runner *r);

/* Concurrent: starts one thread per actor ("cannot start actor thread N").
 * The actors must be continuous ones (zt_actor_config.continuous). */
zt_status zt_runner_start(zt_runner *r);
/* Stops and joins the threads; the first actor's error, if one failed
 * ("actor: ..."). Does nothing when they are not running. */
zt_status zt_runner_stop(zt_runner *r);
/* True once an actor thread has failed (the threads then end). */
bool zt_runner_failed(zt_runner *r);
/* Under the runner's lock: if pred(ctx), waits up to `seconds` for an actor
 * to push games. Returns what pred said. */
bool zt_runner_wait_if(zt_runner *r, bool (*pred)(void *ctx), void *ctx, double seconds);
/* Which side of a concurrent run waits: the nanoseconds the actor threads
 * have spent held by the hold hook (summed over the threads), and those
 * zt_runner_wait_if's callers have spent waiting for games. */
typedef struct zt_runner_waits {
    uint64_t actors_ns, learner_ns;
} zt_runner_waits;
zt_runner_waits zt_runner_get_waits(const zt_runner *r);

/* Generations: starts generation `generation` in every actor and plays it to
 * its end (or until the stop hook says so: then it returns ZT_OK with the
 * generation unfinished, to be dropped). An actor's error names it
 * ("actor N: ..."). */
zt_status zt_runner_play_generation(zt_runner *r, uint64_t generation);
/* Pushes every actor's finished games to the sink, actor by actor. */
zt_status zt_runner_flush(zt_runner *r);

#endif
