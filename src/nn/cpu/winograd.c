/* Winograd F(2x2, 3x3) in bf16 (Lavin & Gray, "Fast Algorithms for
 * Convolutional Neural Networks", CVPR 2016, §4.1).
 *
 * A 4x4 input tile d (tiles step by 2, so neighbours share two pixels) gives
 * a 2x2 output tile Y = A^T [(G g G^T) . (B^T d B)] A. Summed over input
 * channels, the element-wise product becomes 16 independent matrix products
 * M[xi] = V[xi] U[xi] (tiles x cin by cin x cout), 16 multiplications per
 * 2x2 outputs instead of 36: 2.25x fewer, less the tiles that hang over an
 * odd board edge (6x7: 12 tiles cover 6x8). A direct conv that skips the
 * zero-padding taps, as oneDNN's does, needs 304 products per channel pair
 * on 6x7 against 12 x 16 = 192 here: 1.58x.
 *
 * The products run on AVX512-BF16's dot product (_mm512_dpbf16_ps: pairs of
 * bf16 products accumulated in fp32), so U is packed with input-channel
 * pairs interleaved per output channel, and V rows give the broadcast pair.
 * Transforms run in fp32 and round V and U to bf16 once, as the direct path
 * rounds activations and weights; F(2x2, 3x3)'s transforms have entries 0,
 * +-1/2 and +-1, so V and U stay within a few times the data's range and
 * their rounding costs about one more bf16 rounding per product (measured
 * in tests/test_nn_cpu.c against the reference's bf16 emulation).
 *
 * Or, with `fma`, on fp32 FMAs, V and U kept in fp32 (no rounding, twice
 * the bytes): one core's dot-product rate against its FMA rate differs by
 * CPU. Zen 4 runs _mm512_dpbf16_ps at twice the FMAs' FLOP rate; a Xeon of
 * the Sapphire Rapids family (cpuinfo model 207, AMX hidden) at half of it,
 * and there the FMAs run Connect Four's train step 1.4x as fast and its
 * inference at batch 8-256 1.4-1.5x (docs/networks.md).
 * zt_winograd_fma_faster decides by measuring both instructions.
 *
 * The batch's tiles, flattened, are cut into blocks; a thread transforms a
 * block's inputs into V, multiplies into M and transforms M into the output
 * with the fused bias, residual and ReLU, so V and M (its own scratch) stay
 * in L2 beside U and each output is written once. Threads are OpenMP's, the
 * runtime oneDNN already runs on, so no second set of busy threads competes
 * for the cores. */
#include "nn/cpu/winograd.h"

#include <immintrin.h>
#include <omp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "core/status.h"
#include "nn/nn.h"
#include "nn/peak.h"

#define TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma")))
#define INLINE TARGET static inline __attribute__((always_inline))

enum {
    NXI = 16,        /* elements of a transformed 4x4 tile */
    ROWS = 6,        /* tiles per microkernel call: 6 x 4 accumulators, 4 weight
                      * vectors and a broadcast fill 29 of the 32 zmm registers */
    COUT_BLOCK = 64, /* output channels per microkernel call: 4 zmm */
    MAX_ROWS = 48,
    BLOCK_BYTES = 256 * 1024, /* V + M of one block: a quarter of an L2 */
};

bool zt_winograd_supported(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512bf16");
}

bool zt_winograd_fits(int k, int cin, int cout)
{
    return k == 3 && cin > 0 && cout > 0 && cin % 16 == 0 && cout % 16 == 0;
}

size_t zt_winograd_weights_bytes(int cin, int cout, bool fma)
{
    return (size_t)NXI * (size_t)cin * (size_t)cout * (fma ? sizeof(float) : sizeof(uint16_t));
}

/* ---- which products: each instruction's throughput, measured ---- */

static bool fma_faster;

/* Each instruction's best of 7 runs of 0.2 ms, in turn (peak.h). The FMA
 * kernel reads twice the bytes, so it must win by a margin. */
static void measure_products(void)
{
    if (!zt_winograd_supported()) return;
    double fma = 0, dp = 0;
    for (int r = 0; r < 7; r++) {
        double f = zt_peak_gops(ZT_PRECISION_FP32, 2e-4), d = zt_peak_gops(ZT_PRECISION_BF16, 2e-4);
        if (f > fma) fma = f;
        if (d > dp) dp = d;
    }
    fma_faster = fma > 1.25 * dp;
}

bool zt_winograd_fma_faster(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, measure_products);
    return fma_faster;
}

/* Where U[xi][o][i] lives within U[xi] (xi planes are cin x cout apart):
 * blocks of COUT_BLOCK output channels (the last one narrower), each
 * [cin / 2][width][2] (bf16), or [cin][width] with `fma` (fp32). */
static size_t u_offset(int o, int i, int cin, int cout, bool fma)
{
    int cb = o / COUT_BLOCK, ob = o % COUT_BLOCK;
    int width = cout - cb * COUT_BLOCK < COUT_BLOCK ? cout - cb * COUT_BLOCK : COUT_BLOCK;
    size_t block = (size_t)cb * COUT_BLOCK * cin;
    if (fma) return block + (size_t)i * width + (size_t)ob;
    return block + (size_t)(i / 2) * width * 2 + (size_t)ob * 2 + (size_t)(i % 2);
}

/* The input channel at position p of a row of V. With cin a multiple of 32
 * the input transform reads 32 channels at once and splits even and odd
 * ones into two fp32 vectors by a shift and a mask (no conversion
 * instructions), then packs them back as [evens | odds]; U follows that
 * order, since the products sum over the channels in any order. */
static int v_channel(int p, int cin)
{
    if (cin % 32 != 0) return p;
    int q = p % 32;
    return p - q + (q < 16 ? 2 * q : 2 * (q - 16) + 1);
}

/* Bytes of one element of V (and of U). */
static size_t v_bytes(bool fma)
{
    return fma ? sizeof(float) : sizeof(uint16_t);
}

static size_t row_bytes(int cin, int cout, bool fma)
{
    return (size_t)NXI * ((size_t)cin * v_bytes(fma) + (size_t)cout * sizeof(float));
}

