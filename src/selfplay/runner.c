/* The actor runner: see runner.h for the two schedules. */
#include "selfplay/runner.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/mz_model.h"
#include "core/alloc.h"
#include "core/thread.h"
#include "core/timer.h"

typedef struct actor_thread {
    zt_runner *R;
    zt_actor *actor;
    pthread_t thread;
    bool started;
    uint64_t version;     /* weights it holds (0: none yet) */
    zt_actor_stats stats; /* snapshot after its last step, under R->mu */
    float resign_at;      /* its resignation threshold then, under R->mu */
    zt_status status;     /* generations: how its last one went */
    char message[ZT_MESSAGE_MAX];
} actor_thread;

struct zt_runner {
    const zt_game *game;
    const zt_traj_sink *sink;
    const zt_weight_source *source;
    zt_runner_hooks hooks;
    actor_thread *actors;
    int nactors;
    zt_evaluator_pool *evaluators; /* the actors' nets: private, or one shared service */
    zt_model_factory model;
    zt_pool *pool; /* generations with several actors */

    /* mu guards the stats snapshots and the error; cv wakes whoever waits
     * for games (the learner) or for the hold hook to let go (actors) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_bool stop_actors;
    atomic_llong positions, games; /* pushed, counting the totals set */
    atomic_ullong held_ns, waited_ns; /* zt_runner_get_waits */
    zt_actor_stats remote_stats;   /* remote actors' statistics, under mu */
    zt_status error;               /* the first actor thread's failure */
    char message[ZT_MESSAGE_MAX];

    /* The newest weights on their way from the source into an actor's net:
     * one buffer for all actors, which pull rarely (a publication every few
     * learner steps), rather than a net's worth of floats per actor. */
    pthread_mutex_t pull_mu;
    float *weights;
    size_t weights_n;
    size_t tensors_n, tail_n; /* weights_n = tensors_n + tail_n (the int8 tail) */
    zt_precision fallback;    /* the nets' precision when a version is not int8 */
};

static void join_actors(zt_runner *R);

zt_status zt_runner_new(const zt_game *g, const zt_runner_config *cfg, const zt_traj_sink *sink,
                        const zt_weight_source *source, const zt_runner_hooks *hooks,
                        zt_runner **out)
{
    *out = NULL;
    ZT_ASSERT(cfg->actors >= 0);
    zt_runner *R = zt_xcalloc(1, sizeof *R);
    R->game = g;
    R->sink = sink;
    R->source = source;
    if (hooks) R->hooks = *hooks;
    pthread_mutex_init(&R->mu, NULL);
    pthread_cond_init(&R->cv, NULL);
    pthread_mutex_init(&R->pull_mu, NULL);
    R->nactors = cfg->actors;
    R->actors = zt_xcalloc((size_t)R->nactors, sizeof *R->actors);
    R->model = cfg->model.create ? cfg->model : zt_model_factory_for_evaluator();
    if (R->nactors == 0) {
        /* remote actors only: no nets, no weights to pull */
        R->weights = zt_xmalloc(sizeof *R->weights);
        *out = R;
        return ZT_OK;
    }
    zt_status st = zt_evaluator_pool_new(&cfg->net, cfg->backend, cfg->precision, cfg->evaluator,
                                         R->nactors, zt_actor_eval_batch(g, &cfg->actor),
                                         cfg->shared_threads, cfg->inflight, &R->evaluators);
    for (int i = 0; i < R->nactors && st == ZT_OK; i++) {
        zt_actor_config ac = cfg->actor;
        ac.id = i;
        R->actors[i].R = R;
        zt_evaluator ev = zt_evaluator_pool_client(R->evaluators, i);
        st = zt_actor_new(g, &R->model, &ev, &ac, &R->actors[i].actor);
        R->actors[i].resign_at = ZT_RESIGN_NONE;
        if (st == ZT_OK) R->actors[i].resign_at = zt_actor_resign_threshold(R->actors[i].actor);
    }
    if (st != ZT_OK) {
        zt_runner_free(R);
        return st;
    }
    R->tensors_n = zt_net_flat_size(zt_evaluator_pool_net(R->evaluators, 0));
    R->tail_n = cfg->weights_tail;
    R->fallback = cfg->precision;
    R->weights_n = R->tensors_n + R->tail_n;
    R->weights = zt_xmalloc((R->weights_n ? R->weights_n : 1) * sizeof *R->weights);
    *out = R;
    return ZT_OK;
}

