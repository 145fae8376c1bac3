/* The training run: see train.h. This file composes the learner, the actor
 * runner and the scheduler, owns the run directory and the replay buffer,
 * and runs the two schedules (concurrent, and alternate with deterministic
 * as its one-thread case). */
#include "train/train.h"

#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include "core/alloc.h"
#include "core/fileio.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/thread.h"
#include "core/timer.h"
#include "selfplay/runner.h"
#include "train/learner.h"
#include "train/reanalysis.h"
#include "train/run.h"
#include "train/remote.h"
#include "train/scheduler.h"

static atomic_int stop_requested;

void zt_train_request_stop(void)
{
    atomic_store(&stop_requested, 1);
}

struct zt_train {
    zt_train_options opt;
    zt_train_settings S;
    zt_game *game;
    char spec[128];
    char run[PATH_MAX];

    zt_replay *rb;
    zt_traj_sink sink; /* into rb */
    zt_learner *learner;
    zt_net *model; /* learner.average: the average's net, for checkpoints (ref, fp32) */
    zt_runner *runner;
    zt_scheduler *sched;
    zt_reanalysis *reanalysis; /* NULL: reanalyse.fraction 0 */
    zt_dir_lock *lock; /* RUN/lock, held from open to free */
    uint8_t *start_states; /* selfplay.start_positions, read (the actors borrow them) */

    /* the alternate schedule's place, saved in checkpoints */
    int64_t phase_steps; /* steps done in the current training phase */
    uint64_t generation; /* generations played */
    double elapsed0;     /* wall seconds of earlier invocations */

    bool started; /* set up and logged: free reports where it stopped */
    bool remote_started; /* opt.remote->start succeeded */
    bool first_advance_done;
    /* the bounds of the current zt_train_advance (-1, 0: none) */
    int64_t until_step;
    double until_time;
};

/* ---- checkpoints ---- */

static zt_status write_checkpoint(zt_train *t)
{
    zt_learner_counters c = zt_learner_get_counters(t->learner);
    zt_train_state st = {.step = c.step,
                         .samples_trained = c.samples_trained,
                         .phase_steps = t->phase_steps,
                         .generation = t->generation,
                         .published = c.published,
                         .elapsed = zt_scheduler_elapsed(t->sched),
                         .sample_rng = c.sample_rng};
    snprintf(st.game, sizeof st.game, "%s", t->spec);
    if (t->model) zt_net_flat_set(t->model, zt_learner_average(t->learner));
    return zt_checkpoint_write(t->run, t->spec, zt_learner_net(t->learner), t->model,
                               zt_learner_trainer(t->learner), t->rb, &st, t->S.keep_checkpoints);
}

static zt_status scheduled_checkpoint(void *ctx)
{
    return write_checkpoint(ctx);
}

static zt_status load_checkpoint(zt_train *t)
{
    zt_train_state st;
    ZT_TRY(zt_checkpoint_load(t->run, t->game, t->spec, zt_learner_net(t->learner), t->model,
                              zt_learner_trainer(t->learner), &t->rb, &st));
    zt_learner_set_replay(t->learner, t->rb);
    if (t->model) {
        /* the average goes on from the checkpoint's model (its live weights
         * where the run had no average before) */
        float *avg = zt_xmalloc(zt_net_flat_size(t->model) * sizeof *avg);
        zt_net_flat_get(t->model, avg);
        zt_learner_set_average(t->learner, avg);
        free(avg);
    }
    zt_learner_counters c = {.step = st.step,
                             .samples_trained = st.samples_trained,
                             .published = st.published,
                             .sample_rng = st.sample_rng};
    zt_learner_set_counters(t->learner, &c);
    t->phase_steps = st.phase_steps;
    t->generation = st.generation;
    t->elapsed0 = st.elapsed;
    return ZT_OK;
}

/* ---- when to stop ---- */

static int64_t step_of(const zt_train *t)
{
    return zt_learner_get_counters(t->learner).step;
}

/* Why the remote actors can no longer play (zt_train_remote.failure), or
 * NULL. */
