/* One core's peak rate of the instructions the CPU kernels multiply with,
 * measured by a loop of 12 independent chains of one 512-bit instruction
 * (enough to hide its latency): fp32 FMAs (32 FLOP each), bf16 dot products
 * (VDPBF16PS, 64 FLOP) or u8 x s8 dot products (VPDPBUSD, 128 integer
 * operations). `zeroth bench nn` quotes its %peak against them; the
 * Winograd kernel picks its products by them (nn/cpu/winograd.h). */
#ifndef ZT_NN_PEAK_H
#define ZT_NN_PEAK_H

#include "nn/nn.h"

/* GOP/s of one run of about `seconds` of the instruction that does
 * `prec`'s products (ZT_PRECISION_FP32: FMA, BF16: VDPBF16PS, INT8:
 * VPDPBUSD); 0 where the CPU lacks it. Other work on the core only ever
 * lowers a run's rate: take the best of several. */
double zt_peak_gops(zt_precision prec, double seconds);

#endif
