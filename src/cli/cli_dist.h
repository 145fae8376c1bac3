/* The command line under mpirun (cli_dist.c, docs/distributed.md). In a
 * build without MPI these refuse a launch by mpirun in one line and are
 * otherwise inert, so the commands call them unconditionally. */
#ifndef ZT_CLI_CLI_DIST_H
#define ZT_CLI_CLI_DIST_H

#include <stdbool.h>

#include "train/remote.h"

/* Under mpirun with several ranks: starts MPI (once) and returns false, or
 * returns true with *exit_code set when the command must end here (MPI
 * cannot start; a build without MPI, whose rank 0 prints why). Without
 * mpirun: false, nothing done. `command` names the command in messages. */
bool zt_cli_dist_begin(const char *command, int *exit_code);

/* zeroth train: zt_cli_dist_begin, then on actor ranks their whole work
 * (dist.h); true when this process is done, with *exit_code. Call before
 * reading any file: actor ranks get the config from rank 0. */
bool zt_cli_dist_actor(int *exit_code);
/* The remote actors for zt_train_options.remote on rank 0 under mpirun;
 * NULL otherwise. */
const zt_train_remote *zt_cli_dist_remote(void);
/* After the run on rank 0: the actor ranks that are still waiting leave,
 * and MPI ends. Nothing without MPI. */
void zt_cli_dist_end(void);

/* zeroth bench dist (bench/bench_dist.c). */
int zt_bench_dist(int argc, char **argv);

#endif
