/* Greedy move choice (agent/greedy.h): in backgammon, over an evaluator
 * that values positions by the pip race, the chosen turn is a play of
 * highest value among every complete play the rules allow (enumerated
 * independently by zt_bg_plays), its value is that play's, and the turn's
 * later checker moves come from the plan without another network call; in
 * tic-tac-toe over the exact oracle, greedy play by both sides draws; an
 * actor with selfplay.fast_moves = greedy plays most moves without search
 * and its games still end and reach the replay buffer; over a net that
 * values chance states, every turn end costs one evaluation and self-play
 * records the positions before the rolls as value targets. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/az_model.h"
#include "agent/evaluators.h"
#include "core/alloc.h"
#include "core/rng.h"
#include "game/backgammon.h"
#include "selfplay/actor.h"
#include "agent/greedy.h"

#include "zt_test.h"

static int pips(const uint8_t *side)
{
    int n = 0;
    for (int i = 0; i < 25; i++) n += side[i] * (i + 1);
    return n;
}

/* The race for the player to move: (opponent's pips - own pips) / 400,
 * the same whatever the dice. */
static float race_value(const bg_state *s)
{
    return (float)(pips(s->board[!s->turn]) - pips(s->board[s->turn])) / 400.0f;
}

static zt_status race_eval(void *ctx, int B, const void *const *states, float *logits,
                           float *value)
{
    const zt_game *g = ctx;
    memset(logits, 0, (size_t)B * (size_t)g->num_actions * sizeof *logits);
    for (int i = 0; i < B; i++) value[i] = race_value(states[i]);
    return ZT_OK;
}

static zt_status unused_eval(void *ctx, int B, const float *obs, float *logits, float *value)
{
    (void)ctx, (void)B, (void)obs, (void)logits, (void)value;
    return zt_fail(ZT_ERR_INVALID, "observations asked of a state evaluator");
}

/* The race as a state evaluator (with chance_values, positions before a
 * roll valued too: the race is the same). */
static zt_evaluator race_evaluator(const zt_game *g, bool chance_values)
{
    return (zt_evaluator){.ctx = (void *)g,
                          .eval = unused_eval,
                          .eval_states = race_eval,
                          .chance_values = chance_values};
}

/* Greedy play for one game over the race, max_batch positions a network
 * call. */
static zt_greedy *race_greedy(const zt_game *g, bool chance_values, int max_batch, int plies)
{
    zt_evaluator ev = race_evaluator(g, chance_values);
    zt_greedy *gr = NULL;
    CHECK(zt_greedy_new(g, &ev, 1, max_batch, plies, &gr) == ZT_OK, "%s", zt_error_message());
    return gr;
}

/* Rolls the dice where s is a chance node; false where a player is to move. */
static bool roll(const zt_game *g, bg_state *s, zt_rng *rng)
{
    if (g->current_player(g, s) != ZT_CHANCE) return false;
    int outcomes[ZT_MAX_CHANCE_OUTCOMES];
    float probs[ZT_MAX_CHANCE_OUTCOMES];
    int n = g->chance_outcomes(g, s, outcomes, probs);
    g->apply(g, s, outcomes[zt_rng_categorical(rng, probs, n)]);
    return true;
}

/* chance_values: the evaluator values positions before a roll too (the
 * race is the same), so every turn end takes one evaluation, not 21. */
