/* Search over real games through the AlphaZero model: with the perfect
 * oracle the chosen move is optimal on the shared solved positions; with the
 * uniform evaluator root values converge to the exact values on small
 * tic-tac-toe positions; the NN cache and root cache save work without
 * changing results; observations reach an observation evaluator. In 2048
 * (one player) every transition carries its reward, a chance node's value
 * is the exact expectation over the spawns with finished games worth
 * nothing more, nothing is negated, and search takes the merge that pays.
 * A backgammon net that values chance states values a roll with one
 * evaluation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/az_model.h"
#include "agent/evaluators.h"
#include "core/rng.h"
#include "game/backgammon.h"
#include "game/g2048.h"
#include "game/solver.h"
#include "search/nncache.h"
#include "search/search.h"
#include "search/settings.h"

#include "zt_test.h"

enum { MAX_POSITIONS = 5000, G = 64 };

typedef struct position_set {
    int n;
    zt_position *pos;
} position_set;

static position_set load(zt_solver *sv, const char *rel)
{
    position_set ps = {0, calloc(MAX_POSITIONS, sizeof(zt_position))};
    char path[512];
    FILE *f = zt_test_open_data(rel, path, sizeof path);
    CHECK(f != NULL, "cannot open %s", rel);
    if (!f) return ps;
    char line[1024];
    while (ps.n < MAX_POSITIONS && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!line[0] || line[0] == '#') continue;
        zt_status st = sv->parse_line(sv, line, &ps.pos[ps.n]);
        CHECK(st == ZT_OK, "%s: %s", rel, zt_error_message());
        if (st == ZT_OK) ps.n++;
    }
    fclose(f);
    return ps;
}

static bool in_moves(const zt_solution *s, int a)
{
    for (int i = 0; i < s->num_moves; i++)
        if (s->moves[i] == a) return true;
    return false;
}

/* Every position of the file, G trees at a time: the chosen move keeps the
 * solved value. */
static void oracle_positions(const char *game_name, const char *rel, zt_search_algorithm alg, int sims)
{
    zt_game *g;
    if (zt_game_new(game_name, NULL, &g) != ZT_OK) {
        printf("skip oracle %s: %s\n", game_name, zt_error_message());
        return;
    }
    zt_solver *sv;
    zt_evaluator ev;
    if (zt_solver_new(g, &sv) != ZT_OK || zt_evaluator_oracle_new(g, &ev) != ZT_OK) {
        printf("skip oracle %s: %s\n", game_name, zt_error_message());
        zt_game_free(g);
        return;
    }
    position_set ps = load(sv, rel);
    zt_model *m;
    CHECK(zt_az_model_new(g, &ev, G, NULL, &m) == ZT_OK, "az model: %s", zt_error_message());
    zt_search_config cfg;
    zt_search_config_default(&cfg, alg);
    cfg.num_simulations = sims;
    cfg.tree_reuse = false;
    zt_search *s;
    CHECK(zt_search_new(&cfg, m, G, &s) == ZT_OK, "search: %s", zt_error_message());
    int wrong = 0, checked = 0;
    for (int base = 0; base < ps.n; base += G) {
        int b = ps.n - base < G ? ps.n - base : G;
        for (int i = 0; i < b; i++) zt_search_begin(s, i, ps.pos[base + i].state);
        CHECK(zt_search_run(s) == ZT_OK, "search: %s", zt_error_message());
        for (int i = 0; i < b; i++) {
            const zt_position *p = &ps.pos[base + i];
            if (!p->has_moves) continue;
            int a = zt_search_choose(s, i, 0.0f);
            checked++;
            if (!in_moves(&p->expected, a)) {
                if (wrong++ < 5) {
                    char text[ZT_MAX_TEXT];
                    g->to_text(g, p->state, text, sizeof text);
                    printf("  %s: chose %d\n", text, a);
                }
            }
            zt_search_played(s, i, a);
        }
    }
    CHECK(wrong == 0 && checked > 0, "%s %s oracle: %d of %d chosen moves lose value", game_name,
          alg == ZT_SEARCH_GUMBEL ? "gumbel" : "puct", wrong, checked);
    printf("oracle %s %s %d sims: %d positions, %d wrong\n", game_name,
           alg == ZT_SEARCH_GUMBEL ? "gumbel" : "puct", sims, checked, wrong);
    zt_search_free(s);
    zt_model_free(m);
    free(ps.pos);
    zt_evaluator_oracle_free(&ev);
    zt_solver_free(sv);
    zt_game_free(g);
}

