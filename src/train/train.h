/* The training loop (DESIGN.md §1): self-play actors, the replay buffer, the
 * learner with its sampler thread, weight publication, checkpoints with
 * exact resume, and the arena on a schedule, all in one run directory
 * (RUN/config.ini, metrics.jsonl, log.txt, ckpt/NNNNNNNN/), locked by the
 * process that trains in it (RUN/lock).
 *
 * A run is composed of three parts, each in its own file: the learner
 * (learner.h: net, optimizer, sampler, train step, the weight store), the
 * actor runner (selfplay/runner.h: actors and their threads, pulling weight
 * versions and pushing games to the trajectory sink) and the scheduler
 * (scheduler.h: metrics, log and status lines, checkpoints, the arena).
 * train.c composes them and runs the modes; checkpoint.c holds the files.
 *
 * Modes. concurrent: actor threads and the learner run at once, the replay
 * ratio (training samples per new position) enforced by holding back
 * whichever side is ahead. alternate: the classic loop, a generation of games
 * from every actor, then a phase of training. deterministic: alternate on
 * one thread from a fixed seed, so that a run killed and resumed ends with
 * the same weights, bit for bit, as one that never stopped. */
#ifndef ZT_TRAIN_TRAIN_H
#define ZT_TRAIN_TRAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/config.h"
#include "core/status.h"
#include "game/game.h"
#include "nn/device.h"
#include "nn/nn.h"
#include "replay/replay.h"
#include "selfplay/actor.h"
#include "train/int8_gate.h"

/* Opponents the scheduled arena plays, and the longest spec kept. */
#define ZT_TRAIN_MAX_OPPONENTS 8
#define ZT_TRAIN_OPPONENT_LEN 64

typedef enum zt_train_mode {
    ZT_TRAIN_CONCURRENT,
    ZT_TRAIN_ALTERNATE,
    ZT_TRAIN_DETERMINISTIC,
} zt_train_mode;

/* What a run trains (the `algorithm` key). */
typedef enum zt_train_algorithm {
    ZT_ALGO_ALPHAZERO, /* the net evaluates real game positions */
    ZT_ALGO_MUZERO,    /* a learned model: h, g, f nets, K-step unrolled training */
    ZT_ALGO_STOCHASTIC_MUZERO, /* MuZero with afterstates and chance codes */
} zt_train_algorithm;

/* The `algorithm` key's value for a. */
static inline const char *zt_algorithm_name(zt_train_algorithm a)
{
    return a == ZT_ALGO_ALPHAZERO ? "alphazero" : a == ZT_ALGO_MUZERO ? "muzero" : "stochastic_muzero";
}

/* MuZero of either kind: a learned model, unrolled training. */
static inline bool zt_algorithm_is_muzero(zt_train_algorithm a)
{
    return a == ZT_ALGO_MUZERO || a == ZT_ALGO_STOCHASTIC_MUZERO;
}

/* Every setting of a run, read from a config (the keys are documented in
 * configs/<game>.ini). */
