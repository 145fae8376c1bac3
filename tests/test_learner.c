/* The learner's moving average of its weights (learner.average): after
 * each step it moves toward the net by w (avg + w (net - avg)), w of that step
 * (zt_learner_average_weight), running statistics included; it starts as
 * the initial net; a publication carries the live net, or the average with
 * learner.average_actors; a learner without learner.average keeps none. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/config.h"
#include "game/game.h"
#include "nn/nn.h"
#include "replay/replay.h"
#include "selfplay/weights.h"
#include "train/learner.h"
#include "train/train.h"

#include "zt_test.h"
#include "zt_train_test.h"

/* A tic-tac-toe learner of settings kv (key, value, ..., NULL) over a
 * buffer of random games, with no sampler thread. */
typedef struct fixture {
    zt_game *g;
    zt_train_settings S;
    zt_replay *rb;
    zt_learner *l;
    size_t n;
} fixture;

static bool open_fixture(fixture *f, const char *const *kv)
{
    memset(f, 0, sizeof *f);
    zt_config *cfg = zt_config_new();
    zt_config_put(cfg, "learner.prefetch", "false");
    zt_config_put(cfg, "learner.batch", "16");
    for (int i = 0; kv[i]; i += 2) zt_config_put(cfg, kv[i], kv[i + 1]);
    zt_status st = zt_game_new("tictactoe", NULL, &f->g);
    if (st == ZT_OK) st = zt_train_settings_read(cfg, f->g, &f->S);
    zt_config_free(cfg);
    if (st == ZT_OK) st = zt_replay_new(f->g, &f->S.replay, &f->rb);
    if (st == ZT_OK) zt_test_fill_replay(f->g, f->rb, 30);
    if (st == ZT_OK) st = zt_learner_new(f->g, &f->S, f->rb, &f->l);
    CHECK(st == ZT_OK, "learner: %s", zt_error_message());
    if (st != ZT_OK) return false;
    f->n = zt_net_flat_size(zt_learner_net(f->l));
    return true;
}

static void close_fixture(fixture *f)
{
    zt_learner_free(f->l);
    zt_replay_free(f->rb);
    zt_game_free(f->g);
}

/* The largest difference between a[n] and b[n], relative to b's scale. */
static double worst(const float *a, const float *b, size_t n)
{
    double w = 0;
    for (size_t i = 0; i < n; i++) w = fmax(w, fabs(a[i] - b[i]) / (fabs(b[i]) + 1e-3));
    return w;
}

static void test_average_steps(void)
{
    fixture f;
    if (!open_fixture(&f, (const char *const[]){"learner.average", "4", NULL})) return;
    const float *avg = zt_learner_average(f.l);
    CHECK(avg != NULL, "learner.average = 4 keeps no average");
    float *want = zt_xmalloc(f.n * sizeof(float)), *net = zt_xmalloc(f.n * sizeof(float));
    zt_net_flat_get(zt_learner_net(f.l), want);
    CHECK(memcmp(avg, want, f.n * sizeof(float)) == 0, "the average does not start as the net");
    double err = 0;
    bool moved = false;
    for (int64_t step = 1; step <= 8; step++) {
        CHECK(zt_learner_step(f.l) == ZT_OK, "step %lld: %s", (long long)step,
              zt_error_message());
        zt_net_flat_get(zt_learner_net(f.l), net);
        double w = zt_learner_average_weight(step, 4);
        for (size_t i = 0; i < f.n; i++)
            want[i] = (float)(want[i] + w * ((double)net[i] - want[i]));
        err = fmax(err, worst(avg, want, f.n));
        moved = moved || memcmp(avg, net, f.n * sizeof(float)) != 0;
    }
    CHECK(err < 1e-5, "the average strays from avg + w (net - avg) by %.2e", err);
    CHECK(moved, "the average is the net after every step");
    free(want);
    free(net);
    close_fixture(&f);
}

/* What version 1 carries: the live net's tensors, or with average_actors
 * the average's. */
static void check_publish(bool average_actors)
{
    fixture f;
    if (!open_fixture(&f, (const char *const[]){"learner.average", "4", "learner.average_actors",
                                                average_actors ? "true" : "false", NULL}))
        return;
    for (int i = 0; i < 3; i++) CHECK(zt_learner_step(f.l) == ZT_OK, "%s", zt_error_message());
    zt_learner_publish(f.l);
    const zt_weight_source *src = zt_learner_weight_source(f.l);
    size_t total = f.n + zt_learner_weights_tail(f.l);
    float *w = zt_xmalloc(total * sizeof(float)), *net = zt_xmalloc(f.n * sizeof(float));
    uint64_t got = 0;
    CHECK(src->poll(src->ctx, 0, w, total, &got) == ZT_OK && got == 1, "no version 1");
    zt_net_flat_get(zt_learner_net(f.l), net);
    const float *avg = zt_learner_average(f.l);
    CHECK(memcmp(avg, net, f.n * sizeof(float)) != 0, "the average is the net");
    const float *want = average_actors ? avg : net;
    CHECK(memcmp(w, want, f.n * sizeof(float)) == 0, "average_actors %d: version 1 is not the %s",
          average_actors, average_actors ? "average" : "live net");
    free(w);
    free(net);
    close_fixture(&f);
}

static void test_publish(void)
{
    check_publish(false);
    check_publish(true);
}

static void test_settings(void)
{
    fixture f;
    if (!open_fixture(&f, (const char *const[]){NULL})) return;
    CHECK(zt_learner_average(f.l) == NULL, "learner.average = 0 keeps an average");
    close_fixture(&f);
    zt_game *g;
    CHECK(zt_game_new("tictactoe", NULL, &g) == ZT_OK, "%s", zt_error_message());
    zt_config *cfg = zt_config_new();
    zt_config_put(cfg, "learner.average_actors", "true");
    zt_train_settings S;
    zt_status st = zt_train_settings_read(cfg, g, &S);
    CHECK(st == ZT_ERR_INVALID && strstr(zt_error_message(), "learner.average_actors needs"),
          "average_actors without an average: %s", st == ZT_OK ? "accepted" : zt_error_message());
    zt_config_free(cfg);
    zt_game_free(g);
}

int main(void)
{
    test_average_steps();
    test_publish();
    test_settings();
    return zt_test_finish("test_learner");
}
