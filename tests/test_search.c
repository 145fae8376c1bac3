/* Tests of the search layer on toy models (no game needed): trees (clone,
 * subtree reuse, bounded capacity, no allocation while searching), Gumbel
 * arithmetic and Gumbel with reused statistics, exact chance nodes on a dice
 * game with a known expectation, K distinct leaves per round, min-max Q
 * normalisation, the first-play-urgency modes, and a search spread over
 * several runs beside other trees' giving the result of one run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "core/rng.h"
#include "search/gumbel.h"
#include "search/search.h"

#include "zt_test.h"

/* ---- allocation counting ----
 * Every malloc-family call of the process is counted, so a test can assert
 * that a stretch of code allocates nothing. Under AddressSanitizer through
 * its allocator hooks (declared here: not every compiler ships
 * sanitizer/allocator_interface.h); with glibc by replacing malloc and
 * friends with counting wrappers around glibc's own entry points. */
static volatile unsigned long allocations;
static bool allocation_counting;

#if defined(__SANITIZE_ADDRESS__)
int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void *, size_t),
                                              void (*free_hook)(const volatile void *));
static void count_malloc(const volatile void *p, size_t n)
{
    (void)p;
    (void)n;
    allocations++;
}
static void count_free(const volatile void *p)
{
    (void)p;
    allocations++;
}
static void start_allocation_counting(void)
{
    allocation_counting = __sanitizer_install_malloc_and_free_hooks(count_malloc, count_free) != 0;
}
#elif defined(__GLIBC__)
void *__libc_malloc(size_t n);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t n);
void *__libc_memalign(size_t alignment, size_t n);
void __libc_free(void *p);

void *malloc(size_t n)
{
    allocations++;
    return __libc_malloc(n);
}
void *calloc(size_t n, size_t size)
{
    allocations++;
    return __libc_calloc(n, size);
}
void *realloc(void *p, size_t n)
{
    allocations++;
    return __libc_realloc(p, n);
}
void *aligned_alloc(size_t alignment, size_t n)
{
    allocations++;
    return __libc_memalign(alignment, n);
}
int posix_memalign(void **out, size_t alignment, size_t n)
{
    allocations++;
    void *p = __libc_memalign(alignment, n);
    if (!p) return 12; /* ENOMEM */
    *out = p;
    return 0;
}
void free(void *p)
{
    if (p) allocations++;
    __libc_free(p);
}
static void start_allocation_counting(void)
{
    allocation_counting = true;
}
#else
static void start_allocation_counting(void)
{
}
#endif

/* ---- a synthetic game: 4 actions per ply, depth 8, hashed values ----
 * A state is its path hash and depth; players alternate; the leaf result
 * and the values are pseudo-random functions of the path. Each recurrent
 * call checks that no new state occurs twice in the batch: the trees have
 * distinct roots, so that means K distinct leaves per tree per round. */

enum { SYN_ACTIONS = 4, SYN_DEPTH = 8 };

typedef struct syn_state {
    uint64_t path;
    int32_t depth;
    int32_t player;
} syn_state;

typedef struct syn_model {
    zt_model base;
    float scale; /* multiplies every value and reward (1 by default) */
    bool flat;   /* all logits 0: uniform priors */
    int duplicate_leaves;
    uint64_t calls;
    uint64_t seen[4096];
} syn_model;

static float syn_unit(uint64_t h)
{
    return (float)((double)(zt_hash_mix(h) >> 11) * 0x1.0p-53 * 2.0 - 1.0);
}

static void syn_fill(const syn_model *m, syn_state *s, int i, zt_model_output *out)
{
    for (int a = 0; a < SYN_ACTIONS; a++)
        out->logits[i * SYN_ACTIONS + a] = m->flat ? 0.0f : syn_unit(s->path + 7 * (uint64_t)a);
    /* action 3 is illegal at odd depths: masking below the root */
    if (s->depth % 2 == 1) out->logits[i * SYN_ACTIONS + 3] = -INFINITY;
    out->value[i] = m->scale * 0.5f * syn_unit(s->path ^ 0x55);
    out->reward[i] = 0;
    out->player[i] = (int8_t)s->player;
    out->num_outcomes[i] = 0;
    out->kind[i] = ZT_NODE_DECISION;
}

static zt_status syn_initial(zt_model *m, int B, const void *const *roots, void *const *states,
                             zt_model_output *out)
{
    for (int i = 0; i < B; i++) {
        memcpy(states[i], roots[i], sizeof(syn_state));
        syn_fill((const syn_model *)m, states[i], i, out);
    }
    return ZT_OK;
}

static zt_status syn_recurrent(zt_model *base, int B, const void *const *states, const int *actions,
                               void *const *next, zt_model_output *out)
{
    syn_model *m = (syn_model *)base;
    m->calls++;
    for (int i = 0; i < B; i++) {
        const syn_state *s = states[i];
        syn_state *n = next[i];
        n->path = zt_hash_mix(s->path * 31 + (uint64_t)actions[i] + 1);
        n->depth = s->depth + 1;
        n->player = 1 - s->player;
        for (int j = 0; j < i && j < 4096; j++)
            if (m->seen[j] == n->path) m->duplicate_leaves++;
        if (i < 4096) m->seen[i] = n->path;
        if (n->depth == SYN_DEPTH) {
            out->kind[i] = ZT_NODE_TERMINAL;
            out->player[i] = (int8_t)s->player;
            out->value[i] = 0;
            out->reward[i] = m->scale * (syn_unit(n->path) > 0 ? 1.0f : -1.0f);
            out->num_outcomes[i] = 0;
        } else {
            syn_fill(m, n, i, out);
        }
    }
    return ZT_OK;
}

static void syn_free(zt_model *m)
{
    free(m);
}

static syn_model *syn_new(int max_batch)
{
    syn_model *m = calloc(1, sizeof *m);
    m->scale = 1.0f;
    m->base = (zt_model){.num_actions = SYN_ACTIONS,
                         .state_size = sizeof(syn_state),
                         .input_size = sizeof(syn_state),
                         .max_batch = max_batch,
                         .initial = syn_initial,
                         .recurrent = syn_recurrent,
                         .free = syn_free};
    return m;
}

