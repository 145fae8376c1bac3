/* Sim baseline: depth-limited negamax with alpha-beta, any n, k and variant.
 * Exact facts are scored as such (a win or loss within the horizon, sooner
 * wins and later losses preferred); at the horizon the heuristic counts, in
 * "avoid", the edges each side can still colour without completing its own
 * k-clique (running out of safe edges is how Sim is lost), and in "make" the
 * edges that would complete a clique for each side. Ties at the root are
 * broken uniformly at random: the root moves are shuffled and the first
 * strictly best one is kept. Nothing is allocated per move. */
#include "game/player.h"
#include "core/alloc.h"
#include "game/sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NEGAMAX_WIN = 100000 };

typedef struct negamax {
    int depth;
} negamax;

/* Edges among `edges[0..n)` that would complete a k-clique of colour c. */
static int count_completing(const zt_sim_impl *im, const zt_sim_state *s, int c,
                            const uint16_t *edges, int n)
{
    int count = 0;
    for (int i = 0; i < n; i++)
        count += zt_sim_completes(s, c, im->edge_u[edges[i]], im->edge_v[edges[i]], im->k);
    return count;
}

/* Heuristic value of non-terminal s for its mover, given its free edges. */
static int horizon_value(const zt_sim_impl *im, const zt_sim_state *s, const uint16_t *edges, int n)
{
    int me = s->side;
    int mine = count_completing(im, s, me, edges, n),
        theirs = count_completing(im, s, me ^ 1, edges, n);
    return im->make ? mine - theirs : (n - mine) - (n - theirs);
}

/* Splits the free edges of s into those that complete a clique of the
 * mover's colour (written to `ending`) and the rest (`quiet`). */
static void split_moves(const zt_sim_impl *im, const zt_sim_state *s, const uint16_t *edges, int n,
                        uint16_t *ending, int *n_ending, uint16_t *quiet, int *n_quiet)
{
    *n_ending = *n_quiet = 0;
    for (int i = 0; i < n; i++) {
        if (zt_sim_completes(s, s->side, im->edge_u[edges[i]], im->edge_v[edges[i]], im->k))
            ending[(*n_ending)++] = edges[i];
        else
            quiet[(*n_quiet)++] = edges[i];
    }
}

/* Score for the mover of a state after its move ended the game at ply+1. */
static int terminal_score(const zt_sim_state *child, int mover, int ply)
{
    if (child->result == ZT_SIM_DRAW) return 0;
    bool won = (child->result == ZT_SIM_WIN0) == (mover == 0);
    return won ? NEGAMAX_WIN - (ply + 1) : -(NEGAMAX_WIN - (ply + 1));
}

static int search(const zt_game *g, negamax *nm, const zt_sim_state *s, int depth, int ply,
                  int alpha, int beta)
{
    const zt_sim_impl *im = g->impl;
    uint16_t edges[ZT_SIM_MAX_EDGES], ending[ZT_SIM_MAX_EDGES], quiet[ZT_SIM_MAX_EDGES];
    int n = zt_sim_free_edges(im, s, edges), n_ending, n_quiet;
    split_moves(im, s, edges, n, ending, &n_ending, quiet, &n_quiet);
    /* A clique-completing move decides the game at once: in "make" it is the
     * best move there is; in "avoid" the worst, so it is played only when
     * nothing else is left. */
    if (im->make && n_ending > 0) return NEGAMAX_WIN - (ply + 1);
    if (!im->make && n_quiet == 0) return -(NEGAMAX_WIN - (ply + 1));
    if (depth <= 0) return horizon_value(im, s, edges, n);
    const uint16_t *moves = im->make ? edges : quiet;
    int count = im->make ? n : n_quiet, best = -NEGAMAX_WIN - 1;
    for (int i = 0; i < count; i++) {
        zt_sim_state child = *s;
        g->apply(g, &child, moves[i]);
        int score = child.result != ZT_SIM_ONGOING
                        ? terminal_score(&child, s->side, ply)
                        : -search(g, nm, &child, depth - 1, ply + 1, -beta, -alpha);
        if (score > best) best = score;
        if (best > alpha) alpha = best;
        if (alpha >= beta) break;
    }
    return best;
}

static int negamax_choose(zt_player *p, const void *vs, zt_rng *rng)
{
    const zt_game *g = p->game;
    const zt_sim_impl *im = g->impl;
    negamax *nm = p->impl;
    const zt_sim_state *s = vs;
    ZT_ASSERT(s->result == ZT_SIM_ONGOING);
    uint16_t edges[ZT_SIM_MAX_EDGES], ending[ZT_SIM_MAX_EDGES], quiet[ZT_SIM_MAX_EDGES];
    int n = zt_sim_free_edges(im, s, edges), n_ending, n_quiet;
    split_moves(im, s, edges, n, ending, &n_ending, quiet, &n_quiet);
    if (im->make && n_ending > 0) return ending[zt_rng_below(rng, (uint32_t)n_ending)];
    if (!im->make && n_quiet == 0) return ending[zt_rng_below(rng, (uint32_t)n_ending)];
    uint16_t *moves = im->make ? edges : quiet;
    int count = im->make ? n : n_quiet;
    for (int i = count - 1; i > 0; i--) {
        int j = (int)zt_rng_below(rng, (uint32_t)i + 1);
        uint16_t t = moves[i];
        moves[i] = moves[j];
        moves[j] = t;
    }
    int best = -NEGAMAX_WIN - 1, choice = moves[0];
    for (int i = 0; i < count; i++) {
        zt_sim_state child = *s;
        g->apply(g, &child, moves[i]);
        int score = child.result != ZT_SIM_ONGOING
                        ? terminal_score(&child, s->side, 0)
                        : -search(g, nm, &child, nm->depth - 1, 1, -NEGAMAX_WIN - 1, -best);
        if (score > best) {
            best = score;
            choice = moves[i];
        }
    }
    return choice;
}

static void negamax_free(zt_player *p)
{
    free(p->impl);
    free(p);
}

zt_status zt_player_new_negamax_sim(const zt_game *g, int depth, zt_player **out)
{
    *out = NULL;
    if (strcmp(g->name, "sim") != 0)
        return zt_fail(ZT_ERR_UNSUPPORTED, "player 'negamax' exists for sim, not %s", g->title);
    if (depth < 1 || depth > 64)
        return zt_fail(ZT_ERR_INVALID, "negamax: depth must be 1..64, got %d", depth);
    negamax *nm = zt_xcalloc(1, sizeof *nm);
    nm->depth = depth;
    zt_player *p = zt_xcalloc(1, sizeof *p);
    p->game = g;
    snprintf(p->name, sizeof p->name, "negamax:%d", depth);
    p->impl = nm;
    p->choose = negamax_choose;
    p->free = negamax_free;
    *out = p;
    return ZT_OK;
}
