/* Tests of the replay layer: records decode to the positions, policies and
 * values stored (within 16-bit quantisation and half-float rounding); the
 * window grows as documented; eviction and the byte ring's wrap keep the
 * newest games intact; sampled targets under symmetry agree with the
 * symmetric position; bytes per position against the dense float figure;
 * checkpoints round-trip exactly and corrupt or truncated ones are refused
 * naming the problem; the sampler thread yields exactly the synchronous
 * batches; trajectories of every registered game round-trip through bytes,
 * and damaged bytes are refused; a one-player game's (2048) value target is
 * the points still to come, through the net's transform. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/config.h"
#include "core/hash.h"
#include "core/rng.h"
#include "replay/record.h"
#include "replay/replay.h"

#include "zt_test.h"

static const uint64_t SEED = 20240611;

/* ---- synthetic self-play: random games with made-up search outputs ---- */

/* What the test put in, to compare with what comes out. */
typedef struct truth {
    uint8_t state[ZT_MAX_STATE_BYTES];
    float policy[ZT_MAX_ACTIONS]; /* normalised, 0 without a full search */
    float root_value;
    float outcome;
    bool full;
    uint64_t game_id;
    int ply;
} truth;

typedef struct truths {
    truth *t;
    int64_t n, cap;
} truths;

static truth *truth_push(truths *ts)
{
    if (ts->n == ts->cap) {
        ts->cap = ts->cap ? 2 * ts->cap : 1024;
        ts->t = realloc(ts->t, (size_t)ts->cap * sizeof *ts->t);
    }
    truth *t = &ts->t[ts->n++];
    memset(t, 0, sizeof *t);
    return t;
}

/* A search policy over the legal actions: dense with random weights (what
 * Gumbel's completed-Q target looks like) or, with `sparse`, mass on a
 * few actions (PUCT visit counts of a short search). */
static void make_policy(const zt_game *g, const void *s, zt_rng *rng, bool sparse, float *policy)
{
    uint16_t legal[ZT_MAX_ACTIONS];
    int n = g->legal(g, s, legal);
    memset(policy, 0, sizeof(float) * (size_t)g->num_actions);
    float sum = 0;
    for (int i = 0; i < n; i++) {
        float w = sparse ? (zt_rng_below(rng, 4) == 0 ? (float)(1 + zt_rng_below(rng, 50)) : 0.0f)
                         : (float)zt_rng_uniform(rng) + 1e-3f;
        policy[legal[i]] = w;
        sum += w;
    }
    if (sum == 0) policy[legal[zt_rng_below(rng, (uint32_t)n)]] = 1;
}

/* Plays one random game into traj (and truths, if given); returns player
 * 0's return. full_share: the share of positions with a full search. */
static float play_game(const zt_game *g, zt_replay_traj *traj, zt_rng *rng, double full_share,
                       bool sparse, truths *ts, uint64_t game_id)
{
    uint8_t s[ZT_MAX_STATE_BYTES];
    float policy[ZT_MAX_ACTIONS];
    g->reset(g, s);
    zt_replay_traj_clear(traj);
    int64_t first = ts ? ts->n : 0;
    int ply = 0;
    for (;;) {
        int p = g->current_player(g, s);
        if (p == ZT_TERMINAL) break;
        if (p == ZT_CHANCE) {
            int outcomes[ZT_MAX_CHANCE_OUTCOMES];
            float probs[ZT_MAX_CHANCE_OUTCOMES];
            int n = g->chance_outcomes(g, s, outcomes, probs);
            g->apply(g, s, outcomes[zt_rng_categorical(rng, probs, n)]);
            continue;
        }
        bool full = zt_rng_uniform(rng) < full_share;
        make_policy(g, s, rng, sparse, policy);
        float v = (float)(2 * zt_rng_uniform(rng) - 1);
        zt_replay_traj_add(traj, s, full ? policy : NULL, v, full);
        if (ts) {
            truth *t = truth_push(ts);
            memcpy(t->state, s, g->state_size);
            t->root_value = v;
            t->full = full;
            t->game_id = game_id;
            t->ply = ply;
            if (full) {
                float sum = 0;
                for (int a = 0; a < g->num_actions; a++) sum += policy[a];
                for (int a = 0; a < g->num_actions; a++) t->policy[a] = policy[a] / sum;
            }
        }
        ply++;
        uint16_t legal[ZT_MAX_ACTIONS];
        int n = g->legal(g, s, legal);
        g->apply(g, s, legal[zt_rng_below(rng, (uint32_t)n)]);
    }
    float r[2];
    g->returns(g, s, r);
    if (ts)
        for (int64_t i = first; i < ts->n; i++)
            ts->t[i].outcome = g->current_player(g, ts->t[i].state) == 0 ? r[0] : r[1];
    return r[0];
}

static void fill(zt_replay *rb, zt_replay_traj *traj, int games, zt_rng *rng, double full_share,
                 bool sparse, truths *ts)
{
    const zt_game *g = zt_replay_game(rb);
    for (int i = 0; i < games; i++) {
        uint64_t expect_id = (uint64_t)zt_replay_get_stats(rb).games_seen, id = 0;
        float r0 = play_game(g, traj, rng, full_share, sparse, ts, expect_id);
        zt_status st = zt_replay_add_game(rb, traj, r0, &id);
        CHECK(st == ZT_OK && id == expect_id, "add_game: %s", zt_error_message());
    }
}

/* Every stored position decodes to what went in. */
static void check_stored(zt_replay *rb, const truths *ts, const char *what)
{
    const zt_game *g = zt_replay_game(rb);
    zt_replay_stats st = zt_replay_get_stats(rb);
    int bad = 0;
    for (int64_t i = st.positions_seen - st.positions; i < st.positions_seen && bad < 5; i++) {
        const truth *t = &ts->t[i];
        zt_replay_position pos;
        float policy[ZT_MAX_ACTIONS];
        zt_status s = zt_replay_get(rb, i, &pos, policy);
        if (s != ZT_OK) {
            CHECK(0, "%s: get %lld: %s", what, (long long)i, zt_error_message());
            bad++;
            continue;
        }
        bool ok = memcmp(pos.state, t->state, g->state_size) == 0 && pos.game_id == t->game_id &&
                  pos.ply == t->ply && pos.outcome == t->outcome &&
                  (pos.flags & ZT_REPLAY_FULL_SEARCH) == (t->full ? ZT_REPLAY_FULL_SEARCH : 0) &&
                  fabsf(pos.root_value - t->root_value) <= 1.0f / 2048;
        double worst = 0;
        for (int a = 0; a < g->num_actions; a++) {
            double e = fabs((double)policy[a] - (double)t->policy[a]);
            if (e > worst) worst = e;
        }
        /* One quantisation unit, plus float rounding of the stored shares. */
        ok = ok && worst <= 1.0 / 65535 + 1e-6;
        CHECK(ok, "%s: position %lld (game %llu ply %d) differs: policy error %.3g, value %g vs %g",
              what, (long long)i, (unsigned long long)t->game_id, t->ply, worst, pos.root_value,
              t->root_value);
        bad += !ok;
    }
}

/* ---- the tests ---- */