void zt_runner_free(zt_runner *R)
{
    if (!R) return;
    join_actors(R);
    for (int i = 0; R->actors && i < R->nactors; i++) zt_actor_free(R->actors[i].actor);
    free(R->actors);
    zt_evaluator_pool_free(R->evaluators);
    zt_pool_free(R->pool);
    free(R->weights);
    pthread_mutex_destroy(&R->mu);
    pthread_cond_destroy(&R->cv);
    pthread_mutex_destroy(&R->pull_mu);
    free(R);
}

int zt_runner_actors(const zt_runner *R)
{
    return R->nactors;
}

void zt_runner_set_totals(zt_runner *R, int64_t games, int64_t positions)
{
    atomic_store(&R->games, games);
    atomic_store(&R->positions, positions);
}

int64_t zt_runner_games(const zt_runner *R)
{
    return atomic_load(&((zt_runner *)R)->games);
}

int64_t zt_runner_positions(const zt_runner *R)
{
    return atomic_load(&((zt_runner *)R)->positions);
}

static void add_stats(zt_actor_stats *sum, const zt_actor_stats *s)
{
    sum->moves += s->moves;
    sum->full_searches += s->full_searches;
    sum->games += s->games;
    sum->games_abandoned += s->games_abandoned;
    sum->games_added += s->games_added;
    sum->positions_added += s->positions_added;
    sum->inferences += s->inferences;
    sum->net_calls += s->net_calls;
    sum->positions_valued += s->positions_valued;
    sum->nncache_hits += s->nncache_hits;
    sum->resignations += s->resignations;
    sum->playouts_would_resign += s->playouts_would_resign;
    sum->false_resignations += s->false_resignations;
    sum->weight_updates += s->weight_updates;
}

float zt_runner_resign_threshold(zt_runner *R)
{
    float at = ZT_RESIGN_NONE;
    pthread_mutex_lock(&R->mu);
    for (int i = 0; i < R->nactors; i++)
        if (R->actors[i].resign_at > at) at = R->actors[i].resign_at;
    pthread_mutex_unlock(&R->mu);
    return at;
}

zt_actor_stats zt_runner_stats(zt_runner *R)
{
    pthread_mutex_lock(&R->mu);
    zt_actor_stats sum = R->remote_stats;
    for (int i = 0; i < R->nactors; i++) add_stats(&sum, &R->actors[i].stats);
    pthread_mutex_unlock(&R->mu);
    return sum;
}

void zt_runner_add_remote(zt_runner *R, int64_t games, int64_t positions,
                          const zt_actor_stats *remote_stats)
{
    pthread_mutex_lock(&R->mu);
    atomic_fetch_add(&R->positions, (long long)positions);
    atomic_fetch_add(&R->games, (long long)games);
    if (remote_stats) R->remote_stats = *remote_stats;
    pthread_cond_broadcast(&R->cv);
    pthread_mutex_unlock(&R->mu);
}

void zt_runner_wake(zt_runner *R)
{
    pthread_mutex_lock(&R->mu);
    pthread_cond_broadcast(&R->cv);
    pthread_mutex_unlock(&R->mu);
}

/* ---- weights ---- */

/* Copies the runner's weights (ctx) into the net's tensors, in order, and
 * applies the int8 tail if there is one. */
static zt_status write_weights(zt_net *net, void *ctx)
{
    const zt_runner *R = ctx;
    const float *tail = zt_net_flat_set(net, R->weights);
    if (R->tail_n == 0) return ZT_OK;
    return zt_net_take_int8_tail(net, tail, R->tail_n, R->fallback, NULL);
}

