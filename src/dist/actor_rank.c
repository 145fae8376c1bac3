/* An actor rank (dist.h): the run's config from rank 0, a runner of this
 * process's actors whose sink batches serialised games for rank 0 and whose
 * weight source is a local store that rank 0's versions are published into,
 * and the main thread polling MPI between naps. The actors never wait for
 * MPI: a push appends bytes to the outbox under a mutex, a poll reads the
 * local store; only the replay ratio (rank 0's allowance) holds them. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/config.h"
#include "core/hash.h"
#include "core/log.h"
#include "core/timer.h"
#include "dist/comm.h"
#include "dist/dist.h"
#include "dist/learners.h"
#include "selfplay/runner.h"
#include "selfplay/weights.h"
#include "train/train.h"

/* Seconds between the statistics this rank reports (also its heartbeat). */
#define STATS_SECONDS 0.25
/* The main thread's nap when there was nothing to do. */
#define IDLE_NAP 0.001
/* How long the way out waits for rank 0 to take the last messages. */
#define DRAIN_SECONDS 60.0

typedef struct actor_rank {
    int rank;
    zt_game *game;
    zt_train_settings S;
    zt_runner *runner;
    uint8_t *start_states;    /* selfplay.start_positions, read (the actors borrow them) */
    zt_weight_store *store;   /* made by the first version from rank 0 */
    zt_weight_source source;  /* the store's */
    zt_weight_source wrapper; /* the runner's: nothing before the store exists */
    zt_traj_sink sink;
    zt_dist_sendq sendq;
    zt_dist_msg msg;

    /* the outbox: frames (u32 length + trajectory bytes) after a header's
     * worth of room, swapped out whole into a TRAJ message */
    pthread_mutex_t out_mu;
    uint8_t *out;
    size_t out_len, out_cap;
    atomic_llong pushed_positions, pushed_games;

    /* rank 0's allowance (zt_dist_throttle), read by the hold hook */
    atomic_llong allowed, received, received_from_me;

    bool stop, aborted;
} actor_rank;

/* ---- the sink ---- */

static void outbox_reset(actor_rank *A)
{
    A->out_len = ZT_DIST_HEADER;
}

static zt_status push_game(void *ctx, const zt_replay_traj *t, float return0)
{
    actor_rank *A = ctx;
    size_t n = zt_replay_traj_serialized_size(t);
    if (n > UINT32_MAX) return zt_fail(ZT_ERR_INVALID, "a game of %zu bytes is too large", n);
    pthread_mutex_lock(&A->out_mu);
    A->out = zt_xreserve(A->out, &A->out_cap, A->out_len + 4 + n);
    uint32_t len32 = (uint32_t)n;
    memcpy(A->out + A->out_len, &len32, 4);
    size_t written = 0;
    zt_status st = zt_replay_traj_serialize(t, return0, A->out + A->out_len + 4, n, &written);
    if (st == ZT_OK) A->out_len += 4 + written;
    pthread_mutex_unlock(&A->out_mu);
    if (st == ZT_OK) {
        atomic_fetch_add(&A->pushed_positions, zt_replay_traj_length(t));
        atomic_fetch_add(&A->pushed_games, 1);
    }
    return st;
}

/* Sends what the outbox holds as one TRAJ message. */
static zt_status send_outbox(actor_rank *A)
{
    pthread_mutex_lock(&A->out_mu);
    if (A->out_len <= ZT_DIST_HEADER) {
        pthread_mutex_unlock(&A->out_mu);
        return ZT_OK;
    }
    uint8_t *buf = A->out;
    size_t len = A->out_len;
    A->out = zt_xmalloc(A->out_cap);
    outbox_reset(A);
    pthread_mutex_unlock(&A->out_mu);
    return zt_dist_post_owned(&A->sendq, 0, ZT_DIST_TAG_UP, ZT_MSG_TRAJ, buf, len);
}

/* ---- the replay ratio ---- */

static bool held(void *ctx, int64_t positions)
{
    (void)positions;
    actor_rank *A = ctx;
    int64_t unacked = atomic_load(&A->pushed_positions) - atomic_load(&A->received_from_me);
    return atomic_load(&A->received) + unacked > atomic_load(&A->allowed);
}

/* ---- messages ---- */

static zt_status send_stats(actor_rank *A)
{
    zt_dist_stats s = {.games = atomic_load(&A->pushed_games),
                       .positions = atomic_load(&A->pushed_positions),
                       .actors = A->runner ? zt_runner_stats(A->runner) : (zt_actor_stats){0}};
    return zt_dist_post(&A->sendq, 0, ZT_DIST_TAG_UP, ZT_MSG_STATS, &s, sizeof s);
}