static void test_half_and_quantise(void)
{
    const float exact[] = {0.0f, 1.0f, -1.0f, 0.5f, -0.25f, 2.0f, -3.0f, 65504.0f, 0x1p-24f};
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++) {
        float back = zt_record_half_to_float(zt_record_half_from_float(exact[i]));
        CHECK(back == exact[i], "half round trip of %g gave %g", exact[i], back);
    }
    zt_rng rng;
    zt_rng_seed(&rng, SEED, 1);
    for (int i = 0; i < 10000; i++) {
        float x = (float)(2 * zt_rng_uniform(&rng) - 1);
        float back = zt_record_half_to_float(zt_record_half_from_float(x));
        /* Round to nearest: half a unit in the last place, 2^-12 below 1. */
        CHECK(fabsf(back - x) <= 0x1p-12f, "half of %g gave %g", x, back);
    }
    CHECK(isinf(zt_record_half_to_float(zt_record_half_from_float(1e6f))), "1e6 -> inf");

    for (int trial = 0; trial < 2000; trial++) {
        int n = 1 + (int)zt_rng_below(&rng, 300);
        double w[ZT_MAX_ACTIONS], total = 0;
        for (int i = 0; i < n; i++) {
            int kind = (int)zt_rng_below(&rng, 4);
            w[i] = kind == 0 ? 0 : kind == 1 ? 1e-9 * zt_rng_uniform(&rng) : zt_rng_uniform(&rng);
            total += w[i];
        }
        if (total == 0) w[0] = total = 1;
        uint16_t q[ZT_MAX_ACTIONS];
        zt_record_quantise(w, n, q);
        uint32_t sum = 0;
        double worst = 0;
        for (int i = 0; i < n; i++) {
            sum += q[i];
            double e = fabs(q[i] - w[i] / total * 65535);
            if (e > worst) worst = e;
        }
        CHECK(sum == 65535 && worst < 1.0, "quantise n=%d: sum %u, worst error %g units", n, sum,
              worst);
    }
}

static void test_round_trip(const char *name)
{
    zt_game *g = zt_test_game(name);
    if (!g) return;
    zt_replay_config cfg;
    zt_replay_config_default(&cfg);
    cfg.capacity = 1 << 14;
    zt_replay *rb;
    zt_replay_traj *traj;
    CHECK(zt_replay_new(g, &cfg, &rb) == ZT_OK, "%s", zt_error_message());
    CHECK(zt_replay_traj_new(g, &traj) == ZT_OK, "%s", zt_error_message());
    zt_rng rng;
    zt_rng_seed(&rng, SEED, 2);
    truths ts = {0};
    int games = strcmp(name, "backgammon") == 0 ? 3 : 40;
    fill(rb, traj, games / 2, &rng, 0.5, false, &ts);
    fill(rb, traj, games - games / 2, &rng, 0.5, true, &ts);
    zt_replay_stats st = zt_replay_get_stats(rb);
    CHECK(st.positions == ts.n && st.games == games, "%s: %lld positions, %lld games", name,
          (long long)st.positions, (long long)st.games);
    check_stored(rb, &ts, name);
    zt_replay_position pos;
    CHECK(zt_replay_get(rb, ts.n, &pos, NULL) == ZT_ERR_INVALID, "get past the end");
    printf("round trip %-12s %6lld positions in %3d games\n", g->title, (long long)ts.n, games);
    free(ts.t);
    zt_replay_traj_free(traj);
    zt_replay_free(rb);
    zt_game_free(g);
}

static void test_window(void)
{
    zt_replay_config cfg;
    zt_replay_config_default(&cfg);
    cfg.capacity = 1000000;
    cfg.window_c = 1000;
    int64_t prev = 0;
    for (int64_t n = 1; n <= 2000000; n = n < 5000 ? n + 1 : n * 11 / 10) {
        int64_t w = zt_replay_window(&cfg, n);
        CHECK(w >= prev && w <= n && w <= cfg.capacity, "window(%lld) = %lld after %lld",
              (long long)n, (long long)w, (long long)prev);
        if (n <= 1000) CHECK(w == n, "window(%lld) = %lld before c", (long long)n, (long long)w);
        prev = w;
    }
    /* c (1 + beta ((N/c)^alpha - 1) / alpha) at N = 16c: 1000 (1 + 0.4 * 7 / 0.75) */
    int64_t w16 = zt_replay_window(&cfg, 16000);
    CHECK(w16 == 4733, "window(16000) = %lld, want 4733", (long long)w16);
    CHECK(zt_replay_window(&cfg, 1000000000) == cfg.capacity, "window capped by the capacity");
    cfg.window_alpha = 1;
    cfg.window_beta = 1;
    CHECK(zt_replay_window(&cfg, 123456) == 123456, "alpha = beta = 1: everything");
    /* A window so steep that it overflows to inf is every position (found
     * by fuzz_replay: the cast of inf was undefined behaviour), and a
     * non-finite setting is refused. */
    cfg.window_alpha = 1e300;
    CHECK(zt_replay_window(&cfg, 123456) == 123456, "alpha 1e300");
    cfg.window_alpha = 0.75;
    cfg.window_beta = 1e308;
    CHECK(zt_replay_window(&cfg, 5000) == 5000, "beta 1e308");
    cfg.window_beta = INFINITY;
    zt_game *ttt = zt_test_game("tictactoe");
    zt_replay *inf_rb = NULL;
    CHECK(zt_replay_new(ttt, &cfg, &inf_rb) == ZT_ERR_INVALID && !inf_rb,
          "an infinite beta is refused");
    zt_game_free(ttt);
    cfg.window_beta = 1;

    /* Samples come from the newest window positions only. */
    zt_game *g = zt_test_game("tictactoe");
    if (!g) return;
    zt_replay_config_default(&cfg);
    cfg.capacity = 4000;
    cfg.window_c = 300;
    zt_replay *rb;
    zt_replay_traj *traj;
    CHECK(zt_replay_new(g, &cfg, &rb) == ZT_OK, "%s", zt_error_message());
    CHECK(zt_replay_traj_new(g, &traj) == ZT_OK, "%s", zt_error_message());
    zt_rng rng;
    zt_rng_seed(&rng, SEED, 3);
    fill(rb, traj, 400, &rng, 1.0, false, NULL);
    zt_replay_stats st = zt_replay_get_stats(rb);
    CHECK(st.window == zt_replay_window(&cfg, st.positions_seen) && st.window < st.positions,
          "window %lld of %lld stored", (long long)st.window, (long long)st.positions);
    zt_replay_batch b;
    CHECK(zt_replay_batch_init(&b, g, 512, false) == ZT_OK, "%s", zt_error_message());
    int64_t lowest = INT64_MAX;
    for (int k = 0; k < 8; k++) {
        CHECK(zt_replay_sample(rb, &rng, &b) == ZT_OK, "%s", zt_error_message());
        for (int r = 0; r < b.size; r++)
            if (b.index[r] < lowest) lowest = b.index[r];
    }
    CHECK(lowest >= st.positions_seen - st.window && lowest < st.positions_seen - st.window + 20,
          "lowest sampled %lld, window starts at %lld", (long long)lowest,
          (long long)(st.positions_seen - st.window));
    printf("window: %lld positions seen, window %lld (c = 300), lowest sampled %lld\n",
           (long long)st.positions_seen, (long long)st.window, (long long)lowest);
    zt_replay_batch_free(&b);
    zt_replay_traj_free(traj);
    zt_replay_free(rb);
    zt_game_free(g);
}

