/* zeroth bench nn: network inference and training throughput on one backend
 * (default the oneDNN CPU one): forward milliseconds and inferences per
 * second per batch size for the Connect Four resnets (64 channels x 5 blocks,
 * 128 x 10) and the backgammon MLP, in fp32, bf16 and int8, on one thread and
 * on all; GFLOP/s counts the multiply-adds of convolutions and dense layers
 * (2 FLOP each; taps falling on a conv's zero padding are not counted, as
 * oneDNN skips them; for int8 these are integer operations) against the
 * peak of one core measured by a loop of AVX-512 fp32 FMAs, bf16 dot
 * products (or the FMAs where those are faster: the Winograd kernel then
 * runs bf16 nets' products on them) or u8 x s8 dot products (VPDPBUSD),
 * times the threads. int8 nets are calibrated on the benchmark's inputs
 * first. Then training samples per second at batch 256 on all threads (fp32
 * and bf16). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/fileio.h"
#include "core/rng.h"
#include "core/thread.h"
#include "core/timer.h"
#include "nn/backend.h"
#include "nn/device.h"
#include "nn/nn.h"
#include "nn/peak.h"
#include "nn/safetensors.h"

/* --json: one JSON object per measurement instead of table rows (read by
 * bench/torch_compare.py). */
static bool json_out;
/* On a terminal, a line saying which row is being measured (rows_done of
 * the meter's total); rows are printed with it erased. */
static zt_progress_meter meter;
static int rows_done;

typedef struct bench_net {
    const char *name;
    const char *game;
    int channels, blocks; /* 0: the game's default net */
} bench_net;

static const bench_net bench_nets[] = {
    {"c4-64x5", "connect4", 64, 5},
    {"c4-128x10", "connect4", 128, 10},
    {"bg-mlp", "backgammon", 0, 0},
};

static const int default_batches[] = {1, 8, 32, 64, 256, 1024, 4096};

static void usage(FILE *f)
{
    fprintf(f, "usage: zeroth bench nn [--backend NAME] [--seconds S] [--threads N]\n"
               "                       [--precision fp32|bf16|int8|both|all] [--net NAME]\n"
               "                       [--batch B] [--train-batch B]\n"
               "                       [--no-train] [--json] [--export DIR]\n"
               "  --net may repeat (c4-64x5, c4-128x10, bg-mlp; default all), as may --batch\n"
               "  (default 1 8 32 64 256 1024 4096). --threads is 'all threads' (default: every\n"
               "  cpu). %%peak: against one core's peak times the threads (bf16: the faster\n"
               "  of its dot products and fp32 FMAs, which the Winograd kernel may use).\n"
               "  --train-batch: the train step's batch (default 256).\n"
               "  --json: one JSON object per measurement. --export DIR: write each net's\n"
               "  weights and a reference input/output pair (for bench/torch_compare.py).\n");
}

/* Taps of a k-wide kernel (same padding) that fall inside n positions. */
static double valid_taps(int n, int k)
{
    double taps = 0;
    for (int o = 0; o < n; o++)
        for (int t = 0; t < k; t++) {
            int i = o + t - k / 2;
            taps += i >= 0 && i < n;
        }
    return taps;
}

/* Multiply-add FLOPs of one sample through the net's convs and dense layers. */
static double graph_flops(const zt_net_config *cfg)
{
    zt_nn_graph g;
    zt_nn_graph_build(&g, cfg);
    double flops = 0;
    for (int i = 0; i < g.nops; i++) {
        const zt_nn_op *op = &g.ops[i];
        zt_nn_shape in = g.tensors[op->in[0]], out = g.tensors[op->out];
        if (op->kind == ZT_OP_CONV)
            flops += 2.0 * valid_taps(in.h, op->k) * valid_taps(in.w, op->k) * out.c * in.c;
        else if (op->kind == ZT_OP_DENSE)
            flops += 2.0 * (double)zt_nn_shape_size(in) * out.c;
    }
    zt_nn_graph_free(&g);
    return flops;
}

