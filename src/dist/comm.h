/* The messages between ranks and the non-blocking plumbing under them
 * (internal to src/dist/). Every message is bytes on the run's communicator:
 * an 8-byte header (u32 kind, u32 zero) and a payload. One tag each way, so
 * that MPI's order between a pair of ranks holds for all kinds: an actor
 * rank that sees STOP has received every weight version sent before it, and
 * rank 0 that sees BYE has every trajectory the rank sent.
 *
 * Ranks are processes of the same build (structs cross as bytes); the
 * trajectories themselves travel in their portable form (replay.h). */
#ifndef ZT_DIST_COMM_H
#define ZT_DIST_COMM_H

#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "game/game.h"
#include "replay/replay.h"
#include "selfplay/actor.h"

enum {
    ZT_DIST_TAG_UP = 11,   /* actor rank -> rank 0 */
    ZT_DIST_TAG_DOWN = 12, /* rank 0 -> actor rank */
};

typedef enum zt_dist_kind {
    /* up */
    ZT_MSG_HELLO = 1, /* zt_dist_hello */
    ZT_MSG_TRAJ,      /* frames: u32 length, then zt_replay_traj_serialize bytes */
    ZT_MSG_STATS,     /* zt_dist_stats */
    ZT_MSG_FAILED,    /* text: why this rank's actors stopped */
    ZT_MSG_BYE,       /* the rank's last message */
    ZT_MSG_ACK,       /* bench: a weight version arrived (u64 version) */
    /* down */
    ZT_MSG_CONFIG = 32, /* the run's config.ini text */
    ZT_MSG_ABORT,       /* the run ended before it started */
    ZT_MSG_WEIGHTS,     /* u64 version, u64 count, count floats */
    ZT_MSG_THROTTLE,    /* zt_dist_throttle */
    ZT_MSG_STOP,        /* stop the actors, say BYE */
} zt_dist_kind;

#define ZT_DIST_HEADER 8

typedef struct zt_dist_hello {
    int32_t actors, games_per_actor;
} zt_dist_hello;

/* An actor rank's totals: what its sink took, and its actors' statistics. */
typedef struct zt_dist_stats {
    int64_t games, positions;
    zt_actor_stats actors;
} zt_dist_stats;

/* The replay ratio across ranks (see learner.c's allowance): the actors of
 * a rank hold while received + (what they pushed - received_from_you) >
 * allowed, all in positions counted by rank 0. */
typedef struct zt_dist_throttle {
    int64_t allowed, received, received_from_you;
} zt_dist_throttle;

/* The run's communicator (a duplicate of MPI_COMM_WORLD). */
MPI_Comm zt_dist_comm(void);
/* Marks a rank lost (zt_dist_finalize then skips MPI_Finalize). */
void zt_dist_note_lost(void);

/* ---- sending: each message its own buffer until MPI is done with it ---- */

typedef struct zt_dist_send {
    MPI_Request req;
    uint8_t *buf;
    int dest;
    zt_dist_kind kind;
} zt_dist_send;

typedef struct zt_dist_sendq {
    zt_dist_send *items;
    int n, cap;
} zt_dist_sendq;

/* Starts sending header + payload (copied) to dest. ZT_ERR_IO when MPI
 * refuses (a lost peer). */
zt_status zt_dist_post(zt_dist_sendq *q, int dest, int tag, zt_dist_kind kind, const void *payload,
                       size_t len);
/* The same with a buffer the caller filled: header space first, then the
 * payload; the queue owns buf from here (freed once sent). */
zt_status zt_dist_post_owned(zt_dist_sendq *q, int dest, int tag, zt_dist_kind kind, uint8_t *buf,
                             size_t len);
/* Frees the sends that completed; returns how many are still pending. A
 * send that fails (a lost peer) is dropped and its rank written to *failed
 * (-1: none). */
int zt_dist_progress(zt_dist_sendq *q, int *failed);
/* Pending sends to dest (of kind, or of any kind with kind 0). */
int zt_dist_pending(const zt_dist_sendq *q, int dest, zt_dist_kind kind);
/* Forgets every send to dest (a lost rank): MPI_Request_free, buffers kept
 * alive until free (MPI may still read them). */
void zt_dist_abandon(zt_dist_sendq *q, int dest);
void zt_dist_sendq_free(zt_dist_sendq *q);
/* Keeps buf alive (unfreed) to the end of the process: a buffer MPI may
 * still read for a request that was let go. */
void zt_dist_keep(void *buf);

/* ---- receiving ---- */

typedef struct zt_dist_msg {
    zt_dist_kind kind;
    int source;
    const uint8_t *payload;
    size_t len;
    /* the buffer, reused from message to message */
    uint8_t *buf;
    size_t cap;
} zt_dist_msg;

/* If a message with `tag` from `source` (MPI_ANY_SOURCE) has arrived,
 * receives it into m and returns true. A malformed message (shorter than a
 * header) is dropped with a warning. */
bool zt_dist_poll(int source, int tag, zt_dist_msg *m);
void zt_dist_msg_free(zt_dist_msg *m);

/* ---- trajectories ---- */

/* Rank 0's ingest: every frame of a TRAJ payload deserialised into scratch
 * and added to rb. Counts the games and positions added; a damaged frame is
 * counted in *bad and skipped (a message cut short ends the loop). */
void zt_dist_ingest(const zt_game *g, zt_replay *rb, zt_replay_traj *scratch,
                    const uint8_t *payload, size_t len, int64_t *games, int64_t *positions,
                    int64_t *bad);

/* The run's config.ini text from rank 0 read as a run would: *cfg (the
 * settings' strings point into it), the game and the settings, and the
 * value of the `actors` key (0: per core). The caller frees *cfg and *game,
 * also after an error. */
struct zt_config;
struct zt_train_settings;
zt_status zt_dist_read_config(const char *text, struct zt_config **cfg, zt_game **game,
                              struct zt_train_settings *S, int64_t *actors);

/* Sleeps a little (the polling loops' idle wait). */
void zt_dist_nap(double seconds);

#endif
