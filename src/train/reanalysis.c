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

struct zt_reanalysis {
    const zt_train_settings *S;
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
    float *staged;            /* the newest published weights, flat */
    size_t staged_n;          /* floats in them */
    uint64_t staged_version;  /* 0: none yet */
    int64_t allowed, done;    /* positions granted by publications, searched */
    zt_reanalyse_stats shown; /* the reanalyser's stats after its last search */
    zt_status error;          /* the thread's, with its message */
    char message[ZT_MESSAGE_MAX];
    /* the thread's own */
    uint64_t net_version;
    uint64_t stream; /* one random stream per batched search */
};

zt_status zt_reanalysis_new(const zt_game *g, const zt_train_settings *S, zt_reanalysis **out)
{
    *out = NULL;
    if (S->reanalyse_fraction <= 0) return ZT_OK;
    zt_reanalysis *w = zt_xcalloc(1, sizeof *w);
    w->S = S;
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
    if (st == ZT_OK && w->idle) {
        int n = zt_net_tensor_count(w->net);
        for (int i = 0; i < n; i++) w->staged_n += zt_net_tensor_at(w->net, i).count;
        w->staged = zt_xmalloc((w->staged_n ? w->staged_n : 1) * sizeof *w->staged);
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
    free(w->staged);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

/* The net's tensors, in zt_net_tensor_at order, from (to_net) or into a
 * flat array. */
static void copy_flat(const zt_net *net, float *flat, bool to_net)
{
    int n = zt_net_tensor_count(net);
    for (int i = 0; i < n; i++) {
        zt_net_tensor t = zt_net_tensor_at(net, i);
        if (to_net)
            memcpy(t.data, flat, t.count * sizeof(float));
        else
            memcpy(flat, t.data, t.count * sizeof(float));
        flat += t.count;
    }
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
    return w->staged_version != 0 && w->done < w->allowed;
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
        bool fresh = w->staged_version != w->net_version;
        if (fresh) {
            copy_flat(w->net, w->staged, true);
            w->net_version = w->staged_version;
        }
        pthread_mutex_unlock(&w->mu);
        zt_status st = ZT_OK;
        if (fresh) zt_net_params_changed(w->net);
        if (zt_replay_get_stats(w->rb).positions > 0)
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

zt_status zt_reanalysis_after_publish(zt_reanalysis *w, const zt_net *net, zt_replay *rb,
                                      int64_t steps, uint64_t stream)
{
    int64_t count = llround(w->S->reanalyse_fraction * w->S->batch * (double)steps);
    if (w->idle) {
        ZT_ASSERT(rb == w->rb || !w->running);
        ZT_ASSERT(zt_net_tensor_count(net) == zt_net_tensor_count(w->net));
        pthread_mutex_lock(&w->mu);
        copy_flat(net, w->staged, false);
        w->staged_version++;
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
    int n = zt_net_tensor_count(net);
    ZT_ASSERT(n == zt_net_tensor_count(w->net));
    for (int i = 0; i < n; i++) {
        zt_net_tensor src = zt_net_tensor_at(net, i), dst = zt_net_tensor_at(w->net, i);
        ZT_ASSERT(src.count == dst.count);
        memcpy(dst.data, src.data, src.count * sizeof(float));
    }
    zt_net_params_changed(w->net);
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
