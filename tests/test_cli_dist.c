/* The command line's MPI switch as a build without MPI has it
 * (src/cli/cli_dist.c compiled here without ZT_HAVE_MPI, whatever the
 * program's build): launched by mpirun (OpenMPI's or a PMI launcher's
 * environment), rank 0 says in one line that zeroth was built without MPI
 * and every rank ends with a non-zero exit; without mpirun nothing happens.
 * tests/cli_mpi.sh runs the MPI build itself under mpirun. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zt_test.h"

#undef ZT_HAVE_MPI
#include "../src/cli/cli.c"
#include "../src/cli/cli_dist.c"

static const char *const launcher_vars[] = {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
                                            "PMI_SIZE", "PMI_RANK"};

static void clear_launcher(void)
{
    for (size_t i = 0; i < sizeof launcher_vars / sizeof *launcher_vars; i++)
        unsetenv(launcher_vars[i]);
}

/* Runs zt_cli_dist_begin (or zt_cli_dist_actor) with stderr captured into
 * err (cap bytes); returns what it returned. */
static bool begin_captured(bool actor, int *exit_code, char *err, size_t cap)
{
    fflush(stderr);
    int saved = dup(2);
    FILE *tmp = tmpfile();
    ZT_ASSERT(saved >= 0 && tmp);
    dup2(fileno(tmp), 2);
    bool done = actor ? zt_cli_dist_actor(exit_code) : zt_cli_dist_begin("bench dist", exit_code);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(tmp);
    size_t n = fread(err, 1, cap - 1, tmp);
    err[n] = '\0';
    fclose(tmp);
    return done;
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

static void test_not_launched(void)
{
    clear_launcher();
    char err[1024];
    int code = -1;
    CHECK(!begin_captured(true, &code, err, sizeof err), "a plain run must go on");
    CHECK(code == -1 && err[0] == '\0', "nothing to say without mpirun: '%s'", err);
    /* one process under mpirun is a plain run too */
    setenv("OMPI_COMM_WORLD_SIZE", "1", 1);
    setenv("OMPI_COMM_WORLD_RANK", "0", 1);
    CHECK(!begin_captured(true, &code, err, sizeof err), "mpirun -np 1 is one process");
    CHECK(zt_cli_dist_remote() == NULL, "no remote actors without MPI");
    clear_launcher();
}

static void test_refused_once(const char *size_var, const char *rank_var)
{
    clear_launcher();
    setenv(size_var, "3", 1);
    char err[1024];
    for (int rank = 0; rank < 3; rank++) {
        char r[8];
        snprintf(r, sizeof r, "%d", rank);
        setenv(rank_var, r, 1);
        int code = 0;
        bool done = begin_captured(rank == 2, &code, err, sizeof err);
        CHECK(done, "%s: rank %d must stop under mpirun", size_var, rank);
        CHECK(code != 0, "%s: rank %d exits with 0", size_var, rank);
        if (rank == 0) {
            CHECK(count_lines(err) == 1, "%s: rank 0 wrote %d lines: '%s'", size_var,
                  count_lines(err), err);
            CHECK(strstr(err, "zeroth: built without MPI: `zeroth ") == err,
                  "%s: rank 0 wrote '%s'", size_var, err);
            CHECK(strstr(err, "-DZT_MPI=ON") != NULL, "the message says how to build: '%s'", err);
        } else {
            CHECK(err[0] == '\0', "%s: rank %d wrote '%s' (only rank 0 speaks)", size_var, rank,
                  err);
        }
    }
    clear_launcher();
}

int main(void)
{
    test_not_launched();
    test_refused_once("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK");
    test_refused_once("PMI_SIZE", "PMI_RANK");
    return zt_test_finish("test_cli_dist");
}
