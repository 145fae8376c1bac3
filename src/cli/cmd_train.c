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
    fprintf(f,
            "usage: zeroth train GAME [--config FILE] [--set k=v ...] [--run DIR] [--minutes M]\n"
            "                         [--steps N]\n"
            "       zeroth train --config FILE [...]      (FILE says game = GAME)\n"
            "       zeroth train --resume DIR [--config FILE] [--set k=v ...] [--minutes M] "
            "[--steps N]\n\n"
            "Trains an agent by self-play (AlphaZero / Gumbel AlphaZero). Settings come from\n"
            "configs/GAME.ini when it exists, then each --config FILE over it, then --set\n"
            "overrides, in command-line order; every key is documented in configs/*.ini. The run\n"
            "directory (default runs/GAME-DATE-TIME) gets config.ini, metrics.jsonl, log.txt and\n"
            "ckpt/, and is locked while the run uses it. Ctrl-C, SIGTERM and SIGHUP stop after a\n"
            "checkpoint (exit 0); a second signal stops at once (exit 128 + the signal).\n"
            "--resume continues a run from its latest complete checkpoint.\n\n"
            "  --run DIR      run directory\n"
            "  --minutes M    stop after M minutes (default: until interrupted)\n"
            "  --steps N      stop at learner step N (counted over resumes)\n"
            "  --resume DIR   continue the run in DIR (its config.ini, then --config, --set)\n");
}

static volatile sig_atomic_t interrupted;

static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP};

/* The first SIGINT, SIGTERM or SIGHUP (Ctrl-C, kill, timeout, systemd and
 * container stops, a closed terminal): stop cleanly after a checkpoint.
 * The second: the signal's default action, at once (exit 128 + sig). */
static void on_stop_signal(int sig)
{
    if (interrupted) {
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    interrupted = 1;
    zt_train_request_stop();
}

static void handle_stop_signals(bool on)
{
    for (size_t i = 0; i < sizeof stop_signals / sizeof stop_signals[0]; i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on ? on_stop_signal : SIG_DFL;
        sigemptyset(&sa.sa_mask);
        sigaction(stop_signals[i], &sa, NULL);
    }
}

/* The oversubscription guard's half that the library cannot do (it never
 * changes the environment): libgomp reads OMP_WAIT_POLICY once, in a
 * constructor that runs before main (measured: a setenv in main changes
 * nothing), so when the settings keep more threads busy than there are
 * cores the program runs itself again with OMP_WAIT_POLICY=passive, before
 * anything is written. A user's own OMP_WAIT_POLICY stands. */
static void wait_passively_if_oversubscribed(zt_config *cfg, const char *game)
{
    if (getenv("OMP_WAIT_POLICY")) return;
    /* Under mpirun MPI is initialised by now, and a process that runs
     * itself again would leave its launcher: the run's warning stands
     * (mpirun -x OMP_WAIT_POLICY=passive passes the setting to every rank). */
    if (zt_cli_dist_remote()) return;
    zt_train_threads b;
    /* a bad setting is reported by the run itself */
    if (zt_train_check_threads(cfg, game, &b) != ZT_OK || !b.oversubscribed) return;
    zt_cli_rerun_with_env("OMP_WAIT_POLICY", "passive");
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
    /* before anything is read from or written to them */
    if (st == ZT_OK && run) st = zt_run_dir_check(run);
    if (st == ZT_OK && resume) st = zt_run_dir_check(resume);
    if (st != ZT_OK) return zt_cli_fail(st);
    if (!game && !resume && !has_config) {
        usage(stderr);
        return 2;
    }
    if (resume && run && strcmp(resume, run) != 0)
        return zt_cli_error("--run and --resume name different directories");
    int dist_exit;
    if (zt_cli_dist_actor(&dist_exit)) return dist_exit; /* mpirun: ranks > 0 act */
    zt_config *cfg = zt_config_new();
    char base[4400];
    if (resume) snprintf(base, sizeof base, "%s/config.ini", resume);
    const char *g = NULL;
    st = zt_cli_layered_config(argc, argv, resume ? base : NULL, game, cfg, &g);
    if (st == ZT_OK && !g)
        st = zt_fail(ZT_ERR_INVALID, "no game: name one (zeroth train GAME) or put game = GAME in "
                                     "the --config file");
    if (st != ZT_OK) {
        zt_config_free(cfg);
        return zt_cli_fail(st);
    }
    wait_passively_if_oversubscribed(cfg, g);
    opt.game = g;
    opt.config = cfg;
    opt.run_dir = resume ? resume : run;
    opt.resume = resume != NULL;
    opt.remote = zt_cli_dist_remote();
    handle_stop_signals(true);
    st = zt_train_run(&opt);
    zt_cli_dist_end();
    handle_stop_signals(false);
    zt_config_free(cfg);
    return st == ZT_OK ? 0 : zt_cli_fail(st);
}