/* Capacity in positions, in games and in bytes (the ring wraps) all evict
 * the oldest games and leave the newest ones intact. */
static void test_eviction(void)
{
    zt_game *g = zt_test_game("connect4");
    if (!g) return;
    const struct {
        int64_t capacity, max_games;
        size_t arena_bytes;
    } cases[] = {{500, 0, 0}, {100000, 13, 0}, {100000, 0, 3001}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        zt_replay_config cfg;
        zt_replay_config_default(&cfg);
        cfg.capacity = cases[c].capacity;
        cfg.max_games = cases[c].max_games;
        cfg.arena_bytes = cases[c].arena_bytes;
        zt_replay *rb;
        zt_replay_traj *traj;
        CHECK(zt_replay_new(g, &cfg, &rb) == ZT_OK, "%s", zt_error_message());
        CHECK(zt_replay_traj_new(g, &traj) == ZT_OK, "%s", zt_error_message());
        zt_rng rng;
        zt_rng_seed(&rng, SEED, 4 + c);
        truths ts = {0};
        fill(rb, traj, 300, &rng, 0.7, c == 2, &ts);
        zt_replay_stats st = zt_replay_get_stats(rb);
        const zt_replay_config *got = zt_replay_get_config(rb);
        CHECK(st.positions <= cfg.capacity && st.games <= got->max_games &&
                  st.record_bytes <= got->arena_bytes && st.games < 300 && st.games >= 5,
              "case %zu: %lld positions, %lld games, %zu bytes", c, (long long)st.positions,
              (long long)st.games, st.record_bytes);
        check_stored(rb, &ts, "after eviction");
        zt_replay_position pos;
        CHECK(zt_replay_get(rb, st.positions_seen - st.positions - 1, &pos, NULL) == ZT_ERR_INVALID,
              "an evicted position is refused");
        free(ts.t);
        zt_replay_traj_free(traj);
        zt_replay_free(rb);
    }
    zt_game_free(g);
}

/* Sampled rows: the observation is that of the symmetric position, the
 * policy target lies on its legal moves and is the stored policy moved by
 * sym_action; value targets are the outcomes. */
static void test_sampling(const char *name)
{
    zt_game *g = zt_test_game(name);
    if (!g) return;
    zt_replay_config cfg;
    zt_replay_config_default(&cfg);
    cfg.capacity = 20000;
    zt_replay *rb;
    zt_replay_traj *traj;
    CHECK(zt_replay_new(g, &cfg, &rb) == ZT_OK, "%s", zt_error_message());
    CHECK(zt_replay_traj_new(g, &traj) == ZT_OK, "%s", zt_error_message());
    zt_rng rng;
    zt_rng_seed(&rng, SEED, 5);
    truths ts = {0};
    fill(rb, traj, 60, &rng, 0.6, false, &ts);
    zt_replay_batch b;
    CHECK(zt_replay_batch_init(&b, g, 256, true) == ZT_OK, "%s", zt_error_message());
    CHECK(zt_replay_sample(rb, &rng, &b) == ZT_OK, "%s", zt_error_message());
    int obs_size = b.obs_size, A = g->num_actions, syms_seen = 0, bad = 0;
    float *obs = malloc(sizeof(float) * (size_t)obs_size);
    uint8_t seen_sym[1024] = {0};
    for (int r = 0; r < b.size && bad < 5; r++) {
        const truth *t = &ts.t[b.index[r]];
        uint8_t sym_state[ZT_MAX_STATE_BYTES];
        g->sym_state(g, b.sym[r], t->state, sym_state);
        g->observe(g, sym_state, obs);
        uint8_t mask[ZT_MAX_ACTIONS];
        zt_game_legal_mask(g, sym_state, mask);
        bool ok =
            memcmp(obs, b.obs + (size_t)r * obs_size, sizeof(float) * (size_t)obs_size) == 0 &&
            memcmp(mask, b.legal + (size_t)r * A, (size_t)A) == 0;
        const float *p = b.policy + (size_t)r * A;
        double sum = 0, worst = 0;
        for (int a = 0; a < A; a++) {
            if (p[a] != 0 && !mask[a]) ok = false;
            sum += p[a];
        }
        for (int a = 0; a < A; a++) {
            double e = fabs(p[g->sym_action(g, b.sym[r], a)] - t->policy[a]);
            if (e > worst) worst = e;
        }
        ok = ok && worst <= 1.0 / 65535 + 1e-6;
        ok = ok && (t->full ? b.policy_weight[r] == 1 && fabs(sum - 1) < 1e-4
                            : b.policy_weight[r] == 0 && sum == 0);
        ok =
            ok && b.value[r] == t->outcome && fabsf(b.root_value[r] - t->root_value) <= 1.0f / 2048;
        const float *wdl = b.wdl + (size_t)r * 3;
        ok = ok && wdl[0] == (t->outcome > 0) && wdl[1] == (t->outcome == 0) &&
             wdl[2] == (t->outcome < 0);
        CHECK(ok, "%s: row %d (position %lld, symmetry %d) disagrees with the symmetric position",
              name, r, (long long)b.index[r], b.sym[r]);
        bad += !ok;
        if (b.sym[r] < 1024 && !seen_sym[b.sym[r]]) {
            seen_sym[b.sym[r]] = 1;
            syms_seen++;
        }
    }
    int want_syms = g->num_symmetries < 8 ? g->num_symmetries : 8;
    CHECK(syms_seen >= want_syms, "%s: %d symmetries drawn of %d", name, syms_seen,
          g->num_symmetries);
    printf("sampling %-12s 256 rows, %d distinct symmetries drawn of %d\n", g->title, syms_seen,
           g->num_symmetries);
    free(obs);
    free(ts.t);
    zt_replay_batch_free(&b);
    zt_replay_traj_free(traj);
    zt_replay_free(rb);
    zt_game_free(g);
}

/* Bytes per stored position against float32 planes + a dense float policy. */
static void test_bytes(const char *name, double min_saving)
{
    zt_game *g = zt_test_game(name);
    if (!g) return;
    const struct {
        const char *what;
        double full_share;
        bool sparse;
    } kinds[] = {{"dense policy, every move", 1.0, false},
                 {"sparse policy, every move", 1.0, true},
                 {"dense policy, 25% full searches", 0.25, false}};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        zt_replay_config cfg;
        zt_replay_config_default(&cfg);
        cfg.capacity = 50000;
        zt_replay *rb;
        zt_replay_traj *traj;
        CHECK(zt_replay_new(g, &cfg, &rb) == ZT_OK, "%s", zt_error_message());
        CHECK(zt_replay_traj_new(g, &traj) == ZT_OK, "%s", zt_error_message());
        zt_rng rng;
        zt_rng_seed(&rng, SEED, 6);
        fill(rb, traj, 2000, &rng, kinds[k].full_share, kinds[k].sparse, NULL);
        zt_replay_stats st = zt_replay_get_stats(rb);
        printf("bytes %-12s %-32s %6.2f B/position vs %4.0f dense: %.2f%% less\n", g->title,
               kinds[k].what, st.bytes_per_position, st.dense_bytes_per_position, 100 * st.saving);
        CHECK(st.saving >= min_saving, "%s %s: saving %.4f < %.4f", name, kinds[k].what, st.saving,
              min_saving);
        zt_replay_traj_free(traj);
        zt_replay_free(rb);
    }
    zt_game_free(g);
}

