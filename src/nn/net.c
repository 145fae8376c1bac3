/* Network description, graph building, backend choice and inference. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "nn/backend.h"
#include "nn/device.h"
#include "nn/muzero.h"
#include "nn/nn.h"

struct zt_net {
    zt_net_config cfg;
    zt_nn_graph graph; /* muzero: the table of h's, g's and f's tensors (no ops) */
    zt_mz *mz;         /* muzero: the three graphs and their plans; plan is NULL */
    float *params;
    float *state;
    const zt_nn_backend *backend;
    zt_nn_plan *plan;
    zt_precision precision;
    int threads;
    int reserved; /* the largest batch reserved (kept across zt_net_set_precision) */
    /* zt_net_forward_submit where the backend has no halves: the calls
     * that zt_net_forward_wait runs */
    struct {
        int B;
        const float *obs;
    } pending[2];
};

/* ---- config ---- */

void zt_net_config_default(zt_net_config *cfg, int h, int w, int c, int num_actions)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->in_h = h;
    cfg->in_w = w;
    cfg->in_c = c;
    cfg->num_actions = num_actions;
    cfg->value_kind = ZT_VALUE_SCALAR;
    if (h * w > 1) {
        cfg->kind = ZT_NET_RESNET;
        cfg->channels = 64;
        cfg->blocks = 5;
        cfg->policy_channels = 2;
        cfg->value_channels = 1;
        cfg->value_hidden = 64;
    } else {
        cfg->kind = ZT_NET_MLP;
        cfg->mlp_hidden = 256;
        cfg->mlp_layers = 3;
        cfg->mlp_norm = ZT_NORM_LAYER;
        cfg->value_hidden = 64;
    }
}

/* Bounds keep every size product well inside int and size_t arithmetic. */
static zt_status check_range(const char *name, int v, int lo, int hi)
{
    if (v < lo || v > hi)
        return zt_fail(ZT_ERR_INVALID, "net %s = %d is out of range [%d, %d]", name, v, lo, hi);
    return ZT_OK;
}

zt_status zt_net_config_check(const zt_net_config *cfg)
{
    if (cfg->kind != ZT_NET_RESNET && cfg->kind != ZT_NET_MLP && cfg->kind != ZT_NET_MUZERO)
        return zt_fail(ZT_ERR_INVALID, "net kind %d is not resnet, mlp or muzero", (int)cfg->kind);
    if (cfg->value_kind != ZT_VALUE_SCALAR && cfg->value_kind != ZT_VALUE_WDL &&
        cfg->value_kind != ZT_VALUE_EQUITY)
        return zt_fail(ZT_ERR_INVALID, "net value kind %d is not scalar, wdl or equity",
                       (int)cfg->value_kind);
    ZT_TRY(check_range("input height", cfg->in_h, 1, 64));
    ZT_TRY(check_range("input width", cfg->in_w, 1, 64));
    ZT_TRY(check_range("input channels", cfg->in_c, 1, 4096));
    ZT_TRY(check_range("num_actions", cfg->num_actions, 1, 1 << 16));
    ZT_TRY(check_range("value_hidden", cfg->value_hidden, 1, 1 << 14));
    if (cfg->kind != ZT_NET_MUZERO &&
        (cfg->chance_codes != 0 || cfg->value_support != 0 || cfg->turn_head != 0 ||
         cfg->action_columns != 0 || cfg->head_norm != 0))
        return zt_fail(ZT_ERR_INVALID,
                       "chance codes (%d), a value support (%d), a to-play head (%d), column "
                       "actions (%d) and normed heads (%d) belong to muzero nets only",
                       cfg->chance_codes, cfg->value_support, cfg->turn_head, cfg->action_columns,
                       cfg->head_norm);
    ZT_TRY(check_range("chance_values", cfg->chance_values, 0, 1));
    if (cfg->kind == ZT_NET_MUZERO && cfg->chance_values)
        return zt_fail(ZT_ERR_INVALID, "chance values belong to AlphaZero nets: a muzero net "
                       "models chance in its own dynamics");
    if (cfg->kind == ZT_NET_MUZERO) {
        ZT_TRY(check_range("dyn_blocks", cfg->dyn_blocks, 0, 256));
        ZT_TRY(check_range("pred_blocks", cfg->pred_blocks, 0, 256));
        if (cfg->value_kind != ZT_VALUE_SCALAR)
            return zt_fail(ZT_ERR_INVALID, "a muzero net's value head is scalar, not wdl");
        ZT_TRY(check_range("chance_codes", cfg->chance_codes, 0, 4096));
        ZT_TRY(check_range("value_support", cfg->value_support, 0, ZT_MZ_MAX_SUPPORT));
        ZT_TRY(check_range("turn_head", cfg->turn_head, 0, 1));
        ZT_TRY(check_range("action_columns", cfg->action_columns, 0, 1));
        ZT_TRY(check_range("head_norm", cfg->head_norm, 0, 1));
        if (cfg->action_columns && cfg->num_actions != cfg->in_w)
            return zt_fail(ZT_ERR_INVALID,
                           "column actions need an action per board column: %d actions, %d "
                           "columns",
                           cfg->num_actions, cfg->in_w);
        if (cfg->num_actions != cfg->in_h * cfg->in_w && cfg->num_actions > 4096)
            return zt_fail(ZT_ERR_INVALID,
                           "a muzero net needs an action plane each for its %d actions (at most "
                           "4096)",
                           cfg->num_actions);
    }
    if (cfg->kind == ZT_NET_RESNET || cfg->kind == ZT_NET_MUZERO) {
        ZT_TRY(check_range("channels", cfg->channels, 1, 4096));
        ZT_TRY(check_range("blocks", cfg->blocks, 0, 256));
        ZT_TRY(check_range("policy_channels", cfg->policy_channels, 1, 4096));
        ZT_TRY(check_range("value_channels", cfg->value_channels, 1, 4096));
    } else {
        ZT_TRY(check_range("mlp_hidden", cfg->mlp_hidden, 1, 1 << 14));
        ZT_TRY(check_range("mlp_layers", cfg->mlp_layers, 1, 256));
        if (cfg->mlp_norm != ZT_NORM_BATCH && cfg->mlp_norm != ZT_NORM_LAYER)
            return zt_fail(ZT_ERR_INVALID, "net mlp norm %d is neither batch nor layer",
                           (int)cfg->mlp_norm);
    }
    return ZT_OK;
}

