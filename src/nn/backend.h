/* Inside the nn layer: the graph a net is built from, and the backend
 * interface every backend implements (a vtable behind an opaque plan, in the
 * manner of ggml-backend). Callers outside src/nn use nn.h only.
 *
 * A graph is a list of ops over tensors of per-sample shape H x W x C (NHWC;
 * the batch size is given per call). Parameters and batch-norm running
 * statistics are fp32 arrays on the host owned by the net; a backend reads
 * them (or its own copies, refreshed by params_changed) and writes parameter
 * gradients into a host array. The graph builders below are the blocks nets
 * are made of: MuZero's representation, dynamics and prediction functions are
 * separate graphs composed of the same blocks, joined by a hidden state. */
#ifndef ZT_NN_BACKEND_H
#define ZT_NN_BACKEND_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"
#include "nn/nn.h"

typedef enum zt_nn_op_kind {
    ZT_OP_CONV,  /* k x k, stride 1, same (zero) padding; optional bias */
    ZT_OP_BN,    /* per channel over batch, H and W; eps 1e-5, momentum 0.1 */
    ZT_OP_LN,    /* per sample over H*W*C; eps 1e-5 */
    ZT_OP_RELU,
    ZT_OP_TANH,
    ZT_OP_ADD,   /* out = in0 + in1 (the residual skip) */
    ZT_OP_DENSE, /* flattens its HWC input; out is 1 x 1 x units; optional bias */
} zt_nn_op_kind;

#define ZT_NN_BN_EPS 1e-5
#define ZT_NN_BN_MOMENTUM 0.1
#define ZT_NN_LN_EPS 1e-5

typedef struct zt_nn_shape {
    int h, w, c;
} zt_nn_shape;

static inline size_t zt_nn_shape_size(zt_nn_shape s)
{
    return (size_t)s.h * (size_t)s.w * (size_t)s.c;
}

/* One op: tensor ids in/out, tensor-table ids of its parameters (-1 if
 * none). conv/dense: p[0] weight, p[1] bias. bn/ln: p[0] gamma, p[1] beta;
 * bn: p[2] running mean, p[3] running variance (state, not trainable). */
typedef struct zt_nn_op {
    zt_nn_op_kind kind;
    int in[2];
    int out;
    int p[4];
    int k; /* conv kernel size */
} zt_nn_op;

/* A named tensor of the net's storage: trainable ones live in `params`,
 * state (running statistics) in `state`, each at `offset` floats. */
typedef struct zt_nn_param {
    char name[64];
    int ndim;
    int shape[4];
    size_t count;
    size_t offset;
    bool trainable;
    bool decay;
    /* He-normal initialisation: std sqrt(2 / fan_in); fan_in 0 means a
     * constant `init_value` instead. */
    int fan_in;
    float init_value;
} zt_nn_param;

typedef struct zt_nn_graph {
    zt_nn_shape *tensors;
    int ntensors;
    zt_nn_op *ops;
    int nops;
    zt_nn_param *params;
    int nparams;
    size_t param_floats; /* trainable */
    size_t state_floats; /* running statistics */
    int input;           /* tensor id of the observation */
    int outputs[4];
    int noutputs;
} zt_nn_graph;

/* ---- graph building (the blocks) ---- */

void zt_nn_graph_init(zt_nn_graph *g);
void zt_nn_graph_free(zt_nn_graph *g);
int zt_nn_graph_input(zt_nn_graph *g, zt_nn_shape s);
void zt_nn_graph_output(zt_nn_graph *g, int t);
int zt_nn_graph_conv(zt_nn_graph *g, const char *name, int x, int out_c, int k, bool bias);
int zt_nn_graph_bn(zt_nn_graph *g, const char *name, int x);
int zt_nn_graph_ln(zt_nn_graph *g, const char *name, int x);
int zt_nn_graph_dense(zt_nn_graph *g, const char *name, int x, int units, bool bias);
int zt_nn_graph_relu(zt_nn_graph *g, int x);
int zt_nn_graph_tanh(zt_nn_graph *g, int x);
int zt_nn_graph_add(zt_nn_graph *g, int a, int b);

/* AlphaZero blocks (Silver et al. 2017, "Methods"). */
int zt_nn_block_conv_bn_relu(zt_nn_graph *g, const char *name, int x, int out_c, int k);
int zt_nn_block_residual(zt_nn_graph *g, const char *name, int x);
int zt_nn_block_policy_head(zt_nn_graph *g, const char *name, int x, int channels, int actions);
int zt_nn_block_value_head(zt_nn_graph *g, const char *name, int x, int channels, int hidden,
                           zt_value_kind kind);
/* Dense-norm-ReLU. */
int zt_nn_block_dense_norm_relu(zt_nn_graph *g, const char *name, int x, int units,
                                zt_norm_kind norm);

/* The graph of a whole net from its config: outputs[0] policy logits,
 * outputs[1] value. */
void zt_nn_graph_build(zt_nn_graph *g, const zt_net_config *cfg);

/* An inference graph with every batch norm that directly follows a conv or
 * dense (whose output feeds nothing else) folded into its weights and bias:
 * w' = w * s, b' = (b - mean) * s + beta with s = gamma / sqrt(var + eps).
 * Fills `out` (free with zt_nn_graph_free) and malloc's *out_params and
 * *out_state (the caller frees). */
void zt_nn_graph_fold_bn(const zt_nn_graph *g, const float *params, const float *state,
                         zt_nn_graph *out, float **out_params, float **out_state);

/* ---- the backend interface ---- */

