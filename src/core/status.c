#include "core/status.h"

#include <stdio.h>
#include <stdlib.h>

static _Thread_local char message[512];

zt_status zt_fail(zt_status code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
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
