/* The shared evaluator (evaluator.h): clients queue their batches, one
 * service thread merges whatever is queued into one network call, runs it
 * and scatters the rows back. A client waits only for the batch holding its
 * own rows; the service never waits for a client that has nothing queued,
 * so with several actors their tree work overlaps the network calls of the
 * others. Nothing is allocated after zt_eval_service_new. */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/evaluator.h"
#include "core/alloc.h"
#include "core/fault.h"
#include "core/timer.h"

enum { IDLE, QUEUED, TAKEN, DONE };

typedef struct client {
    zt_eval_service *svc;
    int state; /* IDLE, QUEUED, TAKEN, DONE; under svc->mu */
    int B;
    const float *obs;
    float *logits, *value;
    int offset; /* first row in the merged batch */
    zt_status status;
    char message[ZT_MESSAGE_MAX];
    pthread_cond_t done;
} client;

struct zt_eval_service {
    zt_net *net;
    int nclients, client_batch, max_batch;
    int obs_size, num_actions, value_size;
    zt_value_kind value_kind;
    float *obs, *logits, *values, *wdl; /* the merged batch (wdl: the raw value head, value_size > 1) */
    client *clients;
    int *taken; /* clients in the batch being run */
    pthread_mutex_t mu;
    pthread_cond_t work;
    pthread_t thread;
    bool started, stop;
    int queued;
    /* zt_eval_service_exclusive; excl_mu orders its callers */
    pthread_mutex_t excl_mu;
    zt_status (*excl_fn)(void *ctx);
    void *excl_ctx;
    bool excl_done;
    zt_status excl_status;
    char excl_message[ZT_MESSAGE_MAX];
    pthread_cond_t excl_cv;
    zt_evaluator_stats stats;
    uint64_t *batch_counts;
};

/* Runs the merged batch (rows already gathered), off the lock; returns the
 * status every client in it gets. */
static zt_status run_batch(zt_eval_service *svc, int rows, uint64_t *ns)
{
    if (zt_fault_hit(ZT_FAULT_EVAL))
        return zt_fail(ZT_ERR_IO, "evaluator service: injected fault (ZT_FAULT=eval)");
    uint64_t t0 = zt_now_ns();
    ZT_TRY(zt_net_forward(svc->net, rows, svc->obs, svc->logits, svc->value_size == 1 ? svc->values : svc->wdl));
    *ns = zt_now_ns() - t0;
    if (svc->value_size > 1) zt_net_head_to_value(svc->value_kind, rows, svc->wdl, svc->values);
    return ZT_OK;
}

static void *service_main(void *arg)
{
    zt_eval_service *svc = arg;
    size_t A = (size_t)svc->num_actions, O = (size_t)svc->obs_size;
    pthread_mutex_lock(&svc->mu);
    for (;;) {
        while (!svc->stop && svc->queued == 0 && !svc->excl_fn) pthread_cond_wait(&svc->work, &svc->mu);
        if (svc->excl_fn) {
            svc->excl_status = svc->excl_fn(svc->excl_ctx);
            if (svc->excl_status != ZT_OK)
                snprintf(svc->excl_message, sizeof svc->excl_message, "%s", zt_error_message());
            svc->excl_fn = NULL;
            svc->excl_done = true;
            pthread_cond_broadcast(&svc->excl_cv);
            continue;
        }
        if (svc->stop) break;
        /* take every queued request, in client order */
        int n = 0, rows = 0;
        for (int i = 0; i < svc->nclients; i++) {
            client *c = &svc->clients[i];
            if (c->state != QUEUED) continue;
            c->state = TAKEN;
            c->offset = rows;
            rows += c->B;
            svc->taken[n++] = i;
        }
        svc->queued = 0;
        pthread_mutex_unlock(&svc->mu);

        for (int k = 0; k < n; k++) {
            const client *c = &svc->clients[svc->taken[k]];
            memcpy(svc->obs + (size_t)c->offset * O, c->obs, (size_t)c->B * O * sizeof(float));
        }
        uint64_t ns = 0;
        zt_status st = run_batch(svc, rows, &ns);
        char message[ZT_MESSAGE_MAX];
        message[0] = '\0';
        if (st != ZT_OK) snprintf(message, sizeof message, "%s", zt_error_message());
        for (int k = 0; k < n && st == ZT_OK; k++) {
            client *c = &svc->clients[svc->taken[k]];
            memcpy(c->logits, svc->logits + (size_t)c->offset * A, (size_t)c->B * A * sizeof(float));
            memcpy(c->value, svc->values + c->offset, (size_t)c->B * sizeof(float));
        }

        pthread_mutex_lock(&svc->mu);
        if (st == ZT_OK) {
            svc->stats.calls++;
            svc->stats.positions += (uint64_t)rows;
            svc->stats.net_ns += ns;
            svc->batch_counts[rows]++;
        }
        for (int k = 0; k < n; k++) {
            client *c = &svc->clients[svc->taken[k]];
            c->status = st;
            if (st != ZT_OK) memcpy(c->message, message, sizeof message);
            c->state = DONE;
            pthread_cond_signal(&c->done);
        }
    }
    pthread_mutex_unlock(&svc->mu);
    return NULL;
}

static zt_status client_eval(void *ctx, int B, const float *obs, float *logits, float *value)
{
    client *c = ctx;
    zt_eval_service *svc = c->svc;
    if (B < 1 || B > svc->client_batch)
        return zt_fail(ZT_ERR_INVALID, "evaluator service: batch %d outside 1..%d", B, svc->client_batch);
    pthread_mutex_lock(&svc->mu);
    ZT_ASSERT(c->state == IDLE);
    c->B = B;
    c->obs = obs;
    c->logits = logits;
    c->value = value;
    c->state = QUEUED;
    svc->queued++;
    pthread_cond_signal(&svc->work);
    while (c->state != DONE) pthread_cond_wait(&c->done, &svc->mu);
    c->state = IDLE;
    zt_status st = c->status;
    pthread_mutex_unlock(&svc->mu);
    if (st != ZT_OK) return zt_fail(st, "%s", c->message);
    return ZT_OK;
}

