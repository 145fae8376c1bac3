/* zeroth report RUN: RUN/report.html from RUN/metrics.jsonl, a page that
 * needs nothing but itself (inline CSS and SVG, no scripts, no fonts to
 * fetch): the loss terms, the strength (Elo against each arena opponent
 * with its 95 % interval, the solver test sets' mistake rate or optimal
 * share) and the self-play throughput, each against wall time and against
 * games played. Records of unknown kinds, unknown fields and a last line cut
 * short by a running trainer are passed over. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "core/alloc.h"
#include "core/fileio.h"

/* ---- metrics records ---- */

#define NAME_LEN 40

/* The numeric fields of run_layout's record kinds; others are passed over. */
static const char *const known_fields[] = {"t",
                                           "step",
                                           "games",
                                           "positions",
                                           "loss_policy",
                                           "loss_value",
                                           "loss_l2",
                                           "loss_total",
                                           "lr",
                                           "grad_norm",
                                           "games_per_s",
                                           "positions_per_s",
                                           "inferences_per_s",
                                           "replay_positions",
                                           "replay_bytes_per_position",
                                           "nncache_hit_rate",
                                           "wins",
                                           "draws",
                                           "losses",
                                           "score",
                                           "elo",
                                           "elo_lo",
                                           "elo_hi",
                                           "n",
                                           "m",
                                           "rate"};
#define NUM_FIELDS ((int)(sizeof known_fields / sizeof known_fields[0]))

typedef struct record {
    char kind[NAME_LEN];
    char opponent[NAME_LEN]; /* arena */
    char set[NAME_LEN];      /* positions */
    char metric[NAME_LEN];   /* positions: "mistakes" or "optimal" */
    double v[NUM_FIELDS];    /* NAN where absent */
} record;

static int field_index(const char *key)
{
    for (int i = 0; i < NUM_FIELDS; i++)
        if (strcmp(known_fields[i], key) == 0) return i;
    return -1;
}

static bool field(const record *r, const char *key, double *out)
{
    int i = field_index(key);
    if (i < 0 || isnan(r->v[i])) return false;
    *out = r->v[i];
    return true;
}

static const char *skip_ws(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') p++;
    return p;
}

/* A JSON string at p (after the quote is p[0] == '"'); the decoded text
 * (escapes reduced to their character, \u to '?') is cut to cap. Returns
 * the position after the closing quote, NULL if the string is unfinished. */
static const char *parse_string(const char *p, char *out, size_t cap)
{
    size_t n = 0;
    for (p++; *p && *p != '"'; p++) {
        char c = *p;
        if (c == '\\') {
            p++;
            if (!*p) return NULL;
            c = *p == 'n' ? '\n' : *p == 't' ? '\t' : *p == 'u' ? '?' : *p;
            if (*p == 'u')
                for (int k = 0; k < 4 && p[1]; k++) p++;
        }
        if (n + 1 < cap) out[n++] = c;
    }
    if (*p != '"') return NULL;
    if (cap) out[n] = '\0';
    return p + 1;
}

/* Skips any JSON value (nested objects and arrays included). */
static const char *skip_value(const char *p)
{
    char tmp[8];
    if (*p == '"') return parse_string(p, tmp, 0);
    if (*p == '{' || *p == '[') {
        int depth = 0;
        for (; *p; p++) {
            if (*p == '"') {
                p = parse_string(p, tmp, 0);
                if (!p) return NULL;
                p--;
            } else if (*p == '{' || *p == '[') {
                depth++;
            } else if (*p == '}' || *p == ']') {
                if (--depth == 0) return p + 1;
            }
        }
        return NULL;
    }
    while (*p && *p != ',' && *p != '}' && *p != ']' && *p != ' ') p++;
    return p;
}

