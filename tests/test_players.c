/* Baseline players: every player returns legal actions; the perfect
 * tic-tac-toe player never loses; the exact players beat random play, and
 * so does UCT with random rollouts, which also holds perfect tic-tac-toe
 * play to draws; the
 * "solver" player takes the fastest win; bad player specs are refused
 * naming the problem (the known specs listed, a baseline of another game
 * named with its game). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/player.h"

#include "zt_test.h"

/* Plays `games` games a (as player `seat` alternating) vs b; returns a's
 * total return. Every chosen action must be legal. */
static double match(const zt_game *g, zt_player *a, zt_player *b, int games, zt_rng *rng,
                    int *a_losses)
{
    double total = 0;
    *a_losses = 0;
    for (int i = 0; i < games; i++) {
        uint8_t s[ZT_MAX_STATE_BYTES];
        g->reset(g, s);
        int a_seat = i & 1;
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
            zt_player *who = p == a_seat ? a : b;
            int act = who->choose(who, s, rng);
            uint8_t mask[ZT_MAX_ACTIONS];
            zt_game_legal_mask(g, s, mask);
            CHECK(act >= 0 && act < g->num_actions && mask[act], "%s chose illegal %d in %s",
                  who->name, act, g->title);
            if (!(act >= 0 && act < g->num_actions && mask[act])) return total;
            g->apply(g, s, act);
        }
        float r[2];
        g->returns(g, s, r);
        total += r[a_seat];
        if (r[a_seat] < 0) (*a_losses)++;
    }
    return total;
}

static void versus(const char *game, const char *const *settings, const char *spec_a,
                   const char *spec_b, int games, double min_score, int max_losses)
{
    zt_config *cfg = zt_config_new();
    for (int i = 0; settings && settings[i]; i++) zt_config_set(cfg, settings[i]);
    zt_game *g;
    zt_status st = zt_game_new(game, cfg, &g);
    zt_config_free(cfg);
    CHECK(st == ZT_OK, "%s: %s", game, zt_error_message());
    if (st != ZT_OK) return;
    zt_player *a = NULL, *b = NULL;
    st = zt_player_new(g, spec_a, &a);
    CHECK(st == ZT_OK, "%s: %s", spec_a, zt_error_message());
    st = zt_player_new(g, spec_b, &b);
    CHECK(st == ZT_OK, "%s: %s", spec_b, zt_error_message());
    if (a && b) {
        zt_rng rng;
        zt_rng_seed(&rng, 7, 0);
        int losses;
        double score = match(g, a, b, games, &rng, &losses) / games;
        printf("%-20s %-14s vs %-10s %4d games: mean return %+.3f, %d losses\n", g->title, spec_a,
               spec_b, games, score, losses);
        CHECK(score >= min_score, "%s %s vs %s: mean return %.3f < %.3f", g->title, spec_a, spec_b,
              score, min_score);
        CHECK(losses <= max_losses, "%s %s vs %s: %d losses > %d", g->title, spec_a, spec_b, losses,
              max_losses);
    }
    zt_player_free(a);
    zt_player_free(b);
    zt_game_free(g);
}

/* "solver" on Connect Four, whose solver gives scores but no best-move
 * set: after 6 6 6 6 7 7 7 7 1 1 2 2 3 3 the first player wins at once in
 * column 4, the best score; slower wins keep the value but not the score. */
static void solver_takes_fastest_win(void)
{
    zt_game *g;
    if (zt_game_new("connect4", NULL, &g) != ZT_OK) return;
    uint8_t s[ZT_MAX_STATE_BYTES];
    CHECK(g->from_text(g, "66667777112233", s) == ZT_OK, "%s", zt_error_message());
    zt_player *solver = NULL;
    CHECK(zt_player_new(g, "solver", &solver) == ZT_OK, "%s", zt_error_message());
    zt_rng rng;
    zt_rng_seed(&rng, 11, 0);
    for (int i = 0; solver && i < 5; i++) {
        int a = solver->choose(solver, s, &rng);
        CHECK(a == 3, "solver played column %d, not the winning 4", a + 1);
    }
    zt_player_free(solver);
    zt_game_free(g);
}

