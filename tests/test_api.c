/* libzeroth through its public header alone, linked as the shared library a
 * user links: every handle type (games, nets, searches, runs), logging
 * through the callback with nothing written to stderr, greedy play over a
 * net, and the error paths
 * (unknown game spec, bad weights file, wrong batch sizes, illegal moves,
 * misbehaving caller models), each a status and a one-line message naming
 * the problem, with the process still running. */
#include <dirent.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zeroth/zeroth.h"

#define ZT_TEST_PUBLIC_API
#include "zt_test.h"

static char tmp_root[256];

/* A failing call: the wanted status and a one-line message mentioning `named`. */
#define EXPECT_FAIL(call, want, named)                                                             \
    do {                                                                                           \
        zeroth_status st_ = (call);                                                                \
        const char *msg_ = zeroth_last_error();                                                    \
        CHECK(st_ == (want), "%s: status %s, wanted %s (%s)", #call, zeroth_status_name(st_),      \
              zeroth_status_name(want), msg_);                                                     \
        CHECK(strstr(msg_, (named)) != NULL && !strchr(msg_, '\n'),                                \
              "%s: message '%s' does not name '%s' on one line", #call, msg_, (named));            \
    } while (0)

#define EXPECT_OK(call)                                                                            \
    do {                                                                                           \
        zeroth_status st_ = (call);                                                                \
        CHECK(st_ == ZEROTH_OK, "%s: %s", #call, zeroth_last_error());                             \
    } while (0)

static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        unlink(dir);
        return;
    }
    struct dirent *e;
    char path[1024];
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        remove_tree(path);
    }
    closedir(d);
    rmdir(dir);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint32_t rnd(uint32_t n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)((rng_state >> 32) % n);
}

/* ---- version, errors, logging ---- */

static void test_basics(void)
{
    CHECK(strcmp(zeroth_version(), ZEROTH_VERSION) == 0, "library %s, header %s", zeroth_version(),
          ZEROTH_VERSION);
    CHECK(strstr(zeroth_backends(), "ref") != NULL, "backends '%s' lack ref", zeroth_backends());
    CHECK(zeroth_fail(ZEROTH_ERR_IO, "disk gone") == ZEROTH_ERR_IO,
          "zeroth_fail returns its status");
    CHECK(strcmp(zeroth_last_error(), "disk gone") == 0, "last error '%s'", zeroth_last_error());
    CHECK(strcmp(zeroth_status_name(ZEROTH_ERR_NOT_FOUND), "not found") == 0, "status name");
    EXPECT_FAIL(zeroth_set_log_level(9), ZEROTH_ERR_INVALID, "9");
    EXPECT_OK(zeroth_set_log_level(ZEROTH_LOG_INFO));
}

/* ---- games ---- */

static void test_game_errors(void)
{
    zeroth_game_t *g = (zeroth_game_t *)1;
    EXPECT_FAIL(zeroth_game_new("chess", &g), ZEROTH_ERR_NOT_FOUND, "chess");
    CHECK(g == NULL, "a failed zeroth_game_new leaves *out NULL");
    CHECK(strstr(zeroth_last_error(), "connect4") != NULL, "the message lists the known games: %s",
          zeroth_last_error());
    EXPECT_FAIL(zeroth_game_new("sim vertices=3", &g), ZEROTH_ERR_INVALID, "vertices");
    EXPECT_FAIL(zeroth_game_new("tictactoe colour=red", &g), ZEROTH_ERR_INVALID, "colour");
    EXPECT_FAIL(zeroth_game_new("", &g), ZEROTH_ERR_INVALID, "empty");
    EXPECT_FAIL(zeroth_game_new(NULL, &g), ZEROTH_ERR_INVALID, "spec");
    EXPECT_FAIL(zeroth_game_new("connect4", NULL), ZEROTH_ERR_INVALID, "out");
    bool names[4] = {false};
    const char *want[4] = {"tictactoe", "connect4", "sim", "backgammon"};
    for (int i = 0; zeroth_game_list(i); i++)
        for (int k = 0; k < 4; k++) names[k] |= strcmp(zeroth_game_list(i), want[k]) == 0;
    for (int k = 0; k < 4; k++) CHECK(names[k], "zeroth_game_list lacks %s", want[k]);
    CHECK(zeroth_game_list(-1) == NULL && zeroth_game_list(1000) == NULL, "list out of range");
}

/* N random Connect Four games in lockstep through the batched calls: every
 * game ends within 42 plies with a zero-sum result, a state's text reads
 * back as the same bytes, and a step with one bad action changes nothing. */
static void test_connect4_batched(void)
{
    enum { N = 24 };
    zeroth_game_t *g;
    EXPECT_OK(zeroth_game_new("connect4", &g));
    if (!g) return;
    size_t S = zeroth_game_state_size(g);
    int A = zeroth_game_num_actions(g), shape[3];
    int obs_size = zeroth_game_obs_shape(g, shape);
    CHECK(A == 7 && shape[0] == 6 && shape[1] == 7 && obs_size == shape[0] * shape[1] * shape[2],
          "connect4 sizes: %d actions, %dx%dx%d", A, shape[0], shape[1], shape[2]);
    CHECK(strcmp(zeroth_game_spec(g), "connect4") == 0 &&
              strcmp(zeroth_game_name(g), "connect4") == 0,
          "spec '%s'", zeroth_game_spec(g));
    uint8_t *states = malloc(N * S), *batch = malloc(N * S), *before = malloc(N * S),
            *one = malloc(S);
    uint8_t *mask = malloc((size_t)N * A);
    float *obs = malloc((size_t)N * obs_size * sizeof *obs),
          *returns = malloc(2 * N * sizeof *returns);
    int players[N], counts[N], actions[N], live_index[N], plies = 0;
    EXPECT_OK(zeroth_game_reset(g, N, states));
    for (; plies <= 42; plies++) {
        EXPECT_OK(zeroth_game_players(g, N, states, players));
        EXPECT_OK(zeroth_game_legal(g, N, states, mask, counts));
        EXPECT_OK(zeroth_game_observe(g, N, states, obs));
        /* the games still on, gathered into one batch */
        int live = 0;
        for (int i = 0; i < N; i++) {
            if (players[i] == ZEROTH_TERMINAL) {
                CHECK(counts[i] == 0, "a terminal state has %d legal actions", counts[i]);
                continue;
            }
            CHECK(players[i] == plies % 2, "game %d ply %d: player %d to move", i, plies,
                  players[i]);
            int k = (int)rnd((uint32_t)counts[i]);
            for (int a = 0; a < A; a++)
                if (mask[(size_t)i * A + a] && k-- == 0) actions[live] = a;
            memcpy(batch + live * S, states + i * S, S);
            live_index[live++] = i;
        }
        if (live == 0) break;
        /* text round trip of the first live state */
        char text[1024];
        EXPECT_OK(zeroth_game_to_text(g, batch, text, sizeof text));
        EXPECT_OK(zeroth_game_from_text(g, text, one));
        CHECK(memcmp(one, batch, S) == 0, "'%s' does not read back as the same state", text);
        if (plies == 1) {
            /* a bad action among good ones: nothing changes */
            memcpy(before, batch, live * S);
            int saved = actions[live - 1];
            actions[live - 1] = 9;
            EXPECT_FAIL(zeroth_game_step(g, live, batch, actions), ZEROTH_ERR_INVALID, "action 9");
            CHECK(memcmp(before, batch, live * S) == 0, "a refused step changed states");
            actions[live - 1] = saved;
        }
        EXPECT_OK(zeroth_game_step(g, live, batch, actions));
        for (int k = 0; k < live; k++) memcpy(states + live_index[k] * S, batch + k * S, S);
    }
    CHECK(plies <= 42, "a Connect Four game took %d plies", plies);
    EXPECT_OK(zeroth_game_returns(g, N, states, returns));
    for (int i = 0; i < N; i++) {
        CHECK(returns[2 * i] == -returns[2 * i + 1], "game %d: returns %g %g", i, returns[2 * i],
              returns[2 * i + 1]);
        CHECK(fabsf(returns[2 * i]) <= 1, "game %d: return %g", i, returns[2 * i]);
    }
    /* a terminal state refuses a move */
    EXPECT_FAIL(zeroth_game_step(g, 1, states, (int[]){0}), ZEROTH_ERR_INVALID, "terminal");
    /* batch-size and pointer errors */
    EXPECT_FAIL(zeroth_game_reset(g, -1, states), ZEROTH_ERR_INVALID, "n = -1");
    EXPECT_FAIL(zeroth_game_legal(g, 2, NULL, mask, NULL), ZEROTH_ERR_INVALID, "states");
    EXPECT_FAIL(zeroth_game_observe(g, 2, states, NULL), ZEROTH_ERR_INVALID, "obs");
    EXPECT_OK(zeroth_game_step(g, 0, NULL, NULL));
    /* text errors: a short buffer, a bad position, an illegal action */
    char small[4];
    EXPECT_FAIL(zeroth_game_to_text(g, states, small, sizeof small), ZEROTH_ERR_INVALID, "needed");
    memcpy(before, states, S);
    EXPECT_FAIL(zeroth_game_from_text(g, "4444444", states), ZEROTH_ERR_INVALID, "");
    CHECK(memcmp(before, states, S) == 0, "a refused text changed the state");
    EXPECT_OK(zeroth_game_reset(g, 1, one));
    int a = -1;
    EXPECT_OK(zeroth_game_action_from_text(g, one, "4", &a));
    CHECK(a == 3, "column 4 is action %d", a);
    EXPECT_OK(zeroth_game_action_to_text(g, one, 3, small, sizeof small));
    CHECK(strcmp(small, "4") == 0, "action 3 is '%s'", small);
    EXPECT_FAIL(zeroth_game_action_to_text(g, one, 7, small, sizeof small), ZEROTH_ERR_INVALID,
                "7");
    char board[4096];
    EXPECT_OK(zeroth_game_render(g, one, board, sizeof board));
    CHECK(strchr(board, '\n') != NULL, "render gives a multi-line board");
    free(states);
    free(batch);
    free(before);
    free(one);
    free(mask);
    free(obs);
    free(returns);
    zeroth_game_free(g);
}

