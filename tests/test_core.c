/* Tests of src/core: rng streams and distributions, hashing, arenas, the
 * thread pool, queue and barrier, configuration, atomic file I/O and its
 * injected faults, directory locks, logging, the progress meter's line on a
 * fake clock, chart ticks and their labels, error messages (their own
 * buffer as an argument, long paths, the cut). */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/config.h"
#include "core/fault.h"
#include "core/fileio.h"
#include "core/hash.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/rng.h"
#include "core/status.h"
#include "core/ticks.h"
#include "core/thread.h"

#include "zt_test.h"

static uint64_t seed;
static char tmpdir[64];

/* ---- rng ---------------------------------------------------------------- */

static void test_rng_streams(void)
{
    zt_rng a, b, c, d;
    zt_rng_seed(&a, seed, 0);
    zt_rng_seed(&b, seed, 0);
    zt_rng_seed(&c, seed, 1);
    zt_rng_seed(&d, seed + 1, 0);
    int same_ab = 1, diff_ac = 0, diff_ad = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t x = zt_rng_u64(&a), y = zt_rng_u64(&b), z = zt_rng_u64(&c), w = zt_rng_u64(&d);
        same_ab &= x == y;
        diff_ac += x != z;
        diff_ad += x != w;
    }
    CHECK(same_ab, "");
    CHECK(diff_ac > 990, "");
    CHECK(diff_ad > 990, "");
}

static void test_rng_below(void)
{
    zt_rng r;
    zt_rng_seed(&r, seed, 2);
    static const uint32_t ns[] = {1, 2, 3, 7, 10, 1000, 0x80000001u, 0xffffffffu};
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        int ok = 1;
        for (int i = 0; i < 10000; i++) ok &= zt_rng_below(&r, ns[k]) < ns[k];
        CHECK(ok, "n=%u", ns[k]);
    }
    /* Chi-square with 9 degrees of freedom; P(chi2 > 45) is about 1e-6. */
    enum { BINS = 10, DRAWS = 100000 };
    int count[BINS] = {0};
    for (int i = 0; i < DRAWS; i++) count[zt_rng_below(&r, BINS)]++;
    double chi2 = 0, expected = (double)DRAWS / BINS;
    for (int i = 0; i < BINS; i++) chi2 += (count[i] - expected) * (count[i] - expected) / expected;
    CHECK(chi2 < 45, "chi2=%g", chi2);

    int in_range = 1;
    for (int i = 0; i < 10000; i++) {
        double u = zt_rng_uniform(&r);
        in_range &= u >= 0 && u < 1;
    }
    CHECK(in_range, "");
}

/* Sample mean of n draws is within `sigmas` standard errors of `mean`. */
static int mean_close(double sum, int n, double mean, double variance, double sigmas)
{
    return fabs(sum / n - mean) <= sigmas * sqrt(variance / n);
}

static void test_rng_distributions(void)
{
    zt_rng r;
    zt_rng_seed(&r, seed, 3);
    enum { N = 200000 };
    double sum = 0, sq = 0;
    for (int i = 0; i < N; i++) {
        double x = zt_rng_normal(&r);
        sum += x;
        sq += x * x;
    }
    CHECK(mean_close(sum, N, 0, 1, 6), "normal mean %g", sum / N);
    CHECK(fabs(sq / N - 1) < 0.02, "normal variance %g", sq / N);

    static const double shapes[] = {0.03, 0.3, 1.0, 2.5, 10.0};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        sum = 0;
        int positive = 1;
        for (int i = 0; i < N; i++) {
            double x = zt_rng_gamma(&r, shapes[k]);
            positive &= x >= 0 && isfinite(x);
            sum += x;
        }
        CHECK(positive, "gamma(%g) not finite and non-negative", shapes[k]);
        /* Gamma(k, 1) has mean k and variance k. */
        CHECK(mean_close(sum, N, shapes[k], shapes[k], 6), "gamma(%g) mean %g", shapes[k], sum / N);
    }

    sum = 0;
    for (int i = 0; i < N; i++) sum += zt_rng_gumbel(&r);
    /* Standard Gumbel: mean Euler's gamma, variance pi^2/6. */
    CHECK(mean_close(sum, N, 0.5772156649, M_PI * M_PI / 6, 6), "gumbel mean %g", sum / N);

    enum { DIM = 5, ROUNDS = 20000 };
    double comp_sum[DIM] = {0};
    float out[DIM];
    int simplex = 1;
    for (int i = 0; i < ROUNDS; i++) {
        zt_rng_dirichlet(&r, 0.3, DIM, out);
        double total = 0;
        for (int j = 0; j < DIM; j++) {
            simplex &= out[j] >= 0;
            total += out[j];
            comp_sum[j] += out[j];
        }
        simplex &= fabs(total - 1) < 1e-5;
    }
    CHECK(simplex, "");
    /* Each component is Beta(a, (n-1)a): mean 1/n, variance
     * (1/n)(1-1/n)/(n a + 1). */
    double var = (1.0 / DIM) * (1 - 1.0 / DIM) / (DIM * 0.3 + 1);
    for (int j = 0; j < DIM; j++)
        CHECK(mean_close(comp_sum[j], ROUNDS, 1.0 / DIM, var, 6), "dirichlet[%d] mean %g", j,
              comp_sum[j] / ROUNDS);

    float weights[4] = {0, 1, 0, 3};
    int hits[4] = {0};
    for (int i = 0; i < 40000; i++) hits[zt_rng_categorical(&r, weights, 4)]++;
    CHECK(hits[0] == 0 && hits[2] == 0, "");
    CHECK(mean_close(hits[3], 40000, 0.75, 0.75 * 0.25, 6), "categorical share %g",
          hits[3] / 40000.0);
}

/* ---- hash, arena -------------------------------------------------------- */

static void test_hash(void)
{
    unsigned char buf[37];
    for (int i = 0; i < 37; i++) buf[i] = (unsigned char)(i * 7 + 1);
    uint64_t h = zt_hash_bytes(buf, sizeof buf, 5);
    CHECK(h == zt_hash_bytes(buf, sizeof buf, 5), "");
    CHECK(h != zt_hash_bytes(buf, sizeof buf, 6), "");
    CHECK(h != zt_hash_bytes(buf, sizeof buf - 1, 5), "");
    int all_bits_matter = 1;
    for (int bit = 0; bit < 37 * 8; bit++) {
        buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
        all_bits_matter &= zt_hash_bytes(buf, sizeof buf, 5) != h;
        buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
    }
    CHECK(all_bits_matter, "");
    /* Zero bytes of different lengths must not collide. */
    unsigned char zeros[16] = {0};
    CHECK(zt_hash_bytes(zeros, 8, 0) != zt_hash_bytes(zeros, 9, 0), "");
    CHECK(zt_hash_bytes(zeros, 0, 0) != zt_hash_bytes(zeros, 1, 0), "");
}

static void test_arena(void)
{
    zt_arena a;
    CHECK(zt_arena_init(&a, 1000) == 0, "");
    CHECK((uintptr_t)a.base % ZT_CACHE_LINE == 0, "");
    char *p = zt_arena_alloc(&a, 3, 1);
    CHECK(p == (char *)a.base, "");
    static const size_t aligns[] = {8, 16, 64, 128};
    for (size_t i = 0; i < 4; i++) {
        void *q = zt_arena_alloc(&a, 10, aligns[i]);
        CHECK(q && (uintptr_t)q % aligns[i] == 0, "alignment %zu", aligns[i]);
    }
    CHECK(zt_arena_alloc(&a, 2000, 8) == NULL, "");
    size_t used = a.used;
    CHECK(zt_arena_alloc(&a, 1000 - used + 1, 1) == NULL, "");
    CHECK(zt_arena_alloc(&a, 1000 - used, 1) != NULL, "");
    CHECK(a.used == 1000, "");
    CHECK(zt_arena_alloc(&a, 1, 1) == NULL, "");
    CHECK(a.high_water == 1000, "");
    zt_arena_reset(&a);
    CHECK(a.used == 0, "");
    CHECK(zt_arena_alloc(&a, 1000, 64) == a.base, "");
    zt_arena_free(&a);
}

/* The growing array keeps what it holds, doubles (from 16) so that n
 * appends move it about log2(n) times, and leaves an array that holds
 * enough as it is. */
static void test_grow(void)
{
    int *a = NULL, cap = 0, moves = 0, bad = 0;
    for (int n = 0; n < 1000; n++) {
        int before = cap;
        a = zt_xgrow(a, &cap, n + 1, sizeof *a);
        moves += cap != before;
        a[n] = 3 * n;
        bad += cap < n + 1 || (cap != before && cap != (before ? 2 * before : 16));
    }
    for (int n = 0; n < 1000; n++) bad += a[n] != 3 * n;
    CHECK(bad == 0 && cap == 1024 && moves == 7, "1000 appends: cap %d, %d moves, %d bad", cap,
          moves, bad);
    int *same = zt_xgrow(a, &cap, 1024, sizeof *a);
    CHECK(same == a && cap == 1024, "an array that holds enough moved: cap %d", cap);
    a = zt_xgrow(a, &cap, 5000, sizeof *a); /* doubled until it holds 5000 */
    CHECK(cap == 8192 && a[999] == 2997, "grown to 5000: cap %d", cap);
    free(a);

    char *b = NULL;
    size_t bcap = 0, len = 0;
    for (int i = 0; i < 300; i++) {
        char chunk[40];
        int k = snprintf(chunk, sizeof chunk, "%d,", i);
        b = zt_xreserve(b, &bcap, len + (size_t)k + 1);
        memcpy(b + len, chunk, (size_t)k + 1);
        len += (size_t)k;
    }
    CHECK(bcap >= len + 1 && strncmp(b, "0,1,2,", 6) == 0 && strcmp(b + len - 4, "299,") == 0,
          "bytes: %zu of %zu", len, bcap);
    free(b);
}

