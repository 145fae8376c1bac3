/* A run's reanalyse worker: see reanalysis.h. */
#define _GNU_SOURCE /* SCHED_IDLE */
#include "train/reanalysis.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/evaluator.h"
#include "agent/mz_model.h"
#include "core/alloc.h"
#include "core/log.h"
#include "core/timer.h"
#include "train/int8_gate.h"

struct zt_reanalysis {
    const zt_train_settings *S;
    const zt_weight_source *src; /* the learner's published versions */
    float *flat;                 /* one version: the tensors, then any int8 tail */
    size_t tensors_n, tail_n;
    uint64_t net_version; /* the version in net (the idle thread's, when it runs) */
    zt_net *net;
    zt_net_evaluator *ne;
    zt_evaluator ev;
    zt_reanalyser *ra;
    zt_reanalyse_stats last; /* at the last metrics record */
    double last_time;

    /* reanalyse.idle: the thread and what it shares with the caller. mu
     * guards every field below but the thread's own; the thread holds it
     * only between its searches. */
    bool idle;
    pthread_t thread;
    bool running;
    atomic_bool stop;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    zt_replay *rb;
    bool published;           /* a version is there to take */
    int64_t allowed, done;    /* positions granted by publications, searched */
    zt_reanalyse_stats shown; /* the reanalyser's stats after its last search */
    zt_status error;          /* the thread's, with its message */
    char message[ZT_MESSAGE_MAX];
    /* the thread's own */
    uint64_t stream; /* one random stream per batched search */
};

zt_status zt_reanalysis_new(const zt_game *g, const zt_train_settings *S,
                            const zt_weight_source *weights, zt_reanalysis **out)
{
    *out = NULL;
    if (S->reanalyse_fraction <= 0) return ZT_OK;
    zt_reanalysis *w = zt_xcalloc(1, sizeof *w);
    w->S = S;
    w->src = weights;
    w->idle = S->reanalyse_idle;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    zt_reanalyse_config rc = {.search = S->actor.search,
                              .trees = S->reanalyse_trees,
                              .seed = S->seed ^ 0x7265616e61ULL};
    if (S->reanalyse_simulations > 0) rc.search.num_simulations = S->reanalyse_simulations;
    /* the idle thread is one thread: more would wait on each other's share
     * of the idle time */
    int threads = w->idle ? 1 : S->learner_threads;
    zt_status st = zt_net_new(&S->net, S->backend, S->precision, threads, &w->net);
    if (st == ZT_OK) st = zt_net_evaluator_new(w->net, zt_reanalyser_eval_batch(g, &rc), &w->ne);
    if (st == ZT_OK) {
        w->ev = zt_net_evaluator_get(w->ne);
        zt_model_factory mf = zt_model_factory_for_evaluator();
        st = zt_reanalyser_new(g, &mf, &w->ev, &rc, &w->ra);
    }
    if (st == ZT_OK && S->int8_actors) st = zt_int8_gate_tail_for(&S->net, S->backend, &w->tail_n);
    if (st == ZT_OK) {
        w->tensors_n = zt_net_flat_size(w->net);
        w->flat = zt_xmalloc((w->tensors_n + w->tail_n) * sizeof *w->flat);
    }
    if (st != ZT_OK) {
        zt_reanalysis_free(w);
        return st;
    }
    w->last_time = zt_now_s();
    *out = w;
    return ZT_OK;
}

void zt_reanalysis_free(zt_reanalysis *w)
{
    if (!w) return;
    (void)zt_reanalysis_stop(w);
    zt_reanalyser_free(w->ra);
    zt_net_evaluator_free(w->ne);
    zt_net_free(w->net);
    free(w->flat);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

/* The newest published version into the worker's net, as an actor takes
 * it: every tensor, then the int8 tail's precision and ranges (int8 where
 * the version passed the gate). Nothing if the net holds it already. */
static zt_status take_newest(zt_reanalysis *w)
{
    uint64_t got;
    ZT_TRY(w->src->poll(w->src->ctx, w->net_version, w->flat, w->tensors_n + w->tail_n, &got));
    if (got == w->net_version) return ZT_OK;
    const float *tail = zt_net_flat_set(w->net, w->flat);
    if (w->tail_n > 0)
        ZT_TRY(zt_net_take_int8_tail(w->net, tail, w->tail_n, w->S->precision, NULL));
    w->net_version = got;
    return ZT_OK;
}

/* ---- the idle thread ---- */

/* The idle priority: the scheduler runs the thread only on a core nothing
 * else wants. Where SCHED_IDLE is refused, the thread says so and runs at
 * the run's priority (taking core time from the learner and actors). */
static void lower_priority(void)
{
#ifdef SCHED_IDLE
    struct sched_param sp = {.sched_priority = 0};
    int err = pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp);
    if (err == 0) return;
    zt_warn("reanalyse: SCHED_IDLE refused (%s); the idle thread runs at normal priority",
            strerror(err));
#else
    zt_warn("reanalyse: no SCHED_IDLE here; the idle thread runs at normal priority");
#endif
}

