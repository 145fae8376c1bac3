/* zeroth bench games: random legal playouts with reset, through the game
 * interface, for every game: steps/s on one core and on all cores. A step is
 * one player action (legal-action generation + random choice + apply); dice
 * rolls and 2048's spawns are chance steps, counted apart. Beside them, a plain Connect Four
 * bitboard loop with no interface (inlined, no indirection) is the baseline
 * for the cost of the interface. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/rng.h"
#include "core/thread.h"
#include "core/timer.h"

typedef struct bench_job {
    const zt_game *game; /* NULL: the baseline loop */
    double seconds;
    uint64_t seed;
    uint64_t steps[64], chance[64], games[64];
} bench_job;

/* ---- baseline: Connect Four on two 64-bit boards, 7 bits per column ---- */

#define C4_BOTTOM 0x0040810204081ULL /* bit 0 of every column */
#define C4_TOP (C4_BOTTOM << 5)

static inline int c4_four(uint64_t b)
{
    uint64_t m;
    m = b & (b >> 7);
    if (m & (m >> 14)) return 1; /* horizontal */
    m = b & (b >> 6);
    if (m & (m >> 12)) return 1; /* diagonal \ */
    m = b & (b >> 8);
    if (m & (m >> 16)) return 1; /* diagonal / */
    m = b & (b >> 1);
    if (m & (m >> 2)) return 1; /* vertical */
    return 0;
}

static void baseline_worker(bench_job *job, int ith)
{
    zt_rng rng;
    zt_rng_seed(&rng, job->seed, (uint64_t)ith);
    uint64_t steps = 0, games = 0;
    double deadline = zt_now_s() + job->seconds;
    for (;;) {
        uint64_t to_move = 0, mask = 0; /* stones of the side to move; all stones */
        for (int ply = 0; ply < 42; ply++) {
            uint8_t cols[7];
            int n = 0;
            for (int c = 0; c < 7; c++)
                if (!(mask & (C4_TOP & (0x7fULL << (7 * c))))) cols[n++] = (uint8_t)c;
            int c = cols[zt_rng_below(&rng, (uint32_t)n)];
            to_move ^= mask; /* now the opponent's stones */
            mask |= mask + (1ULL << (7 * c));
            steps++;
            if (c4_four(to_move ^ mask)) break; /* the mover's stones */
        }
        games++;
        if ((games & 255) == 0 && zt_now_s() > deadline) break;
    }
    job->steps[ith] = steps;
    job->games[ith] = games;
}

static void game_worker(bench_job *job, int ith)
{
    const zt_game *g = job->game;
    zt_rng rng;
    zt_rng_seed(&rng, job->seed, (uint64_t)ith);
    uint8_t s[ZT_MAX_STATE_BYTES];
    uint16_t actions[ZT_MAX_ACTIONS];
    int outcomes[ZT_MAX_CHANCE_OUTCOMES];
    float probs[ZT_MAX_CHANCE_OUTCOMES];
    uint64_t steps = 0, chance = 0, games = 0;
    double deadline = zt_now_s() + job->seconds;
    for (;;) {
        g->reset(g, s);
        for (;;) {
            int p = g->current_player(g, s);
            if (p == ZT_TERMINAL) break;
            if (p == ZT_CHANCE) {
                int n = g->chance_outcomes(g, s, outcomes, probs);
                g->apply(g, s, outcomes[zt_rng_categorical(&rng, probs, n)]);
                chance++;
                continue;
            }
            int n = g->legal(g, s, actions);
            g->apply(g, s, actions[zt_rng_below(&rng, (uint32_t)n)]);
            steps++;
        }
        games++;
        if ((games & 63) == 0 && zt_now_s() > deadline) break;
    }
    job->steps[ith] = steps;
    job->chance[ith] = chance;
    job->games[ith] = games;
}

static void worker(void *arg, int ith, int nth)
{
    bench_job *job = arg;
    if (job->game)
        game_worker(job, ith);
    else
        baseline_worker(job, ith);
}

/* Runs the job on `threads` workers; returns total steps/s. */
static double run(bench_job *job, zt_pool *pool, double *games_per_s, double *chance_per_s)
{
    memset(job->steps, 0, sizeof job->steps);
    memset(job->chance, 0, sizeof job->chance);
    memset(job->games, 0, sizeof job->games);
    double t0 = zt_now_s();
    if (pool)
        zt_pool_run(pool, worker, job);
    else
        worker(job, 0, 1);
    double dt = zt_now_s() - t0;
    uint64_t steps = 0, chance = 0, games = 0;
    for (int i = 0; i < 64; i++) {
        steps += job->steps[i];
        chance += job->chance[i];
        games += job->games[i];
    }
    *games_per_s = (double)games / dt;
    *chance_per_s = (double)chance / dt;
    return (double)steps / dt;
}

typedef struct bench_game {
    const char *name;
    const char *settings[3];
} bench_game;

static const bench_game bench_games[] = {
    {"tictactoe", {NULL}},
    {"connect4", {NULL}},
    {"sim", {"vertices=6", "k=3", NULL}},
    {"sim", {"vertices=14", "k=4", NULL}},
    {"backgammon", {NULL}},
    {"2048", {NULL}},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: zeroth bench games [--seconds S] [--threads N] [--repeats R]\n\n"
               "Random legal playouts with reset for every game: steps/s (player actions)\n"
               "on one core and on N cores (default: all), median of R runs (default 3).\n"
               "The first row is a plain Connect Four bitboard loop, the baseline for the\n"
               "cost of the game interface; 'vs base' is each game's 1-core rate over it.\n");
}

