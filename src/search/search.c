#include "search/search.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/rng.h"
#include "game/game.h"
#include "search/gumbel.h"

/* One tree and the state of its current search. Root arrays are indexed by
 * the root's edge number, not by action. */
typedef struct slot {
    zt_tree tree;
    zt_rng rng;
    bool searching;   /* begun and not finished */
    bool has_root;    /* node 0 is an evaluated decision node */
    bool prepared;    /* root noise / Gumbel candidates drawn for this search */
    int sims_target;  /* simulations of this search */
    int sims_started; /* selected (pending or done) in this search */
    int sims_done;
    float qmin, qmax; /* range of backed-up Q, for minmax_q */
    float *root_prior;
    float *gumbel;
    uint8_t *considered;
    int32_t *schedule; /* Gumbel: visits wanted at simulation i (sequential halving) */
    uint8_t *input;
} slot;

typedef struct leaf {
    int slot, node;
    bool is_new; /* sent to the model; else a terminal or unexpandable node */
} leaf;

struct zt_search {
    zt_search_config cfg;
    zt_model *model;
    int num_trees;    /* user trees; slot num_trees is the root cache */
    slot *slots;
    zt_tree spare;    /* scratch target of subtree extraction */
    int32_t *remap;
    bool cache_valid;
    int schedule_len;

    /* one round's batch, sized num_trees * K */
    int batch_cap;
    leaf *leaves;
    const void **in_states;
    void **out_states;
    int *actions;
    zt_model_output out;

    zt_search_stats stats;
    void *block;
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
    c->dirichlet_alpha = 0.3f;
    c->dirichlet_fraction = 0.0f;
    c->virtual_loss = 1.0f;
    c->gumbel_m = 16;
    c->c_visit = 50.0f;
    c->c_scale = 1.0f;
    c->gumbel_noise = true;
    c->gumbel_rescale = true;
    c->tree_reuse = algorithm == ZT_SEARCH_PUCT;
    c->seed = 1;
}

/* ---- allocation ---- */

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
    if (model->num_actions > ZT_MAX_ACTIONS)
        return zt_fail(ZT_ERR_INVALID, "model has %d actions, search supports %d", model->num_actions,
                       ZT_MAX_ACTIONS);
    if (cfg->algorithm == ZT_SEARCH_GUMBEL && cfg->gumbel_m < 1)
        return zt_fail(ZT_ERR_INVALID, "gumbel_m must be >= 1");

    zt_search *s = zt_xcalloc(1, sizeof *s);
    s->cfg = *cfg;
    if (cfg->algorithm == ZT_SEARCH_GUMBEL) s->cfg.tree_reuse = false;
    s->model = model;
    s->num_trees = num_trees;
    int nslots = num_trees + 1;
    int A = model->num_actions;
    s->schedule_len = cfg->num_simulations;
    s->batch_cap = num_trees * K;
    int B = s->batch_cap > nslots ? s->batch_cap : nslots;
    int O = model->max_outcomes > 0 ? model->max_outcomes : 1;

    /* Every per-slot array and the batch buffers come from one block. */
    /* sizes plus 16 bytes of alignment slack per array */
    size_t per_slot = (size_t)A * (4 + 4 + 1) + (size_t)s->schedule_len * 4 + model->input_size + 5 * 16;
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
        sl->schedule = TAKE(s->schedule_len, int32_t);
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

    s->remap = malloc((size_t)cfg->node_capacity * sizeof *s->remap);
    bool ok = s->remap != NULL;
    for (int i = 0; ok && i < nslots; i++)
        ok = zt_tree_init(&s->slots[i].tree, cfg->node_capacity, cfg->edge_capacity,
                          model->state_size) == ZT_OK;
    ok = ok && zt_tree_init(&s->spare, cfg->node_capacity, cfg->edge_capacity, model->state_size) == ZT_OK;
    if (!ok) {
        zt_search_free(s);
        return zt_fail(ZT_ERR_NOMEM, "%d trees of %zu bytes", nslots + 1,
                       zt_tree_bytes_for(cfg->node_capacity, cfg->edge_capacity, model->state_size));
    }
    *out = s;
    return ZT_OK;
}