typedef struct zt_nn_plan zt_nn_plan; /* a backend's compiled graph */

/* One optimizer update as the trainer computes it (nn/train.c), its
 * settings in double as the trainer holds them (the device rounds them to
 * float exactly where the host loop does). */
typedef struct zt_nn_opt {
    bool adamw;          /* else SGD with Nesterov momentum */
    double lr;           /* this step's */
    double momentum;     /* SGD */
    double weight_decay; /* SGD: L2 added to the gradient; AdamW: decoupled */
    double beta1, beta2, eps;
    long t;              /* the step's number from 1 (AdamW's bias correction) */
} zt_nn_opt;

typedef struct zt_nn_backend {
    const char *name;
    /* Whether this build and machine run `p` (never called with AUTO). */
    bool (*supports)(zt_precision p);
    /* The precision AUTO means here. */
    zt_precision (*auto_precision)(void);
    /* Compiles `g` (which outlives the plan) over the net's host arrays. */
    zt_status (*plan_new)(const zt_nn_graph *g, float *params, float *state, zt_precision prec,
                          int threads, zt_nn_plan **out);
    void (*plan_free)(zt_nn_plan *p);
    /* Sizes memory for batches up to `max_batch`, with what backward needs
     * when `training`. */
    zt_status (*reserve)(zt_nn_plan *p, int max_batch, bool training);
    /* Optional (NULL if the backend reads the host arrays directly). */
    void (*params_changed)(zt_nn_plan *p);
    /* outs[i]: B x size of graph output i. Training mode uses batch
     * statistics and, when update_stats, updates the running ones. */
    zt_status (*forward)(zt_nn_plan *p, int B, const float *in, float *const *outs, bool training,
                         bool update_stats);
    /* Optional, both or neither: an inference forward in two halves, for a
     * caller that works while the device computes (the evaluator service
     * with two batches in flight). forward_submit queues the call on B
     * inputs in `slot` (0 or 1: its own staging buffers) and returns;
     * forward_wait(slot) blocks until that call is done and writes its
     * outputs as forward does. Each submitted slot is waited for once, in
     * the order of submission, before it is submitted again; nothing else
     * runs on the plan meanwhile. `in` stays valid until the wait. */
    zt_status (*forward_submit)(zt_nn_plan *p, int slot, int B, const float *in);
    zt_status (*forward_wait)(zt_nn_plan *p, int slot, float *const *outs);
    /* After a training forward of the same batch: d_outs[i] are the loss
     * gradients of the outputs; parameter gradients are ADDED to grads
     * (param_floats); d_in (B x input size) is written when not NULL. */
    zt_status (*backward)(zt_nn_plan *p, int B, const float *const *d_outs, float *grads,
                          float *d_in);
    /* Optional, for precisions that need activation ranges (int8; NULL or
     * a size of 0 otherwise): floats of the ranges, a calibration from an
     * fp32 forward over B sample inputs, and copying them out (false when
     * there are none) or in. Changed parameters drop the ranges. */
    size_t (*ranges_size)(zt_nn_plan *p);
    zt_status (*calibrate)(zt_nn_plan *p, int B, const float *in);
    bool (*ranges_get)(zt_nn_plan *p, float *ranges);
    zt_status (*ranges_set)(zt_nn_plan *p, const float *ranges);

    /* Optional, all or none: the optimizer on the device (a GPU backend;
     * the trainer's host loops otherwise). After opt_attach (moments zeroed,
     * decay: param_floats flags, where weight decay applies):
     * - backward with grads == NULL adds the parameter gradient to the
     *   plan's own accumulator instead of the caller's array (which is
     *   empty after opt_attach, after every backward with grads, and after
     *   opt_step);
     * - opt_norms gives the accumulator's sum of squares and that of the
     *   weights decay marks (the L2 term), before the update;
     * - opt_step applies one update (zt_nn_opt) to the gradient scaled by
     *   `clip` (the accumulator's, or `grads` uploaded first when not NULL:
     *   a gradient reduced elsewhere) and empties the accumulator. The
     *   host parameters are stale from then on until params_pull;
     * - opt_moments copies the moments (param_floats each; v only for
     *   AdamW, else NULL) out of the plan, or into it with `upload`;
     * - params_pull brings the device's parameters home when they are
     *   newer (a no-op otherwise). zt_net_params and zt_net_tensor_at call
     *   it, so the net's readers see the trained weights; params_changed
     *   makes the host arrays the truth again. */
    zt_status (*opt_attach)(zt_nn_plan *p, bool adamw, const bool *decay);
    zt_status (*opt_norms)(zt_nn_plan *p, double *grad_sq, double *decay_sq);
    zt_status (*opt_step)(zt_nn_plan *p, const zt_nn_opt *o, float clip, const float *grads);
    zt_status (*opt_moments)(zt_nn_plan *p, float *m, float *v, bool upload);
    zt_status (*params_pull)(zt_nn_plan *p);
} zt_nn_backend;

/* The reference backend: plain loops, double accumulation; ground truth. */
extern const zt_nn_backend zt_nn_backend_ref;

/* Looks a backend up by name ("auto": the fastest built in). */
zt_status zt_nn_backend_find(const char *name, const zt_nn_backend **out);

/* Inside nn: the net's graph, host arrays and plan, for the trainer and the
 * file code. */
const zt_nn_graph *zt_net_graph(const zt_net *net);
float *zt_net_params(zt_net *net);
float *zt_net_state(zt_net *net);
zt_nn_plan *zt_net_plan(zt_net *net);
const zt_nn_backend *zt_net_backend(const zt_net *net);

#endif
