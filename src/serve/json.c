/* JSON writing and the flat-object reader of the serve API. */
#include "serve/json.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"

static void reserve(zt_json_buf *b, size_t more)
{
    b->data = zt_xreserve(b->data, &b->cap, b->len + more + 1);
}

void zt_json_printf(zt_json_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    ZT_ASSERT(n >= 0);
    reserve(b, (size_t)n);
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void zt_json_string(zt_json_buf *b, const char *s)
{
    reserve(b, 2 + 6 * strlen(s));
    char *out = b->data + b->len;
    *out++ = '"';
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"':
            *out++ = '\\', *out++ = '"';
            break;
        case '\\':
            *out++ = '\\', *out++ = '\\';
            break;
        case '\n':
            *out++ = '\\', *out++ = 'n';
            break;
        case '\r':
            *out++ = '\\', *out++ = 'r';
            break;
        case '\t':
            *out++ = '\\', *out++ = 't';
            break;
        default:
            if (*p < 0x20) {
                out += sprintf(out, "\\u%04x", *p);
            } else {
                *out++ = (char)*p;
            }
        }
    }
    *out++ = '"';
    *out = '\0';
    b->len = (size_t)(out - b->data);
}

void zt_json_number(zt_json_buf *b, double v)
{
    if (isfinite(v))
        zt_json_printf(b, "%.6g", v);
    else
        zt_json_printf(b, "null");
}

char *zt_json_take(zt_json_buf *b, size_t *len)
{
    if (!b->data) reserve(b, 0), b->data[0] = '\0';
    char *data = b->data;
    if (len) *len = b->len;
    *b = (zt_json_buf){0};
    return data;
}

void zt_json_buf_free(zt_json_buf *b)
{
    free(b->data);
    *b = (zt_json_buf){0};
}

/* ---- reading ---- */

typedef struct reader {
    const char *text;
    size_t len, at;
} reader;

static void skip_space(reader *r)
{
    while (r->at < r->len && (r->text[r->at] == ' ' || r->text[r->at] == '\t' ||
                              r->text[r->at] == '\n' || r->text[r->at] == '\r'))
        r->at++;
}

static int peek(const reader *r)
{
    return r->at < r->len ? (unsigned char)r->text[r->at] : -1;
}

static zt_status fail_at(const reader *r, const char *what)
{
    if (r->at >= r->len)
        return zt_fail(ZT_ERR_INVALID, "bad JSON: %s at the end of the body", what);
    return zt_fail(ZT_ERR_INVALID, "bad JSON: %s at byte %zu", what, r->at);
}

static int hex_digit(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static bool read_hex4(reader *r, unsigned *out)
{
    if (r->at + 4 > r->len) return false;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int d = hex_digit((unsigned char)r->text[r->at + (size_t)i]);
        if (d < 0) return false;
        v = v << 4 | (unsigned)d;
    }
    r->at += 4;
    *out = v;
    return true;
}

