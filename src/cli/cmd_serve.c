/* zeroth serve GAME --model M: play against the model in a browser. Loads
 * the model and its run's search settings as `zeroth play` does, then
 * serves the page and the JSON API of docs/serve.md (src/serve/) until
 * SIGINT or SIGTERM. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "search/settings.h"
#include "serve/http.h"
#include "serve/serve.h"
#include "train/run.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: zeroth serve GAME --model M [--port P] [--host H]\n"
               "                    [--sims S | --greedy [--plies P]] [--max-sims S]\n"
               "                    [--max-sessions N] [--seed N] [--set k=v]\n\n"
               "Serves a page to play GAME against a model (a weights file, a checkpoint or a\n"
               "run directory) in a browser: the board, moves by click, the agent's value and\n"
               "its top moves, new game, undo, choice of side and of simulations. The JSON\n"
               "API under it is in docs/serve.md. Runs until Ctrl-C (SIGINT) or SIGTERM.\n"
               "  --port P          TCP port (default 8080; 0: a free one, printed)\n"
               "  --host H          address to listen on, numeric (default 127.0.0.1; 0.0.0.0\n"
               "                    or :: open it to the network: there is no authentication)\n"
               "  --sims S          the agent's simulations per move in a new game (0: the raw\n"
               "                    policy); short for --set search.sims=S\n"
               "  --greedy          with 0 simulations (then the default) the agent plays\n"
               "                    greedily, not the raw policy: each turn ends where the\n"
               "                    net's value is highest (backgammon: gnubg's 0-ply)\n"
               "  --plies P         greedy play P plies deeper (0 or 1, default 0; 1: the best\n"
               "                    8 plays valued by the opponent's best replies, gnubg's\n"
               "                    1-ply)\n"
               "  --max-sims S      the most simulations a player may pick (default 4096, or\n"
               "                    the default sims if larger)\n"
               "  --max-sessions N  games at once (default 64); a session idle for 30 minutes\n"
               "                    may be reclaimed for a new game past the bound\n"
               "  --seed N          seed of the dice and the search (default: the clock)\n"
               "  --set k=v         search settings search.KEY as for zeroth play\n\n"
               "A run or checkpoint directory plays with its run's search (the search.* keys\n"
               "of RUN/config.ini, without self-play's noise), a weights file with the\n"
               "defaults; flags override either. A run whose arena played greedily\n"
               "(arena.sims = 0, backgammon's default) is served as with --greedy unless\n"
               "--sims is given.\n");
}

/* Parses a decimal integer in [lo, hi] for flag `name`; false after
 * printing the error. */
static bool parse_int(const char *name, const char *text, long lo, long hi, long *out)
{
    char *end;
    long v = strtol(text, &end, 10);
    if (!*text || *end || v < lo || v > hi) {
        zt_cli_error("serve: %s must be an integer in [%ld, %ld], not '%s'", name, lo, hi, text);
        return false;
    }
    *out = v;
    return true;
}

