/* zeroth bench devices: inference on the CPU against the GPU, batch size by
 * batch size (issue 12): ms per call and inferences/s on each device, the
 * GPU's speed-up, the crossover (the batch from which the GPU is faster at
 * every larger size measured) and, with a GPU, the routed backend that
 * device=auto uses run at that crossover. Nets: the Connect Four 64x5
 * resnet and a backgammon MLP of 512 hidden units. Without a GPU it prints
 * the CPU columns and "GPU: none found (...)" and exits 0. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/rng.h"
#include "core/thread.h"
#include "nn/backend.h"
#include "nn/device.h"
#include "nn/nn.h"

typedef struct device_net {
    const char *name;
    const char *game;
    int channels, blocks; /* resnet; 0: the game's default */
    int mlp_hidden;       /* mlp; 0: the game's default */
} device_net;

static const device_net device_nets[] = {
    {"c4-64x5", "connect4", 64, 5, 0},
    {"bg-mlp512", "backgammon", 0, 0, 512},
};

static const int device_batches[] = {1, 8, 32, 128, 512, 1024, 2048, 4096};
enum { NBATCH = sizeof device_batches / sizeof device_batches[0] };

static void usage(FILE *f)
{
    fprintf(f, "usage: zeroth bench devices [--net NAME] [--seconds S] [--threads N]\n"
               "                            [--precision auto|fp32|bf16] [--json]\n"
               "  --net may repeat (c4-64x5, bg-mlp512; default both). Batches 1 8 32 128 512\n"
               "  1024 2048 4096; --seconds per measurement (default 0.2); --threads: the CPU's\n"
               "  (default every cpu); --precision: each device's fastest by default.\n");
}

static zt_status net_config(const device_net *dn, zt_net_config *cfg)
{
    zt_game *g;
    ZT_TRY(zt_game_new(dn->game, NULL, &g));
    zt_net_config_default(cfg, g->obs_shape[0], g->obs_shape[1], g->obs_shape[2], g->num_actions);
    zt_game_free(g);
    if (dn->channels > 0) {
        cfg->channels = dn->channels;
        cfg->blocks = dn->blocks;
    }
    if (dn->mlp_hidden > 0) cfg->mlp_hidden = dn->mlp_hidden;
    return zt_net_config_check(cfg);
}

static zt_status new_net(const zt_net_config *cfg, const char *backend, zt_precision prec,
                         int threads, zt_net **out)
{
    const zt_nn_backend *be;
    ZT_TRY(zt_nn_backend_find(backend, &be));
    if (prec != ZT_PRECISION_AUTO && !be->supports(prec))
        return zt_fail(ZT_ERR_UNSUPPORTED, "backend '%s' cannot run %s here", be->name,
                       zt_precision_name(prec));
    ZT_TRY(zt_net_new(cfg, backend, prec, threads, out));
    zt_rng r;
    zt_rng_seed(&r, 7, 0);
    zt_net_init(*out, &r);
    return ZT_OK;
}

static bool json_out;

static void row(const char *net, int B, const char *device, const char *prec, double s)
{
    if (json_out)
        printf("{\"net\":\"%s\",\"device\":\"%s\",\"precision\":\"%s\",\"batch\":%d,\"ms\":%.4f,"
               "\"inferences_per_s\":%.1f}\n",
               net, device, prec, B, s * 1e3, B / s);
}

static zt_status bench_net(const device_net *dn, zt_precision prec, int threads, double seconds,
                           bool gpu)
{
    zt_net_config cfg;
    ZT_TRY(net_config(dn, &cfg));
    zt_net *cpu = NULL, *cuda = NULL, *routed = NULL;
    zt_status st = new_net(&cfg, "auto", prec, threads, &cpu);
    if (st == ZT_OK && gpu) st = new_net(&cfg, "cuda", prec, 1, &cuda);
    double tc[NBATCH], tg[NBATCH], tr[NBATCH];
    for (int i = 0; i < NBATCH && st == ZT_OK; i++) {
        st = zt_device_time_forward(cpu, device_batches[i], seconds, &tc[i]);
        if (st == ZT_OK && cuda)
            st = zt_device_time_forward(cuda, device_batches[i], seconds, &tg[i]);
    }
    const char *cprec = cpu ? zt_precision_name(zt_net_precision(cpu)) : "";
    const char *gprec = cuda ? zt_precision_name(zt_net_precision(cuda)) : "";
    /* The crossover: the first batch from which the GPU wins at every
     * larger size measured. */
    int crossover = INT_MAX;
    if (st == ZT_OK && cuda)
        for (int i = NBATCH - 1; i >= 0 && tg[i] < tc[i]; i--) crossover = device_batches[i];
    if (st == ZT_OK && cuda) {
        zt_nn_graph g;
        zt_nn_graph_build(&g, &cfg);
        zt_routed_set_crossover(&g, crossover);
        zt_nn_graph_free(&g);
        st = new_net(&cfg, "routed", zt_net_precision(cuda), threads, &routed);
        for (int i = 0; i < NBATCH && st == ZT_OK; i++)
            st = zt_device_time_forward(routed, device_batches[i], seconds, &tr[i]);
    }
    if (st == ZT_OK) {
        char arch[256];
        zt_net_config_format(&cfg, arch, sizeof arch);
        if (!json_out) {
            printf("\n%s (%s)\n", dn->name, arch);
            if (cuda)
                printf("%6s %10s %12s %10s %12s %8s %10s %8s\n", "batch", "cpu ms", "cpu inf/s",
                       "gpu ms", "gpu inf/s", "speedup", "auto ms", "auto/best");
            else
                printf("%6s %10s %12s\n", "batch", "cpu ms", "cpu inf/s");
        }
        for (int i = 0; i < NBATCH; i++) {
            int B = device_batches[i];
            row(dn->name, B, "cpu", cprec, tc[i]);
            if (cuda) {
                row(dn->name, B, "cuda", gprec, tg[i]);
                row(dn->name, B, "auto", gprec, tr[i]);
            }
            if (json_out) continue;
            if (cuda) {
                double best = tc[i] < tg[i] ? tc[i] : tg[i];
                printf("%6d %10.3f %12.0f %10.3f %12.0f %7.2fx %10.3f %8.2f\n", B, tc[i] * 1e3,
                       B / tc[i], tg[i] * 1e3, B / tg[i], tc[i] / tg[i], tr[i] * 1e3, tr[i] / best);
            } else {
                printf("%6d %10.3f %12.0f\n", B, tc[i] * 1e3, B / tc[i]);
            }
        }
        if (cuda && !json_out) {
            if (crossover == INT_MAX)
                printf("crossover: none (the CPU is faster at every batch up to 4096)\n");
            else
                printf("crossover: batch %d (the GPU is faster from there on)\n", crossover);
        }
        if (cuda && json_out)
            printf("{\"net\":\"%s\",\"crossover\":%d}\n", dn->name,
                   crossover == INT_MAX ? -1 : crossover);
        fflush(stdout);
    }
    zt_net_free(routed);
    zt_net_free(cuda);
    zt_net_free(cpu);
    return st;
}

