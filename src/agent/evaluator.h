/* Evaluators (DESIGN.md §3): what a model calls to run its network on a
 * batch. Two kinds behind one interface, so a model never knows which it
 * has:
 *   private — a net evaluated on the caller's own thread (the CPU case: one
 *             per actor);
 *   shared  — an evaluator service: one thread that gathers the requests of
 *             several clients (actor threads) into one network call, the
 *             pattern of KataGo's NNEvaluator, and what a GPU needs.
 * For the same inputs and weights both give the same outputs, so actors on
 * a shared service play exactly the games they play with private
 * evaluators (given a backend whose results do not depend on the batch's
 * other rows, as the reference backend's do).
 *
 * Also here: the model factory an actor is given, so that it can build the
 * AlphaZero model today and a MuZero model later over any evaluator.
 *
 * Ownership: the caller owns what *_new returns and frees it with the
 * matching *_free; nets are borrowed and must outlive their evaluators. */
#ifndef ZT_AGENT_EVALUATOR_H
#define ZT_AGENT_EVALUATOR_H

#include <stdint.h>

#include "core/status.h"
#include "game/game.h"
#include "nn/nn.h"
#include "search/model.h"
#include "search/nncache.h"

typedef struct zt_evaluator {
    void *ctx;
    /* B observations (B x obs size, game->observe layout) -> policy logits
     * (B x num_actions, for every action; the model masks illegal ones) and
     * values, both for the player to move. A network forward pass. */
    zt_status (*eval)(void *ctx, int B, const float *obs, float *policy_logits, float *value);
    /* Optional, used instead of eval when set: evaluates game states
     * directly (exact oracles, free evaluators); no observation is built. */
    zt_status (*eval_states)(void *ctx, int B, const void *const *states, float *policy_logits,
                             float *value);
    /* Set for a MuZero net (nn.h, kind muzero), else NULL: h then f on B
     * observations, and g then f on B (hidden state, action) pairs, as
     * zt_net_initial and zt_net_recurrent; hidden states are hidden_size
     * floats each. With `turns` (a net with a to-play head) recurrent
     * writes turn[B], the probability that the turn passed to the other
     * player; turn may be NULL. */
    zt_status (*initial)(void *ctx, int B, const float *obs, float *hidden, float *policy_logits,
                         float *value);
    zt_status (*recurrent)(void *ctx, int B, const float *hidden, const int *actions,
                           float *next_hidden, float *reward, float *policy_logits, float *value,
                           float *turn);
    size_t hidden_size;
    bool turns;
    /* Set for a Stochastic MuZero net (chance_codes > 0), else NULL:
     * zt_net_afterstate; recurrent then steps afterstates with codes. */
    zt_status (*afterstate)(void *ctx, int B, const float *hidden, const int *actions, float *after,
                            float *chance_logits, float *q);
    int chance_codes;
    /* The net values chance states too (nn.h, chance_values; the game has
     * a chance observer): models value a chance state with one evaluation
     * of its observation rather than the expectation over its outcomes,
     * and self-play records chance states as value targets. */
    bool chance_values;
} zt_evaluator;

/* Builds the model an actor searches with: `max_batch` (state, action)
 * pairs per call, evaluated through ev, with an NN cache (may be NULL). The
 * AlphaZero model's factory is zt_az_model_factory() (az_model.h). */
typedef struct zt_model_factory {
    void *ctx;
    zt_status (*create)(void *ctx, const zt_game *g, const zt_evaluator *ev, int max_batch,
                        zt_nncache *cache, zt_model **out);
} zt_model_factory;

/* What an evaluator measured: calls, positions, the wall time inside the
 * network. */
typedef struct zt_evaluator_stats {
    uint64_t calls, positions, net_ns;
} zt_evaluator_stats;

/* The kinds of network call an evaluator counts apart, so that a bench can
 * time the same mix of calls on the network alone: eval (zt_net_forward),
 * and a MuZero net's initial, recurrent and afterstate calls. Batch counts
 * are ZT_CALL_KINDS rows of max_batch + 1: counts[kind * (max_batch + 1) +
 * B] is the number of calls of that kind at batch size B (1..max_batch). */
typedef enum zt_eval_call {
    ZT_CALL_EVAL,
    ZT_CALL_INITIAL,
    ZT_CALL_RECURRENT,
    ZT_CALL_AFTERSTATE,
    ZT_CALL_KINDS
} zt_eval_call;

/* The evaluator of a net of architecture cfg whose calls are those of
 * `calls` (ctx, eval, and for a MuZero net initial, recurrent and
 * afterstate): the fields that follow from the architecture (a MuZero
 * net's hidden_size, turns and chance codes, afterstate only with codes;
 * chance_values otherwise) filled in as every evaluator kind fills them. */
zt_evaluator zt_evaluator_of_net(const zt_net_config *cfg, zt_evaluator calls);

/* ---- private: a net on the caller's thread ---- */

typedef struct zt_net_evaluator zt_net_evaluator;

/* An evaluator over `net` (borrowed) reserved for batches up to max_batch:
 * zt_net_reserve(net, max_batch) is called so that no call builds kernels,
 * and a larger batch grows it once (nothing is allocated in steady state).
 * A WDL value head is turned into the scalar value P(win) - P(loss). */
