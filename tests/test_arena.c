/* Tests of the arena: Elo arithmetic and its interval; the SPRT accepts H1
 * for a clearly stronger player and H0 for equal ones within a bounded
 * number of games; matches alternate colours, are reproducible whatever the
 * number of games in flight, and refuse illegal moves; on the solver test
 * sets the perfect tic-tac-toe player is optimal in 4520/4520 positions and
 * random is not, the Connect Four solver player makes no mistakes on
 * Test_L2_R1 and random makes many; agents built on search and on a raw
 * policy (over the exact oracle evaluator) plug into the same interface;
 * the progress callbacks of matches and position sets see every game or
 * position once, in order, and end at the final result; points per game
 * and its interval match a hand computation, by games and by pairs; with
 * duplicate dice both games of a pair see the same rolls with colours
 * swapped, so a deterministic player against itself scores exactly 0. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/evaluators.h"
#include "arena/arena.h"
#include "core/alloc.h"

#include "zt_test.h"

static const uint64_t SEED = 4242;

static zt_agent *make_player(const zt_game *g, const char *spec)
{
    zt_player *p;
    zt_status st = zt_player_new(g, spec, &p);
    CHECK(st == ZT_OK, "%s: %s", spec, zt_error_message());
    return st == ZT_OK ? zt_agent_from_player(p, true) : NULL;
}

static bool near(double x, double want, double tol)
{
    return fabs(x - want) <= tol;
}

static void test_elo(void)
{
    CHECK(near(zt_elo_from_score(0.5), 0, 1e-12), "0.5 -> %g", zt_elo_from_score(0.5));
    CHECK(near(zt_elo_from_score(0.75), 190.85, 0.01), "0.75 -> %g", zt_elo_from_score(0.75));
    CHECK(near(zt_elo_from_score(0.25), -190.85, 0.01), "0.25 -> %g", zt_elo_from_score(0.25));
    CHECK(near(zt_score_from_elo(zt_elo_from_score(0.9)), 0.9, 1e-12), "inverse");

    zt_elo e = zt_elo_estimate(3, 0, 1);
    CHECK(near(e.score, 0.75, 1e-12) && near(e.elo, 190.85, 0.01) && !e.bound, "3-0-1: %g", e.elo);
    e = zt_elo_estimate(5, 10, 5);
    CHECK(near(e.elo, 0, 1e-9) && e.lo < 0 && e.hi > 0 && near(e.lo, -e.hi, 1e-9),
          "even score: %g [%g, %g]", e.elo, e.lo, e.hi);

    /* The same proportions over more games: the same Elo, a narrower interval. */
    double width = INFINITY;
    for (int k = 1; k <= 1000; k *= 10) {
        e = zt_elo_estimate(6 * k, 2 * k, 2 * k);
        double w = e.hi - e.lo;
        CHECK(near(e.elo, zt_elo_from_score(0.7), 1e-9) && e.lo < e.elo && e.elo < e.hi &&
                  w < width,
              "x%d: %g [%g, %g]", k, e.elo, e.lo, e.hi);
        printf("elo 6-2-2 x%-4d %+7.1f [%+7.1f, %+7.1f]\n", k, e.elo, e.lo, e.hi);
        width = w;
    }
    /* Standard error by hand for 60-20-20: var = (60 .09 + 20 .04 + 20 .49) / 100. */
    e = zt_elo_estimate(60, 20, 20);
    double se = sqrt((60 * 0.09 + 20 * 0.04 + 20 * 0.49) / 100 / 100);
    CHECK(near(e.lo, zt_elo_from_score(0.7 - 1.96 * se), 1e-9) &&
              near(e.hi, zt_elo_from_score(0.7 + 1.96 * se), 1e-9),
          "60-20-20 interval [%g, %g]", e.lo, e.hi);

    /* Perfect and nil scores stay finite, and still shrink with games. */
    width = INFINITY;
    for (int n = 1; n <= 1000; n *= 10) {
        zt_elo w = zt_elo_estimate(n, 0, 0), l = zt_elo_estimate(0, 0, n);
        CHECK(isfinite(w.elo) && isfinite(w.lo) && isfinite(w.hi) && w.bound && w.lo <= w.elo &&
                  w.elo <= w.hi && w.hi - w.lo < width + 1e-9 && w.score == 1,
              "%d wins: %g [%g, %g]", n, w.elo, w.lo, w.hi);
        CHECK(near(l.elo, -w.elo, 1e-9) && near(l.lo, -w.hi, 1e-9), "%d losses: %g", n, l.elo);
        printf("elo %d-0-0 %+7.1f [%+7.1f, %+7.1f]\n", n, w.elo, w.lo, w.hi);
        if (n > 1) width = w.hi - w.lo;
    }
    e = zt_elo_estimate(0, 0, 0);
    CHECK(e.elo == 0 && e.lo == 0 && e.hi == 0, "no games");
    /* All draws: Elo 0 in an interval around it that narrows with games. */
    width = INFINITY;
    for (int n = 1; n <= 1000; n *= 10) {
        e = zt_elo_estimate(0, n, 0);
        CHECK(e.elo == 0 && isfinite(e.lo) && isfinite(e.hi) && e.lo < 0 && e.hi > 0 &&
                  near(e.lo, -e.hi, 1e-9) && e.hi - e.lo < width && !e.bound,
              "%d draws: %g [%g, %g]", n, e.elo, e.lo, e.hi);
        printf("elo 0-%d-0 %+7.1f [%+7.1f, %+7.1f]\n", n, e.elo, e.lo, e.hi);
        width = e.hi - e.lo;
    }

    zt_sprt_config sc = {0, 50, 0.05, 0.05};
    zt_sprt_state s = zt_sprt_update(&sc, 0, 0, 0);
    CHECK(s.llr == 0 && s.decision == 0 && near(s.upper, log(19), 1e-12) &&
              near(s.lower, -log(19), 1e-12),
          "empty SPRT");
    s = zt_sprt_update(&sc, 0, 40, 0);
    CHECK(isfinite(s.llr) && s.decision == -1, "all draws: LLR %g", s.llr);
    s = zt_sprt_update(&sc, 40, 0, 0);
    CHECK(isfinite(s.llr) && s.decision == 1, "all wins: LLR %g", s.llr);
    /* A score exactly halfway between s0 and s1 is no evidence either way. */
    double mid = (zt_score_from_elo(0) + zt_score_from_elo(50)) / 2;
    int n = 100000, w = (int)lround(mid * n);
    s = zt_sprt_update(&sc, w, 0, n - w);
    CHECK(fabs(s.llr) < 0.5, "halfway score: LLR %g", s.llr);
}

