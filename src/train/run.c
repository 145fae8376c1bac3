/* Model paths, opening a model, and the settings of an agent playing with it. */
#include "train/run.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/fileio.h"
#include "core/thread.h"
#include "game/sample.h"
#include "nn/device.h"
#include "search/settings.h"
#include "train/train.h"

#define WEIGHTS_NAME "weights.safetensors"

static bool is_dir(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static bool is_file(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

static zt_status join(char *out, size_t cap, const char *a, const char *b)
{
    size_t la = strlen(a);
    bool slash = la > 0 && a[la - 1] == '/';
    int n = snprintf(out, cap, "%s%s%s", a, slash ? "" : "/", b);
    if (n < 0 || (size_t)n >= cap) return zt_fail(ZT_ERR_INVALID, "model path '%s' is too long", a);
    return ZT_OK;
}

/* ckpt/latest holds one directory name; anything else (a path, an empty or
 * binary file) is a damaged run, not a name to follow. */
static zt_status read_latest(const char *run, const char *latest_path, char *name, size_t cap)
{
    char *text;
    size_t len;
    ZT_TRY(zt_read_file(latest_path, &text, &len));
    while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r' || text[len - 1] == ' '))
        text[--len] = '\0';
    bool ok = len > 0 && len < cap && !strchr(text, '/') && strcmp(text, ".") != 0 &&
              strcmp(text, "..") != 0;
    for (size_t i = 0; ok && i < len; i++) ok = text[i] >= ' ' && text[i] < 127;
    if (ok) memcpy(name, text, len + 1);
    free(text);
    if (!ok) return zt_fail(ZT_ERR_CORRUPT, "run '%s': ckpt/latest names no checkpoint", run);
    return ZT_OK;
}

zt_status zt_run_dir_check(const char *dir)
{
    if (!dir || !dir[0])
        return zt_fail(ZT_ERR_INVALID, "the run directory's name is empty (an unset variable?)");
    char real[PATH_MAX];
    bool root = strspn(dir, "/") == strlen(dir);
    if (!root && realpath(dir, real)) root = strcmp(real, "/") == 0;
    if (root)
        return zt_fail(ZT_ERR_INVALID, "'%s' is the filesystem root, not a run directory", dir);
    struct stat sb;
    if (stat(dir, &sb) == 0 && !S_ISDIR(sb.st_mode))
        return zt_fail(ZT_ERR_INVALID, "'%s' is a file, not a run directory", dir);
    return ZT_OK;
}

zt_status zt_run_resolve_weights(const char *path, char *out, size_t cap)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        return zt_fail(ZT_ERR_NOT_FOUND, "cannot open model '%s': %s", path, strerror(errno));
    if (!S_ISDIR(sb.st_mode)) {
        if (strlen(path) >= cap)
            return zt_fail(ZT_ERR_INVALID, "model path '%s' is too long", path);
        strcpy(out, path);
        return ZT_OK;
    }
    /* A checkpoint directory. */
    char buf[4096];
    ZT_TRY(join(buf, sizeof buf, path, WEIGHTS_NAME));
    if (is_file(buf)) {
        if (strlen(buf) >= cap) return zt_fail(ZT_ERR_INVALID, "model path '%s' is too long", buf);
        strcpy(out, buf);
        return ZT_OK;
    }
    /* A run directory: the checkpoint ckpt/latest names when it has
     * weights (a reader needs nothing else); else the newest complete
     * checkpoint, with a warning (train/checkpoint.c). */
    char ckpt[4096], latest[4096], name[256], dir[4096];
    ZT_TRY(join(ckpt, sizeof ckpt, path, "ckpt"));
    ZT_TRY(join(latest, sizeof latest, ckpt, "latest"));
    if (!is_dir(ckpt)) return zt_fail(ZT_ERR_NOT_FOUND, "no checkpoint in '%s'", path);
    if (is_file(latest)) {
        zt_status st = read_latest(path, latest, name, sizeof name);
        if (st == ZT_ERR_IO) return st;
        if (st == ZT_OK) {
            ZT_TRY(join(dir, sizeof dir, ckpt, name));
            ZT_TRY(join(buf, sizeof buf, dir, WEIGHTS_NAME));
        }
        if (st == ZT_OK && is_file(buf)) {
            if (strlen(buf) >= cap)
                return zt_fail(ZT_ERR_INVALID, "model path '%s' is too long", buf);
            strcpy(out, buf);
            return ZT_OK;
        }
    }
    ZT_TRY(zt_checkpoint_find(path, name, sizeof name));
    ZT_TRY(join(dir, sizeof dir, ckpt, name));
    ZT_TRY(join(buf, sizeof buf, dir, WEIGHTS_NAME));
    if (strlen(buf) >= cap) return zt_fail(ZT_ERR_INVALID, "model path '%s' is too long", buf);
    strcpy(out, buf);
    return ZT_OK;
}

enum { OPEN_INT8_CALIBRATION = 256 };

/* An int8 model has no replay buffer at hand: its ranges come from
 * positions of random play (a fixed seed, so the same model plays the
 * same). */
static zt_status calibrate_int8(zt_net *net, const zt_game *g)
{
    size_t per = (size_t)zt_game_obs_size(g);
    float *obs = malloc((size_t)OPEN_INT8_CALIBRATION * per * sizeof(float));
    if (!obs) return zt_fail(ZT_ERR_NOMEM, "no memory for int8 calibration positions");
    zt_rng rng;
    zt_rng_seed(&rng, 0x696e7438ULL, 0);
    zt_game_sample_observations(g, &rng, OPEN_INT8_CALIBRATION, obs, NULL);
    zt_status st = zt_net_calibrate(net, OPEN_INT8_CALIBRATION, obs);
    free(obs);
    return st;
}

zt_status zt_run_open_model(const char *path, const char *backend, zt_precision prec, int threads,
                            zt_game **game, zt_net **net)
{
    *game = NULL;
    *net = NULL;
    char file[4096], spec[256];
    zt_net_config arch;
    ZT_TRY(zt_run_resolve_weights(path, file, sizeof file));
    zt_status st = zt_net_file_info(file, &arch, spec, sizeof spec);
    if (st != ZT_OK) {
        /* The reader's message names the file and what is wrong with it. */
        char why[ZT_MESSAGE_MAX];
        snprintf(why, sizeof why, "%s", zt_error_message());
        return zt_fail(st, "'%s' is not a weights file (%s)", file, why);
    }
    zt_game *g;
    st = zt_game_from_spec(spec, &g);
    if (st != ZT_OK) {
        char why[ZT_MESSAGE_MAX];
        snprintf(why, sizeof why, "%s", zt_error_message());
        return zt_fail(st, "'%s' names game '%s': %s", file, spec, why);
    }
    /* a MuZero net may read the board as one vector (muzero.flat) */
    bool flat = arch.kind == ZT_NET_MUZERO && arch.in_h == 1 && arch.in_w == 1 &&
                arch.in_c == zt_game_obs_size(g);
    bool board = arch.in_h == g->obs_shape[0] && arch.in_w == g->obs_shape[1] &&
                 arch.in_c == g->obs_shape[2];
    if (!(flat || board) || arch.num_actions != g->num_actions) {
        zt_game_free(g);
        return zt_fail(ZT_ERR_CORRUPT,
                       "'%s': its net's input or policy size does not fit game '%s'", file, spec);
    }
    zt_net *n;
    st = zt_net_new(&arch, backend, prec, threads, &n);
    if (st == ZT_OK) {
        st = zt_net_load(n, spec, file);
        if (st == ZT_OK && zt_net_precision(n) == ZT_PRECISION_INT8) st = calibrate_int8(n, g);
        if (st != ZT_OK) zt_net_free(n);
    }
    if (st != ZT_OK) {
        zt_game_free(g);
        return st;
    }
    *game = g;
    *net = n;
    return ZT_OK;
}

zt_status zt_run_check_game(const char *path, const zt_game *model_game, const char *name,
                            zt_config *cfg)
{
    char model_spec[256], user_spec[256];
    zt_game_spec(model_game, model_spec, sizeof model_spec);
    if (strcmp(model_game->name, name) == 0) {
        /* Settings the user left out follow the model. */
        char settings[sizeof model_game->settings];
        snprintf(settings, sizeof settings, "%s", model_game->settings);
        char *save = NULL;
        for (char *tok = strtok_r(settings, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
            char *eq = strchr(tok, '=');
            if (!eq) continue;
            *eq = '\0';
            if (!zt_config_has(cfg, tok)) zt_config_put(cfg, tok, eq + 1);
        }
    }
    zt_game *g;
    ZT_TRY(zt_game_new(name, cfg, &g));
    zt_game_spec(g, user_spec, sizeof user_spec);
    zt_game_free(g);
    if (strcmp(model_spec, user_spec) != 0)
        return zt_fail(ZT_ERR_INVALID, "model '%s' plays '%s', not '%s'", path, model_spec,
                       user_spec);
    return ZT_OK;
}

/* ---- the evaluator over a net ---- */

zt_status zt_run_evaluator_new(zt_net *net, zt_evaluator *out)
{
    memset(out, 0, sizeof *out);
    zt_net_evaluator *ne;
    ZT_TRY(zt_net_evaluator_new(net, 1, &ne));
    *out = zt_net_evaluator_get(ne);
    return ZT_OK;
}

void zt_run_evaluator_free(zt_evaluator *ev)
{
    if (!ev || !ev->ctx) return;
    zt_net_evaluator_free(ev->ctx);
    ev->ctx = NULL;
}

/* ---- settings ---- */

/* The run directory a model path belongs to: the path itself when it holds
 * ckpt/ and config.ini, the directory two levels up when the path is a
 * checkpoint directory inside RUN/ckpt/. False for a weights file and for
 * anything else. */
static bool run_of(const char *path, char *run, size_t cap)
{
    if (!is_dir(path)) return false;
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/ckpt", path);
    if (is_dir(probe)) {
        snprintf(run, cap, "%s", path);
        return true;
    }
    char real[PATH_MAX];
    if (!realpath(path, real)) return false;
    char *slash = strrchr(real, '/');
    if (!slash || slash == real) return false;
    *slash = '\0'; /* RUN/ckpt */
    slash = strrchr(real, '/');
    if (!slash || strcmp(slash + 1, "ckpt") != 0) return false;
    *slash = '\0'; /* RUN */
    snprintf(run, cap, "%s", slash == real ? "/" : real);
    return true;
}

zt_status zt_run_search_defaults(const char *path, zt_config *cfg, char *from, size_t cap,
                                 bool *greedy)
{
    if (cap) from[0] = '\0';
    if (greedy) *greedy = false;
    char run[PATH_MAX], ini[PATH_MAX + 16];
    if (!run_of(path, run, sizeof run)) return ZT_OK;
    int n = snprintf(ini, sizeof ini, "%s%sconfig.ini", run,
                     run[strlen(run) - 1] == '/' ? "" : "/");
    if (n < 0 || (size_t)n >= sizeof ini || !is_file(ini)) return ZT_OK;
    zt_config *trained = zt_config_new();
    zt_status st = zt_config_load_file(trained, ini);
    if (st == ZT_OK && greedy && !zt_config_has(cfg, "search.sims") &&
        zt_config_has(trained, "arena.sims")) {
        /* the arena's way of playing (train/scheduler.c: 0 is greedy) */
        int64_t arena_sims;
        st = zt_config_int(trained, "arena.sims", 0, 0, 1 << 20, &arena_sims);
        *greedy = st == ZT_OK && arena_sims == 0;
    }
    if (st == ZT_OK) {
        /* Self-play explores; an agent playing to win does not. */
        static const char *const noise[] = {"search.gumbel_noise", "search.dirichlet_alpha",
                                            "search.dirichlet_fraction", NULL};
        zt_config_inherit(cfg, trained, "search.", noise);
        snprintf(from, cap, "%s", ini);
    }
    zt_config_free(trained);
    return st;
}

zt_status zt_run_nn_settings(zt_config *cfg, int default_threads, const char **backend, zt_precision *prec,
                            int *threads)
{
    const char *p;
    int64_t t;
    const char *device;
    zt_device d;
    ZT_TRY(zt_config_string(cfg, "backend", "auto", backend));
    /* Playing and evaluating run batches of a few leaves, below any
     * crossover: device=auto keeps them on the CPU; cuda[:N] asks for the
     * GPU. */
    ZT_TRY(zt_config_string(cfg, "device", "auto", &device));
    ZT_TRY(zt_device_parse(device, &d));
    if (d.kind == ZT_DEVICE_CUDA) ZT_TRY(zt_device_backend(d, *backend, backend));
    ZT_TRY(zt_config_string(cfg, "precision", "auto", &p));
    ZT_TRY(zt_precision_parse(p, prec));
    ZT_TRY(zt_config_int(cfg, "threads", default_threads, 1, 1024, &t));
    *threads = (int)t;
    return ZT_OK;
}

bool zt_run_default_config(const char *game, char *out, size_t cap)
{
    char exe[4096] = "";
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) *slash = '\0';
    }
    /* configs/ here, beside the executable (build/zeroth in a checkout),
     * then in the checkout it was built from (a build directory outside
     * the tree, and the tests that run there) */
    char dirs[3][4200] = {"configs", "", ""};
    if (exe[0]) snprintf(dirs[1], sizeof dirs[1], "%s/../configs", exe);
#ifdef ZT_SOURCE_CONFIGS
    snprintf(dirs[2], sizeof dirs[2], "%s", ZT_SOURCE_CONFIGS);
#endif
    for (int i = 0; i < 3; i++) {
        if (!dirs[i][0]) continue;
        snprintf(out, cap, "%s/%s.ini", dirs[i], game);
        FILE *f = fopen(out, "r");
        if (f) {
            fclose(f);
            return true;
        }
    }
    return false;
}

zt_status zt_run_open_player(const char *path, const char *game_name, zt_config *cfg,
                             bool gumbel_noise, zt_game **game, zt_net **net,
                             zt_search_config *sc, char *from, size_t cap, bool *greedy)
{
    *game = NULL;
    *net = NULL;
    const char *backend;
    zt_precision prec;
    int threads;
    ZT_TRY(zt_run_nn_settings(cfg, ZT_RUN_PLAY_THREADS, &backend, &prec, &threads));
    zt_game *g;
    zt_net *n;
    ZT_TRY(zt_run_open_model(path, backend, prec, threads, &g, &n));
    zt_search_read_options opt = {.use = ZT_SEARCH_PLAY, .gumbel_noise = gumbel_noise};
    zt_status st = zt_run_check_game(path, g, game_name, cfg);
    if (st == ZT_OK) st = zt_run_search_defaults(path, cfg, from, cap, greedy);
    if (st == ZT_OK) st = zt_search_config_read(cfg, &opt, sc);
    if (st != ZT_OK) {
        zt_net_free(n);
        zt_game_free(g);
        return st;
    }
    *game = g;
    *net = n;
    return ZT_OK;
}