/* Tiles per block: as many as fit BLOCK_BYTES, in whole microkernel rows. */
static int max_rows(int cin, int cout, bool fma)
{
    size_t r = BLOCK_BYTES / row_bytes(cin, cout, fma) / ROWS * ROWS;
    return r < ROWS ? ROWS : r > MAX_ROWS ? MAX_ROWS : (int)r;
}

size_t zt_winograd_scratch_size(int cin, int cout, int threads, bool fma)
{
    return (size_t)(threads > 0 ? threads : 1) * (size_t)max_rows(cin, cout, fma) *
           row_bytes(cin, cout, fma);
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

/* Two tiles' 16-lane vectors a and b as 32 bf16, lane k of a then of b. */
INLINE void store_pair(uint16_t *p, __m512 a, __m512 b)
{
    static const uint16_t interleave[32] = {0,  16, 1,  17, 2,  18, 3,  19, 4,  20, 5,
                                            21, 6,  22, 7,  23, 8,  24, 9,  25, 10, 26,
                                            11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
    __m512i ab = (__m512i)_mm512_cvtne2ps_pbh(b, a);
    _mm512_storeu_si512(p, _mm512_permutexvar_epi16(_mm512_loadu_si512(interleave), ab));
}

/* U = G g G^T for 16 filters (the lanes), G = [1 0 0; 1/2 1/2 1/2;
 * 1/2 -1/2 1/2; 0 0 1]. */
INLINE void weight_tile(__m512 g[3][3], __m512 u[NXI])
{
    const __m512 half = _mm512_set1_ps(0.5f);
    __m512 gg[4][3];
#pragma GCC unroll 3
    for (int kw = 0; kw < 3; kw++) {
        gg[0][kw] = g[0][kw];
        gg[1][kw] = _mm512_mul_ps(half, _mm512_add_ps(_mm512_add_ps(g[0][kw], g[1][kw]), g[2][kw]));
        gg[2][kw] = _mm512_mul_ps(half, _mm512_add_ps(_mm512_sub_ps(g[0][kw], g[1][kw]), g[2][kw]));
        gg[3][kw] = g[2][kw];
    }
#pragma GCC unroll 4
    for (int a = 0; a < 4; a++) {
        u[4 * a] = gg[a][0];
        u[4 * a + 1] =
            _mm512_mul_ps(half, _mm512_add_ps(_mm512_add_ps(gg[a][0], gg[a][1]), gg[a][2]));
        u[4 * a + 2] =
            _mm512_mul_ps(half, _mm512_add_ps(_mm512_sub_ps(gg[a][0], gg[a][1]), gg[a][2]));
        u[4 * a + 3] = gg[a][2];
    }
}

/* Lanes are 16 output channels of the packed conv and two neighbouring V
 * positions make one store of 32 bf16, the layout u_offset describes; a
 * scalar loop over (o, i) with 16 scattered stores each cost 5 % of a
 * c4-64x5 train step, which packs every conv twice per step. */
TARGET void zt_winograd_pack_weights(const float *w, int cin, int cout, bool mirror, bool fma,
                                     void *u)
{
    ZT_ASSERT(zt_winograd_fits(3, cin, cout));
    /* The packed conv maps pin to pout channels; mirrored, its weight
     * [o][kh][kw][i] is w[i][2 - kh][2 - kw][o] (contiguous in o), else
     * w[o][kh][kw][i] (lanes 9 cin apart: gathered). */
    int pin = mirror ? cout : cin, pout = mirror ? cin : cout;
    size_t xi_step = (size_t)pin * pout;
    const __m512i lanes =
        _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                           _mm512_set1_epi32(9 * cin));
    for (int o0 = 0; o0 < pout; o0 += 16)
        for (int p = 0; p < pin; p += fma ? 1 : 2) {
            __m512 uu[2][NXI];
            for (int q = 0; q < (fma ? 1 : 2); q++) {
                int i = fma ? p : v_channel(p + q, pin);
                __m512 g[3][3];
                for (int kh = 0; kh < 3; kh++)
                    for (int kw = 0; kw < 3; kw++) {
                        size_t at = mirror ? (((size_t)i * 3 + 2 - kh) * 3 + 2 - kw) * cin + o0
                                           : ((size_t)o0 * 9 + (size_t)kh * 3 + kw) * cin + i;
                        g[kh][kw] = mirror ? _mm512_loadu_ps(w + at)
                                           : _mm512_i32gather_ps(lanes, w + at, 4);
                    }
                weight_tile(g, uu[q]);
            }
            if (fma) {
                float *at = (float *)u + u_offset(o0, p, pin, pout, true);
#pragma GCC unroll 16
                for (int xi = 0; xi < NXI; xi++) _mm512_storeu_ps(at + xi * xi_step, uu[0][xi]);
                continue;
            }
            uint16_t *at = (uint16_t *)u + u_offset(o0, p, pin, pout, false);
#pragma GCC unroll 16
            for (int xi = 0; xi < NXI; xi++) store_pair(at + xi * xi_step, uu[0][xi], uu[1][xi]);
        }
}

/* B^T d B of one tile (pixels px, NULL outside the board) for cin a
 * multiple of 32, into v[xi * step], channels in the order of v_channel. */
INLINE void transform_pairs(const uint16_t *const px[4][4], int cin, uint16_t *v, size_t step)
{
    const __m512i high = _mm512_set1_epi32((int)0xffff0000u);
    for (int c0 = 0; c0 < cin; c0 += 32) {
        __m512 d[2][4][4], bd[2][4][4]; /* [even, odd channels][row][column] */
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++)
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++) {
                __m512i x = px[i][j] ? _mm512_loadu_si512(px[i][j] + c0) : _mm512_setzero_si512();
                d[0][i][j] = _mm512_castsi512_ps(_mm512_slli_epi32(x, 16));
                d[1][i][j] = _mm512_castsi512_ps(_mm512_and_si512(x, high));
            }
#pragma GCC unroll 2
        for (int q = 0; q < 2; q++)
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++) {
                bd[q][0][j] = _mm512_sub_ps(d[q][0][j], d[q][2][j]);
                bd[q][1][j] = _mm512_add_ps(d[q][1][j], d[q][2][j]);
                bd[q][2][j] = _mm512_sub_ps(d[q][2][j], d[q][1][j]);
                bd[q][3][j] = _mm512_sub_ps(d[q][1][j], d[q][3][j]);
            }
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) {
            __m512 e[2][4];
#pragma GCC unroll 2
            for (int q = 0; q < 2; q++) {
                e[q][0] = _mm512_sub_ps(bd[q][i][0], bd[q][i][2]);
                e[q][1] = _mm512_add_ps(bd[q][i][1], bd[q][i][2]);
                e[q][2] = _mm512_sub_ps(bd[q][i][2], bd[q][i][1]);
                e[q][3] = _mm512_sub_ps(bd[q][i][1], bd[q][i][3]);
            }
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++) /* evens in the low half, odds in the high */
                _mm512_storeu_si512(v + (size_t)(4 * i + j) * step + c0,
                                    (__m512i)_mm512_cvtne2ps_pbh(e[1][j], e[0][j]));
        }
    }
}