static const char *remote_failure(const zt_train *t)
{
    const zt_train_remote *r = t->opt.remote;
    return t->remote_started && r->failure ? r->failure(r->ctx) : NULL;
}

/* The run is over: a limit of the options, a stop request, perfect play
 * (if asked), a failed actor or the remote actors' end. */
static bool limits_reached(zt_train *t)
{
    if (atomic_load(&stop_requested) || remote_failure(t)) return true;
    if (t->opt.steps > 0 && step_of(t) >= t->opt.steps) return true;
    if (t->opt.minutes > 0 && zt_now_s() - zt_scheduler_started(t->sched) >= t->opt.minutes * 60)
        return true;
    if (t->S.arena_stop_on_perfect && zt_scheduler_perfect(t->sched)) return true;
    return zt_runner_failed(t->runner);
}

/* The run is over, or this zt_train_advance has done its share. */
static bool should_pause(zt_train *t)
{
    if (limits_reached(t)) return true;
    if (t->until_step >= 0 && step_of(t) >= t->until_step) return true;
    return t->until_time > 0 && zt_now_s() >= t->until_time;
}

/* ---- reanalyse ---- */

/* Publishes the learner's weights, then (reanalyse on) refreshes stored
 * targets with them for the `steps` learner steps since the last time. */
static zt_status publish(zt_train *t, int64_t steps)
{
    zt_learner_publish(t->learner);
    if (!t->reanalysis) return ZT_OK;
    /* the stream is the step, not the version number: a resumed run
     * publishes once more at its start, so versions shift but steps don't */
    zt_status st = zt_reanalysis_after_publish(t->reanalysis, t->rb, steps, (uint64_t)step_of(t));
    if (st == ZT_OK) zt_reanalysis_report(t->reanalysis, t->sched, false);
    return st;
}

/* ---- concurrent mode ---- */

/* The actors may lead the learner by this many positions beyond the replay
 * ratio before they wait. */
static int64_t actor_lead(const zt_train *t)
{
    int64_t lead = (int64_t)(4.0 * t->S.batch / t->S.replay_ratio);
    int64_t per_round = 2 * (int64_t)t->S.actor.games * zt_runner_actors(t->runner);
    return lead > per_round ? lead : per_round;
}

/* The runner's hold hook, on actor threads: the learner's progress is read
 * from its atomic counter. */
static bool actors_ahead(void *ctx, int64_t pos)
{
    const zt_train *t = ctx;
    if (pos < t->S.min_positions) return false;
    double allowed = (double)zt_learner_samples_trained(t->learner) / t->S.replay_ratio;
    return (double)(pos - t->S.min_positions) > allowed + (double)actor_lead(t);
}

static bool learner_ahead(void *ctx)
{
    const zt_train *t = ctx;
    int64_t pos = zt_runner_positions(t->runner);
    if (pos < t->S.min_positions) return true;
    return (double)(zt_learner_samples_trained(t->learner) + t->S.batch) >
           t->S.replay_ratio * (double)pos;
}

static zt_status run_concurrent(zt_train *t)
{
    zt_status st = zt_runner_start(t->runner);
    if (st == ZT_OK) st = zt_reanalysis_start(t->reanalysis, t->rb);
    while (st == ZT_OK && !should_pause(t)) {
        bool wait = zt_runner_wait_if(t->runner, learner_ahead, t, 0.05);
        if (!wait) {
            st = zt_learner_step(t->learner);
            if (st == ZT_OK && step_of(t) % t->S.publish_every == 0)
                st = publish(t, t->S.publish_every);
        }
        if (st == ZT_OK) st = zt_scheduler_tick(t->sched, true);
    }
    /* the actors and the idle reanalyse thread stop before a checkpoint
     * reads the buffer; an error of the loop's own comes first (its message
     * is kept), then one the idle thread met since its last report */
    zt_status idle = zt_reanalysis_stop(t->reanalysis);
    if (st == ZT_OK) st = idle;
    char why[ZT_MESSAGE_MAX] = "";
    if (st != ZT_OK) snprintf(why, sizeof why, "%s", zt_error_message());
    zt_status stopped = zt_runner_stop(t->runner);
    zt_learner_pause(t->learner);
    if (st != ZT_OK) return zt_fail(st, "%s", why);
    return stopped;
}

