/* Training batch norm on bf16 NHWC activations (Ioffe & Szegedy 2015), on
 * AVX-512. Per 64-channel norm at batch 256 on 6x7 (one thread), oneDNN's
 * bnorm_jit took about 0.5 ms forward and 0.5 ms backward (ONEDNN_VERBOSE)
 * for two or three passes over 1.4 MB; these take about 0.2 and 0.4 ms.
 *
 * Rows are walked in memory order with one accumulator vector per 16
 * channels, so each pass reads the tensor once. The statistics pass sums
 * x - x[0] (a sample of each channel, so the sum of squares does not cancel
 * when the mean is large against the spread) in fp32 over runs of CHUNK rows
 * and folds each run into doubles, keeping the rounding of a 10^4-row sum
 * at the level of fp32 on a few hundred values.
 *
 * Threads (OpenMP, the runtime oneDNN and winograd.c run on) split the
 * statistics passes by 16-channel blocks, so each channel's sums are taken
 * by one thread in row order exactly as with one: the results do not depend
 * on the thread count or on scheduling, and no partial sums need storing or
 * reducing. The elementwise passes, which reduce nothing, split by rows so
 * each thread writes whole rows. */
#include "nn/cpu/bnorm.h"

#include <immintrin.h>
#include <math.h>
#include <omp.h>

#define TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")))
#define INLINE TARGET static inline __attribute__((always_inline))

enum {
    CHUNK = 256, /* rows summed in fp32 before a fold into doubles */
    MAX_BLOCKS = ZT_BNORM_MAX_CHANNELS / 16,
};

bool zt_bnorm_fits(int channels)
{
    return channels > 0 && channels % 16 == 0 && channels <= ZT_BNORM_MAX_CHANNELS;
}

INLINE __m512 load_bf16(const uint16_t *p)
{
    __m512i x = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(x, 16));
}

INLINE void store_bf16(uint16_t *p, __m512 x)
{
    _mm256_storeu_si256((__m256i *)p, (__m256i)_mm512_cvtneps_pbh(x));
}

/* acc[2b], acc[2b + 1] (16 doubles) += the 16 floats of part[b]; part[b] = 0. */
INLINE void fold(__m512 *part, __m512d *acc, int nb)
{
    for (int b = 0; b < nb; b++) {
        acc[2 * b] = _mm512_add_pd(acc[2 * b], _mm512_cvtps_pd(_mm512_castps512_ps256(part[b])));
        acc[2 * b + 1] =
            _mm512_add_pd(acc[2 * b + 1], _mm512_cvtps_pd(_mm512_extractf32x8_ps(part[b], 1)));
        part[b] = _mm512_setzero_ps();
    }
}

/* Channel c of the doubles fold() accumulates. */
INLINE double lane(const __m512d *acc, int c)
{
    double v[8];
    _mm512_storeu_pd(v, acc[c / 8]);
    return v[c % 8];
}

/* Thread ith of team's share [*lo, *hi) of n items, the same for every
 * schedule: contiguous and as even as whole items allow. */
static void share(size_t n, int ith, int team, size_t *lo, size_t *hi)
{
    *lo = n * (size_t)ith / (size_t)team;
    *hi = n * (size_t)(ith + 1) / (size_t)team;
}

/* Over blocks [b0, b1): the sums of x - shift and of its square per channel,
 * in doubles (d1, d2 indexed as fold() fills them). */
INLINE void forward_sums(const uint16_t *x, size_t rows, int channels, int b0, int b1,
                         const __m512 *shift, __m512d *d1, __m512d *d2)
{
    __m512 s1[MAX_BLOCKS], s2[MAX_BLOCKS];
    for (int b = b0; b < b1; b++) {
        s1[b] = s2[b] = _mm512_setzero_ps();
        d1[2 * b] = d1[2 * b + 1] = d2[2 * b] = d2[2 * b + 1] = _mm512_setzero_pd();
    }
    for (size_t r0 = 0; r0 < rows; r0 += CHUNK) {
        size_t r1 = rows - r0 < CHUNK ? rows : r0 + CHUNK;
        for (size_t r = r0; r < r1; r++) {
            const uint16_t *row = x + r * (size_t)channels;
            for (int b = b0; b < b1; b++) {
                __m512 d = _mm512_sub_ps(load_bf16(row + 16 * b), shift[b]);
                s1[b] = _mm512_add_ps(s1[b], d);
                s2[b] = _mm512_fmadd_ps(d, d, s2[b]);
            }
        }
        fold(s1 + b0, d1 + 2 * b0, b1 - b0);
        fold(s2 + b0, d2 + 2 * b0, b1 - b0);
    }
}

