/* Search trees with capacities fixed at init: nodes and edges are indices,
 * never pointers, so a tree is cloned by copying its used prefixes and a
 * subtree is kept after a move by compaction in O(nodes kept). Nothing here
 * allocates after zt_tree_init; the caller owns the tree and frees it with
 * zt_tree_free.
 *
 * Layout. A simulation at G = 1024 trees finds its tree cold in the cache,
 * so the layout counts cache lines per visited node: a node's fields are one
 * 32-byte record, and the statistics selection needs for every action (prior,
 * N(s,a), W(s,a), child) are one 16-byte record in the node's contiguous
 * edge range. Selection therefore reads a node's edges and never its
 * children. Actions and model states, needed only when a leaf is created,
 * live in arrays of their own. The four arrays are one block.
 *
 * Statistics. A node's visit and value_sum are for the node's own
 * perspective player (model.h); an edge's visit and value_sum are the same
 * simulations seen from the parent: edge.value_sum = N * reward +
 * sign * child.value_sum, sign = +1 when the two players agree. Both count
 * pending (virtual) visits while a round is in flight. */
#ifndef ZT_SEARCH_TREE_H
#define ZT_SEARCH_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "search/model.h"

#define ZT_TREE_NONE (-1)

typedef struct zt_edge {
    float prior;     /* policy probability, or outcome probability at a chance node */
    int32_t child;   /* ZT_TREE_NONE until first selected */
    int32_t visit;   /* N(s, a) */
    float value_sum; /* W(s, a), for the parent's perspective player */
} zt_edge;

typedef struct zt_node {
    int32_t visit;       /* real visits plus pending virtual visits */
    float value_sum;     /* sum of backed-up values, own perspective */
    float reward;        /* reward of the edge into the node (parent's view) */
    float raw_value;     /* the model's value at evaluation */
    int32_t parent;      /* ZT_TREE_NONE at the root */
    int32_t parent_edge; /* the parent's edge leading here; ZT_TREE_NONE at the root */
    int32_t first_edge;  /* edges of a node are contiguous */
    uint16_t num_edges;  /* 0 for new and terminal nodes, and for nodes left unexpanded */
    int8_t kind;         /* zt_node_kind */
    int8_t player;       /* perspective player */
} zt_node;

typedef struct zt_tree {
    int node_capacity, edge_capacity;
    int num_nodes, num_edges; /* used prefixes */
    size_t state_stride;      /* bytes per node state, a multiple of 8 */

    zt_node *nodes;    /* node_capacity */
    zt_edge *edges;    /* edge_capacity */
    uint16_t *actions; /* edge_capacity: action, or outcome id at a chance node */
    uint8_t *states;   /* node_capacity x state_stride model states */

    void *block; /* the one block behind every array */
    size_t bytes;
    bool owns_block; /* false for a tree laid over its owner's memory */
} zt_tree;

/* Sizes the arrays for `nodes` nodes and `edges` edges of `state_size`-byte
 * states. Returns ZT_ERR_NOMEM if the block cannot be allocated. */
int zt_tree_init(zt_tree *t, int nodes, int edges, size_t state_size);

/* The same over `block` (zt_tree_bytes_for bytes, 64-byte aligned), which
 * the caller owns and keeps alive; zt_tree_free then frees nothing but the
 * tree's claim on it. Lets a search put all its trees in one block. */
void zt_tree_init_at(zt_tree *t, void *block, int nodes, int edges, size_t state_size);
void zt_tree_free(zt_tree *t);

/* Bytes held by one tree of these capacities (what zt_tree_init allocates). */
size_t zt_tree_bytes_for(int nodes, int edges, size_t state_size);

/* Empties the tree (root becomes node 0 at the next zt_tree_add_node). */
void zt_tree_clear(zt_tree *t);

/* Appends a node of kind ZT_NODE_NEW under `parent`, reached by the
 * parent's edge `parent_edge`, and links that edge to it; returns its index
 * or ZT_TREE_NONE when the node capacity is spent. The root has parent and
 * parent_edge ZT_TREE_NONE. */
int zt_tree_add_node(zt_tree *t, int parent, int parent_edge);

/* Reserves `n` contiguous edges for node `node`, children unset and
 * statistics zero; returns the first edge index or ZT_TREE_NONE when the
 * edge capacity is spent. */
int zt_tree_add_edges(zt_tree *t, int node, int n);

/* zt_tree_add_edges without initialising the records: the caller writes
 * every one of the n edges and their actions (expansion). */
static inline int zt_tree_reserve_edges(zt_tree *t, int node, int n)
{
    if (n > t->edge_capacity - t->num_edges) return ZT_TREE_NONE;
    int e = t->num_edges;
    t->num_edges += n;
    t->nodes[node].first_edge = e;
    t->nodes[node].num_edges = (uint16_t)n;
    return e;
}

static inline uint8_t *zt_tree_state(const zt_tree *t, int node)
{
    return t->states + (size_t)node * t->state_stride;
}

/* Q(s, a): the mean value of edge e for the parent's player (0 unvisited). */
static inline float zt_tree_edge_q(const zt_tree *t, int e)
{
    const zt_edge *ed = &t->edges[e];
    return ed->visit > 0 ? ed->value_sum / (float)ed->visit : 0.0f;
}

/* An evaluated node with nothing below it for lack of capacity: search
 * treats it as a permanent leaf valued by the model. */
static inline bool zt_tree_is_unexpanded(const zt_tree *t, int node)
{
    const zt_node *n = &t->nodes[node];
    return (n->kind == ZT_NODE_DECISION || n->kind == ZT_NODE_CHANCE) && n->num_edges == 0;
}

/* dst becomes a copy of src (dst's capacities must hold src's used sizes):
 * four memcpy calls of the used prefixes. */
void zt_tree_copy(zt_tree *dst, const zt_tree *src);

/* Rebuilds `dst` (cleared first) from the subtree of `src` under `node`,
 * which becomes the root of dst, in O(nodes kept + their edges). The caller
 * usually swaps dst and src afterwards (zt_tree_swap). `remap` is scratch of
 * src->node_capacity ints. */
void zt_tree_extract(zt_tree *dst, const zt_tree *src, int node, int32_t *remap);

/* Exchanges the storage of two trees of equal capacities. */
void zt_tree_swap(zt_tree *a, zt_tree *b);

/* Edge of `node` for `action`, ZT_TREE_NONE if absent. */
int zt_tree_find_edge(const zt_tree *t, int node, int action);

/* Child of `node` along `action`, ZT_TREE_NONE if absent. */
int zt_tree_find_child(const zt_tree *t, int node, int action);

/* Are the subtrees under a (in ta) and b (in tb) equal in shape, statistics
 * and states? For tests of cloning and reuse. */
bool zt_tree_subtree_equal(const zt_tree *ta, int a, const zt_tree *tb, int b);

#endif
