#include "search/search.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/alloc.h"
#include "core/rng.h"
#include "game/game.h"
#include "search/fastexp.h"
#include "search/gumbel.h"

/* Gumbel and reused statistics. Danihelka et al.'s guarantee of policy
 * improvement concerns the final choice, argmax over the considered actions
 * of g + logits + sigma(q); sequential halving is only the bandit that
 * spends this search's budget on estimating those q. A reused subtree (tree
 * reuse, the root cache) brings q-values that are better estimates of the
 * same quantities, so keeping them is sound as long as the halving itself
 * runs on this search's own simulations: the schedule's "visits wanted"
 * counts the simulations this search sent through each root action
 * (slot.halving_visits), and the winner is the considered action that went
 * furthest in this search's halving. Completed Q, sigma (max N) and the
 * policy target use all statistics in the tree. Gumbel-top-k draws fresh
 * Gumbel variables and candidates at every search. */

/* One tree and the state of its current search. Root arrays are indexed by
 * the root's edge number, not by action. */
typedef struct slot {
    zt_tree tree;
    zt_rng rng;
    bool searching;   /* begun and not finished */
    bool paused;      /* searching, set aside while the root cache is built */
    bool has_root;    /* node 0 is an evaluated decision node */
    bool prepared;    /* root noise / Gumbel candidates drawn for this search */
    bool quiet;       /* searches without root noise (zt_search_set_quiet) */
    int sims_target;  /* simulations of this search */
    int sims_started; /* selected (pending or done) in this search */
    int sims_done;
    int gumbel_m;     /* candidates considered in this search */
    float qmin, qmax; /* range of backed-up Q, for minmax_q */
    bool root_noise;         /* PUCT: root_prior holds the prior with Dirichlet noise */
    float *root_prior;       /* PUCT with noise: noisy prior; Gumbel: g(a) + logits(a) */
    float *gumbel;           /* Gumbel variables (Dirichlet scratch for PUCT) */
    uint8_t *considered;     /* Gumbel: in the top-m sample */
    int32_t *halving_visits; /* Gumbel: this search's simulations per root edge */
    uint8_t *input;
} slot;

typedef struct leaf {
    int slot, node;
} leaf;

struct zt_search {
    zt_search_config cfg;
    zt_model *model;
    int num_trees;    /* user trees; slot num_trees is the root cache */
    slot *slots;
    zt_tree spare;    /* scratch target of subtree extraction */
    int32_t *remap;
    uint8_t *kept;    /* per node: kept by tree reuse (models with release only) */
    bool cache_valid;

    /* one round's batch, sized num_trees * K */
    int batch_cap;
    leaf *leaves;
    const void **in_states;
    void **out_states;
    int *actions;
    zt_model_output out;

    zt_search_stats stats;
    void *block;      /* slot arrays and batch buffers */
    void *tree_block; /* every tree, the spare included */
};

void zt_search_config_default(zt_search_config *c, zt_search_algorithm algorithm)
{
    memset(c, 0, sizeof *c);
    c->algorithm = algorithm;
    c->num_simulations = algorithm == ZT_SEARCH_GUMBEL ? 32 : 200;
    c->leaves_per_round = 1;
    c->node_capacity = 4096;
    c->edge_capacity = 32768;
    c->c_init = 1.25f;
    c->c_base = 19652.0f;
    c->fpu = ZT_FPU_ABSOLUTE;
    c->fpu_value = 0.0f;
    c->fpu_reduction = 0.0f;
    c->dirichlet_alpha = 0.3f;
    c->dirichlet_fraction = 0.0f;
    c->virtual_loss = 1.0f;
    c->gumbel_m = 16;
    c->c_visit = 50.0f;
    c->c_scale = 1.0f;
    c->gumbel_noise = true;
    c->gumbel_rescale = true;
    c->discount = 1.0f;
    /* Gumbel AlphaZero's paper and mctx search every move afresh; reuse is
     * sound for it (see above) but not the published setting. */
    c->tree_reuse = algorithm == ZT_SEARCH_PUCT;
    c->seed = 1;
}

/* ---- allocation ---- */

/* All trees of a search share one block. At G = 1024 the trees span tens of
 * megabytes and every simulation lands in a tree last touched a round ago:
 * with 4 KiB pages most of its cache misses would also miss the TLB, so a
 * block of 2 MiB or more is aligned to and advised onto huge pages (where
 * the kernel offers them; elsewhere this is a plain aligned block). Zeroed
 * after the advice, so the first touch already gets huge pages. */
#define HUGE_PAGE ((size_t)2 << 20)

static void *tree_block_alloc(size_t bytes)
{
    void *p = NULL;
    size_t align = bytes >= HUGE_PAGE ? HUGE_PAGE : ZT_CACHE_LINE;
    if (align == HUGE_PAGE) bytes = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
    if (posix_memalign(&p, align, bytes) != 0) return NULL;
#ifdef MADV_HUGEPAGE
    if (align == HUGE_PAGE) madvise(p, bytes, MADV_HUGEPAGE);
#endif
    memset(p, 0, bytes);
    return p;
}

static void *take(zt_arena *a, size_t size)
{
    void *p = zt_arena_alloc(a, size ? size : 1, 16);
    ZT_ASSERT(p != NULL);
    return p;
}