void zt_net_config_format(const zt_net_config *cfg, char *buf, size_t cap)
{
    const char *value = cfg->value_kind == ZT_VALUE_WDL      ? "wdl"
                        : cfg->value_kind == ZT_VALUE_EQUITY ? "equity"
                                                             : "scalar";
    if (cfg->kind == ZT_NET_RESNET)
        snprintf(buf, cap, "resnet in=%dx%dx%d actions=%d value=%s:%d ch=%d blocks=%d pol=%d valc=%d",
                 cfg->in_h, cfg->in_w, cfg->in_c, cfg->num_actions, value, cfg->value_hidden,
                 cfg->channels, cfg->blocks, cfg->policy_channels, cfg->value_channels);
    else if (cfg->kind == ZT_NET_MUZERO) {
        int len = snprintf(buf, cap,
                           "muzero in=%dx%dx%d actions=%d value=%s:%d ch=%d blocks=%d dyn=%d "
                           "pred=%d pol=%d valc=%d",
                           cfg->in_h, cfg->in_w, cfg->in_c, cfg->num_actions, value,
                           cfg->value_hidden, cfg->channels, cfg->blocks, cfg->dyn_blocks,
                           cfg->pred_blocks, cfg->policy_channels, cfg->value_channels);
        /* Stochastic MuZero's codebook and categorical heads; without them
         * the string is plain MuZero's as before */
        if (cfg->chance_codes > 0 && len > 0 && (size_t)len < cap)
            len += snprintf(buf + len, cap - (size_t)len, " codes=%d", cfg->chance_codes);
        if (cfg->value_support > 0 && len > 0 && (size_t)len < cap)
            len += snprintf(buf + len, cap - (size_t)len, " support=%d", cfg->value_support);
        if (cfg->turn_head && len > 0 && (size_t)len < cap)
            len += snprintf(buf + len, cap - (size_t)len, " turns");
        if (cfg->action_columns && len > 0 && (size_t)len < cap)
            len += snprintf(buf + len, cap - (size_t)len, " columns");
        /* plain heads (muzero.heads); a string without it is a net with
         * layer norms in its heads, as every MuZero net before 2026-11-30 */
        if (!cfg->head_norm && len > 0 && (size_t)len < cap)
            snprintf(buf + len, cap - (size_t)len, " heads=plain");
    }
    else
        snprintf(buf, cap, "mlp in=%dx%dx%d actions=%d value=%s:%d width=%d layers=%d norm=%s",
                 cfg->in_h, cfg->in_w, cfg->in_c, cfg->num_actions, value, cfg->value_hidden,
                 cfg->mlp_hidden, cfg->mlp_layers,
                 cfg->mlp_norm == ZT_NORM_BATCH ? "batch" : "layer");
    /* without it the string is as before, so older files still read */
    size_t len = strlen(buf);
    if (cfg->kind != ZT_NET_MUZERO && cfg->chance_values && len + 8 < cap)
        memcpy(buf + len, " chance", 8);
}

zt_status zt_net_config_parse(const char *text, zt_net_config *cfg)
{
    zt_net_config c;
    memset(&c, 0, sizeof c);
    char value[16] = "", norm[16] = "";
    int n = 0;
    if (strncmp(text, "resnet ", 7) == 0) {
        c.kind = ZT_NET_RESNET;
        if (sscanf(text, "resnet in=%dx%dx%d actions=%d value=%15[a-z]:%d ch=%d blocks=%d pol=%d "
                         "valc=%d%n",
                   &c.in_h, &c.in_w, &c.in_c, &c.num_actions, value, &c.value_hidden, &c.channels,
                   &c.blocks, &c.policy_channels, &c.value_channels, &n) != 10)
            n = 0;
    } else if (strncmp(text, "muzero ", 7) == 0) {
        c.kind = ZT_NET_MUZERO;
        if (sscanf(text,
                   "muzero in=%dx%dx%d actions=%d value=%15[a-z]:%d ch=%d blocks=%d dyn=%d "
                   "pred=%d pol=%d valc=%d%n",
                   &c.in_h, &c.in_w, &c.in_c, &c.num_actions, value, &c.value_hidden, &c.channels,
                   &c.blocks, &c.dyn_blocks, &c.pred_blocks, &c.policy_channels, &c.value_channels,
                   &n) != 12)
            n = 0;
        int m = 0;
        if (n > 0 && sscanf(text + n, " codes=%d%n", &c.chance_codes, &m) == 1) n += m;
        m = 0;
        if (n > 0 && sscanf(text + n, " support=%d%n", &c.value_support, &m) == 1) n += m;
        if (n > 0 && strncmp(text + n, " turns", 6) == 0 && (text[n + 6] == '\0' ||
                                                              text[n + 6] == ' ')) {
            c.turn_head = 1;
            n += 6;
        }
        if (n > 0 && strncmp(text + n, " columns", 8) == 0 &&
            (text[n + 8] == '\0' || text[n + 8] == ' ')) {
            c.action_columns = 1;
            n += 8;
        }
        c.head_norm = 1;
        if (n > 0 && strcmp(text + n, " heads=plain") == 0) {
            c.head_norm = 0;
            n += 12;
        }
    } else if (strncmp(text, "mlp ", 4) == 0) {
        c.kind = ZT_NET_MLP;
        if (sscanf(text, "mlp in=%dx%dx%d actions=%d value=%15[a-z]:%d width=%d layers=%d "
                         "norm=%15[a-z]%n",
                   &c.in_h, &c.in_w, &c.in_c, &c.num_actions, value, &c.value_hidden,
                   &c.mlp_hidden, &c.mlp_layers, norm, &n) != 9)
            n = 0;
        c.mlp_norm = strcmp(norm, "batch") == 0 ? ZT_NORM_BATCH : ZT_NORM_LAYER;
    }
    if (n > 0 && c.kind != ZT_NET_MUZERO && strcmp(text + n, " chance") == 0) {
        c.chance_values = 1;
        n += 7;
    }
    c.value_kind = strcmp(value, "wdl") == 0      ? ZT_VALUE_WDL
                   : strcmp(value, "equity") == 0 ? ZT_VALUE_EQUITY
                                                  : ZT_VALUE_SCALAR;
    char again[256];
    if (n > 0) zt_net_config_format(&c, again, sizeof again);
    /* Only the canonical form is accepted, so a file's architecture string
     * compares equal exactly when the nets are the same. */
    if (n == 0 || text[n] != '\0' || strcmp(again, text) != 0)
        return zt_fail(ZT_ERR_INVALID, "malformed net architecture '%.200s'", text);
    ZT_TRY(zt_net_config_check(&c));
    *cfg = c;
    return ZT_OK;
}

