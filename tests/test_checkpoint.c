/* Tests of a run directory's checkpoints and its lock (train/checkpoint.c,
 * train/train.c): recovery at start removes what a kill leaves (staging
 * directories, temp files, a cut-short checkpoint above latest, which then
 * never pushes a good one out of checkpoint.keep), puts back a checkpoint
 * cut short while it was replaced, drops checkpoints never committed and
 * sets damaged ones aside; a damaged or missing-target latest falls back to
 * the newest complete checkpoint; metrics.jsonl never goes back in steps
 * after a resume; a locked run refuses a second trainer, naming the
 * holder's pid, while a reader still opens its model; the thread budget of
 * the oversubscription guard. Short deterministic tic-tac-toe runs. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/config.h"
#include "core/fileio.h"
#include "core/log.h"
#include "core/thread.h"
#include "game/game.h"
#include "train/run.h"
#include "train/train.h"

#include "zt_test.h"
#include "zt_train_test.h"

static char tmp_root[256];

static const char *const tiny[] = {"mode=deterministic",
                                   "seed=11",
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
                                   "log.seconds=0.01",
                                   NULL};

/* A fresh run (resume false) or a resume of `run` to learner step `steps`,
 * with the tiny settings and then `extra`. */
static zt_status train_to(const char *run, bool resume, int64_t steps, const char *const *extra)
{
    return zt_test_train(run, resume, NULL, tiny, extra, 0, steps);
}

static bool exists(const char *run, const char *rel)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", run, rel);
    struct stat sb;
    return stat(path, &sb) == 0;
}

static void write_text(const char *run, const char *rel, const char *text)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", run, rel);
    CHECK(zt_write_file_atomic(path, text, strlen(text)) == ZT_OK, "%s", zt_error_message());
}

static void copy_file(const char *from, const char *to)
{
    char *data;
    size_t len;
    CHECK(zt_read_file(from, &data, &len) == ZT_OK, "%s", zt_error_message());
    if (zt_test_failures) return;
    CHECK(zt_write_file_atomic(to, data, len) == ZT_OK, "%s", zt_error_message());
    free(data);
}

static void latest_is(const char *run, const char *want)
{
    char path[600], *text = NULL;
    size_t len;
    snprintf(path, sizeof path, "%s/ckpt/latest", run);
    CHECK(zt_read_file(path, &text, &len) == ZT_OK && strncmp(text, want, 8) == 0,
          "latest is '%.8s', wanted %s", text ? text : "(none)", want);
    free(text);
}

/* The eight-digit entries of RUN/ckpt, as "a b c". */
static void list_checkpoints(const char *run, char *out, size_t cap)
{
    char dir[600];
    snprintf(dir, sizeof dir, "%s/ckpt", run);
    char names[64][256];
    int n = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) && n < 64)
        if (e->d_name[0] != '.' && strcmp(e->d_name, "latest") != 0)
            snprintf(names[n++], sizeof names[0], "%s", e->d_name);
    if (d) closedir(d);
    qsort(names, (size_t)n, sizeof names[0], (int (*)(const void *, const void *))strcmp);
    out[0] = '\0';
    for (int i = 0; i < n; i++)
        snprintf(out + strlen(out), cap - strlen(out), "%s%s", i ? " " : "", names[i]);
}

static void expect_checkpoints(const char *run, const char *want, const char *when)
{
    char got[1024];
    list_checkpoints(run, got, sizeof got);
    CHECK(strcmp(got, want) == 0, "%s: ckpt/ holds '%s', wanted '%s'", when, got, want);
}

/* ---- recovery ---- */

