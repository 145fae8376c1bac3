/* sched_getaffinity and CPU_COUNT are GNU extensions. */
#define _GNU_SOURCE
#include "core/thread.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/status.h"

double zt_load_average(void)
{
    double load[1];
    return getloadavg(load, 1) == 1 ? load[0] : -1;
}

int zt_cpu_count(void)
{
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int n = online > 0 ? (int)online : 1;
    /* A process pinned with taskset or a cgroup cpuset may use fewer. */
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int allowed = CPU_COUNT(&set);
        if (allowed > 0 && allowed < n) n = allowed;
    }
    return n;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Spinning this long (a few microseconds) before sleeping catches the next
 * parallel-for of a tight loop without a futex round trip; a worker with
 * nothing to do soon goes to sleep and leaves the core to other actors. */
#define SPIN_ITERATIONS 4000

typedef struct worker {
    zt_pool *pool;
    int ith;
    pthread_t thread;
} worker;

struct zt_pool {
    int nth;
    worker *workers; /* workers[1..nth-1]; worker 0 is the caller */
    pthread_mutex_t mutex;
    pthread_cond_t work_cond;
    pthread_cond_t done_cond;
    /* A run is published by bumping `generation` under the mutex after
     * storing fn/arg; workers that see the new generation see fn/arg. */
    atomic_uint generation;
    atomic_int pending; /* workers (other than the caller) still running */
    atomic_bool stop;
    zt_pool_fn fn;
    void *arg;
};

static void *worker_main(void *p)
{
    worker *w = p;
    zt_pool *pool = w->pool;
    unsigned seen = 0;
    for (;;) {
        unsigned gen = atomic_load(&pool->generation);
        for (int i = 0; i < SPIN_ITERATIONS && gen == seen && !atomic_load(&pool->stop); i++) {
            cpu_relax();
            gen = atomic_load(&pool->generation);
        }
        if (gen == seen) {
            pthread_mutex_lock(&pool->mutex);
            while ((gen = atomic_load(&pool->generation)) == seen && !atomic_load(&pool->stop))
                pthread_cond_wait(&pool->work_cond, &pool->mutex);
            pthread_mutex_unlock(&pool->mutex);
        }
        if (gen == seen) break; /* stop requested and no new run */
        seen = gen;
        pool->fn(pool->arg, w->ith, pool->nth);
        if (atomic_fetch_sub(&pool->pending, 1) == 1) {
            /* Taking the mutex orders this signal after the caller's check of
             * `pending` under the same mutex, so the wakeup is not lost. */
            pthread_mutex_lock(&pool->mutex);
            pthread_cond_signal(&pool->done_cond);
            pthread_mutex_unlock(&pool->mutex);
        }
    }
    return NULL;
}

static void stop_workers(zt_pool *p, int started)
{
    pthread_mutex_lock(&p->mutex);
    atomic_store(&p->stop, true);
    pthread_cond_broadcast(&p->work_cond);
    pthread_mutex_unlock(&p->mutex);
    for (int i = 1; i < started; i++) pthread_join(p->workers[i].thread, NULL);
}

zt_pool *zt_pool_new(int nthreads)
{
    if (nthreads < 1) return NULL;
    zt_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->workers = calloc((size_t)nthreads, sizeof *p->workers);
    if (!p->workers) {
        free(p);
        return NULL;
    }
    p->nth = nthreads;
    pthread_mutex_init(&p->mutex, NULL);
    pthread_cond_init(&p->work_cond, NULL);
    pthread_cond_init(&p->done_cond, NULL);
    atomic_init(&p->generation, 0);
    atomic_init(&p->pending, 0);
    atomic_init(&p->stop, false);
    for (int i = 1; i < nthreads; i++) {
        p->workers[i].pool = p;
        p->workers[i].ith = i;
        if (pthread_create(&p->workers[i].thread, NULL, worker_main, &p->workers[i]) != 0) {
            stop_workers(p, i);
            pthread_cond_destroy(&p->done_cond);
            pthread_cond_destroy(&p->work_cond);
            pthread_mutex_destroy(&p->mutex);
            free(p->workers);
            free(p);
            return NULL;
        }
    }
    return p;
}

void zt_pool_free(zt_pool *p)
{
    if (!p) return;
    stop_workers(p, p->nth);
    pthread_cond_destroy(&p->done_cond);
    pthread_cond_destroy(&p->work_cond);
    pthread_mutex_destroy(&p->mutex);
    free(p->workers);
    free(p);
}

int zt_pool_size(const zt_pool *p)
{
    return p->nth;
}

void zt_pool_run(zt_pool *p, zt_pool_fn fn, void *arg)
{
    if (p->nth == 1) {
        fn(arg, 0, 1);
        return;
    }
    ZT_ASSERT(atomic_load(&p->pending) == 0); /* not reentrant */
    pthread_mutex_lock(&p->mutex);
    p->fn = fn;
    p->arg = arg;
    atomic_store(&p->pending, p->nth - 1);
    atomic_fetch_add(&p->generation, 1);
    pthread_cond_broadcast(&p->work_cond);
    pthread_mutex_unlock(&p->mutex);

    fn(arg, 0, p->nth);

    for (int i = 0; i < SPIN_ITERATIONS && atomic_load(&p->pending) > 0; i++) cpu_relax();
    if (atomic_load(&p->pending) > 0) {
        pthread_mutex_lock(&p->mutex);
        while (atomic_load(&p->pending) > 0) pthread_cond_wait(&p->done_cond, &p->mutex);
        pthread_mutex_unlock(&p->mutex);
    }
}

