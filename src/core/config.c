#include "core/config.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <ini.h>

#include "core/alloc.h"
#include "core/fileio.h"

/* One key, in the order it was first set or read. */
typedef struct entry {
    const char *key;
    const char *value;    /* from a file, --set or put; NULL if never set */
    const char *resolved; /* what a getter returned, as text; NULL if never read */
    const char *stands_for; /* zt_config_promote's SECTION.KEY of PREFIX.SECTION.KEY */
    bool used;
} entry;

/* Every string goes into `owned` and is freed only with the config, so a
 * string handed out by zt_config_string stays valid even if the key is set
 * again later. Configs are small and set a handful of times. */
struct zt_config {
    entry *entries;
    int n, cap;
    char **owned;
    int nowned, owned_cap;
};

zt_config *zt_config_new(void)
{
    return zt_xcalloc(1, sizeof(zt_config));
}

void zt_config_free(zt_config *c)
{
    if (!c) return;
    for (int i = 0; i < c->nowned; i++) free(c->owned[i]);
    free(c->owned);
    free(c->entries);
    free(c);
}

static const char *own_n(zt_config *c, const char *s, size_t len)
{
    c->owned = zt_xgrow(c->owned, &c->owned_cap, c->nowned + 1, sizeof *c->owned);
    char *copy = zt_xmalloc(len + 1);
    memcpy(copy, s, len);
    copy[len] = '\0';
    c->owned[c->nowned++] = copy;
    return copy;
}

static const char *own(zt_config *c, const char *s)
{
    return own_n(c, s, strlen(s));
}

static entry *find(const zt_config *c, const char *key)
{
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->entries[i].key, key) == 0) return &c->entries[i];
    return NULL;
}

static entry *find_or_add(zt_config *c, const char *key)
{
    entry *e = find(c, key);
    if (e) return e;
    c->entries = zt_xgrow(c->entries, &c->cap, c->n + 1, sizeof *c->entries);
    e = &c->entries[c->n++];
    e->key = own(c, key);
    e->value = NULL;
    e->resolved = NULL;
    e->stands_for = NULL;
    e->used = false;
    return e;
}

void zt_config_put(zt_config *c, const char *key, const char *value)
{
    find_or_add(c, key)->value = own(c, value);
}

bool zt_config_has(const zt_config *c, const char *key)
{
    const entry *e = find(c, key);
    return e && e->value;
}

int zt_config_inherit(zt_config *dst, const zt_config *src, const char *prefix,
                      const char *const *skip)
{
    ZT_ASSERT(dst != src);
    size_t plen = strlen(prefix);
    int put = 0;
    for (int i = 0; i < src->n; i++) {
        const entry *e = &src->entries[i];
        if (!e->value || strncmp(e->key, prefix, plen) != 0 || zt_config_has(dst, e->key))
            continue;
        bool skipped = false;
        for (int k = 0; skip && skip[k] && !skipped; k++) skipped = strcmp(e->key, skip[k]) == 0;
        if (skipped) continue;
        zt_config_put(dst, e->key, e->value);
        put++;
    }
    return put;
}

int zt_config_promote(zt_config *c, const char *prefix, bool apply)
{
    size_t plen = strlen(prefix);
    int found = 0;
    /* by index: a put may add an entry (SECTION.KEY), never one with the
     * prefix, and may move the array */
    for (int i = 0; i < c->n; i++) {
        entry *e = &c->entries[i];
        if (!e->value || strncmp(e->key, prefix, plen) != 0 || !strchr(e->key + plen, '.'))
            continue;
        e->used = true;
        e->resolved = e->value;
        e->stands_for = e->key + plen;
        found++;
        const char *key = e->key + plen, *value = e->value;
        if (apply) zt_config_put(c, key, value);
    }
    return found;
}

/* One file's parse: where the text is, the line inih is on, and the keys
 * the file has set so far with their lines (a key set twice in one file is
 * a mistake, not an override). */
typedef struct load_ctx {
    zt_config *config;
    const char *next; /* the text not yet handed to inih */
    int line;         /* the line inih is parsing */
    char key[512];
    char **seen;
    int *seen_line;
    int nseen, seen_cap;
    char duplicate[512]; /* the first key set twice, "" if none */
    int first_line, second_line;
} load_ctx;