static void test_recovery(void)
{
    char run[300];
    snprintf(run, sizeof run, "%s/recover", tmp_root);
    static const char *const keep2[] = {"checkpoint.keep=2", NULL};
    CHECK(train_to(run, false, 10, keep2) == ZT_OK, "%s", zt_error_message());
    CHECK(train_to(run, true, 20, NULL) == ZT_OK, "%s", zt_error_message());
    expect_checkpoints(run, "00000010 00000020", "two runs");

    /* What a kill leaves: a checkpoint cut short above latest (as a build
     * that wrote in place left it), a staging directory, temp files. */
    char path[600], dst[600];
    CHECK(zt_mkdirs(strcat(strcpy(path, run), "/ckpt/00000025")) == ZT_OK, "");
    snprintf(path, sizeof path, "%s/ckpt/00000020/weights.safetensors", run);
    snprintf(dst, sizeof dst, "%s/ckpt/00000025/weights.safetensors", run);
    copy_file(path, dst);
    write_text(run, "ckpt/00000025/state.bin.tmp.123.4", "half");
    CHECK(zt_mkdirs(strcat(strcpy(path, run), "/ckpt/00000030.tmp")) == ZT_OK, "");
    write_text(run, "ckpt/00000030.tmp/replay.bin", "partial");
    write_text(run, "ckpt/latest.tmp.99.0", "00000030\n");
    write_text(run, "config.ini.tmp.5.5", "[x");
    CHECK(zt_checkpoint_find(run, path, sizeof path) == ZT_OK && strcmp(path, "00000020") == 0,
          "find picks '%s'", path);

    /* resumed with keep 2: the cut-short 00000025 is removed, not counted,
     * so 00000020 survives beside the new 00000030 */
    CHECK(train_to(run, true, 30, NULL) == ZT_OK, "%s", zt_error_message());
    expect_checkpoints(run, "00000020 00000030", "after the resume");
    CHECK(!exists(run, "ckpt/latest.tmp.99.0") && !exists(run, "config.ini.tmp.5.5"),
          "temp files survived the recovery");
    latest_is(run, "00000030");

    /* a damaged latest: the newest complete checkpoint, with a warning */
    write_text(run, "ckpt/latest", "garbage\n");
    char name[64] = "";
    CHECK(zt_checkpoint_find(run, name, sizeof name) == ZT_OK && strcmp(name, "00000030") == 0,
          "damaged latest: %s", name);
    write_text(run, "ckpt/latest", "00000099\n");
    CHECK(zt_checkpoint_find(run, name, sizeof name) == ZT_OK && strcmp(name, "00000030") == 0,
          "latest naming nothing: %s", name);
    snprintf(path, sizeof path, "%s/ckpt/latest", run);
    unlink(path);
    CHECK(zt_checkpoint_find(run, name, sizeof name) == ZT_OK && strcmp(name, "00000030") == 0,
          "latest missing: %s", name);
    /* readers fall back the same way */
    char weights[700];
    CHECK(zt_run_resolve_weights(run, weights, sizeof weights) == ZT_OK &&
              strstr(weights, "00000030/weights.safetensors"),
          "a reader of a run without latest: %s", zt_error_message());
    /* and a resume goes on from it, rewriting latest */
    CHECK(train_to(run, true, 40, NULL) == ZT_OK, "resume without latest: %s", zt_error_message());
    latest_is(run, "00000040");
    expect_checkpoints(run, "00000030 00000040", "after the resume without latest");

    /* cut short while 00000040 was being replaced: put back */
    char from[600], to[600];
    snprintf(from, sizeof from, "%s/ckpt/00000040", run);
    snprintf(to, sizeof to, "%s/ckpt/00000040.old", run);
    CHECK(rename(from, to) == 0, "");
    bool found = false;
    CHECK(zt_checkpoint_recover(run, &found, name, sizeof name) == ZT_OK && found &&
              strcmp(name, "00000040") == 0,
          "recover after a replacement cut short: %s", zt_error_message());
    expect_checkpoints(run, "00000030 00000040", "the replaced checkpoint put back");

    /* renamed in but never committed (latest still names 00000030) */
    write_text(run, "ckpt/latest", "00000030\n");
    CHECK(zt_checkpoint_recover(run, &found, name, sizeof name) == ZT_OK && found &&
              strcmp(name, "00000030") == 0,
          "recover with an uncommitted checkpoint: %s", zt_error_message());
    expect_checkpoints(run, "00000030", "the uncommitted checkpoint removed");

    /* damaged: set aside, never loaded */
    CHECK(train_to(run, true, 50, NULL) == ZT_OK, "%s", zt_error_message());
    snprintf(path, sizeof path, "%s/ckpt/00000050/state.bin", run);
    write_text(run, "ckpt/00000050/state.bin", "ZTSTATE but not a state");
    CHECK(zt_checkpoint_recover(run, &found, name, sizeof name) == ZT_OK && found &&
              strcmp(name, "00000030") == 0,
          "recover with a damaged latest: %s", zt_error_message());
    expect_checkpoints(run, "00000030 00000050.damaged", "the damaged checkpoint set aside");
    latest_is(run, "00000030");
    CHECK(train_to(run, true, 60, NULL) == ZT_OK, "%s", zt_error_message());
    expect_checkpoints(run, "00000030 00000050.damaged 00000060", "keep counts complete ones");
}