/* An observation evaluator that returns uniform outputs, checking that each
 * observation is finite and counting calls. */
typedef struct obs_probe {
    const zt_game *g;
    int bad, calls;
} obs_probe;

static zt_status probe_eval(void *ctx, int B, const float *obs, float *logits, float *value)
{
    obs_probe *p = ctx;
    p->calls++;
    size_t n = (size_t)zt_game_obs_size(p->g);
    for (size_t i = 0; i < (size_t)B * n; i++)
        if (!isfinite(obs[i])) p->bad++;
    memset(logits, 0, (size_t)B * (size_t)p->g->num_actions * sizeof *logits);
    memset(value, 0, (size_t)B * sizeof *value);
    return ZT_OK;
}

/* Uniform evaluator, many simulations: the root value approaches the exact
 * value, and the most visited move keeps it. */
static void uniform_converges(void)
{
    zt_game *g;
    if (zt_game_new("tictactoe", NULL, &g) != ZT_OK) {
        printf("skip uniform: %s\n", zt_error_message());
        return;
    }
    zt_solver *sv;
    if (zt_solver_new(g, &sv) != ZT_OK) {
        printf("skip uniform: %s\n", zt_error_message());
        zt_game_free(g);
        return;
    }
    position_set ps = load(sv, "tictactoe/ttt_positions.txt");
    obs_probe probe = {g, 0, 0};
    zt_evaluator ev = {.ctx = &probe, .eval = probe_eval};
    zt_model *m;
    CHECK(zt_az_model_new(g, &ev, G, NULL, &m) == ZT_OK, "az model: %s", zt_error_message());
    zt_search_config cfg;
    zt_search_config_default(&cfg, ZT_SEARCH_PUCT);
    cfg.num_simulations = 3000;
    cfg.tree_reuse = false;
    zt_search *s;
    CHECK(zt_search_new(&cfg, m, G, &s) == ZT_OK, "search: %s", zt_error_message());
    /* positions with at most 4 empty cells, one batch of G */
    int idx[G], n = 0;
    for (int i = 0; i < ps.n && n < G; i++) {
        char text[ZT_MAX_TEXT];
        g->to_text(g, ps.pos[i].state, text, sizeof text);
        int empty = 0;
        for (int k = 0; k < 9; k++) empty += text[k] == '.';
        if (empty <= 4 && i % 7 == 0) idx[n++] = i;
    }
    double worst = 0;
    int wrong = 0;
    for (int i = 0; i < n; i++) zt_search_begin(s, i, ps.pos[idx[i]].state);
    CHECK(zt_search_run(s) == ZT_OK, "search: %s", zt_error_message());
    for (int i = 0; i < n; i++) {
        const zt_position *p = &ps.pos[idx[i]];
        float v = zt_search_root_value(s, i);
        double err = fabs(v - p->expected.value);
        if (err > worst) worst = err;
        if (err > 0.15) {
            char text[ZT_MAX_TEXT];
            g->to_text(g, p->state, text, sizeof text);
            printf("  %s: root value %.3f, exact %d\n", text, v, p->expected.value);
        }
        if (p->has_moves && !in_moves(&p->expected, zt_search_choose(s, i, 0.0f))) wrong++;
    }
    CHECK(n >= 32, "only %d small positions", n);
    CHECK(worst <= 0.15, "uniform root values off by up to %.3f", worst);
    CHECK(wrong == 0, "uniform search chose %d value-losing moves", wrong);
    CHECK(probe.bad == 0 && probe.calls > 0, "observations: %d calls, %d non-finite", probe.calls, probe.bad);
    printf("uniform: %d positions with <= 4 empty cells, %d sims: worst |value - exact| %.3f\n", n,
           cfg.num_simulations, worst);
    zt_search_free(s);
    zt_model_free(m);
    free(ps.pos);
    zt_solver_free(sv);
    zt_game_free(g);
}

/* Self-play-like games on G trees: the NN cache answers transpositions, the
 * root cache starts every game from its deep search, tree reuse keeps the
 * played subtree. */
