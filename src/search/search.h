/* Batched tree search (DESIGN.md §3-4): G trees advanced in lockstep over one
 * batched model. A round selects up to K leaves per searching tree (virtual
 * loss keeps them distinct), calls model->recurrent once for all of them,
 * then expands and backs up. A tree that has spent its simulations stops
 * taking part until its next zt_search_begin.
 *
 * Selection is PUCT (Silver et al., "A general reinforcement learning
 * algorithm that masters chess, shogi and Go through self-play", Science
 * 2018) or Gumbel (Danihelka et al., ICLR 2022: Gumbel-top-k at the root,
 * sequential halving, deterministic non-root selection, completed-Q policy
 * target). Chance nodes hold the exact expectation over their outcomes.
 *
 * The caller owns the search (zt_search_free) and the model, which must
 * outlive it. Nothing is allocated after zt_search_new. */
#ifndef ZT_SEARCH_SEARCH_H
#define ZT_SEARCH_SEARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "search/model.h"
#include "search/tree.h"

typedef enum zt_search_algorithm {
    ZT_SEARCH_PUCT,
    ZT_SEARCH_GUMBEL,
} zt_search_algorithm;

typedef enum zt_fpu_mode {
    ZT_FPU_ABSOLUTE, /* unvisited actions have Q = fpu_value (AlphaZero's pseudocode: 0) */
    ZT_FPU_PARENT,   /* Q = the parent's value - fpu_reduction (Leela Chess Zero) */
} zt_fpu_mode;

typedef struct zt_search_config {
    zt_search_algorithm algorithm;
    int num_simulations;  /* per search, not counting the root's evaluation */
    int leaves_per_round; /* K: leaves per tree per model call (virtual loss when > 1) */
    int node_capacity;    /* per tree; the search stops expanding when spent */
    int edge_capacity;    /* per tree */

    /* PUCT: c(s) = c_init + log((N(s) + c_base + 1) / c_base) (AlphaZero) */
    float c_init, c_base;
    zt_fpu_mode fpu;
    float fpu_value, fpu_reduction;
    float dirichlet_alpha, dirichlet_fraction; /* root noise; fraction 0 = off */
    bool minmax_q; /* normalise Q by the tree's min and max (MuZero, unbounded rewards) */
    /* gamma: a decision node's value counts gamma-discounted into the Q of
     * the edge that reaches it, q = reward + gamma * value (once per move: a
     * chance node's outcomes carry it, not the edge into the chance node);
     * 1 (or 0, read as 1): undiscounted. One-player MuZero (muzero.discount). */
    float discount;

    float virtual_loss; /* value a pending simulation subtracts from its path */

    /* Gumbel: m root actions sampled by Gumbel-top-k, sigma's constants */
    int gumbel_m;
    float c_visit, c_scale;
    bool gumbel_noise;   /* sample the Gumbel variables (off: deterministic top-m) */
    bool gumbel_rescale; /* rescale completed Q to [0, 1] per node (mctx) */

    bool tree_reuse; /* keep the played subtree (default on for PUCT, off for Gumbel) */
    uint64_t seed;
} zt_search_config;

/* AlphaZero's constants (c_init 1.25, c_base 19652, Dirichlet 0.3 / 0.25
 * off by default) or the Gumbel paper's (m 16, c_visit 50, c_scale 1). */
void zt_search_config_default(zt_search_config *c, zt_search_algorithm algorithm);

typedef struct zt_search_stats {
    uint64_t simulations;     /* leaves backed up */
    uint64_t model_calls;     /* recurrent calls (rounds that needed the model) */
    uint64_t model_states;    /* (state, action) pairs sent to the model */
    uint64_t known_leaves;    /* simulations that ended on a terminal or unexpandable node */
    uint64_t collisions;      /* selections abandoned on a leaf already pending */
    uint64_t capacity_hits;   /* expansions refused for lack of nodes or edges */
    uint64_t reused_nodes;    /* nodes kept by tree reuse */
    uint64_t root_cache_hits; /* searches started from the root cache */
    int max_depth;
} zt_search_stats;

typedef struct zt_search zt_search;

/* Fails (ZT_ERR_INVALID) if num_trees * leaves_per_round exceeds the model's
 * max_batch or a setting is out of range; ZT_ERR_NOMEM if trees don't fit. */
zt_status zt_search_new(const zt_search_config *cfg, zt_model *model, int num_trees,
                        zt_search **out);
