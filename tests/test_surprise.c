/* Surprise-weighted replay (replay.h: surprise_weight; record.h:
 * RECORD_SURPRISE): zt_replay_surprise is KL(policy || prior) over the
 * legal actions; a record stores it as one byte after everything else, only
 * beside a full search and only when it rounds to at least one unit, and a
 * zero byte or a byte on a record without a policy is refused as corrupt;
 * sampling draws positions in proportion to (1 - a) + a min(s / mean, cap)
 * (checked against the exact probability over 10,240 draws); a = 0 draws
 * exactly the positions a buffer without surprises draws; a = 1 never
 * draws a position without one; the buffer's mean surprise stays the mean
 * of its stored records through eviction, checkpoints (which keep the
 * weight; version 1 files load with 0) and the trajectory's
 * byte form. */
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

static const uint64_t SEED = 20261127;

static void test_kl(void)
{
    zt_game *g = zt_test_game("tictactoe");
    if (!g) return;
    uint8_t s[ZT_MAX_STATE_BYTES], mask[ZT_MAX_ACTIONS];
    g->reset(g, s);
    zt_game_legal_mask(g, s, mask);
    float policy[ZT_MAX_ACTIONS] = {0}, prior[ZT_MAX_ACTIONS] = {0};
    /* half on each of two moves against a uniform prior: ln 4.5 */
    policy[0] = policy[1] = 0.5f;
    for (int a = 0; a < 9; a++) prior[a] = 1.0f / 9;
    float kl = zt_replay_surprise(g, mask, policy, prior);
    CHECK(fabsf(kl - logf(4.5f)) < 1e-5f, "KL %g, want ln 4.5 = %g", kl, logf(4.5f));
    /* scale does not matter: both are renormalised */
    for (int a = 0; a < 9; a++) prior[a] = 3.0f;
    policy[0] = policy[1] = 7.0f;
    float kl2 = zt_replay_surprise(g, mask, policy, prior);
    CHECK(fabsf(kl2 - kl) < 1e-5f, "KL of scaled inputs %g, want %g", kl2, kl);
    /* the same distribution: 0 */
    for (int a = 0; a < 9; a++) policy[a] = prior[a];
    CHECK(zt_replay_surprise(g, mask, policy, prior) < 1e-6f, "KL(p || p) = %g",
          zt_replay_surprise(g, mask, policy, prior));
    /* illegal actions count for nothing */
    g->apply(g, s, 4);
    zt_game_legal_mask(g, s, mask);
    memset(policy, 0, sizeof policy);
    for (int a = 0; a < 9; a++) prior[a] = a == 4 ? 100.0f : 1.0f;
    policy[0] = policy[1] = 0.5f;
    policy[4] = 0; /* the test's own policy weighs no illegal action */
    kl = zt_replay_surprise(g, mask, policy, prior);
    CHECK(fabsf(kl - logf(4.0f)) < 1e-5f, "KL over 8 legal actions %g, want ln 4 = %g", kl,
          logf(4.0f));
    /* a move the net ruled out: the prior floored at 1e-6 */
    memset(policy, 0, sizeof policy);
    policy[2] = 1;
    prior[2] = 0;
    kl = zt_replay_surprise(g, mask, policy, prior);
    CHECK(fabsf(kl - logf(1e6f)) < 1e-3f, "KL with a zero prior %g, want ln 1e6 = %g", kl,
          logf(1e6f));
    /* no weight anywhere legal: 0 */
    memset(policy, 0, sizeof policy);
    CHECK(zt_replay_surprise(g, mask, policy, prior) == 0, "KL of an empty policy");
    zt_game_free(g);
}