/* Caller holds w->mu. */
static bool has_work(const zt_reanalysis *w)
{
    return w->published && w->done < w->allowed;
}

static void *idle_main(void *arg)
{
    zt_reanalysis *w = arg;
    lower_priority();
    pthread_mutex_lock(&w->mu);
    while (!atomic_load(&w->stop)) {
        if (!has_work(w)) {
            pthread_cond_wait(&w->cv, &w->mu);
            continue;
        }
        int64_t n = w->allowed - w->done;
        if (n > w->S->reanalyse_trees) n = w->S->reanalyse_trees;
        pthread_mutex_unlock(&w->mu);
        zt_status st = take_newest(w);
        if (st == ZT_OK && zt_replay_get_stats(w->rb).positions > 0)
            st = zt_reanalyser_run(w->ra, w->rb, n, w->stream++);
        pthread_mutex_lock(&w->mu);
        w->done += n;
        w->shown = zt_reanalyser_get_stats(w->ra);
        if (st != ZT_OK) {
            w->error = st;
            snprintf(w->message, sizeof w->message, "reanalyse (idle thread): %s",
                     zt_error_message());
            break;
        }
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* The thread's error, once, as the caller's. Caller holds w->mu. */
static zt_status take_error(zt_reanalysis *w)
{
    zt_status st = w->error;
    if (st == ZT_OK) return ZT_OK;
    w->error = ZT_OK;
    return zt_fail(st, "%s", w->message);
}

zt_status zt_reanalysis_start(zt_reanalysis *w, zt_replay *rb)
{
    if (!w || !w->idle || w->running) return ZT_OK;
    w->rb = rb;
    atomic_store(&w->stop, false);
    int err = pthread_create(&w->thread, NULL, idle_main, w);
    if (err != 0)
        return zt_fail(ZT_ERR_NOMEM, "reanalyse: cannot start the idle thread: %s", strerror(err));
    w->running = true;
    return ZT_OK;
}

zt_status zt_reanalysis_stop(zt_reanalysis *w)
{
    if (!w || !w->running) return ZT_OK;
    pthread_mutex_lock(&w->mu);
    atomic_store(&w->stop, true);
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    w->running = false;
    pthread_mutex_lock(&w->mu);
    zt_status st = take_error(w);
    pthread_mutex_unlock(&w->mu);
    return st;
}

/* ---- after a publication ---- */

zt_status zt_reanalysis_after_publish(zt_reanalysis *w, zt_replay *rb, int64_t steps,
                                      uint64_t stream)
{
    int64_t count = llround(w->S->reanalyse_fraction * w->S->batch * (double)steps);
    if (w->idle) {
        ZT_ASSERT(rb == w->rb || !w->running);
        pthread_mutex_lock(&w->mu);
        w->published = true;
        /* unused allowance does not pile up while the cores are busy: at
         * most two publications' worth waits */
        w->allowed += count;
        if (w->allowed - w->done > 2 * count) w->done = w->allowed - 2 * count;
        pthread_cond_broadcast(&w->cv);
        zt_status st = take_error(w);
        pthread_mutex_unlock(&w->mu);
        return st;
    }
    if (count <= 0 || zt_replay_get_stats(rb).positions == 0) return ZT_OK;
    ZT_TRY(take_newest(w));
    return zt_reanalyser_run(w->ra, rb, count, stream);
}

/* ---- metrics ---- */

zt_reanalyse_stats zt_reanalysis_stats(zt_reanalysis *w)
{
    if (!w->idle) return zt_reanalyser_get_stats(w->ra);
    pthread_mutex_lock(&w->mu);
    zt_reanalyse_stats s = w->shown;
    pthread_mutex_unlock(&w->mu);
    return s;
}

void zt_reanalysis_report(zt_reanalysis *w, zt_scheduler *sched, bool force)
{
    double now = zt_now_s(), dt = now - w->last_time;
    zt_reanalyse_stats s = zt_reanalysis_stats(w);
    int64_t done = s.positions - w->last.positions;
    if (done <= 0 || (!force && dt < w->S->log_seconds) || dt <= 0) return;
    int64_t policies = s.policies - w->last.policies;
    double l1 = policies > 0 ? (s.policy_l1 - w->last.policy_l1) / (double)policies : 0;
    zt_scheduler_metric(sched, "reanalyse",
                        "\"reanalysed\":%lld,\"rate\":%.2f,\"busy\":%.4f,\"policy_l1\":%.5f,"
                        "\"skipped\":%lld",
                        (long long)s.positions, (double)done / dt,
                        (s.seconds - w->last.seconds) / dt, l1, (long long)s.skipped);
    w->last = s;
    w->last_time = now;
}
