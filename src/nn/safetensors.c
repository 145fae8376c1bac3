/* safetensors files: the generic F32 reader and writer, and net weights.
 * A weight file's metadata: format "zeroth-weights", version, architecture
 * (zt_net_config_format), game, and data_hash (zt_hash_bytes of the data
 * section, hex) so that a flipped bit is refused, not loaded. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/fileio.h"
#include "core/hash.h"
#include "nn/backend.h"
#include "nn/safetensors.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors data is little-endian; this file assumes a little-endian host"
#endif

#define WEIGHTS_FORMAT "1"
#define HASH_SEED 0x7a65726f7468ULL /* "zeroth" */
/* The safetensors reference implementation caps headers at 100 MB. */
#define MAX_HEADER (100u << 20)

/* ---- writing ---- */

typedef struct sbuf {
    char *p;
    size_t len, cap;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n)
{
    b->p = zt_xreserve(b->p, &b->cap, b->len + n + 1);
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...)
{
    char tmp[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    ZT_ASSERT(n >= 0 && (size_t)n < sizeof tmp);
    sb_put(b, tmp, (size_t)n);
}

static void sb_json_string(sbuf *b, const char *s)
{
    sb_put(b, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            sb_put(b, e, 2);
        } else if (c < 0x20) {
            sb_printf(b, "\\u%04x", c);
        } else {
            sb_put(b, (const char *)&c, 1);
        }
    }
    sb_put(b, "\"", 1);
}

static size_t tensor_count(int ndim, const int *shape)
{
    size_t n = 1;
    for (int i = 0; i < ndim; i++) n *= (size_t)shape[i];
    return n;
}

zt_status zt_st_write(const char *path, const zt_st_tensor *tensors, int n, const zt_st_meta *meta,
                      int nmeta)
{
    uint64_t hash = HASH_SEED;
    for (int i = 0; i < n; i++) {
        size_t bytes = tensor_count(tensors[i].ndim, tensors[i].shape) * sizeof(float);
        /* Chained tensor by tensor in data order; the reader does the same. */
        hash = zt_hash_bytes(tensors[i].data, bytes, hash);
    }
    sbuf h = {0};
    sb_put(&h, "{\"__metadata__\":{", 17);
    for (int i = 0; i < nmeta; i++) {
        if (i) sb_put(&h, ",", 1);
        sb_json_string(&h, meta[i].key);
        sb_put(&h, ":", 1);
        sb_json_string(&h, meta[i].value);
    }
    sb_printf(&h, "%s\"data_hash\":\"%016llx\"}", nmeta ? "," : "", (unsigned long long)hash);
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        size_t bytes = tensor_count(tensors[i].ndim, tensors[i].shape) * sizeof(float);
        sb_put(&h, ",", 1);
        sb_json_string(&h, tensors[i].name);
        sb_put(&h, ":{\"dtype\":\"F32\",\"shape\":[", 25);
        for (int d = 0; d < tensors[i].ndim; d++)
            sb_printf(&h, "%s%d", d ? "," : "", tensors[i].shape[d]);
        sb_printf(&h, "],\"data_offsets\":[%zu,%zu]}", off, off + bytes);
        off += bytes;
    }
    sb_put(&h, "}", 1);
    /* Spaces pad the header so that the data starts 8-byte aligned, as the
     * format recommends. */
    while (h.len % 8) sb_put(&h, " ", 1);
    unsigned char len_le[8];
    for (int i = 0; i < 8; i++) len_le[i] = (unsigned char)((uint64_t)h.len >> (8 * i));

    zt_iovec *parts = zt_xcalloc((size_t)n + 2, sizeof *parts);
    parts[0] = (zt_iovec){len_le, 8};
    parts[1] = (zt_iovec){h.p, h.len};
    for (int i = 0; i < n; i++)
        parts[i + 2] = (zt_iovec){tensors[i].data,
                                  tensor_count(tensors[i].ndim, tensors[i].shape) * sizeof(float)};
    zt_status s = zt_write_file_atomicv(path, parts, n + 2);
    free(parts);
    free(h.p);
    return s;
}

/* ---- reading: a small JSON parser for exactly the header's grammar ---- */

typedef struct parser {
    const char *p, *begin, *end;
    const char *path;
    zt_status status;
} parser;