/* A version from rank 0 into the local store. */
static void take_weights(actor_rank *A, const uint8_t *p, size_t len)
{
    uint64_t head[2];
    if (len < sizeof head) return;
    memcpy(head, p, sizeof head);
    if (head[1] > (len - sizeof head) / sizeof(float)) {
        zt_warn("mpi rank %d: weights message cut short; ignored", A->rank);
        return;
    }
    size_t n = (size_t)head[1];
    if (!A->store) {
        A->store = zt_weight_store_new(n);
        A->source = zt_weight_store_source(A->store);
    }
    if (n != zt_weight_store_size(A->store)) {
        zt_warn("mpi rank %d: weights of %zu floats, expected %zu; ignored", A->rank, n,
                zt_weight_store_size(A->store));
        return;
    }
    float *dst = zt_weight_store_begin(A->store);
    memcpy(dst, p + sizeof head, n * sizeof(float));
    zt_weight_store_commit(A->store);
}

/* Handles what rank 0 has sent; true if it did anything. */
static bool poll_down(actor_rank *A, char **config)
{
    bool any = false;
    while (zt_dist_poll(0, ZT_DIST_TAG_DOWN, &A->msg)) {
        any = true;
        const zt_dist_msg *m = &A->msg;
        switch (m->kind) {
        case ZT_MSG_CONFIG:
            if (config && !*config) {
                *config = zt_xmalloc(m->len + 1);
                memcpy(*config, m->payload, m->len);
                (*config)[m->len] = '\0';
                return true; /* a learner rank reads what follows itself */
            }
            break;
        case ZT_MSG_WEIGHTS:
            take_weights(A, m->payload, m->len);
            break;
        case ZT_MSG_THROTTLE:
            if (m->len == sizeof(zt_dist_throttle)) {
                zt_dist_throttle t;
                memcpy(&t, m->payload, sizeof t);
                atomic_store(&A->allowed, t.allowed);
                atomic_store(&A->received, t.received);
                atomic_store(&A->received_from_me, t.received_from_you);
                if (A->runner) zt_runner_wake(A->runner);
            }
            break;
        case ZT_MSG_STOP:
            A->stop = true;
            break;
        case ZT_MSG_ABORT:
            A->stop = A->aborted = true;
            break;
        default:
            zt_warn("mpi rank %d: unexpected message kind %d", A->rank, (int)m->kind);
        }
        if (A->stop) break; /* nothing follows STOP */
    }
    return any;
}

/* ---- setup ---- */

/* The runner over the settings read (actors: the config's `actors` key). */
static zt_status make_runner(actor_rank *A, int64_t actors)
{
    zt_train_settings *S = &A->S;
    /* actors = 0: one per core of this rank's share (the learner is
     * elsewhere) */
    if (actors == 0) S->actors = zt_dist_core_share();
    /* every rank's actors play their own games */
    S->actor.seed = S->seed ^ zt_hash_mix(0x72616e6bULL + (uint64_t)A->rank);
    A->sink = (zt_traj_sink){.ctx = A, .push = push_game};
    ZT_TRY(zt_train_start_states(A->game, S, &A->start_states));
    /* int8 actors: rank 0's versions carry the int8 tail */
    size_t tail = 0;
    if (S->int8_actors) ZT_TRY(zt_int8_gate_tail_for(&S->net, S->backend, &tail));
    zt_runner_config rc = {.actors = S->actors,
                           .actor = S->actor,
                           .net = S->net,
                           .backend = S->backend,
                           .precision = S->precision,
                           .weights_tail = tail,
                           .evaluator = S->evaluator,
                           .shared_threads = S->actors,
                           .inflight = S->inflight};
    zt_runner_hooks hooks = {.ctx = A, .hold = held};
    ZT_TRY(zt_runner_new(A->game, &rc, &A->sink, &A->wrapper, &hooks, &A->runner));
    /* until rank 0's first allowance: the positions before training, and
     * two rounds of every actor's games beyond */
    atomic_store(&A->allowed, S->min_positions + 2 * (int64_t)S->actor.games * S->actors);
    zt_dist_hello h = {.actors = S->actors, .games_per_actor = S->actor.games};
    return zt_dist_post(&A->sendq, 0, ZT_DIST_TAG_UP, ZT_MSG_HELLO, &h, sizeof h);
}

/* The runner's weight source: the local store once the first version made
 * it (before the actor threads start, which read A->store after that). */
static zt_status weight_source_poll(void *ctx, uint64_t have, float *dst, size_t n, uint64_t *got)
{
    actor_rank *A = ctx;
    *got = have;
    if (!A->store) return ZT_OK;
    return A->source.poll(A->source.ctx, have, dst, n, got);
}

