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
 * The batch's tiles, flattened, are cut into blocks; a thread transforms a
 * block's inputs into V, multiplies into M and transforms M into the output
 * with the fused bias, residual and ReLU, so V and M (its own scratch) stay
 * in L2 beside U and each output is written once. Threads are OpenMP's, the
 * runtime oneDNN already runs on, so no second set of busy threads competes
 * for the cores. */
#include "nn/cpu/winograd.h"

#include <immintrin.h>
#include <omp.h>
#include <string.h>

#include "core/status.h"
#include "nn/nn.h"

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

size_t zt_winograd_weights_count(int cin, int cout)
{
    return (size_t)NXI * (size_t)cin * (size_t)cout;
}

/* Where U[xi][o][i] lives within U[xi] (xi planes are cin x cout apart):
 * blocks of COUT_BLOCK output channels (the last one narrower), each
 * [cin / 2][width][2]. */
static size_t u_offset(int o, int i, int cin, int cout)
{
    int cb = o / COUT_BLOCK, ob = o % COUT_BLOCK;
    int width = cout - cb * COUT_BLOCK < COUT_BLOCK ? cout - cb * COUT_BLOCK : COUT_BLOCK;
    return (size_t)cb * COUT_BLOCK * cin + (size_t)(i / 2) * width * 2 + (size_t)ob * 2 +
           (size_t)(i % 2);
}

/* Where input channel i sits in a row of V. With cin a multiple of 32 the
 * input transform reads 32 channels at once and splits even and odd ones
 * into two fp32 vectors by a shift and a mask (no conversion instructions),
 * then packs them back as [evens | odds]; U follows that order, since the
 * products sum over the channels in any order. */
static int v_position(int i, int cin)
{
    if (cin % 32 != 0) return i;
    int j = i % 32;
    return i - j + (j % 2 ? 16 + j / 2 : j / 2);
}

void zt_winograd_pack_weights(const float *w, int cin, int cout, bool mirror, uint16_t *u)
{
    ZT_ASSERT(zt_winograd_fits(3, cin, cout));
    /* The packed conv maps pin to pout channels; mirrored, its weight
     * [o][kh][kw][i] is w[i][2 - kh][2 - kw][o]. */
    int pin = mirror ? cout : cin, pout = mirror ? cin : cout;
    size_t xi_step = (size_t)pin * pout;
    for (int o = 0; o < pout; o++)
        for (int i = 0; i < pin; i++) {
            float g[3][3], gg[4][3], uu[4][4];
            for (int kh = 0; kh < 3; kh++)
                for (int kw = 0; kw < 3; kw++)
                    g[kh][kw] = mirror ? w[(((size_t)i * 3 + 2 - kh) * 3 + 2 - kw) * cin + o]
                                       : w[(((size_t)o * 3 + kh) * 3 + kw) * cin + i];
            /* G g with G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1] */
            for (int kw = 0; kw < 3; kw++) {
                gg[0][kw] = g[0][kw];
                gg[1][kw] = 0.5f * (g[0][kw] + g[1][kw] + g[2][kw]);
                gg[2][kw] = 0.5f * (g[0][kw] - g[1][kw] + g[2][kw]);
                gg[3][kw] = g[2][kw];
            }
            /* (G g) G^T */
            for (int a = 0; a < 4; a++) {
                uu[a][0] = gg[a][0];
                uu[a][1] = 0.5f * (gg[a][0] + gg[a][1] + gg[a][2]);
                uu[a][2] = 0.5f * (gg[a][0] - gg[a][1] + gg[a][2]);
                uu[a][3] = gg[a][2];
            }
            uint16_t *at = u + u_offset(o, v_position(i, pin), pin, pout);
            for (int xi = 0; xi < NXI; xi++) at[xi * xi_step] = zt_bf16_from_f32(uu[xi / 4][xi % 4]);
        }
}

static size_t row_bytes(int cin, int cout)
{
    return (size_t)NXI * ((size_t)cin * sizeof(uint16_t) + (size_t)cout * sizeof(float));
}

/* Tiles per block: as many as fit BLOCK_BYTES, in whole microkernel rows. */
static int max_rows(int cin, int cout)
{
    size_t r = BLOCK_BYTES / row_bytes(cin, cout) / ROWS * ROWS;
    return r < ROWS ? ROWS : r > MAX_ROWS ? MAX_ROWS : (int)r;
}

