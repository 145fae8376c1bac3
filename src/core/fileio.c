#include "core/fileio.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/fault.h"

/* ---- the I/O calls, each a fault point (core/fault.h) ---- */

/* True (errno set) when the fault schedule fails this call of kind p. */
static bool injected(zt_fault_point p)
{
    int err = zt_fault_io(p);
    if (err) errno = err;
    return err != 0;
}

static int io_open(const char *path, int flags, mode_t mode)
{
    return injected(ZT_FAULT_OPEN) ? -1 : open(path, flags, mode);
}

static ssize_t io_read(int fd, void *buf, size_t len)
{
    return injected(ZT_FAULT_READ) ? -1 : read(fd, buf, len);
}

static ssize_t io_write(int fd, const void *buf, size_t len)
{
    return injected(ZT_FAULT_WRITE) ? -1 : write(fd, buf, len);
}

static int io_fsync(int fd)
{
    return injected(ZT_FAULT_FSYNC) ? -1 : fsync(fd);
}

/* The descriptor is closed either way; an injected fault only reports. */
static int io_close(int fd)
{
    if (injected(ZT_FAULT_CLOSE)) {
        int err = errno;
        close(fd);
        errno = err;
        return -1;
    }
    return close(fd);
}

static int io_rename(const char *from, const char *to)
{
    return injected(ZT_FAULT_RENAME) ? -1 : rename(from, to);
}

static int io_mkdir(const char *path)
{
    return injected(ZT_FAULT_MKDIR) ? -1 : mkdir(path, 0777);
}

/* Writes all of `len` bytes, resuming after short writes and EINTR. */
static int write_all(int fd, const void *data, size_t len)
{
    const unsigned char *p = data;
    while (len > 0) {
        ssize_t n = io_write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* The directory holding `path` ("." for a bare name), malloc'ed. */
static char *parent_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return zt_xstrdup(".");
    if (slash == path) return zt_xstrdup("/");
    size_t n = (size_t)(slash - path);
    char *dir = zt_xmalloc(n + 1);
    memcpy(dir, path, n);
    dir[n] = '\0';
    return dir;
}

/* A rename is durable only once the directory entry is on disk (POSIX
 * fsync(2): syncing the file does not sync its directory). Filesystems that
 * cannot fsync a directory report EINVAL; nothing more can be done there. */
static zt_status sync_dir_of(const char *dir, const char *path)
{
    int fd = io_open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    if (fd < 0)
        return zt_fail(ZT_ERR_IO, "cannot open directory '%s' to sync '%s': %s", dir, path,
                       strerror(errno));
    zt_status s = ZT_OK;
    if (io_fsync(fd) != 0 && errno != EINVAL)
        s = zt_fail(ZT_ERR_IO, "cannot sync directory '%s' after writing '%s': %s", dir, path,
                    strerror(errno));
    close(fd);
    return s;
}

static zt_status sync_dir(const char *path)
{
    char *dir = parent_dir(path);
    zt_status s = sync_dir_of(dir, path);
    free(dir);
    return s;
}

zt_status zt_sync_dir(const char *dir)
{
    return sync_dir_of(dir, dir);
}

zt_status zt_write_file_atomicv(const char *path, const zt_iovec *parts, int nparts)
{
    size_t tmp_len = strlen(path) + 32;
    char *tmp = zt_xmalloc(tmp_len);
    /* pid + a process-wide counter: two threads writing the same path never
     * share a temp file. */
    static _Atomic unsigned long counter;
    snprintf(tmp, tmp_len, "%s.tmp.%ld.%lu", path, (long)getpid(), counter++);

    int fd = io_open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
        zt_status s = zt_fail(ZT_ERR_IO, "cannot create '%s': %s", tmp, strerror(errno));
        free(tmp);
        return s;
    }
    const char *what = NULL;
    int err = 0;
    for (int i = 0; i < nparts && !what; i++)
        if (write_all(fd, parts[i].data, parts[i].len) != 0) what = "write", err = errno;
    if (!what && io_fsync(fd) != 0) what = "sync", err = errno;
    /* close() can report a deferred write error (NFS), so it is checked too. */
    if (io_close(fd) != 0 && !what) what = "close", err = errno;
    if (!what && io_rename(tmp, path) != 0) what = "rename", err = errno;
    if (what) {
        unlink(tmp);
        free(tmp);
        return zt_fail(ZT_ERR_IO, "cannot write '%s' (%s failed): %s", path, what, strerror(err));
    }
    free(tmp);
    return sync_dir(path);
}

