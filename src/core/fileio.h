/* Whole-file reads and atomic writes. A write goes to "PATH.tmp.<pid>.<n>", is
 * fsync'ed, renamed over PATH and the directory fsync'ed, so a crash leaves
 * either the old file or the new one, never a mix. */
#ifndef ZT_CORE_FILEIO_H
#define ZT_CORE_FILEIO_H

#include <stddef.h>

#include "core/status.h"

/* Atomically replaces `path` with `len` bytes of `data`. */
zt_status zt_write_file_atomic(const char *path, const void *data, size_t len);

/* Atomic write from several pieces (avoids concatenating large buffers). */
typedef struct zt_iovec {
    const void *data;
    size_t len;
} zt_iovec;
zt_status zt_write_file_atomicv(const char *path, const zt_iovec *parts, int nparts);

/* Reads a whole file into a malloc'ed buffer (NUL-terminated one byte past
 * *len, so text can be parsed in place). The caller frees *data. */
zt_status zt_read_file(const char *path, char **data, size_t *len);

/* Creates a directory and its parents (mkdir -p); OK if it exists. */
zt_status zt_mkdirs(const char *path);

#endif