typedef struct zt_train_settings {
    uint64_t seed;
    zt_train_algorithm algorithm;
    int unroll; /* muzero.unroll: K, steps of the unrolled loss */
    int td_steps; /* muzero.td_steps: n of the bootstrapped value targets (0: the return) */
    /* muzero.outcome_reward: the game-ending move's reward is its outcome,
     * the absorbing steps after it 0 (zt_replay_unroll) */
    bool outcome_reward;
    double discount; /* muzero.discount: gamma of the search and the n-step targets (1: none) */
    /* muzero.chance = game: Stochastic MuZero's codes are the game's own
     * chance outcomes (replay's u_chance_code), not the encoder's */
    bool chance_labels;
    zt_train_mode mode;
    int actors;           /* actor threads */
    int learner_threads;  /* threads of the learner's net */
    bool learner_threads_auto; /* learner.threads = 0: chosen from the cores */
    zt_evaluator_kind evaluator; /* selfplay.evaluator: private nets or one shared service */
    int inflight;                /* selfplay.inflight: the shared service's batches in flight */
    char backend[32];      /* the nets' backend, after `device` (docs/cuda.md) */
    zt_device device;      /* device: auto (routed by batch size where a GPU is), cpu, cuda[:N] */
    zt_precision precision; /* the learner's (int8 in the config: AUTO here) */
    /* Actors run int8 (precision = int8, or auto where it measures
     * int8.auto_speedup times faster): each published version is quantised
     * and gated (train/int8_gate.h); one that fails runs in `precision`. */
    bool int8_actors;
    /* precision = auto with int8 here (not deterministic, not MuZero): the
     * run's start times the actors' net (zt_int8_speedup) and sets
     * int8_actors by it; int8_speedup is the measured ratio. */
    bool int8_auto;
    double int8_speedup;
    zt_int8_gate_config int8_gate;
    zt_net_config net;
    zt_actor_config actor;
    zt_replay_config replay;
    zt_train_config optimizer;
    int batch;
    double replay_ratio;     /* training samples per new position */
    int publish_every;       /* learner steps between weight publications */
    int64_t min_positions;   /* positions in the buffer before training starts */
    double root_value_weight; /* value target: (1 - w) outcome + w root value */
    /* > 0: the run's model (arena, checkpoints' weights.safetensors) is an
     * exponential moving average of the learner's weights over about this
     * many steps (zt_learner_average_weight); the actors keep the live ones,
     * or with average_actors get the average too (and reanalyse with them) */
    int average_steps;
    bool average_actors;
    /* Reanalyse (replay/reanalyse.h): after each publication the learner's
     * thread searches fraction x batch x (steps since the last one) stored
     * positions again with the new weights and rewrites their targets; with
     * reanalyse_idle a thread of its own at idle priority does, at most
     * that many (train/reanalysis.h). */
    double reanalyse_fraction;   /* 0: off */
    bool reanalyse_idle;         /* concurrent mode: in the cores' idle time */
    bool reanalyse_off_by_mode;  /* idle asked for outside concurrent mode: the
                                  * fraction read was > 0 and is set to 0 */
    int reanalyse_simulations;   /* 0: selfplay.simulations */
    double reanalyse_value_mix;  /* a reanalysed position's value target:
                                  * (1 - m) outcome + m fresh root value */
    int reanalyse_trees;         /* positions searched at once */
    bool prefetch;           /* sampler thread */
    int alternate_steps;     /* alternate: steps per phase (0: from replay_ratio) */
    double checkpoint_minutes;
    int keep_checkpoints;    /* newest checkpoints kept (0: all) */
    double log_seconds;      /* plain log lines and self-play metrics */
    double arena_minutes;    /* arena schedule (0: only at exit) */
    int arena_games;         /* per opponent (0: none) */
    bool arena_duplicate;    /* duplicate dice in games with chance (arena.h) */
    int arena_num_opponents; /* arena.opponents, each a zt_player_new spec */
    char arena_opponents[ZT_TRAIN_MAX_OPPONENTS][ZT_TRAIN_OPPONENT_LEN];
    bool arena_positions;    /* the solver position sets of the game */
    int arena_positions_limit;
    int arena_sims;
    bool arena_stop_on_perfect; /* end the run once every position set is played perfectly */
    const char *data_dir;
    /* selfplay.start_positions: position files (comma-separated; a path, or
     * a name under the reference data like arena.data_dir's), loaded by
     * zt_train_start_states into actor.start_states; "" for none */
    const char *start_positions;
    /* under mpirun (docs/distributed.md) */
    int dist_learners;    /* ranks 0..L-1 learn data-parallel */
    double dist_timeout;  /* seconds without word from a rank before it counts as lost */
    int dist_check_every; /* learner steps between checks that the learners agree */
} zt_train_settings;

/* Reads every training key of cfg (defaults for the game g). Unknown keys are
 * left for zt_config_check_unused. */
zt_status zt_train_settings_read(zt_config *cfg, const zt_game *g, zt_train_settings *out);

/* precision = auto's int8 actors (S->int8_auto, after `device` has set the
 * backend): times the actors' net at their batch on one thread, int8
 * against the fallback precision (zt_int8_speedup, about 0.5 s), and sets
 * S->int8_speedup and S->int8_actors (from int8.auto_speedup times
 * faster). Nothing where int8_auto is not set. */
zt_status zt_train_settings_choose_int8(const zt_game *g, zt_train_settings *S);

/* The search the arena plays with (arena.sims > 0): the actors' search with
 * arena.sims simulations, no Gumbel noise, no Dirichlet noise, and
 * capacities sized for that. */