/* ---- alternate and deterministic modes ---- */

static bool training_due(const zt_train *t)
{
    int64_t pos = zt_runner_positions(t->runner);
    if (pos < t->S.min_positions) return false;
    if (t->S.alternate_steps > 0) return t->phase_steps < t->S.alternate_steps;
    return (double)(zt_learner_samples_trained(t->learner) + t->S.batch) <=
           t->S.replay_ratio * (double)pos;
}

static zt_status run_alternate(zt_train *t)
{
    zt_status st = ZT_OK;
    bool stopping = false;
    while (st == ZT_OK && !stopping) {
        /* training phase; a stop inside it leaves phase_steps in the
         * checkpoint so that a resumed run finishes the same phase */
        while (st == ZT_OK && training_due(t)) {
            if ((stopping = should_pause(t))) break;
            st = zt_learner_step(t->learner);
            if (st == ZT_OK) t->phase_steps++;
            if (st == ZT_OK) st = zt_scheduler_tick(t->sched, false);
        }
        zt_learner_pause(t->learner);
        if (st != ZT_OK || stopping) break;
        if (t->phase_steps > 0) {
            st = publish(t, t->phase_steps);
            if (st == ZT_OK) st = zt_runner_pull_weights(t->runner);
            t->phase_steps = 0;
        }
        if (st == ZT_OK) st = zt_scheduler_tick(t->sched, true);
        if (st != ZT_OK || (stopping = should_pause(t))) break;
        /* self-play phase: one generation from every actor, appended in
         * actor order so that thread timing changes nothing */
        st = zt_runner_play_generation(t->runner, t->generation);
        if (st != ZT_OK || atomic_load(&stop_requested))
            break; /* an unfinished generation is dropped */
        st = zt_runner_flush(t->runner);
        t->generation++;
        if (st == ZT_OK) st = zt_scheduler_tick(t->sched, false);
    }
    zt_learner_pause(t->learner);
    return st;
}

/* The runner's hooks for generations. */
static bool generation_stop(void *ctx)
{
    (void)ctx;
    return atomic_load(&stop_requested);
}

static zt_status generation_tick(void *ctx)
{
    zt_train *t = ctx;
    return zt_scheduler_tick(t->sched, false);
}

/* ---- setup ---- */

/* The run directory: checked, created (a new run), locked, then tidied
 * (zt_checkpoint_recover). A resume needs a checkpoint; a new run needs a
 * directory without one. */
static zt_status open_run_dir(zt_train *t)
{
    const zt_train_options *opt = &t->opt;
    if (opt->run_dir) {
        ZT_TRY(zt_run_dir_check(opt->run_dir));
        if (strlen(opt->run_dir) >= sizeof t->run - 64)
            return zt_fail(ZT_ERR_INVALID, "run directory name too long: '%.100s...'",
                           opt->run_dir);
        snprintf(t->run, sizeof t->run, "%s", opt->run_dir);
    } else {
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        char stamp[32];
        strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
        snprintf(t->run, sizeof t->run, "runs/%s-%s", t->game->name, stamp);
    }
    struct stat sb;
    if (opt->resume && (stat(t->run, &sb) != 0 || !S_ISDIR(sb.st_mode)))
        return zt_fail(ZT_ERR_NOT_FOUND, "%s: no such run directory", t->run);
    if (!opt->resume) ZT_TRY(zt_mkdirs(t->run));
    /* before anything in it is read or changed: another process may be
     * writing a checkpoint there */
    ZT_TRY(zt_dir_lock_acquire(t->run, &t->lock));
    char name[64];
    if (!opt->resume) {
        zt_status st = zt_checkpoint_find(t->run, name, sizeof name);
        if (st == ZT_OK || st == ZT_ERR_CORRUPT)
            return zt_fail(ZT_ERR_INVALID, "%s already holds a run (continue it with --resume %s)",
                           t->run, t->run);
        if (st != ZT_ERR_NOT_FOUND) return st;
    }
    bool found = false;
    ZT_TRY(zt_checkpoint_recover(t->run, &found, name, sizeof name));
    if (opt->resume && !found)
        return zt_fail(ZT_ERR_NOT_FOUND, "%s: no checkpoint to resume (ckpt/latest missing)",
                       t->run);
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/ckpt", t->run);
    return zt_mkdirs(path);
}

