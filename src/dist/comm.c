/* MPI start and end, the non-blocking send queue, polling receives, and
 * trajectory ingest (see comm.h and dist.h). */
#include "dist/comm.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/config.h"
#include "core/log.h"
#include "core/thread.h"
#include "dist/dist.h"
#include "train/train.h"

static MPI_Comm comm = MPI_COMM_NULL;
static int world_rank, world_size;
static bool initialised;
static atomic_bool lost_any;

static long env_long(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 10) : -1;
}

zt_status zt_dist_init(void)
{
    if (initialised) return ZT_OK;
    int provided = 0;
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
        return zt_fail(ZT_ERR_UNSUPPORTED, "MPI_Init_thread failed");
    initialised = true;
    if (provided < MPI_THREAD_MULTIPLE)
        return zt_fail(ZT_ERR_UNSUPPORTED,
                       "this MPI library does not support threads (MPI_THREAD_MULTIPLE); zeroth's "
                       "learner rank receives on a thread of its own");
    /* A lost peer should be an error code to handle, not the end of the job
     * (where the runtime allows: docs/distributed.md). */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm, &world_rank);
    MPI_Comm_size(comm, &world_size);
    return ZT_OK;
}

void zt_dist_finalize(void)
{
    if (!initialised) return;
    initialised = false;
    if (atomic_load(&lost_any)) {
        /* MPI_Finalize may wait for the lost rank's connections forever */
        zt_warn("mpi: a rank was lost; leaving without MPI_Finalize");
        return;
    }
    MPI_Comm_free(&comm);
    MPI_Finalize();
}

int zt_dist_rank(void)
{
    return world_rank;
}

int zt_dist_size(void)
{
    return world_size;
}

MPI_Comm zt_dist_comm(void)
{
    return comm;
}

void zt_dist_note_lost(void)
{
    atomic_store(&lost_any, true);
}

int zt_dist_core_share(void)
{
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int cores = zt_cpu_count();
    /* bound by mpirun (--bind-to core/socket): the cores it gave us */
    if (online > 0 && cores < online) return cores;
    long local = env_long("OMPI_COMM_WORLD_LOCAL_SIZE");
    if (local < 1) local = env_long("MPI_LOCALNRANKS");
    if (local < 1) local = 1;
    int share = (int)(cores / local);
    return share > 0 ? share : 1;
}

void zt_dist_nap(double seconds)
{
    struct timespec ts = {.tv_sec = (time_t)seconds,
                          .tv_nsec = (long)((seconds - (double)(time_t)seconds) * 1e9)};
    nanosleep(&ts, NULL);
}

/* ---- sending ---- */

static void put_header(uint8_t *buf, zt_dist_kind kind)
{
    uint32_t h[2] = {(uint32_t)kind, 0};
    memcpy(buf, h, sizeof h);
}

zt_status zt_dist_post_owned(zt_dist_sendq *q, int dest, int tag, zt_dist_kind kind, uint8_t *buf,
                             size_t len)
{
    put_header(buf, kind);
    if (len > INT32_MAX) {
        free(buf);
        return zt_fail(ZT_ERR_INVALID, "mpi: a message of %zu bytes is too large", len);
    }
    q->items = zt_xgrow(q->items, &q->cap, q->n + 1, sizeof *q->items);
    zt_dist_send *s = &q->items[q->n];
    s->buf = buf;
    s->dest = dest;
    s->kind = kind;
    int rc = MPI_Isend(buf, (int)len, MPI_BYTE, dest, tag, comm, &s->req);
    if (rc != MPI_SUCCESS) {
        free(buf);
        return zt_fail(ZT_ERR_IO, "mpi: cannot send to rank %d (error %d)", dest, rc);
    }
    q->n++;
    return ZT_OK;
}

zt_status zt_dist_post(zt_dist_sendq *q, int dest, int tag, zt_dist_kind kind, const void *payload,
                       size_t len)
{
    uint8_t *buf = zt_xmalloc(ZT_DIST_HEADER + len);
    if (len) memcpy(buf + ZT_DIST_HEADER, payload, len);
    return zt_dist_post_owned(q, dest, tag, kind, buf, ZT_DIST_HEADER + len);
}

int zt_dist_progress(zt_dist_sendq *q, int *failed)
{
    *failed = -1;
    int kept = 0;
    for (int i = 0; i < q->n; i++) {
        zt_dist_send *s = &q->items[i];
        int done = 0;
        int rc = MPI_Test(&s->req, &done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
            *failed = s->dest;
            done = 1;
        }
        if (done) {
            free(s->buf);
        } else {
            q->items[kept++] = *s;
        }
    }
    q->n = kept;
    return kept;
}