/* The top-left pixel (y0, x0) of tile t's 4x4 input patch (the output tile
 * starts one pixel lower and to the right) and its image. */
static void tile_origin(int h, int w, long t, long *img, int *y0, int *x0)
{
    int th = (h + 1) / 2, tw = (w + 1) / 2, rem = (int)(t % ((long)th * tw));
    *img = t / ((long)th * tw);
    *y0 = 2 * (rem / tw) - 1;
    *x0 = 2 * (rem % tw) - 1;
}

/* B^T d B of 16 channels at c0 of one tile (pixels px, NULL outside). */
INLINE void input_tile(const uint16_t *const px[4][4], int c0, __m512 v[NXI])
{
    __m512 d[4][4], bd[4][4];
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++)
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++)
            d[i][j] = px[i][j] ? load_bf16(px[i][j] + c0) : _mm512_setzero_ps();
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
        bd[0][j] = _mm512_sub_ps(d[0][j], d[2][j]);
        bd[1][j] = _mm512_add_ps(d[1][j], d[2][j]);
        bd[2][j] = _mm512_sub_ps(d[2][j], d[1][j]);
        bd[3][j] = _mm512_sub_ps(d[1][j], d[3][j]);
    }
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
        v[4 * i] = _mm512_sub_ps(bd[i][0], bd[i][2]);
        v[4 * i + 1] = _mm512_add_ps(bd[i][1], bd[i][2]);
        v[4 * i + 2] = _mm512_sub_ps(bd[i][2], bd[i][1]);
        v[4 * i + 3] = _mm512_sub_ps(bd[i][1], bd[i][3]);
    }
}

/* V[xi][r] = B^T d B for the tiles t0 .. t0 + n - 1, with
 * B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]; rows n .. np - 1 are zero so
 * that the microkernel can run whole groups of ROWS. V is bf16, or fp32 with
 * c->fma. */
TARGET static void input_transform(const zt_winograd_conv *c, long t0, int n, int np, void *vv)
{
    int cin = c->cin;
    size_t eb = v_bytes(c->fma);
    for (int r = n; r < np; r++)
        for (int xi = 0; xi < NXI; xi++)
            memset((char *)vv + ((size_t)xi * np + r) * cin * eb, 0, (size_t)cin * eb);
    uint16_t *v = vv;
    float *v32 = vv;
    for (int r = 0; r < n; r++) {
        long t = t0 + r;
        long img;
        int y0, x0;
        tile_origin(c->h, c->w, t, &img, &y0, &x0);
        const uint16_t *base = c->src + (size_t)img * c->h * c->w * cin;
        const uint16_t *px[4][4];
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++) {
                int y = y0 + i, x = x0 + j;
                px[i][j] = y >= 0 && y < c->h && x >= 0 && x < c->w
                               ? base + ((size_t)y * c->w + x) * cin
                               : NULL;
            }
        if (cin % 32 == 0 && !c->fma) {
            transform_pairs(px, cin, v + (size_t)r * cin, (size_t)np * cin);
            continue;
        }
        for (int c0 = 0; c0 < cin; c0 += 16) {
            __m512 vt[NXI];
            input_tile(px, c0, vt);
            size_t at = (size_t)r * cin + c0, step = (size_t)np * cin;
            if (c->fma)
                for (int xi = 0; xi < NXI; xi++) _mm512_storeu_ps(v32 + at + xi * step, vt[xi]);
            else
                for (int xi = 0; xi < NXI; xi++) store_bf16(v + at + xi * step, vt[xi]);
        }
    }
}

/* m[r][0 .. 16 nj) = sum_i v[r][i] u[i][.] for ROWS rows: v rows of cin bf16,
 * u as [cin / 2][16 nj][2], m rows `cout` floats apart. */
INLINE void microkernel(int nj, const uint16_t *v, int cin, const uint16_t *u, float *m, int cout)
{
    __m512 acc[ROWS][4];
#pragma GCC unroll 6
    for (int r = 0; r < ROWS; r++)
#pragma GCC unroll 4
        for (int j = 0; j < nj; j++) acc[r][j] = _mm512_setzero_ps();
    for (int k = 0; k < cin / 2; k++) {
        __m512bh b[4];
#pragma GCC unroll 4
        for (int j = 0; j < nj; j++)
            b[j] = (__m512bh)_mm512_loadu_si512(u + ((size_t)k * nj + j) * 32);
#pragma GCC unroll 6
        for (int r = 0; r < ROWS; r++) {
            int32_t pair;
            memcpy(&pair, v + (size_t)r * cin + 2 * k, sizeof pair);
            __m512bh a = (__m512bh)_mm512_set1_epi32(pair);
#pragma GCC unroll 4
            for (int j = 0; j < nj; j++) acc[r][j] = _mm512_dpbf16_ps(acc[r][j], a, b[j]);
        }
    }
#pragma GCC unroll 6
    for (int r = 0; r < ROWS; r++)
#pragma GCC unroll 4
        for (int j = 0; j < nj; j++) _mm512_storeu_ps(m + (size_t)r * cout + 16 * j, acc[r][j]);
}

