/* Tests of `zeroth report RUN` on runs whose metrics.jsonl the test writes:
 * a run with many train, self-play, arena and position-set records (a tiny
 * loss range 4.8460..4.8462, games 25,380..25,419 and throughput
 * 25,400..25,420, negative zeros and Elo values that round to -0), a run of one record per kind and
 * a run of constant values. On every chart the tick labels of both axes are distinct and each curve
 * has several points, or the chart says in words that there is one record; no text reads "-0"; the
 * summary table comes first, then strength, loss and throughput; stdout has the summary and, last,
 * the line naming the page. Needs the binary (ZT_BIN, set by CTest). */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/fileio.h"

#include "zt_test.h"

static char dir[256];
static const char *bin;

static void write_metrics(const char *run, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, run);
    CHECK(zt_mkdirs(p) == ZT_OK, "%s: %s", p, zt_error_message());
    snprintf(p, sizeof p, "%s/%s/metrics.jsonl", dir, run);
    CHECK(zt_write_file_atomic(p, text, strlen(text)) == ZT_OK, "%s: %s", p, zt_error_message());
}

/* Appends a printf-formatted line to a growing buffer. */
static void add(char **buf, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void add(char **buf, size_t *len, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    *buf = realloc(*buf, *len + (size_t)n + 1);
    memcpy(*buf + *len, line, (size_t)n + 1);
    *len += (size_t)n;
}

/* Runs `zeroth report DIR/run`; its stdout into out. Returns the exit code. */
static int report(const char *run, char *out, size_t cap)
{
    char cmd[1024], of[512];
    snprintf(of, sizeof of, "%s/stdout.txt", dir);
    snprintf(cmd, sizeof cmd, "%s report %s/%s >%s 2>&1 </dev/null", bin, dir, run, of);
    int rc = system(cmd);
    rc = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
    out[0] = '\0';
    FILE *f = fopen(of, "r");
    if (f) {
        size_t n = fread(out, 1, cap - 1, f);
        out[n] = '\0';
        fclose(f);
    }
    return rc;
}

static char *read_page(const char *run)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s/report.html", dir, run);
    char *page = NULL;
    size_t len;
    CHECK(zt_read_file(p, &page, &len) == ZT_OK, "no %s: %s", p, zt_error_message());
    return page;
}

/* A number printed as a signed zero ("-0", "-0.00", "+-0") in any text
 * between tags; dates like 2026-01-05 do not count (a digit precedes). */
static bool shows_negative_zero(const char *text, char *where, size_t cap)
{
    bool in_tag = false;
    for (const char *p = text; *p; p++) {
        if (*p == '<') in_tag = true;
        if (*p == '>') in_tag = false;
        if (in_tag || *p != '-' || (p > text && p[-1] >= '0' && p[-1] <= '9')) continue;
        const char *q = p + 1;
        if (*q < '0' || *q > '9') continue;
        bool zero = true;
        for (; (*q >= '0' && *q <= '9') || *q == '.'; q++)
            if (*q >= '1' && *q <= '9') zero = false;
        if (zero) {
            snprintf(where, cap, "%.40s", p > text + 20 ? p - 20 : text);
            return true;
        }
    }
    return false;
}

/* The text of every <text class="CLS" ...>label</text> in [from, to). */
static int labels_of(const char *from, const char *to, const char *cls, char labels[][32], int max)
{
    char open[64];
    snprintf(open, sizeof open, "<text class=\"%s\"", cls);
    int n = 0;
    for (const char *p = strstr(from, open); p && p < to && n < max; p = strstr(p + 1, open)) {
        const char *gt = strchr(p, '>'), *end = gt ? strchr(gt, '<') : NULL;
        if (!end) break;
        snprintf(labels[n++], 32, "%.*s", (int)(end - gt - 1), gt + 1);
    }
    return n;
}

typedef struct page_stats {
    int charts, curves, single, none, empty_frames;
} page_stats;

