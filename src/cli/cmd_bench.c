/* zeroth bench WHAT: the benchmarks (their code lives under bench/). */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_dist.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: zeroth bench WHAT [FLAGS]   (zeroth bench WHAT --help)\n\n"
               "  games    random playouts per game: steps/s per core and on all cores\n"
               "  search   tree cost per simulation with a free evaluator\n"
               "  nn       network inference and training throughput\n"
               "  devices  inference on the CPU against the GPU by batch size, the crossover\n"
               "  muzero   MuZero's initial and recurrent inference and unrolled train step\n"
               "  fit      a fresh net trained on a replay checkpoint alone: its losses\n"
               "  model    a MuZero net's value, policy and one step of its model against\n"
               "           the rules' on solved positions, and its self-play's wins at once\n"
               "  int8     a trained net's int8 copy against bf16: top-1 policy agreement and\n"
               "           value error on the game's position sets\n"
               "  selfplay self-play positions/s against the network alone; --ablate: each\n"
               "           optimisation turned off in turn\n"
               "  dist     under mpirun: the learner rank's trajectory ingest and weight\n"
               "           broadcast (docs/distributed.md)\n");
}

int zt_cmd_bench(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (zt_cli_is_help(argv[1])) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "games") == 0) return zt_bench_games(argc - 1, argv + 1);
    if (strcmp(argv[1], "search") == 0) return zt_bench_search(argc - 1, argv + 1);
    if (strcmp(argv[1], "nn") == 0) return zt_bench_nn(argc - 1, argv + 1);
    if (strcmp(argv[1], "devices") == 0) return zt_bench_devices(argc - 1, argv + 1);
    if (strcmp(argv[1], "muzero") == 0) return zt_bench_muzero(argc - 1, argv + 1);
    if (strcmp(argv[1], "int8") == 0) return zt_bench_int8(argc - 1, argv + 1);
    if (strcmp(argv[1], "fit") == 0) return zt_bench_fit(argc - 1, argv + 1);
    if (strcmp(argv[1], "model") == 0) return zt_bench_model(argc - 1, argv + 1);
    if (strcmp(argv[1], "selfplay") == 0) return zt_bench_selfplay(argc - 1, argv + 1);
    if (strcmp(argv[1], "dist") == 0) return zt_bench_dist(argc - 1, argv + 1);
    return zt_cli_error("bench: unknown benchmark '%s' (games, search, nn, devices, muzero, fit, "
                        "model, int8, selfplay, dist)",
                        argv[1]);
}
