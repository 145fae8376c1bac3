/* Tests of what MuZero adds to the replay layer: records holding the action
 * taken and its reward (round trip, old records unchanged, damage refused),
 * and batches of K-step unrolls: in-game steps carry the game's actions,
 * policies and per-player outcomes, steps past the end are absorbing (no
 * policy target, outcomes alternating, reward 0; with outcome_reward the
 * winning move's reward is the outcome and the absorbing steps are worth
 * 0, which one-player games refuse), a symmetry maps every
 * step's policy and action alike, the sampler thread gives the synchronous
 * batches, and games recorded without actions are refused; a one-player
 * game (2048) unrolls to its moves' rewards and the return-to-go; batches
 * for Stochastic MuZero carry each next step's observation under the same
 * symmetry (past the end the last position's, unmasked for no step); with
 * td_steps = n the value targets are the root values n positions on, with
 * the sign of the player to move, or the outcome where the game ends
 * sooner (one player: with the points in between, discounted by gamma
 * where a discount is set, which two-player games and td_steps = 0
 * refuse); with `turns` (backgammon) each step says whether the turn passed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "replay/record.h"
#include "replay/replay.h"

#include "zt_test.h"

#define CHECK_OK(expr)                                                                             \
    do {                                                                                           \
        zt_status s_ = (expr);                                                                     \
        CHECK(s_ == ZT_OK, "%s", zt_error_message());                                              \
    } while (0)

static void test_records(zt_game *g)
{
    zt_record_layout l;
    zt_record_layout_init(&l, g);
    uint8_t s[ZT_MAX_STATE_BYTES], back[ZT_MAX_STATE_BYTES], buf[1024], plain[1024];
    g->reset(g, s);
    float policy[9] = {0.5f, 0, 0, 0, 0.5f, 0, 0, 0, 0};
    size_t n0 = zt_record_encode(&l, g, s, policy, 0.25f, true, plain);
    size_t n1 = zt_record_encode_step(&l, g, s, policy, 0.25f, true, 4, 0.0f, buf);
    CHECK(n1 == n0 + 1, "an action adds one byte (%zu -> %zu)", n0, n1);
    CHECK(zt_record_length(&l, buf, n1) == n1, "length of a record with an action");
    zt_record_view v;
    CHECK_OK(zt_record_decode(&l, g, buf, n1, back, &v));
    CHECK(v.action == 4 && v.reward == 0, "action %d reward %g", v.action, v.reward);
    CHECK(v.num_pairs == 2 && v.root_value == 0.25f, "the policy and value survive");
    CHECK_OK(zt_record_decode(&l, g, plain, n0, back, &v));
    CHECK(v.action == -1 && v.reward == 0, "a record without an action says so");
    size_t n2 = zt_record_encode_step(&l, g, s, NULL, -0.5f, false, 8, 1.5f, buf);
    CHECK_OK(zt_record_decode(&l, g, buf, n2, back, &v));
    CHECK(v.action == 8 && v.reward == 1.5f && v.num_pairs == 0, "action %d reward %g", v.action,
          v.reward);
    /* damage: the action on an occupied cell; a reward without an action */
    uint8_t t[ZT_MAX_STATE_BYTES];
    memcpy(t, s, g->state_size);
    g->apply(g, t, 4);
    size_t n3 = zt_record_encode_step(&l, g, t, NULL, 0, false, 0, 0.0f, buf);
    buf[n3 - 1] = 4;
    CHECK(zt_record_decode(&l, g, buf, n3, back, &v) == ZT_ERR_CORRUPT, "an illegal action");
    buf[0] = RECORD_REWARD;
    CHECK(zt_record_length(&l, buf, n3) == 0, "a reward without an action");
}

/* A fixed game: X 4, O 0, X 2, O 6, X 3, O 8, X 5 (row 3-4-5): seven plies,
 * X (player 0) wins. */
static const int GAME[] = {4, 0, 2, 6, 3, 8, 5};
enum { PLIES = 7 };

/* Adds the game (policies one-hot on the move played, every other position
 * a fast search) to rb; states[i] gets position i. */