/* Backgammon through the chance calls: the opening is a chance node with
 * outcomes summing to 1, sample_chance resolves it the same way for the
 * same seed, and random games end with 1, 2 or 3 points. */
/* zeroth_game_step_env is the composition of the single calls: step, the
 * chance draws of sample_chance, returns, a reset (and its draws) for the
 * games that ended, players and legal; checked over random play of a game
 * without chance and one with it. */
static void check_step_env(const char *spec, int N, int plies)
{
    zeroth_game_t *g;
    EXPECT_OK(zeroth_game_new(spec, &g));
    if (!g) return;
    size_t S = zeroth_game_state_size(g);
    int A = zeroth_game_num_actions(g);
    uint8_t *env = malloc(N * S), *ref = malloc(N * S);
    uint8_t *mask = malloc((size_t)N * A), *ref_mask = malloc((size_t)N * A), *done = malloc(N);
    int *actions = malloc(N * sizeof *actions), *players = malloc(N * sizeof *players);
    int *ref_players = malloc(N * sizeof *ref_players);
    float *rewards = malloc(2 * N * sizeof *rewards), *ref_rewards = malloc(2 * N * sizeof *rewards);
    EXPECT_OK(zeroth_game_reset(g, N, env));
    EXPECT_OK(zeroth_game_sample_chance(g, N, env, 99));
    memcpy(ref, env, N * S);
    EXPECT_OK(zeroth_game_legal(g, N, env, mask, NULL));
    int ended = 0, mismatches = 0;
    for (int t = 0; t < plies && mismatches == 0; t++) {
        for (int i = 0; i < N; i++) {
            int k = 0, pick;
            for (int a = 0; a < A; a++) k += mask[i * A + a];
            pick = (int)rnd((uint32_t)k);
            for (int a = 0; a < A; a++)
                if (mask[i * A + a] && pick-- == 0) actions[i] = a;
        }
        uint64_t seed = 1000 + (uint64_t)t;
        EXPECT_OK(zeroth_game_step_env(g, N, env, actions, seed, 1, rewards, done, players, mask));
        /* the same by the single calls */
        EXPECT_OK(zeroth_game_step(g, N, ref, actions));
        EXPECT_OK(zeroth_game_sample_chance(g, N, ref, seed));
        EXPECT_OK(zeroth_game_returns(g, N, ref, ref_rewards));
        EXPECT_OK(zeroth_game_players(g, N, ref, ref_players));
        for (int i = 0; i < N; i++) {
            if (ref_players[i] != ZEROTH_TERMINAL) continue;
            ended++;
            CHECK(done[i] == 1, "%s: game %d ended but done is %d", spec, i, done[i]);
        }
        for (int i = 0; i < N; i++) {
            mismatches += ref_players[i] == ZEROTH_TERMINAL
                              ? 0
                              : memcmp(env + i * S, ref + i * S, S) != 0 || done[i] != 0 ||
                                    players[i] != ref_players[i];
            mismatches += rewards[2 * i] != ref_rewards[2 * i] ||
                          rewards[2 * i + 1] != ref_rewards[2 * i + 1];
        }
        /* ended games: the single calls cannot replay the opening draws
         * step_env makes after the step's own, so its new game (a decision
         * with the player it reports) becomes the reference's */
        for (int i = 0; i < N; i++) {
            if (ref_players[i] != ZEROTH_TERMINAL) continue;
            int p;
            zeroth_game_players(g, 1, env + i * S, &p);
            mismatches += p < 0 || p != players[i];
            memcpy(ref + i * S, env + i * S, S);
        }
        EXPECT_OK(zeroth_game_legal(g, N, env, ref_mask, NULL));
        mismatches += memcmp(mask, ref_mask, (size_t)N * A) != 0;
    }
    CHECK(mismatches == 0, "%s: step_env differs from the single calls (%d mismatches)", spec,
          mismatches);
    CHECK(ended > 0, "%s: no game ended in %d plies", spec, plies);
    /* an illegal action fails, names the state, and changes nothing */
    memcpy(ref, env, N * S);
    for (int i = 0; i < N; i++)
        for (int a = A - 1; a >= 0; a--)
            if (mask[i * A + a]) actions[i] = a;
    actions[N - 1] = A; /* no game has an action A */
    if (zeroth_game_max_chance_outcomes(g) == 0) {
        char named[32];
        snprintf(named, sizeof named, "state %d", N - 1);
        EXPECT_FAIL(zeroth_game_step_env(g, N, env, actions, 1, 1, rewards, done, players, mask),
                    ZEROTH_ERR_INVALID, named);
        CHECK(memcmp(ref, env, N * S) == 0, "%s: a refused step_env changed a state", spec);
    }
    EXPECT_FAIL(zeroth_game_step_env(g, N, env, actions, 1, 1, NULL, done, players, mask),
                ZEROTH_ERR_INVALID, "rewards");
    free(env), free(ref), free(mask), free(ref_mask), free(done);
    free(actions), free(players), free(ref_players), free(rewards), free(ref_rewards);
    zeroth_game_free(g);
}

static void test_step_env(void)
{
    check_step_env("connect4", 64, 60);
    check_step_env("tictactoe", 16, 30);
    check_step_env("backgammon", 8, 300);
}