zt_status zt_precision_parse(const char *name, zt_precision *out)
{
    if (strcmp(name, "auto") == 0) *out = ZT_PRECISION_AUTO;
    else if (strcmp(name, "fp32") == 0) *out = ZT_PRECISION_FP32;
    else if (strcmp(name, "bf16") == 0) *out = ZT_PRECISION_BF16;
    else if (strcmp(name, "int8") == 0) *out = ZT_PRECISION_INT8;
    else return zt_fail(ZT_ERR_INVALID, "unknown precision '%s' (known: auto, fp32, bf16, int8)",
                        name);
    return ZT_OK;
}

const char *zt_precision_name(zt_precision p)
{
    switch (p) {
    case ZT_PRECISION_AUTO: return "auto";
    case ZT_PRECISION_FP32: return "fp32";
    case ZT_PRECISION_BF16: return "bf16";
    case ZT_PRECISION_INT8: return "int8";
    }
    return "?";
}

/* ---- graph building ---- */

void zt_nn_graph_init(zt_nn_graph *g)
{
    memset(g, 0, sizeof *g);
    g->input = -1;
}

void zt_nn_graph_free(zt_nn_graph *g)
{
    free(g->tensors);
    free(g->ops);
    free(g->params);
    zt_nn_graph_init(g);
}

static int add_tensor(zt_nn_graph *g, zt_nn_shape s)
{
    g->tensors = zt_xrealloc(g->tensors, (size_t)(g->ntensors + 1) * sizeof *g->tensors);
    g->tensors[g->ntensors] = s;
    return g->ntensors++;
}

static int add_param(zt_nn_graph *g, const char *op_name, const char *suffix, bool trainable,
                     int ndim, const int *shape, int fan_in, float init_value)
{
    g->params = zt_xrealloc(g->params, (size_t)(g->nparams + 1) * sizeof *g->params);
    zt_nn_param *p = &g->params[g->nparams];
    memset(p, 0, sizeof *p);
    int len = snprintf(p->name, sizeof p->name, "%s.%s", op_name, suffix);
    ZT_ASSERT(len > 0 && (size_t)len < sizeof p->name);
    p->ndim = ndim;
    p->count = 1;
    for (int i = 0; i < ndim; i++) {
        p->shape[i] = shape[i];
        p->count *= (size_t)shape[i];
    }
    p->trainable = trainable;
    p->decay = trainable && fan_in > 0;
    p->fan_in = fan_in;
    p->init_value = init_value;
    if (trainable) {
        p->offset = g->param_floats;
        g->param_floats += p->count;
    } else {
        p->offset = g->state_floats;
        g->state_floats += p->count;
    }
    return g->nparams++;
}

static int add_op(zt_nn_graph *g, zt_nn_op_kind kind, int in0, int in1, zt_nn_shape out)
{
    ZT_ASSERT(in0 >= 0 && in0 < g->ntensors && in1 < g->ntensors);
    g->ops = zt_xrealloc(g->ops, (size_t)(g->nops + 1) * sizeof *g->ops);
    zt_nn_op *op = &g->ops[g->nops++];
    op->kind = kind;
    op->in[0] = in0;
    op->in[1] = in1;
    op->p[0] = op->p[1] = op->p[2] = op->p[3] = -1;
    op->k = 0;
    op->out = add_tensor(g, out);
    return g->nops - 1;
}

int zt_nn_graph_input(zt_nn_graph *g, zt_nn_shape s)
{
    ZT_ASSERT(g->input < 0);
    g->input = add_tensor(g, s);
    return g->input;
}

void zt_nn_graph_output(zt_nn_graph *g, int t)
{
    ZT_ASSERT(g->noutputs < 4 && t >= 0 && t < g->ntensors);
    g->outputs[g->noutputs++] = t;
}

