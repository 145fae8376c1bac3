#include "core/hash.h"

#include <string.h>

uint64_t zt_hash_bytes(const void *data, size_t len, uint64_t seed)
{
    const unsigned char *p = data;
    uint64_t h = zt_hash_mix(seed ^ (len * 0x9e3779b97f4a7c15ULL));
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = zt_hash_mix(h ^ w) + 0x632be59bd9b4e019ULL;
        p += 8;
        len -= 8;
    }
    uint64_t tail = 0;
    memcpy(&tail, p, len);
    return zt_hash_mix(h ^ tail ^ ((uint64_t)len << 56));
}
