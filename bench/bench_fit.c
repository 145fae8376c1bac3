/* zeroth bench fit: a fresh net with the training settings of a game (its
 * config, then --config / --set, as `zeroth train` reads them) trained by
 * the run's own learner (optimizer, batch, sampler, MuZero's unroll) on a
 * replay checkpoint alone, no self-play: the mean losses every --every
 * steps. Two nets, or two settings, fitted to one replay tell whether a run
 * learns slowly because of its net and optimizer or because of its data
 * (docs/muzero.md, "Connect Four"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/config.h"
#include "core/thread.h"
#include "core/timer.h"
#include "replay/replay.h"
#include "train/learner.h"
#include "train/train.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: zeroth bench fit GAME --replay FILE [--steps N] [--every N] [--config FILE] "
               "[--set k=v ...]\n\n"
               "Trains a fresh net of GAME's training settings (algorithm, net, learner.*,\n"
               "muzero.*) on the positions of a replay checkpoint (a run's\n"
               "ckpt/STEP/replay.bin) with the run's learner and no self-play, and prints the\n"
               "mean losses every N steps: policy and value (a MuZero net: step 0's, then the\n"
               "unrolled steps' and the reward's). The replay keeps its own window and\n"
               "augmentation.\n"
               "  --replay FILE  the replay checkpoint\n"
               "  --steps N      learner steps (default 300)\n"
               "  --every N      steps per printed line (default 50)\n");
}

static zt_status parse_count(const char *flag, const char *v, int *out)
{
    char *end;
    long n = strtol(v, &end, 10);
    if (*end || n < 1 || n > 10000000)
        return zt_fail(ZT_ERR_INVALID, "%s: expected a count in 1..10000000, got '%s'", flag, v);
    *out = (int)n;
    return ZT_OK;
}

static zt_status fit(const zt_game *g, const zt_train_settings *S, zt_replay *rb, int steps,
                     int every)
{
    zt_learner *l;
    ZT_TRY(zt_learner_new(g, S, rb, &l));
    bool mz = zt_algorithm_is_muzero(S->algorithm);
    zt_status st = ZT_OK;
    double t0 = zt_now_s();
    for (int s = 1; s <= steps && st == ZT_OK; s++) {
        st = zt_learner_step(l);
        if (st != ZT_OK || (s % every != 0 && s != steps)) continue;
        zt_train_losses m;
        zt_learner_mean_losses(l, &m);
        zt_learner_reset_losses(l);
        if (mz)
            printf("step %6d  policy0 %.4f  value0 %.4f  policy_unrolled %.4f  value_unrolled "
                   "%.4f  reward %.4f  grad %.3f  %.1f s\n",
                   s, m.policy0, m.value0, m.policy - m.policy0, m.value - m.value0, m.reward,
                   m.grad_norm, zt_now_s() - t0);
        else
            printf("step %6d  policy %.4f  value %.4f  grad %.3f  %.1f s\n", s, m.policy, m.value,
                   m.grad_norm, zt_now_s() - t0);
        fflush(stdout);
    }
    zt_learner_free(l);
    return st;
}

int zt_bench_fit(int argc, char **argv)
{
    const char *game = NULL, *replay = NULL;
    int steps = 300, every = 50;
    bool has_config = false;
    zt_status st = ZT_OK;
    for (int i = 1; i < argc && st == ZT_OK; i++) {
        const char *v;
        if (zt_cli_is_help(argv[i])) {
            usage(stdout);
            return 0;
        }
        if (zt_cli_flag_value(argc, argv, &i, "--replay", &replay, &st)) {
            continue;
        } else if (zt_cli_flag_value(argc, argv, &i, "--steps", &v, &st)) {
            if (st == ZT_OK) st = parse_count("--steps", v, &steps);
        } else if (zt_cli_flag_value(argc, argv, &i, "--every", &v, &st)) {
            if (st == ZT_OK) st = parse_count("--every", v, &every);
        } else if (zt_cli_skip_config_arg(argc, argv, &i, &has_config, &st)) {
            continue;
        } else if (argv[i][0] == '-') {
            st =
                zt_fail(ZT_ERR_INVALID, "unknown flag '%s' (see zeroth bench fit --help)", argv[i]);
        } else if (!game) {
            game = argv[i];
        } else {
            st = zt_fail(ZT_ERR_INVALID, "unexpected argument '%s'", argv[i]);
        }
    }
    if (st == ZT_OK && !game) st = zt_fail(ZT_ERR_INVALID, "bench fit: name a game");
    if (st == ZT_OK && !replay) st = zt_fail(ZT_ERR_INVALID, "bench fit: --replay FILE is needed");
    if (st != ZT_OK) return zt_cli_fail(st);
    zt_config *cfg = zt_config_new();
    const char *name = NULL;
    zt_game *g = NULL;
    zt_replay *rb = NULL;
    zt_train_settings S;
    st = zt_cli_layered_config(argc, argv, NULL, game, cfg, &name);
    if (st == ZT_OK) st = zt_game_new(name, cfg, &g);
    if (st == ZT_OK) st = zt_train_settings_read(cfg, g, &S);
    if (st == ZT_OK) st = zt_config_check_unused(cfg);
    if (st == ZT_OK) st = zt_replay_load(g, replay, &rb);
    if (st == ZT_OK) {
        zt_replay_stats rs = zt_replay_get_stats(rb);
        char arch[256];
        zt_net_config_format(&S.net, arch, sizeof arch);
        printf("bench fit %s: %lld positions of %s, net %s, batch %d, load %.2f\n", name,
               (long long)rs.positions, replay, arch, S.batch, zt_load_average());
        st = fit(g, &S, rb, steps, every);
    }
    zt_replay_free(rb);
    zt_game_free(g);
    zt_config_free(cfg);
    return st == ZT_OK ? 0 : zt_cli_fail(st);
}
