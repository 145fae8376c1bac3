/* zeroth bench selfplay: self-play throughput and memory with the training
 * settings of a game (configs/GAME.ini, then --config / --set), the actors
 * alone (no learner): positions, games and inferences per second, the mean
 * network batch, and beside them what the network alone allows at that batch
 * size: the actor's own calls (zt_net_forward, or a MuZero net's initial,
 * recurrent and afterstate calls), kind by kind and batch size by batch
 * size, timed on each actor's own net (same architecture, precision and one
 * thread), divided by the positions played.
 * Self-play as a share of that is the cost of the tree, the game and the
 * batching (target: at least 90 %).
 *
 * --ablate repeats the measurement with each optimisation turned off in turn
 * (or, for several leaves per tree, turned on when it is off by default),
 * plus the compact replay (memory only: the buffer has no dense mode, so the
 * bytes of float32 observation planes + a dense policy are computed), the
 * sampler prefetch (learner steps per second over the filled buffer, with
 * and without the sampler thread) and debug=1 (everything off). Memory is
 * what the settings change: search trees, NN cache and the replay buffer at
 * its capacity; the process's peak RSS is printed at the end. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "train/run.h"
#include "core/alloc.h"
#include "core/config.h"
#include "core/rng.h"
#include "core/thread.h"
#include "core/timer.h"
#include "game/sample.h"
#include "nn/nn.h"
#include "replay/replay.h"
#include "selfplay/actor.h"
#include "train/train.h"

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: zeroth bench selfplay [GAME] [--seconds S] [--ablate] [--model M] [--config FILE]\n"
        "                             [--set k=v ...]\n\n"
        "Self-play alone (actors, no learner) with the training settings of GAME (default\n"
        "connect4, or the game a --config file names: configs/GAME.ini, then each --config\n"
        "FILE over it, then --set): positions/s, games/s,\n"
        "inferences/s, mean batch, and the positions/s the network alone allows on the same\n"
        "calls (each kind of call, zt_net_forward or a MuZero net's initial, recurrent and\n"
        "afterstate, on the actors' nets at each batch size they used, as often),\n"
        "self-play as a %% of it, and memory\n"
        "(search trees + NN cache + replay buffer at capacity). The net has random weights\n"
        "unless --model M gives trained ones (a weights file, checkpoint or run directory of\n"
        "GAME; its architecture replaces the config's net): a trained net's games, batch\n"
        "sizes and cache hits are those of a real run.\n\n"
        "  --seconds S   measured seconds per row (default 5; a short warm-up comes first)\n"
        "  --ablate      one row per optimisation turned off in turn (cross-game batching,\n"
        "                K leaves per tree, bf16, NN cache, root cache, tree reuse, compact\n"
        "                replay, sampler prefetch), the other evaluator kind (private nets\n"
        "                or the shared service), then debug=1; ratios against all-on\n"
        "  --set selfplay.evaluator=shared   the actors' positions go through one evaluator\n"
        "                service thread that merges their batches (what a GPU wants)\n");
}

/* ---- settings ---- */

/* The command line's arguments, replayed onto a fresh config for each row. */
typedef struct bench_args {
    const char *game; /* the command line's; NULL: a --config file's, else connect4 */
    const char *model; /* --model: trained weights for every net (NULL: He initialisation) */
    char model_file[4096], model_spec[256];
    zt_net_config model_net;
    double seconds;
    bool ablate;
    bool has_config;
    int argc;
    char **argv;
} bench_args;

/* A row's settings, layered as zeroth train layers them
 * (zt_cli_layered_config: configs/GAME.ini, then --config and --set in
 * order), then `extra` (NULL-terminated assignments). The caller frees
 * *game and *cfg. */
static zt_status row_settings(const bench_args *A, const char *const *extra, zt_config **cfg_out,
                              zt_game **game, zt_train_settings *S)
{
    *game = NULL;
    zt_config *cfg = zt_config_new();
    const char *name = NULL;
    zt_status st = zt_cli_layered_config(A->argc, A->argv, NULL, A->game, cfg, &name);
    if (st == ZT_OK && !name) {
        /* nothing names a game: the default one */
        zt_config_free(cfg);
        cfg = zt_config_new();
        st = zt_cli_layered_config(A->argc, A->argv, NULL, "connect4", cfg, &name);
    }
    *cfg_out = cfg;
    for (int i = 0; extra && extra[i] && st == ZT_OK; i++) st = zt_config_set(cfg, extra[i]);
    if (st == ZT_OK) st = zt_game_new(name, cfg, game);
    if (st == ZT_OK) st = zt_train_settings_read(cfg, *game, S);
    if (st == ZT_OK) st = zt_config_check_unused(cfg);
    if (st == ZT_OK && A->model) {
        char spec[256];
        zt_game_spec(*game, spec, sizeof spec);
        if (strcmp(spec, A->model_spec) != 0)
            st = zt_fail(ZT_ERR_INVALID, "--model %s plays '%s', not '%s'", A->model,
                         A->model_spec, spec);
        S->net = A->model_net;
    }
    /* precision = auto: the actors a training run would have */
    if (st == ZT_OK) st = zt_train_settings_choose_int8(*game, S);
    return st;
}

