/* Allocation: checked malloc, cache-line aligned blocks, and bump arenas.
 * The caller owns what zt_*_alloc / zt_arena_init returns and frees it with
 * the matching free. Hot paths take memory from arenas sized at init. */
#ifndef ZT_CORE_ALLOC_H
#define ZT_CORE_ALLOC_H

#include <stddef.h>

#define ZT_CACHE_LINE 64

/* malloc/calloc that abort with a message on failure (for sizes the program
 * controls; sizes from outside input go through the zt_status paths). */
void *zt_xmalloc(size_t size);
void *zt_xcalloc(size_t n, size_t size);
void *zt_xrealloc(void *p, size_t size);
char *zt_xstrdup(const char *s);

/* A growing array of `size`-byte elements, *cap of them allocated: returns
 * it grown so that it holds `need`, its capacity doubled (from 16) until
 * it does, and sets *cap; p itself where it already holds them. Aborts as
 * zt_xmalloc does where memory runs out or the size overflows. The
 * append:
 *     items = zt_xgrow(items, &cap, n + 1, sizeof *items);
 *     items[n++] = x; */
void *zt_xgrow(void *p, int *cap, int need, size_t size);
/* The same for a byte buffer of *cap bytes that must hold `need`. */
void *zt_xreserve(void *p, size_t *cap, size_t need);

/* Aligned block (alignment a power of two >= sizeof(void*)), zero-filled;
 * returns NULL on failure. Free with zt_aligned_free. */
void *zt_aligned_alloc(size_t alignment, size_t size);
void zt_aligned_free(void *p);

/* A bump arena over one fixed block: allocation is a pointer bump, reset
 * frees everything at once. Returns NULL when the block is exhausted. */
typedef struct zt_arena {
    unsigned char *base;
    size_t capacity;
    size_t used;
    size_t high_water;
} zt_arena;

int zt_arena_init(zt_arena *a, size_t capacity); /* 0 on success */
void *zt_arena_alloc(zt_arena *a, size_t size, size_t alignment);
void zt_arena_reset(zt_arena *a);
void zt_arena_free(zt_arena *a);

#endif