/* ---- threads ------------------------------------------------------------ */

typedef struct pool_job {
    atomic_int hits[16];
    atomic_int wrong_nth;
    int nth;
} pool_job;

static void pool_fn(void *arg, int ith, int nth)
{
    pool_job *job = arg;
    if (nth != job->nth || ith < 0 || ith >= nth) {
        atomic_fetch_add(&job->wrong_nth, 1);
        return;
    }
    atomic_fetch_add(&job->hits[ith], 1);
}

static void test_pool(void)
{
    CHECK(zt_cpu_count() >= 1, "");
    CHECK(zt_pool_new(0) == NULL, "");
    static const int sizes[] = {1, 2, 4, 7};
    for (size_t k = 0; k < 4; k++) {
        zt_pool *p = zt_pool_new(sizes[k]);
        CHECK(p != NULL, "");
        if (!p) continue;
        CHECK(zt_pool_size(p) == sizes[k], "");
        pool_job job;
        job.nth = sizes[k];
        atomic_init(&job.wrong_nth, 0);
        int every_once = 1;
        for (int run = 0; run < 500; run++) {
            for (int i = 0; i < 16; i++) atomic_init(&job.hits[i], 0);
            zt_pool_run(p, pool_fn, &job);
            /* zt_pool_run returns only when every worker has finished. */
            for (int i = 0; i < sizes[k]; i++) every_once &= atomic_load(&job.hits[i]) == 1;
            if (run % 100 == 99) usleep(2000); /* let workers fall asleep too */
        }
        CHECK(every_once, "pool of %d", sizes[k]);
        CHECK(atomic_load(&job.wrong_nth) == 0, "");
        zt_pool_free(p);
    }
}

enum { PER_PRODUCER = 20000, PRODUCERS = 2, CONSUMERS = 2 };

typedef struct queue_test {
    zt_queue *q;
    atomic_int seen[PRODUCERS * PER_PRODUCER];
    atomic_int producer_id;
    atomic_int bad_items;
} queue_test;

static void *producer(void *arg)
{
    queue_test *t = arg;
    int id = atomic_fetch_add(&t->producer_id, 1);
    for (int i = 0; i < PER_PRODUCER; i++) {
        uintptr_t item = (uintptr_t)(id * PER_PRODUCER + i) + 1; /* never NULL */
        if (zt_queue_push(t->q, (void *)item) != 0) atomic_fetch_add(&t->bad_items, 1);
    }
    return NULL;
}

static void *consumer(void *arg)
{
    queue_test *t = arg;
    void *item;
    while (zt_queue_pop(t->q, &item) == 0) {
        uintptr_t v = (uintptr_t)item;
        if (v == 0 || v > PRODUCERS * PER_PRODUCER)
            atomic_fetch_add(&t->bad_items, 1);
        else
            atomic_fetch_add(&t->seen[v - 1], 1);
    }
    return NULL;
}

static void *pop_one(void *arg)
{
    void *item;
    return (void *)(intptr_t)zt_queue_pop(arg, &item);
}

static void *push_one(void *arg)
{
    return (void *)(intptr_t)zt_queue_push(arg, arg);
}

static void test_queue(void)
{
    queue_test *t = calloc(1, sizeof *t);
    t->q = zt_queue_new(8);
    pthread_t prod[PRODUCERS], cons[CONSUMERS];
    for (int i = 0; i < CONSUMERS; i++) pthread_create(&cons[i], NULL, consumer, t);
    for (int i = 0; i < PRODUCERS; i++) pthread_create(&prod[i], NULL, producer, t);
    for (int i = 0; i < PRODUCERS; i++) pthread_join(prod[i], NULL);
    zt_queue_close(t->q);
    for (int i = 0; i < CONSUMERS; i++) pthread_join(cons[i], NULL);
    int exactly_once = 1;
    for (int i = 0; i < PRODUCERS * PER_PRODUCER; i++)
        exactly_once &= atomic_load(&t->seen[i]) == 1;
    CHECK(exactly_once, "");
    CHECK(atomic_load(&t->bad_items) == 0, "");
    zt_queue_free(t->q);
    free(t);

    /* Non-blocking variants and draining after close. */
    zt_queue *q = zt_queue_new(2);
    void *item = NULL;
    CHECK(zt_queue_try_pop(q, &item) == 1, "");
    CHECK(zt_queue_try_push(q, (void *)1) == 0, "");
    CHECK(zt_queue_push(q, (void *)2) == 0, "");
    CHECK(zt_queue_try_push(q, (void *)3) == 1, "");
    CHECK(zt_queue_len(q) == 2, "");
    zt_queue_close(q);
    CHECK(zt_queue_push(q, (void *)4) == -1, "");
    CHECK(zt_queue_try_push(q, (void *)4) == -1, "");
    CHECK(zt_queue_pop(q, &item) == 0 && item == (void *)1, "");
    CHECK(zt_queue_try_pop(q, &item) == 0 && item == (void *)2, "");
    CHECK(zt_queue_pop(q, &item) == -1, "");
    CHECK(zt_queue_try_pop(q, &item) == -1, "");
    zt_queue_free(q);

    /* Close wakes a consumer blocked on an empty queue and a producer blocked
     * on a full one; both report -1. */
    q = zt_queue_new(1);
    pthread_t waiter;
    pthread_create(&waiter, NULL, pop_one, q);
    usleep(20000);
    zt_queue_close(q);
    void *rc;
    pthread_join(waiter, &rc);
    CHECK((intptr_t)rc == -1, "");
    zt_queue_free(q);

    q = zt_queue_new(1);
    CHECK(zt_queue_push(q, q) == 0, "");
    pthread_create(&waiter, NULL, push_one, q);
    usleep(20000);
    zt_queue_close(q);
    pthread_join(waiter, &rc);
    CHECK((intptr_t)rc == -1, "");
    CHECK(zt_queue_len(q) == 1, "");
    zt_queue_free(q);
}

enum { BARRIER_THREADS = 4, ROUNDS = 300 };

typedef struct barrier_test {
    zt_barrier *b;
    atomic_int arrived;
    atomic_int serial[ROUNDS];
    atomic_int early;
} barrier_test;

static void *barrier_thread(void *arg)
{
    barrier_test *t = arg;
    for (int round = 0; round < ROUNDS; round++) {
        atomic_fetch_add(&t->arrived, 1);
        if (zt_barrier_wait(t->b)) atomic_fetch_add(&t->serial[round], 1);
        /* Nobody leaves round r before all have arrived in it. */
        if (atomic_load(&t->arrived) < (round + 1) * BARRIER_THREADS)
            atomic_fetch_add(&t->early, 1);
    }
    return NULL;
}

static void test_barrier(void)
{
    barrier_test *t = calloc(1, sizeof *t);
    t->b = zt_barrier_new(BARRIER_THREADS);
    pthread_t th[BARRIER_THREADS];
    for (int i = 0; i < BARRIER_THREADS; i++) pthread_create(&th[i], NULL, barrier_thread, t);
    for (int i = 0; i < BARRIER_THREADS; i++) pthread_join(th[i], NULL);
    int one_serial = 1;
    for (int r = 0; r < ROUNDS; r++) one_serial &= atomic_load(&t->serial[r]) == 1;
    CHECK(one_serial, "");
    CHECK(atomic_load(&t->early) == 0, "");
    zt_barrier_free(t->b);
    free(t);

    zt_barrier *single = zt_barrier_new(1);
    CHECK(zt_barrier_wait(single) == 1 && zt_barrier_wait(single) == 1, "");
    zt_barrier_free(single);
}

/* ---- config ------------------------------------------------------------- */

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "cannot create %s\n", path);
        exit(2);
    }
    fputs(text, f);
    fclose(f);
}

static int contains(const char *haystack, const char *needle)
{
    return strstr(haystack, needle) != NULL;
}