int zt_nn_graph_conv(zt_nn_graph *g, const char *name, int x, int out_c, int k, bool bias)
{
    ZT_ASSERT(k % 2 == 1);
    zt_nn_shape in = g->tensors[x];
    int i = add_op(g, ZT_OP_CONV, x, -1, (zt_nn_shape){in.h, in.w, out_c});
    int wshape[4] = {out_c, k, k, in.c};
    int p0 = add_param(g, name, "weight", true, 4, wshape, k * k * in.c, 0);
    int p1 = bias ? add_param(g, name, "bias", true, 1, &out_c, 0, 0.0f) : -1;
    zt_nn_op *op = &g->ops[i];
    op->p[0] = p0;
    op->p[1] = p1;
    op->k = k;
    return op->out;
}

static int norm_op(zt_nn_graph *g, zt_nn_op_kind kind, const char *name, int x)
{
    zt_nn_shape s = g->tensors[x];
    int i = add_op(g, kind, x, -1, s);
    int n = kind == ZT_OP_BN ? s.c : (int)zt_nn_shape_size(s);
    int p0 = add_param(g, name, "weight", true, 1, &n, 0, 1.0f);
    int p1 = add_param(g, name, "bias", true, 1, &n, 0, 0.0f);
    int p2 = -1, p3 = -1;
    if (kind == ZT_OP_BN) {
        p2 = add_param(g, name, "running_mean", false, 1, &n, 0, 0.0f);
        p3 = add_param(g, name, "running_var", false, 1, &n, 0, 1.0f);
    }
    zt_nn_op *op = &g->ops[i];
    op->p[0] = p0, op->p[1] = p1, op->p[2] = p2, op->p[3] = p3;
    return op->out;
}

int zt_nn_graph_bn(zt_nn_graph *g, const char *name, int x)
{
    return norm_op(g, ZT_OP_BN, name, x);
}

int zt_nn_graph_ln(zt_nn_graph *g, const char *name, int x)
{
    return norm_op(g, ZT_OP_LN, name, x);
}

int zt_nn_graph_dense(zt_nn_graph *g, const char *name, int x, int units, bool bias)
{
    int in = (int)zt_nn_shape_size(g->tensors[x]);
    int i = add_op(g, ZT_OP_DENSE, x, -1, (zt_nn_shape){1, 1, units});
    int wshape[2] = {units, in};
    int p0 = add_param(g, name, "weight", true, 2, wshape, in, 0);
    int p1 = bias ? add_param(g, name, "bias", true, 1, &units, 0, 0.0f) : -1;
    g->ops[i].p[0] = p0;
    g->ops[i].p[1] = p1;
    return g->ops[i].out;
}

int zt_nn_graph_relu(zt_nn_graph *g, int x)
{
    int i = add_op(g, ZT_OP_RELU, x, -1, g->tensors[x]);
    return g->ops[i].out;
}

int zt_nn_graph_tanh(zt_nn_graph *g, int x)
{
    int i = add_op(g, ZT_OP_TANH, x, -1, g->tensors[x]);
    return g->ops[i].out;
}

int zt_nn_graph_add(zt_nn_graph *g, int a, int b)
{
    zt_nn_shape sa = g->tensors[a], sb = g->tensors[b];
    ZT_ASSERT(sa.h == sb.h && sa.w == sb.w && sa.c == sb.c);
    int i = add_op(g, ZT_OP_ADD, a, b, sa);
    return g->ops[i].out;
}

static const char *join(char *buf, size_t cap, const char *a, const char *b)
{
    int len = snprintf(buf, cap, "%s.%s", a, b);
    ZT_ASSERT(len > 0 && (size_t)len < cap);
    return buf;
}

int zt_nn_block_conv_bn_relu(zt_nn_graph *g, const char *name, int x, int out_c, int k)
{
    char buf[64];
    /* No conv bias: the batch norm's beta that follows plays its part. */
    x = zt_nn_graph_conv(g, join(buf, sizeof buf, name, "conv"), x, out_c, k, false);
    x = zt_nn_graph_bn(g, join(buf, sizeof buf, name, "bn"), x);
    return zt_nn_graph_relu(g, x);
}

int zt_nn_block_residual(zt_nn_graph *g, const char *name, int x)
{
    char buf[64];
    int c = g->tensors[x].c;
    int y = zt_nn_graph_conv(g, join(buf, sizeof buf, name, "conv1"), x, c, 3, false);
    y = zt_nn_graph_bn(g, join(buf, sizeof buf, name, "bn1"), y);
    y = zt_nn_graph_relu(g, y);
    y = zt_nn_graph_conv(g, join(buf, sizeof buf, name, "conv2"), y, c, 3, false);
    y = zt_nn_graph_bn(g, join(buf, sizeof buf, name, "bn2"), y);
    return zt_nn_graph_relu(g, zt_nn_graph_add(g, y, x));
}

int zt_nn_block_policy_head(zt_nn_graph *g, const char *name, int x, int channels, int actions)
{
    char buf[64];
    x = zt_nn_block_conv_bn_relu(g, name, x, channels, 1);
    return zt_nn_graph_dense(g, join(buf, sizeof buf, name, "fc"), x, actions, true);
}

/* The shared tail of both value heads: dense-ReLU-dense, then tanh for a
 * scalar (WDL and equity logits stay raw; the softmax or sigmoids are in
 * the loss and at use). */
static int value_tail(zt_nn_graph *g, const char *name, int x, int hidden, zt_value_kind kind)
{
    char buf[64];
    int outputs = kind == ZT_VALUE_WDL ? 3 : kind == ZT_VALUE_EQUITY ? ZT_EQ_OUTPUTS : 1;
    x = zt_nn_graph_dense(g, join(buf, sizeof buf, name, "fc1"), x, hidden, true);
    x = zt_nn_graph_relu(g, x);
    x = zt_nn_graph_dense(g, join(buf, sizeof buf, name, "fc2"), x, outputs, true);
    return kind == ZT_VALUE_SCALAR ? zt_nn_graph_tanh(g, x) : x;
}