/* ---- self-play ---- */

typedef struct init_ctx {
    const zt_train_settings *S;
    const zt_game *g;
    const bench_args *A;
} init_ctx;

enum { INT8_CALIBRATION = 128 };

/* He initialisation from the run's seed; for int8 actors then int8, its
 * ranges calibrated on random-play positions (training calibrates on
 * replay positions, in the learner). */
static zt_status init_weights(zt_net *net, void *ctx)
{
    const init_ctx *c = ctx;
    zt_rng init;
    zt_rng_seed(&init, c->S->seed, 0x6e657421ULL);
    if (c->A->model) {
        ZT_TRY(zt_net_load(net, c->A->model_spec, c->A->model_file));
    } else {
        zt_net_init(net, &init);
    }
    zt_net_params_changed(net);
    if (!c->S->int8_actors) return ZT_OK;
    ZT_TRY(zt_net_set_precision(net, ZT_PRECISION_INT8));
    const int *sh = c->g->obs_shape;
    float *obs = zt_xmalloc((size_t)INT8_CALIBRATION * sh[0] * sh[1] * sh[2] * sizeof(float));
    zt_game_sample_observations(c->g, &init, INT8_CALIBRATION, obs, NULL);
    zt_status st = zt_net_calibrate(net, INT8_CALIBRATION, obs);
    free(obs);
    return st;
}

typedef struct actor_run {
    zt_actor *actor;
    zt_evaluator_pool *pool;
    int id;
    zt_replay *rb;
    double warmup, seconds;
    zt_actor_stats before, after;
    zt_evaluator_stats ev_before, ev_after;
    uint64_t *counts; /* network calls per kind and batch size in the measured interval */
    double elapsed;
    zt_status st;
    char message[256];
} actor_run;

/* Steps the actor through a warm-up and then the measured interval, timing
 * itself so that no other thread reads its counters while it runs. */
static void *actor_main(void *arg)
{
    actor_run *r = arg;
    zt_traj_sink sink = zt_traj_sink_replay(r->rb);
    int max_b = zt_evaluator_pool_max_batch(r->pool, r->id);
    size_t ncounts = (size_t)ZT_CALL_KINDS * ((size_t)max_b + 1);
    uint64_t *at_start = zt_xcalloc(ncounts, sizeof *at_start);
    double t0 = zt_now_s(), tm = 0;
    bool measuring = false;
    for (;;) {
        double now = zt_now_s();
        if (!measuring && now - t0 >= r->warmup) {
            measuring = true;
            r->before = zt_actor_get_stats(r->actor);
            r->ev_before = zt_evaluator_pool_stats(r->pool, r->id);
            zt_evaluator_pool_batch_counts(r->pool, r->id, at_start);
            tm = now;
        }
        if (measuring && now - tm >= r->seconds) {
            r->after = zt_actor_get_stats(r->actor);
            r->ev_after = zt_evaluator_pool_stats(r->pool, r->id);
            if (zt_evaluator_pool_max_batch(r->pool, r->id) != max_b) {
                /* the counts' layout changed under us; cannot happen when
                 * the pool was sized by zt_actor_eval_batch */
                r->st = zt_fail(ZT_ERR_INVALID, "the actor's batches outgrew its evaluator (%d)",
                                max_b);
                snprintf(r->message, sizeof r->message, "%s", zt_error_message());
                break;
            }
            zt_evaluator_pool_batch_counts(r->pool, r->id, r->counts);
            for (size_t i = 0; i < ncounts; i++) r->counts[i] -= at_start[i];
            r->elapsed = now - tm;
            break;
        }
        r->st = zt_actor_step(r->actor, &sink);
        if (r->st != ZT_OK) {
            snprintf(r->message, sizeof r->message, "%s", zt_error_message());
            break;
        }
    }
    free(at_start);
    return NULL;
}

typedef struct net_run {
    zt_net *net;
    int max_b;
    const uint64_t *counts; /* the actor's calls per kind and batch size (zt_eval_call) */
    double seconds;
    const float *obs;
    int num_actions;
    float *logits, *value;
    /* a MuZero net's calls: hidden states (from h on obs), actions, outputs */
    float *hidden, *next_hidden, *scalars, *chance_logits;
    int *actions;
    double net_s; /* what those calls cost the network alone */
    zt_status st;
    char message[256];
} net_run;

