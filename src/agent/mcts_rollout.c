/* "mcts:N": plain Monte Carlo tree search with random rollouts, N
 * simulations a move, for any two-player game (agent/player.h): a strength
 * rung that needs no network and no knowledge of the game, between random
 * play and the games' own searchers (issue 14 measures Sim K14 against it).
 *
 * UCT (Kocsis and Szepesvari 2006): from the root, a decision node picks
 * its child of highest mean + C sqrt(ln n / n_child), an unvisited child
 * first (uniformly among them); a chance node samples its outcome by the
 * game's probabilities. The first node not yet expanded gets all its
 * children, one of them is entered, and the game is played out from there
 * with uniformly random moves and chance by its probabilities. The returns
 * (scaled by max_return into [-1, 1]; a rollout longer than the game's
 * max_game_length counts as a draw) are added along the path, both
 * players' sums at every node, so a node's mean is read for whoever chooses
 * it. The move played is the root's most visited child (ties: the lowest
 * action). The tree is built afresh each move in the player's own buffer,
 * which grows as needed and is kept between moves. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/player.h"
#include "core/alloc.h"

#define UCT_C 1.41421356f /* sqrt(2), for returns in [-1, 1] */

enum {
    MAX_PATH = 4096,         /* nodes a simulation descends (a deeper path is cut there) */
    MAX_SIMULATIONS = 100000 /* a K14 Sim tree of that many holds about 9 M nodes, 220 MB */
};

typedef struct mnode {
    int32_t first; /* children [first, first + count), or -1 while unexpanded */
    int16_t count;
    int16_t move;  /* the action or chance outcome that leads here */
    float prob;    /* a chance outcome's probability */
    uint32_t visits;
    float sum[2];  /* summed returns of players 0 and 1 */
} mnode;

typedef struct mcts_player {
    int simulations;
    mnode *nodes;
    int n, cap;
    int32_t path[MAX_PATH];
} mcts_player;

static int32_t add_nodes(mcts_player *m, int count)
{
    m->nodes = zt_xgrow(m->nodes, &m->cap, m->n + count, sizeof *m->nodes);
    int32_t at = m->n;
    m->n += count;
    return at;
}

/* Gives node i its children in state s (not terminal). */
static void expand(mcts_player *m, const zt_game *g, int32_t i, const void *s)
{
    int who = g->current_player(g, s);
    int moves[ZT_MAX_ACTIONS];
    float probs[ZT_MAX_CHANCE_OUTCOMES];
    int count;
    if (who == ZT_CHANCE) {
        count = g->chance_outcomes(g, s, moves, probs);
    } else {
        uint16_t actions[ZT_MAX_ACTIONS];
        count = g->legal(g, s, actions);
        for (int k = 0; k < count; k++) moves[k] = actions[k];
    }
    ZT_ASSERT(count > 0);
    int32_t first = add_nodes(m, count); /* may move m->nodes */
    for (int k = 0; k < count; k++)
        m->nodes[first + k] = (mnode){.first = -1,
                                      .move = (int16_t)moves[k],
                                      .prob = who == ZT_CHANCE ? probs[k] : 0.0f};
    m->nodes[i].first = first;
    m->nodes[i].count = (int16_t)count;
}

/* The child of decision node i that player `who` enters. */
static int32_t select_child(const mcts_player *m, int32_t i, int who, zt_rng *rng)
{
    const mnode *p = &m->nodes[i];
    int unvisited = 0;
    for (int k = 0; k < p->count; k++) unvisited += m->nodes[p->first + k].visits == 0;
    if (unvisited > 0) {
        int pick = (int)zt_rng_below(rng, (uint32_t)unvisited);
        for (int k = 0; k < p->count; k++)
            if (m->nodes[p->first + k].visits == 0 && pick-- == 0) return p->first + k;
    }
    float log_n = logf((float)p->visits);
    int32_t best = p->first;
    float best_score = -INFINITY;
    for (int k = 0; k < p->count; k++) {
        const mnode *c = &m->nodes[p->first + k];
        float score = c->sum[who] / (float)c->visits + UCT_C * sqrtf(log_n / (float)c->visits);
        if (score > best_score) {
            best_score = score;
            best = p->first + k;
        }
    }
    return best;
}

