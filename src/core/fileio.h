/* Whole-file reads and atomic writes. A write goes to "PATH.tmp.<pid>.<n>", is
 * fsync'ed, renamed over PATH and the directory fsync'ed, so a crash leaves
 * either the old file or the new one, never a mix. Every file the project
 * writes goes through here (logs are opened here and appended to), and
 * every open, read, write, fsync, close, rename and mkdir here is a fault
 * point (core/fault.h), so tests can make any of them fail. Also the lock of
 * a directory that one process at a time may use (a run directory). */
#ifndef ZT_CORE_FILEIO_H
#define ZT_CORE_FILEIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

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

/* Renames `from` to `to` (a file or a directory); ZT_ERR_IO naming both.
 * The caller syncs the directory (zt_sync_dir) once the rename must last. */
zt_status zt_rename(const char *from, const char *to);

/* fsyncs a directory, so that the entries created or renamed in it last. */
zt_status zt_sync_dir(const char *dir);

/* The names in directory `dir` but "." and "..", sorted by strcmp, as a
 * malloc'ed array of malloc'ed strings ended by NULL (free it with
 * zt_dir_names_free); NULL, errno set, where the directory cannot be
 * opened. */
char **zt_dir_names(const char *dir);
void zt_dir_names_free(char **names);

/* Removes a file, or a directory and everything in it; best effort (what
 * cannot be removed stays, silently). */
void zt_remove_tree(const char *path);

/* Opens `path` for appending, creating it if needed (a log). The caller
 * fcloses *out. */
zt_status zt_open_append(const char *path, FILE **out);

/* An exclusive lock on a directory, held until released or until the
 * process ends (kill -9 included): flock(2) on DIR/lock (created if
 * missing), with the holder's pid written in it for the message that
 * refuses a second holder, "DIR is in use by process 1234"
 * (ZT_ERR_INVALID). Readers that take no lock are not stopped. */
typedef struct zt_dir_lock zt_dir_lock;
zt_status zt_dir_lock_acquire(const char *dir, zt_dir_lock **out);
/* Releases the lock (NULL is fine); the lock file stays. */
void zt_dir_lock_release(zt_dir_lock *l);

/* The reference data (position sets, pubeval's weights; ../shared/data in a
 * checkout, tests/data its copy): finds the file `rel` (e.g.
 * "connect4/Test_L2_R1") under the first of `dir` (a caller's override such
 * as arena.data_dir; NULL or "" for none), $ZT_DATA_DIR, ../shared/data,
 * tests/data, then beside the executable (<exe dir>/../tests/data and
 * <exe dir>/../../shared/data: build/zeroth in a checkout), then the
 * tests/data of the checkout it was built from (a build directory outside
 * the tree) that has it, and writes its path to out. False when none has it; out then holds the
 * tests/data path, for messages. */
bool zt_data_find(const char *dir, const char *rel, char *out, size_t cap);

#endif