/* Checks every chart of the page: each axis's tick labels distinct (and at
 * least two), each curve with at least `min_points` points; a chart
 * without curves says "one record so far" (or "no records yet") and draws
 * no frame. */
static page_stats check_charts(const char *run, const char *page, int min_points)
{
    page_stats ps = {0};
    for (const char *fig = strstr(page, "<figure>"); fig; fig = strstr(fig + 1, "<figure>")) {
        const char *end = strstr(fig, "</figure>");
        if (!end) break;
        ps.charts++;
        int curves = 0;
        for (const char *pl = strstr(fig, "<polyline"); pl && pl < end;
             pl = strstr(pl + 1, "<polyline")) {
            const char *pts = strstr(pl, "points=\"");
            int points = 0;
            for (const char *c = pts ? pts + 8 : pl; pts && *c && *c != '"'; c++)
                points += *c == ',';
            CHECK(points >= min_points, "%s, chart %d: a curve of %d points", run, ps.charts,
                  points);
            curves++;
        }
        ps.curves += curves;
        const char *frame = strstr(fig, "<rect class=\"f\"");
        if (curves == 0) {
            const char *one = strstr(fig, "one record so far"),
                       *none = strstr(fig, "no records yet");
            CHECK((one && one < end) || (none && none < end),
                  "%s, chart %d: no curve and no word why", run, ps.charts);
            ps.single += one && one < end;
            ps.none += none && none < end;
            ps.empty_frames += frame && frame < end;
            continue;
        }
        const char *axes[] = {"yl", "xl"};
        for (int a = 0; a < 2; a++) {
            char labels[32][32];
            int n = labels_of(fig, end, axes[a], labels, 32);
            char all[1200] = "";
            for (int i = 0; i < n; i++) {
                strncat(all, " ", sizeof all - strlen(all) - 1);
                strncat(all, labels[i], sizeof all - strlen(all) - 1);
            }
            CHECK(n >= 2, "%s, chart %d: %d %s ticks:%s", run, ps.charts, n, axes[a], all);
            for (int i = 0; i < n; i++)
                for (int j = 0; j < i; j++)
                    CHECK(strcmp(labels[i], labels[j]) != 0, "%s, chart %d: %s ticks repeat:%s",
                          run, ps.charts, axes[a], all);
        }
    }
    return ps;
}

static const char *last_line(char *text)
{
    size_t n = strlen(text);
    while (n > 0 && text[n - 1] == '\n') text[--n] = '\0';
    char *nl = strrchr(text, '\n');
    return nl ? nl + 1 : text;
}

static void check_common(const char *run, char *out, int records, const char *page)
{
    char where[64];
    CHECK(!shows_negative_zero(out, where, sizeof where), "%s: stdout shows -0 near '%s'", run,
          where);
    if (page)
        CHECK(!shows_negative_zero(page, where, sizeof where), "%s: the page shows -0 near '%s'",
              run, where);
    char want[600];
    snprintf(want, sizeof want, "%s/%s/report.html (%d records)", dir, run, records);
    CHECK(strncmp(out, "run ", 4) == 0, "%s: stdout does not open with the summary: '%.80s'", run,
          out);
    const char *last = last_line(out);
    CHECK(strcmp(last, want) == 0, "%s: last line '%s', want '%s'", run, last, want);
}