/* Gives an actor the source's newest weights if it holds older ones: into
 * its private net, or (once per version) into the shared service's net
 * between two batches. The one place that touches the actors' nets. */
static zt_status runner_pull_weights(zt_runner *R, actor_thread *T)
{
    pthread_mutex_lock(&R->pull_mu);
    uint64_t got;
    zt_status st = R->source->poll(R->source->ctx, T->version, R->weights, R->weights_n, &got);
    bool changed = st == ZT_OK && got != T->version;
    if (changed)
        st = zt_evaluator_pool_update(R->evaluators, (int)(T - R->actors), got, write_weights, R);
    if (changed && st == ZT_OK) T->version = got;
    pthread_mutex_unlock(&R->pull_mu);
    ZT_TRY(st);
    return changed ? zt_actor_weights_changed(T->actor) : ZT_OK;
}

zt_status zt_runner_pull_weights(zt_runner *R)
{
    for (int i = 0; i < R->nactors; i++) ZT_TRY(runner_pull_weights(R, &R->actors[i]));
    return ZT_OK;
}

/* ---- accounting ---- */

/* Takes the actor's statistics after a step or a flush: what it pushed
 * since the last look is added to the counts, and whoever waits for games
 * is woken. */
static void account_actor(zt_runner *R, actor_thread *T)
{
    zt_actor_stats s = zt_actor_get_stats(T->actor);
    pthread_mutex_lock(&R->mu);
    atomic_fetch_add(&R->positions, (long long)(s.positions_added - T->stats.positions_added));
    atomic_fetch_add(&R->games, (long long)(s.games_added - T->stats.games_added));
    T->stats = s;
    T->resign_at = zt_actor_resign_threshold(T->actor);
    pthread_cond_broadcast(&R->cv);
    pthread_mutex_unlock(&R->mu);
}

/* ---- concurrent ---- */

/* Caller holds R->mu. */
static void timed_wait(zt_runner *R, double seconds)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long ns = (long)(seconds * 1e9);
    ts.tv_sec += (ts.tv_nsec + ns) / 1000000000L;
    ts.tv_nsec = (ts.tv_nsec + ns) % 1000000000L;
    pthread_cond_timedwait(&R->cv, &R->mu, &ts);
}

static bool held(zt_runner *R)
{
    return R->hooks.hold && R->hooks.hold(R->hooks.ctx, atomic_load(&R->positions));
}

static void *actor_main(void *arg)
{
    actor_thread *T = arg;
    zt_runner *R = T->R;
    zt_status st = ZT_OK;
    while (!atomic_load(&R->stop_actors)) {
        /* the hold hook reads the learner's progress unlocked: a stale
         * value only delays the wake-up by one wait */
        pthread_mutex_lock(&R->mu);
        /* counted wait by wait, so that a long hold shows while it lasts */
        while (!atomic_load(&R->stop_actors) && held(R)) {
            uint64_t t0 = zt_now_ns();
            timed_wait(R, 0.05);
            atomic_fetch_add(&R->held_ns, zt_now_ns() - t0);
        }
        pthread_mutex_unlock(&R->mu);
        if (atomic_load(&R->stop_actors)) break;
        st = runner_pull_weights(R, T);
        if (st == ZT_OK) st = zt_actor_step(T->actor, R->sink);
        if (st != ZT_OK) break;
        account_actor(R, T);
    }
    if (st != ZT_OK) {
        pthread_mutex_lock(&R->mu);
        if (R->error == ZT_OK) {
            R->error = st;
            snprintf(R->message, sizeof R->message, "%s", zt_error_message());
        }
        pthread_mutex_unlock(&R->mu);
    }
    return NULL;
}

zt_status zt_runner_start(zt_runner *R)
{
    atomic_store(&R->stop_actors, false);
    for (int i = 0; i < R->nactors; i++) {
        if (pthread_create(&R->actors[i].thread, NULL, actor_main, &R->actors[i]) != 0) {
            join_actors(R);
            return zt_fail(ZT_ERR_UNSUPPORTED, "cannot start actor thread %d", i);
        }
        R->actors[i].started = true;
    }
    return ZT_OK;
}