/* One call of `kind` at batch b on the net alone. */
static zt_status net_call(net_run *r, zt_eval_call kind, int b)
{
    switch (kind) {
    case ZT_CALL_INITIAL:
        return zt_net_initial(r->net, b, r->obs, r->hidden, r->logits, r->value);
    case ZT_CALL_RECURRENT:
        return zt_net_recurrent(r->net, b, r->hidden, r->actions, r->next_hidden, r->scalars,
                                r->logits, r->value, r->scalars + r->max_b);
    case ZT_CALL_AFTERSTATE:
        return zt_net_afterstate(r->net, b, r->hidden, r->actions, r->next_hidden, r->chance_logits,
                                 r->scalars);
    default:
        return zt_net_forward(r->net, b, r->obs, r->logits, r->value);
    }
}

/* The network alone on the actor's calls: each kind of call at each batch
 * size that occurred is timed back to back (a share of `seconds` each, at
 * least 3 calls), and net_s = sum over kinds and sizes of calls x time per
 * call. A MuZero net's recurrent and afterstate calls step hidden states
 * that h made from the observations, with actions (or, on a Stochastic
 * MuZero net's recurrent, chance codes) spread over the range. */
static void *net_main(void *arg)
{
    net_run *r = arg;
    size_t row = (size_t)r->max_b + 1;
    int sizes = 0;
    for (size_t i = 0; i < ZT_CALL_KINDS * row; i++) sizes += i % row != 0 && r->counts[i] > 0;
    double slice = sizes ? r->seconds / sizes : 0;
    r->st = ZT_OK;
    r->net_s = 0;
    const zt_net_config *cfg = zt_net_config_of(r->net);
    if (cfg->kind == ZT_NET_MUZERO)
        r->st = zt_net_initial(r->net, r->max_b, r->obs, r->hidden, r->logits, r->value);
    for (int k = 0; k < ZT_CALL_KINDS && r->st == ZT_OK; k++) {
        /* a Stochastic MuZero net's recurrent steps afterstates with codes */
        int range =
            k == ZT_CALL_RECURRENT && cfg->chance_codes > 0 ? cfg->chance_codes : r->num_actions;
        for (int i = 0; i < r->max_b; i++) r->actions[i] = (int)((i * 7u + 3u) % (unsigned)range);
        for (int b = 1; b <= r->max_b && r->st == ZT_OK; b++) {
            uint64_t n = r->counts[(size_t)k * row + b];
            if (!n) continue;
            r->st = net_call(r, (zt_eval_call)k, b);
            uint64_t calls = 0;
            double t0 = zt_now_s(), t = t0;
            while (r->st == ZT_OK && (t - t0 < slice || calls < 3)) {
                r->st = net_call(r, (zt_eval_call)k, b);
                calls++;
                t = zt_now_s();
            }
            r->net_s += (double)n * (t - t0) / (double)calls;
        }
    }
    if (r->st != ZT_OK) snprintf(r->message, sizeof r->message, "%s", zt_error_message());
    return NULL;
}

/* One row's measurement. */
typedef struct result {
    double pos_s, games_s, inf_s;
    double mean_batch, inf_per_pos;
    double net_only_pos_s;         /* what the net alone allows at the same batch sizes */
    uint64_t kind_calls[ZT_CALL_KINDS], kind_positions[ZT_CALL_KINDS], moves; /* zt_eval_call */
    double in_net;                 /* share of the actors' time inside the net */
    size_t trees, nncache, replay; /* bytes */
    double bytes_per_position, dense_bytes_per_position;
    zt_replay_diversity diversity; /* of what was played (warm-up included) */
} result;

static size_t row_memory(const result *r)
{
    return r->trees + r->nncache + r->replay;
}

/* Runs S's actors alone for `seconds` after a warm-up; keeps the replay
 * buffer they filled in *rb_out when asked (the learner rows train on it). */
