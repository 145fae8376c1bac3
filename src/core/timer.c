#include "core/timer.h"

#include <time.h>

uint64_t zt_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

double zt_now_s(void)
{
    return (double)zt_now_ns() * 1e-9;
}