/* The best of several short runs: other processes sharing the core only
 * ever lower a run's rate. */
static double core_peak(zt_precision prec)
{
    double best = 0;
    for (int r = 0; r < 10; r++) {
        double g = zt_peak_gops(prec, 0.03);
        if (g > best) best = g;
    }
    return best;
}

/* The 1-minute load average before the run (-1 if unknown): other work on
 * the cores makes multi-threaded numbers unreliable. */
static zt_status net_config(const bench_net *bn, zt_net_config *cfg, int *actions)
{
    zt_game *g;
    ZT_TRY(zt_game_new(bn->game, NULL, &g));
    zt_net_config_default(cfg, g->obs_shape[0], g->obs_shape[1], g->obs_shape[2], g->num_actions);
    *actions = g->num_actions;
    zt_game_free(g);
    if (bn->channels > 0) {
        cfg->channels = bn->channels;
        cfg->blocks = bn->blocks;
    }
    return ZT_OK;
}

/* Seconds per forward of B samples: one untimed call, then calls until
 * `seconds` have passed (at least one). */
static zt_status time_forward(zt_net *net, int B, const float *obs, float *pol, float *val,
                              double seconds, double *out)
{
    ZT_TRY(zt_net_forward(net, B, obs, pol, val));
    int calls = 0;
    double t0 = zt_now_s(), t;
    do {
        ZT_TRY(zt_net_forward(net, B, obs, pol, val));
        calls++;
        t = zt_now_s() - t0;
    } while (t < seconds);
    *out = t / calls;
    return ZT_OK;
}

static zt_status bench_inference(const bench_net *bn, const char *backend, zt_precision prec,
                                 int threads, const int *batches, int nbatches, double seconds,
                                 double peak)
{
    zt_net_config cfg;
    int actions;
    ZT_TRY(net_config(bn, &cfg, &actions));
    int max_b = 1;
    for (int i = 0; i < nbatches; i++)
        if (batches[i] > max_b) max_b = batches[i];
    zt_net *net;
    ZT_TRY(zt_net_new(&cfg, backend, prec, threads, &net));
    zt_rng rng;
    zt_rng_seed(&rng, 7, 0);
    zt_net_init(net, &rng);
    size_t in_n = (size_t)cfg.in_h * cfg.in_w * cfg.in_c;
    float *obs = malloc((size_t)max_b * in_n * sizeof(float));
    float *pol = malloc((size_t)max_b * actions * sizeof(float));
    float *val = malloc((size_t)max_b * 3 * sizeof(float));
    zt_status st = obs && pol && val ? zt_net_reserve(net, max_b)
                                     : zt_fail(ZT_ERR_NOMEM, "no memory for batch %d", max_b);
    for (size_t i = 0; st == ZT_OK && i < (size_t)max_b * in_n; i++)
        obs[i] = zt_rng_uniform(&rng) < 0.3 ? 1.0f : 0.0f;
    if (st == ZT_OK) st = zt_net_calibrate(net, max_b, obs);
    double flops = graph_flops(&cfg);
    for (int i = 0; st == ZT_OK && i < nbatches; i++) {
        double s;
        zt_progress_meter_update(&meter, rows_done, "measuring %s %s, %d thread(s), batch %d",
                                 bn->name, zt_precision_name(prec), threads, batches[i]);
        st = time_forward(net, batches[i], obs, pol, val, seconds, &s);
        zt_progress_meter_pause(&meter);
        rows_done++;
        if (st != ZT_OK) break;
        double gflops = flops * batches[i] / s / 1e9;
        if (json_out)
            printf("{\"net\":\"%s\",\"precision\":\"%s\",\"threads\":%d,\"batch\":%d,"
                   "\"ms\":%.4f,\"inf_per_s\":%.1f,\"gflops\":%.2f}\n",
                   bn->name, zt_precision_name(zt_net_precision(net)), threads, batches[i], s * 1e3,
                   batches[i] / s, gflops);
        else
            printf("%-10s %-4s %3d %6d %11.3f %12.0f %9.1f %6.1f%%\n", bn->name,
                   zt_precision_name(zt_net_precision(net)), threads, batches[i], s * 1e3,
                   batches[i] / s, gflops, peak > 0 ? 100.0 * gflops / (peak * threads) : 0.0);
        fflush(stdout);
    }
    free(obs);
    free(pol);
    free(val);
    zt_net_free(net);
    return st;
}