static zt_status measure_selfplay(const bench_args *A, const zt_game *g,
                                  const zt_train_settings *S, double seconds,
                                  result *r, zt_replay **rb_out)
{
    memset(r, 0, sizeof *r);
    int n = S->actors;
    zt_replay *rb = NULL;
    ZT_TRY(zt_replay_new(g, &S->replay, &rb));
    actor_run *runs = zt_xcalloc((size_t)n, sizeof *runs);
    net_run *nets = zt_xcalloc((size_t)n, sizeof *nets);
    pthread_t *threads = zt_xcalloc((size_t)n, sizeof *threads);
    int obs_size = zt_game_obs_size(g);
    bool shared = S->evaluator == ZT_EVALUATOR_SHARED;
    zt_evaluator_pool *pool = NULL;
    zt_status st = zt_evaluator_pool_new(&S->net, S->backend, S->precision, S->evaluator, n,
                                         zt_actor_eval_batch(g, &S->actor), n, S->inflight, &pool);
    zt_model_factory mf = zt_model_factory_for_evaluator();
    init_ctx ic = {S, g, A};
    for (int i = 0; i < n && st == ZT_OK; i++) {
        zt_actor_config ac = S->actor;
        ac.id = i;
        /* the same He-initialised weights in every net, as after a
         * publication; the root cache is built for them */
        st = zt_evaluator_pool_update(pool, i, 1, init_weights, &ic);
        zt_evaluator ev = zt_evaluator_pool_client(pool, i);
        if (st == ZT_OK) st = zt_actor_new(g, &mf, &ev, &ac, &runs[i].actor);
        if (st != ZT_OK) break;
        runs[i].pool = pool;
        runs[i].id = i;
        runs[i].rb = rb;
        runs[i].counts =
            zt_xcalloc((size_t)ZT_CALL_KINDS * ((size_t)zt_evaluator_pool_max_batch(pool, i) + 1),
                       sizeof *runs[i].counts);
        runs[i].seconds = seconds;
        runs[i].warmup = seconds / 10 > 0.5 ? seconds / 10 : 0.5;
    }
    int started = 0;
    while (st == ZT_OK && started < n) {
        if (pthread_create(&threads[started], NULL, actor_main, &runs[started]) != 0)
            st = zt_fail(ZT_ERR_UNSUPPORTED, "cannot start actor thread %d", started);
        else
            started++;
    }
    for (int i = 0; i < started; i++) pthread_join(threads[i], NULL);
    for (int i = 0; i < started && st == ZT_OK; i++)
        if (runs[i].st != ZT_OK) st = zt_fail(runs[i].st, "actor %d: %s", i, runs[i].message);

    uint64_t moves = 0, games = 0, inferences = 0, calls = 0, net_ns = 0;
    double elapsed = 0;
    for (int i = 0; i < n && st == ZT_OK; i++) {
        const zt_actor_stats *a = &runs[i].after, *b = &runs[i].before;
        moves += a->moves - b->moves;
        games += a->games - b->games;
        inferences += a->inferences - b->inferences;
        calls += a->net_calls - b->net_calls;
        /* a shared service's time is counted once */
        if (!shared || i == 0) net_ns += runs[i].ev_after.net_ns - runs[i].ev_before.net_ns;
        elapsed += runs[i].elapsed;
        zt_actor_memory m = zt_actor_get_memory(runs[i].actor);
        r->trees += m.trees;
        r->nncache += m.nncache;
    }
    if (st == ZT_OK && (moves == 0 || calls == 0))
        st = zt_fail(ZT_ERR_INVALID, "no move played in %.1f s: raise --seconds", seconds);
    if (st == ZT_OK) {
        /* every actor ran for about `seconds`: rates add up over actors */
        double per_actor = elapsed / n;
        r->pos_s = (double)moves / per_actor;
        r->games_s = (double)games / per_actor;
        r->inf_s = (double)inferences / per_actor;
        r->mean_batch = (double)inferences / (double)calls;
        r->inf_per_pos = (double)inferences / (double)moves;
        r->in_net = (double)net_ns * 1e-9 / (shared ? elapsed / n : elapsed);
    }

    /* The network alone on the same calls (each actor's batch sizes, on
     * its own net, all actors at once: the threads the actors used; or the
     * service's merged batches on the shared net and its threads). */
    float *obs = NULL;
    int max_b = pool ? zt_evaluator_pool_max_batch(pool, 0) : 1;
    int nnets = shared ? 1 : n;
    if (st == ZT_OK) {
        obs = zt_xmalloc((size_t)max_b * obs_size * sizeof *obs);
        uint64_t state[ZT_MAX_STATE_BYTES / 8];
        g->reset(g, state);
        g->observe(g, state, obs);
        for (int b = 1; b < max_b; b++)
            memcpy(obs + (size_t)b * obs_size, obs, (size_t)obs_size * sizeof *obs);
    }
    started = 0;
    while (st == ZT_OK && started < nnets) {
        net_run *nr = &nets[started];
        nr->net = zt_evaluator_pool_net(pool, started);
        nr->max_b = max_b;
        nr->counts = runs[started].counts;
        nr->seconds = seconds / 3 < 0.5 ? 0.5 : seconds / 3 > 3 ? 3 : seconds / 3;
        nr->obs = obs;
        nr->logits = zt_xmalloc((size_t)max_b * g->num_actions * sizeof(float));
        nr->value = zt_xmalloc((size_t)max_b * zt_net_value_size(&S->net) * sizeof(float));
        nr->num_actions = g->num_actions;
        if (S->net.kind == ZT_NET_MUZERO) {
            size_t hs = zt_net_hidden_size(&S->net);
            int codes = S->net.chance_codes > 0 ? S->net.chance_codes : 1;
            nr->hidden = zt_xmalloc((size_t)max_b * hs * sizeof(float));
            nr->next_hidden = zt_xmalloc((size_t)max_b * hs * sizeof(float));
            nr->scalars = zt_xmalloc(2 * (size_t)max_b * sizeof(float)); /* reward/q, turn */
            nr->chance_logits = zt_xmalloc((size_t)max_b * codes * sizeof(float));
        }
        nr->actions = zt_xmalloc((size_t)max_b * sizeof(int));
        if (pthread_create(&threads[started], NULL, net_main, nr) != 0)
            st = zt_fail(ZT_ERR_UNSUPPORTED, "cannot start network thread %d", started);
        else
            started++;
    }
    for (int i = 0; i < started; i++) pthread_join(threads[i], NULL);
    double net_pos_s = 0;
    size_t row = (size_t)max_b + 1;
    for (int i = 0; i < nnets && st == ZT_OK; i++)
        for (int k = 0; k < ZT_CALL_KINDS; k++)
            for (int b = 1; b <= max_b; b++) {
                uint64_t c = runs[i].counts[(size_t)k * row + b];
                r->kind_calls[k] += c;
                r->kind_positions[k] += c * (uint64_t)b;
            }
    r->moves = moves;
    for (int i = 0; i < started && st == ZT_OK; i++) {
        if (nets[i].st != ZT_OK) st = zt_fail(nets[i].st, "network %d: %s", i, nets[i].message);
        else if (nets[i].net_s > 0 && !shared)
            net_pos_s += (double)(runs[i].after.moves - runs[i].before.moves) / nets[i].net_s;
    }
    /* shared: every actor's moves over the merged calls of one window */
    if (st == ZT_OK && shared && started == 1 && nets[0].net_s > 0)
        net_pos_s = (double)moves / nets[0].net_s;
    if (st == ZT_OK) {
        r->net_only_pos_s = net_pos_s;
        zt_replay_stats rs = zt_replay_get_stats(rb);
        r->replay = rs.allocated_bytes;
        r->bytes_per_position = rs.bytes_per_position;
        r->dense_bytes_per_position = (double)zt_replay_dense_bytes(g);
        st = zt_replay_get_diversity(rb, &r->diversity);
    }
    for (int i = 0; i < n; i++) {
        free(nets[i].logits);
        free(nets[i].value);
        free(nets[i].hidden);
        free(nets[i].next_hidden);
        free(nets[i].scalars);
        free(nets[i].chance_logits);
        free(nets[i].actions);
        free(runs[i].counts);
        zt_actor_free(runs[i].actor);
    }
    zt_evaluator_pool_free(pool);
    free(obs);
    free(runs);
    free(nets);
    free(threads);
    if (st == ZT_OK && rb_out) {
        *rb_out = rb;
    } else {
        zt_replay_free(rb);
    }
    return st;
}

