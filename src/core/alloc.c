#include "core/alloc.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void out_of_memory(size_t size)
{
    fprintf(stderr, "zeroth: out of memory allocating %zu bytes\n", size);
    abort();
}

void *zt_xmalloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (!p) out_of_memory(size);
    return p;
}

void *zt_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) out_of_memory(n * size);
    return p;
}

void *zt_xrealloc(void *p, size_t size)
{
    void *q = realloc(p, size ? size : 1);
    if (!q) out_of_memory(size);
    return q;
}

/* The capacity at least `need` that doubling from cap (16 from nothing)
 * reaches, or `need` itself past half of `max`. */
static size_t grown(size_t cap, size_t need, size_t max)
{
    size_t c = cap ? cap : 16;
    while (c < need) c = c <= max / 2 ? 2 * c : need;
    return c;
}

void *zt_xgrow(void *p, int *cap, int need, size_t size)
{
    if (need <= *cap) return p;
    size_t c = grown(*cap > 0 ? (size_t)*cap : 0, (size_t)need, INT_MAX);
    if (size && c > SIZE_MAX / size) out_of_memory(SIZE_MAX);
    p = zt_xrealloc(p, c * size);
    *cap = (int)c;
    return p;
}

void *zt_xreserve(void *p, size_t *cap, size_t need)
{
    if (need <= *cap) return p;
    size_t c = grown(*cap, need, SIZE_MAX);
    p = zt_xrealloc(p, c);
    *cap = c;
    return p;
}

char *zt_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = zt_xmalloc(n);
    memcpy(p, s, n);
    return p;
}

void *zt_aligned_alloc(size_t alignment, size_t size)
{
    void *p = NULL;
    if (size == 0) size = alignment;
    if (posix_memalign(&p, alignment, size) != 0) return NULL;
    memset(p, 0, size);
    return p;
}

void zt_aligned_free(void *p)
{
    free(p);
}

int zt_arena_init(zt_arena *a, size_t capacity)
{
    a->base = zt_aligned_alloc(ZT_CACHE_LINE, capacity);
    a->capacity = a->base ? capacity : 0;
    a->used = 0;
    a->high_water = 0;
    return a->base ? 0 : -1;
}

void *zt_arena_alloc(zt_arena *a, size_t size, size_t alignment)
{
    uintptr_t start = (uintptr_t)a->base + a->used;
    uintptr_t aligned = (start + alignment - 1) & ~(uintptr_t)(alignment - 1);
    size_t offset = (size_t)(aligned - (uintptr_t)a->base);
    if (offset > a->capacity || size > a->capacity - offset) return NULL;
    a->used = offset + size;
    if (a->used > a->high_water) a->high_water = a->used;
    return a->base + offset;
}

void zt_arena_reset(zt_arena *a)
{
    a->used = 0;
}

void zt_arena_free(zt_arena *a)
{
    zt_aligned_free(a->base);
    a->base = NULL;
    a->capacity = a->used = 0;
}
