/* Training: losses, gradient accumulation over micro-batches, clipping,
 * SGD with Nesterov momentum and AdamW, learning-rate schedules, and the
 * optimizer-state file. The loss is AlphaZero's (Silver et al. 2018):
 * policy cross-entropy + value error + L2, each term reported. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "nn/backend.h"
#include "nn/muzero.h"
#include "nn/safetensors.h"

struct zt_trainer {
    zt_net *net;
    zt_train_config cfg;
    size_t n;     /* trainable floats */
    float *grads; /* accumulated over the micro-batches of one step */
    float *m;     /* SGD: momentum buffer; AdamW: first moment */
    float *v;     /* AdamW: second moment */
    bool *decay;  /* per trainable float: weight decay applies */
    /* The optimizer runs on the backend's device (backend.h, opt_*): the
     * gradient, moments and weights stay there; m and v above only carry
     * the moments to and from the optimizer-state file. */
    bool device;
    long step;
    double progress; /* zt_trainer_set_progress: a cosine of total_steps 0 */
    int cap; /* micro-batch capacity of the buffers below */
    float *policy, *value, *d_policy, *d_value;
};

void zt_train_config_default(zt_train_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->optimizer = ZT_OPT_SGD;
    cfg->lr = 0.02;
    cfg->momentum = 0.9;
    cfg->beta1 = 0.9;
    cfg->beta2 = 0.999;
    cfg->eps = 1e-8;
    cfg->weight_decay = 1e-4;
    cfg->schedule = ZT_SCHED_CONSTANT;
    cfg->step_size = 1000;
    cfg->step_gamma = 0.1;
    cfg->value_weight = 1.0;
    cfg->micro_batch = 256;
    cfg->dynamics_grad_scale = 0.5;
    cfg->reward_weight = 1.0;
    cfg->chance_weight = 1.0;
    cfg->commitment_weight = 0.25;
    cfg->straight_through = 1.0;
    cfg->code_balance_weight = 0;
    cfg->consistency_weight = 0;
}