static void caches(const char *game_name)
{
    enum { GAMES = 8 };
    zt_game *g;
    if (zt_game_new(game_name, NULL, &g) != ZT_OK) {
        printf("skip caches %s: %s\n", game_name, zt_error_message());
        return;
    }
    zt_evaluator ev = zt_evaluator_uniform(g);
    zt_nncache *cache = zt_nncache_new(1 << 14, g->num_actions);
    zt_model *m;
    CHECK(zt_az_model_new(g, &ev, GAMES, cache, &m) == ZT_OK, "az model");
    zt_search_config cfg;
    zt_search_config_default(&cfg, ZT_SEARCH_PUCT);
    cfg.num_simulations = 64;
    zt_search *s;
    CHECK(zt_search_new(&cfg, m, GAMES, &s) == ZT_OK, "search: %s", zt_error_message());
    uint8_t start[ZT_MAX_STATE_BYTES], st[GAMES][ZT_MAX_STATE_BYTES];
    g->reset(g, start);
    CHECK(zt_search_build_root_cache(s, start, 256) == ZT_OK, "root cache");
    bool live[GAMES];
    for (int k = 0; k < GAMES; k++) {
        memcpy(st[k], start, g->state_size);
        live[k] = true;
    }
    for (int ply = 0; ply < g->max_game_length; ply++) {
        bool any = false;
        for (int k = 0; k < GAMES; k++)
            if (live[k]) {
                zt_search_begin(s, k, st[k]);
                any = true;
            }
        if (!any) break;
        CHECK(zt_search_run(s) == ZT_OK, "search: %s", zt_error_message());
        for (int k = 0; k < GAMES; k++) {
            if (!live[k]) continue;
            /* the games differ by their first move */
            const zt_tree *t = zt_search_tree(s, k);
            int a = ply == 0 ? t->actions[t->nodes[0].first_edge + k % t->nodes[0].num_edges] : zt_search_choose(s, k, 0.0f);
            g->apply(g, st[k], a);
            zt_search_played(s, k, a);
            if (g->current_player(g, st[k]) < 0) live[k] = false;
        }
    }
    zt_search_stats stats = zt_search_get_stats(s);
    zt_nncache_stats cs = zt_nncache_get_stats(cache);
    double rate = (double)cs.hits / (double)(cs.lookups ? cs.lookups : 1);
    CHECK(cs.hits > 0, "%s: no NN cache hits", game_name);
    CHECK(stats.root_cache_hits == GAMES, "%s: root cache hits %llu", game_name,
          (unsigned long long)stats.root_cache_hits);
    CHECK(stats.reused_nodes > 0, "%s: tree reuse kept nothing", game_name);
    printf("caches %s: NN cache hit rate %.1f%% (%llu lookups), root cache hits %llu, reused nodes %llu\n",
           game_name, 100 * rate, (unsigned long long)cs.lookups, (unsigned long long)stats.root_cache_hits,
           (unsigned long long)stats.reused_nodes);
    zt_search_free(s);
    zt_model_free(m);
    zt_nncache_free(cache);
    zt_game_free(g);
}

/* The NN cache changes no result: the same searches with and without it. */
static void nncache_is_transparent(void)
{
    zt_game *g;
    if (zt_game_new("tictactoe", NULL, &g) != ZT_OK) return;
    zt_evaluator ev;
    if (zt_evaluator_oracle_new(g, &ev) != ZT_OK) {
        zt_game_free(g);
        return;
    }
    zt_nncache *cache = zt_nncache_new(1 << 12, g->num_actions);
    int32_t visits[2][9];
    float value[2];
    for (int pass = 0; pass < 2; pass++) {
        zt_model *m;
        CHECK(zt_az_model_new(g, &ev, 4, pass ? cache : NULL, &m) == ZT_OK, "az model");
        zt_search_config cfg;
        zt_search_config_default(&cfg, ZT_SEARCH_PUCT);
        cfg.num_simulations = 500;
        cfg.leaves_per_round = 4;
        zt_search *s;
        CHECK(zt_search_new(&cfg, m, 1, &s) == ZT_OK, "search");
        uint8_t start[ZT_MAX_STATE_BYTES];
        g->reset(g, start);
        zt_search_begin(s, 0, start);
        CHECK(zt_search_run(s) == ZT_OK, "search: %s", zt_error_message());
        zt_search_root_visits(s, 0, visits[pass]);
        value[pass] = zt_search_root_value(s, 0);
        if (pass) {
            zt_model_stats ms = m->stats;
            CHECK(ms.evaluations < ms.positions, "cache saved no evaluation");
        }
        zt_search_free(s);
        zt_model_free(m);
    }
    CHECK(memcmp(visits[0], visits[1], sizeof visits[0]) == 0 && value[0] == value[1],
          "NN cache changed the search");
    zt_nncache_free(cache);
    zt_evaluator_oracle_free(&ev);
    zt_game_free(g);
}