/* One line: a flat JSON object. False for anything else (a truncated line). */
static bool parse_record(const char *line, record *r)
{
    memset(r, 0, sizeof *r);
    for (int i = 0; i < NUM_FIELDS; i++) r->v[i] = NAN;
    const char *p = skip_ws(line);
    if (*p++ != '{') return false;
    for (;;) {
        p = skip_ws(p);
        if (*p == '}') return true;
        char key[NAME_LEN];
        if (*p != '"' || !(p = parse_string(p, key, sizeof key))) return false;
        p = skip_ws(p);
        if (*p++ != ':') return false;
        p = skip_ws(p);
        if (*p == '"') {
            char text[NAME_LEN];
            if (!(p = parse_string(p, text, sizeof text))) return false;
            if (strcmp(key, "kind") == 0) memcpy(r->kind, text, sizeof text);
            if (strcmp(key, "opponent") == 0) memcpy(r->opponent, text, sizeof text);
            if (strcmp(key, "set") == 0) memcpy(r->set, text, sizeof text);
            if (strcmp(key, "metric") == 0) memcpy(r->metric, text, sizeof text);
        } else if (*p == '-' || (*p >= '0' && *p <= '9')) {
            char *end;
            double v = strtod(p, &end);
            if (end == p) return false;
            p = end;
            /* The first occurrence wins: an arena record repeats "games"
             * (the run's count first, then the match's own). */
            int k = field_index(key);
            if (k >= 0 && isfinite(v) && isnan(r->v[k])) r->v[k] = v;
        } else {
            if (!(p = skip_value(p))) return false;
        }
        p = skip_ws(p);
        if (*p == ',') {
            p++;
            continue;
        }
        if (*p == '}') return true;
        return false;
    }
}

/* ---- a growing text buffer ---- */

typedef struct sbuf {
    char *data;
    size_t len, cap;
} sbuf;

static void put(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(sbuf *b, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = b->cap - b->len;
        int n = vsnprintf(b->data ? b->data + b->len : NULL, room, fmt, ap);
        va_end(ap);
        ZT_ASSERT(n >= 0);
        if ((size_t)n < room) {
            b->len += (size_t)n;
            return;
        }
        b->cap = b->cap * 2 + (size_t)n + 4096;
        b->data = zt_xrealloc(b->data, b->cap);
    }
}

/* Text for HTML and SVG: &, <, >, " escaped. */
static void put_text(sbuf *b, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&':
            put(b, "&amp;");
            break;
        case '<':
            put(b, "&lt;");
            break;
        case '>':
            put(b, "&gt;");
            break;
        case '"':
            put(b, "&quot;");
            break;
        default:
            put(b, "%c", *s);
        }
    }
}

/* ---- series and charts ---- */

#define MAX_SERIES 10
#define MAX_POINTS 600 /* drawn per series; longer series are averaged in buckets */

typedef struct series {
    char name[2 * NAME_LEN];
    int n, cap;
    double *x, *y, *lo, *hi; /* lo/hi: an interval per point, or NULL */
} series;

typedef struct chart {
    const char *title, *y_label;
    bool from_zero; /* rates and sizes: the y axis starts at 0 */
    int nseries;
    series s[MAX_SERIES];
} chart;

static series *series_for(chart *c, const char *name)
{
    for (int i = 0; i < c->nseries; i++)
        if (strcmp(c->s[i].name, name) == 0) return &c->s[i];
    if (c->nseries == MAX_SERIES) return NULL;
    series *s = &c->s[c->nseries++];
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    return s;
}

static void series_add(series *s, double x, double y, bool interval, double lo, double hi)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->x = zt_xrealloc(s->x, (size_t)s->cap * sizeof(double));
        s->y = zt_xrealloc(s->y, (size_t)s->cap * sizeof(double));
        s->lo = zt_xrealloc(s->lo, (size_t)s->cap * sizeof(double));
        s->hi = zt_xrealloc(s->hi, (size_t)s->cap * sizeof(double));
    }
    s->x[s->n] = x;
    s->y[s->n] = y;
    s->lo[s->n] = interval ? lo : NAN;
    s->hi[s->n] = interval ? hi : NAN;
    s->n++;
}

