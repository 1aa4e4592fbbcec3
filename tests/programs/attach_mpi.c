/* A long-running MPI job for sysmeasure-attach --job: "attach-mpi STOP
 * STARTED": rank 0 creates STARTED once every rank runs; then each rank
 * repeats "step" (a 2 ms sleep, an MPI_Allreduce) until rank 0 sees the
 * file STOP (at most a minute; the decision is broadcast); rank 0 prints
 * the sum of the ranks and every rank exits 0. */
#include <mpi.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include <sysmeasure.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 3) {
        if (rank == 0)
            fprintf(stderr, "usage: attach-mpi STOP STARTED\n");
        MPI_Finalize();
        return 2;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        FILE *f = fopen(argv[2], "w");
        if (f)
            fclose(f);
    }
    int stop = 0, sum = 0;
    for (int i = 0; i < 20000 && !stop; i++) {
        sysmeasure_push_region("step");
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
        MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        sysmeasure_pop_region("step");
        stop = rank == 0 && access(argv[1], F_OK) == 0;
        MPI_Bcast(&stop, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    if (rank == 0)
        printf("sum %d\n", sum);
    MPI_Finalize();
    return 0;
}