/* zeroth_game_step_env_random plays legal moves: replaying the actions it
 * reports through zeroth_game_step_env gives the same states and outputs
 * (deterministic games, where the seed feeds no chance draw); the same
 * seed gives the same games; a state waiting for no player is refused with
 * nothing changed. */
static void check_step_env_random(const char *spec, int N, int plies)
{
    zeroth_game_t *g;
    EXPECT_OK(zeroth_game_new(spec, &g));
    if (!g) return;
    size_t S = zeroth_game_state_size(g);
    int A = zeroth_game_num_actions(g);
    bool chance = zeroth_game_max_chance_outcomes(g) > 0;
    uint8_t *rnd = malloc(N * S), *ref = malloc(N * S), *again = malloc(N * S);
    uint8_t *mask = malloc((size_t)N * A), *mask2 = malloc((size_t)N * A);
    int *actions = malloc(N * sizeof *actions), *actions2 = malloc(N * sizeof *actions2);
    int *players = malloc(N * sizeof *players), *players2 = malloc(N * sizeof *players2);
    float *rewards = malloc(2 * N * sizeof *rewards), *rewards2 = malloc(2 * N * sizeof *rewards2);
    uint8_t *done = malloc(N), *done2 = malloc(N);
    EXPECT_OK(zeroth_game_reset(g, N, rnd));
    EXPECT_OK(zeroth_game_sample_chance(g, N, rnd, 5));
    memcpy(ref, rnd, N * S);
    memcpy(again, rnd, N * S);
    int mismatches = 0, ended = 0;
    for (int ply = 0; ply < plies; ply++) {
        uint64_t seed = 1000 + (uint64_t)ply;
        EXPECT_OK(zeroth_game_step_env_random(g, N, rnd, seed, 1, actions, rewards, done, players, mask));
        EXPECT_OK(zeroth_game_step_env_random(g, N, again, seed, 1, actions2, rewards2, done2, players2,
                                              NULL));
        mismatches += memcmp(rnd, again, N * S) != 0 || memcmp(actions, actions2, N * sizeof *actions) != 0;
        if (!chance) {
            EXPECT_OK(zeroth_game_step_env(g, N, ref, actions, seed, 1, rewards2, done2, players2, mask2));
            mismatches += memcmp(rnd, ref, N * S) != 0 || memcmp(mask, mask2, (size_t)N * A) != 0 ||
                          memcmp(done, done2, N) != 0 || memcmp(rewards, rewards2, 2 * N * sizeof *rewards) != 0;
        }
        for (int i = 0; i < N; i++) ended += done[i];
    }
    CHECK(mismatches == 0, "%s: step_env_random disagrees with itself or with step_env (%d)", spec,
          mismatches);
    CHECK(ended > 0, "%s: no game ended in %d plies", spec, plies);
    /* a finished game (no auto-reset) is refused, nothing changed */
    EXPECT_OK(zeroth_game_reset(g, N, rnd));
    EXPECT_OK(zeroth_game_sample_chance(g, N, rnd, 5));
    bool over = false;
    for (int ply = 0; ply < 20000 && !over; ply++) {
        EXPECT_OK(zeroth_game_step_env_random(g, 1, rnd, (uint64_t)ply, 0, actions, rewards, done, players,
                                              NULL));
        over = done[0];
    }
    memcpy(again, rnd, N * S);
    EXPECT_FAIL(zeroth_game_step_env_random(g, N, rnd, 1, 0, actions, rewards, done, players, NULL),
                ZEROTH_ERR_INVALID, "state 0");
    CHECK(memcmp(rnd, again, N * S) == 0, "%s: a refused step_env_random changed a state", spec);
    free(rnd), free(ref), free(again), free(mask), free(mask2), free(actions), free(actions2);
    free(players), free(players2), free(rewards), free(rewards2), free(done), free(done2);
    zeroth_game_free(g);
}

static void test_step_env_random(void)
{
    check_step_env_random("connect4", 64, 80);
    check_step_env_random("tictactoe", 16, 30);
    check_step_env_random("backgammon", 8, 400);
}

static void test_backgammon_chance(void)
{
    enum { N = 4 };
    zeroth_game_t *g;
    EXPECT_OK(zeroth_game_new("backgammon", &g));
    if (!g) return;
    size_t S = zeroth_game_state_size(g);
    int A = zeroth_game_num_actions(g), O = zeroth_game_max_chance_outcomes(g);
    CHECK(O > 0 && zeroth_game_max_return(g) == 3, "backgammon: %d outcomes, max return %g", O,
          zeroth_game_max_return(g));
    uint8_t *states = malloc(N * S), *again = malloc(N * S);
    int players[N], counts[N], *outcomes = malloc((size_t)N * O * sizeof *outcomes);
    float *probs = malloc((size_t)N * O * sizeof *probs);
    uint8_t *mask = malloc((size_t)N * A);
    EXPECT_OK(zeroth_game_reset(g, N, states));
    EXPECT_OK(zeroth_game_players(g, N, states, players));
    CHECK(players[0] == ZEROTH_CHANCE, "the opening is a chance node (player %d)", players[0]);
    EXPECT_OK(zeroth_game_chance_outcomes(g, N, states, counts, outcomes, probs));
    double total = 0;
    for (int k = 0; k < counts[0]; k++) total += probs[k];
    CHECK(counts[0] > 0 && fabs(total - 1) < 1e-5, "%d outcomes summing to %g", counts[0], total);
    EXPECT_FAIL(zeroth_game_step(g, 1, states, (int[]){-5}), ZEROTH_ERR_INVALID, "outcome");
    memcpy(again, states, N * S);
    EXPECT_OK(zeroth_game_sample_chance(g, N, states, 11));
    EXPECT_OK(zeroth_game_sample_chance(g, N, again, 11));
    CHECK(memcmp(states, again, N * S) == 0, "the same seed draws differently");
    int finished = 0;
    for (int ply = 0; ply < 20000 && finished < N; ply++) {
        EXPECT_OK(zeroth_game_sample_chance(g, N, states, (uint64_t)ply));
        EXPECT_OK(zeroth_game_players(g, N, states, players));
        EXPECT_OK(zeroth_game_legal(g, N, states, mask, counts));
        finished = 0;
        for (int i = 0; i < N; i++) {
            if (players[i] == ZEROTH_TERMINAL) {
                finished++;
                continue;
            }
            CHECK(players[i] >= 0 && counts[i] > 0, "state %d: player %d, %d legal", i, players[i],
                  counts[i]);
            int k = (int)rnd((uint32_t)counts[i]), action = -1;
            for (int a = 0; a < A && action < 0; a++)
                if (mask[(size_t)i * A + a] && k-- == 0) action = a;
            EXPECT_OK(zeroth_game_step(g, 1, states + i * S, &action));
        }
    }
    CHECK(finished == N, "%d of %d backgammon games finished", finished, N);
    float returns[2 * N];
    EXPECT_OK(zeroth_game_returns(g, N, states, returns));
    for (int i = 0; i < N; i++) {
        float r = fabsf(returns[2 * i]);
        CHECK((r == 1 || r == 2 || r == 3) && returns[2 * i + 1] == -returns[2 * i],
              "game %d: returns %g %g", i, returns[2 * i], returns[2 * i + 1]);
    }
    free(states);
    free(again);
    free(outcomes);
    free(probs);
    free(mask);
    zeroth_game_free(g);
}

/* ---- logging and runs ---- */

typedef struct log_capture {
    int lines;
    bool saw_train;
} log_capture;

static void on_log(void *user, int level, const char *message)
{
    log_capture *c = user;
    c->lines++;
    if (strstr(message, "train tictactoe")) c->saw_train = true;
    (void)level;
}