static void chart_free(chart *c)
{
    for (int i = 0; i < c->nseries; i++) {
        free(c->s[i].x);
        free(c->s[i].y);
        free(c->s[i].lo);
        free(c->s[i].hi);
    }
    c->nseries = 0;
}

/* Long series (one loss record per learner step) are drawn as bucket means,
 * which is also the smoothing a noisy loss curve wants. */
static void downsample(series *s)
{
    if (s->n <= MAX_POINTS) return;
    int m = MAX_POINTS;
    for (int b = 0; b < m; b++) {
        int from = (int)((long)s->n * b / m), to = (int)((long)s->n * (b + 1) / m);
        double sx = 0, sy = 0;
        for (int i = from; i < to; i++) {
            sx += s->x[i];
            sy += s->y[i];
        }
        s->x[b] = sx / (to - from);
        s->y[b] = sy / (to - from);
        s->lo[b] = s->hi[b] = NAN;
    }
    s->n = m;
}

/* A step of 1, 2 or 5 times a power of ten giving about `want` ticks. */
static double nice_step(double span, int want)
{
    double raw = span / want, p = pow(10, floor(log10(raw))), f = raw / p;
    return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
}

static void fmt_num(char *buf, size_t cap, double v)
{
    double a = fabs(v);
    if (a >= 1e9)
        snprintf(buf, cap, "%.3gG", v / 1e9);
    else if (a >= 1e6)
        snprintf(buf, cap, "%.3gM", v / 1e6);
    else if (a >= 1e4)
        snprintf(buf, cap, "%.3gk", v / 1e3);
    else
        snprintf(buf, cap, "%.4g", v);
}

static const char *const palette[MAX_SERIES] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                                "#9467bd", "#8c564b", "#e377c2", "#17becf",
                                                "#7f7f7f", "#bcbd22"};

enum { CW = 560, CH = 300, ML = 62, MR = 14, MB = 44, TITLE_W = 165, ROW_H = 14 };

/* Legend entries sit in the top margin, right of the title, wrapping into
 * rows, so they never cover a curve. Widths are estimated (about 6 px per
 * character at the legend's font size); returns the top margin needed. */
static int legend_layout(const chart *c, char labels[][2 * NAME_LEN + 40], int *lx, int *ly)
{
    int x = ML + TITLE_W, row = 0;
    for (int k = 0; k < c->nseries; k++) {
        const series *s = &c->s[k];
        char num[32] = "";
        if (s->n > 0) fmt_num(num, sizeof num, s->y[s->n - 1]);
        snprintf(labels[k], 2 * NAME_LEN + 40, "%s (%s)", s->name, num);
        int w = 18 + 6 * (int)strlen(labels[k]);
        if (x + w > CW - MR && x > ML) {
            row++;
            x = ML;
        }
        lx[k] = x;
        ly[k] = 18 + ROW_H * row;
        x += w + 8;
    }
    return 18 + ROW_H * row + 12;
}