/* The products of both kernels on fp32 FMAs, for `rows` (at most ROWS)
 * rows r and 16 nj columns: c[r][16 j ..] = (`add` ? c : 0) + the sum over
 * k < nk of a[r ar + k ak] b[k bk + 16 j ..], rows of c cs floats apart.
 * Every argument but the pointers and nk is a constant where it is
 * inlined, so the accumulators stay in registers. */
INLINE void fma_kernel(int rows, int nj, const float *a, size_t ar, size_t ak, const float *b,
                       size_t bk, int nk, float *c, size_t cs, bool add)
{
    __m512 acc[ROWS][4];
#pragma GCC unroll 6
    for (int r = 0; r < rows; r++)
#pragma GCC unroll 4
        for (int j = 0; j < nj; j++)
            acc[r][j] = add ? _mm512_loadu_ps(c + r * cs + 16 * j) : _mm512_setzero_ps();
    for (int k = 0; k < nk; k++) {
        __m512 bv[4];
#pragma GCC unroll 4
        for (int j = 0; j < nj; j++) bv[j] = _mm512_loadu_ps(b + k * bk + 16 * j);
#pragma GCC unroll 6
        for (int r = 0; r < rows; r++) {
            __m512 av = _mm512_set1_ps(a[r * ar + k * ak]);
#pragma GCC unroll 4
            for (int j = 0; j < nj; j++) acc[r][j] = _mm512_fmadd_ps(av, bv[j], acc[r][j]);
        }
    }
#pragma GCC unroll 6
    for (int r = 0; r < rows; r++)
#pragma GCC unroll 4
        for (int j = 0; j < nj; j++) _mm512_storeu_ps(c + r * cs + 16 * j, acc[r][j]);
}

/* microkernel's products on fp32 FMAs: v rows of cin floats, u as
 * [cin][16 nj]. */
INLINE void microkernel_fma(int nj, const float *v, int cin, const float *u, float *m, int cout)
{
    fma_kernel(ROWS, nj, v, (size_t)cin, 1, u, (size_t)nj * 16, cin, m, (size_t)cout, false);
}

/* Bytes [from, to) of the rows a block of tiles reads (`in`: with the
 * one-pixel halo) or writes. */
typedef struct span {
    size_t from, to;
} span;

static span block_span(const zt_winograd_conv *c, long t0, int n, bool in)
{
    long per_img = (long)((c->h + 1) / 2) * ((c->w + 1) / 2);
    int tw = (c->w + 1) / 2, halo = in ? 1 : 0;
    long first = t0, last = t0 + n - 1;
    int y0 = 2 * (int)(first % per_img / tw) - halo, y1 = 2 * (int)(last % per_img / tw) + 1 + halo;
    if (y0 < 0) y0 = 0;
    if (y1 > c->h - 1) y1 = c->h - 1;
    size_t row = (size_t)c->w * (in ? c->cin : c->cout) * sizeof(uint16_t);
    return (span){((size_t)(first / per_img) * c->h + y0) * row,
                  ((size_t)(last / per_img) * c->h + y1 + 1) * row};
}

/* Part `part` of 16 of a span, into the cache ahead of its use. */
static void prefetch_part(const void *base, span s, int part, int rw)
{
    size_t len = s.to - s.from, a = s.from + len * part / NXI, b = s.from + len * (part + 1) / NXI;
    for (size_t off = a & ~(size_t)63; off < b; off += 64) {
        if (rw) __builtin_prefetch((const char *)base + off, 1, 3);
        else __builtin_prefetch((const char *)base + off, 0, 3);
    }
}

/* M[xi] = V[xi] U[xi] for np (a multiple of ROWS) tiles, fetching the next
 * block's input and output rows meanwhile: at large batches they come from
 * L3 or memory, in a pattern of short rows the hardware prefetcher misses. */
TARGET static void multiply(const zt_winograd_conv *c, int np, const void *vv, float *m,
                            const span *next_in, const span *next_out)
{
    int cin = c->cin, cout = c->cout;
    for (int xi = 0; xi < NXI; xi++) {
        if (next_in) {
            prefetch_part(c->src, *next_in, xi, 0);
            prefetch_part(c->dst, *next_out, xi, 1);
            if (c->sum && c->sum != c->dst) prefetch_part(c->sum, *next_out, xi, 0);
        }
        for (int o0 = 0; o0 < cout; o0 += COUT_BLOCK) {
            int nj = (cout - o0 < COUT_BLOCK ? cout - o0 : COUT_BLOCK) / 16;
            size_t uat = (size_t)xi * cin * cout + (size_t)o0 * cin;
            for (int r = 0; r < np; r += ROWS) {
                size_t row = (size_t)xi * np + r;
                float *mr = m + row * cout + o0;
                if (c->fma) {
                    const float *u = (const float *)c->u + uat, *vr = (const float *)vv + row * cin;
                    switch (nj) { /* constant widths, so the accumulators stay in registers */
                    case 4:
                        microkernel_fma(4, vr, cin, u, mr, cout);
                        break;
                    case 3:
                        microkernel_fma(3, vr, cin, u, mr, cout);
                        break;
                    case 2:
                        microkernel_fma(2, vr, cin, u, mr, cout);
                        break;
                    default:
                        microkernel_fma(1, vr, cin, u, mr, cout);
                        break;
                    }
                    continue;
                }
                const uint16_t *u = (const uint16_t *)c->u + uat;
                const uint16_t *vr = (const uint16_t *)vv + row * cin;
                switch (nj) { /* constant widths, so the accumulators stay in registers */
                case 4: microkernel(4, vr, cin, u, mr, cout); break;
                case 3: microkernel(3, vr, cin, u, mr, cout); break;
                case 2: microkernel(2, vr, cin, u, mr, cout); break;
                default: microkernel(1, vr, cin, u, mr, cout); break;
                }
            }
        }
    }
}

