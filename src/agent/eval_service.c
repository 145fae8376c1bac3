/* The shared evaluator (evaluator.h): clients queue their batches, one
 * service thread merges whatever is queued into one network call, runs it
 * and scatters the rows back. A MuZero net's clients queue initial,
 * recurrent and afterstate calls too; a merged batch holds one kind of call,
 * the kind of the oldest request queued, so no request waits for more than
 * one batch of each other kind. A client waits only for the batch holding its
 * own rows; the service never waits for a client that has nothing queued,
 * so with several actors their tree work overlaps the network calls of the
 * others. With two batches in flight (inflight = 2, on a device that
 * computes while the thread goes on: zt_net_overlaps) the thread gathers and
 * submits the next batch while the device runs one, then scatters that one
 * while the device runs the next: the device does not wait for the
 * gathering, the copies or the clients woken. The default is one: on an
 * H100 Connect Four self-play ran 7-28 % slower with two, whose batches are
 * smaller (docs/cuda.md). Nothing is allocated after zt_eval_service_new. */
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
    zt_eval_call kind;
    uint64_t seq;        /* when it was queued (the oldest request's kind goes first) */
    const float *obs;    /* eval, initial */
    const float *hidden; /* recurrent, afterstate: hidden states (or afterstates) */
    const int *actions;  /* ... and their actions (or chance codes) */
    float *logits, *value;
    /* a MuZero net's further outputs (NULL where the call has none) */
    float *hidden_out, *reward, *turn, *chance_logits, *q;
    int offset; /* first row in the merged batch */
    zt_status status;
    char message[ZT_MESSAGE_MAX];
    pthread_cond_t done;
} client;

/* A merged batch and its buffers (wdl: the raw value head, value_size > 1). */
typedef struct slot {
    int n, rows;  /* clients and rows in it */
    zt_eval_call kind; /* of every request in it */
    int *taken;   /* its clients, in client order */
    float *obs, *logits, *values, *wdl;
    /* a MuZero net's (NULL otherwise): inputs and further outputs */
    float *hidden, *hidden_out, *reward, *turn, *chance_logits, *q;
    int *actions;
    zt_status status; /* its submission's */
    char message[ZT_MESSAGE_MAX];
    uint64_t ns;  /* the thread's time in its net calls */
} slot;

