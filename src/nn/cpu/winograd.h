/* A bf16 Winograd F(2x2, 3x3) convolution for NHWC activations (Lavin & Gray,
 * "Fast Algorithms for Convolutional Neural Networks", CVPR 2016): stride 1,
 * zero padding 1, channels in multiples of 16, with the inference epilogue of
 * the oneDNN backend (bias, residual add, ReLU) fused into the output
 * transform, and the weight gradient for training. The caller owns every
 * buffer; nothing here allocates. */
#ifndef ZT_NN_CPU_WINOGRAD_H
#define ZT_NN_CPU_WINOGRAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct zt_winograd_conv {
    int batch, h, w, cin, cout;
    const uint16_t *src; /* [batch][h][w][cin] bf16 */
    const uint16_t *u;   /* transformed weights from zt_winograd_pack_weights */
    const float *bias;   /* [cout], or NULL */
    const uint16_t *sum; /* [batch][h][w][cout] bf16 added before the ReLU, or
                          * NULL; may be dst itself (an in-place residual) */
    uint16_t *dst;       /* [batch][h][w][cout] bf16; never src */
    bool relu;
    int threads;   /* OpenMP threads to use */
    void *scratch; /* zt_winograd_scratch_size bytes, 64-byte aligned */
} zt_winograd_conv;

/* Whether this CPU runs the kernel (AVX-512 F/BW/VL and AVX512_BF16). */
bool zt_winograd_supported(void);

/* Whether a k x k convolution from cin to cout channels fits the kernel. */
bool zt_winograd_fits(int k, int cin, int cout);

/* Elements (uint16_t) of the transformed weights of a cin -> cout conv. */
size_t zt_winograd_weights_count(int cin, int cout);

/* U = G g G^T of the OHWI fp32 weights w of a cin -> cout conv, as bf16 in
 * the kernel's layout; with `mirror`, of the conv from cout to cin channels
 * with w mirrored in space (the input gradient of the first one). */
void zt_winograd_pack_weights(const float *w, int cin, int cout, bool mirror, uint16_t *u);

/* Scratch bytes zt_winograd_run needs with up to `threads` threads. */
size_t zt_winograd_scratch_size(int cin, int cout, int threads);

/* dst = act(conv(src, w) + bias + sum), act ReLU or identity. */
void zt_winograd_run(const zt_winograd_conv *c);

/* The weight gradient of a bias-free cin -> cout conv (stride 1, padding
 * 1) in the Winograd domain. */
typedef struct zt_winograd_grad {
    int batch, h, w, cin, cout;
    const uint16_t *src; /* [batch][h][w][cin] bf16: the conv's input */
    const uint16_t *dy;  /* [batch][h][w][cout] bf16: its output's gradient */
    float *grad;         /* [cout][3][3][cin] fp32 (OHWI), added to */
    int threads;         /* OpenMP threads to use */
    void *scratch;       /* zt_winograd_grad_scratch_size bytes, 64-byte aligned */
} zt_winograd_grad;

/* Scratch bytes zt_winograd_grad_weights needs with up to `threads` threads. */
size_t zt_winograd_grad_scratch_size(int cin, int cout, int threads);

/* grad += dL/dw given src and dy. */
void zt_winograd_grad_weights(const zt_winograd_grad *c);

#endif
