/* Whole-file reads and atomic writes. A write goes to "PATH.tmp.<pid>.<n>", is
 * fsync'ed, renamed over PATH and the directory fsync'ed, so a crash leaves
 * either the old file or the new one, never a mix. */
#ifndef ZT_CORE_FILEIO_H
#define ZT_CORE_FILEIO_H

#include <stdbool.h>
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

/* The reference data (position sets, pubeval's weights; ../shared/data in a
 * checkout, tests/data its copy): finds the file `rel` (e.g.
 * "connect4/Test_L2_R1") under the first of `dir` (a caller's override such
 * as arena.data_dir; NULL or "" for none), $ZT_DATA_DIR, ../shared/data,
 * tests/data, then beside the executable (<exe dir>/../tests/data and
 * <exe dir>/../../shared/data: build/zeroth in a checkout) that has it, and
 * writes its path to out. False when none has it; out then holds the
 * tests/data path, for messages. */
bool zt_data_find(const char *dir, const char *rel, char *out, size_t cap);

#endif
