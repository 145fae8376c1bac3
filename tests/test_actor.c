/* Self-play actors: games play to their end and reach the replay buffer
 * with their positions; a game that reaches the game's max_game_length
 * plies unfinished is abandoned, counted, and never stored (its positions
 * have no outcome to learn); actors on a shared evaluator service play
 * exactly the games they play with private evaluators, with one merged
 * batch in flight or two, over AlphaZero, MuZero and Stochastic MuZero
 * nets; a failing evaluator comes back as a status, not an abort; finished
 * games go through the trajectory sink, generations in slot order, and a
 * sink's error stops the actor's step with its message; with
 * record_surprise every full search's record holds its surprise; with
 * playout-cap randomisation the full searches go on across steps, the
 * network's calls stay near G wide, and the share of full searches is the
 * configured one; resignation's threshold is calibrated as the brute force
 * finds it, and an actor resigns at the fixed threshold, never when no
 * threshold keeps false resignations rare, and at the calibrated one when
 * one does. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/az_model.h"
#include "agent/mz_model.h"
#include "agent/evaluator.h"
#include "core/fileio.h"
#include "game/game.h"
#include "game/solver.h"
#include "nn/nn.h"
#include "replay/replay.h"
#include "selfplay/actor.h"
#include "selfplay/sink.h"

#include "zt_test.h"

/* An actor over tic-tac-toe with a small reference-backend net, stepped
 * until `games` games ended (finished or abandoned); returns its stats and
 * the buffer's. */
static void small_net(const zt_game *g, zt_net_config *nc)
{
    zt_net_config_default(nc, g->obs_shape[0], g->obs_shape[1], g->obs_shape[2], g->num_actions);
    nc->channels = 8;
    nc->blocks = 1;
}

/* A small MuZero net; codes > 0: Stochastic MuZero with that many codes. */
static void small_muzero_net(const zt_game *g, int codes, zt_net_config *nc)
{
    small_net(g, nc);
    nc->kind = ZT_NET_MUZERO;
    nc->dyn_blocks = 1;
    nc->pred_blocks = 0;
    nc->value_hidden = 8;
    nc->chance_codes = codes;
}

static zt_status init_weights(zt_net *net, void *ctx)
{
    zt_rng rng;
    zt_rng_seed(&rng, 7, 0);
    zt_net_init(net, &rng);
    zt_net_params_changed(net);
    return ZT_OK;
}

static void run_actor(zt_game *g, int games, zt_actor_stats *as, zt_replay_stats *rs)
{
    zt_net_config nc;
    small_net(g, &nc);
    zt_actor_config ac;
    zt_actor_config_default(&ac);
    ac.games = 4;
    ac.search.num_simulations = 4;
    ac.root_cache = false;
    zt_replay_config rc;
    zt_replay_config_default(&rc);
    rc.capacity = 10000;
    zt_replay *rb = NULL;
    zt_actor *a = NULL;
    zt_evaluator_pool *pool = NULL;
    CHECK(zt_replay_new(g, &rc, &rb) == ZT_OK, "replay: %s", zt_error_message());
    CHECK(zt_evaluator_pool_new(&nc, "ref", ZT_PRECISION_FP32, ZT_EVALUATOR_PRIVATE, 1,
                                zt_actor_eval_batch(g, &ac), 1, 0, &pool) == ZT_OK,
          "pool: %s", zt_error_message());
    if (!pool) return;
    zt_model_factory mf = zt_az_model_factory();
    zt_evaluator ev = zt_evaluator_pool_client(pool, 0);
    CHECK(zt_actor_new(g, &mf, &ev, &ac, &a) == ZT_OK, "actor: %s", zt_error_message());
    if (!rb || !a) return;
    CHECK(zt_actor_weights_changed(a) == ZT_OK, "weights: %s", zt_error_message());
    zt_traj_sink sink = zt_traj_sink_replay(rb);
    for (int step = 0; step < 10000; step++) {
        *as = zt_actor_get_stats(a);
        if ((int)(as->games + as->games_abandoned) >= games) break;
        CHECK(zt_actor_step(a, &sink) == ZT_OK, "step: %s", zt_error_message());
    }
    *rs = zt_replay_get_stats(rb);
    zt_actor_free(a);
    zt_evaluator_pool_free(pool);
    zt_replay_free(rb);
}

static void test_games_stored(void)
{
    zt_game *g;
    CHECK(zt_game_new("tictactoe", NULL, &g) == ZT_OK, "tictactoe: %s", zt_error_message());
    zt_actor_stats as = {0};
    zt_replay_stats rs = {0};
    run_actor(g, 8, &as, &rs);
    CHECK(as.games >= 8 && as.games_abandoned == 0, "%llu games finished, %llu abandoned",
          (unsigned long long)as.games, (unsigned long long)as.games_abandoned);
    CHECK(rs.games == (int64_t)as.games_added && rs.positions == (int64_t)as.positions_added &&
              rs.positions >= 5 * rs.games,
          "stored %lld games %lld positions; added %llu, %llu", (long long)rs.games,
          (long long)rs.positions, (unsigned long long)as.games_added,
          (unsigned long long)as.positions_added);
    zt_game_free(g);
}

/* Tic-tac-toe ends after 5 plies at the earliest: with a bound of 4 every
 * game is abandoned. */