/* inih's line reader over the text: hands out one line per call (at most
 * num - 1 bytes; first_long_line has refused longer ones) and counts it. */
static char *read_line(char *str, int num, void *stream)
{
    load_ctx *ctx = stream;
    if (!*ctx->next || num < 2) return NULL;
    int n = 0;
    while (n < num - 1 && ctx->next[n] && ctx->next[n] != '\n') n++;
    if (ctx->next[n] == '\n' && n < num - 1) n++;
    memcpy(str, ctx->next, (size_t)n);
    str[n] = '\0';
    ctx->next += n;
    ctx->line++;
    return str;
}

static int on_ini_pair(void *user, const char *section, const char *name, const char *value)
{
    load_ctx *ctx = user;
    if (section[0])
        snprintf(ctx->key, sizeof ctx->key, "%s.%s", section, name);
    else
        snprintf(ctx->key, sizeof ctx->key, "%s", name);
    for (int i = 0; i < ctx->nseen; i++) {
        if (strcmp(ctx->seen[i], ctx->key) != 0) continue;
        if (!ctx->duplicate[0]) {
            snprintf(ctx->duplicate, sizeof ctx->duplicate, "%s", ctx->key);
            ctx->first_line = ctx->seen_line[i];
            ctx->second_line = ctx->line;
        }
        return 1;
    }
    if (ctx->nseen == ctx->seen_cap) {
        ctx->seen_cap = ctx->seen_cap ? 2 * ctx->seen_cap : 32;
        ctx->seen = zt_xrealloc(ctx->seen, (size_t)ctx->seen_cap * sizeof *ctx->seen);
        ctx->seen_line =
            zt_xrealloc(ctx->seen_line, (size_t)ctx->seen_cap * sizeof *ctx->seen_line);
    }
    ctx->seen[ctx->nseen] = zt_xstrdup(ctx->key);
    ctx->seen_line[ctx->nseen++] = ctx->line;
    zt_config_put(ctx->config, ctx->key, value);
    return 1;
}

/* inih reads a line into a fixed INI_MAX_LINE buffer and silently splits
 * longer lines, so they are rejected here instead. Returns the first long
 * line's number, or 0. */
static int first_long_line(const char *text)
{
    int line = 1;
    size_t len = 0;
    for (const char *p = text; *p; p++) {
        if (*p == '\n') {
            line++;
            len = 0;
        } else if (++len > INI_MAX_LINE - 2) {
            return line;
        }
    }
    return 0;
}

/* inih reads an indented line after "key = value" as a continuation of that
 * value (Python configparser style), so "  c = 1" under "  sims = 64" would
 * silently set sims to "c = 1". Configs are often indented under their
 * section, so leading blanks are dropped instead (in place; line numbers
 * are kept). */
static void strip_indentation(char *text)
{
    char *out = text;
    bool line_start = true;
    for (const char *in = text; *in; in++) {
        if (line_start && (*in == ' ' || *in == '\t')) continue;
        line_start = *in == '\n';
        *out++ = *in;
    }
    *out = '\0';
}

/* Parses INI text in place (indentation is stripped first); `name` is the
 * file or source named in messages. */
static zt_status parse_ini(zt_config *c, char *text, const char *name)
{
    strip_indentation(text);
    int long_line = first_long_line(text);
    if (long_line)
        return zt_fail(ZT_ERR_INVALID, "config '%s' line %d: longer than %d characters", name,
                       long_line, INI_MAX_LINE - 2);
    /* Parsed into a scratch config first, so that a refused file changes
     * nothing in c. */
    load_ctx ctx = {.config = zt_config_new(), .next = text};
    int rc = ini_parse_stream(read_line, &ctx, on_ini_pair, &ctx);
    zt_status st = ZT_OK;
    if (rc > 0)
        st = zt_fail(ZT_ERR_INVALID, "config '%s' line %d: expected '[section]' or 'key = value'",
                     name, rc);
    else if (rc != 0)
        st = zt_fail(ZT_ERR_NOMEM, "config '%s': out of memory while parsing", name);
    else if (ctx.duplicate[0])
        st = zt_fail(ZT_ERR_INVALID, "config '%s': key '%s' is set twice (lines %d and %d)", name,
                     ctx.duplicate, ctx.first_line, ctx.second_line);
    if (st == ZT_OK)
        for (int i = 0; i < ctx.config->n; i++)
            zt_config_put(c, ctx.config->entries[i].key, ctx.config->entries[i].value);
    for (int i = 0; i < ctx.nseen; i++) free(ctx.seen[i]);
    free(ctx.seen);
    free(ctx.seen_line);
    zt_config_free(ctx.config);
    return st;
}

