/* The search settings (search/settings.h): every search.* key lands in its
 * field of zt_search_config; the defaults of self-play and of play differ
 * only where documented (root noise, Gumbel noise, tree reuse, 0 sims);
 * every bad value is refused with a message naming its key; debug=1 forces
 * one leaf per round and no tree reuse into the config; the old spelling
 * leaves_per_tree is still read. Tree capacity: self-play trees are never
 * smaller than the actor's former rule, explicit capacities are kept, and
 * searches sized by zt_search_config_size never run out of nodes or edges
 * in any game (uniform evaluator, no tree reuse, first moves of games). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/az_model.h"
#include "agent/evaluators.h"
#include "core/rng.h"
#include "search/settings.h"

#include "zt_test.h"

static zt_config *config_of(const char *const *sets)
{
    zt_config *c = zt_config_new();
    for (int i = 0; sets && sets[i]; i++) {
        zt_status st = zt_config_set(c, sets[i]);
        CHECK(st == ZT_OK, "%s: %s", sets[i], zt_error_message());
    }
    return c;
}

static zt_status read_with(const char *const *sets, zt_search_use use, bool debug, bool noise,
                           zt_search_config *out)
{
    zt_config *c = config_of(sets);
    zt_search_read_options opt = {.use = use, .debug = debug, .gumbel_noise = noise};
    zt_status st = zt_search_config_read(c, &opt, out);
    if (st == ZT_OK) {
        st = zt_config_check_unused(c);
        CHECK(st == ZT_OK, "a key was left unread: %s", zt_error_message());
    }
    zt_config_free(c);
    return st;
}

static void test_keys_map_to_fields(void)
{
    static const char *const sets[] = {
        "search.algorithm=puct",     "search.sims=77",          "search.leaves_per_tree=3",
        "search.node_capacity=5000", "search.edge_capacity=9000", "search.gumbel_m=5",
        "search.gumbel_noise=false", "search.c_visit=40",       "search.c_scale=0.5",
        "search.c_init=2.5",         "search.c_base=1000",      "search.dirichlet_alpha=0.15",
        "search.dirichlet_fraction=0.4", "search.virtual_loss=2", "search.fpu=parent",
        "search.fpu_value=-0.5",     "search.fpu_reduction=0.3", "search.tree_reuse=false",
        NULL};
    for (int use = 0; use < 2; use++) {
        zt_search_config s;
        zt_status st = read_with(sets, (zt_search_use)use, false, true, &s);
        CHECK(st == ZT_OK, "use %d: %s", use, zt_error_message());
        if (st != ZT_OK) continue;
        CHECK(s.algorithm == ZT_SEARCH_PUCT && s.num_simulations == 77 &&
                  s.leaves_per_round == 3 && s.node_capacity == 5000 && s.edge_capacity == 9000 &&
                  s.gumbel_m == 5 && !s.gumbel_noise,
              "use %d: shape fields", use);
        CHECK(s.c_visit == 40.0f && s.c_scale == 0.5f && s.c_init == 2.5f && s.c_base == 1000.0f &&
                  s.dirichlet_alpha == 0.15f && s.dirichlet_fraction == 0.4f &&
                  s.virtual_loss == 2.0f && s.fpu == ZT_FPU_PARENT && s.fpu_value == -0.5f &&
                  s.fpu_reduction == 0.3f && !s.tree_reuse,
              "use %d: constants", use);
    }
}

static void test_defaults(void)
{
    zt_search_config s, d;
    /* Self-play explores and reuses trees whatever the algorithm. */
    CHECK(read_with(NULL, ZT_SEARCH_SELFPLAY, false, false, &s) == ZT_OK, "%s", zt_error_message());
    zt_search_config_default(&d, ZT_SEARCH_GUMBEL);
    CHECK(s.algorithm == ZT_SEARCH_GUMBEL && s.num_simulations == d.num_simulations &&
              s.leaves_per_round == 1 && s.gumbel_m == d.gumbel_m && s.c_visit == d.c_visit &&
              s.c_init == d.c_init && s.dirichlet_fraction == 0.25f && s.gumbel_noise &&
              s.tree_reuse && s.node_capacity == 0 && s.edge_capacity == 0,
          "self-play defaults");
    /* Play: no root noise; reuse as the algorithm's default; Gumbel noise as asked. */
    CHECK(read_with(NULL, ZT_SEARCH_PLAY, false, false, &s) == ZT_OK, "%s", zt_error_message());
    CHECK(s.algorithm == ZT_SEARCH_GUMBEL && s.num_simulations == 32 &&
              s.dirichlet_fraction == 0.0f && !s.gumbel_noise && !s.tree_reuse,
          "play defaults (gumbel)");
    CHECK(read_with(NULL, ZT_SEARCH_PLAY, false, true, &s) == ZT_OK && s.gumbel_noise,
          "play: gumbel_noise follows the option");
    static const char *const puct[] = {"search.algorithm=puct", NULL};
    CHECK(read_with(puct, ZT_SEARCH_PLAY, false, false, &s) == ZT_OK, "%s", zt_error_message());
    CHECK(s.num_simulations == 200 && s.tree_reuse && s.dirichlet_fraction == 0.0f,
          "play defaults (puct)");
    /* 0 simulations: the raw policy, for play only. */
    static const char *const zero[] = {"search.sims=0", NULL};
    CHECK(read_with(zero, ZT_SEARCH_PLAY, false, false, &s) == ZT_OK && s.num_simulations == 0,
          "play refuses 0 simulations: %s", zt_error_message());
    CHECK(read_with(zero, ZT_SEARCH_SELFPLAY, false, false, &s) == ZT_ERR_INVALID &&
              strstr(zt_error_message(), "key 'search.sims'"),
          "self-play takes 0 simulations (%s)", zt_error_message());
}