static void test_long_games_abandoned(void)
{
    zt_game *g;
    CHECK(zt_game_new("tictactoe", NULL, &g) == ZT_OK, "tictactoe: %s", zt_error_message());
    g->max_game_length = 4;
    zt_actor_stats as = {0};
    zt_replay_stats rs = {0};
    run_actor(g, 8, &as, &rs);
    CHECK(as.games_abandoned >= 8 && as.games == 0, "%llu abandoned, %llu finished",
          (unsigned long long)as.games_abandoned, (unsigned long long)as.games);
    CHECK(rs.games == 0 && rs.positions == 0, "abandoned games stored: %lld games %lld positions",
          (long long)rs.games, (long long)rs.positions);
    zt_game_free(g);
}

/* ---- shared service against private evaluators ---- */

#define NACTORS 3

typedef struct stepper {
    zt_actor *actor;
    zt_replay *rb;
    zt_traj_sink sink;
    int steps;
    zt_status st;
} stepper;

static void *step_main(void *arg)
{
    stepper *s = arg;
    for (int i = 0; i < s->steps && s->st == ZT_OK; i++) s->st = zt_actor_step(s->actor, &s->sink);
    return NULL;
}

/* NACTORS actors on threads for `steps` steps each, over evaluators of
 * `kind` (shared: with `inflight` merged batches in flight); each actor's
 * games go to its own buffer, saved to dir/NAME-I.bin. muzero: 0 an
 * AlphaZero net, 1 a MuZero net, 2 a Stochastic MuZero net (4 codes),
 * searched through the MuZero model. */
static void play_actors(const zt_game *g, const char *game_name, zt_evaluator_kind kind,
                        int inflight, int steps, const char *dir, const char *name, int muzero)
{
    zt_net_config nc;
    if (muzero)
        small_muzero_net(g, muzero == 2 ? 4 : 0, &nc);
    else
        small_net(g, &nc);
    zt_actor_config ac;
    zt_actor_config_default(&ac);
    ac.record_actions = muzero != 0;
    ac.games = 5;
    ac.search.num_simulations = 8;
    ac.search.leaves_per_round = 2;
    ac.seed = 99;
    zt_replay_config rc;
    zt_replay_config_default(&rc);
    rc.capacity = 20000;
    zt_evaluator_pool *pool = NULL;
    CHECK(zt_evaluator_pool_new(&nc, "ref", ZT_PRECISION_FP32, kind, NACTORS,
                                zt_actor_eval_batch(g, &ac), 1, inflight, &pool) == ZT_OK,
          "pool: %s", zt_error_message());
    if (!pool) return;
    zt_model_factory mf = muzero ? zt_mz_model_factory() : zt_az_model_factory();
    stepper s[NACTORS] = {0};
    pthread_t th[NACTORS];
    for (int i = 0; i < NACTORS; i++) {
        CHECK(zt_evaluator_pool_update(pool, i, 1, init_weights, NULL) == ZT_OK, "weights: %s",
              zt_error_message());
        zt_actor_config c = ac;
        c.id = i;
        zt_evaluator ev = zt_evaluator_pool_client(pool, i);
        CHECK(zt_actor_new(g, &mf, &ev, &c, &s[i].actor) == ZT_OK, "actor: %s", zt_error_message());
        CHECK(zt_replay_new(g, &rc, &s[i].rb) == ZT_OK, "replay: %s", zt_error_message());
        s[i].sink = zt_traj_sink_replay(s[i].rb);
        s[i].steps = steps;
    }
    for (int i = 0; i < NACTORS; i++) pthread_create(&th[i], NULL, step_main, &s[i]);
    for (int i = 0; i < NACTORS; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < NACTORS; i++) {
        CHECK(s[i].st == ZT_OK, "%s %s actor %d: %s", game_name, name, i, zt_error_message());
        char path[512];
        snprintf(path, sizeof path, "%s/%s-%d.bin", dir, name, i);
        CHECK(zt_replay_save(s[i].rb, path) == ZT_OK, "save: %s", zt_error_message());
        zt_replay_stats rs = zt_replay_get_stats(s[i].rb);
        CHECK(rs.games > 0 && rs.positions > 0, "%s %s actor %d finished no game in %d steps",
              game_name, name, i, steps);
        zt_actor_free(s[i].actor);
        zt_replay_free(s[i].rb);
    }
    if (kind == ZT_EVALUATOR_SHARED) {
        zt_evaluator_stats es = zt_evaluator_pool_stats(pool, 0);
        CHECK(es.calls > 0 && es.positions > 0, "the service ran no batch");
    }
    zt_evaluator_pool_free(pool);
}

/* steps: enough for every actor to finish a game. */
static void test_shared_equals_private(const char *game_name, int muzero, int steps)
{
    zt_game *g;
    CHECK(zt_game_new(game_name, NULL, &g) == ZT_OK, "%s: %s", game_name, zt_error_message());
    char dir[] = "/tmp/zt_actor_XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    /* the service with one merged batch in flight, and with two (what a
     * GPU gets; on these CPU nets the second call runs at its wait) */
    static const char *const shared[] = {"shared1", "shared2"};
    play_actors(g, game_name, ZT_EVALUATOR_PRIVATE, 0, steps, dir, "private", muzero);
    play_actors(g, game_name, ZT_EVALUATOR_SHARED, 1, steps, dir, shared[0], muzero);
    play_actors(g, game_name, ZT_EVALUATOR_SHARED, 2, steps, dir, shared[1], muzero);
    for (int i = 0; i < 2 * NACTORS; i++) {
        char a[512], b[512];
        snprintf(a, sizeof a, "%s/private-%d.bin", dir, i % NACTORS);
        snprintf(b, sizeof b, "%s/%s-%d.bin", dir, shared[i / NACTORS], i % NACTORS);
        char *ta = NULL, *tb = NULL;
        size_t la = 0, lb = 0;
        CHECK(zt_read_file(a, &ta, &la) == ZT_OK && zt_read_file(b, &tb, &lb) == ZT_OK, "read: %s",
              zt_error_message());
        CHECK(ta && tb && la == lb && memcmp(ta, tb, la) == 0,
              "%s (muzero %d) actor %d: the %s service's games differ from the private ones "
              "(%zu vs %zu bytes)",
              game_name, muzero, i % NACTORS, shared[i / NACTORS], la, lb);
        free(ta);
        free(tb);
        if (i >= NACTORS) unlink(a);
        unlink(b);
    }
    rmdir(dir);
    zt_game_free(g);
}