zt_status zt_search_new(const zt_search_config *cfg, zt_model *model, int num_trees,
                        zt_search **out)
{
    *out = NULL;
    int K = cfg->leaves_per_round;
    if (num_trees < 1 || K < 1 || cfg->num_simulations < 1)
        return zt_fail(ZT_ERR_INVALID, "search needs trees, leaves_per_round and simulations >= 1");
    if ((long)num_trees * K > model->max_batch)
        return zt_fail(ZT_ERR_INVALID, "trees x leaves_per_round = %d exceeds the model's batch %d",
                       num_trees * K, model->max_batch);
    if (cfg->edge_capacity < model->num_actions || cfg->node_capacity < 2)
        return zt_fail(ZT_ERR_INVALID, "tree capacity too small (edges %d < actions %d?)",
                       cfg->edge_capacity, model->num_actions);
    if (!model->retain != !model->release)
        return zt_fail(ZT_ERR_INVALID, "a model sets both retain and release or neither");
    if (model->num_actions > ZT_MAX_ACTIONS)
        return zt_fail(ZT_ERR_INVALID, "model has %d actions, search supports %d", model->num_actions,
                       ZT_MAX_ACTIONS);
    if (cfg->algorithm == ZT_SEARCH_GUMBEL && cfg->gumbel_m < 1)
        return zt_fail(ZT_ERR_INVALID, "gumbel_m must be >= 1");
    if (cfg->fpu != ZT_FPU_ABSOLUTE && cfg->fpu != ZT_FPU_PARENT)
        return zt_fail(ZT_ERR_INVALID, "unknown first-play-urgency mode %d", (int)cfg->fpu);

    zt_search *s = zt_xcalloc(1, sizeof *s);
    s->cfg = *cfg;
    if (!(s->cfg.discount > 0)) s->cfg.discount = 1.0f;
    if (s->cfg.discount > 1) {
        free(s);
        return zt_fail(ZT_ERR_INVALID, "search discount %g is above 1", (double)cfg->discount);
    }
    s->model = model;
    s->num_trees = num_trees;
    int nslots = num_trees + 1;
    int A = model->num_actions;
    s->batch_cap = num_trees * K;
    int B = s->batch_cap > nslots ? s->batch_cap : nslots;
    int O = model->max_outcomes > 0 ? model->max_outcomes : 1;

    /* Every per-slot array and the batch buffers come from one block:
     * sizes plus 16 bytes of alignment slack per array. */
    size_t per_slot = (size_t)A * (4 + 4 + 1 + 4) + model->input_size + 5 * 16;
    size_t batch = (size_t)B * (sizeof(leaf) + 2 * sizeof(void *) + 4 + (size_t)A * 4 + 4 + 4 + 1 +
                                1 + 4 + (size_t)O * 8) + 12 * 16;
    size_t total = (size_t)nslots * per_slot + batch;
    s->block = zt_aligned_alloc(64, total);
    s->slots = zt_xcalloc((size_t)nslots, sizeof *s->slots);
    if (!s->block) {
        zt_search_free(s);
        return zt_fail(ZT_ERR_NOMEM, "search buffers (%zu bytes)", total);
    }
    zt_arena arena = {.base = s->block, .capacity = total};
#define TAKE(n, type) ((type *)take(&arena, (size_t)(n) * sizeof(type)))
    for (int i = 0; i < nslots; i++) {
        slot *sl = &s->slots[i];
        sl->root_prior = TAKE(A, float);
        sl->gumbel = TAKE(A, float);
        sl->considered = TAKE(A, uint8_t);
        sl->halving_visits = TAKE(A, int32_t);
        sl->input = TAKE(model->input_size ? model->input_size : 1, uint8_t);
        zt_rng_seed(&sl->rng, cfg->seed, (uint64_t)i);
    }
    s->leaves = TAKE(B, leaf);
    s->in_states = TAKE(B, const void *);
    s->out_states = TAKE(B, void *);
    s->actions = TAKE(B, int);
    s->out.logits = TAKE((size_t)B * A, float);
    s->out.value = TAKE(B, float);
    s->out.reward = TAKE(B, float);
    s->out.kind = TAKE(B, int8_t);
    s->out.player = TAKE(B, int8_t);
    s->out.num_outcomes = TAKE(B, int);
    s->out.outcomes = TAKE((size_t)B * O, int);
    s->out.outcome_probs = TAKE((size_t)B * O, float);
#undef TAKE

    size_t tree_bytes = zt_tree_bytes_for(cfg->node_capacity, cfg->edge_capacity, model->state_size);
    s->remap = malloc((size_t)cfg->node_capacity * sizeof *s->remap);
    s->tree_block = tree_block_alloc((size_t)(nslots + 1) * tree_bytes);
    if (model->release) s->kept = malloc((size_t)cfg->node_capacity);
    if (!s->remap || !s->tree_block || (model->release && !s->kept)) {
        zt_search_free(s);
        return zt_fail(ZT_ERR_NOMEM, "%d trees of %zu bytes", nslots + 1, tree_bytes);
    }
    unsigned char *p = s->tree_block;
    for (int i = 0; i < nslots; i++, p += tree_bytes)
        zt_tree_init_at(&s->slots[i].tree, p, cfg->node_capacity, cfg->edge_capacity, model->state_size);
    zt_tree_init_at(&s->spare, p, cfg->node_capacity, cfg->edge_capacity, model->state_size);
    *out = s;
    return ZT_OK;
}

static void release_tree(zt_search *s, zt_tree *t, const uint8_t *kept);

void zt_search_free(zt_search *s)
{
    if (!s) return;
    if (s->slots)
        for (int i = 0; i <= s->num_trees; i++) {
            if (s->slots[i].tree.block) release_tree(s, &s->slots[i].tree, NULL);
            zt_tree_free(&s->slots[i].tree);
        }
    free(s->kept);
    zt_tree_free(&s->spare);
    free(s->slots);
    free(s->remap);
    free(s->tree_block);
    zt_aligned_free(s->block);
    free(s);
}

/* Every slot's stream as zt_search_new seeds it: the draws of a search
 * begun after this depend on the seed and the tree's slot alone. */
void zt_search_reseed(zt_search *s, uint64_t seed)
{
    s->cfg.seed = seed;
    for (int i = 0; i <= s->num_trees; i++) zt_rng_seed(&s->slots[i].rng, seed, (uint64_t)i);
}

/* ---- node statistics ---- */

static inline float sign_to_parent(const zt_tree *t, const zt_node *nd)
{
    return t->nodes[nd->parent].player == nd->player ? 1.0f : -1.0f;
}

/* A pending simulation counts as a visit that lost `virtual_loss` for the
 * player choosing it (Chaslot et al. 2008; Segal 2010), so other selections
 * in the round look elsewhere. Node c is entered through edge e. */
static inline void add_virtual(zt_tree *t, int c, int e, float vl)
{
    zt_node *nd = &t->nodes[c];
    zt_edge *ed = &t->edges[e];
    nd->visit++;
    nd->value_sum -= sign_to_parent(t, nd) * vl;
    ed->visit++;
    ed->value_sum -= vl;
}

/* Takes back the virtual visits from `n` up to the root (a collision). */
static void remove_virtual_path(zt_tree *t, int n, float vl)
{
    while (n != 0) {
        zt_node *nd = &t->nodes[n];
        zt_edge *ed = &t->edges[nd->parent_edge];
        nd->visit--;
        nd->value_sum += sign_to_parent(t, nd) * vl;
        ed->visit--;
        ed->value_sum += vl;
        n = nd->parent;
    }
    t->nodes[0].visit--;
}

/* Exact chance node value: outcomes searched contribute their values with
 * their probabilities, the mass not yet searched keeps the model's estimate.
 * An outcome whose child still waits for the model (kind new) holds only a
 * virtual visit and does not count. */