static void test_record(void)
{
    zt_game *g = zt_test_game("connect4");
    if (!g) return;
    zt_record_layout l;
    zt_record_layout_init(&l, g);
    uint8_t s[ZT_MAX_STATE_BYTES], st[ZT_MAX_STATE_BYTES];
    g->reset(g, s);
    float policy[ZT_MAX_ACTIONS] = {0};
    for (int a = 0; a < 7; a++) policy[a] = (float)(a + 1);
    uint8_t plain[256], rec[256], fast[256];
    size_t n0 = zt_record_encode(&l, g, s, policy, 0.25f, true, plain);
    size_t n1 = zt_record_encode_full(&l, g, s, policy, 0.25f, true, -1, 0.0f, 0.5f, rec);
    CHECK(n1 == n0 + 1 && (rec[0] & RECORD_SURPRISE) && memcmp(rec + 1, plain + 1, n0 - 1) == 0 &&
              rec[n1 - 1] == 16 && zt_record_surprise(rec, n1) == 16,
          "0.5 nats: %zu bytes (plain %zu), flags %#x, last byte %u", n1, n0, rec[0],
          rec[n1 - 1]);
    CHECK(zt_record_length(&l, rec, n1 + 10) == n1, "length %zu, want %zu",
          zt_record_length(&l, rec, n1 + 10), n1);
    zt_record_view v;
    CHECK(zt_record_decode(&l, g, rec, n1, st, &v) == ZT_OK && v.surprise == 16 &&
              v.num_pairs == 7,
          "decode: %s, surprise %u", zt_error_message(), v.surprise);
    CHECK(zt_record_decode(&l, g, plain, n0, st, &v) == ZT_OK && v.surprise == 0 &&
              zt_record_surprise(plain, n0) == 0,
          "a plain record decodes with surprise 0");
    /* 0 and what rounds to 0 store nothing; the byte caps at 255 */
    CHECK(zt_record_encode_full(&l, g, s, policy, 0.25f, true, -1, 0.0f, 0.0f, rec) == n0 &&
              zt_record_encode_full(&l, g, s, policy, 0.25f, true, -1, 0.0f, 0.01f, rec) == n0 &&
              !(rec[0] & RECORD_SURPRISE),
          "a surprise rounding to 0 is stored");
    size_t n2 = zt_record_encode_full(&l, g, s, policy, 0.25f, true, -1, 0.0f, 100.0f, rec);
    CHECK(n2 == n0 + 1 && rec[n2 - 1] == 255, "100 nats stored as %u", rec[n2 - 1]);
    /* beside an action: still the last byte */
    size_t n3 = zt_record_encode_full(&l, g, s, policy, 0.25f, true, 3, 0.0f, 1.0f, rec);
    CHECK(zt_record_decode(&l, g, rec, n3, st, &v) == ZT_OK && v.action == 3 && v.surprise == 32 &&
              zt_record_surprise(rec, n3) == 32,
          "with an action: action %d surprise %u", v.action, v.surprise);
    /* a fast search stores none */
    size_t nf = zt_record_encode_full(&l, g, s, NULL, 0.25f, false, -1, 0.0f, 1.0f, fast);
    CHECK(!(fast[0] & RECORD_SURPRISE) &&
              nf == zt_record_encode(&l, g, s, NULL, 0.25f, false, plain),
          "a fast search stored a surprise");
    /* corrupt: a zero byte behind the flag; the flag on a fast search */
    n1 = zt_record_encode_full(&l, g, s, policy, 0.25f, true, -1, 0.0f, 0.5f, rec);
    rec[n1 - 1] = 0;
    zt_status r = zt_record_decode(&l, g, rec, n1, st, &v);
    CHECK(r == ZT_ERR_CORRUPT && strstr(zt_error_message(), "surprise"),
          "a zero surprise byte: %s '%s'", zt_status_name(r), zt_error_message());
    fast[0] |= RECORD_SURPRISE;
    fast[nf] = 5;
    CHECK(zt_record_length(&l, fast, nf + 1) == 0, "a surprise on a fast search has a length");
    zt_game_free(g);
}

/* Random tic-tac-toe games into every buffer of rbs: every position a full
 * search, the first `hot` plies of each game with surprise s_hot, the rest
 * with none. with[i] says whether buffer i gets the surprises at all. */