void zt_search_free(zt_search *s)
{
    if (!s) return;
    if (s->slots)
        for (int i = 0; i <= s->num_trees; i++) zt_tree_free(&s->slots[i].tree);
    zt_tree_free(&s->spare);
    free(s->slots);
    free(s->remap);
    zt_aligned_free(s->block);
    free(s);
}

/* ---- node statistics ---- */

static inline float sign_to_parent(const zt_tree *t, int n)
{
    int p = t->parent[n];
    return (p == ZT_TREE_NONE || t->player[p] == t->player[n]) ? 1.0f : -1.0f;
}

/* A pending simulation counts as a visit that lost `virtual_loss` for the
 * player choosing it, so other selections in the round look elsewhere. */
static inline void add_virtual(zt_tree *t, int n, float vl)
{
    t->visit[n]++;
    if (t->parent[n] != ZT_TREE_NONE) t->value_sum[n] -= sign_to_parent(t, n) * vl;
}

static inline void remove_virtual(zt_tree *t, int n, float vl)
{
    t->visit[n]--;
    if (t->parent[n] != ZT_TREE_NONE) t->value_sum[n] += sign_to_parent(t, n) * vl;
}

static inline bool has_value(const zt_tree *t, int c)
{
    return c != ZT_TREE_NONE && t->visit[c] > 0;
}

/* Exact chance node value: outcomes searched contribute their values with
 * their probabilities, the mass not yet searched keeps the model's estimate. */
static float chance_value(const zt_tree *t, int n)
{
    int e0 = t->first_edge[n], ne = t->num_edges_of[n];
    double sum = 0, mass = 0;
    for (int i = 0; i < ne; i++) {
        int c = t->child[e0 + i];
        if (c == ZT_TREE_NONE || t->visit[c] == 0 || t->kind[c] == ZT_NODE_NEW) continue;
        sum += t->prior[e0 + i] * zt_tree_q(t, c);
        mass += t->prior[e0 + i];
    }
    return (float)(sum + (1.0 - mass) * t->raw_value[n]);
}

/* ---- expansion ---- */

static void expand(zt_search *s, zt_tree *t, int n, const zt_model_output *o, int i)
{
    int A = s->model->num_actions;
    int O = s->model->max_outcomes > 0 ? s->model->max_outcomes : 1;
    t->kind[n] = o->kind[i];
    t->player[n] = o->player[i];
    t->reward[n] = o->reward[i];
    t->raw_value[n] = o->value[i];
    t->unexpanded[n] = 0;
    if (o->kind[i] == ZT_NODE_DECISION) {
        const float *lg = o->logits + (size_t)i * A;
        int legal = 0;
        float top = -INFINITY;
        for (int a = 0; a < A; a++)
            if (isfinite(lg[a])) {
                legal++;
                top = fmaxf(top, lg[a]);
            }
        ZT_ASSERT(legal > 0);
        int e = zt_tree_add_edges(t, n, legal);
        if (e == ZT_TREE_NONE) {
            t->unexpanded[n] = 1;
            s->stats.capacity_hits++;
            return;
        }
        double total = 0;
        for (int a = 0; a < A; a++) {
            if (!isfinite(lg[a])) continue;
            t->action[e] = (uint16_t)a;
            t->prior[e] = expf(lg[a] - top);
            total += t->prior[e++];
        }
        for (int k = t->first_edge[n]; k < e; k++) t->prior[k] = (float)(t->prior[k] / total);
    } else if (o->kind[i] == ZT_NODE_CHANCE) {
        int no = o->num_outcomes[i];
        ZT_ASSERT(no > 0 && no <= O);
        int e = zt_tree_add_edges(t, n, no);
        if (e == ZT_TREE_NONE) {
            t->unexpanded[n] = 1;
            s->stats.capacity_hits++;
            return;
        }
        for (int k = 0; k < no; k++) {
            t->action[e + k] = (uint16_t)o->outcomes[(size_t)i * O + k];
            t->prior[e + k] = o->outcome_probs[(size_t)i * O + k];
        }
    } else {
        ZT_ASSERT(o->kind[i] == ZT_NODE_TERMINAL);
    }
}

/* ---- backup ---- */

