/* JSON for the serve API (docs/serve.md): a growable buffer that writes
 * values with correct escaping, and a strict reader of the flat objects the
 * API takes as request bodies: {"key": number | string | true | false |
 * null, ...}, nothing nested. The caller owns a buffer's bytes: free them
 * with zt_json_buf_free, or take them with zt_json_take (then free()). */
#ifndef ZT_SERVE_JSON_H
#define ZT_SERVE_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"

typedef struct zt_json_buf {
    char *data; /* NUL-terminated once anything was written */
    size_t len, cap;
} zt_json_buf;

/* Appends printf-style text as it is (the caller writes valid JSON). */
void zt_json_printf(zt_json_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s as a JSON string: quoted, with '"', '\\' and control
 * characters escaped. */
void zt_json_string(zt_json_buf *b, const char *s);
/* Appends v with 6 significant digits, or null when it is not finite. */
void zt_json_number(zt_json_buf *b, double v);
/* The bytes written (an empty string when none), now the caller's; the
 * buffer is left empty. */
char *zt_json_take(zt_json_buf *b, size_t *len);
void zt_json_buf_free(zt_json_buf *b);

#define ZT_JSON_MAX_MEMBERS 16
#define ZT_JSON_MAX_KEY 32
#define ZT_JSON_MAX_STRING 256

typedef enum zt_json_kind {
    ZT_JSON_NULL,
    ZT_JSON_BOOL,
    ZT_JSON_NUMBER,
    ZT_JSON_STRING,
} zt_json_kind;

typedef struct zt_json_member {
    char key[ZT_JSON_MAX_KEY];
    zt_json_kind kind;
    bool boolean;
    double number;
    char string[ZT_JSON_MAX_STRING]; /* UTF-8, without NUL bytes */
} zt_json_member;

typedef struct zt_json_object {
    int count;
    zt_json_member members[ZT_JSON_MAX_MEMBERS];
} zt_json_object;

/* Parses text[0 .. len) as one flat JSON object (whitespace around it
 * allowed). Refused with ZT_ERR_INVALID and a message naming the problem
 * and its byte offset: anything that is no JSON, a nested array or object,
 * a duplicate key, more than ZT_JSON_MAX_MEMBERS members, a key or string
 * longer than its bound, a NUL byte in a string. */
zt_status zt_json_parse_object(const char *text, size_t len, zt_json_object *out);

/* The member named key, or NULL. */
const zt_json_member *zt_json_get(const zt_json_object *o, const char *key);

#endif
