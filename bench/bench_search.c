/* Search cost with a free evaluator (uniform outputs from game states, no
 * observation, no network): nanoseconds per simulation of the tree plus the
 * AlphaZero model's game stepping, for G trees in lockstep over the first
 * plies of self-play-like games. One line per (game, algorithm, G), then
 * the NN cache hit rate of whole self-play-like games. Run as
 * `zeroth bench search`. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/az_model.h"
#include "agent/evaluators.h"
#include "cli/cli.h"
#include "core/rng.h"
#include "core/timer.h"
#include "search/nncache.h"
#include "search/search.h"
#include "search/settings.h"

enum { PLIES = 8 };

/* Plays chance outcomes by their probabilities, telling the tree. */
static void roll_dice(const zt_game *g, zt_search *s, int k, void *st, zt_rng *rng)
{
    while (g->current_player(g, st) == ZT_CHANCE) {
        int outcomes[ZT_MAX_CHANCE_OUTCOMES];
        float probs[ZT_MAX_CHANCE_OUTCOMES];
        int n = g->chance_outcomes(g, st, outcomes, probs);
        int o = outcomes[zt_rng_categorical(rng, probs, n)];
        g->apply(g, st, o);
        if (s) zt_search_played(s, k, o);
    }
}

/* One move in each of G lockstep games (states st, ZT_MAX_STATE_BYTES
 * apart): chance outcomes first when `dice` is given, then one batched
 * search of every game still running, and the chosen moves played. False
 * when every game is over. */
static bool lockstep_move(const zt_game *g, zt_search *s, uint8_t *st, int G, float temperature,
                          zt_rng *dice)
{
    int begun = 0;
    for (int k = 0; k < G; k++) {
        void *sk = st + (size_t)k * ZT_MAX_STATE_BYTES;
        if (dice) roll_dice(g, s, k, sk, dice);
        if (g->current_player(g, sk) < 0) continue;
        zt_search_begin(s, k, sk);
        begun++;
    }
    if (!begun) return false;
    zt_search_run(s);
    for (int k = 0; k < G; k++) {
        void *sk = st + (size_t)k * ZT_MAX_STATE_BYTES;
        if (g->current_player(g, sk) < 0) continue;
        int a = zt_search_choose(s, k, temperature);
        g->apply(g, sk, a);
        zt_search_played(s, k, a);
    }
    return true;
}

/* On a terminal, a line saying which row is being measured; rows are
 * printed (row_printf) with it erased. */
static zt_progress_meter meter;

static __attribute__((format(printf, 1, 2))) void row_printf(const char *fmt, ...)
{
    zt_progress_meter_pause(&meter);
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
}

static void bench(const char *game_name, zt_search_algorithm alg, int G, int sims)
{
    zt_game *g;
    if (zt_game_new(game_name, NULL, &g) != ZT_OK) {
        row_printf("%-10s skipped: %s\n", game_name, zt_error_message());
        return;
    }
    zt_evaluator ev = zt_evaluator_uniform(g);
    zt_model *m;
    zt_search *s;
    zt_search_config cfg;
    zt_search_config_default(&cfg, alg);
    cfg.num_simulations = sims;
    /* Sized for one move's search, not for reuse (which PUCT does here, a
     * kept subtree filling what is left): the benchmark measures the cost
     * of a simulation, and trees sized for reuse at G = 1024 would span
     * gigabytes. */
    zt_search_capacity(g, sims, false, 0, &cfg.node_capacity, &cfg.edge_capacity);
    if (zt_az_model_new(g, &ev, G, NULL, &m) != ZT_OK || zt_search_new(&cfg, m, G, &s) != ZT_OK) {
        row_printf("%-10s failed: %s\n", game_name, zt_error_message());
        zt_game_free(g);
        return;
    }
    uint8_t *st = malloc((size_t)G * ZT_MAX_STATE_BYTES);
    zt_rng rng;
    zt_rng_seed(&rng, 7, 0);
    for (int k = 0; k < G; k++) {
        g->reset(g, st + (size_t)k * ZT_MAX_STATE_BYTES);
        /* spread the games: a few random opening plies each */
        roll_dice(g, NULL, k, st + (size_t)k * ZT_MAX_STATE_BYTES, &rng);
        for (int p = 0; p < 2 && g->current_player(g, st + (size_t)k * ZT_MAX_STATE_BYTES) >= 0;
             p++) {
            uint16_t acts[ZT_MAX_ACTIONS];
            void *sk = st + (size_t)k * ZT_MAX_STATE_BYTES;
            int n = g->legal(g, sk, acts);
            g->apply(g, sk, acts[zt_rng_below(&rng, (uint32_t)n)]);
        }
    }
    uint64_t t0 = zt_now_ns();
    for (int ply = 0; ply < PLIES; ply++)
        if (!lockstep_move(g, s, st, G, 1.0f, &rng)) break;
    uint64_t ns = zt_now_ns() - t0;
    zt_search_stats stats = zt_search_get_stats(s);
    row_printf("%-10s %-6s G=%-5d sims=%-4d %8.1f ns/simulation  (%llu simulations, %llu model calls, "
           "%.1f KiB per tree)\n",
           game_name, alg == ZT_SEARCH_GUMBEL ? "gumbel" : "puct", G, sims,
           (double)ns / (double)stats.simulations, (unsigned long long)stats.simulations,
           (unsigned long long)stats.model_calls, (double)zt_search_tree_bytes(s) / 1024.0);
    free(st);
    zt_search_free(s);
    zt_model_free(m);
    zt_game_free(g);
}