int zt_nn_block_value_head(zt_nn_graph *g, const char *name, int x, int channels, int hidden,
                           zt_value_kind kind)
{
    x = zt_nn_block_conv_bn_relu(g, name, x, channels, 1);
    return value_tail(g, name, x, hidden, kind);
}

int zt_nn_block_dense_norm_relu(zt_nn_graph *g, const char *name, int x, int units,
                                zt_norm_kind norm)
{
    char buf[64];
    /* A dense before a norm needs no bias, as a conv before batch norm. */
    x = zt_nn_graph_dense(g, join(buf, sizeof buf, name, "fc"), x, units, false);
    x = norm == ZT_NORM_BATCH ? zt_nn_graph_bn(g, join(buf, sizeof buf, name, "norm"), x)
                              : zt_nn_graph_ln(g, join(buf, sizeof buf, name, "norm"), x);
    return zt_nn_graph_relu(g, x);
}

void zt_nn_graph_build(zt_nn_graph *g, const zt_net_config *cfg)
{
    zt_nn_graph_init(g);
    int x = zt_nn_graph_input(g, (zt_nn_shape){cfg->in_h, cfg->in_w, cfg->in_c});
    int policy, value;
    if (cfg->kind == ZT_NET_RESNET) {
        x = zt_nn_block_conv_bn_relu(g, "stem", x, cfg->channels, 3);
        for (int b = 0; b < cfg->blocks; b++) {
            char name[32];
            snprintf(name, sizeof name, "blocks.%d", b);
            x = zt_nn_block_residual(g, name, x);
        }
        policy = zt_nn_block_policy_head(g, "policy", x, cfg->policy_channels, cfg->num_actions);
        value = zt_nn_block_value_head(g, "value", x, cfg->value_channels, cfg->value_hidden,
                                       cfg->value_kind);
    } else {
        for (int l = 0; l < cfg->mlp_layers; l++) {
            char name[32];
            snprintf(name, sizeof name, "mlp.%d", l);
            x = zt_nn_block_dense_norm_relu(g, name, x, cfg->mlp_hidden, cfg->mlp_norm);
        }
        policy = zt_nn_graph_dense(g, "policy.fc", x, cfg->num_actions, true);
        value = value_tail(g, "value", x, cfg->value_hidden, cfg->value_kind);
    }
    zt_nn_graph_output(g, policy);
    zt_nn_graph_output(g, value);
}

/* ---- batch-norm folding ---- */

static int consumers(const zt_nn_graph *g, int t)
{
    int n = 0;
    for (int i = 0; i < g->nops; i++) n += (g->ops[i].in[0] == t) + (g->ops[i].in[1] == t);
    for (int i = 0; i < g->noutputs; i++) n += g->outputs[i] == t;
    return n;
}

/* The op name of a parameter ("blocks.0.conv1" of "blocks.0.conv1.weight"). */
static void op_name(const zt_nn_graph *g, int param, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s", g->params[param].name);
    char *dot = strrchr(buf, '.');
    ZT_ASSERT(dot != NULL);
    *dot = '\0';
}

static void copy_param(const zt_nn_graph *dst_g, float *dst_params, float *dst_state, int dst,
                       const zt_nn_graph *src_g, const float *params, const float *state, int src)
{
    const zt_nn_param *d = &dst_g->params[dst], *s = &src_g->params[src];
    ZT_ASSERT(d->count == s->count && d->trainable == s->trainable);
    memcpy((d->trainable ? dst_params : dst_state) + d->offset,
           (s->trainable ? params : state) + s->offset, s->count * sizeof(float));
}

