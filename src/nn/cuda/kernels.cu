/* The CUDA backend's kernels (kernels.h says what each computes). Plain
 * grid-stride loops for the elementwise work; reductions over rows go
 * through 32 x 8 thread blocks (a warp across channels, so reads coalesce
 * in NHWC) whose partial sums meet in atomics, in double where batch norm
 * takes a variance from them. The matrix products are cuBLAS's
 * (cuda_backend.c); these kernels are the memory-bound rest. */
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include "nn/cuda/kernels.h"

namespace {

constexpr int kThreads = 256;
constexpr double kBnEps = 1e-5; /* ZT_NN_BN_EPS */
constexpr double kBnMomentum = 0.1;
constexpr double kLnEps = 1e-5;

unsigned blocks_for(size_t n)
{
    size_t b = (n + kThreads - 1) / kThreads;
    if (b > 65536) b = 65536; /* grid-stride loops cover the rest */
    if (b == 0) b = 1;
    return (unsigned)b;
}

/* Blocks along y for a reduction over `rows` with 8 rows per block step:
 * each thread sums at least 32 rows before its atomic. */
unsigned row_blocks(size_t rows)
{
    size_t b = (rows + 255) / 256;
    if (b > 1024) b = 1024;
    if (b == 0) b = 1;
    return (unsigned)b;
}

__device__ inline void store(float *p, float v) { *p = v; }
__device__ inline void store(__nv_bfloat16 *p, float v) { *p = __float2bfloat16_rn(v); }

template <typename T>
__global__ void im2col_kernel(const float *__restrict__ x, T *__restrict__ col, int B, int H,
                              int W, int C, int k)
{
    const long long K = (long long)k * k * C;
    const long long total = (long long)B * H * W * K;
    const int pad = k / 2;
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total;
         e += (long long)gridDim.x * blockDim.x) {
        long long row = e / K;
        int j = (int)(e - row * K);
        int ky = j / (k * C), rem = j - ky * k * C;
        int kx = rem / C, c = rem - kx * C;
        int xx = (int)(row % W);
        long long t = row / W;
        int yy = (int)(t % H);
        long long n = t / H;
        int iy = yy + ky - pad, ix = xx + kx - pad;
        float v = 0.0f;
        if (iy >= 0 && iy < H && ix >= 0 && ix < W) v = x[((n * H + iy) * W + ix) * C + c];
        store(col + e, v);
    }
}

__global__ void col2im_add_kernel(const float *__restrict__ dcol, float *__restrict__ dx, int B,
                                  int H, int W, int C, int k)
{
    const long long total = (long long)B * H * W * C;
    const long long K = (long long)k * k * C;
    const int pad = k / 2;
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total;
         e += (long long)gridDim.x * blockDim.x) {
        int c = (int)(e % C);
        long long t = e / C;
        int ix = (int)(t % W);
        t /= W;
        int iy = (int)(t % H);
        long long n = t / H;
        float acc = 0.0f;
        for (int ky = 0; ky < k; ky++) {
            int y = iy - ky + pad;
            if (y < 0 || y >= H) continue;
            for (int kx = 0; kx < k; kx++) {
                int xx = ix - kx + pad;
                if (xx < 0 || xx >= W) continue;
                acc += dcol[((n * H + y) * W + xx) * K + (ky * k + kx) * C + c];
            }
        }
        dx[e] += acc;
    }
}

template <typename T>
__global__ void cast_kernel(const float *__restrict__ x, T *__restrict__ y, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        store(y + i, x[i]);
}

__global__ void epilogue_kernel(float *y, size_t n, int C, const float *__restrict__ bias,
                                const float *__restrict__ resid, int act)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float v = y[i];
        if (bias) v += bias[i % C];
        if (resid) v += resid[i];
        if (act == ZT_CU_ACT_RELU) v = v > 0.0f ? v : 0.0f;
        else if (act == ZT_CU_ACT_TANH) v = tanhf(v);
        y[i] = v;
    }
}

/* ---- the implicit-GEMM convolution (bf16 tensor cores) ----
 *
 * Y (M x O) = gather(x) (M x K) W^T with M = B*H*W output positions and
 * K = k*k*C, the gather never written out: each 128-thread block owns a
 * 64-row by 64-channel tile of Y, and for each BK-wide step of K copies
 * the input values it needs (zero outside the board, rounded to bf16) and
 * the matching weight rows into shared memory, where four warps multiply
 * them on the tensor cores (16x16x16 bf16 fragments, fp32 sums), each warp
 * a 32 x 32 quarter. With two shared stages the global loads of step s+1
 * are in flight (in registers) while step s multiplies, one barrier a
 * step; with one, load, barrier, multiply, barrier. The tile then goes
 * through shared memory once more so that bias, residual and activation
 * are applied on the way out in coalesced rows. One launch replaces
 * im2col, the GEMM and the epilogue.
 *
 * Three shapes (zt_cu_conv_fused's `variant`), measured side by side on
 * an H100 (docs/cuda.md): BK 32 with one stage (96 registers), BK 32 with
 * two (128; the fastest there, the default), BK 64 with two (165, fewest
 * barriers). */