/* ---- a failing evaluator ---- */

typedef struct failing {
    zt_evaluator inner;
    int calls, fail_at;
} failing;

static zt_status failing_eval(void *ctx, int B, const float *obs, float *logits, float *value)
{
    failing *f = ctx;
    if (++f->calls == f->fail_at) return zt_fail(ZT_ERR_IO, "test evaluator: call %d fails", f->calls);
    return f->inner.eval(f->inner.ctx, B, obs, logits, value);
}

static void test_failing_evaluator(void)
{
    zt_game *g;
    CHECK(zt_game_new("connect4", NULL, &g) == ZT_OK, "connect4: %s", zt_error_message());
    zt_net_config nc;
    small_net(g, &nc);
    zt_actor_config ac;
    zt_actor_config_default(&ac);
    ac.games = 4;
    ac.search.num_simulations = 8;
    ac.root_cache = true;
    ac.root_cache_simulations = 16;
    zt_evaluator_pool *pool = NULL;
    CHECK(zt_evaluator_pool_new(&nc, "ref", ZT_PRECISION_FP32, ZT_EVALUATOR_PRIVATE, 1,
                                zt_actor_eval_batch(g, &ac), 1, 0, &pool) == ZT_OK,
          "pool: %s", zt_error_message());
    zt_replay_config rc;
    zt_replay_config_default(&rc);
    rc.capacity = 10000;
    zt_replay *rb = NULL;
    CHECK(zt_replay_new(g, &rc, &rb) == ZT_OK, "replay: %s", zt_error_message());
    zt_traj_sink sink = zt_traj_sink_replay(rb);
    /* each failure point: the root cache at creation, then during steps */
    for (int fail_at = 1; fail_at <= 40 && pool && rb; fail_at += 13) {
        failing f = {.inner = zt_evaluator_pool_client(pool, 0), .fail_at = fail_at};
        zt_evaluator ev = {.ctx = &f, .eval = failing_eval};
        zt_model_factory mf = zt_az_model_factory();
        zt_actor *a = NULL;
        zt_status st = zt_actor_new(g, &mf, &ev, &ac, &a);
        for (int step = 0; st == ZT_OK && step < 50; step++) st = zt_actor_step(a, &sink);
        CHECK(st == ZT_ERR_IO && strstr(zt_error_message(), "test evaluator: call") != NULL,
              "failure at call %d: status %d, message '%s'", fail_at, (int)st, zt_error_message());
        /* after the failure the actor can still step on (the failed trees were dropped) */
        if (a) {
            f.fail_at = -1;
            CHECK(zt_actor_step(a, &sink) == ZT_OK, "step after a failure: %s", zt_error_message());
        }
        zt_actor_free(a);
    }
    zt_replay_free(rb);
    zt_evaluator_pool_free(pool);
    zt_game_free(g);
}

/* A sink in front of the replay sink that counts what passes and fails
 * its fail_at'th push. */
typedef struct counting_sink {
    zt_traj_sink inner;
    int pushes, fail_at;
    int64_t positions;
    uint8_t first_bytes[4096];
    size_t first_len;
} counting_sink;

static zt_status counting_push(void *ctx, const zt_replay_traj *t, float return0)
{
    counting_sink *c = ctx;
    if (++c->pushes == c->fail_at) return zt_fail(ZT_ERR_IO, "sink refused game %d", c->pushes);
    c->positions += zt_replay_traj_length(t);
    if (c->pushes == 1)
        CHECK(zt_replay_traj_serialize(t, return0, c->first_bytes, sizeof c->first_bytes,
                                       &c->first_len) == ZT_OK,
              "%s", zt_error_message());
    return c->inner.push(c->inner.ctx, t, return0);
}

/* The settings of a small tic-tac-toe actor. */
static zt_actor_config small_config(bool continuous)
{
    zt_actor_config ac;
    zt_actor_config_default(&ac);
    ac.games = 4;
    ac.search.num_simulations = 4;
    ac.root_cache = false;
    ac.continuous = continuous;
    return ac;
}

/* An actor of settings ac on its own private small net (*pool, freed by the
 * caller after the actor). */
static zt_actor *actor_with(zt_game *g, const zt_actor_config *ac, zt_evaluator_pool **pool)
{
    zt_net_config nc;
    small_net(g, &nc);
    zt_actor *a = NULL;
    *pool = NULL;
    CHECK(zt_evaluator_pool_new(&nc, "ref", ZT_PRECISION_FP32, ZT_EVALUATOR_PRIVATE, 1,
                                zt_actor_eval_batch(g, ac), 1, 0, pool) == ZT_OK,
          "pool: %s", zt_error_message());
    if (!*pool) return NULL;
    zt_model_factory mf = zt_az_model_factory();
    zt_evaluator ev = zt_evaluator_pool_client(*pool, 0);
    CHECK(zt_actor_new(g, &mf, &ev, ac, &a) == ZT_OK, "actor: %s", zt_error_message());
    if (a) CHECK(zt_actor_weights_changed(a) == ZT_OK, "weights: %s", zt_error_message());
    return a;
}

