/* Greedy move choice over the ends of the mover's turn (greedy.h). */
#include "agent/greedy.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"

/* Actions one turn may take (backgammon: four checker moves of doubles). */
#define GREEDY_MAX_TURN 8
/* Positions one turn can pass through, deduplicated by hash (backgammon's
 * worst rolls reach a few thousand); past 3/4 of this, repeats are valued
 * twice rather than refused. */
#define SEEN_BITS 16
/* Chance levels expanded below a turn's end: the opponent's roll, the
 * mover's own roll when the opponent could not move, and the opponent's
 * again. What lies deeper (each side unable to move, again and again) is
 * left out, and the value is the expectation over the rest (the
 * probability mass reached). */
#define CHANCE_LEVELS 3
/* Lookahead: the turn ends valued again one ply deeper, at most this many
 * (the best at 0 ply; as GNU Backgammon's move filters keep a few). */
#define LOOKAHEAD_CANDIDATES 8

typedef struct turn_plan {
    bool valid;
    int n, next; /* actions of the chosen turn, and the next to play */
    uint16_t actions[GREEDY_MAX_TURN];
    float value;
    uint64_t expect[ZT_MAX_STATE_BYTES / 8]; /* the state actions[next] is played in */
} turn_plan;

typedef struct turn_end {
    int n;
    uint16_t path[GREEDY_MAX_TURN];
    double value; /* for the mover, summed over its queries */
    double mass;  /* probability of the outcomes valued */
} turn_end;

/* Lookahead: one outcome below a candidate end (a roll of the opponent's,
 * or the opponent's turn itself where no chance comes between), whose
 * mover's ends are ends[first, last); its best end's value counts with
 * weight `weight` (probability, negated where its mover is the
 * opponent) in candidate `cand`'s value. */
typedef struct reply_group {
    int cand;
    int first, last;
    double weight;
} reply_group;

struct zt_greedy {
    const zt_game *g;
    zt_evaluator ev; /* borrowed context */
    int max_batch;
    int games;
    int plies; /* lookahead: 0 or 1 */
    turn_plan *plans;
    int mover;
    /* the ends of the turn being chosen */
    turn_end *ends;
    int nends, ends_cap;
    /* the lookahead's groups */
    reply_group *groups;
    int ngroups, groups_cap;
    /* positions to value with the network: state, the end it counts for,
     * and its weight (probability, and -1 where the opponent is to move) */
    uint8_t *qstates;
    int *qend;
    float *qweight;
    int nq, q_cap;
    /* seen positions of the turn being chosen */
    uint64_t *seen;
    uint32_t *stamp;
    uint32_t gen;
    int nseen;
    /* one network call's buffers */
    float *obs, *logits, *values;
    const void **ptrs;
    uint64_t evaluations, calls;
};

zt_status zt_greedy_new(const zt_game *g, const zt_evaluator *ev, int games, int max_batch,
                        int plies, zt_greedy **out)
{
    *out = NULL;
    if (games < 1 || max_batch < 1)
        return zt_fail(ZT_ERR_INVALID, "greedy: games and max_batch must be >= 1");
    if (plies < 0 || plies > 1)
        return zt_fail(ZT_ERR_INVALID, "greedy: plies must be 0 or 1, not %d", plies);
    zt_greedy *gr = zt_xcalloc(1, sizeof *gr);
    gr->g = g;
    gr->ev = *ev;
    gr->games = games;
    gr->max_batch = max_batch;
    gr->plies = plies;
    gr->plans = zt_xcalloc((size_t)games, sizeof *gr->plans);
    gr->seen = zt_xcalloc((size_t)1 << SEEN_BITS, sizeof *gr->seen);
    gr->stamp = zt_xcalloc((size_t)1 << SEEN_BITS, sizeof *gr->stamp);
    size_t obs_size = (size_t)zt_game_obs_size(g);
    gr->obs = zt_xmalloc((size_t)max_batch * obs_size * sizeof *gr->obs);
    gr->logits = zt_xmalloc((size_t)max_batch * (size_t)g->num_actions * sizeof *gr->logits);
    gr->values = zt_xmalloc((size_t)max_batch * sizeof *gr->values);
    gr->ptrs = zt_xmalloc((size_t)max_batch * sizeof *gr->ptrs);
    *out = gr;
    return ZT_OK;
}

void zt_greedy_free(zt_greedy *gr)
{
    if (!gr) return;
    free(gr->plans);
    free(gr->ends);
    free(gr->groups);
    free(gr->qstates);
    free(gr->qend);
    free(gr->qweight);
    free(gr->seen);
    free(gr->stamp);
    free(gr->obs);
    free(gr->logits);
    free(gr->values);
    free(gr->ptrs);
    free(gr);
}