void zt_nn_graph_fold_bn(const zt_nn_graph *g, const float *params, const float *state,
                         zt_nn_graph *out, float **out_params, float **out_state)
{
    zt_nn_graph_init(out);
    int *map = zt_xmalloc((size_t)g->ntensors * sizeof *map);
    bool *folded = zt_xcalloc((size_t)g->nops, sizeof *folded);
    map[g->input] = zt_nn_graph_input(out, g->tensors[g->input]);
    /* First pass builds the graph (parameters laid out as they are added);
     * the second fills the values once the arrays exist. */
    int *fold_with = zt_xmalloc((size_t)g->nops * sizeof *fold_with);
    for (int i = 0; i < g->nops; i++) {
        const zt_nn_op *op = &g->ops[i];
        fold_with[i] = -1;
        if (folded[i]) continue;
        char name[64];
        int x = map[op->in[0]];
        int y = -1;
        if ((op->kind == ZT_OP_CONV || op->kind == ZT_OP_DENSE) && consumers(g, op->out) == 1) {
            for (int j = i + 1; j < g->nops; j++)
                if (g->ops[j].in[0] == op->out && g->ops[j].kind == ZT_OP_BN) fold_with[i] = j;
        }
        switch (op->kind) {
        case ZT_OP_CONV:
        case ZT_OP_DENSE:
            op_name(g, op->p[0], name, sizeof name);
            y = op->kind == ZT_OP_CONV
                    ? zt_nn_graph_conv(out, name, x, g->tensors[op->out].c, op->k,
                                       op->p[1] >= 0 || fold_with[i] >= 0)
                    : zt_nn_graph_dense(out, name, x, g->tensors[op->out].c,
                                        op->p[1] >= 0 || fold_with[i] >= 0);
            if (fold_with[i] >= 0) {
                folded[fold_with[i]] = true;
                map[g->ops[fold_with[i]].out] = y;
            }
            break;
        case ZT_OP_BN:
        case ZT_OP_LN:
            op_name(g, op->p[0], name, sizeof name);
            y = op->kind == ZT_OP_BN ? zt_nn_graph_bn(out, name, x) : zt_nn_graph_ln(out, name, x);
            break;
        case ZT_OP_RELU: y = zt_nn_graph_relu(out, x); break;
        case ZT_OP_TANH: y = zt_nn_graph_tanh(out, x); break;
        case ZT_OP_ADD: y = zt_nn_graph_add(out, x, map[op->in[1]]); break;
        }
        map[op->out] = y;
    }
    for (int i = 0; i < g->noutputs; i++) zt_nn_graph_output(out, map[g->outputs[i]]);

    float *np = zt_xcalloc(out->param_floats + 1, sizeof(float));
    float *ns = zt_xcalloc(out->state_floats + 1, sizeof(float));
    int k = 0; /* ops of `out`, in step with the unfolded ops of g */
    for (int i = 0; i < g->nops; i++) {
        const zt_nn_op *op = &g->ops[i];
        if (folded[i]) continue;
        const zt_nn_op *o = &out->ops[k++];
        for (int j = 0; j < 4; j++)
            if (op->p[j] >= 0) copy_param(out, np, ns, o->p[j], g, params, state, op->p[j]);
        if (fold_with[i] < 0) continue;
        const zt_nn_op *bn = &g->ops[fold_with[i]];
        const float *gamma = params + g->params[bn->p[0]].offset;
        const float *beta = params + g->params[bn->p[1]].offset;
        const float *mean = state + g->params[bn->p[2]].offset;
        const float *var = state + g->params[bn->p[3]].offset;
        const zt_nn_param *wp = &out->params[o->p[0]];
        float *w = np + wp->offset;
        float *b = np + out->params[o->p[1]].offset;
        int units = wp->shape[0];
        size_t per_unit = wp->count / (size_t)units;
        for (int u = 0; u < units; u++) {
            double s = gamma[u] / sqrt((double)var[u] + ZT_NN_BN_EPS);
            for (size_t e = 0; e < per_unit; e++)
                w[(size_t)u * per_unit + e] = (float)(w[(size_t)u * per_unit + e] * s);
            double bias = op->p[1] >= 0 ? b[u] : 0.0;
            b[u] = (float)((bias - mean[u]) * s + beta[u]);
        }
    }
    free(fold_with);
    free(folded);
    free(map);
    *out_params = np;
    *out_state = ns;
}

/* ---- backends ---- */

/* Backends built only with their libraries are weak references, so a build
 * without oneDNN or CUDA still links. A backend that is built in is named
 * strongly: a weak reference pulls nothing out of a static archive
 * (libzeroth.a), and the program would silently run on the reference
 * backend. */
#ifdef ZT_HAVE_DNNL
extern const zt_nn_backend zt_nn_backend_cpu;
#else
extern const zt_nn_backend zt_nn_backend_cpu __attribute__((weak));
#endif
#ifdef ZT_HAVE_CUDA
extern const zt_nn_backend zt_nn_backend_cuda;
#else
extern const zt_nn_backend zt_nn_backend_cuda __attribute__((weak));
#endif
extern const zt_nn_backend zt_nn_backend_routed; /* routed_backend.c: needs the CUDA one */

zt_status zt_nn_backend_find(const char *name, const zt_nn_backend **out)
{
    const zt_nn_backend *all[] = {&zt_nn_backend_cuda, &zt_nn_backend_cpu, &zt_nn_backend_ref};
    int n = (int)(sizeof all / sizeof all[0]);
    if (strcmp(name, "auto") == 0) {
        /* The CUDA backend is chosen explicitly (device=auto measures first). */
        for (int i = 1; i < n; i++)
            if (all[i]) {
                *out = all[i];
                return ZT_OK;
            }
    }
    if (strcmp(name, "routed") == 0 && all[0]) {
        *out = &zt_nn_backend_routed;
        return ZT_OK;
    }
    char known[128] = "";
    for (int i = 0; i < n; i++) {
        if (!all[i]) continue;
        if (strcmp(all[i]->name, name) == 0) {
            *out = all[i];
            return ZT_OK;
        }
        size_t len = strlen(known);
        snprintf(known + len, sizeof known - len, "%s%s", len ? ", " : "", all[i]->name);
    }
    if (strcmp(name, "cuda") == 0)
        return zt_fail(ZT_ERR_UNSUPPORTED,
                       "no CUDA GPU found: this build has no CUDA backend (configure with "
                       "-DZT_CUDA=ON)");
    return zt_fail(ZT_ERR_NOT_FOUND, "unknown nn backend '%s' (known: auto, %s)", name, known);
}

/* ---- nets ---- */

zt_status zt_net_new(const zt_net_config *cfg, const char *backend, zt_precision precision,
                     int threads, zt_net **out)
{
    ZT_TRY(zt_net_config_check(cfg));
    if (threads < 1) return zt_fail(ZT_ERR_INVALID, "nn threads = %d must be at least 1", threads);
    const zt_nn_backend *be;
    ZT_TRY(zt_nn_backend_find(backend, &be));
    if (be == &zt_nn_backend_cuda || be == &zt_nn_backend_routed) {
        char why[200];
        if (zt_cuda_gpu_count(why, sizeof why) == 0)
            return zt_fail(ZT_ERR_UNSUPPORTED, "no CUDA GPU found: %s", why);
    }
    if (precision == ZT_PRECISION_AUTO) precision = be->auto_precision();
    if (!be->supports(precision))
        return zt_fail(ZT_ERR_UNSUPPORTED, "nn backend '%s' cannot run %s here", be->name,
                       zt_precision_name(precision));
    zt_net *net = zt_xcalloc(1, sizeof *net);
    net->cfg = *cfg;
    net->backend = be;
    net->precision = precision;
    net->threads = threads;
    if (cfg->kind == ZT_NET_MUZERO)
        net->mz = zt_mz_new(cfg, &net->graph);
    else
        zt_nn_graph_build(&net->graph, cfg);
    net->params = zt_aligned_alloc(ZT_CACHE_LINE, (net->graph.param_floats + 1) * sizeof(float));
    net->state = zt_aligned_alloc(ZT_CACHE_LINE, (net->graph.state_floats + 1) * sizeof(float));
    if (!net->params || !net->state) {
        size_t count = net->graph.param_floats;
        zt_net_free(net);
        return zt_fail(ZT_ERR_NOMEM, "no memory for a net of %zu parameters", count);
    }
    zt_status s =
        net->mz
            ? zt_mz_plans_new(net->mz, be, net->params, net->state, precision, threads)
            : be->plan_new(&net->graph, net->params, net->state, precision, threads, &net->plan);
    if (s != ZT_OK) {
        zt_net_free(net);
        return s;
    }
    *out = net;
    return ZT_OK;
}

