/* Training batch norm over bf16 NHWC activations with AVX-512, for the
 * oneDNN backend's training program: the forward pass with batch statistics
 * and an optional fused ReLU, and its backward pass, on up to `threads`
 * OpenMP threads with results that do not depend on the thread count. The
 * caller owns every buffer; nothing here allocates. */
#ifndef ZT_NN_CPU_BNORM_H
#define ZT_NN_CPU_BNORM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether a batch norm over `channels` channels fits these kernels
 * (multiples of 16, at most ZT_BNORM_MAX_CHANNELS; the CPU must have
 * AVX-512 F/BW, as zt_winograd_supported checks). */
enum { ZT_BNORM_MAX_CHANNELS = 1024 };
bool zt_bnorm_fits(int channels);

/* Over `rows` rows of `channels` values x (bf16): mean and biased variance
 * per channel, then y = gamma (x - mean) / sqrt(var + eps) + beta, through
 * ReLU with `relu`, stored as bf16. */
void zt_bnorm_forward(const uint16_t *x, uint16_t *y, size_t rows, int channels, const float *gamma,
                      const float *beta, double eps, bool relu, float *mean, float *var,
                      int threads);

/* The backward pass of zt_bnorm_forward: with relu_out (its output when the
 * ReLU was fused, else NULL) dy is first zeroed where that output is not
 * positive. dgamma += sum dy xhat, dbeta += sum dy, and
 * dx (= or +=, with accumulate) = gamma / sigma (dy - dbeta / R - xhat dgamma / R). */
void zt_bnorm_backward(const uint16_t *x, const uint16_t *relu_out, const uint16_t *dy,
                       uint16_t *dx, bool accumulate, size_t rows, int channels, const float *gamma,
                       const float *mean, const float *var, double eps, float *dgamma,
                       float *dbeta, int threads);

#endif
