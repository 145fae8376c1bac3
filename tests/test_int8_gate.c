/* Tests of int8 actors' publication path (train/int8_gate.h): the settings
 * (precision = int8 makes the actors int8 and the learner auto; auto leaves
 * the choice to a timing at the start, never in deterministic mode or
 * MuZero; gate_every 0 is 5, or 1 deterministic; bad gate thresholds are
 * refused), the timing auto goes by (zt_int8_speedup), the gate itself on random Connect Four and
 * tic-tac-toe nets (a permissive threshold passes and the tail makes an
 * actor's net int8 with outputs equal, bit for bit, to a net calibrated the
 * same way; a threshold no int8 net can meet fails and the tail sends the
 * actor's net back to the fallback precision), and the learner's
 * publication: a forced failure is published as a fallback version and
 * counted in the stats the metrics record. Skips (exit 0) where the cpu
 * backend has no int8. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/config.h"
#include "core/rng.h"
#include "game/game.h"
#include "game/sample.h"
#include "nn/backend.h"
#include "nn/nn.h"
#include "replay/replay.h"
#include "selfplay/weights.h"
#include "train/int8_gate.h"
#include "train/learner.h"
#include "train/train.h"
#include "zt_test.h"

#define MUST(expr)                                                                                 \
    do {                                                                                           \
        zt_status s_ = (expr);                                                                     \
        if (s_ != ZT_OK) {                                                                         \
            printf("FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, #expr, zt_error_message());         \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static zt_status read_settings(const char *game, const char *const *kv, zt_game **g,
                               zt_train_settings *S)
{
    zt_config *cfg = zt_config_new();
    for (int i = 0; kv[i]; i += 2) zt_config_put(cfg, kv[i], kv[i + 1]);
    zt_status st = zt_game_new(game, NULL, g);
    if (st == ZT_OK) st = zt_train_settings_read(cfg, *g, S);
    zt_config_free(cfg);
    return st;
}

static void test_settings(void)
{
    zt_game *g = NULL;
    zt_train_settings S;
    MUST(read_settings("tictactoe", (const char *const[]){"precision", "int8", NULL}, &g, &S));
    CHECK(S.int8_actors && S.precision == ZT_PRECISION_AUTO, "precision = int8: actors %d, %s",
          S.int8_actors, zt_precision_name(S.precision));
    CHECK(S.int8_gate.agreement == 0.99 && S.int8_gate.value_mae == 0.02, "default thresholds");
    zt_game_free(g);
    MUST(read_settings("tictactoe", (const char *const[]){"precision", "bf16", NULL}, &g, &S));
    CHECK(!S.int8_actors && S.precision == ZT_PRECISION_BF16, "precision = bf16 made int8 actors");
    zt_game_free(g);
    /* auto: int8 actors are chosen by a timing at the run's start, never
     * in deterministic mode; gate_every 0 is 5, or 1 in deterministic mode */
    MUST(read_settings("tictactoe", (const char *const[]){"precision", "auto", NULL}, &g, &S));
    CHECK(!S.int8_actors && S.int8_auto, "auto: actors %d, to measure %d", S.int8_actors,
          S.int8_auto);
    CHECK(S.int8_gate.every == ZT_INT8_GATE_EVERY_AUTO && S.int8_gate.auto_speedup == 2,
          "auto: gate_every %d, auto_speedup %g", S.int8_gate.every, S.int8_gate.auto_speedup);
    zt_game_free(g);
    MUST(read_settings("tictactoe",
                       (const char *const[]){"precision", "auto", "mode", "deterministic", NULL},
                       &g, &S));
    CHECK(!S.int8_actors && !S.int8_auto && S.int8_gate.every == 1,
          "deterministic auto: actors %d, to measure %d, gate_every %d", S.int8_actors, S.int8_auto,
          S.int8_gate.every);
    zt_game_free(g);
    MUST(read_settings("tictactoe",
                       (const char *const[]){"precision", "auto", "algorithm", "muzero", NULL}, &g,
                       &S));
    CHECK(!S.int8_auto, "MuZero's auto would measure int8");
    zt_game_free(g);
    MUST(read_settings("tictactoe",
                       (const char *const[]){"precision", "int8", "backend", "ref", NULL}, &g, &S) ==
                 ZT_ERR_UNSUPPORTED
             ? ZT_OK
             : ZT_ERR_INVALID);
    zt_game_free(g);
    g = NULL;
    CHECK(read_settings("tictactoe", (const char *const[]){"int8.agreement", "1.5", NULL}, &g,
                        &S) == ZT_ERR_INVALID,
          "agreement 1.5 accepted");
    zt_game_free(g);
    g = NULL;
    MUST(read_settings("tictactoe",
                       (const char *const[]){"precision", "int8", "int8.gate_every", "5", NULL}, &g,
                       &S));
    CHECK(S.int8_gate.every == 5, "gate_every read as %d", S.int8_gate.every);
    zt_game_free(g);
    g = NULL;
    CHECK(read_settings("tictactoe",
                        (const char *const[]){"precision", "int8", "int8.gate_every", "2", "mode",
                                              "deterministic", NULL},
                        &g, &S) == ZT_ERR_INVALID,
          "gate_every 2 accepted in deterministic mode");
    zt_game_free(g);
}