/* x_scale divides x values for display (wall time in minutes or hours). */
static void render_chart(sbuf *b, const chart *c, const char *x_label, double x_scale)
{
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    int points = 0;
    for (int k = 0; k < c->nseries; k++) {
        const series *s = &c->s[k];
        for (int i = 0; i < s->n; i++) {
            double x = s->x[i] / x_scale;
            x0 = fmin(x0, x), x1 = fmax(x1, x);
            y0 = fmin(y0, s->y[i]), y1 = fmax(y1, s->y[i]);
            if (!isnan(s->lo[i])) y0 = fmin(y0, s->lo[i]), y1 = fmax(y1, s->hi[i]);
            points++;
        }
    }
    put(b, "<figure><svg viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\">", CW, CH,
        CW, CH);
    put(b, "<text class=\"t\" x=\"%d\" y=\"18\">", ML);
    put_text(b, c->title);
    put(b, "</text>");
    if (points == 0) {
        put(b, "<text class=\"n\" x=\"%d\" y=\"%d\">no records yet</text></svg></figure>\n", CW / 2,
            CH / 2);
        return;
    }
    if (c->from_zero) y0 = fmin(y0, 0);
    if (x1 - x0 < 1e-12) x0 -= 0.5, x1 += 0.5;
    if (y1 - y0 < 1e-12) y0 -= fabs(y0) * 0.1 + 0.5, y1 += fabs(y1) * 0.1 + 0.5;
    double pad = (y1 - y0) * 0.05;
    y0 -= c->from_zero && y0 == 0 ? 0 : pad, y1 += pad;
    double ys = nice_step(y1 - y0, 5), xs = nice_step(x1 - x0, 6);
    char labels[MAX_SERIES][2 * NAME_LEN + 40];
    int lx[MAX_SERIES], ly[MAX_SERIES];
    int top = legend_layout(c, labels, lx, ly);
    int pw = CW - ML - MR, ph = CH - top - MB;
#define PX(v) (ML + ((v)-x0) / (x1 - x0) * pw)
#define PY(v) (top + (y1 - (v)) / (y1 - y0) * ph)
    put(b, "<rect class=\"f\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>", ML, top, pw, ph);
    char num[32];
    for (double v = ceil(y0 / ys) * ys; v <= y1 + 1e-9 * ys; v += ys) {
        fmt_num(num, sizeof num, fabs(v) < 1e-9 * ys ? 0 : v);
        put(b, "<line class=\"g\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\"/>", ML, ML + pw,
            PY(v), PY(v));
        put(b, "<text class=\"yl\" x=\"%d\" y=\"%.1f\">%s</text>", ML - 5, PY(v) + 4, num);
    }
    for (double v = ceil(x0 / xs) * xs; v <= x1 + 1e-9 * xs; v += xs) {
        fmt_num(num, sizeof num, fabs(v) < 1e-9 * xs ? 0 : v);
        put(b, "<line class=\"g\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\"/>", PX(v), PX(v), top,
            top + ph);
        put(b, "<text class=\"xl\" x=\"%.1f\" y=\"%d\">%s</text>", PX(v), top + ph + 16, num);
    }
    put(b, "<text class=\"ax\" x=\"%d\" y=\"%d\">", ML + pw / 2, CH - 6);
    put_text(b, x_label);
    put(b, "</text><text class=\"ax\" transform=\"translate(14 %d) rotate(-90)\">", top + ph / 2);
    put_text(b, c->y_label);
    put(b, "</text>");
    for (int k = 0; k < c->nseries; k++) {
        const series *s = &c->s[k];
        const char *col = palette[k];
        for (int i = 0; i < s->n; i++)
            if (!isnan(s->lo[i]))
                put(b,
                    "<line stroke=\"%s\" stroke-opacity=\"0.45\" stroke-width=\"3\" x1=\"%.1f\" "
                    "x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>",
                    col, PX(s->x[i] / x_scale), PX(s->x[i] / x_scale), PY(s->lo[i]), PY(s->hi[i]));
        if (s->n > 1) {
            put(b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.6\" points=\"", col);
            for (int i = 0; i < s->n; i++) put(b, "%.1f,%.1f ", PX(s->x[i] / x_scale), PY(s->y[i]));
            put(b, "\"/>");
        }
        if (s->n <= 60)
            for (int i = 0; i < s->n; i++)
                put(b, "<circle fill=\"%s\" r=\"2.6\" cx=\"%.1f\" cy=\"%.1f\"/>", col,
                    PX(s->x[i] / x_scale), PY(s->y[i]));
        put(b, "<rect fill=\"%s\" x=\"%d\" y=\"%d\" width=\"12\" height=\"3\"/>", col, lx[k],
            ly[k] - 4);
        put(b, "<text class=\"lg\" x=\"%d\" y=\"%d\">", lx[k] + 16, ly[k]);
        put_text(b, labels[k]);
        put(b, "</text>");
    }
#undef PX
#undef PY
    put(b, "</svg></figure>\n");
}