constexpr int kConvBM = 64, kConvBN = 64;
constexpr int kConvLdC = kConvBN + 4; /* floats */
constexpr int kConvThreads = 128;

template <int BK>
struct ConvShape {
    static constexpr int ld = BK + 8;               /* bf16 a row: 16-byte aligned rows */
    static constexpr int stage = (kConvBM + kConvBN) * ld; /* bf16 elements: A then B */
    static constexpr int agroups = BK / 8;          /* A float4 groups a thread */
    static constexpr int arow_threads = BK / 4;     /* threads across an A row */
    static constexpr int bvecs = BK / 16;           /* B uint4 pieces a thread */
};

/* One step's global values in registers: this thread's A rows (4 columns
 * each, fp32) and its B row's BK/2 columns (bf16). */
template <int BK>
struct ConvRegs {
    float4 a[ConvShape<BK>::agroups];
    uint4 b[ConvShape<BK>::bvecs];
};

/* VEC: C % 4 == 0 (four consecutive K columns are one tap's four channels,
 * one aligned float4) and K % 8 == 0 (weight rows in 16-byte pieces). */
template <bool VEC, int BK>
__device__ __forceinline__ void conv_load(ConvRegs<BK> &g, const float *__restrict__ x,
                                          const __nv_bfloat16 *__restrict__ w, int k0,
                                          const int *rn, const int *ry, const int *rx, int ja,
                                          int o, int jb, int H, int W, int C, int O, int K, int k)
{
    const int pad = k / 2;
#pragma unroll
    for (int i = 0; i < ConvShape<BK>::agroups; i++) {
        float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        if (rn[i] >= 0) {
            if (VEC) {
                int kk = k0 + ja;
                if (kk < K) {
                    int tap = kk / C, c = kk - tap * C;
                    int ky = tap / k, kx = tap - ky * k;
                    int iy = ry[i] + ky - pad, ix = rx[i] + kx - pad;
                    if (iy >= 0 && iy < H && ix >= 0 && ix < W) {
                        float4 f = __ldg(reinterpret_cast<const float4 *>(
                            x + (((size_t)rn[i] * H + iy) * W + ix) * C + c));
                        v[0] = f.x;
                        v[1] = f.y;
                        v[2] = f.z;
                        v[3] = f.w;
                    }
                }
            } else {
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    int kk = k0 + ja + e;
                    if (kk >= K) break;
                    int tap = kk / C, c = kk - tap * C;
                    int ky = tap / k, kx = tap - ky * k;
                    int iy = ry[i] + ky - pad, ix = rx[i] + kx - pad;
                    if (iy >= 0 && iy < H && ix >= 0 && ix < W)
                        v[e] = __ldg(x + (((size_t)rn[i] * H + iy) * W + ix) * C + c);
                }
            }
        }
        g.a[i] = make_float4(v[0], v[1], v[2], v[3]);
    }
#pragma unroll
    for (int q = 0; q < ConvShape<BK>::bvecs; q++) {
        int kk = k0 + jb + 8 * q;
        if (VEC) {
            g.b[q] = make_uint4(0, 0, 0, 0);
            if (o < O && kk < K)
                g.b[q] = __ldg(reinterpret_cast<const uint4 *>(w + (size_t)o * K + kk));
        } else {
            union {
                uint4 u;
                __nv_bfloat16 h[8];
            } t;
#pragma unroll
            for (int e = 0; e < 8; e++)
                t.h[e] = o < O && kk + e < K ? w[(size_t)o * K + kk + e]
                                             : __float2bfloat16_rn(0.0f);
            g.b[q] = t.u;
        }
    }
}