/* ---- the learner ---- */

/* Learner steps per second over a filled buffer, drawing batches with the
 * sampler thread (prefetch) or on the learner's own thread; then *draw_s is
 * the seconds per step spent drawing (what prefetch can hide at most). */
static zt_status measure_learner(const zt_game *g, const zt_train_settings *S, zt_replay *rb,
                                 double seconds, double *steps_s, double *draw_s)
{
    bool wdl = S->net.value_kind == ZT_VALUE_WDL;
    zt_net *net = NULL;
    zt_trainer *trainer = NULL;
    zt_replay_sampler *sampler = NULL;
    zt_replay_batch batch = {0};
    bool batch_ready = false;
    zt_rng rng;
    zt_rng_seed(&rng, S->seed, 0x73616d70ULL);
    zt_status st = zt_net_new(&S->net, S->backend, S->precision, S->learner_threads, &net);
    if (st == ZT_OK) {
        zt_rng init;
        zt_rng_seed(&init, S->seed, 0x6e657421ULL);
        zt_net_init(net, &init);
        st = zt_trainer_new(net, &S->optimizer, &trainer);
    }
    if (st == ZT_OK && S->prefetch) st = zt_replay_sampler_new(rb, S->batch, wdl, &rng, &sampler);
    if (st == ZT_OK && !S->prefetch) {
        st = zt_replay_batch_init(&batch, g, S->batch, wdl);
        batch_ready = st == ZT_OK;
    }
    /* two steps of warm-up (kernel creation), then the timed ones */
    long steps = 0;
    double t0 = 0, t = 0, drawing = 0;
    for (int i = 0; st == ZT_OK && (i < 2 || t - t0 < seconds || steps < 3); i++) {
        if (i == 2) t0 = zt_now_s();
        const zt_replay_batch *b = &batch;
        double d0 = zt_now_s();
        st = sampler ? zt_replay_sampler_next(sampler, &b) : zt_replay_sample(rb, &rng, &batch);
        if (i >= 2) drawing += zt_now_s() - d0;
        if (st != ZT_OK) break;
        zt_train_batch tb = {.B = b->size,
                             .obs = b->obs,
                             .policy_target = b->policy,
                             .legal = b->legal,
                             .value_target = wdl ? b->wdl : b->value};
        zt_train_losses l;
        st = zt_trainer_step(trainer, &tb, &l);
        if (i >= 2) steps++;
        t = zt_now_s();
    }
    if (st == ZT_OK) {
        *steps_s = (double)steps / (t - t0);
        *draw_s = drawing / (double)steps;
    }
    zt_replay_sampler_free(sampler);
    if (batch_ready) zt_replay_batch_free(&batch);
    zt_trainer_free(trainer);
    zt_net_free(net);
    return st;
}

