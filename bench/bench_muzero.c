/* zeroth bench muzero: MuZero's network calls with the training settings of
 * a game (configs/GAME.ini with algorithm = muzero unless --set says
 * stochastic_muzero, then --config / --set): initial inference (h then f)
 * and recurrent inference (g then f; Stochastic MuZero: afterstate, phi then
 * psi, and recurrent from an afterstate with a code) in states per second at
 * each batch size, on one thread as an actor runs them, and the unrolled
 * train step (K = muzero.unroll) at learner.batch on the learner's threads,
 * in samples and steps per second. One line per measurement, with the load
 * average beside it (the machine is shared), or with --json one JSON object
 * each (bench/torch_muzero.py reads them). --export DIR writes the net's
 * weights and a reference batch for another framework to check against. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/alloc.h"
#include "core/config.h"
#include "core/fileio.h"
#include "core/rng.h"
#include "core/thread.h"
#include "core/timer.h"
#include "nn/safetensors.h"
#include "train/train.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: zeroth bench muzero [GAME] [--seconds S] [--batch B ...] [--config FILE] "
               "[--set k=v ...]\n\n"
               "MuZero's network calls with the training settings of GAME (default tictactoe;\n"
               "algorithm = muzero is imposed unless --set algorithm=stochastic_muzero, so the\n"
               "muzero.* keys size the nets): initial, recurrent (and stochastic afterstate)\n"
               "inference states/s on one thread at each batch (default 1 8 32 64 256), and the\n"
               "unrolled train step (muzero.unroll steps, learner.batch samples).\n"
               "  --seconds S   time per measurement (default 2)\n"
               "  --json        one JSON object per measurement\n"
               "  --export DIR  write DIR/muzero.safetensors (the net, random weights) and\n"
               "                DIR/muzero.io.safetensors (a batch of observations and actions\n"
               "                with the fp32 reference backend's initial and recurrent\n"
               "                outputs) for bench/torch_muzero.py, then exit (plain MuZero)\n");
}

/* --export DIR: the net with random weights (layer norms' gains and biases
 * moved off 1 and 0) and a batch of 16 random observations and actions
 * with the reference backend's fp32 outputs of initial and recurrent. */
static zt_status export_net(const zt_train_settings *S, const zt_game *g, const char *dir)
{
    enum { B = 16 };
    const zt_net_config *c = &S->net;
    if (c->chance_codes > 0 || c->value_support > 0)
        return zt_fail(ZT_ERR_UNSUPPORTED, "bench muzero --export: plain MuZero nets only "
                                           "(no chance codes, tanh heads)");
    zt_net *net;
    ZT_TRY(zt_net_new(c, "ref", ZT_PRECISION_FP32, 1, &net));
    zt_rng rng;
    zt_rng_seed(&rng, 2026, 0);
    zt_net_init(net, &rng);
    for (int i = 0; i < zt_net_tensor_count(net); i++) {
        zt_net_tensor t = zt_net_tensor_at(net, i);
        if (!strstr(t.name, "norm") || t.ndim != 1) continue;
        for (size_t j = 0; j < t.count; j++)
            t.data[j] += (float)(0.4 * (zt_rng_uniform(&rng) - 0.5));
    }
    zt_net_params_changed(net);
    char path[1024], spec[256];
    zt_game_spec(g, spec, sizeof spec);
    zt_status st = zt_mkdirs(dir);
    snprintf(path, sizeof path, "%s/muzero.safetensors", dir);
    if (st == ZT_OK) st = zt_net_save(net, spec, path);
    size_t obs_n = (size_t)c->in_h * c->in_w * c->in_c, hs = zt_net_hidden_size(c);
    int A = c->num_actions;
    float *obs = zt_xmalloc(B * obs_n * sizeof(float)), *h = zt_xmalloc(B * hs * sizeof(float));
    float *h2 = zt_xmalloc(B * hs * sizeof(float)), *p0 = zt_xmalloc((size_t)B * A * sizeof(float));
    float *p1 = zt_xmalloc((size_t)B * A * sizeof(float)), v0[B], v1[B], r1[B], af[B];
    int actions[B];
    for (size_t i = 0; i < B * obs_n; i++) obs[i] = zt_rng_uniform(&rng) < 0.3 ? 1.0f : 0.0f;
    for (int i = 0; i < B; i++) {
        actions[i] = (int)zt_rng_below(&rng, (uint32_t)A);
        af[i] = (float)actions[i];
    }
    if (st == ZT_OK) st = zt_net_initial(net, B, obs, h, p0, v0);
    if (st == ZT_OK) st = zt_net_recurrent(net, B, h, actions, h2, r1, p1, v1, NULL);
    if (st == ZT_OK) {
        zt_st_tensor io[9] = {
            {"input", 4, {B, c->in_h, c->in_w, c->in_c}, obs},
            {"actions", 1, {B}, af},
            {"hidden", 4, {B, c->in_h, c->in_w, c->channels}, h},
            {"policy", 2, {B, A}, p0},
            {"value", 1, {B}, v0},
            {"next_hidden", 4, {B, c->in_h, c->in_w, c->channels}, h2},
            {"reward", 1, {B}, r1},
            {"next_policy", 2, {B, A}, p1},
            {"next_value", 1, {B}, v1},
        };
        zt_st_meta meta[1] = {{"net", "muzero"}};
        snprintf(path, sizeof path, "%s/muzero.io.safetensors", dir);
        st = zt_st_write(path, io, 9, meta, 1);
    }
    if (st == ZT_OK) printf("exported %s's muzero net to %s/muzero.safetensors\n", g->name, dir);
    free(obs), free(h), free(h2), free(p0), free(p1);
    zt_net_free(net);
    return st;
}

