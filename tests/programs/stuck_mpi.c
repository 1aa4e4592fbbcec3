/* A hung job for sysmeasure-stacks: "stuck-mpi STARTED": ranks 0-2 wait in
 * an MPI_Allreduce that rank 3 never joins, and rank 3 waits in an
 * MPI_Recv (source 0, tag 7) that nobody sends; rank 0 creates STARTED
 * just before.  It never ends: the test kills it. */
#include <mpi.h>
#include <stdio.h>

static volatile int sink;

static __attribute__((noinline)) void solve(int rank)
{
    int x = rank, y = 0;
    if (rank == 3)
        MPI_Recv(&y, 1, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    else
        MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    sink = y; /* (no tail call: solve stays on the stack) */
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0 && argc > 1) {
        FILE *f = fopen(argv[1], "w");
        if (f)
            fclose(f);
    }
    solve(rank);
    MPI_Finalize();
    return sink;
}
