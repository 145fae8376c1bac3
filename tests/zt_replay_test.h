/* Replay checkpoints of older versions for the tests that load them
 * (test_surprise, test_repeats), made from a current one. Header-only,
 * everything static. */
#ifndef ZT_REPLAY_TEST_H
#define ZT_REPLAY_TEST_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "game/game.h"
#include "replay/record.h"

/* Where a checkpoint of game g holds its surprise_weight, the first of the
 * settings later versions added (replay.c's layout: magic, version, total
 * length, title, sizes, capacity, max_games, ring bytes, window, augment). */
static inline size_t zt_test_replay_settings_at(const zt_game *g)
{
    return 8 + 4 + 8 + 2 + strlen(g->title) + 4 + 4 + 8 + 8 + 8 + 3 * 8 + 1;
}

/* The checkpoint blob (len bytes) as version `version` wrote it: the `cut`
 * bytes at `at` left out, the header's version and length and the checksum
 * made right. The caller frees it; *out_len receives its length. */
static inline uint8_t *zt_test_replay_older(const uint8_t *blob, size_t len, size_t at, size_t cut,
                                            uint8_t version, size_t *out_len)
{
    size_t n = len - cut;
    uint8_t *old = malloc(n);
    memcpy(old, blob, at);
    memcpy(old + at, blob + at + cut, len - at - cut);
    old[8] = version;
    for (int i = 0; i < 8; i++) old[12 + i] = (uint8_t)((uint64_t)n >> (8 * i));
    uint64_t h = zt_hash_bytes(old, n - 8, ZT_REPLAY_HASH_SEED);
    for (int i = 0; i < 8; i++) old[n - 8 + (size_t)i] = (uint8_t)(h >> (8 * i));
    *out_len = n;
    return old;
}

#endif