/* One thread's part of zt_bnorm_forward; k and off are shared by the team. */
TARGET static void forward_part(const uint16_t *x, uint16_t *y, size_t rows, int channels,
                                const float *gamma, const float *beta, double eps, bool relu,
                                float *mean, float *var, float *k, float *off, int ith, int team)
{
    int nb = channels / 16;
    size_t lo, hi;
    share((size_t)nb, ith, team, &lo, &hi);
    int b0 = (int)lo, b1 = (int)hi;
    __m512 shift[MAX_BLOCKS];
    __m512d d1[2 * MAX_BLOCKS], d2[2 * MAX_BLOCKS];
    float sh[ZT_BNORM_MAX_CHANNELS];
    for (int b = b0; b < b1; b++) {
        shift[b] = rows > 0 ? load_bf16(x + 16 * b) : _mm512_setzero_ps();
        _mm512_storeu_ps(sh + 16 * b, shift[b]);
    }
    forward_sums(x, rows, channels, b0, b1, shift, d1, d2);
    double n = rows > 0 ? (double)rows : 1;
    for (int c = 16 * b0; c < 16 * b1; c++) {
        double m1 = lane(d1, c) / n, v = lane(d2, c) / n - m1 * m1;
        double m = sh[c] + m1, vv = v > 0 ? v : 0;
        double kc = gamma[c] / sqrt(vv + eps);
        mean[c] = (float)m;
        var[c] = (float)vv;
        k[c] = (float)kc;
        off[c] = (float)(beta[c] - m * kc);
    }
    if (team > 1) {
#pragma omp barrier
    }
    share(rows, ith, team, &lo, &hi);
    for (size_t r = lo; r < hi; r++) {
        const uint16_t *in = x + r * (size_t)channels;
        uint16_t *out = y + r * (size_t)channels;
        for (int b = 0; b < nb; b++) {
            __m512 v = _mm512_fmadd_ps(load_bf16(in + 16 * b), _mm512_loadu_ps(k + 16 * b),
                                       _mm512_loadu_ps(off + 16 * b));
            if (relu) v = _mm512_max_ps(v, _mm512_setzero_ps());
            store_bf16(out + 16 * b, v);
        }
    }
}

/* More threads than 16-channel blocks would idle in the statistics pass. */
static int team_size(int threads, int channels)
{
    int nth = threads > 0 ? threads : 1;
    return nth < channels / 16 ? nth : channels / 16;
}

void zt_bnorm_forward(const uint16_t *x, uint16_t *y, size_t rows, int channels,
                      const float *gamma, const float *beta, double eps, bool relu, float *mean,
                      float *var, int threads)
{
    float k[ZT_BNORM_MAX_CHANNELS], off[ZT_BNORM_MAX_CHANNELS];
    int nth = team_size(threads, channels);
    if (nth <= 1) {
        forward_part(x, y, rows, channels, gamma, beta, eps, relu, mean, var, k, off, 0, 1);
        return;
    }
#pragma omp parallel num_threads(nth)
    /* The team may be smaller than asked for: split by its real size. */
    forward_part(x, y, rows, channels, gamma, beta, eps, relu, mean, var, k, off,
                 omp_get_thread_num(), omp_get_num_threads());
}

/* dy of 16 channels, zero where the fused ReLU's output is not positive
 * (as a bf16 bit pattern, positive exactly when it is a positive int16). */
INLINE __m512 masked_dy(const uint16_t *dy, const uint16_t *relu_out)
{
    __m512 g = load_bf16(dy);
    if (!relu_out) return g;
    __m256i o = _mm256_loadu_si256((const __m256i *)relu_out);
    return _mm512_maskz_mov_ps(_mm256_cmpgt_epi16_mask(o, _mm256_setzero_si256()), g);
}