/* The buffer and the learner, then (a resume) their checkpoint, then the
 * actors over the buffer that will be used. */
static zt_status setup(zt_train *t)
{
    const zt_train_settings *S = &t->S;
    zt_game_spec(t->game, t->spec, sizeof t->spec);
    /* remote actors: the learner takes this process's share of the cores */
    if (t->opt.remote && S->learner_threads_auto && t->opt.remote->learner_threads > 0)
        t->S.learner_threads = t->opt.remote->learner_threads;
    if (S->device.kind == ZT_DEVICE_AUTO) {
        /* With a GPU: the routed backend, its crossover measured for the
         * actors' nets (one thread each, or the shared service's) and
         * cached in the run directory. Without one: `backend` as read. */
        const char *be;
        int threads = S->evaluator == ZT_EVALUATOR_SHARED ? S->actors : 1;
        ZT_TRY(zt_device_resolve(S->device, &S->net, S->backend, S->precision, threads, t->run,
                                 &be));
        if (be != t->S.backend) snprintf(t->S.backend, sizeof t->S.backend, "%s", be);
    }
    ZT_TRY(zt_train_settings_choose_int8(t->game, &t->S));
    ZT_TRY(zt_replay_new(t->game, &S->replay, &t->rb));
    ZT_TRY(zt_learner_new(t->game, S, t->rb, &t->learner));
    if (S->average_steps > 0) ZT_TRY(zt_net_new(&S->net, "ref", ZT_PRECISION_FP32, 1, &t->model));
    ZT_TRY(zt_reanalysis_new(t->game, S, zt_learner_weight_source(t->learner), &t->reanalysis));
    if (t->opt.resume) ZT_TRY(load_checkpoint(t));
    t->sink = zt_traj_sink_replay(t->rb);
    ZT_TRY(zt_train_start_states(t->game, &t->S, &t->start_states));
    if (S->actor.num_start_states > 0)
        zt_info("self-play: %.0f %% of games start from %d positions of %s",
                100.0 * S->actor.start_fraction, S->actor.num_start_states, S->start_positions);
    zt_runner_config rc = {.actors = t->opt.remote ? 0 : S->actors,
                           .actor = S->actor,
                           .net = S->net,
                           .backend = S->backend,
                           .precision = S->precision,
                           .weights_tail = zt_learner_weights_tail(t->learner),
                           .evaluator = S->evaluator,
                           .shared_threads = S->actors,
                           .inflight = S->inflight};
    zt_runner_hooks hooks = {
        .ctx = t, .hold = actors_ahead, .stop = generation_stop, .tick = generation_tick};
    ZT_TRY(zt_runner_new(t->game, &rc, &t->sink, zt_learner_weight_source(t->learner), &hooks,
                         &t->runner));
    zt_replay_stats rs = zt_replay_get_stats(t->rb);
    zt_runner_set_totals(t->runner, rs.games_seen, rs.positions_seen);
    return ZT_OK;
}

static const char *mode_name(zt_train_mode m)
{
    return m == ZT_TRAIN_CONCURRENT  ? "concurrent"
           : m == ZT_TRAIN_ALTERNATE ? "alternate"
                                     : "deterministic";
}

/* The oversubscription guard (zt_train_threads): a warning with the
 * numbers, and whether the OpenMP threads wait passively. */
static void warn_oversubscribed(const zt_train *t)
{
    zt_train_threads b = zt_train_thread_budget(&t->S, zt_cpu_count());
    if (!b.oversubscribed) return;
    const char *policy = getenv("OMP_WAIT_POLICY");
    bool passive = policy && strcasecmp(policy, "passive") == 0;
    zt_warn("%d threads busy at once on %d cores (%d actor(s)%s, learner %d, shared evaluator "
            "%d): %s",
            b.busy, b.cores, b.actors, t->S.mode == ZT_TRAIN_CONCURRENT ? " beside the learner" : "",
            b.learner, b.evaluator,
            passive ? "OpenMP threads wait passively (OMP_WAIT_POLICY=passive)"
                    : "OpenMP threads spin while they wait, which can slow the run many times; "
                      "set OMP_WAIT_POLICY=passive before the program starts (zeroth train does), "
                      "or lower actors or learner.threads");
}