static float chance_value(const zt_tree *t, int n)
{
    const zt_node *nd = &t->nodes[n];
    const zt_edge *ed = t->edges + nd->first_edge;
    double sum = 0, mass = 0;
    for (int i = 0; i < nd->num_edges; i++) {
        if (ed[i].visit == 0 || t->nodes[ed[i].child].kind == ZT_NODE_NEW) continue;
        sum += ed[i].prior * (ed[i].value_sum / (float)ed[i].visit);
        mass += ed[i].prior;
    }
    return (float)(sum + (1.0 - mass) * nd->raw_value);
}

/* ---- expansion ---- */

static void expand(zt_search *s, zt_tree *t, int n, const zt_model_output *o, int i)
{
    int A = s->model->num_actions;
    int O = s->model->max_outcomes > 0 ? s->model->max_outcomes : 1;
    zt_node *nd = &t->nodes[n];
    nd->kind = o->kind[i];
    nd->player = o->player[i];
    nd->reward = o->reward[i];
    nd->raw_value = o->value[i];
    if (o->kind[i] == ZT_NODE_DECISION) {
        /* Gather the legal actions first: one pass over the logits, then
         * the softmax over legal actions only (illegal ones get no edge). */
        const float *lg = o->logits + (size_t)i * A;
        uint16_t act[ZT_MAX_ACTIONS];
        float w[ZT_MAX_ACTIONS];
        int legal = 0;
        float top = -INFINITY;
        for (int a = 0; a < A; a++) {
            if (!isfinite(lg[a])) continue;
            act[legal] = (uint16_t)a;
            w[legal++] = lg[a];
            top = lg[a] > top ? lg[a] : top;
        }
        ZT_ASSERT(legal > 0);
        int e = zt_tree_reserve_edges(t, n, legal);
        if (e == ZT_TREE_NONE) {
            s->stats.capacity_hits++;
            return;
        }
        /* padded to a multiple of 8 so that the loop vectorises whole */
        int padded = (legal + 7) & ~7;
        for (int k = legal; k < padded; k++) w[k] = top;
        for (int k = 0; k < padded; k += 8) zt_exp8_nonpos(w + k, top);
        float total = 0;
        for (int k = 0; k < legal; k++) total += w[k];
        float inv = 1.0f / total;
        zt_edge *ed = t->edges + e;
        for (int k = 0; k < legal; k++) ed[k] = (zt_edge){.prior = w[k] * inv, .child = ZT_TREE_NONE};
        memcpy(t->actions + e, act, (size_t)legal * sizeof *act);
    } else if (o->kind[i] == ZT_NODE_CHANCE) {
        int no = o->num_outcomes[i];
        ZT_ASSERT(no > 0 && no <= O);
        int e = zt_tree_reserve_edges(t, n, no);
        if (e == ZT_TREE_NONE) {
            s->stats.capacity_hits++;
            return;
        }
        for (int k = 0; k < no; k++) {
            t->actions[e + k] = (uint16_t)o->outcomes[(size_t)i * O + k];
            t->edges[e + k] = (zt_edge){.prior = o->outcome_probs[(size_t)i * O + k], .child = ZT_TREE_NONE};
        }
    } else {
        ZT_ASSERT(o->kind[i] == ZT_NODE_TERMINAL);
    }
}

/* ---- backup ---- */

/* Lanes in use. With one leaf per tree and round no two lanes ever hold the
 * same tree, so the lane count changes nothing but speed, and 12 hide more
 * of G = 1024's memory latency than 8. With K > 1 leaves of one tree back
 * up in different lanes, and the lane count fixes the order of their float
 * additions: kept at 8 there, so that searches stay reproducible across
 * versions. */
static inline int lanes_for(const zt_search *s, int most)
{
    return s->cfg.leaves_per_round == 1 ? most : 8;
}

/* A backup in progress: value v (node's perspective) on its way from a leaf
 * to the root. Like the walks down (select_round), ASCENT_LANES backups run
 * side by side, one level each in turn, each level prefetching the parent's
 * record and the edge into it for the next. */
enum { ASCENT_LANES = 12 };

typedef struct ascent {
    int slot, node;
    int out_row;  /* the leaf's row of the model output; -1 for a known leaf */
    float v;
    bool started; /* the leaf is expanded and v set */
    bool first;   /* node is the leaf */
} ascent;

static inline void prefetch_parent(const zt_tree *t, const zt_node *nd)
{
    if (nd->parent == ZT_TREE_NONE) return;
    __builtin_prefetch(&t->nodes[nd->parent], 1);
    __builtin_prefetch(&t->edges[nd->parent_edge], 1);
}

/* One level of backup a: adds v to the node and its edge, taking back the
 * virtual loss; returns true once the root is done. */
static bool backup_level(zt_search *s, ascent *a)
{
    slot *sl = &s->slots[a->slot];
    zt_tree *t = &sl->tree;
    zt_node *nd = &t->nodes[a->node];
    if (!a->started) {
        a->started = true;
        if (a->out_row >= 0) {
            /* drop the new leaf's virtual loss: its first value replaces it */
            nd->value_sum = 0;
            t->edges[nd->parent_edge].value_sum = 0;
            expand(s, t, a->node, &s->out, a->out_row);
            a->v = s->out.value[a->out_row];
        } else {
            a->v = nd->raw_value;
        }
        prefetch_parent(t, nd);
        return false;
    }
    float v = a->v;
    if (nd->parent == ZT_TREE_NONE) {
        nd->value_sum += v;
        return true;
    }
    float vl = s->cfg.virtual_loss;
    float sign = sign_to_parent(t, nd);
    zt_edge *ed = &t->edges[nd->parent_edge];
    /* A new leaf's virtual loss was dropped when it was expanded. */
    if (!(a->first && a->out_row >= 0)) {
        nd->value_sum += sign * vl;
        ed->value_sum += vl;
    }
    float q;
    if (nd->kind == ZT_NODE_CHANCE && !a->first) {
        v = chance_value(t, a->node);
        q = nd->reward + sign * v;
        nd->value_sum = v * (float)nd->visit;
        ed->value_sum = q * (float)ed->visit;
    } else {
        nd->value_sum += v;
        /* (a chance node's Q is its outcomes': they carry the discount) */
        float gamma = nd->kind == ZT_NODE_CHANCE ? 1.0f : s->cfg.discount;
        q = nd->reward + gamma * sign * v;
        ed->value_sum += q;
    }
    if (s->cfg.minmax_q) {
        sl->qmin = q < sl->qmin ? q : sl->qmin;
        sl->qmax = q > sl->qmax ? q : sl->qmax;
    }
    a->v = q;
    a->node = nd->parent;
    a->first = false;
    prefetch_parent(t, &t->nodes[a->node]);
    return false;
}