static zt_status check_config(const zt_train_config *c)
{
    if (c->optimizer != ZT_OPT_SGD && c->optimizer != ZT_OPT_ADAMW)
        return zt_fail(ZT_ERR_INVALID, "unknown optimizer %d", (int)c->optimizer);
    if (c->schedule != ZT_SCHED_CONSTANT && c->schedule != ZT_SCHED_STEP &&
        c->schedule != ZT_SCHED_COSINE)
        return zt_fail(ZT_ERR_INVALID, "unknown lr schedule %d", (int)c->schedule);
    if (!(c->lr > 0)) return zt_fail(ZT_ERR_INVALID, "lr = %g must be positive", c->lr);
    if (!(c->momentum >= 0 && c->momentum < 1))
        return zt_fail(ZT_ERR_INVALID, "momentum = %g must be in [0, 1)", c->momentum);
    if (!(c->beta1 >= 0 && c->beta1 < 1) || !(c->beta2 >= 0 && c->beta2 < 1))
        return zt_fail(ZT_ERR_INVALID, "adam betas (%g, %g) must be in [0, 1)", c->beta1,
                       c->beta2);
    if (!(c->eps > 0)) return zt_fail(ZT_ERR_INVALID, "adam eps = %g must be positive", c->eps);
    if (!(c->weight_decay >= 0))
        return zt_fail(ZT_ERR_INVALID, "weight_decay = %g must be >= 0", c->weight_decay);
    if (c->warmup_steps < 0)
        return zt_fail(ZT_ERR_INVALID, "warmup_steps = %d must be >= 0", c->warmup_steps);
    if (c->schedule == ZT_SCHED_COSINE && c->total_steps != 0 && c->total_steps <= c->warmup_steps)
        return zt_fail(ZT_ERR_INVALID, "cosine schedule needs total_steps (%d) > warmup_steps (%d)",
                       c->total_steps, c->warmup_steps);
    if (c->total_steps < 0)
        return zt_fail(ZT_ERR_INVALID, "total_steps = %d must be >= 0", c->total_steps);
    if (c->schedule == ZT_SCHED_STEP && (c->step_size < 1 || !(c->step_gamma > 0)))
        return zt_fail(ZT_ERR_INVALID, "step schedule needs step_size >= 1 and step_gamma > 0");
    if (!(c->lr_min >= 0 && c->lr_min <= c->lr))
        return zt_fail(ZT_ERR_INVALID, "lr_min = %g must be in [0, lr]", c->lr_min);
    if (!(c->value_weight >= 0))
        return zt_fail(ZT_ERR_INVALID, "value_weight = %g must be >= 0", c->value_weight);
    if (!(c->chance_weight >= 0) || !(c->commitment_weight >= 0) || !(c->code_balance_weight >= 0))
        return zt_fail(ZT_ERR_INVALID,
                       "chance_weight = %g, commitment_weight = %g and code_balance_weight = %g "
                       "must be >= 0",
                       c->chance_weight, c->commitment_weight, c->code_balance_weight);
    if (!(c->consistency_weight >= 0))
        return zt_fail(ZT_ERR_INVALID, "consistency_weight = %g must be >= 0",
                       c->consistency_weight);
    if (c->micro_batch < 1)
        return zt_fail(ZT_ERR_INVALID, "micro_batch = %d must be >= 1", c->micro_batch);
    if (!(c->clip_norm >= 0))
        return zt_fail(ZT_ERR_INVALID, "clip_norm = %g must be >= 0", c->clip_norm);
    if (!(c->dynamics_grad_scale >= 0 && c->dynamics_grad_scale <= 1))
        return zt_fail(ZT_ERR_INVALID, "dynamics_grad_scale = %g must be in [0, 1]",
                       c->dynamics_grad_scale);
    if (!(c->reward_weight >= 0))
        return zt_fail(ZT_ERR_INVALID, "reward_weight = %g must be >= 0", c->reward_weight);
    return ZT_OK;
}

/* The rate at `step`; a cosine of total_steps 0 at `progress`. */
static double lr_of(const zt_train_config *c, long step, double progress)
{
    /* Linear warm-up (Goyal et al. 2017) ends at the schedule's start value. */
    if (step < c->warmup_steps) return c->lr * (double)(step + 1) / c->warmup_steps;
    long t = step - c->warmup_steps;
    switch (c->schedule) {
    case ZT_SCHED_CONSTANT: return c->lr;
    case ZT_SCHED_STEP: return c->lr * pow(c->step_gamma, (double)(t / c->step_size));
    case ZT_SCHED_COSINE: {
        /* SGDR's cosine annealing without restarts (Loshchilov & Hutter 2017). */
        double p;
        if (c->total_steps == 0) {
            p = progress > 0 ? (progress < 1 ? progress : 1) : 0;
        } else {
            long span = c->total_steps - c->warmup_steps;
            p = t >= span ? 1 : (double)t / span;
        }
        if (p >= 1) return c->lr_min;
        return c->lr_min + 0.5 * (c->lr - c->lr_min) * (1 + cos(M_PI * p));
    }
    }
    return c->lr;
}

double zt_trainer_lr_at(const zt_train_config *c, long step)
{
    return lr_of(c, step, 0);
}

void zt_trainer_set_progress(zt_trainer *t, double progress)
{
    t->progress = progress;
}

double zt_trainer_lr(const zt_trainer *t)
{
    return lr_of(&t->cfg, t->step, t->progress);
}