static void test_backgammon(uint64_t seed, bool chance_values)
{
    zt_game *g;
    if (zt_game_new("backgammon", NULL, &g) != ZT_OK) {
        CHECK(0, "backgammon: %s", zt_error_message());
        return;
    }
    /* a small batch, so that a turn's positions take several calls */
    zt_greedy *gr = race_greedy(g, chance_values, 37, 0);
    bg_playlist *pl = zt_xmalloc(sizeof *pl);
    zt_rng rng;
    zt_rng_seed(&rng, seed, 1);
    int turns = 0, hits = 0;
    for (int game = 0; game < 6; game++) {
        bg_state s;
        zt_bg_reset(&s);
        while (g->current_player(g, &s) != ZT_TERMINAL) {
            if (roll(g, &s, &rng)) continue;
            /* Every complete play, and the best race value after it. */
            zt_bg_plays(&s, pl);
            float best = -2;
            int open_ends = 0; /* plays that do not end the game */
            for (int i = 0; i < pl->count; i++) {
                bg_state after = pl->plays[i].after;
                open_ends += !zt_game_is_terminal(g, &after);
                float v = zt_game_is_terminal(g, &after) ? zt_game_value_of(g, &after, s.turn)
                                                          : -race_value(&after);
                /* after.turn is the opponent (to roll): its race negated */
                if (v > best) best = v;
            }
            int mover = s.turn, action;
            float value;
            uint64_t calls = zt_greedy_calls(gr), evals = zt_greedy_evaluations(gr);
            CHECK(zt_greedy_choose(gr, 0, &s, &action, &value) == ZT_OK, "%s", zt_error_message());
            uint64_t valued = zt_greedy_evaluations(gr) - evals;
            if (chance_values)
                CHECK(valued == 0 || valued == (uint64_t)open_ends,
                      "turn %d: %llu evaluations for %d ends before a roll", turns,
                      (unsigned long long)valued, open_ends);
            else
                CHECK(valued == 0 || valued > (uint64_t)open_ends,
                      "turn %d: %llu evaluations for %d ends, not their rolls'", turns,
                      (unsigned long long)valued, open_ends);
            CHECK(fabsf(value - best) < 1e-5f, "turn %d: greedy value %g, best play %g", turns,
                  value, best);
            uint64_t after_first = zt_greedy_calls(gr);
            g->apply(g, &s, action);
            while (g->current_player(g, &s) == mover) {
                float v2;
                CHECK(zt_greedy_choose(gr, 0, &s, &action, &v2) == ZT_OK && v2 == value,
                      "turn %d: the rest of the plan", turns);
                g->apply(g, &s, action);
            }
            CHECK(zt_greedy_calls(gr) == after_first, "turn %d: the plan was valued again", turns);
            hits += after_first > calls;
            /* the turn ended in a position worth the best play's value */
            float got = zt_game_is_terminal(g, &s) ? zt_game_value_of(g, &s, mover)
                                                   : -race_value(&s);
            CHECK(fabsf(got - best) < 1e-6f, "turn %d: played to %g, best %g", turns, got, best);
            turns++;
        }
    }
    printf("backgammon%s: %d turns chosen greedily (%d valued), %llu positions in %llu calls\n",
           chance_values ? " (chance values)" : "", turns, hits, (unsigned long long)zt_greedy_evaluations(gr),
           (unsigned long long)zt_greedy_calls(gr));
    CHECK(turns > 100, "only %d turns", turns);
    free(pl);
    zt_greedy_free(gr);
    zt_game_free(g);
}

/* The race value, for `who`, of a position where `who`'s turn has just
 * ended (chance: a roll comes next) or the game is over. */
static float end_value(const zt_game *g, const bg_state *s, int who)
{
    if (zt_game_is_terminal(g, s)) return zt_game_value_of(g, s, who);
    return s->turn == who ? race_value(s) : -race_value(s);
}

/* One ply deeper by brute force: the expectation over the opponent's rolls
 * of the mover's value after the opponent's best play (every complete play
 * by zt_bg_plays), from position `end` where the mover's turn ended. */
static double one_ply_value(const zt_game *g, const bg_state *end, int mover, bg_playlist *pl)
{
    if (zt_game_is_terminal(g, end)) return zt_game_value_of(g, end, mover);
    int outcomes[ZT_MAX_CHANCE_OUTCOMES];
    float probs[ZT_MAX_CHANCE_OUTCOMES];
    int n = g->chance_outcomes(g, end, outcomes, probs);
    double v = 0;
    for (int i = 0; i < n; i++) {
        bg_state r = *end;
        g->apply(g, &r, outcomes[i]);
        int opp = g->current_player(g, &r);
        if (opp < 0) { /* no move: the mover rolls next, the race stands */
            v += probs[i] * end_value(g, &r, mover);
            continue;
        }
        zt_bg_plays(&r, pl);
        float best = -2;
        for (int k = 0; k < pl->count; k++) {
            float o = end_value(g, &pl->plays[k].after, opp);
            if (o > best) best = o;
        }
        v -= probs[i] * best;
    }
    return v;
}

