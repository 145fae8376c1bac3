/* A run's reanalyse worker: see reanalysis.h. */
#include "train/reanalysis.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "agent/evaluator.h"
#include "agent/mz_model.h"
#include "core/alloc.h"
#include "core/log.h"
#include "core/timer.h"

struct zt_reanalysis {
    const zt_train_settings *S;
    zt_net *net;
    zt_net_evaluator *ne;
    zt_evaluator ev;
    zt_reanalyser *ra;
    zt_reanalyse_stats last; /* at the last metrics record */
    double last_time;
};

zt_status zt_reanalysis_new(const zt_game *g, const zt_train_settings *S, zt_reanalysis **out)
{
    *out = NULL;
    if (S->reanalyse_fraction <= 0) return ZT_OK;
    zt_reanalysis *w = zt_xcalloc(1, sizeof *w);
    w->S = S;
    zt_reanalyse_config rc = {.search = S->actor.search,
                              .trees = S->reanalyse_trees,
                              .seed = S->seed ^ 0x7265616e61ULL};
    if (S->reanalyse_simulations > 0) rc.search.num_simulations = S->reanalyse_simulations;
    zt_status st = zt_net_new(&S->net, S->backend, S->precision, S->learner_threads, &w->net);
    if (st == ZT_OK) st = zt_net_evaluator_new(w->net, zt_reanalyser_eval_batch(g, &rc), &w->ne);
    if (st == ZT_OK) {
        w->ev = zt_net_evaluator_get(w->ne);
        zt_model_factory mf = zt_model_factory_for_evaluator();
        st = zt_reanalyser_new(g, &mf, &w->ev, &rc, &w->ra);
    }
    if (st != ZT_OK) {
        zt_reanalysis_free(w);
        return st;
    }
    w->last_time = zt_now_s();
    *out = w;
    return ZT_OK;
}

void zt_reanalysis_free(zt_reanalysis *w)
{
    if (!w) return;
    zt_reanalyser_free(w->ra);
    zt_net_evaluator_free(w->ne);
    zt_net_free(w->net);
    free(w);
}

zt_status zt_reanalysis_after_publish(zt_reanalysis *w, const zt_net *net, zt_replay *rb,
                                      int64_t steps, uint64_t stream)
{
    int64_t count = llround(w->S->reanalyse_fraction * w->S->batch * (double)steps);
    if (count <= 0 || zt_replay_get_stats(rb).positions == 0) return ZT_OK;
    int n = zt_net_tensor_count(net);
    ZT_ASSERT(n == zt_net_tensor_count(w->net));
    for (int i = 0; i < n; i++) {
        zt_net_tensor src = zt_net_tensor_at(net, i), dst = zt_net_tensor_at(w->net, i);
        ZT_ASSERT(src.count == dst.count);
        memcpy(dst.data, src.data, src.count * sizeof(float));
    }
    zt_net_params_changed(w->net);
    return zt_reanalyser_run(w->ra, rb, count, stream);
}

void zt_reanalysis_report(zt_reanalysis *w, zt_scheduler *sched, bool force)
{
    double now = zt_now_s(), dt = now - w->last_time;
    zt_reanalyse_stats s = zt_reanalyser_get_stats(w->ra);
    int64_t done = s.positions - w->last.positions;
    if (done <= 0 || (!force && dt < w->S->log_seconds) || dt <= 0) return;
    int64_t policies = s.policies - w->last.policies;
    double l1 = policies > 0 ? (s.policy_l1 - w->last.policy_l1) / (double)policies : 0;
    zt_scheduler_metric(sched, "reanalyse",
                        "\"reanalysed\":%lld,\"rate\":%.2f,\"busy\":%.4f,\"policy_l1\":%.5f,"
                        "\"skipped\":%lld",
                        (long long)s.positions, (double)done / dt,
                        (s.seconds - w->last.seconds) / dt, l1, (long long)s.skipped);
    w->last = s;
    w->last_time = now;
}

zt_reanalyse_stats zt_reanalysis_stats(const zt_reanalysis *w)
{
    return zt_reanalyser_get_stats(w->ra);
}