/* ---- the table ---- */

typedef enum row_kind {
    ROW_SELFPLAY,
    ROW_DENSE_REPLAY, /* memory only */
    ROW_LEARNER,
} row_kind;

typedef struct row {
    char name[64];
    const char *sets[8]; /* --set assignments of the row, NULL-terminated */
    row_kind kind;
    bool turns_on; /* the row turns on an optimisation that is off by default */
} row;

static double mib(size_t bytes)
{
    return (double)bytes / (1024.0 * 1024.0);
}

static void print_header(void)
{
    printf("%-40s %9s %7s %9s %6s %6s %9s %6s %6s %8s | %7s %7s | %s\n", "row", "pos/s", "games/s",
           "infer/s", "batch", "inf/ps", "net-only", "%net", "in-net", "mem MiB", "speed", "mem",
           "this optimisation brings");
}

/* A MuZero net's calls by kind, which net-only times each on its own: per
 * move, and their mean batch. */
static void print_call_mix(const result *r)
{
    static const char *const names[ZT_CALL_KINDS] = {"eval", "initial", "recurrent", "afterstate"};
    if (!r->kind_calls[ZT_CALL_RECURRENT] && !r->kind_calls[ZT_CALL_AFTERSTATE]) return;
    printf("%-40s", "  network calls per move (mean batch)");
    for (int k = 0; k < ZT_CALL_KINDS; k++)
        if (r->kind_calls[k])
            printf(" %s %.2f (%.1f)", names[k], (double)r->kind_calls[k] / (double)r->moves,
                   (double)r->kind_positions[k] / (double)r->kind_calls[k]);
    printf("\n");
}

/* A self-play row; base is the all-on row (NULL for itself). */
static void print_selfplay(const row *rw, const result *r, const result *base)
{
    printf("%-40s %9.0f %7.2f %9.0f %6.1f %6.2f %9.0f %5.1f%% %5.1f%% %8.1f", rw->name, r->pos_s,
           r->games_s, r->inf_s, r->mean_batch, r->inf_per_pos, r->net_only_pos_s,
           100 * r->pos_s / r->net_only_pos_s, 100 * r->in_net, mib(row_memory(r)));
    if (!base) {
        printf(" | %7s %7s |\n", "1.00x", "1.00x");
        return;
    }
    double speed = r->pos_s / base->pos_s;
    double mem = (double)row_memory(r) / (double)row_memory(base);
    /* what the optimisation brings: all-on against the row that lacks it,
     * or the row that adds it against all-on */
    double gain = rw->turns_on ? speed : 1 / speed;
    double saved = rw->turns_on ? mib(row_memory(base)) - mib(row_memory(r))
                                : mib(row_memory(r)) - mib(row_memory(base));
    printf(" | %6.2fx %6.2fx | %.2fx positions/s, %+.1f MiB saved\n", speed, mem, gain, saved);
}

