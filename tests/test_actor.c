/* Self-play actors: games play to their end and reach the replay buffer
 * with their positions; a game that reaches the game's max_game_length
 * plies unfinished is abandoned, counted, and never stored (its positions
 * have no outcome to learn). */
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
    for (int step = 0; step < 10000; step++) {
        *as = zt_actor_get_stats(a);
        if ((int)(as->games + as->games_abandoned) >= games) break;
        CHECK(zt_actor_step(a, rb) == ZT_OK, "step: %s", zt_error_message());
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

int main(void)
{
    test_games_stored();
    test_long_games_abandoned();
    return zt_test_finish("test_actor");
}
