#include "core/rng.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void zt_rng_seed(zt_rng *r, uint64_t seed, uint64_t stream)
{
    uint64_t x = seed ^ (stream * 0xd1342543de82ef95ULL + 0x2545f4914f6cdd1dULL);
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
    if ((r->s[0] | r->s[1] | r->s[2] | r->s[3]) == 0) r->s[0] = 1;
}

double zt_rng_normal(zt_rng *r)
{
    /* Marsaglia polar method; the spare value is dropped to keep the state a
     * plain 256-bit struct. */
    double u, v, s;
    do {
        u = 2.0 * zt_rng_uniform(r) - 1.0;
        v = 2.0 * zt_rng_uniform(r) - 1.0;
        s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    return u * sqrt(-2.0 * log(s) / s);
}

double zt_rng_gamma(zt_rng *r, double shape)
{
    /* Marsaglia & Tsang (2000); shape < 1 boosted by U^(1/shape). */
    if (shape < 1.0) {
        double u = zt_rng_uniform(r);
        return zt_rng_gamma(r, shape + 1.0) * pow(u > 0 ? u : 0x1.0p-53, 1.0 / shape);
    }
    double d = shape - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        double x, v;
        do {
            x = zt_rng_normal(r);
            v = 1.0 + c * x;
        } while (v <= 0.0);
        v = v * v * v;
        double u = zt_rng_uniform(r);
        if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
        if (log(u) < 0.5 * x * x + d * (1.0 - v + log(v))) return d * v;
    }
}

double zt_rng_gumbel(zt_rng *r)
{
    double u;
    do u = zt_rng_uniform(r);
    while (u == 0.0);
    return -log(-log(u));
}

int zt_rng_categorical(zt_rng *r, const float *weights, int n)
{
    double total = 0;
    for (int i = 0; i < n; i++) total += weights[i];
    double x = zt_rng_uniform(r) * total;
    int last = -1;
    for (int i = 0; i < n; i++) {
        if (weights[i] <= 0) continue;
        last = i;
        if (x < weights[i]) return i;
        x -= weights[i];
    }
    return last >= 0 ? last : 0;
}

void zt_rng_dirichlet(zt_rng *r, double alpha, int n, float *out)
{
    double total = 0;
    for (int i = 0; i < n; i++) {
        double g = zt_rng_gamma(r, alpha);
        out[i] = (float)g;
        total += g;
    }
    for (int i = 0; i < n; i++) out[i] = total > 0 ? (float)(out[i] / total) : 1.0f / (float)n;
}