static void fill(zt_replay **rbs, const bool *with, int nbuf, zt_replay_traj *ta,
                 zt_replay_traj *tb, int games, int hot, float s_hot, zt_rng *rng)
{
    const zt_game *g = zt_replay_game(rbs[0]);
    for (int k = 0; k < games; k++) {
        uint8_t s[ZT_MAX_STATE_BYTES];
        g->reset(g, s);
        zt_replay_traj_clear(ta);
        zt_replay_traj_clear(tb);
        for (int ply = 0; g->current_player(g, s) >= 0; ply++) {
            uint16_t legal[ZT_MAX_ACTIONS];
            int n = g->legal(g, s, legal);
            float policy[ZT_MAX_ACTIONS] = {0};
            for (int i = 0; i < n; i++) policy[legal[i]] = (float)zt_rng_uniform(rng) + 0.01f;
            float v = (float)(2 * zt_rng_uniform(rng) - 1);
            zt_replay_traj_add_surprise(ta, s, policy, v, true, -1, 0.0f, ply < hot ? s_hot : 0);
            zt_replay_traj_add(tb, s, policy, v, true);
            g->apply(g, s, legal[zt_rng_below(rng, (uint32_t)n)]);
        }
        float r[2];
        g->returns(g, s, r);
        for (int i = 0; i < nbuf; i++)
            CHECK(zt_replay_add_game(rbs[i], with[i] ? ta : tb, r[0], NULL) == ZT_OK, "add: %s",
                  zt_error_message());
    }
}

/* The share of hot positions among `batches` batches drawn from rb. */
static double hot_share(zt_replay *rb, zt_replay_batch *b, zt_rng *rng, int batches)
{
    int64_t hot = 0, all = 0;
    for (int k = 0; k < batches; k++) {
        CHECK(zt_replay_sample(rb, rng, b) == ZT_OK, "sample: %s", zt_error_message());
        for (int r = 0; r < b->size; r++) {
            zt_replay_position pos;
            CHECK(zt_replay_get(rb, b->index[r], &pos, NULL) == ZT_OK, "get: %s",
                  zt_error_message());
            hot += pos.surprise > 0;
            all++;
        }
    }
    return (double)hot / (double)all;
}

/* The mean stored surprise, by reading back every stored position. */
static double mean_surprise(zt_replay *rb)
{
    zt_replay_stats st = zt_replay_get_stats(rb);
    double sum = 0;
    for (int64_t i = st.positions_seen - st.positions; i < st.positions_seen; i++) {
        zt_replay_position pos;
        CHECK(zt_replay_get(rb, i, &pos, NULL) == ZT_OK, "get: %s", zt_error_message());
        sum += pos.surprise;
    }
    return st.positions > 0 ? sum / (double)st.positions : 0;
}

