/* MPI workload for bench/bench_scale_real.sh (issue 29's real runs): STEPS
 * steps of a "compute" region (a sleep of 1 ms; the ranks named in
 * SM_BENCH_SLOW, comma-separated, sleep 4 ms: planted imbalance), a ring
 * exchange (MPI_Sendrecv of 1 KiB to the next rank) and an MPI_Allreduce of
 * 8 doubles.  Sleeps, not spins: the ranks run oversubscribed.  Rank 0
 * prints "finalize_ms T": how long its MPI_Finalize took (under sysmeasure
 * the end of the run is written inside it).
 * Usage: bench-scale-mpi [STEPS] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sysmeasure.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int is_slow(int rank)
{
    const char *list = getenv("SM_BENCH_SLOW");
    for (const char *p = list; p && *p;) {
        char *end;
        long r = strtol(p, &end, 10);
        if (end == p)
            break;
        if (r == rank)
            return 1;
        p = *end == ',' ? end + 1 : end;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 20;
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long sleep_ns = is_slow(rank) ? 4000000L : 1000000L;
    char out[1024], in[1024];
    memset(out, rank & 0xff, sizeof out);
    double v[8], sum[8];
    for (int s = 0; s < steps; s++) {
        sysmeasure_push_region("compute");
        struct timespec ts = {0, sleep_ns};
        while (nanosleep(&ts, &ts) != 0)
            ;
        sysmeasure_pop_region("compute");
        MPI_Sendrecv(out, sizeof out, MPI_BYTE, (rank + 1) % size, 7, in, sizeof in, MPI_BYTE,
                     (rank + size - 1) % size, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < 8; i++)
            v[i] = rank + i + s;
        MPI_Allreduce(v, sum, 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now_ms();
    MPI_Finalize();
    if (rank == 0)
        printf("finalize_ms %.1f\n", now_ms() - t0);
    return 0;
}
