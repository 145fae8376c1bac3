#include "core/status.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char message[ZT_MESSAGE_MAX];

/* The text is formatted whole before dst is written, so that an argument
 * pointing into dst (zt_fail given zt_error_message()) is read intact. */
int zt_vformat_tail(char *dst, size_t cap, const char *fmt, va_list ap)
{
    static const char cut[] = "...";
    static _Thread_local char scratch[ZT_MESSAGE_MAX];
    ZT_ASSERT(cap >= sizeof cut);
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(scratch, sizeof scratch, fmt, ap);
    if (n < 0) {
        va_end(again);
        dst[0] = '\0';
        return n;
    }
    const char *text = scratch;
    size_t len = (size_t)n;
    bool whole = true; /* text holds all len bytes */
    char *big = NULL;
    if (len >= sizeof scratch) {
        /* Longer than the scratch: formatted again in full to reach its end.
         * Without memory for that, the start is what there is to keep. */
        big = malloc(len + 1);
        if (big) {
            vsnprintf(big, len + 1, fmt, again);
            text = big;
        } else {
            whole = false;
            len = sizeof scratch - 1;
        }
    }
    va_end(again);
    size_t keep = cap - sizeof cut; /* text bytes kept beside the "..." */
    if (whole && len < cap) {
        memmove(dst, text, len + 1);
    } else if (whole) {
        memcpy(dst, cut, sizeof cut - 1);
        memmove(dst + sizeof cut - 1, text + len - keep, keep + 1);
    } else {
        memmove(dst, text, keep);
        memcpy(dst + keep, cut, sizeof cut);
    }
    free(big);
    return n;
}

zt_status zt_fail(zt_status code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    zt_vformat_tail(message, sizeof message, fmt, ap);
    va_end(ap);
    return code;
}

const char *zt_error_message(void)
{
    return message;
}

const char *zt_status_name(zt_status s)
{
    switch (s) {
    case ZT_OK: return "ok";
    case ZT_ERR_INVALID: return "invalid";
    case ZT_ERR_NOT_FOUND: return "not found";
    case ZT_ERR_IO: return "io";
    case ZT_ERR_CORRUPT: return "corrupt";
    case ZT_ERR_NOMEM: return "out of memory";
    case ZT_ERR_UNSUPPORTED: return "unsupported";
    }
    return "unknown";
}

void zt_assert_fail(const char *cond, const char *file, int line)
{
    fprintf(stderr, "zeroth: assertion failed: %s (%s:%d)\n", cond, file, line);
    fflush(stderr);
    abort();
}
