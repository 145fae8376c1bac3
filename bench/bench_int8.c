/* zeroth bench int8 --model M: how closely a trained net's int8 copy plays
 * like its bf16 one (issue 16's accuracy target). The weights are quantised
 * exactly as a publication does (train/int8_gate.h): calibrated on
 * positions of random play (or of --calibrate FILE), then held against the
 * fallback precision on each position set -- by default every solver set
 * of the game, whole -- and on the gate's own random-play positions: top-1
 * policy agreement over the legal moves (strict, and with the gate's ties),
 * and the mean absolute value error, beside the [int8] thresholds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/alloc.h"
#include "core/fileio.h"
#include "game/solver.h"
#include "train/int8_gate.h"
#include "train/run.h"

enum { MAX_SETS = 16 };

static void usage(FILE *f)
{
    fprintf(f,
            "usage: zeroth bench int8 --model M [--positions FILE]... [--calibrate FILE]\n"
            "                         [--limit N] [--threads T] [--seed S]\n"
            "  --model M      a weights file, checkpoint or run directory\n"
            "  --positions F  a position file to measure on (may repeat; default: every\n"
            "                 solver set of the model's game, found like the arena's)\n"
            "  --calibrate F  calibrate on this position file's first 128 positions\n"
            "                 (default: 128 positions of random play, seeded)\n"
            "  --limit N      only the first N positions of each file\n"
            "  --threads T    threads of both nets (default 1)\n"
            "Prints per set: top-1 policy agreement of int8 with bf16 (strict, and with\n"
            "ties of 0.02 counted as the publication gate counts them) and the mean\n"
            "absolute value error, against the gate's 0.99 and 0.02.\n");
}

/* Observations and legal masks of up to `limit` (> 0) positions of a
 * position file (all when limit <= 0). */
static zt_status read_positions(const zt_game *g, const char *path, int limit, int *n_out,
                                float **obs_out, uint8_t **legal_out)
{
    zt_solver *sv;
    ZT_TRY(zt_solver_new(g, &sv));
    zt_position_file pf;
    zt_status st = zt_position_file_open(path, &pf);
    if (st != ZT_OK) {
        zt_solver_free(sv);
        return st;
    }
    long total = zt_position_file_count(&pf, limit);
    size_t obs_size = (size_t)zt_game_obs_size(g);
    float *obs = zt_xmalloc((size_t)(total > 0 ? total : 1) * obs_size * sizeof(float));
    uint8_t *legal = zt_xmalloc((size_t)(total > 0 ? total : 1) * (size_t)g->num_actions);
    zt_position *pos = zt_xmalloc(sizeof *pos);
    int n = 0;
    while (st == ZT_OK && n < total) {
        bool got;
        st = zt_position_file_next(&pf, sv, pos, &got);
        if (st != ZT_OK || !got) break;
        g->observe(g, pos->state, obs + (size_t)n * obs_size);
        zt_game_legal_mask(g, pos->state, legal + (size_t)n * g->num_actions);
        n++;
    }
    if (st == ZT_OK && n == 0) st = zt_fail(ZT_ERR_INVALID, "%s: no positions", path);
    free(pos);
    zt_position_file_close(&pf);
    zt_solver_free(sv);
    if (st != ZT_OK) {
        free(obs), free(legal);
        return st;
    }
    *n_out = n, *obs_out = obs, *legal_out = legal;
    return ZT_OK;
}

/* Every tensor of the net, in zt_net_tensor_at order, as a publication
 * sends them. */
static float *flat_weights(zt_net *net)
{
    float *w = zt_xmalloc(zt_net_flat_size(net) * sizeof(float));
    zt_net_flat_get(net, w);
    return w;
}