static void test_tree_clone_and_reuse(void)
{
    syn_model *m = syn_new(64);
    zt_search_config cfg;
    zt_search_config_default(&cfg, ZT_SEARCH_PUCT);
    cfg.num_simulations = 400;
    zt_search *s;
    CHECK(zt_search_new(&cfg, &m->base, 2, &s) == ZT_OK, "search_new: %s", zt_error_message());
    syn_state root = {.path = 12345};
    zt_search_begin(s, 0, &root);
    CHECK(zt_search_run(s) == ZT_OK, "search: %s", zt_error_message());

    const zt_tree *t = zt_search_tree(s, 0);
    CHECK(t->nodes[0].visit == 401, "root visits %d, expected 401", t->nodes[0].visit);
    zt_tree copy, before;
    zt_tree_init(&copy, cfg.node_capacity, cfg.edge_capacity, sizeof(syn_state));
    zt_tree_init(&before, cfg.node_capacity, cfg.edge_capacity, sizeof(syn_state));
    zt_tree_copy(&copy, t);
    CHECK(zt_tree_subtree_equal(&copy, 0, t, 0), "clone differs from the original");
    CHECK(memcmp(copy.nodes, t->nodes, (size_t)t->num_nodes * sizeof(zt_node)) == 0 &&
              memcmp(copy.edges, t->edges, (size_t)t->num_edges * sizeof(zt_edge)) == 0, "clone records differ");

    /* masking below the root: no node at odd depth has action 3 */
    for (int n = 0; n < t->num_nodes; n++) {
        if (t->nodes[n].kind != ZT_NODE_DECISION) continue;
        const syn_state *st = (const syn_state *)zt_tree_state(t, n);
        for (int e = t->nodes[n].first_edge; e < t->nodes[n].first_edge + t->nodes[n].num_edges; e++)
            CHECK(!(st->depth % 2 == 1 && t->actions[e] == 3), "illegal action expanded at node %d", n);
    }

    int action = zt_search_choose(s, 0, 0.0f);
    zt_tree_copy(&before, t);
    int child = zt_tree_find_child(&before, 0, action);
    zt_search_played(s, 0, action);
    t = zt_search_tree(s, 0);
    CHECK(zt_tree_subtree_equal(t, 0, &before, child), "reused subtree differs from the one before the move");
    CHECK(zt_search_get_stats(s).reused_nodes == (uint64_t)t->num_nodes, "reuse count");
    int kept = t->num_nodes;
    CHECK(kept > 1 && kept < before.num_nodes, "kept %d of %d nodes", kept, before.num_nodes);

    /* the next search continues from the kept visits */
    syn_state next = *(const syn_state *)zt_tree_state(t, 0);
    int visits_before = t->nodes[0].visit;
    zt_search_begin(s, 0, &next);
    CHECK(zt_search_run(s) == ZT_OK, "search: %s", zt_error_message());
    t = zt_search_tree(s, 0);
    CHECK(t->nodes[0].visit == visits_before + 400, "root visits %d after reuse, expected %d", t->nodes[0].visit,
          visits_before + 400);

    /* a forgotten tree starts over: the next search holds only its own visits */
    zt_search_forget(s, 0);
    zt_search_begin(s, 0, &next);
    CHECK(zt_search_run(s) == ZT_OK, "search: %s", zt_error_message());
    t = zt_search_tree(s, 0);
    CHECK(t->nodes[0].visit == 401, "root visits %d after forget, expected 401", t->nodes[0].visit);

    zt_tree_free(&copy);
    zt_tree_free(&before);
    zt_search_free(s);
    zt_model_free(&m->base);
}

static void test_virtual_loss_distinct(void)
{
    enum { G = 8, K = 8 };
    syn_model *m = syn_new(G * K);
    zt_search_config cfg;
    zt_search_config_default(&cfg, ZT_SEARCH_PUCT);
    cfg.num_simulations = 300;
    cfg.leaves_per_round = K;
    for (int alg = 0; alg < 2; alg++) {
        cfg.algorithm = alg ? ZT_SEARCH_GUMBEL : ZT_SEARCH_PUCT;
        m->duplicate_leaves = 0;
        m->calls = 0;
        zt_search *s;
        CHECK(zt_search_new(&cfg, &m->base, G, &s) == ZT_OK, "search_new: %s", zt_error_message());
        syn_state roots[G];
        for (int g = 0; g < G; g++) {
            roots[g] = (syn_state){.path = 1000 + (uint64_t)g};
            zt_search_begin(s, g, &roots[g]);
        }
        CHECK(zt_search_run(s) == ZT_OK, "search: %s", zt_error_message());
        zt_search_stats st = zt_search_get_stats(s);
        CHECK(m->duplicate_leaves == 0, "%d duplicate leaves within a round", m->duplicate_leaves);
        CHECK(st.simulations == (uint64_t)G * 300, "simulations %llu", (unsigned long long)st.simulations);
        CHECK(st.model_states > 4 * st.model_calls, "K leaves per round: %llu states in %llu calls",
              (unsigned long long)st.model_states, (unsigned long long)st.model_calls);
        for (int g = 0; g < G; g++) {
            const zt_tree *t = zt_search_tree(s, g);
            int32_t sum = 0;
            for (int e = t->nodes[0].first_edge; e < t->nodes[0].first_edge + t->nodes[0].num_edges; e++)
                sum += t->edges[e].visit;
            CHECK(sum == 300 && t->nodes[0].visit == 301, "tree %d: no virtual visit left over (%d)", g, sum);
        }
        printf("virtual loss %s: G=%d K=%d, %llu states in %llu calls, %llu collisions\n",
               alg ? "gumbel" : "puct", G, K, (unsigned long long)st.model_states,
               (unsigned long long)st.model_calls, (unsigned long long)st.collisions);
        zt_search_free(s);
    }
    zt_model_free(&m->base);
}

/* 1M simulations with a bounded tree: the search stops expanding, keeps
 * backing up and counts it, and neither allocates nor frees anything while
 * it runs (under ASan this also shows nothing leaks). */
static void test_bounded_capacity(void)
{
    enum { G = 16 };
    syn_model *m = syn_new(G);
    zt_search_config cfg;
    zt_search_config_default(&cfg, ZT_SEARCH_PUCT);
    cfg.num_simulations = 1000000 / G;
    cfg.node_capacity = 300;
    cfg.edge_capacity = 1000;
    zt_search *s;
    CHECK(zt_search_new(&cfg, &m->base, G, &s) == ZT_OK, "search_new: %s", zt_error_message());
    syn_state roots[G];
    for (int g = 0; g < G; g++) {
        roots[g] = (syn_state){.path = 77 + (uint64_t)g};
        zt_search_begin(s, g, &roots[g]);
    }
    unsigned long before = allocations;
    CHECK(zt_search_run(s) == ZT_OK, "search: %s", zt_error_message());
    unsigned long during = allocations - before;
    CHECK(!allocation_counting || during == 0, "%lu allocations or frees during 1M simulations", during);
    zt_search_stats st = zt_search_get_stats(s);
    CHECK(st.simulations == 1000000, "simulations %llu", (unsigned long long)st.simulations);
    CHECK(st.capacity_hits > 0, "capacity never reached");
    for (int g = 0; g < G; g++) {
        const zt_tree *t = zt_search_tree(s, g);
        CHECK(t->num_nodes <= 300 && t->nodes[0].visit == cfg.num_simulations + 1, "tree %d bounded", g);
        CHECK(isfinite(zt_search_root_value(s, g)), "root value finite");
    }
    printf("bounded: 1M simulations, %zu bytes per tree, %llu capacity hits, %s\n", zt_search_tree_bytes(s),
           (unsigned long long)st.capacity_hits,
           allocation_counting ? "no allocation while searching" : "allocations not counted here");
    zt_search_free(s);
    zt_model_free(&m->base);
}