static zt_status bench_train(const bench_net *bn, const char *backend, zt_precision prec,
                             int threads, double seconds, int B)
{
    zt_net_config cfg;
    int A;
    ZT_TRY(net_config(bn, &cfg, &A));
    zt_net *net;
    ZT_TRY(zt_net_new(&cfg, backend, prec, threads, &net));
    zt_rng rng;
    zt_rng_seed(&rng, 11, 0);
    zt_net_init(net, &rng);
    zt_train_config tc;
    zt_train_config_default(&tc);
    tc.micro_batch = B;
    zt_trainer *tr = NULL;
    size_t in_n = (size_t)cfg.in_h * cfg.in_w * cfg.in_c;
    int vs = zt_net_value_size(&cfg);
    float *obs = malloc((size_t)B * in_n * sizeof(float));
    float *pt = malloc((size_t)B * A * sizeof(float));
    uint8_t *legal = malloc((size_t)B * A);
    float *vt = malloc((size_t)B * vs * sizeof(float));
    zt_status st = obs && pt && legal && vt ? zt_trainer_new(net, &tc, &tr)
                                            : zt_fail(ZT_ERR_NOMEM, "no memory for a batch");
    if (st == ZT_OK) {
        for (size_t i = 0; i < (size_t)B * in_n; i++)
            obs[i] = zt_rng_uniform(&rng) < 0.3 ? 1.0f : 0.0f;
        for (size_t i = 0; i < (size_t)B * A; i++) {
            legal[i] = 1;
            pt[i] = 1.0f / (float)A;
        }
        for (size_t i = 0; i < (size_t)B * vs; i++)
            vt[i] = vs == 1 ? (float)(2 * zt_rng_uniform(&rng) - 1) : 1.0f / 3;
        zt_progress_meter_update(&meter, rows_done, "measuring %s %s train steps", bn->name,
                                 zt_precision_name(prec));
        zt_train_batch batch = {
            .B = B, .obs = obs, .policy_target = pt, .legal = legal, .value_target = vt};
        zt_train_losses losses;
        st = zt_trainer_step(tr, &batch, &losses); /* sizes everything */
        int steps = 0;
        double t0 = zt_now_s(), t = 0;
        while (st == ZT_OK && (steps == 0 || t < seconds)) {
            st = zt_trainer_step(tr, &batch, &losses);
            steps++;
            t = zt_now_s() - t0;
        }
        zt_progress_meter_pause(&meter);
        rows_done++;
        if (st == ZT_OK && json_out)
            printf("{\"net\":\"%s\",\"precision\":\"%s\",\"threads\":%d,\"train_batch\":%d,"
                   "\"ms\":%.4f,\"samples_per_s\":%.1f}\n",
                   bn->name, zt_precision_name(zt_net_precision(net)), threads, (int)B,
                   t / steps * 1e3, B * steps / t);
        else if (st == ZT_OK)
            printf("%-10s %-4s %3d %6d %11.3f %12.0f  train step (loss %.3f)\n", bn->name,
                   zt_precision_name(zt_net_precision(net)), threads, B, t / steps * 1e3,
                   B * steps / t, losses.total);
    }
    zt_trainer_free(tr);
    free(obs);
    free(pt);
    free(legal);
    free(vt);
    zt_net_free(net);
    return st;
}

/* --export DIR: each chosen net's weights (random, with non-trivial batch-norm
 * statistics so that folding and normalisation are exercised) as
 * DIR/<net>.safetensors, and DIR/<net>.io.safetensors holding a batch of 16
 * random observations with the fp32 reference backend's outputs, so that
 * another framework can load the same weights and check it computes the
 * same function. */