/* Y = A^T M A with A^T = [1 1 1 0; 0 1 -1 -1], then bias, the residual and
 * ReLU, in the order of oneDNN's post-ops; pixels past the board's edge are
 * dropped. */
TARGET static void output_transform(const zt_winograd_conv *c, long t0, int n, int np,
                                    const float *m)
{
    int th = (c->h + 1) / 2, tw = (c->w + 1) / 2, cout = c->cout;
    size_t step = (size_t)np * cout;
    /* Locals, so the stores to dst need not reload them. */
    const float *bias_p = c->bias;
    const uint16_t *sum = c->sum;
    uint16_t *dst = c->dst;
    bool relu = c->relu;
    for (int r = 0; r < n; r++) {
        long t = t0 + r;
        long img = t / (th * tw);
        int rem = (int)(t % (th * tw)), oy = 2 * (rem / tw), ox = 2 * (rem % tw);
        size_t at[2][2];
        bool in[2][2];
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++) {
                in[i][j] = oy + i < c->h && ox + j < c->w;
                at[i][j] = (((size_t)img * c->h + oy + i) * c->w + ox + j) * cout;
            }
        for (int c0 = 0; c0 < cout; c0 += 16) {
            const float *mp = m + (size_t)r * cout + c0;
            __m512 s[2][4], y[2][2];
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++) {
                __m512 m0 = _mm512_loadu_ps(mp + (size_t)j * step);
                __m512 m1 = _mm512_loadu_ps(mp + (size_t)(4 + j) * step);
                __m512 m2 = _mm512_loadu_ps(mp + (size_t)(8 + j) * step);
                __m512 m3 = _mm512_loadu_ps(mp + (size_t)(12 + j) * step);
                s[0][j] = _mm512_add_ps(_mm512_add_ps(m0, m1), m2);
                s[1][j] = _mm512_sub_ps(_mm512_sub_ps(m1, m2), m3);
            }
            __m512 bias = bias_p ? _mm512_loadu_ps(bias_p + c0) : _mm512_setzero_ps();
#pragma GCC unroll 2
            for (int i = 0; i < 2; i++) {
                y[i][0] = _mm512_add_ps(_mm512_add_ps(s[i][0], s[i][1]), s[i][2]);
                y[i][1] = _mm512_sub_ps(_mm512_sub_ps(s[i][1], s[i][2]), s[i][3]);
            }
#pragma GCC unroll 2
            for (int i = 0; i < 2; i++)
#pragma GCC unroll 2
                for (int j = 0; j < 2; j++) {
                    if (!in[i][j]) continue;
                    __m512 out = _mm512_add_ps(y[i][j], bias);
                    if (sum) out = _mm512_add_ps(out, load_bf16(sum + at[i][j] + c0));
                    if (relu) out = _mm512_max_ps(out, _mm512_setzero_ps());
                    store_bf16(dst + at[i][j] + c0, out);
                }
        }
    }
}

/* Tiles t0 .. t0 + n - 1; the same thread runs tiles next .. next + nn - 1
 * after (nn = 0: none). */
TARGET static void run_block(const zt_winograd_conv *c, long t0, int n, long next, int nn,
                             void *scratch)
{
    int np = (n + ROWS - 1) / ROWS * ROWS;
    void *v = scratch;
    float *m = (float *)((char *)v + (size_t)NXI * np * c->cin * v_bytes(c->fma));
    input_transform(c, t0, n, np, v);
    span in = {0, 0}, out = {0, 0};
    if (nn > 0) {
        in = block_span(c, next, nn, true);
        out = block_span(c, next, nn, false);
    }
    multiply(c, np, v, m, nn > 0 ? &in : NULL, &out);
    output_transform(c, t0, n, np, m);
}

/* Block b's tiles, of `rows` each but the last. */
static int block_tiles(long b, long rows, long tiles)
{
    if (b * rows >= tiles) return 0;
    return (int)(tiles - b * rows < rows ? tiles - b * rows : rows);
}

void zt_winograd_run(const zt_winograd_conv *c)
{
    ZT_ASSERT(zt_winograd_fits(3, c->cin, c->cout) && c->src != c->dst);
    long tiles = (long)c->batch * ((c->h + 1) / 2) * ((c->w + 1) / 2);
    if (tiles == 0) return;
    int nth = c->threads > 0 ? c->threads : 1, rmax = max_rows(c->cin, c->cout, c->fma);
    /* Blocks of at most rmax tiles, as many per thread, as even as whole
     * microkernel rows allow. */
    long nblocks = (tiles + rmax - 1) / rmax;
    nblocks = (nblocks + nth - 1) / nth * nth;
    long rows = ((tiles + nblocks - 1) / nblocks + ROWS - 1) / ROWS * ROWS;
    nblocks = (tiles + rows - 1) / rows;
    if (nblocks < nth) nth = (int)nblocks;
    size_t stride = (size_t)rmax * row_bytes(c->cin, c->cout, c->fma);
    if (nth == 1) {
        for (long b = 0; b < nblocks; b++)
            run_block(c, b * rows, block_tiles(b, rows, tiles), (b + 1) * rows,
                      block_tiles(b + 1, rows, tiles), c->scratch);
        return;
    }
    /* Threads claim blocks as they go, each one block ahead (the block it
     * prefetches for), so a thread the OS takes away for a while (an actor
     * on the same core) leaves its share to the others instead of holding
     * up the team. Each output is written by one block: the result does not
     * depend on who ran what. */
    atomic_long claim = 0;
#pragma omp parallel num_threads(nth)
    {
        void *own = (char *)c->scratch + (size_t)omp_get_thread_num() * stride;
        long b = atomic_fetch_add_explicit(&claim, 1, memory_order_relaxed);
        while (b < nblocks) {
            long next = atomic_fetch_add_explicit(&claim, 1, memory_order_relaxed);
            run_block(c, b * rows, block_tiles(b, rows, tiles), next * rows,
                      block_tiles(next, rows, tiles), own);
            b = next;
        }
    }
}

