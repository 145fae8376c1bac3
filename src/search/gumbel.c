#include "search/gumbel.h"

#include <math.h>

#include "core/status.h"
#include "search/fastexp.h"

void zt_gumbel_completed_q(int n, const float *prior, const float *q, const int32_t *visits,
                           float raw_value, float *completed)
{
    double sum_visits = 0, sum_prior = 0, weighted_q = 0;
    for (int a = 0; a < n; a++) {
        if (visits[a] <= 0) continue;
        sum_visits += visits[a];
        sum_prior += prior[a];
        weighted_q += prior[a] * q[a];
    }
    float v_mix = raw_value;
    if (sum_visits > 0) {
        double mean_q = sum_prior > 0 ? weighted_q / sum_prior : 0;
        v_mix = (float)((raw_value + sum_visits * mean_q) / (1.0 + sum_visits));
    }
    for (int a = 0; a < n; a++) completed[a] = visits[a] > 0 ? q[a] : v_mix;
}

void zt_gumbel_sigma(int n, const float *completed, int max_visit, float c_visit, float c_scale,
                     bool rescale, float *sigma)
{
    float lo = 0, hi = 1;
    if (rescale) {
        lo = hi = completed[0];
        for (int a = 1; a < n; a++) {
            lo = completed[a] < lo ? completed[a] : lo;
            hi = completed[a] > hi ? completed[a] : hi;
        }
    }
    /* A node whose completed Qs all agree carries no preference. */
    float range = hi - lo > 1e-8f ? hi - lo : 1e-8f;
    float scale = ((float)c_visit + (float)max_visit) * c_scale;
    for (int a = 0; a < n; a++) sigma[a] = scale * (rescale ? (completed[a] - lo) / range : completed[a]);
}

void zt_gumbel_softmax(int n, const float *logits, const float *sigma, float *out)
{
    float top = -INFINITY;
    for (int a = 0; a < n; a++) {
        out[a] = logits[a] + sigma[a];
        top = out[a] > top ? out[a] : top;
    }
    double total = 0;
    for (int a = 0; a < n; a++) {
        out[a] = expf(out[a] - top);
        total += out[a];
    }
    for (int a = 0; a < n; a++) out[a] = (float)(out[a] / total);
}

void zt_gumbel_softmax_prior(int n, const float *prior, const float *sigma, float *out)
{
    float top = -INFINITY;
    for (int a = 0; a < n; a++) top = sigma[a] > top ? sigma[a] : top;
    float total = 0, last_sigma = NAN, last_exp = 0;
    for (int a = 0; a < n; a++) {
        /* Unvisited actions share v_mix and so sigma: one exp serves them. */
        if (sigma[a] != last_sigma) {
            last_sigma = sigma[a];
            last_exp = zt_exp_nonpos(sigma[a] - top);
        }
        out[a] = prior[a] * last_exp;
        total += out[a];
    }
    if (!(total > 0)) {
        /* Every action with prior mass lies too far below the top sigma for
         * exp: the log form (out aliases its logits safely). */
        for (int a = 0; a < n; a++) out[a] = logf(prior[a] > 1e-30f ? prior[a] : 1e-30f);
        zt_gumbel_softmax(n, out, sigma, out);
        return;
    }
    float inv = 1.0f / total;
    for (int a = 0; a < n; a++) out[a] *= inv;
}

/* Phases of sequential halving: ceil(log2 m), each spending about
 * n / phases simulations shared equally by the actions still considered (at
 * least one visit each), after which the better half stays (never fewer
 * than 2). Within a phase, simulation j gives its action the (j / considered)-th
 * visit of the phase. */
int zt_gumbel_halving_visits(int m, int n, int i)
{
    ZT_ASSERT(m >= 1 && n >= 1 && i >= 0);
    if (m == 1) return i;
    int phases = 0;
    while ((1 << phases) < m) phases++;
    int considered = m, visits = 0, start = 0;
    for (;;) {
        int extra = n / (phases * considered);
        if (extra < 1) extra = 1;
        if (i < start + extra * considered) return visits + (i - start) / considered;
        start += extra * considered;
        visits += extra;
        considered = considered / 2 > 2 ? considered / 2 : 2;
    }
}

void zt_gumbel_halving_schedule(int m, int n, int32_t *seq)
{
    ZT_ASSERT(m >= 1 && n >= 1);
    for (int i = 0; i < n; i++) seq[i] = zt_gumbel_halving_visits(m, n, i);
}
