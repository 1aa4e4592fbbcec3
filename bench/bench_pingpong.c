/* A 0-byte ping-pong between ranks 0 and 1, for bench/bench_spill.sh: REPS
 * repetitions of ITERS round trips, long enough that a traced run fills the
 * default buffer budget several times over.  Rank 0 prints the round trip
 * (µs) of the fastest repetition, the mean over all of them and the slowest
 * (the ones that spill), and how long MPI_Finalize took.
 * Usage: bench-pingpong [ITERS] [REPS] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
    long iters = argc > 1 ? atol(argv[1]) : 200000;
    int reps = argc > 2 ? atoi(argv[2]) : 8;
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double best = 1e30, worst = 0, sum = 0;
    for (int r = 0; r < reps; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now_us();
        if (size >= 2 && rank < 2) {
            for (long i = 0; i < iters; i++) {
                if (rank == 0) {
                    MPI_Send(NULL, 0, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
                    MPI_Recv(NULL, 0, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else {
                    MPI_Recv(NULL, 0, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(NULL, 0, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
                }
            }
        }
        double t = (now_us() - t0) / (double)iters;
        sum += t;
        if (t < best)
            best = t;
        if (t > worst)
            worst = t;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double f0 = now_us();
    MPI_Finalize();
    if (rank == 0)
        printf("rt_us_best %.3f\nrt_us_mean %.3f\nrt_us_worst %.3f\nfinalize_ms %.1f\n", best,
               sum / reps, worst, (now_us() - f0) / 1e3);
    return 0;
}
