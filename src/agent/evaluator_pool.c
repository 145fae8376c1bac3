/* A pool of evaluators for a set of actors (evaluator.h): private nets, or
 * one net behind the evaluator service. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "agent/evaluator.h"
#include "core/alloc.h"

struct zt_evaluator_pool {
    zt_evaluator_kind kind;
    int clients;
    int nnets;           /* clients (private) or 1 (shared) */
    zt_net **nets;
    uint64_t *versions;  /* weight version of each net (0: none yet) */
    zt_net_evaluator **private_ev;
    zt_eval_service *service;
    pthread_mutex_t mu;  /* shared: orders updates of the one net */
};

zt_status zt_evaluator_pool_new(const zt_net_config *cfg, const char *backend, zt_precision prec,
                                zt_evaluator_kind kind, int clients, int client_batch,
                                int shared_threads, int inflight, zt_evaluator_pool **out)
{
    *out = NULL;
    if (clients < 1 || client_batch < 1)
        return zt_fail(ZT_ERR_INVALID, "evaluator pool: clients and batch must be >= 1");
    zt_evaluator_pool *p = zt_xcalloc(1, sizeof *p);
    p->kind = kind;
    p->clients = clients;
    p->nnets = kind == ZT_EVALUATOR_SHARED ? 1 : clients;
    p->nets = zt_xcalloc((size_t)p->nnets, sizeof *p->nets);
    p->versions = zt_xcalloc((size_t)p->nnets, sizeof *p->versions);
    pthread_mutex_init(&p->mu, NULL);
    zt_status st = ZT_OK;
    if (kind == ZT_EVALUATOR_SHARED) {
        st = zt_net_new(cfg, backend, prec, shared_threads > 0 ? shared_threads : 1, &p->nets[0]);
        if (st == ZT_OK) st = zt_eval_service_new(p->nets[0], clients, client_batch, inflight,
                                                  &p->service);
    } else {
        p->private_ev = zt_xcalloc((size_t)clients, sizeof *p->private_ev);
        for (int i = 0; i < clients && st == ZT_OK; i++) {
            st = zt_net_new(cfg, backend, prec, 1, &p->nets[i]);
            if (st == ZT_OK) st = zt_net_evaluator_new(p->nets[i], client_batch, &p->private_ev[i]);
        }
    }
    if (st != ZT_OK) {
        zt_evaluator_pool_free(p);
        return st;
    }
    *out = p;
    return ZT_OK;
}

void zt_evaluator_pool_free(zt_evaluator_pool *p)
{
    if (!p) return;
    zt_eval_service_free(p->service);
    if (p->private_ev)
        for (int i = 0; i < p->clients; i++) zt_net_evaluator_free(p->private_ev[i]);
    for (int i = 0; i < p->nnets; i++) zt_net_free(p->nets[i]);
    pthread_mutex_destroy(&p->mu);
    free(p->private_ev);
    free(p->nets);
    free(p->versions);
    free(p);
}

zt_evaluator_kind zt_evaluator_pool_kind(const zt_evaluator_pool *p)
{
    return p->kind;
}

zt_evaluator zt_evaluator_pool_client(zt_evaluator_pool *p, int i)
{
    ZT_ASSERT(i >= 0 && i < p->clients);
    if (p->service) return zt_eval_service_client(p->service, i);
    return zt_net_evaluator_get(p->private_ev[i]);
}

zt_net *zt_evaluator_pool_net(zt_evaluator_pool *p, int i)
{
    ZT_ASSERT(i >= 0 && i < p->clients);
    return p->nets[p->service ? 0 : i];
}

typedef struct write_job {
    zt_net *net;
    zt_status (*write)(zt_net *net, void *ctx);
    void *ctx;
} write_job;

static zt_status run_write(void *arg)
{
    write_job *w = arg;
    return w->write(w->net, w->ctx);
}

zt_status zt_evaluator_pool_update(zt_evaluator_pool *p, int i, uint64_t version,
                                   zt_status (*write)(zt_net *net, void *ctx), void *ctx)
{
    ZT_ASSERT(i >= 0 && i < p->clients);
    if (!p->service) {
        if (p->versions[i] == version) return ZT_OK;
        ZT_TRY(write(p->nets[i], ctx));
        p->versions[i] = version;
        return ZT_OK;
    }
    pthread_mutex_lock(&p->mu);
    zt_status st = ZT_OK;
    if (p->versions[0] != version) {
        write_job w = {p->nets[0], write, ctx};
        st = zt_eval_service_exclusive(p->service, run_write, &w);
        if (st == ZT_OK) p->versions[0] = version;
    }
    pthread_mutex_unlock(&p->mu);
    return st;
}

zt_evaluator_stats zt_evaluator_pool_stats(zt_evaluator_pool *p, int i)
{
    if (p->service) return zt_eval_service_get_stats(p->service);
    return zt_net_evaluator_get_stats(p->private_ev[i]);
}

void zt_evaluator_pool_batch_counts(zt_evaluator_pool *p, int i, uint64_t *counts)
{
    if (p->service) {
        zt_eval_service_batch_counts(p->service, counts);
        return;
    }
    const zt_net_evaluator *ne = p->private_ev[i];
    memcpy(counts, zt_net_evaluator_batch_counts(ne),
           (size_t)ZT_CALL_KINDS * ((size_t)zt_net_evaluator_max_batch(ne) + 1) * sizeof *counts);
}

int zt_evaluator_pool_max_batch(const zt_evaluator_pool *p, int i)
{
    if (p->service) return zt_eval_service_max_batch(p->service);
    return zt_net_evaluator_max_batch(p->private_ev[i]);
}
