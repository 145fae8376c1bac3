/* zeroth bench fit: a net with the training settings of a game (its config,
 * then --config / --set, as `zeroth train` reads them), fresh or a run's
 * (--model), trained by the run's own learner (optimizer, batch, sampler,
 * MuZero's unroll) on a replay checkpoint alone, no self-play: the mean
 * losses every --every steps, and with --positions the mistakes on the
 * game's position sets as the run's arena judges them. Two nets, or two
 * settings, fitted to one replay tell whether a run learns slowly because
 * of its net and optimizer or because of its data (docs/muzero.md, "Connect
 * Four"); a run's own net trained on further on its last replay tells
 * whether more learner steps on the same games would have helped
 * (docs/connect4-recipes.md). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/evaluator.h"
#include "arena/arena.h"
#include "cli/cli.h"
#include "core/config.h"
#include "core/fileio.h"
#include "core/thread.h"
#include "core/timer.h"
#include "replay/replay.h"
#include "search/nncache.h"
#include "train/learner.h"
#include "train/run.h"
#include "train/train.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: zeroth bench fit GAME --replay FILE [--model M] [--positions] [--steps N]\n"
               "                        [--every N] [--config FILE] [--set k=v ...]\n\n"
               "Trains a net of GAME's training settings (algorithm, net, learner.*, muzero.*),\n"
               "fresh or the weights of --model, on the positions of a replay checkpoint (a\n"
               "run's ckpt/STEP/replay.bin) with the run's learner and no self-play, and prints\n"
               "the mean losses every N steps: policy and value (a MuZero net: step 0's, then\n"
               "the unrolled steps' and the reward's). The replay keeps its own window and\n"
               "augmentation and draws as replay.surprise_weight, repeat_weight and\n"
               "repeat_average say; the optimizer starts afresh.\n"
               "  --replay FILE  the replay checkpoint\n"
               "  --model M      start from these weights (a file, a checkpoint or a run\n"
               "                 directory); they must match the net settings\n"
               "  --positions    also judge the game's position sets before the first step\n"
               "                 and on every printed line, as the run's arena does\n"
               "                 (arena.sims, arena.positions_limit)\n"
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

/* The position sets judged as the run's arena judges them (train/scheduler.c
 * run_arena): a copy of the learner's net, searched with arena.sims (0: the
 * greedy player), each set cut to arena.positions_limit. */
typedef struct judge {
    const zt_game *g;
    const zt_train_settings *S;
    zt_net *net;
    zt_net_evaluator *ev;
    zt_nncache *cache;
} judge;

enum { JUDGE_GAMES = 256 };

static zt_status judge_new(const zt_game *g, const zt_train_settings *S, judge *j)
{
    *j = (judge){.g = g, .S = S};
    ZT_TRY(zt_net_new(&S->net, S->backend, S->precision, S->learner_threads, &j->net));
    ZT_TRY(zt_net_evaluator_new(j->net, JUDGE_GAMES, &j->ev));
    j->cache = zt_nncache_new(1 << 16, g->num_actions);
    return ZT_OK;
}

static void judge_free(judge *j)
{
    zt_nncache_free(j->cache);
    zt_net_evaluator_free(j->ev);
    zt_net_free(j->net);
}

