/* state.bin: the loop's counters and random streams.
 *
 * Layout, all integers little-endian:
 *   "ZTSTATE\0" | u32 version | u32 payload bytes
 *   payload: i64 step | i64 samples_trained | i64 phase_steps | u64 generation
 *            u64 published | f64 elapsed | u64 sample_rng[4]
 *            u16 game spec length | game spec bytes
 *   u64 checksum: zt_hash_bytes of everything before it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/hash.h"
#include "train/train.h"

#define STATE_MAGIC "ZTSTATE"
#define STATE_VERSION 1u
#define CHECKSUM_SEED 0x7a74737461746531ULL

typedef struct writer {
    uint8_t buf[512];
    size_t n;
} writer;

static void put_u64(writer *w, uint64_t v)
{
    for (int i = 0; i < 8; i++) w->buf[w->n++] = (uint8_t)(v >> (8 * i));
}

static void put_u32(writer *w, uint32_t v)
{
    for (int i = 0; i < 4; i++) w->buf[w->n++] = (uint8_t)(v >> (8 * i));
}

static void put_f64(writer *w, double d)
{
    uint64_t v;
    memcpy(&v, &d, sizeof v);
    put_u64(w, v);
}

static uint64_t get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static uint32_t get_u32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
    return v;
}

zt_status zt_train_state_save(const zt_train_state *s, const char *path)
{
    writer w = {.n = 0};
    memcpy(w.buf, STATE_MAGIC, 8);
    w.n = 8;
    put_u32(&w, STATE_VERSION);
    size_t len_at = w.n;
    put_u32(&w, 0);
    size_t start = w.n;
    put_u64(&w, (uint64_t)s->step);
    put_u64(&w, (uint64_t)s->samples_trained);
    put_u64(&w, (uint64_t)s->phase_steps);
    put_u64(&w, s->generation);
    put_u64(&w, s->published);
    put_f64(&w, s->elapsed);
    for (int i = 0; i < 4; i++) put_u64(&w, s->sample_rng.s[i]);
    size_t gl = strnlen(s->game, sizeof s->game - 1);
    w.buf[w.n++] = (uint8_t)gl;
    w.buf[w.n++] = (uint8_t)(gl >> 8);
    memcpy(w.buf + w.n, s->game, gl);
    w.n += gl;
    uint32_t payload = (uint32_t)(w.n - start);
    for (int i = 0; i < 4; i++) w.buf[len_at + i] = (uint8_t)(payload >> (8 * i));
    put_u64(&w, zt_hash_bytes(w.buf, w.n, CHECKSUM_SEED));
    return zt_write_file_atomic(path, w.buf, w.n);
}

zt_status zt_train_state_load(const char *path, zt_train_state *s)
{
    char *data;
    size_t len;
    ZT_TRY(zt_read_file(path, &data, &len));
    const uint8_t *p = (const uint8_t *)data;
    zt_status st = ZT_OK;
    memset(s, 0, sizeof *s);
    if (len < 16 || memcmp(p, STATE_MAGIC, 8) != 0) {
        st = zt_fail(ZT_ERR_CORRUPT, "%s: not a training state file", path);
    } else if (get_u32(p + 8) != STATE_VERSION) {
        st = zt_fail(ZT_ERR_CORRUPT, "%s: state version %u, this build reads %u", path, get_u32(p + 8),
                     STATE_VERSION);
    } else {
        size_t payload = get_u32(p + 12);
        const size_t fixed = 6 * 8 + 4 * 8 + 2;
        if (payload < fixed || 16 + payload + 8 != len) {
            st = zt_fail(ZT_ERR_CORRUPT, "%s: truncated (%zu bytes)", path, len);
        } else if (get_u64(p + 16 + payload) != zt_hash_bytes(p, 16 + payload, CHECKSUM_SEED)) {
            st = zt_fail(ZT_ERR_CORRUPT, "%s: checksum mismatch", path);
        } else {
            const uint8_t *q = p + 16;
            s->step = (int64_t)get_u64(q);
            s->samples_trained = (int64_t)get_u64(q + 8);
            s->phase_steps = (int64_t)get_u64(q + 16);
            s->generation = get_u64(q + 24);
            s->published = get_u64(q + 32);
            uint64_t e = get_u64(q + 40);
            memcpy(&s->elapsed, &e, sizeof e);
            for (int i = 0; i < 4; i++) s->sample_rng.s[i] = get_u64(q + 48 + 8 * i);
            size_t gl = (size_t)q[80] | (size_t)q[81] << 8;
            if (gl != payload - fixed || gl >= sizeof s->game) {
                st = zt_fail(ZT_ERR_CORRUPT, "%s: bad game spec length", path);
            } else {
                memcpy(s->game, q + 82, gl);
                s->game[gl] = '\0';
            }
        }
    }
    free(data);
    return st;
}
