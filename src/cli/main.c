/* zeroth: one binary, one file per subcommand. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "zeroth/zeroth.h"

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"games", zt_cmd_games, "list the games and their settings"},
    {"perft", zt_cmd_perft, "count action sequences of a given depth (rules check)"},
    {"solve", zt_cmd_solve, "exact values of positions from a file"},
    {"positions", zt_cmd_positions, "make solver test sets from play (connect4)"},
    {"moves", zt_cmd_moves, "backgammon: the legal plays for a position and roll"},
    {"train", zt_cmd_train, "train an agent by self-play"},
    {"eval", zt_cmd_eval, "strength of a model against an opponent or a position set"},
    {"play", zt_cmd_play, "play against a model in the terminal"},
    {"serve", zt_cmd_serve, "play against a model in a browser (HTTP server)"},
    {"report", zt_cmd_report, "write RUN/report.html from a run's metrics"},
    {"bench", zt_cmd_bench, "benchmarks (games, search, nn)"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: zeroth COMMAND [ARGS]   (zeroth COMMAND --help for its flags)\n\n"
               "Trains and measures game-playing agents (AlphaZero family).\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nglobal flags: --help, --version\n");
}

int main(int argc, char **argv)
{
    /* oneDNN marks every primitive execution as an ITT task for VTune unless
     * the level is 0 (libdnnl's share of a batch-8 call in perf: 1.6 % ->
     * 1.2 %). It reads only the environment, at its first execution, so the
     * program sets it here, before any; a user's own setting stands. The
     * library leaves the environment alone (docs/api.md). */
    if (!getenv("ONEDNN_ITT_TASK_LEVEL") && !getenv("DNNL_ITT_TASK_LEVEL"))
        setenv("DNNL_ITT_TASK_LEVEL", "0", 0);
    zt_cli_save_args(argv);
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (zt_cli_is_help(argv[1])) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("zeroth %s (backends: %s)\n", zeroth_version(), zeroth_backends());
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0) return commands[i].run(argc - 1, argv + 1);
    return zt_cli_error("unknown command '%s' (see zeroth --help)", argv[1]);
}
