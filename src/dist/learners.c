/* Data-parallel learners (dist.learners = L; dist.h, docs/distributed.md):
 * ranks 0..L-1 each train on batches of their own replay buffer (rank 0
 * forwards every trajectory to the others) and average their gradients with
 * one MPI allreduce per step, in fp32: one bucket of the gradient, the
 * batch norm running statistics, the losses, how many learners had a batch
 * and a stop flag. Every learner then applies the same mean, so their
 * weights stay the same bit for bit; every dist.check_every steps a second
 * allreduce compares a hash of each learner's weights and stops the run if
 * they differ.
 *
 * The allreduce is non-blocking and waited for between short naps, so a
 * learner waiting for the others leaves its core to the actors. */
#include "dist/learners.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/config.h"
#include "core/fault.h"
#include "core/fileio.h"
#include "core/hash.h"
#include "core/log.h"
#include "core/timer.h"
#include "dist/comm.h"
#include "dist/dist.h"

/* Tail of the bucket: policy loss, value loss, learners with a batch,
 * MuZero's step-0 policy and value losses, and last the stop flag
 * (zt_dist_dp_stop). */
enum { TAIL = 6 };

struct zt_dist_dp {
    MPI_Comm comm; /* the learners, rank 0 first */
    int learners, index;
    zt_net *net;
    size_t nstats; /* non-trainable floats (batch norm running statistics) */
    float *bucket; /* grads | stats | tail */
    size_t bucket_n;
    int check_every;
    int64_t steps;
    double timeout; /* dist.timeout: seconds a collective may wait */
    bool broken;    /* a collective failed or timed out: no more of them */
};

static size_t stats_floats(zt_net *net)
{
    size_t n = 0;
    for (int i = 0; i < zt_net_tensor_count(net); i++) {
        zt_net_tensor t = zt_net_tensor_at(net, i);
        if (!t.trainable) n += t.count;
    }
    return n;
}

/* Copies the running statistics into dst (to_net false) or back. */
static void copy_stats(zt_net *net, float *buf, bool to_net)
{
    for (int i = 0; i < zt_net_tensor_count(net); i++) {
        zt_net_tensor t = zt_net_tensor_at(net, i);
        if (t.trainable) continue;
        if (to_net)
            memcpy(t.data, buf, t.count * sizeof(float));
        else
            memcpy(buf, t.data, t.count * sizeof(float));
        buf += t.count;
    }
}

/* Waits for a non-blocking collective, napping between tests. A learner
 * rank that died never answers: rank 0, whose call the others are always
 * waiting for, gives up after dist.timeout seconds and the run ends with
 * an error (the other learners wait as long as rank 0 has no data to train
 * on; mpirun ends them with rank 0). */
static zt_status wait_for(zt_dist_dp *dp, MPI_Request *req, const char *what)
{
    double until = zt_now_s() + dp->timeout;
    for (;;) {
        int done = 0;
        int rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
            dp->broken = true;
            zt_dist_note_lost();
            return zt_fail(ZT_ERR_IO, "mpi: %s among the learners failed (error %d)", what, rc);
        }
        if (done) return ZT_OK;
        if (dp->index == 0 && zt_now_s() > until) {
            dp->broken = true;
            zt_dist_note_lost();
            return zt_fail(ZT_ERR_IO,
                           "mpi: %s: a learner rank did not answer for %.0f s (dist.timeout); the "
                           "run stops",
                           what, dp->timeout);
        }
        zt_dist_nap(0.0001);
    }
}

static zt_status allreduce(zt_dist_dp *dp, void *buf, int count, MPI_Datatype type, MPI_Op op,
                           const char *what)
{
    if (dp->broken) return zt_fail(ZT_ERR_IO, "mpi: the learners' collectives failed before");
    MPI_Request req;
    int rc = MPI_Iallreduce(MPI_IN_PLACE, buf, count, type, op, dp->comm, &req);
    if (rc != MPI_SUCCESS)
        return zt_fail(ZT_ERR_IO, "mpi: %s among the learners failed (error %d)", what, rc);
    return wait_for(dp, &req, what);
}