static const char *const tiny_run =
    "game = tictactoe\n"
    "mode = deterministic\n"
    "seed = 5\n"
    "games_per_actor = 8\n"
    "replay_ratio = 4\n"
    "[net]\nkind = mlp\nmlp_hidden = 32\nmlp_layers = 1\nvalue_hidden = 16\n"
    "[search]\nsims = 8\n"
    "[selfplay]\nroot_cache_sims = 16\n"
    "[learner]\nbatch = 32\nmin_positions = 64\n"
    "[arena]\ngames = 0\npositions = false\n"
    "[checkpoint]\nkeep = 0\n";

static double metric(const zeroth_run_t *r, const char *name)
{
    double v = -1;
    EXPECT_OK(zeroth_run_metric(r, name, &v));
    return v;
}

/* Tensor `name` of `net`, read whole into a new array (the caller frees it);
 * NULL (and a failed check) when the net lacks it. */
static float *read_tensor(const zeroth_net_t *net, const char *name, int *ndim, int shape[4])
{
    for (int i = 0; i < zeroth_net_tensor_count(net); i++) {
        const char *n = NULL;
        size_t count = 0;
        EXPECT_OK(zeroth_net_tensor_info(net, i, &n, ndim, shape, &count));
        if (!n || strcmp(n, name) != 0) continue;
        float *data = malloc(count * sizeof *data);
        EXPECT_OK(zeroth_net_tensor_read(net, i, data, count));
        return data;
    }
    CHECK(false, "the net has no tensor '%s'", name);
    return NULL;
}

/* y[out] = W x (+ b) for a dense tensor pair of `net`; returns out. */
static int dense(const zeroth_net_t *net, const char *prefix, const double *x, int in, double *y)
{
    char name[64];
    int ndim = 0, shape[4] = {0}, bshape[4];
    snprintf(name, sizeof name, "%s.weight", prefix);
    float *w = read_tensor(net, name, &ndim, shape);
    snprintf(name, sizeof name, "%s.bias", prefix);
    int has_bias = 0;
    for (int i = 0; i < zeroth_net_tensor_count(net); i++) {
        const char *n = NULL;
        zeroth_net_tensor_info(net, i, &n, NULL, NULL, NULL);
        has_bias |= n && strcmp(n, name) == 0;
    }
    float *b = has_bias ? read_tensor(net, name, &ndim, bshape) : NULL;
    if (!w || shape[1] != in) {
        CHECK(!w, "%s: shape [%d][%d], input %d", prefix, shape[0], shape[1], in);
        free(w);
        free(b);
        return 0;
    }
    for (int o = 0; o < shape[0]; o++) {
        double acc = b ? b[o] : 0.0;
        for (int i = 0; i < in; i++) acc += (double)w[(size_t)o * in + i] * x[i];
        y[o] = acc;
    }
    free(w);
    free(b);
    return shape[0];
}

/* The tiny MLP of tiny_run (one dense-layer norm-ReLU block, policy and
 * scalar value heads) computed from the net's tensors in double, for one
 * observation: what zeroth_net_tensor_read gives must be the weights the
 * net runs with. */
static void mlp_by_hand(const zeroth_net_t *net, const float *obs, int F, double *logits,
                        double *value)
{
    double x[64], h[64], v[64];
    for (int i = 0; i < F; i++) x[i] = obs[i];
    int H = dense(net, "mlp.0.fc", x, F, h);
    int ndim, shape[4];
    float *gain = read_tensor(net, "mlp.0.norm.weight", &ndim, shape);
    float *beta = read_tensor(net, "mlp.0.norm.bias", &ndim, shape);
    double mean = 0, var = 0;
    for (int i = 0; i < H; i++) mean += h[i] / H;
    for (int i = 0; i < H; i++) var += (h[i] - mean) * (h[i] - mean) / H;
    for (int i = 0; i < H && gain && beta; i++) {
        h[i] = (h[i] - mean) / sqrt(var + 1e-5) * gain[i] + beta[i];
        if (h[i] < 0) h[i] = 0;
    }
    free(gain);
    free(beta);
    dense(net, "policy.fc", h, H, logits);
    int V = dense(net, "value.fc1", h, H, v);
    for (int i = 0; i < V; i++)
        if (v[i] < 0) v[i] = 0;
    dense(net, "value.fc2", v, V, value);
    *value = tanh(*value);
}

/* Writes the run directory to `run` for the net tests. */
static void test_runs(char *run, size_t cap)
{
    snprintf(run, cap, "%s/run", tmp_root);
    log_capture cap_log = {0};
    zeroth_set_log_callback(on_log, &cap_log);
    /* stderr into a file for the run: the library must write nothing there */
    char err_path[300];
    snprintf(err_path, sizeof err_path, "%s/stderr.txt", tmp_root);
    fflush(stderr);
    int saved_fd = dup(2);
    FILE *err = fopen(err_path, "w");
    if (err) dup2(fileno(err), 2);

    zeroth_run_t *r = NULL, *other = NULL;
    zeroth_status st = zeroth_run_new(tiny_run, run, &r);
    char why[512];
    snprintf(why, sizeof why, "%s", zeroth_last_error());
    int done = -1;
    double step5 = -1, step10 = -1, games = -1;
    zeroth_status second = ZEROTH_OK, step_st = ZEROTH_OK;
    char second_msg[512] = "";
    if (st == ZEROTH_OK) {
        step_st = zeroth_run_step(r, 5, 0, &done);
        step5 = metric(r, "step");
        if (step_st == ZEROTH_OK) step_st = zeroth_run_step(r, 5, 0, &done);
        step10 = metric(r, "step");
        games = metric(r, "games");
        second = zeroth_run_new(tiny_run, NULL, &other);
        snprintf(second_msg, sizeof second_msg, "%s", zeroth_last_error());
        zeroth_run_close(r);
    }

    fflush(stderr);
    if (saved_fd >= 0) {
        dup2(saved_fd, 2);
        close(saved_fd);
    }
    if (err) fclose(err);
    zeroth_set_log_callback(NULL, NULL);
    CHECK(st == ZEROTH_OK, "zeroth_run_new: %s", why);
    CHECK(step_st == ZEROTH_OK, "zeroth_run_step: %s", zeroth_last_error());
    CHECK(step5 == 5 && step10 == 10 && done == 0, "steps 5 and 10 reached %g and %g (done %d)",
          step5, step10, done);
    CHECK(games > 0, "no self-play game counted (%g)", games);
    CHECK(second == ZEROTH_ERR_UNSUPPORTED && strstr(second_msg, "another training run"),
          "a second open run: %s, '%s'", zeroth_status_name(second), second_msg);
    CHECK(cap_log.saw_train, "the log callback did not get the run's start line (%d lines)",
          cap_log.lines);
    struct stat sb;
    CHECK(stat(err_path, &sb) == 0 && sb.st_size == 0, "the library wrote %lld bytes to stderr",
          (long long)sb.st_size);

    /* resume with an override, then a stop request */
    st = zeroth_run_resume(run, "log.seconds=5", &r);
    CHECK(st == ZEROTH_OK, "zeroth_run_resume: %s", zeroth_last_error());
    if (st == ZEROTH_OK) {
        CHECK(metric(r, "step") == 10, "resumed at step %g", metric(r, "step"));
        CHECK(strcmp(zeroth_run_dir(r), run) == 0, "run dir '%s'", zeroth_run_dir(r));
        EXPECT_OK(zeroth_run_step(r, 3, 0, &done));
        CHECK(metric(r, "step") == 13 && done == 0, "step %g, done %d", metric(r, "step"), done);
        CHECK(metric(r, "loss_total") > 0, "no loss reported");
        CHECK(metric(r, "elapsed") > 0, "no time counted");
        double v;
        EXPECT_FAIL(zeroth_run_metric(r, "mood", &v), ZEROTH_ERR_NOT_FOUND, "mood");
        EXPECT_FAIL(zeroth_run_step(r, -1, 0, &done), ZEROTH_ERR_INVALID, "steps");
        EXPECT_FAIL(zeroth_run_step(r, 1, NAN, &done), ZEROTH_ERR_INVALID, "seconds");
        zeroth_run_request_stop(r);
        EXPECT_OK(zeroth_run_step(r, 3, 0, &done));
        CHECK(done == 1 && metric(r, "step") == 13, "after a stop request: done %d at step %g",
              done, metric(r, "step"));
        EXPECT_OK(zeroth_run_close(r));
    }

    /* refusals */
    zeroth_set_log_level(ZEROTH_LOG_QUIET);
    EXPECT_FAIL(zeroth_run_new("game=tictactoe no_such_key=1", NULL, &r), ZEROTH_ERR_INVALID,
                "no_such_key");
    EXPECT_FAIL(zeroth_run_new("mode=alternate", NULL, &r), ZEROTH_ERR_INVALID, "game");
    EXPECT_FAIL(zeroth_run_new("game=chess", NULL, &r), ZEROTH_ERR_NOT_FOUND, "chess");
    EXPECT_FAIL(zeroth_run_new(tiny_run, run, &r), ZEROTH_ERR_INVALID, "already holds a run");
    char missing[300];
    snprintf(missing, sizeof missing, "%s/no-such-run", tmp_root);
    EXPECT_FAIL(zeroth_run_resume(missing, NULL, &r), ZEROTH_ERR_NOT_FOUND, "no-such-run");
    EXPECT_FAIL(zeroth_run_new("game=tictactoe\n[net\n", NULL, &r), ZEROTH_ERR_INVALID, "line 2");
    CHECK(r == NULL, "a refused run left a handle");
    zeroth_set_log_level(ZEROTH_LOG_INFO);
}

