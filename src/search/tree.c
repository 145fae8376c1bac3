#include "search/tree.h"

#include <string.h>

#include "core/alloc.h"
#include "core/status.h"

static size_t round_up(size_t x, size_t a)
{
    return (x + a - 1) / a * a;
}

static size_t stride_for(size_t state_size)
{
    return round_up(state_size ? state_size : 1, 8);
}

/* Every array of the struct of arrays starts on a cache line of one block. */
size_t zt_tree_bytes_for(int nodes, int edges, size_t state_size)
{
    size_t n = (size_t)nodes, e = (size_t)edges;
    size_t total = 0;
    size_t node_sizes[] = {4, 4, 4, 4, 4, 4, 2, 1, 1, 1};
    for (size_t i = 0; i < sizeof node_sizes / sizeof node_sizes[0]; i++)
        total += round_up(n * node_sizes[i], ZT_CACHE_LINE);
    total += round_up(n * stride_for(state_size), ZT_CACHE_LINE);
    size_t edge_sizes[] = {4, 2, 4};
    for (size_t i = 0; i < sizeof edge_sizes / sizeof edge_sizes[0]; i++)
        total += round_up(e * edge_sizes[i], ZT_CACHE_LINE);
    return total;
}

static void *carve(unsigned char **p, size_t size)
{
    void *r = *p;
    *p += round_up(size, ZT_CACHE_LINE);
    return r;
}

int zt_tree_init(zt_tree *t, int nodes, int edges, size_t state_size)
{
    ZT_ASSERT(nodes >= 1 && edges >= 1);
    memset(t, 0, sizeof *t);
    t->node_capacity = nodes;
    t->edge_capacity = edges;
    t->state_stride = stride_for(state_size);
    t->bytes = zt_tree_bytes_for(nodes, edges, state_size);
    t->block = zt_aligned_alloc(ZT_CACHE_LINE, t->bytes);
    if (!t->block) return ZT_ERR_NOMEM;
    unsigned char *p = t->block;
    size_t n = (size_t)nodes, e = (size_t)edges;
    t->visit = carve(&p, n * 4);
    t->value_sum = carve(&p, n * 4);
    t->reward = carve(&p, n * 4);
    t->raw_value = carve(&p, n * 4);
    t->parent = carve(&p, n * 4);
    t->first_edge = carve(&p, n * 4);
    t->num_edges_of = carve(&p, n * 2);
    t->kind = carve(&p, n);
    t->player = carve(&p, n);
    t->unexpanded = carve(&p, n);
    t->states = carve(&p, n * t->state_stride);
    t->child = carve(&p, e * 4);
    t->action = carve(&p, e * 2);
    t->prior = carve(&p, e * 4);
    ZT_ASSERT((size_t)(p - (unsigned char *)t->block) == t->bytes);
    return ZT_OK;
}

void zt_tree_free(zt_tree *t)
{
    zt_aligned_free(t->block);
    memset(t, 0, sizeof *t);
}

void zt_tree_clear(zt_tree *t)
{
    t->num_nodes = 0;
    t->num_edges = 0;
}

int zt_tree_add_node(zt_tree *t, int parent)
{
    if (t->num_nodes == t->node_capacity) return ZT_TREE_NONE;
    int n = t->num_nodes++;
    t->visit[n] = 0;
    t->value_sum[n] = 0;
    t->reward[n] = 0;
    t->raw_value[n] = 0;
    t->parent[n] = parent;
    t->first_edge[n] = 0;
    t->num_edges_of[n] = 0;
    t->kind[n] = ZT_NODE_NEW;
    t->player[n] = parent == ZT_TREE_NONE ? 0 : t->player[parent];
    t->unexpanded[n] = 0;
    return n;
}

int zt_tree_add_edges(zt_tree *t, int node, int n)
{
    if (n > t->edge_capacity - t->num_edges) return ZT_TREE_NONE;
    int e = t->num_edges;
    t->num_edges += n;
    t->first_edge[node] = e;
    t->num_edges_of[node] = (uint16_t)n;
    for (int i = 0; i < n; i++) t->child[e + i] = ZT_TREE_NONE;
    return e;
}