/* ---- the rank's life ---- */

static void drain(actor_rank *A, double seconds)
{
    double until = zt_now_s() + seconds;
    int failed;
    while (zt_dist_progress(&A->sendq, &failed) > 0 && zt_now_s() < until) {
        if (!A->stop) poll_down(A, NULL);
        zt_dist_nap(IDLE_NAP);
    }
}

void zt_dist_actor_main(void)
{
    actor_rank *A = zt_xcalloc(1, sizeof *A);
    A->rank = zt_dist_rank();
    pthread_mutex_init(&A->out_mu, NULL);
    A->out_cap = 1 << 16;
    A->out = zt_xmalloc(A->out_cap);
    outbox_reset(A);
    zt_log_set_level(ZT_LOG_WARN);
    A->wrapper = (zt_weight_source){.ctx = A, .poll = weight_source_poll};

    char *config = NULL;
    while (!config && !A->stop) {
        if (!poll_down(A, &config)) zt_dist_nap(IDLE_NAP);
    }
    zt_status st = ZT_OK;
    char why[ZT_MESSAGE_MAX] = "";
    zt_config *cfg = NULL;
    int64_t actors = 0;
    if (config) st = zt_dist_read_config(config, &cfg, &A->game, &A->S, &actors);
    if (config && st == ZT_OK && A->rank < A->S.dist_learners) {
        /* not an actor: one of the data-parallel learners */
        zt_game_free(A->game);
        A->game = NULL;
        zt_dist_learner_rank_main(config, A->S.dist_learners);
        A->stop = A->aborted = true; /* it said BYE itself */
    } else if (config && st == ZT_OK) {
        st = make_runner(A, actors);
    }
    free(config);
    /* the first version, then the actors start */
    while (st == ZT_OK && !A->stop && !A->store)
        if (!poll_down(A, NULL)) zt_dist_nap(IDLE_NAP);
    if (st == ZT_OK && !A->stop) st = zt_runner_pull_weights(A->runner);
    if (st == ZT_OK && !A->stop) st = zt_runner_start(A->runner);
    double last_stats = 0;
    while (st == ZT_OK && !A->stop) {
        bool busy = poll_down(A, NULL);
        int failed;
        if (zt_dist_pending(&A->sendq, 0, ZT_MSG_TRAJ) == 0) st = send_outbox(A);
        if (st == ZT_OK && zt_now_s() - last_stats >= STATS_SECONDS) {
            st = send_stats(A);
            last_stats = zt_now_s();
        }
        zt_dist_progress(&A->sendq, &failed);
        if (failed >= 0 && st == ZT_OK) st = zt_fail(ZT_ERR_IO, "mpi: sending to rank 0 failed");
        if (st == ZT_OK && zt_runner_failed(A->runner)) st = zt_runner_stop(A->runner);
        if (!busy) zt_dist_nap(IDLE_NAP);
    }
    if (st != ZT_OK) snprintf(why, sizeof why, "%s", zt_error_message());
    if (A->runner) {
        zt_status stopped = zt_runner_stop(A->runner);
        if (st == ZT_OK && stopped != ZT_OK) {
            st = stopped;
            snprintf(why, sizeof why, "%s", zt_error_message());
        }
    }
    if (!A->aborted) {
        /* what is left, the totals, then (a failure) why; rank 0 keeps
         * receiving until BYE, so every send completes */
        send_outbox(A);
        send_stats(A);
        if (st != ZT_OK) {
            char text[600];
            int n = snprintf(text, sizeof text, "rank %d: %s", A->rank, why);
            zt_dist_post(&A->sendq, 0, ZT_DIST_TAG_UP, ZT_MSG_FAILED, text, (size_t)n);
            zt_warn("mpi rank %d: %s", A->rank, why);
        }
        /* after a failure rank 0 still sends STOP (and maybe weights) */
        while (!A->stop) {
            if (!poll_down(A, NULL)) zt_dist_nap(IDLE_NAP);
        }
        zt_dist_post(&A->sendq, 0, ZT_DIST_TAG_UP, ZT_MSG_BYE, NULL, 0);
    }
    drain(A, DRAIN_SECONDS);
    zt_runner_free(A->runner);
    free(A->start_states);
    zt_weight_store_free(A->store);
    zt_game_free(A->game);
    zt_config_free(cfg); /* the settings' strings until here */
    zt_dist_sendq_free(&A->sendq);
    zt_dist_msg_free(&A->msg);
    free(A->out);
    pthread_mutex_destroy(&A->out_mu);
    free(A);
}