template <int BK>
__device__ __forceinline__ void conv_store(const ConvRegs<BK> &g, __nv_bfloat16 *stage, int tid,
                                           int ja, int ob, int jb)
{
    using S = ConvShape<BK>;
    __nv_bfloat16 *As = stage, *Bs = stage + kConvBM * S::ld;
#pragma unroll
    for (int i = 0; i < S::agroups; i++) {
        int r = tid / S::arow_threads + (kConvThreads / S::arow_threads) * i;
        union {
            uint2 u;
            __nv_bfloat162 h[2];
        } t;
        t.h[0] = __floats2bfloat162_rn(g.a[i].x, g.a[i].y);
        t.h[1] = __floats2bfloat162_rn(g.a[i].z, g.a[i].w);
        *reinterpret_cast<uint2 *>(As + r * S::ld + ja) = t.u;
    }
#pragma unroll
    for (int q = 0; q < S::bvecs; q++)
        *reinterpret_cast<uint4 *>(Bs + ob * S::ld + jb + 8 * q) = g.b[q];
}

template <int BK>
__device__ __forceinline__ void conv_mma(
    nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> (&acc)[2][2],
    const __nv_bfloat16 *stage, int wm, int wn)
{
    using namespace nvcuda;
    using S = ConvShape<BK>;
    const __nv_bfloat16 *As = stage, *Bs = stage + kConvBM * S::ld;
#pragma unroll
    for (int ks = 0; ks < BK; ks += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a[2];
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> b[2];
#pragma unroll
        for (int i = 0; i < 2; i++)
            wmma::load_matrix_sync(a[i], As + (wm + 16 * i) * S::ld + ks, S::ld);
#pragma unroll
        for (int j = 0; j < 2; j++)
            wmma::load_matrix_sync(b[j], Bs + (wn + 16 * j) * S::ld + ks, S::ld);
#pragma unroll
        for (int i = 0; i < 2; i++)
#pragma unroll
            for (int j = 0; j < 2; j++) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
}

template <bool VEC, int BK, int STAGES>
__global__ void __launch_bounds__(kConvThreads)
    conv_fused_kernel(const float *__restrict__ x, const __nv_bfloat16 *__restrict__ w,
                      const float *__restrict__ bias, const float *__restrict__ resid,
                      float *__restrict__ y, int M, int H, int W, int C, int O, int k, int act)
{
    using namespace nvcuda;
    using S = ConvShape<BK>;
    constexpr int stage_bytes = STAGES * S::stage * 2, tile_bytes = kConvBM * kConvLdC * 4;
    constexpr int smem_bytes = stage_bytes > tile_bytes ? stage_bytes : tile_bytes;
    __shared__ __align__(128) unsigned char raw[smem_bytes];
    __nv_bfloat16 *smem = reinterpret_cast<__nv_bfloat16 *>(raw);
    const int tid = threadIdx.x, warp = tid / 32;
    const int m0 = blockIdx.x * kConvBM, o0 = blockIdx.y * kConvBN;
    const int K = k * k * C, HW = H * W;

    /* This thread's A rows and its 4 columns in a step; its B row (an
     * output channel) and BK/2 columns. */
    const int ja = (tid % S::arow_threads) * 4;
    int rn[S::agroups], ry[S::agroups], rx[S::agroups];
#pragma unroll
    for (int i = 0; i < S::agroups; i++) {
        int m = m0 + tid / S::arow_threads + (kConvThreads / S::arow_threads) * i;
        if (m < M) {
            rn[i] = m / HW;
            int rem = m - rn[i] * HW;
            ry[i] = rem / W;
            rx[i] = rem - ry[i] * W;
        } else {
            rn[i] = -1;
            ry[i] = rx[i] = 0;
        }
    }
    const int ob = tid / 2, jb = (tid % 2) * (BK / 2), o = o0 + ob;

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 2; j++) wmma::fill_fragment(acc[i][j], 0.0f);
    const int wm = (warp / 2) * 32, wn = (warp % 2) * 32;

    ConvRegs<BK> g;
    if (STAGES == 1) {
        for (int k0 = 0; k0 < K; k0 += BK) {
            conv_load<VEC, BK>(g, x, w, k0, rn, ry, rx, ja, o, jb, H, W, C, O, K, k);
            conv_store<BK>(g, smem, tid, ja, ob, jb);
            __syncthreads();
            conv_mma<BK>(acc, smem, wm, wn);
            __syncthreads();
        }
    } else {
        conv_load<VEC, BK>(g, x, w, 0, rn, ry, rx, ja, o, jb, H, W, C, O, K, k);
        conv_store<BK>(g, smem, tid, ja, ob, jb);
        __syncthreads();
        int cur = 0;
        for (int k0 = 0; k0 < K; k0 += BK) {
            bool next = k0 + BK < K;
            if (next) conv_load<VEC, BK>(g, x, w, k0 + BK, rn, ry, rx, ja, o, jb, H, W, C, O, K, k);
            conv_mma<BK>(acc, smem + cur * S::stage, wm, wn);
            /* The other stage was last read before the previous barrier. */
            if (next) conv_store<BK>(g, smem + (cur ^ 1) * S::stage, tid, ja, ob, jb);
            __syncthreads();
            cur ^= 1;
        }
    }
    /* The tile through shared memory (over the stages, all read by now),
     * then bias, residual and activation. */
    float *Cs = reinterpret_cast<float *>(raw);
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 2; j++)
            wmma::store_matrix_sync(Cs + (wm + 16 * i) * kConvLdC + wn + 16 * j, acc[i][j],
                                    kConvLdC, wmma::mem_row_major);
    __syncthreads();
    for (int e = tid; e < kConvBM * kConvBN; e += kConvThreads) {
        int r = e / kConvBN, c = e - r * kConvBN;
        int m = m0 + r, oc = o0 + c;
        if (m >= M || oc >= O) continue;
        float v = Cs[r * kConvLdC + c];
        if (bias) v += bias[oc];
        size_t at = (size_t)m * O + oc;
        if (resid) v += resid[at];
        if (act == ZT_CU_ACT_RELU) v = v > 0.0f ? v : 0.0f;
        else if (act == ZT_CU_ACT_TANH) v = tanhf(v);
        y[at] = v;
    }
}