/* ---- a dice game: player 0 picks one of 3 bets, a loaded die with one
 * impossible face is rolled, the bet pays table[bet][face]. ---- */

enum { DICE_BETS = 3, DICE_FACES = 6 };
static const float dice_prob[DICE_FACES] = {0.1f, 0.2f, 0.3f, 0.15f, 0.25f, 0.0f};
static const float dice_pay[DICE_BETS][DICE_FACES] = {
    {1, -1, 0.5f, 0, -0.5f, 1},
    {-1, 1, 0.2f, 1, -1, -1},
    {0.3f, 0.3f, -0.2f, 0.6f, 0.1f, 1},
};

typedef struct dice_state {
    int32_t stage; /* 0 bet, 1 roll, 2 over */
    int32_t bet, face;
} dice_state;

static void dice_out(const dice_state *s, int i, zt_model_output *out)
{
    out->reward[i] = 0;
    out->value[i] = 0;
    out->player[i] = 0;
    out->num_outcomes[i] = 0;
    if (s->stage == 0) {
        out->kind[i] = ZT_NODE_DECISION;
        for (int a = 0; a < DICE_BETS; a++) out->logits[i * DICE_BETS + a] = 0;
    } else if (s->stage == 1) {
        out->kind[i] = ZT_NODE_CHANCE;
        out->num_outcomes[i] = DICE_FACES;
        for (int o = 0; o < DICE_FACES; o++) {
            out->outcomes[i * DICE_FACES + o] = o;
            out->outcome_probs[i * DICE_FACES + o] = dice_prob[o];
        }
    } else {
        out->kind[i] = ZT_NODE_TERMINAL;
        out->reward[i] = dice_pay[s->bet][s->face];
    }
}

static zt_status dice_initial(zt_model *m, int B, const void *const *roots, void *const *states,
                              zt_model_output *out)
{
    for (int i = 0; i < B; i++) {
        memcpy(states[i], roots[i], sizeof(dice_state));
        dice_out(states[i], i, out);
    }
    return ZT_OK;
}

static zt_status dice_recurrent(zt_model *m, int B, const void *const *states, const int *actions,
                                void *const *next, zt_model_output *out)
{
    for (int i = 0; i < B; i++) {
        dice_state *n = next[i];
        *n = *(const dice_state *)states[i];
        if (n->stage == 0)
            n->bet = actions[i];
        else
            n->face = actions[i];
        n->stage++;
        dice_out(n, i, out);
    }
    return ZT_OK;
}

/* ---- a one-player chain: 2 actions a move, every state valued 0.5, every
 * move paying 0.25 (into a chance node of two equally likely outcomes,
 * each paying 0.125, with `chance`); it never ends. ---- */

typedef struct chain_state {
    int32_t depth, at_chance;
} chain_state;

static bool chain_with_chance;

static void chain_out(const chain_state *s, int i, zt_model_output *out)
{
    out->value[i] = 0.5f;
    out->player[i] = 0;
    out->num_outcomes[i] = 0;
    out->kind[i] = ZT_NODE_DECISION;
    for (int a = 0; a < 2; a++) out->logits[i * 2 + a] = 0;
    if (s->at_chance) {
        out->kind[i] = ZT_NODE_CHANCE;
        out->num_outcomes[i] = 2;
        for (int o = 0; o < 2; o++) {
            out->outcomes[i * 2 + o] = o;
            out->outcome_probs[i * 2 + o] = 0.5f;
        }
    }
}

static zt_status chain_initial(zt_model *m, int B, const void *const *roots, void *const *states,
                               zt_model_output *out)
{
    (void)m;
    for (int i = 0; i < B; i++) {
        memcpy(states[i], roots[i], sizeof(chain_state));
        chain_out(states[i], i, out);
        out->reward[i] = 0;
    }
    return ZT_OK;
}

static zt_status chain_recurrent(zt_model *m, int B, const void *const *states, const int *actions,
                                 void *const *next, zt_model_output *out)
{
    (void)m;
    (void)actions;
    for (int i = 0; i < B; i++) {
        const chain_state *s = states[i];
        chain_state *n = next[i];
        n->depth = s->depth + 1;
        n->at_chance = chain_with_chance && !s->at_chance;
        chain_out(n, i, out);
        out->reward[i] = s->at_chance ? 0.125f : 0.25f;
    }
    return ZT_OK;
}

/* The discount (search.discount): every edge's Q is its reward plus gamma
 * times the mean value of the decision node it reaches, and a chance node's
 * edge (no discount of its own) the reward plus the chance node's value,
 * for PUCT and Gumbel, with and without chance nodes; gamma 1 and 0.9 give
 * other root values. */
static void test_discount(void)
{
    zt_model m = {.num_actions = 2,
                  .max_outcomes = 2,
                  .state_size = sizeof(chain_state),
                  .input_size = sizeof(chain_state),
                  .max_batch = 4,
                  .initial = chain_initial,
                  .recurrent = chain_recurrent};
    for (int chance = 0; chance < 2; chance++) {
        chain_with_chance = chance;
        for (int alg = 0; alg < 2; alg++) {
            float root_value[2];
            for (int d = 0; d < 2; d++) {
                float gamma = d ? 0.9f : 1.0f;
                zt_search_config cfg;
                zt_search_config_default(&cfg, alg ? ZT_SEARCH_GUMBEL : ZT_SEARCH_PUCT);
                cfg.num_simulations = 200;
                cfg.gumbel_noise = false;
                cfg.discount = gamma;
                cfg.node_capacity = 1024;
                cfg.edge_capacity = 4096;
                zt_search *s;
                CHECK(zt_search_new(&cfg, &m, 1, &s) == ZT_OK, "search_new: %s",
                      zt_error_message());
                if (!s) return;
                chain_state root = {0};
                zt_search_begin(s, 0, &root);
                CHECK(zt_search_run(s) == ZT_OK, "search: %s", zt_error_message());
                const zt_tree *t = zt_search_tree(s, 0);
                int checked = 0, bad = 0, deep = 0;
                for (int n = 0; n < t->num_nodes; n++) {
                    const zt_node *nd = &t->nodes[n];
                    for (int e = nd->first_edge; e < nd->first_edge + nd->num_edges; e++) {
                        const zt_edge *ed = &t->edges[e];
                        if (ed->child == ZT_TREE_NONE || ed->visit == 0) continue;
                        const zt_node *c = &t->nodes[ed->child];
                        float g = c->kind == ZT_NODE_CHANCE ? 1.0f : gamma;
                        float want = (float)ed->visit * c->reward + g * c->value_sum;
                        checked++;
                        deep += c->num_edges > 0;
                        if (fabsf(ed->value_sum - want) > 1e-4f * (1 + fabsf(want))) bad++;
                    }
                }
                CHECK(checked > 20 && deep > 5 && bad == 0,
                      "%s, %s, gamma %g: %d of %d edges off their discounted backup (%d deep)",
                      alg ? "gumbel" : "puct", chance ? "chance" : "no chance", gamma, bad,
                      checked, deep);
                root_value[d] = zt_search_root_value(s, 0);
                zt_search_free(s);
            }
            CHECK(root_value[1] < root_value[0] - 0.05f,
                  "%s, %s: root value %g discounted, %g not", alg ? "gumbel" : "puct",
                  chance ? "chance" : "no chance", root_value[1], root_value[0]);
        }
    }
}