typedef struct buffers {
    float *obs, *hidden, *next, *policy, *value, *reward;
    int *actions;
} buffers;

typedef enum { CALL_INITIAL, CALL_RECURRENT, CALL_AFTERSTATE } call_kind;
static const char *const CALL_NAMES[] = {"initial", "recurrent", "afterstate"};

/* Stochastic MuZero's recurrent steps afterstates with codes (the hidden
 * states stand in for afterstates: the same shape). */
static zt_status measure_inference(zt_net *net, const zt_net_config *c, int B, double seconds,
                                   zt_rng *rng, call_kind kind, double *per_s)
{
    size_t obs_n = (size_t)c->in_h * c->in_w * c->in_c, hs = zt_net_hidden_size(c);
    buffers b = {.obs = malloc((size_t)B * obs_n * sizeof(float)),
                 .hidden = malloc((size_t)B * hs * sizeof(float)),
                 .next = malloc((size_t)B * hs * sizeof(float)),
                 .policy = malloc(
                     (size_t)B *
                     (size_t)(c->num_actions > c->chance_codes ? c->num_actions : c->chance_codes) *
                     sizeof(float)),
                 .value = malloc((size_t)B * sizeof(float)),
                 .reward = malloc((size_t)B * sizeof(float)),
                 .actions = malloc((size_t)B * sizeof(int))};
    zt_status st = b.obs && b.hidden && b.next && b.policy && b.value && b.reward && b.actions
                       ? zt_net_reserve(net, B)
                       : zt_fail(ZT_ERR_NOMEM, "bench muzero: no memory for batch %d", B);
    for (size_t i = 0; st == ZT_OK && i < (size_t)B * obs_n; i++)
        b.obs[i] = zt_rng_uniform(rng) < 0.3 ? 1.0f : 0.0f;
    int steps = kind == CALL_RECURRENT && c->chance_codes > 0 ? c->chance_codes : c->num_actions;
    for (int i = 0; st == ZT_OK && i < B; i++)
        b.actions[i] = (int)zt_rng_below(rng, (uint32_t)steps);
    if (st == ZT_OK) st = zt_net_initial(net, B, b.obs, b.hidden, b.policy, b.value);
    int calls = 0;
    double t0 = zt_now_s(), t = 0;
    while (st == ZT_OK && t < seconds) {
        if (kind == CALL_RECURRENT)
            st = zt_net_recurrent(net, B, b.hidden, b.actions, b.next, b.reward, b.policy, b.value,
                                  NULL);
        else if (kind == CALL_AFTERSTATE)
            st = zt_net_afterstate(net, B, b.hidden, b.actions, b.next, b.policy, b.value);
        else
            st = zt_net_initial(net, B, b.obs, b.next, b.policy, b.value);
        calls++;
        t = zt_now_s() - t0;
    }
    *per_s = (double)calls * B / t;
    free(b.obs), free(b.hidden), free(b.next), free(b.policy), free(b.value), free(b.reward);
    free(b.actions);
    return st;
}

