/* zeroth bench dist: what the learner's rank can take in and send out, so
 * that docs/distributed.md can say how many actor machines one learner feeds.
 * Run under mpirun with N >= 2 ranks.
 *
 * Ingest: ranks 1..N-1 send trajectories of GAME at full rate, batched like
 * an actor rank's outbox (frames of zt_replay_traj_serialize bytes, at most
 * two messages in flight); rank 0 receives them with the training path's
 * code (zt_dist_poll, zt_dist_ingest into a replay buffer of the game's
 * settings). Printed: trajectories, positions and bytes per second rank 0
 * absorbed, and the CPU time its receiving thread spent per trajectory
 * (which gives the capacity of one core where the senders could not keep it
 * busy, as on a small machine).
 *
 * Weights: a version of each size (the game's net, then 2^16 .. 2^22 floats)
 * sent the way training sends it, one point-to-point message to each rank,
 * timed until every rank has acknowledged it; beside it MPI_Bcast of the
 * same bytes (a tree, which scales better with ranks but would tie the
 * learner to the slowest rank). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/cli_dist.h"

#ifdef ZT_HAVE_MPI

#include "core/alloc.h"
#include "core/config.h"
#include "core/rng.h"
#include "core/timer.h"
#include "dist/comm.h"
#include "dist/dist.h"
#include "nn/nn.h"
#include "replay/replay.h"
#include "train/run.h"
#include "train/train.h"

/* Distinct synthetic games each sender cycles through, and games per
 * message (an actor rank's outbox holds what its actors finished since the
 * last send: a handful). */
#define SYNTH_GAMES 256
#define GAMES_PER_MESSAGE 16
#define WEIGHT_REPS 10

static void usage(FILE *f)
{
    fprintf(
        f, "usage: mpirun -np N zeroth bench dist [GAME] [--seconds S] [--config FILE] [--set "
           "k=v ...]\n\n"
           "The learner rank's capacity (N >= 2 ranks; GAME default connect4, its training\n"
           "settings: configs/GAME.ini, --config, --set):\n"
           "  ingest   ranks 1..N-1 send GAME's trajectories at full rate, batched as actor\n"
           "           ranks do; rank 0 adds them to a replay buffer: trajectories/s,\n"
           "           positions/s, MB/s, and CPU microseconds per trajectory on rank 0\n"
           "  weights  a version of the game's net and of 2^16..2^22 floats to every rank:\n"
           "           point-to-point as training sends it, and MPI_Bcast, ms until all have it\n\n"
           "  --seconds S   ingest seconds (default 5)\n");
}

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- synthetic trajectories ---- */

/* One random game as the frames of an outbox: u32 length + bytes. Its
 * policies are random over the legal actions, as a search's are. */
static zt_status synth_game(const zt_game *g, zt_rng *rng, zt_replay_traj *t, uint8_t **frame,
                            size_t *len)
{
    zt_replay_traj_clear(t);
    uint8_t *state = zt_xmalloc(g->state_size);
    float *policy = zt_xcalloc((size_t)g->num_actions, sizeof *policy);
    uint16_t actions[ZT_MAX_ACTIONS];
    int outcomes[ZT_MAX_CHANCE_OUTCOMES];
    float probs[ZT_MAX_CHANCE_OUTCOMES];
    g->reset(g, state);
    for (int ply = 0; ply < g->max_game_length; ply++) {
        int p = g->current_player(g, state);
        if (p == ZT_TERMINAL) break;
        if (p == ZT_CHANCE) {
            int n = g->chance_outcomes(g, state, outcomes, probs);
            g->apply(g, state, outcomes[zt_rng_categorical(rng, probs, n)]);
            continue;
        }
        int n = g->legal(g, state, actions);
        memset(policy, 0, (size_t)g->num_actions * sizeof *policy);
        for (int i = 0; i < n; i++) policy[actions[i]] = 0.01f + zt_rng_uniform(rng);
        zt_replay_traj_add(t, state, policy, 2 * zt_rng_uniform(rng) - 1, true);
        g->apply(g, state, actions[zt_rng_below(rng, (uint32_t)n)]);
    }
    float r[2] = {0, 0};
    if (g->current_player(g, state) == ZT_TERMINAL) g->returns(g, state, r);
    free(state);
    free(policy);
    size_t n = zt_replay_traj_serialized_size(t);
    *frame = zt_xmalloc(4 + n);
    uint32_t n32 = (uint32_t)n;
    memcpy(*frame, &n32, 4);
    *len = 4 + n;
    return zt_replay_traj_serialize(t, r[0], *frame + 4, n, &n);
}

