/* Neural networks: the network description, inference, training and weight
 * files, on whichever backend a net lives on (DESIGN.md §3 "Evaluator").
 * The caller owns what zt_net_new / zt_trainer_new return and frees them with
 * zt_net_free / zt_trainer_free; a trainer borrows its net and must be freed
 * first. Observations are NHWC float32 (the game's HWC planes, batched). */
#ifndef ZT_NN_NN_H
#define ZT_NN_NN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/rng.h"
#include "core/status.h"

/* ---- network description ---- */

typedef enum zt_net_kind {
    ZT_NET_RESNET, /* AlphaZero residual tower over board planes */
    ZT_NET_MLP,    /* dense tower over a feature vector (backgammon) */
    ZT_NET_MUZERO, /* MuZero's representation, dynamics and prediction resnets (muzero.c) */
} zt_net_kind;

typedef enum zt_value_kind {
    ZT_VALUE_SCALAR, /* one value in [-1, 1] (tanh) */
    ZT_VALUE_WDL,    /* three logits: win, draw, loss for the player to move */
    ZT_VALUE_EQUITY, /* five logits of GNU Backgammon's outcome probabilities
                      * (ZT_EQ_*, below); games of 1/2/3-point results */
} zt_value_kind;

typedef enum zt_norm_kind {
    ZT_NORM_BATCH, /* batch norm: batch statistics in training, running ones at use */
    ZT_NORM_LAYER, /* layer norm over each sample's features */
} zt_norm_kind;

/* Every size a net needs; the architecture string in a weight file is this
 * struct written out (zt_net_config_format), so two nets with equal configs
 * have identically named and shaped tensors. */
typedef struct zt_net_config {
    zt_net_kind kind;
    int in_h, in_w, in_c;  /* the game's obs_shape (H, W, C) */
    int num_actions;       /* policy size */
    zt_value_kind value_kind;
    int value_hidden;      /* the value head's hidden dense width */
    /* resnet */
    int channels;          /* trunk width */
    int blocks;            /* residual blocks */
    int policy_channels;   /* the policy head's 1x1 conv width (AlphaZero: 2) */
    int value_channels;    /* the value head's 1x1 conv width (AlphaZero: 1) */
    /* muzero: `blocks` is the representation's tower; channels the hidden
     * state's planes; the reward head has the value head's shape */
    int dyn_blocks;        /* residual blocks of the dynamics function */
    int pred_blocks;       /* residual blocks of the prediction function */
    int chance_codes;      /* Stochastic MuZero's codebook size C (0: plain MuZero) */
    int value_support;     /* muzero: N > 0 makes the value, reward (and Q) heads
                            * categorical over 2N + 1 atoms on [-1, 1]; 0: tanh */
    int action_columns;    /* muzero: 1: g reads an action as the board column it names
                            * (one plane, ones down column a; as many actions as the
                            * board has columns: Connect Four); 0: zt_net_action_planes */
    int turn_head;         /* muzero: 1 gives g a to-play head (games whose turns are
                            * several moves by one player: backgammon); 0: none */
    int head_norm;         /* muzero: 1: each head's 1x1 conv is followed by a layer
                            * norm over the sample's planes (the architecture string
                            * lacks " heads=plain"; muzero.heads); 0: conv with bias
                            * and ReLU, and on a one-cell board no conv (muzero.c) */
    /* mlp */
    int mlp_hidden;        /* width of each dense block */
    int mlp_layers;        /* number of dense-norm-ReLU blocks */
    zt_norm_kind mlp_norm;
    /* resnet and mlp: 1 when the net also learns the values of chance
     * states (net.chance_values: backgammon before the roll), so that a
     * search may value one with a single evaluation; 0: decision states
     * only. Text form: a trailing " chance". */
    int chance_values;
} zt_net_config;

/* Defaults for a game of shape (h, w, c) with `num_actions` actions: a resnet
 * of 64 channels x 5 blocks for planes (h*w > 1), else an MLP of 3 x 256. */
void zt_net_config_default(zt_net_config *cfg, int h, int w, int c, int num_actions);
/* Rejects impossible sizes, naming the field. */
zt_status zt_net_config_check(const zt_net_config *cfg);
/* One-line text form, e.g. "resnet in=6x7x2 actions=7 value=scalar:64 ch=64
 * blocks=5 pol=2 valc=1"; parse accepts exactly what format writes. */