struct zt_queue {
    void **items;
    size_t capacity, head, len;
    bool closed;
    pthread_mutex_t mutex;
    pthread_cond_t not_empty;
    pthread_cond_t not_full;
};

zt_queue *zt_queue_new(size_t capacity)
{
    if (capacity == 0) return NULL;
    zt_queue *q = calloc(1, sizeof *q);
    if (!q) return NULL;
    q->items = calloc(capacity, sizeof(void *));
    if (!q->items) {
        free(q);
        return NULL;
    }
    q->capacity = capacity;
    pthread_mutex_init(&q->mutex, NULL);
    pthread_cond_init(&q->not_empty, NULL);
    pthread_cond_init(&q->not_full, NULL);
    return q;
}

void zt_queue_free(zt_queue *q)
{
    if (!q) return;
    pthread_cond_destroy(&q->not_full);
    pthread_cond_destroy(&q->not_empty);
    pthread_mutex_destroy(&q->mutex);
    free(q->items);
    free(q);
}

/* Both helpers run with the mutex held. */
static void put(zt_queue *q, void *item)
{
    q->items[(q->head + q->len) % q->capacity] = item;
    q->len++;
    pthread_cond_signal(&q->not_empty);
}

static void *take(zt_queue *q)
{
    void *item = q->items[q->head];
    q->head = (q->head + 1) % q->capacity;
    q->len--;
    pthread_cond_signal(&q->not_full);
    return item;
}

int zt_queue_push(zt_queue *q, void *item)
{
    pthread_mutex_lock(&q->mutex);
    while (q->len == q->capacity && !q->closed) pthread_cond_wait(&q->not_full, &q->mutex);
    int rc = -1;
    if (!q->closed) {
        put(q, item);
        rc = 0;
    }
    pthread_mutex_unlock(&q->mutex);
    return rc;
}

int zt_queue_pop(zt_queue *q, void **item)
{
    pthread_mutex_lock(&q->mutex);
    while (q->len == 0 && !q->closed) pthread_cond_wait(&q->not_empty, &q->mutex);
    int rc = -1;
    if (q->len > 0) {
        *item = take(q);
        rc = 0;
    }
    pthread_mutex_unlock(&q->mutex);
    return rc;
}

int zt_queue_try_push(zt_queue *q, void *item)
{
    pthread_mutex_lock(&q->mutex);
    int rc = q->closed ? -1 : q->len == q->capacity ? 1 : 0;
    if (rc == 0) put(q, item);
    pthread_mutex_unlock(&q->mutex);
    return rc;
}

int zt_queue_try_pop(zt_queue *q, void **item)
{
    pthread_mutex_lock(&q->mutex);
    int rc = q->len > 0 ? 0 : q->closed ? -1 : 1;
    if (rc == 0) *item = take(q);
    pthread_mutex_unlock(&q->mutex);
    return rc;
}

size_t zt_queue_len(zt_queue *q)
{
    pthread_mutex_lock(&q->mutex);
    size_t n = q->len;
    pthread_mutex_unlock(&q->mutex);
    return n;
}

void zt_queue_close(zt_queue *q)
{
    pthread_mutex_lock(&q->mutex);
    q->closed = true;
    pthread_cond_broadcast(&q->not_empty);
    pthread_cond_broadcast(&q->not_full);
    pthread_mutex_unlock(&q->mutex);
}

struct zt_barrier {
    int count;
    int waiting;
    unsigned generation;
    pthread_mutex_t mutex;
    pthread_cond_t cond;
};

zt_barrier *zt_barrier_new(int count)
{
    if (count < 1) return NULL;
    zt_barrier *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    b->count = count;
    pthread_mutex_init(&b->mutex, NULL);
    pthread_cond_init(&b->cond, NULL);
    return b;
}

void zt_barrier_free(zt_barrier *b)
{
    if (!b) return;
    pthread_cond_destroy(&b->cond);
    pthread_mutex_destroy(&b->mutex);
    free(b);
}

int zt_barrier_wait(zt_barrier *b)
{
    pthread_mutex_lock(&b->mutex);
    /* Waiting on the generation, not the count, makes the barrier reusable:
     * a fast thread entering the next round cannot release slow ones still
     * leaving this round. */
    unsigned gen = b->generation;
    int last = 0;
    if (++b->waiting == b->count) {
        b->waiting = 0;
        b->generation++;
        pthread_cond_broadcast(&b->cond);
        last = 1;
    } else {
        while (gen == b->generation) pthread_cond_wait(&b->cond, &b->mutex);
    }
    pthread_mutex_unlock(&b->mutex);
    return last;
}