uint64_t zt_greedy_evaluations(const zt_greedy *gr)
{
    return gr->evaluations;
}

uint64_t zt_greedy_calls(const zt_greedy *gr)
{
    return gr->calls;
}

/* Marks the position with hash h seen; false if it was already. */
static bool first_visit(zt_greedy *gr, uint64_t h)
{
    if (gr->nseen >= (3 << SEEN_BITS) / 4) return true;
    size_t mask = ((size_t)1 << SEEN_BITS) - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        if (gr->stamp[i] != gr->gen) {
            gr->stamp[i] = gr->gen;
            gr->seen[i] = h;
            gr->nseen++;
            return true;
        }
        if (gr->seen[i] == h) return false;
    }
}

/* Forgets the positions seen (a new turn's moves are enumerated). */
static void new_seen(zt_greedy *gr)
{
    gr->nseen = 0;
    if (++gr->gen == 0) { /* stamps wrapped: forget them all */
        memset(gr->stamp, 0, ((size_t)1 << SEEN_BITS) * sizeof *gr->stamp);
        gr->gen = 1;
    }
}

static void new_turn(zt_greedy *gr)
{
    gr->nends = 0;
    gr->nq = 0;
    new_seen(gr);
}

static void add_query(zt_greedy *gr, const void *state, int end, float weight)
{
    if (gr->nq == gr->q_cap) {
        int cap = gr->q_cap ? 2 * gr->q_cap : 1024;
        gr->qstates = zt_xrealloc(gr->qstates, (size_t)cap * gr->g->state_size);
        gr->qend = zt_xrealloc(gr->qend, (size_t)cap * sizeof *gr->qend);
        gr->qweight = zt_xrealloc(gr->qweight, (size_t)cap * sizeof *gr->qweight);
        gr->q_cap = cap;
    }
    memcpy(gr->qstates + (size_t)gr->nq * gr->g->state_size, state, gr->g->state_size);
    gr->qend[gr->nq] = end;
    gr->qweight[gr->nq] = weight;
    gr->nq++;
}

/* The value of chance state s for the mover, with weight w, into end `end`:
 * exact over the outcomes, down to CHANCE_LEVELS levels. */
static void expand_chance(zt_greedy *gr, const void *s, int end, double w, int level)
{
    const zt_game *g = gr->g;
    int outcomes[ZT_MAX_CHANCE_OUTCOMES];
    float probs[ZT_MAX_CHANCE_OUTCOMES];
    uint64_t child[ZT_MAX_STATE_BYTES / 8];
    int n = g->chance_outcomes(g, s, outcomes, probs);
    for (int i = 0; i < n; i++) {
        memcpy(child, s, g->state_size);
        g->apply(g, child, outcomes[i]);
        int cp = g->current_player(g, child);
        double p = w * probs[i];
        if (cp == ZT_TERMINAL) {
            gr->ends[end].value += p * zt_game_value_of(g, child, gr->mover);
            gr->ends[end].mass += p;
        } else if (cp >= 0) {
            add_query(gr, child, end, (float)(cp == gr->mover ? p : -p));
            gr->ends[end].mass += p;
        } else if (level + 1 < CHANCE_LEVELS)
            expand_chance(gr, child, end, p, level + 1);
    }
}

/* A position where the mover's turn is over: a new end, valued exactly if
 * the game is over, else through the network (below the roll for chance). */
static void add_end(zt_greedy *gr, const void *s, const uint16_t *path, int n)
{
    const zt_game *g = gr->g;
    gr->ends = zt_xgrow(gr->ends, &gr->ends_cap, gr->nends + 1, sizeof *gr->ends);
    int e = gr->nends++;
    turn_end *te = &gr->ends[e];
    te->n = n;
    memcpy(te->path, path, (size_t)n * sizeof *path);
    te->value = 0;
    te->mass = 1;
    int cp = g->current_player(g, s);
    if (cp == ZT_TERMINAL)
        te->value = zt_game_value_of(g, s, gr->mover);
    else if (cp >= 0)
        add_query(gr, s, e, cp == gr->mover ? 1.0f : -1.0f);
    else if (gr->ev.chance_values && g->chance_observer)
        add_query(gr, s, e, g->chance_observer(g, s) == gr->mover ? 1.0f : -1.0f);
    else {
        te->mass = 0;
        expand_chance(gr, s, e, 1.0, 0);
    }
}

