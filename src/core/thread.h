/* Threads: a fixed pool that runs a parallel-for (ggml-style: each worker gets
 * (ith, nth) and splits its own share), a bounded blocking queue of pointers,
 * and a reusable barrier. No work is allocated per call. */
#ifndef ZT_CORE_THREAD_H
#define ZT_CORE_THREAD_H

#include <stddef.h>

/* Number of online CPUs (>= 1). */
int zt_cpu_count(void);

/* The 1-minute load average, or -1 where the system does not say (benchmarks
 * print it beside their figures, since a loaded machine skews them). */
double zt_load_average(void);

typedef struct zt_pool zt_pool;
typedef void (*zt_pool_fn)(void *arg, int ith, int nth);

/* A pool of `nthreads` workers (the calling thread counts as worker 0, so
 * nthreads - 1 threads are started). Returns NULL on failure. */
zt_pool *zt_pool_new(int nthreads);
void zt_pool_free(zt_pool *p);
int zt_pool_size(const zt_pool *p);
/* Runs fn(arg, ith, nth) on every worker, ith = 0..nth-1, and returns when all
 * have finished. Not reentrant: one run at a time per pool. */
void zt_pool_run(zt_pool *p, zt_pool_fn fn, void *arg);

/* Bounded multi-producer multi-consumer queue of pointers. */
typedef struct zt_queue zt_queue;
zt_queue *zt_queue_new(size_t capacity);
void zt_queue_free(zt_queue *q);
/* Blocks while full; returns 0, or -1 if the queue was closed. */
int zt_queue_push(zt_queue *q, void *item);
/* Blocks while empty; returns 0 with *item set, or -1 when closed and empty. */
int zt_queue_pop(zt_queue *q, void **item);
/* Non-blocking variants: 0 on success, 1 if full/empty, -1 if closed. */
int zt_queue_try_push(zt_queue *q, void *item);
int zt_queue_try_pop(zt_queue *q, void **item);
size_t zt_queue_len(zt_queue *q);
/* Wakes all waiters; later pushes fail, pops drain what is left. */
void zt_queue_close(zt_queue *q);

/* Reusable barrier for a fixed number of threads. */
typedef struct zt_barrier zt_barrier;
zt_barrier *zt_barrier_new(int count);
void zt_barrier_free(zt_barrier *b);
/* Returns 1 in exactly one thread per round (the last to arrive), else 0. */
int zt_barrier_wait(zt_barrier *b);

#endif