static void add_game(zt_game *g, zt_replay *rb, bool actions, uint8_t states[][ZT_MAX_STATE_BYTES])
{
    zt_replay_traj *t;
    CHECK_OK(zt_replay_traj_new(g, &t));
    uint8_t s[ZT_MAX_STATE_BYTES];
    g->reset(g, s);
    for (int i = 0; i < PLIES; i++) {
        memcpy(states[i], s, g->state_size);
        float policy[9] = {0};
        policy[GAME[i]] = 1;
        bool full = i % 3 != 1;
        zt_replay_traj_add_step(t, s, full ? policy : NULL, 0.1f * (float)i, full,
                                actions ? GAME[i] : -1, 0.0f);
        g->apply(g, s, GAME[i]);
    }
    CHECK(g->current_player(g, s) == ZT_TERMINAL, "the test game ends");
    CHECK_OK(zt_replay_add_game(rb, t, 1.0f, NULL));
    zt_replay_traj_free(t);
}

/* With `outcome` (outcome_reward): the winning move's reward is the
 * winner's 1 and the absorbing steps are worth 0. */
static void check_batch(zt_game *g, const zt_replay_batch *b, uint8_t states[][ZT_MAX_STATE_BYTES],
                        bool outcome)
{
    int K = b->unroll, A = g->num_actions;
    for (int r = 0; r < b->size; r++) {
        int ply = (int)b->index[r], sym = b->sym[r];
        for (int k = 0; k <= K; k++) {
            size_t row = (size_t)r * (K + 1) + k;
            int at = ply + k;
            const float *pol = b->u_policy + row * A;
            /* the player to move at step k: X at even plies, turns alternating past the end */
            int player = at % 2;
            float z = outcome && at >= PLIES ? 0.0f : player == 0 ? 1.0f : -1.0f;
            CHECK(b->u_value[row] == z, "row %d step %d: value %g, want %g", r, k, b->u_value[row],
                  z);
            if (at < PLIES) {
                bool full = at % 3 != 1;
                int want = sym ? g->sym_action(g, sym, GAME[at]) : GAME[at];
                CHECK(b->u_mask[row] == full, "row %d step %d: mask", r, k);
                for (int a = 0; a < A; a++)
                    CHECK(pol[a] == (full && a == want ? 1.0f : 0.0f), "row %d step %d: policy", r,
                          k);
                if (k < K) {
                    CHECK(b->u_action[(size_t)r * K + k] == want,
                          "row %d step %d: action %d, want %d", r, k,
                          b->u_action[(size_t)r * K + k], want);
                    /* the last move is X's win */
                    float rw = outcome && at == PLIES - 1 ? 1.0f : 0.0f;
                    CHECK(b->u_reward[(size_t)r * K + k] == rw,
                          "row %d step %d: reward %g, want %g", r, k,
                          b->u_reward[(size_t)r * K + k], rw);
                }
            } else {
                CHECK(b->u_mask[row] == 0, "row %d step %d past the end: no policy target", r, k);
                for (int a = 0; a < A; a++) CHECK(pol[a] == 0, "past the end: policy zero");
                if (k < K) {
                    int a = b->u_action[(size_t)r * K + k];
                    CHECK(a >= 0 && a < A && b->u_reward[(size_t)r * K + k] == 0,
                          "past the end: action %d", a);
                }
            }
        }
        /* step 0 is the ordinary row */
        CHECK(b->value[r] == b->u_value[(size_t)r * (K + 1)], "step 0's value is the row's");
        (void)states;
    }
}