static bool bad(parser *ps, const char *what)
{
    if (ps->status == ZT_OK)
        ps->status = zt_fail(ZT_ERR_CORRUPT, "'%s': corrupt header (%s at byte %ld)", ps->path,
                             what, (long)(ps->p - ps->begin) + 8);
    return false;
}

static void skip_ws(parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static bool expect(parser *ps, char c)
{
    skip_ws(ps);
    if (ps->p >= ps->end || *ps->p != c) {
        char what[32];
        snprintf(what, sizeof what, "expected '%c'", c);
        return bad(ps, what);
    }
    ps->p++;
    return true;
}

static bool peek(parser *ps, char c)
{
    skip_ws(ps);
    return ps->p < ps->end && *ps->p == c;
}

/* A JSON string into a malloc'ed buffer; \uXXXX beyond ASCII is refused
 * (nothing Zeroth writes needs it). */
static bool parse_string(parser *ps, char **out)
{
    if (!expect(ps, '"')) return false;
    sbuf b = {0};
    sb_put(&b, "", 0);
    while (ps->p < ps->end && *ps->p != '"') {
        char c = *ps->p++;
        if ((unsigned char)c < 0x20) {
            free(b.p);
            return bad(ps, "control character in string");
        }
        if (c == '\\') {
            if (ps->p >= ps->end) break;
            char e = *ps->p++;
            switch (e) {
            case '"': case '\\': case '/': c = e; break;
            case 'n': c = '\n'; break;
            case 't': c = '\t'; break;
            case 'r': c = '\r'; break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'u': {
                unsigned v = 0;
                if (ps->end - ps->p < 4 || sscanf(ps->p, "%4x", &v) != 1 || v >= 0x80 || v == 0) {
                    free(b.p);
                    return bad(ps, "unsupported \\u escape");
                }
                ps->p += 4;
                c = (char)v;
                break;
            }
            default: free(b.p); return bad(ps, "bad escape");
            }
        }
        sb_put(&b, &c, 1);
    }
    if (ps->p >= ps->end) {
        free(b.p);
        return bad(ps, "unterminated string");
    }
    ps->p++;
    *out = b.p;
    return true;
}

static bool parse_u64(parser *ps, uint64_t *out)
{
    skip_ws(ps);
    if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9') return bad(ps, "expected a number");
    uint64_t v = 0;
    while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
        if (v > (UINT64_MAX - 9) / 10) return bad(ps, "number too large");
        v = v * 10 + (uint64_t)(*ps->p++ - '0');
    }
    *out = v;
    return true;
}

/* [n, n, ...] with at most `max` entries. */
static bool parse_u64_array(parser *ps, uint64_t *v, int max, int *n)
{
    if (!expect(ps, '[')) return false;
    *n = 0;
    if (peek(ps, ']')) return expect(ps, ']');
    do {
        if (*n >= max) return bad(ps, "array too long");
        if (!parse_u64(ps, &v[(*n)++])) return false;
        skip_ws(ps);
    } while (ps->p < ps->end && *ps->p == ',' && ps->p++);
    return expect(ps, ']');
}

static bool parse_metadata(parser *ps, zt_st_file *f)
{
    if (!expect(ps, '{')) return false;
    if (peek(ps, '}')) return expect(ps, '}');
    do {
        char *k = NULL, *v = NULL;
        if (!parse_string(ps, &k) || !expect(ps, ':') || !parse_string(ps, &v)) {
            free(k);
            return false;
        }
        f->meta_keys = zt_xrealloc(f->meta_keys, (size_t)(f->nmeta + 1) * sizeof(char *));
        f->meta_values = zt_xrealloc(f->meta_values, (size_t)(f->nmeta + 1) * sizeof(char *));
        f->meta_keys[f->nmeta] = k;
        f->meta_values[f->nmeta++] = v;
        skip_ws(ps);
    } while (ps->p < ps->end && *ps->p == ',' && ps->p++);
    return expect(ps, '}');
}