/* ---- what the page shows ---- */

typedef enum xaxis { X_TIME, X_GAMES } xaxis;

/* Fills chart c from the records of `kind`: one series per y field, or per
 * value of the group field (arena opponent, position set). */
static void collect(chart *c, const record *recs, int n, xaxis xa, const char *kind,
                    const char *const *fields, const char *const *labels, double y_scale,
                    const char *group, const char *lo_field, const char *hi_field)
{
    for (int i = 0; i < n; i++) {
        const record *r = &recs[i];
        double x;
        if (strcmp(r->kind, kind) != 0 || !field(r, xa == X_TIME ? "t" : "games", &x)) continue;
        for (int f = 0; fields[f]; f++) {
            double y, lo = NAN, hi = NAN;
            if (!field(r, fields[f], &y)) continue;
            bool interval = lo_field && field(r, lo_field, &lo) && field(r, hi_field, &hi);
            char name[2 * NAME_LEN];
            if (group && strcmp(group, "opponent") == 0)
                snprintf(name, sizeof name, "vs %s", r->opponent[0] ? r->opponent : "?");
            else if (group)
                snprintf(name, sizeof name, "%s %s", r->set[0] ? r->set : "?",
                         r->metric[0] ? r->metric : "");
            else
                snprintf(name, sizeof name, "%s", labels[f]);
            series *s = series_for(c, name);
            if (s) series_add(s, x, y * y_scale, interval, lo * y_scale, hi * y_scale);
        }
    }
    for (int k = 0; k < c->nseries; k++) downsample(&c->s[k]);
}

typedef struct panel {
    const char *title, *y_label, *kind;
    const char *fields[6], *labels[6];
    double y_scale;
    const char *group, *lo, *hi;
    bool from_zero;
} panel;

static const panel panels[] = {
    {"Loss terms",
     "loss",
     "train",
     {"loss_total", "loss_policy", "loss_value", "loss_l2", NULL},
     {"total", "policy", "value", "L2", NULL},
     1,
     NULL,
     NULL,
     NULL,
     false},
    {"Elo against arena opponents (95 % interval)",
     "Elo",
     "arena",
     {"elo", NULL},
     {NULL},
     1,
     "opponent",
     "elo_lo",
     "elo_hi",
     false},
    {"Solver test sets: mistake rate or optimal share",
     "%",
     "positions",
     {"rate", NULL},
     {NULL},
     100,
     "set",
     NULL,
     NULL,
     true},
    {"Self-play positions per second",
     "positions/s",
     "selfplay",
     {"positions_per_s", NULL},
     {"positions/s", NULL},
     1,
     NULL,
     NULL,
     NULL,
     true},
    {"Self-play games per second",
     "games/s",
     "selfplay",
     {"games_per_s", NULL},
     {"games/s", NULL},
     1,
     NULL,
     NULL,
     NULL,
     true},
    {"Network inferences per second",
     "inferences/s",
     "selfplay",
     {"inferences_per_s", NULL},
     {"inferences/s", NULL},
     1,
     NULL,
     NULL,
     NULL,
     true},
    {"Replay buffer",
     "positions",
     "selfplay",
     {"replay_positions", NULL},
     {"positions", NULL},
     1,
     NULL,
     NULL,
     NULL,
     true},
};

