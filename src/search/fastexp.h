/* exp(x) for x <= 0 without a libm call, for the softmaxes search runs on
 * every expansion (priors from logits) and every Gumbel non-root visit
 * (the improved policy). Inline and branch-free so that loops over a node's
 * actions vectorise. Relative error below 3e-7 (one or two float ulps, as
 * libm's expf); arguments below -87 give exp(-87) ~ 1.6e-38 instead of a
 * subnormal, which no softmax here can tell apart from zero. */
#ifndef ZT_SEARCH_FASTEXP_H
#define ZT_SEARCH_FASTEXP_H

#include <stdint.h>
#include <string.h>

/* exp(r) for |r| <= ln 2 / 2: the Taylor series to r^7 (truncation error
 * below 5e-9 on |r| <= 0.35), in Horner form; r is a float or a vector of
 * floats. */
#define ZT_EXP_SERIES(r)                                                                   \
    ((((((((1.0f / 5040.0f) * (r) + 1.0f / 720.0f) * (r) + 1.0f / 120.0f) * (r) +         \
         1.0f / 24.0f) * (r) + 1.0f / 6.0f) * (r) + 0.5f) * (r) + 1.0f) * (r) + 1.0f)

/* exp(x) = 2^k exp(r), k = round(x / ln 2) (truncation of a negative number
 * minus a half), |r| <= ln 2 / 2; the Cody-Waite split of ln 2 keeps r exact
 * to float precision. */
#define ZT_LN2_HI 0.693145752f
#define ZT_LN2_LO 1.42860677e-6f

static inline float zt_exp_nonpos(float x)
{
    x = x < -87.0f ? -87.0f : x;
    int32_t ki = (int32_t)(x * 1.44269504f - 0.5f);
    float k = (float)ki;
    float r = x - k * ZT_LN2_HI - k * ZT_LN2_LO;
    float p = ZT_EXP_SERIES(r);
    int32_t bits = (ki + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

typedef float zt_f32x8 __attribute__((vector_size(32)));
typedef int32_t zt_i32x8 __attribute__((vector_size(32)));

/* w[k] = zt_exp_nonpos(w[k] - top) for 8 consecutive k, in GCC vector types
 * because the compiler leaves the inline scalar function unvectorised in
 * search's loops: the same clamp, range reduction and series on each lane. */
static inline void zt_exp8_nonpos(float *w, float top)
{
    zt_f32x8 x;
    memcpy(&x, w, sizeof x);
    x = x - top;
    const zt_f32x8 lo = {-87.0f, -87.0f, -87.0f, -87.0f, -87.0f, -87.0f, -87.0f, -87.0f};
    zt_i32x8 below = x < lo;
    x = (zt_f32x8)(((zt_i32x8)x & ~below) | ((zt_i32x8)lo & below));
    zt_i32x8 ki = __builtin_convertvector(x * 1.44269504f - 0.5f, zt_i32x8);
    zt_f32x8 k = __builtin_convertvector(ki, zt_f32x8);
    zt_f32x8 r = x - k * ZT_LN2_HI - k * ZT_LN2_LO;
    zt_f32x8 p = ZT_EXP_SERIES(r);
    p = p * (zt_f32x8)((ki + 127) << 23);
    memcpy(w, &p, sizeof p);
}

#endif