static void log_start(zt_train *t)
{
    const zt_train_settings *S = &t->S;
    warn_oversubscribed(t);
    const zt_net *net = zt_learner_net(t->learner);
    char arch[256];
    zt_net_config_format(&S->net, arch, sizeof arch);
    zt_info("train %s in %s: mode %s, %d actor(s) x %d games, %s %d sims (K=%d), net %s on %s/%s, "
            "%zu parameters",
            t->spec, t->run, mode_name(S->mode), zt_runner_actors(t->runner), S->actor.games,
            S->actor.search.algorithm == ZT_SEARCH_GUMBEL ? "gumbel" : "puct",
            S->actor.search.num_simulations, S->actor.search.leaves_per_round, arch,
            zt_net_backend_name(net), zt_precision_name(zt_net_precision(net)),
            zt_net_param_count(net));
    if (S->int8_auto)
        zt_info("precision auto: %s actors (int8 runs their net at %.2fx %s's speed here, one "
                "thread at batch %d; int8 from int8.auto_speedup = %g)",
                S->int8_actors ? "int8" : zt_precision_name(zt_net_precision(net)), S->int8_speedup,
                zt_precision_name(zt_net_precision(net)), zt_actor_round_batch(&S->actor),
                S->int8_gate.auto_speedup);
    if (S->int8_actors)
        zt_info("int8 actors: a version is quantised on %d replay positions and gated on %d "
                "fixed ones (top-1 agreement >= %.3f, value MAE <= %.3f) at every %d "
                "publication(s), those between carrying its ranges and verdict; a failing "
                "version runs in %s",
                S->int8_gate.calibration, S->int8_gate.positions, S->int8_gate.agreement,
                S->int8_gate.value_mae, S->int8_gate.every,
                zt_precision_name(zt_net_precision(net)));
    else
        zt_info("actors run %s (int8 actors: precision = int8, or auto where int8 measures "
                "int8.auto_speedup times faster; on the cpu backend with AVX512_VNNI)",
                zt_precision_name(zt_net_precision(net)));
    if (S->reanalyse_fraction > 0)
        zt_info("reanalyse: %s%g x %d positions per learner step, %d simulations each, %s",
                S->reanalyse_idle ? "at most " : "", S->reanalyse_fraction, S->batch,
                S->reanalyse_simulations > 0 ? S->reanalyse_simulations
                                             : S->actor.search.num_simulations,
                S->reanalyse_idle ? "on a thread of its own at idle priority"
                                  : "on the learner's thread");
    else if (S->reanalyse_off_by_mode)
        zt_info("reanalyse: off (reanalyse.idle = true takes a concurrent run's idle core time; "
                "mode %s has none; reanalyse.idle = false reanalyses on the learner's schedule)",
                mode_name(S->mode));
    size_t dense = zt_replay_dense_bytes(t->game);
    /* a record's fixed part: flags, count, compact state and the half-float
     * root value; the policy adds 16 bits per legal action */
    zt_info(
        "replay: a dense float32 position takes %zu bytes (observation %d floats + policy %d "
        "floats); "
        "a compact record takes %zu bytes + 2 per legal action (measured figure once games arrive)",
        dense, zt_game_obs_size(t->game), t->game->num_actions, t->game->compact_size + 4);
}

