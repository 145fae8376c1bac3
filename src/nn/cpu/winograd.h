/* A bf16 Winograd F(2x2, 3x3) convolution for NHWC activations (Lavin & Gray,
 * "Fast Algorithms for Convolutional Neural Networks", CVPR 2016): stride 1,
 * zero padding 1, channels in multiples of 16, with the inference epilogue of
 * the oneDNN backend (bias, residual add, ReLU) fused into the output
 * transform, and the weight gradient for training. The caller owns every
 * buffer; nothing here allocates.
 *
 * The transformed products run one of two ways (`fma` in the structs below,
 * the same in the packed weights and the scratch sizes): on AVX512-BF16's
 * bf16 dot product, with the transformed tiles in bf16, or on fp32 FMAs,
 * with them in fp32. Which is faster depends on the core:
 * zt_winograd_fma_faster measures it. */
#ifndef ZT_NN_CPU_WINOGRAD_H
#define ZT_NN_CPU_WINOGRAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct zt_winograd_conv {
    int batch, h, w, cin, cout;
    const uint16_t *src; /* [batch][h][w][cin] bf16 */
    const void *u;       /* transformed weights from zt_winograd_pack_weights */
    const float *bias;   /* [cout], or NULL */
    const uint16_t *sum; /* [batch][h][w][cout] bf16 added before the ReLU, or
                          * NULL; may be dst itself (an in-place residual) */
    uint16_t *dst;       /* [batch][h][w][cout] bf16; never src */
    bool relu;
    bool fma;      /* products on fp32 FMAs (u packed so) */
    int threads;   /* OpenMP threads to use */
    void *scratch; /* zt_winograd_scratch_size bytes, 64-byte aligned */
} zt_winograd_conv;

/* Whether this CPU runs the kernel (AVX-512 F/BW/VL and AVX512_BF16). */
bool zt_winograd_supported(void);

/* Whether the products run faster on fp32 FMAs than on bf16 dot products
 * on this core: measured once per process (about a millisecond); false
 * where the kernel is not supported. */
bool zt_winograd_fma_faster(void);

/* Whether a k x k convolution from cin to cout channels fits the kernel. */
bool zt_winograd_fits(int k, int cin, int cout);

/* Bytes of the transformed weights of a cin -> cout conv. */
size_t zt_winograd_weights_bytes(int cin, int cout, bool fma);

/* U = G g G^T of the OHWI fp32 weights w of a cin -> cout conv, in the
 * kernel's layout (bf16, or fp32 with `fma`); with `mirror`, of the conv
 * from cout to cin channels with w mirrored in space (the input gradient of
 * the first one). u is zt_winograd_weights_bytes long, 64-byte aligned. */
void zt_winograd_pack_weights(const float *w, int cin, int cout, bool mirror, bool fma, void *u);

/* Scratch bytes zt_winograd_run needs with up to `threads` threads. */
size_t zt_winograd_scratch_size(int cin, int cout, int threads, bool fma);

/* dst = act(conv(src, w) + bias + sum), act ReLU or identity. */
void zt_winograd_run(const zt_winograd_conv *c);

/* The weight gradient of a bias-free cin -> cout conv (stride 1, padding
 * 1) in the Winograd domain. */
typedef struct zt_winograd_grad {
    int batch, h, w, cin, cout;
    const uint16_t *src; /* [batch][h][w][cin] bf16: the conv's input */
    const uint16_t *dy;  /* [batch][h][w][cout] bf16: its output's gradient */
    float *grad;         /* [cout][3][3][cin] fp32 (OHWI), added to */
    bool fma;            /* products on fp32 FMAs */
    int threads;         /* OpenMP threads to use */
    void *scratch;       /* zt_winograd_grad_scratch_size bytes, 64-byte aligned */
} zt_winograd_grad;

/* Scratch bytes zt_winograd_grad_weights needs with up to `threads` threads. */
size_t zt_winograd_grad_scratch_size(int cin, int cout, int threads, bool fma);

/* grad += dL/dw given src and dy. */
void zt_winograd_grad_weights(const zt_winograd_grad *c);

#endif
