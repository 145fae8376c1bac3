#include "core/fileio.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "core/alloc.h"

/* Writes all of `len` bytes, resuming after short writes and EINTR. */
static int write_all(int fd, const void *data, size_t len)
{
    const unsigned char *p = data;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
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
static zt_status sync_dir(const char *path)
{
    char *dir = parent_dir(path);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        zt_status s = zt_fail(ZT_ERR_IO, "cannot open directory '%s' to sync '%s': %s", dir, path,
                              strerror(errno));
        free(dir);
        return s;
    }
    zt_status s = ZT_OK;
    if (fsync(fd) != 0 && errno != EINVAL)
        s = zt_fail(ZT_ERR_IO, "cannot sync directory '%s' after writing '%s': %s", dir, path,
                    strerror(errno));
    close(fd);
    free(dir);
    return s;
}

zt_status zt_write_file_atomicv(const char *path, const zt_iovec *parts, int nparts)
{
    size_t tmp_len = strlen(path) + 32;
    char *tmp = zt_xmalloc(tmp_len);
    /* pid + a process-wide counter: two threads writing the same path never
     * share a temp file. */
    static _Atomic unsigned long counter;
    snprintf(tmp, tmp_len, "%s.tmp.%ld.%lu", path, (long)getpid(), counter++);

    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
        zt_status s = zt_fail(ZT_ERR_IO, "cannot create '%s': %s", tmp, strerror(errno));
        free(tmp);
        return s;
    }
    const char *what = NULL;
    int err = 0;
    for (int i = 0; i < nparts && !what; i++)
        if (write_all(fd, parts[i].data, parts[i].len) != 0) what = "write", err = errno;
    if (!what && fsync(fd) != 0) what = "sync", err = errno;
    /* close() can report a deferred write error (NFS), so it is checked too. */
    if (close(fd) != 0 && !what) what = "close", err = errno;
    if (!what && rename(tmp, path) != 0) what = "rename", err = errno;
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
    int fd = open(path, O_RDONLY | O_CLOEXEC);
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
        ssize_t n = read(fd, buf + used, cap - 1 - used);
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
            if (mkdir(p, 0777) != 0 && errno != EEXIST) {
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
    const char *dirs[] = {dir, getenv("ZT_DATA_DIR"), "../shared/data", "tests/data",
                          beside_tests, beside_shared};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        if (!dirs[i] || !dirs[i][0]) continue;
        int len = snprintf(out, cap, "%s/%s", dirs[i], rel);
        if (len < 0 || (size_t)len >= cap) continue;
        if (is_file(out)) return true;
    }
    snprintf(out, cap, "tests/data/%s", rel);
    return false;
}
