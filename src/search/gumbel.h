/* The arithmetic of Gumbel AlphaZero (Danihelka, Guez, Schrittwieser, Silver,
 * "Policy improvement by planning with Gumbel", ICLR 2022), as pure functions
 * over the n legal actions of one node so that tests can check them alone. */
#ifndef ZT_SEARCH_GUMBEL_H
#define ZT_SEARCH_GUMBEL_H

#include <stdbool.h>
#include <stdint.h>

/* Completed Q-values (§4, Appendix D): q[a] for visited actions, and for the
 * others v_mix, the mix of the network value with the prior-weighted mean Q
 * of the visited actions (their eq. 33). */
void zt_gumbel_completed_q(int n, const float *prior, const float *q, const int32_t *visits,
                           float raw_value, float *completed);

/* sigma(q) = (c_visit + max_b N(b)) * c_scale * q_hat (their eq. 8), with
 * q_hat the completed Q rescaled to [0, 1] by its min and max over the node
 * when `rescale` (as mctx does), else taken as given. */
void zt_gumbel_sigma(int n, const float *completed, int max_visit, float c_visit, float c_scale,
                     bool rescale, float *sigma);

/* softmax(logits + sigma): the improved policy (their eq. 11) and the policy
 * used for non-root selection (their §5). */
void zt_gumbel_softmax(int n, const float *logits, const float *sigma, float *out);

/* The same softmax from the normalised prior instead of its logits:
 * out ∝ prior * exp(sigma), which equals softmax(log(prior) + sigma) without
 * a logarithm per action (search's non-root selection runs it every visit). */
void zt_gumbel_softmax_prior(int n, const float *prior, const float *sigma, float *out);

/* Sequential halving over m considered actions and n simulations: seq[i] is
 * the visit count that simulation i's root action must have (Algorithm 2):
 * each phase gives every remaining action the same number of visits, then the
 * best half stays. Works for any n >= 1. */
void zt_gumbel_halving_schedule(int m, int n, int32_t *seq);

/* seq[i] of that schedule alone, in O(log m) and without the array, so that
 * a search of any budget (the root cache's deep search) needs no storage. */
int zt_gumbel_halving_visits(int m, int n, int i);

#endif