zt_status zt_trainer_new(zt_net *net, const zt_train_config *cfg, zt_trainer **out)
{
    ZT_TRY(check_config(cfg));
    if (zt_net_precision(net) == ZT_PRECISION_INT8)
        return zt_fail(ZT_ERR_UNSUPPORTED, "an int8 net cannot be trained: train in bf16 or fp32 "
                                           "and quantise the published weights");
    zt_trainer *t = zt_xcalloc(1, sizeof *t);
    t->net = net;
    t->cfg = *cfg;
    t->n = zt_net_param_count(net);
    size_t bytes = (t->n + 1) * sizeof(float);
    t->grads = zt_aligned_alloc(ZT_CACHE_LINE, bytes);
    t->m = zt_aligned_alloc(ZT_CACHE_LINE, bytes);
    t->v = cfg->optimizer == ZT_OPT_ADAMW ? zt_aligned_alloc(ZT_CACHE_LINE, bytes) : NULL;
    t->decay = zt_xcalloc(t->n + 1, sizeof *t->decay);
    if (!t->grads || !t->m || (cfg->optimizer == ZT_OPT_ADAMW && !t->v)) {
        zt_trainer_free(t);
        return zt_fail(ZT_ERR_NOMEM, "no memory for the optimizer state");
    }
    const zt_nn_graph *g = zt_net_graph(net);
    for (int i = 0; i < g->nparams; i++)
        if (g->params[i].decay)
            for (size_t e = 0; e < g->params[i].count; e++) t->decay[g->params[i].offset + e] = 1;
    const zt_nn_backend *be = zt_net_backend(net);
    if (!cfg->host_optimizer && !zt_net_mz(net) && be->opt_attach) {
        zt_status s = be->opt_attach(zt_net_plan(net), cfg->optimizer == ZT_OPT_ADAMW, t->decay);
        if (s != ZT_OK) {
            zt_trainer_free(t);
            return s;
        }
        t->device = true;
    }
    *out = t;
    return ZT_OK;
}

static void free_batch_buffers(zt_trainer *t)
{
    free(t->policy);
    free(t->value);
    free(t->d_policy);
    free(t->d_value);
    t->policy = t->value = t->d_policy = t->d_value = NULL;
    t->cap = 0;
}

void zt_trainer_free(zt_trainer *t)
{
    if (!t) return;
    free_batch_buffers(t);
    zt_aligned_free(t->grads);
    zt_aligned_free(t->m);
    zt_aligned_free(t->v);
    free(t->decay);
    free(t);
}

long zt_trainer_steps(const zt_trainer *t)
{
    return t->step;
}

static zt_status reserve(zt_trainer *t, int mb)
{
    if (mb <= t->cap) return ZT_OK;
    const zt_net_config *cfg = zt_net_config_of(t->net);
    if (cfg->kind == ZT_NET_MUZERO) { /* the unroll keeps its own buffers */
        t->cap = mb;
        return ZT_OK;
    }
    free_batch_buffers(t);
    size_t np = (size_t)mb * cfg->num_actions, nv = (size_t)mb * zt_net_value_size(cfg);
    t->policy = malloc(np * sizeof(float));
    t->d_policy = malloc(np * sizeof(float));
    t->value = malloc(nv * sizeof(float));
    t->d_value = malloc(nv * sizeof(float));
    if (!t->policy || !t->d_policy || !t->value || !t->d_value) {
        free_batch_buffers(t);
        return zt_fail(ZT_ERR_NOMEM, "no memory for a training batch of %d", mb);
    }
    ZT_TRY(zt_net_backend(t->net)->reserve(zt_net_plan(t->net), mb, true));
    t->cap = mb;
    return ZT_OK;
}

/* Masked softmax cross-entropy of one sample: illegal logits count as -inf.
 * Adds the loss to *loss and writes d loss / d logits scaled by `scale`. */
static void policy_ce(const float *logits, const float *target, const uint8_t *legal, int A,
                      double scale, double *loss, float *d)
{
    double max = -INFINITY, mass = 0;
    for (int a = 0; a < A; a++) {
        ZT_ASSERT(legal[a] || target[a] == 0);
        if (legal[a] && logits[a] > max) max = logits[a];
        mass += target[a];
    }
    if (max == -INFINITY) { /* no legal action: nothing to learn */
        for (int a = 0; a < A; a++) d[a] = 0;
        return;
    }
    double z = 0;
    for (int a = 0; a < A; a++)
        if (legal[a]) z += exp(logits[a] - max);
    double lse = max + log(z);
    for (int a = 0; a < A; a++) {
        if (!legal[a]) {
            d[a] = 0;
            continue;
        }
        double logp = logits[a] - lse;
        if (target[a] > 0) *loss -= target[a] * logp;
        d[a] = (float)(scale * (exp(logp) * mass - target[a]));
    }
}