static void test_matches(void)
{
    zt_game *g = zt_test_game("tictactoe");
    if (!g) return;
    zt_agent *perfect = make_player(g, "perfect"), *random = make_player(g, "random"),
             *random2 = make_player(g, "random");
    if (!perfect || !random || !random2) return;
    char line[256];

    zt_match_config cfg = {.games = 60, .seed = SEED};
    zt_match_result r;
    CHECK(zt_arena_match(g, perfect, random, &cfg, &r) == ZT_OK, "%s", zt_error_message());
    zt_match_format(&r, false, line, sizeof line);
    printf("perfect vs random: %s\n", line);
    CHECK(r.games == 60 && r.losses == 0 && r.wins > 40 && r.games_first == 30,
          "perfect vs random: %s, %d games first", line, r.games_first);
    CHECK(zt_arena_match(g, perfect, perfect, &cfg, &r) == ZT_OK && r.draws == 60,
          "perfect vs perfect: %d draws", r.draws);

    /* The same games whatever the number in flight: each game has its own
     * stream. */
    zt_match_result r1, r2;
    cfg.games = 200;
    cfg.concurrency = 1;
    CHECK(zt_arena_match(g, random, random2, &cfg, &r1) == ZT_OK, "%s", zt_error_message());
    cfg.concurrency = 0;
    CHECK(zt_arena_match(g, random, random2, &cfg, &r2) == ZT_OK, "%s", zt_error_message());
    CHECK(r1.wins == r2.wins && r1.draws == r2.draws && r1.losses == r2.losses &&
              r1.wins_first == r2.wins_first,
          "concurrency changed the results: %d-%d-%d vs %d-%d-%d", r1.wins, r1.draws, r1.losses,
          r2.wins, r2.draws, r2.losses);

    /* SPRT (elo0 0, elo1 50, alpha = beta = 0.05): H1 for the perfect
     * player, H0 between equals, on five fixed seeds each. An SPRT errs
     * with probability alpha by design; these seeds are reproducible. */
    for (uint64_t seed = 1; seed <= 5; seed++) {
        cfg = (zt_match_config){
            .games = 400, .seed = seed, .use_sprt = true, .sprt = {0, 50, 0.05, 0.05}};
        CHECK(zt_arena_match(g, perfect, random, &cfg, &r) == ZT_OK, "%s", zt_error_message());
        zt_match_format(&r, true, line, sizeof line);
        printf("sprt seed %llu perfect vs random: %3d games: %s\n", (unsigned long long)seed,
               r.games, line);
        CHECK(r.sprt.decision == 1 && r.stopped_early && r.games < 100, "perfect vs random: %s",
              line);
        cfg.games = 3000;
        CHECK(zt_arena_match(g, random, random2, &cfg, &r) == ZT_OK, "%s", zt_error_message());
        zt_match_format(&r, true, line, sizeof line);
        printf("sprt seed %llu random vs random:  %3d games: %s\n", (unsigned long long)seed,
               r.games, line);
        CHECK(r.sprt.decision == -1 && r.stopped_early, "random vs random: %s", line);
        /* The same SPRT with one game in flight stops at the same game. */
        zt_match_result one;
        cfg.concurrency = 1;
        CHECK(zt_arena_match(g, random, random2, &cfg, &one) == ZT_OK && one.games == r.games &&
                  one.wins == r.wins && one.sprt.llr == r.sprt.llr,
              "concurrency changed the SPRT's stop");
        /* And the wrong way round: H1 is rejected for the weaker side. */
        cfg = (zt_match_config){
            .games = 400, .seed = seed, .use_sprt = true, .sprt = {0, 50, 0.05, 0.05}};
        CHECK(zt_arena_match(g, random, perfect, &cfg, &r) == ZT_OK && r.sprt.decision == -1 &&
                  r.games < 100,
              "random vs perfect: %d games, decision %d", r.games, r.sprt.decision);
    }

    zt_agent_free(perfect);
    zt_agent_free(random);
    zt_agent_free(random2);
    zt_game_free(g);
}

/* An agent that plays an occupied cell once the game is under way. */
static zt_status cheat_choose(zt_agent *a, int n, const int *slots, const void *const *states,
                              zt_rng *const *rngs, int *actions)
{
    const zt_game *g = a->game;
    for (int i = 0; i < n; i++) {
        uint8_t mask[ZT_MAX_ACTIONS];
        zt_game_legal_mask(g, states[i], mask);
        int pick = 0;
        while (pick < g->num_actions - 1 && mask[pick]) pick++;
        actions[i] = pick;
    }
    return ZT_OK;
}

static void cheat_free(zt_agent *a)
{
    free(a);
}

