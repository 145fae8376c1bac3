/* Reanalyse (replay/reanalyse.h, train/reanalysis.h): a record rewritten in
 * place keeps its length and holds the new policy (dense: whole; sparse:
 * its P most weighted actions) and root value; reanalysing stored
 * tic-tac-toe positions with a fixed net leaves in the buffer exactly what a
 * fresh search of each position gives; reanalyse.fraction outside [0, 1] is
 * refused; a deterministic run with reanalyse.fraction 0 trains bit for bit
 * as one without the key, one with 0.5 trains differently (and
 * differently again with value_mix 0), logs "reanalyse" records and
 * resumes exactly; a MuZero run reanalyses too; reanalyse.idle outside
 * concurrent mode reanalyses nothing; reanalyse.idle's thread waits for
 * weights, keeps to its allowance, stops and starts, and a
 * concurrent run with it ends, checkpoints and resumes; and a short
 * tic-tac-toe run with reanalyse.fraction 0.5 still reaches perfect play
 * (skipped under the sanitizers, like test_train's). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "agent/az_model.h"
#include "agent/evaluator.h"
#include "core/config.h"
#include "core/fileio.h"
#include "core/log.h"
#include "core/rng.h"
#include "core/timer.h"
#include "game/game.h"
#include "nn/backend.h"
#include "replay/reanalyse.h"
#include "replay/record.h"
#include "replay/replay.h"
#include "search/search.h"
#include "search/settings.h"
#include "selfplay/weights.h"
#include "train/reanalysis.h"
#include "train/run.h"
#include "train/train.h"

#include "zt_test.h"
#include "zt_train_test.h"

static char tmp_root[256];

/* ---- the record rewritten in place ---- */

static void test_refit(void)
{
    zt_game *g;
    CHECK(zt_game_new("tictactoe", NULL, &g) == ZT_OK, "tictactoe: %s", zt_error_message());
    zt_record_layout l;
    zt_record_layout_init(&l, g);
    uint8_t state[ZT_MAX_STATE_BYTES], out[ZT_MAX_STATE_BYTES];
    g->reset(g, state);
    float uniform[ZT_MAX_ACTIONS] = {0}, one[ZT_MAX_ACTIONS] = {0}, fresh[ZT_MAX_ACTIONS] = {0};
    for (int a = 0; a < 9; a++) uniform[a] = 1;
    one[4] = 1;
    /* the fresh policy: weights 1..9, the largest on action 8 */
    for (int a = 0; a < 9; a++) fresh[a] = (float)(a + 1);
    uint8_t rec[256], ref[256];

    /* dense: rewritten whole, the same bytes as a fresh encoding but the flag */
    size_t len = zt_record_encode(&l, g, state, uniform, 0.25f, true, rec);
    size_t want = zt_record_encode(&l, g, state, fresh, -0.5f, true, ref);
    CHECK(len == want && !(rec[0] & RECORD_SPARSE), "dense record of %zu bytes (%zu)", len, want);
    double l1 = zt_record_refit(&l, g, rec, len, fresh, -0.5f);
    CHECK(rec[0] == (ref[0] | RECORD_REANALYSED) && memcmp(rec + 1, ref + 1, len - 1) == 0,
          "a dense record rewritten differs from the fresh encoding");
    double expect = 0;
    for (int a = 0; a < 9; a++) expect += fabs((a + 1) / 45.0 - 1 / 9.0);
    CHECK(fabs(l1 - expect) < 1e-3, "dense L1 %.5f, want %.5f", l1, expect);
    zt_record_view v;
    CHECK(zt_record_length(&l, rec, len) == len, "rewritten dense record unreadable");
    CHECK(zt_record_decode(&l, g, rec, len, out, &v) == ZT_OK && v.root_value == -0.5f &&
              (v.flags & RECORD_REANALYSED),
          "dense: root %.3f flags %#x", v.root_value, v.flags);

    /* sparse of one pair: keeps one action, the new policy's largest */
    len = zt_record_encode(&l, g, state, one, 0.0f, true, rec);
    CHECK(rec[0] & RECORD_SPARSE, "a one-action policy is not sparse");
    size_t len0 = len;
    l1 = zt_record_refit(&l, g, rec, len, fresh, 0.75f);
    CHECK(zt_record_length(&l, rec, len) == len0, "sparse record changed length");
    CHECK(zt_record_decode(&l, g, rec, len, out, &v) == ZT_OK && v.num_pairs == 1 &&
              v.actions[0] == 8 && v.weights[0] == ZT_REPLAY_WEIGHT_SUM && v.root_value == 0.75f,
          "sparse: %d pairs, action %d weight %d root %.3f", v.num_pairs, v.actions[0],
          v.weights[0], v.root_value);
    CHECK(fabs(l1 - 2.0) < 1e-9, "sparse L1 %.5f, want 2", l1);

    /* no policy: the root value alone */
    len = zt_record_encode(&l, g, state, NULL, 0.0f, false, rec);
    l1 = zt_record_refit(&l, g, rec, len, fresh, 0.5f);
    CHECK(l1 == 0 && zt_record_decode(&l, g, rec, len, out, &v) == ZT_OK && v.num_pairs == 0 &&
              v.root_value == 0.5f && !(v.flags & ZT_REPLAY_FULL_SEARCH),
          "value-only record: %d pairs root %.3f", v.num_pairs, v.root_value);
    zt_game_free(g);
}