void zt_search_free(zt_search *s);

/* Restarts every tree's random stream (Dirichlet or Gumbel noise, PUCT's
 * sampled moves) from `seed`, as zt_search_new does from cfg->seed: a
 * search of a tree begun afterwards, from scratch, gives what a new search
 * with that seed would. For a caller that reuses one search (allocated
 * once) for calls that each have their own seed. */
void zt_search_reseed(zt_search *s, uint64_t seed);

/* Starts a search of tree `t` at root_input (copied, model->input_size
 * bytes): from the reused subtree if zt_search_played kept one, else from
 * the root cache if it holds this position, else from scratch. */
void zt_search_begin(zt_search *s, int t, const void *root_input);

/* The same with `num_simulations` (1 .. the config's num_simulations, for
 * which the trees are sized) for this search of tree t: a playout cap's
 * fast searches share the trees and the rounds of the full ones. */
void zt_search_begin_sims(zt_search *s, int t, const void *root_input, int num_simulations);

/* Whether tree t's searches begun from now on draw their root noise (the
 * config's: Gumbel's variables, PUCT's Dirichlet); `quiet` leaves it out,
 * as if gumbel_noise were off and dirichlet_fraction 0, for this tree
 * alone (self-play's noise_plies: noise in a game's first plies only).
 * Off by default. */
void zt_search_set_quiet(zt_search *s, int t, bool quiet);

/* Runs every begun tree to the end of its simulations, in lockstep rounds.
 * A failed model call is returned as it came; the trees that were searching
 * are then dropped (begin them again to retry). */
zt_status zt_search_run(zt_search *s);

/* The same for at most max_rounds rounds (0: no limit), after one initial()
 * call for the trees begun since the last run: a tree whose simulations
 * outlast them goes on searching at the next run, with the trees begun in
 * the meantime beside it in every round, and gives the result it would
 * give in one run (each tree's selection depends on its own statistics and
 * random stream alone). */
zt_status zt_search_run_rounds(zt_search *s, int max_rounds);

/* Whether tree t has been begun and not yet run to the end. */
bool zt_search_searching(const zt_search *s, int t);

/* Drops every tree begun and not yet run (after a failure elsewhere), so
 * that each can be begun, played or forgotten again. */
void zt_search_cancel(zt_search *s);

/* The action to play. Temperature 0: Gumbel's sequential-halving winner,
 * PUCT's most visited action. Temperature T > 0: a sample of the improved
 * policy^(1/T) (Gumbel; zt_search_policy's target) or of visits^(1/T)
 * (PUCT), drawn from the tree's own stream. */
int zt_search_choose(zt_search *s, int t, float temperature);

/* The policy target over num_actions (0 for illegal actions): visit
 * fractions for PUCT, the completed-Q improved policy for Gumbel. */
void zt_search_policy(const zt_search *s, int t, float *policy);

/* Visits per action at the root (0 for unvisited and illegal actions). */
void zt_search_root_visits(const zt_search *s, int t, int32_t *visits);

/* The model's prior at the root over num_actions (0 for illegal actions),
 * as the root was expanded with it: without exploration noise (PUCT's is
 * kept apart) and without Gumbel's perturbation. */
void zt_search_root_prior(const zt_search *s, int t, float *prior);

/* The root's value for the player to move. */
float zt_search_root_value(const zt_search *s, int t);

/* Tells tree t that `action` (or a chance outcome) was played from its root:
 * keeps that subtree when tree reuse is on, else forgets the tree. */
void zt_search_played(zt_search *s, int t, int action);

/* Drops tree t (its game ended or restarts elsewhere): the next
 * zt_search_begin of t starts from an empty tree. */
void zt_search_forget(zt_search *s, int t);

/* Deep search of root_input with num_simulations, kept for zt_search_begin.
 * Trees searching (zt_search_run_rounds) wait, untouched, and go on at the
 * next run. Rebuild it when the model changes. Gumbel
 * searches started from it run their sequential halving on their own
 * simulations (see search.c, "Gumbel and reused statistics"). */
zt_status zt_search_build_root_cache(zt_search *s, const void *root_input, int num_simulations);
void zt_search_clear_root_cache(zt_search *s);

const zt_tree *zt_search_tree(const zt_search *s, int t);
zt_search_stats zt_search_get_stats(const zt_search *s);
/* Bytes of one tree (the bound on a game's search memory). */
size_t zt_search_tree_bytes(const zt_search *s);

#endif