/* A sender: GAMES_PER_MESSAGE games a message, two in flight at most,
 * until rank 0 says stop; then BYE. */
static zt_status send_trajectories(const zt_game *g)
{
    zt_replay_traj *t;
    ZT_TRY(zt_replay_traj_new(g, &t));
    zt_rng rng;
    zt_rng_seed(&rng, 7, (uint64_t)zt_dist_rank());
    uint8_t *frames[SYNTH_GAMES];
    size_t lens[SYNTH_GAMES];
    zt_status st = ZT_OK;
    for (int i = 0; i < SYNTH_GAMES && st == ZT_OK; i++)
        st = synth_game(g, &rng, t, &frames[i], &lens[i]);
    zt_replay_traj_free(t);
    ZT_TRY(st);
    zt_dist_sendq q = {0};
    zt_dist_msg m = {0};
    bool stop = false;
    int next = 0;
    while (!stop && st == ZT_OK) {
        while (zt_dist_poll(0, ZT_DIST_TAG_DOWN, &m))
            if (m.kind == ZT_MSG_STOP) stop = true;
        int failed;
        if (zt_dist_progress(&q, &failed) < 2 && !stop) {
            size_t len = ZT_DIST_HEADER;
            for (int i = 0; i < GAMES_PER_MESSAGE; i++) len += lens[(next + i) % SYNTH_GAMES];
            uint8_t *buf = zt_xmalloc(len), *at = buf + ZT_DIST_HEADER;
            for (int i = 0; i < GAMES_PER_MESSAGE; i++, next = (next + 1) % SYNTH_GAMES) {
                memcpy(at, frames[next], lens[next]);
                at += lens[next];
            }
            st = zt_dist_post_owned(&q, 0, ZT_DIST_TAG_UP, ZT_MSG_TRAJ, buf, len);
        } else if (!stop) {
            zt_dist_nap(0.0001);
        }
    }
    if (st == ZT_OK) st = zt_dist_post(&q, 0, ZT_DIST_TAG_UP, ZT_MSG_BYE, NULL, 0);
    int failed;
    while (zt_dist_progress(&q, &failed) > 0) zt_dist_nap(0.0001);
    zt_dist_sendq_free(&q);
    zt_dist_msg_free(&m);
    for (int i = 0; i < SYNTH_GAMES; i++) free(frames[i]);
    return st;
}

/* Rank 0: takes everything for `seconds`, then STOP and what is still in
 * flight until every sender's BYE (not counted). */
static zt_status receive_trajectories(const zt_game *g, const zt_train_settings *S, double seconds)
{
    zt_replay *rb;
    ZT_TRY(zt_replay_new(g, &S->replay, &rb));
    zt_replay_traj *t;
    zt_status st = zt_replay_traj_new(g, &t);
    zt_dist_msg m = {0};
    int64_t games = 0, positions = 0, bad = 0, bytes = 0, messages = 0;
    double t0 = zt_now_s(), cpu0 = thread_cpu_s();
    while (st == ZT_OK && zt_now_s() - t0 < seconds) {
        if (!zt_dist_poll(MPI_ANY_SOURCE, ZT_DIST_TAG_UP, &m)) continue;
        if (m.kind != ZT_MSG_TRAJ) continue;
        zt_dist_ingest(g, rb, t, m.payload, m.len, &games, &positions, &bad);
        bytes += (int64_t)m.len + ZT_DIST_HEADER;
        messages++;
    }
    double wall = zt_now_s() - t0, cpu = thread_cpu_s() - cpu0;
    int size = zt_dist_size();
    for (int r = 1; r < size; r++)
        MPI_Send((uint32_t[2]){ZT_MSG_STOP, 0}, ZT_DIST_HEADER, MPI_BYTE, r, ZT_DIST_TAG_DOWN,
                 zt_dist_comm());
    for (int byes = 0; byes < size - 1;)
        if (zt_dist_poll(MPI_ANY_SOURCE, ZT_DIST_TAG_UP, &m) && m.kind == ZT_MSG_BYE) byes++;
    if (st == ZT_OK && bad > 0)
        st = zt_fail(ZT_ERR_CORRUPT, "bench dist: %lld trajectories arrived damaged",
                     (long long)bad);
    if (st == ZT_OK) {
        double per_traj = games ? 1e6 * cpu / (double)games : 0;
        printf("ingest: %d sender rank(s), %.1f s: %.0f trajectories/s, %.0f positions/s, %.2f "
               "MB/s into the replay buffer (%.0f bytes/trajectory, %.1f games/message)\n",
               size - 1, wall, (double)games / wall, (double)positions / wall,
               (double)bytes / wall / 1e6, games ? (double)bytes / (double)games : 0,
               messages ? (double)games / (double)messages : 0);
        printf("ingest: rank 0's receiver spent %.1f us CPU per trajectory (%.0f%% of its wall "
               "time): one core absorbs %.0f trajectories/s, %.0f positions/s\n",
               per_traj, 100 * cpu / wall, per_traj > 0 ? 1e6 / per_traj : 0,
               per_traj > 0 ? 1e6 / per_traj * (double)positions / (double)games : 0);
    }
    zt_dist_msg_free(&m);
    zt_replay_traj_free(t);
    zt_replay_free(rb);
    return st;
}