/* ---- nets ---- */

static void test_nets(const char *run)
{
    zeroth_net_t *net = NULL;
    EXPECT_OK(zeroth_net_open(run, "backend=ref threads=1", &net));
    if (!net) return;
    CHECK(strcmp(zeroth_net_game_spec(net), "tictactoe") == 0, "net plays '%s'",
          zeroth_net_game_spec(net));
    CHECK(strncmp(zeroth_net_architecture(net), "mlp", 3) == 0, "architecture '%s'",
          zeroth_net_architecture(net));
    CHECK(strcmp(zeroth_net_backend(net), "ref") == 0 &&
              strcmp(zeroth_net_precision(net), "fp32") == 0,
          "backend %s/%s", zeroth_net_backend(net), zeroth_net_precision(net));
    zeroth_game_t *g;
    EXPECT_OK(zeroth_game_new(zeroth_net_game_spec(net), &g));
    if (!g) {
        zeroth_net_free(net);
        return;
    }
    enum { N = 3 };
    int A = zeroth_net_num_actions(net), F = zeroth_net_obs_size(net);
    CHECK(A == zeroth_game_num_actions(g) && F == zeroth_game_obs_shape(g, NULL),
          "net sizes %d, %d", A, F);
    size_t S = zeroth_game_state_size(g);
    uint8_t *states = malloc(N * S);
    const char *positions[N] = {"......... X", "X...O.... X", "XX.OO.... X"};
    for (int i = 0; i < N; i++) EXPECT_OK(zeroth_game_from_text(g, positions[i], states + i * S));
    float obs[N * 64], logits[N * 16], value[N], one_logits[16], one_value;
    EXPECT_OK(zeroth_game_observe(g, N, states, obs));
    EXPECT_OK(zeroth_net_forward(net, N, obs, logits, value));
    for (int i = 0; i < N; i++) {
        CHECK(value[i] >= -1 && value[i] <= 1, "value %g", value[i]);
        for (int a = 0; a < A; a++)
            CHECK(isfinite(logits[i * A + a]), "logit %g", logits[i * A + a]);
        /* a batch row equals the same position alone */
        EXPECT_OK(zeroth_net_forward(net, 1, obs + i * F, one_logits, &one_value));
        CHECK(fabsf(one_value - value[i]) < 1e-5, "position %d: %g alone, %g in a batch", i,
              one_value, value[i]);
    }
    /* the tensors are the weights the net runs with */
    CHECK(zeroth_net_tensor_count(net) == 9, "%d tensors in the tiny MLP",
          zeroth_net_tensor_count(net));
    for (int i = 0; i < N; i++) {
        double hand_logits[16], hand_value = 0;
        mlp_by_hand(net, obs + i * F, F, hand_logits, &hand_value);
        for (int a = 0; a < A; a++)
            CHECK(fabs(hand_logits[a] - logits[i * A + a]) < 1e-4,
                  "position %d action %d: logit %g from the tensors, %g from the net", i, a,
                  hand_logits[a], logits[i * A + a]);
        CHECK(fabs(hand_value - value[i]) < 1e-4, "position %d: value %g from the tensors, %g",
              i, hand_value, value[i]);
    }
    {
        const char *tname = NULL;
        int tdim = 0, tshape[4];
        size_t tcount = 0;
        EXPECT_OK(zeroth_net_tensor_info(net, 0, &tname, &tdim, tshape, &tcount));
        size_t product = 1;
        for (int d = 0; d < tdim; d++) product *= (size_t)tshape[d];
        CHECK(tname && tdim >= 1 && tdim <= 4 && product == tcount, "tensor 0: %s, %d dims, %zu",
              tname ? tname : "(null)", tdim, tcount);
        float one;
        EXPECT_FAIL(zeroth_net_tensor_read(net, 0, &one, 1), ZEROTH_ERR_INVALID, "floats");
        EXPECT_FAIL(zeroth_net_tensor_info(net, 9, &tname, NULL, NULL, NULL), ZEROTH_ERR_INVALID,
                    "tensor 9");
        EXPECT_FAIL(zeroth_net_tensor_read(net, -1, &one, 1), ZEROTH_ERR_INVALID, "tensor -1");
        EXPECT_FAIL(zeroth_net_tensor_read(net, 0, NULL, tcount), ZEROTH_ERR_INVALID, "data");
    }
    /* the same weights by each path form */
    char ckpt[400], weights[450], *latest_text = NULL;
    snprintf(ckpt, sizeof ckpt, "%s/ckpt/latest", run);
    FILE *f = fopen(ckpt, "r");
    char name[64] = "";
    if (f) {
        if (!fgets(name, sizeof name, f)) name[0] = '\0';
        fclose(f);
    }
    name[strcspn(name, "\n")] = '\0';
    snprintf(ckpt, sizeof ckpt, "%s/ckpt/%s", run, name);
    snprintf(weights, sizeof weights, "%s/weights.safetensors", ckpt);
    (void)latest_text;
    const char *forms[2] = {ckpt, weights};
    for (int k = 0; k < 2; k++) {
        zeroth_net_t *again = NULL;
        EXPECT_OK(zeroth_net_open(forms[k], "backend=ref threads=1", &again));
        if (!again) continue;
        EXPECT_OK(zeroth_net_forward(again, 1, obs, one_logits, &one_value));
        CHECK(one_value == value[0], "%s gives value %g, the run %g", forms[k], one_value,
              value[0]);
        zeroth_net_free(again);
    }
    /* errors */
    EXPECT_FAIL(zeroth_net_forward(net, 0, obs, logits, value), ZEROTH_ERR_INVALID, "n = 0");
    EXPECT_FAIL(zeroth_net_forward(net, 2, NULL, logits, value), ZEROTH_ERR_INVALID, "obs");
    zeroth_net_t *bad = (zeroth_net_t *)1;
    char garbage[300];
    snprintf(garbage, sizeof garbage, "%s/garbage.safetensors", tmp_root);
    f = fopen(garbage, "w");
    if (f) {
        fputs("this is not a weights file, only some text pretending to be one", f);
        fclose(f);
    }
    EXPECT_FAIL(zeroth_net_open(garbage, NULL, &bad), ZEROTH_ERR_CORRUPT, "garbage.safetensors");
    CHECK(bad == NULL, "a failed open leaves *out NULL");
    EXPECT_FAIL(zeroth_net_open("/no/such/model", NULL, &bad), ZEROTH_ERR_NOT_FOUND,
                "/no/such/model");
    EXPECT_FAIL(zeroth_net_open(run, "colour=red", &bad), ZEROTH_ERR_INVALID, "colour");
    EXPECT_FAIL(zeroth_net_open(run, "backend=tpu", &bad), ZEROTH_ERR_NOT_FOUND, "tpu");
    EXPECT_FAIL(zeroth_net_open(run, "threads", &bad), ZEROTH_ERR_INVALID, "threads");

    /* a search over the net */
    zeroth_search_t *s = NULL;
    EXPECT_OK(zeroth_search_new(g, net, N, "search.algorithm=puct search.sims=24", &s));
    if (s) {
        EXPECT_OK(zeroth_search_begin(s, N, NULL, states));
        EXPECT_OK(zeroth_search_run(s));
        int actions[N];
        float policy[N * 16], values[N];
        uint8_t mask[N * 16];
        EXPECT_OK(zeroth_search_choose(s, N, NULL, 0, actions));
        EXPECT_OK(zeroth_search_policy(s, N, NULL, policy));
        EXPECT_OK(zeroth_search_root_value(s, N, NULL, values));
        EXPECT_OK(zeroth_game_legal(g, N, states, mask, NULL));
        for (int i = 0; i < N; i++) {
            CHECK(actions[i] >= 0 && actions[i] < A && mask[i * A + actions[i]], "tree %d chose %d",
                  i, actions[i]);
            double total = 0;
            for (int a = 0; a < A; a++) {
                total += policy[i * A + a];
                CHECK(mask[i * A + a] || policy[i * A + a] == 0, "policy on illegal action %d", a);
            }
            CHECK(fabs(total - 1) < 1e-4, "tree %d: policy sums to %g", i, total);
            CHECK(values[i] >= -1 && values[i] <= 1, "root value %g", values[i]);
        }
        zeroth_search_free(s);
    }
    /* greedy play over the net: each position's move is the one after
     * which the net values the position worst for the opponent (a move that
     * ends the game counts its exact result), and the value is that
     * position's for the mover; 1 ply deeper still plays legal moves. */
    for (int plies = 0; plies < 2; plies++) {
        zeroth_greedy_t *gr = NULL;
        EXPECT_OK(zeroth_greedy_new(g, net, N, plies, &gr));
        if (!gr) continue;
        int actions[N];
        float values[N];
        EXPECT_OK(zeroth_greedy_choose(gr, N, NULL, states, actions, values));
        for (int i = 0; i < N; i++) {
            uint8_t mask[16];
            EXPECT_OK(zeroth_game_legal(g, 1, states + i * S, mask, NULL));
            CHECK(actions[i] >= 0 && actions[i] < A && mask[actions[i]], "greedy %d-ply: %d",
                  plies, actions[i]);
            CHECK(values[i] >= -1 && values[i] <= 1, "greedy value %g", values[i]);
            if (plies) continue;
            double best = -2, chosen = -3;
            for (int a = 0; a < A; a++) {
                if (!mask[a]) continue;
                uint8_t child[64];
                memcpy(child, states + i * S, S);
                EXPECT_OK(zeroth_game_step(g, 1, child, &a));
                int p;
                float ret[2], v;
                EXPECT_OK(zeroth_game_players(g, 1, child, &p));
                if (p == ZEROTH_TERMINAL) {
                    int mover;
                    EXPECT_OK(zeroth_game_players(g, 1, states + i * S, &mover));
                    EXPECT_OK(zeroth_game_returns(g, 1, child, ret));
                    v = ret[mover];
                } else {
                    float cobs[64], clog[16];
                    EXPECT_OK(zeroth_game_observe(g, 1, child, cobs));
                    EXPECT_OK(zeroth_net_forward(net, 1, cobs, clog, &v));
                    v = -v;
                }
                if (v > best) best = v;
                if (a == actions[i]) chosen = v;
            }
            CHECK(fabs(chosen - best) < 1e-5 && fabs(values[i] - best) < 1e-5,
                  "position %d: greedy chose %g (value %g), the best is %g", i, chosen, values[i],
                  best);
        }
        EXPECT_FAIL(zeroth_greedy_choose(gr, N + 1, NULL, states, actions, values),
                    ZEROTH_ERR_INVALID, "n = 4");
        EXPECT_FAIL(zeroth_greedy_choose(gr, 1, (int[]){N}, states, actions, NULL),
                    ZEROTH_ERR_INVALID, "slots[0] = 3");
        zeroth_greedy_free(gr);
    }
    zeroth_greedy_t *gbad = NULL;
    EXPECT_FAIL(zeroth_greedy_new(g, net, 1, 2, &gbad), ZEROTH_ERR_INVALID, "plies");
    zeroth_game_t *c4;
    EXPECT_OK(zeroth_game_new("connect4", &c4));
    EXPECT_FAIL(zeroth_search_new(c4, net, 1, NULL, &s), ZEROTH_ERR_INVALID,
                "the net plays 'tictactoe'");
    EXPECT_FAIL(zeroth_greedy_new(c4, net, 1, 0, &gbad), ZEROTH_ERR_INVALID,
                "the net plays 'tictactoe'");
    zeroth_game_free(c4);
    free(states);
    zeroth_game_free(g);
    zeroth_net_free(net);
}