/* Backgammon: chance nodes hold finite expectations and the search never
 * enters an outcome of probability 0. */
static void backgammon_chance(void)
{
    enum { GAMES = 4 };
    zt_game *g;
    if (zt_game_new("backgammon", NULL, &g) != ZT_OK) {
        printf("skip backgammon: %s\n", zt_error_message());
        return;
    }
    zt_evaluator ev = zt_evaluator_uniform(g);
    zt_model *m;
    CHECK(zt_az_model_new(g, &ev, GAMES * 2, NULL, &m) == ZT_OK, "az model");
    zt_search_config cfg;
    zt_search_config_default(&cfg, ZT_SEARCH_PUCT);
    cfg.num_simulations = 100;
    cfg.leaves_per_round = 2;
    zt_search *s;
    CHECK(zt_search_new(&cfg, m, GAMES, &s) == ZT_OK, "search: %s", zt_error_message());
    zt_rng rng;
    zt_rng_seed(&rng, 11, 0);
    printf("backgammon seed 11\n");
    uint8_t st[GAMES][ZT_MAX_STATE_BYTES];
    int chance_nodes = 0, bad = 0;
    for (int k = 0; k < GAMES; k++) g->reset(g, st[k]);
    for (int ply = 0; ply < 12; ply++) {
        for (int k = 0; k < GAMES; k++) {
            while (g->current_player(g, st[k]) == ZT_CHANCE) {
                int outcomes[ZT_MAX_CHANCE_OUTCOMES];
                float probs[ZT_MAX_CHANCE_OUTCOMES];
                int n = g->chance_outcomes(g, st[k], outcomes, probs);
                int o = outcomes[zt_rng_categorical(&rng, probs, n)];
                g->apply(g, st[k], o);
                zt_search_played(s, k, o);
            }
            zt_search_begin(s, k, st[k]);
        }
        CHECK(zt_search_run(s) == ZT_OK, "search: %s", zt_error_message());
        for (int k = 0; k < GAMES; k++) {
            const zt_tree *t = zt_search_tree(s, k);
            for (int n = 0; n < t->num_nodes; n++) {
                if (t->nodes[n].kind != ZT_NODE_CHANCE) continue;
                chance_nodes++;
                if (!isfinite(t->nodes[n].value_sum) || fabsf(t->nodes[n].raw_value) > 1.0f) bad++;
                for (int e = t->nodes[n].first_edge; e < t->nodes[n].first_edge + t->nodes[n].num_edges; e++)
                    if (t->edges[e].prior <= 0 && t->edges[e].child != ZT_TREE_NONE) bad++;
            }
            int a = zt_search_choose(s, k, 1.0f);
            g->apply(g, st[k], a);
            zt_search_played(s, k, a);
        }
    }
    CHECK(bad == 0 && chance_nodes > 0, "backgammon: %d bad of %d chance nodes", bad, chance_nodes);
    printf("backgammon: %d chance nodes checked\n", chance_nodes);
    zt_search_free(s);
    zt_model_free(m);
    zt_game_free(g);
}

/* Backgammon with a net that values chance states (evaluator.h,
 * chance_values): the turn's last checker move leads to a chance node
 * whose value is the evaluator's value of the position before the roll,
 * for the roller and so negated for the mover, from one evaluation; without
 * it, the expectation over the rolls, from one evaluation per roll. */
static zt_status marked_race(void *ctx, int B, const void *const *states, float *logits,
                             float *value)
{
    const zt_game *g = ctx;
    memset(logits, 0, (size_t)B * (size_t)g->num_actions * sizeof *logits);
    for (int i = 0; i < B; i++) {
        const bg_state *s = states[i];
        int own = 0, opp = 0;
        for (int p = 0; p < 25; p++) {
            own += s->board[s->turn][p] * (p + 1);
            opp += s->board[!s->turn][p] * (p + 1);
        }
        /* a mark no position with dice carries */
        value[i] = (float)(opp - own) / 400.0f + (s->n_dice == 0 ? 0.25f : 0.0f);
    }
    return ZT_OK;
}