zt_status zt_eval_service_new(zt_net *net, int clients, int client_batch, zt_eval_service **out)
{
    *out = NULL;
    if (clients < 1 || client_batch < 1)
        return zt_fail(ZT_ERR_INVALID, "evaluator service: clients and batch must be >= 1");
    zt_eval_service *svc = zt_xcalloc(1, sizeof *svc);
    const zt_net_config *cfg = zt_net_config_of(net);
    svc->net = net;
    svc->nclients = clients;
    svc->client_batch = client_batch;
    svc->max_batch = clients * client_batch;
    svc->obs_size = cfg->in_h * cfg->in_w * cfg->in_c;
    svc->num_actions = cfg->num_actions;
    svc->value_size = zt_net_value_size(cfg);
    svc->value_kind = cfg->value_kind;
    pthread_mutex_init(&svc->mu, NULL);
    pthread_mutex_init(&svc->excl_mu, NULL);
    pthread_cond_init(&svc->work, NULL);
    pthread_cond_init(&svc->excl_cv, NULL);
    svc->clients = zt_xcalloc((size_t)clients, sizeof *svc->clients);
    for (int i = 0; i < clients; i++) {
        svc->clients[i].svc = svc;
        pthread_cond_init(&svc->clients[i].done, NULL);
    }
    size_t M = (size_t)svc->max_batch;
    svc->taken = malloc((size_t)clients * sizeof *svc->taken);
    svc->obs = malloc(M * (size_t)svc->obs_size * sizeof(float));
    svc->logits = malloc(M * (size_t)svc->num_actions * sizeof(float));
    svc->values = malloc(M * sizeof(float));
    svc->wdl = svc->value_size > 1 ? malloc(M * (size_t)svc->value_size * sizeof(float)) : NULL;
    svc->batch_counts = calloc(M + 1, sizeof *svc->batch_counts);
    zt_status st = ZT_OK;
    if (!svc->taken || !svc->obs || !svc->logits || !svc->values || (svc->value_size > 1 && !svc->wdl) ||
        !svc->batch_counts)
        st = zt_fail(ZT_ERR_NOMEM, "evaluator service buffers for batch %d", svc->max_batch);
    if (st == ZT_OK) st = zt_net_reserve(net, svc->max_batch);
    if (st == ZT_OK) {
        if (pthread_create(&svc->thread, NULL, service_main, svc) != 0)
            st = zt_fail(ZT_ERR_UNSUPPORTED, "evaluator service: cannot start its thread");
        else
            svc->started = true;
    }
    if (st != ZT_OK) {
        zt_eval_service_free(svc);
        return st;
    }
    *out = svc;
    return ZT_OK;
}

void zt_eval_service_free(zt_eval_service *svc)
{
    if (!svc) return;
    if (svc->started) {
        pthread_mutex_lock(&svc->mu);
        svc->stop = true;
        pthread_cond_signal(&svc->work);
        pthread_mutex_unlock(&svc->mu);
        pthread_join(svc->thread, NULL);
    }
    for (int i = 0; i < svc->nclients; i++) pthread_cond_destroy(&svc->clients[i].done);
    pthread_cond_destroy(&svc->excl_cv);
    pthread_cond_destroy(&svc->work);
    pthread_mutex_destroy(&svc->mu);
    pthread_mutex_destroy(&svc->excl_mu);
    free(svc->clients);
    free(svc->taken);
    free(svc->obs);
    free(svc->logits);
    free(svc->values);
    free(svc->wdl);
    free(svc->batch_counts);
    free(svc);
}

zt_evaluator zt_eval_service_client(zt_eval_service *svc, int i)
{
    ZT_ASSERT(i >= 0 && i < svc->nclients);
    return (zt_evaluator){.ctx = &svc->clients[i], .eval = client_eval};
}

zt_evaluator_stats zt_eval_service_get_stats(zt_eval_service *svc)
{
    pthread_mutex_lock(&svc->mu);
    zt_evaluator_stats s = svc->stats;
    pthread_mutex_unlock(&svc->mu);
    return s;
}

void zt_eval_service_batch_counts(zt_eval_service *svc, uint64_t *counts)
{
    pthread_mutex_lock(&svc->mu);
    memcpy(counts, svc->batch_counts, ((size_t)svc->max_batch + 1) * sizeof *counts);
    pthread_mutex_unlock(&svc->mu);
}

int zt_eval_service_max_batch(const zt_eval_service *svc)
{
    return svc->max_batch;
}

zt_status zt_eval_service_exclusive(zt_eval_service *svc, zt_status (*fn)(void *ctx), void *ctx)
{
    pthread_mutex_lock(&svc->excl_mu);
    pthread_mutex_lock(&svc->mu);
    svc->excl_fn = fn;
    svc->excl_ctx = ctx;
    svc->excl_done = false;
    pthread_cond_signal(&svc->work);
    while (!svc->excl_done) pthread_cond_wait(&svc->excl_cv, &svc->mu);
    zt_status st = svc->excl_status;
    char message[ZT_MESSAGE_MAX];
    memcpy(message, svc->excl_message, sizeof message);
    pthread_mutex_unlock(&svc->mu);
    pthread_mutex_unlock(&svc->excl_mu);
    if (st != ZT_OK) return zt_fail(st, "%s", message);
    return ZT_OK;
}