/* Every learner's weights (and running statistics) hash the same. */
static zt_status check_same(zt_dist_dp *dp)
{
    uint64_t h = 0;
    for (int i = 0; i < zt_net_tensor_count(dp->net); i++) {
        zt_net_tensor t = zt_net_tensor_at(dp->net, i);
        h = zt_hash_bytes(t.data, t.count * sizeof(float), h);
    }
    uint64_t lo = h, hi = h;
    ZT_TRY(allreduce(dp, &lo, 1, MPI_UINT64_T, MPI_MIN, "the weights check"));
    ZT_TRY(allreduce(dp, &hi, 1, MPI_UINT64_T, MPI_MAX, "the weights check"));
    if (lo != hi)
        return zt_fail(ZT_ERR_CORRUPT,
                       "data-parallel learners disagree after %lld steps: their weights differ "
                       "(hash %016llx on learner %d, range %016llx..%016llx)",
                       (long long)dp->steps, (unsigned long long)h, dp->index,
                       (unsigned long long)lo, (unsigned long long)hi);
    return ZT_OK;
}

static zt_status reduce(void *ctx, float *grads, size_t n, zt_train_losses *losses, bool has_batch,
                        bool *skip)
{
    zt_dist_dp *dp = ctx;
    ZT_ASSERT(n + dp->nstats + TAIL == dp->bucket_n);
    float *b = dp->bucket, *stats = b + n, *tail = stats + dp->nstats;
    memcpy(b, grads, n * sizeof(float));
    if (has_batch)
        copy_stats(dp->net, stats, false);
    else
        memset(stats, 0, dp->nstats * sizeof(float));
    tail[0] = (float)losses->policy;
    tail[1] = (float)losses->value;
    tail[2] = has_batch ? 1.0f : 0.0f;
    tail[3] = (float)losses->policy0;
    tail[4] = (float)losses->value0;
    tail[TAIL - 1] = 0;
    ZT_TRY(allreduce(dp, b, (int)dp->bucket_n, MPI_FLOAT, MPI_SUM, "the gradient allreduce"));
    if (tail[TAIL - 1] > 0) {
        *skip = true;
        return ZT_OK;
    }
    float k = tail[2] > 0 ? 1.0f / tail[2] : 0.0f;
    for (size_t i = 0; i < n; i++) grads[i] = b[i] * k;
    if (dp->index == dp->learners - 1 && n > 0 && zt_fault_hit(ZT_FAULT_LEARNERS))
        grads[0] += 1e-3f;
    if (tail[2] > 0) {
        for (size_t i = 0; i < dp->nstats; i++) stats[i] *= k;
        copy_stats(dp->net, stats, true);
    }
    losses->policy = tail[0] * k;
    losses->value = tail[1] * k;
    losses->policy0 = tail[3] * k;
    losses->value0 = tail[4] * k;
    dp->steps++;
    /* Here, before the update, every learner holds the same weights and
     * (just averaged) running statistics; before the averaging the
     * statistics are each learner's own batch's. */
    if (dp->check_every > 0 && dp->steps % dp->check_every == 0) ZT_TRY(check_same(dp));
    return ZT_OK;
}

/* ---- the initial state, from rank 0 ---- */

static zt_status bcast_bytes(zt_dist_dp *dp, uint8_t **data, uint64_t *len)
{
    if (MPI_Bcast(len, 1, MPI_UINT64_T, 0, dp->comm) != MPI_SUCCESS)
        return zt_fail(ZT_ERR_IO, "mpi: broadcast to the learners failed");
    if (dp->index != 0) *data = zt_xmalloc(*len ? *len : 1);
    for (uint64_t at = 0; at < *len;) {
        uint64_t part = *len - at > (1u << 30) ? (1u << 30) : *len - at;
        if (MPI_Bcast(*data + at, (int)part, MPI_BYTE, 0, dp->comm) != MPI_SUCCESS)
            return zt_fail(ZT_ERR_IO, "mpi: broadcast to the learners failed");
        at += part;
    }
    return ZT_OK;
}

/* Rank 0's optimizer state goes through its own file format (the one
 * checkpoints use), by way of a temporary file on each side. */
static zt_status share_optimizer(zt_dist_dp *dp, zt_trainer *trainer)
{
    char path[] = "/tmp/zeroth-optimizer-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return zt_fail(ZT_ERR_IO, "cannot make a temporary file in /tmp");
    close(fd);
    uint8_t *data = NULL;
    uint64_t len = 0;
    zt_status st = ZT_OK;
    int ok = 1, all = 1;
    if (dp->index == 0) {
        size_t n = 0;
        st = zt_trainer_save(trainer, path);
        if (st == ZT_OK) st = zt_read_file(path, (char **)&data, &n);
        len = n;
        ok = st == ZT_OK;
    }
    /* everyone learns whether rank 0 could, before the next collective */
    MPI_Bcast(&ok, 1, MPI_INT, 0, dp->comm);
    if (!ok) {
        unlink(path);
        free(data);
        return st != ZT_OK ? st : zt_fail(ZT_ERR_IO, "rank 0 could not share its optimizer");
    }
    st = bcast_bytes(dp, &data, &len);
    if (st == ZT_OK && dp->index != 0) st = zt_write_file_atomic(path, data, len);
    if (st == ZT_OK && dp->index != 0) st = zt_trainer_load(trainer, path);
    unlink(path);
    free(data);
    ok = st == ZT_OK;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, dp->comm);
    if (st == ZT_OK && !all) st = zt_fail(ZT_ERR_IO, "a learner could not load the optimizer");
    return st;
}

