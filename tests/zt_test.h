/* The test programs' shared helper (tests/test_<module>.c): a failure
 * counter, CHECK, finding the reference data, the seed of randomised tests
 * and the closing line. Header-only, everything static: a test includes it
 * once and owns nothing it returns beyond the FILE* of zt_test_open_data. */
#ifndef ZT_TEST_H
#define ZT_TEST_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* test_api sees the public header alone (ZT_TEST_PUBLIC_API): no data
 * lookup there. */
#ifndef ZT_TEST_PUBLIC_API
#include "core/fileio.h"
#include "game/game.h"
#endif

/* Failed checks so far; a test may read it to skip work that depends on
 * what already failed. */
static int zt_test_failures;

/* Past this many FAIL lines failures are only counted: a check inside a
 * loop that breaks every iteration would otherwise drown the log. */
enum { ZT_TEST_MAX_PRINTED = 50 };

/* Counts a failed check and prints "FAIL file:line: cond: message" on
 * stderr. `fmt` starts with the space that CHECK puts before its message;
 * a lone space means no message. */
static inline __attribute__((format(printf, 4, 5))) void
zt_test_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
    if (zt_test_failures++ >= ZT_TEST_MAX_PRINTED) return;
    /* stdout first, so the FAIL line lands after the progress printed before it */
    fflush(stdout);
    fprintf(stderr, "FAIL %s:%d: %s", file, line, cond);
    if (fmt[0] && fmt[1]) {
        va_list ap;
        va_start(ap, fmt);
        fputc(':', stderr);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
    }
    fputc('\n', stderr);
    if (zt_test_failures == ZT_TEST_MAX_PRINTED)
        fprintf(stderr, "(further failures are counted, not printed)\n");
}

/* CHECK(cond, fmt, ...): a failed cond is counted and reported with the
 * printf-style message; the test goes on. The message must be a string
 * literal (the " " is pasted onto it), and "" is allowed. */
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) zt_test_fail(__FILE__, __LINE__, #cond, " " __VA_ARGS__);                     \
    } while (0)

#ifndef ZT_TEST_PUBLIC_API
/* Writes to buf the path of the reference file `rel` (e.g.
 * "tictactoe/ttt_positions.txt") as the program finds it (core/fileio.h,
 * zt_data_find: $ZT_DATA_DIR, set by CTest, first) and returns buf. NULL
 * when none has it; buf then names the tests/data path, for messages. */
static inline const char *zt_test_data_path(const char *rel, char *buf, size_t cap)
{
    return zt_data_find(NULL, rel, buf, cap) ? buf : NULL;
}

/* Opens the reference file `rel` found as zt_test_data_path finds it, for
 * reading; the caller fcloses it. NULL when no directory has it. */
static inline FILE *zt_test_open_data(const char *rel, char *path, size_t cap)
{
    return zt_test_data_path(rel, path, cap) ? fopen(path, "r") : NULL;
}

/* The game `name` with its default settings (the caller frees it with
 * zt_game_free), or NULL after a failed check naming why. */
static inline zt_game *zt_test_game(const char *name)
{
    zt_game *g;
    zt_status st = zt_game_new(name, NULL, &g);
    CHECK(st == ZT_OK, "%s: %s", name, zt_error_message());
    return st == ZT_OK ? g : NULL;
}
#endif

/* The seed of a randomised test: $ZT_SEED if set, else `dflt`. Printed, so
 * a failing run can be repeated. */
static inline uint64_t zt_test_seed(uint64_t dflt)
{
    const char *env = getenv("ZT_SEED");
    uint64_t seed = env && env[0] ? strtoull(env, NULL, 10) : dflt;
    printf("seed %" PRIu64 " (set ZT_SEED to repeat or change it)\n", seed);
    return seed;
}

/* Prints the closing line, "<name>: all checks passed" or
 * "<name>: N failures", and returns main's exit code. */
static inline int zt_test_finish(const char *name)
{
    if (zt_test_failures) {
        printf("%s: %d failures\n", name, zt_test_failures);
        return 1;
    }
    printf("%s: all checks passed\n", name);
    return 0;
}

/* SANITIZED: 1 in an AddressSanitizer build, where the tests that train to
 * a strength bar are skipped (they run several times slower there). */
#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

#endif
