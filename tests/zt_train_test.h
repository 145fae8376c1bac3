/* What the tests that train whole tic-tac-toe runs share (test_train,
 * test_checkpoint, test_reanalyse, test_train_muzero, test_faults): a scratch directory
 * for their runs, a run's config from settings, a run to a number of steps
 * or minutes, and comparing two files byte for byte. Header-only and
 * static, as zt_test.h, which it includes. */
#ifndef ZT_TRAIN_TEST_H
#define ZT_TRAIN_TEST_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/config.h"
#include "core/rng.h"
#include "core/fileio.h"
#include "replay/replay.h"
#include "train/train.h"
#include "zt_test.h"

/* configs/tictactoe.ini of the source tree ($ZT_SOURCE_DIR, which CTest
 * sets; else the working directory) in buf, or NULL where it is not. */
static inline const char *zt_test_tictactoe_ini(char *buf, size_t cap)
{
    const char *src = getenv("ZT_SOURCE_DIR");
    snprintf(buf, cap, "%s/configs/tictactoe.ini", src ? src : ".");
    struct stat sb;
    return stat(buf, &sb) == 0 ? buf : NULL;
}

/* Makes the scratch directory /tmp/zt_<name>.XXXXXX in root (cap bytes)
 * and prints where it is; false (after perror) when it cannot. */
static inline bool zt_test_tmp_root(char *root, size_t cap, const char *name)
{
    snprintf(root, cap, "/tmp/zt_%s.XXXXXX", name);
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        return false;
    }
    printf("runs under %s\n", root);
    return true;
}

/* The scratch directory goes when every check passed (else it stays, to
 * look at). */
static inline void zt_test_remove_root(const char *root)
{
    if (zt_test_failures == 0) zt_remove_tree(root);
}

/* The config of a tic-tac-toe run in `run`: a new one's (resume false)
 * from the file `ini` (NULL: none) and then the settings `fresh`; a
 * resumed one's from the run's own config.ini; then the settings `sets`
 * either way (each list NULL-terminated, or NULL). *out is made even when
 * a file or setting is refused (the status says which); the caller frees
 * it. */
static inline zt_status zt_test_run_config(const char *run, bool resume, const char *ini,
                                           const char *const *fresh, const char *const *sets,
                                           zt_config **out)
{
    zt_config *cfg = zt_config_new();
    *out = cfg;
    zt_status st = ZT_OK;
    if (resume) {
        char path[600];
        snprintf(path, sizeof path, "%s/config.ini", run);
        st = zt_config_load_file(cfg, path);
    } else {
        if (ini) st = zt_config_load_file(cfg, ini);
        for (int i = 0; st == ZT_OK && fresh && fresh[i]; i++) st = zt_config_set(cfg, fresh[i]);
    }
    for (int i = 0; st == ZT_OK && sets && sets[i]; i++) st = zt_config_set(cfg, sets[i]);
    return st;
}

/* The options of a quiet tic-tac-toe run in `run` with the config cfg (a
 * new one names the game; a resumed one reads it from the run), to `steps`
 * learner steps or `minutes` (0: no bound). */
static inline zt_train_options zt_test_options(const char *run, bool resume, zt_config *cfg,
                                               double minutes, int64_t steps)
{
    zt_train_options opt = {.game = resume ? NULL : "tictactoe",
                            .config = cfg,
                            .run_dir = run,
                            .resume = resume,
                            .minutes = minutes,
                            .steps = steps,
                            .quiet = true};
    return opt;
}

/* One training run (zt_train_run) of the config zt_test_run_config makes,
 * with zt_test_options. */
static inline zt_status zt_test_train(const char *run, bool resume, const char *ini,
                                      const char *const *fresh, const char *const *sets,
                                      double minutes, int64_t steps)
{
    zt_config *cfg;
    zt_status st = zt_test_run_config(run, resume, ini, fresh, sets, &cfg);
    if (st == ZT_OK) {
        zt_train_options opt = zt_test_options(run, resume, cfg, minutes, steps);
        st = zt_train_run(&opt);
    }
    zt_config_free(cfg);
    return st;
}

/* Whether two files hold the same bytes (false where either cannot be
 * read). */
static inline bool zt_test_same_file(const char *a, const char *b)
{
    char *da, *db;
    size_t la, lb;
    if (zt_read_file(a, &da, &la) != ZT_OK) return false;
    if (zt_read_file(b, &db, &lb) != ZT_OK) {
        free(da);
        return false;
    }
    bool same = la == lb && memcmp(da, db, la) == 0;
    free(da);
    free(db);
    return same;
}

/* Random games into rb (test_reanalyse, test_learner): policies uniform (dense records), on
 * one action (sparse) or none (value targets only), in turn. */
static inline void zt_test_fill_replay(const zt_game *g, zt_replay *rb, int games)
{
    zt_replay_traj *t;
    CHECK(zt_replay_traj_new(g, &t) == ZT_OK, "traj: %s", zt_error_message());
    zt_rng rng;
    zt_rng_seed(&rng, 5, 1);
    int n = 0;
    for (int i = 0; i < games; i++) {
        uint8_t s[ZT_MAX_STATE_BYTES];
        g->reset(g, s);
        zt_replay_traj_clear(t);
        while (g->current_player(g, s) >= 0) {
            uint16_t legal[ZT_MAX_ACTIONS];
            int k = g->legal(g, s, legal);
            float p[ZT_MAX_ACTIONS] = {0};
            int kind = n++ % 3;
            if (kind == 0)
                for (int j = 0; j < k; j++) p[legal[j]] = 1;
            else
                p[legal[0]] = 1;
            zt_replay_traj_add(t, s, kind == 2 ? NULL : p, 0.0f, kind != 2);
            g->apply(g, s, legal[zt_rng_below(&rng, (uint32_t)k)]);
        }
        CHECK(zt_replay_add_game(rb, t, zt_game_value_of(g, s, 0), NULL) == ZT_OK, "add: %s",
              zt_error_message());
    }
    zt_replay_traj_free(t);
}

#endif