void zt_net_free(zt_net *net)
{
    if (!net) return;
    if (net->plan) net->backend->plan_free(net->plan);
    zt_mz_free(net->mz);
    zt_aligned_free(net->params);
    zt_aligned_free(net->state);
    zt_nn_graph_free(&net->graph);
    free(net);
}

const zt_net_config *zt_net_config_of(const zt_net *net)
{
    return &net->cfg;
}

const char *zt_net_backend_name(const zt_net *net)
{
    return net->backend->name;
}

int zt_net_threads(const zt_net *net)
{
    return net->threads;
}

zt_precision zt_net_precision(const zt_net *net)
{
    return net->precision;
}

void zt_net_init(zt_net *net, zt_rng *rng)
{
    const zt_nn_graph *g = &net->graph;
    for (int i = 0; i < g->nparams; i++) {
        const zt_nn_param *p = &g->params[i];
        float *d = (p->trainable ? net->params : net->state) + p->offset;
        double std = p->fan_in > 0 ? sqrt(2.0 / p->fan_in) : 0.0;
        for (size_t e = 0; e < p->count; e++)
            d[e] = p->fan_in > 0 ? (float)(std * zt_rng_normal(rng)) : p->init_value;
    }
    zt_net_params_changed(net);
}

zt_status zt_net_reserve(zt_net *net, int max_batch)
{
    ZT_ASSERT(max_batch > 0);
    if (net->mz) return zt_mz_reserve(net->mz, max_batch);
    ZT_TRY(net->backend->reserve(net->plan, max_batch, false));
    if (max_batch > net->reserved) net->reserved = max_batch;
    return ZT_OK;
}

/* Brings the parameters home where a backend trains them on its device
 * (backend.h, params_pull): the host arrays are what every reader reads.
 * No status to give: a device that fails here is broken, so it stops. */
static void pull_params(const zt_net *net)
{
    if (net->mz || !net->backend->params_pull) return;
    zt_status s = net->backend->params_pull(net->plan);
    if (s != ZT_OK) {
        fprintf(stderr, "zeroth: %s\n", zt_error_message());
        ZT_ASSERT(s == ZT_OK);
    }
}

zt_status zt_net_set_precision(zt_net *net, zt_precision precision)
{
    if (precision == ZT_PRECISION_AUTO) precision = net->backend->auto_precision();
    if (precision == net->precision) return ZT_OK;
    if (net->mz)
        return zt_fail(ZT_ERR_UNSUPPORTED,
                       "a MuZero net runs in the precision it was made with (%s), not %s",
                       zt_precision_name(net->precision), zt_precision_name(precision));
    if (!net->backend->supports(precision))
        return zt_fail(ZT_ERR_UNSUPPORTED, "nn backend '%s' cannot run %s here", net->backend->name,
                       zt_precision_name(precision));
    pull_params(net); /* the new plan starts from the host arrays */
    zt_nn_plan *plan;
    ZT_TRY(net->backend->plan_new(&net->graph, net->params, net->state, precision, net->threads,
                                  &plan));
    if (net->reserved > 0) {
        zt_status s = net->backend->reserve(plan, net->reserved, false);
        if (s != ZT_OK) {
            net->backend->plan_free(plan);
            return s;
        }
    }
    net->backend->plan_free(net->plan);
    net->plan = plan;
    net->precision = precision;
    return ZT_OK;
}

zt_status zt_net_forward(zt_net *net, int B, const float *obs, float *policy_logits, float *value)
{
    ZT_ASSERT(B > 0);
    if (net->mz) return zt_mz_initial(net->mz, B, obs, NULL, policy_logits, value);
    float *outs[2] = {policy_logits, value};
    return net->backend->forward(net->plan, B, obs, outs, false, false);
}

bool zt_net_overlaps(const zt_net *net)
{
    return !net->mz && net->backend->forward_submit && net->backend->forward_wait;
}

zt_status zt_net_forward_submit(zt_net *net, int slot, int B, const float *obs)
{
    ZT_ASSERT(B > 0 && (slot == 0 || slot == 1) && net->pending[slot].B == 0);
    if (zt_net_overlaps(net)) {
        ZT_TRY(net->backend->forward_submit(net->plan, slot, B, obs));
    } else {
        net->pending[slot].obs = obs;
    }
    net->pending[slot].B = B;
    return ZT_OK;
}

zt_status zt_net_forward_wait(zt_net *net, int slot, float *policy_logits, float *value)
{
    ZT_ASSERT((slot == 0 || slot == 1) && net->pending[slot].B > 0);
    int B = net->pending[slot].B;
    net->pending[slot].B = 0;
    if (zt_net_overlaps(net)) {
        float *outs[2] = {policy_logits, value};
        return net->backend->forward_wait(net->plan, slot, outs);
    }
    return zt_net_forward(net, B, net->pending[slot].obs, policy_logits, value);
}