static void test_illegal(void)
{
    zt_game *g = zt_test_game("tictactoe");
    if (!g) return;
    zt_agent *cheat = calloc(1, sizeof *cheat);
    cheat->game = g;
    snprintf(cheat->name, sizeof cheat->name, "cheat");
    cheat->max_games = 4;
    cheat->choose = cheat_choose;
    cheat->free = cheat_free;
    zt_agent *random = make_player(g, "random");
    zt_match_config cfg = {.games = 10, .seed = SEED};
    zt_match_result r;
    zt_status st = zt_arena_match(g, random, cheat, &cfg, &r);
    CHECK(st == ZT_ERR_INVALID && strstr(zt_error_message(), "cheat chose illegal"), "%s",
          zt_error_message());
    cfg.games = 0;
    CHECK(zt_arena_match(g, random, cheat, &cfg, &r) == ZT_ERR_INVALID, "zero games refused");
    zt_agent_free(cheat);
    zt_agent_free(random);
    zt_game_free(g);
}

static void positions(const zt_game *g, zt_agent *agent, const char *file, int limit,
                      zt_positions_result *r)
{
    char path[512], line[64];
    zt_test_data_path(file, path, sizeof path);
    zt_status st = zt_arena_positions(g, agent, path, limit, SEED, r);
    CHECK(st == ZT_OK, "%s on %s: %s", agent->name, path, zt_error_message());
    zt_positions_format(r, line, sizeof line);
    printf("positions %-12s %-10s %s\n", g->title, agent->name, line);
}

static void test_positions(void)
{
    zt_positions_result r;
    zt_game *ttt = zt_test_game("tictactoe");
    if (ttt) {
        zt_agent *perfect = make_player(ttt, "perfect"), *random = make_player(ttt, "random");
        positions(ttt, perfect, "tictactoe/ttt_positions.txt", 0, &r);
        CHECK(r.optimal == 4520 && r.positions == 4520 && !r.report_mistakes, "perfect: %d/%d",
              r.optimal, r.positions);
        positions(ttt, random, "tictactoe/ttt_positions.txt", 0, &r);
        CHECK(r.positions == 4520 && r.optimal < 4000 && r.optimal > 1000, "random: %d/%d",
              r.optimal, r.positions);

        /* "Network + search" agents on the exact oracle evaluator. */
        zt_evaluator oracle;
        CHECK(zt_evaluator_oracle_new(ttt, &oracle) == ZT_OK, "%s", zt_error_message());
        zt_agent *policy = NULL, *puct = NULL, *gumbel = NULL;
        CHECK(zt_agent_policy_new(ttt, &oracle, 64, &policy) == ZT_OK, "%s", zt_error_message());
        zt_search_config sc;
        zt_search_config_default(&sc, ZT_SEARCH_PUCT);
        sc.num_simulations = 24;
        sc.node_capacity = 256;
        sc.edge_capacity = 1024;
        CHECK(zt_agent_search_new(ttt, &oracle, &sc, 32, NULL, &puct) == ZT_OK, "%s",
              zt_error_message());
        zt_search_config_default(&sc, ZT_SEARCH_GUMBEL);
        sc.num_simulations = 16;
        sc.node_capacity = 256;
        sc.edge_capacity = 1024;
        CHECK(zt_agent_search_new(ttt, &oracle, &sc, 32, NULL, &gumbel) == ZT_OK, "%s",
              zt_error_message());
        zt_agent *agents[] = {policy, puct, gumbel};
        for (int i = 0; i < 3; i++) {
            if (!agents[i]) continue;
            positions(ttt, agents[i], "tictactoe/ttt_positions.txt", 0, &r);
            CHECK(r.optimal == 4520, "%s on the oracle: %d/%d", agents[i]->name, r.optimal,
                  r.positions);
        }
        if (puct) {
            zt_match_config cfg = {.games = 20, .seed = SEED};
            zt_match_result m;
            CHECK(zt_arena_match(ttt, puct, random, &cfg, &m) == ZT_OK && m.losses == 0 &&
                      m.games == 20,
                  "search agent vs random: %d losses: %s", m.losses, zt_error_message());
        }
        /* The net's own values beside the moves: the oracle's are never
         * on the wrong side, a net that values everything 0 is wrong on
         * every won and lost position and on no drawn one. */
        char path[512], line[256];
        zt_test_data_path("tictactoe/ttt_positions.txt", path, sizeof path);
        zt_evaluator uniform = zt_evaluator_uniform(ttt);
        const zt_evaluator *evs[2] = {&oracle, &uniform};
        for (int e = 0; e < 2; e++) {
            zt_positions_config pc = {.path = path, .seed = SEED, .value_ev = evs[e]};
            CHECK(zt_arena_positions_run(ttt, random, &pc, &r) == ZT_OK, "%s", zt_error_message());
            int *m = r.net_positions, *w = r.net_wrong;
            zt_positions_format_net(&r, line, sizeof line);
            printf("net values (%s): %s\n", e ? "uniform" : "oracle", line);
            CHECK(m[0] > 0 && m[1] > 0 && m[2] > 0 && m[0] + m[1] + m[2] == r.positions &&
                      m[0] == r.value_positions[0] && m[2] == r.value_positions[2],
                  "valued %d/%d/%d of %d", m[0], m[1], m[2], r.positions);
            int valued, wrong;
            double rmse = zt_positions_net_totals(&r, &valued, &wrong);
            CHECK(valued == r.positions && wrong == w[0] + w[1] + w[2] &&
                      (e == 0 ? rmse == 0
                              : fabs(rmse - sqrt((double)(m[0] + m[2]) / r.positions)) < 1e-9),
                  "totals: %d valued, %d wrong, RMSE %g", valued, wrong, rmse);
            if (e == 0)
                CHECK(w[0] == 0 && w[1] == 0 && w[2] == 0 && r.net_sum[0] == m[0] &&
                          r.net_sum[1] == 0 && r.net_sum[2] == -m[2] && r.net_sq[0] == 0 &&
                          r.net_sq[2] == 0 && strstr(line, "RMSE 0.000"),
                      "oracle values: wrong %d/%d/%d, '%s'", w[0], w[1], w[2], line);
            else
                CHECK(w[0] == m[0] && w[1] == 0 && w[2] == m[2] &&
                          fabs(r.net_sq[0] - m[0]) < 1e-9 && r.net_sq[1] == 0 &&
                          strstr(line, "won +0.00 (wrong"),
                      "uniform values: wrong %d/%d/%d, '%s'", w[0], w[1], w[2], line);
        }
        /* without value_ev nothing is valued */
        positions(ttt, random, "tictactoe/ttt_positions.txt", 0, &r);
        zt_positions_format_net(&r, line, sizeof line);
        CHECK(r.net_positions[0] + r.net_positions[1] + r.net_positions[2] == 0 && !line[0],
              "no evaluator: '%s'", line);
        for (int i = 0; i < 3; i++) zt_agent_free(agents[i]);
        zt_evaluator_oracle_free(&oracle);
        zt_agent_free(perfect);
        zt_agent_free(random);
        zt_game_free(ttt);
    }

    zt_game *c4 = zt_test_game("connect4");
    if (c4) {
        zt_agent *solver = make_player(c4, "solver"), *perfect = make_player(c4, "perfect"),
                 *random = make_player(c4, "random");
        positions(c4, solver, "connect4/Test_L2_R1", 50, &r);
        CHECK(r.positions == 50 && r.mistakes == 0 && r.report_mistakes, "solver: %d/%d",
              r.mistakes, r.positions);
        positions(c4, perfect, "connect4/Test_L2_R1", 50, &r);
        CHECK(r.positions == 50 && r.mistakes == 0, "perfect: %d/%d", r.mistakes, r.positions);
        positions(c4, random, "connect4/Test_L2_R1", 50, &r);
        CHECK(r.positions == 50 && r.mistakes >= 10, "random: %d/%d", r.mistakes, r.positions);
        char bad[] = "/nonexistent/positions.txt";
        CHECK(zt_arena_positions(c4, random, bad, 0, SEED, &r) != ZT_OK, "a missing file");
        zt_agent_free(solver);
        zt_agent_free(perfect);
        zt_agent_free(random);
        zt_game_free(c4);
    }

    zt_game *sim = zt_test_game("sim");
    if (sim) {
        zt_agent *perfect = make_player(sim, "perfect"), *random = make_player(sim, "random");
        positions(sim, perfect, "sim/sim_k6_positions.txt", 300, &r);
        CHECK(r.positions == 300 && r.optimal == 300, "sim perfect: %d/%d", r.optimal, r.positions);
        positions(sim, random, "sim/sim_k6_positions.txt", 300, &r);
        CHECK(r.positions == 300 && r.optimal < 300, "sim random: %d/%d", r.optimal, r.positions);
        zt_agent_free(perfect);
        zt_agent_free(random);
        zt_game_free(sim);
    }

    /* A game without an exact solver has no positions mode. */
    zt_game *bg = zt_test_game("backgammon");
    if (bg) {
        zt_agent *random = make_player(bg, "random");
        CHECK(zt_arena_positions(bg, random, "x", 0, SEED, &r) == ZT_ERR_UNSUPPORTED, "%s",
              zt_error_message());
        zt_agent_free(random);
        zt_game_free(bg);
    }
}

