#include "core/progress.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* The line is for a person watching a terminal: never written into a
 * redirected stderr (logs, CI), and ZT_NO_PROGRESS turns it off anyway. */
static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool enabled;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static bool shown;

static void init(void)
{
    enabled = isatty(STDERR_FILENO) && !getenv("ZT_NO_PROGRESS");
}

bool zt_progress_enabled(void)
{
    pthread_once(&once, init);
    return enabled;
}

static int terminal_width(void)
{
    struct winsize ws;
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
    return 100;
}

/* Byte length of the longest prefix of `s` that fits in `columns` columns,
 * counting one column per UTF-8 character and never splitting one. */
static size_t fit(const char *s, size_t len, int columns)
{
    int used = 0;
    for (size_t i = 0; i < len; i++) {
        if (((unsigned char)s[i] & 0xC0) == 0x80) continue;
        if (used == columns) return i;
        used++;
    }
    return len;
}

void zt_progress(const char *fmt, ...)
{
    if (!zt_progress_enabled()) return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    size_t len = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
    /* One column short of the width: writing the last column makes some
     * terminals wrap, and '\r' would then redraw on the next line. */
    len = fit(line, len, terminal_width() - 1);
    pthread_mutex_lock(&lock);
    fputc('\r', stderr);
    fwrite(line, 1, len, stderr);
    fputs("\033[K", stderr);
    fflush(stderr);
    shown = true;
    pthread_mutex_unlock(&lock);
}

void zt_progress_clear(void)
{
    if (!zt_progress_enabled()) return;
    pthread_mutex_lock(&lock);
    if (shown) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
        shown = false;
    }
    pthread_mutex_unlock(&lock);
}
