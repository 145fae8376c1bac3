/* zeroth report RUN: RUN/report.html from RUN/metrics.jsonl, a page that
 * needs nothing but itself (inline CSS and SVG, no scripts, no fonts to
 * fetch): first a summary table (totals, the latest strength against each
 * arena opponent and test set, the latest loss and throughput, also
 * printed on stdout), then the curves in the order a user looks for them:
 * strength (Elo against each arena opponent with its 95 % interval, the
 * solver test sets' mistake rate or optimal share), the loss terms, the
 * self-play throughput, each against wall time and against games played.
 * Axis ticks come from core/ticks.h (distinct, rounded labels); a chart
 * with a single record says so in words. Records of unknown kinds, unknown
 * fields and a last line cut short by a running trainer are passed over. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "core/alloc.h"
#include "core/fileio.h"
#include "core/progress.h"
#include "core/ticks.h"
#include "serve/json.h"

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
                                           "actor_wait",
                                           "learner_wait",
                                           "train_share",
                                           "sample_share",
                                           "publish_share",
                                           "checkpoint_share",
                                           "arena_share",
                                           "wait_share",
                                           "wins",
                                           "draws",
                                           "losses",
                                           "score",
                                           "elo",
                                           "elo_lo",
                                           "elo_hi",
                                           "points",
                                           "points_lo",
                                           "points_hi",
                                           "n",
                                           "m",
                                           "rate",
                                           "mean",
                                           "mean_lo",
                                           "mean_hi",
                                           "ci95",
                                           "reanalysed",
                                           "policy_l1",
                                           "busy",
                                           "distinct_position_share",
                                           "distinct_game_share"};
#define NUM_FIELDS ((int)(sizeof known_fields / sizeof known_fields[0]))

typedef struct record {
    char kind[NAME_LEN];
    char opponent[NAME_LEN]; /* arena; a score record's player */
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
            if (strcmp(key, "opponent") == 0 || strcmp(key, "player") == 0)
                memcpy(r->opponent, text, sizeof text);
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
            if (k >= 0 && isfinite(v) && isnan(r->v[k])) r->v[k] = v + 0.0; /* no -0 */
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

/* ---- the page's text: serve/json.h's growing buffer (zt_json_printf) ---- */