static void latest_summary(sbuf *b, const record *recs, int n)
{
    double t = 0, step = 0, games = 0, positions = 0;
    for (int i = 0; i < n; i++) {
        double v;
        if (field(&recs[i], "t", &v) && v > t) t = v;
        if (field(&recs[i], "step", &v) && v > step) step = v;
        if (field(&recs[i], "games", &v) && v > games) games = v;
        if (field(&recs[i], "positions", &v) && v > positions) positions = v;
    }
    put(b, "<table><tr><th>wall time</th><th>learner steps</th><th>games</th><th>positions</th>"
           "<th>records</th></tr>");
    put(b, "<tr><td>%.0f s (%.2f h)</td><td>%.0f</td><td>%.0f</td><td>%.0f</td><td>%d</td></tr>", t,
        t / 3600, step, games, positions, n);
    put(b, "</table>\n");
    /* The latest result of each arena opponent and position set. */
    put(b, "<table><tr><th>latest strength</th><th>result</th><th>at games</th></tr>");
    int shown = 0;
    for (int i = n - 1; i >= 0 && shown < 12; i--) {
        const record *r = &recs[i];
        bool arena = strcmp(r->kind, "arena") == 0, pos = strcmp(r->kind, "positions") == 0;
        if (!arena && !pos) continue;
        bool seen = false;
        for (int j = i + 1; j < n && !seen; j++)
            seen = strcmp(recs[j].kind, r->kind) == 0 &&
                   strcmp(recs[j].opponent, r->opponent) == 0 && strcmp(recs[j].set, r->set) == 0;
        if (seen) continue;
        double g = 0, v, lo, hi, nn, m;
        field(r, "games", &g);
        put(b, "<tr><td>");
        if (arena) {
            put(b, "vs ");
            put_text(b, r->opponent);
            put(b, "</td><td>");
            if (field(r, "elo", &v)) put(b, "Elo %+.0f", v);
            if (field(r, "elo_lo", &lo) && field(r, "elo_hi", &hi))
                put(b, " [%+.0f, %+.0f]", lo, hi);
            if (field(r, "score", &v)) put(b, ", score %.3f", v);
        } else {
            put_text(b, r->set);
            put(b, "</td><td>");
            put_text(b, r->metric);
            if (field(r, "n", &nn) && field(r, "m", &m)) put(b, " %.0f/%.0f", nn, m);
            if (field(r, "rate", &v)) put(b, " (%.2f %%)", 100 * v);
        }
        put(b, "</td><td>%.0f</td></tr>", g);
        shown++;
    }
    if (!shown) put(b, "<tr><td colspan=\"3\">no arena or position-set records yet</td></tr>");
    put(b, "</table>\n");
}

static const char *const page_css =
    "body{font-family:system-ui,-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;margin:24px;"
    "color:#222;background:#fafafa}"
    "h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:26px 0 8px}"
    "p.m{color:#666;margin:0 0 14px;font-size:13px}"
    "table{border-collapse:collapse;margin:8px 0 12px;font-size:13px;background:#fff}"
    "th,td{border:1px solid #ddd;padding:4px 10px;text-align:left}th{background:#f0f0f0}"
    ".row{display:flex;flex-wrap:wrap;gap:12px}"
    "figure{margin:0;background:#fff;border:1px solid #ddd;border-radius:4px}"
    "svg text{font-family:inherit;font-size:11px;fill:#333}"
    "svg .t{font-size:13px;font-weight:600}svg .n{fill:#999;text-anchor:middle}"
    "svg .yl{text-anchor:end}svg .xl{text-anchor:middle}svg .ax{text-anchor:middle;fill:#555}"
    "svg .lg{font-size:10.5px}svg .g{stroke:#e6e6e6;stroke-width:1}"
    "svg .f{fill:#fff;stroke:#bbb}"
    "pre{background:#fff;border:1px solid #ddd;padding:8px;font-size:12px;overflow:auto}";

