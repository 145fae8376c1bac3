/* The distributed run (DESIGN.md §5), as the command line sees it: MPI
 * started or not, this process's rank and role, the actor ranks' main
 * function and the learner rank's remote actors. Everything MPI lives behind
 * this header (src/dist/ is built only with ZT_MPI); the roles:
 *
 *   rank 0        the learner, the replay buffer, checkpoints, the arena and
 *                 metrics: zt_train_run with zt_dist_remote() as its remote
 *                 actors (train/remote.h);
 *   ranks 1..N-1  actor processes (zt_dist_actor_main): their cores' actors,
 *                 a sink that sends trajectories to rank 0 and a weight
 *                 source fed by rank 0's versions.
 *
 * docs/distributed.md describes the messages, what happens when a rank dies,
 * and the measured capacities. */
#ifndef ZT_DIST_DIST_H
#define ZT_DIST_DIST_H

#include <stdbool.h>

#include "core/status.h"
#include "train/remote.h"

/* Whether mpirun started this process among others is the command line's
 * question (src/cli/cli_dist.c, in every build); these start from there. */

/* MPI_Init_thread (thread-multiple: the learner rank's receiver thread and
 * its learner both talk), error handlers that return rather than abort, and
 * the run's communicator. Once per process; later calls return ZT_OK. */
zt_status zt_dist_init(void);
/* MPI_Finalize, unless a rank was lost (then the library could wait forever
 * for it: the process exits without it, see docs/distributed.md). */
void zt_dist_finalize(void);
int zt_dist_rank(void);
int zt_dist_size(void);

/* This process's share of its host's cores: the cores it is bound to where
 * mpirun binds, else the host's cores divided among the ranks on the host
 * (OMPI_COMM_WORLD_LOCAL_SIZE), at least 1. */
int zt_dist_core_share(void);

/* Actor ranks (1..N-1): waits for the run's config from rank 0, runs the
 * actors until rank 0 says stop, and reports to rank 0 on the way out. Quiet
 * but for warnings. Returns nothing: when this rank's actors fail it warns,
 * tells rank 0 (which logs it and goes on without the rank) and still ends
 * normally, since under OpenMPI a rank's non-zero exit ends the whole job;
 * when rank 0 gave up before the run started, rank 0 prints why. */
void zt_dist_actor_main(void);

/* Rank 0: the remote actors for zt_train_options.remote (a static object). */
const zt_train_remote *zt_dist_remote(void);
/* Rank 0, after the run: tells actor ranks that never got a config to leave
 * (the run failed before it started). */
void zt_dist_learner_end(void);

#endif