/* The equity head's loss of one sample: each output's binary cross-entropy
 * of sigmoid(logit) against its target, summed, as gnubg trains its five
 * outputs (the consistency caps are applied at use, not here). Writes d
 * loss / d logit, q - t, scaled by `scale`. log(1 + e^x) - t x is the
 * cross-entropy in a form that neither overflows nor loses the tails. */
static double equity_bce(const float *logits, const float *target, double scale, float *d)
{
    double loss = 0;
    for (int j = 0; j < ZT_EQ_OUTPUTS; j++) {
        double x = logits[j], t = target[j];
        double softplus = x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
        loss += softplus - t * x;
        double q = x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x));
        d[j] = (float)(scale * (q - t));
    }
    return loss;
}

/* Forward and backward over one micro-batch [off, off + B) of a batch of
 * `total` samples; adds each loss term (already divided by total). */
static zt_status micro_batch(zt_trainer *t, const zt_train_batch *b, int off, int B,
                             bool update_stats, float *grads, zt_train_losses *acc)
{
    zt_net *net = t->net;
    if (zt_net_mz(net))
        return zt_mz_micro_batch(zt_net_mz(net), &t->cfg, b, off, B, update_stats, grads, acc);
    const zt_net_config *cfg = zt_net_config_of(net);
    const zt_nn_backend *be = zt_net_backend(net);
    zt_nn_plan *plan = zt_net_plan(net);
    int A = cfg->num_actions, V = zt_net_value_size(cfg);
    size_t obs_n = (size_t)cfg->in_h * cfg->in_w * cfg->in_c;
    float *outs[2] = {t->policy, t->value};
    ZT_TRY(be->forward(plan, B, b->obs + (size_t)off * obs_n, outs, true, update_stats));
    double scale = 1.0 / b->B, vw = t->cfg.value_weight;
    double policy = 0, value = 0;
    for (int n = 0; n < B; n++) {
        size_t s = (size_t)(off + n);
        policy_ce(t->policy + (size_t)n * A, b->policy_target + s * A, b->legal + s * A, A,
                  scale, &policy, t->d_policy + (size_t)n * A);
        const float *v = t->value + (size_t)n * V;
        float *dv = t->d_value + (size_t)n * V;
        if (cfg->value_kind == ZT_VALUE_SCALAR) {
            double err = v[0] - b->value_target[s];
            value += err * err;
            dv[0] = (float)(2 * err * scale * vw);
        } else if (cfg->value_kind == ZT_VALUE_EQUITY) {
            value += equity_bce(v, b->value_target + s * ZT_EQ_OUTPUTS, scale * vw, dv);
        } else {
            static const uint8_t all3[3] = {1, 1, 1};
            double ce = 0;
            policy_ce(v, b->value_target + s * 3, all3, 3, scale * vw, &ce, dv);
            value += ce;
        }
    }
    acc->policy += policy * scale;
    acc->value += value * scale;
    const float *d_outs[2] = {t->d_policy, t->d_value};
    return be->backward(plan, B, d_outs, grads, NULL);
}

/* The weighted sum of the terms (l2 included), as the gradient has it. */
static double total_loss(const zt_train_config *c, const zt_train_losses *l)
{
    return l->policy + c->value_weight * (l->value + l->afterstate) + c->reward_weight * l->reward +
           c->chance_weight * l->chance + c->commitment_weight * l->commitment +
           c->code_balance_weight * l->code_balance + c->consistency_weight * l->consistency +
           l->turn + l->l2;
}

/* The batch's losses and gradient: into grads, or with grads NULL (the
 * optimizer on the device) into the backend's own accumulator. */