/* Expands this round's B model leaves and backs up every leaf, model
 * leaves first (rows 0..B-1 of s->leaves), then the `known` ones at the
 * back. Backups of one tree may interleave: their additions commute, and a
 * chance node is recomputed from its outcomes by every backup through it. */
static void backup_round(zt_search *s, int B, int known)
{
    int total = B + known, next = 0, active = 0;
    ascent lanes[ASCENT_LANES];
    int width = lanes_for(s, ASCENT_LANES);
    for (;;) {
        while (active < width && next < total) {
            bool is_new = next < B;
            const leaf *lf = &s->leaves[is_new ? next : s->batch_cap - (next - B) - 1];
            lanes[active++] = (ascent){.slot = lf->slot, .node = lf->node, .out_row = is_new ? next : -1,
                                       .first = true};
            const zt_tree *t = &s->slots[lf->slot].tree;
            __builtin_prefetch(&t->nodes[lf->node], 1);
            if (is_new) {
                /* where expansion will write the leaf's edges */
                __builtin_prefetch(t->edges + t->num_edges, 1);
                __builtin_prefetch(t->edges + t->num_edges + 4, 1);
                __builtin_prefetch(t->actions + t->num_edges, 1);
            }
            next++;
        }
        if (active == 0) break;
        for (int j = 0; j < active; j++) {
            if (!backup_level(s, &lanes[j])) continue;
            s->slots[lanes[j].slot].sims_done++;
            lanes[j--] = lanes[--active];
        }
    }
}

/* ---- selection ---- */

/* AlphaZero's exploration rate c(s) = c_init + log((N(s) + c_base + 1) / c_base)
 * (Silver et al. 2018, pseudocode). With N(s) far below c_base, as in any
 * search of fewer than a few thousand simulations, log1p's series to four
 * terms is exact to float precision (error below x^5 / 5 < 1e-8 for
 * x <= 0.02); beyond, logf. */
static inline float c_puct_of(const zt_search_config *c, float parent_n)
{
    float x = (parent_n + 1.0f) / c->c_base;
    if (x > 0.02f) return c->c_init + logf(1.0f + x);
    return c->c_init + x * (1.0f - x * (0.5f - x * (1.0f / 3.0f - x * 0.25f)));
}

/* PUCT (Silver et al. 2018): argmax of Q(s,a) + c(s) P(s,a) sqrt(N(s)) / (1 + N(s,a)),
 * reading only node n's edge range. Unvisited actions take the first-play
 * urgency; with minmax_q every Q is rescaled to [0, 1] by the tree's range
 * (Schrittwieser et al. 2020, Appendix B). */
static int select_puct(const zt_search *s, const slot *sl, int n)
{
    const zt_tree *t = &sl->tree;
    const zt_search_config *c = &s->cfg;
    const zt_node *nd = &t->nodes[n];
    const zt_edge *ed = t->edges + nd->first_edge;
    int ne = nd->num_edges;
    /* visit already counts this simulation; AlphaZero's N(s) does not. */
    float parent_n = (float)(nd->visit - 1);
    float explore = c_puct_of(c, parent_n) * sqrtf(parent_n);
    float fpu = c->fpu == ZT_FPU_PARENT ? nd->value_sum / (float)nd->visit - c->fpu_reduction : c->fpu_value;
    float lo = 0, inv_range = 1;
    if (c->minmax_q && sl->qmax > sl->qmin) {
        lo = sl->qmin;
        inv_range = 1.0f / (sl->qmax - sl->qmin);
        fpu = (fpu - lo) * inv_range;
    }
    bool noisy = n == 0 && sl->root_noise;
    int best = 0;
    float best_score = -INFINITY;
    for (int i = 0; i < ne; i++) {
        float prior = noisy ? sl->root_prior[i] : ed[i].prior;
        float visits = (float)ed[i].visit;
        float q = ed[i].visit > 0 ? (ed[i].value_sum / visits - lo) * inv_range : fpu;
        float score = q + explore * prior / (1.0f + visits);
        if (score > best_score) {
            best_score = score;
            best = i;
        }
    }
    return best;
}

/* Completed Q and sigma over the edges of decision node n (Danihelka et
 * al. §4, eq. 8 and 33), through the functions of gumbel.c; also returns
 * the priors and the total visits of the edges. */
static void gumbel_sigma_of(const zt_search *s, const zt_tree *t, int n, float *prior, float *sigma,
                            int32_t *sum_visits)
{
    const zt_node *nd = &t->nodes[n];
    const zt_edge *ed = t->edges + nd->first_edge;
    int ne = nd->num_edges;
    float q[ZT_MAX_ACTIONS], completed[ZT_MAX_ACTIONS];
    int32_t visits[ZT_MAX_ACTIONS];
    int32_t max_visit = 0, total = 0;
    for (int i = 0; i < ne; i++) {
        visits[i] = ed[i].visit;
        prior[i] = ed[i].prior;
        q[i] = visits[i] > 0 ? ed[i].value_sum / (float)visits[i] : 0.0f;
        max_visit = visits[i] > max_visit ? visits[i] : max_visit;
        total += visits[i];
    }
    zt_gumbel_completed_q(ne, prior, q, visits, nd->raw_value, completed);
    zt_gumbel_sigma(ne, completed, max_visit, s->cfg.c_visit, s->cfg.c_scale, s->cfg.gumbel_rescale,
                    sigma);
    *sum_visits = total;
}

/* Non-root Gumbel selection: argmax of pi'(a) - N(a) / (1 + sum N), pi' the
 * improved policy (Danihelka et al. §5). Deterministic. */
static int select_gumbel_interior(const zt_search *s, const zt_tree *t, int n)
{
    int ne = t->nodes[n].num_edges;
    const zt_edge *ed = t->edges + t->nodes[n].first_edge;
    float prior[ZT_MAX_ACTIONS], sigma[ZT_MAX_ACTIONS], improved[ZT_MAX_ACTIONS];
    int32_t total;
    gumbel_sigma_of(s, t, n, prior, sigma, &total);
    zt_gumbel_softmax_prior(ne, prior, sigma, improved);
    float inv = 1.0f / (1.0f + (float)total);
    int best = 0;
    float best_score = -INFINITY;
    for (int i = 0; i < ne; i++) {
        float score = improved[i] - (float)ed[i].visit * inv;
        if (score > best_score) {
            best_score = score;
            best = i;
        }
    }
    return best;
}