static void backup(zt_search *s, slot *sl, int leaf_node, bool was_new, float v)
{
    zt_tree *t = &sl->tree;
    float vl = s->cfg.virtual_loss;
    int n = leaf_node;
    bool first = true;
    for (;;) {
        int p = t->parent[n];
        /* A new leaf's virtual loss was dropped when it was expanded. */
        if (p != ZT_TREE_NONE && !(first && was_new)) t->value_sum[n] += sign_to_parent(t, n) * vl;
        if (t->kind[n] == ZT_NODE_CHANCE && !first) {
            v = chance_value(t, n);
            t->value_sum[n] = v * (float)t->visit[n];
        } else {
            t->value_sum[n] += v;
        }
        if (p == ZT_TREE_NONE) break;
        v = t->reward[n] + sign_to_parent(t, n) * v;
        if (s->cfg.minmax_q) {
            sl->qmin = fminf(sl->qmin, v);
            sl->qmax = fmaxf(sl->qmax, v);
        }
        n = p;
        first = false;
    }
}

/* ---- selection ---- */

static inline float normalise_q(const zt_search *s, const slot *sl, float q)
{
    if (!s->cfg.minmax_q || !(sl->qmax > sl->qmin)) return q;
    return (q - sl->qmin) / (sl->qmax - sl->qmin);
}

static int select_puct(const zt_search *s, const slot *sl, int n)
{
    const zt_tree *t = &sl->tree;
    const zt_search_config *c = &s->cfg;
    int e0 = t->first_edge[n], ne = t->num_edges_of[n];
    /* visit[n] already counts this simulation; AlphaZero's N(s) does not. */
    float parent_n = (float)(t->visit[n] - 1);
    float sqrt_n = sqrtf(parent_n);
    float c_puct = c->c_init + logf((parent_n + c->c_base + 1.0f) / c->c_base);
    float fpu = c->fpu_value;
    if (c->fpu == ZT_FPU_PARENT) fpu = t->value_sum[n] / (float)t->visit[n] - c->fpu_reduction;
    fpu = normalise_q(s, sl, fpu);
    const float *prior = (n == 0) ? sl->root_prior : t->prior + e0;
    int best = 0;
    float best_score = -INFINITY;
    for (int i = 0; i < ne; i++) {
        int ch = t->child[e0 + i];
        float q = fpu, visits = 0;
        if (has_value(t, ch)) {
            q = normalise_q(s, sl, zt_tree_q(t, ch));
            visits = (float)t->visit[ch];
        }
        float score = q + c_puct * prior[i] * sqrt_n / (1.0f + visits);
        if (score > best_score) {
            best_score = score;
            best = i;
        }
    }
    return best;
}

/* Completed Q and sigma over the edges of decision node n (Gumbel §4). */
static void gumbel_sigma_of(const zt_search *s, const zt_tree *t, int n, float *logits, float *sigma,
                            float *completed)
{
    int e0 = t->first_edge[n], ne = t->num_edges_of[n];
    float q[ZT_MAX_ACTIONS];
    int32_t visits[ZT_MAX_ACTIONS];
    int max_visit = 0;
    for (int i = 0; i < ne; i++) {
        int ch = t->child[e0 + i];
        visits[i] = has_value(t, ch) ? t->visit[ch] : 0;
        q[i] = visits[i] ? zt_tree_q(t, ch) : 0.0f;
        if (visits[i] > max_visit) max_visit = visits[i];
        logits[i] = logf(fmaxf(t->prior[e0 + i], 1e-30f));
    }
    zt_gumbel_completed_q(ne, t->prior + e0, q, visits, t->raw_value[n], completed);
    zt_gumbel_sigma(ne, completed, max_visit, s->cfg.c_visit, s->cfg.c_scale, s->cfg.gumbel_rescale,
                    sigma);
}

/* Non-root Gumbel selection: argmax of pi'(a) - N(a) / (1 + sum N), pi' the
 * improved policy (Danihelka et al. §5). Deterministic. */