/* ---- metrics after a resume ---- */

static void test_metrics_on_resume(void)
{
    char run[300];
    snprintf(run, sizeof run, "%s/metrics", tmp_root);
    CHECK(train_to(run, false, 20, NULL) == ZT_OK, "%s", zt_error_message());
    /* a killed run's records past its checkpoint, and a line cut short */
    char path[600];
    snprintf(path, sizeof path, "%s/metrics.jsonl", run);
    FILE *f = fopen(path, "a");
    CHECK(f != NULL, "");
    if (!f) return;
    fputs("{\"t\":9999.000,\"step\":35,\"games\":1,\"positions\":1,\"kind\":\"selfplay\"}\n", f);
    fputs("{\"t\":10000.000,\"step\":36,\"games\":1,\"positions\":1,\"kind\":\"train\"}\n", f);
    fputs("{\"t\":10001.0", f);
    fclose(f);
    CHECK(train_to(run, true, 40, NULL) == ZT_OK, "%s", zt_error_message());
    char *text;
    size_t len;
    CHECK(zt_read_file(path, &text, &len) == ZT_OK, "");
    if (zt_test_failures) return;
    /* the injected records, known by their times (the resumed run writes
     * records of its own at any step, 35 and 36 among them when it is slow,
     * as under the sanitizers) */
    CHECK(!strstr(text, "\"t\":9999.000,") && !strstr(text, "\"t\":10000.000,") &&
              !strstr(text, "10001.0"),
          "the records past the checkpoint were kept");
    long last_step = -1, records = 0, back = 0;
    double last_t = -1;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        const char *t = strstr(line, "\"t\":"), *s = strstr(line, "\"step\":");
        CHECK(t && s && line[strlen(line) - 1] == '}', "a broken record: %s", line);
        if (!t || !s) continue;
        long step = atol(s + 7);
        double tt = atof(t + 4);
        if (step < last_step || tt < last_t - 0.0015) back++;
        last_step = step;
        last_t = tt;
        records++;
    }
    free(text);
    printf("metrics on resume: %ld records, %ld going back\n", records, back);
    CHECK(back == 0 && last_step == 40, "%ld records went back; the last is of step %ld", back,
          last_step);
}

/* ---- the lock ---- */

static void test_lock(void)
{
    char run[300];
    snprintf(run, sizeof run, "%s/locked", tmp_root);
    CHECK(train_to(run, false, 10, NULL) == ZT_OK, "%s", zt_error_message());
    char path[600];
    snprintf(path, sizeof path, "%s/config.ini", run);
    zt_config *cfg = zt_config_new();
    CHECK(zt_config_load_file(cfg, path) == ZT_OK, "");
    zt_train_options opt = {.config = cfg, .run_dir = run, .resume = true, .quiet = true};
    zt_train *t = NULL;
    CHECK(zt_train_open(&opt, &t) == ZT_OK, "%s", zt_error_message());
    char want[400];
    snprintf(want, sizeof want, "%s is in use by process %ld", run, (long)getpid());
    /* a second trainer, resuming or starting anew, is refused at once */
    zt_status st = train_to(run, true, 20, NULL);
    CHECK(st == ZT_ERR_INVALID && strcmp(zt_error_message(), want) == 0, "resume: '%s'",
          zt_error_message());
    st = train_to(run, false, 20, NULL);
    CHECK(st == ZT_ERR_INVALID && strcmp(zt_error_message(), want) == 0, "new run: '%s'",
          zt_error_message());
    /* a reader is not */
    zt_game *g = NULL;
    zt_net *net = NULL;
    CHECK(zt_run_open_model(run, "ref", ZT_PRECISION_FP32, 1, &g, &net) == ZT_OK,
          "a model of a locked run: %s", zt_error_message());
    zt_net_free(net);
    zt_game_free(g);
    if (t) CHECK(zt_train_close(t) == ZT_OK, "%s", zt_error_message());
    zt_config_free(cfg);
    CHECK(train_to(run, true, 20, NULL) == ZT_OK, "after the holder closed: %s",
          zt_error_message());
}

