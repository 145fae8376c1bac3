#include "core/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/progress.h"
#include "core/timer.h"

static atomic_int level = ZT_LOG_INFO;
static FILE *log_file;
static zt_log_hook hook;
static void *hook_user;
/* One lock so that lines from different threads never interleave and the
 * progress line is cleared and the log line written as one step. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static double start_s;

/* Timestamps count from program start, which is what a reader of a training
 * log wants ("how long until the loss fell"), not the wall clock. */
__attribute__((constructor)) static void record_start(void)
{
    start_s = zt_now_s();
}

static const char *const level_names[] = {"debug", "info", "warn", "error", "quiet"};

void zt_log_set_level(zt_log_level l)
{
    atomic_store(&level, (int)l);
}

zt_log_level zt_log_get_level(void)
{
    return (zt_log_level)atomic_load(&level);
}

int zt_log_parse_level(const char *name)
{
    for (int i = 0; i <= ZT_LOG_QUIET; i++)
        if (strcasecmp(name, level_names[i]) == 0) return i;
    return -1;
}

void zt_log_set_file(FILE *f)
{
    pthread_mutex_lock(&lock);
    log_file = f;
    pthread_mutex_unlock(&lock);
}

void zt_log_set_hook(zt_log_hook h, void *user)
{
    pthread_mutex_lock(&lock);
    hook = h;
    hook_user = user;
    pthread_mutex_unlock(&lock);
}

void zt_log(zt_log_level l, const char *fmt, ...)
{
    if ((int)l < atomic_load(&level) || l >= ZT_LOG_QUIET) return;
    /* The whole line is formatted first and written with one fwrite, so it
     * reaches the (unbuffered) stderr in a single write. */
    char small[1024];
    char *line = small;
    size_t cap = sizeof small;
    int plen = snprintf(small, cap, "[%9.3f] %s: ", zt_now_s() - start_s, level_names[l]);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small + plen, cap - (size_t)plen, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    size_t len = (size_t)plen + (size_t)n;
    if (len + 2 > cap) {
        char *big = malloc(len + 2);
        if (big) {
            memcpy(big, small, (size_t)plen);
            va_start(ap, fmt);
            vsnprintf(big + plen, len + 2 - (size_t)plen, fmt, ap);
            va_end(ap);
            line = big;
        } else {
            len = cap - 2;
        }
    }
    while (len > (size_t)plen && line[len - 1] == '\n') len--;
    line[len++] = '\n';

    pthread_mutex_lock(&lock);
    zt_log_hook h = hook;
    void *user = hook_user;
    if (!h) {
        zt_progress_clear();
        fwrite(line, 1, len, stderr);
        fflush(stderr);
    }
    if (log_file) {
        fwrite(line, 1, len, log_file);
        fflush(log_file);
    }
    pthread_mutex_unlock(&lock);
    if (h) {
        line[len - 1] = '\0'; /* the newline; the buffer always has room */
        h(user, (int)l, line + plen);
    }
    if (line != small) free(line);
}