static void test_bad_values(void)
{
    static const struct {
        const char *set, *key;
    } bad[] = {
        {"search.algorithm=mcts", "'search.algorithm'"},
        {"search.sims=-1", "'search.sims'"},
        {"search.sims=many", "'search.sims'"},
        {"search.sims=2000000", "'search.sims'"},
        {"search.leaves_per_tree=0", "'search.leaves_per_tree'"},
        {"search.leaves_per_tree=257", "'search.leaves_per_tree'"},
        {"leaves_per_tree=0", "'leaves_per_tree'"},
        {"search.node_capacity=-5", "'search.node_capacity'"},
        {"search.edge_capacity=x", "'search.edge_capacity'"},
        {"search.gumbel_m=0", "'search.gumbel_m'"},
        {"search.gumbel_noise=maybe", "'search.gumbel_noise'"},
        {"search.c_visit=-1", "'search.c_visit'"},
        {"search.c_scale=nan", "'search.c_scale'"},
        {"search.c_init=-0.1", "'search.c_init'"},
        {"search.c_base=0.5", "'search.c_base'"},
        {"search.dirichlet_alpha=0", "'search.dirichlet_alpha'"},
        {"search.dirichlet_fraction=1.5", "'search.dirichlet_fraction'"},
        {"search.virtual_loss=101", "'search.virtual_loss'"},
        {"search.fpu=relative", "'search.fpu'"},
        {"search.fpu_value=2", "'search.fpu_value'"},
        {"search.fpu_reduction=3", "'search.fpu_reduction'"},
        {"search.tree_reuse=2", "'search.tree_reuse'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        for (int use = 0; use < 2; use++) {
            const char *sets[] = {bad[i].set, NULL};
            zt_search_config s;
            zt_status st = read_with(sets, (zt_search_use)use, false, false, &s);
            CHECK(st == ZT_ERR_INVALID && strstr(zt_error_message(), bad[i].key),
                  "%s (use %d): status %d, message '%s'", bad[i].set, use, (int)st,
                  zt_error_message());
        }
    }
}