template <bool VEC>
void conv_fused_launch(cudaStream_t s, int variant, dim3 grid, const float *x,
                       const __nv_bfloat16 *w, const float *bias, const float *resid, float *y,
                       int M, int H, int W, int C, int O, int k, int act)
{
    switch (variant) {
    case ZT_CU_CONV_BK32_1:
        conv_fused_kernel<VEC, 32, 1>
            <<<grid, kConvThreads, 0, s>>>(x, w, bias, resid, y, M, H, W, C, O, k, act);
        break;
    case ZT_CU_CONV_BK32_2:
        conv_fused_kernel<VEC, 32, 2>
            <<<grid, kConvThreads, 0, s>>>(x, w, bias, resid, y, M, H, W, C, O, k, act);
        break;
    default:
        conv_fused_kernel<VEC, 64, 2>
            <<<grid, kConvThreads, 0, s>>>(x, w, bias, resid, y, M, H, W, C, O, k, act);
        break;
    }
}

/* Block (32, 8): x across channels, y down rows, grid.y splitting rows. */
__global__ void colsum_kernel(const float *__restrict__ x, size_t rows, int C, float *out)
{
    __shared__ float part[8][33];
    int c = blockIdx.x * 32 + threadIdx.x;
    float acc = 0.0f;
    if (c < C)
        for (size_t r = blockIdx.y * 8 + threadIdx.y; r < rows; r += (size_t)gridDim.y * 8)
            acc += x[r * C + c];
    part[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && c < C) {
        float s = 0.0f;
        for (int i = 0; i < 8; i++) s += part[i][threadIdx.x];
        atomicAdd(out + c, s);
    }
}

__global__ void bn_stats_kernel(const float *__restrict__ x, size_t rows, int C, double *sums)
{
    __shared__ double ps[8][33], pq[8][33];
    int c = blockIdx.x * 32 + threadIdx.x;
    double s = 0.0, q = 0.0;
    if (c < C)
        for (size_t r = blockIdx.y * 8 + threadIdx.y; r < rows; r += (size_t)gridDim.y * 8) {
            double v = x[r * C + c];
            s += v;
            q += v * v;
        }
    ps[threadIdx.y][threadIdx.x] = s;
    pq[threadIdx.y][threadIdx.x] = q;
    __syncthreads();
    if (threadIdx.y == 0 && c < C) {
        double ts = 0.0, tq = 0.0;
        for (int i = 0; i < 8; i++) {
            ts += ps[i][threadIdx.x];
            tq += pq[i][threadIdx.x];
        }
        atomicAdd(sums + c, ts);
        atomicAdd(sums + C + c, tq);
    }
}

__global__ void bn_finalize_kernel(const double *sums, size_t rows, int C,
                                   const float *__restrict__ gamma,
                                   const float *__restrict__ beta, float *rmean, float *rvar,
                                   bool training, bool update, float *mean_out,
                                   float *invstd_out, float *scale, float *shift)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    double mean, invstd;
    if (training) {
        mean = sums[c] / (double)rows;
        double var = sums[C + c] / (double)rows - mean * mean;
        if (var < 0.0) var = 0.0;
        invstd = 1.0 / sqrt(var + kBnEps);
        if (update) {
            double unbiased = rows > 1 ? var * (double)rows / (double)(rows - 1) : var;
            rmean[c] = (float)((1 - kBnMomentum) * rmean[c] + kBnMomentum * mean);
            rvar[c] = (float)((1 - kBnMomentum) * rvar[c] + kBnMomentum * unbiased);
        }
    } else {
        mean = rmean[c];
        invstd = 1.0 / sqrt((double)rvar[c] + kBnEps);
    }
    double sc = gamma[c] * invstd;
    if (mean_out) mean_out[c] = (float)mean;
    if (invstd_out) invstd_out[c] = (float)invstd;
    scale[c] = (float)sc;
    shift[c] = (float)(beta[c] - mean * sc);
}