zt_status zt_config_load_file(zt_config *c, const char *path)
{
    char *text;
    size_t len;
    zt_status s = zt_read_file(path, &text, &len);
    if (s != ZT_OK) return s;
    s = parse_ini(c, text, path);
    free(text);
    return s;
}

zt_status zt_config_load_string(zt_config *c, const char *text, const char *name)
{
    char *copy = zt_xstrdup(text);
    zt_status s = parse_ini(c, copy, name);
    free(copy);
    return s;
}

static void trim(const char **begin, const char **end)
{
    while (*begin < *end && isspace((unsigned char)**begin)) (*begin)++;
    while (*end > *begin && isspace((unsigned char)(*end)[-1])) (*end)--;
}

zt_status zt_config_set(zt_config *c, const char *assignment)
{
    const char *eq = strchr(assignment, '=');
    if (!eq) return zt_fail(ZT_ERR_INVALID, "setting '%s': expected key=value", assignment);
    const char *kb = assignment, *ke = eq;
    const char *vb = eq + 1, *ve = eq + 1 + strlen(eq + 1);
    trim(&kb, &ke);
    trim(&vb, &ve);
    if (kb == ke) return zt_fail(ZT_ERR_INVALID, "setting '%s': empty key", assignment);
    const char *key = own_n(c, kb, (size_t)(ke - kb));
    find_or_add(c, key)->value = own_n(c, vb, (size_t)(ve - vb));
    return ZT_OK;
}

/* Marks `key` read and returns its entry; the caller records `resolved`. */
static entry *use(zt_config *c, const char *key)
{
    entry *e = find_or_add(c, key);
    e->used = true;
    return e;
}

zt_status zt_config_int(zt_config *c, const char *key, int64_t def, int64_t min, int64_t max,
                        int64_t *out)
{
    entry *e = use(c, key);
    int64_t v = def;
    if (e->value) {
        char *end;
        errno = 0;
        long long parsed = strtoll(e->value, &end, 10);
        if (end == e->value || *end != '\0')
            return zt_fail(ZT_ERR_INVALID, "key '%s': expected an integer, got '%s'", key,
                           e->value);
        if (errno == ERANGE || parsed < min || parsed > max)
            return zt_fail(ZT_ERR_INVALID, "key '%s': %s is outside [%" PRId64 ", %" PRId64 "]",
                           key, e->value, min, max);
        v = parsed;
    }
    char text[32];
    snprintf(text, sizeof text, "%" PRId64, v);
    e->resolved = own(c, text);
    *out = v;
    return ZT_OK;
}

/* Shortest of %.15g..%.17g that reads back as the same double, so a written
 * config reloads bit-exactly without printing 0.1 as 0.10000000000000001. */
static void format_double(char *buf, size_t size, double x)
{
    for (int precision = 15; precision <= 17; precision++) {
        snprintf(buf, size, "%.*g", precision, x);
        if (strtod(buf, NULL) == x) return;
    }
}

zt_status zt_config_double(zt_config *c, const char *key, double def, double min, double max,
                           double *out)
{
    entry *e = use(c, key);
    double v = def;
    if (e->value) {
        char *end;
        double parsed = strtod(e->value, &end);
        if (end == e->value || *end != '\0')
            return zt_fail(ZT_ERR_INVALID, "key '%s': expected a number, got '%s'", key, e->value);
        if (!isfinite(parsed))
            return zt_fail(ZT_ERR_INVALID, "key '%s': expected a finite number, got '%s'", key,
                           e->value);
        if (parsed < min || parsed > max)
            return zt_fail(ZT_ERR_INVALID, "key '%s': %s is outside [%g, %g]", key, e->value, min,
                           max);
        v = parsed;
    }
    char text[40];
    format_double(text, sizeof text, v);
    e->resolved = own(c, text);
    *out = v;
    return ZT_OK;
}