static zt_status export_net(const bench_net *bn, const char *dir)
{
    enum { B = 16 };
    zt_net_config cfg;
    int A;
    ZT_TRY(net_config(bn, &cfg, &A));
    zt_net *net;
    ZT_TRY(zt_net_new(&cfg, "ref", ZT_PRECISION_FP32, 1, &net));
    zt_rng rng;
    zt_rng_seed(&rng, 2026, 0);
    zt_net_init(net, &rng);
    for (int i = 0; i < zt_net_tensor_count(net); i++) {
        zt_net_tensor t = zt_net_tensor_at(net, i);
        bool var = strstr(t.name, "running_var") != NULL;
        bool norm = strstr(t.name, "bn") || strstr(t.name, "norm") || strstr(t.name, "running");
        if (!norm || t.ndim != 1) continue;
        for (size_t j = 0; j < t.count; j++)
            t.data[j] = var ? (float)(0.5 + zt_rng_uniform(&rng))
                            : t.data[j] + (float)(0.2 * (zt_rng_uniform(&rng) - 0.5));
    }
    zt_net_params_changed(net);
    char path[1024], spec[256];
    zt_game *g;
    zt_status st = zt_game_new(bn->game, NULL, &g);
    if (st == ZT_OK) {
        zt_game_spec(g, spec, sizeof spec);
        zt_game_free(g);
        snprintf(path, sizeof path, "%s/%s.safetensors", dir, bn->name);
        st = zt_net_save(net, spec, path);
    }
    size_t in_n = (size_t)cfg.in_h * cfg.in_w * cfg.in_c;
    int vs = zt_net_value_size(&cfg);
    float *obs = malloc(B * in_n * sizeof(float)), *pol = malloc((size_t)B * A * sizeof(float));
    float *val = malloc((size_t)B * vs * sizeof(float));
    if (st == ZT_OK && !(obs && pol && val)) st = zt_fail(ZT_ERR_NOMEM, "export: no memory");
    if (st == ZT_OK) {
        for (size_t i = 0; i < B * in_n; i++) obs[i] = zt_rng_uniform(&rng) < 0.3 ? 1.0f : 0.0f;
        st = zt_net_forward(net, B, obs, pol, val);
    }
    if (st == ZT_OK) {
        zt_st_tensor io[3] = {
            {"input", 4, {B, cfg.in_h, cfg.in_w, cfg.in_c}, obs},
            {"policy", 2, {B, A}, pol},
            {"value", 2, {B, vs}, val},
        };
        zt_st_meta meta[1] = {{"net", bn->name}};
        snprintf(path, sizeof path, "%s/%s.io.safetensors", dir, bn->name);
        st = zt_st_write(path, io, 3, meta, 1);
    }
    if (st == ZT_OK) printf("exported %s to %s/%s.safetensors\n", bn->name, dir, bn->name);
    free(obs);
    free(pol);
    free(val);
    zt_net_free(net);
    return st;
}

