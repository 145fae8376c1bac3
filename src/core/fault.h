/* Fault injection for tests (SQLite's sqlite3FaultSim idea): a named point
 * in the code asks zt_fault_hit whether to fail this time. The schedule
 * comes from the environment, read once: ZT_FAULT="POINT:N[,POINT:N...]"
 * makes the Nth call (counted from 1, over all threads) at POINT fail, and
 * every call after it with "POINT:N+" . Without ZT_FAULT nothing fails and a
 * check costs one relaxed atomic load.
 *
 * Points: "eval" (every evaluator call: private net, shared service);
 * "learners" (every gradient allreduce of the last data-parallel learner
 * rank, src/dist/: a hit nudges its mean gradient, so its weights part from
 * the others' and the next agreement check must catch it). */
#ifndef ZT_CORE_FAULT_H
#define ZT_CORE_FAULT_H

#include <stdbool.h>

typedef enum zt_fault_point {
    ZT_FAULT_EVAL,
    ZT_FAULT_LEARNERS,
    ZT_FAULT_COUNT_, /* the number of points */
} zt_fault_point;

/* True when this call at `p` is scheduled to fail. */
bool zt_fault_hit(zt_fault_point p);

/* The name of a point ("eval"). */
const char *zt_fault_name(zt_fault_point p);

#endif