/* ---- searches over the caller's model ---- */

typedef struct caller_model {
    const zeroth_game_t *game;
    int calls;
    int fail_at;           /* the call that fails (0: none) */
    int bad_kind;          /* 0 fail with a status, 1 NaN logit, 2 value out of range */
    zeroth_search_t *self; /* for the re-entrancy check */
    zeroth_status reentry;
    bool non_decision; /* a state handed over was not a decision */
} caller_model;

static zeroth_status uniform_obs(void *user, int n, const float *obs, float *logits, float *value)
{
    caller_model *m = user;
    int A = zeroth_game_num_actions(m->game);
    (void)obs;
    m->calls++;
    memset(logits, 0, (size_t)n * A * sizeof *logits);
    for (int i = 0; i < n; i++) value[i] = 0;
    if (m->self) m->reentry = zeroth_search_run(m->self);
    if (m->fail_at && m->calls >= m->fail_at) {
        if (m->bad_kind == 0) return zeroth_fail(ZEROTH_ERR_IO, "the model server went away");
        if (m->bad_kind == 1) logits[n - 1] = NAN;
        if (m->bad_kind == 2) value[0] = 2;
    }
    return ZEROTH_OK;
}

static zeroth_status uniform_states(void *user, int n, const void *const *states, float *logits,
                                    float *value)
{
    caller_model *m = user;
    int A = zeroth_game_num_actions(m->game);
    m->calls++;
    for (int i = 0; i < n; i++) {
        int p;
        zeroth_game_players(m->game, 1, states[i], &p);
        if (p < 0) m->non_decision = true;
        value[i] = 0;
    }
    memset(logits, 0, (size_t)n * A * sizeof *logits);
    return ZEROTH_OK;
}