void zt_net_config_format(const zt_net_config *cfg, char *buf, size_t cap);
zt_status zt_net_config_parse(const char *text, zt_net_config *cfg);

/* Outputs per sample of the value head: 1 (scalar), 3 (WDL logits) or 5
 * (equity logits). */
static inline int zt_net_value_size(const zt_net_config *cfg)
{
    return cfg->value_kind == ZT_VALUE_WDL ? 3 : cfg->value_kind == ZT_VALUE_EQUITY ? 5 : 1;
}

/* ---- MuZero nets (kind ZT_NET_MUZERO; Schrittwieser et al. 2020) ----
 *
 * Three functions over one parameter array: representation h(observation)
 * -> hidden state, dynamics g(hidden state, action) -> (next hidden state,
 * reward), prediction f(hidden state) -> (policy logits, value). Hidden
 * states are H x W x channels (the observation's board), min-max scaled to
 * [0, 1] per sample. The action enters g as extra input planes: one plane
 * that is 1 at the action's cell when the actions are the board's cells
 * (num_actions == H * W, row-major), else one constant plane per action (1
 * on the action's plane). zt_net_forward on such a net is f(h(obs)).
 *
 * Stochastic MuZero (Antonoglou et al. 2022; chance_codes = C > 0) adds
 * afterstates: afterstate dynamics phi(hidden state, action) -> afterstate
 * (min-max scaled like a hidden state), afterstate prediction
 * psi(afterstate) -> (logits of the chance-code distribution sigma over C
 * codes, Q), and g becomes g(afterstate, code) -> (next hidden state,
 * reward), the code entering as C constant planes (one-hot). An encoder
 * e(observation before, observation after) -> C logits gives, in training,
 * the code of what chance did (the one-hot of its argmax, with a
 * straight-through gradient and a commitment loss).
 *
 * The to-play head (turn_head = 1) is a third output of g: one logit of
 * the probability that the next state's player is not the player of the
 * state g stepped from (the turn passed), trained by binary cross-entropy
 * on the players the game recorded. Games whose players alternate move by
 * move do not need it; backgammon, whose turn is several checker moves by
 * one player and then the dice, does. On a board of one cell (an MLP's
 * flat input, H = W = 1) every convolution is 1x1, so the towers are
 * dense layers with layer norm. */

/* Floats of one hidden state. */
static inline size_t zt_net_hidden_size(const zt_net_config *cfg)
{
    return (size_t)cfg->in_h * cfg->in_w * cfg->channels;
}

/* Outputs per sample of a MuZero net's value, reward and Q heads: 1 (tanh)
 * or the 2N + 1 logits of a categorical head, whose atoms are i / N for
 * i = -N..N; the net's calls (zt_net_initial, ...) give the expectation. */
#define ZT_MZ_MAX_SUPPORT 1000
static inline int zt_mz_value_outputs(const zt_net_config *cfg)
{
    return cfg->value_support > 0 ? 2 * cfg->value_support + 1 : 1;
}

/* Action planes g reads beside the hidden state: one, where an action is a
 * cell (one-hot there) or with action_columns a column (ones down it);
 * else num_actions, a constant one-hot plane each. */
static inline int zt_net_action_planes(const zt_net_config *cfg)
{
    return cfg->action_columns || cfg->num_actions == cfg->in_h * cfg->in_w ? 1
                                                                            : cfg->num_actions;
}

/* ---- the equity head (backgammon) ----
 *
 * GNU Backgammon's evaluation: five probabilities for the player to move,
 * each a sigmoid output trained by binary cross-entropy: P(win), P(win a
 * gammon or more), P(win a backgammon), P(lose a gammon or more), P(lose a
 * backgammon). The gammon probabilities include backgammons. A game's
 * result is 1 (single), 2 (gammon) or 3 (backgammon) points. */
enum {
    ZT_EQ_WIN,
    ZT_EQ_WIN_GAMMON,
    ZT_EQ_WIN_BACKGAMMON,
    ZT_EQ_LOSE_GAMMON,
    ZT_EQ_LOSE_BACKGAMMON,
    ZT_EQ_OUTPUTS
};

/* The points of the largest result (a backgammon): equity / ZT_EQ_MAX_POINTS
 * is the value search sees, in [-1, 1]. */