static zt_status run_batch(zt_trainer *t, const zt_train_batch *b, bool update_stats,
                           float *grads, zt_train_losses *out)
{
    ZT_ASSERT(b->B > 0);
    ZT_ASSERT((b->unroll > 0) == (zt_net_config_of(t->net)->kind == ZT_NET_MUZERO));
    ZT_ASSERT(grads || t->device);
    int mb = b->B < t->cfg.micro_batch ? b->B : t->cfg.micro_batch;
    ZT_TRY(reserve(t, mb));
    if (grads) memset(grads, 0, t->n * sizeof(float));
    memset(out, 0, sizeof *out);
    for (int off = 0; off < b->B; off += mb) {
        int B = b->B - off < mb ? b->B - off : mb;
        ZT_TRY(micro_batch(t, b, off, B, update_stats, grads, out));
    }
    double sq = 0, l2 = 0;
    if (!grads) {
        ZT_TRY(zt_net_backend(t->net)->opt_norms(zt_net_plan(t->net), &sq, &l2));
    } else {
        const float *w = zt_net_params(t->net);
        for (size_t i = 0; i < t->n; i++) {
            sq += (double)grads[i] * grads[i];
            if (t->decay[i]) l2 += (double)w[i] * w[i];
        }
    }
    out->grad_norm = sqrt(sq);
    out->l2 = 0.5 * t->cfg.weight_decay * l2;
    out->total = total_loss(&t->cfg, out);
    return ZT_OK;
}

zt_status zt_trainer_loss_grad(zt_trainer *t, const zt_train_batch *batch, zt_train_losses *out,
                               float *grads)
{
    ZT_TRY(run_batch(t, batch, false, grads, out));
    const float *w = zt_net_params(t->net);
    double wd = t->cfg.weight_decay;
    for (size_t i = 0; i < t->n; i++)
        if (t->decay[i]) grads[i] += (float)(wd * w[i]);
    out->lr = zt_trainer_lr(t);
    return ZT_OK;
}

zt_status zt_trainer_step(zt_trainer *t, const zt_train_batch *batch, zt_train_losses *out)
{
    return zt_trainer_step_reduced(t, batch, NULL, NULL, out, NULL);
}

