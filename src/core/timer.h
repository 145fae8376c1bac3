/* Monotonic time. */
#ifndef ZT_CORE_TIMER_H
#define ZT_CORE_TIMER_H

#include <stdint.h>

uint64_t zt_now_ns(void); /* CLOCK_MONOTONIC in nanoseconds */
double zt_now_s(void);    /* the same in seconds */

#endif
