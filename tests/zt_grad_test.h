/* How the tests judge gradients: against finite differences (test_nn,
 * test_muzero) and a backend's against the reference backend's (test_nn_cpu,
 * test_cuda). Header-only and static, as zt_test.h. */
#ifndef ZT_GRAD_TEST_H
#define ZT_GRAD_TEST_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>

#include "nn/nn.h"

/* Relative error with an absolute floor: fp32 forward values limit how small
 * a difference the finite difference can resolve. */
static inline double fd_error(double analytic, double num)
{
    return fabs(analytic - num) / (fabs(num) + fabs(analytic) + 1e-2);
}

/* Compares one analytic derivative with finite differences: central at two
 * step sizes, and one-sided both ways. Where a ReLU's kink lies within a step
 * the central differences average two slopes, but the one-sided difference
 * moving away from the kink still sees the slope at the point, so agreement
 * with any of them counts. Estimates that disagree with each other and with
 * the analytic value mark a point too close to a kink to prove anything:
 * it is counted as skipped (the tests allow at most 5 % of those). */
typedef struct fd_tally {
    double worst;
    int checked, skipped;
} fd_tally;

/* f(x + step) for step in {-e, -e/4, 0, e/4, e} -> the four estimates. */
static inline void fd_compare(fd_tally *t, double analytic, const double f[5], double eps,
                              double tol)
{
    double est[4] = {(f[4] - f[0]) / (2 * eps), (f[3] - f[1]) / (eps / 2), (f[4] - f[2]) / eps,
                     (f[2] - f[0]) / eps};
    double e = INFINITY, spread = 0;
    for (int i = 0; i < 4; i++) {
        e = fmin(e, fd_error(analytic, est[i]));
        spread = fmax(spread, fd_error(est[0], est[i]));
    }
    if (e >= tol && spread > tol / 2) {
        t->skipped++;
        return;
    }
    t->checked++;
    if (e > t->worst) t->worst = e;
}

/* Error of what a backend added to trainable tensor p's gradient (`a`, from
 * `init`) against the reference (`ref`): the largest element's error over the
 * tensor's largest element added, or with `l2` the norm of the difference
 * relative to the norm of what was added, a steadier measure of bf16
 * rounding noise. The scale is floored at `floor` per element: a tensor of a
 * few elements, each a sum with cancellation, would otherwise measure
 * summation order rather than correctness. */
static inline double grad_err(const zt_nn_param *p, const float *a, const float *ref,
                              const float *init, double floor, bool l2)
{
    double diff = 0, scale = floor, sq_diff = 0, sq_ref = 0;
    for (size_t e = 0; e < p->count; e++) {
        size_t k = p->offset + e;
        double d = fabs((double)a[k] - ref[k]);
        if (!(d <= diff)) diff = d;
        double added = fabs((double)ref[k] - init[k]);
        if (added > scale) scale = added;
        sq_diff += d * d;
        sq_ref += added * added;
    }
    if (!l2) return diff / scale;
    double norm_floor = floor * sqrt((double)p->count);
    return sqrt(sq_diff) / (sqrt(sq_ref) > norm_floor ? sqrt(sq_ref) : norm_floor);
}

#endif