zt_status zt_trainer_step_reduced(zt_trainer *t, const zt_train_batch *batch,
                                  zt_trainer_reduce_fn reduce, void *ctx, zt_train_losses *out,
                                  bool *skipped)
{
    zt_train_losses losses;
    if (skipped) *skipped = false;
    if (batch) {
        /* a gradient to reduce comes to the host; else on the device it stays */
        ZT_TRY(run_batch(t, batch, true, t->device && !reduce ? NULL : t->grads, &losses));
    } else {
        ZT_ASSERT(reduce != NULL);
        memset(t->grads, 0, t->n * sizeof(float));
        memset(&losses, 0, sizeof losses);
    }
    if (reduce) {
        bool skip = false;
        ZT_TRY(reduce(ctx, t->grads, t->n, &losses, batch != NULL, &skip));
        if (skip) {
            if (skipped) *skipped = true;
            return ZT_OK;
        }
        /* the norm of the mean gradient, for the same clipping everywhere */
        double sq = 0, l2 = 0;
        const float *w = zt_net_params(t->net);
        for (size_t i = 0; i < t->n; i++) {
            sq += (double)t->grads[i] * t->grads[i];
            if (t->decay[i]) l2 += (double)w[i] * w[i];
        }
        losses.grad_norm = sqrt(sq);
        losses.l2 = 0.5 * t->cfg.weight_decay * l2;
        losses.total = total_loss(&t->cfg, &losses);
    }
    const zt_train_config *c = &t->cfg;
    /* clipping scales the gradient by k */
    bool clip = c->clip_norm > 0 && losses.grad_norm > c->clip_norm;
    float k = clip ? (float)(c->clip_norm / losses.grad_norm) : 1.0f;
    double lr = zt_trainer_lr(t);
    losses.lr = lr;
    if (t->device) {
        zt_nn_opt o = {.adamw = c->optimizer == ZT_OPT_ADAMW,
                       .lr = lr,
                       .momentum = c->momentum,
                       .weight_decay = c->weight_decay,
                       .beta1 = c->beta1,
                       .beta2 = c->beta2,
                       .eps = c->eps,
                       .t = t->step + 1};
        ZT_TRY(zt_net_backend(t->net)->opt_step(zt_net_plan(t->net), &o, k,
                                                  reduce ? t->grads : NULL));
        t->step++;
        if (out) *out = losses;
        return ZT_OK;
    }
    float *g = t->grads, *w = zt_net_params(t->net), *m = t->m, *v = t->v;
    if (clip)
        for (size_t i = 0; i < t->n; i++) g[i] *= k;
    t->step++;
    if (c->optimizer == ZT_OPT_SGD) {
        /* Nesterov momentum in Sutskever et al.'s (2013) reformulation, as
         * PyTorch: buf = mu*buf + g; w -= lr * (g + mu*buf), with the L2
         * gradient wd*w added to g. */
        float mu = (float)c->momentum, wd = (float)c->weight_decay, flr = (float)lr;
        for (size_t i = 0; i < t->n; i++) {
            float gi = g[i] + (t->decay[i] ? wd * w[i] : 0.0f);
            m[i] = mu * m[i] + gi;
            w[i] -= flr * (gi + mu * m[i]);
        }
    } else {
        /* AdamW (Loshchilov & Hutter 2019, Algorithm 2): decay decoupled from
         * the adaptive step, bias-corrected moments (Kingma & Ba 2015). */
        double bc1 = 1 - pow(c->beta1, (double)t->step), bc2 = 1 - pow(c->beta2, (double)t->step);
        float b1 = (float)c->beta1, b2 = (float)c->beta2;
        float step_size = (float)(lr / bc1), inv_bc2 = (float)(1 / bc2), eps = (float)c->eps;
        float shrink = (float)(1 - lr * c->weight_decay);
        for (size_t i = 0; i < t->n; i++) {
            if (t->decay[i]) w[i] *= shrink;
            m[i] = b1 * m[i] + (1 - b1) * g[i];
            v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
            w[i] -= step_size * m[i] / (sqrtf(v[i] * inv_bc2) + eps);
        }
    }
    zt_net_params_changed(t->net);
    if (out) *out = losses;
    return ZT_OK;
}

/* ---- optimizer-state file ---- */

#define TRAIN_FORMAT "1"

static const char *optimizer_name(zt_optimizer_kind k)
{
    return k == ZT_OPT_ADAMW ? "adamw" : "sgd";
}

/* The moment tensors are named "<moment>.<parameter name>". */
static void moment_name(char *buf, size_t cap, const char *moment, const char *param)
{
    int len = snprintf(buf, cap, "%s.%s", moment, param);
    ZT_ASSERT(len > 0 && (size_t)len < cap);
}

zt_status zt_trainer_save(const zt_trainer *t, const char *path)
{
    const zt_nn_graph *g = zt_net_graph(t->net);
    if (t->device)
        ZT_TRY(zt_net_backend(t->net)->opt_moments(zt_net_plan(t->net), t->m, t->v, false));
    int moments = t->v ? 2 : 1;
    zt_st_tensor *ts = zt_xcalloc((size_t)g->nparams * 2 + 1, sizeof *ts);
    char(*names)[96] = zt_xcalloc((size_t)g->nparams * 2 + 1, sizeof *names);
    int n = 0;
    for (int mo = 0; mo < moments; mo++)
        for (int i = 0; i < g->nparams; i++) {
            const zt_nn_param *p = &g->params[i];
            if (!p->trainable) continue;
            moment_name(names[n], sizeof names[n], mo == 0 ? "m" : "v", p->name);
            ts[n].name = names[n];
            ts[n].ndim = p->ndim;
            memcpy(ts[n].shape, p->shape, sizeof ts[n].shape);
            ts[n].data = (mo == 0 ? t->m : t->v) + p->offset;
            n++;
        }
    char arch[256], step[32];
    zt_net_config_format(zt_net_config_of(t->net), arch, sizeof arch);
    snprintf(step, sizeof step, "%ld", t->step);
    zt_st_meta meta[] = {{"format", "zeroth-optimizer"},
                         {"version", TRAIN_FORMAT},
                         {"architecture", arch},
                         {"optimizer", optimizer_name(t->cfg.optimizer)},
                         {"step", step}};
    zt_status s = zt_st_write(path, ts, n, meta, (int)(sizeof meta / sizeof meta[0]));
    free(names);
    free(ts);
    return s;
}

