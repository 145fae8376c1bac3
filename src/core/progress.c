#include "core/progress.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "core/timer.h"

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

/* ---- the progress meter ---- */

static double default_clock(void *ctx)
{
    (void)ctx;
    return zt_now_s();
}

void zt_progress_format_duration(double seconds, char *buf, size_t cap)
{
    if (!isfinite(seconds) || seconds < 0) {
        snprintf(buf, cap, "?");
        return;
    }
    /* Past a thousand days the exact figure means nothing. */
    if (seconds >= 1000.0 * 86400) {
        snprintf(buf, cap, ">999d");
        return;
    }
    long long t = (long long)(seconds + 0.5);
    int s = (int)(t % 60), mi = (int)(t / 60 % 60), h = (int)(t / 3600 % 24), d = (int)(t / 86400);
    if (d > 0)
        snprintf(buf, cap, "%dd %02d:%02d:%02d", d, h, mi, s);
    else if (h > 0)
        snprintf(buf, cap, "%d:%02d:%02d", h, mi, s);
    else
        snprintf(buf, cap, "%d:%02d", mi, s);
}

/* Three significant digits with an SI suffix: 123k, 1.23M, 45.6G. */
static void three_digits(double v, char *buf, size_t cap)
{
    static const char suffix[] = "kMGTPE";
    const char *sign = v < 0 ? "-" : "";
    v = fabs(v);
    int k = 0;
    double scaled = v / 1e3;
    /* Move up a suffix while the rounded figure would need four digits
     * (999.7k is shown as 1.00M, not 1000k). */
    while (scaled >= 999.5 && k < 5) {
        scaled /= 1e3;
        k++;
    }
    const char *fmt = scaled >= 99.95 ? "%s%.0f%c" : scaled >= 9.995 ? "%s%.1f%c" : "%s%.2f%c";
    snprintf(buf, cap, fmt, sign, scaled, suffix[k]);
}

void zt_progress_format_count(double count, char *buf, size_t cap)
{
    if (!isfinite(count))
        snprintf(buf, cap, "?");
    else if (fabs(count) < 99999.5)
        snprintf(buf, cap, "%.0f", count + 0.0); /* + 0.0: never "-0" */
    else
        three_digits(count, buf, cap);
}

/* Three significant digits without an exponent. */
static void sig3(double v, char *buf, size_t cap)
{
    if (v >= 999.5)
        three_digits(v, buf, cap);
    else if (v >= 99.95)
        snprintf(buf, cap, "%.0f", v);
    else if (v >= 9.995)
        snprintf(buf, cap, "%.1f", v);
    else if (v >= 0.001)
        snprintf(buf, cap, "%.2f", v);
    else
        snprintf(buf, cap, "<0.001");
}

/* "12.3 games/s"; slower than one a second per minute, slower than one a
 * minute per hour, so a gnubg match reads "40.0 games/h", not "0.011 games/s". */
static void format_rate(double per_s, const char *unit, char *buf, size_t cap)
{
    char num[32];
    const char *per = "s";
    double r = per_s;
    if (r < 1 && r * 60 >= 1)
        r *= 60, per = "min";
    else if (r < 1)
        r *= 3600, per = "h";
    sig3(r, num, sizeof num);
    snprintf(buf, cap, "%s %s/%s", num, unit, per);
}

/* The line at `now`; the caller holds m->lock. */
static void format_locked(const zt_progress_meter *m, double now, char *buf, size_t cap)
{
    if (cap == 0) return;
    double elapsed = now - m->start;
    if (!(elapsed > 0)) elapsed = 0; /* a clock read before start, or NaN */
    double took = m->done_at - m->start, since = now - m->done_at;
    if (!(since > 0)) since = 0;
    int64_t done = m->done;
    char num[32], tot[32], rate[80], el[32], eta[32];
    zt_progress_format_count((double)done, num, sizeof num);
    size_t used = 0;
#define PUT(...)                                                                                   \
    do {                                                                                           \
        if (used < cap) {                                                                          \
            int n_ = snprintf(buf + used, cap - used, __VA_ARGS__);                                \
            if (n_ > 0) used += (size_t)n_;                                                        \
        }                                                                                          \
    } while (0)
    PUT("%s%s", m->label, m->label[0] ? " " : "");
    if (m->total > 0) {
        zt_progress_format_count((double)m->total, tot, sizeof tot);
        /* Rounded down, so 100 % means finished. */
        double share = done <= 0          ? 0
                       : done >= m->total ? 100
                                          : floor(100.0 * (double)done / (double)m->total);
        PUT("%s/%s%s%s (%.0f %%)", num, tot, m->unit[0] ? " " : "", m->unit, share);
    } else {
        PUT("%s%s%s", num, m->unit[0] ? " " : "", m->unit);
    }
    const char *unit = m->unit[0] ? m->unit : "units";
    bool rate_known = took > 0 && done > 0;
    if (rate_known)
        format_rate((double)done / took, unit, rate, sizeof rate);
    else
        snprintf(rate, sizeof rate, "? %s/s", unit);
    PUT(", %s", rate);
    zt_progress_format_duration(elapsed, el, sizeof el);
    PUT(", %s elapsed", el);
    if (m->total > 0) {
        if (done >= m->total)
            snprintf(eta, sizeof eta, "0:00");
        else if (!rate_known)
            snprintf(eta, sizeof eta, "?");
        else
            zt_progress_format_duration(
                fmax(0, took * (double)(m->total - done) / (double)done - since), eta, sizeof eta);
        PUT(", ETA %s", eta);
    }
    /* The result last: a narrow terminal cuts the line's end, and the
     * result is printed in full when the command ends anyway. */
    if (m->result[0]) PUT(" | %s", m->result);
#undef PUT
}