static zt_status measure_train(const zt_train_settings *S, double seconds, zt_rng *rng,
                               double *steps_per_s)
{
    const zt_net_config *c = &S->net;
    zt_net *net;
    ZT_TRY(zt_net_new(c, S->backend, S->precision, S->learner_threads, &net));
    zt_net_init(net, rng);
    int B = S->batch, K = S->unroll, A = c->num_actions;
    size_t obs_n = (size_t)c->in_h * c->in_w * c->in_c, rows = (size_t)B * (K + 1);
    float *obs = zt_xmalloc((size_t)B * obs_n * sizeof(float));
    float *policy = zt_xcalloc(rows * A, sizeof(float)), *value = zt_xmalloc(rows * sizeof(float));
    float *reward = zt_xcalloc((size_t)B * K, sizeof(float));
    int32_t *actions = zt_xmalloc((size_t)B * K * sizeof(int32_t));
    uint8_t *mask = zt_xmalloc(rows);
    /* Stochastic MuZero's encoder and the consistency term read the
     * observations after each step */
    float *next_obs = NULL;
    uint8_t *chance_mask = NULL;
    if (c->chance_codes > 0 || S->optimizer.consistency_weight > 0) {
        next_obs = zt_xmalloc((size_t)B * K * obs_n * sizeof(float));
        chance_mask = zt_xmalloc((size_t)B * K);
        for (size_t i = 0; i < (size_t)B * K * obs_n; i++)
            next_obs[i] = zt_rng_uniform(rng) < 0.3 ? 1.0f : 0.0f;
        memset(chance_mask, 1, (size_t)B * K);
    }
    for (size_t i = 0; i < (size_t)B * obs_n; i++) obs[i] = zt_rng_uniform(rng) < 0.3 ? 1.0f : 0.0f;
    for (size_t r = 0; r < rows; r++) {
        policy[r * A + zt_rng_below(rng, (uint32_t)A)] = 1;
        value[r] = (float)(2 * zt_rng_uniform(rng) - 1);
        mask[r] = 1;
    }
    for (size_t i = 0; i < (size_t)B * K; i++) actions[i] = (int32_t)zt_rng_below(rng, (uint32_t)A);
    /* the batch a run's learner gets: to-play targets for a net with the
     * to-play head (backgammon), the game's codes with muzero.chance = game
     * (the encoder then does not run) */
    float *turn = NULL;
    int32_t *codes = NULL;
    if (c->turn_head) {
        turn = zt_xmalloc((size_t)B * K * sizeof(float));
        for (size_t i = 0; i < (size_t)B * K; i++) turn[i] = (float)(zt_rng_uniform(rng) < 0.5);
    }
    if (c->chance_codes > 0 && S->chance_labels) {
        codes = zt_xmalloc((size_t)B * K * sizeof(int32_t));
        for (size_t i = 0; i < (size_t)B * K; i++)
            codes[i] = (int32_t)zt_rng_below(rng, (uint32_t)c->chance_codes);
    }
    zt_trainer *t = NULL;
    zt_status st = zt_trainer_new(net, &S->optimizer, &t);
    zt_train_batch tb = {.B = B,
                         .obs = obs,
                         .policy_target = policy,
                         .value_target = value,
                         .unroll = K,
                         .actions = actions,
                         .policy_mask = mask,
                         .reward_target = reward,
                         .next_obs = next_obs,
                         .chance_mask = chance_mask,
                         .turn_target = turn,
                         .chance_code = codes};
    zt_train_losses L;
    if (st == ZT_OK) st = zt_trainer_step(t, &tb, &L); /* sizes everything */
    int steps = 0;
    double t0 = zt_now_s(), el = 0;
    while (st == ZT_OK && el < seconds) {
        st = zt_trainer_step(t, &tb, &L);
        steps++;
        el = zt_now_s() - t0;
    }
    *steps_per_s = steps / el;
    zt_trainer_free(t);
    free(obs), free(policy), free(value), free(reward), free(actions), free(mask);
    free(next_obs), free(chance_mask), free(turn), free(codes);
    zt_net_free(net);
    return st;
}

