/* 64-bit hashing: a finaliser for integers and a byte hash for buffers.
 * Game positions use Zobrist keys built from zt_hash_mix of (feature index). */
#ifndef ZT_CORE_HASH_H
#define ZT_CORE_HASH_H

#include <stddef.h>
#include <stdint.h>

/* Bijective 64-bit mix (the splitmix64 finaliser). */
static inline uint64_t zt_hash_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Hash of `len` bytes with a seed. Not cryptographic. */
uint64_t zt_hash_bytes(const void *data, size_t len, uint64_t seed);

/* Deterministic Zobrist key number `index` of table `table` (no storage needed:
 * callers that want speed precompute their own tables from it). */
static inline uint64_t zt_zobrist(uint32_t table, uint32_t index)
{
    return zt_hash_mix(((uint64_t)table << 32 | index) + 0x9e3779b97f4a7c15ULL);
}

#endif
