/* Built with sysmeasure-instrument mpicc: point-to-point and collectives
 * around an instrumented function.  Planted, per rank: compute 4 calls;
 * 4 rounds of MPI_Send/MPI_Recv around the ring, 4 MPI_Isend/MPI_Irecv
 * pairs completed by MPI_Waitall, 4 MPI_Barrier, 4 MPI_Allreduce, 4
 * MPI_Ibcast completed by MPI_Wait, 1 MPI_Comm_split and MPI_Comm_free. */
#include <mpi.h>
#include <stdio.h>

static volatile double sink;

__attribute__((noinline)) double compute(int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += i * 0.5;
    sink = s;
    return s;
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    for (int round = 0; round < 4; round++) {
        double v = compute(1000 * (rank + 1)), in = 0, sum = 0, b = rank == 0 ? round : -1;
        if (rank % 2 == 0) {
            MPI_Send(&v, 1, MPI_DOUBLE, right, round, MPI_COMM_WORLD);
            MPI_Recv(&in, 1, MPI_DOUBLE, left, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(&in, 1, MPI_DOUBLE, left, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(&v, 1, MPI_DOUBLE, right, round, MPI_COMM_WORLD);
        }
        MPI_Request req[2];
        MPI_Isend(&v, 1, MPI_DOUBLE, left, 100 + round, MPI_COMM_WORLD, &req[0]);
        MPI_Irecv(&in, 1, MPI_DOUBLE, right, 100 + round, MPI_COMM_WORLD, &req[1]);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Allreduce(&v, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        MPI_Request r;
        MPI_Ibcast(&b, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        if (b != round)
            fprintf(stderr, "rank %d: bcast gave %g, not %d\n", rank, b, round);
    }
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Comm_free(&half);
    MPI_Finalize();
    return 0;
}
