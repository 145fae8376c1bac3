/* Status codes and one-line error messages.
 * Functions that can fail for reasons outside the program return zt_status and
 * leave a message in a thread-local buffer that the CLI prints on one line.
 * Broken invariants are ZT_ASSERT, which stays on in release builds. */
#ifndef ZT_CORE_STATUS_H
#define ZT_CORE_STATUS_H

#include <stdarg.h>
#include <stddef.h>

typedef enum zt_status {
    ZT_OK = 0,
    ZT_ERR_INVALID,     /* bad argument, malformed input, impossible config */
    ZT_ERR_NOT_FOUND,   /* unknown name, missing file */
    ZT_ERR_IO,          /* read/write/fsync/rename failed */
    ZT_ERR_CORRUPT,     /* file present but truncated or inconsistent */
    ZT_ERR_NOMEM,       /* allocation failed */
    ZT_ERR_UNSUPPORTED, /* valid request this build or machine cannot do */
} zt_status;

/* Bytes a message may take, its NUL included: room for two PATH_MAX (4096)
 * paths, as a rename names, and the reason after them. */
#define ZT_MESSAGE_MAX (2 * 4096 + 1024)

/* Records a printf-style message for the calling thread and returns `code`,
 * so that `return zt_fail(ZT_ERR_INVALID, "bad k %d", k);` reads naturally.
 * The arguments may include zt_error_message() itself, so a caller adds
 * context to the message below it with
 * `zt_fail(st, "reading '%s': %s", path, zt_error_message())`. A message
 * longer than ZT_MESSAGE_MAX - 1 keeps its end (the reason) behind "...". */
zt_status zt_fail(zt_status code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The calling thread's last message ("" if none). Valid until the next zt_fail. */
const char *zt_error_message(void);

/* vsnprintf into dst[cap] (cap >= 4) that, when the text does not fit, keeps
 * its end behind "..." rather than its start: the end of an error message is
 * its reason. The arguments may point into dst. Returns the length of the
 * whole text, as vsnprintf does. */
int zt_vformat_tail(char *dst, size_t cap, const char *fmt, va_list ap);

/* Short name of a status code ("invalid", "io", ...). */
const char *zt_status_name(zt_status s);

/* Aborts with file:line and the failed condition. Always compiled in. */
#define ZT_ASSERT(cond)                                                                            \
    do {                                                                                           \
        if (__builtin_expect(!(cond), 0)) zt_assert_fail(#cond, __FILE__, __LINE__);               \
    } while (0)

_Noreturn void zt_assert_fail(const char *cond, const char *file, int line);

/* Propagates a non-OK status from an expression. */
#define ZT_TRY(expr)                                                                               \
    do {                                                                                           \
        zt_status zt_try_s_ = (expr);                                                              \
        if (zt_try_s_ != ZT_OK) return zt_try_s_;                                                  \
    } while (0)

#endif