void zt_train_free(zt_train *t)
{
    if (!t) return;
    if (t->started) {
        zt_progress_clear();
        zt_info("stopped at step %lld after %.1f s (%lld games, %lld positions)",
                (long long)step_of(t), zt_now_s() - zt_scheduler_started(t->sched),
                (long long)zt_runner_games(t->runner), (long long)zt_runner_positions(t->runner));
    }
    /* threads first: the runner's actors push into rb, so do remote ones */
    if (t->remote_started) t->opt.remote->stop(t->opt.remote->ctx);
    zt_runner_free(t->runner);
    free(t->start_states);
    zt_scheduler_free(t->sched);
    zt_reanalysis_free(t->reanalysis);
    zt_learner_free(t->learner);
    zt_net_free(t->model);
    zt_replay_free(t->rb);
    zt_game_free(t->game);
    zt_dir_lock_release(t->lock);
    free(t);
}

/* learner.total_steps = 0: the cosine spans the run's own length, --steps
 * (the stop step, counted over resumes) or else --minutes (this
 * invocation's wall time, from the first learner step; the learner reports
 * the progress, see scheduled_lr_deadline). */
static zt_status resolve_schedule(zt_train *t)
{
    zt_train_config *o = &t->S.optimizer;
    if (o->schedule != ZT_SCHED_COSINE || o->total_steps != 0) return ZT_OK;
    if (t->opt.steps > 0) {
        o->total_steps = t->opt.steps < INT_MAX ? (int)t->opt.steps : INT_MAX;
        return ZT_OK;
    }
    if (t->opt.minutes > 0 && t->S.mode != ZT_TRAIN_DETERMINISTIC && t->S.dist_learners <= 1)
        return ZT_OK;
    return zt_fail(ZT_ERR_INVALID,
                   "learner.total_steps = 0 anneals the cosine over the run's length: give --steps, "
                   "or --minutes (not with mode = deterministic or several learners, whose steps "
                   "must not depend on the clock)");
}

/* The learner's wall-time deadline of a cosine over --minutes. */
static void scheduled_lr_deadline(zt_train *t)
{
    const zt_train_config *o = &t->S.optimizer;
    if (o->schedule == ZT_SCHED_COSINE && o->total_steps == 0 && t->opt.minutes > 0)
        zt_learner_set_lr_deadline(t->learner,
                                   zt_scheduler_started(t->sched) + t->opt.minutes * 60);
}

zt_status zt_train_open(const zt_train_options *opt, zt_train **out)
{
    *out = NULL;
    zt_train *t = zt_xcalloc(1, sizeof *t);
    t->opt = *opt;
    t->until_step = -1;
    atomic_store(&stop_requested, 0);
    zt_config *cfg = opt->config;
    const char *game_name = opt->game;
    zt_status st = ZT_OK;
    if (!game_name) st = zt_config_string(cfg, "game", "", &game_name);
    if (st == ZT_OK && !game_name[0]) st = zt_fail(ZT_ERR_INVALID, "no game given");
    if (st == ZT_OK) {
        zt_config_put(cfg, "game", game_name);
        const char *g;
        st = zt_config_string(cfg, "game", game_name, &g);
    }
    if (st == ZT_OK) st = zt_game_new(game_name, cfg, &t->game);
    if (st == ZT_OK) st = zt_train_settings_read(cfg, t->game, &t->S);
    if (st == ZT_OK) st = zt_config_check_unused(cfg);
    if (st == ZT_OK) st = resolve_schedule(t);
    if (st == ZT_OK) st = open_run_dir(t);
    if (st == ZT_OK) st = setup(t);
    if (st == ZT_OK) {
        /* auto's choice of int8 actors holds for a resume and for the
         * actor ranks of an MPI run, which read this file */
        if (t->S.int8_auto && t->S.int8_actors) {
            const char *written; /* read back: config.ini holds what was read */
            zt_config_put(cfg, "precision", "int8");
            st = zt_config_string(cfg, "precision", "int8", &written);
        }
        char path[PATH_MAX + 32];
        snprintf(path, sizeof path, "%s/config.ini", t->run);
        if (st == ZT_OK) st = zt_config_write(cfg, path);
    }
    if (st == ZT_OK) {
        zt_scheduler_parts parts = {.game = t->game,
                                    .spec = t->spec,
                                    .run = t->run,
                                    .S = &t->S,
                                    .quiet = opt->quiet,
                                    .learner = t->learner,
                                    .runner = t->runner,
                                    .rb = t->rb,
                                    .elapsed0 = t->elapsed0,
                                    .ctx = t,
                                    .checkpoint = scheduled_checkpoint};
        st = zt_scheduler_new(&parts, &t->sched);
    }
    if (st != ZT_OK) {
        /* the message belongs to this thread; freeing logs nothing */
        zt_train_free(t);
        return st;
    }
    t->started = true;
    scheduled_lr_deadline(t);
    log_start(t);
    if (opt->remote) {
        zt_train_remote_run rr = {.game = t->game, .spec = t->spec, .run = t->run, .S = &t->S,
                                  .rb = t->rb, .runner = t->runner, .learner = t->learner};
        st = opt->remote->start(opt->remote->ctx, &rr);
        t->remote_started = st == ZT_OK;
    }
    if (st == ZT_OK) {
        zt_learner_publish(t->learner);
        st = zt_runner_pull_weights(t->runner);
    }
    if (st != ZT_OK) {
        char why[ZT_MESSAGE_MAX];
        snprintf(why, sizeof why, "%s", zt_error_message());
        zt_train_free(t);
        return zt_fail(st, "%s", why);
    }
    *out = t;
    return ZT_OK;
}