zt_status zt_net_initial(zt_net *net, int B, const float *obs, float *hidden, float *policy_logits,
                         float *value)
{
    ZT_ASSERT(B > 0 && net->mz && hidden);
    return zt_mz_initial(net->mz, B, obs, hidden, policy_logits, value);
}

zt_status zt_net_recurrent(zt_net *net, int B, const float *hidden, const int *actions,
                           float *next_hidden, float *reward, float *policy_logits, float *value,
                           float *turn)
{
    ZT_ASSERT(B > 0 && net->mz);
    return zt_mz_recurrent(net->mz, B, hidden, actions, next_hidden, reward, policy_logits, value,
                           turn);
}

zt_status zt_net_afterstate(zt_net *net, int B, const float *hidden, const int *actions,
                            float *after, float *chance_logits, float *q)
{
    ZT_ASSERT(B > 0 && net->mz && net->cfg.chance_codes > 0);
    return zt_mz_afterstate(net->mz, B, hidden, actions, after, chance_logits, q);
}

zt_status zt_net_calibrate(zt_net *net, int B, const float *obs)
{
    if (B < 1) return zt_fail(ZT_ERR_INVALID, "calibration needs at least 1 observation, not %d", B);
    if (net->mz) return zt_fail(ZT_ERR_UNSUPPORTED, "a MuZero net has no int8 calibration");
    return net->backend->calibrate ? net->backend->calibrate(net->plan, B, obs) : ZT_OK;
}

size_t zt_net_ranges_size(const zt_net *net)
{
    return !net->mz && net->backend->ranges_size ? net->backend->ranges_size(net->plan) : 0;
}

bool zt_net_ranges_get(const zt_net *net, float *ranges)
{
    return !net->mz && net->backend->ranges_get && net->backend->ranges_get(net->plan, ranges);
}

zt_status zt_net_ranges_set(zt_net *net, const float *ranges)
{
    return net->backend->ranges_set ? net->backend->ranges_set(net->plan, ranges) : ZT_OK;
}

zt_status zt_net_take_int8_tail(zt_net *net, const float *tail, size_t n, zt_precision fallback,
                                bool *int8)
{
    if (int8) *int8 = false;
    if (n < 1) return zt_fail(ZT_ERR_INVALID, "int8 weights tail is empty");
    if (tail[0] != 1.0f) return zt_net_set_precision(net, fallback);
    ZT_TRY(zt_net_set_precision(net, ZT_PRECISION_INT8));
    if (n != 1 + zt_net_ranges_size(net))
        return zt_fail(ZT_ERR_INVALID, "int8 weights tail of %zu floats, expected %zu", n,
                       1 + zt_net_ranges_size(net));
    ZT_TRY(zt_net_ranges_set(net, tail + 1));
    if (int8) *int8 = true;
    return ZT_OK;
}

int zt_net_tensor_count(const zt_net *net)
{
    return net->graph.nparams;
}

zt_net_tensor zt_net_tensor_at(const zt_net *net, int i)
{
    ZT_ASSERT(i >= 0 && i < net->graph.nparams);
    pull_params(net);
    const zt_nn_param *p = &net->graph.params[i];
    zt_net_tensor t;
    t.name = p->name;
    t.ndim = p->ndim;
    memcpy(t.shape, p->shape, sizeof t.shape);
    t.count = p->count;
    t.data = (p->trainable ? net->params : net->state) + p->offset;
    t.trainable = p->trainable;
    t.decay = p->decay;
    return t;
}

size_t zt_net_param_count(const zt_net *net)
{
    return net->graph.param_floats;
}

void zt_net_params_changed(zt_net *net)
{
    if (net->mz)
        zt_mz_params_changed(net->mz);
    else if (net->backend->params_changed)
        net->backend->params_changed(net->plan);
}

size_t zt_net_flat_size(const zt_net *net)
{
    return net->graph.param_floats + net->graph.state_floats;
}

float *zt_net_flat_get(const zt_net *net, float *flat)
{
    for (int i = 0; i < zt_net_tensor_count(net); i++) {
        zt_net_tensor t = zt_net_tensor_at(net, i);
        memcpy(flat, t.data, t.count * sizeof *flat);
        flat += t.count;
    }
    return flat;
}

const float *zt_net_flat_set(zt_net *net, const float *flat)
{
    for (int i = 0; i < zt_net_tensor_count(net); i++) {
        zt_net_tensor t = zt_net_tensor_at(net, i);
        memcpy(t.data, flat, t.count * sizeof *flat);
        flat += t.count;
    }
    zt_net_params_changed(net);
    return flat;
}

void zt_net_flat_average(const zt_net *net, float *avg, float w)
{
    /* avg + w (x - avg), not (1 - w) avg + w x: with w near 1e-4 the float
     * 1 - w is off by up to 6e-8, which would scale the steady average by
     * up to 6e-8 / w (6e-4); this form has no such bias */
    for (int i = 0; i < zt_net_tensor_count(net); i++) {
        zt_net_tensor t = zt_net_tensor_at(net, i);
        for (size_t j = 0; j < t.count; j++) avg[j] += w * (t.data[j] - avg[j]);
        avg += t.count;
    }
}

const zt_nn_graph *zt_net_graph(const zt_net *net)
{
    return &net->graph;
}

float *zt_net_params(zt_net *net)
{
    pull_params(net);
    return net->params;
}

float *zt_net_state(zt_net *net)
{
    return net->state;
}

zt_mz *zt_net_mz(zt_net *net)
{
    return net->mz;
}

zt_nn_plan *zt_net_plan(zt_net *net)
{
    return net->plan;
}

const zt_nn_backend *zt_net_backend(const zt_net *net)
{
    return net->backend;
}