int zt_bench_muzero(int argc, char **argv)
{
    double seconds = 2;
    int batches[16], nb = 0;
    bool json = false;
    const char *export_dir = NULL;
    const char *game = NULL;
    bool has_config = false;
    zt_status st = ZT_OK;
    for (int i = 1; i < argc && st == ZT_OK; i++) {
        const char *v;
        if (zt_cli_is_help(argv[i])) {
            usage(stdout);
            return 0;
        }
        if (zt_cli_flag_value(argc, argv, &i, "--seconds", &v, &st)) {
            char *end;
            seconds = st == ZT_OK ? strtod(v, &end) : 0;
            if (st == ZT_OK && (*end || !(seconds > 0) || seconds > 600))
                st = zt_fail(ZT_ERR_INVALID, "--seconds: expected a number in (0, 600], got '%s'",
                             v);
        } else if (zt_cli_flag_value(argc, argv, &i, "--batch", &v, &st)) {
            char *end;
            long b = st == ZT_OK ? strtol(v, &end, 10) : 0;
            if (st == ZT_OK && (*end || b < 1 || b > 65536 || nb == 16))
                st = zt_fail(ZT_ERR_INVALID, "--batch: expected at most 16 of 1..65536, got '%s'",
                             v);
            else if (st == ZT_OK)
                batches[nb++] = (int)b;
        } else if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (zt_cli_flag_value(argc, argv, &i, "--export", &export_dir, &st)) {
            continue;
        } else if (zt_cli_skip_config_arg(argc, argv, &i, &has_config, &st)) {
            continue;
        } else if (argv[i][0] == '-') {
            st = zt_fail(ZT_ERR_INVALID, "unknown flag '%s' (see zeroth bench muzero --help)",
                         argv[i]);
        } else if (!game) {
            game = argv[i];
        } else {
            st = zt_fail(ZT_ERR_INVALID, "unexpected argument '%s'", argv[i]);
        }
    }
    if (st != ZT_OK) return zt_cli_fail(st);
    if (nb == 0) {
        static const int dflt[] = {1, 8, 32, 64, 256};
        for (nb = 0; nb < 5; nb++) batches[nb] = dflt[nb];
    }
    zt_config *cfg = zt_config_new();
    const char *name = NULL;
    zt_game *g = NULL;
    zt_train_settings S;
    st = zt_cli_layered_config(argc, argv, NULL, game ? game : "tictactoe", cfg, &name);
    const char *algorithm = NULL;
    if (st == ZT_OK) st = zt_config_string(cfg, "algorithm", "muzero", &algorithm);
    if (st == ZT_OK && strcmp(algorithm, "stochastic_muzero") != 0)
        zt_config_put(cfg, "algorithm", "muzero");
    if (st == ZT_OK) st = zt_game_new(name, cfg, &g);
    if (st == ZT_OK) st = zt_train_settings_read(cfg, g, &S);
    if (st == ZT_OK) st = zt_config_check_unused(cfg);
    if (st == ZT_OK && export_dir) {
        st = export_net(&S, g, export_dir);
        zt_game_free(g);
        zt_config_free(cfg);
        return st == ZT_OK ? 0 : zt_cli_fail(st);
    }
    zt_net *net = NULL;
    if (st == ZT_OK) st = zt_net_new(&S.net, S.backend, S.precision, 1, &net);
    if (st == ZT_OK) {
        char arch[256];
        zt_net_config_format(&S.net, arch, sizeof arch);
        if (json)
            printf("{\"game\":\"%s\",\"net\":\"%s\",\"backend\":\"%s\",\"precision\":\"%s\","
                   "\"load\":%.2f}\n",
                   name, arch, zt_net_backend_name(net), zt_precision_name(zt_net_precision(net)),
                   zt_load_average());
        else
            printf("bench muzero %s: net %s on %s/%s, load %.2f\n", name, arch,
                   zt_net_backend_name(net), zt_precision_name(zt_net_precision(net)),
                   zt_load_average());
    }
    zt_rng rng;
    zt_rng_seed(&rng, 7, 0);
    if (net) zt_net_init(net, &rng);
    int kinds = st == ZT_OK && S.net.chance_codes > 0 ? 3 : 2;
    for (int r = 0; r < kinds && st == ZT_OK; r++)
        for (int i = 0; i < nb && st == ZT_OK; i++) {
            double per_s;
            st = measure_inference(net, &S.net, batches[i], seconds, &rng, (call_kind)r, &per_s);
            if (st == ZT_OK && json)
                printf("{\"call\":\"%s\",\"threads\":1,\"batch\":%d,\"per_s\":%.1f}\n",
                       CALL_NAMES[r], batches[i], per_s);
            else if (st == ZT_OK)
                printf("%-10s 1 thread  batch %5d  %10.0f states/s\n", CALL_NAMES[r], batches[i],
                       per_s);
            fflush(stdout);
        }
    if (st == ZT_OK) {
        double sps;
        st = measure_train(&S, seconds, &rng, &sps);
        if (st == ZT_OK && json)
            printf("{\"call\":\"train\",\"threads\":%d,\"batch\":%d,\"unroll\":%d,"
                   "\"steps_per_s\":%.2f}\n",
                   S.learner_threads, S.batch, S.unroll, sps);
        else if (st == ZT_OK)
            printf("train     %d thread(s) batch %5d  K=%d  %8.1f steps/s  %10.0f samples/s\n",
                   S.learner_threads, S.batch, S.unroll, sps, sps * S.batch);
    }
    zt_net_free(net);
    zt_game_free(g);
    zt_config_free(cfg);
    if (st != ZT_OK) return zt_cli_fail(st);
    return 0;
}
