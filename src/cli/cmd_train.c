/* zeroth train: self-play training of one game into a run directory. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/cli_dist.h"
#include "train/run.h"
#include "core/config.h"
#include "train/train.h"

static void usage(FILE *f)
{
    fprintf(
        f, "usage: zeroth train GAME [--config FILE] [--set k=v ...] [--run DIR] [--minutes M]\n"
           "                         [--steps N]\n"
           "       zeroth train --resume DIR [--set k=v ...] [--minutes M] [--steps N]\n\n"
           "Trains an agent by self-play (AlphaZero / Gumbel AlphaZero). Settings come from\n"
           "configs/GAME.ini when it exists (else --config FILE), then --set overrides; every key\n"
           "is documented in configs/*.ini. The run directory (default runs/GAME-DATE-TIME) gets\n"
           "config.ini, metrics.jsonl, log.txt and ckpt/. Ctrl-C stops after a checkpoint;\n"
           "--resume continues a run from its latest checkpoint.\n\n"
           "  --run DIR      run directory\n"
           "  --minutes M    stop after M minutes (default: until interrupted)\n"
           "  --steps N      stop at learner step N (counted over resumes)\n"
           "  --resume DIR   continue the run in DIR (its config.ini, then --set overrides)\n");
}

static volatile sig_atomic_t interrupted;

/* First Ctrl-C: stop cleanly after a checkpoint. Second: the default action. */
static void on_sigint(int sig)
{
    (void)sig;
    if (interrupted) {
        signal(SIGINT, SIG_DFL);
        raise(SIGINT);
        return;
    }
    interrupted = 1;
    zt_train_request_stop();
}

int zt_cmd_train(int argc, char **argv)
{
    zt_train_options opt = {0};
    const char *resume = NULL, *run = NULL, *game = NULL;
    bool has_config = false;
    zt_status st = ZT_OK;
    /* first pass: everything but the config, which must be applied in order
     * after the run's or the game's own file */
    for (int i = 1; i < argc && st == ZT_OK; i++) {
        const char *v;
        if (zt_cli_is_help(argv[i])) {
            usage(stdout);
            return 0;
        }
        if (zt_cli_flag_value(argc, argv, &i, "--resume", &v, &st)) {
            resume = v;
        } else if (zt_cli_flag_value(argc, argv, &i, "--run", &v, &st)) {
            run = v;
        } else if (zt_cli_flag_value(argc, argv, &i, "--minutes", &v, &st)) {
            char *end;
            opt.minutes = strtod(v, &end);
            if (st == ZT_OK && (*end || !(opt.minutes > 0)))
                st = zt_fail(ZT_ERR_INVALID, "--minutes: expected a positive number, got '%s'", v);
        } else if (zt_cli_flag_value(argc, argv, &i, "--steps", &v, &st)) {
            char *end;
            long long n = strtoll(v, &end, 10);
            if (st == ZT_OK && (*end || n < 1))
                st = zt_fail(ZT_ERR_INVALID, "--steps: expected a positive integer, got '%s'", v);
            opt.steps = n;
        } else if (zt_cli_skip_config_arg(argc, argv, &i, &has_config, &st)) {
            continue;
        } else if (argv[i][0] == '-') {
            st = zt_fail(ZT_ERR_INVALID, "unknown flag '%s' (see zeroth train --help)", argv[i]);
        } else if (!game) {
            game = argv[i];
        } else {
            st = zt_fail(ZT_ERR_INVALID, "unexpected argument '%s'", argv[i]);
        }
    }
    if (st != ZT_OK) return zt_cli_fail(st);
    if (!game && !resume) {
        usage(stderr);
        return 2;
    }
    if (resume && run && strcmp(resume, run) != 0)
        return zt_cli_error("--run and --resume name different directories");
    int dist_exit;
    if (zt_cli_dist_actor(&dist_exit)) return dist_exit; /* mpirun: ranks > 0 act */
    zt_config *cfg = zt_config_new();
    char path[4400];
    if (resume) {
        snprintf(path, sizeof path, "%s/config.ini", resume);
        st = zt_config_load_file(cfg, path);
    } else if (!has_config && zt_run_default_config(game, path, sizeof path)) {
        st = zt_config_load_file(cfg, path);
    }
    for (int i = 1; i < argc && st == ZT_OK; i++) zt_cli_config_arg(argc, argv, &i, cfg, &st);
    if (st != ZT_OK) {
        zt_config_free(cfg);
        return zt_cli_fail(st);
    }
    opt.game = game;
    opt.config = cfg;
    opt.run_dir = resume ? resume : run;
    opt.resume = resume != NULL;
    opt.remote = zt_cli_dist_remote();
    signal(SIGINT, on_sigint);
    st = zt_train_run(&opt);
    zt_cli_dist_end();
    signal(SIGINT, SIG_DFL);
    zt_config_free(cfg);
    return st == ZT_OK ? 0 : zt_cli_fail(st);
}