/* Greedy play one ply deeper (zt_greedy_new's plies = 1) over the race
 * evaluator: the value of each chosen turn is, to float rounding, the brute
 * force's one-ply value of the position it ends in; it is at least the
 * one-ply value of some play best at 0 ply (the best of those goes on to
 * the lookahead) and at most the best one-ply value of all plays, which it
 * is wherever the turn has at most 8 plays; the turn follows its plan. */
static void test_lookahead(uint64_t seed, bool chance_values)
{
    zt_game *g;
    if (zt_game_new("backgammon", NULL, &g) != ZT_OK) {
        CHECK(0, "backgammon: %s", zt_error_message());
        return;
    }
    zt_evaluator ev = race_evaluator(g, chance_values);
    zt_greedy *two = NULL;
    CHECK(zt_greedy_new(g, &ev, 1, 61, 2, &two) == ZT_ERR_INVALID && !two, "2 plies were accepted");
    zt_greedy *gr = race_greedy(g, chance_values, 61, 1);
    bg_playlist *pl = zt_xmalloc(sizeof *pl), *scratch = zt_xmalloc(sizeof *scratch);
    double *v1 = zt_xmalloc(BG_MAX_PLAYS * sizeof *v1);
    zt_rng rng;
    zt_rng_seed(&rng, seed, 2);
    int turns = 0, exact = 0, differs = 0;
    for (int game = 0; game < 2; game++) {
        bg_state s;
        zt_bg_reset(&s);
        while (g->current_player(g, &s) != ZT_TERMINAL) {
            if (roll(g, &s, &rng)) continue;
            int mover = s.turn;
            zt_bg_plays(&s, pl);
            float best0 = -2;
            for (int i = 0; i < pl->count; i++) {
                float v0 = end_value(g, &pl->plays[i].after, mover);
                if (v0 > best0) best0 = v0;
            }
            double best1 = -2, floor1 = 2; /* floor: the worst of the plays best at 0 ply */
            int argbest0 = -1;
            for (int i = 0; i < pl->count; i++) {
                v1[i] = one_ply_value(g, &pl->plays[i].after, mover, scratch);
                if (v1[i] > best1) best1 = v1[i];
                if (end_value(g, &pl->plays[i].after, mover) == best0) {
                    if (v1[i] < floor1) floor1 = v1[i];
                    if (argbest0 < 0) argbest0 = i;
                }
            }
            int action;
            float value;
            CHECK(zt_greedy_choose(gr, 0, &s, &action, &value) == ZT_OK, "%s", zt_error_message());
            g->apply(g, &s, action);
            while (g->current_player(g, &s) == mover) {
                float v2;
                CHECK(zt_greedy_choose(gr, 0, &s, &action, &v2) == ZT_OK && v2 == value,
                      "turn %d: the rest of the plan", turns);
                g->apply(g, &s, action);
            }
            double reached = one_ply_value(g, &s, mover, scratch);
            CHECK(fabs(value - reached) < 1e-5, "turn %d: value %g, its play's one-ply value %g",
                  turns, value, reached);
            CHECK(value >= floor1 - 1e-5 && value <= best1 + 1e-5,
                  "turn %d: value %g outside [%g, %g]", turns, value, floor1, best1);
            if (pl->count <= 8) {
                CHECK(fabs(value - best1) < 1e-5, "turn %d: %d plays, value %g, best %g", turns,
                      pl->count, value, best1);
                exact++;
            }
            differs += fabs(v1[argbest0] - best1) > 1e-5;
            turns++;
        }
    }
    printf("backgammon one ply deeper%s: %d turns (%d with all plays looked at; %d where 0 ply's "
           "first best play is not 1 ply's best)\n",
           chance_values ? " (chance values)" : "", turns, exact, differs);
    CHECK(turns > 40 && exact > 0, "%d turns, %d exact", turns, exact);
    CHECK(differs > 0, "the lookahead never changed a choice: not tested");
    free(v1);
    free(scratch);
    free(pl);
    zt_greedy_free(gr);
    zt_game_free(g);
}