/* Root Gumbel selection: among the considered actions whose visit count in
 * this search is what sequential halving wants for this simulation, the one
 * with the largest g(a) + logits(a) + sigma(q(a)). */
static int select_gumbel_root(const zt_search *s, const slot *sl)
{
    const zt_tree *t = &sl->tree;
    int ne = t->nodes[0].num_edges;
    float prior[ZT_MAX_ACTIONS], sigma[ZT_MAX_ACTIONS];
    int32_t total;
    gumbel_sigma_of(s, t, 0, prior, sigma, &total);
    int want = zt_gumbel_halving_visits(sl->gumbel_m, sl->sims_target, sl->sims_started);
    int best = -1, fallback = -1, fallback_visits = 0;
    float best_score = -INFINITY, fallback_score = -INFINITY;
    for (int i = 0; i < ne; i++) {
        if (!sl->considered[i]) continue;
        int visits = sl->halving_visits[i];
        float score = sl->root_prior[i] + sigma[i];
        if (visits == want && score > best_score) {
            best_score = score;
            best = i;
        }
        /* Collisions can leave no action at the wanted count: then the least
         * visited considered action, best score first. */
        if (fallback < 0 || visits < fallback_visits ||
            (visits == fallback_visits && score > fallback_score)) {
            fallback = i;
            fallback_visits = visits;
            fallback_score = score;
        }
    }
    return best >= 0 ? best : fallback;
}

/* Chance descent follows the outcome probabilities, steered to the outcome
 * whose visits lag its share the most; outcomes of probability 0 are never
 * entered. */
static int select_chance(const zt_tree *t, int n)
{
    const zt_node *nd = &t->nodes[n];
    const zt_edge *ed = t->edges + nd->first_edge;
    int ne = nd->num_edges;
    float total = 0;
    for (int i = 0; i < ne; i++) total += (float)ed[i].visit;
    int best = -1;
    float best_score = -INFINITY;
    for (int i = 0; i < ne; i++) {
        float p = ed[i].prior;
        if (!(p > 0)) continue;
        float score = p * (total + 1.0f) - (float)ed[i].visit;
        if (score > best_score) {
            best_score = score;
            best = i;
        }
    }
    ZT_ASSERT(best >= 0);
    return best;
}

typedef enum { PICK_NONE, PICK_NEW, PICK_KNOWN, PICK_COLLISION } pick;

/* A walk from a root to a leaf in progress. At G = 1024 every node it
 * reaches is out of the nearer caches, and each step depends on the last,
 * so a round runs DESCENT_LANES walks (of distinct trees) side by side, one
 * step each in turn, and every step prefetches what the walk needs next:
 * the misses of one walk overlap the work of the others. A node takes two
 * steps: its record (virtual visit, kind, edge range; then prefetch the
 * edges), and its edges (selection, then prefetch the child's record). The
 * walks of one tree stay sequential, so virtual loss sees every earlier
 * leaf of the round exactly as one walk after the other would. */
enum { DESCENT_LANES = 12 };

typedef struct descent {
    int slot;
    int node;
    int root_edge;  /* Gumbel: root edge taken, -1 before */
    int depth;      /* edges walked */
    int8_t parent_player;
    bool at_edges;  /* the node's record is done, its edges are next */
    int taken, want; /* leaves this tree gave / may give this round */
} descent;

static inline void prefetch_lines(const void *p, size_t bytes)
{
    const char *c = p;
    if (bytes > 16 * ZT_CACHE_LINE) bytes = 16 * ZT_CACHE_LINE;
    for (size_t off = 0; off < bytes; off += ZT_CACHE_LINE) __builtin_prefetch(c + off);
    __builtin_prefetch(c + bytes - 1);
}

static void descent_start(zt_search *s, descent *d, int slot_index)
{
    d->slot = slot_index;
    d->node = 0;
    d->root_edge = -1;
    d->depth = 0;
    d->at_edges = false;
    __builtin_prefetch(s->slots[slot_index].tree.nodes, 1);
}

/* One step of walk d: PICK_NONE while it goes on, else how it ended. */
static pick descent_step(zt_search *s, descent *d, int *leaf_node, int *leaf_action)
{
    slot *sl = &s->slots[d->slot];
    zt_tree *t = &sl->tree;
    float vl = s->cfg.virtual_loss;
    int n = d->node;
    zt_node *nd = &t->nodes[n];
    if (!d->at_edges) {
        /* the virtual visit of the node entered (the edge took its own) */
        nd->visit++;
        if (n != 0) nd->value_sum -= (d->parent_player == nd->player ? vl : -vl);
        if (nd->kind == ZT_NODE_NEW) {
            /* Pending in this round: give back the virtual visits. */
            remove_virtual_path(t, n, vl);
            if (d->root_edge >= 0) sl->halving_visits[d->root_edge]--;
            s->stats.collisions++;
            return PICK_COLLISION;
        }
        if (nd->kind == ZT_NODE_TERMINAL || nd->num_edges == 0) {
            /* terminal, or left unexpanded for lack of edges */
            *leaf_node = n;
            return PICK_KNOWN;
        }
        prefetch_lines(t->edges + nd->first_edge, (size_t)nd->num_edges * sizeof(zt_edge));
        /* should the walk end below this node: the action of its edge and
         * the record a new child would take */
        __builtin_prefetch(t->actions + nd->first_edge);
        __builtin_prefetch(t->nodes + t->num_nodes, 1);
        d->at_edges = true;
        return PICK_NONE;
    }
    int i;
    if (nd->kind == ZT_NODE_CHANCE)
        i = select_chance(t, n);
    else if (s->cfg.algorithm == ZT_SEARCH_GUMBEL)
        i = n == 0 ? select_gumbel_root(s, sl) : select_gumbel_interior(s, t, n);
    else
        i = select_puct(s, sl, n);
    int e = nd->first_edge + i;
    if (n == 0 && s->cfg.algorithm == ZT_SEARCH_GUMBEL) {
        d->root_edge = i;
        sl->halving_visits[i]++;
    }
    if (++d->depth > s->stats.max_depth) s->stats.max_depth = d->depth;
    int c = t->edges[e].child;
    if (c == ZT_TREE_NONE) {
        c = zt_tree_add_node(t, n, e);
        if (c == ZT_TREE_NONE) {
            /* Out of nodes: n stays a leaf valued by the model. */
            s->stats.capacity_hits++;
            *leaf_node = n;
            return PICK_KNOWN;
        }
        add_virtual(t, c, e, vl);
        /* The model reads the parent's state and writes the child's after
         * the whole round is selected: fetched now, the misses overlap the
         * other walks instead of stalling the model step one leaf at a time. */
        __builtin_prefetch(zt_tree_state(t, n));
        __builtin_prefetch(zt_tree_state(t, c), 1);
        /* and where expansion will write the leaf's edges */
        __builtin_prefetch(t->edges + t->num_edges, 1);
        __builtin_prefetch(t->edges + t->num_edges + 4, 1);
        *leaf_node = c;
        *leaf_action = t->actions[e];
        return PICK_NEW;
    }
    /* A pending simulation counts as a visit that lost `virtual_loss` for
     * the player choosing it (Chaslot et al. 2008; Segal 2010): the edge
     * now, the child's record at the next step, once prefetched. */
    t->edges[e].visit++;
    t->edges[e].value_sum -= vl;
    __builtin_prefetch(&t->nodes[c], 1);
    d->parent_player = nd->player;
    d->node = c;
    d->at_edges = false;
    return PICK_NONE;
}

