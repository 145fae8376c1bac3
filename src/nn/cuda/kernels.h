/* The CUDA backend's own kernels (kernels.cu), callable from C: the
 * elementwise ops, batch/layer norm statistics and their gradients, im2col
 * and its adjoint, and the GEMM epilogue. Every launcher queues work on
 * `s` and returns at once (errors surface at the next synchronisation, as
 * cudaGetLastError). Activations and gradients are fp32 device arrays in
 * NHWC rows of C channels; the GEMM operands im2col writes are fp32 or, with
 * bf16, __nv_bfloat16 (round to nearest even). Nothing here allocates. */
#ifndef ZT_NN_CUDA_KERNELS_H
#define ZT_NN_CUDA_KERNELS_H

#include <stdbool.h>
#include <stddef.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { ZT_CU_ACT_NONE, ZT_CU_ACT_RELU, ZT_CU_ACT_TANH };

/* Whether the current device can run these kernels (this build holds
 * machine code or PTX it accepts). */
bool zt_cu_kernels_runnable(void);

/* col[(n,y,x)][(ky,kx,c)] = x[n, y+ky-k/2, x+kx-k/2, c] (zero outside):
 * B*H*W rows of k*k*C; k = 1 is a plain conversion. */
void zt_cu_im2col(cudaStream_t s, const float *x, void *col, bool bf16, int B, int H, int W, int C,
                  int k);
/* dx[n,iy,ix,c] += sum over (ky,kx) of dcol[(n, iy-ky+k/2, ix-kx+k/2)][(ky,kx,c)]. */
void zt_cu_col2im_add(cudaStream_t s, const float *dcol, float *dx, int B, int H, int W, int C,
                      int k);
/* y[i] = x[i] rounded to bf16 (or copied). */
void zt_cu_cast(cudaStream_t s, const float *x, void *y, bool bf16, size_t n);
/* y[r][c] = act(y[r][c] + bias[c] + resid[r][c]); bias and resid may be NULL. */
void zt_cu_epilogue(cudaStream_t s, float *y, size_t rows, int C, const float *bias,
                    const float *resid, int act);
/* y = act(conv(x, w) + bias + resid) in bf16, as one implicit GEMM on the
 * tensor cores: x fp32 NHWC (B x H x W x C, rounded to bf16 as it is
 * read), w the bf16 weights in OHWI rows of k*k*C (16-byte aligned), y
 * fp32 (B*H*W rows of O); bias and resid may be NULL. A dense layer is the
 * case H = W = k = 1. `variant` picks the kernel's shape (kernels.cu): K
 * steps of 32 with one shared stage or two, or of 64 with two. */
enum { ZT_CU_CONV_BK32_1, ZT_CU_CONV_BK32_2, ZT_CU_CONV_BK64_2 };
void zt_cu_conv_fused(cudaStream_t s, int variant, const float *x, const void *w,
                      const float *bias, const float *resid, int act, float *y, int B, int H,
                      int W, int C, int O, int k);
/* out[c] += sum over rows of x[r][c]. */
void zt_cu_colsum_add(cudaStream_t s, const float *x, size_t rows, int C, float *out);

/* Batch norm. sums[2C] (zeroed here) gets per channel sum and sum of
 * squares in double; finalize turns them (training) or the running
 * statistics (inference) into mean, invstd, scale = gamma*invstd and
 * shift = beta - mean*scale, and with `update` moves the running ones by
 * the momentum (unbiased variance, as PyTorch). */
void zt_cu_bn_stats(cudaStream_t s, const float *x, size_t rows, int C, double *sums);
void zt_cu_bn_finalize(cudaStream_t s, const double *sums, size_t rows, int C, const float *gamma,
                       const float *beta, float *rmean, float *rvar, bool training, bool update,
                       float *mean, float *invstd, float *scale, float *shift);
/* y[r][c] = x[r][c] * scale[c] + shift[c]. */
void zt_cu_bn_apply(cudaStream_t s, const float *x, float *y, size_t rows, int C,
                    const float *scale, const float *shift);
/* sums[2C] = per channel sum dy and sum dy*xhat; ggamma += the latter,
 * gbeta += the former; dx (may be NULL) += the input gradient. */
void zt_cu_bn_backward(cudaStream_t s, const float *dy, const float *x, float *dx, size_t rows,
                       int C, const float *mean, const float *invstd, const float *gamma,
                       double *sums, float *ggamma, float *gbeta);

/* Layer norm over each of B rows of N features; mean and invstd per row. */
void zt_cu_ln_forward(cudaStream_t s, const float *x, float *y, int B, int N, const float *gamma,
                      const float *beta, float *mean, float *invstd);
void zt_cu_ln_backward(cudaStream_t s, const float *dy, const float *x, float *dx, int B, int N,
                       const float *gamma, const float *mean, const float *invstd, float *ggamma,
                       float *gbeta);

/* Elementwise, n values. */
void zt_cu_relu(cudaStream_t s, const float *x, float *y, size_t n);
void zt_cu_tanh(cudaStream_t s, const float *x, float *y, size_t n);
void zt_cu_add(cudaStream_t s, const float *a, const float *b, float *y, size_t n);
/* dx += y > 0 ? dy : 0 */
void zt_cu_relu_backward(cudaStream_t s, const float *y, const float *dy, float *dx, size_t n);
/* dx += dy * (1 - y*y) */
void zt_cu_tanh_backward(cudaStream_t s, const float *y, const float *dy, float *dx, size_t n);
/* dst += src */
void zt_cu_add_into(cudaStream_t s, float *dst, const float *src, size_t n);

/* The optimizer on the device (nn/train.c's loops, every float operation
 * rounded as the host's, no fused multiply-adds). */
/* *out += sum of x[i]^2 over the i where mask[i] (all when mask is NULL). */
void zt_cu_sumsq(cudaStream_t s, const float *x, const unsigned char *mask, size_t n, double *out);
/* SGD with Nesterov momentum on the gradient g scaled by k, L2 wd on the
 * weights decay marks; g is zeroed. */
void zt_cu_sgd_nesterov(cudaStream_t s, float *w, float *g, float *m, const unsigned char *decay,
                        size_t n, float lr, float mu, float wd, float k);
/* AdamW on the gradient g scaled by k: w *= shrink where decay, then the
 * bias-corrected step (step_size = lr / (1 - b1^t), inv_bc2 = 1 / (1 - b2^t)); g is zeroed. */
void zt_cu_adamw(cudaStream_t s, float *w, float *g, float *m, float *v,
                 const unsigned char *decay, size_t n, float step_size, float b1, float b2,
                 float inv_bc2, float eps, float shrink, float k);

#ifdef __cplusplus
}
#endif

#endif