static void test_unroll(zt_game *g)
{
    zt_replay_config c;
    zt_replay_config_default(&c);
    c.capacity = 1000;
    c.window_c = 0;
    zt_replay *rb;
    CHECK_OK(zt_replay_new(g, &c, &rb));
    uint8_t states[PLIES][ZT_MAX_STATE_BYTES];
    add_game(g, rb, true, states);
    zt_replay_position pos;
    CHECK_OK(zt_replay_get(rb, 2, &pos, NULL));
    CHECK(pos.action == GAME[2] && pos.reward == 0, "stored action %d", pos.action);
    zt_replay_batch b;
    CHECK_OK(zt_replay_batch_init_unroll(&b, g, 64, false, &(zt_replay_unroll){.steps = 5}));
    zt_rng rng;
    zt_rng_seed(&rng, 3, 1);
    CHECK_OK(zt_replay_sample(rb, &rng, &b));
    bool near_end = false, sym = false;
    for (int r = 0; r < b.size; r++) {
        near_end |= b.index[r] + 5 >= PLIES;
        sym |= b.sym[r] != 0;
    }
    CHECK(near_end && sym, "the batch covers the game's end and symmetries");
    check_batch(g, &b, states, false);
    /* the MuZero paper's board games: the winning move's reward is the
     * outcome, the absorbing steps 0 */
    zt_replay_batch ob;
    CHECK_OK(zt_replay_batch_init_unroll(&ob, g, 64, false,
                                         &(zt_replay_unroll){.steps = 5, .outcome_reward = true}));
    zt_rng_seed(&rng, 3, 1);
    CHECK_OK(zt_replay_sample(rb, &rng, &ob));
    check_batch(g, &ob, states, true);
    zt_replay_batch_free(&ob);
    /* the sampler thread draws the same batches */
    zt_rng r1, r2;
    zt_rng_seed(&r1, 9, 9);
    r2 = r1;
    zt_replay_sampler *sp;
    CHECK_OK(
        zt_replay_sampler_new_unroll(rb, 64, false, &(zt_replay_unroll){.steps = 5}, &r1, &sp));
    const zt_replay_batch *tb;
    CHECK_OK(zt_replay_sampler_next(sp, &tb));
    CHECK_OK(zt_replay_sample(rb, &r2, &b));
    CHECK(tb && memcmp(tb->u_action, b.u_action, 64 * 5 * sizeof(int32_t)) == 0 &&
              memcmp(tb->u_value, b.u_value, 64 * 6 * sizeof(float)) == 0,
          "sampler batch differs from the synchronous one");
    zt_replay_sampler_free(sp);
    zt_replay_batch_free(&b);

    /* with the next observations */
    CHECK_OK(zt_replay_batch_init_unroll(&b, g, 64, false,
                                         &(zt_replay_unroll){.steps = 5, .next_obs = true}));
    CHECK(b.u_next_obs && b.u_chance_mask, "next observations allocated");
    CHECK_OK(zt_replay_sample(rb, &rng, &b));
    check_batch(g, &b, states, false);
    size_t obs_n = (size_t)b.obs_size;
    float *want = malloc(obs_n * sizeof(float));
    int in_game = 0, past = 0;
    for (int r = 0; r < b.size; r++) {
        int ply = (int)b.index[r], sy = b.sym[r];
        for (int k = 0; k < 5; k++) {
            int at = ply + k + 1, p = at < PLIES ? at : PLIES - 1;
            uint8_t seen[ZT_MAX_STATE_BYTES];
            if (sy)
                g->sym_state(g, sy, states[p], seen);
            else
                memcpy(seen, states[p], g->state_size);
            g->observe(g, seen, want);
            const float *got = b.u_next_obs + ((size_t)r * 5 + k) * obs_n;
            CHECK(memcmp(got, want, obs_n * sizeof(float)) == 0,
                  "row %d step %d: the observation of position %d", r, k, p);
            CHECK(b.u_chance_mask[(size_t)r * 5 + k] == (at < PLIES), "row %d step %d: chance mask",
                  r, k);
            in_game += at < PLIES;
            past += at >= PLIES;
        }
    }
    CHECK(in_game > 0 && past > 0, "next observations in and past the game (%d, %d)", in_game,
          past);
    free(want);
    zt_replay_batch_free(&b);
    zt_replay_free(rb);

    /* value targets bootstrapped 2 positions on: add_game stored the root
     * value 0.1 * ply at every ply; ply + 2 has the same player to move */
    CHECK_OK(zt_replay_batch_init_unroll(&b, g, 64, false,
                                         &(zt_replay_unroll){.steps = 5, .td_steps = 2}));
    CHECK_OK(zt_replay_new(g, &c, &rb));
    add_game(g, rb, true, states);
    CHECK_OK(zt_replay_sample(rb, &rng, &b));
    int boot = 0, ret = 0;
    for (int r = 0; r < b.size; r++)
        for (int k = 0; k <= 5; k++) {
            int at = (int)b.index[r] + k;
            float got = b.u_value[(size_t)r * 6 + k], wv = at % 2 == 0 ? 1.0f : -1.0f;
            if (at + 2 < PLIES) {
                wv = 0.1f * (float)(at + 2);
                boot++;
            } else {
                ret++;
            }
            CHECK(fabsf(got - wv) < 2e-3f, "row %d step %d (ply %d): td value %g, want %g", r, k,
                  at, got, wv);
        }
    CHECK(boot > 0 && ret > 0, "bootstrapped and returned values (%d, %d)", boot, ret);
    zt_replay_batch_free(&b);
    zt_replay_free(rb);

    /* a game recorded without actions cannot be unrolled */
    CHECK_OK(zt_replay_new(g, &c, &rb));
    add_game(g, rb, false, states);
    CHECK_OK(zt_replay_batch_init_unroll(&b, g, 8, false, &(zt_replay_unroll){.steps = 5}));
    zt_status st = zt_replay_sample(rb, &rng, &b);
    CHECK(st == ZT_ERR_CORRUPT, "unrolling a game without actions: %d", (int)st);
    printf("refused: %s\n", zt_error_message());
    zt_replay_batch_free(&b);
    zt_replay_free(rb);
}

