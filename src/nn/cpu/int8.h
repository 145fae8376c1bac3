/* int8 inference for the CPU backend (AVX512-VNNI): conv and dense layers
 * as u8 x s8 products with int32 sums (vpdpbusd over groups of 4 input
 * channels), per-output-channel symmetric weight scales, per-tensor
 * activation scales from a calibration pass, and the folded batch norm,
 * bias, residual add and ReLU fused into the requantisation. Ops that are
 * not products (layer norm, tanh) run in fp32 between them.
 *
 * The plan borrows the graph and the host arrays (they outlive it); it owns
 * its quantised weights and buffers (zt_int8_plan_free). */
#ifndef ZT_NN_CPU_INT8_H
#define ZT_NN_CPU_INT8_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"
#include "nn/backend.h"

typedef struct zt_int8_plan zt_int8_plan;

/* Whether this CPU runs the kernels (AVX-512 F/BW/VL/DQ and AVX512_VNNI). */
bool zt_int8_supported(void);

zt_status zt_int8_plan_new(const zt_nn_graph *g, const float *params, const float *state,
                           int threads, zt_int8_plan **out);
void zt_int8_plan_free(zt_int8_plan *p);

/* The host arrays changed: weights are quantised again before the next
 * forward, and the activation ranges, which belong to the old weights, are
 * dropped (forward refuses until zt_int8_calibrate or _set_ranges). */
void zt_int8_params_changed(zt_int8_plan *p);

/* Sizes buffers for batches up to max_batch (a forward of more grows them). */
zt_status zt_int8_reserve(zt_int8_plan *p, int max_batch);

/* Floats of the activation ranges: a (lo, hi) pair per quantised tensor. */
size_t zt_int8_ranges_size(const zt_int8_plan *p);
/* Records the ranges from an fp32 forward of the folded net over B sample
 * observations (at least 1). */
zt_status zt_int8_calibrate(zt_int8_plan *p, int B, const float *obs);
/* Copies the ranges out; false (nothing written) when not calibrated. */
bool zt_int8_ranges_get(const zt_int8_plan *p, float *ranges);
/* Takes ranges recorded elsewhere (the learner's calibration of the same
 * weights); refuses pairs that are not finite with lo <= 0 <= hi. */
zt_status zt_int8_ranges_set(zt_int8_plan *p, const float *ranges);

/* Inference; refuses (ZT_ERR_INVALID, one line) when not calibrated. */
zt_status zt_int8_forward(zt_int8_plan *p, int B, const float *in, float *const *outs);

#endif
