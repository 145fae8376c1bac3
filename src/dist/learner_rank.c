/* Rank 0's remote actors (dist.h, train/remote.h): one receiver thread that
 * does all of this rank's talking with the actor ranks while the learner
 * trains on the run's thread. It
 *   - sends each actor rank the run's config.ini;
 *   - adds every trajectory that arrives to the replay buffer and counts it
 *     in the runner (zero local actors), with each rank's statistics;
 *   - sends every new version of the learner's weight store to each rank
 *     whose previous version has gone (a rank still receiving one gets the
 *     newest later: the learner never waits for an actor);
 *   - sends each rank the replay ratio's allowance;
 *   - counts a rank lost when a send to it fails or it is silent for
 *     dist.timeout seconds, and goes on with the others;
 *   - at the end sends STOP and takes what the ranks still send until each
 *     says BYE. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/fileio.h"
#include "core/log.h"
#include "core/timer.h"
#include "dist/comm.h"
#include "dist/dist.h"
#include "dist/learners.h"

#define IDLE_NAP 0.0005
/* Seconds between allowances sent to a rank (when they changed). */
#define THROTTLE_SECONDS 0.002
/* How long the end waits for every rank's BYE. */
#define BYE_SECONDS 30.0

/* A weights message shared by the sends of one version. */
typedef struct weights_msg {
    uint8_t *data;
    size_t len;
    uint64_t version;
    int refs;
} weights_msg;

typedef struct peer {
    bool learner; /* a data-parallel learner (ranks 1..L-1), not an actor rank */
    bool hello, failed, lost, bye;
    int actors, games;
    int64_t positions, games_received; /* received from this rank */
    zt_dist_stats stats;               /* its last report */
    double last_heard;
    uint64_t weights_version; /* the newest version sent to it */
    MPI_Request weights_req;  /* MPI_REQUEST_NULL when none in flight */
    weights_msg *weights_inflight;
    zt_dist_throttle throttle_sent;
    double throttle_at;
} peer;

typedef struct learner_rank {
    zt_train_remote remote;
    zt_train_remote_run run;
    int size;
    peer *peers; /* [size]; peers[0] is this rank, unused */
    bool config_sent, stopped;
    pthread_t thread;
    bool thread_started;
    atomic_bool stopping;
    atomic_bool learners_lost; /* the learners' collectives failed: none says BYE */
    atomic_bool orphaned;      /* every actor rank lost: the run ends (remote_failure) */
    zt_dist_sendq sendq;
    zt_dist_msg msg;
    zt_replay_traj *scratch;
    int64_t bad_frames;
    bool all_hello_logged;
    int learners;   /* dist.learners */
    zt_dist_dp *dp; /* with several learners */

    size_t weights_n;      /* floats of a published version: the net and any int8 tail */
    weights_msg *latest;   /* the newest version (a reference) */
    weights_msg *spare;    /* a buffer to poll the next version into */
    uint64_t have_version; /* latest's version at the learner's store */
} learner_rank;

static learner_rank the_learner;

/* ---- weights ---- */

static weights_msg *weights_new(size_t n)
{
    weights_msg *w = zt_xcalloc(1, sizeof *w);
    w->len = ZT_DIST_HEADER + 16 + n * sizeof(float);
    w->data = zt_xmalloc(w->len);
    uint32_t h[2] = {ZT_MSG_WEIGHTS, 0};
    memcpy(w->data, h, sizeof h);
    return w;
}

static void weights_free(weights_msg *w)
{
    if (!w) return;
    free(w->data);
    free(w);
}

static void weights_unref(weights_msg *w)
{
    if (w && --w->refs == 0) weights_free(w);
}

/* The learner's store has a version newer than latest: it becomes latest. */
static void take_new_version(learner_rank *L)
{
    const zt_weight_source *src = zt_learner_weight_source(L->run.learner);
    if (!L->spare) L->spare = weights_new(L->weights_n);
    float *dst = (float *)(void *)(L->spare->data + ZT_DIST_HEADER + 16);
    uint64_t got;
    if (src->poll(src->ctx, L->have_version, dst, L->weights_n, &got) != ZT_OK ||
        got == L->have_version)
        return;
    L->have_version = got;
    uint64_t head[2] = {got, L->weights_n};
    memcpy(L->spare->data + ZT_DIST_HEADER, head, sizeof head);
    L->spare->version = got;
    L->spare->refs = 1;
    weights_unref(L->latest);
    L->latest = L->spare;
    L->spare = NULL;
}