__global__ void bn_apply_kernel(const float *__restrict__ x, float *__restrict__ y, size_t n,
                                int C, const float *__restrict__ scale,
                                const float *__restrict__ shift)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        int c = (int)(i % C);
        y[i] = x[i] * scale[c] + shift[c];
    }
}

__global__ void bn_bwd_sums_kernel(const float *__restrict__ dy, const float *__restrict__ x,
                                   size_t rows, int C, const float *__restrict__ mean,
                                   const float *__restrict__ invstd, double *sums)
{
    __shared__ double ps[8][33], pq[8][33];
    int c = blockIdx.x * 32 + threadIdx.x;
    double s = 0.0, q = 0.0;
    if (c < C) {
        double m = mean[c], is = invstd[c];
        for (size_t r = blockIdx.y * 8 + threadIdx.y; r < rows; r += (size_t)gridDim.y * 8) {
            double d = dy[r * C + c];
            s += d;
            q += d * ((x[r * C + c] - m) * is);
        }
    }
    ps[threadIdx.y][threadIdx.x] = s;
    pq[threadIdx.y][threadIdx.x] = q;
    __syncthreads();
    if (threadIdx.y == 0 && c < C) {
        double ts = 0.0, tq = 0.0;
        for (int i = 0; i < 8; i++) {
            ts += ps[i][threadIdx.x];
            tq += pq[i][threadIdx.x];
        }
        atomicAdd(sums + c, ts);
        atomicAdd(sums + C + c, tq);
    }
}

__global__ void bn_param_grads_kernel(const double *sums, int C, float *ggamma, float *gbeta)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    ggamma[c] += (float)sums[C + c];
    gbeta[c] += (float)sums[c];
}

__global__ void bn_dx_kernel(const float *__restrict__ dy, const float *__restrict__ x,
                             float *__restrict__ dx, size_t n, size_t rows, int C,
                             const float *__restrict__ mean, const float *__restrict__ invstd,
                             const float *__restrict__ gamma, const double *__restrict__ sums)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        int c = (int)(i % C);
        double is = invstd[c];
        double xhat = (x[i] - mean[c]) * is;
        double k = gamma[c] * is / (double)rows;
        dx[i] += (float)(k * ((double)rows * dy[i] - sums[c] - xhat * sums[C + c]));
    }
}

/* Sum of v over the block (blockDim.x == kThreads); every thread gets it. */
__device__ double block_sum(double v, double *shared)
{
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    double t = 0.0;
    if (threadIdx.x < 32) {
        t = threadIdx.x < kThreads / 32 ? shared[threadIdx.x] : 0.0;
        for (int o = 16; o > 0; o >>= 1) t += __shfl_down_sync(0xffffffffu, t, o);
        if (threadIdx.x == 0) shared[kThreads / 32] = t;
    }
    __syncthreads();
    t = shared[kThreads / 32];
    __syncthreads();
    return t;
}

__global__ void ln_forward_kernel(const float *__restrict__ x, float *__restrict__ y, int N,
                                  const float *__restrict__ gamma, const float *__restrict__ beta,
                                  float *mean_out, float *invstd_out)
{
    __shared__ double sh[kThreads / 32 + 1];
    const float *xr = x + (size_t)blockIdx.x * N;
    float *yr = y + (size_t)blockIdx.x * N;
    double s = 0.0;
    for (int j = threadIdx.x; j < N; j += blockDim.x) s += xr[j];
    double mean = block_sum(s, sh) / N;
    double q = 0.0;
    for (int j = threadIdx.x; j < N; j += blockDim.x) {
        double d = xr[j] - mean;
        q += d * d;
    }
    double invstd = 1.0 / sqrt(block_sum(q, sh) / N + kLnEps);
    float m = (float)mean, is = (float)invstd;
    for (int j = threadIdx.x; j < N; j += blockDim.x) yr[j] = gamma[j] * (xr[j] - m) * is + beta[j];
    if (threadIdx.x == 0) {
        mean_out[blockIdx.x] = m;
        invstd_out[blockIdx.x] = is;
    }
}