zt_status zt_write_file_atomic(const char *path, const void *data, size_t len)
{
    zt_iovec part = {data, len};
    return zt_write_file_atomicv(path, &part, 1);
}

zt_status zt_read_file(const char *path, char **data, size_t *len)
{
    *data = NULL;
    *len = 0;
    int fd = io_open(path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0) {
        int err = errno;
        return zt_fail(err == ENOENT ? ZT_ERR_NOT_FOUND : ZT_ERR_IO, "cannot open '%s': %s", path,
                       strerror(err));
    }
    /* The size from fstat is only a hint: files in /proc report 0, and a file
     * may grow while it is read, so read until EOF. */
    struct stat st;
    size_t cap = 4096;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) cap = (size_t)st.st_size + 1;
    char *buf = malloc(cap);
    if (!buf) {
        close(fd);
        return zt_fail(ZT_ERR_NOMEM, "cannot read '%s': out of memory (%zu bytes)", path, cap);
    }
    size_t used = 0;
    for (;;) {
        if (used + 1 >= cap) {
            size_t grown = cap * 2;
            char *bigger = realloc(buf, grown);
            if (!bigger) {
                free(buf);
                close(fd);
                return zt_fail(ZT_ERR_NOMEM, "cannot read '%s': out of memory (%zu bytes)", path,
                               grown);
            }
            buf = bigger;
            cap = grown;
        }
        ssize_t n = io_read(fd, buf + used, cap - 1 - used);
        if (n < 0) {
            if (errno == EINTR) continue;
            int err = errno;
            free(buf);
            close(fd);
            return zt_fail(ZT_ERR_IO, "cannot read '%s': %s", path, strerror(err));
        }
        if (n == 0) break;
        used += (size_t)n;
    }
    close(fd);
    buf[used] = '\0';
    *data = buf;
    *len = used;
    return ZT_OK;
}

zt_status zt_mkdirs(const char *path)
{
    if (!path || !*path) return zt_fail(ZT_ERR_INVALID, "cannot create a directory with no name");
    char *p = zt_xstrdup(path);
    size_t n = strlen(p);
    while (n > 1 && p[n - 1] == '/') p[--n] = '\0';
    /* Create each prefix in turn; EEXIST on a prefix is fine as long as the
     * final path turns out to be a directory. */
    for (char *s = p + 1;; s++) {
        int last = *s == '\0';
        if (*s == '/' || last) {
            char saved = *s;
            *s = '\0';
            if (io_mkdir(p) != 0 && errno != EEXIST) {
                zt_status st =
                    zt_fail(ZT_ERR_IO, "cannot create directory '%s': %s", p, strerror(errno));
                free(p);
                return st;
            }
            *s = saved;
        }
        if (last) break;
    }
    struct stat st;
    zt_status s = ZT_OK;
    if (stat(p, &st) != 0)
        s = zt_fail(ZT_ERR_IO, "cannot create directory '%s': %s", p, strerror(errno));
    else if (!S_ISDIR(st.st_mode))
        s = zt_fail(ZT_ERR_IO, "cannot create directory '%s': a file of that name exists", p);
    free(p);
    return s;
}

