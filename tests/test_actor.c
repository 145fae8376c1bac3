/* Self-play actors: games play to their end and reach the replay buffer
 * with their positions; a game that reaches the game's max_game_length
 * plies unfinished is abandoned, counted, and never stored (its positions
 * have no outcome to learn); finished games go through the trajectory sink,
 * generations in slot order, and a sink's error stops the actor's step with
 * its message. */
#include <string.h>

#include <stdio.h>

#include "game/game.h"
#include "nn/nn.h"
#include "replay/replay.h"
#include "selfplay/actor.h"

#include "zt_test.h"

/* An actor over tic-tac-toe with a small reference-backend net, stepped
 * until `games` games ended (finished or abandoned); returns its stats and
 * the buffer's. */
static void run_actor(zt_game *g, int games, zt_actor_stats *as, zt_replay_stats *rs)
{
    zt_net_config nc;
    zt_net_config_default(&nc, g->obs_shape[0], g->obs_shape[1], g->obs_shape[2], g->num_actions);
    nc.channels = 8;
    nc.blocks = 1;
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
    CHECK(zt_replay_new(g, &rc, &rb) == ZT_OK, "replay: %s", zt_error_message());
    CHECK(zt_actor_new(g, &nc, "ref", ZT_PRECISION_FP32, &ac, &a) == ZT_OK, "actor: %s",
          zt_error_message());
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

static zt_actor *small_actor(zt_game *g, bool continuous)
{
    zt_net_config nc;
    zt_net_config_default(&nc, g->obs_shape[0], g->obs_shape[1], g->obs_shape[2], g->num_actions);
    nc.channels = 8;
    nc.blocks = 1;
    zt_actor_config ac;
    zt_actor_config_default(&ac);
    ac.games = 4;
    ac.search.num_simulations = 4;
    ac.root_cache = false;
    ac.continuous = continuous;
    zt_actor *a = NULL;
    CHECK(zt_actor_new(g, &nc, "ref", ZT_PRECISION_FP32, &ac, &a) == ZT_OK, "actor: %s",
          zt_error_message());
    if (a) CHECK(zt_actor_weights_changed(a) == ZT_OK, "weights: %s", zt_error_message());
    return a;
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
    zt_actor *a = small_actor(g, true);
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

    /* generations: nothing is pushed until the flush, then every game */
    a = small_actor(g, false);
    c = (counting_sink){.inner = zt_traj_sink_replay(rb), .fail_at = -1};
    CHECK(zt_actor_begin_generation(a, 0) == ZT_OK, "%s", zt_error_message());
    for (int step = 0; step < 100 && !zt_actor_idle(a); step++)
        CHECK(zt_actor_step(a, NULL) == ZT_OK, "generation step: %s", zt_error_message());
    CHECK(zt_actor_idle(a) && c.pushes == 0, "generation not over or pushed early");
    CHECK(zt_actor_flush(a, &sink) == ZT_OK && c.pushes == 4, "flush pushed %d of 4 games",
          c.pushes);
    zt_actor_free(a);
    zt_replay_free(rb);
    zt_game_free(g);
}

int main(void)
{
    test_games_stored();
    test_long_games_abandoned();
    test_sink();
    return zt_test_finish("test_actor");
}