static void test_chance_expectation(void)
{
    zt_model m = {.num_actions = DICE_BETS,
                  .max_outcomes = DICE_FACES,
                  .state_size = sizeof(dice_state),
                  .input_size = sizeof(dice_state),
                  .max_batch = 4,
                  .initial = dice_initial,
                  .recurrent = dice_recurrent};
    float expect[DICE_BETS], best = -INFINITY;
    for (int b = 0; b < DICE_BETS; b++) {
        expect[b] = 0;
        for (int o = 0; o < DICE_FACES; o++) expect[b] += dice_prob[o] * dice_pay[b][o];
        best = fmaxf(best, expect[b]);
    }
    for (int alg = 0; alg < 2; alg++) {
        zt_search_config cfg;
        zt_search_config_default(&cfg, alg ? ZT_SEARCH_GUMBEL : ZT_SEARCH_PUCT);
        cfg.num_simulations = alg ? 200 : 4000;
        cfg.leaves_per_round = 2;
        cfg.gumbel_noise = false;
        zt_search *s;
        CHECK(zt_search_new(&cfg, &m, 2, &s) == ZT_OK, "search_new: %s", zt_error_message());
        dice_state root = {0};
        zt_search_begin(s, 0, &root);
        zt_search_begin(s, 1, &root);
        CHECK(zt_search_run(s) == ZT_OK, "search: %s", zt_error_message());
        const zt_tree *t = zt_search_tree(s, 0);
        for (int e = t->nodes[0].first_edge; e < t->nodes[0].first_edge + t->nodes[0].num_edges; e++) {
            int c = t->edges[e].child;
            if (c == ZT_TREE_NONE || t->edges[e].visit < 30) continue;
            float q = zt_tree_edge_q(t, e);
            CHECK(fabsf(q - expect[t->actions[e]]) < 1e-5f, "bet %d: Q %.6f, expectation %.6f",
                  t->actions[e], q, expect[t->actions[e]]);
            int total = 0;
            for (int k = t->nodes[c].first_edge; k < t->nodes[c].first_edge + t->nodes[c].num_edges; k++) {
                if (t->edges[k].prior == 0)
                    CHECK(t->edges[k].child == ZT_TREE_NONE, "descended into a face of probability 0");
                total += t->edges[k].visit;
            }
            for (int k = t->nodes[c].first_edge; k < t->nodes[c].first_edge + t->nodes[c].num_edges; k++) {
                int v = t->edges[k].visit;
                CHECK(fabsf((float)v - t->edges[k].prior * (float)total) <= 1.0f + 0.02f * (float)total,
                      "face visits %d far from %.1f", v, t->edges[k].prior * (float)total);
            }
        }
        int chosen = zt_search_choose(s, 0, 0.0f);
        CHECK(expect[chosen] == best, "%s chose bet %d (%.3f), best %.3f", alg ? "gumbel" : "puct", chosen,
              expect[chosen], best);
        if (!alg) {
            float v = zt_search_root_value(s, 0);
            CHECK(fabsf(v - best) < 0.05f, "root value %.4f, exact %.4f", v, best);
            printf("chance: root value %.4f, exact expectation %.4f\n", v, best);
        }
        zt_search_free(s);
    }
}

/* ---- Gumbel arithmetic ---- */

static void test_gumbel_math(void)
{
    enum { N = 5 };
    float prior[N] = {0.1f, 0.3f, 0.2f, 0.25f, 0.15f};
    float logits[N], q[N] = {0.2f, -0.4f, 0.9f, 0.1f, -1.0f}, completed[N], sigma[N], pi[N];
    int32_t equal[N] = {3, 3, 3, 3, 3};
    for (int a = 0; a < N; a++) logits[a] = logf(prior[a]);

    /* all visited equally: completed Q is Q and the policy is softmax(logits + sigma(Q)) */
    zt_gumbel_completed_q(N, prior, q, equal, 0.7f, completed);
    for (int a = 0; a < N; a++) CHECK(completed[a] == q[a], "completed q[%d] %f != q %f", a, completed[a], q[a]);
    zt_gumbel_sigma(N, completed, 3, 50.0f, 0.1f, true, sigma);
    zt_gumbel_softmax(N, logits, sigma, pi);
    double z = 0, manual[N];
    for (int a = 0; a < N; a++) {
        double qhat = (q[a] - (-1.0)) / (0.9 - (-1.0));
        manual[a] = exp(logits[a] + (50.0 + 3) * 0.1 * qhat);
        z += manual[a];
    }
    for (int a = 0; a < N; a++)
        CHECK(fabs(pi[a] - manual[a] / z) < 1e-5, "improved policy %d: %f vs %f", a, pi[a], manual[a] / z);

    /* more mass on higher completed Q, with equal logits */
    float flat[N] = {0, 0, 0, 0, 0};
    zt_gumbel_softmax(N, flat, sigma, pi);
    for (int a = 0; a < N; a++)
        for (int b = 0; b < N; b++)
            if (q[a] > q[b]) CHECK(pi[a] > pi[b], "pi(%d)=%f not above pi(%d)=%f", a, pi[a], b, pi[b]);

    /* v_mix (Danihelka et al. eq. 33) for the unvisited actions */
    int32_t some[N] = {2, 0, 1, 0, 0};
    zt_gumbel_completed_q(N, prior, q, some, 0.7f, completed);
    double mean = (0.1 * 0.2 + 0.2 * 0.9) / (0.1 + 0.2);
    double vmix = (0.7 + 3 * mean) / (1 + 3);
    CHECK(fabs(completed[1] - vmix) < 1e-6 && fabs(completed[4] - vmix) < 1e-6, "v_mix %f vs %f",
          completed[1], vmix);
    CHECK(completed[0] == q[0] && completed[2] == q[2], "visited actions keep Q");

    /* sequential halving: m=4, n=8 -> one visit each, then two more for the best two */
    int32_t seq[64];
    zt_gumbel_halving_schedule(4, 8, seq);
    int32_t want[8] = {0, 0, 0, 0, 1, 1, 2, 2};
    for (int i = 0; i < 8; i++) CHECK(seq[i] == want[i], "schedule[%d] = %d, expected %d", i, seq[i], want[i]);
    zt_gumbel_halving_schedule(16, 2, seq);
    CHECK(seq[0] == 0 && seq[1] == 0, "two simulations visit two actions once");
}

