/* Planted answers for causal profiling across MPI ranks
 * (tests/integration/test_causal.py): ranks 0 and 1 exchange a message
 * every iteration (MPI_Sendrecv); rank 0 runs small_work (1 unit), rank 1
 * big_work (2 units).  Speeding small_work cannot help (rank 1 is the
 * bottleneck): about 0 %; speeding big_work by s predicts min(s, 50 %).
 * Every rank passes the progress point "iteration" each iteration.
 *
 *   causal-mpi ITER UNIT */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "sysmeasure.h"

static long unit;

static inline __attribute__((always_inline)) double spin(long rounds, double x)
{
    for (long i = 0; i < rounds; i++)
        x = x * 1.0000001 + 1e-9;
    return x;
}

__attribute__((noinline)) double small_work(double x)
{
    return spin(unit, x);
}

__attribute__((noinline)) double big_work(double x)
{
    return spin(2 * unit, x);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 3 || size != 2) {
        if (rank == 0)
            fprintf(stderr, "usage: mpirun -np 2 causal-mpi ITER UNIT\n");
        MPI_Finalize();
        return 2;
    }
    long n_iter = atol(argv[1]);
    unit = atol(argv[2]);
    double x = 1.0, in = 0;
    for (long i = 0; i < n_iter; i++) {
        x = rank == 0 ? small_work(x) : big_work(x);
        MPI_Sendrecv(&x, 1, MPI_DOUBLE, 1 - rank, 0, &in, 1, MPI_DOUBLE, 1 - rank, 0,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        sysmeasure_progress("iteration");
    }
    printf("rank %d checksum %.6e %.6e\n", rank, x, in);
    MPI_Finalize();
    return 0;
}
