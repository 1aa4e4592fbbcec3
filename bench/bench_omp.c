/* The cost of OpenMP's two most frequent events on 2 threads, to be run once
 * plain and once under sysmeasure (bench/bench_omp.sh does both,
 * alternately, in the same run):
 *   an empty parallel region (fork, two implicit tasks, the closing barrier,
 *   join), per region;
 *   a barrier inside one parallel region, per barrier.
 * Each kernel runs REPS times ITERS iterations; the fastest repetition
 * counts (the least disturbed by other work on a shared machine).  Built
 * with clang -fopenmp, so that it runs on LLVM's libomp (OMPT).
 * Usage: bench-omp [ITERS] [REPS] */
#include <omp.h>
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
    long iters = argc > 1 ? atol(argv[1]) : 20000;
    int reps = argc > 2 ? atoi(argv[2]) : 5;
    double best_parallel = 1e30, best_barrier = 1e30;
    int team = 0;

#pragma omp parallel num_threads(2) /* the team's threads exist from here on */
    {
#pragma omp single
        team = omp_get_num_threads();
    }
    for (int rep = 0; rep < reps; rep++) {
        double t0 = now_ns();
        for (long i = 0; i < iters; i++) {
#pragma omp parallel num_threads(2)
            {
                __asm__ volatile(""); /* empty, but not for the optimiser */
            }
        }
        double t = (now_ns() - t0) / (double)iters;
        if (t < best_parallel)
            best_parallel = t;

#pragma omp parallel num_threads(2)
        {
#pragma omp barrier
            double start = now_ns();
            for (long i = 0; i < iters; i++) {
#pragma omp barrier
            }
#pragma omp master
            {
                double per = (now_ns() - start) / (double)iters;
                if (per < best_barrier)
                    best_barrier = per;
            }
        }
    }
    printf("threads %d\n", team);
    printf("parallel_ns %.1f\n", best_parallel);
    printf("barrier_ns %.1f\n", best_barrier);
    return 0;
}
