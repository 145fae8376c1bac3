/* The search settings of everything that searches (training self-play, the
 * training arena, eval, play, the benchmarks): one reader of the `search.*`
 * keys of a config, so a run's config.ini drives eval and play with the
 * search it trained with, and one function sizing the trees. Keys, defaults
 * and ranges are listed in docs/search.md. Nothing here allocates. */
#ifndef ZT_SEARCH_SETTINGS_H
#define ZT_SEARCH_SETTINGS_H

#include <stdbool.h>

#include "core/config.h"
#include "core/status.h"
#include "game/game.h"
#include "search/search.h"

/* What the search is for; a few defaults differ. */
typedef enum zt_search_use {
    /* Training self-play: explores (root Dirichlet noise on for PUCT,
     * Gumbel noise on) and reuses trees, whatever the algorithm. */
    ZT_SEARCH_SELFPLAY,
    /* Playing to win (eval, play, the arena): no root noise, tree reuse as
     * the algorithm's default (PUCT on, Gumbel off), and search.sims may be
     * 0, meaning the raw policy's best move instead of a search. */
    ZT_SEARCH_PLAY,
} zt_search_use;

typedef struct zt_search_read_options {
    zt_search_use use;
    /* debug=1: one leaf per round and no tree reuse, written into cfg
     * (search.leaves_per_tree, search.tree_reuse) so that a resolved
     * config shows what ran. */
    bool debug;
    /* The default of search.gumbel_noise for ZT_SEARCH_PLAY (on in eval's
     * matches, for varied games; off on position sets and in play). */
    bool gumbel_noise;
} zt_search_read_options;

/* Reads every search.* key of cfg into *out (zt_search_config_default for
 * search.algorithm, then the keys). node_capacity and edge_capacity stay 0
 * unless the keys set them: zt_search_config_size fills them once the
 * caller knows its root cache. Bad values fail with the key named
 * ("key 'search.sims': 0 is outside [1, 1048576]"). The seed is the
 * caller's. Runs written before leaves_per_tree moved into [search] spell
 * it without the prefix; that spelling is still read. */
zt_status zt_search_config_read(zt_config *cfg, const zt_search_read_options *opt,
                                zt_search_config *out);

/* Tree capacity for searches of `sims` simulations of game g: a simulation
 * adds at most one node, so 2 (sims + 1) nodes and a margin of 64 hold one
 * search; with tree reuse, 8 (sims + 1) hold the kept subtrees of earlier
 * moves; a root cache of root_cache_sims (0: none) is cloned in whole and
 * needs 2 root_cache_sims more. Edges: 32 per node at most on average
 * (wide games draw on the narrow nodes), and never fewer than one search's
 * expanded nodes each as wide as the game, nor than one node's actions. */
void zt_search_capacity(const zt_game *g, int sims, bool tree_reuse, int root_cache_sims,
                        int *nodes, int *edges);

/* Fills c->node_capacity and c->edge_capacity where they are 0, from
 * zt_search_capacity for c's simulations and tree reuse; an edge capacity
 * left 0 beside a given node capacity is 32 edges per node (at least the
 * game's actions). */
void zt_search_config_size(zt_search_config *c, const zt_game *g, int root_cache_sims);

#endif