/* Tic-tac-toe over the exact oracle: greedy play is perfect play, a draw. */
static void test_tictactoe(void)
{
    zt_game *g;
    if (zt_game_new("tictactoe", NULL, &g) != ZT_OK) {
        CHECK(0, "tictactoe: %s", zt_error_message());
        return;
    }
    zt_evaluator ev;
    CHECK(zt_evaluator_oracle_new(g, &ev) == ZT_OK, "oracle: %s", zt_error_message());
    zt_greedy *gr;
    CHECK(zt_greedy_new(g, &ev, 2, 16, 0, &gr) == ZT_OK, "%s", zt_error_message());
    uint64_t s[ZT_MAX_STATE_BYTES / 8];
    g->reset(g, s);
    int plies = 0;
    while (!zt_game_is_terminal(g, s)) {
        int action;
        float value;
        CHECK(zt_greedy_choose(gr, plies & 1, s, &action, &value) == ZT_OK, "%s",
              zt_error_message());
        CHECK(value == 0, "ply %d: perfect play values the position %g, not a draw", plies, value);
        g->apply(g, s, action);
        plies++;
    }
    CHECK(plies == 9 && zt_game_value_of(g, s, 0) == 0, "greedy oracle play: %d plies, %g", plies,
          zt_game_value_of(g, s, 0));
    zt_greedy_free(gr);
    zt_evaluator_oracle_free(&ev);
    zt_game_free(g);
}

/* An actor of 4 games whose fast moves are greedy (a tenth of its moves a
 * full search of 8 simulations), `steps` steps into a replay buffer of
 * `capacity` positions; false if either could not be made. */
static bool run_greedy_actor(const zt_game *g, const zt_evaluator *ev, int64_t capacity, int steps,
                             zt_actor **a, zt_replay **rb)
{
    zt_actor_config ac;
    zt_actor_config_default(&ac);
    ac.games = 4;
    ac.search.num_simulations = 8;
    ac.root_cache = false;
    ac.nncache = false;
    ac.full_search_fraction = 0.1;
    ac.greedy_fast = true;
    zt_replay_config rc;
    zt_replay_config_default(&rc);
    rc.capacity = capacity;
    zt_model_factory mf = zt_az_model_factory();
    CHECK(zt_replay_new(g, &rc, rb) == ZT_OK, "replay: %s", zt_error_message());
    CHECK(zt_actor_new(g, &mf, ev, &ac, a) == ZT_OK, "actor: %s", zt_error_message());
    if (!*a || !*rb) return false;
    zt_traj_sink sink = zt_traj_sink_replay(*rb);
    for (int step = 0; step < steps; step++)
        CHECK(zt_actor_step(*a, &sink) == ZT_OK, "step: %s", zt_error_message());
    return true;
}

/* An actor whose fast moves are greedy: few full searches, every game over
 * and stored, and with the oracle every game a draw. */
