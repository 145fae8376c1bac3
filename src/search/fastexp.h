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

static inline float zt_exp_nonpos(float x)
{
    x = x < -87.0f ? -87.0f : x;
    /* exp(x) = 2^k exp(r), k = round(x / ln 2) (truncation of a negative
     * number minus a half), |r| <= ln 2 / 2; the Cody-Waite split of ln 2
     * keeps r exact to float precision. */
    int32_t ki = (int32_t)(x * 1.44269504f - 0.5f);
    float k = (float)ki;
    float r = x - k * 0.693145752f - k * 1.42860677e-6f;
    /* Taylor series to r^7: truncation error below 5e-9 on |r| <= 0.35. */
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    int32_t bits = (ki + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

#endif