static zt_status judge_sets(judge *j, zt_net *trained)
{
    const zt_train_settings *S = j->S;
    int n = zt_net_tensor_count(trained);
    for (int i = 0; i < n; i++) {
        zt_net_tensor d = zt_net_tensor_at(j->net, i), s = zt_net_tensor_at(trained, i);
        memcpy(d.data, s.data, s.count * sizeof(float));
    }
    zt_net_params_changed(j->net);
    zt_nncache_clear(j->cache);
    zt_evaluator ev = zt_net_evaluator_get(j->ev);
    zt_agent *agent;
    if (S->arena_sims == 0) {
        ZT_TRY(zt_agent_greedy_new(j->g, &ev, JUDGE_GAMES, 0, &agent));
    } else {
        zt_search_config sc = zt_train_arena_search(S, j->g);
        ZT_TRY(zt_agent_search_new(j->g, &ev, &sc, JUDGE_GAMES, j->cache, &agent));
    }
    const zt_position_set *sets = NULL;
    int nsets = zt_game_position_sets(j->g, &sets);
    zt_status st = ZT_OK;
    printf("       ");
    for (int i = 0; i < nsets && st == ZT_OK; i++) {
        char path[PATH_MAX + 64];
        if (!zt_data_find(S->data_dir, sets[i].file, path, sizeof path)) continue;
        zt_positions_result r;
        zt_positions_config pc = {
            .path = path, .limit = S->arena_positions_limit, .seed = S->seed, .value_ev = &ev};
        st = zt_arena_positions_run(j->g, agent, &pc, &r);
        if (st != ZT_OK) break;
        const char *slash = strrchr(sets[i].file, '/');
        char name[64];
        snprintf(name, sizeof name, "%s", slash ? slash + 1 : sets[i].file);
        char *dot = strrchr(name, '.');
        if (dot) *dot = '\0';
        char what[64];
        zt_positions_format(&r, what, sizeof what);
        /* with the positions the net's own value puts on the wrong side */
        int valued, wrong;
        zt_positions_net_totals(&r, &valued, &wrong);
        printf("  %s %s", name, what);
        if (valued > 0) printf(" (value wrong %d)", wrong);
    }
    printf("\n");
    fflush(stdout);
    zt_agent_free(agent);
    return st;
}

static zt_status fit(const zt_game *g, const zt_train_settings *S, zt_replay *rb, const char *model,
                     bool positions, int steps, int every)
{
    zt_learner *l;
    ZT_TRY(zt_learner_new(g, S, rb, &l));
    bool mz = zt_algorithm_is_muzero(S->algorithm);
    zt_status st = ZT_OK;
    if (model) {
        char file[PATH_MAX + 64], spec[128];
        zt_game_spec(g, spec, sizeof spec);
        st = zt_run_resolve_weights(model, file, sizeof file);
        if (st == ZT_OK) st = zt_net_load(zt_learner_net(l), spec, file);
        if (st == ZT_OK) printf("from %s\n", file);
    }
    judge j = {0};
    bool judging = false;
    if (st == ZT_OK && positions) {
        st = judge_new(g, S, &j);
        judging = true;
    }
    if (st == ZT_OK && judging) {
        printf("step %6d\n", 0);
        st = judge_sets(&j, zt_learner_net(l));
    }
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
        if (judging) st = judge_sets(&j, zt_learner_net(l));
    }
    if (judging) judge_free(&j);
    zt_learner_free(l);
    return st;
}

int zt_bench_fit(int argc, char **argv)
{
    const char *game = NULL, *replay = NULL, *model = NULL;
    int steps = 300, every = 50;
    bool has_config = false, positions = false;
    zt_status st = ZT_OK;
    for (int i = 1; i < argc && st == ZT_OK; i++) {
        const char *v;
        if (zt_cli_is_help(argv[i])) {
            usage(stdout);
            return 0;
        }
        if (zt_cli_flag_value(argc, argv, &i, "--replay", &replay, &st)) {
            continue;
        } else if (zt_cli_flag_value(argc, argv, &i, "--model", &model, &st)) {
            continue;
        } else if (strcmp(argv[i], "--positions") == 0) {
            positions = true;
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
    if (st == ZT_OK)
        st = zt_replay_set_sampling(rb, S.replay.surprise_weight, S.replay.repeat_weight,
                                    S.replay.repeat_average);
    if (st == ZT_OK) {
        zt_replay_stats rs = zt_replay_get_stats(rb);
        char arch[256];
        zt_net_config_format(&S.net, arch, sizeof arch);
        printf("bench fit %s: %lld positions of %s, net %s, batch %d, load %.2f\n", name,
               (long long)rs.positions, replay, arch, S.batch, zt_load_average());
        zt_replay_diversity d;
        st = zt_replay_get_diversity(rb, &d);
        if (st == ZT_OK && d.positions > 0) {
            char text[ZT_REPLAY_DIVERSITY_TEXT];
            zt_replay_diversity_format(&d, text, sizeof text);
            printf("window: %s\n", text);
        }
        if (st == ZT_OK) st = fit(g, &S, rb, model, positions, steps, every);
    }
    zt_replay_free(rb);
    zt_game_free(g);
    zt_config_free(cfg);
    return st == ZT_OK ? 0 : zt_cli_fail(st);
}