size_t zt_winograd_scratch_size(int cin, int cout, int threads)
{
    return (size_t)(threads > 0 ? threads : 1) * (size_t)max_rows(cin, cout) * row_bytes(cin, cout);
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

/* B^T d B of one tile (pixels px, NULL outside the board) for cin a
 * multiple of 32, into v[xi * step], channels in v_position's order. */
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

/* V[xi][r] = B^T d B for the tiles t0 .. t0 + n - 1, with
 * B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]; rows n .. np - 1 are zero so
 * that the microkernel can run whole groups of ROWS. */
TARGET static void input_transform(const zt_winograd_conv *c, long t0, int n, int np, uint16_t *v)
{
    int th = (c->h + 1) / 2, tw = (c->w + 1) / 2, cin = c->cin;
    for (int r = n; r < np; r++)
        for (int xi = 0; xi < NXI; xi++)
            memset(v + ((size_t)xi * np + r) * cin, 0, (size_t)cin * sizeof *v);
    for (int r = 0; r < n; r++) {
        long t = t0 + r;
        long img = t / (th * tw);
        int rem = (int)(t % (th * tw)), y0 = 2 * (rem / tw) - 1, x0 = 2 * (rem % tw) - 1;
        const uint16_t *base = c->src + (size_t)img * c->h * c->w * cin;
        const uint16_t *px[4][4];
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++) {
                int y = y0 + i, x = x0 + j;
                px[i][j] = y >= 0 && y < c->h && x >= 0 && x < c->w
                               ? base + ((size_t)y * c->w + x) * cin
                               : NULL;
            }
        if (cin % 32 == 0) {
            transform_pairs(px, cin, v + (size_t)r * cin, (size_t)np * cin);
            continue;
        }
        for (int c0 = 0; c0 < cin; c0 += 16) {
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
                uint16_t *dst = v + ((size_t)(4 * i) * np + r) * cin + c0;
                size_t step = (size_t)np * cin;
                store_bf16(dst, _mm512_sub_ps(bd[i][0], bd[i][2]));
                store_bf16(dst + step, _mm512_add_ps(bd[i][1], bd[i][2]));
                store_bf16(dst + 2 * step, _mm512_sub_ps(bd[i][2], bd[i][1]));
                store_bf16(dst + 3 * step, _mm512_sub_ps(bd[i][1], bd[i][3]));
            }
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
TARGET static void multiply(const zt_winograd_conv *c, int np, const uint16_t *v, float *m,
                            const span *next_in, const span *next_out)
{
    int cin = c->cin, cout = c->cout;
    for (int xi = 0; xi < NXI; xi++) {
        if (next_in) {
            prefetch_part(c->src, *next_in, xi, 0);
            prefetch_part(c->dst, *next_out, xi, 1);
        }
        for (int o0 = 0; o0 < cout; o0 += COUT_BLOCK) {
            int nj = (cout - o0 < COUT_BLOCK ? cout - o0 : COUT_BLOCK) / 16;
            const uint16_t *u = c->u + (size_t)xi * cin * cout + (size_t)o0 * cin;
            for (int r = 0; r < np; r += ROWS) {
                const uint16_t *vr = v + ((size_t)xi * np + r) * cin;
                float *mr = m + ((size_t)xi * np + r) * cout + o0;
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
            __m512 bias = c->bias ? _mm512_loadu_ps(c->bias + c0) : _mm512_setzero_ps();
#pragma GCC unroll 2
            for (int i = 0; i < 2; i++) {
                y[i][0] = _mm512_add_ps(_mm512_add_ps(s[i][0], s[i][1]), s[i][2]);
                y[i][1] = _mm512_sub_ps(_mm512_sub_ps(s[i][1], s[i][2]), s[i][3]);
            }
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 2; j++) {
                    if (!in[i][j]) continue;
                    __m512 out = _mm512_add_ps(y[i][j], bias);
                    if (c->sum) out = _mm512_add_ps(out, load_bf16(c->sum + at[i][j] + c0));
                    if (c->relu) out = _mm512_max_ps(out, _mm512_setzero_ps());
                    store_bf16(c->dst + at[i][j] + c0, out);
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
    uint16_t *v = scratch;
    float *m = (float *)(v + (size_t)NXI * np * c->cin);
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
    int nth = c->threads > 0 ? c->threads : 1, rmax = max_rows(c->cin, c->cout);
    /* Blocks of at most rmax tiles, as many per thread, as even as whole
     * microkernel rows allow. */
    long nblocks = (tiles + rmax - 1) / rmax;
    nblocks = (nblocks + nth - 1) / nth * nth;
    long rows = ((tiles + nblocks - 1) / nblocks + ROWS - 1) / ROWS * ROWS;
    nblocks = (tiles + rows - 1) / rows;
    if (nblocks < nth) nth = (int)nblocks;
    size_t stride = (size_t)rmax * row_bytes(c->cin, c->cout);
    if (nth == 1) {
        for (long b = 0; b < nblocks; b++)
            run_block(c, b * rows, block_tiles(b, rows, tiles), (b + 1) * rows,
                      block_tiles(b + 1, rows, tiles), c->scratch);
        return;
    }
#pragma omp parallel num_threads(nth)
    {
        /* The team may be smaller than asked for: stride by its real size. */
        int ith = omp_get_thread_num(), team = omp_get_num_threads();
        void *own = (char *)c->scratch + (size_t)ith * stride;
        for (long b = ith; b < nblocks; b += team)
            run_block(c, b * rows, block_tiles(b, rows, tiles), (b + team) * rows,
                      block_tiles(b + team, rows, tiles), own);
    }
}
