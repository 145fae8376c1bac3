/* One status line, redrawn in place with '\r', shown only when stderr is a
 * TTY (never in logs or CI output). Log lines clear it first.
 *
 * On top of it, a progress meter for long commands: done/total, rate,
 * elapsed time, ETA and a result-so-far the caller formats ("W-D-L 12-3-5",
 * "mistakes 4"), redrawn at most a few times a second. The meter owns no
 * memory; its clock is injectable so tests can format lines at chosen times. */
#ifndef ZT_CORE_PROGRESS_H
#define ZT_CORE_PROGRESS_H

#include <pthread.h>
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
    double start;    /* clock at zt_progress_meter_init */
    double interval; /* least seconds between redraws (0.25 by default) */
    bool draw;       /* redraw at all: zt_progress_enabled() at init */
    /* The latest update, under `lock`: */
    double last_draw; /* clock at the last redraw (start before the first) */
    int64_t done;     /* units done */
    double done_at;   /* clock when `done` last changed (start before any) */
    char result[200]; /* the caller's running result */
    /* A ticker thread, on a terminal only, redraws between updates so the
     * elapsed time moves while one long unit of work runs. */
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t ticker;
    bool ticking, stopping, paused;
} zt_progress_meter;

/* Starts a meter at the clock's present time, nothing done. clock NULL: the
 * process's monotonic clock (zt_now_s). total <= 0: unknown. On a terminal
 * it starts the ticker; zt_progress_meter_end must follow. */
void zt_progress_meter_init(zt_progress_meter *m, const char *label, const char *unit,
                            int64_t total, zt_progress_clock clock, void *clock_ctx);

/* Erases the line and draws nothing until the next update, so the caller
 * can print lines of its own (a benchmark's rows) on the same terminal. */
void zt_progress_meter_pause(zt_progress_meter *m);

/* Sets the total once it is known (<= 0: unknown). */
void zt_progress_meter_set_total(zt_progress_meter *m, int64_t total);

/* Stops the ticker, erases the line and releases the meter. */
void zt_progress_meter_end(zt_progress_meter *m);

/* Records `done` units (their time, when the count changed) and the result
 * so far, printf-formatted from fmt (NULL for none), and redraws if due.
 * Safe beside the ticker; one thread updates. */
void zt_progress_meter_update(zt_progress_meter *m, int64_t done, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The line of the latest update seen at clock time `now`, into buf (cut to cap):
 *   "eval 312/1000 games (31 %), 12.3 games/s, 0:25 elapsed, ETA 0:56 | W-D-L 200-50-62"
 * The rate is the one at the latest change of the count (done over the
 * time it took), shown per second, or per minute or hour when slower; "?"
 * while nothing is done or no time has passed. The ETA (only with a total)
 * is the time the remaining units take at that rate, less the time since
 * that change (never below zero); "?" while nothing is done. Counts of
 * 100,000 and more are shortened to three digits with k/M/G/T/P/E. */
void zt_progress_meter_format(zt_progress_meter *m, double now, char *buf, size_t cap);

/* True when a redraw is due (drawing is on and `interval` has passed since
 * the last one); it then counts as drawn. */
bool zt_progress_meter_due(zt_progress_meter *m);

/* Durations as the meter shows them: "0:07", "12:05", "1:02:03", "3d 04:05:06";
 * "?" for negative or non-finite seconds. */
void zt_progress_format_duration(double seconds, char *buf, size_t cap);

/* Counts as the meter shows them: exact below 100,000, else three digits
 * with a k/M/G/T/P/E suffix ("123k", "1.23M", "9.22E"). */
void zt_progress_format_count(double count, char *buf, size_t cap);

#endif