/* Selects this round's leaves: up to K per searching tree, model leaves
 * to the front of s->leaves (their count is returned), known leaves
 * (terminal or unexpandable) to the back (*known). */
static int select_round(zt_search *s, int *known)
{
    int K = s->cfg.leaves_per_round, cap = s->batch_cap;
    int B = 0, next = 0, active = 0;
    *known = 0;
    descent lanes[DESCENT_LANES];
    int width = lanes_for(s, DESCENT_LANES);
    for (;;) {
        /* fill free lanes with the next trees that want leaves */
        while (active < width && next <= s->num_trees) {
            slot *sl = &s->slots[next];
            int want = sl->searching ? sl->sims_target - sl->sims_started : 0;
            if (want > 0) {
                descent *d = &lanes[active++];
                d->taken = 0;
                d->want = want < K ? want : K;
                descent_start(s, d, next);
            }
            next++;
        }
        if (active == 0) break;
        for (int j = 0; j < active; j++) {
            descent *d = &lanes[j];
            int node, action = -1;
            pick p = descent_step(s, d, &node, &action);
            if (p == PICK_NONE) continue;
            slot *sl = &s->slots[d->slot];
            if (p != PICK_COLLISION) {
                sl->sims_started++;
                d->taken++;
                if (p == PICK_KNOWN) {
                    s->leaves[cap - ++*known] = (leaf){d->slot, node};
                } else {
                    zt_tree *t = &sl->tree;
                    s->leaves[B] = (leaf){d->slot, node};
                    s->in_states[B] = zt_tree_state(t, t->nodes[node].parent);
                    s->out_states[B] = zt_tree_state(t, node);
                    s->actions[B] = action;
                    B++;
                }
                if (d->taken < d->want) {
                    descent_start(s, d, d->slot);
                    continue;
                }
            }
            /* this tree is done for the round: free the lane */
            lanes[j--] = lanes[--active];
        }
    }
    ZT_ASSERT(B + *known <= cap);
    return B;
}

/* ---- roots ---- */

static void prepare_root(zt_search *s, slot *sl)
{
    zt_tree *t = &sl->tree;
    const zt_edge *ed = t->edges + t->nodes[0].first_edge;
    int ne = t->nodes[0].num_edges;
    ZT_ASSERT(ne <= ZT_MAX_ACTIONS);
    if (s->cfg.algorithm == ZT_SEARCH_PUCT) {
        /* AlphaZero's exploration noise: (1 - f) P + f Dir(alpha), kept
         * beside the tree so that the stored prior (reused, cloned from the
         * root cache) stays the model's. */
        float f = s->cfg.dirichlet_fraction;
        sl->root_noise = f > 0 && ne > 1 && !sl->quiet;
        if (sl->root_noise) {
            zt_rng_dirichlet(&sl->rng, s->cfg.dirichlet_alpha, ne, sl->gumbel);
            for (int i = 0; i < ne; i++) sl->root_prior[i] = (1 - f) * ed[i].prior + f * sl->gumbel[i];
        }
    } else {
        /* Gumbel-top-k: the m actions with the largest g(a) + logits(a). */
        int m = s->cfg.gumbel_m < ne ? s->cfg.gumbel_m : ne;
        bool noise = s->cfg.gumbel_noise && !sl->quiet;
        for (int i = 0; i < ne; i++) {
            sl->gumbel[i] = noise ? (float)zt_rng_gumbel(&sl->rng) : 0.0f;
            sl->root_prior[i] = sl->gumbel[i] + logf(fmaxf(ed[i].prior, 1e-30f));
            sl->considered[i] = 0;
            sl->halving_visits[i] = 0;
        }
        for (int k = 0; k < m; k++) {
            int best = -1;
            for (int i = 0; i < ne; i++)
                if (!sl->considered[i] && (best < 0 || sl->root_prior[i] > sl->root_prior[best])) best = i;
            sl->considered[best] = 1;
        }
        sl->gumbel_m = m;
    }
    sl->prepared = true;
}

/* ---- model state lifetime (model.h) ---- */

/* Hands the model the states of tree t's evaluated nodes (kind != NEW: a
 * new node's state was never written), in batches, through retain or
 * release; with `kept`, only the nodes it does not mark. */
static void tell_model(zt_search *s, const zt_tree *t, const uint8_t *kept, bool retain)
{
    const void **batch = s->in_states;
    int cap = s->batch_cap > s->num_trees + 1 ? s->batch_cap : s->num_trees + 1, n = 0;
    for (int i = 0; i < t->num_nodes; i++) {
        if (t->nodes[i].kind == ZT_NODE_NEW || (kept && kept[i])) continue;
        batch[n++] = zt_tree_state(t, i);
        if (n == cap) {
            (retain ? s->model->retain : s->model->release)(s->model, n, batch);
            n = 0;
        }
    }
    if (n > 0) (retain ? s->model->retain : s->model->release)(s->model, n, batch);
}

static void release_tree(zt_search *s, zt_tree *t, const uint8_t *kept)
{
    if (s->model->release) tell_model(s, t, kept, false);
}

static void reset_slot(zt_search *s, slot *sl)
{
    release_tree(s, &sl->tree, NULL);
    zt_tree_clear(&sl->tree);
    sl->has_root = false;
}

