/* Repeats in the replay window (replay.h: repeat_weight, repeat_average),
 * checked against a count made here from every position of the window:
 * with repeat_average every drawn row's value target and win/draw/loss
 * shares are the mean over the window's copies of its position (mirror
 * images alike), through eviction and a window that moves on; with
 * repeat_weight w a position the window holds c times is drawn with weight
 * c^-w (its copies together c^(1 - w): each class of positions by its count
 * gets its share of 25,600 draws within five standard deviations, for w =
 * 1 and 0.5); with neither, the rng is consumed as a plain buffer's; the
 * settings survive a checkpoint (version 3; version 2 files load without
 * them), zt_replay_set_sampling gives a loaded buffer the draws a new one
 * makes, and a weight out of [0, 1] is refused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "core/rng.h"
#include "replay/record.h"
#include "replay/replay.h"

#include "zt_replay_test.h"
#include "zt_test.h"

static const uint64_t SEED = 20261129;
enum { ROWS = 64 };

/* Random tic-tac-toe games into every buffer of rbs: each ply the lowest
 * legal move with probability 0.8, else a random one, so that lines repeat
 * but their outcomes vary. */
static void fill(zt_replay **rbs, int nbuf, zt_replay_traj *t, int games, zt_rng *rng)
{
    const zt_game *g = zt_replay_game(rbs[0]);
    for (int k = 0; k < games; k++) {
        uint8_t s[ZT_MAX_STATE_BYTES];
        g->reset(g, s);
        zt_replay_traj_clear(t);
        while (g->current_player(g, s) >= 0) {
            uint16_t legal[ZT_MAX_ACTIONS];
            int n = g->legal(g, s, legal);
            float policy[ZT_MAX_ACTIONS] = {0};
            for (int i = 0; i < n; i++) policy[legal[i]] = (float)zt_rng_uniform(rng) + 0.01f;
            zt_replay_traj_add(t, s, policy, 0.0f, true);
            int pick = zt_rng_uniform(rng) < 0.8 ? 0 : (int)zt_rng_below(rng, (uint32_t)n);
            g->apply(g, s, legal[pick]);
        }
        float r[2];
        g->returns(g, s, r);
        for (int i = 0; i < nbuf; i++)
            CHECK(zt_replay_add_game(rbs[i], t, r[0], NULL) == ZT_OK, "add: %s",
                  zt_error_message());
    }
}

/* A position's key as replay.h defines it: the least hash over the game's
 * symmetries. */
static uint64_t key_of(const zt_game *g, const void *state)
{
    uint64_t key = g->hash(g, state);
    for (int s = 1; s < g->num_symmetries; s++) {
        uint8_t image[ZT_MAX_STATE_BYTES];
        g->sym_state(g, s, state, image);
        uint64_t h = g->hash(g, image);
        if (h < key) key = h;
    }
    return key;
}

/* The window of rb, read back position by position: each one's key and
 * value target (outcome for the player to move). Returns the count. */
static int64_t read_window(zt_replay *rb, uint64_t *keys, float *outcomes, int64_t cap)
{
    const zt_game *g = zt_replay_game(rb);
    zt_replay_stats st = zt_replay_get_stats(rb);
    int64_t n = 0;
    for (int64_t i = st.positions_seen - st.window; i < st.positions_seen && n < cap; i++, n++) {
        zt_replay_position pos;
        CHECK(zt_replay_get(rb, i, &pos, NULL) == ZT_OK, "get %lld: %s", (long long)i,
              zt_error_message());
        keys[n] = key_of(g, pos.state);
        outcomes[n] = pos.outcome;
    }
    return n;
}

/* Copies of `key` among the n window positions, and their outcomes' mean
 * and shares of wins and draws. */
static int copies(const uint64_t *keys, const float *outcomes, int64_t n, uint64_t key,
                  double *mean, double *wins, double *draws)
{
    int c = 0;
    double sum = 0, w = 0, d = 0;
    for (int64_t i = 0; i < n; i++)
        if (keys[i] == key) {
            c++;
            sum += outcomes[i];
            w += outcomes[i] > 0;
            d += outcomes[i] == 0;
        }
    *mean = c ? sum / c : 0;
    *wins = c ? w / c : 0;
    *draws = c ? d / c : 0;
    return c;
}

