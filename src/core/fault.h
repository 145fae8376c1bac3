/* Fault injection for tests (SQLite's sqlite3FaultSim idea): a named point
 * in the code asks whether to fail this time. The schedule comes from the
 * environment, read once: ZT_FAULT="POINT:N[+][:ERRNO][,...]" makes the Nth
 * call (counted from 1, over all threads) at POINT fail, and with "+" every
 * call after it too; ERRNO (ENOSPC, EIO, EACCES, EROFS, EMFILE; default EIO)
 * is the error an I/O point reports. Tests schedule faults in process with
 * zt_fault_set and zt_fault_reset instead. With nothing scheduled a check
 * costs one relaxed atomic load.
 *
 * Points: "eval" (every evaluator call: private net, shared service); the
 * I/O calls of core/fileio.c, which every file the project writes goes
 * through: "open", "read", "write", "fsync", "close", "rename", "mkdir";
 * and "io", which counts every one of those calls together, so that a test
 * can walk N over all the I/O of an operation.
 * And "learners" (every gradient allreduce of the last data-parallel learner
 * rank, src/dist/: a hit nudges its mean gradient, so its weights part from
 * the others' and the next agreement check must catch it). */
#ifndef ZT_CORE_FAULT_H
#define ZT_CORE_FAULT_H

#include <stdbool.h>
#include <stdint.h>

typedef enum zt_fault_point {
    ZT_FAULT_EVAL,
    ZT_FAULT_OPEN,
    ZT_FAULT_READ,
    ZT_FAULT_WRITE,
    ZT_FAULT_FSYNC,
    ZT_FAULT_CLOSE,
    ZT_FAULT_RENAME,
    ZT_FAULT_MKDIR,
    ZT_FAULT_IO,     /* any of the I/O points above */
    ZT_FAULT_LEARNERS,
    ZT_FAULT_COUNT_, /* the number of points */
} zt_fault_point;

/* True when this call at `p` is scheduled to fail. */
bool zt_fault_hit(zt_fault_point p);

/* For an I/O call of kind `p` (ZT_FAULT_OPEN .. ZT_FAULT_MKDIR): 0 to go
 * ahead, else the errno value the call must fail with. Counts the call at
 * `p` and at ZT_FAULT_IO. */
int zt_fault_io(zt_fault_point p);

/* Schedules the nth call at `p` from now (n >= 1; counted from this call
 * on) to fail, and every later one too when `onward`; I/O points fail with
 * errno value `err` (0: EIO). Replaces any earlier schedule of `p`, the
 * environment's included. Not to be called while other threads pass the
 * point. */
void zt_fault_set(zt_fault_point p, uint64_t n, bool onward, int err);

/* Clears every schedule and counter (the environment's too). */
void zt_fault_reset(void);

/* Calls counted at `p` since its schedule was set (0 when none is set):
 * a test that sees fewer calls than its n knows the fault never fired. */
uint64_t zt_fault_calls(zt_fault_point p);

/* The name of a point ("eval", "write", ...). */
const char *zt_fault_name(zt_fault_point p);

#endif