void zt_search_begin(zt_search *s, int t, const void *root_input)
{
    zt_search_begin_sims(s, t, root_input, s->cfg.num_simulations);
}

void zt_search_begin_sims(zt_search *s, int t, const void *root_input, int num_simulations)
{
    ZT_ASSERT(t >= 0 && t <= s->num_trees);
    ZT_ASSERT(num_simulations >= 1 && num_simulations <= s->cfg.num_simulations);
    slot *sl = &s->slots[t];
    ZT_ASSERT(!sl->searching);
    memcpy(sl->input, root_input, s->model->input_size);
    zt_tree *tr = &sl->tree;
    if (sl->has_root && (tr->nodes[0].kind != ZT_NODE_DECISION || tr->nodes[0].num_edges == 0))
        reset_slot(s, sl);
    if (!sl->has_root && t < s->num_trees && s->cache_valid &&
        memcmp(s->slots[s->num_trees].input, root_input, s->model->input_size) == 0) {
        release_tree(s, tr, NULL);
        zt_tree_copy(tr, &s->slots[s->num_trees].tree);
        if (s->model->retain) tell_model(s, tr, NULL, true);
        sl->has_root = true;
        s->stats.root_cache_hits++;
    }
    sl->searching = true;
    sl->prepared = false;
    sl->sims_target = num_simulations;
    sl->sims_started = 0;
    sl->sims_done = 0;
    sl->qmin = INFINITY;
    sl->qmax = -INFINITY;
}

void zt_search_set_quiet(zt_search *s, int t, bool quiet)
{
    ZT_ASSERT(t >= 0 && t <= s->num_trees);
    s->slots[t].quiet = quiet;
}

/* One initial() call for every searching tree without a root. */
static zt_status evaluate_roots(zt_search *s)
{
    int B = 0;
    for (int i = 0; i <= s->num_trees; i++) {
        slot *sl = &s->slots[i];
        if (!sl->searching || sl->has_root) continue;
        release_tree(s, &sl->tree, NULL);
        zt_tree_clear(&sl->tree);
        int root = zt_tree_add_node(&sl->tree, ZT_TREE_NONE, ZT_TREE_NONE);
        s->leaves[B] = (leaf){i, root};
        s->in_states[B] = sl->input;
        s->out_states[B] = zt_tree_state(&sl->tree, root);
        B++;
    }
    if (B == 0) return ZT_OK;
    ZT_TRY(s->model->initial(s->model, B, s->in_states, s->out_states, &s->out));
    for (int b = 0; b < B; b++) {
        slot *sl = &s->slots[s->leaves[b].slot];
        zt_tree *t = &sl->tree;
        ZT_ASSERT(s->out.kind[b] == ZT_NODE_DECISION); /* search starts where a player moves */
        expand(s, t, 0, &s->out, b);
        ZT_ASSERT(t->nodes[0].num_edges > 0);
        t->nodes[0].visit = 1;
        t->nodes[0].value_sum = s->out.value[b];
        sl->has_root = true;
    }
    return ZT_OK;
}

/* After a failed model call the round's pending leaves hold virtual visits
 * and no states: every tree that was searching is dropped, so the search
 * can be begun again (or freed) with no state leaked. */
static zt_status abandon_run(zt_search *s, zt_status st)
{
    for (int i = 0; i <= s->num_trees; i++) {
        slot *sl = &s->slots[i];
        if (!sl->searching) continue;
        reset_slot(s, sl);
        sl->searching = false;
        if (i == s->num_trees) s->cache_valid = false;
    }
    return st;
}

void zt_search_cancel(zt_search *s)
{
    abandon_run(s, ZT_OK);
}

zt_status zt_search_run(zt_search *s)
{
    return zt_search_run_rounds(s, 0);
}

zt_status zt_search_run_rounds(zt_search *s, int max_rounds)
{
    ZT_ASSERT(max_rounds >= 0);
    zt_status st = evaluate_roots(s);
    if (st != ZT_OK) return abandon_run(s, st);
    for (int i = 0; i <= s->num_trees; i++)
        if (s->slots[i].searching && !s->slots[i].prepared) prepare_root(s, &s->slots[i]);
    for (int round = 0; max_rounds == 0 || round < max_rounds; round++) {
        int known;
        int B = select_round(s, &known);
        if (B == 0 && known == 0) break;
        if (B > 0) {
            st = s->model->recurrent(s->model, B, s->in_states, s->actions, s->out_states, &s->out);
            if (st != ZT_OK) return abandon_run(s, st);
            s->stats.model_calls++;
            s->stats.model_states += (uint64_t)B;
        }
        backup_round(s, B, known);
        s->stats.known_leaves += (uint64_t)known;
        s->stats.simulations += (uint64_t)(B + known);
        for (int i = 0; i <= s->num_trees; i++) {
            slot *sl = &s->slots[i];
            if (sl->searching && sl->sims_done >= sl->sims_target) sl->searching = false;
        }
    }
    return ZT_OK;
}

bool zt_search_searching(const zt_search *s, int t)
{
    ZT_ASSERT(t >= 0 && t < s->num_trees);
    return s->slots[t].searching;
}

/* ---- results ---- */

static int root_visits_of(const zt_tree *t, int i)
{
    return t->edges[t->nodes[0].first_edge + i].visit;
}

int zt_search_choose(zt_search *s, int t, float temperature)
{
    slot *sl = &s->slots[t];
    const zt_tree *tr = &sl->tree;
    ZT_ASSERT(sl->has_root);
    int e0 = tr->nodes[0].first_edge, ne = tr->nodes[0].num_edges;
    if (s->cfg.algorithm == ZT_SEARCH_GUMBEL) {
        float prior[ZT_MAX_ACTIONS], sigma[ZT_MAX_ACTIONS];
        int32_t total;
        gumbel_sigma_of(s, tr, 0, prior, sigma, &total);
        if (temperature > 0) {
            /* A sample of the improved policy softmax(logits + sigma)^(1/T),
             * the policy target itself at T = 1. */
            float improved[ZT_MAX_ACTIONS], weights[ZT_MAX_ACTIONS], top = 0;
            zt_gumbel_softmax_prior(ne, prior, sigma, improved);
            for (int i = 0; i < ne; i++) top = fmaxf(top, improved[i]);
            for (int i = 0; i < ne; i++)
                weights[i] = (float)pow(improved[i] / top, 1.0 / temperature);
            return tr->actions[e0 + zt_rng_categorical(&sl->rng, weights, ne)];
        }
        /* The sequential-halving winner: the considered action with the
         * most visits in this search, ties by g + logits + sigma
         * (Danihelka et al. Alg. 2). */
        int best = -1, best_visits = -1;
        float best_score = -INFINITY;
        for (int i = 0; i < ne; i++) {
            if (!sl->considered[i]) continue;
            int v = sl->halving_visits[i];
            float score = sl->root_prior[i] + sigma[i];
            if (v > best_visits || (v == best_visits && score > best_score)) {
                best = i;
                best_visits = v;
                best_score = score;
            }
        }
        return tr->actions[e0 + best];
    }
    int best = 0;
    for (int i = 1; i < ne; i++) {
        int v = root_visits_of(tr, i), bv = root_visits_of(tr, best);
        if (v > bv || (v == bv && tr->edges[e0 + i].prior > tr->edges[e0 + best].prior)) best = i;
    }
    if (temperature <= 0) return tr->actions[e0 + best];
    float weights[ZT_MAX_ACTIONS];
    double top = root_visits_of(tr, best);
    for (int i = 0; i < ne; i++) weights[i] = (float)pow(root_visits_of(tr, i) / top, 1.0 / temperature);
    return tr->actions[e0 + zt_rng_categorical(&sl->rng, weights, ne)];
}