/* window_c 0: the window is the whole buffer, whose eviction takes
 * positions out of it; else the window moves on ahead of eviction. With
 * repeat_weight too, the drawn row's slot serves both its weight and its
 * averages (the rejected draws' slots must not). */
static void test_average(double window_c, double repeat_weight)
{
    zt_game *g = zt_test_game("tictactoe");
    if (!g) return;
    zt_replay_config cfg;
    zt_replay_config_default(&cfg);
    cfg.capacity = 1000; /* evicts */
    cfg.window_c = window_c;
    cfg.repeat_average = true;
    cfg.repeat_weight = repeat_weight;
    zt_replay *rb = NULL;
    zt_replay_traj *t = NULL;
    zt_replay_batch b;
    CHECK(zt_replay_new(g, &cfg, &rb) == ZT_OK && zt_replay_traj_new(g, &t) == ZT_OK &&
              zt_replay_batch_init(&b, g, ROWS, true) == ZT_OK,
          "%s", zt_error_message());
    if (zt_test_failures) return;
    enum { CAP = 2000 };
    uint64_t *keys = malloc(CAP * sizeof *keys);
    float *outcomes = malloc(CAP * sizeof *outcomes);
    zt_rng rng, draw;
    zt_rng_seed(&rng, SEED, 1);
    zt_rng_seed(&draw, SEED, 2);
    int rows = 0, averaged = 0, repeated = 0;
    for (int round = 0; round < 8; round++) {
        fill(&rb, 1, t, 40, &rng);
        int64_t n = read_window(rb, keys, outcomes, CAP);
        for (int k = 0; k < 4; k++) {
            CHECK(zt_replay_sample(rb, &draw, &b) == ZT_OK, "sample: %s", zt_error_message());
            for (int r = 0; r < ROWS; r++, rows++) {
                zt_replay_position pos;
                CHECK(zt_replay_get(rb, b.index[r], &pos, NULL) == ZT_OK, "%s", zt_error_message());
                double mean, wins, draws;
                int c = copies(keys, outcomes, n, key_of(g, pos.state), &mean, &wins, &draws);
                CHECK(c >= 1, "round %d: a drawn position is not in the window", round);
                float want = zt_game_value_to_net(g, (float)mean);
                const float *wdl = b.wdl + 3 * r;
                CHECK(fabsf(b.value[r] - want) < 1e-5f && fabsf(wdl[0] - (float)wins) < 1e-6f &&
                          fabsf(wdl[1] - (float)draws) < 1e-6f &&
                          fabsf(wdl[2] - (float)(1 - wins - draws)) < 1e-6f,
                      "round %d row %d: value %g wdl %g %g %g, the %d copies' mean %g, %g %g",
                      round, r, b.value[r], wdl[0], wdl[1], wdl[2], c, mean, wins, draws);
                repeated += c > 1;
                averaged += fabs(mean - pos.outcome) > 1e-3;
            }
        }
    }
    zt_replay_stats st = zt_replay_get_stats(rb);
    CHECK(st.positions_seen > st.positions && (st.window < st.positions) == (window_c > 0),
          "window_c %g: the test wants eviction and a window %s the buffer: %lld seen, %lld "
          "stored, window %lld",
          window_c, window_c > 0 ? "smaller than" : "as large as", (long long)st.positions_seen,
          (long long)st.positions, (long long)st.window);
    /* the rows did repeat, and their averages differ from their own outcomes
     * (repeat_weight 1 draws repeats less: 41 % of rows, against 84 %) */
    CHECK(repeated > rows / 4 && averaged > rows / 10,
          "w %g: of %d rows %d repeated, %d averaged away from their own outcome", repeat_weight,
          rows, repeated, averaged);
    free(keys);
    free(outcomes);
    zt_replay_batch_free(&b);
    zt_replay_traj_free(t);
    zt_replay_free(rb);
    zt_game_free(g);
}

/* Draws of 400 batches by class of the position's count in the window
 * (1, 2-3, 4-15, 16 or more), against c^(1 - w) shares; the window does
 * not move while drawing. */