static zt_actor *small_actor(zt_game *g, bool continuous, zt_evaluator_pool **pool)
{
    zt_actor_config ac = small_config(continuous);
    return actor_with(g, &ac, pool);
}

static void test_sink(void)
{
    zt_game *g;
    CHECK(zt_game_new("tictactoe", NULL, &g) == ZT_OK, "tictactoe: %s", zt_error_message());
    zt_replay_config rc;
    zt_replay_config_default(&rc);
    rc.capacity = 10000;
    zt_replay *rb = NULL;
    CHECK(zt_replay_new(g, &rc, &rb) == ZT_OK, "replay: %s", zt_error_message());
    zt_evaluator_pool *pool = NULL;
    zt_actor *a = small_actor(g, true, &pool);
    if (!rb || !a) return;
    counting_sink c = {.inner = zt_traj_sink_replay(rb), .fail_at = 6};
    zt_traj_sink sink = {.ctx = &c, .push = counting_push};
    zt_status st = ZT_OK;
    for (int step = 0; step < 1000 && st == ZT_OK; step++) st = zt_actor_step(a, &sink);
    CHECK(st == ZT_ERR_IO && strstr(zt_error_message(), "sink refused game 6"),
          "a failing sink gave %s: %s", zt_status_name(st), zt_error_message());
    zt_actor_stats as = zt_actor_get_stats(a);
    zt_replay_stats rs = zt_replay_get_stats(rb);
    CHECK(c.pushes == 6 && as.games_added == 5 && rs.games == 5 && rs.positions == c.positions &&
              (int64_t)as.positions_added == c.positions,
          "%d pushes, %llu games added, %lld stored, %lld positions stored of %lld pushed",
          c.pushes, (unsigned long long)as.games_added, (long long)rs.games,
          (long long)rs.positions, (long long)c.positions);
    /* the first stored game is the first pushed, record for record */
    zt_replay_traj *t = NULL;
    float r0;
    CHECK(zt_replay_traj_new(g, &t) == ZT_OK &&
              zt_replay_traj_deserialize(g, c.first_bytes, c.first_len, t, &r0) == ZT_OK,
          "%s", zt_error_message());
    zt_replay_position pos;
    CHECK(t && zt_replay_get(rb, zt_replay_traj_length(t) - 1, &pos, NULL) == ZT_OK &&
              pos.game_id == 0 && pos.ply == zt_replay_traj_length(t) - 1,
          "the first game pushed is not the first stored");
    zt_replay_traj_free(t);
    zt_actor_free(a);
    zt_evaluator_pool_free(pool);

    /* generations: nothing is pushed until the flush, then every game */
    a = small_actor(g, false, &pool);
    c = (counting_sink){.inner = zt_traj_sink_replay(rb), .fail_at = -1};
    CHECK(zt_actor_begin_generation(a, 0) == ZT_OK, "%s", zt_error_message());
    for (int step = 0; step < 100 && !zt_actor_idle(a); step++)
        CHECK(zt_actor_step(a, NULL) == ZT_OK, "generation step: %s", zt_error_message());
    CHECK(zt_actor_idle(a) && c.pushes == 0, "generation not over or pushed early");
    CHECK(zt_actor_flush(a, &sink) == ZT_OK && c.pushes == 4, "flush pushed %d of 4 games",
          c.pushes);
    zt_actor_free(a);
    zt_evaluator_pool_free(pool);
    zt_replay_free(rb);
    zt_game_free(g);
}

/* Counts the pushed games and their lengths. */
typedef struct length_sink {
    int games, short_games, longest;
} length_sink;

static zt_status length_push(void *ctx, const zt_replay_traj *t, float return0)
{
    (void)return0;
    length_sink *c = ctx;
    int n = zt_replay_traj_length(t);
    c->games++;
    c->short_games += n <= 3;
    if (n > c->longest) c->longest = n;
    return ZT_OK;
}

/* Start positions: with start_fraction 1 every game begins at the given
 * tic-tac-toe position (6 marks down, 3 empty cells, nobody has won), so
 * no game records more than 3 positions; with 0.5 some games do (from the
 * empty board a game lasts at least 5 plies) and some do not. */
static void test_start_positions(void)
{
    zt_game *g;
    CHECK(zt_game_new("tictactoe", NULL, &g) == ZT_OK, "tictactoe: %s", zt_error_message());
    uint8_t start[ZT_MAX_STATE_BYTES];
    g->reset(g, start);
    static const int moves[] = {0, 4, 8, 2, 6, 3}; /* X 0 8 6, O 4 2 3 */
    for (int i = 0; i < 6; i++) g->apply(g, start, moves[i]);
    CHECK(g->current_player(g, start) >= 0, "the start position is over");
    const double fractions[] = {1.0, 0.5};
    for (int f = 0; f < 2; f++) {
        zt_actor_config ac = small_config(true);
        ac.start_states = start;
        ac.num_start_states = 1;
        ac.start_fraction = fractions[f];
        zt_evaluator_pool *pool = NULL;
        zt_actor *a = actor_with(g, &ac, &pool);
        if (!pool) break;
        length_sink c = {0};
        zt_traj_sink sink = {.ctx = &c, .push = length_push};
        for (int step = 0; a && step < 200; step++)
            CHECK(zt_actor_step(a, &sink) == ZT_OK, "step: %s", zt_error_message());
        if (f == 0)
            CHECK(c.games >= 20 && c.longest <= 3,
                  "start_fraction 1: %d games, the longest %d positions (at most 3)", c.games,
                  c.longest);
        else
            CHECK(c.games >= 20 && c.short_games > 0 && c.short_games < c.games && c.longest >= 5,
                  "start_fraction 0.5: %d of %d games short, the longest %d", c.short_games,
                  c.games, c.longest);
        zt_actor_free(a);
        zt_evaluator_pool_free(pool);
    }
    zt_game_free(g);
}