static void test_caller_search(void)
{
    zeroth_game_t *g;
    EXPECT_OK(zeroth_game_new("tictactoe", &g));
    if (!g) return;
    size_t S = zeroth_game_state_size(g);
    uint8_t win[64], start[64], after[64];
    EXPECT_OK(zeroth_game_from_text(g, "XX.OO.... X", win));
    EXPECT_OK(zeroth_game_reset(g, 1, start));
    caller_model m = {.game = g};
    zeroth_search_t *s = NULL;
    /* with a model that knows nothing, the search still finds the win in one */
    EXPECT_OK(zeroth_search_new_callbacks(g, uniform_obs, NULL, &m, 2, "search.algorithm=puct search.sims=200", &s));
    if (!s) {
        zeroth_game_free(g);
        return;
    }
    CHECK(zeroth_search_num_trees(s) == 2, "trees %d", zeroth_search_num_trees(s));
    uint8_t both[128];
    memcpy(both, win, S);
    memcpy(both + S, start, S);
    EXPECT_OK(zeroth_search_begin(s, 2, NULL, both));
    EXPECT_OK(zeroth_search_run(s));
    int actions[2];
    float values[2];
    int32_t visits[18];
    EXPECT_OK(zeroth_search_choose(s, 2, NULL, 0, actions));
    EXPECT_OK(zeroth_search_root_value(s, 1, NULL, values));
    EXPECT_OK(zeroth_search_visits(s, 1, (int[]){1}, visits));
    int32_t total = 0;
    for (int a = 0; a < 9; a++) total += visits[a];
    CHECK(actions[0] == 2, "X to move in XX.OO.... chose %d, not the win at 2", actions[0]);
    CHECK(values[0] > 0.5f, "the winning position's root value is %g", values[0]);
    CHECK(total >= 150, "the start position's root has %d visits of 200", total);
    CHECK(m.calls > 0, "the caller's model was never called");

    /* tree reuse: play the chosen move on tree 1, step the state, search on */
    EXPECT_OK(zeroth_search_played(s, 1, (int[]){1}, &actions[1]));
    memcpy(after, start, S);
    EXPECT_OK(zeroth_game_step(g, 1, after, &actions[1]));
    EXPECT_OK(zeroth_search_begin(s, 1, (int[]){1}, after));
    EXPECT_OK(zeroth_search_run(s));
    int reply;
    EXPECT_OK(zeroth_search_choose(s, 1, (int[]){1}, 0, &reply));
    uint8_t mask[9];
    EXPECT_OK(zeroth_game_legal(g, 1, after, mask, NULL));
    CHECK(reply >= 0 && reply < 9 && mask[reply], "the reply %d is not legal", reply);

    /* misuse: each a status and a message */
    EXPECT_FAIL(zeroth_search_begin(s, 3, NULL, both), ZEROTH_ERR_INVALID, "n = 3");
    EXPECT_FAIL(zeroth_search_begin(s, 1, (int[]){5}, win), ZEROTH_ERR_INVALID, "tree 5");
    EXPECT_FAIL(zeroth_search_begin(s, 2, (int[]){0, 0}, both), ZEROTH_ERR_INVALID, "twice");
    uint8_t over[64];
    EXPECT_OK(zeroth_game_from_text(g, "XXXOO.... O", over));
    EXPECT_FAIL(zeroth_search_begin(s, 1, NULL, over), ZEROTH_ERR_INVALID, "terminal");
    EXPECT_FAIL(zeroth_search_choose(s, 1, NULL, -1, actions), ZEROTH_ERR_INVALID, "temperature");
    EXPECT_FAIL(zeroth_search_played(s, 1, NULL, (int[]){0}), ZEROTH_ERR_INVALID, "not legal");
    EXPECT_OK(zeroth_search_begin(s, 1, NULL, win));
    EXPECT_FAIL(zeroth_search_choose(s, 1, NULL, 0, actions), ZEROTH_ERR_INVALID, "not yet run");
    EXPECT_FAIL(zeroth_search_forget(s, 1, NULL), ZEROTH_ERR_INVALID, "not yet run");
    EXPECT_OK(zeroth_search_run(s));
    EXPECT_OK(zeroth_search_forget(s, 2, NULL));
    EXPECT_FAIL(zeroth_search_policy(s, 1, NULL, (float[9]){0}), ZEROTH_ERR_INVALID,
                "not been searched");

    /* the caller's model failing, or answering nonsense */
    static const struct {
        int kind;
        zeroth_status want;
        const char *named;
    } failures[] = {
        {0, ZEROTH_ERR_IO, "the model server went away"},
        {1, ZEROTH_ERR_INVALID, "finite"},
        {2, ZEROTH_ERR_INVALID, "value 2"},
    };
    for (size_t k = 0; k < sizeof failures / sizeof failures[0]; k++) {
        m.calls = 0;
        m.fail_at = 3;
        m.bad_kind = failures[k].kind;
        EXPECT_OK(zeroth_search_begin(s, 2, NULL, both));
        EXPECT_FAIL(zeroth_search_run(s), failures[k].want, failures[k].named);
        CHECK(m.calls == 3, "the model was called %d times, not stopped at its failure", m.calls);
        EXPECT_FAIL(zeroth_search_choose(s, 1, NULL, 0, actions), ZEROTH_ERR_INVALID,
                    "not been searched");
    }
    /* after the failures the same handle searches normally */
    m.fail_at = 0;
    EXPECT_OK(zeroth_search_begin(s, 1, NULL, win));
    EXPECT_OK(zeroth_search_run(s));
    EXPECT_OK(zeroth_search_choose(s, 1, NULL, 0, actions));
    CHECK(actions[0] == 2, "after failures the search chose %d", actions[0]);
    /* a model that calls back into its own search */
    m.self = s;
    EXPECT_OK(zeroth_search_begin(s, 1, NULL, start));
    EXPECT_OK(zeroth_search_run(s));
    CHECK(m.reentry == ZEROTH_ERR_INVALID, "a re-entrant run returned %s",
          zeroth_status_name(m.reentry));
    m.self = NULL;
    zeroth_search_free(s);

    /* a states model (Gumbel), and construction errors */
    caller_model ms = {.game = g};
    EXPECT_OK(
        zeroth_search_new_callbacks(g, NULL, uniform_states, &ms, 1, "search.sims=16 search.gumbel_m=4", &s));
    if (s) {
        EXPECT_OK(zeroth_search_begin(s, 1, NULL, start));
        EXPECT_OK(zeroth_search_run(s));
        EXPECT_OK(zeroth_search_choose(s, 1, NULL, 0, actions));
        CHECK(ms.calls > 0 && !ms.non_decision, "states model: %d calls, non-decision states %d",
              ms.calls, ms.non_decision);
        zeroth_search_free(s);
    }
    EXPECT_FAIL(zeroth_search_new_callbacks(g, NULL, NULL, &m, 1, NULL, &s), ZEROTH_ERR_INVALID,
                "exactly one");
    EXPECT_FAIL(zeroth_search_new_callbacks(g, uniform_obs, uniform_states, &m, 1, NULL, &s),
                ZEROTH_ERR_INVALID, "exactly one");
    EXPECT_FAIL(zeroth_search_new_callbacks(g, uniform_obs, NULL, &m, 0, NULL, &s),
                ZEROTH_ERR_INVALID, "trees = 0");
    EXPECT_FAIL(zeroth_search_new_callbacks(g, uniform_obs, NULL, &m, 1, "search.sims=-3", &s),
                ZEROTH_ERR_INVALID, "search.sims");
    EXPECT_FAIL(zeroth_search_new_callbacks(g, uniform_obs, NULL, &m, 1, "depth=3", &s),
                ZEROTH_ERR_INVALID, "depth");
    EXPECT_FAIL(zeroth_search_new_callbacks(g, uniform_obs, NULL, &m, 1, "search.algorithm=alphabeta", &s),
                ZEROTH_ERR_INVALID, "alphabeta");
    CHECK(s == NULL, "a refused search left a handle");
    zeroth_game_free(g);
}