int zt_bench_devices(int argc, char **argv)
{
    double seconds = 0.2;
    int threads = zt_cpu_count();
    zt_precision prec = ZT_PRECISION_AUTO;
    const char *nets[4];
    int nnets = 0;
    for (int i = 1; i < argc; i++) {
        const char *v;
        zt_status st = ZT_OK;
        if (zt_cli_is_help(argv[i])) {
            usage(stdout);
            return 0;
        }
        if (strcmp(argv[i], "--json") == 0) {
            json_out = true;
        } else if (zt_cli_flag_value(argc, argv, &i, "--seconds", &v, &st)) {
            if (st != ZT_OK) return zt_cli_fail(st);
            seconds = atof(v);
            if (!(seconds > 0 && seconds <= 60))
                return zt_cli_error("bench devices: --seconds must be in (0, 60], got '%s'", v);
        } else if (zt_cli_flag_value(argc, argv, &i, "--threads", &v, &st)) {
            if (st != ZT_OK) return zt_cli_fail(st);
            threads = atoi(v);
            if (threads < 1 || threads > 1024)
                return zt_cli_error("bench devices: --threads must be in [1, 1024], got '%s'", v);
        } else if (zt_cli_flag_value(argc, argv, &i, "--precision", &v, &st)) {
            if (st != ZT_OK) return zt_cli_fail(st);
            if (zt_precision_parse(v, &prec) != ZT_OK)
                return zt_cli_error("bench devices: --precision must be auto, fp32 or bf16, got "
                                    "'%s'",
                                    v);
        } else if (zt_cli_flag_value(argc, argv, &i, "--net", &v, &st)) {
            if (st != ZT_OK) return zt_cli_fail(st);
            bool known = false;
            for (size_t k = 0; k < sizeof device_nets / sizeof device_nets[0]; k++)
                known = known || strcmp(device_nets[k].name, v) == 0;
            if (!known || nnets == 4)
                return zt_cli_error("bench devices: unknown net '%s' (known: c4-64x5, bg-mlp512)",
                                    v);
            nets[nnets++] = v;
        } else {
            return zt_cli_error("bench devices: unknown argument '%s'", argv[i]);
        }
    }
    char why[200], name[256] = "";
    int gpus = zt_cuda_gpu_count(why, sizeof why);
    if (gpus > 0 && zt_cuda_gpu_name(0, name, sizeof name) != ZT_OK) return zt_cli_fail(ZT_ERR_IO);
    if (!json_out) {
        printf("CPU: %d threads (backend auto, %s)\n", threads,
               prec == ZT_PRECISION_AUTO ? "its fastest precision" : zt_precision_name(prec));
        if (gpus > 0)
            printf("GPU: %s (%d found; the first is used)\n", name, gpus);
        else
            printf("GPU: none found (%s)\n", why);
    } else {
        printf("{\"cpu_threads\":%d,\"gpu\":\"%s\"}\n", threads, gpus > 0 ? name : "none");
    }
    for (size_t k = 0; k < sizeof device_nets / sizeof device_nets[0]; k++) {
        bool chosen = nnets == 0;
        for (int j = 0; j < nnets; j++)
            chosen = chosen || strcmp(nets[j], device_nets[k].name) == 0;
        if (!chosen) continue;
        zt_status st = bench_net(&device_nets[k], prec, threads, seconds, gpus > 0);
        if (st != ZT_OK) return zt_cli_fail(st);
    }
    return 0;
}