/* One thread's part of zt_bnorm_backward; a, bx and c0 are shared by the team. */
TARGET static void backward_part(const uint16_t *x, const uint16_t *relu_out, const uint16_t *dy,
                                 uint16_t *dx, bool accumulate, size_t rows, int channels,
                                 const float *gamma, const float *mean, const float *var,
                                 double eps, float *dgamma, float *dbeta, float *a, float *bx,
                                 float *c0, int ith, int team)
{
    int nb = channels / 16;
    size_t lo, hi;
    share((size_t)nb, ith, team, &lo, &hi);
    int b0 = (int)lo, b1 = (int)hi;
    __m512 sb[MAX_BLOCKS], sg[MAX_BLOCKS], mu[MAX_BLOCKS];
    __m512d db[2 * MAX_BLOCKS], dg[2 * MAX_BLOCKS];
    for (int b = b0; b < b1; b++) {
        mu[b] = _mm512_loadu_ps(mean + 16 * b);
        sb[b] = sg[b] = _mm512_setzero_ps();
        db[2 * b] = db[2 * b + 1] = dg[2 * b] = dg[2 * b + 1] = _mm512_setzero_pd();
    }
    for (size_t r0 = 0; r0 < rows; r0 += CHUNK) {
        size_t r1 = rows - r0 < CHUNK ? rows : r0 + CHUNK;
        for (size_t r = r0; r < r1; r++) {
            size_t at = r * (size_t)channels;
            for (int b = b0; b < b1; b++) {
                __m512 g = masked_dy(dy + at + 16 * b, relu_out ? relu_out + at + 16 * b : NULL);
                __m512 d = _mm512_sub_ps(load_bf16(x + at + 16 * b), mu[b]);
                sb[b] = _mm512_add_ps(sb[b], g);
                sg[b] = _mm512_fmadd_ps(g, d, sg[b]);
            }
        }
        fold(sb + b0, db + 2 * b0, b1 - b0);
        fold(sg + b0, dg + 2 * b0, b1 - b0);
    }
    /* dx = k dy - k dbeta / R - (x - mean) k inv dgamma / R with k = gamma inv:
     * a dy + b x + c per channel. */
    double n = rows > 0 ? (double)rows : 1;
    for (int c = 16 * b0; c < 16 * b1; c++) {
        double inv = 1 / sqrt((double)var[c] + eps), sum_dy = lane(db, c);
        double sum_dy_xhat = lane(dg, c) * inv, k = gamma[c] * inv;
        dgamma[c] += (float)sum_dy_xhat;
        dbeta[c] += (float)sum_dy;
        double slope = -k * inv * sum_dy_xhat / n;
        a[c] = (float)k;
        bx[c] = (float)slope;
        c0[c] = (float)(-k * sum_dy / n - slope * mean[c]);
    }
    if (team > 1) {
#pragma omp barrier
    }
    share(rows, ith, team, &lo, &hi);
    for (size_t r = lo; r < hi; r++) {
        size_t at = r * (size_t)channels;
        for (int b = 0; b < nb; b++) {
            size_t e = at + 16 * (size_t)b;
            __m512 g = masked_dy(dy + e, relu_out ? relu_out + e : NULL);
            __m512 v = _mm512_fmadd_ps(_mm512_loadu_ps(bx + 16 * b), load_bf16(x + e),
                                       _mm512_loadu_ps(c0 + 16 * b));
            v = _mm512_fmadd_ps(_mm512_loadu_ps(a + 16 * b), g, v);
            if (accumulate) v = _mm512_add_ps(v, load_bf16(dx + e));
            store_bf16(dx + e, v);
        }
    }
}

void zt_bnorm_backward(const uint16_t *x, const uint16_t *relu_out, const uint16_t *dy,
                       uint16_t *dx, bool accumulate, size_t rows, int channels,
                       const float *gamma, const float *mean, const float *var, double eps,
                       float *dgamma, float *dbeta, int threads)
{
    float a[ZT_BNORM_MAX_CHANNELS], bx[ZT_BNORM_MAX_CHANNELS], c0[ZT_BNORM_MAX_CHANNELS];
    int nth = team_size(threads, channels);
    if (nth <= 1) {
        backward_part(x, relu_out, dy, dx, accumulate, rows, channels, gamma, mean, var, eps,
                      dgamma, dbeta, a, bx, c0, 0, 1);
        return;
    }
#pragma omp parallel num_threads(nth)
    backward_part(x, relu_out, dy, dx, accumulate, rows, channels, gamma, mean, var, eps, dgamma,
                  dbeta, a, bx, c0, omp_get_thread_num(), omp_get_num_threads());
}