#define ZT_EQ_MAX_POINTS 3.0f

/* The five probabilities from the head's logits: sigmoids, made consistent
 * as gnubg does before using them (a gammon cannot be likelier than the
 * win or loss it is part of, nor a backgammon than its gammon):
 * wg <= w, wbg <= wg, lg <= 1 - w, lbg <= lg, each capped at its bound. */
void zt_equity_probs(const float *logits, float *p);

/* Cubeless equity in points per game, in [-3, 3]: P(win) - P(lose) + P(wg)
 * - P(lg) + P(wbg) - P(lbg) with P(lose) = 1 - P(win). */
float zt_equity_points(const float *p);

/* The head's targets for a final result of `points` for the player to move
 * (+-1, 2, 3; 0, a game without a winner, counts half a win): win = points
 * > 0, win gammon = points >= 2, and so on. */
void zt_equity_targets(float points, float *t);

/* Raw value-head outputs of B samples (zt_net_value_size each) -> the value
 * search uses, in [-1, 1]: the scalar as it is, WDL P(win) - P(loss),
 * equity points / ZT_EQ_MAX_POINTS. value may be raw (scalar). */
void zt_net_head_to_value(zt_value_kind kind, int B, const float *raw, float *value);

/* ---- precision (bf16: 8 exponent bits, 7 mantissa bits) ---- */

typedef enum zt_precision {
    ZT_PRECISION_AUTO, /* the backend's fastest supported on this machine */
    ZT_PRECISION_FP32,
    ZT_PRECISION_BF16, /* bf16 storage and products, fp32 accumulation */
    /* u8 activations x s8 weights, int32 sums (inference only, AVX512_VNNI):
     * needs activation ranges, from zt_net_calibrate or zt_net_ranges_set,
     * before each forward with new weights. Never what AUTO means for a net. */
    ZT_PRECISION_INT8,
} zt_precision;

zt_status zt_precision_parse(const char *name, zt_precision *out); /* auto|fp32|bf16|int8 */
const char *zt_precision_name(zt_precision p);

/* Round-to-nearest-even conversion; NaN stays NaN (quietened), infinities and
 * overflow to infinity follow IEEE rounding. */