static void check_weights(zt_replay *rb, double w, const char *what)
{
    const zt_game *g = zt_replay_game(rb);
    enum { CAP = 4000, CLASSES = 4 };
    uint64_t *keys = malloc(CAP * sizeof *keys);
    float *outcomes = malloc(CAP * sizeof *outcomes);
    int64_t n = read_window(rb, keys, outcomes, CAP);
    CHECK(n < CAP, "%s: the window outgrew the test's %d", what, CAP);
    /* each position's count and class; each class's expected share */
    int *count = malloc((size_t)n * sizeof *count);
    double expect[CLASSES] = {0}, uniform[CLASSES] = {0}, total = 0;
    for (int64_t i = 0; i < n; i++) {
        double mean, wins, draws;
        count[i] = copies(keys, outcomes, n, keys[i], &mean, &wins, &draws);
    }
    int64_t seen = zt_replay_get_stats(rb).positions_seen;
    for (int64_t i = 0; i < n; i++) {
        int c = count[i];
        int k = c == 1 ? 0 : c <= 3 ? 1 : c <= 15 ? 2 : 3;
        double weight = pow(c, -w); /* each copy's */
        expect[k] += weight;
        uniform[k] += 1.0 / (double)n;
        total += weight;
    }
    zt_replay_batch b;
    CHECK(zt_replay_batch_init(&b, g, ROWS, false) == ZT_OK, "%s", zt_error_message());
    zt_rng draw;
    zt_rng_seed(&draw, SEED, 3);
    int64_t got[CLASSES] = {0}, draws = 0;
    for (int k = 0; k < 400; k++) {
        CHECK(zt_replay_sample(rb, &draw, &b) == ZT_OK, "%s", zt_error_message());
        for (int r = 0; r < ROWS; r++, draws++) {
            int64_t i = b.index[r] - (seen - n);
            CHECK(i >= 0 && i < n, "%s: drew %lld outside the window", what, (long long)b.index[r]);
            if (i < 0 || i >= n) continue;
            int c = count[i];
            got[c == 1 ? 0 : c <= 3 ? 1 : c <= 15 ? 2 : 3]++;
        }
    }
    double apart = 0; /* from uniform draws, in their standard deviations */
    for (int k = 0; k < CLASSES; k++) {
        double p = expect[k] / total, share = (double)got[k] / (double)draws;
        double sigma = sqrt(p * (1 - p) / (double)draws);
        CHECK(fabs(share - p) <= 5 * sigma + 1e-9,
              "%s: count class %d drawn %.4f of the time, want %.4f (sigma %.4f)", what, k, share,
              p, sigma);
        double u = sqrt(uniform[k] * (1 - uniform[k]) / (double)draws);
        if (u > 0 && fabs(p - uniform[k]) / u > apart) apart = fabs(p - uniform[k]) / u;
    }
    /* the check tells the weights apart: uniform draws would fail it */
    CHECK(w == 0 || apart > 20, "%s: the classes' shares are only %.1f sigma from uniform's", what,
          apart);
    free(count);
    free(keys);
    free(outcomes);
    zt_replay_batch_free(&b);
}

/* The same draws (indices, symmetries, values) from two buffers, batch by
 * batch with copies of one rng. */
static bool same_draws(zt_replay *x, zt_replay *y, uint64_t stream, bool values)
{
    const zt_game *g = zt_replay_game(x);
    zt_replay_batch a, b;
    if (zt_replay_batch_init(&a, g, ROWS, false) != ZT_OK ||
        zt_replay_batch_init(&b, g, ROWS, false) != ZT_OK)
        return false;
    zt_rng r1, r2;
    zt_rng_seed(&r1, SEED, stream);
    r2 = r1;
    bool same = true;
    for (int k = 0; k < 20 && same; k++) {
        same = zt_replay_sample(x, &r1, &a) == ZT_OK && zt_replay_sample(y, &r2, &b) == ZT_OK &&
               memcmp(a.index, b.index, sizeof *a.index * ROWS) == 0 &&
               memcmp(a.sym, b.sym, sizeof *a.sym * ROWS) == 0 &&
               (!values || memcmp(a.value, b.value, sizeof *a.value * ROWS) == 0);
    }
    zt_replay_batch_free(&a);
    zt_replay_batch_free(&b);
    return same;
}