__global__ void ln_dx_kernel(const float *__restrict__ dy, const float *__restrict__ x,
                             float *__restrict__ dx, int N, const float *__restrict__ gamma,
                             const float *__restrict__ mean, const float *__restrict__ invstd)
{
    __shared__ double sh[kThreads / 32 + 1];
    size_t base = (size_t)blockIdx.x * N;
    float m = mean[blockIdx.x], is = invstd[blockIdx.x];
    double a = 0.0, b = 0.0;
    for (int j = threadIdx.x; j < N; j += blockDim.x) {
        double dxhat = (double)dy[base + j] * gamma[j];
        a += dxhat;
        b += dxhat * ((x[base + j] - m) * is);
    }
    double sdxh = block_sum(a, sh), sdxhx = block_sum(b, sh);
    for (int j = threadIdx.x; j < N; j += blockDim.x) {
        double xhat = (x[base + j] - m) * is;
        double dxhat = (double)dy[base + j] * gamma[j];
        dx[base + j] += (float)(is / N * ((double)N * dxhat - sdxh - xhat * sdxhx));
    }
}

/* Block (32, 8) over features x rows, as colsum_kernel. */
__global__ void ln_param_grads_kernel(const float *__restrict__ dy, const float *__restrict__ x,
                                      int B, int N, const float *__restrict__ mean,
                                      const float *__restrict__ invstd, float *ggamma,
                                      float *gbeta)
{
    __shared__ float pg[8][33], pb[8][33];
    int j = blockIdx.x * 32 + threadIdx.x;
    float g = 0.0f, b = 0.0f;
    if (j < N)
        for (int n = blockIdx.y * 8 + threadIdx.y; n < B; n += gridDim.y * 8) {
            float d = dy[(size_t)n * N + j];
            g += d * ((x[(size_t)n * N + j] - mean[n]) * invstd[n]);
            b += d;
        }
    pg[threadIdx.y][threadIdx.x] = g;
    pb[threadIdx.y][threadIdx.x] = b;
    __syncthreads();
    if (threadIdx.y == 0 && j < N) {
        float tg = 0.0f, tb = 0.0f;
        for (int i = 0; i < 8; i++) {
            tg += pg[i][threadIdx.x];
            tb += pb[i][threadIdx.x];
        }
        atomicAdd(ggamma + j, tg);
        atomicAdd(gbeta + j, tb);
    }
}

__global__ void relu_kernel(const float *__restrict__ x, float *__restrict__ y, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

__global__ void tanh_kernel(const float *__restrict__ x, float *__restrict__ y, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        y[i] = tanhf(x[i]);
}

__global__ void add_kernel(const float *__restrict__ a, const float *__restrict__ b,
                           float *__restrict__ y, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        y[i] = a[i] + b[i];
}

__global__ void relu_backward_kernel(const float *__restrict__ y, const float *__restrict__ dy,
                                     float *__restrict__ dx, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        if (y[i] > 0.0f) dx[i] += dy[i];
}

__global__ void tanh_backward_kernel(const float *__restrict__ y, const float *__restrict__ dy,
                                     float *__restrict__ dx, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        dx[i] += dy[i] * (1.0f - y[i] * y[i]);
}

__global__ void add_into_kernel(float *dst, const float *__restrict__ src, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        dst[i] += src[i];
}

/* out += sum of x[i]^2 over i (where mask[i], when given), in double. */
__global__ void sumsq_kernel(const float *__restrict__ x, const unsigned char *__restrict__ mask,
                             size_t n, double *out)
{
    __shared__ double shared[kThreads / 32 + 1];
    double v = 0.0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        if (!mask || mask[i]) v += (double)x[i] * x[i];
    double t = block_sum(v, shared);
    if (threadIdx.x == 0) atomicAdd(out, t);
}

/* The trainer's host loops (nn/train.c) element for element, on the
 * gradient scaled by k (clipping), which is then zeroed for the next
 * step's accumulation. */
__global__ void sgd_kernel(float *__restrict__ w, float *__restrict__ g, float *__restrict__ m,
                           const unsigned char *__restrict__ decay, size_t n, float lr, float mu,
                           float wd, float k)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float gi = __fmul_rn(g[i], k) + (decay[i] ? __fmul_rn(wd, w[i]) : 0.0f);
        float mi = __fadd_rn(__fmul_rn(mu, m[i]), gi);
        m[i] = mi;
        w[i] = __fsub_rn(w[i], __fmul_rn(lr, __fadd_rn(gi, __fmul_rn(mu, mi))));
        g[i] = 0.0f;
    }
}