/* ---- searches over the caller's recurrent model ---- */

/* A recurrent model that simulates the real game: its embedding is the game
 * state itself, its evaluations uniform (logits 0, value 0), like
 * uniform_obs; `bad` makes recurrent call number fail_at answer nonsense. */
typedef struct sim_model {
    const zeroth_game_t *game;
    int calls, fail_at, bad; /* bad: 1 discount 0.5, 2 no finite logit, 3 status, 4 reward 3 */
} sim_model;

static zeroth_status sim_root(void *user, int n, const void *states, const float *obs,
                              void *embeddings, float *logits, float *value)
{
    sim_model *m = user;
    size_t S = zeroth_game_state_size(m->game);
    int A = zeroth_game_num_actions(m->game);
    (void)obs;
    memcpy(embeddings, states, (size_t)n * S);
    memset(logits, 0, (size_t)n * A * sizeof *logits);
    for (int i = 0; i < n; i++) value[i] = 0;
    return ZEROTH_OK;
}

static zeroth_status sim_recurrent(void *user, int n, const void *embeddings, const int *actions,
                                   void *next, float *logits, float *value, float *reward,
                                   float *discount)
{
    sim_model *m = user;
    size_t S = zeroth_game_state_size(m->game);
    int A = zeroth_game_num_actions(m->game);
    m->calls++;
    memcpy(next, embeddings, (size_t)n * S);
    for (int i = 0; i < n; i++) {
        uint8_t *s = (uint8_t *)next + (size_t)i * S;
        int mover, p;
        float ret[2];
        uint8_t mask[512];
        zeroth_game_players(m->game, 1, s, &mover);
        if (zeroth_game_step(m->game, 1, s, &actions[i]) != ZEROTH_OK)
            return zeroth_fail(ZEROTH_ERR_INVALID, "the search played an illegal action");
        zeroth_game_players(m->game, 1, s, &p);
        zeroth_game_returns(m->game, 1, s, ret);
        zeroth_game_legal(m->game, 1, s, mask, NULL);
        for (int a = 0; a < A; a++) logits[i * A + a] = mask[a] ? 0.0f : -INFINITY;
        value[i] = 0;
        reward[i] = p == ZEROTH_TERMINAL ? ret[mover] : 0;
        discount[i] = p == ZEROTH_TERMINAL ? 0 : (p == mover ? 1 : -1);
    }
    if (m->fail_at && m->calls == m->fail_at) {
        if (m->bad == 1) discount[0] = 0.5f;
        if (m->bad == 2)
            for (int a = 0; a < A; a++) logits[a] = -INFINITY, discount[0] = -1;
        if (m->bad == 3) return zeroth_fail(ZEROTH_ERR_IO, "the dynamics server went away");
        if (m->bad == 4) reward[0] = 3;
    }
    return ZEROTH_OK;
}

static void test_recurrent_search(void)
{
    zeroth_game_t *g;
    EXPECT_OK(zeroth_game_new("tictactoe", &g));
    if (!g) return;
    size_t S = zeroth_game_state_size(g);
    enum { T = 3 };
    uint8_t roots[T * 64];
    const char *positions[T] = {"XX.OO.... X", "......... X", "X...O.... X"};
    for (int i = 0; i < T; i++) EXPECT_OK(zeroth_game_from_text(g, positions[i], roots + i * S));
    const char *settings = "search.algorithm=puct search.sims=120";
    /* the same game and the same evaluations as the AlphaZero-shaped model:
     * the same trees, visit for visit */
    sim_model m = {.game = g};
    caller_model cm = {.game = g};
    zeroth_search_t *rec = NULL, *az = NULL;
    EXPECT_OK(zeroth_search_new_recurrent(g, S, sim_root, sim_recurrent, &m, T, settings, &rec));
    EXPECT_OK(zeroth_search_new_callbacks(g, uniform_obs, NULL, &cm, T, settings, &az));
    if (!rec || !az) {
        zeroth_search_free(rec);
        zeroth_search_free(az);
        zeroth_game_free(g);
        return;
    }
    int32_t v_rec[T * 9], v_az[T * 9];
    int actions[T];
    EXPECT_OK(zeroth_search_begin(rec, T, NULL, roots));
    EXPECT_OK(zeroth_search_run(rec));
    EXPECT_OK(zeroth_search_begin(az, T, NULL, roots));
    EXPECT_OK(zeroth_search_run(az));
    EXPECT_OK(zeroth_search_visits(rec, T, NULL, v_rec));
    EXPECT_OK(zeroth_search_visits(az, T, NULL, v_az));
    CHECK(memcmp(v_rec, v_az, sizeof v_rec) == 0,
          "the recurrent simulator's visits differ from the AlphaZero model's (tree 0 action 2: "
          "%d vs %d)",
          v_rec[2], v_az[2]);
    EXPECT_OK(zeroth_search_choose(rec, T, NULL, 0, actions));
    CHECK(actions[0] == 2, "the recurrent search chose %d, not the win at 2", actions[0]);
    CHECK(m.calls > 0, "recurrent_fn was never called");

    /* nonsense answers and failures: a status and a message, and the
     * handle searches normally afterwards */
    static const struct {
        int bad;
        zeroth_status want;
        const char *named;
    } failures[] = {
        {1, ZEROTH_ERR_INVALID, "discount 0.5"},
        {2, ZEROTH_ERR_INVALID, "no action with a finite logit"},
        {3, ZEROTH_ERR_IO, "the dynamics server went away"},
        {4, ZEROTH_ERR_INVALID, "reward 3"},
    };
    for (size_t k = 0; k < sizeof failures / sizeof failures[0]; k++) {
        m.calls = 0;
        m.fail_at = 2;
        m.bad = failures[k].bad;
        EXPECT_OK(zeroth_search_begin(rec, T, NULL, roots));
        EXPECT_FAIL(zeroth_search_run(rec), failures[k].want, failures[k].named);
        EXPECT_FAIL(zeroth_search_choose(rec, 1, NULL, 0, actions), ZEROTH_ERR_INVALID,
                    "not been searched");
    }
    m.fail_at = 0;
    EXPECT_OK(zeroth_search_begin(rec, 1, NULL, roots));
    EXPECT_OK(zeroth_search_run(rec));
    EXPECT_OK(zeroth_search_choose(rec, 1, NULL, 0, actions));
    CHECK(actions[0] == 2, "after failures the recurrent search chose %d", actions[0]);
    zeroth_search_free(rec);
    zeroth_search_free(az);

    zeroth_search_t *s = NULL;
    EXPECT_FAIL(zeroth_search_new_recurrent(g, 0, sim_root, sim_recurrent, &m, 1, NULL, &s),
                ZEROTH_ERR_INVALID, "embedding_size = 0");
    EXPECT_FAIL(zeroth_search_new_recurrent(g, S, NULL, sim_recurrent, &m, 1, NULL, &s),
                ZEROTH_ERR_INVALID, "root_fn");
    EXPECT_FAIL(zeroth_search_new_recurrent(g, S, sim_root, sim_recurrent, &m, 1, "sims=3", &s),
                ZEROTH_ERR_INVALID, "sims");
    CHECK(s == NULL, "a refused search left a handle");
    zeroth_game_free(g);
}

int main(void)
{
    snprintf(tmp_root, sizeof tmp_root, "%s/zt_api_XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmp_root)) {
        perror("mkdtemp");
        return 1;
    }
    test_basics();
    test_game_errors();
    test_connect4_batched();
    test_backgammon_chance();
    test_step_env();
    test_step_env_random();
    char run[300];
    test_runs(run, sizeof run);
    test_nets(run);
    test_caller_search();
    test_recurrent_search();
    remove_tree(tmp_root);
    return zt_test_finish("test_api");
}