/* The child of chance node i by the outcomes' probabilities. */
static int32_t sample_child(const mcts_player *m, int32_t i, zt_rng *rng)
{
    const mnode *p = &m->nodes[i];
    float probs[ZT_MAX_CHANCE_OUTCOMES];
    for (int k = 0; k < p->count; k++) probs[k] = m->nodes[p->first + k].prob;
    return p->first + zt_rng_categorical(rng, probs, p->count);
}

/* Plays s out at random; the returns, in [-1, 1], into r. (As
 * zt_game_random_playout, but cut at the game's max_game_length: a
 * rollout must end.) */
static void rollout(const zt_game *g, void *s, int plies, zt_rng *rng, float *r)
{
    for (;;) {
        int who = g->current_player(g, s);
        if (who == ZT_TERMINAL) break;
        if (who == ZT_CHANCE) {
            g->apply(g, s, zt_game_sample_chance(g, s, rng));
            continue;
        }
        if (plies++ >= g->max_game_length) {
            r[0] = r[1] = 0.0f;
            return;
        }
        uint16_t actions[ZT_MAX_ACTIONS];
        int n = g->legal(g, s, actions);
        g->apply(g, s, actions[zt_rng_below(rng, (uint32_t)n)]);
    }
    g->returns(g, s, r);
    r[0] /= g->max_return;
    r[1] /= g->max_return;
}

static int choose(zt_player *p, const void *root, zt_rng *rng)
{
    mcts_player *m = p->impl;
    const zt_game *g = p->game;
    m->n = 0;
    add_nodes(m, 1);
    m->nodes[0] = (mnode){.first = -1};
    uint64_t s[ZT_MAX_STATE_BYTES / 8];
    for (int sim = 0; sim < m->simulations; sim++) {
        memcpy(s, root, g->state_size);
        int32_t i = 0;
        int depth = 0, plies = 0;
        m->path[depth++] = 0;
        bool expanded_here = false;
        for (;;) {
            int who = g->current_player(g, s);
            if (who == ZT_TERMINAL) break;
            if (m->nodes[i].first < 0) {
                if (expanded_here) break; /* one new node per simulation: play out from it */
                expand(m, g, i, s);
                expanded_here = true;
            }
            i = who == ZT_CHANCE ? sample_child(m, i, rng) : select_child(m, i, who, rng);
            g->apply(g, s, m->nodes[i].move);
            plies += who != ZT_CHANCE;
            m->path[depth++] = i;
            if (depth == MAX_PATH) break;
        }
        float r[2];
        rollout(g, s, plies, rng, r);
        for (int d = 0; d < depth; d++) {
            mnode *n = &m->nodes[m->path[d]];
            n->visits++;
            n->sum[0] += r[0];
            n->sum[1] += r[1];
        }
    }
    const mnode *top = &m->nodes[0];
    int32_t best = top->first;
    for (int k = 1; k < top->count; k++)
        if (m->nodes[top->first + k].visits > m->nodes[best].visits) best = top->first + k;
    return m->nodes[best].move;
}

static void player_free(zt_player *p)
{
    mcts_player *m = p->impl;
    free(m->nodes);
    free(m);
    free(p);
}

zt_status zt_player_new_mcts(const zt_game *g, const char *spec, zt_player **out)
{
    *out = NULL;
    char *end;
    long n = strtol(spec + strlen("mcts:"), &end, 10);
    if (spec[strlen("mcts:")] == '\0' || *end != '\0' || n < 1 || n > MAX_SIMULATIONS)
        return zt_fail(ZT_ERR_INVALID, "player '%s': simulations must be an integer in [1, %d]",
                       spec, MAX_SIMULATIONS);
    if (zt_game_num_players(g) != 2)
        return zt_fail(ZT_ERR_UNSUPPORTED, "player '%s' is for two-player games, not %s", spec,
                       g->title);
    mcts_player *m = zt_xcalloc(1, sizeof *m);
    m->simulations = (int)n;
    zt_player *p = zt_xcalloc(1, sizeof *p);
    p->game = g;
    snprintf(p->name, sizeof p->name, "%s", spec);
    p->impl = m;
    p->choose = choose;
    p->free = player_free;
    *out = p;
    return ZT_OK;
}