/* ---- progress callbacks ---- */

typedef struct match_seen {
    int calls, last_games, out_of_order;
    zt_match_result last;
} match_seen;

static void match_progress(void *ctx, const zt_match_result *so_far)
{
    match_seen *s = ctx;
    s->calls++;
    s->out_of_order += so_far->games != s->last_games + 1 ||
                       so_far->wins + so_far->draws + so_far->losses != so_far->games;
    s->last_games = so_far->games;
    s->last = *so_far;
}

typedef struct positions_seen {
    int calls, total, last_read, last_judged, backwards;
    zt_positions_result last;
} positions_seen;

/* What the mistake callback saw: its calls, in order, each checked. */
typedef struct mistakes_seen {
    const zt_game *game;
    int calls, last_index, out_of_order, bad;
} mistakes_seen;

static void positions_mistake(void *ctx, int index, int image, const char *line, const void *state,
                              int action, const uint16_t *keep, int num_keep)
{
    mistakes_seen *m = ctx;
    m->calls++;
    if (index <= m->last_index || image != 0) m->out_of_order++;
    m->last_index = index;
    /* the move lost value: not among the kept ones, which are not empty */
    bool kept = false;
    for (int i = 0; i < num_keep; i++) kept |= keep[i] == action;
    /* the line is the file's: the state and the kept moves read back from it */
    uint8_t parsed[ZT_MAX_STATE_BYTES];
    char board[32], side[8], text[48];
    bool same = line && sscanf(line, "%31s %7s", board, side) == 2 &&
                snprintf(text, sizeof text, "%s %s", board, side) > 0 &&
                m->game->from_text(m->game, text, parsed) == ZT_OK &&
                memcmp(parsed, state, m->game->state_size) == 0;
    if (kept || num_keep == 0 || !same) m->bad++;
}

