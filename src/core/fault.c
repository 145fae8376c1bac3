#include "core/fault.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"

static const char *const names[ZT_FAULT_COUNT_] = {"eval",  "open",   "read", "write", "fsync",   "close",
                                                   "rename", "mkdir", "io",   "learners"};

/* A point's schedule. Atomics, so that a point passed on several threads
 * reads a whole value; a schedule is changed only while no other thread
 * passes the point (zt_fault_set). */
typedef struct schedule {
    atomic_uint_fast64_t at;    /* the call that fails; 0: never */
    atomic_bool onward;         /* and every call after it */
    atomic_int err;             /* errno of an I/O failure */
    atomic_uint_fast64_t calls; /* counted since the schedule was set */
} schedule;

static schedule plan[ZT_FAULT_COUNT_];
static atomic_bool armed; /* any point scheduled */
static pthread_once_t once = PTHREAD_ONCE_INIT;

static const struct {
    const char *name;
    int value;
} errnos[] = {
    {"ENOSPC", ENOSPC}, {"EIO", EIO}, {"EACCES", EACCES}, {"EROFS", EROFS}, {"EMFILE", EMFILE}};

static void arm(zt_fault_point p, uint64_t n, bool onward, int err)
{
    atomic_store(&plan[p].calls, 0);
    atomic_store(&plan[p].onward, onward);
    atomic_store(&plan[p].err, err ? err : EIO);
    atomic_store(&plan[p].at, n);
    if (n) atomic_store(&armed, true);
}

/* One "POINT:N[+][:ERRNO]" entry of `len` bytes; false if malformed. */
static bool parse_entry(const char *p, size_t len)
{
    for (int i = 0; i < ZT_FAULT_COUNT_; i++) {
        size_t n = strlen(names[i]);
        if (len <= n + 1 || strncmp(p, names[i], n) != 0 || p[n] != ':') continue;
        char *end;
        unsigned long long at = strtoull(p + n + 1, &end, 10);
        if (at == 0 || end == p + n + 1) return false;
        bool onward = *end == '+';
        if (onward) end++;
        int err = EIO;
        if (end < p + len) {
            if (*end != ':') return false;
            size_t elen = (size_t)(p + len - end - 1);
            bool found = false;
            for (size_t k = 0; k < sizeof errnos / sizeof errnos[0] && !found; k++)
                if (strlen(errnos[k].name) == elen && strncmp(end + 1, errnos[k].name, elen) == 0)
                    err = errnos[k].value, found = true;
            if (!found) return false;
        }
        arm((zt_fault_point)i, at, onward, err);
        return true;
    }
    return false;
}

/* Parses ZT_FAULT; a malformed entry is ignored (tests set it, never users). */
static void read_env(void)
{
    const char *env = getenv("ZT_FAULT");
    if (!env) return;
    for (const char *p = env; *p;) {
        size_t len = strcspn(p, ",");
        parse_entry(p, len);
        p += len;
        if (*p == ',') p++;
    }
}

/* Counts a call at p; true when the schedule says it fails. */
static bool count(zt_fault_point p)
{
    schedule *s = &plan[p];
    uint64_t at = atomic_load(&s->at);
    if (at == 0) return false;
    uint64_t n = atomic_fetch_add(&s->calls, 1) + 1;
    return n == at || (atomic_load(&s->onward) && n > at);
}

bool zt_fault_hit(zt_fault_point p)
{
    pthread_once(&once, read_env);
    if (!atomic_load_explicit(&armed, memory_order_relaxed)) return false;
    return count(p);
}

int zt_fault_io(zt_fault_point p)
{
    ZT_ASSERT(ZT_FAULT_OPEN <= p && p < ZT_FAULT_IO);
    pthread_once(&once, read_env);
    if (!atomic_load_explicit(&armed, memory_order_relaxed)) return 0;
    /* both counters advance, whichever fires */
    bool own = count(p);
    bool any = count(ZT_FAULT_IO);
    if (own) return atomic_load(&plan[p].err);
    if (any) return atomic_load(&plan[ZT_FAULT_IO].err);
    return 0;
}

void zt_fault_set(zt_fault_point p, uint64_t n, bool onward, int err)
{
    pthread_once(&once, read_env);
    arm(p, n, onward, err);
}

void zt_fault_reset(void)
{
    pthread_once(&once, read_env);
    atomic_store(&armed, false);
    for (int i = 0; i < ZT_FAULT_COUNT_; i++) arm((zt_fault_point)i, 0, false, 0);
}

uint64_t zt_fault_calls(zt_fault_point p)
{
    return atomic_load(&plan[p].calls);
}

const char *zt_fault_name(zt_fault_point p)
{
    return names[p];
}