/* ---- the weight gradient (Lavin & Gray 2016, §4) ----
 *
 * With Y = A^T M A per tile and M[xi] = sum_i V[xi][i] U[xi][., i], the
 * gradient of U is dU[xi][i][o] = sum over tiles of V[xi][i] dM[xi][o] with
 * dM = A dY A^T (dY the tile's 2x2 output gradient, zero past the board's
 * edge), and that of the 3x3 weights is dg = G^T dU G: 16 products per tile
 * and channel pair against the direct gradient's 9 per pixel, the same
 * 1.58x saving as the forward conv on 6x7.
 *
 * The products now sum over tiles, so V and dM are stored with tile pairs
 * interleaved ([xi][tile / 2][channel][2]), the layout _mm512_dpbf16_ps
 * wants on both sides: a broadcast pair of dM (one output channel, two
 * tiles) against 16 input channels' pairs of V; with `fma`, in fp32 as
 * [xi][tile][channel], one tile's dM broadcast. dU stays fp32 in scratch
 * across a slot's blocks of tiles (grad_slots); the slots' dU are summed at
 * the end, then transformed back to 3x3 and added to the OHWI gradient. */

enum {
    GRAD_ROWS = 4,                  /* output channels per microkernel call */
    GRAD_MAX_TILES = 64,            /* tiles per block (an even number) */
    GRAD_BLOCK_BYTES = 256 * 1024,  /* V and dM of one block */
};

/* Tiles per block: V and dM within GRAD_BLOCK_BYTES, an even number. */
static int grad_tiles(int cin, int cout, bool fma)
{
    size_t per_tile = (size_t)NXI * (size_t)(cin + cout) * v_bytes(fma);
    size_t t = GRAD_BLOCK_BYTES / per_tile / 2 * 2;
    return t < 2 ? 2 : t > GRAD_MAX_TILES ? GRAD_MAX_TILES : (int)t;
}

/* The tiles' blocks are cut into slots, runs of consecutive blocks that
 * each sum into a dU of their own; threads claim whole slots as they go and
 * the slots' dU are summed in slot order, so the gradient does not depend on
 * which thread ran which slot, and a thread the OS takes away for a while
 * leaves its unclaimed slots to the others. One slot on one thread, else
 * GRAD_SLOTS per thread. */
enum { GRAD_SLOTS = 4 };

static int grad_slots(int threads)
{
    return threads > 1 ? GRAD_SLOTS * threads : 1;
}

static size_t grad_du_bytes(int cin, int cout)
{
    return ((size_t)NXI * cin * cout * sizeof(float) + 63) / 64 * 64;
}

/* A thread's V and dM for one block. */
static size_t grad_block_bytes(int cin, int cout, bool fma)
{
    size_t block = (size_t)grad_tiles(cin, cout, fma) * NXI * (size_t)(cin + cout) * v_bytes(fma);
    return (block + 63) / 64 * 64;
}

size_t zt_winograd_grad_scratch_size(int cin, int cout, int threads, bool fma)
{
    int nth = threads > 0 ? threads : 1;
    return (size_t)grad_slots(nth) * grad_du_bytes(cin, cout) +
           (size_t)nth * grad_block_bytes(cin, cout, fma);
}

/* A dY A^T of 16 channels at c0 of one tile (output pixels py, NULL outside),
 * with A^T = [1 1 1 0; 0 1 -1 -1]. */
INLINE void grad_tile(const uint16_t *const py[2][2], int c0, __m512 m[NXI])
{
    __m512 t[2][4];
#pragma GCC unroll 2
    for (int p = 0; p < 2; p++) {
        __m512 y0 = py[p][0] ? load_bf16(py[p][0] + c0) : _mm512_setzero_ps();
        __m512 y1 = py[p][1] ? load_bf16(py[p][1] + c0) : _mm512_setzero_ps();
        t[p][0] = y0;
        t[p][1] = _mm512_add_ps(y0, y1);
        t[p][2] = _mm512_sub_ps(y0, y1);
        t[p][3] = _mm512_sub_ps(_mm512_setzero_ps(), y1);
    }
#pragma GCC unroll 4
    for (int b = 0; b < 4; b++) {
        m[b] = t[0][b];
        m[4 + b] = _mm512_add_ps(t[0][b], t[1][b]);
        m[8 + b] = _mm512_sub_ps(t[0][b], t[1][b]);
        m[12 + b] = _mm512_sub_ps(_mm512_setzero_ps(), t[1][b]);
    }
}

/* Tile t's input patch and output pixels; all NULL for t >= tiles (the
 * zero partner of an odd last tile). */
static void tile_pointers(const zt_winograd_grad *c, long t, long tiles,
                          const uint16_t *px[4][4], const uint16_t *py[2][2])
{
    long img;
    int y0, x0;
    tile_origin(c->h, c->w, t, &img, &y0, &x0);
    bool real = t < tiles;
    const uint16_t *in = c->src + (size_t)img * c->h * c->w * c->cin;
    const uint16_t *out = c->dy + (size_t)img * c->h * c->w * c->cout;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            int y = y0 + i, x = x0 + j;
            px[i][j] = real && y >= 0 && y < c->h && x >= 0 && x < c->w
                           ? in + ((size_t)y * c->w + x) * c->cin
                           : NULL;
        }
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            int y = y0 + 1 + i, x = x0 + 1 + j;
            py[i][j] = real && y < c->h && x < c->w ? out + ((size_t)y * c->w + x) * c->cout : NULL;
        }
}

/* Two neighbouring tiles' transforms, a then b, as fp32 rows `width`
 * floats long at `at`, the xi planes `step` floats apart. */
INLINE void store_tiles_fp32(float *at, size_t step, int width, const __m512 a[NXI],
                             const __m512 b[NXI])
{
#pragma GCC unroll 16
    for (int xi = 0; xi < NXI; xi++) {
        _mm512_storeu_ps(at + xi * step, a[xi]);
        _mm512_storeu_ps(at + xi * step + width, b[xi]);
    }
}

/* V and dM of tiles t0 .. t0 + 2 kp - 1, pair-interleaved: v as
 * [xi][kp][cin][2], dm as [xi][kp][cout][2] (bf16); with c->fma, as
 * [xi][2 kp][cin] and [xi][2 kp][cout] (fp32). */
