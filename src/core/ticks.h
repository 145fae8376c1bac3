/* Axis ticks and number labels for charts (the run report, cli/cmd_report.c):
 * steps of 1, 2 or 5 times a power of ten, labels rounded to the step's
 * precision, so they are distinct at every scale ("25400 25405", never
 * "25.4k 25.4k"; "4.8461 4.8462", never "4.846 4.846"), shortened with
 * k/M/G only where the step allows, and never "-0". Everything works on
 * caller-owned structs and buffers. */
#ifndef ZT_CORE_TICKS_H
#define ZT_CORE_TICKS_H

#include <stddef.h>

enum { ZT_TICKS_MAX = 16, ZT_TICK_LABEL = 24 };

typedef struct zt_ticks {
    int n;       /* ticks, 2 .. ZT_TICKS_MAX */
    double step; /* 1, 2 or 5 times a power of ten */
    double value[ZT_TICKS_MAX];
    char label[ZT_TICKS_MAX][ZT_TICK_LABEL];
} zt_ticks;

/* Widens [*lo, *hi] (in either order, possibly equal or non-finite) to a
 * range an axis can show: at least a thousandth of the values' magnitude
 * wide, centred on the data (a constant series, a single point), or
 * [-0.5, 0.5] around zero; [0, 1] when nothing finite is given. Leaves
 * *lo < *hi. */
void zt_ticks_span(double *lo, double *hi);

/* The ticks at multiples of a round step inside [lo, hi] (lo < hi, as
 * zt_ticks_span leaves them), about `want` of them (at least 2, at most
 * ZT_TICKS_MAX), with their labels. */
void zt_ticks_make(double lo, double hi, int want, zt_ticks *out);

/* v with `decimals` decimals (0 .. 12), never "-0": a value that rounds to
 * zero is printed as zero ("0.000", not "-0.000"). */
void zt_ticks_fixed(double v, int decimals, char *buf, size_t cap);

/* v to about four significant digits, without an exponent for |v| in
 * [1e-4, 1e15) and never "-0": "0.6129", "25.41k", "1.235M". For values
 * shown alone (a legend, a summary), not for ticks. */
void zt_ticks_value(double v, char *buf, size_t cap);

#endif
