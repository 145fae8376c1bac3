/* NN cache: a bounded table from position hash to the model's (policy
 * logits, value), shared by the trees of one actor so that transpositions
 * within and across games are evaluated once. Direct-mapped, newest entry
 * wins a slot. Sized at creation, no allocation afterwards; the caller owns
 * it and frees it with zt_nncache_free. Not thread-safe (one per actor). */
#ifndef ZT_SEARCH_NNCACHE_H
#define ZT_SEARCH_NNCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct zt_nncache zt_nncache;

/* At least `entries` slots (rounded up to a power of two) of `num_actions`
 * logits each; NULL if the memory cannot be had. */
zt_nncache *zt_nncache_new(size_t entries, int num_actions);
void zt_nncache_free(zt_nncache *c);

/* On a hit copies the entry out and returns true. */
bool zt_nncache_lookup(zt_nncache *c, uint64_t key, float *logits, float *value);
void zt_nncache_insert(zt_nncache *c, uint64_t key, const float *logits, float value);
/* Forgets everything (new network weights). */
void zt_nncache_clear(zt_nncache *c);

typedef struct zt_nncache_stats {
    uint64_t lookups, hits, inserts;
    size_t entries, bytes;
} zt_nncache_stats;

zt_nncache_stats zt_nncache_get_stats(const zt_nncache *c);

#endif