static void test_config_file_and_overrides(void)
{
    char path[128];
    snprintf(path, sizeof path, "%s/a.ini", tmpdir);
    write_text(path, "game = tictactoe\n"
                     "; a comment\n"
                     "[search]\n"
                     "  sims = 64   ; inline comment\n"
                     "\tc_puct = 1.25\n"
                     "[train]\n"
                     "lr = 0.01\n");
    zt_config *c = zt_config_new();
    CHECK(zt_config_load_file(c, path) == ZT_OK, "%s", zt_error_message());
    CHECK(zt_config_has(c, "search.sims"), "");
    CHECK(!zt_config_has(c, "sims"), "");
    /* --set is applied after the file and wins. */
    CHECK(zt_config_set(c, " search.sims = 128 ") == ZT_OK, "");
    int64_t sims = 0;
    CHECK(zt_config_int(c, "search.sims", 1, 1, 100000, &sims) == ZT_OK && sims == 128, "");
    double cp = 0, lr = 0;
    CHECK(zt_config_double(c, "search.c_puct", 2, 0, 10, &cp) == ZT_OK && cp == 1.25, "");
    CHECK(zt_config_double(c, "train.lr", 1, 0, 1, &lr) == ZT_OK && lr == 0.01, "");
    const char *game = NULL;
    CHECK(zt_config_string(c, "game", "connect4", &game) == ZT_OK && strcmp(game, "tictactoe") == 0,
          "");
    /* A default is used when absent and does not count as set. */
    int64_t batch = 0;
    CHECK(zt_config_int(c, "train.batch", 256, 1, 1 << 20, &batch) == ZT_OK && batch == 256, "");
    CHECK(!zt_config_has(c, "train.batch"), "");
    CHECK(zt_config_check_unused(c) == ZT_OK, "%s", zt_error_message());

    /* An unknown key, from the file or from --set, is rejected by name. */
    CHECK(zt_config_set(c, "search.simz=3") == ZT_OK, "");
    CHECK(zt_config_check_unused(c) == ZT_ERR_INVALID, "");
    CHECK(contains(zt_error_message(), "'search.simz'"), "%s", zt_error_message());
    zt_config_free(c);

    c = zt_config_new();
    write_text(path, "[net]\nblocks = 4\nwidht = 64\n");
    CHECK(zt_config_load_file(c, path) == ZT_OK, "");
    int64_t blocks;
    CHECK(zt_config_int(c, "net.blocks", 2, 1, 40, &blocks) == ZT_OK && blocks == 4, "");
    CHECK(zt_config_check_unused(c) == ZT_ERR_INVALID, "");
    CHECK(contains(zt_error_message(), "unknown key 'net.widht'"), "%s", zt_error_message());
    zt_config_free(c);

    /* Malformed files and assignments. */
    c = zt_config_new();
    write_text(path, "[search]\nthis line has no equals sign\n");
    CHECK(zt_config_load_file(c, path) == ZT_ERR_INVALID, "");
    CHECK(contains(zt_error_message(), path) && contains(zt_error_message(), "line 2"), "%s",
          zt_error_message());
    char missing[160];
    snprintf(missing, sizeof missing, "%s/missing.ini", tmpdir);
    CHECK(zt_config_load_file(c, missing) == ZT_ERR_NOT_FOUND, "");
    CHECK(contains(zt_error_message(), missing), "%s", zt_error_message());
    CHECK(zt_config_set(c, "noequals") == ZT_ERR_INVALID, "");
    CHECK(contains(zt_error_message(), "noequals"), "%s", zt_error_message());
    CHECK(zt_config_set(c, " =5") == ZT_ERR_INVALID, "");
    CHECK(zt_config_set(c, "empty=") == ZT_OK, "");
    const char *s = NULL;
    CHECK(zt_config_string(c, "empty", "x", &s) == ZT_OK && strcmp(s, "") == 0, "");
    zt_config_free(c);
}

/* A key set twice in one file is refused, naming the key and both lines
 * (also across two blocks of one section), and the refused file changes
 * nothing; a later file or --set overriding an earlier file is layering,
 * not a duplicate. */
static void test_config_duplicates(void)
{
    char path[128], second[128];
    snprintf(path, sizeof path, "%s/dup.ini", tmpdir);
    snprintf(second, sizeof second, "%s/over.ini", tmpdir);
    write_text(path, "seed = 1\n"
                     "[search]\n"
                     "sims = 64\n"
                     "\n"
                     "[net]\n"
                     "kind = mlp\n"
                     "[search]\n"
                     "  sims = 32\n");
    zt_config *c = zt_config_new();
    CHECK(zt_config_load_file(c, path) == ZT_ERR_INVALID, "a duplicate key was accepted");
    const char *msg = zt_error_message();
    CHECK(contains(msg, "'search.sims'") && contains(msg, "lines 3 and 8") && contains(msg, path),
          "%s", msg);
    CHECK(!zt_config_has(c, "seed") && !zt_config_has(c, "net.kind"),
          "a refused file set keys");
    CHECK(zt_config_load_string(c, "a = 1\nb = 2\na = 3\n", "inline") == ZT_ERR_INVALID &&
              contains(zt_error_message(), "'a' is set twice (lines 1 and 3)"),
          "%s", zt_error_message());
    /* layering */
    write_text(path, "seed = 1\n[search]\nsims = 64\n");
    write_text(second, "[search]\nsims = 8\n");
    CHECK(zt_config_load_file(c, path) == ZT_OK && zt_config_load_file(c, second) == ZT_OK &&
              zt_config_set(c, "seed=5") == ZT_OK,
          "%s", zt_error_message());
    int64_t v = 0;
    CHECK(zt_config_int(c, "search.sims", 1, 1, 1000, &v) == ZT_OK && v == 8, "sims %lld",
          (long long)v);
    CHECK(zt_config_int(c, "seed", 0, 0, 1000, &v) == ZT_OK && v == 5, "seed %lld", (long long)v);
    zt_config_free(c);
}

static void test_config_types(void)
{
    zt_config *c = zt_config_new();
    int64_t i64;
    double d;
    CHECK(zt_config_set(c, "k=x") == ZT_OK, "");
    CHECK(zt_config_int(c, "k", 4, 3, 6, &i64) == ZT_ERR_INVALID, "");
    CHECK(strcmp(zt_error_message(), "key 'k': expected an integer, got 'x'") == 0, "%s",
          zt_error_message());
    CHECK(zt_config_set(c, "k=7") == ZT_OK, "");
    CHECK(zt_config_int(c, "k", 4, 3, 6, &i64) == ZT_ERR_INVALID, "");
    CHECK(strcmp(zt_error_message(), "key 'k': 7 is outside [3, 6]") == 0, "%s",
          zt_error_message());
    CHECK(zt_config_set(c, "k=6") == ZT_OK, "");
    CHECK(zt_config_int(c, "k", 4, 3, 6, &i64) == ZT_OK && i64 == 6, "");
    CHECK(zt_config_set(c, "k=3.5") == ZT_OK, "");
    CHECK(zt_config_int(c, "k", 4, 3, 6, &i64) == ZT_ERR_INVALID, "");
    CHECK(zt_config_set(c, "k=99999999999999999999999") == ZT_OK, "");
    CHECK(zt_config_int(c, "k", 4, 3, 6, &i64) == ZT_ERR_INVALID, "");
    CHECK(contains(zt_error_message(), "key 'k'"), "%s", zt_error_message());
    CHECK(zt_config_set(c, "k=-5") == ZT_OK, "");
    CHECK(zt_config_int(c, "k", 0, INT64_MIN, INT64_MAX, &i64) == ZT_OK && i64 == -5, "");

    CHECK(zt_config_set(c, "x.lr=fast") == ZT_OK, "");
    CHECK(zt_config_double(c, "x.lr", 0.1, 0, 1, &d) == ZT_ERR_INVALID, "");
    CHECK(contains(zt_error_message(), "key 'x.lr'") && contains(zt_error_message(), "fast"), "%s",
          zt_error_message());
    CHECK(zt_config_set(c, "x.lr=1.5") == ZT_OK, "");
    CHECK(zt_config_double(c, "x.lr", 0.1, 0, 1, &d) == ZT_ERR_INVALID, "");
    CHECK(contains(zt_error_message(), "key 'x.lr'") &&
              contains(zt_error_message(), "outside [0, 1]"),
          "%s", zt_error_message());
    CHECK(zt_config_set(c, "x.lr=nan") == ZT_OK, "");
    CHECK(zt_config_double(c, "x.lr", 0.1, -INFINITY, INFINITY, &d) == ZT_ERR_INVALID, "");
    CHECK(zt_config_set(c, "x.lr=1e-3") == ZT_OK, "");
    CHECK(zt_config_double(c, "x.lr", 0.1, 0, 1, &d) == ZT_OK && d == 1e-3, "");

    static const char *const yes[] = {"1", "true", "yes", "on", "TRUE", "On"};
    static const char *const no[] = {"0", "false", "no", "off", "False", "NO"};
    char set[32];
    for (int i = 0; i < 6; i++) {
        bool b = false;
        snprintf(set, sizeof set, "flag=%s", yes[i]);
        CHECK(zt_config_set(c, set) == ZT_OK, "");
        CHECK(zt_config_bool(c, "flag", false, &b) == ZT_OK && b, "%s", yes[i]);
        snprintf(set, sizeof set, "flag=%s", no[i]);
        CHECK(zt_config_set(c, set) == ZT_OK, "");
        CHECK(zt_config_bool(c, "flag", true, &b) == ZT_OK && !b, "%s", no[i]);
    }
    bool b;
    CHECK(zt_config_set(c, "flag=maybe") == ZT_OK, "");
    CHECK(zt_config_bool(c, "flag", true, &b) == ZT_ERR_INVALID, "");
    CHECK(contains(zt_error_message(), "key 'flag'") && contains(zt_error_message(), "maybe"), "%s",
          zt_error_message());
    CHECK(zt_config_bool(c, "absent_flag", true, &b) == ZT_OK && b, "");

    static const char *const modes[] = {"puct", "gumbel", "random", NULL};
    int choice = -1;
    CHECK(zt_config_choice(c, "search.mode", "gumbel", modes, &choice) == ZT_OK && choice == 1, "");
    CHECK(zt_config_set(c, "search.mode=random") == ZT_OK, "");
    CHECK(zt_config_choice(c, "search.mode", "gumbel", modes, &choice) == ZT_OK && choice == 2, "");
    CHECK(zt_config_set(c, "search.mode=mcts") == ZT_OK, "");
    CHECK(zt_config_choice(c, "search.mode", "gumbel", modes, &choice) == ZT_ERR_INVALID, "");
    const char *msg = zt_error_message();
    CHECK(contains(msg, "key 'search.mode'") && contains(msg, "mcts") && contains(msg, "puct") &&
              contains(msg, "gumbel") && contains(msg, "random"),
          "%s", msg);

    /* A string handed out stays valid after the key is set again. */
    const char *first = NULL, *second = NULL;
    CHECK(zt_config_set(c, "name=alpha") == ZT_OK, "");
    CHECK(zt_config_string(c, "name", NULL, &first) == ZT_OK, "");
    CHECK(zt_config_set(c, "name=beta") == ZT_OK, "");
    CHECK(zt_config_string(c, "name", NULL, &second) == ZT_OK, "");
    CHECK(strcmp(first, "alpha") == 0 && strcmp(second, "beta") == 0, "");
    zt_config_free(c);
}