/* ---- the thread budget ---- */

static void test_thread_budget(void)
{
    zt_train_settings S;
    memset(&S, 0, sizeof S);
    S.mode = ZT_TRAIN_CONCURRENT;
    S.actors = 3;
    S.learner_threads = 1;
    S.evaluator = ZT_EVALUATOR_PRIVATE;
    zt_train_threads b = zt_train_thread_budget(&S, 4);
    CHECK(b.busy == 4 && !b.oversubscribed && b.evaluator == 0, "3 actors + 1: busy %d", b.busy);
    S.learner_threads = 2;
    b = zt_train_thread_budget(&S, 4);
    CHECK(b.busy == 5 && b.oversubscribed && b.cores == 4, "3 actors + 2: busy %d", b.busy);
    S.evaluator = ZT_EVALUATOR_SHARED;
    S.learner_threads = 1;
    b = zt_train_thread_budget(&S, 8);
    /* two actors work while the third waits on the service's 3 threads */
    CHECK(b.busy == 6 && b.evaluator == 3 && !b.oversubscribed, "shared: busy %d", b.busy);
    S.actors = 1;
    b = zt_train_thread_budget(&S, 2);
    CHECK(b.busy == 2 && !b.oversubscribed, "one actor, shared: busy %d", b.busy);
    S.mode = ZT_TRAIN_ALTERNATE;
    S.evaluator = ZT_EVALUATOR_PRIVATE;
    S.actors = 2;
    S.learner_threads = 2;
    b = zt_train_thread_budget(&S, 2);
    CHECK(b.busy == 2 && !b.oversubscribed, "alternate: busy %d", b.busy);
    S.learner_threads = 3;
    b = zt_train_thread_budget(&S, 2);
    CHECK(b.busy == 3 && b.oversubscribed, "alternate, 3 learner threads: busy %d", b.busy);

    /* from a config, on this machine */
    int cores = zt_cpu_count();
    char actors[64];
    snprintf(actors, sizeof actors, "actors=%d", cores);
    zt_config *cfg = zt_config_new();
    zt_config_set(cfg, actors);
    zt_config_set(cfg, "learner.threads=1");
    CHECK(zt_train_check_threads(cfg, "tictactoe", &b) == ZT_OK && b.oversubscribed &&
              b.busy == cores + 1 && b.cores == cores,
          "%d actors + 1 on %d cores: busy %d (%s)", cores, cores, b.busy, zt_error_message());
    zt_config_free(cfg);
    cfg = zt_config_new();
    CHECK(zt_train_check_threads(cfg, "tictactoe", &b) == ZT_OK && !b.oversubscribed,
          "the defaults oversubscribe: busy %d on %d cores", b.busy, b.cores);
    zt_config_free(cfg);
}

int main(void)
{
    zt_log_set_level(ZT_LOG_ERROR);
    if (!zt_test_tmp_root(tmp_root, sizeof tmp_root, "test_checkpoint")) return 1;
    test_recovery();
    test_metrics_on_resume();
    test_lock();
    test_thread_budget();
    zt_test_remove_root(tmp_root);
    return zt_test_finish("test_checkpoint");
}