/* Many records of every kind, as a short run with a dense metrics cadence writes them. */
static void test_full_run(void)
{
    char *m = NULL;
    size_t len = 0;
    int records = 0;
    for (int i = 0; i < 40; i++) {
        /* games 25,380..25,419: the games axis is a large, narrow range */
        double t = 0.25 * (i + 1), games = 25380.0 + i, step = 20.0 * (i + 1);
        add(&m, &len,
            "{\"t\":%.3f,\"step\":%.0f,\"games\":%.0f,\"positions\":%.0f,\"kind\":\"train\","
            "\"loss_policy\":%.6f,\"loss_value\":0.25,\"loss_l2\":0.05,\"loss_total\":%.6f,"
            "\"lr\":0.002,\"grad_norm\":0.6}\n",
            t, step, games, 7 * games, 2.0 - 1.4 * i / 39.0, 4.8460 + 0.0002 * i / 39.0);
        add(&m, &len,
            "{\"t\":%.3f,\"step\":%.0f,\"games\":%.0f,\"positions\":%.0f,\"kind\":\"selfplay\","
            "\"games_per_s\":2330,\"positions_per_s\":%.2f,\"inferences_per_s\":%.1f,"
            "\"replay_positions\":%.0f,\"replay_bytes_per_position\":12.0,"
            "\"nncache_hit_rate\":0.66,\"steps_per_s\":900,\"actor_wait\":%.4f,"
            "\"learner_wait\":0}\n",
            t, step, games, 7 * games, 25400 + 20.0 * i / 39.0, 48000 + 10.0 * i, 700.0 * i,
            0.5 - 0.01 * i);
        add(&m, &len,
            "{\"t\":%.3f,\"step\":%.0f,\"games\":%.0f,\"positions\":%.0f,\"kind\":"
            "\"learner_time\",\"train_share\":%.4f,\"sample_share\":0.05,\"publish_share\":0.01,"
            "\"checkpoint_share\":0,\"arena_share\":0.02,\"wait_share\":0.1}\n",
            t, step, games, 7 * games, 0.7 + 0.001 * i);
        records += 3;
        if (i % 13 == 0) { /* i = 0, 13, 26, 39: four arena rounds */
            add(&m, &len,
                "{\"t\":%.3f,\"step\":%.0f,\"games\":%.0f,\"positions\":%.0f,\"kind\":\"arena\","
                "\"opponent\":\"random\",\"games\":100,\"wins\":%d,\"draws\":%d,\"losses\":0,"
                "\"score\":%.4f,\"elo\":%.1f,\"elo_lo\":%.1f,\"elo_hi\":%.1f}\n",
                t, step, games, 7 * games, 60 + i, 40 - i, (60 + i + 0.5 * (40 - i)) / 100.0,
                300 + 6.0 * i, 250 + 6.0 * i, 380 + 6.0 * i);
            add(&m, &len,
                "{\"t\":%.3f,\"step\":%.0f,\"games\":%.0f,\"positions\":%.0f,\"kind\":\"arena\","
                "\"opponent\":\"perfect\",\"games\":100,\"wins\":0,\"draws\":100,\"losses\":0,"
                "\"score\":0.5000,\"elo\":%s,\"elo_lo\":-0.0,\"elo_hi\":-0.0}\n",
                t, step, games, 7 * games, i == 39 ? "-0.3" : "-0.0");
            add(&m, &len,
                "{\"t\":%.3f,\"step\":%.0f,\"games\":%.0f,\"positions\":%.0f,\"kind\":"
                "\"positions\","
                "\"set\":\"ttt_positions\",\"metric\":\"optimal\",\"n\":%d,\"m\":4520,"
                "\"rate\":%.5f}\n",
                t, step, games, 7 * games, 4000 + 13 * i, (4000 + 13 * i) / 4520.0);
            records += 3;
        }
    }
    write_metrics("full", m);
    free(m);
    static char out[1 << 16];
    int rc = report("full", out, sizeof out);
    CHECK(rc == 0, "full: rc %d: %s", rc, out);
    char *page = read_page("full");
    if (!page) return;
    CHECK(strstr(out, "vs random") && strstr(out, "vs perfect") && strstr(out, "ttt_positions") &&
              strstr(out, "Elo +0 [+0, +0]") && strstr(out, "optimal 4507/4520") &&
              strstr(out, "total 4.846") && strstr(out, "actors waiting 11.00 %") &&
              strstr(out, "learner waiting 0 %"),
          "full: the summary on stdout lacks rows:\n%s", out);
    check_common("full", out, records, page);
    page_stats ps = check_charts("full", page, 4);
    /* Nine panels, each against time and against games; every chart a curve. */
    CHECK(ps.charts == 18 && ps.single == 0 && ps.none == 0 && ps.curves >= 18,
          "full: %d charts, %d curves, %d single, %d empty", ps.charts, ps.curves, ps.single,
          ps.none);
    /* The first report's repeated label is gone: 25,380..25,419 games get exact ticks. */
    CHECK(!strstr(page, ">25.4k<") && strstr(page, "class=\"xl\"") && strstr(page, ">25400</text>"),
          "full: the games axis' ticks");
    /* Summary first, then strength, then loss, then throughput. */
    const char *table = strstr(page, "<table"), *svg = strstr(page, "<svg"),
               *elo = strstr(page, "Strength: Elo"), *sets = strstr(page, "Strength: solver"),
               *loss = strstr(page, "Loss terms"), *speed = strstr(page, "Self-play positions");
    CHECK(table && svg && elo && sets && loss && speed && table < svg && elo < sets &&
              sets < loss && loss < speed,
          "full: the page's order");
    CHECK(!strstr(page, "<script") && !strstr(page, "http"),
          "full: the page is not self-contained");
    free(page);
}