static void test_config_roundtrip(void)
{
    char path[128];
    snprintf(path, sizeof path, "%s/resolved.ini", tmpdir);
    static const char *const modes[] = {"puct", "gumbel", NULL};
    zt_config *c = zt_config_new();
    CHECK(zt_config_set(c, "search.sims=800") == ZT_OK, "");
    CHECK(zt_config_set(c, "train.lr=0.1") == ZT_OK, "");
    zt_config_put(c, "game", "connect4");
    int64_t sims, seed_value, batch;
    double lr, third;
    bool flag;
    const char *game, *dir;
    int mode;
    CHECK(zt_config_int(c, "search.sims", 50, 1, 100000, &sims) == ZT_OK, "");
    CHECK(zt_config_int(c, "seed", 7, 0, INT64_MAX, &seed_value) == ZT_OK, "");
    CHECK(zt_config_double(c, "train.lr", 0.5, 0, 1, &lr) == ZT_OK, "");
    CHECK(zt_config_double(c, "train.third", 1.0 / 3, 0, 1, &third) == ZT_OK, "");
    CHECK(zt_config_int(c, "search.batch", 16, 1, 4096, &batch) == ZT_OK, "");
    CHECK(zt_config_bool(c, "train.bf16", true, &flag) == ZT_OK, "");
    CHECK(zt_config_string(c, "game", "tictactoe", &game) == ZT_OK, "");
    CHECK(zt_config_string(c, "run.dir", "runs/x y", &dir) == ZT_OK, "");
    CHECK(zt_config_choice(c, "search.mode", "gumbel", modes, &mode) == ZT_OK, "");
    CHECK(zt_config_write(c, path) == ZT_OK, "%s", zt_error_message());
    zt_config_free(c);

    /* Reloading with different defaults gives back every resolved value. */
    c = zt_config_new();
    CHECK(zt_config_load_file(c, path) == ZT_OK, "%s", zt_error_message());
    int64_t i;
    double d;
    bool b;
    const char *s;
    int m;
    CHECK(zt_config_int(c, "search.sims", 1, 1, 100000, &i) == ZT_OK && i == 800, "");
    CHECK(zt_config_int(c, "seed", 1, 0, INT64_MAX, &i) == ZT_OK && i == 7, "");
    CHECK(zt_config_double(c, "train.lr", 0.9, 0, 1, &d) == ZT_OK && d == 0.1, "");
    CHECK(zt_config_double(c, "train.third", 0.9, 0, 1, &d) == ZT_OK && d == 1.0 / 3, "");
    CHECK(zt_config_int(c, "search.batch", 1, 1, 4096, &i) == ZT_OK && i == 16, "");
    CHECK(zt_config_bool(c, "train.bf16", false, &b) == ZT_OK && b, "");
    CHECK(zt_config_string(c, "game", "x", &s) == ZT_OK && strcmp(s, "connect4") == 0, "");
    CHECK(zt_config_string(c, "run.dir", "x", &s) == ZT_OK && strcmp(s, "runs/x y") == 0, "");
    CHECK(zt_config_choice(c, "search.mode", "puct", modes, &m) == ZT_OK && m == 1, "");
    CHECK(zt_config_check_unused(c) == ZT_OK, "%s", zt_error_message());
    zt_config_free(c);

    /* A value inih would read back differently is refused, not mangled. */
    c = zt_config_new();
    CHECK(zt_config_set(c, "note=a ;b") == ZT_OK, "");
    CHECK(zt_config_string(c, "note", "", &s) == ZT_OK, "");
    CHECK(zt_config_write(c, path) == ZT_ERR_INVALID, "");
    CHECK(contains(zt_error_message(), "'note'"), "%s", zt_error_message());
    zt_config_free(c);
}

/* ---- fileio ------------------------------------------------------------- */

/* Number of entries in `dir` whose name contains ".tmp.". */
static int count_temp_files(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) n += strstr(e->d_name, ".tmp.") != NULL;
    closedir(d);
    return n;
}

/* zt_config_inherit: src's keys under the prefix become defaults under
 * dst's own settings, skipped keys and other prefixes stay out. */
static void test_config_inherit(void)
{
    zt_config *src = zt_config_new(), *dst = zt_config_new();
    zt_config_put(src, "search.sims", "7");
    zt_config_put(src, "search.c_init", "2");
    zt_config_put(src, "search.gumbel_noise", "true");
    zt_config_put(src, "searcher", "x");
    zt_config_put(src, "net.kind", "mlp");
    zt_config_put(dst, "search.sims", "3");
    static const char *const skip[] = {"search.gumbel_noise", NULL};
    CHECK(zt_config_inherit(dst, src, "search.", skip) == 1, "");
    int64_t sims;
    double c_init;
    CHECK(zt_config_int(dst, "search.sims", 1, 0, 100, &sims) == ZT_OK && sims == 3, "");
    CHECK(zt_config_double(dst, "search.c_init", 1, 0, 10, &c_init) == ZT_OK && c_init == 2, "");
    CHECK(!zt_config_has(dst, "search.gumbel_noise") && !zt_config_has(dst, "searcher") &&
              !zt_config_has(dst, "net.kind"),
          "");
    CHECK(zt_config_check_unused(dst) == ZT_OK, "%s", zt_error_message());
    zt_config_free(src);
    zt_config_free(dst);
}

/* zt_config_promote: PREFIX.SECTION.KEY puts SECTION.KEY when applied and
 * is marked read either way (not unknown, and written to config.ini);
 * PREFIX.KEY without a section is the prefix's own key and stays unread. */
static void test_config_promote(void)
{
    for (int apply = 0; apply < 2; apply++) {
        zt_config *c = zt_config_new();
        zt_config_put(c, "selfplay.random_move_fraction", "0");
        zt_config_put(c, "muzero.selfplay.random_move_fraction", "0.05");
        zt_config_put(c, "muzero.learner.schedule", "cosine");
        zt_config_put(c, "muzero.channels", "32");
        zt_config_put(c, "learner.schedule_x", "1");
        CHECK(zt_config_promote(c, "muzero.", apply) == 2, "");
        double f;
        CHECK(zt_config_double(c, "selfplay.random_move_fraction", 1, 0, 1, &f) == ZT_OK &&
                  f == (apply ? 0.05 : 0),
              "apply %d: %g", apply, f);
        CHECK(zt_config_has(c, "learner.schedule") == (bool)apply, "");
        const char *s;
        CHECK(zt_config_string(c, "learner.schedule_x", "", &s) == ZT_OK, "");
        /* a stand-in for a key nothing read is unknown, applied or not (a
         * misspelt muzero.SECTION.KEY in an AlphaZero run) */
        CHECK(
            zt_config_check_unused(c) != ZT_OK &&
                strstr(zt_error_message(), "'muzero.learner.schedule' (no key 'learner.schedule')"),
            "apply %d: %s", apply, zt_error_message());
        CHECK(zt_config_string(c, "learner.schedule", "", &s) == ZT_OK &&
                  strcmp(s, apply ? "cosine" : "") == 0,
              "");
        /* muzero.channels is nobody's stand-in: unread, so unknown here */
        CHECK(zt_config_check_unused(c) != ZT_OK && strstr(zt_error_message(), "'muzero.channels'"),
              "%s", zt_error_message());
        int64_t ch;
        CHECK(zt_config_int(c, "muzero.channels", 1, 1, 64, &ch) == ZT_OK, "");
        CHECK(zt_config_check_unused(c) == ZT_OK, "%s", zt_error_message());
        zt_config_free(c);
    }
}

/* Splits list with zt_list_next into "a|b|c" in out; the status of the
 * first refusal, or ZT_OK. */
static zt_status split_list(const char *list, size_t cap, char *out, size_t out_cap)
{
    out[0] = '\0';
    char item[64];
    for (const char *p = list;;) {
        bool got;
        zt_status st = zt_list_next(list, &p, "k", item, cap, &got);
        if (st != ZT_OK) return st;
        if (!got) return ZT_OK;
        size_t at = strlen(out);
        snprintf(out + at, out_cap - at, "%s%s", at ? "|" : "", item);
    }
}

/* zt_list_next: items with the blanks around them trimmed, a blank list
 * none; an empty item anywhere or one that does not fit refused, one line
 * naming the setting and the list. */
static void test_list_next(void)
{
    static const struct {
        const char *list, *items;
    } good[] = {
        {"", ""},
        {" \t ", ""},
        {"a", "a"},
        {"a,b,c", "a|b|c"},
        {"  a b , c\t,d  ", "a b|c|d"},
        {"12345678", "12345678"}, /* 8 characters fit a buffer of 9 */
    };
    char out[256];
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        zt_status st = split_list(good[i].list, 9, out, sizeof out);
        CHECK(st == ZT_OK && strcmp(out, good[i].items) == 0, "'%s': %s (%s)", good[i].list, out,
              st == ZT_OK ? "" : zt_error_message());
    }
    static const struct {
        const char *list, *message;
    } bad[] = {
        {"a,,b", "k: an empty entry in 'a,,b'"},
        {"a,", "k: an empty entry in 'a,'"},
        {"a, \t", "k: an empty entry in 'a, \t'"},
        {",a", "k: an empty entry in ',a'"},
        {" , ", "k: an empty entry in ' , '"},
        {"a,123456789", "k: '123456789' is longer than 8 characters"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        zt_status st = split_list(bad[i].list, 9, out, sizeof out);
        CHECK(st == ZT_ERR_INVALID && strcmp(zt_error_message(), bad[i].message) == 0,
              "'%s': status %d, '%s'", bad[i].list, (int)st, zt_error_message());
    }
}