static bool batches_equal(const zt_replay_batch *a, const zt_replay_batch *b)
{
    size_t B = (size_t)a->size, A = (size_t)a->num_actions;
    return a->size == b->size &&
           memcmp(a->obs, b->obs, B * (size_t)a->obs_size * sizeof(float)) == 0 &&
           memcmp(a->policy, b->policy, B * A * sizeof(float)) == 0 &&
           memcmp(a->legal, b->legal, B * A) == 0 &&
           memcmp(a->policy_weight, b->policy_weight, B * sizeof(float)) == 0 &&
           memcmp(a->value, b->value, B * sizeof(float)) == 0 &&
           memcmp(a->root_value, b->root_value, B * sizeof(float)) == 0 &&
           (!a->wdl || memcmp(a->wdl, b->wdl, B * 3 * sizeof(float)) == 0) &&
           memcmp(a->index, b->index, B * sizeof(int64_t)) == 0 &&
           memcmp(a->sym, b->sym, B * sizeof(int32_t)) == 0;
}

/* Rewrites the blob's checksum so that a deliberate change reaches the
 * record checks behind it. */
static void forge_checksum(uint8_t *data, size_t len)
{
    uint64_t h = zt_hash_bytes(data, len - 8, ZT_REPLAY_HASH_SEED);
    for (int i = 0; i < 8; i++) data[len - 8 + (size_t)i] = (uint8_t)(h >> (8 * i));
}

static void expect_refused(const zt_game *g, const uint8_t *data, size_t len, const char *words,
                           const char *what)
{
    zt_replay *rb = NULL;
    zt_status st = zt_replay_deserialize(g, data, len, &rb);
    CHECK(st != ZT_OK && rb == NULL && strstr(zt_error_message(), words),
          "%s: status %s, message '%s' (want '%s')", what, zt_status_name(st), zt_error_message(),
          words);
    zt_replay_free(rb);
}

static void test_checkpoint(void)
{
    zt_game *g = zt_test_game("connect4"), *ttt = zt_test_game("tictactoe");
    if (!g || !ttt) return;
    zt_replay_config cfg;
    zt_replay_config_default(&cfg);
    cfg.capacity = 3000;
    cfg.window_c = 1000;
    cfg.arena_bytes = 40000; /* small enough that the ring has wrapped */
    zt_replay *rb;
    zt_replay_traj *traj;
    CHECK(zt_replay_new(g, &cfg, &rb) == ZT_OK, "%s", zt_error_message());
    CHECK(zt_replay_traj_new(g, &traj) == ZT_OK, "%s", zt_error_message());
    zt_rng rng;
    zt_rng_seed(&rng, SEED, 7);
    truths ts = {0};
    fill(rb, traj, 250, &rng, 0.5, false, &ts);
    fill(rb, traj, 250, &rng, 0.5, true, &ts);

    uint8_t *blob, *blob2;
    size_t len, len2;
    CHECK(zt_replay_serialize(rb, &blob, &len) == ZT_OK, "%s", zt_error_message());
    zt_replay *back = NULL;
    CHECK(zt_replay_deserialize(g, blob, len, &back) == ZT_OK, "%s", zt_error_message());
    if (!back) return;
    CHECK(zt_replay_serialize(back, &blob2, &len2) == ZT_OK, "%s", zt_error_message());
    CHECK(len == len2 && memcmp(blob, blob2, len) == 0, "serialise(deserialise(x)) != x");
    check_stored(back, &ts, "deserialised");
    zt_replay_stats s1 = zt_replay_get_stats(rb), s2 = zt_replay_get_stats(back);
    CHECK(s1.positions == s2.positions && s1.positions_seen == s2.positions_seen &&
              s1.games_seen == s2.games_seen && s1.policy_targets == s2.policy_targets &&
              s1.window == s2.window,
          "stats differ after a round trip");
    zt_replay_batch a, b;
    CHECK(zt_replay_batch_init(&a, g, 128, true) == ZT_OK, "%s", zt_error_message());
    CHECK(zt_replay_batch_init(&b, g, 128, true) == ZT_OK, "%s", zt_error_message());
    zt_rng r1, r2;
    zt_rng_seed(&r1, SEED, 8);
    r2 = r1;
    for (int k = 0; k < 3; k++) {
        CHECK(zt_replay_sample(rb, &r1, &a) == ZT_OK, "%s", zt_error_message());
        CHECK(zt_replay_sample(back, &r2, &b) == ZT_OK, "%s", zt_error_message());
        CHECK(batches_equal(&a, &b), "batch %d differs after a checkpoint round trip", k);
    }
    /* The loaded buffer keeps working: more games, same as the original. */
    zt_rng g1, g2;
    zt_rng_seed(&g1, SEED, 9);
    g2 = g1;
    fill(rb, traj, 50, &g1, 0.5, false, NULL);
    fill(back, traj, 50, &g2, 0.5, false, NULL);
    CHECK(zt_replay_sample(rb, &r1, &a) == ZT_OK && zt_replay_sample(back, &r2, &b) == ZT_OK &&
              batches_equal(&a, &b),
          "batches differ after appending to a loaded buffer");

    /* Through a file, atomically written. */
    char dir[] = "/tmp/zt_test_replay_XXXXXX", path[256];
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    snprintf(path, sizeof path, "%s/replay.bin", dir);
    CHECK(zt_replay_save(back, path) == ZT_OK, "%s", zt_error_message());
    zt_replay *loaded = NULL;
    CHECK(zt_replay_load(g, path, &loaded) == ZT_OK, "%s", zt_error_message());
    CHECK(loaded && zt_replay_sample(loaded, &r1, &a) == ZT_OK &&
              zt_replay_sample(back, &r2, &b) == ZT_OK && batches_equal(&a, &b),
          "a saved and loaded buffer samples differently");
    zt_replay_free(loaded);
    CHECK(zt_replay_load(g, "/nonexistent/replay.bin", &loaded) != ZT_OK && !loaded,
          "a missing file is refused");
    unlink(path);
    rmdir(dir);

    /* Refusals, each naming its problem. */
    for (size_t cut = 0; cut < len; cut += cut < 64 ? 7 : len / 9)
        expect_refused(g, blob, cut, cut < 20 ? "" : "truncated", "truncated blob");
    uint8_t *bad = malloc(len + 16);
    memcpy(bad, blob, len);
    bad[len / 2] ^= 0x10;
    expect_refused(g, bad, len, "checksum", "flipped byte");
    memcpy(bad, blob, len);
    bad[0] = 'X';
    expect_refused(g, bad, len, "magic", "bad magic");
    memcpy(bad, blob, len);
    bad[8] = 99;
    expect_refused(g, bad, len, "version", "future version");
    memcpy(bad, blob, len);
    memset(bad + len, 0, 16);
    expect_refused(g, bad, len + 16, "trailing", "trailing bytes");
    expect_refused(ttt, blob, len, "not 'tictactoe'", "another game's buffer");
    free(bad);

    free(blob);
    free(blob2);
    free(ts.t);
    zt_replay_batch_free(&a);
    zt_replay_batch_free(&b);
    zt_replay_traj_free(traj);
    zt_replay_free(back);
    zt_replay_free(rb);
    zt_game_free(g);
    zt_game_free(ttt);
}

