/* Workloads for bench/bench_spill.sh, run under the launcher:
 *
 *   bench-spill pairs N REPS      N region pairs (user API, by handle) REPS
 *                                 times; prints "pair_ns X" (the fastest
 *                                 repetition) and "pair_ns_all Y" (all of
 *                                 them: spilling happens in some)
 *   bench-spill threads T ALIVE K T threads, at most ALIVE at once, each K
 *                                 region pairs; prints "threads_s X"
 *
 * Both then print "last_event_ns T" (CLOCK_REALTIME after the last event),
 * so that the script can tell how long the end of the run took. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sysmeasure.h>

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static sysmeasure_region_t region;
static long pairs_per_thread;

static void *thread_body(void *arg)
{
    (void)arg;
    for (long i = 0; i < pairs_per_thread; i++) {
        sysmeasure_region_enter(region);
        sysmeasure_region_leave(region);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    region = sysmeasure_region_define("bench pair", __FILE__, __LINE__);
    if (argc >= 4 && !strcmp(argv[1], "pairs")) {
        long n = atol(argv[2]);
        int reps = atoi(argv[3]);
        double best = 1e30, sum = 0;
        for (int r = 0; r < reps; r++) {
            double t0 = now_ns();
            for (long i = 0; i < n; i++) {
                sysmeasure_region_enter(region);
                sysmeasure_region_leave(region);
            }
            double t = (now_ns() - t0) / (double)n;
            sum += t;
            if (t < best)
                best = t;
        }
        printf("pair_ns %.2f\npair_ns_all %.2f\n", best, sum / reps);
    } else if (argc >= 5 && !strcmp(argv[1], "threads")) {
        int total = atoi(argv[2]), alive = atoi(argv[3]);
        pairs_per_thread = atol(argv[4]);
        pthread_t *t = calloc((size_t)alive, sizeof *t);
        double t0 = now_ns();
        /* Waves of ALIVE threads. */
        for (int started = 0; started < total;) {
            int k = 0;
            for (; k < alive && started < total; k++, started++)
                pthread_create(&t[k], NULL, thread_body, NULL);
            for (int j = 0; j < k; j++)
                pthread_join(t[j], NULL);
        }
        printf("threads_s %.3f\n", (now_ns() - t0) / 1e9);
        free(t);
    } else {
        fprintf(stderr, "usage: bench-spill pairs N REPS | threads T ALIVE K\n");
        return 2;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    printf("last_event_ns %lld%09ld\n", (long long)ts.tv_sec, ts.tv_nsec);
    fflush(stdout);
    return 0;
}