static void test_sampling(void)
{
    zt_game *g = zt_test_game("tictactoe");
    if (!g) return;
    enum { W_HALF, W_ONE, W_ZERO, PLAIN, SMALL, NBUF };
    const double weights[NBUF] = {0.5, 1.0, 0.0, 0.0, 0.5};
    const bool with[NBUF] = {true, true, true, false, true};
    zt_replay *rbs[NBUF] = {NULL};
    for (int i = 0; i < NBUF; i++) {
        zt_replay_config cfg;
        zt_replay_config_default(&cfg);
        cfg.capacity = i == SMALL ? 300 : 100000; /* SMALL evicts */
        cfg.surprise_weight = weights[i];
        CHECK(zt_replay_new(g, &cfg, &rbs[i]) == ZT_OK, "buffer %d: %s", i, zt_error_message());
    }
    zt_replay_config bad;
    zt_replay_config_default(&bad);
    bad.surprise_weight = 1.5;
    zt_replay *none = NULL;
    zt_status r = zt_replay_new(g, &bad, &none);
    CHECK(r == ZT_ERR_INVALID && !none && strstr(zt_error_message(), "surprise_weight"),
          "surprise_weight 1.5: %s '%s'", zt_status_name(r), zt_error_message());
    zt_replay_traj *ta = NULL, *tb = NULL;
    CHECK(zt_replay_traj_new(g, &ta) == ZT_OK && zt_replay_traj_new(g, &tb) == ZT_OK, "%s",
          zt_error_message());
    for (int i = 0; i < NBUF; i++)
        if (!rbs[i]) return;
    zt_rng rng;
    zt_rng_seed(&rng, SEED, 1);
    const float s_hot = 1.5f; /* 48 units, exact */
    fill(rbs, with, NBUF, ta, tb, 400, 2, s_hot, &rng);

    /* the exact probability of a hot draw under a = 0.5 */
    zt_replay_stats st = zt_replay_get_stats(rbs[W_HALF]);
    double n_hot = 0;
    for (int64_t i = 0; i < st.positions; i++) {
        zt_replay_position pos;
        CHECK(zt_replay_get(rbs[W_HALF], i, &pos, NULL) == ZT_OK, "%s", zt_error_message());
        n_hot += pos.surprise > 0;
    }
    double n = (double)st.positions, mean = n_hot * s_hot / n;
    CHECK(fabs(st.surprise - mean) < 1e-9, "stats' mean surprise %g, want %g", st.surprise, mean);
    CHECK(fabs(mean_surprise(rbs[W_HALF]) - mean) < 1e-9, "stored surprises' mean %g, want %g",
          mean_surprise(rbs[W_HALF]), mean);
    double ratio = s_hot / mean < ZT_REPLAY_SURPRISE_CAP ? s_hot / mean : ZT_REPLAY_SURPRISE_CAP;
    double w_hot = 0.5 + 0.5 * ratio, w_cold = 0.5;
    double want = n_hot * w_hot / (n_hot * w_hot + (n - n_hot) * w_cold);
    zt_replay_batch b;
    CHECK(zt_replay_batch_init(&b, g, 256, false) == ZT_OK, "%s", zt_error_message());
    zt_rng draw;
    zt_rng_seed(&draw, SEED, 2);
    double got = hot_share(rbs[W_HALF], &b, &draw, 40);
    /* 10,240 draws: the binomial standard error is under 0.005 */
    CHECK(fabs(got - want) < 0.025, "a = 0.5: hot share %.4f, want %.4f (uniform %.4f)", got, want,
          n_hot / n);
    got = hot_share(rbs[W_ZERO], &b, &draw, 40);
    CHECK(fabs(got - n_hot / n) < 0.025, "a = 0: hot share %.4f, want the uniform %.4f", got,
          n_hot / n);
    got = hot_share(rbs[W_ONE], &b, &draw, 20);
    CHECK(got == 1.0, "a = 1: hot share %.4f, want 1 (no position without a surprise)", got);

    /* a = 0 consumes the rng exactly as a buffer without surprises */
    zt_replay_batch b2;
    CHECK(zt_replay_batch_init(&b2, g, 256, false) == ZT_OK, "%s", zt_error_message());
    zt_rng r1, r2;
    zt_rng_seed(&r1, SEED, 3);
    r2 = r1;
    for (int k = 0; k < 4; k++) {
        CHECK(zt_replay_sample(rbs[W_ZERO], &r1, &b) == ZT_OK &&
                  zt_replay_sample(rbs[PLAIN], &r2, &b2) == ZT_OK,
              "%s", zt_error_message());
        CHECK(memcmp(b.index, b2.index, sizeof *b.index * 256) == 0 &&
                  memcmp(b.sym, b2.sym, sizeof *b.sym * 256) == 0 &&
                  memcmp(b.policy, b2.policy, sizeof *b.policy * 256 * 9) == 0,
              "batch %d: a = 0 draws other positions than a buffer without surprises", k);
    }
    CHECK(zt_replay_get_stats(rbs[PLAIN]).surprise == 0, "a buffer without surprises has some");

    /* eviction: the running sum follows the stored games */
    zt_replay_stats small = zt_replay_get_stats(rbs[SMALL]);
    CHECK(small.positions_seen > 2 * small.positions &&
              fabs(small.surprise - mean_surprise(rbs[SMALL])) < 1e-9,
          "after eviction: mean %g, stored records' %g", small.surprise,
          mean_surprise(rbs[SMALL]));

    /* checkpoints keep the weight and the sums */
    uint8_t *blob;
    size_t len;
    CHECK(zt_replay_serialize(rbs[W_HALF], &blob, &len) == ZT_OK, "%s", zt_error_message());
    zt_replay *back = NULL;
    CHECK(zt_replay_deserialize(g, blob, len, &back) == ZT_OK, "%s", zt_error_message());
    if (back) {
        CHECK(zt_replay_get_config(back)->surprise_weight == 0.5 &&
                  zt_replay_get_stats(back).surprise == st.surprise,
              "a loaded buffer: weight %g, mean surprise %g (want 0.5, %g)",
              zt_replay_get_config(back)->surprise_weight, zt_replay_get_stats(back).surprise,
              st.surprise);
        zt_rng_seed(&r1, SEED, 4);
        r2 = r1;
        CHECK(zt_replay_sample(rbs[W_HALF], &r1, &b) == ZT_OK &&
                  zt_replay_sample(back, &r2, &b2) == ZT_OK &&
                  memcmp(b.index, b2.index, sizeof *b.index * 256) == 0,
              "a loaded buffer draws other positions");
        zt_replay_free(back);
        back = NULL;
    }
    /* version 1: the same blob without the f64 after augment (nor version
     * 3's f64 and u8 of the repeats' settings), weight 0 */
    size_t len1;
    uint8_t *v1 =
        zt_test_replay_older(blob, len, zt_test_replay_settings_at(g), 8 + 8 + 1, 1, &len1);
    CHECK(zt_replay_deserialize(g, v1, len1, &back) == ZT_OK, "version 1: %s",
          zt_error_message());
    if (back) {
        CHECK(zt_replay_get_config(back)->surprise_weight == 0 &&
                  zt_replay_get_stats(back).positions == st.positions &&
                  zt_replay_get_stats(back).surprise == st.surprise,
              "version 1 loaded with weight %g", zt_replay_get_config(back)->surprise_weight);
        zt_replay_free(back);
    }
    free(v1);
    free(blob);

    /* the trajectory's byte form carries the surprises */
    zt_replay_traj_clear(ta);
    uint8_t s[ZT_MAX_STATE_BYTES];
    g->reset(g, s);
    float policy[ZT_MAX_ACTIONS] = {0};
    policy[4] = 1;
    zt_replay_traj_add_surprise(ta, s, policy, 0.0f, true, -1, 0.0f, 2.0f);
    uint8_t bytes[4096];
    size_t blen = 0;
    CHECK(zt_replay_traj_serialize(ta, 1.0f, bytes, sizeof bytes, &blen) == ZT_OK, "%s",
          zt_error_message());
    float r0 = 0;
    CHECK(zt_replay_traj_deserialize(g, bytes, blen, tb, &r0) == ZT_OK, "%s", zt_error_message());
    zt_replay_config cfg;
    zt_replay_config_default(&cfg);
    zt_replay *one = NULL;
    CHECK(zt_replay_new(g, &cfg, &one) == ZT_OK && zt_replay_add_game(one, tb, r0, NULL) == ZT_OK,
          "%s", zt_error_message());
    if (one)
        CHECK(zt_replay_get_stats(one).surprise == 2.0, "a trajectory's surprise came through as %g",
              zt_replay_get_stats(one).surprise);
    zt_replay_free(one);

    zt_replay_batch_free(&b);
    zt_replay_batch_free(&b2);
    zt_replay_traj_free(ta);
    zt_replay_traj_free(tb);
    for (int i = 0; i < NBUF; i++) zt_replay_free(rbs[i]);
    zt_game_free(g);
}

int main(void)
{
    printf("seed %llu\n", (unsigned long long)SEED);
    test_kl();
    test_record();
    test_sampling();
    return zt_test_finish("test_surprise");
}