/* Corrupt records behind a valid checksum are caught by the record checks:
 * every single-byte change of the record area either still decodes (the
 * byte was a weight or a value) or is refused as corrupt, never accepted
 * into a buffer that would crash when sampled. */
static void test_record_checks(void)
{
    zt_game *g = zt_test_game("tictactoe");
    if (!g) return;
    zt_replay_config cfg;
    zt_replay_config_default(&cfg);
    cfg.capacity = 100;
    zt_replay *rb;
    zt_replay_traj *traj;
    CHECK(zt_replay_new(g, &cfg, &rb) == ZT_OK, "%s", zt_error_message());
    CHECK(zt_replay_traj_new(g, &traj) == ZT_OK, "%s", zt_error_message());
    zt_rng rng;
    zt_rng_seed(&rng, SEED, 10);
    fill(rb, traj, 3, &rng, 0.6, true, NULL);
    uint8_t *blob;
    size_t len;
    CHECK(zt_replay_serialize(rb, &blob, &len) == ZT_OK, "%s", zt_error_message());
    zt_replay_stats st = zt_replay_get_stats(rb);
    size_t records = len - 8 - st.record_bytes;
    uint8_t *bad = malloc(len);
    int refused = 0, accepted = 0;
    zt_replay_batch b;
    CHECK(zt_replay_batch_init(&b, g, 64, false) == ZT_OK, "%s", zt_error_message());
    for (size_t at = records; at < len - 8; at++) {
        for (int bit = 0; bit < 8; bit++) {
            memcpy(bad, blob, len);
            bad[at] ^= (uint8_t)(1u << bit);
            forge_checksum(bad, len);
            zt_replay *back = NULL;
            zt_status s = zt_replay_deserialize(g, bad, len, &back);
            if (s == ZT_OK) {
                accepted++;
                CHECK(zt_replay_sample(back, &rng, &b) == ZT_OK, "sampling an accepted blob: %s",
                      zt_error_message());
            } else {
                refused++;
                CHECK(s == ZT_ERR_CORRUPT, "byte %zu bit %d: %s", at, bit, zt_error_message());
            }
            zt_replay_free(back);
        }
    }
    printf("record checks: %d single-bit changes refused, %d harmless\n", refused, accepted);
    CHECK(refused > 0, "no corrupt record was refused");
    free(bad);
    free(blob);
    zt_replay_batch_free(&b);
    zt_replay_traj_free(traj);
    zt_replay_free(rb);
    zt_game_free(g);
}

/* ---- trajectories as bytes ---- */

/* Serialises t (with return0) into a fresh buffer of exactly its size. */
static uint8_t *traj_bytes(const zt_replay_traj *t, float return0, size_t *len)
{
    size_t need = zt_replay_traj_serialized_size(t);
    uint8_t *buf = malloc(need);
    zt_status st = zt_replay_traj_serialize(t, return0, buf, need, len);
    CHECK(st == ZT_OK && *len == need, "serialize: %s (%zu of %zu bytes)", zt_error_message(), *len,
          need);
    return buf;
}

/* What a refused input must do: the status, a message naming the problem,
 * and t untouched (it serialises to the same bytes as before). */
static void expect_traj_refused(const zt_game *g, const uint8_t *data, size_t len,
                                zt_replay_traj *t, zt_status want, const char *words,
                                const char *what)
{
    size_t n0, n1;
    uint8_t *before = traj_bytes(t, 0.5f, &n0);
    float r0 = 12345;
    zt_status st = zt_replay_traj_deserialize(g, data, len, t, &r0);
    CHECK(st == want && (!words || strstr(zt_error_message(), words)) && r0 == 12345,
          "%s: status %s, message '%s' (want %s '%s')", what, zt_status_name(st),
          zt_error_message(), zt_status_name(want), words ? words : "");
    uint8_t *after = traj_bytes(t, 0.5f, &n1);
    CHECK(n0 == n1 && memcmp(before, after, n0) == 0, "%s: a refused input changed the trajectory",
          what);
    free(before);
    free(after);
}

/* For every registered game: random games with full searches only, without
 * any policy (fast searches only), mixed, dense and sparse, round-trip
 * through bytes to the same records and return; buffers fed the originals
 * and the copies hold the same bytes and sample the same batches; every
 * truncation and every flipped byte is refused; records damaged behind a
 * forged checksum are refused or read back exactly, never crash. */