static void test_actor(void)
{
    zt_game *g;
    if (zt_game_new("tictactoe", NULL, &g) != ZT_OK) return;
    zt_evaluator ev;
    CHECK(zt_evaluator_oracle_new(g, &ev) == ZT_OK, "oracle: %s", zt_error_message());
    zt_replay *rb = NULL;
    zt_actor *a = NULL;
    if (!run_greedy_actor(g, &ev, 10000, 400, &a, &rb)) return;
    zt_actor_stats as = zt_actor_get_stats(a);
    zt_replay_stats rs = zt_replay_get_stats(rb);
    printf("tictactoe actor: %llu moves, %llu full searches, %llu games\n",
           (unsigned long long)as.moves, (unsigned long long)as.full_searches,
           (unsigned long long)as.games);
    CHECK(as.games >= 100 && rs.games == (int64_t)as.games_added && as.games_added == as.games,
          "%llu games, %llu added", (unsigned long long)as.games,
          (unsigned long long)as.games_added);
    CHECK(as.full_searches > 0 && as.full_searches * 5 < as.moves, "%llu full of %llu moves",
          (unsigned long long)as.full_searches, (unsigned long long)as.moves);
    CHECK(as.inferences > 0, "greedy moves asked the evaluator nothing");
    /* Perfect play by both sides: every stored position's outcome is a draw. */
    int decisive = 0;
    for (int64_t i = 0; i < rs.positions; i++) {
        zt_replay_position pos;
        if (zt_replay_get(rb, i, &pos, NULL) == ZT_OK && pos.outcome != 0) decisive++;
    }
    CHECK(decisive == 0, "%d positions of decided games under perfect play", decisive);
    zt_actor_free(a);
    zt_replay_free(rb);
    zt_evaluator_oracle_free(&ev);
    zt_game_free(g);
}

/* A backgammon actor over a net that values chance states: the positions
 * before each roll reach the replay buffer beside the players' positions,
 * value targets for the side about to roll (its result, the same as that
 * side's next position's), with no policy; an actor over a net without
 * them records none. */
static void test_chance_records(bool chance_values)
{
    zt_game *g;
    if (zt_game_new("backgammon", NULL, &g) != ZT_OK) return;
    zt_evaluator ev = {
        .ctx = g, .eval = unused_eval, .eval_states = race_eval, .chance_values = chance_values};
    zt_replay *rb = NULL;
    zt_actor *a = NULL;
    if (!run_greedy_actor(g, &ev, 100000, 1500, &a, &rb)) return;
    zt_replay_stats rs = zt_replay_get_stats(rb);
    int64_t chance = 0, with_policy = 0, mismatched = 0, followed = 0;
    int64_t first = rs.positions_seen - rs.positions;
    for (int64_t i = first; i < rs.positions_seen; i++) {
        zt_replay_position pos;
        float policy[BG_NUM_ACTIONS];
        if (zt_replay_get(rb, i, &pos, policy) != ZT_OK) {
            CHECK(0, "position %lld: %s", (long long)i, zt_error_message());
            break;
        }
        if (g->current_player(g, pos.state) != ZT_CHANCE) continue;
        chance++;
        with_policy += pos.flags != 0;
        /* the observer's next position in the same game has its result */
        int observer = g->chance_observer(g, pos.state);
        for (int64_t j = i + 1; j < rs.positions_seen; j++) {
            zt_replay_position next;
            if (zt_replay_get(rb, j, &next, NULL) != ZT_OK || next.game_id != pos.game_id) break;
            if (g->current_player(g, next.state) != observer) continue;
            followed++;
            mismatched += next.outcome != pos.outcome;
            break;
        }
    }
    printf("backgammon actor%s: %lld games, %lld positions, %lld before a roll (%lld followed)\n",
           chance_values ? " (chance values)" : "", (long long)rs.games, (long long)rs.positions,
           (long long)chance, (long long)followed);
    CHECK(rs.games >= 2, "only %lld games", (long long)rs.games);
    if (chance_values)
        CHECK(chance * 5 > rs.positions && followed * 2 > chance && mismatched == 0 &&
                  with_policy == 0,
              "%lld chance records of %lld, %lld of %lld followed with another outcome, %lld "
              "with a policy",
              (long long)chance, (long long)rs.positions, (long long)mismatched,
              (long long)followed, (long long)with_policy);
    else
        CHECK(chance == 0, "%lld chance records without chance values", (long long)chance);
    zt_actor_free(a);
    zt_replay_free(rb);
    zt_game_free(g);
}

int main(void)
{
    uint64_t seed = zt_test_seed(20261126);
    test_backgammon(seed, false);
    test_backgammon(seed, true);
    test_lookahead(seed, false);
    test_lookahead(seed, true);
    test_tictactoe();
    test_actor();
    test_chance_records(false);
    test_chance_records(true);
    return zt_test_finish("test_greedy");
}