zt_search_config zt_train_arena_search(const zt_train_settings *S, const zt_game *g);

/* Reads the positions of S->start_positions (nothing when it is empty) and
 * points S->actor.start_states at them; the caller frees *owned (NULL for
 * none) after the actors. Errors name the file: one that cannot be read,
 * a malformed or finished position, a game without position files. */
zt_status zt_train_start_states(const zt_game *g, zt_train_settings *S, uint8_t **owned);

/* Threads a run keeps busy at once. More than there are cores made runs up
 * to 30x slower: oneDNN's OpenMP threads spin at barriers (libgomp's
 * default wait policy) on cores that another busy thread needs. */
typedef struct zt_train_threads {
    int actors;    /* actor threads */
    int learner;   /* the learner's net threads (the arena's net, in its place, as many) */
    int evaluator; /* the shared evaluator's net threads (0: private nets of one thread) */
    int busy;      /* busy at once: concurrent mode adds self-play (the actors, or with
                    * the shared evaluator actors - 1 + its threads) to the learner; the
                    * other modes alternate, so the larger of the two */
    int cores;
    bool oversubscribed; /* busy > cores */
} zt_train_threads;

/* The budget of settings S on `cores` cores. */
zt_train_threads zt_train_thread_budget(const zt_train_settings *S, int cores);

/* The budget on this machine (zt_cpu_count) of the settings in cfg for
 * `game` (reads cfg's training keys, as zt_train_open will). A program may
 * call it before creating any net to set OMP_WAIT_POLICY=passive for the
 * OpenMP runtime, which reads it at load time (the library itself never
 * changes the environment; zeroth train runs itself again with it set). */
zt_status zt_train_check_threads(zt_config *cfg, const char *game, zt_train_threads *out);

typedef struct zt_train_options {
    const char *game;       /* registry name; NULL to take it from cfg's "game" */
    zt_config *config;      /* settings (a file, --set overrides); borrowed */
    const char *run_dir;    /* NULL: runs/<game>-<YYYYmmdd-HHMMSS> */
    bool resume;            /* continue run_dir from its latest checkpoint */
    double minutes;         /* stop after this much wall time in this invocation (0: none) */
    int64_t steps;          /* stop at this learner step, counted over resumes (0: none) */
    bool quiet;             /* no status line */
    /* actors in other processes (train/remote.h; MPI ranks); NULL: local
     * actor threads. Borrowed. */
    const struct zt_train_remote *remote;
} zt_train_options;

/* Runs training until a limit, a stop request or perfect play (if asked);
 * writes a checkpoint at exit. zt_train_open, zt_train_advance until done,
 * zt_train_close. */
zt_status zt_train_run(const zt_train_options *opt);

/* Asks a running zt_train_run (or zt_train_advance) to stop; the run then
 * ends as done, and zt_train_close writes the checkpoint (without the final
 * arena). Async-signal-safe (for a SIGINT handler). */
void zt_train_request_stop(void);

/* ---- a run in steps (the library's training handle) ---- */

typedef struct zt_train zt_train;

/* Resolves the config, makes or checks the run directory, sets up the
 * learner, the actors and the scheduler, resumes from the latest checkpoint
 * if asked, writes config.ini and opens the logs. Starts nothing: no thread
 * runs between calls. opt is copied; opt->config is read here only. The
 * caller owns *out: zt_train_close, or zt_train_free after an error. */
zt_status zt_train_open(const zt_train_options *opt, zt_train **out);

/* Trains until `steps` more learner steps (0: no such bound) or `seconds`
 * of wall time (0: none) have passed, or until the run is done: opt's limits
 * (minutes from zt_train_open, steps over resumes), a stop request, perfect
 * play with arena.stop_on_perfect, or a failed actor. *done tells which. The
 * first call plays the arena at step 0 of a fresh run. Concurrent mode
 * starts the actor threads and stops them before returning; alternate and
 * deterministic modes pause between learner steps or between generations,
 * and a run advanced in chunks trains exactly as one that was not. */
zt_status zt_train_advance(zt_train *t, int64_t steps, double seconds, bool *done);

typedef struct zt_train_progress {
    int64_t step;              /* learner steps, over resumes */
    int64_t games, positions;  /* games and positions played, over resumes */
    double elapsed;            /* wall seconds, over resumes */
    zt_train_losses last_loss; /* of the last learner step */
    uint64_t published;        /* weight versions published, over resumes */
    bool perfect;              /* an arena found every position set played perfectly */
} zt_train_progress;

