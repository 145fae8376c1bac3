#include "search/nncache.h"

#include <stdlib.h>
#include <string.h>


struct zt_nncache {
    size_t mask;
    int num_actions;
    uint64_t *keys;
    uint8_t *used;
    float *values;
    float *logits; /* (mask + 1) x num_actions */
    zt_nncache_stats stats;
};

zt_nncache *zt_nncache_new(size_t entries, int num_actions)
{
    size_t n = 1;
    while (n < entries) n <<= 1;
    zt_nncache *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->mask = n - 1;
    c->num_actions = num_actions;
    c->keys = calloc(n, sizeof *c->keys);
    c->used = calloc(n, 1);
    c->values = calloc(n, sizeof *c->values);
    c->logits = calloc(n * (size_t)num_actions, sizeof *c->logits);
    if (!c->keys || !c->used || !c->values || !c->logits) {
        zt_nncache_free(c);
        return NULL;
    }
    c->stats.entries = n;
    c->stats.bytes = sizeof *c + n * (sizeof(uint64_t) + 1 + sizeof(float) * (1 + (size_t)num_actions));
    return c;
}

void zt_nncache_free(zt_nncache *c)
{
    if (!c) return;
    free(c->keys);
    free(c->used);
    free(c->values);
    free(c->logits);
    free(c);
}

bool zt_nncache_lookup(zt_nncache *c, uint64_t key, float *logits, float *value)
{
    c->stats.lookups++;
    size_t i = key & c->mask;
    if (!c->used[i] || c->keys[i] != key) return false;
    c->stats.hits++;
    memcpy(logits, c->logits + i * (size_t)c->num_actions, (size_t)c->num_actions * sizeof(float));
    *value = c->values[i];
    return true;
}

void zt_nncache_insert(zt_nncache *c, uint64_t key, const float *logits, float value)
{
    size_t i = key & c->mask;
    c->stats.inserts++;
    c->used[i] = 1;
    c->keys[i] = key;
    c->values[i] = value;
    memcpy(c->logits + i * (size_t)c->num_actions, logits, (size_t)c->num_actions * sizeof(float));
}

void zt_nncache_clear(zt_nncache *c)
{
    memset(c->used, 0, c->mask + 1);
}

zt_nncache_stats zt_nncache_get_stats(const zt_nncache *c)
{
    return c->stats;
}
