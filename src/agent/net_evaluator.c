/* The private evaluator: a net forward pass on the caller's thread. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "agent/evaluator.h"
#include "core/alloc.h"
#include "core/fault.h"
#include "core/timer.h"

struct zt_net_evaluator {
    zt_net *net;
    int max_batch;
    zt_value_kind value_kind;
    int value_size; /* 1 scalar, 3 WDL, 5 equity */
    float *wdl;     /* max_batch x value_size, the raw head of WDL and equity nets */
    uint64_t *batch_counts;
    zt_evaluator_stats stats;
};

void zt_wdl_to_value(int B, const float *wdl, float *value)
{
    zt_net_head_to_value(ZT_VALUE_WDL, B, wdl, value);
}

/* Makes room for batches of B (kernels and buffers): only when a caller
 * goes past the batch it reserved, never in steady state. */
static zt_status grow(zt_net_evaluator *ne, int B)
{
    ZT_TRY(zt_net_reserve(ne->net, B));
    uint64_t *counts = calloc((size_t)ZT_CALL_KINDS * ((size_t)B + 1), sizeof *counts);
    if (!counts) return zt_fail(ZT_ERR_NOMEM, "evaluator: batch counts for %d", B);
    for (int k = 0; k < ZT_CALL_KINDS; k++)
        memcpy(counts + (size_t)k * (B + 1), ne->batch_counts + (size_t)k * (ne->max_batch + 1),
               ((size_t)ne->max_batch + 1) * sizeof *counts);
    free(ne->batch_counts);
    ne->batch_counts = counts;
    if (ne->value_size > 1) {
        float *wdl = realloc(ne->wdl, (size_t)B * (size_t)ne->value_size * sizeof *wdl);
        if (!wdl) return zt_fail(ZT_ERR_NOMEM, "evaluator: value-head buffer for %d", B);
        ne->wdl = wdl;
    }
    ne->max_batch = B;
    return ZT_OK;
}

/* The bookkeeping every call shares: growth, the injected fault, stats. */
static zt_status begin_call(zt_net_evaluator *ne, int B)
{
    if (B < 1) return zt_fail(ZT_ERR_INVALID, "evaluator: batch %d", B);
    if (B > ne->max_batch) ZT_TRY(grow(ne, B));
    if (zt_fault_hit(ZT_FAULT_EVAL))
        return zt_fail(ZT_ERR_IO, "evaluator: injected fault (ZT_FAULT=eval)");
    return ZT_OK;
}

static void end_call(zt_net_evaluator *ne, zt_eval_call kind, int B, uint64_t t0)
{
    ne->stats.net_ns += zt_now_ns() - t0;
    ne->stats.calls++;
    ne->stats.positions += (uint64_t)B;
    ne->batch_counts[(size_t)kind * (ne->max_batch + 1) + B]++;
}

static zt_status net_eval(void *ctx, int B, const float *obs, float *logits, float *value)
{
    zt_net_evaluator *ne = ctx;
    ZT_TRY(begin_call(ne, B));
    uint64_t t0 = zt_now_ns();
    ZT_TRY(zt_net_forward(ne->net, B, obs, logits, ne->value_size == 1 ? value : ne->wdl));
    end_call(ne, ZT_CALL_EVAL, B, t0);
    if (ne->value_size > 1) zt_net_head_to_value(ne->value_kind, B, ne->wdl, value);
    return ZT_OK;
}

static zt_status net_initial(void *ctx, int B, const float *obs, float *hidden, float *logits,
                             float *value)
{
    zt_net_evaluator *ne = ctx;
    ZT_TRY(begin_call(ne, B));
    uint64_t t0 = zt_now_ns();
    ZT_TRY(zt_net_initial(ne->net, B, obs, hidden, logits, value));
    end_call(ne, ZT_CALL_INITIAL, B, t0);
    return ZT_OK;
}