static inline uint16_t zt_bf16_from_f32(float f)
{
    union {
        float f;
        uint32_t u;
    } v = {f};
    if ((v.u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((v.u >> 16) | 0x0040u);
    uint32_t round = 0x7fffu + ((v.u >> 16) & 1u);
    return (uint16_t)((v.u + round) >> 16);
}

static inline float zt_f32_from_bf16(uint16_t h)
{
    union {
        uint32_t u;
        float f;
    } v = {(uint32_t)h << 16};
    return v.f;
}

/* f rounded to the nearest bf16, as a float. */
static inline float zt_bf16_round(float f)
{
    return zt_f32_from_bf16(zt_bf16_from_f32(f));
}

/* The mask of an AVX-512 loop's lanes, 16 at a time, with n elements left:
 * the first min(n, 16) bits (none when n <= 0), as an __mmask16. */
static inline uint16_t zt_lanes16(ptrdiff_t n)
{
    return n >= 16 ? (uint16_t)0xffff : n <= 0 ? 0 : (uint16_t)((1u << n) - 1u);
}

/* ---- nets ---- */

typedef struct zt_net zt_net;

/* Builds the net described by `cfg` on backend `backend` ("ref", or "auto"
 * for the fastest one built in), with parameters zero until zt_net_init or
 * zt_net_load. `threads` bounds the threads one call may use (1 per actor in
 * self-play, all cores for training). */
zt_status zt_net_new(const zt_net_config *cfg, const char *backend, zt_precision precision,
                     int threads, zt_net **out);
void zt_net_free(zt_net *net);

const zt_net_config *zt_net_config_of(const zt_net *net);
const char *zt_net_backend_name(const zt_net *net);
/* The threads each of the net's calls may run on (zt_net_new's `threads`). */
int zt_net_threads(const zt_net *net);
zt_precision zt_net_precision(const zt_net *net);

/* He-normal weights (He et al. 2015, fan-in), zero biases, BN/LN gamma 1 and
 * beta 0, running mean 0 and variance 1. */
void zt_net_init(zt_net *net, zt_rng *rng);

/* Sizes working memory for batches up to `max_batch` now, and builds what
 * inference at each of those batch sizes needs (the cpu backend's kernels),
 * so that later calls of at most that size allocate nothing and generate no
 * code. Calls with a larger batch grow it. */
zt_status zt_net_reserve(zt_net *net, int max_batch);

/* Rebuilds the net's backend plan for another precision (AUTO: the
 * backend's), keeping its weights and the batch reserved; the old plan stays
 * when this fails. Not on a net a trainer holds. An int8 net starts without
 * activation ranges. */
zt_status zt_net_set_precision(zt_net *net, zt_precision precision);

/* Inference on B observations (NHWC): policy_logits[B * num_actions] (raw:
 * illegal actions are masked by the caller), value[B * zt_net_value_size]
 * (tanh'ed scalar or WDL logits). Batch norm uses its running statistics. */
zt_status zt_net_forward(zt_net *net, int B, const float *obs, float *policy_logits,
                         float *value);

/* zt_net_forward in two halves (nn/backend.h's forward_submit/wait): submit
 * queues the call on B observations in `slot` (0 or 1) and returns; wait
 * blocks until it is done and writes its outputs. Each submitted slot is
 * waited for once, in submission order, before it is submitted again, and
 * nothing else may use the net meanwhile; obs stays as it is until the
 * wait. Where the backend runs calls on the calling thread (the CPU
 * backends, MuZero nets) submit only records the call and wait runs it:
 * zt_net_overlaps says whether a device computes while the caller goes on. */
zt_status zt_net_forward_submit(zt_net *net, int slot, int B, const float *obs);
zt_status zt_net_forward_wait(zt_net *net, int slot, float *policy_logits, float *value);
bool zt_net_overlaps(const zt_net *net);

/* ---- int8 activation ranges ---- *
 * An int8 net codes each tensor a conv or dense reads with a per-tensor scale
 * chosen from the range of its values over sample observations. The ranges
 * belong to the weights: loading or changing them drops the ranges, and
 * zt_net_forward refuses (one line) until new ones are set. For other
 * precisions these do nothing (size 0, calibrate succeeds). */

/* Records the ranges from an fp32 forward of the (batch-norm folded) net
 * over B >= 1 observations: each tensor's minimum and maximum, widened to
 * hold 0. */
zt_status zt_net_calibrate(zt_net *net, int B, const float *obs);
/* Floats of the ranges (0 unless int8). */
size_t zt_net_ranges_size(const zt_net *net);
/* Copies them into ranges[zt_net_ranges_size]; false when there are none. */
bool zt_net_ranges_get(const zt_net *net, float *ranges);
/* Sets ranges recorded by another net of the same config and weights (the
 * learner's, published with the weights). */
zt_status zt_net_ranges_set(zt_net *net, const float *ranges);

/* Published weights for int8 actors end in a tail (train/int8_gate.h):
 * [0] 1 when this version runs in int8 with the ranges in [1, n), 0 when it
 * failed the accuracy gate and runs in `fallback`. After the tensors were
 * copied into `net` (and zt_net_params_changed), switches it to the
 * precision the tail says (zt_net_set_precision) and sets the ranges;
 * *int8 (may be NULL) says which it runs now. */
zt_status zt_net_take_int8_tail(zt_net *net, const float *tail, size_t n, zt_precision fallback,
                                bool *int8);

/* ---- parameters (fp32 master copies on the host) ---- */

/* A named tensor of the net: trainable parameters (weights, biases, norm
 * gains) and non-trainable state (batch-norm running statistics). Weight
 * layouts: conv [out][kh][kw][in] (OHWI), dense [out][in] with `in` the
 * flattened HWC index of its input. */
typedef struct zt_net_tensor {
    const char *name; /* e.g. "blocks.0.bn1.running_mean" */
    int ndim;
    int shape[4];
    size_t count;
    float *data;   /* into the net's storage */
    bool trainable;
    bool decay;    /* weight decay applies (conv and dense weights only) */
} zt_net_tensor;

int zt_net_tensor_count(const zt_net *net);
zt_net_tensor zt_net_tensor_at(const zt_net *net, int i);
/* Total trainable floats. */
size_t zt_net_param_count(const zt_net *net);
/* Must be called after writing tensor data directly, so that backends holding
 * their own copies (bf16, device memory) refresh them. */
void zt_net_params_changed(zt_net *net);
/* The flat form of a net's weights, as a publication carries them: every
 * tensor (trainable and running statistics), in zt_net_tensor_at's order,
 * back to back. zt_net_flat_size counts its floats; zt_net_flat_get copies
 * the net into flat[zt_net_flat_size]; zt_net_flat_set copies flat into
 * the net and calls zt_net_params_changed. Each returns the float just past
 * the tensors (where a published int8 tail begins). */
size_t zt_net_flat_size(const zt_net *net);
float *zt_net_flat_get(const zt_net *net, float *flat);
const float *zt_net_flat_set(zt_net *net, const float *flat);
/* Moves the flat average avg[zt_net_flat_size] toward the net by w:
 * avg += w (net - avg), tensor by tensor (a step of an exponential moving
 * average of the weights and the running statistics). */
void zt_net_flat_average(const zt_net *net, float *avg, float w);

/* ---- weight files (safetensors; see safetensors.c for the layout) ---- */

/* Atomically writes the net's tensors with metadata: architecture, game name,
 * format version and a hash of the data. */
zt_status zt_net_save(const zt_net *net, const char *game, const char *path);
/* Loads weights into `net`; refuses (one line naming the problem) a truncated
 * or corrupt file, another architecture, or another game. */
zt_status zt_net_load(zt_net *net, const char *game, const char *path);
/* MuZero inference (batch norm on its running statistics). initial: B
 * observations -> hidden[B * zt_net_hidden_size], policy_logits[B * A],
 * value[B]. recurrent: B hidden states and actions (0 <= a < A) ->
 * next_hidden, reward[B], policy_logits, value (f of the next state), and
 * on a net with a to-play head turn[B], the probability that the turn
 * passed to the other player (turn may be NULL; without the head it is
 * left alone). hidden and next_hidden may not overlap. */
zt_status zt_net_initial(zt_net *net, int B, const float *obs, float *hidden, float *policy_logits,
                         float *value);
zt_status zt_net_recurrent(zt_net *net, int B, const float *hidden, const int *actions,
                           float *next_hidden, float *reward, float *policy_logits, float *value,
                           float *turn);
/* Stochastic MuZero (chance_codes = C > 0). afterstate: B hidden states and
 * actions -> afterstates (hidden size each), chance_logits[B * C] (sigma)
 * and q[B] (the afterstate's value for the player who acted). recurrent on
 * such a net steps B afterstates with chance codes (0 <= code < C) instead
 * of hidden states with actions. */
zt_status zt_net_afterstate(zt_net *net, int B, const float *hidden, const int *actions,
                            float *after, float *chance_logits, float *q);

/* Reads only the architecture and game of a weight file (game: cap bytes). */
zt_status zt_net_file_info(const char *path, zt_net_config *cfg, char *game, size_t cap);

/* ---- training ---- */

typedef enum zt_optimizer_kind {
    ZT_OPT_SGD,   /* SGD with Nesterov momentum; L2 added to the gradient */
    ZT_OPT_ADAMW, /* Adam with decoupled weight decay (Loshchilov & Hutter 2019) */
} zt_optimizer_kind;

typedef enum zt_schedule_kind {
    ZT_SCHED_CONSTANT,
    ZT_SCHED_STEP,   /* lr * gamma^(floor((t - warmup) / step_size)) */
    ZT_SCHED_COSINE, /* from lr to lr_min over total_steps - warmup (SGDR, no restarts) */
} zt_schedule_kind;

typedef struct zt_train_config {
    zt_optimizer_kind optimizer;
    double lr;
    double momentum;       /* SGD */
    double beta1, beta2, eps; /* AdamW */
    double weight_decay;   /* SGD: L2 coefficient c of 0.5*c*|w|^2; AdamW: decoupled */
    zt_schedule_kind schedule;
    int warmup_steps;      /* linear warm-up from lr/warmup to lr, then the schedule */
    int total_steps;       /* cosine: its span in steps; 0: the progress the caller
                            * reports (zt_trainer_set_progress), 0 to 1 */
    int step_size;         /* step */
    double step_gamma;     /* step */
    double lr_min;         /* cosine floor */
    double value_weight;   /* weight of the value term in the total loss */
    int micro_batch;       /* a batch is split into micro-batches of at most this */
    double clip_norm;      /* global gradient-norm bound; 0 disables */
    /* MuZero (appendix G): the gradient entering the dynamics function from
     * the next step is scaled by this (0.5); 1 makes the loss's gradient
     * exact (the finite-difference tests). */
    double dynamics_grad_scale;
    double reward_weight;  /* MuZero: weight of the reward term */
    double chance_weight;  /* Stochastic MuZero: weight of the chance (sigma) term */
    double commitment_weight; /* Stochastic MuZero: beta of the commitment term */
    /* Stochastic MuZero: the share of g's gradient on the code that the
     * straight-through estimator passes to the encoder (1); 0 leaves the
     * loss's exact gradient (the one-hot code is piecewise constant), which
     * the finite-difference tests check. */
    double straight_through;
    /* Stochastic MuZero: weight of the codes' balance term (0: none) */
    double code_balance_weight;
    /* MuZero: weight of the consistency term (0: none; EfficientZero, Ye
     * et al. 2021); it needs the batch's next_obs and chance_mask */
    double consistency_weight;
    /* Keep the optimizer on the host even where the net's backend can run
     * it on its device (backend.h, opt_attach: the CUDA backend, AlphaZero
     * nets): what the GPU test compares the device's updates with. */
    bool host_optimizer;
} zt_train_config;

void zt_train_config_default(zt_train_config *cfg);

/* One batch of targets. policy_target[B * A] is a distribution over the legal
 * actions given by legal[B * A] (non-zero = legal; no target mass on an
 * illegal action). value_target: B scalars in [-1, 1], B * 3 WDL
 * probabilities, or B * 5 equity targets (zt_equity_targets). */
typedef struct zt_train_batch {
    int B;
    const float *obs;
    const float *policy_target;
    const uint8_t *legal;
    const float *value_target;
    /* MuZero nets (kind muzero): `unroll` = K >= 1 steps from each position.
     * policy_target is then B * (K + 1) * A (step k of sample n at row
     * n * (K + 1) + k; a distribution over all actions, `legal` unused and
     * may be NULL), policy_mask B * (K + 1) (0: no policy loss at that step,
     * past the end of the game), value_target B * (K + 1) scalars (the value
     * for the player to move at step k), actions B * K (the action taken
     * into step k + 1; any action past the end), reward_target B * K (the
     * reward of that transition). */
    int unroll;
    const int32_t *actions;
    const uint8_t *policy_mask;
    const float *reward_target;
    /* Stochastic MuZero nets (chance_codes > 0), and MuZero nets trained
     * with the consistency term: next_obs B * K * obs size, the observation
     * of step k + 1 (row n * K + k; the encoder reads it beside step k's:
     * obs for k = 0, next_obs row k - 1 after; the consistency term's
     * target is h of it), and chance_mask B * K (1 where step k + 1 is a
     * position of the game; 0 past its end: no code or consistency targets
     * there). */
    const float *next_obs;
    const uint8_t *chance_mask;
    /* Nets with a to-play head (turn_head): B * K targets, 1 where the
     * player to move at step k + 1 is not step k's (row n * K + k; past the
     * end of the game turns alternate, as the value targets assume). */
    const float *turn_target;
    /* Stochastic MuZero with the game's chance outcomes as codes
     * (muzero.chance = game): B * K codes in [0, C), row n * K + k, that
     * replace the encoder's (it is not run: no commitment, no
     * straight-through); NULL: the encoder's codes. */
    const int32_t *chance_code;
} zt_train_batch;

/* The loss terms of one step, each averaged over the batch. */
typedef struct zt_train_losses {
    double policy;   /* cross-entropy of the masked softmax against the target */
    double value;    /* MSE (scalar), cross-entropy (WDL), or the five binary
                      * cross-entropies summed (equity) */
    double l2;       /* 0.5 * weight_decay * sum of decayed weights squared */
    double total;    /* policy + value_weight * (value + afterstate) + reward_weight *
                      * reward + chance_weight * chance + commitment_weight *
                      * commitment + code_balance_weight * code_balance +
                      * consistency_weight * consistency + turn + l2 */
    double grad_norm; /* global norm of the loss gradient before clipping */
    double lr;       /* learning rate used for this step */
    /* MuZero: policy, value and reward sum the unroll's steps, steps k >= 1
     * weighted 1/K (MuZero appendix G); reward is the MSE of g's reward */
    double reward;
    /* Stochastic MuZero, each step k < K weighted 1/K: afterstate, the MSE
     * of psi's Q against step k's value target; chance, the cross-entropy of
     * sigma against the encoder's code; commitment, the squared distance of
     * the encoder's logits from their one-hot code */
    double afterstate, chance, commitment;
    /* Stochastic MuZero with the encoder's codes, each step k < K weighted
     * 1/K: Z sum_j f_j P_j over each micro-batch's in-game transitions (f_j
     * the share given code j, P_j the mean of softmax(logits)_j), 1 when the
     * codes are used uniformly (the load-balancing loss of Fedus et al.
     * 2021); computed whatever its weight */
    double code_balance;
    /* Stochastic MuZero, not a loss: exp of the entropy of the codes the
     * encoder chose for the step's in-game transitions (1 when all got one
     * code, the codebook collapsed; at most C) */
    double code_perplexity;
    /* MuZero with a to-play head: the binary cross-entropy of g's turn
     * output, steps k >= 1 weighted 1/K; weight 1 in the total */
    double turn;
    /* MuZero with the consistency term: 1 - cos(s_k, h(o_k)) of each
     * unrolled step's hidden state against the representation of that
     * step's observation (no gradient through the latter), steps k >= 1
     * inside the game weighted 1/K; computed only where its weight is set */
    double consistency;
    /* MuZero: step 0's policy and value terms alone (f(h(o)), the part an
     * AlphaZero net's policy and value compare with); policy - policy0 and
     * value - value0 are the unrolled steps', weighted 1/K each */
    double policy0, value0;
} zt_train_losses;

typedef struct zt_trainer zt_trainer;

zt_status zt_trainer_new(zt_net *net, const zt_train_config *cfg, zt_trainer **out);
void zt_trainer_free(zt_trainer *t);

/* One optimizer step on `batch`, split into micro-batches whose gradients
 * are accumulated (batch norm statistics are per micro-batch). Allocates
 * nothing once a batch of this size has been seen. */
zt_status zt_trainer_step(zt_trainer *t, const zt_train_batch *batch, zt_train_losses *out);

/* Data-parallel training (src/dist/): a step whose gradient, between the
 * backward pass and the update, is replaced by what `reduce` makes of it
 * (the mean over several learners), with the losses; the update then sees
 * the norm of the new gradient (the same clipping on every learner). batch
 * NULL: this learner has no batch of its own (reduce gets zeros and
 * has_batch false). reduce may set *skip to abandon the step: nothing is
 * updated and *skipped (may be NULL) says so. */
typedef zt_status (*zt_trainer_reduce_fn)(void *ctx, float *grads, size_t n,
                                          zt_train_losses *losses, bool has_batch, bool *skip);
zt_status zt_trainer_step_reduced(zt_trainer *t, const zt_train_batch *batch,
                                  zt_trainer_reduce_fn reduce, void *ctx, zt_train_losses *out,
                                  bool *skipped);

/* Loss terms and gradient without updating anything but the returned values:
 * grads[zt_net_param_count] in the order of zt_net_tensor_at's trainable
 * tensors (for tests and diagnostics). Batch norm runs in training mode but
 * its running statistics are left as they are. */
zt_status zt_trainer_loss_grad(zt_trainer *t, const zt_train_batch *batch,
                               zt_train_losses *out, float *grads);

/* Learning rate of the schedule at optimizer step `step` (0-based); a
 * cosine of total_steps 0 reads as at progress 0. */
double zt_trainer_lr_at(const zt_train_config *cfg, long step);
/* The progress p in [0, 1] (clamped) of a cosine schedule with total_steps
 * 0: after the warm-up the rate is lr_min + (lr - lr_min)(1 + cos(pi p)) / 2
 * (the runner reports the share of the run's wall time spent). 0 until set. */
void zt_trainer_set_progress(zt_trainer *t, double progress);
/* The rate the next step uses (the schedule at this step and progress). */
double zt_trainer_lr(const zt_trainer *t);
long zt_trainer_steps(const zt_trainer *t);

/* Optimizer state (step count and moments) in its own safetensors file,
 * beside the weights. Load refuses a file from another architecture or
 * optimizer. */
zt_status zt_trainer_save(const zt_trainer *t, const char *path);
zt_status zt_trainer_load(zt_trainer *t, const char *path);

#endif
