/* zeroth perft GAME DEPTH: the number of legal action sequences of exactly
 * DEPTH plies from the start (sequences that end the game earlier are not
 * counted) — the standard check of a move generator. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/alloc.h"
#include "core/timer.h"

static uint64_t perft(const zt_game *g, const uint8_t *s, int depth)
{
    uint16_t actions[ZT_MAX_ACTIONS];
    if (g->current_player(g, s) == ZT_TERMINAL) return 0;
    int n = g->legal(g, s, actions);
    if (depth == 1) return (uint64_t)n;
    uint64_t total = 0;
    uint8_t child[ZT_MAX_STATE_BYTES];
    for (int i = 0; i < n; i++) {
        memcpy(child, s, g->state_size);
        g->apply(g, child, actions[i]);
        total += perft(g, child, depth - 1);
    }
    return total;
}

/* The same count, on a terminal with a progress line: the tree is cut into
 * the subtrees below ply 2, counted one after another, so the line can say
 * how many are done, the count so far and an ETA (subtrees differ in size,
 * so the ETA is rough). */
static uint64_t perft_shown(const zt_game *g, const uint8_t *s, int depth)
{
    if (depth < 3 || g->current_player(g, s) == ZT_TERMINAL) return perft(g, s, depth);
    uint16_t actions[ZT_MAX_ACTIONS], replies[ZT_MAX_ACTIONS];
    int n = g->legal(g, s, actions);
    size_t stride = g->state_size, cap = 0, count = 0;
    uint8_t *frontier = NULL, child[ZT_MAX_STATE_BYTES];
    for (int i = 0; i < n; i++) {
        memcpy(child, s, stride);
        g->apply(g, child, actions[i]);
        if (g->current_player(g, child) == ZT_TERMINAL) continue; /* no sequence of `depth` plies */
        int k = g->legal(g, child, replies);
        if (count + (size_t)k > cap) {
            cap = 2 * cap + (size_t)k;
            frontier = zt_xrealloc(frontier, cap * stride);
        }
        for (int j = 0; j < k; j++) {
            uint8_t *gc = frontier + count++ * stride;
            memcpy(gc, child, stride);
            g->apply(g, gc, replies[j]);
        }
    }
    char label[32], num[32], rate[32];
    snprintf(label, sizeof label, "perft %d", depth);
    zt_progress_meter meter;
    zt_progress_meter_init(&meter, label, "subtrees", (int64_t)count, NULL, NULL);
    double t0 = zt_now_s();
    uint64_t total = 0;
    for (size_t i = 0; i < count; i++) {
        total += perft(g, frontier + i * stride, depth - 2);
        double dt = zt_now_s() - t0;
        zt_progress_format_count((double)total, num, sizeof num);
        zt_progress_format_count(dt > 0 ? (double)total / dt : NAN, rate, sizeof rate);
        zt_progress_meter_update(&meter, (int64_t)i + 1, "count %s so far, %s sequences/s", num,
                                 rate);
    }
    zt_progress_meter_end(&meter);
    free(frontier);
    return total;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: zeroth perft GAME DEPTH [--set key=value ...] [--position TEXT]\n\n"
               "Counts the legal action sequences of exactly DEPTH plies (deterministic games).\n"
               "  --set key=value   game setting (sim: vertices, k, variant)\n"
               "  --position TEXT   start from this position (the game's notation)\n"
               "Prints one line per depth 1..DEPTH with the time; the count is the last line.\n");
}

int zt_cmd_perft(int argc, char **argv)
{
    zt_config *cfg = zt_config_new();
    const char *game_name = NULL, *depth_arg = NULL, *position = NULL;
    zt_status st = ZT_OK;
    int rc = 1;
    zt_game *g = NULL;
    for (int i = 1; i < argc; i++) {
        if (zt_cli_is_help(argv[i])) {
            usage(stdout);
            rc = 0;
            goto done;
        }
        if (zt_cli_config_arg(argc, argv, &i, cfg, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--position", &position, &st)) {
            if (st != ZT_OK) goto fail;
        } else if ((rc = zt_cli_positional("perft", argv[i], (const char **const[]){&game_name, &depth_arg},
                                            2)) != 0) {
            goto done;
        }
    }
    if (!game_name || !depth_arg) {
        usage(stderr);
        rc = 2;
        goto done;
    }
    char *end;
    long depth = strtol(depth_arg, &end, 10);
    if (*end != '\0' || depth < 1 || depth > 64) {
        rc = zt_cli_error("perft: DEPTH must be an integer in [1, 64], got '%s'", depth_arg);
        goto done;
    }
    if ((st = zt_cli_game(game_name, cfg, &g)) != ZT_OK) goto fail;
    if (g->max_chance_outcomes > 0) {
        rc = zt_cli_error("perft: %s has chance nodes; perft counts deterministic games only",
                          g->title);
        goto done;
    }
    uint8_t s[ZT_MAX_STATE_BYTES];
    g->reset(g, s);
    if (position && (st = g->from_text(g, position, s)) != ZT_OK) goto fail;
    for (int d = 1; d <= depth; d++) {
        double t0 = zt_now_s();
        uint64_t n = zt_progress_enabled() ? perft_shown(g, s, d) : perft(g, s, d);
        double dt = zt_now_s() - t0;
        if (d < depth)
            printf("depth %2d  %20" PRIu64 "  %8.3f s\n", d, n, dt);
        else
            printf("%" PRIu64 "\n", n);
        fflush(stdout);
    }
    rc = 0;
    goto done;
fail:
    rc = zt_cli_fail(st);
done:
    zt_game_free(g);
    zt_config_free(cfg);
    return rc;
}