void zt_progress_meter_format(zt_progress_meter *m, double now, char *buf, size_t cap)
{
    pthread_mutex_lock(&m->lock);
    format_locked(m, now, buf, cap);
    pthread_mutex_unlock(&m->lock);
}

/* The due test and its bookkeeping; the caller holds m->lock. */
static bool due_locked(zt_progress_meter *m, double *now)
{
    if (!m->draw || m->paused) return false;
    *now = m->clock(m->clock_ctx);
    if (*now - m->last_draw < m->interval) return false;
    m->last_draw = *now;
    return true;
}

bool zt_progress_meter_due(zt_progress_meter *m)
{
    double now;
    pthread_mutex_lock(&m->lock);
    bool due = due_locked(m, &now);
    pthread_mutex_unlock(&m->lock);
    return due;
}

static void redraw_locked(zt_progress_meter *m, double now)
{
    char line[512];
    format_locked(m, now, line, sizeof line);
    zt_progress("%s", line);
}

/* Redraws twice a second between updates. */
static void *ticker_main(void *arg)
{
    zt_progress_meter *m = arg;
    pthread_mutex_lock(&m->lock);
    while (!m->stopping) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 500000000L;
        if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&m->wake, &m->lock, &until);
        double now;
        if (!m->stopping && due_locked(m, &now)) redraw_locked(m, now);
    }
    pthread_mutex_unlock(&m->lock);
    return NULL;
}

void zt_progress_meter_init(zt_progress_meter *m, const char *label, const char *unit,
                            int64_t total, zt_progress_clock clock, void *clock_ctx)
{
    memset(m, 0, sizeof *m);
    snprintf(m->label, sizeof m->label, "%s", label ? label : "");
    snprintf(m->unit, sizeof m->unit, "%s", unit ? unit : "");
    m->total = total;
    m->clock = clock ? clock : default_clock;
    m->clock_ctx = clock_ctx;
    m->start = m->done_at = m->clock(m->clock_ctx);
    /* The first draw waits one interval: a command done by then shows none. */
    m->last_draw = m->start;
    m->interval = 0.25;
    m->draw = zt_progress_enabled();
    pthread_mutex_init(&m->lock, NULL);
    pthread_cond_init(&m->wake, NULL);
    /* Without a ticker the line only moves on updates: still correct. */
    if (m->draw) m->ticking = pthread_create(&m->ticker, NULL, ticker_main, m) == 0;
}

void zt_progress_meter_pause(zt_progress_meter *m)
{
    pthread_mutex_lock(&m->lock);
    m->paused = true;
    if (m->draw) zt_progress_clear();
    pthread_mutex_unlock(&m->lock);
}

void zt_progress_meter_set_total(zt_progress_meter *m, int64_t total)
{
    pthread_mutex_lock(&m->lock);
    m->total = total;
    pthread_mutex_unlock(&m->lock);
}

void zt_progress_meter_end(zt_progress_meter *m)
{
    if (m->ticking) {
        pthread_mutex_lock(&m->lock);
        m->stopping = true;
        pthread_cond_signal(&m->wake);
        pthread_mutex_unlock(&m->lock);
        pthread_join(m->ticker, NULL);
        m->ticking = false;
    }
    if (m->draw) zt_progress_clear();
    pthread_cond_destroy(&m->wake);
    pthread_mutex_destroy(&m->lock);
}

void zt_progress_meter_update(zt_progress_meter *m, int64_t done, const char *fmt, ...)
{
    char result[sizeof m->result] = "";
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(result, sizeof result, fmt, ap);
        va_end(ap);
    }
    pthread_mutex_lock(&m->lock);
    if (done != m->done) {
        m->done = done;
        m->done_at = m->clock(m->clock_ctx);
    }
    memcpy(m->result, result, sizeof result);
    m->paused = false;
    double now;
    if (due_locked(m, &now)) redraw_locked(m, now);
    pthread_mutex_unlock(&m->lock);
}
