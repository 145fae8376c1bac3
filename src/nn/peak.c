/* One core's peak rates (peak.h). */
#include "nn/peak.h"

#include <immintrin.h>

#include "core/timer.h"

/* The chains are named variables, so that they stay in registers. */
#define PEAK_CHAINS(OP)                                                                            \
    do {                                                                                           \
        a0 = OP(a0), a1 = OP(a1), a2 = OP(a2), a3 = OP(a3), a4 = OP(a4), a5 = OP(a5);              \
        a6 = OP(a6), a7 = OP(a7), a8 = OP(a8), a9 = OP(a9), a10 = OP(a10), a11 = OP(a11);          \
    } while (0)

/* Distinct starting values, so that the compiler cannot merge the chains. */
#define PEAK_INIT                                                                                  \
    __m512 a0 = _mm512_set1_ps(0.f), a1 = _mm512_set1_ps(1.f), a2 = _mm512_set1_ps(2.f),           \
           a3 = _mm512_set1_ps(3.f), a4 = _mm512_set1_ps(4.f), a5 = _mm512_set1_ps(5.f),           \
           a6 = _mm512_set1_ps(6.f), a7 = _mm512_set1_ps(7.f), a8 = _mm512_set1_ps(8.f),           \
           a9 = _mm512_set1_ps(9.f), a10 = _mm512_set1_ps(10.f), a11 = _mm512_set1_ps(11.f)

#define PEAK_LOOP(OP, FLOP)                                                                        \
    long iters = 0;                                                                                \
    double t0 = zt_now_s(), t;                                                                     \
    do {                                                                                           \
        for (int r = 0; r < 1000; r++) PEAK_CHAINS(OP);                                            \
        iters += 1000;                                                                             \
        t = zt_now_s() - t0;                                                                       \
    } while (t < seconds);                                                                         \
    __m512 sum = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),        \
                               _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));       \
    sum = _mm512_add_ps(sum, _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)));       \
    volatile float keep = _mm512_reduce_add_ps(sum);                                               \
    (void)keep;                                                                                    \
    return (double)iters * 12.0 * (FLOP) / t / 1e9

__attribute__((target("avx512f"))) static double peak_fp32(double seconds)
{
    const __m512 x = _mm512_set1_ps(1e-8f), y = _mm512_set1_ps(0.999f);
    PEAK_INIT;
#define FMA_OP(acc) _mm512_fmadd_ps((acc), y, x)
    PEAK_LOOP(FMA_OP, 32);
#undef FMA_OP
}

__attribute__((target("avx512f,avx512bf16"))) static double peak_bf16(double seconds)
{
    const __m512bh b = (__m512bh)_mm512_set1_epi16(0x3c00);
    PEAK_INIT;
#define DP_OP(acc) _mm512_dpbf16_ps((acc), b, b)
    PEAK_LOOP(DP_OP, 64);
#undef DP_OP
}

__attribute__((target("avx512f,avx512vnni"))) static double peak_int8(double seconds)
{
    const __m512i x = _mm512_set1_epi8(1), y = _mm512_set1_epi8(-1);
    __m512i a[12];
    for (int c = 0; c < 12; c++) a[c] = _mm512_set1_epi32(c);
    long iters = 0;
    double t0 = zt_now_s(), t;
    do {
        for (int r = 0; r < 1000; r++)
#pragma GCC unroll 12
            for (int c = 0; c < 12; c++) a[c] = _mm512_dpbusd_epi32(a[c], x, y);
        iters += 1000;
        t = zt_now_s() - t0;
    } while (t < seconds);
    __m512i sum = a[0];
    for (int c = 1; c < 12; c++) sum = _mm512_add_epi32(sum, a[c]);
    volatile int keep = _mm512_reduce_add_epi32(sum);
    (void)keep;
    return (double)iters * 12.0 * 128 / t / 1e9; /* 64 multiply-adds per instruction */
}

double zt_peak_gops(zt_precision prec, double seconds)
{
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f")) return 0;
    switch (prec) {
    case ZT_PRECISION_FP32:
        return peak_fp32(seconds);
    case ZT_PRECISION_BF16:
        return __builtin_cpu_supports("avx512bf16") ? peak_bf16(seconds) : 0;
    case ZT_PRECISION_INT8:
        return __builtin_cpu_supports("avx512vnni") ? peak_int8(seconds) : 0;
    default:
        return 0;
    }
}
