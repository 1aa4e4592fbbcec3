/* The cost of an MPI call, to be run once plain and once under sysmeasure
 * (bench/bench_mpi.sh does both, alternately, in the same run):
 *   MPI_Comm_rank in a loop; a 0-byte ping-pong between ranks 0 and 1 (per
 *   message, i.e. half a round trip); an 8-byte MPI_Allreduce.
 * Each kernel runs REPS times ITERS iterations; the fastest repetition
 * counts (the least disturbed by other work on a shared machine).  Rank 0
 * prints one line per kernel, and the time MPI_Finalize took ("finalize"),
 * which with sysmeasure includes writing the job's output.
 * Usage: bench-mpi [ITERS] [REPS] */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    long iters = argc > 1 ? atol(argv[1]) : 200000;
    int reps = argc > 2 ? atoi(argv[2]) : 5;
    int rank, size, sink = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double best[3] = {1e30, 1e30, 1e30};

    for (int rep = 0; rep < reps; rep++) {
        int r;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now_ns();
        for (long i = 0; i < iters; i++) {
            MPI_Comm_rank(MPI_COMM_WORLD, &r);
            sink += r;
        }
        double t = (now_ns() - t0) / (double)iters;
        if (t < best[0])
            best[0] = t;

        MPI_Barrier(MPI_COMM_WORLD);
        t0 = now_ns();
        if (size >= 2 && rank < 2) {
            int peer = 1 - rank;
            for (long i = 0; i < iters / 4; i++) {
                if (rank == 0) {
                    MPI_Send(NULL, 0, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
                    MPI_Recv(NULL, 0, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else {
                    MPI_Recv(NULL, 0, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(NULL, 0, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
                }
            }
        }
        t = (now_ns() - t0) / (double)(iters / 4) / 2.0; /* per message */
        if (t < best[1])
            best[1] = t;

        MPI_Barrier(MPI_COMM_WORLD);
        t0 = now_ns();
        for (long i = 0; i < iters / 4; i++) {
            double in = (double)i, out;
            MPI_Allreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            sink += out > 0;
        }
        t = (now_ns() - t0) / (double)(iters / 4);
        if (t < best[2])
            best[2] = t;
    }
    if (rank == 0) {
        printf("comm_rank_ns %.2f\n", best[0]);
        printf("pingpong_ns %.2f\n", best[1]);
        printf("allreduce8_ns %.2f\n", best[2]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now_ns();
    MPI_Finalize();
    if (rank == 0) {
        printf("finalize_ms %.2f\n", (now_ns() - t0) / 1e6);
        fflush(stdout);
    }
    return sink == -1;
}
