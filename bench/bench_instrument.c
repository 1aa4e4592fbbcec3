/* Compiler instrumentation costs, built twice by bench_instrument.sh: plain
 * (cc -O2) and with sysmeasure-cc -O2, then run under the launcher.
 *
 *   bench-instrument pairs N   ns per call of an empty function (best of 7
 *                              repetitions), and in the same run the
 *                              baselines: an empty loop, two TSC reads,
 *                              two clock_gettime calls, and a user-API
 *                              region pair (sysmeasure_region_enter/leave)
 *   bench-instrument fib N     recursive fibonacci(N): ms and calls
 *
 * The kinds take turns within each of the 7 repetitions.  The timing loops
 * are not instrumented (no_instrument_function); only empty() and fib()
 * are. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>

#include "sysmeasure.h"

#define NOI __attribute__((no_instrument_function))
#define REPS 7

static volatile unsigned long sink;
static long calls;

__attribute__((noinline)) void empty(void)
{
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) long fib(int n)
{
    calls++;
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

NOI static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

enum { K_LOOP, K_TSC, K_GETTIME, K_USER, K_CALL };

/* One repetition; ns per iteration. */
NOI static double run(int kind, long n, sysmeasure_region_t region)
{
    double best = 1e30;
    {
        double t0 = now_ns();
        struct timespec ts;
        switch (kind) {
        case K_LOOP:
            for (long i = 0; i < n; i++)
                __asm__ volatile("" ::: "memory");
            break;
        case K_TSC:
            for (long i = 0; i < n; i++)
                sink += __rdtsc() + __rdtsc();
            break;
        case K_GETTIME:
            for (long i = 0; i < n; i++) {
                clock_gettime(CLOCK_MONOTONIC, &ts);
                clock_gettime(CLOCK_MONOTONIC, &ts);
                sink += (unsigned long)ts.tv_nsec;
            }
            break;
        case K_USER:
            for (long i = 0; i < n; i++) {
                sysmeasure_region_enter(region);
                sysmeasure_region_leave(region);
            }
            break;
        default:
            for (long i = 0; i < n; i++)
                empty();
        }
        double per = (now_ns() - t0) / (double)n;
        if (per < best)
            best = per;
    }
    return best;
}

NOI int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    if (strcmp(argv[1], "fib") == 0) {
        int n = argc > 2 ? atoi(argv[2]) : 30;
        double t0 = now_ns();
        long r = fib(n);
        printf("fib_ms %.3f\nfib_calls %ld\nfib_result %ld\n", (now_ns() - t0) / 1e6, calls, r);
        return 0;
    }
    long n = argc > 2 ? atol(argv[2]) : 1000000;
    /* Warm: the first call resolves empty(); with throttling on, this
     * also lets it reach its verdict before the timed runs. */
    for (long i = 0; i < 200000; i++)
        empty();
    sysmeasure_region_t region = sysmeasure_region_define("user_pair", NULL, 0);
    /* The kinds take turns within each repetition, so that a burst of
     * load on the machine hits them alike; best of REPS for each. */
    static const char *const names[] = {"loop_ns", "tsc2_ns", "gettime2_ns", "user_pair_ns",
                                        "call_ns"};
    double best[5] = {1e30, 1e30, 1e30, 1e30, 1e30};
    for (int rep = 0; rep < REPS; rep++)
        for (int k = K_LOOP; k <= K_CALL; k++) {
            double t = run(k, n, region);
            if (t < best[k])
                best[k] = t;
        }
    for (int k = K_LOOP; k <= K_CALL; k++)
        printf("%s %.3f\n", names[k], best[k]);
    return 0;
}
