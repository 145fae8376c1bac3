/* The in-process weight store: refcounted immutable versions from a pool
 * (see weights.h for why). */
#include "selfplay/weights.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"

typedef struct version_buf {
    float *data;
    uint64_t version;
    int readers; /* polls copying from it now */
} version_buf;

struct zt_weight_store {
    size_t n;
    /* Guards the pool's bookkeeping (which buffer is newest, reader
     * counts); held for a few pointer and counter updates, never a copy. */
    pthread_mutex_t mu;
    version_buf **pool;
    int pool_size;
    version_buf *newest;  /* NULL before the first commit */
    version_buf *filling; /* between begin and commit */
    uint64_t published;
    /* newest->version, read without the mutex so that a poll with nothing
     * new costs one atomic load */
    atomic_uint_least64_t newest_version;
};

static version_buf *new_buffer(size_t n)
{
    version_buf *b = zt_xcalloc(1, sizeof *b);
    b->data = zt_xmalloc((n ? n : 1) * sizeof *b->data);
    return b;
}

zt_weight_store *zt_weight_store_new(size_t n)
{
    zt_weight_store *s = zt_xcalloc(1, sizeof *s);
    s->n = n;
    pthread_mutex_init(&s->mu, NULL);
    /* the newest version and the one being written */
    s->pool_size = 2;
    s->pool = zt_xcalloc(2, sizeof *s->pool);
    for (int i = 0; i < 2; i++) s->pool[i] = new_buffer(n);
    atomic_init(&s->newest_version, 0);
    return s;
}

void zt_weight_store_free(zt_weight_store *s)
{
    if (!s) return;
    for (int i = 0; i < s->pool_size; i++) {
        ZT_ASSERT(s->pool[i]->readers == 0);
        free(s->pool[i]->data);
        free(s->pool[i]);
    }
    free(s->pool);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

size_t zt_weight_store_size(const zt_weight_store *s)
{
    return s->n;
}

float *zt_weight_store_begin(zt_weight_store *s)
{
    pthread_mutex_lock(&s->mu);
    ZT_ASSERT(s->filling == NULL);
    version_buf *b = NULL;
    for (int i = 0; i < s->pool_size && !b; i++)
        if (s->pool[i] != s->newest && s->pool[i]->readers == 0) b = s->pool[i];
    pthread_mutex_unlock(&s->mu);
    if (!b) {
        /* every other buffer is being copied by a reader: a new one,
         * allocated outside the mutex */
        b = new_buffer(s->n);
        pthread_mutex_lock(&s->mu);
        s->pool = zt_xrealloc(s->pool, (size_t)(s->pool_size + 1) * sizeof *s->pool);
        s->pool[s->pool_size++] = b;
        pthread_mutex_unlock(&s->mu);
    }
    /* No reader can take b now: polls take only the newest version, and b
     * is not it until commit. */
    s->filling = b;
    return b->data;
}

uint64_t zt_weight_store_commit(zt_weight_store *s)
{
    ZT_ASSERT(s->filling != NULL);
    pthread_mutex_lock(&s->mu);
    version_buf *b = s->filling;
    b->version = ++s->published;
    s->newest = b;
    s->filling = NULL;
    atomic_store(&s->newest_version, b->version);
    pthread_mutex_unlock(&s->mu);
    return b->version;
}

uint64_t zt_weight_store_publish(zt_weight_store *s, const float *src)
{
    memcpy(zt_weight_store_begin(s), src, s->n * sizeof *src);
    return zt_weight_store_commit(s);
}

uint64_t zt_weight_store_version(const zt_weight_store *s)
{
    return atomic_load(&((zt_weight_store *)s)->newest_version);
}

int zt_weight_store_buffers(zt_weight_store *s)
{
    pthread_mutex_lock(&s->mu);
    int n = s->pool_size;
    pthread_mutex_unlock(&s->mu);
    return n;
}

static zt_status store_poll(void *ctx, uint64_t have_version, float *dst, size_t n,
                            uint64_t *got_version)
{
    zt_weight_store *s = ctx;
    *got_version = have_version;
    if (n != s->n)
        return zt_fail(ZT_ERR_INVALID, "weight source holds %zu floats, the net has %zu", s->n, n);
    uint64_t v = atomic_load(&s->newest_version);
    if (v == 0 || v == have_version) return ZT_OK;
    pthread_mutex_lock(&s->mu);
    version_buf *b = s->newest;
    b->readers++;
    pthread_mutex_unlock(&s->mu);
    /* b is immutable while it has readers: begin skips it */
    memcpy(dst, b->data, n * sizeof *dst);
    *got_version = b->version;
    pthread_mutex_lock(&s->mu);
    b->readers--;
    pthread_mutex_unlock(&s->mu);
    return ZT_OK;
}

zt_weight_source zt_weight_store_source(zt_weight_store *s)
{
    return (zt_weight_source){.ctx = s, .poll = store_poll};
}
