/* MPI workload for bench/bench_exit.sh: every rank does N region pairs
 * (user API, by handle; without the launcher they cost nothing), then all
 * meet in a barrier and rank 0 prints how long MPI_Finalize took and
 * "last_event_ns T" (CLOCK_REALTIME before MPI_Finalize), so that the script
 * can also tell the time to the end of the process.
 * Usage: bench-exit-mpi N */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <sysmeasure.h>

static double now_ms(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    sysmeasure_region_t region = sysmeasure_region_define("bench pair", __FILE__, __LINE__);
    for (long i = 0; i < n; i++) {
        sysmeasure_region_enter(region);
        sysmeasure_region_leave(region);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double f0 = now_ms(CLOCK_MONOTONIC);
    MPI_Finalize();
    if (rank == 0) {
        printf("finalize_ms %.1f\nlast_event_ns %lld%09ld\n", now_ms(CLOCK_MONOTONIC) - f0,
               (long long)ts.tv_sec, ts.tv_nsec);
        fflush(stdout);
    }
    return 0;
}