static void positions_progress(void *ctx, int read, int total, const zt_positions_result *so_far)
{
    positions_seen *s = ctx;
    s->backwards += read < s->last_read || so_far->positions < s->last_judged ||
                    so_far->positions > read || (s->calls > 0 && total != s->total) ||
                    so_far->mistakes != so_far->positions - so_far->optimal;
    s->calls++;
    s->total = total;
    s->last_read = read;
    s->last_judged = so_far->positions;
    s->last = *so_far;
}

static void test_progress(void)
{
    zt_game *g = zt_test_game("tictactoe");
    if (!g) return;
    zt_agent *perfect = make_player(g, "perfect"), *random = make_player(g, "random");
    if (!perfect || !random) return;

    /* A match: one call per game counted, the last one equal to the result,
     * the same result as without the callback. */
    match_seen seen = {0};
    zt_match_config cfg = {.games = 37,
                           .concurrency = 8,
                           .seed = SEED,
                           .progress = match_progress,
                           .progress_ctx = &seen};
    zt_match_result r, plain;
    CHECK(zt_arena_match(g, perfect, random, &cfg, &r) == ZT_OK, "%s", zt_error_message());
    CHECK(seen.calls == 37 && seen.out_of_order == 0 && seen.last.wins == r.wins &&
              seen.last.draws == r.draws && seen.last.losses == r.losses,
          "match progress: %d calls, %d out of order, last %d-%d-%d vs %d-%d-%d", seen.calls,
          seen.out_of_order, seen.last.wins, seen.last.draws, seen.last.losses, r.wins, r.draws,
          r.losses);
    cfg.progress = NULL;
    CHECK(zt_arena_match(g, perfect, random, &cfg, &plain) == ZT_OK && plain.wins == r.wins &&
              plain.draws == r.draws,
          "the callback changed the match");

    /* With an SPRT the calls stop at the deciding game. */
    seen = (match_seen){0};
    cfg = (zt_match_config){.games = 400,
                            .seed = 1,
                            .use_sprt = true,
                            .sprt = {0, 50, 0.05, 0.05},
                            .progress = match_progress,
                            .progress_ctx = &seen};
    CHECK(zt_arena_match(g, perfect, random, &cfg, &r) == ZT_OK && r.stopped_early, "%s",
          zt_error_message());
    CHECK(seen.calls == r.games && seen.last.sprt.decision == r.sprt.decision,
          "sprt progress: %d calls for %d games", seen.calls, r.games);

    /* A position set, cut to 700 of 4520 with a batch of 256: the total is
     * the limit, reading and judging only move forwards, and the last call
     * has every position judged and the final counts. */
    char path[512];
    zt_test_data_path("tictactoe/ttt_positions.txt", path, sizeof path);
    positions_seen ps = {0};
    zt_positions_config pc = {.path = path,
                              .limit = 700,
                              .seed = SEED,
                              .progress = positions_progress,
                              .progress_ctx = &ps};
    zt_positions_result pr;
    CHECK(zt_arena_positions_run(g, random, &pc, &pr) == ZT_OK, "%s", zt_error_message());
    CHECK(ps.total == 700 && ps.backwards == 0 && ps.last_read == 700 && ps.last_judged == 700 &&
              ps.last.optimal == pr.optimal && pr.positions == 700 && ps.calls >= 700,
          "positions progress: total %d, %d backwards, last read %d judged %d, %d calls", ps.total,
          ps.backwards, ps.last_read, ps.last_judged, ps.calls);
    /* The mistakes, one call each in file order with the file's own line:
     * as many as the result counts; none for the perfect player. */
    mistakes_seen ms = {.game = g, .last_index = -1};
    pc.progress = NULL;
    pc.mistake = positions_mistake;
    pc.mistake_ctx = &ms;
    CHECK(zt_arena_positions_run(g, random, &pc, &pr) == ZT_OK, "%s", zt_error_message());
    CHECK(pr.mistakes > 100 && ms.calls == pr.mistakes && ms.out_of_order == 0 && ms.bad == 0 &&
              ms.last_index < 700,
          "mistakes: %d calls for %d, %d out of order, %d bad, last %d", ms.calls, pr.mistakes,
          ms.out_of_order, ms.bad, ms.last_index);
    ms = (mistakes_seen){.game = g, .last_index = -1};
    CHECK(zt_arena_positions_run(g, perfect, &pc, &pr) == ZT_OK, "%s", zt_error_message());
    CHECK(pr.mistakes == 0 && ms.calls == 0, "perfect: %d mistakes, %d calls", pr.mistakes,
          ms.calls);
    pc.mistake = NULL;
    pc.progress = positions_progress;
    /* The whole file: the total counts positions, not comments or blank lines. */
    ps = (positions_seen){0};
    pc.limit = 0;
    CHECK(zt_arena_positions_run(g, perfect, &pc, &pr) == ZT_OK, "%s", zt_error_message());
    CHECK(ps.total == 4520 && ps.last_judged == 4520 && ps.last.optimal == 4520,
          "whole set: total %d, judged %d", ps.total, ps.last_judged);

    zt_agent_free(perfect);
    zt_agent_free(random);
    zt_game_free(g);
}

/* An agent that plays the lowest legal action, or with `highest` the
 * highest. */
typedef struct edge_agent {
    zt_agent base;
    bool highest;
} edge_agent;

static zt_status edge_choose(zt_agent *a, int n, const int *slots, const void *const *states,
                             zt_rng *const *rngs, int *actions)
{
    const edge_agent *e = (const edge_agent *)a;
    for (int i = 0; i < n; i++) {
        uint16_t legal[ZT_MAX_ACTIONS];
        int k = a->game->legal(a->game, states[i], legal);
        actions[i] = legal[e->highest ? k - 1 : 0];
    }
    return ZT_OK;
}