/* Copies node arrays [from, from+n) of src to [to, to+n) of dst. */
static void copy_nodes(zt_tree *dst, int to, const zt_tree *src, int from, int n)
{
    size_t k = (size_t)n;
    memcpy(dst->visit + to, src->visit + from, k * 4);
    memcpy(dst->value_sum + to, src->value_sum + from, k * 4);
    memcpy(dst->reward + to, src->reward + from, k * 4);
    memcpy(dst->raw_value + to, src->raw_value + from, k * 4);
    memcpy(dst->parent + to, src->parent + from, k * 4);
    memcpy(dst->first_edge + to, src->first_edge + from, k * 4);
    memcpy(dst->num_edges_of + to, src->num_edges_of + from, k * 2);
    memcpy(dst->kind + to, src->kind + from, k);
    memcpy(dst->player + to, src->player + from, k);
    memcpy(dst->unexpanded + to, src->unexpanded + from, k);
    memcpy(zt_tree_state(dst, to), zt_tree_state(src, from), k * src->state_stride);
}

void zt_tree_copy(zt_tree *dst, const zt_tree *src)
{
    ZT_ASSERT(dst->node_capacity >= src->num_nodes && dst->edge_capacity >= src->num_edges);
    ZT_ASSERT(dst->state_stride == src->state_stride);
    copy_nodes(dst, 0, src, 0, src->num_nodes);
    size_t e = (size_t)src->num_edges;
    memcpy(dst->child, src->child, e * 4);
    memcpy(dst->action, src->action, e * 2);
    memcpy(dst->prior, src->prior, e * 4);
    dst->num_nodes = src->num_nodes;
    dst->num_edges = src->num_edges;
}

void zt_tree_extract(zt_tree *dst, const zt_tree *src, int node, int32_t *remap)
{
    ZT_ASSERT(dst != src && dst->state_stride == src->state_stride);
    zt_tree_clear(dst);
    /* Breadth-first: dst's node list doubles as the queue; remap[new] holds
     * the old index, so only kept nodes and their edges are touched. */
    remap[0] = node;
    copy_nodes(dst, 0, src, node, 1);
    dst->parent[0] = ZT_TREE_NONE;
    dst->num_nodes = 1;
    for (int q = 0; q < dst->num_nodes; q++) {
        int old = remap[q];
        int n = src->num_edges_of[old];
        int from = src->first_edge[old];
        int e = dst->num_edges;
        ZT_ASSERT(e + n <= dst->edge_capacity);
        dst->first_edge[q] = e;
        dst->num_edges += n;
        memcpy(dst->action + e, src->action + from, (size_t)n * 2);
        memcpy(dst->prior + e, src->prior + from, (size_t)n * 4);
        for (int i = 0; i < n; i++) {
            int c = src->child[from + i];
            if (c == ZT_TREE_NONE) {
                dst->child[e + i] = ZT_TREE_NONE;
                continue;
            }
            int nc = dst->num_nodes++;
            ZT_ASSERT(nc < dst->node_capacity);
            remap[nc] = c;
            copy_nodes(dst, nc, src, c, 1);
            dst->parent[nc] = q;
            dst->child[e + i] = nc;
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

int zt_tree_find_child(const zt_tree *t, int node, int action)
{
    int e = t->first_edge[node], n = t->num_edges_of[node];
    for (int i = 0; i < n; i++)
        if (t->action[e + i] == action) return t->child[e + i];
    return ZT_TREE_NONE;
}

static bool node_equal(const zt_tree *ta, int a, const zt_tree *tb, int b)
{
    return ta->visit[a] == tb->visit[b] && ta->value_sum[a] == tb->value_sum[b] &&
           ta->reward[a] == tb->reward[b] && ta->raw_value[a] == tb->raw_value[b] &&
           ta->num_edges_of[a] == tb->num_edges_of[b] && ta->kind[a] == tb->kind[b] &&
           ta->player[a] == tb->player[b] && ta->unexpanded[a] == tb->unexpanded[b] &&
           ta->state_stride == tb->state_stride &&
           memcmp(zt_tree_state(ta, a), zt_tree_state(tb, b), ta->state_stride) == 0;
}

bool zt_tree_subtree_equal(const zt_tree *ta, int a, const zt_tree *tb, int b)
{
    if (!node_equal(ta, a, tb, b)) return false;
    int ea = ta->first_edge[a], eb = tb->first_edge[b];
    for (int i = 0; i < ta->num_edges_of[a]; i++) {
        if (ta->action[ea + i] != tb->action[eb + i] || ta->prior[ea + i] != tb->prior[eb + i])
            return false;
        int ca = ta->child[ea + i], cb = tb->child[eb + i];
        if ((ca == ZT_TREE_NONE) != (cb == ZT_TREE_NONE)) return false;
        if (ca != ZT_TREE_NONE && !zt_tree_subtree_equal(ta, ca, tb, cb)) return false;
    }
    return true;
}