/* Every sequence of the mover's actions from s until its turn is over. */
static void visit(zt_greedy *gr, const void *s, uint16_t *path, int depth)
{
    const zt_game *g = gr->g;
    uint16_t actions[ZT_MAX_ACTIONS];
    uint64_t child[ZT_MAX_STATE_BYTES / 8];
    int n = g->legal(g, s, actions);
    for (int i = 0; i < n; i++) {
        memcpy(child, s, g->state_size);
        g->apply(g, child, actions[i]);
        path[depth] = actions[i];
        /* the same position by another order of the same moves */
        if (!first_visit(gr, g->hash(g, child))) continue;
        if (g->current_player(g, child) == gr->mover) {
            ZT_ASSERT(depth + 1 < GREEDY_MAX_TURN);
            visit(gr, child, path, depth + 1);
        } else {
            add_end(gr, child, path, depth + 1);
        }
    }
}

/* Values every query through the network, max_batch at a time. */
static zt_status value_queries(zt_greedy *gr)
{
    const zt_game *g = gr->g;
    size_t obs_size = (size_t)zt_game_obs_size(g);
    for (int off = 0; off < gr->nq; off += gr->max_batch) {
        int B = gr->nq - off < gr->max_batch ? gr->nq - off : gr->max_batch;
        const uint8_t *first = gr->qstates + (size_t)off * g->state_size;
        if (gr->ev.eval_states) {
            for (int i = 0; i < B; i++) gr->ptrs[i] = first + (size_t)i * g->state_size;
            ZT_TRY(gr->ev.eval_states(gr->ev.ctx, B, gr->ptrs, gr->logits, gr->values));
        } else {
            for (int i = 0; i < B; i++)
                g->observe(g, first + (size_t)i * g->state_size, gr->obs + (size_t)i * obs_size);
            ZT_TRY(gr->ev.eval(gr->ev.ctx, B, gr->obs, gr->logits, gr->values));
        }
        gr->calls++;
        gr->evaluations += (uint64_t)B;
        for (int i = 0; i < B; i++)
            gr->ends[gr->qend[off + i]].value += (double)gr->qweight[off + i] * gr->values[i];
    }
    gr->nq = 0;
    return ZT_OK;
}

/* The end of highest value in [first, last) (not empty); ties to the first. */
static int best_end(const zt_greedy *gr, int first, int last)
{
    int best = first;
    for (int e = first + 1; e < last; e++)
        if (gr->ends[e].value > gr->ends[best].value) best = e;
    return best;
}

/* Each end in [first, last) from the sum over its outcomes to their mean. */
static void normalise_ends(zt_greedy *gr, int first, int last)
{
    for (int e = first; e < last; e++)
        if (gr->ends[e].mass > 0) gr->ends[e].value /= gr->ends[e].mass;
}

/* The reply groups below position s (a candidate end of the turn, not
 * terminal) for candidate `cand`: each outcome of a chance node, or s
 * itself where a player is to move; each group's ends are its mover's
 * turn ends (one, valued directly, where that mover cannot move: a chance
 * node again). */
static void add_groups(zt_greedy *gr, int cand, const void *s, int root_mover)
{
    const zt_game *g = gr->g;
    int outcomes[ZT_MAX_CHANCE_OUTCOMES];
    float probs[ZT_MAX_CHANCE_OUTCOMES];
    uint64_t child[ZT_MAX_STATE_BYTES / 8];
    uint16_t path[GREEDY_MAX_TURN];
    int n = 1;
    bool chance = g->current_player(g, s) == ZT_CHANCE;
    if (chance) n = g->chance_outcomes(g, s, outcomes, probs);
    for (int i = 0; i < n; i++) {
        memcpy(child, s, g->state_size);
        if (chance) g->apply(g, child, outcomes[i]);
        int cp = g->current_player(g, child);
        gr->groups = zt_xgrow(gr->groups, &gr->groups_cap, gr->ngroups + 1, sizeof *gr->groups);
        reply_group *rg = &gr->groups[gr->ngroups++];
        rg->cand = cand;
        rg->first = gr->nends;
        double p = chance ? probs[i] : 1.0;
        if (cp >= 0) { /* the reply: that player's best turn */
            gr->mover = cp;
            new_seen(gr);
            visit(gr, child, path, 0);
            rg->weight = cp == root_mover ? p : -p;
        } else { /* over, or no move and another roll: valued as it stands */
            gr->mover = root_mover;
            add_end(gr, child, path, 0);
            rg->weight = p;
        }
        rg->last = gr->nends;
    }
}