static zt_agent *make_edge(const zt_game *g, bool highest, int max_games)
{
    edge_agent *e = calloc(1, sizeof *e);
    e->base.game = g;
    snprintf(e->base.name, sizeof e->base.name, "%s", highest ? "highest" : "lowest");
    e->base.max_games = max_games;
    e->base.choose = edge_choose;
    e->base.free = cheat_free;
    e->highest = highest;
    return &e->base;
}

/* Which positions (of the first 512) were wrong in which image, and
 * whether each call's move was legal in the position as written. */
typedef struct images_seen {
    const zt_game *game;
    uint8_t wrong[512];   /* bit k: image k */
    int calls, bad, last; /* last: index * 64 + image of the last call */
} images_seen;

static void images_mistake(void *ctx, int index, int image, const char *line, const void *state,
                           int action, const uint16_t *keep, int num_keep)
{
    images_seen *m = ctx;
    m->calls++;
    uint8_t mask[ZT_MAX_ACTIONS];
    zt_game_legal_mask(m->game, state, mask);
    int at = index * 64 + image;
    if (index < 0 || index >= 512 || image < 0 || image > 7 || at <= m->last || action < 0 ||
        action >= m->game->num_actions || !mask[action]) {
        m->bad++;
        return;
    }
    m->last = at;
    m->wrong[index] |= (uint8_t)(1u << image);
}

/* --images: each image is asked as a position of its own and its move
 * mapped back. Connect Four's mirror image asks the lowest legal column
 * where the position as written has the highest: the lowest-column agent's
 * image 1 is judged exactly as the highest-column agent on the set as
 * written, position by position. */
static void test_images(void)
{
    zt_game *c4 = zt_test_game("connect4");
    if (!c4) return;
    char path[512];
    zt_test_data_path("connect4/Test_L2_R1", path, sizeof path);
    zt_agent *low = make_edge(c4, false, 256), *high = make_edge(c4, true, 256);
    zt_positions_result both, img[2], plain_low, plain_high;
    images_seen seen_both = {.game = c4, .last = -1}, seen_low = {.game = c4, .last = -1},
                seen_high = {.game = c4, .last = -1};
    zt_positions_config pc = {.path = path,
                              .limit = 300,
                              .seed = SEED,
                              .images = 2,
                              .per_image = img,
                              .mistake = images_mistake,
                              .mistake_ctx = &seen_both};
    CHECK(zt_arena_positions_run(c4, low, &pc, &both) == ZT_OK, "%s", zt_error_message());
    pc.images = 0;
    pc.per_image = NULL;
    pc.mistake_ctx = &seen_low;
    CHECK(zt_arena_positions_run(c4, low, &pc, &plain_low) == ZT_OK, "%s", zt_error_message());
    pc.mistake_ctx = &seen_high;
    CHECK(zt_arena_positions_run(c4, high, &pc, &plain_high) == ZT_OK, "%s", zt_error_message());
    printf("images connect4 lowest: as written %d, mirror %d (highest as written %d), every %d, "
           "some %d of %d\n",
           img[0].mistakes, img[1].mistakes, plain_high.mistakes, both.wrong_every, both.wrong_some,
           img[0].positions);
    CHECK(both.images == 2 && both.positions == 600 && img[0].positions == 300 &&
              img[1].positions == 300 && plain_low.images == 1 && plain_low.positions == 300,
          "counts: %d images, %d, %d + %d, plain %d", both.images, both.positions, img[0].positions,
          img[1].positions, plain_low.positions);
    CHECK(img[0].mistakes == plain_low.mistakes && img[1].mistakes == plain_high.mistakes &&
              both.mistakes == img[0].mistakes + img[1].mistakes,
          "image 0 %d (plain %d), image 1 %d (highest %d), total %d", img[0].mistakes,
          plain_low.mistakes, img[1].mistakes, plain_high.mistakes, both.mistakes);
    CHECK(plain_low.mistakes > 20 && plain_high.mistakes > 20 &&
              plain_low.mistakes != plain_high.mistakes,
          "the edge agents should err, differently: %d and %d", plain_low.mistakes,
          plain_high.mistakes);
    int every = 0, some = 0, same = 0;
    for (int i = 0; i < 300; i++) {
        int a = seen_low.wrong[i] & 1, b = seen_high.wrong[i] & 1;
        every += a && b;
        some += a || b;
        same += seen_both.wrong[i] == (a | b << 1);
    }
    CHECK(same == 300 && both.wrong_every == every && both.wrong_some == some &&
              seen_both.bad == 0 && seen_both.calls == both.mistakes,
          "position by position: %d of 300 the same, every %d (%d), some %d (%d), %d bad calls "
          "of %d",
          same, both.wrong_every, every, both.wrong_some, some, seen_both.bad, seen_both.calls);
    for (int b = 0; b < ZT_BANDS; b++)
        CHECK(both.band_positions[b] == img[0].band_positions[b] + img[1].band_positions[b] &&
                  both.band_optimal[b] == img[0].band_optimal[b] + img[1].band_optimal[b],
              "band %d: the total is not the images' sum", b);

    /* A game has as many images as symmetries. */
    pc.images = 3;
    pc.mistake = NULL;
    CHECK(zt_arena_positions_run(c4, low, &pc, &both) == ZT_ERR_INVALID &&
              strstr(zt_error_message(), "symmetries"),
          "3 images of connect4: %s", zt_error_message());
    zt_agent_free(low);
    zt_agent_free(high);
    zt_game_free(c4);

    /* Tic-tac-toe's 8 images: the perfect player keeps every value in every
     * one; the lowest-cell agent, asked 3 positions at a time (a position's
     * images span batches), counts as it does asked 256 at a time. */
    zt_game *ttt = zt_test_game("tictactoe");
    if (!ttt) return;
    zt_test_data_path("tictactoe/ttt_positions.txt", path, sizeof path);
    zt_agent *perfect = make_player(ttt, "perfect");
    zt_positions_result eight[8], eight3[8], by3;
    pc = (zt_positions_config){
        .path = path, .limit = 500, .seed = SEED, .images = 8, .per_image = eight};
    CHECK(zt_arena_positions_run(ttt, perfect, &pc, &both) == ZT_OK, "%s", zt_error_message());
    int each = 0;
    for (int k = 0; k < 8; k++) each += eight[k].optimal == 500 && eight[k].positions == 500;
    CHECK(both.positions == 4000 && both.optimal == 4000 && each == 8 && both.wrong_some == 0,
          "perfect in 8 images: %d/%d, %d images whole, %d wrong", both.optimal, both.positions,
          each, both.wrong_some);
    zt_agent *low256 = make_edge(ttt, false, 256), *low3 = make_edge(ttt, false, 3);
    CHECK(zt_arena_positions_run(ttt, low256, &pc, &both) == ZT_OK, "%s", zt_error_message());
    pc.per_image = eight3;
    CHECK(zt_arena_positions_run(ttt, low3, &pc, &by3) == ZT_OK, "%s", zt_error_message());
    int alike = 0;
    for (int k = 0; k < 8; k++) alike += eight3[k].optimal == eight[k].optimal;
    CHECK(by3.optimal == both.optimal && by3.wrong_every == both.wrong_every &&
              by3.wrong_some == both.wrong_some && alike == 8 && both.wrong_some > 0 &&
              both.wrong_every < both.wrong_some,
          "lowest cell, 3 at a time against 256: optimal %d / %d, every %d / %d, some %d / %d, "
          "%d images the same",
          by3.optimal, both.optimal, by3.wrong_every, both.wrong_every, by3.wrong_some,
          both.wrong_some, alike);
    zt_agent_free(low256);
    zt_agent_free(low3);
    zt_agent_free(perfect);
    zt_game_free(ttt);
}

