/* The work the sampling benchmark measures: a compute loop at the bottom
 * of a 10-frame call chain, for a fixed number of iterations (argv[1], in
 * millions).  Prints the process's CPU time and wall time per iteration;
 * bench_sampling.sh runs it without sysmeasure, under sysmeasure without
 * sampling and with sampling at several rates, in turn, in the same run.
 * "idle S": sleep S seconds in steps of 10 ms (the sampler thread's cost).
 * "bare HZ MILLIONS": the same loop with a timer of its own at HZ of wall-
 * clock time and an empty handler: what a timer signal alone costs here,
 * to tell it from sysmeasure's handler (unwind and record). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double sm_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

__attribute__((noinline)) static double leaf(long n)
{
    volatile double x = 1.0;
    for (long i = 0; i < n; i++)
        x = x * 1.0000001 + 0.5;
    return x;
}

/* Frames 2..10 above leaf: the stack every sample unwinds. */
__attribute__((noinline)) static double chain(int depth, long n)
{
    double r = depth <= 1 ? leaf(n) : chain(depth - 1, n);
    __asm__ volatile("" ::: "memory"); /* not a tail call: the frame stays */
    return r;
}

static volatile long sm_ticks;

static void sm_empty(int sig, siginfo_t *si, void *uc)
{
    (void)sig, (void)si, (void)uc;
    sm_ticks++;
}

int main(int argc, char **argv)
{
    long hz = 0;
    if (argc > 3 && strcmp(argv[1], "bare") == 0) {
        hz = atol(argv[2]);
        argv += 2;
        argc -= 2;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = sm_empty;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        sigaction(SIGRTMIN + 1, &sa, NULL);
        struct sigevent sev;
        memset(&sev, 0, sizeof sev);
        sev.sigev_notify = SIGEV_SIGNAL;
        sev.sigev_signo = SIGRTMIN + 1;
        timer_t t;
        timer_create(CLOCK_MONOTONIC, &sev, &t);
        struct itimerspec its = {{0, 1000000000L / hz}, {0, 1000000000L / hz}};
        timer_settime(t, 0, &its, NULL);
    }
    if (argc > 2 && strcmp(argv[1], "idle") == 0) {
        double s = atof(argv[2]);
        for (double t = 0; t < s; t += 0.01) {
            struct timespec ts = {0, 10000000};
            nanosleep(&ts, NULL);
        }
        return 0;
    }
    long n = (argc > 1 ? atol(argv[1]) : 200) * 1000000L;
    double c0 = sm_ns(CLOCK_PROCESS_CPUTIME_ID), w0 = sm_ns(CLOCK_MONOTONIC);
    double r = chain(9, n); /* main + 9 chain frames + leaf */
    double c1 = sm_ns(CLOCK_PROCESS_CPUTIME_ID), w1 = sm_ns(CLOCK_MONOTONIC);
    printf("cpu_ns_per_iter %.4f\nwall_s %.4f\ncpu_s %.4f\n", (c1 - c0) / (double)n,
           (w1 - w0) * 1e-9, (c1 - c0) * 1e-9);
    if (hz)
        printf("signals %ld\n", sm_ticks);
    return r > 0 ? 0 : 1;
}