/* Gumbel from 2 simulations, and the most visited considered action wins. */
static void test_gumbel_small(void)
{
    syn_model *m = syn_new(4);
    zt_search_config cfg;
    zt_search_config_default(&cfg, ZT_SEARCH_GUMBEL);
    cfg.num_simulations = 2;
    zt_search *s;
    CHECK(zt_search_new(&cfg, &m->base, 1, &s) == ZT_OK, "search_new: %s", zt_error_message());
    syn_state root = {.path = 9};
    zt_search_begin(s, 0, &root);
    CHECK(zt_search_run(s) == ZT_OK, "search: %s", zt_error_message());
    int32_t visits[SYN_ACTIONS];
    zt_search_root_visits(s, 0, visits);
    int visited = 0;
    for (int a = 0; a < SYN_ACTIONS; a++) visited += visits[a] == 1;
    CHECK(visited == 2, "2 simulations visit 2 root actions (%d)", visited);
    int a = zt_search_choose(s, 0, 0.0f);
    CHECK(visits[a] == 1, "chosen action %d was not searched", a);
    float policy[SYN_ACTIONS], total = 0;
    zt_search_policy(s, 0, policy);
    for (int k = 0; k < SYN_ACTIONS; k++) total += policy[k];
    CHECK(fabsf(total - 1) < 1e-5f, "improved policy sums to %f", total);
    zt_search_free(s);
    zt_model_free(&m->base);
}

/* Gumbel at temperature T > 0 plays a sample of the improved policy^(1/T):
 * the frequencies of 20,000 draws against the policy target, at T = 1 and
 * T = 0.5; at T = 0 the sequential-halving winner, every time. */
static void test_gumbel_temperature(void)
{
    syn_model *m = syn_new(4);
    zt_search_config cfg;
    zt_search_config_default(&cfg, ZT_SEARCH_GUMBEL);
    cfg.num_simulations = 8;
    cfg.c_scale = 0.02f; /* sigma small beside the logits: a spread policy */
    zt_search *s;
    CHECK(zt_search_new(&cfg, &m->base, 1, &s) == ZT_OK, "search_new: %s", zt_error_message());
    syn_state root = {.path = 3};
    zt_search_begin(s, 0, &root);
    CHECK(zt_search_run(s) == ZT_OK, "search: %s", zt_error_message());
    float policy[SYN_ACTIONS];
    zt_search_policy(s, 0, policy);
    int winner = zt_search_choose(s, 0, 0.0f), spread = 0;
    for (int k = 0; k < SYN_ACTIONS; k++) spread += policy[k] > 0.05f && policy[k] < 0.95f;
    CHECK(spread >= 2, "the improved policy is spread over %d actions, too few to test", spread);
    const float temps[2] = {1.0f, 0.5f};
    for (int ti = 0; ti < 2; ti++) {
        enum { DRAWS = 20000 };
        int count[SYN_ACTIONS] = {0};
        for (int i = 0; i < DRAWS; i++) count[zt_search_choose(s, 0, temps[ti])]++;
        double want[SYN_ACTIONS], sum = 0;
        for (int k = 0; k < SYN_ACTIONS; k++) sum += want[k] = pow(policy[k], 1.0 / temps[ti]);
        for (int k = 0; k < SYN_ACTIONS; k++) {
            double p = want[k] / sum, f = (double)count[k] / DRAWS, se = sqrt(p * (1 - p) / DRAWS);
            CHECK(fabs(f - p) <= 5 * se + 1e-9,
                  "T = %g: action %d drawn %.4f of the time, policy %.4f", temps[ti], k, f, p);
        }
    }
    for (int i = 0; i < 100; i++)
        CHECK(zt_search_choose(s, 0, 0.0f) == winner, "T = 0 chose other than the winner");
    zt_search_free(s);
    zt_model_free(&m->base);
}

/* Root visits of one PUCT search of the synthetic game from `root`. */
static void puct_root_visits(syn_model *m, const zt_search_config *cfg, uint64_t root, int32_t *visits)
{
    zt_search *s;
    CHECK(zt_search_new(cfg, &m->base, 1, &s) == ZT_OK, "search_new: %s", zt_error_message());
    syn_state r = {.path = root};
    zt_search_begin(s, 0, &r);
    CHECK(zt_search_run(s) == ZT_OK, "search: %s", zt_error_message());
    zt_search_root_visits(s, 0, visits);
    zt_search_free(s);
}

/* Min-max Q normalisation (MuZero, Schrittwieser et al. 2020, Appendix B)
 * makes PUCT blind to the scale of rewards: multiplying every value and
 * reward by 4 (a power of two, so every float operation scales exactly)
 * leaves the search unchanged with it, and changes it without. */
static void test_minmax_q(void)
{
    syn_model *m = syn_new(1);
    zt_search_config cfg;
    zt_search_config_default(&cfg, ZT_SEARCH_PUCT);
    cfg.num_simulations = 300;
    int same_with = 0, same_without = 0, roots = 8;
    for (uint64_t root = 1; root <= (uint64_t)roots; root++) {
        int32_t unit[2][SYN_ACTIONS], scaled[2][SYN_ACTIONS];
        for (int mm = 0; mm < 2; mm++) {
            cfg.minmax_q = mm;
            m->scale = 1.0f;
            puct_root_visits(m, &cfg, root * 1013, unit[mm]);
            m->scale = 4.0f;
            puct_root_visits(m, &cfg, root * 1013, scaled[mm]);
        }
        same_without += memcmp(unit[0], scaled[0], sizeof unit[0]) == 0;
        same_with += memcmp(unit[1], scaled[1], sizeof unit[1]) == 0;
    }
    CHECK(same_with == roots, "min-max Q: %d of %d searches unchanged by scaling rewards by 4", same_with, roots);
    CHECK(same_without < roots, "without min-max Q scaling rewards changed no search: the test shows nothing");
    printf("minmax_q: rewards x4 change %d of %d searches without normalisation, 0 with\n",
           roots - same_without, roots);
    zt_model_free(&m->base);
}

