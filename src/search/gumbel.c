#include "search/gumbel.h"

#include <math.h>

#include "core/status.h"

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
            lo = fminf(lo, completed[a]);
            hi = fmaxf(hi, completed[a]);
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
        top = fmaxf(top, out[a]);
    }
    double total = 0;
    for (int a = 0; a < n; a++) {
        out[a] = expf(out[a] - top);
        total += out[a];
    }
    for (int a = 0; a < n; a++) out[a] = (float)(out[a] / total);
}

void zt_gumbel_halving_schedule(int m, int n, int32_t *seq)
{
    ZT_ASSERT(m >= 1 && n >= 1);
    if (m == 1) {
        for (int i = 0; i < n; i++) seq[i] = i;
        return;
    }
    int phases = 0;
    while ((1 << phases) < m) phases++;
    int considered = m, visits = 0, i = 0;
    while (i < n) {
        /* Each phase spends about n / phases simulations, shared equally by
         * the actions still considered (at least one visit each). */
        int extra = n / (phases * considered);
        if (extra < 1) extra = 1;
        for (int k = 0; k < extra && i < n; k++) {
            for (int a = 0; a < considered && i < n; a++) seq[i++] = visits;
            visits++;
        }
        considered = considered / 2 > 2 ? considered / 2 : 2;
    }
}
