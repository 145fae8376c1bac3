/* Checkpoints: RUN/ckpt/NNNNNNNN/ with the weights, the optimizer, the
 * replay buffer and state.bin, and RUN/ckpt/latest naming the newest. A
 * run with learner.average also writes live.safetensors, the weights the
 * learner trains, while weights.safetensors holds their average (the
 * model); a checkpoint is complete without it (a run without the average).
 *
 * Complete. A checkpoint directory is complete when it has an eight-digit
 * name NNNNNNNN, holds weights.safetensors, optimizer.safetensors,
 * replay.bin and state.bin, and state.bin loads (magic, version, checksum)
 * with its step equal to NNNNNNNN. Only complete checkpoints are loaded,
 * followed from latest and counted in checkpoint.keep. A checkpoint is
 * built in RUN/ckpt/NNNNNNNN.tmp/ (state.bin last) and renamed to its name
 * in one step, so a kill leaves either no checkpoint of that step or a
 * complete one, never a part. Rewriting a step that exists (a run that
 * stops at the step of its last checkpoint) moves the old directory to
 * NNNNNNNN.old, renames the new one in and only then removes the old one.
 * Then ckpt/latest is rewritten: that is the commit. A write that fails
 * undoes its renames, so the previous checkpoint stays the one a resume
 * continues from.
 *
 * Recovery (zt_checkpoint_recover, under the run's lock before a run uses
 * its directory) removes what a kill can leave: *.tmp staging directories,
 * temp files of the atomic writer, eight-digit directories missing one of
 * the four files (cut short by a build that wrote in place), and complete
 * checkpoints newer than the one latest names (renamed in, never
 * committed); it puts an NNNNNNNN.old back whose NNNNNNNN is missing, and
 * renames a directory with the four files whose state.bin does not load
 * to NNNNNNNN.damaged (kept for inspection, never loaded or counted).
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
#include <sys/stat.h>
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
        st = zt_fail(ZT_ERR_CORRUPT, "%s: state version %u, this build reads %u", path,
                     get_u32(p + 8), STATE_VERSION);
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
            } else if (memchr(q + 82, '\0', gl)) {
                st = zt_fail(ZT_ERR_CORRUPT, "%s: game spec holds a NUL byte", path);
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

static const char *const ckpt_files[] = {"weights.safetensors", "optimizer.safetensors",
                                         "replay.bin", "state.bin"};

static bool is_step_name(const char *name)
{
    return strlen(name) == 8 && strspn(name, "0123456789") == 8;
}

static bool exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

static bool has_all_files(const char *dir)
{
    char path[PATH_MAX + 64];
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, ckpt_files[i]);
        struct stat sb;
        if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) return false;
    }
    return true;
}

typedef enum completeness {
    CKPT_COMPLETE,
    CKPT_PARTIAL, /* a file is missing: the write was cut short */
    CKPT_DAMAGED, /* every file, but state.bin does not load or names another step */
    CKPT_IO,      /* state.bin could not be read: the message says why */
} completeness;

/* How complete the checkpoint directory `dir` of step `step` is. */
static completeness check_dir(const char *dir, int64_t step, char *why, size_t cap)
{
    if (cap) why[0] = '\0';
    if (!has_all_files(dir)) {
        snprintf(why, cap, "a file is missing");
        return CKPT_PARTIAL;
    }
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/state.bin", dir);
    zt_train_state st;
    zt_status s = zt_train_state_load(path, &st);
    if (s == ZT_ERR_IO) {
        snprintf(why, cap, "%s", zt_error_message());
        return CKPT_IO;
    }
    if (s != ZT_OK) {
        snprintf(why, cap, "%s", zt_error_message());
        return CKPT_DAMAGED;
    }
    if (st.step != step) {
        snprintf(why, cap, "its state.bin is of step %lld", (long long)st.step);
        return CKPT_DAMAGED;
    }
    return CKPT_COMPLETE;
}

bool zt_checkpoint_complete(const char *run, const char *name)
{
    if (!is_step_name(name)) return false;
    char dir[PATH_MAX + 32], why[256];
    snprintf(dir, sizeof dir, "%s/ckpt/%s", run, name);
    return check_dir(dir, atoll(name), why, sizeof why) == CKPT_COMPLETE;
}

/* What ckpt/latest names: ZT_OK with the name, ZT_ERR_NOT_FOUND when there
 * is no latest, ZT_ERR_CORRUPT when it names no checkpoint, ZT_ERR_IO. */
static zt_status read_latest(const char *run, char *name, size_t cap)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/ckpt/latest", run);
    char *text;
    size_t len;
    ZT_TRY(zt_read_file(path, &text, &len));
    size_t n = strcspn(text, "\r\n");
    bool ok = n == 8 && n < cap && strspn(text, "0123456789") == n;
    if (ok) {
        memcpy(name, text, n);
        name[n] = '\0';
    }
    free(text);
    if (!ok) return zt_fail(ZT_ERR_CORRUPT, "%s: not a checkpoint name", path);
    return ZT_OK;
}

