/* The batched model that search explores (DESIGN.md §3), in the shape of
 * mctx: `initial` turns B root inputs into model states, `recurrent` steps B
 * (state, action) pairs. AlphaZero's model steps the real game; MuZero's runs
 * a dynamics network. Search never sees a game or a network, only this.
 *
 * States. A model state is `state_size` opaque bytes that the model writes
 * and search stores in its tree, one per node (so cloning a tree or keeping a
 * subtree needs no help from the model). The AlphaZero model stores the game
 * state itself; a model whose states live elsewhere (hidden states on a GPU)
 * stores an integer handle into its own store instead.
 *
 * Values and players. Every state has a perspective player (0 or 1): the
 * player to move at a decision state, and at chance and terminal states the
 * player who acted into them. `value` is the state's value for its
 * perspective player; `reward` is what the transition paid to the
 * perspective player of the state it left. Search backs up
 * q = reward + (same player ? +1 : -1) * value, which is negamax for two
 * players and plain discounting-free return for one.
 *
 * Masking. Logits are -INFINITY for illegal actions; search creates edges
 * only for finite logits, so illegal actions are masked at every node. A
 * model that knows no legality (MuZero below the root) gives all finite.
 *
 * State lifetime. A model whose states are handles into its own store
 * (MuZero hidden states, device buffers) sets `retain` and `release`: search
 * calls release for every state it drops (a tree forgotten, the part of a
 * tree that tree reuse does not keep, a root cache rebuilt, the search
 * freed) and retain for every state it duplicates (a root-cache tree cloned
 * into a game's tree), so that a store counting references neither leaks nor
 * dangles. A model storing plain bytes (AlphaZero) leaves both NULL.
 *
 * Errors. initial and recurrent return a zt_status: a failed network call
 * (a device error, a lost peer) travels up to the command as one line. On
 * failure the model has written no state that needs a release.
 *
 * Ownership. The caller (search) owns every array in zt_model_output and the
 * state buffers; the model writes into them and keeps no pointer to them. The
 * creator of a model frees it with its `free`. */
#ifndef ZT_SEARCH_MODEL_H
#define ZT_SEARCH_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

typedef enum zt_node_kind {
    ZT_NODE_NEW = 0,      /* in the tree, not yet evaluated (search only) */
    ZT_NODE_DECISION = 1, /* a player chooses an action */
    ZT_NODE_CHANCE = 2,   /* nature draws an outcome with known probability */
    ZT_NODE_TERMINAL = 3, /* the game is over; value 0, the result is the reward */
} zt_node_kind;

/* Outputs for a batch of B states, arrays owned by the caller. */
typedef struct zt_model_output {
    float *logits;        /* B x num_actions; -INFINITY for illegal actions */
    float *value;         /* B: value for the state's perspective player */
    float *reward;        /* B: reward of the transition (0 for initial) */
    int8_t *kind;         /* B: zt_node_kind, never ZT_NODE_NEW */
    int8_t *player;       /* B: perspective player, 0 or 1 */
    int *num_outcomes;    /* B: outcomes at a chance state, else 0 */
    int *outcomes;        /* B x max_outcomes: outcome ids (the actions of a chance state) */
    float *outcome_probs; /* B x max_outcomes: their probabilities, summing to 1 */
} zt_model_output;

/* Counters every model keeps, for the actors' statistics. */
typedef struct zt_model_stats {
    uint64_t positions;   /* positions that needed a value (cache lookups) */
    uint64_t evaluations; /* positions sent to the evaluator */
    uint64_t eval_calls;  /* evaluator calls */
} zt_model_stats;

typedef struct zt_model zt_model;
struct zt_model {
    int num_actions;   /* size of the policy */
    int max_outcomes;  /* most outcomes of a chance state, 0 without chance */
    size_t state_size; /* bytes of one model state */
    size_t input_size; /* bytes of one root input (AlphaZero: a game state) */
    int max_batch;     /* largest B either call accepts */
    /* A learned model's root must come from `initial` (the real observation,
     * the real game's legality): search then keeps no subtree after a move,
     * whatever tree_reuse says, since its nodes are the dynamics' guesses
     * with every action allowed. */
    bool root_from_initial;
    void *impl;
    zt_model_stats stats;

    /* B root inputs -> states written to states[i] (state_size bytes each)
     * and their outputs. */
    zt_status (*initial)(zt_model *m, int B, const void *const *roots, void *const *states,
                         zt_model_output *out);
    /* B (state, action) pairs -> next states and their outputs. At a chance
     * state the action is an outcome id. */
    zt_status (*recurrent)(zt_model *m, int B, const void *const *states, const int *actions,
                           void *const *next_states, zt_model_output *out);
    /* Optional, both or neither (see "State lifetime"): n states that search
     * copied (retain) or dropped (release). */
    void (*retain)(zt_model *m, int n, const void *const *states);
    void (*release)(zt_model *m, int n, const void *const *states);
    /* Frees impl and the model itself. */
    void (*free)(zt_model *m);
};

static inline void zt_model_free(zt_model *m)
{
    if (m) m->free(m);
}

#endif