/* NN cache hit rate of self-play-like searches: G games from the start
 * position (the first move sampled from the visits, so the games differ),
 * PUCT with tree reuse, one cache shared by the G trees as in an actor.
 * With the uniform evaluator every position is "evaluated", so the rate is
 * the share of model positions that were transpositions (within a tree,
 * across trees or across moves). */
static void cache_rate(const char *game_name, int G, int sims)
{
    zt_game *g;
    if (zt_game_new(game_name, NULL, &g) != ZT_OK) {
        row_printf("%-10s skipped: %s\n", game_name, zt_error_message());
        return;
    }
    zt_evaluator ev = zt_evaluator_uniform(g);
    zt_nncache *cache = zt_nncache_new((size_t)1 << 16, g->num_actions);
    zt_model *m = NULL;
    zt_search *s = NULL;
    zt_search_config cfg;
    zt_search_config_default(&cfg, ZT_SEARCH_PUCT);
    cfg.num_simulations = sims;
    cfg.node_capacity = cfg.edge_capacity = 0; /* sized for reuse, as an actor's */
    zt_search_config_size(&cfg, g, 0);
    if (!cache || zt_az_model_new(g, &ev, G, cache, &m) != ZT_OK || zt_search_new(&cfg, m, G, &s) != ZT_OK) {
        row_printf("%-10s failed: %s\n", game_name, zt_error_message());
        zt_search_free(s);
        zt_model_free(m);
        zt_nncache_free(cache);
        zt_game_free(g);
        return;
    }
    uint8_t *st = malloc((size_t)G * ZT_MAX_STATE_BYTES);
    for (int k = 0; k < G; k++) g->reset(g, st + (size_t)k * ZT_MAX_STATE_BYTES);
    for (int ply = 0; ply < g->max_game_length; ply++)
        if (!lockstep_move(g, s, st, G, ply < 4 ? 1.0f : 0.0f, NULL)) break;
    zt_nncache_stats cs = zt_nncache_get_stats(cache);
    row_printf("%-10s puct   G=%-5d sims=%-4d NN cache hit rate %5.1f%%  (%llu lookups, %zu entries, "
           "whole games, first 4 plies sampled)\n",
           game_name, G, sims, 100.0 * (double)cs.hits / (double)(cs.lookups ? cs.lookups : 1),
           (unsigned long long)cs.lookups, cs.entries);
    free(st);
    zt_search_free(s);
    zt_model_free(m);
    zt_nncache_free(cache);
    zt_game_free(g);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: zeroth bench search [--sims N] [--game NAME] [--trees G]\n\n"
               "Tree cost with a free evaluator (uniform outputs, no network): ns per\n"
               "simulation for tic-tac-toe, Connect Four and backgammon, PUCT and Gumbel,\n"
               "G = 1, 64, 1024 trees in lockstep (default sims 200); then the NN cache\n"
               "hit rate of self-play-like games of tic-tac-toe and Connect Four (G = 64).\n");
}

int zt_bench_search(int argc, char **argv)
{
    int sims = 200, only_g = 0;
    const char *only_game = NULL;
    for (int i = 1; i < argc; i++) {
        const char *v;
        zt_status st = ZT_OK;
        if (zt_cli_is_help(argv[i])) {
            usage(stdout);
            return 0;
        }
        if (zt_cli_flag_value(argc, argv, &i, "--sims", &v, &st)) {
            if (st != ZT_OK) return zt_cli_fail(st);
            sims = atoi(v);
            if (sims < 2 || sims > 100000)
                return zt_cli_error("bench search: --sims must be in [2, 100000], got '%s'", v);
        } else if (zt_cli_flag_value(argc, argv, &i, "--game", &only_game, &st)) {
            if (st != ZT_OK) return zt_cli_fail(st);
        } else if (zt_cli_flag_value(argc, argv, &i, "--trees", &v, &st)) {
            if (st != ZT_OK) return zt_cli_fail(st);
            only_g = atoi(v);
            if (only_g < 1 || only_g > 65536)
                return zt_cli_error("bench search: --trees must be in [1, 65536], got '%s'", v);
        } else {
            return zt_cli_error("bench search: unknown argument '%s'", argv[i]);
        }
    }
    const char *games[] = {"tictactoe", "connect4", "backgammon"};
    int Gs[] = {1, 64, 1024};
    /* Two passes: the first counts the rows for the progress line. */
    int nrows = 0, row = 0;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) zt_progress_meter_init(&meter, "bench search", "rows", nrows, NULL, NULL);
        for (int gi = 0; gi < 3; gi++)
            for (int alg = 0; alg < 2; alg++)
                for (int k = 0; k < 3; k++) {
                    if (only_game && strcmp(only_game, games[gi]) != 0) continue;
                    if (only_g && only_g != Gs[k]) continue;
                    int G = only_g ? only_g : Gs[k];
                    if (pass == 0) {
                        nrows++;
                        continue;
                    }
                    zt_progress_meter_update(&meter, row++, "measuring %s %s G=%d", games[gi],
                                             alg ? "gumbel" : "puct", G);
                    bench(games[gi], alg ? ZT_SEARCH_GUMBEL : ZT_SEARCH_PUCT, G, sims);
                }
        for (int gi = 0; gi < 2; gi++) {
            if (only_game && strcmp(only_game, games[gi]) != 0) continue;
            if (pass == 0) {
                nrows++;
                continue;
            }
            zt_progress_meter_update(&meter, row++, "measuring the NN cache hit rate in %s",
                                     games[gi]);
            cache_rate(games[gi], only_g ? only_g : 64, sims);
        }
    }
    zt_progress_meter_end(&meter);
    return 0;
}