static zt_status net_recurrent(void *ctx, int B, const float *hidden, const int *actions,
                               float *next_hidden, float *reward, float *logits, float *value,
                               float *turn)
{
    zt_net_evaluator *ne = ctx;
    ZT_TRY(begin_call(ne, B));
    uint64_t t0 = zt_now_ns();
    ZT_TRY(zt_net_recurrent(ne->net, B, hidden, actions, next_hidden, reward, logits, value, turn));
    end_call(ne, ZT_CALL_RECURRENT, B, t0);
    return ZT_OK;
}

static zt_status net_afterstate(void *ctx, int B, const float *hidden, const int *actions,
                                float *after, float *chance_logits, float *q)
{
    zt_net_evaluator *ne = ctx;
    ZT_TRY(begin_call(ne, B));
    uint64_t t0 = zt_now_ns();
    ZT_TRY(zt_net_afterstate(ne->net, B, hidden, actions, after, chance_logits, q));
    end_call(ne, ZT_CALL_AFTERSTATE, B, t0);
    return ZT_OK;
}

zt_status zt_net_evaluator_new(zt_net *net, int max_batch, zt_net_evaluator **out)
{
    *out = NULL;
    if (max_batch < 1) return zt_fail(ZT_ERR_INVALID, "evaluator: max_batch must be >= 1");
    ZT_TRY(zt_net_reserve(net, max_batch));
    zt_net_evaluator *ne = zt_xcalloc(1, sizeof *ne);
    ne->net = net;
    ne->max_batch = max_batch;
    ne->value_kind = zt_net_config_of(net)->value_kind;
    ne->value_size = zt_net_value_size(zt_net_config_of(net));
    ne->batch_counts =
        calloc((size_t)ZT_CALL_KINDS * ((size_t)max_batch + 1), sizeof *ne->batch_counts);
    if (ne->value_size > 1)
        ne->wdl = malloc((size_t)max_batch * (size_t)ne->value_size * sizeof *ne->wdl);
    if (!ne->batch_counts || (ne->value_size > 1 && !ne->wdl)) {
        zt_net_evaluator_free(ne);
        return zt_fail(ZT_ERR_NOMEM, "evaluator buffers for batch %d", max_batch);
    }
    *out = ne;
    return ZT_OK;
}

void zt_net_evaluator_free(zt_net_evaluator *ne)
{
    if (!ne) return;
    free(ne->wdl);
    free(ne->batch_counts);
    free(ne);
}

zt_evaluator zt_evaluator_of_net(const zt_net_config *cfg, zt_evaluator calls)
{
    zt_evaluator ev = {.ctx = calls.ctx, .eval = calls.eval};
    if (cfg->kind != ZT_NET_MUZERO) {
        ev.chance_values = cfg->chance_values != 0;
        return ev;
    }
    ev.initial = calls.initial;
    ev.recurrent = calls.recurrent;
    ev.hidden_size = zt_net_hidden_size(cfg);
    ev.turns = cfg->turn_head != 0;
    ev.afterstate = cfg->chance_codes > 0 ? calls.afterstate : NULL;
    ev.chance_codes = cfg->chance_codes;
    return ev;
}

zt_evaluator zt_net_evaluator_get(zt_net_evaluator *ne)
{
    return zt_evaluator_of_net(zt_net_config_of(ne->net),
                               (zt_evaluator){.ctx = ne,
                                              .eval = net_eval,
                                              .initial = net_initial,
                                              .recurrent = net_recurrent,
                                              .afterstate = net_afterstate});
}

zt_evaluator_stats zt_net_evaluator_get_stats(const zt_net_evaluator *ne)
{
    return ne->stats;
}

const uint64_t *zt_net_evaluator_batch_counts(const zt_net_evaluator *ne)
{
    return ne->batch_counts;
}

int zt_net_evaluator_max_batch(const zt_net_evaluator *ne)
{
    return ne->max_batch;
}