static int run(const bench_args *A)
{
    row rows[16];
    int nrows = 0;
    rows[nrows++] = (row){.name = "all on", .kind = ROW_SELFPLAY};

    zt_config *cfg = NULL;
    zt_game *g = NULL;
    zt_train_settings S;
    zt_status st = row_settings(A, NULL, &cfg, &g, &S);
    if (st != ZT_OK) {
        zt_game_free(g);
        zt_config_free(cfg);
        return zt_cli_fail(st);
    }
    /* the backend and precision "auto" resolve to */
    zt_net *probe = NULL;
    st = zt_net_new(&S.net, S.backend, S.precision, 1, &probe);
    if (st != ZT_OK) {
        zt_game_free(g);
        zt_config_free(cfg);
        return zt_cli_fail(st);
    }
    bool bf16 = zt_net_precision(probe) == ZT_PRECISION_BF16;
    char arch[256];
    zt_net_config_format(&S.net, arch, sizeof arch);
    int K = S.actor.search.leaves_per_round;
    if (A->ablate) {
        rows[nrows++] =
            (row){.name = "cross-game batching off (G=1)", .sets = {"games_per_actor=1"}};
        if (K > 1)
            rows[nrows++] =
                (row){.name = "several leaves off (K=1)", .sets = {"search.leaves_per_tree=1"}};
        else
            rows[nrows++] = (row){.name = "K=4 leaves per tree (default K=1: off)",
                                  .sets = {"search.leaves_per_tree=4"},
                                  .turns_on = true};
        if (S.int8_actors)
            rows[nrows++] = (row){.name = "int8 actors off (precision=bf16)",
                                  .sets = {"precision=bf16"}};
        if (bf16)
            rows[nrows++] = (row){.name = "bf16 off (precision=fp32)", .sets = {"precision=fp32"}};
        else
            rows[nrows++] = (row){.name = "bf16 (off here: fp32 in use)",
                                  .sets = {"precision=bf16"},
                                  .turns_on = true};
        rows[nrows++] = (row){.name = "NN cache off", .sets = {"selfplay.nncache=0"}};
        rows[nrows++] = (row){.name = "root cache off", .sets = {"selfplay.root_cache=0"}};
        rows[nrows++] = (row){.name = "tree reuse off", .sets = {"search.tree_reuse=0"}};
        if (S.evaluator == ZT_EVALUATOR_PRIVATE)
            rows[nrows++] = (row){.name = "shared evaluator (default private)",
                                  .sets = {"selfplay.evaluator=shared"},
                                  .turns_on = true};
        else
            rows[nrows++] = (row){.name = "private evaluators (shared in use)",
                                  .sets = {"selfplay.evaluator=private"}};
        rows[nrows++] =
            (row){.name = "compact replay off (dense f32, memory)", .kind = ROW_DENSE_REPLAY};
        rows[nrows++] = (row){.name = "learner steps/s, sampler prefetch on", .kind = ROW_LEARNER};
        rows[nrows++] = (row){.name = "learner steps/s, sampler prefetch off",
                              .sets = {"learner.prefetch=0"},
                              .kind = ROW_LEARNER};
        rows[nrows++] = (row){.name = "debug=1 (all off)", .sets = {"debug=1"}};
    }
    printf(
        "self-play %s: %d actor(s) x %d games, %s %d sims, K=%d, net %s on %s/%s, %.1f s per row, "
        "%d cpus, load %.2f, weights %s\n",
        g->name, S.actors, S.actor.games,
        S.actor.search.algorithm == ZT_SEARCH_GUMBEL ? "gumbel" : "puct",
        S.actor.search.num_simulations, K, arch, zt_net_backend_name(probe),
        S.int8_actors ? "int8" : zt_precision_name(zt_net_precision(probe)), A->seconds, zt_cpu_count(), zt_load_average(),
        A->model ? A->model_file : "random (He initialisation)");
    zt_net_free(probe);
    zt_game_free(g);
    zt_config_free(cfg);

    print_header();
    fflush(stdout);
    /* On a terminal, a line saying which row is being measured. */
    zt_progress_meter meter;
    zt_progress_meter_init(&meter, "bench selfplay", "rows", nrows, NULL, NULL);
    result base = {0};
    zt_replay *filled = NULL;
    zt_game *filled_game = NULL; /* the buffer borrows its game */
    double learner_base = 0;
    for (int i = 0; i < nrows && st == ZT_OK; i++) {
        const row *rw = &rows[i];
        zt_progress_meter_update(&meter, i, "measuring: %s", rw->name);
        if (rw->kind == ROW_DENSE_REPLAY) {
            zt_progress_meter_pause(&meter);
            /* the same run with the replay stored as float32 observation
             * planes + a dense float policy per position */
            result r = base;
            size_t dense = (size_t)((double)S.replay.capacity * base.dense_bytes_per_position);
            r.replay = dense;
            printf("%-40s %9s %7s %9s %6s %6s %9s %6s %6s %8.1f | %7s %6.2fx | %.1f MiB saved "
                   "(%.1f vs %.0f bytes/position, %.2f%% less, %lld positions)\n",
                   rw->name, "-", "-", "-", "-", "-", "-", "-", "-", mib(row_memory(&r)), "-",
                   (double)row_memory(&r) / (double)row_memory(&base),
                   mib(dense) - mib(base.replay), base.bytes_per_position,
                   base.dense_bytes_per_position,
                   100 * (1 - base.bytes_per_position / base.dense_bytes_per_position),
                   (long long)S.replay.capacity);
            continue;
        }
        zt_train_settings RS;
        st = row_settings(A, rw->sets, &cfg, &g, &RS);
        if (st == ZT_OK && rw->kind == ROW_LEARNER) {
            double steps_s = 0, draw_s = 0;
            st = measure_learner(g, &RS, filled, A->seconds / 2, &steps_s, &draw_s);
            zt_progress_meter_pause(&meter);
            if (st == ZT_OK) {
                bool first = learner_base == 0;
                if (first) learner_base = steps_s;
                printf("%-40s %9.2f %7s %9s %6s %6s %9s %6s %6s %8s | %6.2fx %7s |", rw->name,
                       steps_s, "-", "-", "-", "-", "-", "-", "-", "-", steps_s / learner_base,
                       "-");
                if (!first)
                    printf(" %.2fx learner steps/s (batch %d, %d learner thread(s); drawing a "
                           "batch takes "
                           "%.1f of the %.1f ms per step)",
                           learner_base / steps_s, RS.batch, RS.learner_threads, 1e3 * draw_s,
                           1e3 / steps_s);
                printf("\n");
            }
        } else if (st == ZT_OK) {
            result r;
            st = measure_selfplay(A, g, &RS, A->seconds, &r, i == 0 && A->ablate ? &filled : NULL);
            zt_progress_meter_pause(&meter);
            if (st == ZT_OK) {
                print_selfplay(rw, &r, i == 0 ? NULL : &base);
                if (i == 0) print_call_mix(&r);
                if (i == 0 && r.diversity.games > 0) {
                    char text[ZT_REPLAY_DIVERSITY_TEXT];
                    zt_replay_diversity_format(&r.diversity, text, sizeof text);
                    printf("%-40s %s\n", "  what was played (replay_diversity)", text);
                }
                if (i == 0) base = r;
            }
        }
        if (filled && !filled_game) {
            filled_game = g;
        } else {
            zt_game_free(g);
        }
        zt_config_free(cfg);
        fflush(stdout);
    }
    zt_progress_meter_end(&meter);
    zt_replay_free(filled);
    zt_game_free(filled_game);
    if (st != ZT_OK) return zt_cli_fail(st);
    printf(
        "%%net: self-play positions/s as a share of net-only (the same network calls, kind by "
        "kind and batch size by batch size, timed back to back); in-net: share of the actors' time "
        "inside the net. "
        "mem: trees + NN cache + replay at capacity (%lld positions); speed, mem: against all on; "
        "learner rows against prefetch on.\n",
        (long long)S.replay.capacity);
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0)
            printf("peak RSS of this process (VmHWM): %s", line + 6 + strspn(line + 6, " \t"));
    if (f) fclose(f);
    return 0;
}

