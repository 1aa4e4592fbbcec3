/* A long stream of MPI events for the background-encoding test
 * (test_otf2_background.py): N rounds of a user region around a ring
 * exchange (MPI_Sendrecv, tag = round), a nonblocking pair (Isend/Irecv,
 * Waitall) and, every 8th round, an Allreduce on MPI_COMM_WORLD and a
 * Bcast on a communicator split in even and odd ranks.
 * Usage: mpi-stream N.  Exit status 0 when the exchanged values are right. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "sysmeasure.h"

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000;
    int rank, size, bad = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    for (long i = 0; i < n; i++) {
        sysmeasure_push_region("round");
        long out = rank * 1000000L + i, in = -1, in2 = -1;
        MPI_Sendrecv(&out, 1, MPI_LONG, right, (int)(i % 30000), &in, 1, MPI_LONG, left,
                     (int)(i % 30000), MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        bad |= in != left * 1000000L + i;
        MPI_Request r[2];
        MPI_Irecv(&in2, 1, MPI_LONG, right, 7, MPI_COMM_WORLD, &r[0]);
        MPI_Isend(&out, 1, MPI_LONG, left, 7, MPI_COMM_WORLD, &r[1]);
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
        bad |= in2 != right * 1000000L + i;
        if (i % 8 == 0) {
            long sum = 0, v = i;
            MPI_Allreduce(&out, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
            MPI_Bcast(&v, 1, MPI_LONG, 0, half);
            bad |= v != i;
        }
        sysmeasure_pop_region("round");
    }
    MPI_Comm_free(&half);
    MPI_Finalize();
    if (bad)
        fprintf(stderr, "mpi-stream: wrong values exchanged\n");
    return bad;
}