static double median_run(bench_job *job, zt_pool *pool, int repeats, double *gps, double *cps)
{
    double rates[16], g[16], c[16];
    for (int r = 0; r < repeats; r++) rates[r] = run(job, pool, &g[r], &c[r]);
    /* the games/s and chance/s reported are those of the median run */
    int idx[16];
    for (int r = 0; r < repeats; r++) idx[r] = r;
    for (int a = 0; a < repeats; a++)
        for (int b = a + 1; b < repeats; b++)
            if (rates[idx[b]] < rates[idx[a]]) {
                int t = idx[a];
                idx[a] = idx[b];
                idx[b] = t;
            }
    int m = idx[repeats / 2];
    *gps = g[m];
    *cps = c[m];
    return rates[m];
}

int zt_bench_games(int argc, char **argv)
{
    double seconds = 1.0;
    int threads = zt_cpu_count(), repeats = 3;
    for (int i = 1; i < argc; i++) {
        const char *v;
        zt_status st = ZT_OK;
        if (zt_cli_is_help(argv[i])) {
            usage(stdout);
            return 0;
        }
        if (zt_cli_flag_value(argc, argv, &i, "--seconds", &v, &st)) {
            if (st != ZT_OK) return zt_cli_fail(st);
            seconds = atof(v);
            if (!(seconds > 0 && seconds <= 600))
                return zt_cli_error("bench games: --seconds must be in (0, 600], got '%s'", v);
        } else if (zt_cli_flag_value(argc, argv, &i, "--threads", &v, &st)) {
            if (st != ZT_OK) return zt_cli_fail(st);
            threads = atoi(v);
            if (threads < 1 || threads > 64)
                return zt_cli_error("bench games: --threads must be in [1, 64], got '%s'", v);
        } else if (zt_cli_flag_value(argc, argv, &i, "--repeats", &v, &st)) {
            if (st != ZT_OK) return zt_cli_fail(st);
            repeats = atoi(v);
            if (repeats < 1 || repeats > 15)
                return zt_cli_error("bench games: --repeats must be in [1, 15], got '%s'", v);
        } else {
            return zt_cli_error("bench games: unknown argument '%s'", argv[i]);
        }
    }
    zt_pool *pool = zt_pool_new(threads);
    if (!pool) return zt_cli_error("bench games: cannot start %d threads", threads);

    printf("random playouts with reset, %.2f s per run, median of %d; %d threads on %d cpus\n",
           seconds, repeats, threads, zt_cpu_count());
    printf("%-24s %14s %8s %14s %14s %10s %12s\n", "game", "steps/s 1core", "vs base",
           "steps/s all", "games/s 1core", "plies/game", "chance/s 1c");
    fflush(stdout);
    /* On a terminal, a line saying which row is being measured. */
    int nrows = 1 + (int)(sizeof bench_games / sizeof bench_games[0]);
    zt_progress_meter meter;
    zt_progress_meter_init(&meter, "bench games", "rows", nrows, NULL, NULL);
    zt_progress_meter_update(&meter, 0, "measuring the baseline");
    bench_job job = {.game = NULL, .seconds = seconds, .seed = 12345};
    double gps, cps;
    double base_gps;
    double base1 = median_run(&job, NULL, repeats, &base_gps, &cps);
    double baseN = median_run(&job, pool, repeats, &gps, &cps);
    zt_progress_meter_pause(&meter);
    printf("%-24s %14.0f %8s %14.0f %14.0f %10.1f %12s\n", "baseline c4 bitboard", base1, "1.00",
           baseN, base_gps, base1 / base_gps, "-");
    fflush(stdout);

    int rc = 0;
    for (size_t i = 0; i < sizeof bench_games / sizeof bench_games[0]; i++) {
        const bench_game *bg = &bench_games[i];
        zt_config *cfg = zt_config_new();
        for (int k = 0; bg->settings[k]; k++) zt_config_set(cfg, bg->settings[k]);
        zt_game *g;
        zt_status st = zt_game_new(bg->name, cfg, &g);
        zt_config_free(cfg);
        if (st != ZT_OK) {
            rc = zt_cli_fail(st);
            break;
        }
        job.game = g;
        zt_progress_meter_update(&meter, 1 + (int64_t)i, "measuring %s", g->title);
        double g1, c1, gN, cN;
        double r1 = median_run(&job, NULL, repeats, &g1, &c1);
        double rN = median_run(&job, pool, repeats, &gN, &cN);
        char ratio[16], chance[24];
        snprintf(ratio, sizeof ratio, "%.2f", r1 / base1);
        if (g->max_chance_outcomes > 0)
            snprintf(chance, sizeof chance, "%.0f", c1);
        else
            snprintf(chance, sizeof chance, "-");
        zt_progress_meter_pause(&meter);
        printf("%-24s %14.0f %8s %14.0f %14.0f %10.1f %12s\n", g->title, r1, ratio, rN, g1, r1 / g1,
               chance);
        fflush(stdout);
        zt_game_free(g);
    }
    zt_progress_meter_end(&meter);
    zt_pool_free(pool);
    return rc;
}
