/* The weight store behind the weight source: nothing before the first
 * publication, then the newest version whole; a poll with the version it
 * holds copies nothing; a wrong size is refused; readers polling while the
 * learner publishes never see a torn or older version; publication reuses
 * its pooled buffers (no allocation per version) and the pool stays within
 * readers + 2. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "selfplay/weights.h"

#include "zt_test.h"

enum { N = 1 << 14, READERS = 3, VERSIONS = 3000 };

static void fill(float *w, float v)
{
    for (int i = 0; i < N; i++) w[i] = v + (float)(i % 7);
}

/* The version a buffer was filled for, or -1 if it mixes versions. */
static float version_of(const float *w)
{
    float v = w[0];
    for (int i = 0; i < N; i++)
        if (w[i] != v + (float)(i % 7)) return -1;
    return v;
}

static void test_basics(void)
{
    zt_weight_store *s = zt_weight_store_new(N);
    zt_weight_source src = zt_weight_store_source(s);
    float *dst = malloc(N * sizeof *dst), *w = malloc(N * sizeof *w);
    fill(dst, -5);
    uint64_t got = 99;
    CHECK(src.poll(src.ctx, 0, dst, N, &got) == ZT_OK && got == 0 && version_of(dst) == -5,
          "a poll before any publication gave version %llu", (unsigned long long)got);
    fill(w, 1);
    CHECK(zt_weight_store_publish(s, w) == 1 && zt_weight_store_version(s) == 1, "first version");
    CHECK(src.poll(src.ctx, 0, dst, N, &got) == ZT_OK && got == 1 && version_of(dst) == 1,
          "poll after version 1: got %llu", (unsigned long long)got);
    fill(dst, -5);
    CHECK(src.poll(src.ctx, 1, dst, N, &got) == ZT_OK && got == 1 && version_of(dst) == -5,
          "a poll holding the newest version copied something");
    zt_status st = src.poll(src.ctx, 0, dst, N - 1, &got);
    CHECK(st == ZT_ERR_INVALID && strstr(zt_error_message(), "floats"), "wrong size: %s",
          zt_error_message());
    /* two halves: the publisher writes in place */
    float *in = zt_weight_store_begin(s);
    fill(in, 2);
    CHECK(zt_weight_store_version(s) == 1, "begin published early");
    CHECK(zt_weight_store_commit(s) == 2, "second version");
    CHECK(src.poll(src.ctx, 1, dst, N, &got) == ZT_OK && got == 2 && version_of(dst) == 2,
          "poll after version 2");
    for (int v = 3; v < 50; v++) {
        fill(w, (float)v);
        zt_weight_store_publish(s, w);
    }
    CHECK(zt_weight_store_buffers(s) == 2, "%d buffers after 49 versions without readers",
          zt_weight_store_buffers(s));
    free(dst);
    free(w);
    zt_weight_store_free(s);
}

typedef struct reader {
    zt_weight_source src;
    atomic_int *done;
    uint64_t polls, copies, bad;
    float *dst;
} reader;

static void *reader_main(void *arg)
{
    reader *r = arg;
    uint64_t have = 0;
    while (!atomic_load(r->done)) {
        uint64_t got;
        if (r->src.poll(r->src.ctx, have, r->dst, N, &got) != ZT_OK) r->bad++;
        r->polls++;
        if (got == have) continue;
        r->copies++;
        /* whole, newer than before, and the number it claims */
        if (got < have || version_of(r->dst) != (float)got) r->bad++;
        have = got;
    }
    return NULL;
}

static void test_concurrent(void)
{
    zt_weight_store *s = zt_weight_store_new(N);
    atomic_int done = 0;
    reader rs[READERS];
    pthread_t th[READERS];
    for (int i = 0; i < READERS; i++) {
        rs[i] = (reader){.src = zt_weight_store_source(s), .done = &done};
        rs[i].dst = malloc(N * sizeof(float));
        pthread_create(&th[i], NULL, reader_main, &rs[i]);
    }
    for (int v = 1; v <= VERSIONS; v++) {
        float *w = zt_weight_store_begin(s);
        fill(w, (float)v);
        CHECK(zt_weight_store_commit(s) == (uint64_t)v, "version %d", v);
        sched_yield(); /* let the readers in between versions */
    }
    atomic_store(&done, 1);
    uint64_t copies = 0;
    for (int i = 0; i < READERS; i++) {
        pthread_join(th[i], NULL);
        CHECK(rs[i].bad == 0, "reader %d: %llu torn, stale or failed copies", i,
              (unsigned long long)rs[i].bad);
        copies += rs[i].copies;
        free(rs[i].dst);
    }
    int buffers = zt_weight_store_buffers(s);
    CHECK(buffers >= 2 && buffers <= READERS + 2, "%d buffers for %d readers", buffers, READERS);
    printf("weights: %d versions, %d readers, %llu copies, %d buffers\n", VERSIONS, READERS,
           (unsigned long long)copies, buffers);
    zt_weight_store_free(s);
}

int main(void)
{
    test_basics();
    test_concurrent();
    return zt_test_finish("test_weights");
}