static void backgammon_chance_values(void)
{
    zt_game *g;
    if (zt_game_new("backgammon", NULL, &g) != ZT_OK) {
        CHECK(0, "backgammon: %s", zt_error_message());
        return;
    }
    enum { O = ZT_MAX_CHANCE_OUTCOMES };
    float logits[BG_NUM_ACTIONS], value[1], reward[1], probs[O];
    int8_t kind[1], player[1];
    int num_outcomes[1], outcomes[O];
    zt_model_output out = {logits, value, reward, kind, player, num_outcomes, outcomes, probs};
    /* the opening roll 3-1, then one checker move: one die left */
    uint8_t root[ZT_MAX_STATE_BYTES], st[ZT_MAX_STATE_BYTES], next[ZT_MAX_STATE_BYTES];
    g->reset(g, root);
    g->apply(g, root, zt_bg_roll_id(3, 1));
    uint16_t legal[ZT_MAX_ACTIONS];
    CHECK(g->legal(g, root, legal) > 0, "no move after the opening roll");
    g->apply(g, root, legal[0]);
    int mover = g->current_player(g, root), last;
    CHECK(mover >= 0 && g->legal(g, root, legal) > 0, "no second checker move");
    last = legal[0];
    uint8_t after[ZT_MAX_STATE_BYTES];
    memcpy(after, root, g->state_size);
    g->apply(g, after, last);
    CHECK(g->current_player(g, after) == ZT_CHANCE && g->chance_observer(g, after) != mover,
          "the turn did not pass to the opponent's roll");
    float marked;
    const void *ap[1] = {after};
    marked_race(g, 1, ap, logits, &marked);
    for (int pass = 0; pass < 2; pass++) {
        zt_evaluator ev = {.ctx = g, .eval_states = marked_race, .chance_values = pass == 1};
        zt_model *m;
        CHECK(zt_az_model_new(g, &ev, 1, NULL, &m) == ZT_OK, "az model: %s", zt_error_message());
        const void *roots[1] = {root}, *states[1] = {st};
        void *sts[1] = {st}, *nexts[1] = {next};
        CHECK(m->initial(m, 1, roots, sts, &out) == ZT_OK, "initial");
        uint64_t before = m->stats.evaluations;
        CHECK(m->recurrent(m, 1, states, &last, nexts, &out) == ZT_OK, "recurrent");
        uint64_t evals = m->stats.evaluations - before;
        CHECK(kind[0] == ZT_NODE_CHANCE && player[0] == mover && num_outcomes[0] == 21,
              "pass %d: kind %d player %d outcomes %d", pass, kind[0], player[0], num_outcomes[0]);
        if (pass == 1)
            CHECK(evals == 1 && fabsf(value[0] + marked) < 1e-6f,
                  "chance values: %llu evaluations, value %g (want %g)", (unsigned long long)evals,
                  value[0], -marked);
        else
            CHECK(evals == 21 && fabsf(value[0] + (marked - 0.25f)) < 1e-6f,
                  "expectation: %llu evaluations, value %g (want %g)", (unsigned long long)evals,
                  value[0], -(marked - 0.25f));
        zt_model_free(m);
    }
    zt_game_free(g);
}

/* 2048: an evaluator that values every position at G2048_POINTS points
 * still to come, through the net's transform (game.h). */
#define G2048_POINTS 100.0f

static zt_status g2048_states(void *ctx, int B, const void *const *states, float *logits,
                              float *value)
{
    const zt_game *g = ctx;
    (void)states;
    for (int b = 0; b < B; b++) {
        for (int a = 0; a < g->num_actions; a++) logits[(size_t)b * g->num_actions + a] = 0;
        value[b] = zt_game_value_to_net(g, G2048_POINTS / g->max_return);
    }
    return ZT_OK;
}

static void g2048_state(const zt_game *g, const char *text, uint8_t *s)
{
    memset(s, 0, ZT_MAX_STATE_BYTES);
    CHECK(g->from_text(g, text, s) == ZT_OK, "'%s': %s", text, zt_error_message());
}