static void test_debug_and_old_key(void)
{
    /* debug=1 wins over the config, and the config records what ran. */
    static const char *const fast[] = {"search.leaves_per_tree=8", "search.tree_reuse=true", NULL};
    zt_config *c = config_of(fast);
    zt_search_read_options opt = {.use = ZT_SEARCH_SELFPLAY, .debug = true};
    zt_search_config s;
    CHECK(zt_search_config_read(c, &opt, &s) == ZT_OK, "%s", zt_error_message());
    CHECK(s.leaves_per_round == 1 && !s.tree_reuse, "debug: K %d, reuse %d", s.leaves_per_round,
          (int)s.tree_reuse);
    int64_t k;
    bool reuse;
    CHECK(zt_config_int(c, "search.leaves_per_tree", 99, 1, 1000, &k) == ZT_OK && k == 1 &&
              zt_config_bool(c, "search.tree_reuse", true, &reuse) == ZT_OK && !reuse,
          "debug's settings are not in the config");
    zt_config_free(c);

    /* Configs and runs written before the key joined [search]. */
    static const char *const old[] = {"leaves_per_tree=4", NULL};
    CHECK(read_with(old, ZT_SEARCH_SELFPLAY, false, false, &s) == ZT_OK && s.leaves_per_round == 4,
          "leaves_per_tree=4 read as K %d", s.leaves_per_round);
    static const char *const both[] = {"leaves_per_tree=4", "search.leaves_per_tree=2", NULL};
    CHECK(read_with(both, ZT_SEARCH_SELFPLAY, false, false, &s) == ZT_OK && s.leaves_per_round == 2,
          "search.leaves_per_tree does not win over the old spelling: K %d", s.leaves_per_round);
}

static const char *const game_names[] = {"tictactoe", "connect4", "sim", "backgammon"};

static zt_game *game_or_die(const char *name)
{
    zt_game *g = NULL;
    zt_config *c = zt_config_new();
    /* Sim on K14: 91 actions, wider than the 32-edge average. */
    if (strcmp(name, "sim") == 0) zt_config_put(c, "vertices", "14");
    zt_status st = zt_game_new(name, c, &g);
    zt_config_free(c);
    CHECK(st == ZT_OK, "%s: %s", name, zt_error_message());
    return g;
}

static void test_capacity_rule(void)
{
    for (int gi = 0; gi < 4; gi++) {
        zt_game *g = game_or_die(game_names[gi]);
        if (!g) continue;
        int width = g->num_actions > g->max_chance_outcomes ? g->num_actions : g->max_chance_outcomes;
        int sims_list[] = {0, 1, 8, 32, 200, 1600};
        for (int si = 0; si < 6; si++) {
            for (int reuse = 0; reuse < 2; reuse++) {
                int cache = reuse ? 256 : 0, sims = sims_list[si], nodes, edges;
                zt_search_capacity(g, sims, reuse, cache, &nodes, &edges);
                /* The actor's rule before the capacity function. */
                int old_nodes = 2 * cache + (reuse ? 8 : 2) * (sims + 1) + 64;
                int branching = g->num_actions < 32 ? g->num_actions : 32;
                if (g->max_chance_outcomes > branching) branching = g->max_chance_outcomes;
                int old_edges = old_nodes * branching > g->num_actions ? old_nodes * branching
                                                                        : g->num_actions;
                CHECK(nodes >= old_nodes && edges >= old_edges,
                      "%s sims %d reuse %d: %d nodes %d edges, smaller than %d / %d", g->title,
                      sims, reuse, nodes, edges, old_nodes, old_edges);
                CHECK(nodes >= sims + 1 && edges >= (sims + 1) * width,
                      "%s sims %d: one search does not fit %d nodes %d edges", g->title, sims,
                      nodes, edges);
            }
        }
        /* Explicit capacities are kept; an edge capacity left 0 follows the nodes. */
        zt_search_config c;
        zt_search_config_default(&c, ZT_SEARCH_PUCT);
        c.node_capacity = 300;
        c.edge_capacity = 0;
        zt_search_config_size(&c, g, 0);
        CHECK(c.node_capacity == 300 && c.edge_capacity >= 300 && c.edge_capacity >= g->num_actions,
              "%s: explicit nodes: %d / %d", g->title, c.node_capacity, c.edge_capacity);
        c.node_capacity = 0;
        c.edge_capacity = 1234;
        zt_search_config_size(&c, g, 0);
        CHECK(c.edge_capacity == 1234 && c.node_capacity >= 2 * (c.num_simulations + 1),
              "%s: explicit edges: %d / %d", g->title, c.node_capacity, c.edge_capacity);
        zt_game_free(g);
    }
}