/* Appends code point cp as UTF-8 to out[*n], cap bytes in all. */
static bool put_utf8(char *out, size_t *n, size_t cap, unsigned cp)
{
    char tmp[4];
    size_t k;
    if (cp < 0x80) {
        tmp[0] = (char)cp, k = 1;
    } else if (cp < 0x800) {
        tmp[0] = (char)(0xC0 | cp >> 6), tmp[1] = (char)(0x80 | (cp & 0x3F)), k = 2;
    } else if (cp < 0x10000) {
        tmp[0] = (char)(0xE0 | cp >> 12), tmp[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        tmp[2] = (char)(0x80 | (cp & 0x3F)), k = 3;
    } else {
        tmp[0] = (char)(0xF0 | cp >> 18), tmp[1] = (char)(0x80 | (cp >> 12 & 0x3F));
        tmp[2] = (char)(0x80 | (cp >> 6 & 0x3F)), tmp[3] = (char)(0x80 | (cp & 0x3F)), k = 4;
    }
    if (*n + k >= cap) return false;
    memcpy(out + *n, tmp, k);
    *n += k;
    return true;
}

/* A string at r (on its opening quote) into out (cap bytes with the NUL). */
static zt_status read_string(reader *r, char *out, size_t cap, const char *what)
{
    r->at++;
    size_t n = 0;
    for (;;) {
        int c = peek(r);
        if (c < 0) return fail_at(r, "unterminated string");
        if (c == '"') {
            r->at++;
            break;
        }
        if (c < 0x20) return fail_at(r, "control character in a string");
        if (c != '\\') {
            if (n + 1 >= cap)
                return zt_fail(ZT_ERR_INVALID, "bad JSON: %s longer than %zu bytes at byte %zu",
                               what, cap - 1, r->at);
            out[n++] = (char)c;
            r->at++;
            continue;
        }
        r->at++;
        int e = peek(r);
        r->at++;
        unsigned cp;
        switch (e) {
        case '"':
            cp = '"';
            break;
        case '\\':
            cp = '\\';
            break;
        case '/':
            cp = '/';
            break;
        case 'b':
            cp = '\b';
            break;
        case 'f':
            cp = '\f';
            break;
        case 'n':
            cp = '\n';
            break;
        case 'r':
            cp = '\r';
            break;
        case 't':
            cp = '\t';
            break;
        case 'u':
            if (!read_hex4(r, &cp)) return fail_at(r, "bad \\u escape");
            if (cp >= 0xD800 && cp < 0xDC00) {
                unsigned lo;
                if (peek(r) != '\\' || r->at + 1 >= r->len || r->text[r->at + 1] != 'u')
                    return fail_at(r, "lone surrogate in a \\u escape");
                r->at += 2;
                if (!read_hex4(r, &lo) || lo < 0xDC00 || lo >= 0xE000)
                    return fail_at(r, "lone surrogate in a \\u escape");
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp < 0xE000) {
                return fail_at(r, "lone surrogate in a \\u escape");
            }
            if (cp == 0) return fail_at(r, "NUL character in a string");
            break;
        default:
            r->at--;
            return fail_at(r, "bad escape in a string");
        }
        if (!put_utf8(out, &n, cap, cp))
            return zt_fail(ZT_ERR_INVALID, "bad JSON: %s longer than %zu bytes at byte %zu", what,
                           cap - 1, r->at);
    }
    out[n] = '\0';
    return ZT_OK;
}

/* A number in JSON's grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static zt_status read_number(reader *r, double *out)
{
    size_t start = r->at;
    if (peek(r) == '-') r->at++;
    if (peek(r) == '0') {
        r->at++;
    } else if (peek(r) >= '1' && peek(r) <= '9') {
        while (peek(r) >= '0' && peek(r) <= '9') r->at++;
    } else {
        return fail_at(r, "bad number");
    }
    if (peek(r) == '.') {
        r->at++;
        if (!(peek(r) >= '0' && peek(r) <= '9')) return fail_at(r, "bad number");
        while (peek(r) >= '0' && peek(r) <= '9') r->at++;
    }
    if (peek(r) == 'e' || peek(r) == 'E') {
        r->at++;
        if (peek(r) == '+' || peek(r) == '-') r->at++;
        if (!(peek(r) >= '0' && peek(r) <= '9')) return fail_at(r, "bad number");
        while (peek(r) >= '0' && peek(r) <= '9') r->at++;
    }
    char tmp[64];
    size_t n = r->at - start;
    if (n >= sizeof tmp) {
        r->at = start;
        return fail_at(r, "number too long");
    }
    memcpy(tmp, r->text + start, n);
    tmp[n] = '\0';
    *out = strtod(tmp, NULL);
    return ZT_OK;
}

static bool read_word(reader *r, const char *word)
{
    size_t n = strlen(word);
    if (r->at + n > r->len || memcmp(r->text + r->at, word, n) != 0) return false;
    r->at += n;
    return true;
}

static zt_status read_value(reader *r, zt_json_member *m)
{
    int c = peek(r);
    if (c == '"') {
        m->kind = ZT_JSON_STRING;
        return read_string(r, m->string, sizeof m->string, "a string");
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        m->kind = ZT_JSON_NUMBER;
        return read_number(r, &m->number);
    }
    if (c == '{' || c == '[') return fail_at(r, "nested value (only flat objects are taken)");
    if (read_word(r, "true")) {
        m->kind = ZT_JSON_BOOL, m->boolean = true;
        return ZT_OK;
    }
    if (read_word(r, "false")) {
        m->kind = ZT_JSON_BOOL, m->boolean = false;
        return ZT_OK;
    }
    if (read_word(r, "null")) {
        m->kind = ZT_JSON_NULL;
        return ZT_OK;
    }
    return fail_at(r, "expected a value");
}

zt_status zt_json_parse_object(const char *text, size_t len, zt_json_object *out)
{
    reader r = {text, len, 0};
    out->count = 0;
    skip_space(&r);
    if (peek(&r) != '{') return fail_at(&r, "expected an object '{'");
    r.at++;
    skip_space(&r);
    if (peek(&r) == '}') {
        r.at++;
    } else {
        for (;;) {
            skip_space(&r);
            if (peek(&r) != '"') return fail_at(&r, "expected a key string");
            if (out->count == ZT_JSON_MAX_MEMBERS)
                return zt_fail(ZT_ERR_INVALID, "bad JSON: more than %d members at byte %zu",
                               ZT_JSON_MAX_MEMBERS, r.at);
            zt_json_member *m = &out->members[out->count];
            memset(m, 0, sizeof *m);
            size_t key_at = r.at;
            ZT_TRY(read_string(&r, m->key, sizeof m->key, "a key"));
            if (zt_json_get(out, m->key))
                return zt_fail(ZT_ERR_INVALID, "bad JSON: duplicate key '%s' at byte %zu", m->key,
                               key_at);
            skip_space(&r);
            if (peek(&r) != ':') return fail_at(&r, "expected ':'");
            r.at++;
            skip_space(&r);
            ZT_TRY(read_value(&r, m));
            out->count++;
            skip_space(&r);
            if (peek(&r) == ',') {
                r.at++;
                continue;
            }
            if (peek(&r) == '}') {
                r.at++;
                break;
            }
            return fail_at(&r, "expected ',' or '}'");
        }
    }
    skip_space(&r);
    if (r.at != r.len) return fail_at(&r, "unexpected text after the object");
    return ZT_OK;
}

const zt_json_member *zt_json_get(const zt_json_object *o, const char *key)
{
    for (int i = 0; i < o->count; i++)
        if (strcmp(o->members[i].key, key) == 0) return &o->members[i];
    return NULL;
}