/* Backgammon: chance nodes are played by the arena, every game ends. */
static void test_chance(void)
{
    zt_game *g = zt_test_game("backgammon");
    if (!g) return;
    zt_agent *a = make_player(g, "pubeval"), *b = make_player(g, "random");
    if (!a || !b) return;
    zt_match_config cfg = {.games = 20, .seed = SEED};
    zt_match_result r;
    CHECK(zt_arena_match(g, a, b, &cfg, &r) == ZT_OK && r.games == 20, "%s", zt_error_message());
    char line[256];
    zt_match_format(&r, false, line, sizeof line);
    printf("backgammon pubeval vs random: %s, %+.2f points per game\n", line,
           r.total_return / r.games);
    CHECK(r.total_return > 0, "pubeval should beat random");
    zt_agent_free(a);
    zt_agent_free(b);
    zt_game_free(g);
}

/* Points per game against hand-computed values. Returns 1, -2, 3, 1:
 * by games mean 0.75, sample variance 12.75 / 3 = 4.25, se = sqrt(4.25 / 4);
 * by pairs the samples are -0.5 and 2, variance 3.125, se = 1.25, and the
 * upper end 0.75 + 2.45 is cut to the 3 points of a backgammon. */
static void test_points(void)
{
    const float r[4] = {1, -2, 3, 1};
    zt_points p = zt_points_estimate(r, 4, false, 3);
    double se = sqrt(4.25 / 4);
    CHECK(p.units == 4 && near(p.mean, 0.75, 1e-12) && near(p.se, se, 1e-12) &&
              near(p.lo, 0.75 - 1.96 * se, 1e-12) && near(p.hi, 0.75 + 1.96 * se, 1e-12),
          "by games: %d units, %g [%g, %g] se %g", p.units, p.mean, p.lo, p.hi, p.se);
    p = zt_points_estimate(r, 4, true, 3);
    CHECK(p.units == 2 && near(p.mean, 0.75, 1e-12) && near(p.se, 1.25, 1e-12) &&
              near(p.lo, 0.75 - 1.96 * 1.25, 1e-12) && p.hi == 3,
          "by pairs: %d units, %g [%g, %g] se %g", p.units, p.mean, p.lo, p.hi, p.se);
    /* An odd game out is a sample of its own; the mean stays per game. */
    p = zt_points_estimate(r, 3, true, 3);
    CHECK(p.units == 2 && near(p.mean, 2.0 / 3.0, 1e-12) && near(p.se, 1.75, 1e-12),
          "odd: %d units, mean %g, se %g", p.units, p.mean, p.se);
    p = zt_points_estimate(r, 1, false, 3);
    CHECK(p.units == 1 && p.mean == 1 && p.lo == -3 && p.hi == 3, "one game: [%g, %g]", p.lo,
          p.hi);
    char buf[128];
    p = zt_points_estimate(r, 4, false, 3);
    zt_points_format(&p, buf, sizeof buf);
    CHECK(strcmp(buf, "points per game +0.750 [-1.270, +2.770]") == 0, "format: %s", buf);
}

/* A spy on a backgammon player: it plays the wrapped player's moves and
 * keeps its own copy of every game it is told about (games numbered in the
 * order they start, which is game order), logging each game's chance
 * outcomes and the seat it was asked to move from. */