static void test_weights(void)
{
    zt_game *g = zt_test_game("tictactoe");
    if (!g) return;
    enum { W_ONE, W_HALF, AVERAGE_ONLY, PLAIN, NBUF };
    const double weights[NBUF] = {1.0, 0.5, 0.0, 0.0};
    zt_replay *rbs[NBUF] = {NULL};
    for (int i = 0; i < NBUF; i++) {
        zt_replay_config cfg;
        zt_replay_config_default(&cfg);
        cfg.window_c = 0; /* every stored position */
        cfg.repeat_weight = weights[i];
        cfg.repeat_average = i == W_HALF || i == AVERAGE_ONLY;
        CHECK(zt_replay_new(g, &cfg, &rbs[i]) == ZT_OK, "buffer %d: %s", i, zt_error_message());
    }
    zt_replay_traj *t = NULL;
    CHECK(zt_replay_traj_new(g, &t) == ZT_OK, "%s", zt_error_message());
    if (zt_test_failures) return;
    zt_rng rng;
    zt_rng_seed(&rng, SEED, 4);
    fill(rbs, NBUF, t, 300, &rng);

    check_weights(rbs[W_ONE], 1.0, "w = 1");
    check_weights(rbs[W_HALF], 0.5, "w = 0.5");
    check_weights(rbs[PLAIN], 0.0, "w = 0");
    /* averaging alone draws what a plain buffer draws */
    CHECK(same_draws(rbs[AVERAGE_ONLY], rbs[PLAIN], 5, false),
          "repeat_average alone drew other positions than a plain buffer");
    CHECK(!same_draws(rbs[W_ONE], rbs[PLAIN], 5, false), "w = 1 drew what a plain buffer draws");

    /* checkpoints keep the settings and the draws */
    uint8_t *blob;
    size_t len;
    CHECK(zt_replay_serialize(rbs[W_HALF], &blob, &len) == ZT_OK, "%s", zt_error_message());
    zt_replay *back = NULL;
    CHECK(zt_replay_deserialize(g, blob, len, &back) == ZT_OK, "%s", zt_error_message());
    if (back) {
        const zt_replay_config *c = zt_replay_get_config(back);
        CHECK(c->repeat_weight == 0.5 && c->repeat_average, "loaded: weight %g, average %d",
              c->repeat_weight, c->repeat_average);
        CHECK(same_draws(rbs[W_HALF], back, 6, true), "a loaded buffer draws otherwise");
        zt_replay_free(back);
        back = NULL;
    }
    /* version 2: the same blob without the f64 and u8 after surprise_weight */
    size_t len2;
    uint8_t *v2 =
        zt_test_replay_older(blob, len, zt_test_replay_settings_at(g) + 8, 8 + 1, 2, &len2);
    CHECK(zt_replay_deserialize(g, v2, len2, &back) == ZT_OK, "version 2: %s", zt_error_message());
    if (back) {
        const zt_replay_config *c = zt_replay_get_config(back);
        CHECK(c->repeat_weight == 0 && !c->repeat_average,
              "version 2 loaded with weight %g, average %d", c->repeat_weight, c->repeat_average);
        CHECK(same_draws(back, rbs[PLAIN], 7, true), "version 2 draws other than uniformly");
        /* set_sampling: the loaded buffer then draws as one made so */
        CHECK(zt_replay_set_sampling(back, 0, 1.0, false) == ZT_OK, "%s", zt_error_message());
        CHECK(same_draws(back, rbs[W_ONE], 8, true), "set to w = 1, it draws otherwise");
        zt_status st = zt_replay_set_sampling(back, 0, 1.5, false);
        CHECK(st == ZT_ERR_INVALID && strstr(zt_error_message(), "repeat_weight"),
              "repeat_weight 1.5: %s '%s'", zt_status_name(st), zt_error_message());
        CHECK(same_draws(back, rbs[W_ONE], 8, true), "a refused setting changed the draws");
        zt_replay_free(back);
    }
    free(v2);
    free(blob);

    zt_replay_config bad;
    zt_replay_config_default(&bad);
    bad.repeat_weight = -0.1;
    zt_replay *none = NULL;
    zt_status st = zt_replay_new(g, &bad, &none);
    CHECK(st == ZT_ERR_INVALID && !none && strstr(zt_error_message(), "repeat_weight"),
          "repeat_weight -0.1: %s '%s'", zt_status_name(st), zt_error_message());

    zt_replay_traj_free(t);
    for (int i = 0; i < NBUF; i++) zt_replay_free(rbs[i]);
    zt_game_free(g);
}

int main(void)
{
    printf("seed %llu\n", (unsigned long long)SEED);
    test_average(100, 0);
    test_average(0, 0);
    test_average(100, 1);
    test_weights();
    return zt_test_finish("test_repeats");
}