/* An actor of settings ac (actor_with) that has played `steps` steps into
 * a fresh replay buffer of the defaults; false, with everything freed, if a
 * part could not be made. The caller frees the actor, *pool and *rb. */
static bool played_into_replay(zt_game *g, const zt_actor_config *ac, int steps,
                               zt_evaluator_pool **pool, zt_actor **a, zt_replay **rb)
{
    *a = actor_with(g, ac, pool);
    zt_replay_config rc;
    zt_replay_config_default(&rc);
    *rb = NULL;
    CHECK(zt_replay_new(g, &rc, rb) == ZT_OK, "replay: %s", zt_error_message());
    if (!*a || !*rb) {
        zt_actor_free(*a);
        zt_evaluator_pool_free(*pool);
        zt_replay_free(*rb);
        return false;
    }
    zt_traj_sink sink = zt_traj_sink_replay(*rb);
    for (int step = 0; step < steps; step++)
        CHECK(zt_actor_step(*a, &sink) == ZT_OK, "step: %s", zt_error_message());
    return true;
}

/* Opening players: with every game opening with 1..4 plies by the perfect
 * player (noise 0), every game's first recorded position is a draw, as the
 * empty board is; with noise 1 (every opening ply uniformly random) some are
 * not. A player the game does not know is refused. */
static void test_opening_players(void)
{
    zt_game *g;
    CHECK(zt_game_new("tictactoe", NULL, &g) == ZT_OK, "tictactoe: %s", zt_error_message());
    zt_solver *sv = NULL;
    CHECK(zt_solver_new(g, &sv) == ZT_OK, "solver: %s", zt_error_message());
    for (int noisy = 0; noisy < 2 && sv; noisy++) {
        zt_actor_config ac = small_config(true);
        ac.random_opening_fraction = 1;
        ac.random_opening_plies = 4;
        ac.opening_players = "perfect";
        ac.opening_noise = noisy;
        zt_evaluator_pool *pool = NULL;
        zt_actor *a;
        zt_replay *rb;
        if (!played_into_replay(g, &ac, 200, &pool, &a, &rb)) break;
        zt_replay_stats st = zt_replay_get_stats(rb);
        int games = 0, drawn = 0;
        for (int64_t i = st.positions_seen - st.positions; i < st.positions_seen; i++) {
            zt_replay_position pos;
            zt_solution sol;
            CHECK(zt_replay_get(rb, i, &pos, NULL) == ZT_OK, "get: %s", zt_error_message());
            if (pos.ply != 0) continue;
            CHECK(sv->solve(sv, pos.state, false, &sol) == ZT_OK, "solve: %s",
                  zt_error_message());
            games++;
            drawn += sol.value == 0;
        }
        if (!noisy)
            CHECK(games >= 20 && drawn == games,
                  "perfect openings: %d of %d games start from a draw", drawn, games);
        else
            CHECK(games >= 20 && drawn < games,
                  "random openings: all %d games start from a draw", games);
        zt_actor_free(a);
        zt_evaluator_pool_free(pool);
        zt_replay_free(rb);
    }
    zt_solver_free(sv);

    zt_actor_config ac = small_config(true);
    ac.random_opening_fraction = 1;
    ac.random_opening_plies = 4;
    ac.opening_players = "perfect,nobody";
    zt_evaluator_pool *pool = NULL;
    zt_net_config nc;
    small_net(g, &nc);
    CHECK(zt_evaluator_pool_new(&nc, "ref", ZT_PRECISION_FP32, ZT_EVALUATOR_PRIVATE, 1,
                                zt_actor_eval_batch(g, &ac), 1, 0, &pool) == ZT_OK,
          "pool: %s", zt_error_message());
    if (pool) {
        zt_model_factory mf = zt_az_model_factory();
        zt_evaluator ev = zt_evaluator_pool_client(pool, 0);
        zt_actor *a = NULL;
        CHECK(zt_actor_new(g, &mf, &ev, &ac, &a) != ZT_OK && !a &&
                  strstr(zt_error_message(), "opening_players") &&
                  strstr(zt_error_message(), "nobody"),
              "an unknown opening player: %s", zt_error_message());
        zt_actor_free(a);
        zt_evaluator_pool_free(pool);
    }
    zt_game_free(g);
}

/* random_move_fraction: PUCT without temperature plays a most-visited
 * move, so without random moves every recorded move is a maximum of its
 * position's policy target; with every move random a good share are not,
 * and the records keep the search's policy beside the move played. */
static void test_random_moves(void)
{
    zt_game *g;
    CHECK(zt_game_new("tictactoe", NULL, &g) == ZT_OK, "tictactoe: %s", zt_error_message());
    for (int random = 0; random < 2; random++) {
        zt_actor_config ac = small_config(true);
        zt_search_config_default(&ac.search, ZT_SEARCH_PUCT);
        ac.search.num_simulations = 16;
        ac.search.tree_reuse = false;
        ac.temperature_moves = 0;
        ac.record_actions = true;
        ac.random_move_fraction = random;
        zt_evaluator_pool *pool = NULL;
        zt_actor *a;
        zt_replay *rb;
        if (!played_into_replay(g, &ac, 100, &pool, &a, &rb)) break;
        zt_replay_stats st = zt_replay_get_stats(rb);
        int moves = 0, off = 0;
        for (int64_t i = st.positions_seen - st.positions; i < st.positions_seen; i++) {
            zt_replay_position pos;
            float policy[ZT_MAX_ACTIONS];
            CHECK(zt_replay_get(rb, i, &pos, policy) == ZT_OK, "get: %s", zt_error_message());
            if (pos.action < 0) continue;
            float best = 0;
            for (int k = 0; k < g->num_actions; k++) best = policy[k] > best ? policy[k] : best;
            moves++;
            off += policy[pos.action] < best;
        }
        if (!random)
            CHECK(moves >= 50 && off == 0, "%d of %d moves not a most-visited one", off, moves);
        else
            CHECK(moves >= 50 && off > moves / 5,
                  "random moves: only %d of %d moves off the search's choice", off, moves);
        zt_actor_free(a);
        zt_evaluator_pool_free(pool);
        zt_replay_free(rb);
    }
    zt_game_free(g);
}

