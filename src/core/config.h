/* Configuration: keys from an INI file (libinih) and "key=value" overrides,
 * read by typed getters that record the resolved value (defaults included).
 * A key that no module read is unknown and is rejected by zt_config_check_unused;
 * a value of the wrong type or out of range is rejected naming the key.
 * INI sections prefix keys: "[search]\nsims=64" is the key "search.sims".
 * The caller owns what zt_config_new returns; free with zt_config_free. */
#ifndef ZT_CORE_CONFIG_H
#define ZT_CORE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

typedef struct zt_config zt_config;

zt_config *zt_config_new(void);
void zt_config_free(zt_config *c);

/* Reads an INI file; later values override earlier ones. Errors name the file
 * and line. */
zt_status zt_config_load_file(zt_config *c, const char *path);
/* The same for INI text held in memory; `name` stands for the file in
 * messages ("config 'NAME' line 3: ..."). */
zt_status zt_config_load_string(zt_config *c, const char *text, const char *name);
/* Applies one "key=value" override (as given to --set). */
zt_status zt_config_set(zt_config *c, const char *assignment);
/* Sets a key programmatically (the value is copied). */
void zt_config_put(zt_config *c, const char *key, const char *value);
bool zt_config_has(const zt_config *c, const char *key);

/* Puts into dst every key set in src whose name starts with `prefix` and
 * that dst does not set yet, except the keys listed in `skip`
 * (NULL-terminated, may be NULL): src's settings become defaults under
 * dst's own. Returns how many keys were put. */
int zt_config_inherit(zt_config *dst, const zt_config *src, const char *prefix,
                      const char *const *skip);

/* Keys that stand in for others: for every key PREFIX.SECTION.KEY that c
 * sets (a dotted key after the prefix; PREFIX.KEY is not one), puts
 * SECTION.KEY = its value when `apply`, and marks the key read either way
 * (so it is no unknown key, and zt_config_write keeps it). MuZero runs'
 * [muzero] section sets keys of the others this way. Returns how many keys
 * it found. */
int zt_config_promote(zt_config *c, const char *prefix, bool apply);

/* Typed getters. Each marks the key used and records the resolved value
 * (the default when absent). Errors: "key 'k': expected an integer, got 'x'",
 * "key 'k': 42 is outside [3, 6]". */
zt_status zt_config_int(zt_config *c, const char *key, int64_t def, int64_t min, int64_t max,
                        int64_t *out);
zt_status zt_config_double(zt_config *c, const char *key, double def, double min, double max,
                           double *out);
/* The same into the narrower types most settings have (the bounds must fit
 * the type). */
zt_status zt_config_int32(zt_config *c, const char *key, int64_t def, int64_t min, int64_t max,
                          int *out);
zt_status zt_config_float(zt_config *c, const char *key, double def, double min, double max,
                          float *out);
zt_status zt_config_bool(zt_config *c, const char *key, bool def, bool *out);
/* The returned string lives as long as the config. */
zt_status zt_config_string(zt_config *c, const char *key, const char *def, const char **out);
/* One of `choices` (NULL-terminated); *out is its index. */
zt_status zt_config_choice(zt_config *c, const char *key, const char *def,
                           const char *const *choices, int *out);

/* The items of a comma-separated list, as a setting or a flag gives one,
 * blanks around each ignored. Copies the item at *p (first *p = list) into
 * buf[cap] and moves *p past it and its comma; *got is false at the list's
 * end (a blank list has no items). An empty item ("a,,b", "a,") or one of
 * cap characters or more is refused naming `what` and the list. */
zt_status zt_list_next(const char *list, const char **p, const char *what, char *buf, size_t cap,
                       bool *got);

/* ZT_ERR_INVALID "unknown key 'foo'" for the first key set but never read,
 * or "unknown key 'P.S.K' (no key 'S.K')" for a key zt_config_promote
 * found whose SECTION.KEY nothing read, whether it was applied or not. */
zt_status zt_config_check_unused(const zt_config *c);

/* Writes every resolved key as an INI file (sections from the prefixes),
 * atomically. */
zt_status zt_config_write(const zt_config *c, const char *path);

#endif