static void print_result(const char *name, const zt_int8_gate_result *r,
                         const zt_int8_gate_config *gc)
{
    bool meets = r->agreement >= gc->agreement && r->value_mae <= gc->value_mae;
    printf("%-22s %5d positions  top-1 agreement %6.2f %% (strict %6.2f %%, %d ties)  "
           "value MAE %.4f  %s\n",
           name, r->positions, 100.0 * r->agreement,
           100.0 * (r->agreement * r->positions - r->ties) / r->positions, r->ties, r->value_mae,
           meets ? "meets the gate" : "BELOW the gate");
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

int zt_bench_int8(int argc, char **argv)
{
    const char *model = NULL, *calibrate = NULL, *files[MAX_SETS];
    int nfiles = 0;
    long limit = 0, threads = 1, seed = 1;
    zt_status st = ZT_OK;
    for (int i = 1; i < argc && st == ZT_OK; i++) {
        const char *v;
        if (zt_cli_is_help(argv[i])) {
            usage(stdout);
            return 0;
        }
        if (zt_cli_flag_value(argc, argv, &i, "--model", &model, &st) ||
            zt_cli_flag_value(argc, argv, &i, "--calibrate", &calibrate, &st)) {
            continue;
        } else if (zt_cli_flag_value(argc, argv, &i, "--positions", &v, &st)) {
            if (st == ZT_OK && nfiles == MAX_SETS)
                st = zt_fail(ZT_ERR_INVALID, "--positions: at most %d files", MAX_SETS);
            else if (st == ZT_OK)
                files[nfiles++] = v;
        } else if (zt_cli_flag_value(argc, argv, &i, "--limit", &v, &st) ||
                   zt_cli_flag_value(argc, argv, &i, "--threads", &v, &st) ||
                   zt_cli_flag_value(argc, argv, &i, "--seed", &v, &st)) {
            if (st != ZT_OK) break;
            const char *flag = argv[i - 1];
            char *end;
            long x = strtol(v, &end, 10);
            bool is_threads = strcmp(flag, "--threads") == 0;
            if (*end || end == v || x < (is_threads ? 1 : 0) || x > (is_threads ? 256 : 1L << 30))
                st = zt_fail(ZT_ERR_INVALID, "%s: expected a non-negative integer%s, got '%s'",
                             flag, is_threads ? " in 1..256" : "", v);
            else if (strcmp(flag, "--limit") == 0)
                limit = x;
            else if (is_threads)
                threads = x;
            else
                seed = x;
        } else {
            st = zt_fail(ZT_ERR_INVALID, "unexpected argument '%s' (see zeroth bench int8 --help)",
                         argv[i]);
        }
    }
    if (st == ZT_OK && !model) st = zt_fail(ZT_ERR_INVALID, "bench int8: --model M is required");
    if (st != ZT_OK) return zt_cli_fail(st);

    zt_game *g = NULL;
    zt_net *net = NULL;
    zt_int8_gate *q = NULL;
    float *weights = NULL, *cal_obs = NULL;
    uint8_t *cal_legal = NULL;
    int cal_n = 0;
    zt_int8_gate_config gc;
    zt_int8_gate_config_default(&gc);
    st = zt_run_open_model(model, "auto", ZT_PRECISION_FP32, (int)threads, &g, &net);
    if (st == ZT_OK)
        st = zt_int8_gate_new(g, zt_net_config_of(net), "auto", (int)threads, &gc, (uint64_t)seed,
                              &q);
    if (st == ZT_OK && calibrate)
        st = read_positions(g, calibrate, gc.calibration, &cal_n, &cal_obs, &cal_legal);
    char paths[MAX_SETS][4096];
    if (st == ZT_OK && nfiles == 0) {
        const zt_position_set *sets;
        int ns = zt_game_position_sets(g, &sets);
        for (int i = 0; i < ns && nfiles < MAX_SETS; i++)
            if (zt_data_find(NULL, sets[i].file, paths[nfiles], sizeof paths[nfiles])) {
                files[nfiles] = paths[nfiles];
                nfiles++;
            } else {
                fprintf(stderr, "bench int8: %s not found (set ZT_DATA_DIR); skipped\n",
                        sets[i].file);
            }
    }
    if (st == ZT_OK) {
        weights = flat_weights(net);
        printf("bench int8: %s, int8 against %s, calibrated on %d %s\n", model,
               zt_precision_name(zt_int8_gate_fallback(q)), calibrate ? cal_n : gc.calibration,
               calibrate ? "positions of the --calibrate file" : "positions of random play");
    }
    for (int f = 0; f < nfiles && st == ZT_OK; f++) {
        int n;
        float *obs;
        uint8_t *legal;
        st = read_positions(g, files[f], (int)limit, &n, &obs, &legal);
        if (st != ZT_OK) break;
        zt_int8_gate_result r;
        st = zt_int8_gate_measure(q, weights, cal_n, cal_obs, n, obs, legal, &r);
        if (st == ZT_OK) print_result(base_name(files[f]), &r, &gc);
        free(obs), free(legal);
    }
    if (st == ZT_OK) {
        /* The publication gate itself: its random-play positions. */
        float *tail = zt_xmalloc(zt_int8_gate_tail_size(q) * sizeof(float));
        zt_int8_gate_result r;
        st = zt_int8_gate_run(q, weights, cal_n, cal_obs, tail, &r);
        if (st == ZT_OK) print_result("random play (the gate)", &r, &gc);
        free(tail);
    }
    free(weights), free(cal_obs), free(cal_legal);
    zt_int8_gate_free(q);
    zt_net_free(net);
    zt_game_free(g);
    if (st != ZT_OK) return zt_cli_fail(st);
    return 0;
}