static bool parse_entry(parser *ps, zt_st_entry *e)
{
    if (!expect(ps, '{')) return false;
    bool have_dtype = false, have_shape = false, have_offsets = false;
    do {
        char *key = NULL;
        if (!parse_string(ps, &key) || !expect(ps, ':')) {
            free(key);
            return false;
        }
        bool ok;
        if (strcmp(key, "dtype") == 0) {
            char *dtype = NULL;
            ok = parse_string(ps, &dtype);
            if (ok && strcmp(dtype, "F32") != 0) {
                if (ps->status == ZT_OK)
                    ps->status = zt_fail(ZT_ERR_UNSUPPORTED, "'%s': tensor '%s' has dtype %s, only F32 is read",
                                         ps->path, e->name, dtype);
                ok = false;
            }
            free(dtype);
            have_dtype = true;
        } else if (strcmp(key, "shape") == 0) {
            uint64_t v[4];
            ok = parse_u64_array(ps, v, 4, &e->ndim);
            for (int i = 0; ok && i < e->ndim; i++) {
                if (v[i] > (1u << 30)) ok = bad(ps, "dimension too large");
                e->shape[i] = (int)v[i];
            }
            have_shape = true;
        } else if (strcmp(key, "data_offsets") == 0) {
            uint64_t v[2];
            int n = 0;
            ok = parse_u64_array(ps, v, 2, &n) && (n == 2 || bad(ps, "data_offsets needs 2 numbers"));
            e->begin = (size_t)v[0];
            e->end = (size_t)v[1];
            have_offsets = true;
        } else {
            ok = bad(ps, "unknown tensor field");
        }
        free(key);
        if (!ok) return false;
        skip_ws(ps);
    } while (ps->p < ps->end && *ps->p == ',' && ps->p++);
    if (!have_dtype || !have_shape || !have_offsets) return bad(ps, "tensor field missing");
    return expect(ps, '}');
}

static bool parse_header(parser *ps, zt_st_file *f)
{
    if (!expect(ps, '{')) return false;
    if (peek(ps, '}')) return expect(ps, '}');
    do {
        char *key = NULL;
        if (!parse_string(ps, &key) || !expect(ps, ':')) {
            free(key);
            return false;
        }
        if (strcmp(key, "__metadata__") == 0) {
            free(key);
            if (!parse_metadata(ps, f)) return false;
        } else {
            f->entries = zt_xrealloc(f->entries, (size_t)(f->nentries + 1) * sizeof *f->entries);
            zt_st_entry *e = &f->entries[f->nentries++];
            memset(e, 0, sizeof *e);
            e->name = key;
            if (!parse_entry(ps, e)) return false;
        }
        skip_ws(ps);
    } while (ps->p < ps->end && *ps->p == ',' && ps->p++);
    if (!expect(ps, '}')) return false;
    skip_ws(ps);
    return ps->p == ps->end || bad(ps, "trailing bytes");
}

static int by_begin(const void *a, const void *b)
{
    const zt_st_entry *x = *(const zt_st_entry *const *)a, *y = *(const zt_st_entry *const *)b;
    return x->begin < y->begin ? -1 : x->begin > y->begin;
}

void zt_st_close(zt_st_file *f)
{
    for (int i = 0; i < f->nentries; i++) free(f->entries[i].name);
    for (int i = 0; i < f->nmeta; i++) {
        free(f->meta_keys[i]);
        free(f->meta_values[i]);
    }
    free(f->entries);
    free(f->meta_keys);
    free(f->meta_values);
    free(f->bytes);
    free(f->path);
    memset(f, 0, sizeof *f);
}

