/* Injected I/O faults (core/fault.h, as SQLite tests them): N walks over
 * every I/O call (open, read, write, fsync, close, rename, mkdir) of a
 * checkpoint write, at a new step and replacing the checkpoint of the same
 * step, and of a run's start, new and resumed; the Nth call fails with
 * ENOSPC or EIO in turn. Each time: a one-line error naming the injected
 * error, the previous checkpoint intact (the one a resume picks, every
 * file byte for byte), and a resume continuing from it; a new run's
 * directory still takes a run. The walk ends when N passes the last call
 * and the operation succeeds. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/fault.h"
#include "core/fileio.h"
#include "core/log.h"
#include "train/train.h"

#include "zt_test.h"
#include "zt_train_test.h"

static char tmp_root[256];

static const char *const tiny[] = {"mode=deterministic",
                                   "seed=13",
                                   "games_per_actor=4",
                                   "search.sims=4",
                                   "selfplay.root_cache_sims=8",
                                   "learner.batch=16",
                                   "learner.min_positions=32",
                                   "replay_ratio=4",
                                   "net.kind=mlp",
                                   "net.mlp_hidden=16",
                                   "net.value_hidden=8",
                                   "arena.games=0",
                                   "arena.positions=0",
                                   "checkpoint.minutes=0",
                                   "checkpoint.keep=3",
                                   NULL};

/* zt_train_open of a new run (resume false) or of a resume of `run`. */
static zt_status open_run(const char *run, bool resume, zt_config **cfg, zt_train **t)
{
    *t = NULL;
    ZT_TRY(zt_test_run_config(run, resume, NULL, tiny, NULL, cfg));
    zt_train_options opt = zt_test_options(run, resume, *cfg, 0, 0);
    return zt_train_open(&opt, t);
}

/* The four files of a checkpoint and ckpt/latest, read whole. */
typedef struct snapshot {
    char name[16];
    char *data[4];
    size_t len[4];
} snapshot;

static const char *const files[4] = {"weights.safetensors", "optimizer.safetensors", "replay.bin",
                                     "state.bin"};

static bool take(const char *run, snapshot *s)
{
    memset(s, 0, sizeof *s);
    if (zt_checkpoint_find(run, s->name, sizeof s->name) != ZT_OK) return false;
    for (int i = 0; i < 4; i++) {
        char path[600];
        snprintf(path, sizeof path, "%s/ckpt/%s/%s", run, s->name, files[i]);
        if (zt_read_file(path, &s->data[i], &s->len[i]) != ZT_OK) return false;
    }
    return true;
}

static void drop(snapshot *s)
{
    for (int i = 0; i < 4; i++) free(s->data[i]);
    memset(s, 0, sizeof *s);
}

/* The checkpoint a resume picks is `was`, byte for byte. */
static bool intact(const char *run, const snapshot *was, char *why, size_t cap)
{
    snapshot now;
    bool ok = take(run, &now);
    if (!ok) snprintf(why, cap, "no checkpoint to resume: %s", zt_error_message());
    if (ok && strcmp(now.name, was->name) != 0) {
        snprintf(why, cap, "a resume picks %s, not %s", now.name, was->name);
        ok = false;
    }
    for (int i = 0; ok && i < 4; i++)
        if (now.len[i] != was->len[i] || memcmp(now.data[i], was->data[i], now.len[i]) != 0) {
            snprintf(why, cap, "%s/%s changed", was->name, files[i]);
            ok = false;
        }
    drop(&now);
    return ok;
}

static int error_of(uint64_t n)
{
    return n % 2 ? ENOSPC : EIO;
}

/* The failure of injected call n: one line naming the error. */
static void expect_injected(zt_status st, uint64_t n, const char *walk)
{
    const char *msg = zt_error_message();
    CHECK(st != ZT_OK && strstr(msg, strerror(error_of(n))) && !strchr(msg, '\n'),
          "%s, I/O call %llu: status %d, '%s'", walk, (unsigned long long)n, (int)st, msg);
}

/* A resume of `run` opens at the step of `was`. */
static void resumes_from(const char *run, const snapshot *was, uint64_t n, const char *walk)
{
    zt_config *cfg;
    zt_train *t;
    zt_status st = open_run(run, true, &cfg, &t);
    CHECK(st == ZT_OK, "%s, I/O call %llu: the resume after it: %s", walk, (unsigned long long)n,
          zt_error_message());
    if (st == ZT_OK)
        CHECK(zt_train_get_progress(t).step == atoll(was->name),
              "%s, I/O call %llu: resumed at step %lld, not %s", walk, (unsigned long long)n,
              (long long)zt_train_get_progress(t).step, was->name);
    zt_train_free(t);
    zt_config_free(cfg);
}

/* Walks N over the I/O of a checkpoint write: a resume advanced by
 * `steps` (0: the same step, replacing its checkpoint), then closed with
 * the Nth call failing. Returns the number of I/O calls. */
