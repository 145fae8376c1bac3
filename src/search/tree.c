#include "search/tree.h"

#include <string.h>

#include "core/alloc.h"
#include "core/status.h"

_Static_assert(sizeof(zt_edge) == 16, "four edges per cache line");
_Static_assert(sizeof(zt_node) == 32, "two nodes per cache line");

static size_t round_up(size_t x, size_t a)
{
    return (x + a - 1) / a * a;
}

static size_t stride_for(size_t state_size)
{
    return round_up(state_size ? state_size : 1, 8);
}

/* Each array starts on a cache line of the one block. */
size_t zt_tree_bytes_for(int nodes, int edges, size_t state_size)
{
    size_t n = (size_t)nodes, e = (size_t)edges;
    return round_up(n * sizeof(zt_node), ZT_CACHE_LINE) + round_up(e * sizeof(zt_edge), ZT_CACHE_LINE) +
           round_up(e * sizeof(uint16_t), ZT_CACHE_LINE) +
           round_up(n * stride_for(state_size), ZT_CACHE_LINE);
}

static void *carve(unsigned char **p, size_t size)
{
    void *r = *p;
    *p += round_up(size, ZT_CACHE_LINE);
    return r;
}

void zt_tree_init_at(zt_tree *t, void *block, int nodes, int edges, size_t state_size)
{
    ZT_ASSERT(nodes >= 1 && edges >= 1 && ((uintptr_t)block & (ZT_CACHE_LINE - 1)) == 0);
    memset(t, 0, sizeof *t);
    t->node_capacity = nodes;
    t->edge_capacity = edges;
    t->state_stride = stride_for(state_size);
    t->bytes = zt_tree_bytes_for(nodes, edges, state_size);
    t->block = block;
    unsigned char *p = t->block;
    size_t n = (size_t)nodes, e = (size_t)edges;
    t->nodes = carve(&p, n * sizeof(zt_node));
    t->edges = carve(&p, e * sizeof(zt_edge));
    t->actions = carve(&p, e * sizeof(uint16_t));
    t->states = carve(&p, n * t->state_stride);
    ZT_ASSERT((size_t)(p - (unsigned char *)t->block) == t->bytes);
}

int zt_tree_init(zt_tree *t, int nodes, int edges, size_t state_size)
{
    ZT_ASSERT(nodes >= 1 && edges >= 1);
    void *block = zt_aligned_alloc(ZT_CACHE_LINE, zt_tree_bytes_for(nodes, edges, state_size));
    if (!block) {
        memset(t, 0, sizeof *t);
        return ZT_ERR_NOMEM;
    }
    zt_tree_init_at(t, block, nodes, edges, state_size);
    t->owns_block = true;
    return ZT_OK;
}

void zt_tree_free(zt_tree *t)
{
    if (t->owns_block) zt_aligned_free(t->block);
    memset(t, 0, sizeof *t);
}

void zt_tree_clear(zt_tree *t)
{
    t->num_nodes = 0;
    t->num_edges = 0;
}

int zt_tree_add_node(zt_tree *t, int parent, int parent_edge)
{
    if (t->num_nodes == t->node_capacity) return ZT_TREE_NONE;
    int n = t->num_nodes++;
    t->nodes[n] = (zt_node){
        .parent = parent,
        .parent_edge = parent_edge,
        .kind = ZT_NODE_NEW,
        .player = parent == ZT_TREE_NONE ? 0 : t->nodes[parent].player,
    };
    if (parent_edge != ZT_TREE_NONE) t->edges[parent_edge].child = n;
    return n;
}

int zt_tree_add_edges(zt_tree *t, int node, int n)
{
    if (n > t->edge_capacity - t->num_edges) return ZT_TREE_NONE;
    int e = t->num_edges;
    t->num_edges += n;
    t->nodes[node].first_edge = e;
    t->nodes[node].num_edges = (uint16_t)n;
    for (int i = 0; i < n; i++) t->edges[e + i] = (zt_edge){.child = ZT_TREE_NONE};
    return e;
}

void zt_tree_copy(zt_tree *dst, const zt_tree *src)
{
    ZT_ASSERT(dst->node_capacity >= src->num_nodes && dst->edge_capacity >= src->num_edges);
    ZT_ASSERT(dst->state_stride == src->state_stride);
    size_t n = (size_t)src->num_nodes, e = (size_t)src->num_edges;
    memcpy(dst->nodes, src->nodes, n * sizeof(zt_node));
    memcpy(dst->edges, src->edges, e * sizeof(zt_edge));
    memcpy(dst->actions, src->actions, e * sizeof(uint16_t));
    memcpy(dst->states, src->states, n * src->state_stride);
    dst->num_nodes = src->num_nodes;
    dst->num_edges = src->num_edges;
}