zt_status zt_st_open(const char *path, zt_st_file *f)
{
    memset(f, 0, sizeof *f);
    zt_status s = zt_read_file(path, &f->bytes, &f->len);
    if (s != ZT_OK) return s;
    f->path = zt_xstrdup(path);
    if (f->len < 8) {
        s = zt_fail(ZT_ERR_CORRUPT, "'%s': truncated (%zu bytes, not even a header length)", path,
                    f->len);
        goto fail;
    }
    uint64_t hlen = 0;
    for (int i = 0; i < 8; i++) hlen |= (uint64_t)(unsigned char)f->bytes[i] << (8 * i);
    if (hlen > MAX_HEADER) {
        s = zt_fail(ZT_ERR_CORRUPT, "'%s': corrupt (header length %llu is implausible)", path,
                    (unsigned long long)hlen);
        goto fail;
    }
    if (hlen > f->len - 8) {
        s = zt_fail(ZT_ERR_CORRUPT, "'%s': truncated (header of %llu bytes, file of %zu)", path,
                    (unsigned long long)hlen, f->len);
        goto fail;
    }
    parser ps = {f->bytes + 8, f->bytes + 8, f->bytes + 8 + hlen, path, ZT_OK};
    if (!parse_header(&ps, f)) {
        s = ps.status;
        goto fail;
    }
    f->data = (const unsigned char *)f->bytes + 8 + hlen;
    size_t data_len = f->len - 8 - (size_t)hlen;
    /* The format requires the offsets to tile the data section exactly:
     * no gap, no overlap, nothing past the end. */
    const zt_st_entry **order = zt_xcalloc((size_t)f->nentries + 1, sizeof *order);
    for (int i = 0; i < f->nentries; i++) order[i] = &f->entries[i];
    qsort(order, (size_t)f->nentries, sizeof *order, by_begin);
    size_t at = 0;
    for (int i = 0; i < f->nentries && s == ZT_OK; i++) {
        const zt_st_entry *e = order[i];
        if (e->end < e->begin || e->end - e->begin != tensor_count(e->ndim, e->shape) * 4)
            s = zt_fail(ZT_ERR_CORRUPT, "'%s': tensor '%s' has offsets that do not match its shape",
                        path, e->name);
        else if (e->begin != at)
            s = zt_fail(ZT_ERR_CORRUPT, "'%s': tensor '%s' %s", path, e->name,
                        e->begin < at ? "overlaps another" : "leaves a gap before it");
        else if (e->end > data_len)
            s = zt_fail(ZT_ERR_CORRUPT, "'%s': truncated (tensor '%s' ends at byte %zu of %zu)",
                        path, e->name, e->end, data_len);
        at = e->end;
    }
    uint64_t hash = HASH_SEED;
    for (int i = 0; i < f->nentries && s == ZT_OK; i++)
        hash = zt_hash_bytes(f->data + order[i]->begin, order[i]->end - order[i]->begin, hash);
    for (int i = 1; i < f->nentries && s == ZT_OK; i++)
        for (int j = 0; j < i && s == ZT_OK; j++)
            if (strcmp(f->entries[i].name, f->entries[j].name) == 0)
                s = zt_fail(ZT_ERR_CORRUPT, "'%s': tensor '%s' appears twice", path,
                            f->entries[i].name);
    free(order);
    if (s != ZT_OK) goto fail;
    if (at != data_len) {
        s = zt_fail(ZT_ERR_CORRUPT, "'%s': %zu bytes after the last tensor", path, data_len - at);
        goto fail;
    }
    const char *want = zt_st_meta_get(f, "data_hash");
    if (want) {
        char got[17];
        snprintf(got, sizeof got, "%016llx", (unsigned long long)hash);
        if (strcmp(got, want) != 0) {
            s = zt_fail(ZT_ERR_CORRUPT, "'%s': corrupt (tensor data does not match its hash)",
                        path);
            goto fail;
        }
    }
    return ZT_OK;
fail:
    zt_st_close(f);
    return s;
}

const char *zt_st_meta_get(const zt_st_file *f, const char *key)
{
    for (int i = 0; i < f->nmeta; i++)
        if (strcmp(f->meta_keys[i], key) == 0) return f->meta_values[i];
    return NULL;
}

const zt_st_entry *zt_st_find(const zt_st_file *f, const char *name)
{
    for (int i = 0; i < f->nentries; i++)
        if (strcmp(f->entries[i].name, name) == 0) return &f->entries[i];
    return NULL;
}

zt_status zt_st_read_tensor(const zt_st_file *f, const char *name, int ndim, const int *shape,
                            float *out)
{
    const zt_st_entry *e = zt_st_find(f, name);
    if (!e) return zt_fail(ZT_ERR_INVALID, "'%s' has no tensor '%s'", f->path, name);
    bool same = e->ndim == ndim;
    for (int i = 0; same && i < ndim; i++) same = e->shape[i] == shape[i];
    if (!same) return zt_fail(ZT_ERR_INVALID, "'%s': tensor '%s' has another shape", f->path, name);
    /* A NaN or an infinity is never a weight or an optimizer moment worth
     * loading: a file without a data_hash (written by another program)
     * could carry one, and it would poison every output silently. */
    size_t count = (e->end - e->begin) / sizeof(float);
    for (size_t i = 0; i < count; i++) {
        float v;
        memcpy(&v, f->data + e->begin + i * sizeof v, sizeof v);
        if (!isfinite(v))
            return zt_fail(ZT_ERR_CORRUPT, "'%s': tensor '%s' holds a non-finite value (%s at %zu)",
                           f->path, name, isnan(v) ? "NaN" : "infinity", i);
    }
    if (out) memcpy(out, f->data + e->begin, e->end - e->begin);
    return ZT_OK;
}

