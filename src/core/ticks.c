#include "core/ticks.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void zt_ticks_span(double *lo, double *hi)
{
    double a = *lo, b = *hi;
    if (!isfinite(a)) a = b;
    if (!isfinite(b)) b = a;
    if (!isfinite(a)) {
        *lo = 0, *hi = 1;
        return;
    }
    if (a > b) {
        double t = a;
        a = b, b = t;
    }
    /* A thousandth of the magnitude: a loss flat to four digits draws flat,
     * instead of its last digit's noise blown up to the chart's height. */
    double magnitude = fmax(fabs(a), fabs(b));
    double least = magnitude > 0 ? magnitude * 1e-3 : 1.0;
    if (b - a < least) {
        double mid = 0.5 * (a + b);
        a = mid - 0.5 * least, b = mid + 0.5 * least;
    }
    *lo = a, *hi = b;
}

void zt_ticks_fixed(double v, int decimals, char *buf, size_t cap)
{
    if (decimals < 0) decimals = 0;
    if (decimals > 12) decimals = 12;
    int n = snprintf(buf, cap, "%.*f", decimals, v);
    if (n <= 0 || buf[0] != '-') return;
    /* "-0", "-0.000": the sign of a value that rounded to zero. */
    for (const char *p = buf + 1; *p; p++)
        if (*p != '0' && *p != '.') return;
    memmove(buf, buf + 1, strlen(buf));
}

/* A step of 1, 2 or 5 times a power of ten near span / want; its power in *e. */
static double nice_step(double span, int want, int *e)
{
    double raw = span / want;
    *e = (int)floor(log10(raw));
    double p = pow(10, *e), f = raw / p;
    if (f >= 7.5) {
        ++*e;
        return 10 * p;
    }
    return (f < 1.5 ? 1 : f < 3.5 ? 2 : 5) * p;
}

/* The next larger round step: 1 -> 2 -> 5 -> 10. */
static double next_step(double step, int *e)
{
    double p = pow(10, *e), m = step / p;
    if (m < 1.5) return 2 * p;
    if (m < 3.5) return 5 * p;
    ++*e;
    return 10 * p;
}

void zt_ticks_make(double lo, double hi, int want, zt_ticks *out)
{
    memset(out, 0, sizeof *out);
    if (!(hi > lo)) zt_ticks_span(&lo, &hi);
    if (want < 2) want = 2;
    if (want > ZT_TICKS_MAX - 1) want = ZT_TICKS_MAX - 1;
    int e;
    double step = nice_step(hi - lo, want, &e);
    double k0, k1;
    for (;;) {
        k0 = ceil(lo / step - 1e-9);
        k1 = floor(hi / step + 1e-9);
        if (k1 - k0 + 1 <= ZT_TICKS_MAX) break;
        step = next_step(step, &e);
    }
    out->step = step;
    /* The suffix: the largest of k (from 10,000 on), M, G, T that the
     * values reach and that leaves at most one decimal at this step. */
    double magnitude = fmax(fabs(k0 * step), fabs(k1 * step));
    static const struct {
        double scale;
        int power;
        const char *suffix;
    } units[] = {{1e12, 12, "T"}, {1e9, 9, "G"}, {1e6, 6, "M"}, {1e3, 3, "k"}};
    double scale = 1;
    int power = 0;
    const char *suffix = "";
    for (int u = 0; u < 4; u++)
        if (magnitude >= (u == 3 ? 1e4 : units[u].scale) && units[u].power - e <= 1) {
            scale = units[u].scale, power = units[u].power, suffix = units[u].suffix;
            break;
        }
    int decimals = power - e > 0 ? power - e : 0;
    for (double k = k0; k <= k1 && out->n < ZT_TICKS_MAX; k++) {
        double v = k * step;
        out->value[out->n] = v;
        char *label = out->label[out->n];
        if (k == 0) {
            snprintf(label, ZT_TICK_LABEL, "0");
        } else {
            zt_ticks_fixed(v / scale, decimals, label, ZT_TICK_LABEL - 2);
            strcat(label, suffix);
        }
        out->n++;
    }
}

/* Decimals that give |x| (not zero) four significant digits, at most 12. */
static int four_digits(double x)
{
    x = fabs(x);
    if (x == 0 || x >= 1000) return 0;
    int d = 3 - (int)floor(log10(x));
    return d > 12 ? 12 : d;
}

void zt_ticks_value(double v, char *buf, size_t cap)
{
    if (!isfinite(v)) {
        snprintf(buf, cap, "%s", isnan(v) ? "?" : v > 0 ? "inf" : "-inf");
        return;
    }
    static const struct {
        double scale;
        const char *suffix;
    } units[] = {{1, ""}, {1e3, "k"}, {1e6, "M"}, {1e9, "G"}, {1e12, "T"}};
    /* Plain below 10,000; then the unit that leaves 10 .. 9999 of it
     * (moving up when rounding reaches 1000 of a unit: "1.000M", not
     * "1000.0k"). */
    int u = 0;
    if (fabs(v) >= 9999.5) {
        u = 1;
        while (u < 4 && fabs(v) / units[u].scale >= 999.95) u++;
    }
    double s = v / units[u].scale;
    int d = four_digits(s);
    if (d > 0 && round(fabs(s) * pow(10, d)) >= 1e4) d--; /* 0.99996 is "1.000", not "1.0000" */
    zt_ticks_fixed(s, d, buf, cap);
    size_t len = strlen(buf);
    if (len + strlen(units[u].suffix) < cap) strcat(buf, units[u].suffix);
}