zt_status zt_dist_dp_new(int learners, zt_learner *l, const zt_train_settings *S, int64_t *step,
                         zt_dist_dp **out)
{
    *out = NULL;
    zt_dist_dp *dp = zt_xcalloc(1, sizeof *dp);
    dp->learners = learners;
    dp->index = zt_dist_rank();
    dp->net = zt_learner_net(l);
    dp->check_every = S->dist_check_every;
    dp->timeout = S->dist_timeout;
    MPI_Group world, group;
    MPI_Comm_group(zt_dist_comm(), &world);
    int range[1][3] = {{0, learners - 1, 1}};
    MPI_Group_range_incl(world, 1, range, &group);
    int rc = MPI_Comm_create_group(zt_dist_comm(), group, 0x6c6e, &dp->comm);
    MPI_Group_free(&group);
    MPI_Group_free(&world);
    if (rc != MPI_SUCCESS) {
        free(dp);
        return zt_fail(ZT_ERR_IO, "mpi: cannot make the learners' communicator (error %d)", rc);
    }
    MPI_Comm_set_errhandler(dp->comm, MPI_ERRORS_RETURN);
    size_t n = zt_net_param_count(dp->net);
    dp->nstats = stats_floats(dp->net);
    dp->bucket_n = n + dp->nstats + TAIL;
    dp->bucket = zt_xmalloc(dp->bucket_n * sizeof(float));
    /* rank 0's weights, optimizer and counters */
    zt_status st = ZT_OK;
    for (int i = 0; i < zt_net_tensor_count(dp->net) && st == ZT_OK; i++) {
        zt_net_tensor t = zt_net_tensor_at(dp->net, i);
        if (MPI_Bcast(t.data, (int)t.count, MPI_FLOAT, 0, dp->comm) != MPI_SUCCESS)
            st = zt_fail(ZT_ERR_IO, "mpi: broadcast of the weights failed");
    }
    if (st == ZT_OK) zt_net_params_changed(dp->net);
    if (st == ZT_OK) st = share_optimizer(dp, zt_learner_trainer(l));
    if (st == ZT_OK && MPI_Bcast(step, 1, MPI_INT64_T, 0, dp->comm) != MPI_SUCCESS)
        st = zt_fail(ZT_ERR_IO, "mpi: broadcast of the step failed");
    if (st != ZT_OK) {
        zt_dist_dp_free(dp);
        return st;
    }
    dp->steps = *step;
    zt_learner_reducer r = {.ctx = dp, .replicas = learners, .reduce = reduce};
    zt_learner_set_reducer(l, &r);
    *out = dp;
    return ZT_OK;
}

zt_status zt_dist_dp_stop(zt_dist_dp *dp)
{
    if (dp->broken) return ZT_OK; /* nobody to tell */
    memset(dp->bucket, 0, dp->bucket_n * sizeof(float));
    dp->bucket[dp->bucket_n - 1] = 1;
    return allreduce(dp, dp->bucket, (int)dp->bucket_n, MPI_FLOAT, MPI_SUM, "the last allreduce");
}

bool zt_dist_dp_broken(const zt_dist_dp *dp)
{
    return dp->broken;
}

void zt_dist_dp_free(zt_dist_dp *dp)
{
    if (!dp) return;
    /* after a failure the free could wait for the lost rank */
    if (dp->comm != MPI_COMM_NULL && !dp->broken) MPI_Comm_free(&dp->comm);
    free(dp->bucket);
    free(dp);
}

/* ---- learner ranks other than 0 ---- */

typedef struct learner_peer {
    int rank;
    const zt_game *game;
    zt_replay *rb;
    zt_replay_traj *scratch;
    zt_dist_sendq sendq;
    zt_dist_msg msg;
    atomic_bool stop_seen;
    int64_t bad;
    pthread_t thread;
} learner_peer;