static void join_actors(zt_runner *R)
{
    atomic_store(&R->stop_actors, true);
    pthread_mutex_lock(&R->mu);
    pthread_cond_broadcast(&R->cv);
    pthread_mutex_unlock(&R->mu);
    for (int i = 0; i < R->nactors; i++)
        if (R->actors[i].started) {
            pthread_join(R->actors[i].thread, NULL);
            R->actors[i].started = false;
        }
}

zt_status zt_runner_stop(zt_runner *R)
{
    join_actors(R);
    pthread_mutex_lock(&R->mu);
    zt_status err = R->error;
    char message[sizeof R->message];
    memcpy(message, R->message, sizeof message);
    pthread_mutex_unlock(&R->mu);
    if (err != ZT_OK) return zt_fail(err, "actor: %s", message);
    return ZT_OK;
}

bool zt_runner_failed(zt_runner *R)
{
    pthread_mutex_lock(&R->mu);
    bool failed = R->error != ZT_OK;
    pthread_mutex_unlock(&R->mu);
    return failed;
}

bool zt_runner_wait_if(zt_runner *R, bool (*pred)(void *ctx), void *ctx, double seconds)
{
    pthread_mutex_lock(&R->mu);
    bool wait = pred(ctx);
    if (wait) {
        uint64_t t0 = zt_now_ns();
        timed_wait(R, seconds);
        atomic_fetch_add(&R->waited_ns, zt_now_ns() - t0);
    }
    pthread_mutex_unlock(&R->mu);
    return wait;
}

zt_runner_waits zt_runner_get_waits(const zt_runner *R)
{
    return (zt_runner_waits){.actors_ns = atomic_load(&R->held_ns),
                             .learner_ns = atomic_load(&R->waited_ns)};
}

/* ---- generations ---- */

static zt_status play_generation(zt_runner *R, actor_thread *T)
{
    while (!zt_actor_idle(T->actor)) {
        if (R->hooks.stop && R->hooks.stop(R->hooks.ctx)) return ZT_OK;
        ZT_TRY(zt_actor_step(T->actor, NULL));
        if (R->nactors == 1) {
            account_actor(R, T);
            if (R->hooks.tick) ZT_TRY(R->hooks.tick(R->hooks.ctx));
        }
    }
    return ZT_OK;
}

static void generation_worker(void *arg, int ith, int nth)
{
    zt_runner *R = arg;
    for (int i = ith; i < R->nactors; i += nth) {
        actor_thread *T = &R->actors[i];
        T->status = play_generation(R, T);
        if (T->status != ZT_OK) snprintf(T->message, sizeof T->message, "%s", zt_error_message());
    }
}

zt_status zt_runner_play_generation(zt_runner *R, uint64_t generation)
{
    for (int i = 0; i < R->nactors; i++)
        ZT_TRY(zt_actor_begin_generation(R->actors[i].actor, generation));
    if (R->nactors == 1) return play_generation(R, &R->actors[0]);
    if (!R->pool && !(R->pool = zt_pool_new(R->nactors)))
        return zt_fail(ZT_ERR_UNSUPPORTED, "cannot start %d actor threads", R->nactors);
    zt_pool_run(R->pool, generation_worker, R);
    for (int i = 0; i < R->nactors; i++)
        if (R->actors[i].status != ZT_OK)
            return zt_fail(R->actors[i].status, "actor %d: %s", i, R->actors[i].message);
    return ZT_OK;
}

zt_status zt_runner_flush(zt_runner *R)
{
    zt_status st = ZT_OK;
    for (int i = 0; i < R->nactors && st == ZT_OK; i++)
        st = zt_actor_flush(R->actors[i].actor, R->sink);
    for (int i = 0; i < R->nactors; i++) account_actor(R, &R->actors[i]);
    return st;
}