static zt_status write_report(const char *run, char *out_path, size_t cap, int *nrecords,
                              int *skipped)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/metrics.jsonl", run);
    char *text;
    size_t len;
    zt_status st = zt_read_file(path, &text, &len);
    if (st != ZT_OK) return zt_fail(st, "no metrics in run '%s': %s", run, zt_error_message());
    int n = 0, cap_recs = 0, bad = 0;
    record *recs = NULL;
    for (char *line = text; line && *line;) {
        char *next = strchr(line, '\n');
        if (next) *next++ = '\0';
        if (*skip_ws(line)) {
            if (n == cap_recs) {
                cap_recs = cap_recs ? 2 * cap_recs : 256;
                recs = zt_xrealloc(recs, (size_t)cap_recs * sizeof *recs);
            }
            if (parse_record(line, &recs[n]))
                n++;
            else
                bad++;
        }
        line = next;
    }
    free(text);

    double tmax = 0;
    for (int i = 0; i < n; i++) {
        double v;
        if (field(&recs[i], "t", &v) && v > tmax) tmax = v;
    }
    double tscale = tmax < 180 ? 1 : tmax < 3 * 3600 ? 60 : 3600;
    const char *tlabel = tscale == 1    ? "wall time (s)"
                         : tscale == 60 ? "wall time (min)"
                                        : "wall time (h)";

    sbuf b = {0};
    char stamp[64];
    time_t now = time(NULL);
    struct tm tm;
    strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", localtime_r(&now, &tm));
    put(&b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Zeroth run ");
    put_text(&b, run);
    put(&b, "</title><style>%s</style></head><body>\n<h1>Zeroth run ", page_css);
    put_text(&b, run);
    put(&b, "</h1><p class=\"m\">report written %s from metrics.jsonl (%d records", stamp, n);
    if (bad) put(&b, ", %d unreadable lines skipped", bad);
    put(&b, ")</p>\n");
    latest_summary(&b, recs, n);
    for (size_t p = 0; p < sizeof panels / sizeof panels[0]; p++) {
        const panel *pn = &panels[p];
        put(&b, "<h2>");
        put_text(&b, pn->title);
        put(&b, "</h2><div class=\"row\">\n");
        for (int xa = X_TIME; xa <= X_GAMES; xa++) {
            chart c = {.title = xa == X_TIME ? "against wall time" : "against games played",
                       .y_label = pn->y_label,
                       .from_zero = pn->from_zero};
            collect(&c, recs, n, (xaxis)xa, pn->kind, pn->fields, pn->labels, pn->y_scale,
                    pn->group, pn->lo, pn->hi);
            render_chart(&b, &c, xa == X_TIME ? tlabel : "games played", xa == X_TIME ? tscale : 1);
            chart_free(&c);
        }
        put(&b, "</div>\n");
    }
    /* The run's configuration, when there is one. */
    snprintf(path, sizeof path, "%s/config.ini", run);
    if (zt_read_file(path, &text, &len) == ZT_OK) {
        put(&b, "<h2>Configuration</h2><pre>");
        put_text(&b, text);
        put(&b, "</pre>\n");
        free(text);
    }
    put(&b, "</body></html>\n");
    free(recs);

    snprintf(out_path, cap, "%s/report.html", run);
    st = zt_write_file_atomic(out_path, b.data, b.len);
    free(b.data);
    *nrecords = n;
    *skipped = bad;
    return st;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: zeroth report RUN\n\n"
               "Writes RUN/report.html: charts of the loss terms, the strength (Elo against\n"
               "arena opponents, solver test sets) and the self-play throughput against wall\n"
               "time and games, from RUN/metrics.jsonl. The page is self-contained (inline\n"
               "CSS and SVG) and opens in any browser.\n");
}

int zt_cmd_report(int argc, char **argv)
{
    const char *run = NULL;
    for (int i = 1; i < argc; i++) {
        if (zt_cli_is_help(argv[i])) {
            usage(stdout);
            return 0;
        }
        if (argv[i][0] == '-') return zt_cli_error("report: unknown flag '%s'", argv[i]);
        if (run) return zt_cli_error("report: unexpected argument '%s'", argv[i]);
        run = argv[i];
    }
    if (!run) {
        usage(stderr);
        return 2;
    }
    char out[4200];
    int n = 0, bad = 0;
    zt_status st = write_report(run, out, sizeof out, &n, &bad);
    if (st != ZT_OK) return zt_cli_fail(st);
    printf("%s (%d records%s)\n", out, n, bad ? ", unreadable lines skipped" : "");
    return 0;
}
