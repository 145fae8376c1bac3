/* The corpus replay: a main() for a fuzz harness built without libFuzzer
 * (any compiler). Feeds LLVMFuzzerTestOneInput every file named on the
 * command line or found in a directory named there, once, in name order;
 * fails if the harness crashes (it aborts) or a seed named "ok-*" is not
 * accepted by the parser (fuzz_accepted does not grow). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

extern long fuzz_accepted;
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int failures, inputs;

static void run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "FAIL %s: cannot open\n", path);
        failures++;
        return;
    }
    size_t cap = 4096, len = 0;
    uint8_t *data = malloc(cap);
    size_t n;
    while (data && (n = fread(data + len, 1, cap - len, f)) > 0) {
        len += n;
        if (len == cap) data = realloc(data, cap *= 2);
    }
    fclose(f);
    if (!data) {
        fprintf(stderr, "FAIL %s: out of memory\n", path);
        failures++;
        return;
    }
    /* Exactly len bytes, as libFuzzer hands them over, so that ASan sees a
     * read past the end. */
    uint8_t *exact = malloc(len ? len : 1);
    memcpy(exact, data, len);
    free(data);
    long before = fuzz_accepted;
    LLVMFuzzerTestOneInput(exact, len);
    free(exact);
    inputs++;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (strncmp(base, "ok-", 3) == 0 && fuzz_accepted == before) {
        fprintf(stderr, "FAIL %s: a seed named ok-* was refused\n", path);
        failures++;
    }
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void run_path(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "FAIL %s: no such file or directory\n", path);
        failures++;
        return;
    }
    if (!S_ISDIR(st.st_mode)) {
        run_file(path);
        return;
    }
    DIR *d = opendir(path);
    if (!d) {
        fprintf(stderr, "FAIL %s: cannot open the directory\n", path);
        failures++;
        return;
    }
    char **names = NULL;
    size_t count = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        if (count == cap) names = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof *names);
        size_t len = strlen(path) + strlen(e->d_name) + 2;
        names[count] = malloc(len);
        snprintf(names[count++], len, "%s/%s", path, e->d_name);
    }
    closedir(d);
    qsort(names, count, sizeof *names, by_name);
    for (size_t i = 0; i < count; i++) {
        run_path(names[i]);
        free(names[i]);
    }
    free(names);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
        return 2;
    }
    for (int i = 1; i < argc; i++) run_path(argv[i]);
    if (inputs == 0) {
        fprintf(stderr, "FAIL: no inputs\n");
        failures++;
    }
    printf("%s: %d inputs, %ld accepted, %d failures\n", argv[0], inputs, fuzz_accepted, failures);
    return failures ? 1 : 0;
}