/* noise_plies: with the root noise in a game's first ply only, a Gumbel
 * search without tree reuse makes every later move a function of its
 * position alone, so the games are at most as many distinct ones as there
 * are first moves (9 in tic-tac-toe); with noise in every move there are
 * more. */
static void test_noise_plies(void)
{
    zt_game *g;
    CHECK(zt_game_new("tictactoe", NULL, &g) == ZT_OK, "tictactoe: %s", zt_error_message());
    for (int plies = 0; plies < 2; plies++) {
        zt_actor_config ac = small_config(true);
        zt_search_config_default(&ac.search, ZT_SEARCH_GUMBEL);
        ac.search.num_simulations = 8;
        ac.search.tree_reuse = false;
        ac.noise_plies = plies;
        zt_evaluator_pool *pool = NULL;
        zt_actor *a;
        zt_replay *rb;
        if (!played_into_replay(g, &ac, 300, &pool, &a, &rb)) break;
        zt_replay_diversity d;
        CHECK(zt_replay_get_diversity(rb, &d) == ZT_OK, "%s", zt_error_message());
        if (plies == 1)
            CHECK(d.games >= 30 && d.distinct_games <= 9,
                  "noise in the first ply only: %lld distinct games of %lld",
                  (long long)d.distinct_games, (long long)d.games);
        else
            CHECK(d.games >= 30 && d.distinct_games > 9,
                  "noise in every ply: only %lld distinct games of %lld",
                  (long long)d.distinct_games, (long long)d.games);
        zt_actor_free(a);
        zt_evaluator_pool_free(pool);
        zt_replay_free(rb);
    }
    zt_game_free(g);
}

/* record_surprise: every full search's record holds a surprise, KL of its
 * policy from the net's prior; a Gumbel search with a random net moves
 * away from the prior at some positions (at most it stays within the
 * byte's 1/32 nat, which stores none), and every stored one is a number a
 * KL can be (at most the byte's cap); without record_surprise no record
 * holds one. */
static void test_surprise_recorded(void)
{
    zt_game *g;
    CHECK(zt_game_new("tictactoe", NULL, &g) == ZT_OK, "tictactoe: %s", zt_error_message());
    for (int on = 0; on < 2; on++) {
        zt_actor_config ac = small_config(true);
        ac.search.num_simulations = 8;
        ac.record_surprise = on;
        zt_evaluator_pool *pool = NULL;
        zt_actor *a;
        zt_replay *rb;
        if (!played_into_replay(g, &ac, 100, &pool, &a, &rb)) break;
        zt_replay_stats st = zt_replay_get_stats(rb);
        int64_t with = 0, bad = 0;
        for (int64_t i = st.positions_seen - st.positions; i < st.positions_seen; i++) {
            zt_replay_position pos;
            CHECK(zt_replay_get(rb, i, &pos, NULL) == ZT_OK, "get: %s", zt_error_message());
            with += pos.surprise > 0;
            bad += !(pos.surprise >= 0 && pos.surprise <= 255.0f / 32);
        }
        if (on)
            CHECK(st.positions >= 50 && with > 0 && bad == 0 && st.surprise > 0,
                  "record_surprise: %lld of %lld positions with a surprise (%lld out of range), "
                  "mean %g",
                  (long long)with, (long long)st.positions, (long long)bad, st.surprise);
        else
            CHECK(st.positions >= 50 && with == 0 && st.surprise == 0,
                  "without record_surprise: %lld of %lld positions with a surprise",
                  (long long)with, (long long)st.positions);
        zt_actor_free(a);
        zt_evaluator_pool_free(pool);
        zt_replay_free(rb);
    }
    zt_game_free(g);
}

/* Playout-cap randomisation: a quarter of the moves get the full search
 * (32 simulations) and record a policy target, the rest 4 simulations. The
 * full searches go on across steps while the fast games move, so the
 * network's calls stay near all G games wide (searching every move to its
 * end in one step left the fast games waiting through 28 of each step's 32
 * rounds: calls of about a third of G), and the share of full searches and
 * of recorded policy targets is the configured one. */