zt_status zt_train_advance(zt_train *t, int64_t steps, double seconds, bool *done)
{
    *done = false;
    t->until_step = steps > 0 ? step_of(t) + steps : -1;
    t->until_time = seconds > 0 ? zt_now_s() + seconds : 0;
    zt_status st = ZT_OK;
    if (!t->first_advance_done) {
        /* the strength of the initial weights: the first point of the
         * arena's curves (issue 17) */
        t->first_advance_done = true;
        if (!limits_reached(t)) st = zt_scheduler_arena_at_start(t->sched);
    }
    if (st == ZT_OK) st = t->S.mode == ZT_TRAIN_CONCURRENT ? run_concurrent(t) : run_alternate(t);
    t->until_step = -1;
    t->until_time = 0;
    if (st == ZT_OK) *done = limits_reached(t);
    return st;
}

zt_train_progress zt_train_get_progress(const zt_train *t)
{
    zt_learner_counters c = zt_learner_get_counters(t->learner);
    return (zt_train_progress){.step = c.step,
                               .games = zt_runner_games(t->runner),
                               .positions = zt_runner_positions(t->runner),
                               .elapsed = zt_scheduler_elapsed(t->sched),
                               .last_loss = zt_learner_last_loss(t->learner),
                               .published = c.published,
                               .perfect = zt_scheduler_perfect(t->sched)};
}

zt_status zt_train_close(zt_train *t)
{
    zt_progress_clear();
    if (t->reanalysis) zt_reanalysis_report(t->reanalysis, t->sched, true);
    zt_scheduler_final_report(t->sched);
    zt_status st = ZT_OK;
    const char *lost = remote_failure(t);
    /* a last look at the final weights, unless interrupted */
    if (!atomic_load(&stop_requested) && !lost) st = zt_scheduler_arena_at_end(t->sched);
    if (st == ZT_OK) st = write_checkpoint(t);
    char why[ZT_MESSAGE_MAX] = "";
    if (st != ZT_OK) snprintf(why, sizeof why, "%s", zt_error_message());
    /* the checkpoint is written, but the run did not end as asked */
    if (st == ZT_OK && lost) {
        st = ZT_ERR_IO;
        snprintf(why, sizeof why, "%s; step %lld checkpointed, --resume continues", lost,
                 (long long)step_of(t));
    }
    zt_train_free(t);
    if (st != ZT_OK) return zt_fail(st, "%s", why);
    return ZT_OK;
}

zt_status zt_train_run(const zt_train_options *opt)
{
    zt_train *t;
    ZT_TRY(zt_train_open(opt, &t));
    bool done = false;
    zt_status st = ZT_OK;
    while (st == ZT_OK && !done) st = zt_train_advance(t, 0, 0, &done);
    if (st != ZT_OK) {
        char why[ZT_MESSAGE_MAX];
        snprintf(why, sizeof why, "%s", zt_error_message());
        zt_train_free(t);
        return zt_fail(st, "%s", why);
    }
    return zt_train_close(t);
}
