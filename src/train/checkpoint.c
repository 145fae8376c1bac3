/* Checkpoints: RUN/ckpt/NNNNNNNN/ with the weights, the optimizer, the
 * replay buffer and state.bin, and RUN/ckpt/latest naming the newest.
 *
 * state.bin: the loop's counters and random streams.
 *
 * Layout, all integers little-endian:
 *   "ZTSTATE\0" | u32 version | u32 payload bytes
 *   payload: i64 step | i64 samples_trained | i64 phase_steps | u64 generation
 *            u64 published | f64 elapsed | u64 sample_rng[4]
 *            u16 game spec length | game spec bytes
 *   u64 checksum: zt_hash_bytes of everything before it. */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/fileio.h"
#include "core/hash.h"
#include "core/log.h"
#include "core/timer.h"
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

/* ---- checkpoint directories ---- */

static zt_status read_latest(const char *run, char *name, size_t cap)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/ckpt/latest", run);
    char *text;
    size_t len;
    ZT_TRY(zt_read_file(path, &text, &len));
    size_t n = strcspn(text, "\r\n");
    bool ok = n > 0 && n < cap && strspn(text, "0123456789") == n;
    if (ok) {
        memcpy(name, text, n);
        name[n] = '\0';
    }
    free(text);
    if (!ok) return zt_fail(ZT_ERR_CORRUPT, "%s: not a checkpoint name", path);
    return ZT_OK;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char path[PATH_MAX + 300];
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

/* Keeps the newest `keep` checkpoint directories (and always `latest`). */
static void prune_checkpoints(const char *run, int keep, const char *latest)
{
    if (keep <= 0) return;
    char dir[PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s/ckpt", run);
    DIR *d = opendir(dir);
    if (!d) return;
    char *names[4096];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 4096)
        if (strlen(e->d_name) == 8 && strspn(e->d_name, "0123456789") == 8)
            names[n++] = zt_xstrdup(e->d_name);
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, compare_names);
    for (int i = 0; i < n; i++) {
        if (i < n - keep && strcmp(names[i], latest) != 0) {
            char path[PATH_MAX + 32];
            snprintf(path, sizeof path, "%s/%s", dir, names[i]);
            remove_tree(path);
        }
        free(names[i]);
    }
}

zt_status zt_checkpoint_write(const char *run, const char *spec, const zt_net *net,
                              const zt_trainer *trainer, zt_replay *rb, const zt_train_state *state,
                              int keep)
{
    double t0 = zt_now_s();
    char name[24], dir[PATH_MAX + 32], path[PATH_MAX + 64];
    snprintf(name, sizeof name, "%08lld", (long long)state->step);
    snprintf(dir, sizeof dir, "%s/ckpt/%s", run, name);
    ZT_TRY(zt_mkdirs(dir));
    snprintf(path, sizeof path, "%s/weights.safetensors", dir);
    ZT_TRY(zt_net_save(net, spec, path));
    snprintf(path, sizeof path, "%s/optimizer.safetensors", dir);
    ZT_TRY(zt_trainer_save(trainer, path));
    snprintf(path, sizeof path, "%s/replay.bin", dir);
    ZT_TRY(zt_replay_save(rb, path));
    snprintf(path, sizeof path, "%s/state.bin", dir);
    ZT_TRY(zt_train_state_save(state, path));
    char line[32];
    int len = snprintf(line, sizeof line, "%s\n", name);
    snprintf(path, sizeof path, "%s/ckpt/latest", run);
    ZT_TRY(zt_write_file_atomic(path, line, (size_t)len));
    prune_checkpoints(run, keep, name);
    zt_info("checkpoint %s (%.2f s)", dir, zt_now_s() - t0);
    return ZT_OK;
}

zt_status zt_checkpoint_load(const char *run, const zt_game *g, const char *spec, zt_net *net,
                             zt_trainer *trainer, zt_replay **rb, zt_train_state *state)
{
    char name[64], dir[PATH_MAX + 80], path[PATH_MAX + 128];
    ZT_TRY(read_latest(run, name, sizeof name));
    snprintf(dir, sizeof dir, "%s/ckpt/%s", run, name);
    snprintf(path, sizeof path, "%s/state.bin", dir);
    ZT_TRY(zt_train_state_load(path, state));
    if (strcmp(state->game, spec) != 0)
        return zt_fail(ZT_ERR_INVALID, "%s: checkpoint of '%s', not '%s'", dir, state->game, spec);
    snprintf(path, sizeof path, "%s/weights.safetensors", dir);
    ZT_TRY(zt_net_load(net, spec, path));
    snprintf(path, sizeof path, "%s/optimizer.safetensors", dir);
    ZT_TRY(zt_trainer_load(trainer, path));
    snprintf(path, sizeof path, "%s/replay.bin", dir);
    zt_replay *loaded;
    ZT_TRY(zt_replay_load(g, path, &loaded));
    zt_replay_free(*rb);
    *rb = loaded;
    if (zt_trainer_steps(trainer) != state->step)
        return zt_fail(ZT_ERR_CORRUPT, "%s: optimizer at step %ld, state at step %lld", dir,
                       zt_trainer_steps(trainer), (long long)state->step);
    zt_info("resumed %s at step %lld", dir, (long long)state->step);
    return ZT_OK;
}