/* The timing precision = auto goes by: a ratio of two real timings, on a
 * resnet and an MLP. */
static void test_speedup(void)
{
    const char *games[] = {"connect4", "tictactoe"};
    for (int i = 0; i < 2; i++) {
        zt_game *g;
        MUST(zt_game_new(games[i], NULL, &g));
        zt_net_config cfg;
        zt_net_config_default(&cfg, g->obs_shape[0], g->obs_shape[1], g->obs_shape[2],
                              g->num_actions);
        if (i == 1) { /* configs/tictactoe.ini */
            cfg.kind = ZT_NET_MLP;
            cfg.mlp_hidden = 128;
            cfg.mlp_layers = 2;
            cfg.mlp_norm = ZT_NORM_LAYER;
        }
        double ratio = 0;
        MUST(zt_int8_speedup(g, &cfg, "cpu", 16, 0.01, &ratio));
        CHECK(isfinite(ratio) && ratio > 0.05 && ratio < 100, "%s: int8 speedup %g", games[i],
              ratio);
        printf("int8 speed-up of the %s net at batch 16: %.2fx\n", games[i], ratio);
        CHECK(zt_int8_speedup(g, &cfg, "ref", 16, 0.01, &ratio) == ZT_ERR_UNSUPPORTED,
              "the reference backend timed int8");
        zt_game_free(g);
    }
}

static float *flat_weights(const zt_net *net, size_t *n)
{
    *n = zt_net_flat_size(net);
    float *w = zt_xmalloc(*n * sizeof(float));
    zt_net_flat_get(net, w);
    return w;
}