/* Between calls to zt_train_advance, on the caller's thread. */
zt_train_progress zt_train_get_progress(const zt_train *t);

/* Ends a run: the last metrics and log line, the arena on the final weights
 * (as at the end of zt_train_run, not after a stop request), a checkpoint,
 * then frees t (also when it fails). */
zt_status zt_train_close(zt_train *t);
/* Frees t without a checkpoint (after an error). NULL is fine. */
void zt_train_free(zt_train *t);

/* ---- checkpoints (checkpoint.c) ---- */

/* The loop's counters and random streams, in ckpt/NNNNNNNN/state.bin. */
typedef struct zt_train_state {
    int64_t step;            /* learner steps */
    int64_t samples_trained; /* rows of all batches trained on */
    int64_t phase_steps;     /* alternate: steps done in the current phase */
    uint64_t generation;     /* alternate: generations played */
    uint64_t published;      /* weight versions published */
    double elapsed;          /* wall seconds over all invocations */
    zt_rng sample_rng;       /* the learner's batch stream */
    char game[128];          /* game spec */
} zt_train_state;

/* Writes state.bin (versioned, checksummed) atomically. */
zt_status zt_train_state_save(const zt_train_state *s, const char *path);
/* ZT_ERR_CORRUPT naming the problem for a truncated or damaged file. */
zt_status zt_train_state_load(const char *path, zt_train_state *s);

/* RUN/ckpt/NNNNNNNN/ (NNNNNNNN: state->step) with weights.safetensors,
 * optimizer.safetensors, replay.bin and state.bin, built in
 * RUN/ckpt/NNNNNNNN.tmp/ and renamed into place whole (replacing one of the
 * same step), then RUN/ckpt/latest naming it; the newest `keep` complete
 * checkpoints are kept (keep 0: all), latest always. A write that fails
 * undoes itself: the previous checkpoint stays the run's, byte for byte.
 * What "complete" means: checkpoint.c, at the top. With `model` (not NULL:
 * learner.average's average) weights.safetensors holds the model, what
 * eval, play and serve load, and live.safetensors the net the learner
 * trains. */
zt_status zt_checkpoint_write(const char *run, const char *spec, const zt_net *net,
                              const zt_net *model, const zt_trainer *trainer, zt_replay *rb,
                              const zt_train_state *state, int keep);
/* Reads the checkpoint zt_checkpoint_find picks into net (live.safetensors
 * where it has one, else weights.safetensors), model (weights.safetensors;
 * NULL: not read), trainer and *state, and replaces *rb (freed) with its
 * buffer. Refuses a checkpoint of another game spec, and one whose
 * optimizer and state disagree. */
zt_status zt_checkpoint_load(const char *run, const zt_game *g, const char *spec, zt_net *net,
                             zt_net *model, zt_trainer *trainer, zt_replay **rb,
                             zt_train_state *state);

/* Whether RUN/ckpt/NAME is a complete checkpoint (see checkpoint.c). */
bool zt_checkpoint_complete(const char *run, const char *name);

/* The checkpoint a run continues from, its name ("00000300") into name:
 * the one ckpt/latest names when it is complete; else (latest missing,
 * damaged, or naming a missing or incomplete directory) the newest
 * complete one, with a warning. Errors: ZT_ERR_NOT_FOUND "no checkpoint in
 * 'RUN'" (no latest, no complete checkpoint); ZT_ERR_CORRUPT naming what
 * latest names and why it is not complete, when none remains; ZT_ERR_IO.
 * Reads only. */
zt_status zt_checkpoint_find(const char *run, char *name, size_t cap);

/* Tidies RUN/ckpt/ before a run uses it, under the run's lock (see
 * checkpoint.c: staging directories and temp files, cut-short and
 * uncommitted checkpoints removed, damaged ones set aside, each with a
 * warning), then points latest at the checkpoint zt_checkpoint_find picks.
 * *found tells whether one remains (its name in name). Errors: ZT_ERR_IO
 * (nothing is removed on a read that failed), ZT_ERR_CORRUPT as
 * zt_checkpoint_find. */
zt_status zt_checkpoint_recover(const char *run, bool *found, char *name, size_t cap);

#endif
