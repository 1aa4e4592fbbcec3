/* PAPI software-defined counters across MPI ranks: rank r adds 7(r+1) to
 * SMTEST::WORK inside "work", 5 times, then passes a token around the ring.
 * With "nofinalize" it exits without MPI_Finalize (process files, then
 * sysmeasure-merge). */
#include <mpi.h>
#include <sde_lib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysmeasure.h>

static long long sm_work;

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    papi_handle_t h = papi_sde_init("SMTEST");
    papi_sde_register_counter(h, "WORK", PAPI_SDE_RO | PAPI_SDE_DELTA, PAPI_SDE_long_long,
                              &sm_work);
    int rank, size, token = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 0; i < 5; i++) {
        sysmeasure_push_region("work");
        sm_work += 7 * (rank + 1);
        sysmeasure_pop_region("work");
    }
    if (size > 1) {
        if (rank == 0) {
            MPI_Send(&token, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(&token, 1, MPI_INT, size - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(&token, 1, MPI_INT, rank - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(&token, 1, MPI_INT, (rank + 1) % size, 0, MPI_COMM_WORLD);
        }
    }
    printf("rank %d WORK=%lld\n", rank, sm_work);
    if (argc > 1 && !strcmp(argv[1], "nofinalize")) {
        fflush(stdout);
        MPI_Barrier(MPI_COMM_WORLD);
        exit(0);
    }
    MPI_Finalize();
    return 0;
}