static void test_gate(const char *game, bool mlp)
{
    zt_game *g;
    MUST(zt_game_new(game, NULL, &g));
    zt_net_config cfg;
    zt_net_config_default(&cfg, g->obs_shape[0], g->obs_shape[1], g->obs_shape[2], g->num_actions);
    if (mlp) {
        cfg.kind = ZT_NET_MLP; /* configs/tictactoe.ini */
        cfg.mlp_hidden = 128;
        cfg.mlp_layers = 2;
        cfg.mlp_norm = ZT_NORM_LAYER;
    } else {
        cfg.channels = 32;
        cfg.blocks = 2;
    }
    zt_rng rng;
    zt_rng_seed(&rng, 99, 1);
    zt_net *src;
    MUST(zt_net_new(&cfg, "ref", ZT_PRECISION_FP32, 1, &src));
    zt_net_init(src, &rng);
    size_t nw;
    float *w = flat_weights(src, &nw);
    enum { CAL = 64 };
    size_t per = (size_t)cfg.in_h * cfg.in_w * cfg.in_c;
    float *obs = zt_xmalloc(CAL * per * sizeof(float));
    zt_game_sample_observations(g, &rng, CAL, obs, NULL);

    zt_int8_gate_config gc;
    zt_int8_gate_config_default(&gc);
    gc.positions = 128;
    zt_int8_gate *gate;
    MUST(zt_int8_gate_new(g, &cfg, "cpu", 1, &gc, 5, &gate));
    size_t tn = zt_int8_gate_tail_size(gate), tn2 = 0;
    MUST(zt_int8_gate_tail_for(&cfg, "cpu", &tn2));
    CHECK(tn > 1 && tn == tn2, "%s: tail sizes %zu and %zu", game, tn, tn2);
    float *tail = zt_xmalloc(tn * sizeof(float));
    zt_int8_gate_result r;
    MUST(zt_int8_gate_run(gate, w, CAL, obs, tail, &r)); /* the first builds the kernels */
    MUST(zt_int8_gate_run(gate, w, CAL, obs, tail, &r));
    printf("  %-10s random net, default gate: agreement %.4f (%d ties), value MAE %.4f, %s, "
           "%.3f s\n",
           game, r.agreement, r.ties, r.value_mae, r.passed ? "passed" : "failed", r.seconds);
    CHECK(r.positions == 128 && r.agreement >= 0 && r.agreement <= 1 && r.value_mae >= 0,
          "%s: result out of range", game);
    CHECK(tail[0] == (r.passed ? 1.0f : 0.0f), "%s: tail flag %g", game, (double)tail[0]);
    zt_int8_gate_free(gate);

    /* Permissive: passes; the tail makes an actor's bf16 net int8. */
    gc.agreement = 0;
    gc.value_mae = 2;
    MUST(zt_int8_gate_new(g, &cfg, "cpu", 2, &gc, 5, &gate));
    MUST(zt_int8_gate_run(gate, w, CAL, obs, tail, &r));
    CHECK(r.passed && tail[0] == 1.0f, "%s: a permissive gate failed", game);
    zt_precision fallback = zt_int8_gate_fallback(gate);
    CHECK(fallback == ZT_PRECISION_BF16 || fallback == ZT_PRECISION_FP32, "fallback %s",
          zt_precision_name(fallback));
    zt_net *actor, *direct;
    MUST(zt_net_new(&cfg, "cpu", fallback, 1, &actor));
    MUST(zt_net_reserve(actor, 16));
    zt_net_flat_set(actor, w);
    bool int8 = false;
    MUST(zt_net_take_int8_tail(actor, tail, tn, fallback, &int8));
    CHECK(int8 && zt_net_precision(actor) == ZT_PRECISION_INT8, "%s: actor not int8", game);
    MUST(zt_net_new(&cfg, "cpu", ZT_PRECISION_INT8, 1, &direct));
    zt_net_flat_set(direct, w);
    MUST(zt_net_calibrate(direct, CAL, obs));
    float *p1 = zt_xmalloc(16 * (size_t)cfg.num_actions * sizeof(float)),
          *p2 = zt_xmalloc(16 * (size_t)cfg.num_actions * sizeof(float)), v1[48], v2[48];
    MUST(zt_net_forward(actor, 16, obs, p1, v1));
    MUST(zt_net_forward(direct, 16, obs, p2, v2));
    CHECK(memcmp(p1, p2, 16 * (size_t)cfg.num_actions * sizeof(float)) == 0 &&
              memcmp(v1, v2, 16 * (size_t)zt_net_value_size(&cfg) * sizeof(float)) == 0,
          "%s: the actor's int8 net differs from one calibrated directly", game);
    CHECK(zt_net_take_int8_tail(actor, tail, tn - 1, fallback, NULL) == ZT_ERR_INVALID,
          "%s: a short tail accepted", game);
    zt_int8_gate_free(gate);

    /* A threshold no int8 net meets: fails; the actor goes back. */
    gc.agreement = 1;
    gc.value_mae = 0;
    MUST(zt_int8_gate_new(g, &cfg, "cpu", 1, &gc, 5, &gate));
    MUST(zt_int8_gate_run(gate, w, 0, NULL, tail, &r));
    CHECK(!r.passed && tail[0] == 0.0f, "%s: a strict gate passed (MAE %g)", game, r.value_mae);
    zt_net_flat_set(actor, w);
    MUST(zt_net_take_int8_tail(actor, tail, tn, fallback, &int8));
    CHECK(!int8 && zt_net_precision(actor) == fallback, "%s: actor still %s", game,
          zt_precision_name(zt_net_precision(actor)));
    MUST(zt_net_forward(actor, 16, obs, p1, v1)); /* runs, reserve kept */
    zt_int8_gate_free(gate);

    free(p1), free(p2);
    zt_net_free(actor);
    zt_net_free(direct);
    free(tail);
    free(obs);
    free(w);
    zt_net_free(src);
    zt_game_free(g);
}

/* A tic-tac-toe learner with int8 actors from the settings kv (the
 * gate's 64 positions, no prefetch, and these), its replay buffer, and the
 * floats of its tensors and of the int8 tail each version carries. */
typedef struct int8_learner {
    zt_game *g;
    zt_train_settings S;
    zt_replay *rb;
    zt_learner *l;
    size_t tensors, tail;
} int8_learner;