TARGET static void grad_transforms(const zt_winograd_grad *c, long t0, int kp, long tiles, void *v,
                                   void *dm)
{
    int cin = c->cin, cout = c->cout;
    for (int k = 0; k < kp; k++) {
        const uint16_t *px[2][4][4], *py[2][2][2];
        for (int q = 0; q < 2; q++) tile_pointers(c, t0 + 2 * k + q, tiles, px[q], py[q]);
        for (int c0 = 0; c0 < cin; c0 += 16) {
            __m512 a[NXI], b[NXI];
            input_tile(px[0], c0, a);
            input_tile(px[1], c0, b);
            if (c->fma) {
                store_tiles_fp32((float *)v + (size_t)2 * k * cin + c0, (size_t)2 * kp * cin, cin,
                                 a, b);
                continue;
            }
#pragma GCC unroll 16
            for (int xi = 0; xi < NXI; xi++)
                store_pair((uint16_t *)v + (((size_t)xi * kp + k) * cin + c0) * 2, a[xi], b[xi]);
        }
        for (int c0 = 0; c0 < cout; c0 += 16) {
            __m512 a[NXI], b[NXI];
            grad_tile(py[0], c0, a);
            grad_tile(py[1], c0, b);
            if (c->fma) {
                store_tiles_fp32((float *)dm + (size_t)2 * k * cout + c0, (size_t)2 * kp * cout,
                                 cout, a, b);
                continue;
            }
#pragma GCC unroll 16
            for (int xi = 0; xi < NXI; xi++)
                store_pair((uint16_t *)dm + (((size_t)xi * kp + k) * cout + c0) * 2, a[xi], b[xi]);
        }
    }
}

/* du[r][16 j ..] += sum over kp tile pairs of a[.][r] b[.][16 j ..] for
 * GRAD_ROWS rows r: a and b pair-interleaved from their first pair at this
 * row or column, rows na and nb channels long, rows of du `nb` floats
 * apart. */
