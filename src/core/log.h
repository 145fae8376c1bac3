/* Logging with levels to stderr, or to a hook that a library user installs
 * (and optionally also to a file). The progress line (progress.h) is cleared
 * before a log line is written to stderr so they do not mix. */
#ifndef ZT_CORE_LOG_H
#define ZT_CORE_LOG_H

#include <stdio.h>

typedef enum zt_log_level {
    ZT_LOG_DEBUG = 0,
    ZT_LOG_INFO,
    ZT_LOG_WARN,
    ZT_LOG_ERROR,
    ZT_LOG_QUIET,
} zt_log_level;

void zt_log_set_level(zt_log_level level);
zt_log_level zt_log_get_level(void);
/* Parses "debug", "info", "warn", "error", "quiet"; returns -1 if unknown. */
int zt_log_parse_level(const char *name);
/* Also appends every line to `f` (not owned; NULL to stop). */
void zt_log_set_file(FILE *f);
/* Sends every line to hook(user, level, message) instead of stderr, the
 * message alone (no timestamp, level or newline); NULL restores stderr. The
 * hook runs on the thread that logs, outside the log's lock (so it may call
 * back into code that logs), and may run once more on another thread just
 * after being replaced. The file of zt_log_set_file still gets every line.
 * `level` is a zt_log_level; an int so that the public header's callback
 * type (include/zeroth/zeroth.h) is this very type. */
typedef void (*zt_log_hook)(void *user, int level, const char *message);
void zt_log_set_hook(zt_log_hook hook, void *user);
void zt_log(zt_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define zt_debug(...) zt_log(ZT_LOG_DEBUG, __VA_ARGS__)
#define zt_info(...) zt_log(ZT_LOG_INFO, __VA_ARGS__)
#define zt_warn(...) zt_log(ZT_LOG_WARN, __VA_ARGS__)
#define zt_error(...) zt_log(ZT_LOG_ERROR, __VA_ARGS__)

#endif