static void int8_learner_open(int8_learner *t, const char *const *kv)
{
    const char *all[32] = {"precision", "int8", "int8.positions", "64", "learner.prefetch", "false"};
    int n = 6;
    for (int i = 0; kv[i] && n < 30; i++) all[n++] = kv[i];
    all[n] = NULL;
    MUST(read_settings("tictactoe", all, &t->g, &t->S));
    MUST(zt_replay_new(t->g, &t->S.replay, &t->rb));
    MUST(zt_learner_new(t->g, &t->S, t->rb, &t->l));
    t->tail = zt_learner_weights_tail(t->l);
    t->tensors = zt_net_flat_size(zt_learner_net(t->l));
}

static void int8_learner_close(int8_learner *t)
{
    zt_learner_free(t->l);
    zt_replay_free(t->rb);
    zt_game_free(t->g);
}

/* The learner publishes a version that fails a forced gate as a fallback
 * one, and one that passes as int8. */
static void test_learner(const char *agreement, bool want_int8)
{
    int8_learner t;
    int8_learner_open(&t, (const char *const[]){"int8.agreement", agreement, "int8.value_mae",
                                                want_int8 ? "2" : "0", NULL});
    CHECK(t.tail > 1, "no int8 tail");
    zt_learner_publish(t.l);
    zt_learner_int8_stats q;
    CHECK(zt_learner_int8(t.l, &q), "no int8 stats");
    CHECK(q.int8_versions == (want_int8 ? 1u : 0u) && q.fallbacks == (want_int8 ? 0u : 1u),
          "agreement %s: %llu int8, %llu fallbacks", agreement,
          (unsigned long long)q.int8_versions, (unsigned long long)q.fallbacks);
    CHECK(q.last.passed == want_int8 && q.last.positions == 64, "last gate");
    const zt_weight_source *src = zt_learner_weight_source(t.l);
    size_t nt = t.tensors;
    float *w = zt_xmalloc((nt + t.tail) * sizeof(float));
    uint64_t got = 0;
    MUST(src->poll(src->ctx, 0, w, nt + t.tail, &got));
    CHECK(got == 1 && w[nt] == (want_int8 ? 1.0f : 0.0f), "published tail flag %g",
          (double)w[nt]);
    free(w);
    int8_learner_close(&t);
}

/* int8.gate_every = 3: of 7 publications the 1st, 4th and 7th run the
 * gate; the others go out with the last run's tail (verdict and ranges),
 * counted by that verdict. */
static void test_gate_every(void)
{
    int8_learner t;
    int8_learner_open(&t, (const char *const[]){"int8.agreement", "0", "int8.value_mae", "2",
                                                "int8.gate_every", "3", NULL});
    size_t nt = t.tensors, tail = t.tail;
    const zt_weight_source *src = zt_learner_weight_source(t.l);
    float *w = zt_xmalloc((nt + tail) * sizeof(float)), *first = zt_xmalloc(tail * sizeof(float));
    uint64_t have = 0;
    for (int v = 1; v <= 7; v++) {
        zt_learner_publish(t.l);
        zt_learner_int8_stats q;
        CHECK(zt_learner_int8(t.l, &q), "no int8 stats");
        uint64_t runs = (uint64_t)(v + 2) / 3;
        CHECK(q.gate_runs == runs && q.int8_versions == (uint64_t)v && q.fallbacks == 0,
              "after %d publications: %llu gate runs (want %llu), %llu int8, %llu fallbacks", v,
              (unsigned long long)q.gate_runs, (unsigned long long)runs,
              (unsigned long long)q.int8_versions, (unsigned long long)q.fallbacks);
        uint64_t got = 0;
        MUST(src->poll(src->ctx, have, w, nt + tail, &got));
        CHECK(got == (uint64_t)v, "polled version %llu, want %d", (unsigned long long)got, v);
        have = got;
        if (v == 1) memcpy(first, w + nt, tail * sizeof(float));
        else if (v < 4)
            CHECK(memcmp(first, w + nt, tail * sizeof(float)) == 0,
                  "version %d's tail is not the gate run's", v);
    }
    free(first);
    free(w);
    int8_learner_close(&t);
}

int main(void)
{
    const zt_nn_backend *be;
    if (zt_nn_backend_find("cpu", &be) != ZT_OK || !be->supports(ZT_PRECISION_INT8)) {
        printf("test_int8_gate: skipped (no int8 on the cpu backend here)\n");
        return 0;
    }
    test_settings();
    test_speedup();
    test_gate("connect4", false);
    test_gate("tictactoe", true);
    test_learner("1", false);
    test_learner("0", true);
    test_gate_every();
    return zt_test_finish("test_int8_gate");
}