/* ---- reanalysed targets are a fresh search's ---- */

static zt_status init_weights(zt_net *net, void *ctx)
{
    (void)ctx;
    zt_rng rng;
    zt_rng_seed(&rng, 11, 0);
    zt_net_init(net, &rng);
    zt_net_params_changed(net);
    return ZT_OK;
}

/* Tic-tac-toe and a buffer of `games` random games (zt_test_fill_replay). */
static zt_replay *filled_replay(int games, zt_game **g)
{
    CHECK(zt_game_new("tictactoe", NULL, g) == ZT_OK, "tictactoe: %s", zt_error_message());
    zt_replay_config rc;
    zt_replay_config_default(&rc);
    rc.capacity = 5000;
    zt_replay *rb = NULL;
    CHECK(zt_replay_new(*g, &rc, &rb) == ZT_OK, "replay: %s", zt_error_message());
    zt_test_fill_replay(*g, rb, games);
    return rb;
}

static void test_fresh_search(void)
{
    zt_game *g;
    zt_replay *rb = filled_replay(6, &g);
    zt_replay_stats rs = zt_replay_get_stats(rb);

    zt_reanalyse_config cfg = {.trees = 4, .seed = 3};
    zt_search_config_default(&cfg.search, ZT_SEARCH_PUCT); /* no noise: a search is a function */
    cfg.search.num_simulations = 24;
    cfg.search.leaves_per_round = 1;
    zt_net_config nc;
    zt_net_config_default(&nc, g->obs_shape[0], g->obs_shape[1], g->obs_shape[2], g->num_actions);
    nc.channels = 8;
    nc.blocks = 1;
    zt_evaluator_pool *pool = NULL;
    CHECK(zt_evaluator_pool_new(&nc, "ref", ZT_PRECISION_FP32, ZT_EVALUATOR_PRIVATE, 1,
                                zt_reanalyser_eval_batch(g, &cfg), 1, 0, &pool) == ZT_OK,
          "pool: %s", zt_error_message());
    if (!pool) return;
    CHECK(zt_evaluator_pool_update(pool, 0, 1, init_weights, NULL) == ZT_OK, "weights: %s",
          zt_error_message());
    zt_evaluator ev = zt_evaluator_pool_client(pool, 0);
    zt_model_factory mf = zt_az_model_factory();
    zt_reanalyser *ra;
    CHECK(zt_reanalyser_new(g, &mf, &ev, &cfg, &ra) == ZT_OK, "reanalyser: %s",
          zt_error_message());

    /* before: the stored targets, to compare the L1 the reanalyser reports */
    int64_t first = rs.positions_seen - rs.positions, n = rs.positions;
    float *before = calloc((size_t)n * 9, sizeof(float));
    int64_t *index = calloc((size_t)n, sizeof *index);
    for (int64_t i = 0; i < n; i++) {
        zt_replay_position pos;
        index[i] = first + i;
        CHECK(zt_replay_get(rb, first + i, &pos, before + i * 9) == ZT_OK, "get");
    }
    CHECK(zt_reanalyser_refresh(ra, rb, index, (int)n, 7) == ZT_OK, "refresh: %s",
          zt_error_message());
    zt_reanalyse_stats st = zt_reanalyser_get_stats(ra);
    CHECK(st.positions == n && st.skipped == 0, "refreshed %lld of %lld", (long long)st.positions,
          (long long)n);

    /* a fresh search of each position, one tree, from the same model kind */
    zt_model *model;
    CHECK(mf.create(mf.ctx, g, &ev, 1, NULL, &model) == ZT_OK, "model: %s", zt_error_message());
    zt_search_config sc = cfg.search;
    zt_search_config_size(&sc, g, 0);
    zt_search *s;
    CHECK(zt_search_new(&sc, model, 1, &s) == ZT_OK, "search: %s", zt_error_message());
    int dense = 0, sparse = 0, valued = 0;
    double l1_sum = 0;
    for (int64_t i = 0; i < n && zt_test_failures == 0; i++) {
        zt_replay_position pos;
        float stored[ZT_MAX_ACTIONS], fresh[ZT_MAX_ACTIONS];
        CHECK(zt_replay_get(rb, first + i, &pos, stored) == ZT_OK, "get");
        CHECK(pos.reanalysed, "position %lld not marked reanalysed", (long long)i);
        zt_search_forget(s, 0);
        zt_search_begin(s, 0, pos.state);
        CHECK(zt_search_run(s) == ZT_OK, "run: %s", zt_error_message());
        zt_search_policy(s, 0, fresh);
        float value = zt_search_root_value(s, 0);
        CHECK(pos.root_value == zt_record_half_to_float(zt_record_half_from_float(value)),
              "position %lld: root value %.5f, a fresh search %.5f", (long long)i, pos.root_value,
              value);
        int kind = (int)(i % 3); /* as zt_test_fill_replay stored them */
        if (!(pos.flags & ZT_REPLAY_FULL_SEARCH)) {
            valued++;
            continue;
        }
        double d = 0;
        for (int a = 0; a < 9; a++) d += fabs(stored[a] - before[i * 9 + a]);
        l1_sum += d;
        if (kind == 0) {
            dense++;
            for (int a = 0; a < 9; a++)
                CHECK(fabsf(stored[a] - fresh[a]) <= 1.0f / ZT_REPLAY_WEIGHT_SUM + 1e-6f,
                      "position %lld action %d: stored %.6f, fresh %.6f", (long long)i, a,
                      stored[a], fresh[a]);
        } else {
            /* one pair: the fresh search's most weighted action, all of it */
            sparse++;
            int best = 0;
            for (int a = 1; a < 9; a++)
                if (fresh[a] > fresh[best]) best = a;
            CHECK(stored[best] == 1.0f, "position %lld: sparse keeps not action %d", (long long)i,
                  best);
        }
    }
    CHECK(dense > 0 && sparse > 0 && valued > 0, "kinds: %d dense %d sparse %d value-only", dense,
          sparse, valued);
    CHECK(st.policies == dense + sparse && fabs(st.policy_l1 - l1_sum) < 1e-3,
          "reported %lld policies L1 %.4f, measured %d, %.4f", (long long)st.policies,
          st.policy_l1, dense + sparse, l1_sum);
    printf("fresh search: %lld positions (%d dense, %d sparse, %d value only), mean L1 %.3f\n",
           (long long)n, dense, sparse, valued, l1_sum / (dense + sparse));

    /* drawn from the window: the count refreshed, the same draw for the same stream */
    zt_reanalyser_free(ra);
    CHECK(zt_reanalyser_new(g, &mf, &ev, &cfg, &ra) == ZT_OK, "reanalyser: %s",
          zt_error_message());
    CHECK(zt_reanalyser_run(ra, rb, 10, 1) == ZT_OK, "run: %s", zt_error_message());
    CHECK(zt_reanalyser_get_stats(ra).positions == 10, "run refreshed %lld",
          (long long)zt_reanalyser_get_stats(ra).positions);
    zt_search_free(s);
    zt_model_free(model);
    zt_reanalyser_free(ra);
    zt_evaluator_pool_free(pool);
    zt_replay_free(rb);
    free(before);
    free(index);
    zt_game_free(g);
}