int zt_bench_selfplay(int argc, char **argv)
{
    bench_args A = {.seconds = 5, .argc = argc, .argv = argv};
    bool game_given = false;
    zt_status st = ZT_OK;
    for (int i = 1; i < argc && st == ZT_OK; i++) {
        const char *v;
        if (zt_cli_is_help(argv[i])) {
            usage(stdout);
            return 0;
        }
        if (zt_cli_flag_value(argc, argv, &i, "--seconds", &v, &st)) {
            char *end;
            A.seconds = st == ZT_OK ? strtod(v, &end) : 0;
            if (st == ZT_OK && (*end || !(A.seconds > 0) || A.seconds > 3600))
                st = zt_fail(ZT_ERR_INVALID, "--seconds: expected a number in (0, 3600], got '%s'",
                             v);
        } else if (zt_cli_flag_value(argc, argv, &i, "--model", &A.model, &st)) {
            if (st == ZT_OK) st = zt_run_resolve_weights(A.model, A.model_file, sizeof A.model_file);
            if (st == ZT_OK)
                st = zt_net_file_info(A.model_file, &A.model_net, A.model_spec, sizeof A.model_spec);
        } else if (strcmp(argv[i], "--ablate") == 0) {
            A.ablate = true;
        } else if (zt_cli_skip_config_arg(argc, argv, &i, &A.has_config, &st)) {
            continue;
        } else if (argv[i][0] == '-') {
            st = zt_fail(ZT_ERR_INVALID, "unknown flag '%s' (see zeroth bench selfplay --help)",
                         argv[i]);
        } else if (!game_given) {
            A.game = argv[i];
            game_given = true;
        } else {
            st = zt_fail(ZT_ERR_INVALID, "unexpected argument '%s'", argv[i]);
        }
    }
    if (st != ZT_OK) return zt_cli_fail(st);
    return run(&A);
}
