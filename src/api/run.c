/* libzeroth training runs: a zeroth_run_t is a resumable training run
 * (zt_train_open / advance / close) over the config it owns. The run
 * directory is resolved here, not left to zt_train_open, because the
 * handle must be able to name it (zeroth_run_dir). */
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/api.h"
#include "train/train.h"
#include "core/alloc.h"

struct zeroth_run {
    zt_config *cfg;
    zt_train *train;
    char dir[PATH_MAX];
    atomic_int stop; /* zeroth_run_request_stop was called */
    bool failed;     /* a step failed: close writes no checkpoint */
};

/* The training loop keeps process-wide state (its stop flag, the log file),
 * so one run at a time. */
static atomic_int run_open;

static zt_status open_run(zt_config *cfg, const char *dir, bool resume, zeroth_run_t **out)
{
    zeroth_run_t *r = zt_xcalloc(1, sizeof *r);
    r->cfg = cfg;
    snprintf(r->dir, sizeof r->dir, "%s", dir);
    zt_train_options opt = {.config = cfg, .run_dir = r->dir, .resume = resume, .quiet = true};
    zt_status st = zt_train_open(&opt, &r->train);
    if (st != ZT_OK) {
        free(r);
        return st;
    }
    *out = r;
    return ZT_OK;
}

/* Takes the process's one run slot, or fails naming `fn`. */
static zt_status take_slot(const char *fn)
{
    int expected = 0;
    if (!atomic_compare_exchange_strong(&run_open, &expected, 1))
        return zt_fail(ZT_ERR_UNSUPPORTED, "%s: another training run is open in this process", fn);
    return ZT_OK;
}

zeroth_status zeroth_run_new(const char *config, const char *run_dir, zeroth_run_t **out)
{
    const char *fn = "zeroth_run_new";
    ZT_API_TRY(zt_api_need(fn, out, "out"));
    *out = NULL;
    ZT_API_TRY(zt_api_need(fn, config, "config"));
    ZT_API_TRY(take_slot(fn));
    zt_config *cfg;
    const char *game = "";
    char dir[PATH_MAX];
    zt_status st = zt_api_settings(config, "run config", &cfg);
    if (st == ZT_OK) st = zt_config_string(cfg, "game", "", &game);
    if (st == ZT_OK && !game[0])
        st = zt_fail(ZT_ERR_INVALID, "%s: the config names no game (game=NAME)", fn);
    if (st == ZT_OK && run_dir) {
        if (strlen(run_dir) >= sizeof dir)
            st = zt_fail(ZT_ERR_INVALID, "%s: run directory '%.60s...' is too long", fn, run_dir);
        else
            snprintf(dir, sizeof dir, "%s", run_dir);
    } else if (st == ZT_OK) {
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        char stamp[32];
        strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
        snprintf(dir, sizeof dir, "runs/%.64s-%s", game, stamp);
    }
    if (st == ZT_OK) st = open_run(cfg, dir, false, out);
    if (st != ZT_OK) {
        zt_config_free(cfg);
        atomic_store(&run_open, 0);
    }
    return zt_api_status(st);
}

zeroth_status zeroth_run_resume(const char *run_dir, const char *overrides, zeroth_run_t **out)
{
    const char *fn = "zeroth_run_resume";
    ZT_API_TRY(zt_api_need(fn, out, "out"));
    *out = NULL;
    ZT_API_TRY(zt_api_need(fn, run_dir, "run_dir"));
    if (strlen(run_dir) >= PATH_MAX - 16)
        return zt_api_status(
            zt_fail(ZT_ERR_INVALID, "%s: run directory '%.60s...' is too long", fn, run_dir));
    ZT_API_TRY(take_slot(fn));
    zt_config *cfg = zt_config_new();
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/config.ini", run_dir);
    zt_status st = zt_config_load_file(cfg, path);
    if (st == ZT_OK) st = zt_api_settings_apply(cfg, overrides, "overrides");
    if (st == ZT_OK) st = open_run(cfg, run_dir, true, out);
    if (st != ZT_OK) {
        zt_config_free(cfg);
        atomic_store(&run_open, 0);
    }
    return zt_api_status(st);
}

zeroth_status zeroth_run_step(zeroth_run_t *run, int64_t steps, double seconds, int *done)
{
    const char *fn = "zeroth_run_step";
    ZT_API_TRY(zt_api_need(fn, run, "run"));
    ZT_API_TRY(zt_api_need(fn, done, "done"));
    *done = 0;
    if (steps < 0)
        return zt_api_status(
            zt_fail(ZT_ERR_INVALID, "%s: steps = %lld, must be >= 0", fn, (long long)steps));
    if (!(seconds >= 0) || isinf(seconds))
        return zt_api_status(
            zt_fail(ZT_ERR_INVALID, "%s: seconds = %g, must be finite and >= 0", fn, seconds));
    if (atomic_load(&run->stop)) {
        *done = 1;
        return ZEROTH_OK;
    }
    if (run->failed)
        return zt_api_status(zt_fail(ZT_ERR_INVALID, "%s: an earlier step failed; close the run", fn));
    bool over = false;
    zt_status st = zt_train_advance(run->train, steps, seconds, &over);
    if (st != ZT_OK) {
        run->failed = true;
        return zt_api_status(st);
    }
    *done = over || atomic_load(&run->stop);
    return ZEROTH_OK;
}

void zeroth_run_request_stop(zeroth_run_t *run)
{
    if (run) atomic_store(&run->stop, 1);
    zt_train_request_stop();
}

zeroth_status zeroth_run_metric(const zeroth_run_t *run, const char *name, double *value)
{
    const char *fn = "zeroth_run_metric";
    ZT_API_TRY(zt_api_need(fn, run, "run"));
    ZT_API_TRY(zt_api_need(fn, name, "name"));
    ZT_API_TRY(zt_api_need(fn, value, "value"));
    zt_train_progress p = zt_train_get_progress(run->train);
    const struct {
        const char *name;
        double value;
    } metrics[] = {
        {"step", (double)p.step},           {"games", (double)p.games},
        {"positions", (double)p.positions}, {"elapsed", p.elapsed},
        {"loss_policy", p.last_loss.policy},   {"loss_value", p.last_loss.value},
        {"loss_total", p.last_loss.total},
    };
    char known[128] = "";
    for (size_t i = 0; i < sizeof metrics / sizeof metrics[0]; i++) {
        if (strcmp(name, metrics[i].name) == 0) {
            *value = metrics[i].value;
            return ZEROTH_OK;
        }
        size_t len = strlen(known);
        snprintf(known + len, sizeof known - len, "%s%s", len ? ", " : "", metrics[i].name);
    }
    return zt_api_status(
        zt_fail(ZT_ERR_NOT_FOUND, "%s: unknown metric '%s' (known: %s)", fn, name, known));
}

const char *zeroth_run_dir(const zeroth_run_t *run)
{
    return run->dir;
}

zeroth_status zeroth_run_close(zeroth_run_t *run)
{
    if (!run) return ZEROTH_OK;
    zt_status st = ZT_OK;
    if (run->failed)
        zt_train_free(run->train);
    else
        st = zt_train_close(run->train);
    zt_config_free(run->cfg);
    free(run);
    atomic_store(&run_open, 0);
    return zt_api_status(st);
}
