/* mpi.c — spreading a sweep over MPI ranks (optional at build time).
 *
 * Built with TRAINSIM_MPI when CMake finds MPI.  MPI is initialised only when
 * the process was started by mpirun with more than one rank (Open MPI sets
 * OMPI_COMM_WORLD_SIZE, MPICH/PMI set PMI_SIZE), so a plain `trainsim plan`
 * never touches MPI.  Ranks never simulate in their own process: evaluations
 * run in forked children (pool.c) that only compute and _exit, which is the
 * pattern Open MPI tolerates (its fork warning is switched off for it).
 * Results travel as fixed-size plan_result records. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner/plan.h"

static int launched_size(void)
{
    const char *v = getenv("OMPI_COMM_WORLD_SIZE");
    if (!v)
        v = getenv("PMI_SIZE");
    if (!v)
        v = getenv("PMIX_SIZE");
    return v ? atoi(v) : 0;
}

#ifdef TRAINSIM_MPI
#include <mpi.h>

static int active;

int plan_mpi_available(void) { return 1; }

int plan_mpi_start(int *argc, char ***argv, int *rank, int *size, sim_err *err)
{
    (void)err;
    *rank = 0;
    *size = 1;
    if (launched_size() <= 1)
        return 0;
    setenv("OMPI_MCA_mpi_warn_on_fork", "0", 0);
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    active = 1;
    return 1;
}

void plan_mpi_bcast_ints(int *v, int n)
{
    if (active)
        MPI_Bcast(v, n, MPI_INT, 0, MPI_COMM_WORLD);
}

int plan_mpi_gather(plan_result *all, int nall, const plan_result *mine, const int *jobs, int nmine, sim_err *err)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int *counts = NULL, *displs = NULL, *alljobs = NULL, *bcounts = NULL, *bdispls = NULL;
    plan_result *recv = NULL;
    int rc = 0;
    if (rank == 0) {
        counts = calloc((size_t)size, sizeof *counts);
        displs = calloc((size_t)size, sizeof *displs);
        bcounts = calloc((size_t)size, sizeof *bcounts);
        bdispls = calloc((size_t)size, sizeof *bdispls);
    }
    MPI_Gather(&nmine, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    int total = 0;
    if (rank == 0) {
        for (int i = 0; i < size; i++) {
            displs[i] = total;
            bdispls[i] = total * (int)sizeof(plan_result);
            bcounts[i] = counts[i] * (int)sizeof(plan_result);
            total += counts[i];
        }
        alljobs = calloc((size_t)(total ? total : 1), sizeof *alljobs);
        recv = calloc((size_t)(total ? total : 1), sizeof *recv);
    }
    MPI_Gatherv(jobs, nmine, MPI_INT, alljobs, counts, displs, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Gatherv(mine, nmine * (int)sizeof(plan_result), MPI_BYTE, recv, bcounts, bdispls, MPI_BYTE, 0,
                MPI_COMM_WORLD);
    if (rank == 0) {
        for (int i = 0; i < total; i++) {
            if (alljobs[i] < 0 || alljobs[i] >= nall) {
                rc = sim_errf(err, "MPI: rank sent result for job %d of %d", alljobs[i], nall);
                break;
            }
            all[alljobs[i]] = recv[i];
        }
    }
    free(counts);
    free(displs);
    free(bcounts);
    free(bdispls);
    free(alljobs);
    free(recv);
    return rc;
}

void plan_mpi_stop(void)
{
    if (active)
        MPI_Finalize();
    active = 0;
}

#else

int plan_mpi_available(void) { return 0; }

int plan_mpi_start(int *argc, char ***argv, int *rank, int *size, sim_err *err)
{
    (void)argc;
    (void)argv;
    *rank = 0;
    *size = 1;
    if (launched_size() > 1)
        return sim_errf(err, "started by mpirun with %d ranks, but this trainsim was built without MPI "
                        "(install libopenmpi-dev and rebuild); each rank would repeat the whole sweep",
                        launched_size());
    return 0;
}

void plan_mpi_bcast_ints(int *v, int n)
{
    (void)v;
    (void)n;
}

int plan_mpi_gather(plan_result *all, int nall, const plan_result *mine, const int *jobs, int nmine, sim_err *err)
{
    (void)err;
    for (int i = 0; i < nmine; i++)
        if (jobs[i] >= 0 && jobs[i] < nall)
            all[jobs[i]] = mine[i];
    return 0;
}

void plan_mpi_stop(void) {}

#endif