zt_status zt_net_evaluator_new(zt_net *net, int max_batch, zt_net_evaluator **out);
void zt_net_evaluator_free(zt_net_evaluator *ne);
zt_evaluator zt_net_evaluator_get(zt_net_evaluator *ne);
zt_evaluator_stats zt_net_evaluator_get_stats(const zt_net_evaluator *ne);
/* Calls per kind and batch size: ZT_CALL_KINDS x (max_batch + 1) counts
 * (zt_eval_call). */
const uint64_t *zt_net_evaluator_batch_counts(const zt_net_evaluator *ne);
int zt_net_evaluator_max_batch(const zt_net_evaluator *ne);

/* ---- shared: the evaluator service ---- */

typedef struct zt_eval_service zt_eval_service;

/* A service thread over `net` (borrowed; the service alone calls it) for
 * up to `clients` clients, each sending batches of at most client_batch
 * positions. Merged batches hold up to clients x client_batch positions;
 * `inflight` of them (1 or 2; 0: 1, which measured faster on a GPU than
 * 2, whose merged batches are smaller) are submitted at once; two overlap
 * only where the net's device computes while the thread goes on
 * (zt_net_overlaps). On a MuZero net the clients' evaluators offer its
 * initial, recurrent and afterstate calls as a private one's do; a merged
 * batch holds calls of one kind (the oldest queued request's), and these
 * calls run whole on the service thread (no overlap). */
zt_status zt_eval_service_new(zt_net *net, int clients, int client_batch, int inflight,
                              zt_eval_service **out);
/* Stops the thread (no client may be waiting) and frees the service. */
void zt_eval_service_free(zt_eval_service *svc);
/* Client i's evaluator (0 <= i < clients); one thread uses it at a time.
 * Its eval blocks until the merged batch holding its rows has run. */
zt_evaluator zt_eval_service_client(zt_eval_service *svc, int i);
zt_evaluator_stats zt_eval_service_get_stats(zt_eval_service *svc);
/* Copies the merged calls per kind and batch size to counts[ZT_CALL_KINDS
 * x (clients x client_batch + 1)] (zt_eval_call). */
void zt_eval_service_batch_counts(zt_eval_service *svc, uint64_t *counts);
int zt_eval_service_max_batch(const zt_eval_service *svc);
/* The merged batches it keeps in flight (1 or 2). */
int zt_eval_service_inflight(const zt_eval_service *svc);
/* Runs fn(ctx) on the service thread between batches (no batch in flight),
 * and returns when it has run: a way to change the net's weights. */
zt_status zt_eval_service_exclusive(zt_eval_service *svc, zt_status (*fn)(void *ctx), void *ctx);

/* ---- a pool: the evaluators of a set of actors ---- */

/* What `selfplay.evaluator` selects: a net per client, each on its client's
 * thread, or one net behind a service thread for all. */
typedef enum zt_evaluator_kind {
    ZT_EVALUATOR_PRIVATE,
    ZT_EVALUATOR_SHARED,
} zt_evaluator_kind;

typedef struct zt_evaluator_pool zt_evaluator_pool;

/* Nets of architecture cfg (zero weights until written) and their
 * evaluators for `clients` clients of up to client_batch positions each:
 * private nets run on one thread, the shared net on shared_threads with
 * `inflight` merged batches in flight (zt_eval_service_new). */
zt_status zt_evaluator_pool_new(const zt_net_config *cfg, const char *backend, zt_precision prec,
                                zt_evaluator_kind kind, int clients, int client_batch,
                                int shared_threads, int inflight, zt_evaluator_pool **out);
void zt_evaluator_pool_free(zt_evaluator_pool *p);
zt_evaluator_kind zt_evaluator_pool_kind(const zt_evaluator_pool *p);
zt_evaluator zt_evaluator_pool_client(zt_evaluator_pool *p, int i);
/* The net client i is evaluated with (shared: the one net). */
zt_net *zt_evaluator_pool_net(zt_evaluator_pool *p, int i);

/* Brings client i's net to weight version `version`, calling
 * write(net, ctx) to fill it when it is older: for a private net on the
 * calling thread (client i's own), for the shared net on the service thread
 * between batches, once per version whichever client asks first. */
zt_status zt_evaluator_pool_update(zt_evaluator_pool *p, int i, uint64_t version,
                                   zt_status (*write)(zt_net *net, void *ctx), void *ctx);

/* Client i's statistics (shared: the service's, for every client). */
zt_evaluator_stats zt_evaluator_pool_stats(zt_evaluator_pool *p, int i);
/* Copies the network calls per kind and batch size so far to
 * counts[ZT_CALL_KINDS x (zt_evaluator_pool_max_batch(p, i) + 1)]
 * (zt_eval_call): client i's (private, read on its thread) or the
 * service's merged batches (shared, any thread). */
void zt_evaluator_pool_batch_counts(zt_evaluator_pool *p, int i, uint64_t *counts);
int zt_evaluator_pool_max_batch(const zt_evaluator_pool *p, int i);

/* WDL logits (3 per row: win, draw, loss) -> P(win) - P(loss). */
void zt_wdl_to_value(int B, const float *wdl, float *value);

#endif