/* zt_data_find: the caller's directory first, then the usual places; a
 * file in none of them is false with the tests/data path in out. */
static void test_data_find(void)
{
    char dir[200], sub_dir[220], path[512];
    snprintf(dir, sizeof dir, "%s/data", tmpdir);
    snprintf(sub_dir, sizeof sub_dir, "%s/tictactoe", dir);
    CHECK(zt_mkdirs(sub_dir) == ZT_OK, "");
    char file[300];
    snprintf(file, sizeof file, "%s/ttt_positions.txt", sub_dir);
    write_text(file, "override\n");
    CHECK(zt_data_find(dir, "tictactoe/ttt_positions.txt", path, sizeof path) &&
              strcmp(path, file) == 0,
          "override: %s", path);
    /* Without the override, the reference copy CTest points at. */
    CHECK(zt_data_find(NULL, "tictactoe/ttt_positions.txt", path, sizeof path) &&
              strcmp(path, file) != 0,
          "the reference data: %s", path);
    CHECK(zt_data_find("", "tictactoe/ttt_positions.txt", path, sizeof path), "empty override");
    CHECK(!zt_data_find(dir, "nothing/here.txt", path, sizeof path) &&
              strcmp(path, "tests/data/nothing/here.txt") == 0,
          "missing: %s", path);
}

/* A directory's names, sorted, "." and ".." left out, hidden ones kept;
 * a missing directory is NULL with errno set. */
static void test_dir_names(void)
{
    char dir[160], path[200];
    snprintf(dir, sizeof dir, "%s/names", tmpdir);
    CHECK(zt_mkdirs(dir) == ZT_OK, "");
    char **names = zt_dir_names(dir);
    CHECK(names && names[0] == NULL, "an empty directory has names");
    zt_dir_names_free(names);
    static const char *const made[] = {"b", ".hidden", "a10", "a2"};
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, made[i]);
        CHECK(zt_write_file_atomic(path, "x", 1) == ZT_OK, "%s", zt_error_message());
    }
    names = zt_dir_names(dir);
    static const char *const want[] = {".hidden", "a10", "a2", "b"};
    int same = 0;
    for (int i = 0; names && i < 4; i++) same += names[i] && strcmp(names[i], want[i]) == 0;
    CHECK(same == 4 && names[4] == NULL, "sorted names: %d of 4 as wanted", same);
    zt_dir_names_free(names);
    snprintf(path, sizeof path, "%s/missing", dir);
    errno = 0;
    CHECK(zt_dir_names(path) == NULL && errno == ENOENT, "a missing directory: errno %d", errno);
}

static void test_fileio(void)
{
    char path[200], dir[160];
    snprintf(dir, sizeof dir, "%s/io", tmpdir);
    CHECK(zt_mkdirs(dir) == ZT_OK, "");
    snprintf(path, sizeof path, "%s/file.bin", dir);

    CHECK(zt_write_file_atomic(path, "hello", 5) == ZT_OK, "");
    char *data;
    size_t len;
    CHECK(zt_read_file(path, &data, &len) == ZT_OK, "");
    CHECK(len == 5 && memcmp(data, "hello", 5) == 0 && data[5] == '\0', "");
    free(data);

    zt_iovec parts[3] = {{"re", 2}, {"", 0}, {"placed!", 7}};
    CHECK(zt_write_file_atomicv(path, parts, 3) == ZT_OK, "");
    CHECK(zt_read_file(path, &data, &len) == ZT_OK, "");
    CHECK(len == 9 && strcmp(data, "replaced!") == 0, "");
    free(data);
    CHECK(count_temp_files(dir) == 0, "");

    CHECK(zt_write_file_atomic(path, "", 0) == ZT_OK, "");
    CHECK(zt_read_file(path, &data, &len) == ZT_OK && len == 0 && data[0] == '\0', "");
    free(data);

    /* Larger than any initial read buffer. */
    size_t big = 3 * 1000 * 1000 + 17;
    char *blob = malloc(big);
    for (size_t i = 0; i < big; i++) blob[i] = (char)(i * 31 + 7);
    CHECK(zt_write_file_atomic(path, blob, big) == ZT_OK, "");
    CHECK(zt_read_file(path, &data, &len) == ZT_OK && len == big && memcmp(data, blob, big) == 0,
          "");
    free(data);
    free(blob);

    /* Into a directory that does not exist: an I/O error naming the path,
     * nothing created. */
    char bad[200];
    snprintf(bad, sizeof bad, "%s/no/such/dir/f", tmpdir);
    CHECK(zt_write_file_atomic(bad, "x", 1) == ZT_ERR_IO, "");
    CHECK(contains(zt_error_message(), "no/such/dir/f"), "%s", zt_error_message());
    struct stat st;
    CHECK(stat(bad, &st) != 0, "");

    /* The rename fails (the target is a non-empty directory): the old target
     * is untouched and the temp file is gone. */
    char target[200], inside[220];
    snprintf(target, sizeof target, "%s/target", dir);
    snprintf(inside, sizeof inside, "%s/keep", target);
    CHECK(zt_mkdirs(target) == ZT_OK, "");
    CHECK(zt_write_file_atomic(inside, "kept", 4) == ZT_OK, "");
    CHECK(zt_write_file_atomic(target, "x", 1) == ZT_ERR_IO, "");
    CHECK(contains(zt_error_message(), target), "%s", zt_error_message());
    CHECK(stat(target, &st) == 0 && S_ISDIR(st.st_mode), "");
    CHECK(zt_read_file(inside, &data, &len) == ZT_OK && strcmp(data, "kept") == 0, "");
    free(data);
    CHECK(count_temp_files(dir) == 0, "");

    char missing[200];
    snprintf(missing, sizeof missing, "%s/missing.txt", dir);
    zt_status s = zt_read_file(missing, &data, &len);
    CHECK(s == ZT_ERR_NOT_FOUND || s == ZT_ERR_IO, "");
    CHECK(contains(zt_error_message(), missing), "%s", zt_error_message());
    CHECK(zt_read_file(dir, &data, &len) == ZT_ERR_IO, "");

    char deep[200];
    snprintf(deep, sizeof deep, "%s/a/b/c/", dir);
    CHECK(zt_mkdirs(deep) == ZT_OK, "");
    CHECK(zt_mkdirs(deep) == ZT_OK, "");
    CHECK(stat(deep, &st) == 0 && S_ISDIR(st.st_mode), "");
    CHECK(zt_mkdirs(path) == ZT_ERR_IO, "");
    CHECK(contains(zt_error_message(), path), "%s", zt_error_message());
}

/* Every I/O point of an atomic write, made to fail in turn: the write
 * reports the injected error (its text names it) on one line, the old file
 * is untouched and no temp file is left. Then N walks over every I/O call of
 * the write (ZT_FAULT_IO) until it goes through. */