/* First-play urgency: the Q given to unvisited actions. Uniform priors,
 * values within [-1, 1]. Optimistic (absolute +2, or parent value + 10):
 * unvisited actions beat every visited one, so the first 4 simulations
 * visit the 4 root actions once each. Pessimistic (absolute -10, or parent
 * value - 10): no exploration bonus of 50 simulations reaches the gap, so
 * the root's first action tried takes every visit. */
static void test_fpu_modes(void)
{
    syn_model *m = syn_new(1);
    m->flat = true;
    struct {
        zt_fpu_mode mode;
        float value, reduction;
        bool optimistic;
        const char *name;
    } cases[] = {
        {ZT_FPU_ABSOLUTE, 2.0f, 0.0f, true, "absolute +2"},
        {ZT_FPU_ABSOLUTE, -10.0f, 0.0f, false, "absolute -10"},
        {ZT_FPU_PARENT, 0.0f, -10.0f, true, "parent + 10"},
        {ZT_FPU_PARENT, 0.0f, 10.0f, false, "parent - 10"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        zt_search_config cfg;
        zt_search_config_default(&cfg, ZT_SEARCH_PUCT);
        cfg.fpu = cases[k].mode;
        cfg.fpu_value = cases[k].value;
        cfg.fpu_reduction = cases[k].reduction;
        cfg.num_simulations = cases[k].optimistic ? SYN_ACTIONS : 50;
        int32_t visits[SYN_ACTIONS];
        puct_root_visits(m, &cfg, 4242, visits);
        int visited = 0, top = 0;
        for (int a = 0; a < SYN_ACTIONS; a++) {
            visited += visits[a] > 0;
            top = visits[a] > top ? visits[a] : top;
        }
        if (cases[k].optimistic)
            CHECK(visited == SYN_ACTIONS && top == 1, "fpu %s: %d actions visited, most %d times",
                  cases[k].name, visited, top);
        else
            CHECK(visited == 1 && top == 50, "fpu %s: %d actions visited, most %d times", cases[k].name,
                  visited, top);
    }
    zt_model_free(&m->base);
}

/* Gumbel with tree reuse and the root cache: sequential halving runs on
 * the search's own simulations whatever visits the kept subtree brings
 * (search.c, "Gumbel and reused statistics"). After a move the root has 3
 * legal actions; halving m = 3 over n = 8 gives them 1 visit each, then 2
 * more to the best two, then 1 more to the best: new visits {4, 3, 1}. */
static void test_gumbel_reuse(void)
{
    syn_model *m = syn_new(2);
    zt_search_config cfg;
    zt_search_config_default(&cfg, ZT_SEARCH_GUMBEL);
    cfg.tree_reuse = true;
    cfg.num_simulations = 8;
    cfg.gumbel_m = 4;
    zt_search *s;
    CHECK(zt_search_new(&cfg, &m->base, 1, &s) == ZT_OK, "search_new: %s", zt_error_message());
    syn_state root = {.path = 555};
    CHECK(zt_search_build_root_cache(s, &root, 200) == ZT_OK, "Gumbel root cache: %s", zt_error_message());
    zt_search_begin(s, 0, &root);
    CHECK(zt_search_run(s) == ZT_OK, "search: %s", zt_error_message());
    CHECK(zt_search_get_stats(s).root_cache_hits == 1, "root cache not used");
    const zt_tree *t = zt_search_tree(s, 0);
    CHECK(t->nodes[0].visit == 201 + 8, "root visits %d, expected cache 201 + 8", t->nodes[0].visit);

    int action = zt_search_choose(s, 0, 0.0f);
    zt_search_played(s, 0, action);
    t = zt_search_tree(s, 0);
    CHECK(t->num_nodes > 1 && t->nodes[0].visit > 8, "Gumbel reuse kept %d nodes", t->num_nodes);
    int32_t before[SYN_ACTIONS], after[SYN_ACTIONS];
    zt_search_root_visits(s, 0, before);
    syn_state next = *(const syn_state *)zt_tree_state(t, 0);
    zt_search_begin(s, 0, &next);
    CHECK(zt_search_run(s) == ZT_OK, "search: %s", zt_error_message());
    zt_search_root_visits(s, 0, after);
    int gained[SYN_ACTIONS], total = 0;
    for (int a = 0; a < SYN_ACTIONS; a++) {
        gained[a] = after[a] - before[a];
        total += gained[a];
    }
    /* sort the gains, largest first */
    for (int i = 0; i < SYN_ACTIONS; i++)
        for (int j = i + 1; j < SYN_ACTIONS; j++)
            if (gained[j] > gained[i]) {
                int x = gained[i];
                gained[i] = gained[j];
                gained[j] = x;
            }
    CHECK(total == 8 && gained[0] == 4 && gained[1] == 3 && gained[2] == 1 && gained[3] == 0,
          "halving on a reused root gave new visits %d %d %d %d", gained[0], gained[1], gained[2], gained[3]);
    int chosen = zt_search_choose(s, 0, 0.0f);
    CHECK(after[chosen] - before[chosen] == 4, "chosen action gained %d visits, the halving winner 4",
          after[chosen] - before[chosen]);
    printf("gumbel reuse: kept root with %d visits, new visits %d %d %d\n", before[0] + before[1] + before[2] +
           before[3], gained[0], gained[1], gained[2]);
    zt_search_free(s);
    zt_model_free(&m->base);
}

/* ---- one search, reseeded (zt_search_reseed) ----
 * A PUCT search with root noise, then 16 moves sampled at temperature 1:
 * what a new search of seed 7 gives, a search of seed 7 that first ran
 * others under seed 99 and was reseeded with 7 gives again; seed 99 itself
 * gives something else (so the record does depend on the seed). */

static void search_record(zt_search *s, const syn_state *root, int32_t *rec)
{
    zt_search_forget(s, 0);
    zt_search_begin(s, 0, root);
    CHECK(zt_search_run(s) == ZT_OK, "search: %s", zt_error_message());
    zt_search_root_visits(s, 0, rec);
    for (int i = 0; i < 16; i++) rec[SYN_ACTIONS + i] = zt_search_choose(s, 0, 1.0f);
}

static void test_reseed(void)
{
    syn_model *m = syn_new(2);
    zt_search_config cfg;
    zt_search_config_default(&cfg, ZT_SEARCH_PUCT);
    cfg.num_simulations = 24;
    cfg.dirichlet_fraction = 0.5f;
    cfg.tree_reuse = false;
    syn_state root = {.path = 777}, other = {.path = 4321};
    int32_t fresh[SYN_ACTIONS + 16], again[SYN_ACTIONS + 16], seed99[SYN_ACTIONS + 16];
    zt_search *s;
    cfg.seed = 7;
    CHECK(zt_search_new(&cfg, &m->base, 2, &s) == ZT_OK, "search_new: %s", zt_error_message());
    search_record(s, &root, fresh);
    zt_search_free(s);
    cfg.seed = 99;
    CHECK(zt_search_new(&cfg, &m->base, 2, &s) == ZT_OK, "search_new: %s", zt_error_message());
    search_record(s, &root, seed99);
    search_record(s, &other, again);
    zt_search_reseed(s, 7);
    search_record(s, &root, again);
    zt_search_free(s);
    zt_model_free(&m->base);
    CHECK(memcmp(fresh, again, sizeof fresh) == 0,
          "reseeded: visits %d %d %d %d, first moves %d %d %d; new search: %d %d %d %d, %d %d %d",
          again[0], again[1], again[2], again[3], again[4], again[5], again[6], fresh[0], fresh[1],
          fresh[2], fresh[3], fresh[4], fresh[5], fresh[6]);
    CHECK(memcmp(fresh, seed99, sizeof fresh) != 0,
          "seeds 7 and 99 gave the same search and moves");
}

/* ---- searches across runs (zt_search_run_rounds) ----
 * Tree 0 searched a few rounds at a time, beside tree 1 begun again and
 * again with short searches of its own (zt_search_begin_sims) and a root
 * cache built while tree 0 is still searching, ends with the same visits,
 * root value and choice as the same tree searched in one run alone. */
static void test_rounds(zt_search_algorithm alg, int K)
{
    zt_search_config cfg;
    zt_search_config_default(&cfg, alg);
    cfg.num_simulations = 40;
    cfg.leaves_per_round = K;
    cfg.gumbel_m = 4;
    cfg.seed = 17;
    syn_state root = {.path = 4242}, other = {.path = 9001}, cache_root = {.path = 31337};
    int32_t alone[SYN_ACTIONS], split[SYN_ACTIONS];
    float value[2];
    int chosen[2];
    for (int pass = 0; pass < 2; pass++) {
        syn_model *m = syn_new(2 * K + 1);
        zt_search *s;
        CHECK(zt_search_new(&cfg, &m->base, 2, &s) == ZT_OK, "search_new: %s", zt_error_message());
        zt_search_begin(s, 0, &root);
        int runs = 0, short_searches = 0;
        if (pass == 0) {
            CHECK(zt_search_run(s) == ZT_OK, "search: %s", zt_error_message());
        } else {
            while (zt_search_searching(s, 0)) {
                if (!zt_search_searching(s, 1)) {
                    if (short_searches > 0) zt_search_forget(s, 1);
                    other.path++;
                    zt_search_begin_sims(s, 1, &other, 1 + short_searches % 5);
                    short_searches++;
                }
                CHECK(zt_search_run_rounds(s, 2) == ZT_OK, "rounds: %s", zt_error_message());
                if (++runs == 3) {
                    CHECK(zt_search_build_root_cache(s, &cache_root, 30) == ZT_OK, "root cache: %s",
                          zt_error_message());
                    CHECK(zt_search_searching(s, 0) && zt_search_tree(s, 0)->nodes[0].visit < 41,
                          "building the root cache ran tree 0's search on");
                }
                if (runs > 100) break;
            }
            CHECK(runs > 4 && short_searches > 2, "tree 0 ended after %d runs, %d short searches",
                  runs, short_searches);
            const zt_tree *t1 = zt_search_tree(s, 1);
            CHECK(!zt_search_searching(s, 1) || t1->nodes[0].visit >= 1, "tree 1 has no root");
        }
        const zt_tree *t = zt_search_tree(s, 0);
        CHECK(t->nodes[0].visit == 41, "tree 0's root has %d visits, want 41 (pass %d)",
              t->nodes[0].visit, pass);
        zt_search_root_visits(s, 0, pass == 0 ? alone : split);
        value[pass] = zt_search_root_value(s, 0);
        chosen[pass] = zt_search_choose(s, 0, 0.0f);
        CHECK(m->duplicate_leaves == 0, "%d duplicate leaves", m->duplicate_leaves);
        zt_search_free(s);
        zt_model_free(&m->base);
    }
    CHECK(memcmp(alone, split, sizeof alone) == 0,
          "%s K=%d: visits %d %d %d %d in one run, %d %d %d %d across runs",
          alg == ZT_SEARCH_GUMBEL ? "gumbel" : "puct", K, alone[0], alone[1], alone[2], alone[3],
          split[0], split[1], split[2], split[3]);
    CHECK(value[0] == value[1] && chosen[0] == chosen[1], "root value %g / %g, choice %d / %d",
          value[0], value[1], chosen[0], chosen[1]);
}

/* ---- model state lifetime: a model whose states are handles ----
 * The synthetic game's states live in the model's own store; a tree holds a
 * 4-byte handle. The store counts references: search must retain what it
 * clones and release what it drops, so that at every point the references
 * held equal the evaluated nodes of all trees, and none is left at the end.
 * A failing recurrent call (every fail_every-th) must leak nothing either. */

enum { STORE = 1 << 16 };

typedef struct handle_model {
    zt_model base;
    syn_model *syn; /* computes the outputs */
    syn_state states[STORE];
    int32_t refs[STORE];
    uint32_t free_list[STORE];
    int nfree;
    int64_t live_refs;
    int bad_releases, exhausted;
    int calls, fail_every;
    const void *in[4096];
    void *out[4096];
} handle_model;

static uint32_t handle_take(handle_model *h)
{
    if (h->nfree == 0) {
        h->exhausted++;
        return 0;
    }
    uint32_t id = h->free_list[--h->nfree];
    h->refs[id] = 1;
    h->live_refs++;
    return id;
}

static zt_status handle_initial(zt_model *base, int B, const void *const *roots, void *const *states,
                                zt_model_output *out)
{
    handle_model *h = (handle_model *)base;
    for (int i = 0; i < B; i++) {
        uint32_t id = handle_take(h);
        memcpy(states[i], &id, sizeof id);
        h->out[i] = &h->states[id];
    }
    return syn_initial(&h->syn->base, B, roots, h->out, out);
}

static zt_status handle_recurrent(zt_model *base, int B, const void *const *states, const int *actions,
                                  void *const *next, zt_model_output *out)
{
    handle_model *h = (handle_model *)base;
    if (h->fail_every > 0 && ++h->calls % h->fail_every == 0)
        return zt_fail(ZT_ERR_IO, "handle model: injected failure");
    for (int i = 0; i < B; i++) {
        uint32_t id;
        memcpy(&id, states[i], sizeof id);
        h->in[i] = &h->states[id];
        uint32_t nid = handle_take(h);
        memcpy(next[i], &nid, sizeof nid);
        h->out[i] = &h->states[nid];
    }
    return syn_recurrent(&h->syn->base, B, h->in, actions, h->out, out);
}

static void handle_retain(zt_model *base, int n, const void *const *states)
{
    handle_model *h = (handle_model *)base;
    for (int i = 0; i < n; i++) {
        uint32_t id;
        memcpy(&id, states[i], sizeof id);
        if (h->refs[id] <= 0) h->bad_releases++;
        h->refs[id]++;
        h->live_refs++;
    }
}

static void handle_release(zt_model *base, int n, const void *const *states)
{
    handle_model *h = (handle_model *)base;
    for (int i = 0; i < n; i++) {
        uint32_t id;
        memcpy(&id, states[i], sizeof id);
        if (h->refs[id] <= 0) {
            h->bad_releases++;
            continue;
        }
        h->live_refs--;
        if (--h->refs[id] == 0) h->free_list[h->nfree++] = id;
    }
}

static void handle_free(zt_model *base)
{
    handle_model *h = (handle_model *)base;
    syn_free(&h->syn->base);
    free(h);
}

static handle_model *handle_new(int max_batch)
{
    handle_model *h = calloc(1, sizeof *h);
    h->syn = syn_new(max_batch);
    for (uint32_t i = 0; i < STORE; i++) h->free_list[h->nfree++] = STORE - 1 - i;
    h->base = (zt_model){.num_actions = SYN_ACTIONS,
                         .state_size = sizeof(uint32_t),
                         .input_size = sizeof(syn_state),
                         .max_batch = max_batch,
                         .initial = handle_initial,
                         .recurrent = handle_recurrent,
                         .retain = handle_retain,
                         .release = handle_release,
                         .free = handle_free};
    return h;
}

/* Evaluated nodes of every tree, the root cache's included. */
static int64_t evaluated_nodes(const zt_search *s, int trees)
{
    int64_t n = 0;
    for (int t = 0; t <= trees; t++) {
        const zt_tree *tr = zt_search_tree(s, t);
        for (int i = 0; i < tr->num_nodes; i++) n += tr->nodes[i].kind != ZT_NODE_NEW;
    }
    return n;
}

static void test_state_lifetime(zt_search_algorithm alg, int fail_every)
{
    enum { G = 6 };
    handle_model *h = handle_new(G * 2);
    h->fail_every = fail_every;
    zt_search_config c;
    zt_search_config_default(&c, alg);
    c.num_simulations = 24;
    c.leaves_per_round = 2;
    c.node_capacity = 600;
    c.edge_capacity = 2400;
    c.tree_reuse = true;
    zt_search *s = NULL;
    CHECK(zt_search_new(&c, &h->base, G, &s) == ZT_OK, "search: %s", zt_error_message());
    if (!s) return;
    syn_state root = {.path = 1, .depth = 0, .player = 0};
    CHECK(zt_search_build_root_cache(s, &root, 40) == ZT_OK || fail_every > 0, "root cache: %s",
          zt_error_message());
    syn_state game[G];
    zt_rng rng;
    zt_rng_seed(&rng, 5, 0);
    int failures = 0;
    for (int t = 0; t < G; t++) game[t] = root;
    for (int move = 0; move < 40; move++) {
        for (int t = 0; t < G; t++) zt_search_begin(s, t, &game[t]);
        zt_status st = zt_search_run(s);
        if (st != ZT_OK) {
            failures++;
            CHECK(h->live_refs == evaluated_nodes(s, G), "after a failure: %lld references, %lld nodes",
                  (long long)h->live_refs, (long long)evaluated_nodes(s, G));
            continue;
        }
        for (int t = 0; t < G; t++) {
            int a = zt_search_choose(s, t, 0.0f);
            zt_search_played(s, t, a);
            game[t].path = zt_hash_mix(game[t].path * 31 + (uint64_t)a + 1);
            game[t].depth++;
            game[t].player = 1 - game[t].player;
            if (game[t].depth == SYN_DEPTH || zt_rng_below(&rng, 7) == 0) {
                /* a new game: tree dropped, next search from the root cache */
                zt_search_forget(s, t);
                game[t] = root;
            }
        }
        CHECK(h->live_refs == evaluated_nodes(s, G), "move %d: %lld references held, %lld evaluated nodes",
              move, (long long)h->live_refs, (long long)evaluated_nodes(s, G));
        if (move == 20) {
            CHECK(zt_search_build_root_cache(s, &root, 40) == ZT_OK || fail_every > 0, "rebuild: %s",
                  zt_error_message());
            CHECK(h->live_refs == evaluated_nodes(s, G), "root cache rebuilt: %lld references, %lld nodes",
                  (long long)h->live_refs, (long long)evaluated_nodes(s, G));
        }
    }
    CHECK(fail_every == 0 || failures > 0, "no failure injected");
    zt_search_stats st = zt_search_get_stats(s);
    CHECK(st.root_cache_hits > 0 && st.reused_nodes > 0, "the test missed root cache (%llu) or reuse (%llu)",
          (unsigned long long)st.root_cache_hits, (unsigned long long)st.reused_nodes);
    zt_search_free(s);
    CHECK(h->live_refs == 0 && h->nfree == STORE, "search freed: %lld references leaked",
          (long long)h->live_refs);
    CHECK(h->bad_releases == 0 && h->exhausted == 0, "%d releases of dead handles, store exhausted %d times",
          h->bad_releases, h->exhausted);
    handle_free(&h->base);
}

int main(void)
{
    start_allocation_counting();
    test_gumbel_math();
    test_tree_clone_and_reuse();
    test_virtual_loss_distinct();
    test_chance_expectation();
    test_discount();
    test_gumbel_small();
    test_gumbel_temperature();
    test_bounded_capacity();
    test_minmax_q();
    test_fpu_modes();
    test_gumbel_reuse();
    test_reseed();
    test_rounds(ZT_SEARCH_GUMBEL, 1);
    test_rounds(ZT_SEARCH_PUCT, 1);
    test_rounds(ZT_SEARCH_PUCT, 2);
    test_state_lifetime(ZT_SEARCH_PUCT, 0);
    test_state_lifetime(ZT_SEARCH_GUMBEL, 0);
    test_state_lifetime(ZT_SEARCH_PUCT, 29);
    return zt_test_finish("test_search");
}
