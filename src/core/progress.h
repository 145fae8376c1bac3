/* One status line, redrawn in place with '\r', shown only when stderr is a
 * TTY (never in logs or CI output). Log lines clear it first. */
#ifndef ZT_CORE_PROGRESS_H
#define ZT_CORE_PROGRESS_H

#include <stdbool.h>

bool zt_progress_enabled(void);
/* Redraws the line (truncated to the terminal width). */
void zt_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Erases the line, if one is shown. */
void zt_progress_clear(void);

#endif