/* One record of each kind: every chart says so in words, none draws an empty frame. */
static void test_single_records(void)
{
    write_metrics(
        "single",
        "{\"t\":4.9,\"step\":3580,\"games\":8785,\"positions\":57865,\"kind\":\"train\","
        "\"loss_policy\":0.612863,\"loss_value\":0.025099,\"loss_l2\":0.056617,"
        "\"loss_total\":0.694579}\n"
        "{\"t\":4.9,\"step\":3580,\"games\":8785,\"positions\":57865,\"kind\":\"selfplay\","
        "\"games_per_s\":2329.8,\"positions_per_s\":15573.07,\"inferences_per_s\":48881.5,"
        "\"replay_positions\":49996}\n"
        "{\"t\":4.9,\"step\":3580,\"games\":8785,\"positions\":57865,\"kind\":\"arena\","
        "\"opponent\":\"perfect\",\"games\":100,\"wins\":0,\"draws\":100,\"losses\":0,"
        "\"score\":0.5000,\"elo\":-0.0,\"elo_lo\":-0.0,\"elo_hi\":-0.0}\n"
        "{\"t\":4.9,\"step\":3580,\"games\":8785,\"positions\":57865,\"kind\":\"positions\","
        "\"set\":\"ttt_positions\",\"metric\":\"optimal\",\"n\":4520,\"m\":4520,\"rate\":1.0}\n");
    static char out[1 << 16];
    int rc = report("single", out, sizeof out);
    CHECK(rc == 0, "single: rc %d: %s", rc, out);
    char *page = read_page("single");
    if (!page) return;
    check_common("single", out, 4, page);
    page_stats ps = check_charts("single", page, 2);
    CHECK(ps.charts == 14 && ps.single == 14 && ps.curves == 0 && ps.empty_frames == 0,
          "single: %d charts, %d say one record, %d curves, %d empty frames", ps.charts, ps.single,
          ps.curves, ps.empty_frames);
    CHECK(strstr(page, "vs perfect: 0 [0, 0]") && strstr(page, "at 4.9 s") &&
              strstr(page, "at 8785 games"),
          "single: the values in words");
    CHECK(strstr(out, "Elo +0 [+0, +0], score 0.500"), "single: summary:\n%s", out);
    free(page);
}