int main(void)
{
    static const char *const k6[] = {"vertices=6", "k=3", NULL};
    versus("tictactoe", NULL, "perfect", "random", 200, 0.5, 0);
    versus("tictactoe", NULL, "perfect", "perfect", 20, 0.0, 0);
    versus("connect4", NULL, "alphabeta:4", "random", 40, 0.8, 0);
    versus("connect4", NULL, "alphabeta:6", "alphabeta:2", 20, 0.0, 20);
    versus("sim", k6, "perfect", "random", 100, 0.3, 50);
    versus("sim", k6, "negamax:3", "random", 100, 0.3, 50);
    versus("backgammon", NULL, "pubeval", "random", 100, 0.5, 50);
    versus("backgammon", NULL, "random", "random", 20, -3.0, 20);
    /* UCT with random rollouts: no network, no game knowledge */
    versus("tictactoe", NULL, "mcts:2000", "random", 40, 0.5, 0);
    versus("tictactoe", NULL, "mcts:2000", "perfect", 20, 0.0, 0);
    versus("connect4", NULL, "mcts:400", "random", 20, 0.8, 0);
    versus("sim", k6, "mcts:500", "random", 40, 0.5, 5);
    versus("backgammon", NULL, "mcts:8", "random", 4, -3.0, 4); /* chance nodes: legal moves */

    zt_game *g;
    zt_player *p;
    if (zt_game_new("tictactoe", NULL, &g) == ZT_OK) {
        CHECK(zt_player_new(g, "gnuchess", &p) == ZT_ERR_INVALID &&
                  strstr(zt_error_message(), "gnuchess"),
              "unknown spec: %s", zt_error_message());
        CHECK(strstr(zt_error_message(), "(random, perfect, solver, mcts:N, alphabeta:D, negamax:D, "
                                         "pubeval, expectimax:D, gnubg:P)"),
              "the known players are not listed: %s", zt_error_message());
        CHECK(zt_player_new(g, "pubeval", &p) == ZT_ERR_UNSUPPORTED &&
                  strstr(zt_error_message(), "player 'pubeval' exists for backgammon, not tictactoe"),
              "pubeval on tictactoe: %s", zt_error_message());
        CHECK(zt_player_new(g, "alphabeta:3", &p) == ZT_ERR_UNSUPPORTED &&
                  strstr(zt_error_message(), "player 'alphabeta' exists for connect4"),
              "alphabeta on tictactoe: %s", zt_error_message());
        CHECK(zt_player_new(g, "alphabeta:x", &p) == ZT_ERR_INVALID, "bad depth accepted");
        CHECK(zt_player_new(g, "alphabeta", &p) == ZT_ERR_INVALID, "a depth player without depth");
        static const char *const bad_mcts[] = {"mcts", "mcts:", "mcts:0", "mcts:x", "mcts:100001"};
        for (int i = 0; i < 5; i++)
            CHECK(zt_player_new(g, bad_mcts[i], &p) == ZT_ERR_INVALID &&
                      strstr(zt_error_message(), "mcts"),
                  "'%s' accepted or badly refused: %s", bad_mcts[i], zt_error_message());
        CHECK(zt_player_new(g, "gnubg:0", &p) == ZT_ERR_INVALID &&
                  strstr(zt_error_message(), "gnubg plays backgammon"),
              "gnubg on tictactoe: %s", zt_error_message());
        zt_game_free(g);
    }
    if (zt_game_new("2048", NULL, &g) == ZT_OK) {
        CHECK(zt_player_new(g, "mcts:10", &p) == ZT_ERR_UNSUPPORTED &&
                  strstr(zt_error_message(), "two-player"),
              "mcts on 2048: %s", zt_error_message());
        zt_game_free(g);
    }
    if (zt_game_new("backgammon", NULL, &g) == ZT_OK) {
        CHECK(zt_player_new(g, "perfect", &p) == ZT_ERR_UNSUPPORTED &&
                  strstr(zt_error_message(), "no exact solver"),
              "perfect backgammon: %s", zt_error_message());
        CHECK(zt_player_new(g, "pubeval:2", &p) == ZT_ERR_INVALID, "pubeval takes no depth");
        zt_game_free(g);
    }
    solver_takes_fastest_win();
    return zt_test_finish("test_players");
}