static void test_traj_bytes(const zt_game_def *def)
{
    zt_game *g = zt_test_game(def->name);
    if (!g) return;
    static const struct {
        double full_share;
        bool sparse;
    } kinds[] = {{1.0, false}, {0.0, false}, {0.5, false}, {0.5, true}};
    enum { GAMES_PER_KIND = 4 };
    zt_replay_config cfg;
    zt_replay_config_default(&cfg);
    cfg.capacity = 20000;
    zt_replay *orig = NULL, *copy = NULL;
    zt_replay_traj *traj = NULL, *back = NULL, *spare = NULL;
    CHECK(zt_replay_new(g, &cfg, &orig) == ZT_OK && zt_replay_new(g, &cfg, &copy) == ZT_OK, "%s",
          zt_error_message());
    CHECK(zt_replay_traj_new(g, &traj) == ZT_OK && zt_replay_traj_new(g, &back) == ZT_OK &&
              zt_replay_traj_new(g, &spare) == ZT_OK,
          "%s", zt_error_message());
    if (zt_test_failures) goto done;
    zt_rng rng;
    zt_rng_seed(&rng, SEED, 70 + (uint64_t)g->num_actions);
    int checked = 0;
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        for (int i = 0; i < GAMES_PER_KIND; i++) {
            float r0 = play_game(g, traj, &rng, kinds[k].full_share, kinds[k].sparse, NULL, 0);
            size_t len;
            uint8_t *bytes = traj_bytes(traj, r0, &len);
            float r1 = 0;
            zt_status st = zt_replay_traj_deserialize(g, bytes, len, back, &r1);
            CHECK(st == ZT_OK, "%s: deserialize: %s", g->title, zt_error_message());
            size_t len2;
            uint8_t *again = traj_bytes(back, r1, &len2);
            CHECK(r1 == r0 && len2 == len && memcmp(again, bytes, len) == 0 &&
                      zt_replay_traj_length(back) == zt_replay_traj_length(traj),
                  "%s: kind %zu game %d: the round trip changed the trajectory", g->title, k, i);
            free(again);
            CHECK(zt_replay_add_game(orig, traj, r0, NULL) == ZT_OK &&
                      zt_replay_add_game(copy, back, r1, NULL) == ZT_OK,
                  "%s: add_game: %s", g->title, zt_error_message());
            if (k == 0 && i == 0) {
                /* a buffer too small is refused, naming the size needed */
                size_t need;
                st = zt_replay_traj_serialize(traj, r0, bytes, len - 1, &need);
                CHECK(st == ZT_ERR_INVALID && need == len, "short buffer: %s, need %zu",
                      zt_status_name(st), need);
                /* every truncation, and a trailing byte */
                for (size_t cut = 0; cut < len; cut++) {
                    float dummy;
                    st = zt_replay_traj_deserialize(g, bytes, cut, spare, &dummy);
                    CHECK(st == ZT_ERR_CORRUPT, "%s: %zu of %zu bytes: %s", g->title, cut, len,
                          zt_status_name(st));
                    if (st != ZT_ERR_CORRUPT) break;
                }
                uint8_t *longer = malloc(len + 1);
                memcpy(longer, bytes, len);
                longer[len] = 0;
                expect_traj_refused(g, longer, len + 1, back, ZT_ERR_CORRUPT, "trailing",
                                    "a trailing byte");
                free(longer);
            }
            if (i == 0) {
                /* a flipped bit anywhere fails a check (every byte of short
                 * games, a sample of long ones) and leaves `back` intact */
                uint8_t *bad = malloc(len);
                size_t tries = len <= 2048 ? len : 2048;
                for (size_t j = 0; j < tries && !zt_test_failures; j++) {
                    size_t at = len <= 2048 ? j : (size_t)zt_rng_below(&rng, (uint32_t)len);
                    memcpy(bad, bytes, len);
                    bad[at] ^= (uint8_t)(1u << zt_rng_below(&rng, 8));
                    expect_traj_refused(g, bad, len, back, ZT_ERR_CORRUPT, NULL, "a flipped bit");
                    checked++;
                }
                /* damaged records behind a valid checksum: refused or read
                 * back exactly, never a crash (run under the sanitizers) */
                for (int j = 0; j < 300 && len > 33; j++) {
                    memcpy(bad, bytes, len);
                    size_t at = 25 + (size_t)zt_rng_below(&rng, (uint32_t)(len - 33));
                    bad[at] = (uint8_t)zt_rng_u64(&rng);
                    uint64_t h = zt_hash_bytes(bad, len - 8, ZT_REPLAY_TRAJ_HASH_SEED);
                    for (int b = 0; b < 8; b++) bad[len - 8 + (size_t)b] = (uint8_t)(h >> (8 * b));
                    float rr;
                    st = zt_replay_traj_deserialize(g, bad, len, spare, &rr);
                    CHECK(st == ZT_OK || st == ZT_ERR_CORRUPT, "forged: %s", zt_status_name(st));
                    if (st == ZT_OK) {
                        size_t n3;
                        uint8_t *re = traj_bytes(spare, rr, &n3);
                        CHECK(n3 == len && memcmp(re, bad, len) == 0,
                              "forged input read back differently");
                        free(re);
                    }
                }
                /* an unknown record flag behind a valid checksum names the record */
                memcpy(bad, bytes, len);
                bad[25] = 0xff;
                uint64_t h = zt_hash_bytes(bad, len - 8, ZT_REPLAY_TRAJ_HASH_SEED);
                for (int b = 0; b < 8; b++) bad[len - 8 + (size_t)b] = (uint8_t)(h >> (8 * b));
                expect_traj_refused(g, bad, len, back, ZT_ERR_CORRUPT, "record 0",
                                    "a bad record flag");
                free(bad);
            }
            free(bytes);
        }
    }
    /* an empty trajectory round-trips too */
    zt_replay_traj_clear(traj);
    size_t len;
    uint8_t *bytes = traj_bytes(traj, 0, &len);
    float r0 = 1;
    CHECK(zt_replay_traj_deserialize(g, bytes, len, spare, &r0) == ZT_OK &&
              zt_replay_traj_length(spare) == 0 && r0 == 0,
          "empty trajectory: %s", zt_error_message());
    free(bytes);
    {
        uint8_t *a, *b;
        size_t la, lb;
        CHECK(zt_replay_serialize(orig, &a, &la) == ZT_OK &&
                  zt_replay_serialize(copy, &b, &lb) == ZT_OK,
              "%s", zt_error_message());
        CHECK(la == lb && memcmp(a, b, la) == 0, "%s: buffers of originals and copies differ",
              g->title);
        free(a);
        free(b);
        zt_replay_batch ba, bb;
        CHECK(zt_replay_batch_init(&ba, g, 64, true) == ZT_OK &&
                  zt_replay_batch_init(&bb, g, 64, true) == ZT_OK,
              "%s", zt_error_message());
        zt_rng ra, rb2;
        zt_rng_seed(&ra, SEED, 77);
        rb2 = ra;
        for (int i = 0; i < 4; i++) {
            CHECK(zt_replay_sample(orig, &ra, &ba) == ZT_OK &&
                      zt_replay_sample(copy, &rb2, &bb) == ZT_OK,
                  "sample: %s", zt_error_message());
            CHECK(batches_equal(&ba, &bb), "%s: batch %d differs", g->title, i);
        }
        zt_replay_batch_free(&ba);
        zt_replay_batch_free(&bb);
    }
    printf("trajectory bytes %-22s %d games round-tripped, %d damaged inputs refused\n", g->title,
           (int)(sizeof kinds / sizeof kinds[0]) * GAMES_PER_KIND, checked);
done:
    zt_replay_traj_free(traj);
    zt_replay_traj_free(back);
    zt_replay_traj_free(spare);
    zt_replay_free(orig);
    zt_replay_free(copy);
    zt_game_free(g);
}

/* Bytes of one game are refused by another game, or by the same game with
 * other settings (Sim on K7 reading K6's records). */
static void test_traj_other_game(void)
{
    zt_game *ttt = zt_test_game("tictactoe"), *c4 = zt_test_game("connect4"), *k6 = zt_test_game("sim");
    zt_config *cfg = zt_config_new();
    zt_config_put(cfg, "vertices", "7");
    zt_game *k7 = NULL;
    CHECK(zt_game_new("sim", cfg, &k7) == ZT_OK, "%s", zt_error_message());
    zt_config_free(cfg);
    if (!ttt || !c4 || !k6 || !k7) goto done;
    const zt_game *pairs[][2] = {{ttt, c4}, {k6, k7}};
    for (int i = 0; i < 2; i++) {
        zt_replay_traj *from, *to;
        CHECK(zt_replay_traj_new(pairs[i][0], &from) == ZT_OK &&
                  zt_replay_traj_new(pairs[i][1], &to) == ZT_OK,
              "%s", zt_error_message());
        zt_rng rng;
        zt_rng_seed(&rng, SEED, 90);
        float r0 = play_game(pairs[i][0], from, &rng, 1.0, false, NULL, 0);
        size_t len;
        uint8_t *bytes = traj_bytes(from, r0, &len);
        char what[160];
        snprintf(what, sizeof what, "%s read as %s", pairs[i][0]->title, pairs[i][1]->title);
        expect_traj_refused(pairs[i][1], bytes, len, to, ZT_ERR_INVALID, "another game", what);
        free(bytes);
        zt_replay_traj_free(from);
        zt_replay_traj_free(to);
    }
done:
    zt_game_free(ttt);
    zt_game_free(c4);
    zt_game_free(k6);
    zt_game_free(k7);
}

