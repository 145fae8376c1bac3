/* Inside the nn layer: MuZero's three functions (representation h, dynamics
 * g, prediction f; Schrittwieser et al. 2020) as three graphs over one
 * parameter array, their plans, and the K-step unrolled loss. net.c owns a
 * zt_mz per MuZero net and forwards to it; train.c calls the unroll. Callers
 * outside src/nn use nn.h (zt_net_initial, zt_net_recurrent, the trainer).
 *
 * Design. Each function is an ordinary single-input graph; the net's
 * parameter and state arrays hold h's tensors, then g's, then f's, and each
 * plan is given its slice. The joins between the graphs happen on the host,
 * where the backend interface already hands every output over: the min-max
 * scaling of hidden states (with its backward) and the concatenation of a
 * hidden state with its action planes along channels. So every backend runs
 * MuZero with no op of its own, and the gradient of a chained unroll is each
 * graph's backward writing d_in for the one before it. Training keeps one
 * plan instance per use in the unroll (h once, g K times, f K + 1 times),
 * since a backward needs its own forward's activations. */
#ifndef ZT_NN_MUZERO_H
#define ZT_NN_MUZERO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nn/backend.h"

typedef struct zt_mz zt_mz;

/* The three graphs of `cfg` (kind muzero) and in `table` (initialised here;
 * the net's graph) the list of all their tensors, named "repr.*", "dyn.*"
 * and "pred.*", at their offsets in the net's arrays; it has no ops. */
zt_mz *zt_mz_new(const zt_net_config *cfg, zt_nn_graph *table);
/* Inference plans on `be` over the net's arrays (which outlive them). */
zt_status zt_mz_plans_new(zt_mz *mz, const zt_nn_backend *be, float *params, float *state,
                          zt_precision prec, int threads);
void zt_mz_free(zt_mz *mz);
void zt_mz_params_changed(zt_mz *mz);
zt_status zt_mz_reserve(zt_mz *mz, int max_batch);
zt_status zt_mz_initial(zt_mz *mz, int B, const float *obs, float *hidden, float *policy,
                        float *value);
/* On a Stochastic MuZero net (chance codes > 0) `hidden` holds afterstates
 * and `actions` chance codes; zt_mz_afterstate steps hidden states with
 * actions to afterstates (nn.h, zt_net_afterstate). */
zt_status zt_mz_recurrent(zt_mz *mz, int B, const float *hidden, const int *actions,
                          float *next_hidden, float *reward, float *policy, float *value,
                          float *turn);
zt_status zt_mz_afterstate(zt_mz *mz, int B, const float *hidden, const int *actions, float *after,
                           float *chance_logits, float *q);

/* Forward and backward of the unrolled loss over samples [off, off + B) of
 * `b` (b->unroll steps; terms divided by b->B); parameter gradients are
 * ADDED to grads, each loss term added to *acc (policy, value, reward). */
zt_status zt_mz_micro_batch(zt_mz *mz, const zt_train_config *tc, const zt_train_batch *b, int off,
                            int B, bool update_stats, float *grads, zt_train_losses *acc);

/* The outputs at step k of the last unroll's micro-batch (tests): B x A
 * policy logits, B values, B rewards (k >= 1); with categorical heads B x
 * (2N + 1) logits of each. */
void zt_mz_unroll_outputs(const zt_mz *mz, int k, const float **policy, const float **value,
                          const float **reward);
/* Stochastic MuZero, step k < K of the last unroll (tests): B x C logits of
 * sigma, B values of Q (categorical: B x (2N + 1) logits), the B x C
 * one-hot codes the encoder chose and its B x C logits. */
void zt_mz_chance_outputs(const zt_mz *mz, int k, const float **sigma, const float **q,
                          const float **code, const float **encoder);

/* A net with a to-play head, step k >= 1 of the last unroll (tests): the
 * B logits of g's turn output. */
const float *zt_mz_turn_outputs(const zt_mz *mz, int k);

/* Step k of the last unroll (tests): the B scaled hidden states s_k. */
const float *zt_mz_unroll_hidden(const zt_mz *mz, int k);
/* How many of the net's parameters are h's (they come first). */
size_t zt_mz_repr_params(const zt_mz *mz);

/* The net's zt_mz (NULL unless its kind is muzero); net.c. */
zt_mz *zt_net_mz(zt_net *net);

/* ---- the pieces, exposed for tests ---- */

/* Per sample of n floats: s = (x - min) / max(max - min, ZT_MZ_MIN_RANGE).
 * imin/imax/range (B each) record what the backward needs (imax -1 when
 * the range was clamped, so the maximum carries no gradient). */
#define ZT_MZ_MIN_RANGE 1e-5f
void zt_mz_minmax_forward(const float *x, float *s, int B, size_t n, int32_t *imin, int32_t *imax,
                          float *range);
/* dx = d loss / dx from ds = d loss / ds (written, not added). */
void zt_mz_minmax_backward(const float *ds, const float *s, int B, size_t n, const int32_t *imin,
                           const int32_t *imax, const float *range, float *dx);

/* The consistency term of one sample: 1 - cos(s, t) over n floats, its
 * gradient in s times `scale` ADDED to d; 1 and no gradient where s or t is
 * all zeros (t is a target: no gradient flows into it). */
double zt_mz_cosine_loss(const float *s, const float *t, size_t n, double scale, float *d);

/* g's input for B samples: each hidden state (H x W x C) with its action's
 * planes appended to every cell's channels (zt_net_action_planes). */
void zt_mz_dynamics_input(const zt_net_config *cfg, int B, const float *hidden, const int *actions,
                          float *out);

/* Stochastic MuZero's g input for B samples: each afterstate (H x W x C)
 * with the sample's code vector (chance_codes floats: one-hot, or in
 * training the straight-through code) appended to every cell's channels. */
void zt_mz_code_input(const zt_net_config *cfg, int B, const float *after, const float *codes,
                      float *out);

/* Categorical heads (support N, nn.h): the expectation of the atoms i / N,
 * i = -N..N, under the softmax of 2N + 1 logits; and the two-hot target of
 * x (clamped to [-1, 1]) on them, the two neighbouring atoms weighted so
 * that their expectation is x. */
double zt_mz_support_expectation(const float *logits, int N);
void zt_mz_two_hot(float x, int N, float *target);

/* Softmax cross-entropy over all A logits against `target` (any
 * non-negative weights): returns -sum target * log softmax and writes
 * d = scale * (softmax * sum(target) - target). */
double zt_mz_policy_loss(const float *logits, const float *target, int A, double scale, float *d);

#endif