int zt_cmd_serve(int argc, char **argv)
{
    zt_config *cfg = zt_config_new();
    const char *game_name = NULL, *model_path = NULL, *sims_arg = NULL, *port_arg = "8080";
    const char *host = "127.0.0.1", *max_sims_arg = NULL, *max_sessions_arg = "64";
    const char *seed_arg = NULL, *plies_arg = NULL;
    zt_status st = ZT_OK;
    int rc = 1;
    zt_game *g = NULL;
    zt_net *net = NULL;
    zt_evaluator ev = {0};
    zt_serve *srv = NULL;
    zt_serve_http *http = NULL;
    bool greedy = false;

    for (int i = 1; i < argc; i++) {
        if (zt_cli_is_help(argv[i])) {
            usage(stdout);
            rc = 0;
            goto done;
        }
        if (zt_cli_config_arg(argc, argv, &i, cfg, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--model", &model_path, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--sims", &sims_arg, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--port", &port_arg, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--host", &host, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--max-sims", &max_sims_arg, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--max-sessions", &max_sessions_arg, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--seed", &seed_arg, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--plies", &plies_arg, &st)) {
            if (st != ZT_OK) goto fail;
        } else if (strcmp(argv[i], "--greedy") == 0) {
            greedy = true;
        } else if ((rc = zt_cli_positional("serve", argv[i], (const char **const[]){&game_name},
                                           1)) != 0) {
            goto done;
        }
    }
    if (!game_name || !model_path || (greedy && sims_arg) || (plies_arg && sims_arg)) {
        usage(stderr);
        rc = 2;
        goto done;
    }
    rc = 1; /* from here every early exit is an error */
    if (!zt_serve_http_available()) {
        /* Say so (http.h has the words) before loading anything. */
        rc = zt_cli_fail(zt_serve_http_start(NULL, host, 0, &http));
        goto done;
    }
    long port, max_sessions, max_sims = -1, v;
    if (!parse_int("--port", port_arg, 0, 65535, &port) ||
        !parse_int("--max-sessions", max_sessions_arg, 1, 65536, &max_sessions) ||
        (max_sims_arg && !parse_int("--max-sims", max_sims_arg, 0, 1000000, &max_sims)))
        goto done;
    uint64_t seed = (uint64_t)time(NULL);
    if (seed_arg) {
        char *end;
        unsigned long long s = strtoull(seed_arg, &end, 10);
        if (!*seed_arg || *end || seed_arg[0] == '-') {
            rc = zt_cli_error("serve: --seed must be a non-negative integer, not '%s'", seed_arg);
            goto done;
        }
        seed = s;
    }
    if (sims_arg) {
        if (!parse_int("--sims", sims_arg, 0, 1000000, &v)) goto done;
        zt_config_put(cfg, "search.sims", sims_arg);
    }

    zt_search_config sc;
    char run_config[4200];
    /* As in play: the agent's best move, not an exploring one. */
    bool run_greedy;
    if ((st = zt_run_open_player(model_path, game_name, cfg, false, &g, &net, &sc, run_config,
                                 sizeof run_config, &run_greedy)) != ZT_OK)
        goto fail;
    int plies;
    char what[160];
    if ((rc = zt_cli_greedy_play("serve", &greedy, run_greedy, plies_arg, &plies, what,
                                 sizeof what)) != 0)
        goto done;
    rc = 1;
    if (greedy) sc.num_simulations = 0; /* a new game's default: greedy */
    if ((st = zt_config_check_unused(cfg)) != ZT_OK) goto fail;
    sc.seed = seed;
    if (max_sims < 0) max_sims = sc.num_simulations > 4096 ? sc.num_simulations : 4096;
    if (max_sims < sc.num_simulations) {
        rc = zt_cli_error("serve: --max-sims %ld is below the default of %d simulations", max_sims,
                          sc.num_simulations);
        goto done;
    }
    if ((st = zt_run_evaluator_new(net, &ev)) != ZT_OK) goto fail;
    zt_serve_config c = {
        .game = g,
        .ev = ev,
        .search = sc,
        .greedy = greedy,
        .greedy_plies = plies,
        .max_sims = (int)max_sims,
        .max_sessions = (int)max_sessions,
        .idle_seconds = 30 * 60,
        .max_body = 4096,
        .seed = seed,
        .model = model_path,
    };
    if ((st = zt_serve_new(&c, &srv)) != ZT_OK) goto fail;

    /* SIGINT and SIGTERM are taken by sigwait below: blocked here, before the
     * listener's threads start, so that they inherit the mask. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    if ((st = zt_serve_http_start(srv, host, (int)port, &http)) != ZT_OK) goto fail;
    bool v6 = strchr(host, ':') != NULL;
    if (!greedy)
        snprintf(what, sizeof what, "%s",
                 sc.num_simulations == 0            ? "raw policy"
                 : sc.algorithm == ZT_SEARCH_GUMBEL ? "gumbel search"
                                                    : "puct search");
    printf("model %s; agent: %s (seed %llu)\n", model_path, what, (unsigned long long)seed);
    if (sc.num_simulations > 0) printf("%d simulations per move\n", sc.num_simulations);
    if (run_config[0]) printf("search settings of %s (flags override them)\n", run_config);
    printf("serving %s on http://%s%s%s:%d/ (Ctrl-C stops)\n", g->title, v6 ? "[" : "", host,
           v6 ? "]" : "", zt_serve_http_port(http));
    fflush(stdout);
    int sig = 0;
    sigwait(&stop, &sig);
    printf("stopped by %s\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    rc = 0;
    goto done;
fail:
    rc = zt_cli_fail(st);
done:
    zt_serve_http_stop(http);
    zt_serve_free(srv);
    zt_run_evaluator_free(&ev);
    zt_net_free(net);
    zt_game_free(g);
    zt_config_free(cfg);
    return rc;
}