static void g2048_rewards(void)
{
    zt_game *g;
    if (zt_game_new("2048", NULL, &g) != ZT_OK) {
        CHECK(0, "2048: %s", zt_error_message());
        return;
    }
    float scale = g->max_return, v = G2048_POINTS / scale;
    zt_evaluator ev = {.ctx = g, .eval_states = g2048_states};
    zt_model *m;
    CHECK(zt_az_model_new(g, &ev, 4, NULL, &m) == ZT_OK, "az model: %s", zt_error_message());
    enum { B = 1, A = 4, O = ZT_MAX_CHANCE_OUTCOMES };
    float logits[A], value[B], reward[B], probs[O];
    int8_t kind[B], player[B];
    int num_outcomes[B], outcomes[O];
    zt_model_output out = {logits, value, reward, kind, player, num_outcomes, outcomes, probs};
    uint8_t root[ZT_MAX_STATE_BYTES], st[ZT_MAX_STATE_BYTES], next[ZT_MAX_STATE_BYTES];
    const void *roots[1] = {root}, *states[1] = {st};
    void *sts[1] = {st}, *nexts[1] = {next};

    /* a move: its merges' points, into a chance node worth the value */
    g2048_state(g, "2,2,4,8/0,0,0,0/0,0,0,0/0,0,0,0 16 move", root);
    CHECK(m->initial(m, 1, roots, sts, &out) == ZT_OK, "initial");
    CHECK(kind[0] == ZT_NODE_DECISION && player[0] == 0 && fabsf(value[0] - v) < 1e-6f &&
              reward[0] == 0,
          "root: kind %d player %d value %g (want %g)", kind[0], player[0], value[0], v);
    int left = ZT_G2048_LEFT;
    CHECK(m->recurrent(m, 1, states, &left, nexts, &out) == ZT_OK, "recurrent");
    CHECK(kind[0] == ZT_NODE_CHANCE && player[0] == 0 && num_outcomes[0] == 26 &&
              fabsf(reward[0] - 4 / scale) < 1e-9f && fabsf(value[0] - v) < 1e-6f,
          "left: kind %d player %d outcomes %d reward %g (want %g) value %g (want %g)", kind[0],
          player[0], num_outcomes[0], reward[0], 4 / scale, value[0], v);

    /* one empty cell: a 2 (0.9) ends the game, a 4 (0.1) leaves a move */
    g2048_state(g, "2,4,2,4/4,2,4,2/2,4,2,4/4,2,4,0 100 spawn", root);
    CHECK(m->initial(m, 1, roots, sts, &out) == ZT_OK, "initial at a spawn");
    CHECK(kind[0] == ZT_NODE_CHANCE && num_outcomes[0] == 2 && fabsf(value[0] - 0.1f * v) < 1e-6f,
          "spawn: kind %d, %d outcomes, value %g (want 0.1 x %g)", kind[0], num_outcomes[0],
          value[0], v);
    int two = outcomes[0];
    CHECK(m->recurrent(m, 1, states, &two, nexts, &out) == ZT_OK, "recurrent to the end");
    CHECK(kind[0] == ZT_NODE_TERMINAL && reward[0] == 0 && value[0] == 0,
          "the end: kind %d reward %g value %g (the banked score is no reward)", kind[0],
          reward[0], value[0]);

    /* search takes the move that merges the 1024s (left or right) */
    g2048_state(g, "0,0,0,0/0,0,0,0/0,0,0,0/1024,1024,0,0 2048 move", root);
    for (int alg = 0; alg < 2; alg++) {
        zt_search_config cfg;
        zt_search_config_default(&cfg, alg ? ZT_SEARCH_PUCT : ZT_SEARCH_GUMBEL);
        cfg.num_simulations = 32;
        cfg.tree_reuse = false;
        cfg.gumbel_noise = false;
        cfg.dirichlet_fraction = 0;
        cfg.minmax_q = alg == 1;
        zt_search_config_size(&cfg, g, 0);
        zt_search *s;
        CHECK(zt_search_new(&cfg, m, 1, &s) == ZT_OK, "search: %s", zt_error_message());
        zt_search_begin(s, 0, root);
        CHECK(zt_search_run(s) == ZT_OK, "search run: %s", zt_error_message());
        int a = zt_search_choose(s, 0, 0.0f);
        float rv = zt_search_root_value(s, 0);
        CHECK(a == 1 || a == 3, "%s chose move %d, not the merge", alg ? "puct" : "gumbel", a);
        CHECK(rv > v, "%s: root value %g not above the leaves' %g", alg ? "puct" : "gumbel", rv, v);
        zt_search_free(s);
    }
    zt_model_free(m);
    zt_game_free(g);
}

int main(void)
{
    oracle_positions("tictactoe", "tictactoe/ttt_positions.txt", ZT_SEARCH_PUCT, 24);
    oracle_positions("tictactoe", "tictactoe/ttt_positions.txt", ZT_SEARCH_GUMBEL, 16);
    oracle_positions("sim", "sim/sim_k6_positions.txt", ZT_SEARCH_PUCT, 32);
    uniform_converges();
    nncache_is_transparent();
    caches("tictactoe");
    caches("connect4");
    backgammon_chance();
    backgammon_chance_values();
    g2048_rewards();
    return zt_test_finish("test_search_az");
}
