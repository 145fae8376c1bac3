/* The weight source (DESIGN.md §3): numbered versions of the learner's
 * weights that actors poll between moves and never wait for. In one process
 * the learner publishes into a zt_weight_store; at scale an MPI broadcast
 * receiver implements the same zt_weight_source on the actor ranks.
 *
 * Weights travel as one flat array of floats: every tensor of the net in
 * zt_net_tensor_at order, back to back. Versions count from 1; 0 means
 * "none yet", the version an actor holds before its first poll.
 *
 * The caller owns what zt_weight_store_new returns (zt_weight_store_free);
 * a zt_weight_source made from a store borrows it. */
#ifndef ZT_SELFPLAY_WEIGHTS_H
#define ZT_SELFPLAY_WEIGHTS_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

typedef struct zt_weight_source {
    void *ctx;
    /* If a version other than have_version is ready, copies its n floats
     * into dst and sets *got_version to its number; else leaves dst alone
     * and sets *got_version = have_version. Never blocks on the publisher.
     * ZT_ERR_INVALID if n is not the size published. Thread-safe. */
    zt_status (*poll)(void *ctx, uint64_t have_version, float *dst, size_t n,
                      uint64_t *got_version);
} zt_weight_source;

/* The in-process store. Versions are immutable buffers with reader counts,
 * taken from a small pool: a publication writes into a buffer no reader
 * holds, then swaps it in as the newest; a poll takes the newest under the
 * mutex (a pointer and a count, no copy), copies it with the mutex released,
 * and gives it back. So the learner never waits for an actor's copy nor an
 * actor for the learner's, and publication allocates only while readers
 * hold every pooled buffer (the pool grows to at most readers + 2). */
typedef struct zt_weight_store zt_weight_store;

zt_weight_store *zt_weight_store_new(size_t n);
void zt_weight_store_free(zt_weight_store *s);
size_t zt_weight_store_size(const zt_weight_store *s);

/* Publication in two halves, so that the publisher writes its tensors
 * straight into the version's buffer: begin returns n floats that no
 * reader holds (their content is undefined), commit makes them the newest
 * version and returns its number. One publisher at a time. */
float *zt_weight_store_begin(zt_weight_store *s);
uint64_t zt_weight_store_commit(zt_weight_store *s);
/* begin, a copy of src, commit. */
uint64_t zt_weight_store_publish(zt_weight_store *s, const float *src);

/* The newest version (0 before the first publication). */
uint64_t zt_weight_store_version(const zt_weight_store *s);
/* Buffers the pool holds (for tests: publication reuses them). */
int zt_weight_store_buffers(zt_weight_store *s);

zt_weight_source zt_weight_store_source(zt_weight_store *s);

#endif