zt_status zt_rename(const char *from, const char *to)
{
    if (io_rename(from, to) != 0)
        return zt_fail(ZT_ERR_IO, "cannot rename '%s' to '%s': %s", from, to, strerror(errno));
    return ZT_OK;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

char **zt_dir_names(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return NULL;
    int n = 0, cap = 0;
    char **names = NULL;
    for (struct dirent *e; (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        names = zt_xgrow(names, &cap, n + 1, sizeof *names);
        names[n++] = zt_xstrdup(e->d_name);
    }
    closedir(d);
    names = zt_xgrow(names, &cap, n + 1, sizeof *names); /* the NULL that ends them */
    qsort(names, (size_t)n, sizeof *names, compare_names);
    names[n] = NULL;
    return names;
}

void zt_dir_names_free(char **names)
{
    for (int i = 0; names && names[i]; i++) free(names[i]);
    free(names);
}

void zt_remove_tree(const char *path)
{
    struct stat sb;
    if (lstat(path, &sb) != 0) return;
    if (S_ISDIR(sb.st_mode)) {
        DIR *d = opendir(path);
        if (d) {
            struct dirent *e;
            while ((e = readdir(d))) {
                if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
                size_t n = strlen(path) + strlen(e->d_name) + 2;
                char *child = zt_xmalloc(n);
                snprintf(child, n, "%s/%s", path, e->d_name);
                zt_remove_tree(child);
                free(child);
            }
            closedir(d);
        }
        rmdir(path);
    } else {
        unlink(path);
    }
}

zt_status zt_open_append(const char *path, FILE **out)
{
    *out = NULL;
    int fd = io_open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
    if (fd < 0) return zt_fail(ZT_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    FILE *f = fdopen(fd, "a");
    if (!f) {
        int err = errno;
        close(fd);
        return zt_fail(ZT_ERR_IO, "cannot open '%s': %s", path, strerror(err));
    }
    *out = f;
    return ZT_OK;
}

/* ---- directory locks ---- */

struct zt_dir_lock {
    int fd;
};

/* The pid a lock file holds (0 if none can be read). */
static long lock_holder(int fd)
{
    char buf[32];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0) return 0;
    buf[n] = '\0';
    return strtol(buf, NULL, 10);
}

zt_status zt_dir_lock_acquire(const char *dir, zt_dir_lock **out)
{
    *out = NULL;
    size_t n = strlen(dir) + 8;
    char *path = zt_xmalloc(n);
    snprintf(path, n, "%s/lock", dir);
    int fd = io_open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) {
        zt_status s = zt_fail(ZT_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
        free(path);
        return s;
    }
    /* flock, not fcntl locks: those belong to the process and vanish when
     * any descriptor of the file is closed, say by a reader in the same
     * program. The kernel drops the lock when the holder dies, kill -9
     * included, so a stale file never blocks anyone. */
    while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno == EINTR) continue;
        int err = errno;
        zt_status s;
        if (err == EWOULDBLOCK) {
            long pid = lock_holder(fd);
            if (pid > 0)
                s = zt_fail(ZT_ERR_INVALID, "%s is in use by process %ld", dir, pid);
            else
                s = zt_fail(ZT_ERR_INVALID, "%s is in use by another process", dir);
        } else {
            s = zt_fail(ZT_ERR_IO, "cannot lock '%s': %s", path, strerror(err));
        }
        close(fd);
        free(path);
        return s;
    }
    /* The pid is for the message above only; the lock is the flock. */
    char pid[32];
    int len = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || write_all(fd, pid, (size_t)len) != 0) {
        zt_status s = zt_fail(ZT_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
        close(fd);
        free(path);
        return s;
    }
    free(path);
    zt_dir_lock *l = zt_xmalloc(sizeof *l);
    l->fd = fd;
    *out = l;
    return ZT_OK;
}

void zt_dir_lock_release(zt_dir_lock *l)
{
    if (!l) return;
    /* The file stays: removing it would let a third process lock a new
     * file of the same name while a second one waits on the old one. */
    close(l->fd);
    free(l);
}

static bool is_file(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

bool zt_data_find(const char *dir, const char *rel, char *out, size_t cap)
{
    char exe[PATH_MAX] = "";
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) *slash = '\0';
    } else {
        exe[0] = '\0';
    }
    char beside_tests[PATH_MAX + 32] = "", beside_shared[PATH_MAX + 32] = "";
    if (exe[0]) {
        snprintf(beside_tests, sizeof beside_tests, "%s/../tests/data", exe);
        snprintf(beside_shared, sizeof beside_shared, "%s/../../shared/data", exe);
    }
#ifdef ZT_SOURCE_TESTS_DATA
    const char *source_tests = ZT_SOURCE_TESTS_DATA; /* the checkout built from */
#else
    const char *source_tests = NULL;
#endif
    const char *dirs[] = {dir, getenv("ZT_DATA_DIR"), "../shared/data", "tests/data",
                          beside_tests, beside_shared, source_tests};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        if (!dirs[i] || !dirs[i][0]) continue;
        int len = snprintf(out, cap, "%s/%s", dirs[i], rel);
        if (len < 0 || (size_t)len >= cap) continue;
        if (is_file(out)) return true;
    }
    snprintf(out, cap, "tests/data/%s", rel);
    return false;
}