INLINE void grad_microkernel(int nj, const uint16_t *a, int na, const uint16_t *b, int nb,
                             int kp, float *du)
{
    __m512 acc[GRAD_ROWS][4];
#pragma GCC unroll 4
    for (int r = 0; r < GRAD_ROWS; r++)
#pragma GCC unroll 4
        for (int j = 0; j < nj; j++) acc[r][j] = _mm512_loadu_ps(du + (size_t)r * nb + 16 * j);
    for (int k = 0; k < kp; k++) {
        __m512bh bv[4];
#pragma GCC unroll 4
        for (int j = 0; j < nj; j++)
            bv[j] = (__m512bh)_mm512_loadu_si512(b + (size_t)k * nb * 2 + 32 * j);
#pragma GCC unroll 4
        for (int r = 0; r < GRAD_ROWS; r++) {
            int32_t pair;
            memcpy(&pair, a + (size_t)k * na * 2 + 2 * r, sizeof pair);
            __m512bh av = (__m512bh)_mm512_set1_epi32(pair);
#pragma GCC unroll 4
            for (int j = 0; j < nj; j++) acc[r][j] = _mm512_dpbf16_ps(acc[r][j], av, bv[j]);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < GRAD_ROWS; r++)
#pragma GCC unroll 4
        for (int j = 0; j < nj; j++) _mm512_storeu_ps(du + (size_t)r * nb + 16 * j, acc[r][j]);
}

/* grad_microkernel's products on fp32 FMAs over nt tiles: a and b as
 * [nt][na] and [nt][nb]. */
INLINE void grad_microkernel_fma(int nj, const float *a, int na, const float *b, int nb, int nt,
                                 float *du)
{
    fma_kernel(GRAD_ROWS, nj, a, 1, (size_t)na, b, (size_t)nb, nt, du, (size_t)nb, true);
}

/* dU[xi][o][i] += the products of one block of kp tile pairs (rows o, so
 * that grad_to_weights reads and adds 16 input channels at once), fetching
 * the rows of src and dy the next block reads meanwhile (as multiply()). */
TARGET static void grad_multiply(const zt_winograd_grad *c, int kp, const void *v, const void *dm,
                                 float *du, const span *next_in, const span *next_dy)
{
    int cin = c->cin, cout = c->cout;
    for (int xi = 0; xi < NXI; xi++) {
        if (next_in) {
            prefetch_part(c->src, *next_in, xi, 0);
            prefetch_part(c->dy, *next_dy, xi, 0);
        }
        size_t vat = (size_t)xi * kp * cin * 2, mat = (size_t)xi * kp * cout * 2;
        const uint16_t *vx = (const uint16_t *)v + vat, *mx = (const uint16_t *)dm + mat;
        const float *vx32 = (const float *)v + vat, *mx32 = (const float *)dm + mat;
        float *ux = du + (size_t)xi * cin * cout;
        for (int i0 = 0; i0 < cin; i0 += COUT_BLOCK) {
            int nj = (cin - i0 < COUT_BLOCK ? cin - i0 : COUT_BLOCK) / 16;
            for (int o0 = 0; o0 < cout; o0 += GRAD_ROWS) {
                float *ur = ux + (size_t)o0 * cin + i0;
                if (c->fma) {
                    const float *mr = mx32 + o0, *vr = vx32 + i0;
                    switch (nj) { /* constant widths, so the accumulators stay in registers */
                    case 4:
                        grad_microkernel_fma(4, mr, cout, vr, cin, 2 * kp, ur);
                        break;
                    case 3:
                        grad_microkernel_fma(3, mr, cout, vr, cin, 2 * kp, ur);
                        break;
                    case 2:
                        grad_microkernel_fma(2, mr, cout, vr, cin, 2 * kp, ur);
                        break;
                    default:
                        grad_microkernel_fma(1, mr, cout, vr, cin, 2 * kp, ur);
                        break;
                    }
                    continue;
                }
                const uint16_t *mr = mx + (size_t)o0 * 2, *vr = vx + (size_t)i0 * 2;
                switch (nj) { /* constant widths, so the accumulators stay in registers */
                case 4: grad_microkernel(4, mr, cout, vr, cin, kp, ur); break;
                case 3: grad_microkernel(3, mr, cout, vr, cin, kp, ur); break;
                case 2: grad_microkernel(2, mr, cout, vr, cin, kp, ur); break;
                default: grad_microkernel(1, mr, cout, vr, cin, kp, ur); break;
                }
            }
        }
    }
}

/* grad[o][.][.][i] += G^T dU[.][o][i] G, G = [1 0 0; 1/2 1/2 1/2;
 * 1/2 -1/2 1/2; 0 0 1], for 16 input channels at once. */
TARGET static void grad_to_weights(const zt_winograd_grad *c, const float *du)
{
    int cin = c->cin, cout = c->cout;
    size_t plane = (size_t)cin * cout;
    const __m512 half = _mm512_set1_ps(0.5f);
    for (int o = 0; o < cout; o++)
        for (int i0 = 0; i0 < cin; i0 += 16) {
            __m512 u[4][4], r[4][3];
#pragma GCC unroll 16
            for (int xi = 0; xi < NXI; xi++)
                u[xi / 4][xi % 4] = _mm512_loadu_ps(du + xi * plane + (size_t)o * cin + i0);
#pragma GCC unroll 4
            for (int a = 0; a < 4; a++) {
                __m512 p = _mm512_mul_ps(half, _mm512_add_ps(u[a][1], u[a][2]));
                r[a][0] = _mm512_add_ps(u[a][0], p);
                r[a][1] = _mm512_mul_ps(half, _mm512_sub_ps(u[a][1], u[a][2]));
                r[a][2] = _mm512_add_ps(p, u[a][3]);
            }
            float *g = c->grad + (size_t)o * 9 * cin + i0;
#pragma GCC unroll 3
            for (int kw = 0; kw < 3; kw++) {
                __m512 p = _mm512_mul_ps(half, _mm512_add_ps(r[1][kw], r[2][kw]));
                __m512 dg[3] = {_mm512_add_ps(r[0][kw], p),
                                _mm512_mul_ps(half, _mm512_sub_ps(r[1][kw], r[2][kw])),
                                _mm512_add_ps(p, r[3][kw])};
#pragma GCC unroll 3
                for (int kh = 0; kh < 3; kh++) {
                    float *at = g + (size_t)(3 * kh + kw) * cin;
                    _mm512_storeu_ps(at, _mm512_add_ps(_mm512_loadu_ps(at), dg[kh]));
                }
            }
        }
}

/* Blocks b0 .. b1 - 1 into du (zeroed first), with V and dM in buf. */
static void grad_slot(const zt_winograd_grad *c, long tiles, int per_block, long b0, long b1,
                      float *du, char *buf)
{
    char *v = buf;
    char *dm = v + (size_t)per_block * NXI * c->cin * v_bytes(c->fma);
    memset(du, 0, (size_t)NXI * c->cin * c->cout * sizeof(float));
    /* The shape alone, for block_span. */
    zt_winograd_conv shape = {.h = c->h, .w = c->w, .cin = c->cin, .cout = c->cout};
    for (long b = b0; b < b1; b++) {
        long t0 = b * per_block, n = tiles - t0 < per_block ? tiles - t0 : per_block;
        int kp = (int)((n + 1) / 2);
        grad_transforms(c, t0, kp, tiles, v, dm);
        long next = t0 + per_block;
        span in = {0, 0}, dy = {0, 0};
        if (b + 1 < b1) {
            long nn = tiles - next < per_block ? tiles - next : per_block;
            in = block_span(&shape, next, (int)nn, true);
            dy = block_span(&shape, next, (int)nn, false);
        }
        grad_multiply(c, kp, v, dm, du, b + 1 < b1 ? &in : NULL, &dy);
    }
}

void zt_winograd_grad_weights(const zt_winograd_grad *c)
{
    ZT_ASSERT(zt_winograd_fits(3, c->cin, c->cout));
    long tiles = (long)c->batch * ((c->h + 1) / 2) * ((c->w + 1) / 2);
    if (tiles == 0) return;
    int per_block = grad_tiles(c->cin, c->cout, c->fma);
    long nblocks = (tiles + per_block - 1) / per_block;
    int threads = c->threads > 0 ? c->threads : 1;
    int nth = nblocks < threads ? (int)nblocks : threads;
    /* Scratch: the slots' dU, then each thread's block buffer (laid out for
     * `threads`, of which nth <= threads run); the first slot's dU ends up
     * holding the sum. */
    int nslots = grad_slots(nth);
    if (nslots > nblocks) nslots = (int)nblocks;
    size_t du_bytes = grad_du_bytes(c->cin, c->cout);
    size_t block_bytes = grad_block_bytes(c->cin, c->cout, c->fma);
    char *slots = c->scratch;
    char *bufs = slots + (size_t)grad_slots(threads) * du_bytes;
    float *du = (float *)slots;
    size_t count = (size_t)NXI * c->cin * c->cout;
    if (nth == 1) {
        grad_slot(c, tiles, per_block, 0, nblocks, du, bufs);
    } else {
        atomic_int claim = 0;
#pragma omp parallel num_threads(nth)
        {
            int ith = omp_get_thread_num(), team = omp_get_num_threads();
            char *buf = bufs + (size_t)ith * block_bytes;
            for (int k; (k = atomic_fetch_add_explicit(&claim, 1, memory_order_relaxed)) < nslots;)
                grad_slot(c, tiles, per_block, nblocks * k / nslots, nblocks * (k + 1) / nslots,
                          (float *)(slots + (size_t)k * du_bytes), buf);
#pragma omp barrier
            /* The slots' dU summed into the first one's, in slot order, each
             * thread over its own range of 16-float groups. */
            size_t groups = count / 16, g0 = groups * ith / team, g1 = groups * (ith + 1) / team;
            for (int k = 1; k < nslots; k++) {
                const float *part = (const float *)(slots + (size_t)k * du_bytes);
                for (size_t e = g0 * 16; e < g1 * 16; e++) du[e] += part[e];
            }
        }
    }
    grad_to_weights(c, du);
}
