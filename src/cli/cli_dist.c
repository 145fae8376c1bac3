/* The command line under mpirun (docs/distributed.md): which rank does what,
 * and the one-line refusal of a build without MPI. In a build with MPI
 * (ZT_HAVE_MPI) this starts MPI and hands over to src/dist/; without it,
 * a launch by mpirun is refused on rank 0 and the other ranks leave
 * silently, so the message appears once. */
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "cli/cli_dist.h"

#ifdef ZT_HAVE_MPI
#include "dist/dist.h"
#endif

static long env_long(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 10) : -1;
}

/* mpirun (OpenMPI, or a PMI launcher such as MPICH's) started this process
 * among several. One process under mpirun is a plain run. */
static bool launched(void)
{
    return env_long("OMPI_COMM_WORLD_SIZE") > 1 || env_long("PMI_SIZE") > 1;
}

static long launched_rank(void)
{
    long r = env_long("OMPI_COMM_WORLD_RANK");
    return r >= 0 ? r : env_long("PMI_RANK");
}

#ifdef ZT_HAVE_MPI

static bool mpi_active;
static bool training; /* zeroth train: rank 0 has actor ranks to release */

bool zt_cli_dist_begin(const char *command, int *exit_code)
{
    (void)command;
    if (!launched()) return false;
    zt_status st = zt_dist_init();
    if (st != ZT_OK) {
        *exit_code = launched_rank() == 0 ? zt_cli_fail(st) : 1;
        return true;
    }
    mpi_active = true;
    /* every way out of the command ends MPI, the early errors' too */
    atexit(zt_cli_dist_end);
    return false;
}

bool zt_cli_dist_actor(int *exit_code)
{
    if (!zt_cli_dist_begin("train", exit_code)) {
        training = mpi_active;
        if (!mpi_active || zt_dist_rank() == 0) return false;
        zt_dist_actor_main();
        zt_dist_finalize();
        *exit_code = 0;
    }
    return true;
}

const zt_train_remote *zt_cli_dist_remote(void)
{
    return mpi_active ? zt_dist_remote() : NULL;
}

void zt_cli_dist_end(void)
{
    if (!mpi_active) return;
    if (training && zt_dist_rank() == 0) zt_dist_learner_end();
    zt_dist_finalize();
    mpi_active = false;
}

#else

bool zt_cli_dist_begin(const char *command, int *exit_code)
{
    if (!launched()) return false;
    /* once for the job, not once per rank */
    *exit_code = launched_rank() <= 0
                     ? zt_cli_error("built without MPI: `zeroth %s` under mpirun needs "
                                    "a build with -DZT_MPI=ON (Debian: libopenmpi-dev)",
                                    command)
                     : 1;
    return true;
}

bool zt_cli_dist_actor(int *exit_code)
{
    return zt_cli_dist_begin("train", exit_code);
}

const zt_train_remote *zt_cli_dist_remote(void)
{
    return NULL;
}

void zt_cli_dist_end(void) {}

#endif