static void test_sampler_thread(void)
{
    zt_game *g = zt_test_game("connect4");
    if (!g) return;
    zt_replay_config cfg;
    zt_replay_config_default(&cfg);
    cfg.capacity = 10000;
    zt_replay *rb;
    zt_replay_traj *traj;
    CHECK(zt_replay_new(g, &cfg, &rb) == ZT_OK, "%s", zt_error_message());
    CHECK(zt_replay_traj_new(g, &traj) == ZT_OK, "%s", zt_error_message());
    zt_rng rng;
    zt_rng_seed(&rng, SEED, 11);

    /* On an empty buffer the error comes through, with its message. */
    zt_replay_sampler *s = NULL;
    CHECK(zt_replay_sampler_new(rb, 32, false, &rng, &s) == ZT_OK, "%s", zt_error_message());
    const zt_replay_batch *got = NULL;
    zt_status st = zt_replay_sampler_next(s, &got);
    CHECK(st == ZT_ERR_INVALID && !got && strstr(zt_error_message(), "empty"), "empty: %s",
          zt_error_message());
    zt_replay_sampler_free(s);

    fill(rb, traj, 100, &rng, 0.5, false, NULL);
    zt_rng start;
    zt_rng_seed(&start, SEED, 12);
    CHECK(zt_replay_sampler_new(rb, 96, true, &start, &s) == ZT_OK, "%s", zt_error_message());
    zt_replay_batch sync;
    CHECK(zt_replay_batch_init(&sync, g, 96, true) == ZT_OK, "%s", zt_error_message());
    zt_rng r = start;
    for (int k = 0; k < 12; k++) {
        CHECK(zt_replay_sampler_next(s, &got) == ZT_OK && got, "%s", zt_error_message());
        CHECK(zt_replay_sample(rb, &r, &sync) == ZT_OK, "%s", zt_error_message());
        CHECK(got && batches_equal(got, &sync),
              "threaded batch %d differs from the synchronous one", k);
        CHECK(got && memcmp(&got->rng_after, &r, sizeof r) == 0, "rng after batch %d differs", k);
    }
    /* Freed while the thread holds a batch in progress or waits. */
    zt_replay_sampler_free(s);
    zt_replay_batch_free(&sync);
    zt_replay_traj_free(traj);
    zt_replay_free(rb);
    zt_game_free(g);
}

/* 2048: a stored position's outcome is (final score - the score banked in
 * it) / max_return, exactly, never rising along a game; a sampled row's
 * value is that outcome through zt_game_value_to_net. */
static void test_one_player_targets(void)
{
    zt_game *g = zt_test_game("2048");
    if (!g) return;
    zt_replay_config cfg;
    zt_replay_config_default(&cfg);
    cfg.capacity = 100000;
    cfg.augment = false;
    zt_replay *rb;
    zt_replay_traj *traj;
    CHECK(zt_replay_new(g, &cfg, &rb) == ZT_OK, "%s", zt_error_message());
    CHECK(zt_replay_traj_new(g, &traj) == ZT_OK, "%s", zt_error_message());
    zt_rng rng;
    zt_rng_seed(&rng, SEED, 9);
    float policy[ZT_MAX_ACTIONS];
    int64_t first = 0;
    int bad = 0;
    for (int game = 0; game < 3; game++) {
        uint8_t s[ZT_MAX_STATE_BYTES];
        double banked[4096];
        int n = 0;
        g->reset(g, s);
        zt_replay_traj_clear(traj);
        for (;;) {
            int p = g->current_player(g, s);
            if (p == ZT_TERMINAL) break;
            if (p == ZT_CHANCE) {
                int outcomes[ZT_MAX_CHANCE_OUTCOMES];
                float probs[ZT_MAX_CHANCE_OUTCOMES];
                int k = g->chance_outcomes(g, s, outcomes, probs);
                g->apply(g, s, outcomes[zt_rng_categorical(&rng, probs, k)]);
                continue;
            }
            make_policy(g, s, &rng, false, policy);
            zt_replay_traj_add(traj, s, policy, 0.25f, true);
            float r[2];
            g->returns(g, s, r);
            if (n < 4096) banked[n++] = r[0];
            uint16_t legal[ZT_MAX_ACTIONS];
            int k = g->legal(g, s, legal);
            g->apply(g, s, legal[zt_rng_below(&rng, (uint32_t)k)]);
        }
        float final[2];
        g->returns(g, s, final);
        CHECK(zt_replay_add_game(rb, traj, zt_game_value_of(g, s, 0), NULL) == ZT_OK, "%s",
              zt_error_message());
        float prev = INFINITY;
        for (int i = 0; i < n && bad < 5; i++) {
            zt_replay_position pos;
            CHECK(zt_replay_get(rb, first + i, &pos, NULL) == ZT_OK, "%s", zt_error_message());
            double want = final[0] - banked[i];
            bool ok = (double)pos.outcome * g->max_return == want && pos.outcome <= prev &&
                      pos.outcome >= 0;
            CHECK(ok, "game %d ply %d: outcome %g x %g, want %g points still to come", game, i,
                  pos.outcome, g->max_return, want);
            bad += !ok;
            prev = pos.outcome;
        }
        CHECK(prev == 0 || final[0] - banked[n - 1] == prev * g->max_return,
              "the last position's target");
        first += zt_replay_traj_length(traj);
    }
    zt_replay_batch b;
    CHECK(zt_replay_batch_init(&b, g, 128, false) == ZT_OK, "%s", zt_error_message());
    CHECK(zt_replay_sample(rb, &rng, &b) == ZT_OK, "%s", zt_error_message());
    for (int r = 0; r < b.size && bad < 5; r++) {
        zt_replay_position pos;
        CHECK(zt_replay_get(rb, b.index[r], &pos, NULL) == ZT_OK, "%s", zt_error_message());
        float y = zt_game_value_to_net(g, pos.outcome);
        bool ok = b.value[r] == y && y >= 0 && y < 1 &&
                  fabsf(zt_game_value_from_net(g, b.value[r]) - pos.outcome) <= 1e-5f * (1 + pos.outcome) &&
                  b.root_value[r] == zt_game_value_to_net(g, pos.root_value);
        CHECK(ok, "row %d: value %g, want h(%g) = %g", r, b.value[r], pos.outcome, y);
        bad += !ok;
    }
    printf("one player (2048): %lld positions, targets are the points still to come\n",
           (long long)first);
    zt_replay_batch_free(&b);
    zt_replay_traj_free(traj);
    zt_replay_free(rb);
    zt_game_free(g);
}

/* Games A A B A C (one random game per seed: the same seed, the same game)
 * into rb, recorded in ts (may be NULL) with ids 0..4. */