/* One ply deeper (gnubg's "1-ply"): the best LOOKAHEAD_CANDIDATES ends of
 * the turn from s, by their 0-ply values, valued again as the expectation
 * over what follows (the opponent's roll) of the value of the opponent's
 * best reply, each reply valued as the 0-ply ends are. Ends that finish
 * the game keep their exact values. *chosen: the best end. */
static zt_status lookahead(zt_greedy *gr, const void *s, int *chosen)
{
    const zt_game *g = gr->g;
    int root_mover = gr->mover, nroot = gr->nends;
    int cand[LOOKAHEAD_CANDIDATES], ncand = 0;
    /* the best ends at 0 ply, best first, ties to the first found: each
     * end goes into the short sorted list where it belongs, if it does */
    for (int e = 0; e < nroot; e++) {
        int at = ncand;
        while (at > 0 && gr->ends[cand[at - 1]].value < gr->ends[e].value) at--;
        if (at == LOOKAHEAD_CANDIDATES) continue;
        if (ncand < LOOKAHEAD_CANDIDATES) ncand++;
        /* the list's tail moves down a place (its last falls off when full) */
        memmove(cand + at + 1, cand + at, (size_t)(ncand - 1 - at) * sizeof *cand);
        cand[at] = e;
    }
    gr->ngroups = 0;
    uint64_t end_state[ZT_MAX_STATE_BYTES / 8];
    bool deeper[LOOKAHEAD_CANDIDATES];
    for (int c = 0; c < ncand; c++) {
        const turn_end *te = &gr->ends[cand[c]];
        memcpy(end_state, s, g->state_size);
        for (int i = 0; i < te->n; i++) g->apply(g, end_state, te->path[i]);
        deeper[c] = g->current_player(g, end_state) != ZT_TERMINAL;
        if (deeper[c]) add_groups(gr, c, end_state, root_mover);
    }
    gr->mover = root_mover;
    ZT_TRY(value_queries(gr));
    normalise_ends(gr, nroot, gr->nends);
    double v1[LOOKAHEAD_CANDIDATES] = {0};
    for (int k = 0; k < gr->ngroups; k++) {
        const reply_group *rg = &gr->groups[k];
        ZT_ASSERT(rg->last > rg->first);
        v1[rg->cand] += rg->weight * gr->ends[best_end(gr, rg->first, rg->last)].value;
    }
    int best = -1;
    for (int c = 0; c < ncand; c++) {
        turn_end *te = &gr->ends[cand[c]];
        if (deeper[c]) te->value = v1[c];
        if (best < 0 || te->value > gr->ends[best].value) best = cand[c];
    }
    *chosen = best;
    return ZT_OK;
}

static void play_from_plan(zt_greedy *gr, turn_plan *p, const void *s, int *action, float *value)
{
    *action = p->actions[p->next++];
    *value = p->value;
    memcpy(p->expect, s, gr->g->state_size);
    gr->g->apply(gr->g, p->expect, *action);
}

zt_status zt_greedy_choose(zt_greedy *gr, int slot, const void *s, int *action, float *value)
{
    const zt_game *g = gr->g;
    ZT_ASSERT(slot >= 0 && slot < gr->games);
    turn_plan *p = &gr->plans[slot];
    /* The rest of the turn chosen before, if this is where it went on. */
    if (p->valid && p->next < p->n && memcmp(p->expect, s, g->state_size) == 0) {
        play_from_plan(gr, p, s, action, value);
        return ZT_OK;
    }
    p->valid = false;
    gr->mover = g->current_player(g, s);
    ZT_ASSERT(gr->mover >= 0);
    new_turn(gr);
    uint16_t path[GREEDY_MAX_TURN];
    visit(gr, s, path, 0);
    ZT_ASSERT(gr->nends > 0);
    ZT_TRY(value_queries(gr));
    normalise_ends(gr, 0, gr->nends);
    int best;
    if (gr->plies > 0)
        ZT_TRY(lookahead(gr, s, &best));
    else
        best = best_end(gr, 0, gr->nends);
    const turn_end *te = &gr->ends[best];
    p->valid = true;
    p->n = te->n;
    p->next = 0;
    memcpy(p->actions, te->path, (size_t)te->n * sizeof *te->path);
    /* An expectation of values in [-1, 1], up to the rounding of float
     * probabilities. */
    float v = (float)te->value;
    ZT_ASSERT(v > -1.001f && v < 1.001f);
    p->value = v < -1 ? -1 : v > 1 ? 1 : v;
    play_from_plan(gr, p, s, action, value);
    return ZT_OK;
}