static int walk_checkpoint(const char *run, int steps, const char *walk)
{
    snapshot was;
    if (!take(run, &was)) {
        CHECK(0, "%s: no checkpoint to start from: %s", walk, zt_error_message());
        return 0;
    }
    int calls = -1;
    for (uint64_t n = 1; n < 1000 && calls < 0 && zt_test_failures < 10; n++) {
        zt_config *cfg;
        zt_train *t;
        zt_status st = open_run(run, true, &cfg, &t);
        CHECK(st == ZT_OK, "%s: open: %s", walk, zt_error_message());
        if (st != ZT_OK) break;
        bool done;
        if (steps > 0) st = zt_train_advance(t, steps, 0, &done);
        CHECK(st == ZT_OK, "%s: advance: %s", walk, zt_error_message());
        zt_fault_set(ZT_FAULT_IO, n, false, error_of(n));
        st = zt_train_close(t);
        uint64_t seen = zt_fault_calls(ZT_FAULT_IO);
        zt_fault_reset();
        zt_config_free(cfg);
        if (seen < n) { /* past the last call: the checkpoint is written */
            CHECK(st == ZT_OK, "%s: no fault, yet: %s", walk, zt_error_message());
            calls = (int)n - 1;
            break;
        }
        expect_injected(st, n, walk);
        char why[512];
        CHECK(intact(run, &was, why, sizeof why), "%s, I/O call %llu: %s", walk,
              (unsigned long long)n, why);
        resumes_from(run, &was, n, walk);
    }
    drop(&was);
    printf("%s: %d I/O calls, each failed in turn\n", walk, calls);
    CHECK(calls > 20, "%s: only %d I/O calls", walk, calls);
    return calls;
}

/* Walks N over the I/O of a new run's start in `dir`: after each failure
 * the directory still takes a run. */
static int walk_new_start(const char *dir)
{
    int calls = -1;
    for (uint64_t n = 1; n < 1000 && calls < 0 && zt_test_failures < 10; n++) {
        zt_config *cfg;
        zt_train *t;
        zt_fault_set(ZT_FAULT_IO, n, false, error_of(n));
        zt_status st = open_run(dir, false, &cfg, &t);
        uint64_t seen = zt_fault_calls(ZT_FAULT_IO);
        zt_fault_reset();
        zt_config_free(cfg);
        if (seen < n) {
            CHECK(st == ZT_OK, "new run: no fault, yet: %s", zt_error_message());
            zt_train_free(t);
            calls = (int)n - 1;
            break;
        }
        expect_injected(st, n, "new run's start");
        /* the directory is no run yet: a start without faults goes through */
        st = open_run(dir, false, &cfg, &t);
        CHECK(st == ZT_OK, "new run's start, I/O call %llu: a second start: %s",
              (unsigned long long)n, zt_error_message());
        zt_train_free(t);
        zt_config_free(cfg);
    }
    printf("new run's start: %d I/O calls, each failed in turn\n", calls);
    CHECK(calls > 10, "a new run's start: only %d I/O calls", calls);
    return calls;
}

/* Walks N over the I/O of a resumed run's start. */
static int walk_resume_start(const char *run)
{
    snapshot was;
    if (!take(run, &was)) {
        CHECK(0, "no checkpoint to resume: %s", zt_error_message());
        return 0;
    }
    int calls = -1;
    for (uint64_t n = 1; n < 1000 && calls < 0 && zt_test_failures < 10; n++) {
        zt_config *cfg;
        zt_train *t;
        zt_fault_set(ZT_FAULT_IO, n, false, error_of(n));
        zt_status st = open_run(run, true, &cfg, &t);
        uint64_t seen = zt_fault_calls(ZT_FAULT_IO);
        zt_fault_reset();
        zt_config_free(cfg);
        zt_train_free(t);
        if (seen < n) {
            CHECK(st == ZT_OK, "resume: no fault, yet: %s", zt_error_message());
            calls = (int)n - 1;
            break;
        }
        expect_injected(st, n, "resumed run's start");
        char why[512];
        CHECK(intact(run, &was, why, sizeof why), "resumed run's start, I/O call %llu: %s",
              (unsigned long long)n, why);
        resumes_from(run, &was, n, "resumed run's start");
    }
    drop(&was);
    printf("resumed run's start: %d I/O calls, each failed in turn\n", calls);
    CHECK(calls > 10, "a resumed run's start: only %d I/O calls", calls);
    return calls;
}

int main(void)
{
    zt_log_set_level(ZT_LOG_QUIET);
    if (!zt_test_tmp_root(tmp_root, sizeof tmp_root, "test_faults")) return 1;
    char run[300], fresh[300];
    snprintf(run, sizeof run, "%s/run", tmp_root);
    snprintf(fresh, sizeof fresh, "%s/fresh", tmp_root);

    int total = walk_new_start(fresh);
    /* a run with a checkpoint to keep */
    zt_config *cfg;
    zt_train *t;
    zt_status st = open_run(run, false, &cfg, &t);
    CHECK(st == ZT_OK, "%s", zt_error_message());
    bool done;
    if (st == ZT_OK) st = zt_train_advance(t, 10, 0, &done);
    if (st == ZT_OK) st = zt_train_close(t);
    zt_config_free(cfg);
    CHECK(st == ZT_OK, "the first checkpoint: %s", zt_error_message());
    if (st == ZT_OK) {
        total += walk_resume_start(run);
        total += walk_checkpoint(run, 3, "checkpoint write at a new step");
        total += walk_checkpoint(run, 0, "checkpoint write replacing the same step");
    }
    printf("fault injection: %d I/O calls walked in all\n", total);
    zt_test_remove_root(tmp_root);
    return zt_test_finish("test_faults");
}