/* Constant values (a flat loss, a flat Elo of zero) over several records. */
static void test_constant_values(void)
{
    char *m = NULL;
    size_t len = 0;
    for (int i = 0; i < 6; i++)
        add(&m, &len,
            "{\"t\":%d,\"step\":%d,\"games\":%d,\"positions\":10,\"kind\":\"train\","
            "\"loss_policy\":1.0,\"loss_value\":1.0,\"loss_l2\":0,\"loss_total\":2.0}\n"
            "{\"t\":%d,\"step\":%d,\"games\":%d,\"positions\":10,\"kind\":\"arena\","
            "\"opponent\":\"perfect\",\"games\":10,\"wins\":0,\"draws\":10,\"losses\":0,"
            "\"score\":0.5,\"elo\":0,\"elo_lo\":0,\"elo_hi\":0}\n"
            "{\"t\":%d,\"step\":%d,\"games\":%d,\"positions\":10,\"kind\":\"selfplay\","
            "\"games_per_s\":0,\"positions_per_s\":0,\"inferences_per_s\":0,"
            "\"replay_positions\":0}\n",
            10 * i, i, 1000000 + i, 10 * i, i, 1000000 + i, 10 * i, i, 1000000 + i);
    write_metrics("constant", m);
    free(m);
    static char out[1 << 16];
    int rc = report("constant", out, sizeof out);
    CHECK(rc == 0, "constant: rc %d: %s", rc, out);
    char *page = read_page("constant");
    if (!page) return;
    check_common("constant", out, 18, page);
    page_stats ps = check_charts("constant", page, 6);
    /* The position sets have no records: those two charts say so. */
    CHECK(ps.charts == 14 && ps.none == 2 && ps.single == 0 && ps.curves >= 12,
          "constant: %d charts, %d curves, %d without records", ps.charts, ps.curves, ps.none);
    free(page);
}

/* A one-player run (2048): the model's mean scores draw a curve with its
 * interval in a chart of their own, the baselines scored once stand as
 * single records, and the summary gives each player's latest mean. Board
 * games' pages have no such chart (test_full_run's count). */
static void test_scores(void)
{
    char *m = NULL;
    size_t len = 0;
    add(&m, &len,
        "{\"t\":1,\"step\":0,\"games\":0,\"positions\":0,\"kind\":\"score\",\"player\":\"random\","
        "\"arena_games\":32,\"mean\":1078.75,\"ci95\":199.66,\"mean_lo\":879.09,"
        "\"mean_hi\":1278.41,\"max\":2380}\n");
    for (int i = 0; i < 5; i++)
        add(&m, &len,
            "{\"t\":%d,\"step\":%d,\"games\":%d,\"positions\":%d,\"kind\":\"score\","
            "\"player\":\"model\",\"arena_games\":32,\"mean\":%d,\"ci95\":200,\"mean_lo\":%d,"
            "\"mean_hi\":%d,\"max\":9000,\"top_level\":512}\n",
            10 * i + 1, 100 * i, 30 * i, 3000 * i, 1800 + 500 * i, 1600 + 500 * i, 2000 + 500 * i);
    write_metrics("scores", m);
    free(m);
    static char out[1 << 16];
    int rc = report("scores", out, sizeof out);
    CHECK(rc == 0, "scores: rc %d: %s", rc, out);
    char *page = read_page("scores");
    if (!page) return;
    CHECK(strstr(out, "mean score 3800 +- 200") && strstr(out, "mean score 1079 +- 200"),
          "scores: the summary:\n%s", out);
    page_stats ps = check_charts("scores", page, 5);
    const char *chart = strstr(page, "Strength: mean score");
    /* 16 charts: the 14 of every run and the score pair, after Elo's */
    CHECK(chart && chart > strstr(page, "Strength: Elo") &&
              chart < strstr(page, "Strength: solver") && ps.charts == 16 && ps.curves >= 2,
          "scores: %d charts, %d curves, score chart %s", ps.charts, ps.curves,
          chart ? "present" : "missing");
    free(page);
}

int main(void)
{
    bin = getenv("ZT_BIN");
    if (!bin || access(bin, X_OK) != 0) {
        printf("ZT_BIN not set: the report is not tested\n");
        return zt_test_finish("test_report");
    }
    snprintf(dir, sizeof dir, "/tmp/zt_test_report_XXXXXX");
    if (!mkdtemp(dir)) {
        printf("FAIL: mkdtemp\n");
        return 1;
    }
    test_full_run();
    test_single_records();
    test_constant_values();
    test_scores();
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) printf("note: could not remove %s\n", dir);
    return zt_test_finish("test_report");
}