/* Text for HTML and SVG: &, <, >, " escaped. */
static void put_text(zt_json_buf *b, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&':
            zt_json_printf(b, "&amp;");
            break;
        case '<':
            zt_json_printf(b, "&lt;");
            break;
        case '>':
            zt_json_printf(b, "&gt;");
            break;
        case '"':
            zt_json_printf(b, "&quot;");
            break;
        default:
            zt_json_printf(b, "%c", *s);
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
        if (s->n > 0) zt_ticks_value(s->y[s->n - 1], num, sizeof num);
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

/* The x axis: its label, and the unit a single point's position is told in. */
typedef struct xaxis_text {
    const char *label; /* "wall time (min)" */
    const char *unit;  /* "min" */
    double scale;      /* x values are divided by it for display */
} xaxis_text;

/* A chart whose series have one point each draws no curve: a short figure
 * says so and gives the values, no empty frame. */
static void render_single(zt_json_buf *b, const chart *c, const xaxis_text *xt)
{
    double x = NAN;
    int lines = 0;
    for (int k = 0; k < c->nseries; k++) {
        if (c->s[k].n > 0 && isnan(x)) x = c->s[k].x[0] / xt->scale;
        lines += c->s[k].n > 0;
    }
    int h = 58 + 16 * lines;
    zt_json_printf(b, "<figure><svg viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\">",
                   CW, h, CW, h);
    zt_json_printf(b, "<text class=\"t\" x=\"%d\" y=\"18\">", ML);
    put_text(b, c->title);
    zt_json_printf(b, "</text>");
    char at[32];
    if (xt->scale == 1 && strcmp(xt->unit, "games") == 0)
        snprintf(at, sizeof at, "%.0f", round(x) + 0.0);
    else
        snprintf(at, sizeof at, "%.1f", x + 0.0);
    zt_json_printf(
        b, "<text class=\"n\" x=\"%d\" y=\"42\">one record so far (at %s %s): no curve yet</text>",
        CW / 2, at, xt->unit);
    int line = 0;
    for (int k = 0; k < c->nseries; k++) {
        const series *s = &c->s[k];
        if (s->n == 0) continue;
        char v[32], lo[32], hi[32];
        zt_ticks_value(s->y[0], v, sizeof v);
        zt_json_printf(b, "<text class=\"v\" x=\"%d\" y=\"%d\" fill=\"%s\">", CW / 2,
                       62 + 16 * line++, palette[k]);
        put_text(b, s->name);
        zt_json_printf(b, ": %s", v);
        if (!isnan(s->lo[0])) {
            zt_ticks_value(s->lo[0], lo, sizeof lo);
            zt_ticks_value(s->hi[0], hi, sizeof hi);
            zt_json_printf(b, " [%s, %s]", lo, hi);
        }
        zt_json_printf(b, "</text>");
    }
    zt_json_printf(b, "</svg></figure>\n");
}

static void render_chart(zt_json_buf *b, const chart *c, const xaxis_text *xt)
{
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    int points = 0, curves = 0;
    for (int k = 0; k < c->nseries; k++) {
        const series *s = &c->s[k];
        curves += s->n > 1;
        for (int i = 0; i < s->n; i++) {
            double x = s->x[i] / xt->scale;
            x0 = fmin(x0, x), x1 = fmax(x1, x);
            y0 = fmin(y0, s->y[i]), y1 = fmax(y1, s->y[i]);
            if (!isnan(s->lo[i])) y0 = fmin(y0, s->lo[i]), y1 = fmax(y1, s->hi[i]);
            points++;
        }
    }
    if (curves == 0 && points > 0) {
        render_single(b, c, xt);
        return;
    }
    int height = points == 0 ? 60 : CH;
    zt_json_printf(b, "<figure><svg viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\">",
                   CW, height, CW, height);
    zt_json_printf(b, "<text class=\"t\" x=\"%d\" y=\"18\">", ML);
    put_text(b, c->title);
    zt_json_printf(b, "</text>");
    if (points == 0) {
        zt_json_printf(b,
                       "<text class=\"n\" x=\"%d\" y=\"42\">no records yet</text></svg></figure>\n",
                       CW / 2);
        return;
    }
    if (c->from_zero) y0 = fmin(y0, 0);
    zt_ticks_span(&x0, &x1);
    zt_ticks_span(&y0, &y1);
    double pad = (y1 - y0) * 0.05;
    y0 -= c->from_zero && y0 == 0 ? 0 : pad, y1 += pad;
    zt_ticks yt, xtk;
    zt_ticks_make(y0, y1, 5, &yt);
    zt_ticks_make(x0, x1, 6, &xtk);
    char labels[MAX_SERIES][2 * NAME_LEN + 40];
    int lx[MAX_SERIES], ly[MAX_SERIES];
    int top = legend_layout(c, labels, lx, ly);
    int pw = CW - ML - MR, ph = CH - top - MB;
#define PX(v) (ML + ((v)-x0) / (x1 - x0) * pw)
#define PY(v) (top + (y1 - (v)) / (y1 - y0) * ph)
    zt_json_printf(b, "<rect class=\"f\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>", ML, top,
                   pw, ph);
    for (int i = 0; i < yt.n; i++) {
        double v = yt.value[i];
        zt_json_printf(b, "<line class=\"g\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\"/>", ML,
                       ML + pw, PY(v), PY(v));
        zt_json_printf(b, "<text class=\"yl\" x=\"%d\" y=\"%.1f\">%s</text>", ML - 5, PY(v) + 4,
                       yt.label[i]);
    }
    for (int i = 0; i < xtk.n; i++) {
        double v = xtk.value[i];
        zt_json_printf(b, "<line class=\"g\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\"/>", PX(v),
                       PX(v), top, top + ph);
        zt_json_printf(b, "<text class=\"xl\" x=\"%.1f\" y=\"%d\">%s</text>", PX(v), top + ph + 16,
                       xtk.label[i]);
    }
    zt_json_printf(b, "<text class=\"ax\" x=\"%d\" y=\"%d\">", ML + pw / 2, CH - 6);
    put_text(b, xt->label);
    zt_json_printf(b, "</text><text class=\"ax\" transform=\"translate(14 %d) rotate(-90)\">",
                   top + ph / 2);
    put_text(b, c->y_label);
    zt_json_printf(b, "</text>");
    for (int k = 0; k < c->nseries; k++) {
        const series *s = &c->s[k];
        const char *col = palette[k];
        for (int i = 0; i < s->n; i++)
            if (!isnan(s->lo[i]))
                zt_json_printf(
                    b,
                    "<line stroke=\"%s\" stroke-opacity=\"0.45\" stroke-width=\"3\" x1=\"%.1f\" "
                    "x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>",
                    col, PX(s->x[i] / xt->scale), PX(s->x[i] / xt->scale), PY(s->lo[i]),
                    PY(s->hi[i]));
        if (s->n > 1) {
            zt_json_printf(
                b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.6\" points=\"", col);
            for (int i = 0; i < s->n; i++)
                zt_json_printf(b, "%s%.1f,%.1f", i ? " " : "", PX(s->x[i] / xt->scale),
                               PY(s->y[i]));
            zt_json_printf(b, "\"/>");
        }
        if (s->n <= 60)
            for (int i = 0; i < s->n; i++)
                zt_json_printf(b, "<circle fill=\"%s\" r=\"2.6\" cx=\"%.1f\" cy=\"%.1f\"/>", col,
                               PX(s->x[i] / xt->scale), PY(s->y[i]));
        zt_json_printf(b, "<rect fill=\"%s\" x=\"%d\" y=\"%d\" width=\"12\" height=\"3\"/>", col,
                       lx[k], ly[k] - 4);
        zt_json_printf(b, "<text class=\"lg\" x=\"%d\" y=\"%d\">", lx[k] + 16, ly[k]);
        put_text(b, labels[k]);
        zt_json_printf(b, "</text>");
    }
#undef PX
#undef PY
    zt_json_printf(b, "</svg></figure>\n");
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
            else if (group && strcmp(group, "player") == 0)
                snprintf(name, sizeof name, "%s", r->opponent[0] ? r->opponent : "?");
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
    const char *fields[8], *labels[8];
    double y_scale;
    const char *group, *lo, *hi;
    bool from_zero;
    bool only_with_data; /* left out of runs without such records */
} panel;

/* In the order a user looks for them: strength, then loss, then throughput. */
static const panel panels[] = {
    {"Strength: Elo against arena opponents (95 % interval)",
     "Elo",
     "arena",
     {"elo", NULL},
     {NULL},
     1,
     "opponent",
     "elo_lo",
     "elo_hi",
     false,
     false},
    {"Strength: mean score (one-player games, 95 % interval; baselines once per process)",
     "score",
     "score",
     {"mean", NULL},
     {NULL},
     1,
     "player",
     "mean_lo",
     "mean_hi",
     true,
     true},
    /* Games worth more than one point (backgammon): the arena records its
     * points per game only there. */
    {"Strength: points per game against arena opponents (95 % interval)",
     "points per game",
     "arena",
     {"points", NULL},
     {NULL},
     1,
     "opponent",
     "points_lo",
     "points_hi",
     false,
     true},
    {"Strength: solver test sets (mistake rate or optimal share)",
     "%",
     "positions",
     {"rate", NULL},
     {NULL},
     100,
     "set",
     NULL,
     NULL,
     true,
     false},
    {"Loss terms",
     "loss",
     "train",
     {"loss_total", "loss_policy", "loss_value", "loss_l2", NULL},
     {"total", "policy", "value", "L2", NULL},
     1,
     NULL,
     NULL,
     NULL,
     false,
     false},
    {"Self-play positions per second",
     "positions/s",
     "selfplay",
     {"positions_per_s", NULL},
     {"positions/s", NULL},
     1,
     NULL,
     NULL,
     NULL,
     true,
     false},
    {"Self-play games per second",
     "games/s",
     "selfplay",
     {"games_per_s", NULL},
     {"games/s", NULL},
     1,
     NULL,
     NULL,
     NULL,
     true,
     false},
    {"Network inferences per second",
     "inferences/s",
     "selfplay",
     {"inferences_per_s", NULL},
     {"inferences/s", NULL},
     1,
     NULL,
     NULL,
     NULL,
     true,
     false},
    /* Concurrent runs: which side waits for the other (the one near 0 %
     * limits the run). */
    {"Waiting: share of each side's time spent waiting for the other",
     "%",
     "selfplay",
     {"actor_wait", "learner_wait", NULL},
     {"actors", "learner", NULL},
     100,
     NULL,
     NULL,
     NULL,
     true,
     true},
    {"Learner thread: share of its time in each part",
     "%",
     "learner_time",
     {"train_share", "sample_share", "publish_share", "checkpoint_share", "arena_share",
      "wait_share", NULL},
     {"training steps", "waiting for batches", "publishing", "checkpoints", "arenas",
      "waiting for games", NULL},
     100,
     NULL,
     NULL,
     NULL,
     true,
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
     true,
     false},
    /* At each checkpoint: self-play that repeats its lines drives these
     * down (docs/connect4-recipes.md, candidate 15). */
    {"Replay diversity: distinct share of the sampling window (and its drawn games)",
     "%",
     "replay_diversity",
     {"distinct_position_share", "distinct_game_share", "draw_share", NULL},
     {"positions", "games", "drawn games", NULL},
     100,
     NULL,
     NULL,
     NULL,
     true,
     true},
    {"Reanalyse: positions refreshed per second",
     "positions/s",
     "reanalyse",
     {"rate", NULL},
     {"positions/s", NULL},
     1,
     NULL,
     NULL,
     NULL,
     true,
     true},
    {"Reanalyse: mean L1 change of the stored policies",
     "L1",
     "reanalyse",
     {"policy_l1", NULL},
     {"L1", NULL},
     1,
     NULL,
     NULL,
     NULL,
     true,
     true},
};

/* ---- the summary: one table, on the page and on stdout ---- */

#define MAX_ROWS 16
#define CELL 160

typedef struct summary {
    double t, step, games, positions; /* the largest of each over all records */
    int records;
    int nrows;
    char what[MAX_ROWS][CELL], result[MAX_ROWS][CELL], at[MAX_ROWS][32];
} summary;

/* Whole numbers as the summary shows them: never "-0". */
static double whole(double x)
{
    return round(x) + 0.0;
}

static void add_row(summary *sm, const record *r, const char *what_fmt, const char *what,
                    const char *result)
{
    if (sm->nrows == MAX_ROWS) return;
    int k = sm->nrows++;
    snprintf(sm->what[k], CELL, what_fmt, what);
    snprintf(sm->result[k], CELL, "%s", result);
    double g;
    if (field(r, "games", &g))
        snprintf(sm->at[k], sizeof sm->at[k], "%.0f", whole(g));
    else
        snprintf(sm->at[k], sizeof sm->at[k], "-");
}

/* Appends ", <before><v><after>" (the first without the comma) when the
 * field is there. */
static void add_value(char *buf, size_t cap, const record *r, const char *key, const char *before,
                      double scale, const char *after)
{
    double v;
    if (!field(r, key, &v)) return;
    char num[32];
    zt_ticks_value(v * scale, num, sizeof num);
    size_t n = strlen(buf);
    snprintf(buf + n, cap - n, "%s%s%s%s", n ? ", " : "", before, num, after);
}

static void make_summary(const record *recs, int n, summary *sm)
{
    memset(sm, 0, sizeof *sm);
    sm->records = n;
    for (int i = 0; i < n; i++) {
        double v;
        if (field(&recs[i], "t", &v) && v > sm->t) sm->t = v;
        if (field(&recs[i], "step", &v) && v > sm->step) sm->step = v;
        if (field(&recs[i], "games", &v) && v > sm->games) sm->games = v;
        if (field(&recs[i], "positions", &v) && v > sm->positions) sm->positions = v;
    }
    /* The latest result of each arena opponent and position set, in the
     * order they first appear; then the latest loss and throughput. */
    for (int i = 0; i < n; i++) {
        const record *r = &recs[i];
        bool arena = strcmp(r->kind, "arena") == 0, pos = strcmp(r->kind, "positions") == 0;
        bool score = strcmp(r->kind, "score") == 0;
        if (!arena && !pos && !score) continue;
        bool earlier = false;
        for (int j = 0; j < i && !earlier; j++)
            earlier = strcmp(recs[j].kind, r->kind) == 0 &&
                      strcmp(recs[j].opponent, r->opponent) == 0 &&
                      strcmp(recs[j].set, r->set) == 0;
        if (earlier) continue;
        const record *last = r;
        for (int j = i + 1; j < n; j++)
            if (strcmp(recs[j].kind, r->kind) == 0 && strcmp(recs[j].opponent, r->opponent) == 0 &&
                strcmp(recs[j].set, r->set) == 0)
                last = &recs[j];
        char res[CELL] = "";
        size_t used = 0;
        double v, lo, hi, w, d, l, nn, m;
        if (score) {
            if (field(last, "mean", &v))
                used += (size_t)snprintf(res + used, CELL - used, "mean score %.0f", whole(v));
            if (field(last, "ci95", &w) && used < CELL)
                snprintf(res + used, CELL - used, " +- %.0f", whole(w));
            add_row(sm, last, "%s", last->opponent[0] ? last->opponent : "?", res);
        } else if (arena) {
            if (field(last, "elo", &v))
                used += (size_t)snprintf(res + used, CELL - used, "Elo %+.0f", whole(v));
            if (field(last, "elo_lo", &lo) && field(last, "elo_hi", &hi) && used < CELL)
                used += (size_t)snprintf(res + used, CELL - used, " [%+.0f, %+.0f]", whole(lo),
                                         whole(hi));
            if (field(last, "score", &v) && used < CELL)
                used +=
                    (size_t)snprintf(res + used, CELL - used, "%sscore %.3f", used ? ", " : "", v);
            if (field(last, "wins", &w) && field(last, "draws", &d) && field(last, "losses", &l) &&
                used < CELL)
                used += (size_t)snprintf(res + used, CELL - used, "%sW-D-L %.0f-%.0f-%.0f",
                                         used ? ", " : "", whole(w), whole(d), whole(l));
            if (field(last, "points", &v) && field(last, "points_lo", &lo) &&
                field(last, "points_hi", &hi) && used < CELL)
                snprintf(res + used, CELL - used, ", %+.3f [%+.3f, %+.3f] points per game",
                         v + 0.0, lo + 0.0, hi + 0.0);
            add_row(sm, last, "vs %s", last->opponent[0] ? last->opponent : "?", res);
        } else {
            snprintf(res, CELL, "%s", last->metric[0] ? last->metric : "rate");
            used = strlen(res);
            if (field(last, "n", &nn) && field(last, "m", &m))
                used +=
                    (size_t)snprintf(res + used, CELL - used, " %.0f/%.0f", whole(nn), whole(m));
            if (field(last, "rate", &v) && used < CELL)
                snprintf(res + used, CELL - used, " (%.2f %%)", 100 * v + 0.0);
            add_row(sm, last, "%s", last->set[0] ? last->set : "?", res);
        }
    }
    const record *train = NULL, *selfplay = NULL;
    for (int i = 0; i < n; i++) {
        if (strcmp(recs[i].kind, "train") == 0) train = &recs[i];
        if (strcmp(recs[i].kind, "selfplay") == 0) selfplay = &recs[i];
    }
    if (train) {
        char res[CELL] = "";
        add_value(res, CELL, train, "loss_total", "total ", 1, "");
        add_value(res, CELL, train, "loss_policy", "policy ", 1, "");
        add_value(res, CELL, train, "loss_value", "value ", 1, "");
        add_value(res, CELL, train, "loss_l2", "L2 ", 1, "");
        add_row(sm, train, "%s", "loss", res);
    }
    if (selfplay) {
        char res[CELL] = "";
        add_value(res, CELL, selfplay, "positions_per_s", "", 1, " positions/s");
        add_value(res, CELL, selfplay, "games_per_s", "", 1, " games/s");
        add_value(res, CELL, selfplay, "inferences_per_s", "", 1, " inferences/s");
        add_value(res, CELL, selfplay, "nncache_hit_rate", "NN cache hits ", 100, " %");
        add_value(res, CELL, selfplay, "actor_wait", "actors waiting ", 100, " %");
        add_value(res, CELL, selfplay, "learner_wait", "learner waiting ", 100, " %");
        add_row(sm, selfplay, "%s", "self-play", res);
    }
}

/* "9.8 s", "12.5 min", "3.20 h" */
static void format_wall(double t, char *buf, size_t cap)
{
    if (t < 120)
        snprintf(buf, cap, "%.1f s", t + 0.0);
    else if (t < 3 * 3600)
        snprintf(buf, cap, "%.1f min", t / 60);
    else
        snprintf(buf, cap, "%.2f h", t / 3600);
}

static void summary_html(zt_json_buf *b, const summary *sm)
{
    char wall[32];
    format_wall(sm->t, wall, sizeof wall);
    zt_json_printf(
        b, "<table><tr><th>wall time</th><th>learner steps</th><th>games</th><th>positions</th>"
           "<th>records</th></tr>");
    zt_json_printf(b, "<tr><td>%s</td><td>%.0f</td><td>%.0f</td><td>%.0f</td><td>%d</td></tr>",
                   wall, whole(sm->step), whole(sm->games), whole(sm->positions), sm->records);
    zt_json_printf(b, "</table>\n");
    zt_json_printf(b, "<table><tr><th>latest</th><th>result</th><th>at games</th></tr>");
    for (int k = 0; k < sm->nrows; k++) {
        zt_json_printf(b, "<tr><td>");
        put_text(b, sm->what[k]);
        zt_json_printf(b, "</td><td>");
        put_text(b, sm->result[k]);
        zt_json_printf(b, "</td><td>%s</td></tr>", sm->at[k]);
    }
    if (!sm->nrows)
        zt_json_printf(
            b, "<tr><td colspan=\"3\">no arena, position-set or loss records yet</td></tr>");
    zt_json_printf(b, "</table>\n");
}

static void summary_text(FILE *f, const char *run, const summary *sm)
{
    char wall[32];
    format_wall(sm->t, wall, sizeof wall);
    fprintf(f, "run %s: %s, %.0f learner steps, %.0f games, %.0f positions, %d records\n", run,
            wall, whole(sm->step), whole(sm->games), whole(sm->positions), sm->records);
    int w0 = 6, w1 = 6;
    for (int k = 0; k < sm->nrows; k++) {
        if ((int)strlen(sm->what[k]) > w0) w0 = (int)strlen(sm->what[k]);
        if ((int)strlen(sm->result[k]) > w1) w1 = (int)strlen(sm->result[k]);
    }
    if (sm->nrows) fprintf(f, "  %-*s  %-*s  %s\n", w0, "latest", w1, "result", "at games");
    for (int k = 0; k < sm->nrows; k++)
        fprintf(f, "  %-*s  %-*s  %s\n", w0, sm->what[k], w1, sm->result[k], sm->at[k]);
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
    "svg .t{font-size:13px;font-weight:600}svg .n{fill:#777;text-anchor:middle}"
    "svg .v{text-anchor:middle;font-size:12px}"
    "svg .yl{text-anchor:end}svg .xl{text-anchor:middle}svg .ax{text-anchor:middle;fill:#555}"
    "svg .lg{font-size:10.5px}svg .g{stroke:#e6e6e6;stroke-width:1}"
    "svg .f{fill:#fff;stroke:#bbb}"
    "pre{background:#fff;border:1px solid #ddd;padding:8px;font-size:12px;overflow:auto}";

/* Reads RUN/metrics.jsonl into *recs (the caller frees it); on a terminal a
 * progress line follows the bytes parsed (a long run's file is large). */
static zt_status read_records(const char *run, record **out, int *nrecords, int *skipped)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/metrics.jsonl", run);
    char *text;
    size_t len;
    zt_status st = zt_read_file(path, &text, &len);
    if (st != ZT_OK) return zt_fail(st, "no metrics in run '%s': %s", run, zt_error_message());
    zt_progress_meter meter;
    zt_progress_meter_init(&meter, "report", "bytes", (int64_t)len, NULL, NULL);
    int n = 0, cap_recs = 0, bad = 0;
    record *recs = NULL;
    for (char *line = text; line && *line;) {
        char *next = strchr(line, '\n');
        if (next) *next++ = '\0';
        if (*skip_ws(line)) {
            recs = zt_xgrow(recs, &cap_recs, n + 1, sizeof *recs);
            if (parse_record(line, &recs[n]))
                n++;
            else
                bad++;
            if (meter.draw && (n & 1023) == 0)
                zt_progress_meter_update(&meter, next ? next - text : (int64_t)len,
                                         "reading metrics.jsonl: %d records", n);
        }
        line = next;
    }
    zt_progress_meter_end(&meter);
    free(text);
    *out = recs;
    *nrecords = n;
    *skipped = bad;
    return ZT_OK;
}

static zt_status write_report(const char *run, const record *recs, int n, int bad,
                              const summary *sm, char *out_path, size_t cap)
{
    double tmax = sm->t;
    xaxis_text time_axis = {"wall time (s)", "s", 1};
    if (tmax >= 3 * 3600)
        time_axis = (xaxis_text){"wall time (h)", "h", 3600};
    else if (tmax >= 180)
        time_axis = (xaxis_text){"wall time (min)", "min", 60};
    const xaxis_text games_axis = {"games played", "games", 1};

    zt_json_buf b = {0};
    char stamp[64];
    time_t now = time(NULL);
    struct tm tm;
    strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", localtime_r(&now, &tm));
    zt_json_printf(
        &b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Zeroth run ");
    put_text(&b, run);
    zt_json_printf(&b, "</title><style>%s</style></head><body>\n<h1>Zeroth run ", page_css);
    put_text(&b, run);
    zt_json_printf(&b, "</h1><p class=\"m\">report written %s from metrics.jsonl (%d records",
                   stamp, n);
    if (bad) zt_json_printf(&b, ", %d unreadable lines skipped", bad);
    zt_json_printf(&b, ")</p>\n");
    summary_html(&b, sm);
    for (size_t p = 0; p < sizeof panels / sizeof panels[0]; p++) {
        const panel *pn = &panels[p];
        if (pn->only_with_data) {
            bool any = false;
            for (int i = 0; i < n && !any; i++) {
                double v;
                any = strcmp(recs[i].kind, pn->kind) == 0 && field(&recs[i], pn->fields[0], &v);
            }
            if (!any) continue;
        }
        zt_json_printf(&b, "<h2>");
        put_text(&b, pn->title);
        zt_json_printf(&b, "</h2><div class=\"row\">\n");
        for (int xa = X_TIME; xa <= X_GAMES; xa++) {
            chart c = {.title = xa == X_TIME ? "against wall time" : "against games played",
                       .y_label = pn->y_label,
                       .from_zero = pn->from_zero};
            collect(&c, recs, n, (xaxis)xa, pn->kind, pn->fields, pn->labels, pn->y_scale,
                    pn->group, pn->lo, pn->hi);
            render_chart(&b, &c, xa == X_TIME ? &time_axis : &games_axis);
            chart_free(&c);
        }
        zt_json_printf(&b, "</div>\n");
    }
    /* The run's configuration, when there is one. */
    char path[4096];
    char *text;
    size_t len;
    snprintf(path, sizeof path, "%s/config.ini", run);
    if (zt_read_file(path, &text, &len) == ZT_OK) {
        zt_json_printf(&b, "<h2>Configuration</h2><pre>");
        put_text(&b, text);
        zt_json_printf(&b, "</pre>\n");
        free(text);
    }
    zt_json_printf(&b, "</body></html>\n");

    snprintf(out_path, cap, "%s/report.html", run);
    zt_status st = zt_write_file_atomic(out_path, b.data, b.len);
    zt_json_buf_free(&b);
    return st;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: zeroth report RUN\n\n"
               "Writes RUN/report.html from RUN/metrics.jsonl: a summary table (also printed\n"
               "here), then charts of the strength (Elo against arena opponents, solver test\n"
               "sets), the loss terms and the self-play throughput against wall time and\n"
               "games. The page is self-contained (inline CSS and SVG) and opens in any\n"
               "browser. The last line printed names the page.\n");
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
    record *recs = NULL;
    int n = 0, bad = 0;
    zt_status st = read_records(run, &recs, &n, &bad);
    if (st != ZT_OK) return zt_cli_fail(st);
    summary sm;
    make_summary(recs, n, &sm);
    char out[4200];
    st = write_report(run, recs, n, bad, &sm, out, sizeof out);
    free(recs);
    if (st != ZT_OK) return zt_cli_fail(st);
    summary_text(stdout, run, &sm);
    printf("%s (%d records%s)\n", out, n, bad ? ", unreadable lines skipped" : "");
    return 0;
}