/* ---- weights ---- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One size: WEIGHT_REPS versions point-to-point, then as many MPI_Bcasts;
 * median milliseconds on rank 0. */
static void weights_round(size_t floats, const char *what)
{
    int rank = zt_dist_rank(), size = zt_dist_size();
    MPI_Comm comm = zt_dist_comm();
    size_t len = ZT_DIST_HEADER + 16 + floats * sizeof(float);
    uint8_t *buf = zt_xcalloc(len, 1);
    double p2p[WEIGHT_REPS], bcast[WEIGHT_REPS];
    MPI_Request *reqs = zt_xcalloc((size_t)size, sizeof *reqs);
    zt_dist_msg m = {0};
    for (int rep = 0; rep < WEIGHT_REPS; rep++) {
        MPI_Barrier(comm);
        double t0 = zt_now_s();
        if (rank == 0) {
            uint32_t h[2] = {ZT_MSG_WEIGHTS, 0};
            uint64_t head[2] = {(uint64_t)rep + 1, floats};
            memcpy(buf, h, sizeof h);
            memcpy(buf + ZT_DIST_HEADER, head, sizeof head);
            for (int r = 1; r < size; r++)
                MPI_Isend(buf, (int)len, MPI_BYTE, r, ZT_DIST_TAG_DOWN, comm, &reqs[r - 1]);
            for (int acks = 0; acks < size - 1;)
                if (zt_dist_poll(MPI_ANY_SOURCE, ZT_DIST_TAG_UP, &m) && m.kind == ZT_MSG_ACK)
                    acks++;
            MPI_Waitall(size - 1, reqs, MPI_STATUSES_IGNORE);
        } else {
            while (!zt_dist_poll(0, ZT_DIST_TAG_DOWN, &m) || m.kind != ZT_MSG_WEIGHTS) {
            }
            uint32_t ack[2] = {ZT_MSG_ACK, 0};
            MPI_Send(ack, ZT_DIST_HEADER, MPI_BYTE, 0, ZT_DIST_TAG_UP, comm);
        }
        p2p[rep] = zt_now_s() - t0;
        MPI_Barrier(comm);
        t0 = zt_now_s();
        MPI_Bcast(buf, (int)len, MPI_BYTE, 0, comm);
        /* the slowest rank's arrival, as with the acknowledgements */
        double dt = zt_now_s() - t0, slowest;
        MPI_Reduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
        bcast[rep] = slowest;
    }
    if (rank == 0) {
        qsort(p2p, WEIGHT_REPS, sizeof *p2p, cmp_double);
        qsort(bcast, WEIGHT_REPS, sizeof *bcast, cmp_double);
        double mb = (double)len / 1e6, a = p2p[WEIGHT_REPS / 2], b = bcast[WEIGHT_REPS / 2];
        printf("weights: %-22s %8zu floats %7.2f MB to %d rank(s): point-to-point %7.2f ms "
               "(%.2f GB/s out of rank 0), MPI_Bcast %7.2f ms\n",
               what, floats, mb, size - 1, 1e3 * a, mb * (size - 1) / a / 1e3, 1e3 * b);
        fflush(stdout);
    }
    zt_dist_msg_free(&m);
    free(reqs);
    free(buf);
}