static void test_playout_cap(void)
{
    zt_game *g;
    CHECK(zt_game_new("connect4", NULL, &g) == ZT_OK, "connect4: %s", zt_error_message());
    zt_actor_config ac = small_config(true);
    ac.games = 32;
    ac.search.num_simulations = 32;
    ac.full_search_fraction = 0.25;
    ac.fast_simulations = 4;
    ac.nncache = false;
    zt_evaluator_pool *pool = NULL;
    zt_actor *a;
    zt_replay *rb;
    if (!played_into_replay(g, &ac, 100, &pool, &a, &rb)) {
        zt_game_free(g);
        return;
    }
    {
        zt_actor_stats st = zt_actor_get_stats(a);
        double full = (double)st.full_searches / (double)st.moves;
        double batch = (double)st.inferences / (double)st.net_calls;
        zt_replay_stats rs = zt_replay_get_stats(rb);
        int64_t flagged = 0;
        for (int64_t i = rs.positions_seen - rs.positions; i < rs.positions_seen; i++) {
            zt_replay_position pos;
            CHECK(zt_replay_get(rb, i, &pos, NULL) == ZT_OK, "get: %s", zt_error_message());
            flagged += (pos.flags & ZT_REPLAY_FULL_SEARCH) != 0;
        }
        double stored = (double)flagged / (double)rs.positions;
        CHECK(st.moves >= 800 && st.games_added >= 20, "only %llu moves, %llu games",
              (unsigned long long)st.moves, (unsigned long long)st.games_added);
        CHECK(full > 0.18 && full < 0.32 && stored > 0.18 && stored < 0.32,
              "full searches %.3f of the moves, policy targets %.3f of the positions, want 0.25",
              full, stored);
        CHECK(batch >= 0.75 * ac.games, "mean network batch %.1f of %d games", batch, ac.games);
        printf("playout cap: %llu moves, %.3f full, mean batch %.1f of %d\n",
               (unsigned long long)st.moves, full, batch, ac.games);
    }
    zt_actor_free(a);
    zt_evaluator_pool_free(pool);
    zt_replay_free(rb);
    zt_game_free(g);
}

/* ---- resignation ---- */

/* The brute-force threshold: over every candidate (each side's min_value
 * and the ceiling, highest first), the first whose resigned sides (min_value
 * below it; at least one) hold at most false_rate that did not lose. */
static float brute_threshold(const zt_resign_side *s, int n, float ceiling, double rate)
{
    if (n < ZT_RESIGN_MIN_SIDES) return ZT_RESIGN_NONE;
    float best = ZT_RESIGN_NONE;
    for (int c = 0; c <= n; c++) {
        float t = c < n ? s[c].min_value : ceiling;
        if (t > ceiling || t <= best) continue;
        int k = 0, wrong = 0;
        for (int i = 0; i < n; i++)
            if (s[i].min_value < t) k++, wrong += !s[i].lost;
        if (k > 0 && wrong <= rate * k) best = t;
    }
    return best;
}

/* zt_resign_calibrate against the brute force on random windows (lost
 * sides low, others spread, ties from a coarse grid), and the cases by
 * hand: too few sides, every side lost, no threshold that keeps the share. */
static void test_resign_calibrate(void)
{
    zt_resign_side s[ZT_RESIGN_WINDOW], copy[ZT_RESIGN_WINDOW];
    zt_rng rng;
    zt_rng_seed(&rng, 3, 0);
    int some = 0, none = 0;
    for (int trial = 0; trial < 200; trial++) {
        int n = 90 + (int)zt_rng_below(&rng, 400);
        double rate = trial % 3 == 0 ? 0.05 : trial % 3 == 1 ? 0.2 : 0.0;
        float ceiling = trial % 2 ? -0.9f : -0.5f;
        double spread = 0.1 + 0.9 * zt_rng_uniform(&rng);
        for (int i = 0; i < n; i++) {
            bool lost = zt_rng_uniform(&rng) < 0.6;
            double v = lost ? -1 + 0.2 * zt_rng_uniform(&rng) : -1 + 2 * spread * zt_rng_uniform(&rng);
            if (trial % 4 == 0) v = round(v * 20) / 20; /* ties */
            s[i] = (zt_resign_side){.min_value = (float)v, .lost = lost};
        }
        memcpy(copy, s, (size_t)n * sizeof *s);
        float want = brute_threshold(s, n, ceiling, rate);
        float got = zt_resign_calibrate(copy, n, ceiling, rate);
        CHECK(got == want, "trial %d (n %d, rate %g, ceiling %g): threshold %g, brute force %g",
              trial, n, rate, (double)ceiling, (double)got, (double)want);
        some += got > ZT_RESIGN_NONE;
        none += got == ZT_RESIGN_NONE;
    }
    CHECK(some > 20 && none > 20, "random windows: %d with a threshold, %d without", some, none);

    for (int i = 0; i < ZT_RESIGN_MIN_SIDES; i++)
        s[i] = (zt_resign_side){.min_value = -0.99f + 0.001f * (float)i, .lost = true};
    CHECK(zt_resign_calibrate(s, ZT_RESIGN_MIN_SIDES - 1, -0.9f, 0.05) == ZT_RESIGN_NONE,
          "a threshold from fewer than %d sides", ZT_RESIGN_MIN_SIDES);
    CHECK(zt_resign_calibrate(s, ZT_RESIGN_MIN_SIDES, -0.9f, 0.05) == -0.9f,
          "every side lost: the threshold is not the ceiling");
    CHECK(zt_resign_calibrate(s, ZT_RESIGN_MIN_SIDES, -0.95f, 0.05) == -0.95f,
          "every side lost: the threshold is not the lower ceiling");
    /* the lowest side did not lose, and none may: no threshold resigns it alone */
    for (int i = 0; i < ZT_RESIGN_MIN_SIDES; i++)
        s[i] = (zt_resign_side){.min_value = -0.99f + 0.001f * (float)i, .lost = i > 0};
    CHECK(zt_resign_calibrate(s, ZT_RESIGN_MIN_SIDES, -0.9f, 0.0) == ZT_RESIGN_NONE,
          "a threshold with a false resignation at false_rate 0");
    /* 1 of the lowest 20 did not lose: 5 % allows all 20 and no more
     * (sides from 20 on did not lose) */
    for (int i = 0; i < ZT_RESIGN_MIN_SIDES; i++)
        s[i] = (zt_resign_side){.min_value = -0.99f + 0.001f * (float)i, .lost = i > 0 && i < 20};
    float t = zt_resign_calibrate(s, ZT_RESIGN_MIN_SIDES, -0.9f, 0.05);
    CHECK(t == -0.99f + 0.001f * 20, "1 false in the lowest 20: threshold %.4f, not side 20's",
          (double)t);
}