static int select_gumbel_interior(const zt_search *s, const zt_tree *t, int n)
{
    int e0 = t->first_edge[n], ne = t->num_edges_of[n];
    float logits[ZT_MAX_ACTIONS], sigma[ZT_MAX_ACTIONS], completed[ZT_MAX_ACTIONS];
    gumbel_sigma_of(s, t, n, logits, sigma, completed);
    zt_gumbel_softmax(ne, logits, sigma, completed);
    float total = 0;
    for (int i = 0; i < ne; i++) {
        int ch = t->child[e0 + i];
        if (ch != ZT_TREE_NONE) total += (float)t->visit[ch];
    }
    int best = 0;
    float best_score = -INFINITY;
    for (int i = 0; i < ne; i++) {
        int ch = t->child[e0 + i];
        float visits = ch != ZT_TREE_NONE ? (float)t->visit[ch] : 0.0f;
        float score = completed[i] - visits / (1.0f + total);
        if (score > best_score) {
            best_score = score;
            best = i;
        }
    }
    return best;
}

/* Root Gumbel selection: among the considered actions whose visit count is
 * what sequential halving wants for this simulation, the one with the largest
 * g(a) + logits(a) + sigma(q(a)). */
static int select_gumbel_root(const zt_search *s, const slot *sl)
{
    const zt_tree *t = &sl->tree;
    int e0 = t->first_edge[0], ne = t->num_edges_of[0];
    float logits[ZT_MAX_ACTIONS], sigma[ZT_MAX_ACTIONS], completed[ZT_MAX_ACTIONS];
    gumbel_sigma_of(s, t, 0, logits, sigma, completed);
    int idx = sl->sims_started < s->schedule_len ? sl->sims_started : s->schedule_len - 1;
    int want = sl->schedule[idx];
    int best = -1, fallback = -1, fallback_visits = 0;
    float best_score = -INFINITY, fallback_score = -INFINITY;
    for (int i = 0; i < ne; i++) {
        if (!sl->considered[i]) continue;
        int ch = t->child[e0 + i];
        int visits = ch != ZT_TREE_NONE ? t->visit[ch] : 0;
        float score = sl->gumbel[i] + logits[i] + sigma[i];
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
    int e0 = t->first_edge[n], ne = t->num_edges_of[n];
    float total = 0;
    for (int i = 0; i < ne; i++) {
        int ch = t->child[e0 + i];
        if (ch != ZT_TREE_NONE) total += (float)t->visit[ch];
    }
    int best = -1;
    float best_score = -INFINITY;
    for (int i = 0; i < ne; i++) {
        float p = t->prior[e0 + i];
        if (!(p > 0)) continue;
        int ch = t->child[e0 + i];
        float visits = ch != ZT_TREE_NONE ? (float)t->visit[ch] : 0.0f;
        float score = p * (total + 1.0f) - visits;
        if (score > best_score) {
            best_score = score;
            best = i;
        }
    }
    ZT_ASSERT(best >= 0);
    return best;
}

typedef enum { PICK_NEW, PICK_KNOWN, PICK_COLLISION, PICK_NONE } pick;

/* Walks from the root to a leaf, adding virtual visits on the way. */
static pick select_leaf(zt_search *s, slot *sl, int *leaf_node, int *leaf_action)
{
    zt_tree *t = &sl->tree;
    float vl = s->cfg.virtual_loss;
    int n = 0, depth = 0;
    add_virtual(t, 0, vl);
    for (;;) {
        if (t->kind[n] == ZT_NODE_NEW) {
            /* Pending in this round: give back the virtual visits. */
            for (int m = n; m != ZT_TREE_NONE; m = t->parent[m]) remove_virtual(t, m, vl);
            s->stats.collisions++;
            return PICK_COLLISION;
        }
        if (t->kind[n] == ZT_NODE_TERMINAL || t->unexpanded[n]) {
            *leaf_node = n;
            return PICK_KNOWN;
        }
        int i;
        if (t->kind[n] == ZT_NODE_CHANCE)
            i = select_chance(t, n);
        else if (s->cfg.algorithm == ZT_SEARCH_GUMBEL)
            i = n == 0 ? select_gumbel_root(s, sl) : select_gumbel_interior(s, t, n);
        else
            i = select_puct(s, sl, n);
        int e = t->first_edge[n] + i;
        int c = t->child[e];
        depth++;
        if (depth > s->stats.max_depth) s->stats.max_depth = depth;
        if (c == ZT_TREE_NONE) {
            c = zt_tree_add_node(t, n);
            if (c == ZT_TREE_NONE) {
                /* Out of nodes: n stays a leaf valued by the model. */
                s->stats.capacity_hits++;
                *leaf_node = n;
                return PICK_KNOWN;
            }
            t->child[e] = c;
            add_virtual(t, c, vl);
            *leaf_node = c;
            *leaf_action = t->action[e];
            return PICK_NEW;
        }
        add_virtual(t, c, vl);
        n = c;
    }
}

/* ---- roots ---- */

static void prepare_root(zt_search *s, slot *sl)
{
    zt_tree *t = &sl->tree;
    int e0 = t->first_edge[0], ne = t->num_edges_of[0];
    ZT_ASSERT(ne <= ZT_MAX_ACTIONS);
    if (s->cfg.algorithm == ZT_SEARCH_PUCT) {
        memcpy(sl->root_prior, t->prior + e0, (size_t)ne * sizeof(float));
        float f = s->cfg.dirichlet_fraction;
        if (f > 0 && ne > 1) {
            /* AlphaZero's exploration noise: (1 - f) P + f Dir(alpha). */
            zt_rng_dirichlet(&sl->rng, s->cfg.dirichlet_alpha, ne, sl->gumbel);
            for (int i = 0; i < ne; i++) sl->root_prior[i] = (1 - f) * sl->root_prior[i] + f * sl->gumbel[i];
        }
    } else {
        /* Gumbel-top-k: the m actions with the largest g(a) + logits(a). */
        int m = s->cfg.gumbel_m < ne ? s->cfg.gumbel_m : ne;
        for (int i = 0; i < ne; i++) {
            sl->gumbel[i] = s->cfg.gumbel_noise ? (float)zt_rng_gumbel(&sl->rng) : 0.0f;
            sl->root_prior[i] = sl->gumbel[i] + logf(fmaxf(t->prior[e0 + i], 1e-30f));
            sl->considered[i] = 0;
        }
        for (int k = 0; k < m; k++) {
            int best = -1;
            for (int i = 0; i < ne; i++)
                if (!sl->considered[i] && (best < 0 || sl->root_prior[i] > sl->root_prior[best])) best = i;
            sl->considered[best] = 1;
        }
        zt_gumbel_halving_schedule(m, s->schedule_len, sl->schedule);
    }
    sl->prepared = true;
}

static void reset_slot(slot *sl)
{
    zt_tree_clear(&sl->tree);
    sl->has_root = false;
}

void zt_search_begin(zt_search *s, int t, const void *root_input)
{
    ZT_ASSERT(t >= 0 && t <= s->num_trees);
    slot *sl = &s->slots[t];
    memcpy(sl->input, root_input, s->model->input_size);
    zt_tree *tr = &sl->tree;
    if (sl->has_root && (tr->kind[0] != ZT_NODE_DECISION || tr->unexpanded[0])) reset_slot(sl);
    if (!sl->has_root && t < s->num_trees && s->cache_valid &&
        memcmp(s->slots[s->num_trees].input, root_input, s->model->input_size) == 0) {
        zt_tree_copy(tr, &s->slots[s->num_trees].tree);
        sl->has_root = true;
        s->stats.root_cache_hits++;
    }
    sl->searching = true;
    sl->prepared = false;
    sl->sims_target = s->cfg.num_simulations;
    sl->sims_started = 0;
    sl->sims_done = 0;
    sl->qmin = INFINITY;
    sl->qmax = -INFINITY;
}

/* One initial() call for every searching tree without a root. */
static void evaluate_roots(zt_search *s)
{
    int B = 0;
    for (int i = 0; i <= s->num_trees; i++) {
        slot *sl = &s->slots[i];
        if (!sl->searching || sl->has_root) continue;
        zt_tree_clear(&sl->tree);
        int root = zt_tree_add_node(&sl->tree, ZT_TREE_NONE);
        s->leaves[B] = (leaf){i, root, true};
        s->in_states[B] = sl->input;
        s->out_states[B] = zt_tree_state(&sl->tree, root);
        B++;
    }
    if (B == 0) return;
    s->model->initial(s->model, B, s->in_states, s->out_states, &s->out);
    for (int b = 0; b < B; b++) {
        slot *sl = &s->slots[s->leaves[b].slot];
        zt_tree *t = &sl->tree;
        ZT_ASSERT(s->out.kind[b] == ZT_NODE_DECISION); /* search starts where a player moves */
        expand(s, t, 0, &s->out, b);
        ZT_ASSERT(!t->unexpanded[0]);
        t->visit[0] = 1;
        t->value_sum[0] = s->out.value[b];
        sl->has_root = true;
    }
}

void zt_search_run(zt_search *s)
{
    evaluate_roots(s);
    for (int i = 0; i <= s->num_trees; i++)
        if (s->slots[i].searching && !s->slots[i].prepared) prepare_root(s, &s->slots[i]);
    int K = s->cfg.leaves_per_round;
    for (;;) {
        int B = 0, known = 0;
        /* Known leaves go to the end of the leaf list, model leaves to the front. */
        int cap = s->batch_cap;
        for (int i = 0; i <= s->num_trees; i++) {
            slot *sl = &s->slots[i];
            if (!sl->searching) continue;
            int want = sl->sims_target - sl->sims_started;
            if (want > K) want = K;
            for (int k = 0; k < want; k++) {
                int node, action = -1;
                pick p = select_leaf(s, sl, &node, &action);
                if (p == PICK_COLLISION) break;
                sl->sims_started++;
                if (p == PICK_KNOWN) {
                    known++;
                    s->leaves[cap - known] = (leaf){i, node, false};
                    continue;
                }
                zt_tree *t = &sl->tree;
                int parent = t->parent[node];
                s->leaves[B] = (leaf){i, node, true};
                s->in_states[B] = zt_tree_state(t, parent);
                s->out_states[B] = zt_tree_state(t, node);
                s->actions[B] = action;
                B++;
            }
        }
        ZT_ASSERT(B + known <= s->batch_cap);
        if (B == 0 && known == 0) break;
        if (B > 0) {
            s->model->recurrent(s->model, B, s->in_states, s->actions, s->out_states, &s->out);
            s->stats.model_calls++;
            s->stats.model_states += (uint64_t)B;
        }
        for (int b = 0; b < B; b++) {
            slot *sl = &s->slots[s->leaves[b].slot];
            int n = s->leaves[b].node;
            sl->tree.value_sum[n] = 0;
            expand(s, &sl->tree, n, &s->out, b);
            backup(s, sl, n, true, s->out.value[b]);
        }
        for (int k = 1; k <= known; k++) {
            leaf lf = s->leaves[cap - k];
            slot *sl = &s->slots[lf.slot];
            backup(s, sl, lf.node, false, sl->tree.raw_value[lf.node]);
        }
        s->stats.known_leaves += (uint64_t)known;
        s->stats.simulations += (uint64_t)(B + known);
        for (int b = 0; b < B; b++) s->slots[s->leaves[b].slot].sims_done++;
        for (int k = 1; k <= known; k++) s->slots[s->leaves[cap - k].slot].sims_done++;
        for (int i = 0; i <= s->num_trees; i++) {
            slot *sl = &s->slots[i];
            if (sl->searching && sl->sims_done >= sl->sims_target) sl->searching = false;
        }
    }
}

/* ---- results ---- */

static int root_visits_of(const zt_tree *t, int i)
{
    int c = t->child[t->first_edge[0] + i];
    return c != ZT_TREE_NONE ? t->visit[c] : 0;
}

int zt_search_choose(zt_search *s, int t, float temperature)
{
    slot *sl = &s->slots[t];
    const zt_tree *tr = &sl->tree;
    ZT_ASSERT(sl->has_root);
    int e0 = tr->first_edge[0], ne = tr->num_edges_of[0];
    if (s->cfg.algorithm == ZT_SEARCH_GUMBEL) {
        /* The sequential-halving winner: most visited of the considered
         * actions, ties by g + logits + sigma (Danihelka et al. Alg. 2). */
        float logits[ZT_MAX_ACTIONS], sigma[ZT_MAX_ACTIONS], completed[ZT_MAX_ACTIONS];
        gumbel_sigma_of(s, tr, 0, logits, sigma, completed);
        int best = -1, best_visits = -1;
        float best_score = -INFINITY;
        for (int i = 0; i < ne; i++) {
            if (!sl->considered[i]) continue;
            int v = root_visits_of(tr, i);
            float score = sl->gumbel[i] + logits[i] + sigma[i];
            if (v > best_visits || (v == best_visits && score > best_score)) {
                best = i;
                best_visits = v;
                best_score = score;
            }
        }
        return tr->action[e0 + best];
    }
    int best = 0;
    for (int i = 1; i < ne; i++) {
        int v = root_visits_of(tr, i), bv = root_visits_of(tr, best);
        if (v > bv || (v == bv && tr->prior[e0 + i] > tr->prior[e0 + best])) best = i;
    }
    if (temperature <= 0) return tr->action[e0 + best];
    float weights[ZT_MAX_ACTIONS];
    double top = root_visits_of(tr, best);
    for (int i = 0; i < ne; i++) weights[i] = (float)pow(root_visits_of(tr, i) / top, 1.0 / temperature);
    return tr->action[e0 + zt_rng_categorical(&sl->rng, weights, ne)];
}

void zt_search_policy(const zt_search *s, int t, float *policy)
{
    const slot *sl = &s->slots[t];
    const zt_tree *tr = &sl->tree;
    ZT_ASSERT(sl->has_root);
    int e0 = tr->first_edge[0], ne = tr->num_edges_of[0];
    memset(policy, 0, (size_t)s->model->num_actions * sizeof(float));
    if (s->cfg.algorithm == ZT_SEARCH_GUMBEL) {
        float logits[ZT_MAX_ACTIONS], sigma[ZT_MAX_ACTIONS], improved[ZT_MAX_ACTIONS];
        gumbel_sigma_of(s, tr, 0, logits, sigma, improved);
        zt_gumbel_softmax(ne, logits, sigma, improved);
        for (int i = 0; i < ne; i++) policy[tr->action[e0 + i]] = improved[i];
        return;
    }
    double total = 0;
    for (int i = 0; i < ne; i++) total += root_visits_of(tr, i);
    for (int i = 0; i < ne; i++)
        policy[tr->action[e0 + i]] = total > 0 ? (float)(root_visits_of(tr, i) / total) : 0.0f;
}

void zt_search_root_visits(const zt_search *s, int t, int32_t *visits)
{
    const zt_tree *tr = &s->slots[t].tree;
    memset(visits, 0, (size_t)s->model->num_actions * sizeof *visits);
    int e0 = tr->first_edge[0], ne = tr->num_edges_of[0];
    for (int i = 0; i < ne; i++) visits[tr->action[e0 + i]] = root_visits_of(tr, i);
}

float zt_search_root_value(const zt_search *s, int t)
{
    const zt_tree *tr = &s->slots[t].tree;
    ZT_ASSERT(s->slots[t].has_root);
    return tr->value_sum[0] / (float)tr->visit[0];
}

void zt_search_played(zt_search *s, int t, int action)
{
    slot *sl = &s->slots[t];
    ZT_ASSERT(!sl->searching);
    if (!sl->has_root) return;
    zt_tree *tr = &sl->tree;
    int c = s->cfg.tree_reuse ? zt_tree_find_child(tr, 0, action) : ZT_TREE_NONE;
    if (c == ZT_TREE_NONE || tr->kind[c] == ZT_NODE_NEW || tr->kind[c] == ZT_NODE_TERMINAL) {
        reset_slot(sl);
        return;
    }
    zt_tree_extract(&s->spare, tr, c, s->remap);
    zt_tree_swap(&s->spare, tr);
    s->stats.reused_nodes += (uint64_t)tr->num_nodes;
}

zt_status zt_search_build_root_cache(zt_search *s, const void *root_input, int num_simulations)
{
    if (s->cfg.algorithm != ZT_SEARCH_PUCT)
        return zt_fail(ZT_ERR_UNSUPPORTED, "the root cache serves PUCT; Gumbel's halving starts from zero visits");
    for (int i = 0; i < s->num_trees; i++) ZT_ASSERT(!s->slots[i].searching);
    slot *cache = &s->slots[s->num_trees];
    reset_slot(cache);
    s->cache_valid = false;
    zt_search_begin(s, s->num_trees, root_input);
    cache->sims_target = num_simulations;
    zt_search_run(s);
    s->cache_valid = true;
    return ZT_OK;
}

void zt_search_clear_root_cache(zt_search *s)
{
    s->cache_valid = false;
    reset_slot(&s->slots[s->num_trees]);
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
