/* TEMPORARY SHIM (see train_shim.h): zt_train_open / advance / progress /
 * close over the blocking zt_train_run. Each advance is one zt_train_run
 * that resumes the run directory from its latest checkpoint and stops at
 * the advance's step or time bound, so every advance ends with what
 * zt_train_run does at exit (the arena's final look, a checkpoint), and the
 * progress is read back from the checkpoint (state.bin) and metrics.jsonl.
 * A stop request made while no advance runs is lost (zt_train_run clears
 * it when it starts); run.c keeps its own flag for that. */
#include "api/train_shim.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "core/alloc.h"
#include "core/fileio.h"
#include "core/timer.h"
#include "game/game.h"
#include "train/run.h"

struct zt_train {
    zt_train_options opt; /* the caller's, with run_dir pointing at `run` */
    char run[PATH_MAX];
    bool has_checkpoint; /* the next zt_train_run resumes */
    bool finished;
    double spent; /* wall seconds of this session's advances */
    zt_train_progress progress;
};

static bool exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* Whether [line, end) contains `needle`. */
static bool contains(const char *line, const char *end, const char *needle)
{
    size_t n = strlen(needle);
    for (const char *p = line; p + n <= end; p++)
        if (memcmp(p, needle, n) == 0) return true;
    return false;
}

/* The number after "key": in one metrics line, or false. */
static bool json_number(const char *line, const char *end, const char *key, double *out)
{
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\":", key);
    size_t plen = strlen(pattern);
    for (const char *p = line; p + plen <= end; p++) {
        if (memcmp(p, pattern, plen) != 0) continue;
        char *stop;
        double v = strtod(p + plen, &stop);
        if (stop == p + plen) return false;
        *out = v;
        return true;
    }
    return false;
}

/* Step and elapsed time from the latest checkpoint; games, positions and
 * the last losses from metrics.jsonl. */
static zt_status read_progress(zt_train *t)
{
    char weights[PATH_MAX + 64], path[PATH_MAX + 64];
    ZT_TRY(zt_run_resolve_weights(t->run, weights, sizeof weights));
    char *slash = strrchr(weights, '/');
    snprintf(path, sizeof path, "%.*s/state.bin", slash ? (int)(slash - weights) : 1,
             slash ? weights : ".");
    zt_train_state state;
    ZT_TRY(zt_train_state_load(path, &state));
    zt_train_progress p = t->progress;
    p.step = state.step;
    p.elapsed = state.elapsed;
    snprintf(path, sizeof path, "%s/metrics.jsonl", t->run);
    char *text;
    size_t len;
    if (zt_read_file(path, &text, &len) == ZT_OK) {
        bool have_counts = false, have_losses = false;
        const char *end = text + len;
        while (end > text && (!have_counts || !have_losses)) {
            const char *line_end = end;
            const char *line = line_end;
            while (line > text && line[-1] != '\n') line--;
            end = line > text ? line - 1 : text;
            if (line_end - line < 2) continue;
            double v;
            if (!have_counts && json_number(line, line_end, "games", &v)) {
                p.games = (int64_t)v;
                if (json_number(line, line_end, "positions", &v)) p.positions = (int64_t)v;
                have_counts = true;
            }
            if (!have_losses && contains(line, line_end, "\"kind\":\"train\"")) {
                json_number(line, line_end, "loss_policy", &p.losses.policy);
                json_number(line, line_end, "loss_value", &p.losses.value);
                json_number(line, line_end, "loss_l2", &p.losses.l2);
                json_number(line, line_end, "loss_total", &p.losses.total);
                json_number(line, line_end, "grad_norm", &p.losses.grad_norm);
                json_number(line, line_end, "lr", &p.losses.lr);
                have_losses = true;
            }
        }
        free(text);
    }
    t->progress = p;
    return ZT_OK;
}

zt_status zt_train_open(const zt_train_options *opt, zt_train **out)
{
    *out = NULL;
    zt_config *cfg = opt->config;
    const char *name = opt->game;
    if (!name) ZT_TRY(zt_config_string(cfg, "game", "", &name));
    if (!name[0]) return zt_fail(ZT_ERR_INVALID, "no game given");
    /* every setting read and checked now, as zt_train_run will read them */
    zt_game *g;
    ZT_TRY(zt_game_new(name, cfg, &g));
    zt_train_settings S;
    zt_status st = zt_train_settings_read(cfg, g, &S);
    zt_game_free(g);
    ZT_TRY(st);
    ZT_TRY(zt_config_check_unused(cfg));

    zt_train *t = zt_xcalloc(1, sizeof *t);
    t->opt = *opt;
    if (opt->run_dir) {
        snprintf(t->run, sizeof t->run, "%s", opt->run_dir);
    } else {
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        char stamp[32];
        strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
        snprintf(t->run, sizeof t->run, "runs/%s-%s", name, stamp);
    }
    t->opt.run_dir = t->run;
    char latest[PATH_MAX + 32];
    snprintf(latest, sizeof latest, "%s/ckpt/latest", t->run);
    bool has_run = exists(latest);
    if (opt->resume && !has_run)
        st = zt_fail(ZT_ERR_NOT_FOUND, "%s: no checkpoint to resume (ckpt/latest missing)", t->run);
    else if (!opt->resume && has_run)
        st = zt_fail(ZT_ERR_INVALID, "%s already holds a run (continue it with --resume %s)",
                     t->run, t->run);
    if (st == ZT_OK && has_run) {
        t->has_checkpoint = true;
        st = read_progress(t);
    }
    if (st != ZT_OK) {
        free(t);
        return st;
    }
    *out = t;
    return ZT_OK;
}

zt_status zt_train_advance(zt_train *t, int64_t steps, double seconds, bool *done)
{
    *done = false;
    const zt_train_options *opt = &t->opt;
    if (opt->steps > 0 && t->progress.step >= opt->steps) t->finished = true;
    if (opt->minutes > 0 && t->spent >= opt->minutes * 60) t->finished = true;
    if (t->finished) {
        *done = true;
        return ZT_OK;
    }
    zt_train_options o = *opt;
    o.resume = t->has_checkpoint;
    o.steps = steps > 0 ? t->progress.step + steps : 0;
    if (opt->steps > 0 && (o.steps == 0 || o.steps > opt->steps)) o.steps = opt->steps;
    double budget = seconds > 0 ? seconds : 0;
    if (opt->minutes > 0) {
        double left = opt->minutes * 60 - t->spent;
        if (budget == 0 || budget > left) budget = left;
    }
    o.minutes = budget / 60;
    double t0 = zt_now_s();
    zt_status st = zt_train_run(&o);
    double dt = zt_now_s() - t0;
    t->spent += dt;
    char latest[PATH_MAX + 32];
    snprintf(latest, sizeof latest, "%s/ckpt/latest", t->run);
    t->has_checkpoint = exists(latest);
    ZT_TRY(st);
    ZT_TRY(read_progress(t));
    bool by_steps = o.steps > 0 && t->progress.step >= o.steps;
    bool by_time = budget > 0 && dt >= budget;
    /* Neither bound: a stop request or perfect play ended it. */
    if (!by_steps && !by_time) t->finished = true;
    if (opt->steps > 0 && t->progress.step >= opt->steps) t->finished = true;
    if (opt->minutes > 0 && t->spent >= opt->minutes * 60) t->finished = true;
    *done = t->finished;
    return ZT_OK;
}

zt_train_progress zt_train_get_progress(const zt_train *t)
{
    return t->progress;
}

zt_status zt_train_close(zt_train *t)
{
    /* every advance already ended with a checkpoint */
    free(t);
    return ZT_OK;
}