int zt_bench_nn(int argc, char **argv)
{
    const char *backend = "cpu", *precision = "all";
    double seconds = 0.3;
    int threads = zt_cpu_count();
    bool train = true;
    const char *export_dir = NULL;
    const char *nets[8];
    int nnets = 0, batches[16], nbatches = 0, train_batch = 256;
    for (int i = 1; i < argc; i++) {
        const char *v;
        zt_status st = ZT_OK;
        if (zt_cli_is_help(argv[i])) {
            usage(stdout);
            return 0;
        }
        if (strcmp(argv[i], "--no-train") == 0) {
            train = false;
        } else if (strcmp(argv[i], "--json") == 0) {
            json_out = true;
        } else if (zt_cli_flag_value(argc, argv, &i, "--export", &export_dir, &st)) {
            if (st != ZT_OK) return zt_cli_fail(st);
        } else if (zt_cli_flag_value(argc, argv, &i, "--backend", &v, &st)) {
            if (st != ZT_OK) return zt_cli_fail(st);
            backend = v;
        } else if (zt_cli_flag_value(argc, argv, &i, "--seconds", &v, &st)) {
            if (st != ZT_OK) return zt_cli_fail(st);
            seconds = atof(v);
            if (!(seconds >= 0 && seconds <= 600))
                return zt_cli_error("bench nn: --seconds must be in [0, 600], got '%s'", v);
        } else if (zt_cli_flag_value(argc, argv, &i, "--threads", &v, &st)) {
            if (st != ZT_OK) return zt_cli_fail(st);
            threads = atoi(v);
            if (threads < 1 || threads > 1024)
                return zt_cli_error("bench nn: --threads must be in [1, 1024], got '%s'", v);
        } else if (zt_cli_flag_value(argc, argv, &i, "--precision", &v, &st)) {
            if (st != ZT_OK) return zt_cli_fail(st);
            if (strcmp(v, "fp32") && strcmp(v, "bf16") && strcmp(v, "int8") && strcmp(v, "both") &&
                strcmp(v, "all"))
                return zt_cli_error("bench nn: --precision must be fp32, bf16, int8, both (fp32 "
                                    "and bf16) or all, got '%s'",
                                    v);
            precision = v;
        } else if (zt_cli_flag_value(argc, argv, &i, "--net", &v, &st)) {
            if (st != ZT_OK) return zt_cli_fail(st);
            bool known = false;
            for (size_t k = 0; k < sizeof bench_nets / sizeof bench_nets[0]; k++)
                known = known || strcmp(bench_nets[k].name, v) == 0;
            if (!known || nnets == 8)
                return zt_cli_error("bench nn: unknown net '%s' (known: c4-64x5, c4-128x10, "
                                    "bg-mlp)",
                                    v);
            nets[nnets++] = v;
        } else if (zt_cli_flag_value(argc, argv, &i, "--train-batch", &v, &st)) {
            if (st != ZT_OK) return zt_cli_fail(st);
            char *end;
            long b = strtol(v, &end, 10);
            if (*end || b < 1 || b > 65536)
                return zt_cli_error("bench nn: --train-batch must be in [1, 65536], got '%s'", v);
            train_batch = (int)b;
        } else if (zt_cli_flag_value(argc, argv, &i, "--batch", &v, &st)) {
            if (st != ZT_OK) return zt_cli_fail(st);
            int b = atoi(v);
            if (b < 1 || b > 65536 || nbatches == 16)
                return zt_cli_error("bench nn: --batch must be in [1, 65536], got '%s'", v);
            batches[nbatches++] = b;
        } else {
            return zt_cli_error("bench nn: unknown argument '%s'", argv[i]);
        }
    }
    if (nbatches == 0) {
        nbatches = (int)(sizeof default_batches / sizeof default_batches[0]);
        memcpy(batches, default_batches, sizeof default_batches);
    }
    if (export_dir) {
        zt_status st = zt_mkdirs(export_dir);
        for (size_t k = 0; st == ZT_OK && k < sizeof bench_nets / sizeof bench_nets[0]; k++) {
            bool chosen = nnets == 0;
            for (int j = 0; j < nnets; j++)
                chosen = chosen || strcmp(nets[j], bench_nets[k].name) == 0;
            if (chosen) st = export_net(&bench_nets[k], export_dir);
        }
        return st == ZT_OK ? 0 : zt_cli_fail(st);
    }
    const zt_nn_backend *be;
    zt_status st = zt_nn_backend_find(backend, &be);
    if (st != ZT_OK) return zt_cli_fail(st);
    if (strcmp(be->name, "cuda") == 0 || strcmp(be->name, "routed") == 0) {
        char why[200];
        if (zt_cuda_gpu_count(why, sizeof why) == 0)
            return zt_cli_error("no CUDA GPU found: %s", why);
    }
    zt_precision precs[3];
    int nprecs = 0;
    bool all = strcmp(precision, "all") == 0, both = strcmp(precision, "both") == 0;
    if (all || both || strcmp(precision, "fp32") == 0) precs[nprecs++] = ZT_PRECISION_FP32;
    if (all || both || strcmp(precision, "bf16") == 0) {
        if (be->supports(ZT_PRECISION_BF16))
            precs[nprecs++] = ZT_PRECISION_BF16;
        else
            printf("bf16 skipped: backend '%s' cannot run it on this machine\n", be->name);
    }
    if (all || strcmp(precision, "int8") == 0) {
        if (be->supports(ZT_PRECISION_INT8))
            precs[nprecs++] = ZT_PRECISION_INT8;
        else
            printf("int8 skipped: backend '%s' cannot run it on this machine\n", be->name);
    }
    int ntrain = 0; /* int8 is inference only */
    for (int pi = 0; pi < nprecs; pi++) ntrain += precs[pi] != ZT_PRECISION_INT8;
    int thread_counts[2] = {1, threads}, nthreads = threads > 1 ? 2 : 1;

    double peaks[3];
    FILE *info = json_out ? stderr : stdout;
    fprintf(info,
            "backend %s, %d cpus (load average %.2f), %.2f s per measurement; one core's peak:",
            be->name, zt_cpu_count(), zt_load_average(), seconds);
    for (int pi = 0; pi < nprecs; pi++) {
        peaks[pi] = core_peak(precs[pi]);
        fprintf(info, " %s %.1f GFLOP/s", zt_precision_name(precs[pi]), peaks[pi]);
        /* bf16 nets may run their products on fp32 FMAs where those are
         * faster (the Winograd kernel on CPUs whose dot products are slow),
         * so their %peak counts against the faster instruction */
        if (precs[pi] == ZT_PRECISION_BF16) {
            double fma = core_peak(ZT_PRECISION_FP32);
            if (fma > peaks[pi]) {
                peaks[pi] = fma;
                fprintf(info, " (its %%peak: against fp32 FMAs, %.1f)", fma);
            }
        }
    }
    fprintf(info, "\n");
    if (!json_out)
        printf("%-10s %-4s %3s %6s %11s %12s %9s %7s\n", "net", "prec", "thr", "batch", "ms/batch",
               "inferences/s", "GFLOP/s", "%peak");
    fflush(stdout);
    int chosen_nets = 0;
    for (size_t k = 0; k < sizeof bench_nets / sizeof bench_nets[0]; k++) {
        bool chosen = nnets == 0;
        for (int j = 0; j < nnets; j++) chosen = chosen || strcmp(nets[j], bench_nets[k].name) == 0;
        chosen_nets += chosen;
    }
    zt_progress_meter_init(&meter, "bench nn", "rows",
                           chosen_nets * (nprecs * nthreads * nbatches + (train ? ntrain : 0)),
                           NULL, NULL);
    int rc = 0;
    for (size_t k = 0; k < sizeof bench_nets / sizeof bench_nets[0] && rc == 0; k++) {
        const bench_net *bn = &bench_nets[k];
        bool chosen = nnets == 0;
        for (int j = 0; j < nnets; j++) chosen = chosen || strcmp(nets[j], bn->name) == 0;
        if (!chosen) continue;
        for (int pi = 0; pi < nprecs && rc == 0; pi++) {
            for (int ti = 0; ti < nthreads && rc == 0; ti++) {
                st = bench_inference(bn, backend, precs[pi], thread_counts[ti], batches, nbatches,
                                     seconds, peaks[pi]);
                if (st != ZT_OK) rc = zt_cli_fail(st);
            }
        }
    }
    for (size_t k = 0; train && k < sizeof bench_nets / sizeof bench_nets[0] && rc == 0; k++) {
        const bench_net *bn = &bench_nets[k];
        bool chosen = nnets == 0;
        for (int j = 0; j < nnets; j++) chosen = chosen || strcmp(nets[j], bn->name) == 0;
        if (!chosen) continue;
        for (int pi = 0; pi < nprecs && rc == 0; pi++) {
            if (precs[pi] == ZT_PRECISION_INT8) continue;
            st = bench_train(bn, backend, precs[pi], threads, seconds, train_batch);
            if (st != ZT_OK) rc = zt_cli_fail(st);
        }
    }
    zt_progress_meter_end(&meter);
    return rc;
}
