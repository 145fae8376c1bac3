/* 2048's rules: merges (each tile merges once, with the first equal tile it
 * meets, toward the side moved to), points, legality (only moves that change
 * the board), the exact spawn distribution, the two opening spawns, the end,
 * the notation and the symmetries' action permutation; and the baselines:
 * expectimax finds an obvious merge and scores more than random; the
 * arena's score runner (zt_arena_score) gives the games played one by one
 * whatever the concurrency; the net's value transform round-trips. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/player.h"
#include "arena/arena.h"
#include "core/rng.h"
#include "game/g2048.h"
#include "game/game.h"

#include "zt_test.h"

static zt_game *g;

/* A board from 16 tile values, row-major from the top left. */
static uint64_t board_of(const int v[16])
{
    uint64_t b = 0;
    for (int i = 0; i < 16; i++) {
        int k = 0;
        while (v[i] && (1 << k) != v[i]) k++;
        b |= (uint64_t)k << (4 * i);
    }
    return b;
}

/* Slides one row [a b c d] left and checks the result and the points. */
static void check_row(const int in[4], int action, const int want[4], uint32_t want_points)
{
    int v[16] = {0}, w[16] = {0};
    memcpy(v, in, sizeof(int) * 4);
    memcpy(w, want, sizeof(int) * 4);
    uint32_t points = 0;
    uint64_t out = zt_g2048_move(board_of(v), action, &points);
    CHECK(out == board_of(w) && points == want_points,
          "[%d,%d,%d,%d] move %d: got board %016llx points %u, want [%d,%d,%d,%d] %u", in[0], in[1],
          in[2], in[3], action, (unsigned long long)out, points, want[0], want[1], want[2], want[3],
          want_points);
}