/* Plays `moves` moves of G lockstep games from the start with a search
 * sized by zt_search_config_size; the search never runs out of room. */
static void search_fits(const char *name, zt_search_algorithm alg, int sims, int moves)
{
    enum { G = 4 };
    zt_game *g = game_or_die(name);
    if (!g) return;
    zt_evaluator ev = zt_evaluator_uniform(g);
    zt_search_config cfg;
    zt_search_config_default(&cfg, alg);
    cfg.num_simulations = sims;
    cfg.tree_reuse = false;
    cfg.node_capacity = cfg.edge_capacity = 0;
    zt_search_config_size(&cfg, g, 0);
    zt_model *m = NULL;
    zt_search *s = NULL;
    zt_status st = zt_az_model_new(g, &ev, G, NULL, &m);
    if (st == ZT_OK) st = zt_search_new(&cfg, m, G, &s);
    CHECK(st == ZT_OK, "%s: %s", name, zt_error_message());
    uint8_t *states = calloc(G, ZT_MAX_STATE_BYTES);
    zt_rng rng;
    zt_rng_seed(&rng, 5, 0);
    for (int k = 0; st == ZT_OK && k < G; k++) g->reset(g, states + (size_t)k * ZT_MAX_STATE_BYTES);
    for (int mv = 0; st == ZT_OK && mv < moves; mv++) {
        int begun = 0;
        for (int k = 0; k < G; k++) {
            void *sk = states + (size_t)k * ZT_MAX_STATE_BYTES;
            while (g->current_player(g, sk) == ZT_CHANCE) {
                int outcomes[ZT_MAX_CHANCE_OUTCOMES];
                float probs[ZT_MAX_CHANCE_OUTCOMES];
                int n = g->chance_outcomes(g, sk, outcomes, probs);
                g->apply(g, sk, outcomes[zt_rng_categorical(&rng, probs, n)]);
            }
            if (g->current_player(g, sk) < 0) continue;
            zt_search_begin(s, k, sk);
            begun++;
        }
        if (!begun) break;
        zt_search_run(s);
        for (int k = 0; k < G; k++) {
            void *sk = states + (size_t)k * ZT_MAX_STATE_BYTES;
            if (g->current_player(g, sk) < 0) continue;
            int a = zt_search_choose(s, k, 1.0f);
            g->apply(g, sk, a);
            zt_search_played(s, k, a);
        }
    }
    if (s) {
        zt_search_stats stats = zt_search_get_stats(s);
        CHECK(stats.simulations > 0 && stats.capacity_hits == 0,
              "%s %s %d sims: %llu capacity hits in %llu simulations", g->title,
              alg == ZT_SEARCH_GUMBEL ? "gumbel" : "puct", sims,
              (unsigned long long)stats.capacity_hits, (unsigned long long)stats.simulations);
    }
    free(states);
    zt_search_free(s);
    zt_model_free(m);
    zt_game_free(g);
}

int main(void)
{
    test_keys_map_to_fields();
    test_defaults();
    test_bad_values();
    test_debug_and_old_key();
    test_capacity_rule();
    for (int gi = 0; gi < 4; gi++) {
        search_fits(game_names[gi], ZT_SEARCH_PUCT, 200, 4);
        search_fits(game_names[gi], ZT_SEARCH_GUMBEL, 200, 4);
    }
    return zt_test_finish("test_search_settings");
}
