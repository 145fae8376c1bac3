/* The one reader of search.* keys and the one tree-capacity rule. */
#include "search/settings.h"

#include <limits.h>

#define MAX_SIMS (1 << 20)

zt_status zt_search_config_read(zt_config *c, const zt_search_read_options *opt,
                                zt_search_config *s)
{
    bool selfplay = opt->use == ZT_SEARCH_SELFPLAY;
    if (opt->debug) {
        zt_config_put(c, "search.leaves_per_tree", "1");
        zt_config_put(c, "search.tree_reuse", "false");
    }
    static const char *const algorithms[] = {"gumbel", "puct", NULL};
    int alg;
    ZT_TRY(zt_config_choice(c, "search.algorithm", "gumbel", algorithms, &alg));
    zt_search_config_default(s, alg == 0 ? ZT_SEARCH_GUMBEL : ZT_SEARCH_PUCT);
    ZT_TRY(zt_config_int32(c, "search.sims", s->num_simulations, selfplay ? 1 : 0, MAX_SIMS,
                   &s->num_simulations));
    int leaves = s->leaves_per_round;
    if (zt_config_has(c, "leaves_per_tree"))
        ZT_TRY(zt_config_int32(c, "leaves_per_tree", leaves, 1, 256, &leaves));
    ZT_TRY(zt_config_int32(c, "search.leaves_per_tree", leaves, 1, 256, &s->leaves_per_round));
    ZT_TRY(zt_config_int32(c, "search.node_capacity", 0, 0, 1 << 26, &s->node_capacity));
    ZT_TRY(zt_config_int32(c, "search.edge_capacity", 0, 0, 1 << 28, &s->edge_capacity));
    ZT_TRY(zt_config_int32(c, "search.gumbel_m", s->gumbel_m, 1, 4096, &s->gumbel_m));
    ZT_TRY(zt_config_bool(c, "search.gumbel_noise", selfplay || opt->gumbel_noise,
                          &s->gumbel_noise));
    ZT_TRY(zt_config_float(c, "search.c_visit", s->c_visit, 0, 1e6, &s->c_visit));
    ZT_TRY(zt_config_float(c, "search.c_scale", s->c_scale, 0, 1e6, &s->c_scale));
    ZT_TRY(zt_config_float(c, "search.c_init", s->c_init, 0, 1e6, &s->c_init));
    ZT_TRY(zt_config_float(c, "search.c_base", s->c_base, 1, 1e9, &s->c_base));
    ZT_TRY(
        zt_config_float(c, "search.dirichlet_alpha", s->dirichlet_alpha, 1e-6, 100, &s->dirichlet_alpha));
    /* AlphaZero's self-play mixes 25 % noise into the root prior. */
    ZT_TRY(zt_config_float(c, "search.dirichlet_fraction", selfplay ? 0.25 : 0, 0, 1,
                     &s->dirichlet_fraction));
    ZT_TRY(zt_config_float(c, "search.virtual_loss", s->virtual_loss, 0, 100, &s->virtual_loss));
    static const char *const fpus[] = {"absolute", "parent", NULL};
    int fpu;
    ZT_TRY(zt_config_choice(c, "search.fpu", "absolute", fpus, &fpu));
    s->fpu = fpu == 0 ? ZT_FPU_ABSOLUTE : ZT_FPU_PARENT;
    ZT_TRY(zt_config_float(c, "search.fpu_value", s->fpu_value, -1, 1, &s->fpu_value));
    ZT_TRY(zt_config_float(c, "search.fpu_reduction", s->fpu_reduction, 0, 2, &s->fpu_reduction));
    ZT_TRY(zt_config_bool(c, "search.tree_reuse", selfplay || s->tree_reuse, &s->tree_reuse));
    ZT_TRY(zt_config_bool(c, "search.minmax_q", s->minmax_q, &s->minmax_q));
    ZT_TRY(zt_config_float(c, "search.discount", s->discount > 0 ? s->discount : 1, 0.5, 1,
                           &s->discount));
    return ZT_OK;
}

/* Edges per node on average: the widest typical node of the games here
 * (backgammon's checker moves and dice, Sim's uncoloured edges) fits, and
 * narrower nodes leave room for the occasional wider one. */
static int average_branching(const zt_game *g)
{
    int b = g->num_actions < 32 ? g->num_actions : 32;
    return g->max_chance_outcomes > b ? g->max_chance_outcomes : b;
}

static int clamp_int(long long v)
{
    return v > INT_MAX ? INT_MAX : (int)v;
}

static int edges_for(const zt_game *g, int nodes, int sims)
{
    int width = g->num_actions > g->max_chance_outcomes ? g->num_actions : g->max_chance_outcomes;
    long long edges = (long long)nodes * average_branching(g);
    long long one_search = ((long long)sims + 1) * width;
    if (edges < one_search) edges = one_search;
    if (edges < g->num_actions) edges = g->num_actions;
    return clamp_int(edges);
}

void zt_search_capacity(const zt_game *g, int sims, bool tree_reuse, int root_cache_sims,
                        int *nodes, int *edges)
{
    ZT_ASSERT(sims >= 0 && root_cache_sims >= 0);
    long long n = 2LL * root_cache_sims + (tree_reuse ? 8LL : 2LL) * ((long long)sims + 1) + 64;
    *nodes = clamp_int(n);
    *edges = edges_for(g, *nodes, sims);
}

void zt_search_config_size(zt_search_config *c, const zt_game *g, int root_cache_sims)
{
    int nodes, edges;
    zt_search_capacity(g, c->num_simulations, c->tree_reuse, root_cache_sims, &nodes, &edges);
    if (c->node_capacity <= 0) {
        c->node_capacity = nodes;
        if (c->edge_capacity <= 0) c->edge_capacity = edges;
    }
    if (c->edge_capacity <= 0) c->edge_capacity = edges_for(g, c->node_capacity, 0);
}