/* 2048: a game played at random and recorded as the actor records it
 * (each move's reward the points its merges bank, the spawn after it
 * paying nothing); every unrolled step's value is the return-to-go (the
 * points of the moves from it on, added up here by hand) and its reward
 * the move's points, both through zt_game_value_to_net; past the end the
 * value and the reward are 0. */
static void test_one_player_unroll(void)
{
    zt_game *g;
    CHECK_OK(zt_game_new("2048", NULL, &g));
    if (!g) return;
    /* outcome rewards are a two-player game's */
    zt_replay_batch refused;
    CHECK(zt_replay_batch_init_unroll(&refused, g, 4, false,
                                      &(zt_replay_unroll){.steps = 2, .outcome_reward = true}) ==
              ZT_ERR_INVALID,
          "2048 took outcome rewards");
    enum { MAX = 4096 };
    static double points[MAX]; /* the points of the move from position i */
    static int spawn[MAX];     /* the index of the spawn after move i among those listed */
    static float root[MAX];    /* the root value stored with position i */
    zt_replay_traj *t;
    CHECK_OK(zt_replay_traj_new(g, &t));
    zt_rng rng;
    zt_rng_seed(&rng, 11, 2);
    uint8_t s[ZT_MAX_STATE_BYTES], before[ZT_MAX_STATE_BYTES];
    g->reset(g, s);
    int n = 0;
    float policy[ZT_MAX_ACTIONS];
    for (;;) {
        int p = g->current_player(g, s);
        if (p == ZT_TERMINAL) break;
        if (p == ZT_CHANCE) {
            int outcomes[ZT_MAX_CHANCE_OUTCOMES];
            float probs[ZT_MAX_CHANCE_OUTCOMES];
            int k = g->chance_outcomes(g, s, outcomes, probs);
            float r0[2], r1[2];
            g->returns(g, s, r0);
            int i = zt_rng_categorical(&rng, probs, k);
            if (n > 0) spawn[n - 1] = i;
            g->apply(g, s, outcomes[i]);
            g->returns(g, s, r1);
            CHECK(r0[0] == r1[0], "a spawn pays nothing");
            continue;
        }
        CHECK(n < MAX, "the test game is too long");
        if (n >= MAX) break;
        uint16_t legal[ZT_MAX_ACTIONS];
        int k = g->legal(g, s, legal);
        int a = legal[zt_rng_below(&rng, (uint32_t)k)];
        memset(policy, 0, sizeof policy);
        policy[a] = 1;
        memcpy(before, s, g->state_size);
        float r0[2], r1[2];
        g->returns(g, s, r0);
        g->apply(g, s, a);
        g->returns(g, s, r1);
        points[n] = (double)r1[0] - r0[0];
        /* root values exact in a half float, so the bootstraps add up exactly */
        root[n] = (float)(n % 7) * 0.125f;
        zt_replay_traj_add_step(t, before, policy, root[n], true, a,
                                zt_game_reward(g, before, s));
        n++;
    }
    CHECK(n > 20, "a game of %d moves", n);
    double total = 0;
    for (int i = 0; i < n; i++) total += points[i];
    float final[2];
    g->returns(g, s, final);
    CHECK(total == final[0], "the moves' points %g add up to the final score %g", total, final[0]);
    zt_replay_config c;
    zt_replay_config_default(&c);
    c.capacity = 100000;
    c.window_c = 0;
    zt_replay *rb;
    CHECK_OK(zt_replay_new(g, &c, &rb));
    CHECK_OK(zt_replay_add_game(rb, t, zt_game_value_of(g, s, 0), NULL));
    enum { K = 5, B = 256 };
    /* td = 3: the points of the next 3 moves and the root value stored 3
     * positions on, or the points of all the moves left where fewer follow;
     * with a discount gamma = 0.9 the i-th move's points weigh gamma^i and
     * the root value gamma^3 */
    static const struct {
        int td;
        float gamma;
    } cases[] = {{0, 1}, {3, 1}, {3, 0.9f}};
    for (int ci = 0; ci < 3; ci++) {
        int td = cases[ci].td;
        double gamma = cases[ci].gamma;
        zt_replay_batch b;
        CHECK_OK(zt_replay_batch_init_unroll(
            &b, g, B, false,
            &(zt_replay_unroll){.steps = K, .td_steps = td, .discount = cases[ci].gamma}));
        CHECK_OK(zt_replay_sample(rb, &rng, &b));
        int bad = 0;
        bool near_end = false;
        for (int r = 0; r < B && bad < 5; r++) {
            int ply = (int)b.index[r];
            near_end |= ply + K >= n;
            for (int k = 0; k <= K; k++) {
                int at = ply + k;
                size_t row = (size_t)r * (K + 1) + k;
                /* by hand: the points of the moves from `at` on, discounted */
                double to_go = 0, w = 1;
                int end = td > 0 && at + td < n ? at + td : n;
                for (int i = at; i < end; i++, w *= gamma) to_go += w * points[i] / g->max_return;
                if (td > 0 && at + td < n) to_go += w * root[at + td];
                float want = at < n ? zt_game_value_to_net(g, (float)to_go) : 0.0f;
                /* (with a discount the sum is of the records' half-float rewards) */
                float tol = gamma < 1 ? 2e-3f : 1e-6f;
                bool ok = fabsf(b.u_value[row] - want) <= tol * (1 + fabsf(want)) &&
                          (at < n || b.u_mask[row] == 0);
                CHECK(ok, "td %d gamma %g row %d step %d (move %d of %d): value %g, want h(%g) = %g",
                      td, gamma, r, k, at, n, b.u_value[row], to_go, want);
                bad += !ok;
                if (k == K) break;
                float reward = b.u_reward[(size_t)r * K + k];
                /* the record keeps the reward as a half float */
                float want_r =
                    at < n ? zt_game_value_to_net(g, (float)(points[at] / g->max_return)) : 0.0f;
                ok = fabsf(reward - want_r) <= 2e-3f * want_r && (want_r > 0) == (reward > 0);
                CHECK(ok, "row %d step %d: reward %g, want h(%g points) = %g", r, k, reward,
                      at < n ? points[at] : 0.0, want_r);
                bad += !ok;
            }
            CHECK(td > 0 || b.value[r] == b.u_value[(size_t)r * (K + 1)],
                  "step 0's value is the row's");
        }
        CHECK(near_end, "the batch covers the game's end");
        printf("2048 unroll, td_steps %d, discount %g: %d moves, %g points; values are the "
               "points %s\n",
               td, gamma, n, total, td ? "of the next moves and a bootstrap" : "still to come");
        zt_replay_batch_free(&b);
    }
    zt_replay_free(rb);
    /* a discount needs the n-step targets and one player */
    zt_replay_batch nb;
    CHECK(zt_replay_batch_init_unroll(&nb, g, 4, false,
                                      &(zt_replay_unroll){.steps = K, .discount = 0.9f}) !=
                  ZT_OK &&
              strstr(zt_error_message(), "td_steps > 0"),
          "a discount without td_steps: %s", zt_error_message());
    zt_game *ttt;
    CHECK_OK(zt_game_new("tictactoe", NULL, &ttt));
    if (ttt) {
        CHECK(zt_replay_batch_init_unroll(
                  &nb, ttt, 4, false,
                  &(zt_replay_unroll){.steps = K, .td_steps = 2, .discount = 0.9f}) != ZT_OK,
              "a discount in a two-player game was taken");
        zt_game_free(ttt);
    }
    /* the game's chance outcomes as codes: 1 + the spawn's index after each
     * move (unmapped rows), 0 past the end; under symmetries within 1..30 */
    for (int augment = 0; augment <= 1; augment++) {
        c.augment = augment;
        CHECK_OK(zt_replay_new(g, &c, &rb));
        CHECK_OK(zt_replay_add_game(rb, t, zt_game_value_of(g, s, 0), NULL));
        zt_replay_batch b;
        CHECK_OK(zt_replay_batch_init_unroll(
            &b, g, B, false,
            &(zt_replay_unroll){.steps = K, .next_obs = true, .chance_labels = true}));
        CHECK_OK(zt_replay_sample(rb, &rng, &b));
        int bad = 0, mapped = 0;
        for (int r = 0; r < B && bad < 5; r++) {
            mapped += b.sym[r] != 0;
            for (int k = 0; k < K; k++) {
                int at = (int)b.index[r] + k, got = b.u_chance_code[(size_t)r * K + k];
                bool ok = at + 1 >= n     ? got == 0
                          : b.sym[r] == 0 ? got == 1 + spawn[at]
                                          : got >= 1 && got <= 30;
                CHECK(ok, "row %d step %d (move %d of %d, symmetry %d): code %d, spawn %d", r, k,
                      at, n, b.sym[r], got, at < n ? spawn[at] : -1);
                bad += !ok;
            }
        }
        CHECK(augment == 0 || mapped > 0, "no row under a symmetry");
        zt_replay_batch_free(&b);
        zt_replay_free(rb);
    }
    zt_replay_traj_free(t);
    zt_game_free(g);
}