/* The entries of RUN/ckpt/ (NULL-terminated, sorted, malloc'ed; NULL when
 * the directory cannot be read). */
static char **list_ckpt(const char *run)
{
    char dir[PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s/ckpt", run);
    return zt_dir_names(dir);
}

/* The newest complete checkpoint of `names` (sorted), below `below` when
 * not NULL: ZT_OK with its name, ZT_ERR_NOT_FOUND, or ZT_ERR_IO. */
static zt_status newest_complete(const char *run, char **names, const char *below, char *out,
                                 size_t cap)
{
    int n = 0;
    while (names && names[n]) n++;
    for (int i = n - 1; i >= 0; i--) {
        if (!is_step_name(names[i]) || (below && strcmp(names[i], below) >= 0)) continue;
        char dir[PATH_MAX + 32], why[512];
        snprintf(dir, sizeof dir, "%s/ckpt/%s", run, names[i]);
        completeness c = check_dir(dir, atoll(names[i]), why, sizeof why);
        if (c == CKPT_IO) return zt_fail(ZT_ERR_IO, "%s", why);
        if (c == CKPT_COMPLETE) {
            snprintf(out, cap, "%s", names[i]);
            return ZT_OK;
        }
    }
    return ZT_ERR_NOT_FOUND;
}

zt_status zt_checkpoint_find(const char *run, char *name, size_t cap)
{
    char named[64] = "", why[512] = "";
    zt_status st = read_latest(run, named, sizeof named);
    if (st == ZT_ERR_IO) return st;
    if (st == ZT_OK) {
        char dir[PATH_MAX + 32];
        snprintf(dir, sizeof dir, "%s/ckpt/%s", run, named);
        completeness c = check_dir(dir, atoll(named), why, sizeof why);
        if (c == CKPT_IO) return zt_fail(ZT_ERR_IO, "%s", why);
        if (c == CKPT_COMPLETE) {
            snprintf(name, cap, "%s", named);
            return ZT_OK;
        }
        if (!exists(dir)) {
            char aside[PATH_MAX + 48];
            snprintf(aside, sizeof aside, "%s.damaged", dir);
            snprintf(why, sizeof why, "%s",
                     exists(aside) ? "it is damaged, set aside as .damaged" : "it is missing");
        }
    } else if (st == ZT_ERR_CORRUPT) {
        snprintf(why, sizeof why, "%s", zt_error_message());
    }
    char **names = list_ckpt(run);
    char found[64];
    zt_status f = newest_complete(run, names, NULL, found, sizeof found);
    zt_dir_names_free(names);
    if (f == ZT_ERR_IO) return f;
    if (f == ZT_OK) {
        if (st == ZT_ERR_NOT_FOUND)
            zt_warn("%s: ckpt/latest is missing; using the newest complete checkpoint, %s", run,
                    found);
        else if (named[0])
            zt_warn("%s: ckpt/latest names %s, which is not a complete checkpoint (%s); using the "
                    "newest complete one, %s",
                    run, named, why, found);
        else
            zt_warn("%s: ckpt/latest is damaged (%s); using the newest complete checkpoint, %s",
                    run, why, found);
        snprintf(name, cap, "%s", found);
        return ZT_OK;
    }
    if (st == ZT_ERR_NOT_FOUND) return zt_fail(ZT_ERR_NOT_FOUND, "no checkpoint in '%s'", run);
    if (named[0])
        return zt_fail(ZT_ERR_CORRUPT,
                       "%s: ckpt/latest names %s, which is not a complete checkpoint (%s), and no "
                       "complete checkpoint remains",
                       run, named, why);
    return zt_fail(ZT_ERR_CORRUPT,
                   "%s: ckpt/latest is damaged (%s) and no complete checkpoint "
                   "remains",
                   run, why);
}

/* Whether `name` ends with `suffix`; *stem_len gets the length before it. */
static bool ends_with(const char *name, const char *suffix, size_t *stem_len)
{
    size_t n = strlen(name), k = strlen(suffix);
    if (n < k || strcmp(name + n - k, suffix) != 0) return false;
    *stem_len = n - k;
    return true;
}

/* Removes the atomic writer's temp files ("NAME.tmp.PID.N") in dir whose
 * NAME is one this module or the run writes. */
static void remove_temp_files(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char path[PATH_MAX + 300];
    static const char *const written[] = {"latest",
                                          "config.ini",
                                          "metrics.jsonl",
                                          "weights.safetensors",
                                          "optimizer.safetensors",
                                          "replay.bin",
                                          "state.bin",
                                          "live.safetensors"};
    while ((e = readdir(d))) {
        for (size_t i = 0; i < sizeof written / sizeof written[0]; i++) {
            size_t k = strlen(written[i]);
            if (strncmp(e->d_name, written[i], k) == 0 && strncmp(e->d_name + k, ".tmp.", 5) == 0) {
                snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
                zt_remove_tree(path);
            }
        }
    }
    closedir(d);
}

zt_status zt_checkpoint_recover(const char *run, bool *found, char *name, size_t cap)
{
    *found = false;
    char ckpt[PATH_MAX + 16], path[PATH_MAX + 64], other[PATH_MAX + 80], why[512];
    snprintf(ckpt, sizeof ckpt, "%s/ckpt", run);
    remove_temp_files(run);
    remove_temp_files(ckpt);
    char **names = list_ckpt(run);
    for (int i = 0; names && names[i]; i++) {
        const char *e = names[i];
        size_t stem;
        snprintf(path, sizeof path, "%s/%s", ckpt, e);
        if (ends_with(e, ".tmp", &stem) && stem == 8) {
            zt_remove_tree(path); /* a staging directory: never renamed in */
        } else if (ends_with(e, ".old", &stem) && stem == 8) {
            snprintf(other, sizeof other, "%s/%.8s", ckpt, e);
            if (!exists(other)) {
                zt_warn("%s: putting back %s (cut short while it was being replaced)", run, e);
                ZT_TRY(zt_rename(path, other));
                ZT_TRY(zt_sync_dir(ckpt));
            } else {
                zt_remove_tree(path);
            }
        } else if (is_step_name(e)) {
            remove_temp_files(path);
        }
    }
    zt_dir_names_free(names);
    /* now the eight-digit directories */
    names = list_ckpt(run);
    for (int i = 0; names && names[i]; i++) {
        if (!is_step_name(names[i])) continue;
        snprintf(path, sizeof path, "%s/%s", ckpt, names[i]);
        completeness c = check_dir(path, atoll(names[i]), why, sizeof why);
        if (c == CKPT_IO) {
            zt_dir_names_free(names);
            return zt_fail(ZT_ERR_IO, "%s", why);
        }
        if (c == CKPT_PARTIAL) {
            zt_warn("%s: removing the incomplete checkpoint %s (%s: its write was cut short)", run,
                    names[i], why);
            zt_remove_tree(path);
        } else if (c == CKPT_DAMAGED) {
            snprintf(other, sizeof other, "%s.damaged", path);
            zt_warn("%s: checkpoint %s is damaged (%s); moved to %s.damaged, never loaded", run,
                    names[i], why, names[i]);
            zt_remove_tree(other);
            zt_status s = zt_rename(path, other);
            if (s != ZT_OK) {
                zt_dir_names_free(names);
                return s;
            }
        }
    }
    zt_dir_names_free(names);
    char latest[64];
    zt_status st = zt_checkpoint_find(run, latest, sizeof latest);
    if (st == ZT_ERR_NOT_FOUND) return ZT_OK;
    ZT_TRY(st);
    /* complete checkpoints above the one latest names were renamed in but
     * never committed */
    names = list_ckpt(run);
    for (int i = 0; names && names[i]; i++) {
        if (!is_step_name(names[i]) || strcmp(names[i], latest) <= 0) continue;
        zt_warn("%s: removing checkpoint %s, newer than ckpt/latest (%s): written but never "
                "committed",
                run, names[i], latest);
        snprintf(path, sizeof path, "%s/%s", ckpt, names[i]);
        zt_remove_tree(path);
    }
    zt_dir_names_free(names);
    /* latest names it from now on (readers follow it) */
    char named[64];
    st = read_latest(run, named, sizeof named);
    if (st == ZT_ERR_IO) return st;
    if (st != ZT_OK || strcmp(named, latest) != 0) {
        char line[32];
        int len = snprintf(line, sizeof line, "%s\n", latest);
        snprintf(path, sizeof path, "%s/latest", ckpt);
        ZT_TRY(zt_write_file_atomic(path, line, (size_t)len));
    }
    snprintf(name, cap, "%s", latest);
    *found = true;
    return ZT_OK;
}

/* Keeps the newest `keep` complete checkpoints (and always `latest`).
 * Checkpoints are complete when they appear (see the top), and recovery
 * cleared what was not, so a directory with the four files counts. */
static void prune_checkpoints(const char *run, int keep, const char *latest)
{
    if (keep <= 0) return;
    char **names = list_ckpt(run);
    if (!names) return;
    int n = 0, complete = 0;
    while (names[n]) n++;
    char path[PATH_MAX + 32];
    for (int i = n - 1; i >= 0; i--) {
        if (!is_step_name(names[i])) continue;
        snprintf(path, sizeof path, "%s/ckpt/%s", run, names[i]);
        if (!has_all_files(path)) continue;
        if (++complete > keep && strcmp(names[i], latest) != 0) zt_remove_tree(path);
    }
    zt_dir_names_free(names);
}

zt_status zt_checkpoint_write(const char *run, const char *spec, const zt_net *net,
                              const zt_net *model, const zt_trainer *trainer, zt_replay *rb,
                              const zt_train_state *state, int keep)
{
    double t0 = zt_now_s();
    char name[24], ckpt[PATH_MAX + 16], stage[PATH_MAX + 64], dir[PATH_MAX + 48],
        old[PATH_MAX + 64], path[PATH_MAX + 96];
    snprintf(name, sizeof name, "%08lld", (long long)state->step);
    snprintf(ckpt, sizeof ckpt, "%s/ckpt", run);
    snprintf(dir, sizeof dir, "%s/%s", ckpt, name);
    snprintf(stage, sizeof stage, "%s.tmp", dir);
    snprintf(old, sizeof old, "%s.old", dir);
    zt_remove_tree(stage); /* a failed attempt's */
    zt_status st = zt_mkdirs(stage);
    if (st == ZT_OK) {
        snprintf(path, sizeof path, "%s/weights.safetensors", stage);
        st = zt_net_save(model ? model : net, spec, path);
    }
    if (st == ZT_OK && model) {
        snprintf(path, sizeof path, "%s/live.safetensors", stage);
        st = zt_net_save(net, spec, path);
    }
    if (st == ZT_OK) {
        snprintf(path, sizeof path, "%s/optimizer.safetensors", stage);
        st = zt_trainer_save(trainer, path);
    }
    if (st == ZT_OK) {
        snprintf(path, sizeof path, "%s/replay.bin", stage);
        st = zt_replay_save(rb, path);
    }
    if (st == ZT_OK) {
        snprintf(path, sizeof path, "%s/state.bin", stage);
        st = zt_train_state_save(state, path);
    }
    if (st != ZT_OK) {
        zt_remove_tree(stage);
        return st;
    }
    /* in place: the old one of this step aside, the new one in */
    bool replacing = exists(dir);
    if (replacing) {
        zt_remove_tree(old);
        st = zt_rename(dir, old);
    }
    bool renamed = false;
    if (st == ZT_OK) {
        st = zt_rename(stage, dir);
        renamed = st == ZT_OK;
    }
    if (st == ZT_OK) st = zt_sync_dir(ckpt);
    /* the commit */
    if (st == ZT_OK) {
        char named[64];
        zt_status r = read_latest(run, named, sizeof named);
        if (r == ZT_ERR_IO) {
            st = r;
        } else if (r != ZT_OK || strcmp(named, name) != 0) {
            char line[32];
            int len = snprintf(line, sizeof line, "%s\n", name);
            snprintf(path, sizeof path, "%s/latest", ckpt);
            st = zt_write_file_atomic(path, line, (size_t)len);
        }
    }
    if (st != ZT_OK) {
        /* undone, the message kept: the previous checkpoint is the run's */
        char why[ZT_MESSAGE_MAX];
        snprintf(why, sizeof why, "%s", zt_error_message());
        if (renamed) zt_rename(dir, stage);
        if (replacing && !exists(dir)) zt_rename(old, dir);
        zt_remove_tree(stage);
        return zt_fail(st, "checkpoint %s not written: %s", name, why);
    }
    if (replacing) zt_remove_tree(old);
    prune_checkpoints(run, keep, name);
    zt_info("checkpoint %s (%.2f s)", dir, zt_now_s() - t0);
    return ZT_OK;
}

zt_status zt_checkpoint_load(const char *run, const zt_game *g, const char *spec, zt_net *net,
                             zt_net *model, zt_trainer *trainer, zt_replay **rb,
                             zt_train_state *state)
{
    char name[64], dir[PATH_MAX + 80], path[PATH_MAX + 128];
    ZT_TRY(zt_checkpoint_find(run, name, sizeof name));
    snprintf(dir, sizeof dir, "%s/ckpt/%s", run, name);
    snprintf(path, sizeof path, "%s/state.bin", dir);
    ZT_TRY(zt_train_state_load(path, state));
    if (strcmp(state->game, spec) != 0)
        return zt_fail(ZT_ERR_INVALID, "%s: checkpoint of '%s', not '%s'", dir, state->game, spec);
    snprintf(path, sizeof path, "%s/weights.safetensors", dir);
    if (model) ZT_TRY(zt_net_load(model, spec, path));
    snprintf(path, sizeof path, "%s/live.safetensors", dir);
    if (!exists(path)) snprintf(path, sizeof path, "%s/weights.safetensors", dir);
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