#define SPY_GAMES 16
#define SPY_ROLLS 256
typedef struct spy {
    zt_agent base;
    zt_agent *inner;
    const zt_game *g;
    int started;
    int game_of_slot[256];
    uint8_t state[256][ZT_MAX_STATE_BYTES];
    int rolls[SPY_GAMES][SPY_ROLLS], num_rolls[SPY_GAMES];
    int seat[SPY_GAMES];
} spy;

static zt_status spy_choose(zt_agent *a, int n, const int *slots, const void *const *states,
                            zt_rng *const *rngs, int *actions)
{
    spy *s = (spy *)a;
    for (int i = 0; i < n; i++) {
        int game = s->game_of_slot[slots[i]];
        if (game < SPY_GAMES) s->seat[game] = s->g->current_player(s->g, states[i]);
    }
    return s->inner->choose(s->inner, n, slots, states, rngs, actions);
}

static void spy_new_game(zt_agent *a, int slot)
{
    spy *s = (spy *)a;
    s->game_of_slot[slot] = s->started++;
    s->g->reset(s->g, s->state[slot]);
}

static void spy_played(zt_agent *a, int slot, int action)
{
    spy *s = (spy *)a;
    int game = s->game_of_slot[slot];
    if (game < SPY_GAMES && s->g->current_player(s->g, s->state[slot]) == ZT_CHANCE &&
        s->num_rolls[game] < SPY_ROLLS)
        s->rolls[game][s->num_rolls[game]++] = action;
    s->g->apply(s->g, s->state[slot], action);
}

static void spy_free(zt_agent *a)
{
    zt_agent_free(((spy *)a)->inner);
    free(a);
}

static spy *make_spy(const zt_game *g, const char *spec)
{
    zt_agent *inner = make_player(g, spec);
    if (!inner) return NULL;
    spy *s = zt_xcalloc(1, sizeof *s);
    s->base = (zt_agent){.game = g, .max_games = 256, .choose = spy_choose,
                         .new_game = spy_new_game, .played = spy_played, .free = spy_free};
    snprintf(s->base.name, sizeof s->base.name, "spy(%s)", spec);
    s->inner = inner;
    s->g = g;
    return s;
}

/* Do games x and y start with the same rolls, as far as both go? */
static bool same_rolls(const spy *s, int x, int y)
{
    int n = s->num_rolls[x] < s->num_rolls[y] ? s->num_rolls[x] : s->num_rolls[y];
    return n > 0 && memcmp(s->rolls[x], s->rolls[y], (size_t)n * sizeof(int)) == 0;
}

static void test_duplicate(void)
{
    zt_game *g = zt_test_game("backgammon");
    if (!g) return;
    /* pubeval against itself: deterministic, so both games of a pair are
     * the same game with the colours swapped, and each pair nets 0. */
    spy *a = make_spy(g, "pubeval"), *b = make_spy(g, "pubeval");
    if (!a || !b) return;
    zt_match_config cfg = {.games = SPY_GAMES, .concurrency = 5, .seed = SEED, .duplicate = true};
    zt_match_result r;
    CHECK(zt_arena_match(g, &a->base, &b->base, &cfg, &r) == ZT_OK && r.games == SPY_GAMES,
          "%s", zt_error_message());
    CHECK(r.duplicate && r.total_return == 0 && r.points.mean == 0 && r.points.se == 0 &&
              r.points.units == SPY_GAMES / 2,
          "pubeval vs itself, duplicate: %g points, se %g, %d units", r.total_return,
          r.points.se, r.points.units);
    CHECK(r.wins == SPY_GAMES / 2 && r.games_first == SPY_GAMES / 2,
          "one win per pair: %d wins, %d games first", r.wins, r.games_first);
    for (int k = 0; k < SPY_GAMES / 2; k++) {
        int x = 2 * k, y = 2 * k + 1;
        CHECK(a->num_rolls[x] == a->num_rolls[y] && same_rolls(a, x, y),
              "pair %d: rolls differ (%d and %d rolls)", k, a->num_rolls[x], a->num_rolls[y]);
        CHECK(a->seat[x] == 0 && a->seat[y] == 1, "pair %d: seats %d, %d", k, a->seat[x],
              a->seat[y]);
    }
    CHECK(!same_rolls(a, 0, 2), "pairs 0 and 1 share their dice");
    zt_agent_free(&a->base);
    zt_agent_free(&b->base);

    /* Different players: the games of a pair part ways, yet roll the same
     * dice while both go on. */
    a = make_spy(g, "pubeval");
    b = make_spy(g, "random");
    if (!a || !b) return;
    CHECK(zt_arena_match(g, &a->base, &b->base, &cfg, &r) == ZT_OK, "%s", zt_error_message());
    for (int k = 0; k < SPY_GAMES / 2; k++)
        CHECK(same_rolls(a, 2 * k, 2 * k + 1), "pair %d: rolls differ with different players", k);
    zt_agent_free(&a->base);
    zt_agent_free(&b->base);

    /* Without duplicate dice the games of a pair roll their own dice. */
    a = make_spy(g, "pubeval");
    b = make_spy(g, "pubeval");
    if (!a || !b) return;
    cfg.duplicate = false;
    CHECK(zt_arena_match(g, &a->base, &b->base, &cfg, &r) == ZT_OK, "%s", zt_error_message());
    CHECK(!r.duplicate && !same_rolls(a, 0, 1), "independent games share their dice");
    zt_agent_free(&a->base);
    zt_agent_free(&b->base);
    zt_game_free(g);
}

int main(void)
{
    printf("seed %llu\n", (unsigned long long)SEED);
    test_elo();
    test_matches();
    test_illegal();
    test_positions();
    test_chance();
    test_progress();
    test_points();
    test_duplicate();
    test_images();
    return zt_test_finish("test_arena");
}