__global__ void adamw_kernel(float *__restrict__ w, float *__restrict__ g, float *__restrict__ m,
                             float *__restrict__ v, const unsigned char *__restrict__ decay,
                             size_t n, float step_size, float b1, float b2, float inv_bc2,
                             float eps, float shrink, float k)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float gi = __fmul_rn(g[i], k), wi = w[i];
        if (decay[i]) wi = __fmul_rn(wi, shrink);
        float mi = __fadd_rn(__fmul_rn(b1, m[i]), __fmul_rn(1.0f - b1, gi));
        float vi = __fadd_rn(__fmul_rn(b2, v[i]), __fmul_rn(__fmul_rn(1.0f - b2, gi), gi));
        m[i] = mi;
        v[i] = vi;
        w[i] = __fsub_rn(wi, __fdiv_rn(__fmul_rn(step_size, mi),
                                       __fadd_rn(__fsqrt_rn(__fmul_rn(vi, inv_bc2)), eps)));
        g[i] = 0.0f;
    }
}

} // namespace

extern "C" {

bool zt_cu_kernels_runnable(void)
{
    cudaFuncAttributes attr;
    return cudaFuncGetAttributes(&attr, relu_kernel) == cudaSuccess;
}

void zt_cu_im2col(cudaStream_t s, const float *x, void *col, bool bf16, int B, int H, int W,
                  int C, int k)
{
    size_t total = (size_t)B * H * W * k * k * C;
    if (bf16)
        im2col_kernel<<<blocks_for(total), kThreads, 0, s>>>(x, (__nv_bfloat16 *)col, B, H, W, C,
                                                             k);
    else
        im2col_kernel<<<blocks_for(total), kThreads, 0, s>>>(x, (float *)col, B, H, W, C, k);
}

void zt_cu_col2im_add(cudaStream_t s, const float *dcol, float *dx, int B, int H, int W, int C,
                      int k)
{
    size_t total = (size_t)B * H * W * C;
    col2im_add_kernel<<<blocks_for(total), kThreads, 0, s>>>(dcol, dx, B, H, W, C, k);
}

void zt_cu_cast(cudaStream_t s, const float *x, void *y, bool bf16, size_t n)
{
    if (bf16)
        cast_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, (__nv_bfloat16 *)y, n);
    else
        cast_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, (float *)y, n);
}

void zt_cu_epilogue(cudaStream_t s, float *y, size_t rows, int C, const float *bias,
                    const float *resid, int act)
{
    if (!bias && !resid && act == ZT_CU_ACT_NONE) return;
    size_t n = rows * (size_t)C;
    epilogue_kernel<<<blocks_for(n), kThreads, 0, s>>>(y, n, C, bias, resid, act);
}

void zt_cu_conv_fused(cudaStream_t s, int variant, const float *x, const void *w,
                      const float *bias, const float *resid, int act, float *y, int B, int H,
                      int W, int C, int O, int k)
{
    int M = B * H * W, K = k * k * C;
    dim3 grid((unsigned)((M + kConvBM - 1) / kConvBM), (unsigned)((O + kConvBN - 1) / kConvBN));
    const __nv_bfloat16 *wb = static_cast<const __nv_bfloat16 *>(w);
    if (C % 4 == 0 && K % 8 == 0)
        conv_fused_launch<true>(s, variant, grid, x, wb, bias, resid, y, M, H, W, C, O, k, act);
    else
        conv_fused_launch<false>(s, variant, grid, x, wb, bias, resid, y, M, H, W, C, O, k, act);
}

void zt_cu_colsum_add(cudaStream_t s, const float *x, size_t rows, int C, float *out)
{
    dim3 grid((unsigned)((C + 31) / 32), row_blocks(rows)), block(32, 8);
    colsum_kernel<<<grid, block, 0, s>>>(x, rows, C, out);
}

void zt_cu_bn_stats(cudaStream_t s, const float *x, size_t rows, int C, double *sums)
{
    cudaMemsetAsync(sums, 0, 2 * (size_t)C * sizeof(double), s);
    dim3 grid((unsigned)((C + 31) / 32), row_blocks(rows)), block(32, 8);
    bn_stats_kernel<<<grid, block, 0, s>>>(x, rows, C, sums);
}

void zt_cu_bn_finalize(cudaStream_t s, const double *sums, size_t rows, int C, const float *gamma,
                       const float *beta, float *rmean, float *rvar, bool training, bool update,
                       float *mean, float *invstd, float *scale, float *shift)
{
    bn_finalize_kernel<<<(C + 127) / 128, 128, 0, s>>>(sums, rows, C, gamma, beta, rmean, rvar,
                                                       training, update, mean, invstd, scale,
                                                       shift);
}