int zt_dist_pending(const zt_dist_sendq *q, int dest, zt_dist_kind kind)
{
    int n = 0;
    for (int i = 0; i < q->n; i++)
        if (q->items[i].dest == dest && (kind == 0 || q->items[i].kind == kind)) n++;
    return n;
}

/* Sends abandoned to a lost rank: MPI may still read their buffers, so they
 * are freed only when the process ends (zt_dist_sendq_free). */
static void **abandoned;
static int n_abandoned;
static pthread_mutex_t abandoned_mu = PTHREAD_MUTEX_INITIALIZER;

void zt_dist_keep(void *buf)
{
    pthread_mutex_lock(&abandoned_mu);
    abandoned = zt_xrealloc(abandoned, (size_t)(n_abandoned + 1) * sizeof *abandoned);
    abandoned[n_abandoned++] = buf;
    pthread_mutex_unlock(&abandoned_mu);
}

void zt_dist_abandon(zt_dist_sendq *q, int dest)
{
    int kept = 0;
    for (int i = 0; i < q->n; i++) {
        zt_dist_send *s = &q->items[i];
        if (s->dest != dest) {
            q->items[kept++] = *s;
            continue;
        }
        MPI_Request_free(&s->req);
        zt_dist_keep(s->buf);
    }
    q->n = kept;
}

void zt_dist_sendq_free(zt_dist_sendq *q)
{
    for (int i = 0; i < q->n; i++) {
        /* still in flight at the end: left to MPI, as abandoned */
        zt_dist_send *s = &q->items[i];
        MPI_Request_free(&s->req);
        zt_dist_keep(s->buf);
    }
    free(q->items);
    memset(q, 0, sizeof *q);
}

/* ---- receiving ---- */

bool zt_dist_poll(int source, int tag, zt_dist_msg *m)
{
    int flag = 0;
    MPI_Status status;
    if (MPI_Iprobe(source, tag, comm, &flag, &status) != MPI_SUCCESS || !flag) return false;
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    if ((size_t)count > m->cap || !m->buf) {
        free(m->buf);
        m->cap = (size_t)count > 4096 ? (size_t)count : 4096;
        m->buf = zt_xmalloc(m->cap);
    }
    if (MPI_Recv(m->buf, count, MPI_BYTE, status.MPI_SOURCE, tag, comm, MPI_STATUS_IGNORE) !=
        MPI_SUCCESS)
        return false;
    if (count < ZT_DIST_HEADER) {
        zt_warn("mpi: a message of %d bytes from rank %d dropped (no header)", count,
                status.MPI_SOURCE);
        return false;
    }
    uint32_t h[2];
    memcpy(h, m->buf, sizeof h);
    m->kind = (zt_dist_kind)h[0];
    m->source = status.MPI_SOURCE;
    m->payload = m->buf + ZT_DIST_HEADER;
    m->len = (size_t)count - ZT_DIST_HEADER;
    return true;
}

void zt_dist_msg_free(zt_dist_msg *m)
{
    free(m->buf);
    memset(m, 0, sizeof *m);
}

/* ---- trajectories ---- */

void zt_dist_ingest(const zt_game *g, zt_replay *rb, zt_replay_traj *scratch,
                    const uint8_t *payload, size_t len, int64_t *games, int64_t *positions,
                    int64_t *bad)
{
    size_t at = 0;
    while (at + 4 <= len) {
        uint32_t n;
        memcpy(&n, payload + at, 4);
        at += 4;
        if (n > len - at) {
            (*bad)++;
            return;
        }
        float return0;
        zt_status st = zt_replay_traj_deserialize(g, payload + at, n, scratch, &return0);
        if (st == ZT_OK) st = zt_replay_add_game(rb, scratch, return0, NULL);
        if (st == ZT_OK) {
            (*games)++;
            *positions += zt_replay_traj_length(scratch);
        } else {
            (*bad)++;
        }
        at += n;
    }
}

/* ---- the run's config ---- */

zt_status zt_dist_read_config(const char *text, zt_config **cfg, zt_game **game,
                              zt_train_settings *S, int64_t *actors)
{
    *game = NULL;
    *cfg = zt_config_new();
    ZT_TRY(zt_config_load_string(*cfg, text, "the run's config from rank 0"));
    const char *name = "";
    ZT_TRY(zt_config_string(*cfg, "game", "", &name));
    ZT_TRY(zt_game_new(name, *cfg, game));
    ZT_TRY(zt_train_settings_read(*cfg, *game, S));
    return zt_config_int(*cfg, "actors", 0, 0, 1024, actors);
}