/* The trajectories rank 0 forwards, into this learner's buffer, until STOP;
 * then BYE. */
static void *forwarded_main(void *arg)
{
    learner_peer *P = arg;
    while (!atomic_load(&P->stop_seen)) {
        bool any = false;
        while (zt_dist_poll(0, ZT_DIST_TAG_DOWN, &P->msg)) {
            any = true;
            int64_t games = 0, positions = 0;
            if (P->msg.kind == ZT_MSG_TRAJ)
                zt_dist_ingest(P->game, P->rb, P->scratch, P->msg.payload, P->msg.len, &games,
                               &positions, &P->bad);
            else if (P->msg.kind == ZT_MSG_STOP || P->msg.kind == ZT_MSG_ABORT)
                atomic_store(&P->stop_seen, true);
            if (atomic_load(&P->stop_seen)) break;
        }
        int failed;
        zt_dist_progress(&P->sendq, &failed);
        if (!any) zt_dist_nap(0.0005);
    }
    zt_dist_post(&P->sendq, 0, ZT_DIST_TAG_UP, ZT_MSG_BYE, NULL, 0);
    int failed;
    while (zt_dist_progress(&P->sendq, &failed) > 0) zt_dist_nap(0.0005);
    return NULL;
}

void zt_dist_learner_rank_main(const char *config_text, int learners)
{
    learner_peer P = {.rank = zt_dist_rank()};
    zt_config *cfg = NULL;
    zt_game *game = NULL;
    zt_train_settings S;
    zt_learner *l = NULL;
    zt_dist_dp *dp = NULL;
    int64_t actors_key;
    zt_status st = zt_dist_read_config(config_text, &cfg, &game, &S, &actors_key);
    if (st == ZT_OK && S.learner_threads_auto) S.learner_threads = zt_dist_core_share();
    if (st == ZT_OK) st = zt_replay_new(game, &S.replay, &P.rb);
    if (st == ZT_OK) st = zt_replay_traj_new(game, &P.scratch);
    if (st == ZT_OK) st = zt_learner_new(game, &S, P.rb, &l);
    int64_t step = 0;
    /* collective with rank 0, which is in zt_dist_dp_new too: a failure
     * before it leaves rank 0 waiting, so it is reported loudly */
    if (st == ZT_OK) st = zt_dist_dp_new(learners, l, &S, &step, &dp);
    if (st != ZT_OK) {
        zt_error("mpi learner rank %d: %s", P.rank, zt_error_message());
        MPI_Abort(zt_dist_comm(), 1);
    }
    zt_learner_counters c = zt_learner_get_counters(l);
    c.step = step;
    /* its own share of the buffer: a batch stream of its own */
    zt_rng_seed(&c.sample_rng, S.seed, 0x73616d70ULL + (uint64_t)P.rank);
    zt_learner_set_counters(l, &c);
    P.game = game;
    zt_dist_hello h = {.actors = 0, .games_per_actor = 0};
    zt_dist_post(&P.sendq, 0, ZT_DIST_TAG_UP, ZT_MSG_HELLO, &h, sizeof h);
    bool thread = pthread_create(&P.thread, NULL, forwarded_main, &P) == 0;
    if (!thread) {
        zt_error("mpi learner rank %d: cannot start its receiver thread", P.rank);
        MPI_Abort(zt_dist_comm(), 1);
    }
    /* In step with rank 0 until it stops the learners: an error here (a
     * failed check, a diverged loss) is rank 0's as well, which stops the
     * run; this rank keeps taking part until then. */
    bool warned = false;
    while (!zt_learner_stopped(l)) {
        bool own = zt_replay_get_stats(P.rb).positions >= S.batch;
        st = own ? zt_learner_step(l) : zt_learner_step_without_batch(l);
        if (st != ZT_OK && !warned) {
            zt_warn("mpi learner rank %d: %s", P.rank, zt_error_message());
            warned = true;
        }
    }
    zt_learner_pause(l);
    pthread_join(P.thread, NULL);
    if (P.bad > 0)
        zt_warn("mpi learner rank %d: %lld damaged trajectories", P.rank, (long long)P.bad);
    zt_dist_dp_free(dp);
    zt_learner_free(l);
    zt_replay_traj_free(P.scratch);
    zt_replay_free(P.rb);
    zt_game_free(game);
    zt_config_free(cfg);
    zt_dist_sendq_free(&P.sendq);
    zt_dist_msg_free(&P.msg);
}