void zt_cu_bn_apply(cudaStream_t s, const float *x, float *y, size_t rows, int C,
                    const float *scale, const float *shift)
{
    size_t n = rows * (size_t)C;
    bn_apply_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, y, n, C, scale, shift);
}

void zt_cu_bn_backward(cudaStream_t s, const float *dy, const float *x, float *dx, size_t rows,
                       int C, const float *mean, const float *invstd, const float *gamma,
                       double *sums, float *ggamma, float *gbeta)
{
    cudaMemsetAsync(sums, 0, 2 * (size_t)C * sizeof(double), s);
    dim3 grid((unsigned)((C + 31) / 32), row_blocks(rows)), block(32, 8);
    bn_bwd_sums_kernel<<<grid, block, 0, s>>>(dy, x, rows, C, mean, invstd, sums);
    bn_param_grads_kernel<<<(C + 127) / 128, 128, 0, s>>>(sums, C, ggamma, gbeta);
    if (dx) {
        size_t n = rows * (size_t)C;
        bn_dx_kernel<<<blocks_for(n), kThreads, 0, s>>>(dy, x, dx, n, rows, C, mean, invstd,
                                                        gamma, sums);
    }
}

void zt_cu_ln_forward(cudaStream_t s, const float *x, float *y, int B, int N, const float *gamma,
                      const float *beta, float *mean, float *invstd)
{
    ln_forward_kernel<<<B, kThreads, 0, s>>>(x, y, N, gamma, beta, mean, invstd);
}

void zt_cu_ln_backward(cudaStream_t s, const float *dy, const float *x, float *dx, int B, int N,
                       const float *gamma, const float *mean, const float *invstd, float *ggamma,
                       float *gbeta)
{
    dim3 grid((unsigned)((N + 31) / 32), row_blocks((size_t)B)), block(32, 8);
    ln_param_grads_kernel<<<grid, block, 0, s>>>(dy, x, B, N, mean, invstd, ggamma, gbeta);
    if (dx) ln_dx_kernel<<<B, kThreads, 0, s>>>(dy, x, dx, N, gamma, mean, invstd);
}

void zt_cu_relu(cudaStream_t s, const float *x, float *y, size_t n)
{
    relu_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, y, n);
}

void zt_cu_tanh(cudaStream_t s, const float *x, float *y, size_t n)
{
    tanh_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, y, n);
}

void zt_cu_add(cudaStream_t s, const float *a, const float *b, float *y, size_t n)
{
    add_kernel<<<blocks_for(n), kThreads, 0, s>>>(a, b, y, n);
}

void zt_cu_relu_backward(cudaStream_t s, const float *y, const float *dy, float *dx, size_t n)
{
    relu_backward_kernel<<<blocks_for(n), kThreads, 0, s>>>(y, dy, dx, n);
}

void zt_cu_tanh_backward(cudaStream_t s, const float *y, const float *dy, float *dx, size_t n)
{
    tanh_backward_kernel<<<blocks_for(n), kThreads, 0, s>>>(y, dy, dx, n);
}

void zt_cu_add_into(cudaStream_t s, float *dst, const float *src, size_t n)
{
    add_into_kernel<<<blocks_for(n), kThreads, 0, s>>>(dst, src, n);
}

void zt_cu_sumsq(cudaStream_t s, const float *x, const unsigned char *mask, size_t n, double *out)
{
    /* few blocks: each thread sums many before the one atomic per block */
    unsigned blocks = blocks_for(n) < 1024 ? blocks_for(n) : 1024;
    sumsq_kernel<<<blocks, kThreads, 0, s>>>(x, mask, n, out);
}

void zt_cu_sgd_nesterov(cudaStream_t s, float *w, float *g, float *m, const unsigned char *decay,
                        size_t n, float lr, float mu, float wd, float k)
{
    sgd_kernel<<<blocks_for(n), kThreads, 0, s>>>(w, g, m, decay, n, lr, mu, wd, k);
}

void zt_cu_adamw(cudaStream_t s, float *w, float *g, float *m, float *v,
                 const unsigned char *decay, size_t n, float step_size, float b1, float b2,
                 float inv_bc2, float eps, float shrink, float k)
{
    adamw_kernel<<<blocks_for(n), kThreads, 0, s>>>(w, g, m, v, decay, n, step_size, b1, b2,
                                                    inv_bc2, eps, shrink, k);
}

} // extern "C"
