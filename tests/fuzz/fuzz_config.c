/* Configuration (core/config.h): INI text and --set assignments. Input: INI
 * text, read by zt_config_load_string; each of its lines is also given to
 * zt_config_set. Both configs are then read by typed getters as the
 * program reads its keys, and one that reads without error is written
 * (zt_config_write) and read back to the same values. */
#include <math.h>

#include "core/config.h"
#include "fuzz.h"

/* Keys and types like those the program reads (search.*, learner.*, ...). */
static const char *const int_keys[] = {"steps", "search.sims", "selfplay.actors", "k"};
static const char *const double_keys[] = {"learner.lr", "search.c_scale", "x"};
static const char *const bool_keys[] = {"arena.stop_on_perfect", "search.tree_reuse", "flag"};
static const char *const string_keys[] = {"game", "run.note", "backend", "name"};
static const char *const choice_keys[] = {"search.algorithm", "variant"};
static const char *const choices[] = {"gumbel", "puct", "avoid", "make", NULL};
#define COUNT(a) ((int)(sizeof a / sizeof a[0]))

typedef struct values {
    int64_t i[COUNT(int_keys)];
    double d[COUNT(double_keys)];
    bool b[COUNT(bool_keys)];
    const char *s[COUNT(string_keys)];
    int c[COUNT(choice_keys)];
} values;

/* Reads every key; false if one is refused. */
static bool read_all(zt_config *c, values *v)
{
    bool ok = true;
    for (int k = 0; k < COUNT(int_keys); k++)
        ok &= zt_config_int(c, int_keys[k], 7, -1000000, 1000000, &v->i[k]) == ZT_OK;
    for (int k = 0; k < COUNT(double_keys); k++)
        ok &= zt_config_double(c, double_keys[k], 0.5, -1e300, 1e300, &v->d[k]) == ZT_OK;
    for (int k = 0; k < COUNT(bool_keys); k++)
        ok &= zt_config_bool(c, bool_keys[k], false, &v->b[k]) == ZT_OK;
    for (int k = 0; k < COUNT(string_keys); k++)
        ok &= zt_config_string(c, string_keys[k], "default", &v->s[k]) == ZT_OK;
    for (int k = 0; k < COUNT(choice_keys); k++)
        ok &= zt_config_choice(c, choice_keys[k], "puct", choices, &v->c[k]) == ZT_OK;
    return ok;
}

static void check_roundtrip(zt_config *c, const values *v)
{
    const char *path = fuzz_temp_path();
    if (zt_config_write(c, path) != ZT_OK) return; /* a value INI cannot hold, refused */
    zt_config *back = zt_config_new();
    FUZZ_CHECK(zt_config_load_file(back, path) == ZT_OK);
    values w;
    FUZZ_CHECK(read_all(back, &w));
    for (int k = 0; k < COUNT(int_keys); k++) FUZZ_CHECK(v->i[k] == w.i[k]);
    for (int k = 0; k < COUNT(double_keys); k++) FUZZ_CHECK(v->d[k] == w.d[k]);
    for (int k = 0; k < COUNT(bool_keys); k++) FUZZ_CHECK(v->b[k] == w.b[k]);
    for (int k = 0; k < COUNT(string_keys); k++) FUZZ_CHECK(strcmp(v->s[k], w.s[k]) == 0);
    for (int k = 0; k < COUNT(choice_keys); k++) FUZZ_CHECK(v->c[k] == w.c[k]);
    FUZZ_CHECK(zt_config_check_unused(back) == ZT_OK);
    zt_config_free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool quiet;
    if (!quiet) fuzz_quiet(), quiet = true;
    char *text = fuzz_text(data, size);
    values v;

    zt_config *ini = zt_config_new();
    if (zt_config_load_string(ini, text, "fuzz") == ZT_OK) {
        fuzz_accepted++;
        if (read_all(ini, &v)) check_roundtrip(ini, &v);
        (void)zt_config_check_unused(ini);
    }
    zt_config_free(ini);

    zt_config *set = zt_config_new();
    bool all_set = true;
    for (char *line = text, *next; line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = '\0';
        all_set &= zt_config_set(set, line) == ZT_OK;
    }
    if (all_set && read_all(set, &v)) check_roundtrip(set, &v);
    zt_config_free(set);
    free(text);
    return 0;
}
