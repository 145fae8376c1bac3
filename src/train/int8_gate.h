/* int8 actors (docs/networks.md, "int8 inference"): at each publication the
 * learner quantises the new weights for the actors, in its own time. An
 * int8 copy of the net is calibrated on recent replay positions, then held
 * against the actors' fallback precision (bf16 where the CPU has it, else
 * fp32) on a fixed set of positions from random play: top-1 policy
 * agreement over the legal moves, and the mean absolute value error. A
 * version that passes goes out with its activation ranges; one that fails
 * goes out marked for the fallback precision, and the learner's metrics say
 * so.
 *
 * The weights the actors poll are the tensors followed by a tail of
 * zt_int8_gate_tail_size floats, which zt_net_take_int8_tail (nn.h) applies
 * on the actors' side. The caller owns what zt_int8_gate_new returns (zt_int8_gate_free);
 * it borrows the game. */
#ifndef ZT_TRAIN_INT8_GATE_H
#define ZT_TRAIN_INT8_GATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "game/game.h"
#include "nn/nn.h"

typedef struct zt_int8_gate_config {
    int calibration;  /* replay positions the ranges come from (at most) */
    int positions;    /* the fixed gate positions */
    double agreement; /* least top-1 agreement to pass, in [0, 1] */
    double value_mae; /* largest mean absolute value error to pass */
    /* Positions where the fallback net's two best legal moves are within
     * this much probability are ties: either move agrees (an untrained or
     * small net's near-uniform policy would otherwise fail on coin flips). */
    double tie;
    /* Publications per gate run (the learner's, train/learner.c): the
     * versions between two runs go out with the last run's ranges and
     * verdict, so the gate costs the learner 1 / every of its time. 0 in
     * the config: ZT_INT8_GATE_EVERY_AUTO, or 1 in deterministic mode
     * (train/settings.c). */
    int every;
    /* precision = auto: the actors run int8 where their net measures at
     * least this many times the fallback precision's speed in int8
     * (zt_int8_speedup, at the run's start); 0: wherever int8 runs. */
    double auto_speedup;
} zt_int8_gate_config;

enum { ZT_INT8_GATE_EVERY_AUTO = 5 };

/* 128 calibration positions, 256 gate positions, 0.99, 0.02, tie 0.02,
 * every publication gated, auto_speedup 2. */
void zt_int8_gate_config_default(zt_int8_gate_config *c);

/* How many times faster a net of cfg on `backend` runs a forward of batch B
 * on one thread in int8 than in the gate's fallback precision: both with
 * the same He-normal weights, the int8 one calibrated on random play, timed
 * in turn three times for about `seconds` each, best against best.
 * ZT_ERR_UNSUPPORTED where the backend has no int8 here. */
zt_status zt_int8_speedup(const zt_game *g, const zt_net_config *cfg, const char *backend, int B,
                          double seconds, double *ratio);

typedef struct zt_int8_gate_result {
    bool passed;
    double agreement; /* top-1 agreement over the gate positions */
    double value_mae; /* mean |int8 value - fallback value| (WDL: win - loss) */
    int positions;
    int ties;         /* positions counted as agreeing for a tie */
    double seconds;   /* calibration and gate, in the learner's time */
} zt_int8_gate_result;

typedef struct zt_int8_gate zt_int8_gate;

/* Fails (ZT_ERR_UNSUPPORTED) where `backend` has no int8 here. The gate
 * positions come from random play drawn from `seed`. */
zt_status zt_int8_gate_new(const zt_game *g, const zt_net_config *cfg, const char *backend,
                           int threads, const zt_int8_gate_config *gc, uint64_t seed,
                           zt_int8_gate **out);
void zt_int8_gate_free(zt_int8_gate *q);

/* Floats of the tail after the tensors (1 + the int8 net's ranges). */
size_t zt_int8_gate_tail_size(const zt_int8_gate *q);
/* The tail's floats for int8 actors on a net of cfg on `backend`. */
zt_status zt_int8_gate_tail_for(const zt_net_config *cfg, const char *backend, size_t *out);

/* The precision a failed version falls back to. */
zt_precision zt_int8_gate_fallback(const zt_int8_gate *q);

/* Quantises `weights` (every tensor in zt_net_tensor_at order, as
 * published), calibrating on B >= 1 observations `obs` (NULL or B = 0: the
 * gate positions), runs the gate and writes the tail. */
zt_status zt_int8_gate_run(zt_int8_gate *q, const float *weights, int B, const float *obs,
                           float *tail, zt_int8_gate_result *out);

/* Quantises and calibrates as zt_int8_gate_run does, then holds the int8
 * net against the fallback on n >= 1 positions of the caller's (pos_obs,
 * and pos_legal's n * num_actions flags) instead of the gate's, in chunks
 * of the gate's size; writes no tail. How `zeroth bench int8` measures a
 * trained net on a position set. */
zt_status zt_int8_gate_measure(zt_int8_gate *q, const float *weights, int B, const float *obs,
                               int n, const float *pos_obs, const uint8_t *pos_legal,
                               zt_int8_gate_result *out);

#endif
