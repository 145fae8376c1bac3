/* Seeded random streams: xoshiro256** seeded through splitmix64 from
 * (seed, stream), so each thread or game gets its own reproducible stream.
 * The state is a plain struct: copy it to snapshot, write it to checkpoint. */
#ifndef ZT_CORE_RNG_H
#define ZT_CORE_RNG_H

#include <stdint.h>

typedef struct zt_rng {
    uint64_t s[4];
} zt_rng;

void zt_rng_seed(zt_rng *r, uint64_t seed, uint64_t stream);

static inline uint64_t zt_rng_rotl_(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static inline uint64_t zt_rng_u64(zt_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = zt_rng_rotl_(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = zt_rng_rotl_(s[3], 45);
    return result;
}

/* Uniform integer in [0, n), n > 0 (Lemire's multiply-shift, unbiased). */
static inline uint32_t zt_rng_below(zt_rng *r, uint32_t n)
{
    uint64_t m = (uint64_t)(uint32_t)(zt_rng_u64(r) >> 32) * n;
    uint32_t lo = (uint32_t)m;
    if (lo < n) {
        uint32_t t = (uint32_t)(-n) % n;
        while (lo < t) {
            m = (uint64_t)(uint32_t)(zt_rng_u64(r) >> 32) * n;
            lo = (uint32_t)m;
        }
    }
    return (uint32_t)(m >> 32);
}

/* Uniform double in [0, 1) with 53 random bits. */
static inline double zt_rng_uniform(zt_rng *r)
{
    return (double)(zt_rng_u64(r) >> 11) * 0x1.0p-53;
}

double zt_rng_normal(zt_rng *r);                /* standard normal */
double zt_rng_gamma(zt_rng *r, double shape);   /* Gamma(shape, 1), shape > 0 */
double zt_rng_gumbel(zt_rng *r);                /* standard Gumbel */
/* Samples an index from `n` non-negative weights (not necessarily normalised). */
int zt_rng_categorical(zt_rng *r, const float *weights, int n);
/* Dirichlet(alpha, ..., alpha) of dimension n into out. */
void zt_rng_dirichlet(zt_rng *r, double alpha, int n, float *out);

#endif
