/* The sampler thread: double-buffered batches drawn ahead of the learner.
 * Two batches circulate through two queues (core/thread.h): the thread pops
 * an empty one, fills it with zt_replay_sample and pushes it as ready; the
 * caller takes a ready one and hands back the one it held. One thread draws
 * every batch in turn from one rng, so the sequence is the synchronous one. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "core/thread.h"
#include "replay/replay.h"

#define SAMPLER_BATCHES 2

struct zt_replay_sampler {
    zt_replay *rb;
    zt_replay_batch batches[SAMPLER_BATCHES];
    char errors[SAMPLER_BATCHES][ZT_MESSAGE_MAX]; /* messages are per thread: carried over */
    zt_queue *empty, *ready;
    zt_rng rng; /* owned by the thread once started */
    zt_replay_batch *held;
    pthread_t thread;
    bool started;
    atomic_bool stop; /* set before the queues close: skip what is queued */
};

static void *sampler_main(void *arg)
{
    zt_replay_sampler *s = arg;
    void *item;
    while (zt_queue_pop(s->empty, &item) == 0) {
        zt_replay_batch *b = item;
        if (atomic_load(&s->stop)) break;
        b->status = zt_replay_sample(s->rb, &s->rng, b);
        b->rng_after = s->rng;
        if (b->status != ZT_OK)
            snprintf(s->errors[b - s->batches], sizeof s->errors[0], "%s", zt_error_message());
        if (zt_queue_push(s->ready, b) != 0) break;
    }
    return NULL;
}

zt_status zt_replay_sampler_new(zt_replay *rb, int batch_size, bool wdl, const zt_rng *rng,
                                zt_replay_sampler **out)
{
    return zt_replay_sampler_new_unroll(rb, batch_size, wdl, NULL, rng, out);
}

zt_status zt_replay_sampler_new_unroll(zt_replay *rb, int batch_size, bool wdl,
                                       const zt_replay_unroll *u, const zt_rng *rng,
                                       zt_replay_sampler **out)
{
    *out = NULL;
    const zt_game *g = zt_replay_game(rb);
    zt_replay_sampler *s = zt_xcalloc(1, sizeof *s);
    s->rb = rb;
    s->rng = *rng;
    zt_status st = ZT_OK;
    for (int i = 0; i < SAMPLER_BATCHES && st == ZT_OK; i++)
        st = zt_replay_batch_init_unroll(&s->batches[i], g, batch_size, wdl, u);
    s->empty = zt_queue_new(SAMPLER_BATCHES);
    s->ready = zt_queue_new(SAMPLER_BATCHES);
    if (st == ZT_OK && (!s->empty || !s->ready))
        st = zt_fail(ZT_ERR_NOMEM, "replay sampler: no memory for its queues");
    for (int i = 0; i < SAMPLER_BATCHES && st == ZT_OK; i++) {
        int pushed = zt_queue_push(s->empty, &s->batches[i]);
        ZT_ASSERT(pushed == 0);
    }
    if (st == ZT_OK) {
        if (pthread_create(&s->thread, NULL, sampler_main, s) != 0)
            st = zt_fail(ZT_ERR_UNSUPPORTED, "replay sampler: cannot start a thread");
        else
            s->started = true;
    }
    if (st != ZT_OK) {
        zt_replay_sampler_free(s);
        return st;
    }
    *out = s;
    return ZT_OK;
}

void zt_replay_sampler_free(zt_replay_sampler *s)
{
    if (!s) return;
    atomic_store(&s->stop, true);
    if (s->empty) zt_queue_close(s->empty);
    if (s->ready) zt_queue_close(s->ready);
    if (s->started) pthread_join(s->thread, NULL);
    zt_queue_free(s->empty);
    zt_queue_free(s->ready);
    for (int i = 0; i < SAMPLER_BATCHES; i++) zt_replay_batch_free(&s->batches[i]);
    free(s);
}

zt_status zt_replay_sampler_next(zt_replay_sampler *s, const zt_replay_batch **batch)
{
    *batch = NULL;
    if (s->held) {
        int pushed = zt_queue_push(s->empty, s->held);
        ZT_ASSERT(pushed == 0); /* two batches, two slots: never full or closed here */
        s->held = NULL;
    }
    void *item;
    int popped = zt_queue_pop(s->ready, &item);
    ZT_ASSERT(popped == 0);
    zt_replay_batch *b = item;
    s->held = b;
    if (b->status != ZT_OK) return zt_fail(b->status, "%s", s->errors[b - s->batches]);
    *batch = b;
    return ZT_OK;
}
