/* The CUDA backend's kernels (kernels.h says what each computes). Plain
 * grid-stride loops for the elementwise work; reductions over rows go
 * through 32 x 8 thread blocks (a warp across channels, so reads coalesce
 * in NHWC) whose partial sums meet in atomics, in double where batch norm
 * takes a variance from them. The matrix products are cuBLAS's
 * (cuda_backend.c); these kernels are the memory-bound rest. */
#include <cuda_bf16.h>
#include <cuda_runtime.h>

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