void zt_tree_extract(zt_tree *dst, const zt_tree *src, int node, int32_t *remap)
{
    ZT_ASSERT(dst != src && dst->state_stride == src->state_stride);
    zt_tree_clear(dst);
    size_t stride = src->state_stride;
    /* Breadth-first: dst's node list doubles as the queue; remap[new] holds
     * the old index, so only kept nodes and their edges are touched. */
    remap[0] = node;
    dst->nodes[0] = src->nodes[node];
    dst->nodes[0].parent = ZT_TREE_NONE;
    dst->nodes[0].parent_edge = ZT_TREE_NONE;
    memcpy(zt_tree_state(dst, 0), zt_tree_state(src, node), stride);
    dst->num_nodes = 1;
    for (int q = 0; q < dst->num_nodes; q++) {
        const zt_node *old = &src->nodes[remap[q]];
        int n = old->num_edges, from = old->first_edge;
        int e = dst->num_edges;
        ZT_ASSERT(e + n <= dst->edge_capacity);
        dst->nodes[q].first_edge = e;
        dst->num_edges += n;
        memcpy(dst->edges + e, src->edges + from, (size_t)n * sizeof(zt_edge));
        memcpy(dst->actions + e, src->actions + from, (size_t)n * sizeof(uint16_t));
        for (int i = 0; i < n; i++) {
            int c = src->edges[from + i].child;
            if (c == ZT_TREE_NONE) continue;
            int nc = dst->num_nodes++;
            ZT_ASSERT(nc < dst->node_capacity);
            remap[nc] = c;
            dst->nodes[nc] = src->nodes[c];
            dst->nodes[nc].parent = q;
            dst->nodes[nc].parent_edge = e + i;
            memcpy(zt_tree_state(dst, nc), zt_tree_state(src, c), stride);
            dst->edges[e + i].child = nc;
        }
    }
}

void zt_tree_swap(zt_tree *a, zt_tree *b)
{
    ZT_ASSERT(a->node_capacity == b->node_capacity && a->edge_capacity == b->edge_capacity);
    zt_tree t = *a;
    *a = *b;
    *b = t;
}

int zt_tree_find_edge(const zt_tree *t, int node, int action)
{
    int e = t->nodes[node].first_edge, n = t->nodes[node].num_edges;
    for (int i = 0; i < n; i++)
        if (t->actions[e + i] == action) return e + i;
    return ZT_TREE_NONE;
}

int zt_tree_find_child(const zt_tree *t, int node, int action)
{
    int e = zt_tree_find_edge(t, node, action);
    return e == ZT_TREE_NONE ? ZT_TREE_NONE : t->edges[e].child;
}

static bool node_equal(const zt_tree *ta, int a, const zt_tree *tb, int b)
{
    const zt_node *na = &ta->nodes[a], *nb = &tb->nodes[b];
    return na->visit == nb->visit && na->value_sum == nb->value_sum && na->reward == nb->reward &&
           na->raw_value == nb->raw_value && na->num_edges == nb->num_edges && na->kind == nb->kind &&
           na->player == nb->player && ta->state_stride == tb->state_stride &&
           memcmp(zt_tree_state(ta, a), zt_tree_state(tb, b), ta->state_stride) == 0;
}

bool zt_tree_subtree_equal(const zt_tree *ta, int a, const zt_tree *tb, int b)
{
    if (!node_equal(ta, a, tb, b)) return false;
    int ea = ta->nodes[a].first_edge, eb = tb->nodes[b].first_edge;
    for (int i = 0; i < ta->nodes[a].num_edges; i++) {
        const zt_edge *xa = &ta->edges[ea + i], *xb = &tb->edges[eb + i];
        if (ta->actions[ea + i] != tb->actions[eb + i] || xa->prior != xb->prior ||
            xa->visit != xb->visit || xa->value_sum != xb->value_sum)
            return false;
        int ca = xa->child, cb = xb->child;
        if ((ca == ZT_TREE_NONE) != (cb == ZT_TREE_NONE)) return false;
        if (ca != ZT_TREE_NONE && !zt_tree_subtree_equal(ta, ca, tb, cb)) return false;
    }
    return true;
}