struct zt_eval_service {
    zt_net *net;
    int nclients, client_batch, max_batch;
    int obs_size, num_actions, value_size;
    zt_value_kind value_kind;
    bool muzero, turns;
    size_t hidden_size; /* a MuZero net's floats per hidden state */
    int codes;          /* a Stochastic MuZero net's chance codes */
    int depth;        /* merged batches in flight at most: 1 or 2 */
    slot slots[2];
    int oldest, inflight; /* the slot submitted first, and how many are; under mu */
    client *clients;
    pthread_mutex_t mu;
    pthread_cond_t work;
    pthread_t thread;
    bool started, stop;
    int queued;
    uint64_t seq; /* requests queued so far */
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

/* Under mu: every queued request of the oldest one's kind into slot s, in
 * client order. */
static void take_queued(zt_eval_service *svc, slot *s)
{
    const client *oldest = NULL;
    for (int i = 0; i < svc->nclients; i++) {
        const client *c = &svc->clients[i];
        if (c->state == QUEUED && (!oldest || c->seq < oldest->seq)) oldest = c;
    }
    s->kind = oldest->kind;
    s->n = s->rows = 0;
    for (int i = 0; i < svc->nclients; i++) {
        client *c = &svc->clients[i];
        if (c->state != QUEUED || c->kind != s->kind) continue;
        c->state = TAKEN;
        c->offset = s->rows;
        s->rows += c->B;
        s->taken[s->n++] = i;
    }
    svc->queued -= s->n;
}

/* A MuZero net's call on slot s's gathered rows (synchronous: these calls
 * have no submit/wait split). */
static zt_status muzero_call(zt_eval_service *svc, slot *s)
{
    switch (s->kind) {
    case ZT_CALL_INITIAL:
        return zt_net_initial(svc->net, s->rows, s->obs, s->hidden_out, s->logits, s->values);
    case ZT_CALL_RECURRENT:
        return zt_net_recurrent(svc->net, s->rows, s->hidden, s->actions, s->hidden_out, s->reward,
                                s->logits, s->values, svc->turns ? s->turn : NULL);
    default:
        return zt_net_afterstate(svc->net, s->rows, s->hidden, s->actions, s->hidden_out,
                                 s->chance_logits, s->q);
    }
}

/* Off the lock: gathers slot s's rows and submits them (a MuZero net's
 * call runs here whole). */
static void submit(zt_eval_service *svc, slot *s)
{
    size_t O = (size_t)svc->obs_size, H = svc->hidden_size;
    bool obs = s->kind == ZT_CALL_EVAL || s->kind == ZT_CALL_INITIAL;
    for (int k = 0; k < s->n; k++) {
        const client *c = &svc->clients[s->taken[k]];
        size_t B = (size_t)c->B, at = (size_t)c->offset;
        if (obs) {
            memcpy(s->obs + at * O, c->obs, B * O * sizeof(float));
        } else {
            memcpy(s->hidden + at * H, c->hidden, B * H * sizeof(float));
            memcpy(s->actions + at, c->actions, B * sizeof(int));
        }
    }
    uint64_t t0 = zt_now_ns();
    if (zt_fault_hit(ZT_FAULT_EVAL))
        s->status = zt_fail(ZT_ERR_IO, "evaluator service: injected fault (ZT_FAULT=eval)");
    else if (s->kind == ZT_CALL_EVAL)
        s->status = zt_net_forward_submit(svc->net, (int)(s - svc->slots), s->rows, s->obs);
    else
        s->status = muzero_call(svc, s);
    s->ns = zt_now_ns() - t0;
    if (s->status != ZT_OK) snprintf(s->message, sizeof s->message, "%s", zt_error_message());
}

/* Copies rows [offset, offset + B) of a merged output, `width` floats a
 * row, to dst (when the request asked for it). */
static void scatter(float *dst, const float *src, const client *c, size_t width)
{
    if (dst) memcpy(dst, src + (size_t)c->offset * width, (size_t)c->B * width * sizeof(float));
}

/* Off the lock: waits for slot s's call and scatters its rows. */
static void complete(zt_eval_service *svc, slot *s)
{
    size_t A = (size_t)svc->num_actions, H = svc->hidden_size;
    if (s->status == ZT_OK && s->kind == ZT_CALL_EVAL) {
        uint64_t t0 = zt_now_ns();
        s->status = zt_net_forward_wait(svc->net, (int)(s - svc->slots), s->logits,
                                        svc->value_size == 1 ? s->values : s->wdl);
        s->ns += zt_now_ns() - t0;
        if (s->status != ZT_OK) snprintf(s->message, sizeof s->message, "%s", zt_error_message());
    }
    if (s->status != ZT_OK) return;
    if (s->kind == ZT_CALL_EVAL && svc->value_size > 1)
        zt_net_head_to_value(svc->value_kind, s->rows, s->wdl, s->values);
    for (int k = 0; k < s->n; k++) {
        const client *c = &svc->clients[s->taken[k]];
        if (s->kind == ZT_CALL_AFTERSTATE) {
            scatter(c->hidden_out, s->hidden_out, c, H);
            scatter(c->chance_logits, s->chance_logits, c, (size_t)svc->codes);
            scatter(c->q, s->q, c, 1);
            continue;
        }
        scatter(c->logits, s->logits, c, A);
        scatter(c->value, s->values, c, 1);
        if (s->kind == ZT_CALL_EVAL) continue;
        scatter(c->hidden_out, s->hidden_out, c, H);
        if (s->kind == ZT_CALL_RECURRENT) {
            scatter(c->reward, s->reward, c, 1);
            if (svc->turns) scatter(c->turn, s->turn, c, 1);
        }
    }
}

/* Under mu: slot s's clients get their status and wake. */
static void release(zt_eval_service *svc, slot *s)
{
    if (s->status == ZT_OK) {
        svc->stats.calls++;
        svc->stats.positions += (uint64_t)s->rows;
        svc->stats.net_ns += s->ns;
        svc->batch_counts[(size_t)s->kind * ((size_t)svc->max_batch + 1) + s->rows]++;
    }
    for (int k = 0; k < s->n; k++) {
        client *c = &svc->clients[s->taken[k]];
        c->status = s->status;
        if (s->status != ZT_OK) memcpy(c->message, s->message, sizeof s->message);
        c->state = DONE;
        pthread_cond_signal(&c->done);
    }
}

static void *service_main(void *arg)
{
    zt_eval_service *svc = arg;
    pthread_mutex_lock(&svc->mu);
    for (;;) {
        while (!svc->stop && svc->queued == 0 && !svc->excl_fn && svc->inflight == 0)
            pthread_cond_wait(&svc->work, &svc->mu);
        /* an exclusive function or the stop waits until nothing is in
         * flight, and no batch is submitted meanwhile */
        bool draining = svc->excl_fn || svc->stop;
        if (!draining && svc->queued > 0 && svc->inflight < svc->depth) {
            slot *s = &svc->slots[(svc->oldest + svc->inflight) % svc->depth];
            take_queued(svc, s);
            svc->inflight++;
            pthread_mutex_unlock(&svc->mu);
            submit(svc, s);
            pthread_mutex_lock(&svc->mu);
            continue;
        }
        if (svc->inflight > 0) {
            slot *s = &svc->slots[svc->oldest];
            pthread_mutex_unlock(&svc->mu);
            complete(svc, s);
            pthread_mutex_lock(&svc->mu);
            release(svc, s);
            svc->oldest = (svc->oldest + 1) % svc->depth;
            svc->inflight--;
            continue;
        }
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
    }
    pthread_mutex_unlock(&svc->mu);
    return NULL;
}

/* Queues client c's request (its fields set by the caller, under no lock:
 * the client is idle and only its own thread touches it) and waits for
 * its batch. */
static zt_status queue_and_wait(client *c, zt_eval_call kind, int B)
{
    zt_eval_service *svc = c->svc;
    if (B < 1 || B > svc->client_batch)
        return zt_fail(ZT_ERR_INVALID, "evaluator service: batch %d outside 1..%d", B,
                       svc->client_batch);
    pthread_mutex_lock(&svc->mu);
    ZT_ASSERT(c->state == IDLE);
    c->B = B;
    c->kind = kind;
    c->seq = svc->seq++;
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

static zt_status client_eval(void *ctx, int B, const float *obs, float *logits, float *value)
{
    client *c = ctx;
    c->obs = obs;
    c->logits = logits;
    c->value = value;
    return queue_and_wait(c, ZT_CALL_EVAL, B);
}

static zt_status client_initial(void *ctx, int B, const float *obs, float *hidden, float *logits,
                                float *value)
{
    client *c = ctx;
    c->obs = obs;
    c->hidden_out = hidden;
    c->logits = logits;
    c->value = value;
    return queue_and_wait(c, ZT_CALL_INITIAL, B);
}

static zt_status client_recurrent(void *ctx, int B, const float *hidden, const int *actions,
                                  float *next_hidden, float *reward, float *logits, float *value,
                                  float *turn)
{
    client *c = ctx;
    c->hidden = hidden;
    c->actions = actions;
    c->hidden_out = next_hidden;
    c->reward = reward;
    c->logits = logits;
    c->value = value;
    c->turn = turn;
    return queue_and_wait(c, ZT_CALL_RECURRENT, B);
}

static zt_status client_afterstate(void *ctx, int B, const float *hidden, const int *actions,
                                   float *after, float *chance_logits, float *q)
{
    client *c = ctx;
    c->hidden = hidden;
    c->actions = actions;
    c->hidden_out = after;
    c->chance_logits = chance_logits;
    c->q = q;
    return queue_and_wait(c, ZT_CALL_AFTERSTATE, B);
}

zt_status zt_eval_service_new(zt_net *net, int clients, int client_batch, int inflight,
                              zt_eval_service **out)
{
    *out = NULL;
    if (clients < 1 || client_batch < 1)
        return zt_fail(ZT_ERR_INVALID, "evaluator service: clients and batch must be >= 1");
    if (inflight < 0 || inflight > 2)
        return zt_fail(ZT_ERR_INVALID, "evaluator service: %d batches in flight; 0 (auto), 1 or 2",
                       inflight);
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
    svc->muzero = cfg->kind == ZT_NET_MUZERO;
    svc->turns = svc->muzero && cfg->turn_head;
    svc->hidden_size = svc->muzero ? zt_net_hidden_size(cfg) : 0;
    svc->codes = svc->muzero ? cfg->chance_codes : 0;
    svc->depth = inflight > 0 ? inflight : 1;
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
    bool ok =
        (svc->batch_counts = calloc(ZT_CALL_KINDS * (M + 1), sizeof *svc->batch_counts)) != NULL;
    for (int d = 0; d < svc->depth && ok; d++) {
        slot *s = &svc->slots[d];
        s->taken = malloc((size_t)clients * sizeof *s->taken);
        s->obs = malloc(M * (size_t)svc->obs_size * sizeof(float));
        s->logits = malloc(M * (size_t)svc->num_actions * sizeof(float));
        s->values = malloc(M * sizeof(float));
        s->wdl = svc->value_size > 1 ? malloc(M * (size_t)svc->value_size * sizeof(float)) : NULL;
        ok = s->taken && s->obs && s->logits && s->values && (svc->value_size == 1 || s->wdl);
        if (ok && svc->muzero) {
            size_t H = svc->hidden_size;
            s->hidden = malloc(M * H * sizeof(float));
            s->hidden_out = malloc(M * H * sizeof(float));
            s->actions = malloc(M * sizeof(int));
            s->reward = malloc(M * sizeof(float));
            s->turn = malloc(M * sizeof(float));
            s->q = malloc(M * sizeof(float));
            s->chance_logits =
                malloc(M * (size_t)(svc->codes > 0 ? svc->codes : 1) * sizeof(float));
            ok = s->hidden && s->hidden_out && s->actions && s->reward && s->turn && s->q &&
                 s->chance_logits;
        }
    }
    zt_status st = ZT_OK;
    if (!ok) st = zt_fail(ZT_ERR_NOMEM, "evaluator service buffers for batch %d", svc->max_batch);
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
    for (int d = 0; d < 2; d++) {
        free(svc->slots[d].taken);
        free(svc->slots[d].obs);
        free(svc->slots[d].logits);
        free(svc->slots[d].values);
        free(svc->slots[d].wdl);
        free(svc->slots[d].hidden);
        free(svc->slots[d].hidden_out);
        free(svc->slots[d].actions);
        free(svc->slots[d].reward);
        free(svc->slots[d].turn);
        free(svc->slots[d].q);
        free(svc->slots[d].chance_logits);
    }
    free(svc->batch_counts);
    free(svc);
}

zt_evaluator zt_eval_service_client(zt_eval_service *svc, int i)
{
    ZT_ASSERT(i >= 0 && i < svc->nclients);
    return zt_evaluator_of_net(zt_net_config_of(svc->net),
                               (zt_evaluator){.ctx = &svc->clients[i],
                                              .eval = client_eval,
                                              .initial = client_initial,
                                              .recurrent = client_recurrent,
                                              .afterstate = client_afterstate});
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
    memcpy(counts, svc->batch_counts,
           ZT_CALL_KINDS * ((size_t)svc->max_batch + 1) * sizeof *counts);
    pthread_mutex_unlock(&svc->mu);
}

int zt_eval_service_max_batch(const zt_eval_service *svc)
{
    return svc->max_batch;
}

int zt_eval_service_inflight(const zt_eval_service *svc)
{
    return svc->depth;
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