/* ---- settings ---- */

/* GAME's settings: configs/GAME.ini first where with_config, then the n
 * keys kv[i][0] = kv[i][1]. */
static zt_status read_game_settings(const char *game, bool with_config, const char *const (*kv)[2],
                                    int n, zt_train_settings *S)
{
    zt_config *cfg = zt_config_new();
    zt_game *g = NULL;
    zt_status st = ZT_OK;
    if (with_config) {
        char path[4096];
        st = zt_run_default_config(game, path, sizeof path)
                 ? zt_config_load_file(cfg, path)
                 : zt_fail(ZT_ERR_IO, "configs/%s.ini not found", game);
    }
    for (int i = 0; st == ZT_OK && i < n; i++) zt_config_put(cfg, kv[i][0], kv[i][1]);
    if (st == ZT_OK) st = zt_game_new(game, NULL, &g);
    if (st == ZT_OK) st = zt_train_settings_read(cfg, g, S);
    zt_game_free(g);
    zt_config_free(cfg);
    return st;
}

/* Tic-tac-toe's settings with the n keys kv[i][0] = kv[i][1]. */
static zt_status read_settings_kv(const char *const (*kv)[2], int n, zt_train_settings *S)
{
    return read_game_settings("tictactoe", false, kv, n, S);
}