static void lose(learner_rank *L, int r, const char *why);

/* Each rank without a version in flight gets the newest one. */
static bool send_weights(learner_rank *L)
{
    take_new_version(L);
    if (!L->latest) return false;
    bool any = false;
    for (int r = 1; r < L->size; r++) {
        peer *p = &L->peers[r];
        if (p->lost || p->learner) continue;
        if (p->weights_req != MPI_REQUEST_NULL) {
            int done = 0;
            if (MPI_Test(&p->weights_req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
                lose(L, r, "sending weights failed");
                continue;
            }
            if (!done) continue;
            weights_unref(p->weights_inflight);
            p->weights_inflight = NULL;
        }
        if (p->weights_version == L->latest->version) continue;
        weights_msg *w = L->latest;
        if (MPI_Isend(w->data, (int)w->len, MPI_BYTE, r, ZT_DIST_TAG_DOWN, zt_dist_comm(),
                      &p->weights_req) != MPI_SUCCESS) {
            lose(L, r, "sending weights failed");
            continue;
        }
        w->refs++;
        p->weights_inflight = w;
        p->weights_version = w->version;
        any = true;
    }
    return any;
}

/* ---- the replay ratio across ranks ---- */

/* The positions up to which the actors may go: train.c's actors_ahead for
 * actors in other processes, the lead counting every rank's actors. */
static int64_t allowance(learner_rank *L)
{
    const zt_train_settings *S = L->run.S;
    int64_t actor_games = 0;
    for (int r = 1; r < L->size; r++)
        if (L->peers[r].hello && !L->peers[r].lost && !L->peers[r].learner)
            actor_games += (int64_t)L->peers[r].actors * L->peers[r].games;
    int64_t lead = (int64_t)(4.0 * S->batch / S->replay_ratio);
    if (lead < 2 * actor_games) lead = 2 * actor_games;
    double trained = (double)zt_learner_samples_trained(L->run.learner) / S->replay_ratio;
    return S->min_positions + (int64_t)trained + lead;
}

static void send_throttles(learner_rank *L)
{
    double now = zt_now_s();
    int64_t allowed = allowance(L), received = zt_runner_positions(L->run.runner);
    for (int r = 1; r < L->size; r++) {
        peer *p = &L->peers[r];
        if (p->lost || p->learner || now - p->throttle_at < THROTTLE_SECONDS) continue;
        zt_dist_throttle t = {
            .allowed = allowed, .received = received, .received_from_you = p->positions};
        if (memcmp(&t, &p->throttle_sent, sizeof t) == 0) continue;
        if (zt_dist_pending(&L->sendq, r, ZT_MSG_THROTTLE) > 0) continue;
        if (zt_dist_post(&L->sendq, r, ZT_DIST_TAG_DOWN, ZT_MSG_THROTTLE, &t, sizeof t) != ZT_OK) {
            lose(L, r, "sending the allowance failed");
            continue;
        }
        p->throttle_sent = t;
        p->throttle_at = now;
    }
}

/* ---- ranks coming and going ---- */

static int working_ranks(const learner_rank *L)
{
    int n = 0;
    for (int r = 1; r < L->size; r++)
        n += !L->peers[r].lost && !L->peers[r].failed && !L->peers[r].learner;
    return n;
}

/* No actor rank is left to play: the run stops (with its checkpoint) and
 * fails (remote_failure). */
static void check_any_left(learner_rank *L)
{
    if (working_ranks(L) > 0 || atomic_load(&L->stopping)) return;
    zt_warn("mpi: no actor rank is left; the run stops");
    atomic_store(&L->orphaned, true);
}

static void lose(learner_rank *L, int r, const char *why)
{
    peer *p = &L->peers[r];
    if (p->lost) return;
    p->lost = true;
    zt_dist_note_lost();
    zt_dist_abandon(&L->sendq, r);
    if (p->weights_req != MPI_REQUEST_NULL) {
        MPI_Request_free(&p->weights_req);
        /* MPI may still read it: kept to the end */
        zt_dist_keep(p->weights_inflight->data);
        zt_dist_keep(p->weights_inflight);
        p->weights_inflight = NULL;
    }
    if (p->learner)
        zt_warn("mpi: learner rank %d lost (%s)", r, why);
    else
        zt_warn("mpi: rank %d lost (%s); the run goes on with %d actor rank(s)", r, why,
                working_ranks(L));
    check_any_left(L);
}

static void sum_stats(learner_rank *L)
{
    zt_actor_stats sum = {0};
    for (int r = 1; r < L->size; r++) {
        const zt_actor_stats *s = &L->peers[r].stats.actors;
        uint64_t *d = (uint64_t *)(void *)&sum;
        const uint64_t *a = (const uint64_t *)(const void *)s;
        for (size_t i = 0; i < sizeof sum / sizeof(uint64_t); i++) d[i] += a[i];
    }
    zt_runner_add_remote(L->run.runner, 0, 0, &sum);
}

static void log_hellos(learner_rank *L)
{
    int actors = 0;
    for (int r = 1; r < L->size; r++) {
        if (!L->peers[r].hello && !L->peers[r].lost) return;
        actors += L->peers[r].actors;
    }
    L->all_hello_logged = true;
    if (L->learners > 1)
        zt_info("mpi: %d ranks: ranks 0..%d learn (data-parallel, global batch %d), ranks %d..%d "
                "act (%d actor(s) in all, %d games each)",
                L->size, L->learners - 1, L->learners * L->run.S->batch, L->learners, L->size - 1,
                actors, L->run.S->actor.games);
    else
        zt_info("mpi: %d ranks: rank 0 learns, ranks 1..%d act (%d actor(s) in all, %d games each)",
                L->size, L->size - 1, actors, L->run.S->actor.games);
}

/* Handles up to a few dozen messages; true if there were any. */
static bool poll_up(learner_rank *L)
{
    bool stopping = atomic_load(&L->stopping);
    int handled = 0;
    while (handled < 64 && zt_dist_poll(MPI_ANY_SOURCE, ZT_DIST_TAG_UP, &L->msg)) {
        handled++;
        const zt_dist_msg *m = &L->msg;
        if (m->source <= 0 || m->source >= L->size) continue;
        peer *p = &L->peers[m->source];
        p->last_heard = zt_now_s();
        switch (m->kind) {
        case ZT_MSG_HELLO:
            if (m->len == sizeof(zt_dist_hello)) {
                zt_dist_hello h;
                memcpy(&h, m->payload, sizeof h);
                p->hello = true;
                p->actors = h.actors;
                p->games = h.games_per_actor;
                if (!L->all_hello_logged) log_hellos(L);
            }
            break;
        case ZT_MSG_TRAJ: {
            if (stopping) break; /* the last checkpoint is written */
            int64_t games = 0, positions = 0;
            zt_dist_ingest(L->run.game, L->run.rb, L->scratch, m->payload, m->len, &games,
                           &positions, &L->bad_frames);
            /* every learner's buffer gets every trajectory */
            for (int r = 1; r < L->learners; r++)
                if (!L->peers[r].lost && zt_dist_post(&L->sendq, r, ZT_DIST_TAG_DOWN, ZT_MSG_TRAJ,
                                                      m->payload, m->len) != ZT_OK)
                    lose(L, r, "forwarding trajectories failed");
            p->games_received += games;
            p->positions += positions;
            zt_runner_add_remote(L->run.runner, games, positions, NULL);
            break;
        }
        case ZT_MSG_STATS:
            if (m->len == sizeof(zt_dist_stats)) {
                memcpy(&p->stats, m->payload, sizeof p->stats);
                sum_stats(L);
            }
            break;
        case ZT_MSG_FAILED:
            zt_error("mpi: %.*s; the run goes on without it", (int)m->len,
                     (const char *)m->payload);
            p->failed = true;
            check_any_left(L);
            break;
        case ZT_MSG_BYE:
            p->bye = true;
            break;
        default:
            zt_warn("mpi: unexpected message kind %d from rank %d", (int)m->kind, m->source);
        }
    }
    return handled > 0;
}

static void check_sends(learner_rank *L)
{
    int failed;
    zt_dist_progress(&L->sendq, &failed);
    if (failed > 0) lose(L, failed, "a send failed");
    double now = zt_now_s();
    for (int r = 1; r < L->size; r++) {
        peer *p = &L->peers[r];
        /* a learner speaks through the allreduce, which fails if it dies */
        if (!p->lost && !p->bye && !p->learner && now - p->last_heard > L->run.S->dist_timeout) {
            char why[64];
            snprintf(why, sizeof why, "silent for %.0f s", now - p->last_heard);
            lose(L, r, why);
        }
    }
}

static void *receiver_main(void *arg)
{
    learner_rank *L = arg;
    while (!atomic_load(&L->stopping)) {
        bool busy = poll_up(L);
        busy |= send_weights(L);
        send_throttles(L);
        check_sends(L);
        if (!busy) zt_dist_nap(IDLE_NAP);
    }
    /* after a failed allreduce the learners are not waited for */
    if (atomic_load(&L->learners_lost))
        for (int r = 1; r < L->learners; r++) lose(L, r, "the learners' allreduce failed");
    /* STOP follows every version already sent (one tag: MPI keeps the
     * order); then the ranks' last games, totals and BYE */
    for (int r = 1; r < L->size; r++)
        if (!L->peers[r].lost &&
            zt_dist_post(&L->sendq, r, ZT_DIST_TAG_DOWN, ZT_MSG_STOP, NULL, 0) != ZT_OK)
            lose(L, r, "sending STOP failed");
    double until = zt_now_s() + BYE_SECONDS;
    for (;;) {
        bool waiting = false;
        for (int r = 1; r < L->size; r++) waiting |= !L->peers[r].lost && !L->peers[r].bye;
        if (!waiting) break;
        if (zt_now_s() > until) {
            for (int r = 1; r < L->size; r++)
                if (!L->peers[r].lost && !L->peers[r].bye) lose(L, r, "no BYE at the end");
            break;
        }
        bool busy = poll_up(L);
        check_sends(L);
        if (!busy) zt_dist_nap(IDLE_NAP);
    }
    /* every rank said BYE after receiving STOP, so everything sent to it
     * has arrived */
    int failed;
    until = zt_now_s() + BYE_SECONDS;
    while (zt_dist_progress(&L->sendq, &failed) > 0 && zt_now_s() < until) zt_dist_nap(IDLE_NAP);
    for (int r = 1; r < L->size; r++) {
        peer *p = &L->peers[r];
        if (p->weights_req == MPI_REQUEST_NULL) continue;
        int done = 0;
        if (MPI_Test(&p->weights_req, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && done) {
            weights_unref(p->weights_inflight);
            p->weights_inflight = NULL;
        } else {
            lose(L, r, "a version never arrived");
        }
    }
    return NULL;
}

/* ---- the remote interface ---- */

static const char *mode_name(zt_train_mode m)
{
    return m == ZT_TRAIN_ALTERNATE ? "alternate" : "deterministic";
}

static zt_status remote_start(void *ctx, const zt_train_remote_run *run)
{
    learner_rank *L = ctx;
    L->run = *run;
    atomic_store(&L->orphaned, false);
    const zt_train_settings *S = run->S;
    if (S->mode != ZT_TRAIN_CONCURRENT)
        return zt_fail(ZT_ERR_INVALID,
                       "mode=%s runs in one process; under mpirun use mode=concurrent",
                       mode_name(S->mode));
    L->learners = S->dist_learners;
    if (L->learners >= zt_dist_size())
        return zt_fail(ZT_ERR_INVALID,
                       "dist.learners = %d leaves no actor rank among %d ranks (mpirun -np %d or "
                       "more)",
                       L->learners, zt_dist_size(), L->learners + 1);
    char path[4200];
    snprintf(path, sizeof path, "%s/config.ini", run->run);
    char *text;
    size_t len;
    ZT_TRY(zt_read_file(path, &text, &len));
    L->size = zt_dist_size();
    L->peers = zt_xcalloc((size_t)L->size, sizeof *L->peers);
    double now = zt_now_s();
    zt_status st = ZT_OK;
    for (int r = 1; r < L->size && st == ZT_OK; r++) {
        L->peers[r].learner = r < L->learners;
        L->peers[r].weights_req = MPI_REQUEST_NULL;
        L->peers[r].last_heard = now;
        st = zt_dist_post(&L->sendq, r, ZT_DIST_TAG_DOWN, ZT_MSG_CONFIG, text, len);
    }
    free(text);
    L->config_sent = true;
    ZT_TRY(st);
    ZT_TRY(zt_replay_traj_new(run->game, &L->scratch));
    L->weights_n =
        zt_net_flat_size(zt_learner_net(run->learner)) + zt_learner_weights_tail(run->learner);
    if (L->learners > 1) {
        /* collective with the other learners, which have the config */
        int64_t step = zt_learner_get_counters(run->learner).step;
        st = zt_dist_dp_new(L->learners, run->learner, S, &step, &L->dp);
        if (st != ZT_OK) {
            zt_error("mpi: %s", zt_error_message());
            MPI_Abort(zt_dist_comm(), 1); /* the other learners wait in a collective */
        }
    }
    atomic_store(&L->stopping, false);
    if (pthread_create(&L->thread, NULL, receiver_main, L) != 0)
        return zt_fail(ZT_ERR_UNSUPPORTED, "cannot start the MPI receiver thread");
    L->thread_started = true;
    return ZT_OK;
}

static void remote_stop(void *ctx)
{
    learner_rank *L = ctx;
    if (L->dp) {
        /* the other learners leave their step loop */
        if (zt_dist_dp_stop(L->dp) != ZT_OK) zt_error("mpi: %s", zt_error_message());
        atomic_store(&L->learners_lost, zt_dist_dp_broken(L->dp));
        zt_learner_set_reducer(L->run.learner, NULL);
        zt_dist_dp_free(L->dp);
        L->dp = NULL;
    }
    atomic_store(&L->stopping, true);
    if (L->thread_started) pthread_join(L->thread, NULL);
    L->thread_started = false;
    L->stopped = true;
    if (L->bad_frames > 0)
        zt_warn("mpi: %lld damaged trajectories dropped", (long long)L->bad_frames);
    weights_unref(L->latest);
    L->latest = NULL;
    weights_free(L->spare); /* no send holds it */
    L->spare = NULL;
    zt_replay_traj_free(L->scratch);
    L->scratch = NULL;
}

static const char *remote_failure(void *ctx)
{
    learner_rank *L = ctx;
    return atomic_load(&L->orphaned) ? "mpi: no actor rank is left (each was lost or failed)"
                                     : NULL;
}

const zt_train_remote *zt_dist_remote(void)
{
    learner_rank *L = &the_learner;
    L->remote = (zt_train_remote){.ctx = L,
                                  .learner_threads = zt_dist_core_share(),
                                  .start = remote_start,
                                  .stop = remote_stop,
                                  .failure = remote_failure};
    return &L->remote;
}

void zt_dist_learner_end(void)
{
    learner_rank *L = &the_learner;
    int size = zt_dist_size();
    if (!L->stopped) {
        /* the run ended before it started (or before its receiver did):
         * ranks waiting for a config or weights leave */
        for (int r = 1; r < size; r++)
            zt_dist_post(&L->sendq, r, ZT_DIST_TAG_DOWN, ZT_MSG_ABORT, NULL, 0);
        int failed;
        double until = zt_now_s() + BYE_SECONDS;
        while (zt_dist_progress(&L->sendq, &failed) > 0 && zt_now_s() < until)
            zt_dist_nap(IDLE_NAP);
    }
    zt_dist_sendq_free(&L->sendq);
    zt_dist_msg_free(&L->msg);
    free(L->peers);
    L->peers = NULL;
}