/* Backgammon: a game played at random, recorded as the actor records it
 * (decision positions only; the dice are rolled between them). With
 * `turns` every step's to-play target says whether the player to move
 * changed since the step before (several checker moves by one player, then
 * a roll; a roll the other side cannot play hands the turn straight back),
 * and past the end turns alternate, as the value targets, whose signs
 * follow the recorded players, assume. */
static void test_turn_targets(void)
{
    zt_game *g;
    CHECK_OK(zt_game_new("backgammon", NULL, &g));
    if (!g) return;
    enum { MAX = 8192 };
    static int player[MAX];
    static bool rolled[MAX]; /* dice rolled after move i */
    zt_replay_traj *t;
    CHECK_OK(zt_replay_traj_new(g, &t));
    zt_rng rng;
    zt_rng_seed(&rng, 5, 3);
    uint8_t s[ZT_MAX_STATE_BYTES], before[ZT_MAX_STATE_BYTES];
    g->reset(g, s);
    int n = 0;
    float policy[ZT_MAX_ACTIONS];
    for (;;) {
        int p = g->current_player(g, s);
        if (p == ZT_TERMINAL) break;
        if (p == ZT_CHANCE) {
            int outcomes[ZT_MAX_CHANCE_OUTCOMES];
            float probs[ZT_MAX_CHANCE_OUTCOMES];
            int k = g->chance_outcomes(g, s, outcomes, probs);
            g->apply(g, s, outcomes[zt_rng_categorical(&rng, probs, k)]);
            if (n > 0) rolled[n - 1] = true;
            continue;
        }
        CHECK(n < MAX, "the test game is too long");
        if (n >= MAX) break;
        uint16_t legal[ZT_MAX_ACTIONS];
        int k = g->legal(g, s, legal);
        int a = legal[zt_rng_below(&rng, (uint32_t)k)];
        memset(policy, 0, sizeof policy);
        policy[a] = 1;
        memcpy(before, s, g->state_size);
        g->apply(g, s, a);
        player[n++] = p;
        zt_replay_traj_add_step(t, before, policy, 0, true, a, zt_game_reward(g, before, s));
    }
    int same = 0, passed = 0;
    for (int i = 1; i < n; i++) {
        if (player[i] == player[i - 1])
            same++;
        else
            passed++;
    }
    CHECK(same > 10 && passed > 10, "a game of %d moves: %d within a turn, %d passing it", n,
          same, passed);
    zt_replay_config c;
    zt_replay_config_default(&c);
    c.capacity = 100000;
    c.window_c = 0;
    zt_replay *rb;
    CHECK_OK(zt_replay_new(g, &c, &rb));
    float return0 = zt_game_value_of(g, s, 0);
    CHECK_OK(zt_replay_add_game(rb, t, return0, NULL));
    enum { K = 5, B = 512 };
    zt_replay_batch b;
    CHECK_OK(zt_replay_batch_init_unroll(&b, g, B, false,
                                         &(zt_replay_unroll){.steps = K, .turns = true}));
    CHECK(b.u_turn != NULL, "a batch with turns has to-play targets");
    CHECK_OK(zt_replay_sample(rb, &rng, &b));
    int bad = 0, ones = 0, zeros = 0;
    bool near_end = false;
    for (int r = 0; r < B && bad < 5; r++) {
        int ply = (int)b.index[r], pl = player[ply];
        near_end |= ply + K >= n;
        for (int k = 0; k <= K; k++) {
            int at = ply + k;
            if (k > 0) {
                /* the player at step k: the recorded one, alternating past the end */
                pl = at < n ? player[at] : 1 - pl;
                float want = at < n ? (float)(player[at] != player[at - 1]) : 1.0f;
                float got = b.u_turn[(size_t)r * K + (size_t)(k - 1)];
                bool ok = got == want;
                CHECK(ok, "row %d step %d (move %d of %d): turn target %g, want %g", r, k, at, n,
                      got, want);
                bad += !ok;
                if (got == 1)
                    ones++;
                else
                    zeros++;
            }
            float z = pl == 0 ? return0 : -return0;
            bool ok = b.u_value[(size_t)r * (K + 1) + (size_t)k] == z;
            CHECK(ok, "row %d step %d: value %g, want %g for player %d", r, k,
                  b.u_value[(size_t)r * (K + 1) + (size_t)k], z, pl);
            bad += !ok;
        }
    }
    CHECK(near_end && ones > 0 && zeros > 0, "the batch covers the end and both targets (%d, %d)",
          ones, zeros);
    printf("backgammon unroll: %d moves, %d within a turn, %d passing it; targets %d / %d\n", n,
           same, passed, zeros, ones);
    zt_replay_batch_free(&b);
    /* the game's chance outcomes as codes: 0 within a turn, a roll 1..21
     * wherever dice were rolled between two moves */
    CHECK_OK(zt_replay_batch_init_unroll(
        &b, g, B, false,
        &(zt_replay_unroll){.steps = K, .next_obs = true, .chance_labels = true}));
    CHECK_OK(zt_replay_sample(rb, &rng, &b));
    int within = 0, rolls = 0;
    bad = 0;
    for (int r = 0; r < B && bad < 5; r++)
        for (int k = 0; k < K; k++) {
            int at = (int)b.index[r] + k, got = b.u_chance_code[(size_t)r * K + k];
            bool ok = at + 1 >= n ? got == 0 : rolled[at] ? got >= 1 && got <= 21 : got == 0;
            CHECK(ok, "row %d step %d (move %d of %d): code %d, rolled %d", r, k, at, n, got,
                  at < n ? rolled[at] : -1);
            bad += !ok;
            if (at + 1 < n) rolled[at] ? rolls++ : within++;
        }
    CHECK(within > 0 && rolls > 0, "codes within turns (%d) and after rolls (%d)", within, rolls);
    zt_replay_batch_free(&b);
    /* without `turns` there are none */
    CHECK_OK(zt_replay_batch_init_unroll(&b, g, 4, false, &(zt_replay_unroll){.steps = K}));
    CHECK(b.u_turn == NULL, "a batch without turns has no to-play targets");
    zt_replay_batch_free(&b);
    zt_replay_free(rb);
    zt_replay_traj_free(t);
    zt_game_free(g);
}

int main(void)
{
    zt_game *g;
    CHECK_OK(zt_game_new("tictactoe", NULL, &g));
    if (!g) return zt_test_finish("test_replay_unroll");
    test_records(g);
    test_unroll(g);
    zt_game_free(g);
    test_one_player_unroll();
    test_turn_targets();
    return zt_test_finish("test_replay_unroll");
}