/* ---- net weights ---- */

zt_status zt_net_save(const zt_net *net, const char *game, const char *path)
{
    int n = zt_net_tensor_count(net);
    zt_st_tensor *ts = zt_xcalloc((size_t)n + 1, sizeof *ts);
    for (int i = 0; i < n; i++) {
        zt_net_tensor t = zt_net_tensor_at(net, i);
        ts[i].name = t.name;
        ts[i].ndim = t.ndim;
        memcpy(ts[i].shape, t.shape, sizeof ts[i].shape);
        ts[i].data = t.data;
    }
    char arch[256];
    zt_net_config_format(zt_net_config_of(net), arch, sizeof arch);
    zt_st_meta meta[] = {{"format", "zeroth-weights"},
                         {"version", WEIGHTS_FORMAT},
                         {"architecture", arch},
                         {"game", game}};
    zt_status s = zt_st_write(path, ts, n, meta, (int)(sizeof meta / sizeof meta[0]));
    free(ts);
    return s;
}

/* Format, version, architecture (parsed into cfg) and game of an open file. */
static zt_status check_weights_meta(const zt_st_file *f, zt_net_config *cfg, const char **game)
{
    const char *format = zt_st_meta_get(f, "format"), *version = zt_st_meta_get(f, "version");
    const char *arch = zt_st_meta_get(f, "architecture");
    *game = zt_st_meta_get(f, "game");
    if (!format || strcmp(format, "zeroth-weights") != 0)
        return zt_fail(ZT_ERR_INVALID, "'%s' is not a Zeroth weight file", f->path);
    if (!version || strcmp(version, WEIGHTS_FORMAT) != 0)
        return zt_fail(ZT_ERR_UNSUPPORTED, "'%s' has weight format version '%s', not %s", f->path,
                       version ? version : "", WEIGHTS_FORMAT);
    if (!arch || zt_net_config_parse(arch, cfg) != ZT_OK)
        return zt_fail(ZT_ERR_CORRUPT, "'%s' has a malformed architecture '%.200s'", f->path,
                       arch ? arch : "");
    if (!*game) return zt_fail(ZT_ERR_CORRUPT, "'%s' names no game", f->path);
    return ZT_OK;
}

zt_status zt_net_file_info(const char *path, zt_net_config *cfg, char *game, size_t cap)
{
    zt_st_file f;
    ZT_TRY(zt_st_open(path, &f));
    const char *g = NULL;
    zt_status s = check_weights_meta(&f, cfg, &g);
    if (s == ZT_OK) snprintf(game, cap, "%s", g);
    zt_st_close(&f);
    return s;
}

zt_status zt_net_load(zt_net *net, const char *game, const char *path)
{
    zt_st_file f;
    ZT_TRY(zt_st_open(path, &f));
    zt_net_config cfg;
    const char *fgame = NULL;
    zt_status s = check_weights_meta(&f, &cfg, &fgame);
    char mine[256], theirs[256];
    zt_net_config_format(zt_net_config_of(net), mine, sizeof mine);
    if (s == ZT_OK) zt_net_config_format(&cfg, theirs, sizeof theirs);
    if (s == ZT_OK && strcmp(mine, theirs) != 0)
        s = zt_fail(ZT_ERR_INVALID, "'%s' holds architecture '%s', not this net's '%s'", path,
                    theirs, mine);
    if (s == ZT_OK && strcmp(fgame, game) != 0)
        s = zt_fail(ZT_ERR_INVALID, "'%s' holds weights for game '%s', not '%s'", path, fgame,
                    game);
    int n = zt_net_tensor_count(net);
    if (s == ZT_OK && f.nentries != n)
        s = zt_fail(ZT_ERR_INVALID, "'%s' holds %d tensors, this net has %d", path, f.nentries, n);
    /* Pass 0 checks every tensor, pass 1 copies: a refused file leaves the
     * net untouched. */
    for (int pass = 0; pass < 2 && s == ZT_OK; pass++)
        for (int i = 0; i < n && s == ZT_OK; i++) {
            zt_net_tensor t = zt_net_tensor_at(net, i);
            s = zt_st_read_tensor(&f, t.name, t.ndim, t.shape, pass ? t.data : NULL);
        }
    zt_st_close(&f);
    if (s == ZT_OK) zt_net_params_changed(net);
    return s;
}
