/* Shared by the fuzz harnesses (tests/fuzz/fuzz_<name>.c). Each harness is
 * one file defining LLVMFuzzerTestOneInput (libFuzzer's entry point) and is
 * built twice: with libFuzzer under clang (ZT_FUZZ=ON, `make fuzz`), and
 * with replay_main.c, which feeds it every file of its seed corpus as a
 * CTest in any build. Header-only: a harness includes it once. */
#ifndef ZT_FUZZ_H
#define ZT_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/hash.h"
#include "core/log.h"
#include "core/status.h"

/* Inputs the parser under test accepted, counted by the harness: the corpus
 * replay checks that the seeds named "ok-*" are accepted, so seeds that a
 * format change has made useless fail the test instead of silently fuzzing
 * only the first checks. */
long fuzz_accepted;

/* A broken property of accepted input (a round trip that does not return
 * the same value): report it as a crash, which is what libFuzzer saves. */
#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz: property failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__);     \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* The input as a NUL-terminated string (bytes after a NUL are cut off, as a
 * C caller would see them). The caller frees it. */
static inline char *fuzz_text(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text) abort();
    memcpy(text, data, size);
    text[size] = '\0';
    return text;
}

static char fuzz_path_buf[128];

static inline void fuzz_remove_temp(void)
{
    if (fuzz_path_buf[0]) unlink(fuzz_path_buf);
}

/* A per-process scratch file for parsers that read a path: in /dev/shm when
 * there is one (no disk I/O per input), else in $TMPDIR or /tmp. */
static inline const char *fuzz_temp_path(void)
{
    if (!fuzz_path_buf[0]) {
        const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
        if (!dir || !*dir) dir = "/tmp";
        snprintf(fuzz_path_buf, sizeof fuzz_path_buf, "%s/zt_fuzz_%ld", dir, (long)getpid());
        atexit(fuzz_remove_temp);
    }
    return fuzz_path_buf;
}

/* Writes the bytes to the scratch file; returns its path. */
static inline const char *fuzz_write_temp(const void *data, size_t size)
{
    const char *path = fuzz_temp_path();
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
        perror(path);
        abort();
    }
    return path;
}

/* Rewrites the last 8 bytes as the little-endian zt_hash_bytes(seed) of the
 * bytes before them, the trailer of Zeroth's checksummed formats, so that a
 * mutated input also reaches the checks behind the checksum. */
static inline void fuzz_fix_checksum(uint8_t *data, size_t size, uint64_t seed)
{
    if (size < 8) return;
    uint64_t h = zt_hash_bytes(data, size - 8, seed);
    for (int i = 0; i < 8; i++) data[size - 8 + (size_t)i] = (uint8_t)(h >> (8 * i));
}

/* Once per process: parsers' warnings would flood the fuzzer's output. */
static inline void fuzz_quiet(void)
{
    zt_log_set_level(ZT_LOG_QUIET);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