zt_status zt_trainer_load(zt_trainer *t, const char *path)
{
    zt_st_file f;
    ZT_TRY(zt_st_open(path, &f));
    zt_status s = ZT_OK;
    char arch[256];
    zt_net_config_format(zt_net_config_of(t->net), arch, sizeof arch);
    const char *format = zt_st_meta_get(&f, "format"), *version = zt_st_meta_get(&f, "version");
    const char *farch = zt_st_meta_get(&f, "architecture");
    const char *opt = zt_st_meta_get(&f, "optimizer"), *step = zt_st_meta_get(&f, "step");
    char *end = NULL;
    long steps = step ? strtol(step, &end, 10) : -1;
    int expected = 0;
    const zt_nn_graph *g = zt_net_graph(t->net);
    for (int i = 0; i < g->nparams; i++) expected += g->params[i].trainable;
    if (t->v) expected *= 2;
    if (!format || strcmp(format, "zeroth-optimizer") != 0)
        s = zt_fail(ZT_ERR_INVALID, "'%s' is not a Zeroth optimizer-state file", path);
    else if (!version || strcmp(version, TRAIN_FORMAT) != 0)
        s = zt_fail(ZT_ERR_UNSUPPORTED, "'%s' has optimizer-state format version '%s', not %s",
                    path, version ? version : "", TRAIN_FORMAT);
    else if (!farch || strcmp(farch, arch) != 0)
        s = zt_fail(ZT_ERR_INVALID, "'%s' is optimizer state for architecture '%s', not '%s'",
                    path, farch ? farch : "", arch);
    else if (!opt || strcmp(opt, optimizer_name(t->cfg.optimizer)) != 0)
        s = zt_fail(ZT_ERR_INVALID, "'%s' is optimizer state for '%s', not '%s'", path,
                    opt ? opt : "", optimizer_name(t->cfg.optimizer));
    else if (steps < 0 || *end != '\0')
        s = zt_fail(ZT_ERR_CORRUPT, "'%s' has a malformed step count", path);
    else if (f.nentries != expected)
        s = zt_fail(ZT_ERR_INVALID, "'%s' holds %d tensors, this optimizer has %d", path,
                    f.nentries, expected);
    /* Everything is checked before anything is written, so a refused file
     * leaves the trainer as it was. */
    for (int pass = 0; pass < 2 && s == ZT_OK; pass++)
        for (int mo = 0; mo < (t->v ? 2 : 1) && s == ZT_OK; mo++)
            for (int i = 0; i < g->nparams && s == ZT_OK; i++) {
                const zt_nn_param *p = &g->params[i];
                if (!p->trainable) continue;
                char name[96];
                moment_name(name, sizeof name, mo == 0 ? "m" : "v", p->name);
                float *dst = pass == 0 ? NULL : (mo == 0 ? t->m : t->v) + p->offset;
                s = zt_st_read_tensor(&f, name, p->ndim, p->shape, dst);
            }
    if (s == ZT_OK && t->device)
        s = zt_net_backend(t->net)->opt_moments(zt_net_plan(t->net), t->m, t->v, true);
    if (s == ZT_OK) t->step = steps;
    zt_st_close(&f);
    return s;
}