static size_t net_floats(const zt_train_settings *S, zt_status *st)
{
    zt_net *net;
    *st = zt_net_new(&S->net, "ref", ZT_PRECISION_FP32, 1, &net);
    if (*st != ZT_OK) return 0;
    size_t n = zt_net_flat_size(net);
    zt_net_free(net);
    return n;
}

/* ---- the command ---- */

static zt_status bench(const char *game_name, double seconds, int argc, char **argv,
                       bool has_config)
{
    zt_config *cfg = zt_config_new();
    char path[8800];
    zt_status st = ZT_OK;
    if (!has_config && zt_run_default_config(game_name, path, sizeof path))
        st = zt_config_load_file(cfg, path);
    for (int i = 1; i < argc && st == ZT_OK; i++) zt_cli_config_arg(argc, argv, &i, cfg, &st);
    zt_game *g = NULL;
    zt_train_settings S;
    if (st == ZT_OK) st = zt_game_new(game_name, cfg, &g);
    if (st == ZT_OK) st = zt_train_settings_read(cfg, g, &S);
    if (st == ZT_OK) st = zt_config_check_unused(cfg);
    size_t n = st == ZT_OK ? net_floats(&S, &st) : 0;
    /* every rank must take part in the collectives below: agree first */
    int ok = st == ZT_OK, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, zt_dist_comm());
    if (st == ZT_OK && !all_ok) st = zt_fail(ZT_ERR_INVALID, "bench dist: another rank failed");
    if (st == ZT_OK) {
        if (zt_dist_rank() == 0) {
            char arch[256];
            zt_net_config_format(&S.net, arch, sizeof arch);
            printf("dist: %d ranks, game %s, net %s\n", zt_dist_size(), g->name, arch);
            fflush(stdout);
            st = receive_trajectories(g, &S, seconds);
            fflush(stdout);
        } else {
            st = send_trajectories(g);
        }
    }
    if (st == ZT_OK) {
        char what[64];
        snprintf(what, sizeof what, "(%s net)", g->name);
        weights_round(n, what);
        for (int lg = 16; lg <= 22; lg += 2) weights_round((size_t)1 << lg, "");
    }
    zt_game_free(g);
    zt_config_free(cfg);
    return st;
}

int zt_bench_dist(int argc, char **argv)
{
    const char *game = NULL;
    double seconds = 5;
    bool has_config = false;
    zt_status st = ZT_OK;
    for (int i = 1; i < argc && st == ZT_OK; i++) {
        const char *v;
        if (zt_cli_is_help(argv[i])) {
            usage(stdout);
            return 0;
        }
        if (zt_cli_flag_value(argc, argv, &i, "--seconds", &v, &st)) {
            char *end;
            seconds = strtod(v, &end);
            if (st == ZT_OK && (*end || !(seconds > 0)))
                st = zt_fail(ZT_ERR_INVALID, "--seconds: expected a positive number, got '%s'", v);
        } else if (zt_cli_skip_config_arg(argc, argv, &i, &has_config, &st)) {
            continue;
        } else {
            int rc = zt_cli_positional("bench dist", argv[i], (const char **const[]){&game}, 1);
            if (rc) return rc;
        }
    }
    if (st != ZT_OK) return zt_cli_fail(st);
    int exit_code;
    if (zt_cli_dist_begin("bench dist", &exit_code)) return exit_code;
    if (zt_dist_size() < 2)
        return zt_cli_error("bench dist measures between ranks: run it as mpirun -np N zeroth "
                            "bench dist (N >= 2)");
    st = bench(game ? game : "connect4", seconds, argc, argv, has_config);
    zt_cli_dist_end();
    return st == ZT_OK ? 0 : zt_cli_fail(st);
}

#else

int zt_bench_dist(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (zt_cli_is_help(argv[i])) {
            printf("zeroth bench dist: the learner rank's ingest and weight broadcast; needs a "
                   "build with MPI (-DZT_MPI=ON) and mpirun\n");
            return 0;
        }
    int exit_code;
    if (zt_cli_dist_begin("bench dist", &exit_code)) return exit_code;
    return zt_cli_error("bench dist needs a build with MPI (-DZT_MPI=ON, Debian: "
                        "libopenmpi-dev) and runs under mpirun -np N (N >= 2)");
}

#endif