zt_status zt_config_bool(zt_config *c, const char *key, bool def, bool *out)
{
    static const char *const truthy[] = {"1", "true", "yes", "on"};
    static const char *const falsy[] = {"0", "false", "no", "off"};
    entry *e = use(c, key);
    bool v = def;
    if (e->value) {
        int found = 0;
        for (int i = 0; i < 4 && !found; i++) {
            if (strcasecmp(e->value, truthy[i]) == 0) v = true, found = 1;
            if (strcasecmp(e->value, falsy[i]) == 0) v = false, found = 1;
        }
        if (!found)
            return zt_fail(ZT_ERR_INVALID,
                           "key '%s': expected true/false, yes/no, on/off or 1/0, got '%s'", key,
                           e->value);
    }
    e->resolved = v ? "true" : "false";
    *out = v;
    return ZT_OK;
}

zt_status zt_config_string(zt_config *c, const char *key, const char *def, const char **out)
{
    entry *e = use(c, key);
    if (e->value)
        e->resolved = e->value;
    else
        e->resolved = def ? own(c, def) : NULL;
    *out = e->resolved;
    return ZT_OK;
}

zt_status zt_config_choice(zt_config *c, const char *key, const char *def,
                           const char *const *choices, int *out)
{
    entry *e = use(c, key);
    const char *want = e->value ? e->value : def;
    ZT_ASSERT(want != NULL);
    for (int i = 0; choices[i]; i++) {
        if (strcmp(want, choices[i]) == 0) {
            e->resolved = own(c, choices[i]);
            *out = i;
            return ZT_OK;
        }
    }
    /* A default outside the choices is a bug in the caller, not bad input. */
    ZT_ASSERT(e->value != NULL);
    char list[400];
    size_t len = 0;
    list[0] = '\0';
    for (int i = 0; choices[i] && len < sizeof list; i++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", choices[i]);
    return zt_fail(ZT_ERR_INVALID, "key '%s': '%s' is not one of %s", key, e->value, list);
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

zt_status zt_list_next(const char *list, const char **p, const char *what, char *buf, size_t cap,
                       bool *got)
{
    *got = false;
    const char *s = *p;
    while (is_blank(*s)) s++;
    if (*s == '\0') {
        /* the end, unless a comma before it promised another item */
        const char *b = s;
        while (b > list && is_blank(b[-1])) b--;
        if (b > list && b[-1] == ',')
            return zt_fail(ZT_ERR_INVALID, "%s: an empty entry in '%s'", what, list);
        *p = s;
        return ZT_OK;
    }
    size_t span = strcspn(s, ","), len = span;
    while (len > 0 && is_blank(s[len - 1])) len--;
    if (len == 0) return zt_fail(ZT_ERR_INVALID, "%s: an empty entry in '%s'", what, list);
    if (len >= cap)
        return zt_fail(ZT_ERR_INVALID, "%s: '%.*s' is longer than %zu characters", what, (int)len,
                       s, cap - 1);
    memcpy(buf, s, len);
    buf[len] = '\0';
    *p = s + span + (s[span] == ',');
    *got = true;
    return ZT_OK;
}

zt_status zt_config_check_unused(const zt_config *c)
{
    for (int i = 0; i < c->n; i++) {
        const entry *e = &c->entries[i];
        if (e->value && !e->used) return zt_fail(ZT_ERR_INVALID, "unknown key '%s'", e->key);
        /* a stand-in for a key nothing read is as unknown, applied or not
         * (a misspelt muzero.SECTION.KEY in an AlphaZero run too) */
        const entry *t = e->stands_for ? find(c, e->stands_for) : NULL;
        if (e->stands_for && !(t && t->used))
            return zt_fail(ZT_ERR_INVALID, "unknown key '%s' (no key '%s')", e->key, e->stands_for);
    }
    return ZT_OK;
}

typedef struct text_buf {
    char *data;
    size_t len, cap;
} text_buf;

static void append(text_buf *b, const char *s, size_t n)
{
    b->data = zt_xreserve(b->data, &b->cap, b->len + n + 1);
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

static void append_str(text_buf *b, const char *s)
{
    append(b, s, strlen(s));
}

/* Length of the section part of `key` (up to its last '.'), 0 if none. */
static size_t section_len(const char *key)
{
    const char *dot = strrchr(key, '.');
    return dot ? (size_t)(dot - key) : 0;
}

/* Whether inih would read `value` back unchanged: it trims whitespace,
 * treats ';' at the start or after whitespace as a comment, and splits
 * lines. */
static bool ini_safe(const char *value)
{
    size_t n = strlen(value);
    if (n && (isspace((unsigned char)value[0]) || isspace((unsigned char)value[n - 1])))
        return false;
    for (size_t i = 0; i < n; i++) {
        if (value[i] == '\n' || value[i] == '\r') return false;
        if (value[i] == ';' && (i == 0 || isspace((unsigned char)value[i - 1]))) return false;
    }
    return true;
}

static zt_status append_entry(text_buf *b, const entry *e, size_t skip)
{
    const char *name = e->key + skip;
    if (!ini_safe(e->resolved))
        return zt_fail(ZT_ERR_INVALID, "key '%s': value '%s' cannot be written to an INI file",
                       e->key, e->resolved);
    if (strlen(name) + strlen(e->resolved) + 3 > INI_MAX_LINE - 2)
        return zt_fail(ZT_ERR_INVALID, "key '%s': value too long for an INI line", e->key);
    append_str(b, name);
    append_str(b, " = ");
    append_str(b, e->resolved);
    append_str(b, "\n");
    return ZT_OK;
}

zt_status zt_config_write(const zt_config *c, const char *path)
{
    text_buf b = {0};
    zt_status s = ZT_OK;
    append_str(&b, "# resolved configuration (defaults included)\n");
    /* Keys without a section must come before the first [section] header. */
    for (int i = 0; i < c->n && s == ZT_OK; i++) {
        const entry *e = &c->entries[i];
        if (e->used && e->resolved && section_len(e->key) == 0) s = append_entry(&b, e, 0);
    }
    /* Then one block per section, in the order sections first appear. */
    for (int i = 0; i < c->n && s == ZT_OK; i++) {
        const entry *e = &c->entries[i];
        size_t sl = section_len(e->key);
        if (!e->used || !e->resolved || sl == 0) continue;
        bool seen = false;
        for (int j = 0; j < i && !seen; j++) {
            const entry *f = &c->entries[j];
            seen = f->used && f->resolved && section_len(f->key) == sl &&
                   strncmp(f->key, e->key, sl) == 0;
        }
        if (seen) continue;
        append_str(&b, "\n[");
        append(&b, e->key, sl);
        append_str(&b, "]\n");
        for (int j = i; j < c->n && s == ZT_OK; j++) {
            const entry *f = &c->entries[j];
            if (f->used && f->resolved && section_len(f->key) == sl &&
                strncmp(f->key, e->key, sl) == 0)
                s = append_entry(&b, f, sl + 1);
        }
    }
    if (s == ZT_OK) s = zt_write_file_atomic(path, b.data, b.len);
    free(b.data);
    return s;
}

zt_status zt_config_int32(zt_config *c, const char *key, int64_t def, int64_t min, int64_t max,
                          int *out)
{
    ZT_ASSERT(min >= INT_MIN && max <= INT_MAX);
    int64_t v;
    ZT_TRY(zt_config_int(c, key, def, min, max, &v));
    *out = (int)v;
    return ZT_OK;
}

zt_status zt_config_float(zt_config *c, const char *key, double def, double min, double max,
                          float *out)
{
    double v;
    ZT_TRY(zt_config_double(c, key, def, min, max, &v));
    *out = (float)v;
    return ZT_OK;
}
