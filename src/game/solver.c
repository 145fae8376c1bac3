#include "game/solver.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/fileio.h"

zt_status zt_solver_new(const zt_game *g, zt_solver **out)
{
    *out = NULL;
    if (!g->def || !g->def->solver)
        return zt_fail(ZT_ERR_UNSUPPORTED, "no exact solver for %s", g->title);
    return g->def->solver(g, out);
}

void zt_solver_free(zt_solver *sv)
{
    if (sv) sv->free(sv);
}

const char *const zt_band_names[ZT_BANDS] = {"opening", "middle", "end"};

/* ---- position files ---- */

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* The line starting at text[at] ends before text[*end] (its '\n' or the end
 * of the text); *after is where the next one starts. */
static void line_at(const zt_position_file *pf, size_t at, size_t *end, size_t *after)
{
    const char *nl = memchr(pf->text + at, '\n', pf->len - at);
    *end = nl ? (size_t)(nl - pf->text) : pf->len;
    *after = nl ? *end + 1 : pf->len;
}

/* A position line is one with something other than blanks, not a comment. */
static bool is_position(const char *line, size_t len)
{
    while (len > 0 && (is_blank(line[len - 1]) || line[len - 1] == '\r')) len--;
    size_t i = 0;
    while (i < len && is_blank(line[i])) i++;
    return i < len && line[i] != '#';
}

static zt_status take_text(const char *name, char *text, size_t len, zt_position_file *pf)
{
    memset(pf, 0, sizeof *pf);
    const char *nul = memchr(text, '\0', len);
    if (nul) {
        long line = 1;
        for (const char *p = text; p < nul; p++) line += *p == '\n';
        free(text);
        return zt_fail(ZT_ERR_INVALID, "%s:%ld: a NUL byte: not a text position file", name, line);
    }
    pf->name = zt_xstrdup(name);
    pf->text = text;
    pf->len = len;
    return ZT_OK;
}

zt_status zt_position_file_open(const char *path, zt_position_file *pf)
{
    memset(pf, 0, sizeof *pf);
    char *text;
    size_t len;
    ZT_TRY(zt_read_file(path, &text, &len));
    return take_text(path, text, len, pf);
}

zt_status zt_position_file_open_text(const char *name, const char *text, size_t len,
                                     zt_position_file *pf)
{
    char *copy = zt_xmalloc(len + 1);
    memcpy(copy, text, len);
    copy[len] = '\0';
    return take_text(name, copy, len, pf);
}

long zt_position_file_count(const zt_position_file *pf, long limit)
{
    long n = 0;
    for (size_t at = pf->next; at < pf->len && (limit <= 0 || n < limit);) {
        size_t end, after;
        line_at(pf, at, &end, &after);
        n += is_position(pf->text + at, end - at);
        at = after;
    }
    return n;
}

zt_status zt_position_moves(zt_solver *sv, const zt_position *pos, zt_solution *out,
                            bool *has_value)
{
    if (pos->has_moves) {
        *out = pos->expected;
        *has_value = pos->has_value;
        return ZT_OK;
    }
    *has_value = true;
    return sv->solve(sv, pos->state, true, out);
}

zt_status zt_position_file_next(zt_position_file *pf, zt_solver *sv, zt_position *pos, bool *got)
{
    *got = false;
    while (pf->next < pf->len) {
        size_t at = pf->next, end, after;
        line_at(pf, at, &end, &after);
        pf->next = after;
        pf->line_no++;
        if (!is_position(pf->text + at, end - at)) continue;
        pf->text[end] = '\0';
        if (end > at && pf->text[end - 1] == '\r') pf->text[end - 1] = '\0';
        pf->line = pf->text + at;
        memset(pos, 0, sizeof *pos); /* parsers set only what the line gives */
        zt_status st = sv->parse_line(sv, pf->text + at, pos);
        if (st != ZT_OK)
            return zt_fail(st, "%s:%ld: %s", pf->name, pf->line_no, zt_error_message());
        if (zt_game_is_terminal(sv->game, pos->state))
            return zt_fail(ZT_ERR_INVALID, "%s:%ld: position is already over", pf->name,
                           pf->line_no);
        *got = true;
        return ZT_OK;
    }
    return ZT_OK;
}

zt_status zt_position_file_each(const char *path, zt_solver *sv, const char *what,
                                zt_status (*each)(const zt_position *pos, void *ctx), void *ctx)
{
    zt_position_file pf;
    ZT_TRY(zt_position_file_open(path, &pf));
    zt_position *pos = zt_xmalloc(sizeof *pos);
    zt_status st;
    long n = 0;
    for (;;) {
        bool got;
        if ((st = zt_position_file_next(&pf, sv, pos, &got)) != ZT_OK || !got) break;
        if ((st = each(pos, ctx)) != ZT_OK) break;
        n++;
    }
    if (st == ZT_OK && n == 0)
        st = zt_fail(ZT_ERR_INVALID, "%s: %s holds no positions", what, path);
    free(pos);
    zt_position_file_close(&pf);
    return st;
}

void zt_position_file_close(zt_position_file *pf)
{
    free(pf->name);
    free(pf->text);
    memset(pf, 0, sizeof *pf);
}

int zt_fields_split(const char *line, zt_field *fields, int max)
{
    int n = 0;
    const char *p = line;
    for (;;) {
        while (is_blank(*p)) p++;
        if (!*p) return n;
        if (n == max) return max + 1;
        const char *start = p;
        while (*p && !is_blank(*p)) p++;
        fields[n++] = (zt_field){start, (size_t)(p - start)};
    }
}

zt_status zt_field_copy(zt_field f, const char *what, char *buf, size_t cap)
{
    if (f.len >= cap)
        return zt_fail(ZT_ERR_INVALID, "%s of %zu bytes is too long (at most %zu)", what, f.len,
                       cap - 1);
    memcpy(buf, f.text, f.len);
    buf[f.len] = '\0';
    return ZT_OK;
}