void zt_search_policy(const zt_search *s, int t, float *policy)
{
    const slot *sl = &s->slots[t];
    const zt_tree *tr = &sl->tree;
    ZT_ASSERT(sl->has_root);
    int e0 = tr->nodes[0].first_edge, ne = tr->nodes[0].num_edges;
    memset(policy, 0, (size_t)s->model->num_actions * sizeof(float));
    if (s->cfg.algorithm == ZT_SEARCH_GUMBEL) {
        /* the improved policy softmax(logits + sigma(completed Q)), eq. 11 */
        float prior[ZT_MAX_ACTIONS], sigma[ZT_MAX_ACTIONS], improved[ZT_MAX_ACTIONS];
        int32_t total;
        gumbel_sigma_of(s, tr, 0, prior, sigma, &total);
        zt_gumbel_softmax_prior(ne, prior, sigma, improved);
        for (int i = 0; i < ne; i++) policy[tr->actions[e0 + i]] = improved[i];
        return;
    }
    double total = 0;
    for (int i = 0; i < ne; i++) total += root_visits_of(tr, i);
    for (int i = 0; i < ne; i++)
        policy[tr->actions[e0 + i]] = total > 0 ? (float)(root_visits_of(tr, i) / total) : 0.0f;
}

void zt_search_root_visits(const zt_search *s, int t, int32_t *visits)
{
    const zt_tree *tr = &s->slots[t].tree;
    memset(visits, 0, (size_t)s->model->num_actions * sizeof *visits);
    int e0 = tr->nodes[0].first_edge, ne = tr->nodes[0].num_edges;
    for (int i = 0; i < ne; i++) visits[tr->actions[e0 + i]] = root_visits_of(tr, i);
}

void zt_search_root_prior(const zt_search *s, int t, float *prior)
{
    const zt_tree *tr = &s->slots[t].tree;
    ZT_ASSERT(s->slots[t].has_root);
    memset(prior, 0, (size_t)s->model->num_actions * sizeof *prior);
    int e0 = tr->nodes[0].first_edge, ne = tr->nodes[0].num_edges;
    for (int i = 0; i < ne; i++) prior[tr->actions[e0 + i]] = tr->edges[e0 + i].prior;
}

float zt_search_root_value(const zt_search *s, int t)
{
    const zt_tree *tr = &s->slots[t].tree;
    ZT_ASSERT(s->slots[t].has_root);
    return tr->nodes[0].value_sum / (float)tr->nodes[0].visit;
}

void zt_search_played(zt_search *s, int t, int action)
{
    slot *sl = &s->slots[t];
    ZT_ASSERT(!sl->searching);
    if (!sl->has_root) return;
    zt_tree *tr = &sl->tree;
    int c = s->cfg.tree_reuse && !s->model->root_from_initial ? zt_tree_find_child(tr, 0, action)
                                                              : ZT_TREE_NONE;
    if (c == ZT_TREE_NONE || tr->nodes[c].kind == ZT_NODE_NEW || tr->nodes[c].kind == ZT_NODE_TERMINAL) {
        reset_slot(s, sl);
        return;
    }
    zt_tree_extract(&s->spare, tr, c, s->remap);
    if (s->model->release) {
        /* remap[new] = old: every old node not kept is dropped */
        memset(s->kept, 0, (size_t)tr->num_nodes);
        for (int q = 0; q < s->spare.num_nodes; q++) s->kept[s->remap[q]] = 1;
        release_tree(s, tr, s->kept);
    }
    zt_tree_swap(&s->spare, tr);
    s->stats.reused_nodes += (uint64_t)tr->num_nodes;
}

void zt_search_forget(zt_search *s, int t)
{
    ZT_ASSERT(!s->slots[t].searching);
    reset_slot(s, &s->slots[t]);
}

zt_status zt_search_build_root_cache(zt_search *s, const void *root_input, int num_simulations)
{
    if (num_simulations < 1) return zt_fail(ZT_ERR_INVALID, "root cache needs simulations >= 1");
    slot *cache = &s->slots[s->num_trees];
    ZT_ASSERT(!cache->searching);
    /* the trees with a search under way sit this run out, untouched (a
     * failure drops the cache's tree alone) */
    for (int i = 0; i < s->num_trees; i++) {
        slot *sl = &s->slots[i];
        sl->paused = sl->searching;
        sl->searching = false;
    }
    reset_slot(s, cache);
    s->cache_valid = false;
    zt_search_begin(s, s->num_trees, root_input);
    cache->sims_target = num_simulations;
    zt_status st = zt_search_run(s);
    for (int i = 0; i < s->num_trees; i++) {
        slot *sl = &s->slots[i];
        sl->searching = sl->paused;
        sl->paused = false;
    }
    if (st != ZT_OK) return st;
    s->cache_valid = true;
    return ZT_OK;
}

void zt_search_clear_root_cache(zt_search *s)
{
    s->cache_valid = false;
    reset_slot(s, &s->slots[s->num_trees]);
}

const zt_tree *zt_search_tree(const zt_search *s, int t)
{
    return &s->slots[t].tree;
}

zt_search_stats zt_search_get_stats(const zt_search *s)
{
    return s->stats;
}

size_t zt_search_tree_bytes(const zt_search *s)
{
    return s->slots[0].tree.bytes;
}