static zt_status read_settings(const char *key, const char *value, zt_train_settings *S)
{
    const char *const kv[1][2] = {{key, value}};
    return read_settings_kv(kv, 1, S);
}

static void test_settings(void)
{
    zt_train_settings S;
    CHECK(read_settings("game", "tictactoe", &S) == ZT_OK && S.reanalyse_fraction == 0 &&
              S.reanalyse_value_mix == 0.5 && S.reanalyse_simulations == 0 && !S.reanalyse_idle,
          "defaults: fraction %.2f mix %.2f sims %d idle %d", S.reanalyse_fraction,
          S.reanalyse_value_mix, S.reanalyse_simulations, S.reanalyse_idle);
    /* the idle thread belongs to concurrent mode: the other modes, asked
     * for it (configs/connect4.ini does), reanalyse nothing, and say why */
    static const char *const idle_modes[] = {"deterministic", "alternate"};
    for (int i = 0; i < 2; i++) {
        const char *const idle_other[][2] = {{"reanalyse.fraction", "1"},
                                             {"reanalyse.idle", "true"},
                                             {"mode", idle_modes[i]}};
        zt_status st = read_settings_kv(idle_other, 3, &S);
        CHECK(st == ZT_OK && S.reanalyse_fraction == 0 && S.reanalyse_off_by_mode,
              "reanalyse.idle in mode %s: %d (%s), fraction %g, off by mode %d", idle_modes[i],
              st, zt_error_message(), S.reanalyse_fraction, S.reanalyse_off_by_mode);
    }
    static const char *const idle_conc[][2] = {{"reanalyse.fraction", "1"},
                                               {"reanalyse.idle", "true"}};
    CHECK(read_settings_kv(idle_conc, 2, &S) == ZT_OK && S.reanalyse_fraction == 1 &&
              S.reanalyse_idle && !S.reanalyse_off_by_mode,
          "reanalyse.idle in concurrent mode: fraction %g, off by mode %d", S.reanalyse_fraction,
          S.reanalyse_off_by_mode);
    zt_status st;
    CHECK(read_settings("reanalyse.idle", "true", &S) == ZT_OK && S.reanalyse_idle,
          "reanalyse.idle = true: %s", zt_error_message());
    CHECK(read_settings("reanalyse.fraction", "0.5", &S) == ZT_OK && S.reanalyse_fraction == 0.5,
          "fraction 0.5: %s", zt_error_message());
    static const char *const bad[][2] = {
        {"reanalyse.fraction", "1.5"},   {"reanalyse.fraction", "-0.1"},
        {"reanalyse.fraction", "half"},  {"reanalyse.value_mix", "2"},
        {"reanalyse.simulations", "-1"}, {"reanalyse.trees", "0"},
        {"reanalyse.idle", "sometimes"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        st = read_settings(bad[i][0], bad[i][1], &S);
        CHECK(st != ZT_OK && strstr(zt_error_message(), bad[i][0]) &&
                  !strchr(zt_error_message(), '\n'),
              "%s = %s: accepted or unnamed (%s)", bad[i][0], bad[i][1], zt_error_message());
    }
}

/* configs/connect4.ini's reanalyse (docs/connect4-recipes.md, recipe 21,
 * run twice): a batch's allowance on the idle thread in AlphaZero's
 * concurrent runs; none in its MuZero runs, where it is unmeasured
 * (muzero.reanalyse.fraction = 0), nor in the modes without the thread. */
static void test_connect4_defaults(void)
{
    zt_train_settings S;
    CHECK(read_game_settings("connect4", true, NULL, 0, &S) == ZT_OK && S.reanalyse_fraction == 1 &&
              S.reanalyse_idle && S.mode == ZT_TRAIN_CONCURRENT,
          "connect4: fraction %g idle %d (%s)", S.reanalyse_fraction, S.reanalyse_idle,
          zt_error_message());
    static const char *const muzero[][2] = {{"algorithm", "muzero"}};
    CHECK(read_game_settings("connect4", true, muzero, 1, &S) == ZT_OK &&
              S.reanalyse_fraction == 0 && !S.reanalyse_off_by_mode,
          "connect4 muzero: fraction %g (%s)", S.reanalyse_fraction, zt_error_message());
    static const char *const det[][2] = {{"mode", "deterministic"}};
    CHECK(read_game_settings("connect4", true, det, 1, &S) == ZT_OK && S.reanalyse_fraction == 0 &&
              S.reanalyse_off_by_mode,
          "connect4 deterministic: fraction %g off by mode %d (%s)", S.reanalyse_fraction,
          S.reanalyse_off_by_mode, zt_error_message());
}

/* ---- the idle thread ---- */

/* Waits (at most `seconds`) until the worker has drawn `want` positions,
 * refreshed or skipped; returns what it had drawn. The thread runs at idle
 * priority, so on a busy machine it may take a while, never forever: Linux
 * still gives SCHED_IDLE threads a sliver of a busy core. */
static int64_t wait_drawn(zt_reanalysis *w, int64_t want, double seconds)
{
    double end = zt_now_s() + seconds;
    for (;;) {
        zt_reanalyse_stats s = zt_reanalysis_stats(w);
        if (s.positions + s.skipped >= want || zt_now_s() > end) return s.positions + s.skipped;
        nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
    }
}

static void pause_s(double seconds)
{
    nanosleep(&(struct timespec){.tv_nsec = (long)(seconds * 1e9)}, NULL);
}

/* reanalyse.idle: the worker's thread waits for a publication's weights,
 * then reanalyses what the publications allow and no more (the ceiling
 * holds however long it is given), marking the positions in the buffer;
 * an allowance granted while it is stopped waits for the next start; the
 * worker frees while its thread runs. */
static void test_idle_thread(void)
{
    zt_game *g;
    zt_replay *rb = filled_replay(20, &g);
    /* 0.25 x 32 = 8 positions per learner step */
    static const char *const kv[][2] = {{"reanalyse.fraction", "0.25"},
                                        {"reanalyse.idle", "true"},
                                        {"reanalyse.trees", "4"},
                                        {"reanalyse.simulations", "8"},
                                        {"learner.batch", "32"}};
    zt_train_settings S;
    CHECK(read_settings_kv(kv, 5, &S) == ZT_OK, "settings: %s", zt_error_message());
    zt_reanalysis *w = NULL;
    zt_net *net = NULL;
    zt_weight_store *store = NULL;
    float *flat = NULL;
    CHECK(zt_net_new(&S.net, S.backend, S.precision, 1, &net) == ZT_OK, "net: %s",
          zt_error_message());
    if (zt_test_failures) goto done;
    init_weights(net, NULL);
    /* the learner's part: its versions in a store */
    size_t nflat = zt_net_flat_size(net);
    flat = malloc(nflat * sizeof *flat);
    zt_net_flat_get(net, flat);
    store = zt_weight_store_new(nflat);
    zt_weight_source src = zt_weight_store_source(store);
    CHECK(zt_reanalysis_new(g, &S, &src, &w) == ZT_OK && w, "worker: %s", zt_error_message());
    if (zt_test_failures) goto done;

    CHECK(zt_reanalysis_start(w, rb) == ZT_OK, "start: %s", zt_error_message());
    pause_s(0.2);
    CHECK(zt_reanalysis_stats(w).positions == 0, "reanalysed %lld before any weights",
          (long long)zt_reanalysis_stats(w).positions);
    zt_weight_store_publish(store, flat);
    CHECK(zt_reanalysis_after_publish(w, rb, 1, 0) == ZT_OK, "publish: %s", zt_error_message());
    int64_t drawn = wait_drawn(w, 8, 120);
    pause_s(0.3); /* time to overshoot, if it would */
    zt_reanalyse_stats s = zt_reanalysis_stats(w);
    CHECK(drawn == 8 && s.positions + s.skipped == 8 && s.positions > 0,
          "one step's allowance of 8: drew %lld, then %lld (%lld refreshed)", (long long)drawn,
          (long long)(s.positions + s.skipped), (long long)s.positions);
    zt_replay_stats rs = zt_replay_get_stats(rb);
    int64_t marked = 0;
    for (int64_t i = rs.positions_seen - rs.positions; i < rs.positions_seen; i++) {
        zt_replay_position pos;
        CHECK(zt_replay_get(rb, i, &pos, NULL) == ZT_OK, "get %lld", (long long)i);
        marked += pos.reanalysed;
    }
    /* drawn with replacement: a position may come up twice */
    CHECK(marked >= 1 && marked <= s.positions, "%lld positions marked reanalysed, %lld refreshed",
          (long long)marked, (long long)s.positions);

    /* two steps granted while stopped: searched after the next start */
    CHECK(zt_reanalysis_stop(w) == ZT_OK, "stop: %s", zt_error_message());
    zt_weight_store_publish(store, flat);
    CHECK(zt_reanalysis_after_publish(w, rb, 2, 1) == ZT_OK, "publish: %s", zt_error_message());
    pause_s(0.1);
    CHECK(wait_drawn(w, 8, 0) == 8, "drew while stopped");
    CHECK(zt_reanalysis_start(w, rb) == ZT_OK, "restart: %s", zt_error_message());
    drawn = wait_drawn(w, 24, 120);
    CHECK(drawn == 24, "after the restart: drew %lld of 24", (long long)drawn);
    printf("idle thread: %lld positions refreshed, %lld skipped, %lld marked after the first "
           "publication\n",
           (long long)zt_reanalysis_stats(w).positions, (long long)zt_reanalysis_stats(w).skipped,
           (long long)marked);
    /* one more allowance, and the worker freed with its thread running */
    zt_weight_store_publish(store, flat);
    CHECK(zt_reanalysis_after_publish(w, rb, 100, 2) == ZT_OK, "publish: %s", zt_error_message());
done:
    zt_reanalysis_free(w);
    zt_weight_store_free(store);
    free(flat);
    zt_net_free(net);
    zt_replay_free(rb);
    zt_game_free(g);
}

/* ---- training ---- */

/* A quiet tic-tac-toe run: a new one from configs/tictactoe.ini, `sets`
 * and `more`; a resumed one from its own config.ini. */
static zt_status train(const char *run, bool resume, double minutes, int64_t steps,
                       const char *const *sets, const char *const *more)
{
    char ini[512];
    const char *p = resume ? NULL : zt_test_tictactoe_ini(ini, sizeof ini);
    if (!resume && !p) return zt_fail(ZT_ERR_NOT_FOUND, "configs/tictactoe.ini");
    return zt_test_train(run, resume, p, sets, resume ? NULL : more, minutes, steps);
}

static const char *const deterministic[] = {
    "mode=deterministic", "seed=3", "games_per_actor=8", "search.sims=8",
    "selfplay.root_cache_sims=16", "learner.batch=32", "learner.min_positions=64",
    "replay_ratio=4", "arena.games=0", "arena.positions=0", "checkpoint.minutes=1000", NULL};

static void weights_of(char *buf, size_t cap, const char *run, int step)
{
    snprintf(buf, cap, "%s/%s/ckpt/%08d/weights.safetensors", tmp_root, run, step);
}

static void test_deterministic(void)
{
    enum { STEPS = 120, HALF = 50 };
    char run[400], a[500], b[500];
    static const char *const off[] = {"reanalyse.fraction=0", NULL};
    static const char *const on[] = {"reanalyse.fraction=0.5", "reanalyse.simulations=8", NULL};
    static const char *const outcome[] = {"reanalyse.fraction=0.5", "reanalyse.simulations=8",
                                          "reanalyse.value_mix=0", NULL};
    static const char *const names[] = {"plain", "off", "on", "resumed", "outcome"};
    for (int i = 0; i < 5; i++) {
        snprintf(run, sizeof run, "%s/%s", tmp_root, names[i]);
        const char *const *more = i == 0 ? NULL : i == 1 ? off : i == 4 ? outcome : on;
        zt_status st = train(run, false, 0, i == 3 ? HALF : STEPS, deterministic, more);
        CHECK(st == ZT_OK, "%s run: %s", names[i], zt_error_message());
        if (i == 3) {
            st = train(run, true, 0, STEPS, NULL, NULL);
            CHECK(st == ZT_OK, "resumed run: %s", zt_error_message());
        }
    }
    weights_of(a, sizeof a, "plain", STEPS);
    weights_of(b, sizeof b, "off", STEPS);
    CHECK(zt_test_same_file(a, b), "reanalyse.fraction=0 changed training: %s vs %s", a, b);
    weights_of(b, sizeof b, "on", STEPS);
    CHECK(!zt_test_same_file(a, b), "reanalyse.fraction=0.5 changed nothing: %s", b);
    weights_of(a, sizeof a, "resumed", STEPS);
    CHECK(zt_test_same_file(a, b), "a resumed reanalyse run differs: %s vs %s", a, b);
    /* the fresh root values enter the value targets by value_mix */
    weights_of(a, sizeof a, "outcome", STEPS);
    CHECK(!zt_test_same_file(a, b), "reanalyse.value_mix changed nothing: %s vs %s", a, b);
    snprintf(a, sizeof a, "%s/on/metrics.jsonl", tmp_root);
    char *metrics;
    size_t len;
    CHECK(zt_read_file(a, &metrics, &len) == ZT_OK, "no %s", a);
    if (zt_test_failures) return;
    const char *r = strstr(metrics, "\"kind\":\"reanalyse\",\"reanalysed\":");
    CHECK(r != NULL, "no reanalyse record in %s", a);
    if (r) {
        long done = atol(r + strlen("\"kind\":\"reanalyse\",\"reanalysed\":"));
        CHECK(done > 0, "reanalysed %ld", done);
        CHECK(strstr(r, "\"policy_l1\":") && strstr(r, "\"rate\":"), "record fields: %.160s", r);
    }
    free(metrics);
}

/* A MuZero run reanalyses with its learned model (the same model factory
 * as its actors) and logs its records. */
static void test_muzero(void)
{
    char run[400];
    snprintf(run, sizeof run, "%s/muzero", tmp_root);
    static const char *const more[] = {"algorithm=muzero", "reanalyse.fraction=0.5", NULL};
    zt_status st = train(run, false, 0, 40, deterministic, more);
    CHECK(st == ZT_OK, "muzero run: %s", zt_error_message());
    char path[500], *metrics;
    size_t len;
    snprintf(path, sizeof path, "%s/metrics.jsonl", run);
    CHECK(zt_read_file(path, &metrics, &len) == ZT_OK, "no %s", path);
    if (zt_test_failures) return;
    const char *key = "\"kind\":\"reanalyse\",\"reanalysed\":";
    const char *r = strstr(metrics, key);
    CHECK(r && atol(r + strlen(key)) > 0, "no reanalyse record with positions in %s", path);
    free(metrics);
}

/* The last "reanalyse" record's count of refreshed positions in a run's
 * metrics (-1: no metrics file). */
static long reanalysed_in(const char *run)
{
    char path[500], *metrics;
    size_t len;
    snprintf(path, sizeof path, "%s/metrics.jsonl", run);
    if (zt_read_file(path, &metrics, &len) != ZT_OK) return -1;
    const char *key = "\"kind\":\"reanalyse\",\"reanalysed\":", *r = metrics, *last = NULL;
    while ((r = strstr(r, key))) last = r++;
    long n = last ? atol(last + strlen(key)) : 0;
    free(metrics);
    return n;
}

/* A small quiet tic-tac-toe run, the runs below add their own keys. */
static const char *const small_run[] = {"seed=3",
                                        "games_per_actor=8",
                                        "search.sims=8",
                                        "learner.batch=32",
                                        "learner.min_positions=64",
                                        "arena.games=0",
                                        "arena.positions=0",
                                        "checkpoint.minutes=1000",
                                        NULL};

/* A concurrent run with reanalyse.idle: the idle thread starts and stops
 * with the actors, the run ends and checkpoints at its step, and a resume
 * goes on to the next. (Whether the thread gets core time here depends on
 * what else the machine runs, so what it refreshed is printed, not
 * asserted; test_idle_thread asserts the thread's work.) With precision =
 * int8 the thread's net takes each version's int8 tail, as the actors'. */
static void test_idle_run(const char *precision)
{
    char run[400], path[500], prec[64];
    snprintf(run, sizeof run, "%s/idle-%s", tmp_root, precision);
    snprintf(prec, sizeof prec, "precision=%s", precision);
    const char *const more[] = {prec, "reanalyse.fraction=0.5", "reanalyse.idle=true",
                                "reanalyse.simulations=8", NULL};
    zt_status st = train(run, false, 0, 60, small_run, more);
    CHECK(st == ZT_OK, "idle run: %s", zt_error_message());
    st = train(run, true, 0, 100, NULL, NULL);
    CHECK(st == ZT_OK, "idle run resumed: %s", zt_error_message());
    struct stat sb;
    char name[64];
    snprintf(name, sizeof name, "idle-%s", precision);
    for (int step = 60; step <= 100; step += 40) {
        weights_of(path, sizeof path, name, step);
        CHECK(stat(path, &sb) == 0, "no checkpoint %s", path);
    }
    long n = reanalysed_in(run);
    CHECK(n >= 0, "no metrics in %s", run);
    printf("idle run, precision %s: %ld positions reanalysed in 100 steps\n", precision, n);
}

/* int8 actors with reanalyse on the learner's thread (mode alternate): the
 * worker's net takes each version's int8 tail there too, and refreshes
 * every position it is given. */
static void test_int8_run(void)
{
    char run[400];
    snprintf(run, sizeof run, "%s/int8", tmp_root);
    static const char *const more[] = {"precision=int8", "mode=alternate",
                                       "reanalyse.fraction=0.25", "reanalyse.simulations=8", NULL};
    zt_status st = train(run, false, 0, 60, small_run, more);
    CHECK(st == ZT_OK, "int8 run: %s", zt_error_message());
    long n = reanalysed_in(run);
    CHECK(n >= 8 * 40, "int8 run: %ld positions reanalysed, want at least 8 a step", n);
}

static void test_perfect_play(void)
{
    if (SANITIZED) {
        printf("perfect play with reanalyse: skipped under the sanitizers\n");
        return;
    }
    char run[400];
    snprintf(run, sizeof run, "%s/perfect", tmp_root);
    static const char *const sets[] = {"arena.stop_on_perfect=1", "seed=7",
                                       "arena.opponents=random", "reanalyse.fraction=0.5", NULL};
    /* about a minute on two idle cores (reanalyse takes most of the
     * learner's time); the bound leaves room for a loaded machine */
    printf("perfect play with reanalyse.fraction=0.5: seed 7, at most 240 s\n");
    zt_status st = train(run, false, 240.0 / 60, 0, sets, NULL);
    CHECK(st == ZT_OK, "training failed: %s", zt_error_message());
    char path[500], *metrics;
    size_t len;
    snprintf(path, sizeof path, "%s/metrics.jsonl", run);
    CHECK(zt_read_file(path, &metrics, &len) == ZT_OK, "no %s", path);
    if (zt_test_failures) return;
    const char *t =
        strstr(metrics, "\"set\":\"ttt_positions\",\"metric\":\"optimal\",\"n\":4520,\"m\":4520");
    CHECK(t != NULL, "no arena record of optimal 4520/4520 in %s", path);
    CHECK(strstr(metrics, "\"kind\":\"reanalyse\"") != NULL, "no reanalyse record in %s", path);
    if (t) {
        while (t > metrics && t[-1] != '\n') t--;
        printf("perfect play with reanalyse: %.80s\n", t);
    }
    free(metrics);
}

static bool int8_here(void)
{
    const zt_nn_backend *be;
    return zt_nn_backend_find("cpu", &be) == ZT_OK && be->supports(ZT_PRECISION_INT8);
}

int main(void)
{
    zt_log_set_level(ZT_LOG_WARN);
    if (!zt_test_tmp_root(tmp_root, sizeof tmp_root, "test_reanalyse")) return 1;
    test_refit();
    test_fresh_search();
    test_settings();
    test_connect4_defaults();
    test_idle_thread();
    test_deterministic();
    test_muzero();
    test_idle_run("auto");
    if (int8_here()) {
        test_idle_run("int8");
        test_int8_run();
    } else {
        printf("int8 reanalyse runs: skipped (no int8 on the cpu backend here)\n");
    }
    test_perfect_play();
    zt_test_remove_root(tmp_root);
    return zt_test_finish("test_reanalyse");
}
