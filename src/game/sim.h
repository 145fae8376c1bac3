/* Sim internals shared by the game (sim.c), its exact solver (sim_solver.c)
 * and the negamax player (sim_negamax.c): the state layout, the
 * constant tables a zt_game of Sim carries in impl, and the clique tests.
 * Sim (Simmons 1969) generalised: players colour edges of K_n; a k-clique in
 * one's own colour loses ("avoid") or wins ("make"). Player 0 colours red. */
#ifndef ZT_GAME_SIM_H
#define ZT_GAME_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "game/game.h"
#include "game/player.h"

#define ZT_SIM_MAX_N 18
#define ZT_SIM_MAX_EDGES (ZT_SIM_MAX_N * (ZT_SIM_MAX_N - 1) / 2)

enum { ZT_SIM_ONGOING = 0, ZT_SIM_WIN0, ZT_SIM_WIN1, ZT_SIM_DRAW };

/* Fixed size whatever n is; vertices >= n stay zero, so memcmp compares. */
typedef struct zt_sim_state {
    uint32_t adj[2][ZT_SIM_MAX_N]; /* adj[c][u] bit v: edge uv has colour c */
    uint8_t side;                  /* colour to move = player; flips every ply */
    uint8_t result;                /* ZT_SIM_ONGOING, _WIN0, _WIN1, _DRAW */
    uint8_t coloured;              /* edges coloured so far */
    uint8_t pad;                   /* always 0 */
} zt_sim_state;

/* The constant data of one Sim instance, owned by the zt_game. */
typedef struct zt_sim_impl {
    int n, k, edges;
    bool make; /* variant: completing a k-clique wins (else loses) */
    uint8_t edge_u[ZT_SIM_MAX_EDGES], edge_v[ZT_SIM_MAX_EDGES];
    uint8_t row_base[ZT_SIM_MAX_N]; /* action of edge (u, u+1); edge (u,v) = row_base[u]+v-u-1 */
    uint64_t zobrist[2][ZT_SIM_MAX_EDGES];
    uint64_t zobrist_side;
    int num_syms;
    uint8_t *sym_perm; /* [num_syms][n]: vertex u goes to sym_perm[s*n+u] */
    uint8_t *sym_edge; /* [num_syms][edges]: action a goes to sym_edge[s*edges+a] */
} zt_sim_impl;

static inline int zt_sim_edge(const zt_sim_impl *im, int u, int v)
{
    if (u > v) {
        int t = u;
        u = v;
        v = t;
    }
    return im->row_base[u] + v - u - 1;
}

/* Is there an r-clique inside `mask` in the graph `adj`? Each branch takes
 * the lowest vertex and searches its neighbours above it, so every clique is
 * met once; the popcount bound prunes hopeless branches. */
static inline bool zt_sim_has_clique(const uint32_t *adj, uint32_t mask, int r)
{
    if (r <= 0) return true;
    if (r == 1) return mask != 0;
    while (__builtin_popcount(mask) >= r) {
        int w = __builtin_ctz(mask);
        mask &= mask - 1;
        uint32_t next = adj[w] & mask;
        if (r == 2 ? next != 0 : zt_sim_has_clique(adj, next, r - 1)) return true;
    }
    return false;
}

/* Would colouring the (uncoloured) edge uv in colour c complete a k-clique of
 * colour c? Such a clique is uv plus a (k-2)-clique among the common
 * c-neighbours of u and v. */
static inline bool zt_sim_completes(const zt_sim_state *s, int c, int u, int v, int k)
{
    const uint32_t *adj = s->adj[c];
    return zt_sim_has_clique(adj, adj[u] & adj[v], k - 2);
}

/* Uncoloured edges as actions in increasing order; returns how many. */
static inline int zt_sim_free_edges(const zt_sim_impl *im, const zt_sim_state *s, uint16_t *actions)
{
    int count = 0, n = im->n;
    uint32_t all = (uint32_t)((1u << n) - 1);
    for (int u = 0; u < n - 1; u++) {
        uint32_t open = ~(s->adj[0][u] | s->adj[1][u]) & all & ~((2u << u) - 1);
        int base = im->row_base[u] - u - 1;
        while (open) {
            actions[count++] = (uint16_t)(base + __builtin_ctz(open));
            open &= open - 1;
        }
    }
    return count;
}

/* The baseline player "negamax:D" (sim_negamax.c): depth-D negamax with
 * alpha-beta, any n, k and variant. */
zt_status zt_player_new_negamax_sim(const zt_game *g, int depth, zt_player **out);

#endif