static void add_seeded_games(zt_replay *rb, zt_replay_traj *traj, truths *ts)
{
    const uint64_t seeds[5] = {1, 1, 2, 1, 3};
    for (int i = 0; i < 5; i++) {
        zt_rng rng;
        zt_rng_seed(&rng, SEED, seeds[i]);
        float r0 = play_game(zt_replay_game(rb), traj, &rng, 1.0, false, ts, (uint64_t)i);
        CHECK(zt_replay_add_game(rb, traj, r0, NULL) == ZT_OK, "%s", zt_error_message());
    }
}

/* Distinct positions and games of the window: games replayed from the same
 * seed are repeats, and the counts match a count by hand of the positions'
 * hashes; once the buffer evicts, only what it holds counts. */
static void test_diversity(void)
{
    zt_game *g = zt_test_game("connect4");
    if (!g) return;
    zt_replay_config cfg;
    zt_replay_config_default(&cfg);
    cfg.capacity = 100000;
    cfg.window_c = 0;
    zt_replay *rb;
    zt_replay_traj *traj;
    CHECK(zt_replay_new(g, &cfg, &rb) == ZT_OK, "%s", zt_error_message());
    CHECK(zt_replay_traj_new(g, &traj) == ZT_OK, "%s", zt_error_message());
    zt_replay_diversity d;
    CHECK(zt_replay_get_diversity(rb, &d) == ZT_OK && d.positions == 0 && d.games == 0,
          "an empty buffer has %lld positions", (long long)d.positions);
    truths ts = {0};
    add_seeded_games(rb, traj, &ts);
    int64_t distinct = 0, distinct_bc = 0, len_a = 0;
    for (int64_t i = 0; i < ts.n; i++) {
        len_a += ts.t[i].game_id == 0;
        bool seen = false, seen_bc = false;
        uint64_t h = g->hash(g, ts.t[i].state);
        for (int64_t j = 0; j < i; j++) {
            bool same = g->hash(g, ts.t[j].state) == h;
            seen = seen || same;
            seen_bc = seen_bc || (same && ts.t[j].game_id >= 3);
        }
        distinct += !seen;
        if (ts.t[i].game_id >= 3) distinct_bc += !seen_bc;
    }
    CHECK(zt_replay_get_diversity(rb, &d) == ZT_OK, "%s", zt_error_message());
    CHECK(d.positions == ts.n && d.distinct_positions == distinct && d.games == 5 &&
              d.distinct_games == 3,
          "diversity: %lld positions (%lld distinct), %lld games (%lld distinct); expected %lld "
          "(%lld), 5 (3)",
          (long long)d.positions, (long long)d.distinct_positions, (long long)d.games,
          (long long)d.distinct_games, (long long)ts.n, (long long)distinct);
    CHECK(d.distinct_positions < d.positions - 2 * len_a + 2,
          "the repeated game A counts once (%lld distinct of %lld)",
          (long long)d.distinct_positions, (long long)d.positions);
    zt_replay_free(rb);

    /* a buffer holding only the last two games (A C) */
    int64_t len_last2 = 0;
    for (int64_t i = 0; i < ts.n; i++) len_last2 += ts.t[i].game_id >= 3;
    cfg.capacity = len_last2;
    cfg.max_games = 2;
    CHECK(zt_replay_new(g, &cfg, &rb) == ZT_OK, "%s", zt_error_message());
    add_seeded_games(rb, traj, NULL);
    CHECK(zt_replay_get_diversity(rb, &d) == ZT_OK, "%s", zt_error_message());
    CHECK(d.positions == len_last2 && d.games == 2 && d.distinct_games == 2 &&
              d.distinct_positions == distinct_bc,
          "after eviction: %lld positions (%lld distinct), %lld games (%lld distinct); expected "
          "%lld (%lld), 2 (2)",
          (long long)d.positions, (long long)d.distinct_positions, (long long)d.games,
          (long long)d.distinct_games, (long long)len_last2, (long long)distinct_bc);
    free(ts.t);
    zt_replay_free(rb);
    zt_replay_traj_free(traj);
    zt_game_free(g);
}

/* The window's games by result: for two players, those won by the first
 * player, drawn and won by the second, counted from the results they were
 * stored with, and only the window's (all six games, or a window of the
 * last position alone); none for a one-player game. */
static void test_diversity_outcomes(void)
{
    const float results[6] = {1, 1, 1, 0, -1, 0};
    const char *names[2] = {"connect4", "2048"};
    for (int two = 1; two >= 0; two--) {
        zt_game *g = zt_test_game(names[1 - two]);
        if (!g) continue;
        zt_replay_traj *traj;
        CHECK(zt_replay_traj_new(g, &traj) == ZT_OK, "%s", zt_error_message());
        for (int last = 0; last < 2; last++) {
            zt_replay_config cfg;
            zt_replay_config_default(&cfg);
            cfg.capacity = 100000;
            cfg.window_c = last;
            cfg.window_beta = 0;
            zt_replay *rb;
            CHECK(zt_replay_new(g, &cfg, &rb) == ZT_OK, "%s", zt_error_message());
            if (!rb) break;
            for (int i = 0; i < 6; i++) {
                zt_rng rng;
                zt_rng_seed(&rng, SEED, 100 + (uint64_t)i);
                float r0 = play_game(g, traj, &rng, 1.0, false, NULL, (uint64_t)i);
                CHECK(zt_replay_add_game(rb, traj, two ? results[i] : r0, NULL) == ZT_OK, "%s",
                      zt_error_message());
            }
            const int64_t want[2][3] = {{3, 2, 1}, {0, 1, 0}};
            zt_replay_diversity d;
            CHECK(zt_replay_get_diversity(rb, &d) == ZT_OK, "%s", zt_error_message());
            char text[ZT_REPLAY_DIVERSITY_TEXT];
            zt_replay_diversity_format(&d, text, sizeof text);
            bool counted = true;
            for (int k = 0; k < 3; k++) counted = counted && d.outcomes[k] == two * want[last][k];
            CHECK(d.games == (last ? 1 : 6) && counted && (strstr(text, "won") != NULL) == two,
                  "%s, window of %s: %lld games, outcomes %lld %lld %lld; '%s'", names[1 - two],
                  last ? "the last position" : "all", (long long)d.games, (long long)d.outcomes[0],
                  (long long)d.outcomes[1], (long long)d.outcomes[2], text);
            if (two && !last)
                CHECK(strstr(text, "; first won 50.0 %, drawn 33.3 %, second won 16.7 %") != NULL,
                      "format: %s", text);
            zt_replay_free(rb);
        }
        zt_replay_traj_free(traj);
        zt_game_free(g);
    }
}

int main(void)
{
    printf("seed %llu\n", (unsigned long long)SEED);
    test_half_and_quantise();
    const char *games[] = {"tictactoe", "connect4", "sim", "backgammon"};
    for (int i = 0; i < 4; i++) test_round_trip(games[i]);
    test_window();
    test_eviction();
    for (int i = 0; i < 3; i++) test_sampling(games[i]);
    test_bytes("tictactoe", 0.85);
    test_bytes("connect4", 0.95);
    test_checkpoint();
    test_record_checks();
    test_sampler_thread();
    for (int i = 0; i < zt_game_registry_count; i++) test_traj_bytes(zt_game_registry[i]);
    test_traj_other_game();
    test_one_player_targets();
    test_diversity();
    test_diversity_outcomes();
    return zt_test_finish("test_replay");
}
