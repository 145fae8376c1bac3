/* Search trees as structs of arrays with capacities fixed at init: nodes and
 * edges are indices, never pointers, so a tree is cloned by copying its used
 * prefix and a subtree is kept after a move by compaction in O(nodes kept).
 * Nothing here allocates after zt_tree_init; the caller owns the tree and
 * frees it with zt_tree_free.
 *
 * Node statistics are kept for the node's own perspective player (model.h):
 * value_sum / visit is the node's value for player[n]. The edge value seen
 * from the parent is reward[n] + sign * value, sign = +1 when player[n] ==
 * player[parent]. */
#ifndef ZT_SEARCH_TREE_H
#define ZT_SEARCH_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "search/model.h"

#define ZT_TREE_NONE (-1)

typedef struct zt_tree {
    int node_capacity, edge_capacity;
    int num_nodes, num_edges; /* used prefixes */
    size_t state_stride;      /* bytes per node state, a multiple of 8 */

    /* nodes */
    int32_t *visit;       /* real visits plus pending virtual visits */
    float *value_sum;     /* sum of backed-up values, own perspective */
    float *reward;        /* reward of the edge into the node (parent's view) */
    float *raw_value;     /* the model's value at evaluation */
    int32_t *parent;      /* ZT_TREE_NONE at the root */
    int32_t *first_edge;  /* edges of a node are contiguous */
    uint16_t *num_edges_of;
    int8_t *kind;         /* zt_node_kind */
    int8_t *player;       /* perspective player */
    uint8_t *unexpanded;  /* evaluated but no edges (capacity): a permanent leaf */
    uint8_t *states;      /* node_capacity x state_stride model states */

    /* edges */
    int32_t *child;       /* ZT_TREE_NONE until first visited */
    uint16_t *action;     /* action, or outcome id at a chance node */
    float *prior;         /* policy probability, or outcome probability */

    void *block;          /* the one allocation behind every array */
    size_t bytes;
} zt_tree;

/* Sizes the arrays for `nodes` nodes and `edges` edges of `state_size`-byte
 * states. Returns ZT_ERR_NOMEM if the block cannot be allocated. */
int zt_tree_init(zt_tree *t, int nodes, int edges, size_t state_size);
void zt_tree_free(zt_tree *t);

/* Bytes held by one tree of these capacities (what zt_tree_init allocates). */
size_t zt_tree_bytes_for(int nodes, int edges, size_t state_size);

/* Empties the tree (root becomes node 0 at the next zt_tree_add_node). */
void zt_tree_clear(zt_tree *t);

/* Appends a node of kind ZT_NODE_NEW under `parent`; returns its index or
 * ZT_TREE_NONE when the node capacity is spent. */
int zt_tree_add_node(zt_tree *t, int parent);

/* Reserves `n` contiguous edges for node `node`, children unset; returns the
 * first edge index or ZT_TREE_NONE when the edge capacity is spent. */
int zt_tree_add_edges(zt_tree *t, int node, int n);

static inline uint8_t *zt_tree_state(const zt_tree *t, int node)
{
    return t->states + (size_t)node * t->state_stride;
}

/* The value of node's edge as seen from its parent. */
static inline float zt_tree_q(const zt_tree *t, int node)
{
    float v = t->value_sum[node] / (float)t->visit[node];
    int p = t->parent[node];
    if (p != ZT_TREE_NONE && t->player[p] != t->player[node]) v = -v;
    return t->reward[node] + v;
}

/* dst becomes a copy of src (dst's capacities must hold src's used sizes). */
void zt_tree_copy(zt_tree *dst, const zt_tree *src);

/* Rebuilds `dst` (cleared first) from the subtree of `src` under `node`,
 * which becomes the root of dst, in O(nodes kept + their edges). The caller
 * usually swaps dst and src afterwards (zt_tree_swap). `remap` is scratch of
 * src->node_capacity ints. */
void zt_tree_extract(zt_tree *dst, const zt_tree *src, int node, int32_t *remap);

/* Exchanges the storage of two trees of equal capacities. */
void zt_tree_swap(zt_tree *a, zt_tree *b);

/* Child of `node` along `action`, ZT_TREE_NONE if absent. */
int zt_tree_find_child(const zt_tree *t, int node, int action);

/* Are the subtrees under a (in ta) and b (in tb) equal in shape, statistics
 * and states? For tests of cloning and reuse. */
bool zt_tree_subtree_equal(const zt_tree *ta, int a, const zt_tree *tb, int b);

#endif