static void test_fileio_faults(void)
{
    char dir[160], path[200];
    snprintf(dir, sizeof dir, "%s/faults", tmpdir);
    CHECK(zt_mkdirs(dir) == ZT_OK, "");
    snprintf(path, sizeof path, "%s/file.txt", dir);
    CHECK(zt_write_file_atomic(path, "old", 3) == ZT_OK, "");
    static const zt_fault_point points[] = {ZT_FAULT_OPEN, ZT_FAULT_WRITE, ZT_FAULT_FSYNC,
                                            ZT_FAULT_CLOSE, ZT_FAULT_RENAME};
    char *data;
    size_t len;
    for (size_t i = 0; i < sizeof points / sizeof points[0]; i++) {
        int err = i % 2 ? EIO : ENOSPC;
        zt_fault_set(points[i], 1, false, err);
        zt_status st = zt_write_file_atomic(path, "new", 3);
        const char *msg = zt_error_message();
        CHECK(st == ZT_ERR_IO && contains(msg, strerror(err)) && !strchr(msg, '\n'),
              "%s: status %d, '%s'", zt_fault_name(points[i]), (int)st, msg);
        CHECK(zt_fault_calls(points[i]) == 1, "%s: %llu calls", zt_fault_name(points[i]),
              (unsigned long long)zt_fault_calls(points[i]));
        zt_fault_reset();
        CHECK(zt_read_file(path, &data, &len) == ZT_OK && strcmp(data, "old") == 0,
              "%s: the old file was changed", zt_fault_name(points[i]));
        free(data);
        CHECK(count_temp_files(dir) == 0, "%s: a temp file was left", zt_fault_name(points[i]));
    }
    /* reads and directories */
    zt_fault_set(ZT_FAULT_READ, 1, false, EIO);
    CHECK(zt_read_file(path, &data, &len) == ZT_ERR_IO && contains(zt_error_message(), strerror(EIO)),
          "read: %s", zt_error_message());
    zt_fault_set(ZT_FAULT_OPEN, 1, false, EIO);
    CHECK(zt_read_file(path, &data, &len) == ZT_ERR_IO, "open for reading: %s", zt_error_message());
    char sub[220];
    snprintf(sub, sizeof sub, "%s/x/y", dir);
    zt_fault_set(ZT_FAULT_MKDIR, 3, false, ENOSPC);
    CHECK(zt_mkdirs(sub) == ZT_ERR_IO && contains(zt_error_message(), strerror(ENOSPC)),
          "mkdir: %s", zt_error_message());
    zt_fault_reset();
    /* "onward": every call from the nth on */
    zt_fault_set(ZT_FAULT_WRITE, 2, true, EIO);
    FILE *f;
    snprintf(sub, sizeof sub, "%s/appended.log", dir);
    CHECK(zt_open_append(sub, &f) == ZT_OK, "");
    if (f) fclose(f);
    CHECK(zt_write_file_atomic(path, "a", 1) == ZT_OK, "the first write failed");
    CHECK(zt_write_file_atomic(path, "b", 1) == ZT_ERR_IO, "the second write went through");
    CHECK(zt_write_file_atomic(path, "c", 1) == ZT_ERR_IO, "the third write went through");
    zt_fault_reset();
    CHECK(zt_write_file_atomic(path, "old", 3) == ZT_OK, "after reset: %s", zt_error_message());

    /* the walk */
    int calls = 0;
    for (uint64_t n = 1; n < 100; n++) {
        zt_fault_set(ZT_FAULT_IO, n, false, n % 2 ? ENOSPC : EIO);
        zt_status st = zt_write_file_atomic(path, "new", 3);
        uint64_t seen = zt_fault_calls(ZT_FAULT_IO);
        zt_fault_reset();
        if (seen < n) { /* the fault never fired: every call has been failed once */
            CHECK(st == ZT_OK, "no fault, yet: %s", zt_error_message());
            calls = (int)n - 1;
            break;
        }
        CHECK(st == ZT_ERR_IO && contains(zt_error_message(), strerror(n % 2 ? ENOSPC : EIO)),
              "I/O call %llu: status %d, '%s'", (unsigned long long)n, (int)st, zt_error_message());
        /* a fault after the rename (the directory's sync) has replaced it */
        CHECK(zt_read_file(path, &data, &len) == ZT_OK &&
                  (strcmp(data, "old") == 0 || strcmp(data, "new") == 0),
              "I/O call %llu: the file holds '%s'", (unsigned long long)n, data);
        if (data && strcmp(data, "new") == 0) zt_write_file_atomic(path, "old", 3);
        free(data);
        CHECK(count_temp_files(dir) == 0, "I/O call %llu: a temp file was left",
              (unsigned long long)n);
    }
    printf("fileio faults: an atomic write makes %d I/O calls, each failed in turn\n", calls);
    CHECK(calls >= 7, "only %d I/O calls counted (open, write, fsync, close, rename, dir open, dir fsync)",
          calls);
}

/* A directory lock: a second holder is refused with the first one's pid,
 * even in the same process; it is free again once released, and once a
 * holder dies by SIGKILL. */
static void test_dir_lock(void)
{
    char dir[160];
    snprintf(dir, sizeof dir, "%s/locked", tmpdir);
    CHECK(zt_mkdirs(dir) == ZT_OK, "");
    zt_dir_lock *a = NULL, *b = NULL;
    CHECK(zt_dir_lock_acquire(dir, &a) == ZT_OK && a, "%s", zt_error_message());
    CHECK(zt_dir_lock_acquire(dir, &b) == ZT_ERR_INVALID && !b, "a second lock was granted");
    char want[200];
    snprintf(want, sizeof want, "%s is in use by process %ld", dir, (long)getpid());
    CHECK(strcmp(zt_error_message(), want) == 0, "'%s', wanted '%s'", zt_error_message(), want);
    zt_dir_lock_release(a);
    CHECK(zt_dir_lock_acquire(dir, &b) == ZT_OK, "not free after release: %s", zt_error_message());
    zt_dir_lock_release(b);

    int ready[2];
    CHECK(pipe(ready) == 0, "");
    pid_t child = fork();
    if (child == 0) {
        zt_dir_lock *c;
        char ok = zt_dir_lock_acquire(dir, &c) == ZT_OK ? 'y' : 'n';
        if (write(ready[1], &ok, 1) != 1) _exit(1);
        pause();
        _exit(0);
    }
    char ok = 'n';
    CHECK(read(ready[0], &ok, 1) == 1 && ok == 'y', "the child could not lock");
    snprintf(want, sizeof want, "in use by process %ld", (long)child);
    CHECK(zt_dir_lock_acquire(dir, &b) == ZT_ERR_INVALID && contains(zt_error_message(), want),
          "'%s', wanted '%s'", zt_error_message(), want);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    CHECK(zt_dir_lock_acquire(dir, &b) == ZT_OK, "still locked after the holder died: %s",
          zt_error_message());
    zt_dir_lock_release(b);
    close(ready[0]);
    close(ready[1]);
}

/* ---- log ---------------------------------------------------------------- */

static void test_log(void)
{
    CHECK(zt_log_parse_level("debug") == ZT_LOG_DEBUG, "");
    CHECK(zt_log_parse_level("warn") == ZT_LOG_WARN, "");
    CHECK(zt_log_parse_level("quiet") == ZT_LOG_QUIET, "");
    CHECK(zt_log_parse_level("loud") == -1, "");
    char path[160];
    snprintf(path, sizeof path, "%s/log.txt", tmpdir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL, "");
    if (!f) return;
    zt_log_level saved = zt_log_get_level();
    zt_log_set_level(ZT_LOG_ERROR);
    CHECK(zt_log_get_level() == ZT_LOG_ERROR, "");
    zt_log_set_file(f);
    zt_info("hidden %d", 1);
    zt_error("test_core: expected error line %d (not a failure)", 42);
    zt_log_set_file(NULL);
    zt_error("test_core: not in the file (not a failure)");
    zt_log_set_level(saved);
    fclose(f);
    char *data;
    size_t len;
    CHECK(zt_read_file(path, &data, &len) == ZT_OK, "");
    CHECK(!contains(data, "hidden"), "");
    CHECK(contains(data, "error: test_core: expected error line 42 (not a failure)\n"), "");
    CHECK(!contains(data, "not in the file"), "");
    free(data);
}

/* ---- progress meter ---------------------------------------------------- */

/* A clock that reads whatever the test set. */
static double fake_now(void *ctx)
{
    return *(const double *)ctx;
}

/* Records `done` and `result` at fake time `at`, then formats the line at `now`. */
static void meter_line(zt_progress_meter *m, double *clock, int64_t done, const char *result,
                       double at, double now, char *buf, size_t cap)
{
    *clock = at;
    if (result)
        zt_progress_meter_update(m, done, "%s", result);
    else
        zt_progress_meter_update(m, done, NULL);
    zt_progress_meter_format(m, now, buf, cap);
}

