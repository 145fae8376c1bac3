/* One status line, redrawn in place with '\r', shown only when stderr is a
 * TTY (never in logs or CI output). Log lines clear it first.
 *
 * On top of it, a progress meter for long commands: done/total, rate,
 * elapsed time, ETA and a result-so-far the caller formats ("W-D-L 12-3-5",
 * "mistakes 4"), redrawn at most a few times a second. The meter owns no
 * memory; its clock is injectable so tests can format lines at chosen times. */
#ifndef ZT_CORE_PROGRESS_H
#define ZT_CORE_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

bool zt_progress_enabled(void);
/* Redraws the line (truncated to the terminal width). */
void zt_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Erases the line, if one is shown. */
void zt_progress_clear(void);

/* ---- the progress meter ---- */

/* Seconds on a monotonic clock; ctx is the meter's clock_ctx. */
typedef double (*zt_progress_clock)(void *ctx);

typedef struct zt_progress_meter {
    char label[40]; /* what runs: "eval", "perft 9" */
    char unit[24];  /* what is counted, plural: "games", "positions" */
    int64_t total;  /* units in all; <= 0 when unknown (no share, no ETA) */
    zt_progress_clock clock;
    void *clock_ctx;
    double start;     /* clock at zt_progress_meter_init */
    double last_draw; /* clock at the last redraw; -INFINITY before the first */
    double interval;  /* least seconds between redraws (0.25 by default) */
    bool draw;        /* redraw at all: zt_progress_enabled() at init */
} zt_progress_meter;

/* Starts a meter at the clock's present time. clock NULL: the process's
 * monotonic clock (zt_now_s). total <= 0: unknown. */
void zt_progress_meter_init(zt_progress_meter *m, const char *label, const char *unit,
                            int64_t total, zt_progress_clock clock, void *clock_ctx);

/* The line for `done` units at clock time `now`, into buf (cut to cap):
 *   "eval 312/1000 games (31 %) | W-D-L 200-50-62 | 12.3 games/s | 0:25 elapsed, ETA 0:56"
 * `result` (NULL or "" for none) sits after the count. Counts of 100,000
 * and more are shortened to three digits with k/M/G/T/P/E; the rate is "?"
 * before any time has passed or anything is done, and the ETA "?" until
 * a unit is done (absent when the total is unknown). */
void zt_progress_meter_format(const zt_progress_meter *m, int64_t done, const char *result,
                              double now, char *buf, size_t cap);

/* True when a redraw is due (drawing is on and `interval` has passed since
 * the last one); it then counts as drawn. */
bool zt_progress_meter_due(zt_progress_meter *m);

/* Redraws the status line for `done` units, with the result printf-formatted
 * from fmt (NULL for none), if a redraw is due; otherwise costs one clock
 * read. */
void zt_progress_meter_update(zt_progress_meter *m, int64_t done, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Durations as the meter shows them: "0:07", "12:05", "1:02:03", "3d 04:05:06";
 * "?" for negative or non-finite seconds. */
void zt_progress_format_duration(double seconds, char *buf, size_t cap);

/* Counts as the meter shows them: exact below 100,000, else three digits
 * with a k/M/G/T/P/E suffix ("123k", "1.23M", "9.22E"). */
void zt_progress_format_count(double count, char *buf, size_t cap);

#endif
