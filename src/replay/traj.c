/* A trajectory's byte form (layout in replay.h): what an MPI sink sends to
 * the learner's rank and what files of games hold. The records travel as
 * the buffer stores them, so a game costs the same bytes on the wire as in
 * replay. The reader checks every length against the input and every record
 * against the game before it writes anything: its input comes from other
 * processes and files, and it is fuzzed. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/hash.h"
#include "replay/record.h"
#include "replay/replay.h"

#define TRAJ_MAGIC "ZTTJ"
#define TRAJ_VERSION 1u
#define TRAJ_HEAD (4 + 1 + 8 + 4 + 4 + 4)
#define TRAJ_TAIL 8

/* The game and every setting that changes its records: a trajectory of Sim
 * on K6 must not be read as one on K7. */
static uint64_t game_fingerprint(const zt_game *g)
{
    char spec[256];
    zt_game_spec(g, spec, sizeof spec);
    uint64_t h = zt_hash_bytes(spec, strlen(spec), ZT_REPLAY_TRAJ_HASH_SEED);
    return zt_hash_mix(h ^ ((uint64_t)g->compact_size << 32 | (uint64_t)g->num_actions));
}

static void put_le(uint8_t *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

size_t zt_replay_traj_serialized_size(const zt_replay_traj *t)
{
    return TRAJ_HEAD + t->used + TRAJ_TAIL;
}

zt_status zt_replay_traj_serialize(const zt_replay_traj *t, float return0, uint8_t *buf, size_t cap,
                                   size_t *len)
{
    size_t need = zt_replay_traj_serialized_size(t);
    *len = need;
    if (cap < need)
        return zt_fail(ZT_ERR_INVALID, "trajectory of %d positions needs %zu bytes, buffer has %zu",
                       t->length, need, cap);
    ZT_ASSERT(t->used <= UINT32_MAX);
    uint8_t *p = buf;
    memcpy(p, TRAJ_MAGIC, 4);
    p[4] = TRAJ_VERSION;
    put_le(p + 5, game_fingerprint(t->game), 8);
    uint32_t r;
    memcpy(&r, &return0, sizeof r);
    put_le(p + 13, r, 4);
    put_le(p + 17, (uint64_t)t->length, 4);
    put_le(p + 21, t->used, 4);
    memcpy(p + TRAJ_HEAD, t->bytes, t->used);
    size_t body = TRAJ_HEAD + t->used;
    put_le(p + body, zt_hash_bytes(p, body, ZT_REPLAY_TRAJ_HASH_SEED), 8);
    return ZT_OK;
}

zt_status zt_replay_traj_deserialize(const zt_game *g, const uint8_t *data, size_t len,
                                     zt_replay_traj *t, float *return0)
{
    ZT_ASSERT(t->game == g || strcmp(t->game->title, g->title) == 0);
    if (len < 5) return zt_fail(ZT_ERR_CORRUPT, "trajectory truncated: %zu bytes", len);
    if (memcmp(data, TRAJ_MAGIC, 4) != 0)
        return zt_fail(ZT_ERR_CORRUPT, "not a trajectory (bad magic)");
    if (data[4] != TRAJ_VERSION)
        return zt_fail(ZT_ERR_CORRUPT, "trajectory format version %u (this build reads %u)",
                       data[4], TRAJ_VERSION);
    if (len < TRAJ_HEAD + TRAJ_TAIL)
        return zt_fail(ZT_ERR_CORRUPT, "trajectory truncated in its header: %zu bytes", len);
    uint64_t positions = get_le(data + 17, 4), bytes = get_le(data + 21, 4);
    uint64_t total = TRAJ_HEAD + bytes + TRAJ_TAIL;
    if (total > len)
        return zt_fail(ZT_ERR_CORRUPT, "trajectory truncated: %zu of %llu bytes", len,
                       (unsigned long long)total);
    if (total < len)
        return zt_fail(ZT_ERR_CORRUPT, "trajectory has %llu trailing bytes",
                       (unsigned long long)(len - total));
    size_t body = TRAJ_HEAD + (size_t)bytes;
    if (get_le(data + body, 8) != zt_hash_bytes(data, body, ZT_REPLAY_TRAJ_HASH_SEED))
        return zt_fail(ZT_ERR_CORRUPT, "trajectory checksum mismatch (corrupt data)");
    if (get_le(data + 5, 8) != game_fingerprint(g))
        return zt_fail(ZT_ERR_INVALID, "trajectory is of another game, not '%s'", g->title);
    uint32_t r = (uint32_t)get_le(data + 13, 4);
    float r0;
    memcpy(&r0, &r, sizeof r0);
    if (!isfinite(r0)) return zt_fail(ZT_ERR_CORRUPT, "trajectory with a non-finite return");
    if (positions > (uint64_t)t->max_length || bytes > t->capacity)
        return zt_fail(ZT_ERR_CORRUPT,
                       "trajectory of %llu positions in %llu bytes exceeds a game's %d",
                       (unsigned long long)positions, (unsigned long long)bytes, t->max_length);
    /* Every record whole and decodable, and exactly `positions` of them. */
    const uint8_t *records = data + TRAJ_HEAD, *p = records;
    size_t left = (size_t)bytes;
    int count = 0, full = 0;
    int64_t surprise = 0;
    while (left > 0) {
        if ((uint64_t)count == positions)
            return zt_fail(ZT_ERR_CORRUPT, "trajectory has %zu bytes past its %llu records", left,
                           (unsigned long long)positions);
        size_t n = zt_record_length(&t->layout, p, left);
        if (n == 0) return zt_fail(ZT_ERR_CORRUPT, "trajectory record %d is malformed", count);
        uint8_t state[ZT_MAX_STATE_BYTES];
        zt_record_view view;
        if (zt_record_decode(&t->layout, g, p, n, state, &view) != ZT_OK)
            return zt_fail(ZT_ERR_CORRUPT, "trajectory record %d: %s", count, zt_error_message());
        full += view.flags & ZT_REPLAY_FULL_SEARCH;
        surprise += view.surprise;
        count++;
        p += n;
        left -= n;
    }
    if ((uint64_t)count != positions)
        return zt_fail(ZT_ERR_CORRUPT, "trajectory holds %d records, its header says %llu", count,
                       (unsigned long long)positions);
    memcpy(t->bytes, records, (size_t)bytes);
    t->used = (size_t)bytes;
    t->length = count;
    t->full_searches = full;
    t->surprise_sum = surprise;
    *return0 = r0;
    return ZT_OK;
}