static void test_progress_meter(void)
{
    double now = 100, t0 = 100; /* the fake clock starts far from zero: elapsed counts from init */
    zt_progress_meter m;
    zt_progress_meter_init(&m, "eval", "games", 1000, fake_now, &now);
    char line[512];

    /* Zero elapsed, nothing done: no rate, no ETA, no division by zero. */
    zt_progress_meter_format(&m, t0, line, sizeof line);
    CHECK(strcmp(line, "eval 0/1000 games (0 %), ? games/s, 0:00 elapsed, ETA ?") == 0, "'%s'",
          line);

    /* 250 of 1000 in 25 s: 10 games/s, 75 s to go; the caller's result in the middle. */
    meter_line(&m, &now, 250, "W-D-L 200-30-20", t0 + 25, t0 + 25, line, sizeof line);
    CHECK(strcmp(line, "eval 250/1000 games (25 %), 10.0 games/s, 0:25 elapsed, ETA 1:15 | "
                       "W-D-L 200-30-20") == 0,
          "'%s'", line);
    /* Seen 10 s later with no new game: the rate stays that of the last
     * game, the ETA counts down, the elapsed time moves on. */
    zt_progress_meter_format(&m, t0 + 35, line, sizeof line);
    CHECK(strstr(line, ", 10.0 games/s, 0:35 elapsed, ETA 1:05 |"), "'%s'", line);
    /* ... and never below zero, however late. */
    zt_progress_meter_format(&m, t0 + 1000, line, sizeof line);
    CHECK(strstr(line, "16:40 elapsed, ETA 0:00"), "'%s'", line);
    /* The same count again later changes neither its time nor the rate. */
    meter_line(&m, &now, 250, "W-D-L 200-30-20", t0 + 50, t0 + 50, line, sizeof line);
    CHECK(strstr(line, ", 10.0 games/s, 0:50 elapsed, ETA 0:50 |"), "'%s'", line);

    /* The share rounds down: 999 of 1000 is not yet 100 %. */
    meter_line(&m, &now, 999, NULL, t0 + 999, t0 + 999, line, sizeof line);
    CHECK(strcmp(line, "eval 999/1000 games (99 %), 1.00 games/s, 16:39 elapsed, ETA 0:01") == 0,
          "'%s'", line);
    meter_line(&m, &now, 1000, NULL, t0 + 1000, t0 + 1000, line, sizeof line);
    CHECK(strstr(line, "(100 %)") && strstr(line, "ETA 0:00"), "'%s'", line);
    zt_progress_meter_end(&m);

    /* Done at zero elapsed (a clock too coarse): the rate is unknown, the ETA zero. */
    now = t0;
    zt_progress_meter_init(&m, "eval", "games", 1000, fake_now, &now);
    meter_line(&m, &now, 1000, "", t0, t0, line, sizeof line);
    CHECK(strcmp(line, "eval 1000/1000 games (100 %), ? games/s, 0:00 elapsed, ETA 0:00") == 0,
          "'%s'", line);
    zt_progress_meter_end(&m);

    /* Slow: 3 games in 2 hours, shown per hour; the ETA runs into days.
     * Between one a minute and one a second: per minute. */
    zt_progress_meter_init(&m, "eval", "games", 1000, fake_now, &now);
    meter_line(&m, &now, 3, NULL, t0 + 7200, t0 + 7200, line, sizeof line);
    CHECK(strstr(line, ", 1.50 games/h,") && strstr(line, "2:00:00 elapsed") &&
              strstr(line, "ETA 27d 16:40:00"),
          "'%s'", line);
    zt_progress_meter_end(&m);
    zt_progress_meter_init(&m, "eval", "games", 1000, fake_now, &now);
    meter_line(&m, &now, 30, NULL, now + 60, now + 60, line, sizeof line);
    CHECK(strstr(line, ", 30.0 games/min,") && strstr(line, "ETA 32:20"), "'%s'", line);
    zt_progress_meter_end(&m);

    /* Unknown total: a count, a rate, no share and no ETA. Huge counts are
     * shortened; the rate carries a suffix. */
    now = t0;
    zt_progress_meter_init(&m, "perft 12", "nodes", 0, fake_now, &now);
    meter_line(&m, &now, INT64_C(5000000000), "depth 12", t0 + 2, t0 + 2, line, sizeof line);
    CHECK(strcmp(line, "perft 12 5.00G nodes, 2.50G nodes/s, 0:02 elapsed | depth 12") == 0, "'%s'",
          line);
    meter_line(&m, &now, INT64_MAX, NULL, t0 + 1, t0 + 1, line, sizeof line);
    CHECK(strstr(line, "9.22E nodes") && strstr(line, "9.22E nodes/s") && !strstr(line, "ETA"),
          "'%s'", line);
    zt_progress_meter_end(&m);

    /* A huge total with a small count; a sub-second elapsed time. */
    now = t0;
    zt_progress_meter_init(&m, "solve", "positions", INT64_C(123456789), fake_now, &now);
    meter_line(&m, &now, 1234, "agree 1234/1234", t0 + 0.5, t0 + 0.5, line, sizeof line);
    CHECK(strcmp(line, "solve 1234/123M positions (0 %), 2.47k positions/s, 0:01 elapsed, ETA "
                       "13:53:43 | agree 1234/1234") == 0,
          "'%s'", line);
    /* A clock that reads before the start counts as zero elapsed. */
    zt_progress_meter_format(&m, t0 - 5, line, sizeof line);
    CHECK(strstr(line, "0:00 elapsed"), "'%s'", line);
    zt_progress_meter_end(&m);

    /* No label, no unit. */
    now = t0;
    zt_progress_meter_init(&m, NULL, NULL, 4, fake_now, &now);
    meter_line(&m, &now, 2, NULL, t0 + 4, t0 + 4, line, sizeof line);
    CHECK(strcmp(line, "2/4 (50 %), 30.0 units/min, 0:04 elapsed, ETA 0:04") == 0, "'%s'", line);

    /* A small buffer is cut, never overrun. */
    char small[12];
    memset(small, 'x', sizeof small);
    meter_line(&m, &now, 2, "a long result text", t0 + 4, t0 + 4, small, sizeof small);
    CHECK(strlen(small) == sizeof small - 1 && strncmp(small, "2/4 (50 %),", 11) == 0, "'%s'",
          small);
    zt_progress_meter_end(&m);

    /* Counts and durations at their edges. */
    struct {
        double v;
        const char *want;
    } counts[] = {{0, "0"},           {-0.0, "0"},         {99999, "99999"},
                  {100000, "100k"},   {999499, "999k"},    {999500, "1.00M"},
                  {1234567, "1.23M"}, {12345678, "12.3M"}, {-2500000, "-2.50M"},
                  {1e18, "1.00E"},    {NAN, "?"}};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        char buf[32];
        zt_progress_format_count(counts[i].v, buf, sizeof buf);
        CHECK(strcmp(buf, counts[i].want) == 0, "count %g: '%s', want '%s'", counts[i].v, buf,
              counts[i].want);
    }
    struct {
        double s;
        const char *want;
    } durations[] = {{0, "0:00"},
                     {0.49, "0:00"},
                     {59.6, "1:00"},
                     {3599, "59:59"},
                     {3600, "1:00:00"},
                     {86399, "23:59:59"},
                     {86400, "1d 00:00:00"},
                     {1e12, ">999d"},
                     {-1, "?"},
                     {INFINITY, "?"},
                     {NAN, "?"}};
    for (size_t i = 0; i < sizeof durations / sizeof durations[0]; i++) {
        char buf[32];
        zt_progress_format_duration(durations[i].s, buf, sizeof buf);
        CHECK(strcmp(buf, durations[i].want) == 0, "duration %g: '%s', want '%s'", durations[i].s,
              buf, durations[i].want);
    }

    /* Redraws are throttled to the interval, on the meter's own clock; a
     * meter that does not draw (stderr is no terminal) is never due. */
    zt_progress_meter_init(&m, "t", "u", 10, fake_now, &now);
    CHECK(!m.draw && !m.ticking, "a test's stderr is no terminal: no drawing, no ticker");
    m.draw = true;
    CHECK(!zt_progress_meter_due(&m), "nothing drawn at once: a quick command shows no line");
    now += m.interval;
    CHECK(zt_progress_meter_due(&m), "the first redraw is due after one interval");
    CHECK(!zt_progress_meter_due(&m), "not again at the same instant");
    now += m.interval / 2;
    CHECK(!zt_progress_meter_due(&m), "not within the interval");
    now += m.interval;
    CHECK(zt_progress_meter_due(&m), "due once the interval passed");
    /* Paused (the caller prints lines of its own): not due until the next update. */
    zt_progress_meter_pause(&m);
    now += 10;
    CHECK(!zt_progress_meter_due(&m), "not due while paused");
    zt_progress_meter_update(&m, 1,
                             NULL); /* due, and drawn: stderr is no terminal, so nothing shows */
    now += m.interval;
    CHECK(zt_progress_meter_due(&m), "due again after an update");
    m.draw = false;
    now += 10;
    CHECK(!zt_progress_meter_due(&m), "never due when not drawing");
    zt_progress_meter_end(&m);
}

/* ---- chart ticks ------------------------------------------------------- */

/* A label read back as a number: "25.4k" is 25400. */
static double label_value(const char *label)
{
    char *end;
    double v = strtod(label, &end);
    switch (*end) {
    case 'k':
        return v * 1e3;
    case 'M':
        return v * 1e6;
    case 'G':
        return v * 1e9;
    case 'T':
        return v * 1e12;
    default:
        return *end ? NAN : v;
    }
}

/* A printed zero with a minus sign: "-0", "-0.00", "-0k". */
static bool negative_zero(const char *s)
{
    if (s[0] != '-') return false;
    for (s++; *s; s++)
        if (*s >= '1' && *s <= '9') return false;
    return true;
}