/* An evaluator that tells player 0 (X) every position is lost and player 1
 * (O) won: X's root value is -1 wherever no move wins at once, O's +1. */
static zt_status x_loses_eval(void *ctx, int B, const float *obs, float *logits, float *value)
{
    const zt_evaluator *inner = ctx;
    ZT_TRY(inner->eval(inner->ctx, B, obs, logits, value));
    for (int b = 0; b < B; b++) value[b] = obs[(size_t)b * 27 + 2] > 0.5f ? -1.0f : 1.0f;
    return ZT_OK;
}

/* Resignation on tic-tac-toe with x_loses_eval: X would resign at its
 * first move of every game, though with a random net it wins or draws most
 * of them. With the fixed threshold it resigns and the played-out games
 * count false resignations; calibrated to at most 5 % false it never
 * resigns (no threshold keeps that share); calibrated to at most 99.9 %
 * false it resigns, at the ceiling, once the window holds enough sides. */
static void test_resign(void)
{
    zt_game *g;
    CHECK(zt_game_new("tictactoe", NULL, &g) == ZT_OK, "tictactoe: %s", zt_error_message());
    zt_net_config nc;
    small_net(g, &nc);
    const double rates[] = {0.0, 0.05, 0.999};
    for (int r = 0; r < 3; r++) {
        zt_actor_config ac = small_config(true);
        ac.games = 16;
        ac.resign = true;
        ac.resign_threshold = -0.9f;
        ac.resign_playout_fraction = 0.5;
        ac.resign_false_rate = rates[r];
        zt_evaluator_pool *pool = NULL;
        CHECK(zt_evaluator_pool_new(&nc, "ref", ZT_PRECISION_FP32, ZT_EVALUATOR_PRIVATE, 1,
                                    zt_actor_eval_batch(g, &ac), 1, 0, &pool) == ZT_OK,
              "pool: %s", zt_error_message());
        if (!pool) break;
        zt_evaluator inner = zt_evaluator_pool_client(pool, 0);
        zt_evaluator ev = {.ctx = &inner, .eval = x_loses_eval};
        zt_model_factory mf = zt_az_model_factory();
        zt_actor *a = NULL;
        CHECK(zt_actor_new(g, &mf, &ev, &ac, &a) == ZT_OK, "actor: %s", zt_error_message());
        if (a) CHECK(zt_actor_weights_changed(a) == ZT_OK, "weights: %s", zt_error_message());
        CHECK(!a || zt_actor_resign_threshold(a) == (r == 0 ? -0.9f : ZT_RESIGN_NONE),
              "rate %g: threshold %g before any game", rates[r],
              a ? (double)zt_actor_resign_threshold(a) : 0.0);
        length_sink c = {0};
        zt_traj_sink sink = {.ctx = &c, .push = length_push};
        for (int step = 0; a && step < 5000 && c.games < 600; step++)
            CHECK(zt_actor_step(a, &sink) == ZT_OK, "step: %s", zt_error_message());
        zt_actor_stats as = a ? zt_actor_get_stats(a) : (zt_actor_stats){0};
        float at = a ? zt_actor_resign_threshold(a) : 0;
        if (r == 0)
            CHECK(c.games >= 600 && as.resignations > 150 && as.false_resignations > 0 &&
                      as.false_resignations <= as.playouts_would_resign && at == -0.9f,
                  "fixed: %d games, %llu resigned, false %llu of %llu, threshold %g", c.games,
                  (unsigned long long)as.resignations, (unsigned long long)as.false_resignations,
                  (unsigned long long)as.playouts_would_resign, (double)at);
        else if (r == 1)
            CHECK(c.games >= 600 && as.resignations == 0 && at == ZT_RESIGN_NONE,
                  "at most 5 %% false: %d games, %llu resigned, threshold %g", c.games,
                  (unsigned long long)as.resignations, (double)at);
        else
            CHECK(c.games >= 600 && as.resignations > 50 && at == -0.9f,
                  "at most 99.9 %% false: %d games, %llu resigned, threshold %g", c.games,
                  (unsigned long long)as.resignations, (double)at);
        zt_actor_free(a);
        zt_evaluator_pool_free(pool);
    }
    zt_actor_config bad = small_config(true);
    bad.resign = true;
    bad.resign_false_rate = 1.0;
    zt_actor *a = NULL;
    zt_evaluator none = {0};
    zt_model_factory mf = zt_az_model_factory();
    CHECK(zt_actor_new(g, &mf, &none, &bad, &a) == ZT_ERR_INVALID && !a &&
              strstr(zt_error_message(), "resign_false_rate"),
          "resign_false_rate 1 accepted: %s", zt_error_message());
    zt_game_free(g);
}

int main(void)
{
    test_games_stored();
    test_long_games_abandoned();
    test_shared_equals_private("tictactoe", 0, 12);
    test_shared_equals_private("connect4", 0, 48);
    test_shared_equals_private("tictactoe", 1, 12);
    test_shared_equals_private("2048", 2, 200);
    test_failing_evaluator();
    test_sink();
    test_start_positions();
    test_opening_players();
    test_random_moves();
    test_noise_plies();
    test_surprise_recorded();
    test_playout_cap();
    test_resign_calibrate();
    test_resign();
    return zt_test_finish("test_actor");
}