static void test_merges(void)
{
    check_row((int[]){2, 2, 2, 2}, ZT_G2048_LEFT, (int[]){4, 4, 0, 0}, 8);
    check_row((int[]){4, 4, 8, 0}, ZT_G2048_LEFT, (int[]){8, 8, 0, 0}, 8);
    check_row((int[]){2, 2, 2, 0}, ZT_G2048_LEFT, (int[]){4, 2, 0, 0}, 4);
    check_row((int[]){2, 2, 2, 0}, ZT_G2048_RIGHT, (int[]){0, 0, 2, 4}, 4);
    check_row((int[]){2, 0, 0, 2}, ZT_G2048_LEFT, (int[]){4, 0, 0, 0}, 4);
    check_row((int[]){2, 4, 8, 16}, ZT_G2048_LEFT, (int[]){2, 4, 8, 16}, 0);
    check_row((int[]){8, 8, 16, 16}, ZT_G2048_RIGHT, (int[]){0, 0, 16, 32}, 48);
    check_row((int[]){0, 4, 0, 4}, ZT_G2048_RIGHT, (int[]){0, 0, 0, 8}, 8);
    check_row((int[]){4, 2, 2, 4}, ZT_G2048_LEFT, (int[]){4, 4, 4, 0}, 4);
    /* 32768 is the largest tile a nibble holds: two of them stay apart */
    check_row((int[]){32768, 32768, 2, 2}, ZT_G2048_LEFT, (int[]){32768, 32768, 4, 0}, 4);
    check_row((int[]){16384, 16384, 0, 0}, ZT_G2048_LEFT, (int[]){32768, 0, 0, 0}, 32768);

    /* columns: up slides toward row 0, down toward row 3 */
    int col[16] = {2, 0, 0, 0, 2, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0};
    int up[16] = {4, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    int down[16] = {0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 8, 0, 0, 0};
    uint32_t p;
    CHECK(zt_g2048_move(board_of(col), ZT_G2048_UP, &p) == board_of(up) && p == 12, "column up");
    CHECK(zt_g2048_move(board_of(col), ZT_G2048_DOWN, &p) == board_of(down) && p == 12,
          "column down");
    CHECK(zt_g2048_move(board_of(col), ZT_G2048_LEFT, &p) == board_of(col) && p == 0,
          "column left changes nothing");
}

static void from_text(const char *text, uint8_t *s)
{
    memset(s, 0, ZT_MAX_STATE_BYTES);
    CHECK(g->from_text(g, text, s) == ZT_OK, "'%s': %s", text, zt_error_message());
}

static void test_play(void)
{
    uint8_t s[ZT_MAX_STATE_BYTES] = {0}, t[ZT_MAX_STATE_BYTES] = {0};
    int outcomes[ZT_MAX_CHANCE_OUTCOMES];
    float probs[ZT_MAX_CHANCE_OUTCOMES];
    uint16_t actions[ZT_MAX_ACTIONS];
    char text[ZT_MAX_TEXT];

    /* the start: two spawns, uniformly over 16 then 15 cells */
    g->reset(g, s);
    CHECK(g->current_player(g, s) == ZT_CHANCE, "the game opens with a spawn");
    int n = g->chance_outcomes(g, s, outcomes, probs);
    CHECK(n == 32, "%d outcomes on the empty board, want 32", n);
    double total = 0;
    for (int i = 0; i < n; i++) {
        float want = (outcomes[i] & 1) ? 0.1f / 16 : 0.9f / 16;
        CHECK(probs[i] == want && outcomes[i] == i, "outcome %d: id %d probability %g, want %g", i,
              outcomes[i], probs[i], want);
        total += probs[i];
    }
    CHECK(fabs(total - 1) < 1e-6, "probabilities sum to %g", total);
    g->apply(g, s, 2 * 5 + 1); /* a 4 in cell 5 */
    CHECK(g->current_player(g, s) == ZT_CHANCE, "a second opening spawn");
    n = g->chance_outcomes(g, s, outcomes, probs);
    CHECK(n == 30 && probs[0] == 0.9f / 15 && probs[1] == 0.1f / 15, "15 empty cells: %d outcomes", n);
    for (int i = 0; i < n; i++) CHECK(outcomes[i] >> 1 != 5, "cell 5 is taken");
    g->apply(g, s, 2 * 6); /* a 2 in cell 6 */
    CHECK(g->current_player(g, s) == 0, "the player moves after the opening");
    g->to_text(g, s, text, sizeof text);
    CHECK(strcmp(text, "0,0,0,0/0,4,2,0/0,0,0,0/0,0,0,0 0 move") == 0, "notation '%s'", text);
    n = g->legal(g, s, actions);
    CHECK(n == 4, "%d legal moves, want 4", n);

    /* rewards: the banked score rises by the merges */
    from_text("2,2,4,8/0,0,0,0/0,0,0,0/0,0,0,0 16 move", s);
    memcpy(t, s, g->state_size);
    g->apply(g, t, ZT_G2048_LEFT);
    CHECK(zt_game_score(g, t) == 20.0f, "score %g after merging 2+2, want 16 + 4",
          zt_game_score(g, t));
    CHECK(zt_game_reward(g, s, t) == 4.0f / g->max_return, "reward %g", zt_game_reward(g, s, t));
    CHECK(g->current_player(g, t) == ZT_CHANCE, "a spawn follows a move");
    n = g->chance_outcomes(g, t, outcomes, probs);
    CHECK(n == 2 * 13, "13 empty cells after [4,4,8,0]: %d outcomes", n);

    /* only moves that change the board are legal */
    from_text("2,4,8,16/0,0,0,0/0,0,0,0/0,0,0,0 0 move", s);
    n = g->legal(g, s, actions);
    CHECK(n == 1 && actions[0] == ZT_G2048_DOWN, "a full top row with nothing to merge: only down");
    from_text("2,4,2,4/4,2,4,2/2,4,2,4/4,2,4,8 0 move", s);
    CHECK(g->current_player(g, s) == ZT_TERMINAL, "a full board without merges is the end");
    CHECK(g->level(g, s) == 8, "highest tile %d", g->level(g, s));
    from_text("2,4,2,4/4,2,4,2/2,4,2,4/4,2,8,8 0 move", s);
    n = g->legal(g, s, actions);
    CHECK(g->current_player(g, s) == 0 && n == 2 && actions[0] == ZT_G2048_RIGHT &&
              actions[1] == ZT_G2048_LEFT,
          "one merge in the bottom row: right and left (%d)", n);
    /* a spawn that fills the board without merges ends the game */
    from_text("2,4,2,4/4,2,4,2/2,4,2,4/4,2,4,0 100 spawn", s);
    n = g->chance_outcomes(g, s, outcomes, probs);
    CHECK(n == 2 && probs[0] == 0.9f && probs[1] == 0.1f, "one empty cell: 2 with 0.9, 4 with 0.1");
    memcpy(t, s, g->state_size);
    g->apply(g, t, outcomes[1]); /* a 4 next to the 4 above: still a move */
    CHECK(g->current_player(g, t) == 0, "a spawn next to its equal leaves a move");
    g->apply(g, s, outcomes[0]);
    CHECK(g->current_player(g, s) == ZT_TERMINAL, "a spawn that fills the board ends it");
    CHECK(zt_game_score(g, s) == 100.0f, "the final score is the banked one");
}

static void test_notation(void)
{
    uint8_t s[ZT_MAX_STATE_BYTES], t[ZT_MAX_STATE_BYTES];
    char text[ZT_MAX_TEXT];
    static const char *const good[] = {
        "0,0,0,0/0,0,0,0/0,0,0,0/0,0,0,0 0 spawn2",
        "0,0,0,0/0,0,0,0/0,0,0,2/0,0,0,0 0 spawn",
        "32768,16384,8192,4096/256,512,1024,2048/128,64,32,16/2,4,8,0 385376 move",
        "2,4,2,4/4,2,4,2/2,4,2,4/4,2,4,8 4 move",
    };
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        from_text(good[i], s);
        g->to_text(g, s, text, sizeof text);
        CHECK(strcmp(text, good[i]) == 0, "round trip '%s' -> '%s'", good[i], text);
        uint8_t compact[64];
        g->encode(g, s, compact);
        memset(t, 0xee, sizeof t);
        CHECK(g->decode(g, compact, t) == ZT_OK && memcmp(s, t, g->state_size) == 0,
              "compact round trip of '%s'", good[i]);
    }
    static const char *const bad[] = {
        "",
        "0,0,0,0/0,0,0,0/0,0,0,0/0,0,0,0 0 move",    /* nothing to move */
        "3,0,0,0/0,0,0,0/0,0,0,2/0,0,0,0 0 move",    /* 3 is no tile */
        "2,0,0,0/0,0,0,0/0,0,0,2/0,0,0,0 0 spawn2",  /* two spawns on a board with tiles */
        "2,0,0,0/0,0,0,0/0,0,0,2/0,0,0,0 6 move",    /* a score no merges make */
        "2,0,0,0/0,0,0,0/0,0,0,2/0,0,0 0 move",      /* a cell missing */
        "2,0,0,0/0,0,0,0/0,0,0,2/0,0,0,0 0 turn",    /* what comes next */
        "2,0,0,0/0,0,0,0/0,0,0,2/0,0,0,0 0 move x",  /* trailing text */
        "65536,0,0,0/0,0,0,0/0,0,0,2/0,0,0,0 0 move", /* beyond a nibble */
        "2,4,2,4/4,2,4,2/2,4,2,4/4,2,4,8 0 spawn",   /* a spawn on a full board */
        "0,0,0,0/0,0,0,0/0,0,0,0/0,0,0,0 0 spawn",   /* one spawn on an empty board */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        CHECK(g->from_text(g, bad[i], s) == ZT_ERR_INVALID, "'%s' accepted", bad[i]);

    from_text("0,0,0,0/0,4,2,0/0,0,0,0/0,0,0,0 0 move", s);
    int a = -1;
    CHECK(g->action_from_text(g, s, "left", &a) == ZT_OK && a == ZT_G2048_LEFT, "left");
    CHECK(g->action_from_text(g, s, "U", &a) == ZT_OK && a == ZT_G2048_UP, "U");
    CHECK(g->action_from_text(g, s, "north", &a) == ZT_ERR_INVALID, "north accepted");
}

/* Rotating the board 90 degrees clockwise turns up into right, and so on;
 * mirroring left-right swaps left and right only. */
static void test_symmetries(void)
{
    CHECK(g->sym_action(g, 1, ZT_G2048_UP) == ZT_G2048_RIGHT &&
              g->sym_action(g, 1, ZT_G2048_RIGHT) == ZT_G2048_DOWN &&
              g->sym_action(g, 1, ZT_G2048_LEFT) == ZT_G2048_UP,
          "rotation maps directions");
    CHECK(g->sym_action(g, 4, ZT_G2048_LEFT) == ZT_G2048_RIGHT &&
              g->sym_action(g, 4, ZT_G2048_UP) == ZT_G2048_UP,
          "mirror maps directions");
    for (int k = 0; k < 8; k++) {
        bool seen[4] = {false};
        for (int a = 0; a < 4; a++) seen[g->sym_action(g, k, a)] = true;
        CHECK(seen[0] && seen[1] && seen[2] && seen[3], "symmetry %d permutes the moves", k);
    }
}

/* The net's value transform (game.h): h(3) = 1 + 3 eps, the inverse undoes
 * it from 0 to a million points, the value scale maps to 1, and two-player
 * values pass unchanged. */
static void test_value_transform(void)
{
    CHECK(fabs(zt_value_h(3) - 1.003) < 1e-12 && fabs(zt_value_h(-3) + 1.003) < 1e-12, "h(3) = %g",
          zt_value_h(3));
    const double xs[] = {0, 0.5, 1, 4, 100, 1234, 65536, 1e6, -50};
    for (size_t i = 0; i < sizeof xs / sizeof *xs; i++) {
        double back = zt_value_h_inverse(zt_value_h(xs[i]));
        CHECK(fabs(back - xs[i]) <= 1e-9 * (1 + fabs(xs[i])), "h^-1(h(%g)) = %.12g", xs[i], back);
    }
    CHECK(fabsf(zt_game_value_to_net(g, 1.0f) - 1.0f) < 1e-6f && zt_game_value_to_net(g, 0) == 0,
          "value scale -> 1, nothing -> 0");
    float v = 1000.0f / g->max_return, y = zt_game_value_to_net(g, v);
    CHECK(y > 0.09f && y < 0.11f && fabsf(zt_game_value_from_net(g, y) - v) < 1e-6f,
          "1000 points -> %g -> %g", y, zt_game_value_from_net(g, y) * g->max_return);
    zt_game *ttt = NULL;
    CHECK(zt_game_new("tictactoe", NULL, &ttt) == ZT_OK, "tictactoe");
    if (ttt)
        CHECK(zt_game_value_to_net(ttt, -0.5f) == -0.5f && zt_game_value_from_net(ttt, 0.25f) == 0.25f,
              "two-player values change");
    zt_game_free(ttt);
}

/* Mean score of `games` games of player spec, seeded. */
static double mean_score(const char *spec, int games, uint64_t seed, int *top)
{
    zt_player *p = NULL;
    CHECK(zt_player_new(g, spec, &p) == ZT_OK, "%s: %s", spec, zt_error_message());
    if (!p) return 0;
    double total = 0;
    *top = 0;
    for (int i = 0; i < games; i++) {
        zt_rng rng;
        zt_rng_seed(&rng, seed, (uint64_t)i);
        uint8_t s[ZT_MAX_STATE_BYTES] = {0};
        int outcomes[ZT_MAX_CHANCE_OUTCOMES];
        float probs[ZT_MAX_CHANCE_OUTCOMES];
        g->reset(g, s);
        for (;;) {
            int cp = g->current_player(g, s);
            if (cp == ZT_TERMINAL) break;
            if (cp == ZT_CHANCE) {
                int n = g->chance_outcomes(g, s, outcomes, probs);
                g->apply(g, s, outcomes[zt_rng_categorical(&rng, probs, n)]);
                continue;
            }
            g->apply(g, s, p->choose(p, s, &rng));
        }
        total += zt_game_score(g, s);
        if (g->level(g, s) > *top) *top = g->level(g, s);
    }
    zt_player_free(p);
    return total / games;
}

static void test_baselines(uint64_t seed)
{
    /* expectimax:1 takes the merge that leaves the board tidy */
    uint8_t s[ZT_MAX_STATE_BYTES];
    from_text("0,0,0,0/0,0,0,0/0,0,0,0/1024,1024,0,0 2048 move", s);
    zt_player *p = NULL;
    CHECK(zt_player_new(g, "expectimax:1", &p) == ZT_OK, "expectimax:1: %s", zt_error_message());
    zt_rng rng;
    zt_rng_seed(&rng, seed, 0);
    int a = p ? p->choose(p, s, &rng) : -1;
    CHECK(a == ZT_G2048_LEFT || a == ZT_G2048_RIGHT, "expectimax:1 merges the 1024s (chose %d)", a);
    zt_player_free(p);
    CHECK(zt_player_new(g, "expectimax:5", &p) == ZT_ERR_INVALID, "depth 5 accepted");

    int top_random, top_em;
    double random = mean_score("random", 40, seed, &top_random);
    double em = mean_score("expectimax:1", 8, seed, &top_em);
    printf("mean score: random %.0f (highest tile %d), expectimax:1 %.0f (highest %d)\n", random,
           top_random, em, top_em);
    CHECK(random > 200 && random < 3000, "random's mean score %.0f outside [200, 3000]", random);
    CHECK(em > 3 * random, "expectimax:1 (%.0f) not three times random (%.0f)", em, random);
}

/* zt_arena_score: the same games as mean_score plays one at a time (game i
 * draws from stream (seed, i) in the same order), at any concurrency; the
 * levels count every game. */
static void test_arena_score(uint64_t seed)
{
    int top;
    double want = mean_score("random", 30, seed, &top);
    for (int conc = 1; conc <= 32; conc *= 8) {
        zt_player *p = NULL;
        CHECK(zt_player_new(g, "random", &p) == ZT_OK, "random: %s", zt_error_message());
        if (!p) return;
        zt_agent *agent = zt_agent_from_player(p, true);
        zt_score_config sc = {.games = 30, .concurrency = conc, .seed = seed};
        zt_score_result r;
        CHECK(zt_arena_score(g, agent, &sc, &r) == ZT_OK, "score: %s", zt_error_message());
        int counted = 0;
        for (int i = 0; i < r.num_levels; i++) counted += r.level_games[i];
        CHECK(r.games == 30 && fabs(r.mean - want) < 1e-6 && counted == 30 && r.ci95 > 0 &&
                  r.level_value[r.num_levels - 1] == top && r.min <= r.mean && r.mean <= r.max,
              "concurrency %d: %d games, mean %g (want %g), %d levels counted", conc, r.games,
              r.mean, want, counted);
        zt_agent_free(agent);
    }
    zt_game *ttt = NULL;
    CHECK(zt_game_new("tictactoe", NULL, &ttt) == ZT_OK, "tictactoe");
    zt_player *p = NULL;
    if (ttt && zt_player_new(ttt, "random", &p) == ZT_OK) {
        zt_agent *agent = zt_agent_from_player(p, true);
        zt_score_config sc = {.games = 2, .seed = seed};
        zt_score_result r;
        CHECK(zt_arena_score(ttt, agent, &sc, &r) == ZT_ERR_INVALID, "a two-player game scored");
        zt_agent_free(agent);
    }
    zt_game_free(ttt);
}

int main(void)
{
    uint64_t seed = zt_test_seed(2048);
    CHECK(zt_game_new("2048", NULL, &g) == ZT_OK, "2048: %s", zt_error_message());
    if (!g) return zt_test_finish("test_g2048");
    CHECK(zt_game_num_players(g) == 1 && g->max_chance_outcomes == 32, "one player, 32 outcomes");
    test_merges();
    test_play();
    test_notation();
    test_symmetries();
    test_value_transform();
    test_baselines(seed);
    test_arena_score(seed);
    zt_game_free(g);
    return zt_test_finish("test_g2048");
}