static void test_ticks(void)
{
    /* Data ranges as a report meets them: a tiny range, large values close
     * together, constants, a single value, zero and negative zero, negative
     * ranges, large counts, tiny values, nothing finite. */
    const double ranges[][2] = {{4.8460, 4.8462}, {25400, 25420},  {0.6129, 0.6129}, {0, 0},
                                {-0.0, 0.0},      {-0.0, -0.0},    {512, 512},       {-700, -650},
                                {-3, 2},          {0, 150000},     {0, 1.5e6},       {0, 3.2e9},
                                {1e15, 1.001e15}, {0.001, 0.0012}, {0, 9.8},         {2.0, 1.0},
                                {1e-7, 3e-7},     {NAN, NAN},      {INFINITY, 5},    {0, 22922},
                                {0.95, 1.0},      {-1e-9, 1e-9},   {99999, 100001}};
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++) {
        double lo = ranges[i][0], hi = ranges[i][1];
        zt_ticks_span(&lo, &hi);
        CHECK(lo < hi && isfinite(lo) && isfinite(hi), "range %zu: span [%g, %g]", i, lo, hi);
        /* Finite data stays inside the widened range. */
        for (int k = 0; k < 2; k++)
            if (isfinite(ranges[i][k]))
                CHECK(ranges[i][k] >= lo && ranges[i][k] <= hi, "range %zu: %g outside [%g, %g]", i,
                      ranges[i][k], lo, hi);
        zt_ticks t;
        zt_ticks_make(lo, hi, 5, &t);
        char all[512] = "";
        for (int k = 0; k < t.n; k++) {
            strncat(all, " ", sizeof all - strlen(all) - 1);
            strncat(all, t.label[k], sizeof all - strlen(all) - 1);
        }
        CHECK(t.n >= 3 && t.n <= ZT_TICKS_MAX, "range %zu: %d ticks:%s", i, t.n, all);
        /* The step is 1, 2 or 5 times a power of ten. */
        double m = t.step / pow(10, floor(log10(t.step)));
        CHECK(fabs(m - 1) < 1e-9 || fabs(m - 2) < 1e-9 || fabs(m - 5) < 1e-9, "range %zu: step %g",
              i, t.step);
        for (int k = 0; k < t.n; k++) {
            CHECK(t.value[k] >= lo - 1e-9 * t.step && t.value[k] <= hi + 1e-9 * t.step,
                  "range %zu: tick %g outside [%g, %g]", i, t.value[k], lo, hi);
            CHECK(!negative_zero(t.label[k]), "range %zu: label '%s'", i, t.label[k]);
            /* Each label reads back as its tick's value, to well within a step. */
            double back = label_value(t.label[k]);
            CHECK(fabs(back - t.value[k]) < 0.01 * t.step, "range %zu: label '%s' for %.17g:%s", i,
                  t.label[k], t.value[k], all);
            if (k > 0) {
                CHECK(fabs(t.value[k] - t.value[k - 1] - t.step) < 1e-6 * t.step,
                      "range %zu: ticks not a step apart:%s", i, all);
                for (int j = 0; j < k; j++)
                    CHECK(strcmp(t.label[j], t.label[k]) != 0, "range %zu: repeated label:%s", i,
                          all);
            }
        }
    }
    /* The cases the first report showed, exactly. */
    zt_ticks t;
    double lo = 25400, hi = 25420;
    zt_ticks_span(&lo, &hi);
    zt_ticks_make(lo, hi, 5, &t);
    CHECK(t.n == 5 && strcmp(t.label[0], "25400") == 0 && strcmp(t.label[4], "25420") == 0,
          "25400..25420: %d ticks from '%s'", t.n, t.label[0]);
    lo = 4.8460, hi = 4.8462;
    zt_ticks_span(&lo, &hi);
    zt_ticks_make(lo, hi, 5, &t);
    CHECK(t.n == 5 && strcmp(t.label[0], "4.844") == 0 && strcmp(t.label[2], "4.846") == 0,
          "4.8460..4.8462: '%s' .. '%s'", t.label[0], t.label[t.n - 1]);
    zt_ticks_make(0, 1.5e6, 5, &t);
    CHECK(strcmp(t.label[1], "0.2M") == 0 && strcmp(t.label[0], "0") == 0, "0..1.5M: '%s' '%s'",
          t.label[0], t.label[1]);
    zt_ticks_make(0, 22922, 5, &t);
    CHECK(strcmp(t.label[1], "5k") == 0 && strcmp(t.label[4], "20k") == 0, "0..22922: '%s' '%s'",
          t.label[1], t.label[4]);

    /* Fixed point and single values never print "-0". */
    char buf[32];
    const double zeros[] = {-0.0, -0.0004, -1e-300};
    for (size_t i = 0; i < sizeof zeros / sizeof zeros[0]; i++) {
        zt_ticks_fixed(zeros[i], 0, buf, sizeof buf);
        CHECK(strcmp(buf, "0") == 0, "fixed %g: '%s'", zeros[i], buf);
        zt_ticks_fixed(zeros[i], 3, buf, sizeof buf);
        CHECK(strcmp(buf, "0.000") == 0, "fixed %g at 3: '%s'", zeros[i], buf);
        zt_ticks_value(zeros[i], buf, sizeof buf);
        CHECK(!negative_zero(buf), "value %g: '%s'", zeros[i], buf);
    }
    zt_ticks_fixed(-0.5, 0, buf, sizeof buf); /* rounds to even: -0 */
    CHECK(strcmp(buf, "0") == 0, "fixed -0.5: '%s'", buf);
    zt_ticks_fixed(-1.5, 0, buf, sizeof buf);
    CHECK(strcmp(buf, "-2") == 0, "fixed -1.5: '%s'", buf);
    const struct {
        double v;
        const char *want;
    } values[] = {{0.612863, "0.6129"}, {25410, "25.41k"},   {254100, "254.1k"},
                  {999960, "1.000M"},   {1234567, "1.235M"}, {9999.4, "9999"},
                  {552.1, "552.1"},     {-0.3, "-0.3000"},   {0, "0"},
                  {3.2e13, "32.00T"},   {NAN, "?"}};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        zt_ticks_value(values[i].v, buf, sizeof buf);
        CHECK(strcmp(buf, values[i].want) == 0, "value %g: '%s', want '%s'", values[i].v, buf,
              values[i].want);
    }
}

/* Removes everything under `path` (only what this test created). */
/* ---- status messages ----------------------------------------------------- */

static bool ends_with(const char *s, const char *end)
{
    size_t n = strlen(s), m = strlen(end);
    return n >= m && strcmp(s + n - m, end) == 0;
}

/* Calls zt_vformat_tail through a va_list. */
static int format_tail(char *dst, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = zt_vformat_tail(dst, cap, fmt, ap);
    va_end(ap);
    return n;
}

static void test_status_messages(void)
{
    /* The message buffer as an argument of the next zt_fail: each level adds
     * its context in front of the one below. The inner message is long
     * enough that formatting it in place would overwrite it while reading. */
    char inner[2000];
    memset(inner, 'r', sizeof inner - 1);
    inner[sizeof inner - 1] = '\0';
    zt_fail(ZT_ERR_IO, "%s: the reason", inner);
    CHECK(zt_fail(ZT_ERR_CORRUPT, "loading '%s': %s", "x.bin", zt_error_message()) ==
              ZT_ERR_CORRUPT,
          "");
    zt_fail(ZT_ERR_CORRUPT, "run '%s': %s", "r", zt_error_message());
    const char *msg = zt_error_message();
    CHECK(strncmp(msg, "run 'r': loading 'x.bin': rrr", 29) == 0, "%.60s", msg);
    CHECK(strlen(msg) ==
              strlen("run 'r': loading 'x.bin': ") + strlen(inner) + strlen(": the reason"),
          "%zu", strlen(msg));
    CHECK(ends_with(msg, "r: the reason"), "%s", msg + strlen(msg) - 20);
    /* Twice the same buffer, and the buffer as the format's only argument. */
    zt_fail(ZT_ERR_IO, "short");
    zt_fail(ZT_ERR_IO, "%s+%s", zt_error_message(), zt_error_message());
    CHECK(strcmp(zt_error_message(), "short+short") == 0, "%s", zt_error_message());
    zt_fail(ZT_ERR_IO, "%s", zt_error_message());
    CHECK(strcmp(zt_error_message(), "short+short") == 0, "%s", zt_error_message());

    /* A path as long as Linux takes (PATH_MAX 4096, NUL included), its
     * first name under tmpdir too long (over NAME_MAX 255): the reason
     * survives being wrapped in a message that names the path again. */
    char path[4096];
    size_t used = (size_t)snprintf(path, sizeof path, "%s/", tmpdir);
    memset(path + used, 'n', 300);
    used += 300;
    while (used < sizeof path - 1) {
        path[used] = '/';
        size_t name = sizeof path - 2 - used < 200 ? sizeof path - 2 - used : 200;
        memset(path + used + 1, 'd', name);
        used += 1 + name;
    }
    path[sizeof path - 1] = '\0';
    CHECK(strlen(path) == 4095 && path[4094] == 'd', "%zu", strlen(path));
    char *data;
    size_t len;
    CHECK(zt_read_file(path, &data, &len) != ZT_OK, "");
    zt_fail(ZT_ERR_IO, "loading '%s': %s", path, zt_error_message());
    msg = zt_error_message();
    CHECK(ends_with(msg, strerror(ENAMETOOLONG)), "...%s", msg + strlen(msg) - 40);
    CHECK(strncmp(msg, "loading '", 9) == 0, "%.20s", msg);

    /* Too long for the buffer: the end (the reason) is kept behind "...". */
    size_t huge = 3 * ZT_MESSAGE_MAX;
    char *big = malloc(huge + 1);
    memset(big, 'p', huge);
    big[huge] = '\0';
    zt_fail(ZT_ERR_IO, "cannot open '%s': %s", big, strerror(ENAMETOOLONG));
    msg = zt_error_message();
    CHECK(strlen(msg) == ZT_MESSAGE_MAX - 1, "%zu", strlen(msg));
    CHECK(strncmp(msg, "...ppp", 6) == 0, "%.20s", msg);
    CHECK(ends_with(msg, strerror(ENAMETOOLONG)), "%s", msg + strlen(msg) - 40);
    /* ... also when the text cut is partly the buffer itself. */
    zt_fail(ZT_ERR_IO, "%s%s", big, zt_error_message());
    msg = zt_error_message();
    CHECK(strlen(msg) == ZT_MESSAGE_MAX - 1 && strncmp(msg, "...ppp", 6) == 0, "%.20s", msg);
    CHECK(ends_with(msg, strerror(ENAMETOOLONG)), "%s", msg + strlen(msg) - 40);
    free(big);

    /* zt_vformat_tail into a small buffer: fits exactly, then one over. */
    char small[10];
    CHECK(format_tail(small, sizeof small, "%s", "123456789") == 9 &&
              strcmp(small, "123456789") == 0,
          "%s", small);
    CHECK(format_tail(small, sizeof small, "%s%d", "abcdefghi", 7) == 10 &&
              strcmp(small, "...efghi7") == 0,
          "%s", small);
}

static void remove_tree(const char *path)
{
    DIR *d = opendir(path);
    if (!d) {
        unlink(path);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char child[512];
        snprintf(child, sizeof child, "%s/%s", path, e->d_name);
        remove_tree(child);
    }
    closedir(d);
    rmdir(path);
}

int main(void)
{
    /* Run from a terminal, the meters under test would draw on it. */
    setenv("ZT_NO_PROGRESS", "1", 1);
    seed = zt_test_seed((uint64_t)time(NULL));
    snprintf(tmpdir, sizeof tmpdir, "/tmp/zt_test_core_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 2;
    }

    test_rng_streams();
    test_rng_below();
    test_rng_distributions();
    test_hash();
    test_arena();
    test_grow();
    test_pool();
    test_queue();
    test_barrier();
    test_config_file_and_overrides();
    test_config_duplicates();
    test_config_types();
    test_config_roundtrip();
    test_config_inherit();
    test_config_promote();
    test_list_next();
    test_fileio();
    test_dir_names();
    test_fileio_faults();
    test_dir_lock();
    test_data_find();
    test_log();
    test_progress_meter();
    test_ticks();
    test_status_messages();

    remove_tree(tmpdir);
    return zt_test_finish("test_core");
}
