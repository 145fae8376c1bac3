#include "core/fault.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[ZT_FAULT_COUNT_] = {"eval", "learners"};

typedef struct schedule {
    uint64_t at;  /* the call that fails; 0: never */
    bool onward;  /* and every call after it */
} schedule;

static schedule plan[ZT_FAULT_COUNT_];
static atomic_uint_fast64_t calls[ZT_FAULT_COUNT_];
static atomic_bool armed; /* any point scheduled */
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* Parses ZT_FAULT; a malformed entry is ignored (tests set it, never users). */
static void read_env(void)
{
    const char *env = getenv("ZT_FAULT");
    if (!env) return;
    bool any = false;
    for (const char *p = env; *p;) {
        size_t len = strcspn(p, ",");
        for (int i = 0; i < ZT_FAULT_COUNT_; i++) {
            size_t n = strlen(names[i]);
            if (len > n + 1 && strncmp(p, names[i], n) == 0 && p[n] == ':') {
                char *end;
                unsigned long long at = strtoull(p + n + 1, &end, 10);
                if (at > 0 && (end == p + len || (*end == '+' && end + 1 == p + len))) {
                    plan[i].at = at;
                    plan[i].onward = *end == '+';
                    any = true;
                }
            }
        }
        p += len;
        if (*p == ',') p++;
    }
    atomic_store(&armed, any);
}

bool zt_fault_hit(zt_fault_point p)
{
    pthread_once(&once, read_env);
    if (!atomic_load_explicit(&armed, memory_order_relaxed)) return false;
    const schedule *s = &plan[p];
    if (s->at == 0) return false;
    uint64_t n = atomic_fetch_add(&calls[p], 1) + 1;
    return n == s->at || (s->onward && n > s->at);
}

const char *zt_fault_name(zt_fault_point p)
{
    return names[p];
}
