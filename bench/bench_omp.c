/* The cost of OpenMP's two most frequent events on 2 threads, to be run once
 * plain and once under sysmeasure (bench/bench_omp.sh does both,
 * alternately, in the same run):
 *   an empty parallel region (fork, two implicit tasks, the closing barrier,
 *   join), per region;
 *   a barrier inside one parallel region, per barrier;
 *   task-recursive fibonacci, fib(FIB) with one task per call (two task
 *   constructs and a taskwait), started by one thread of a parallel region,
 *   per whole computation (fib_ms) and per task (fib_task_ns).
 * Each kernel runs REPS times ITERS iterations; the fastest repetition
 * counts (the least disturbed by other work on a shared machine).  Built
 * with clang -fopenmp, so that it runs on LLVM's libomp (OMPT).
 * Usage: bench-omp [ITERS] [REPS] [FIB] */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../tests/programs/omp_fib.h"

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
    int fib_n = argc > 3 ? atoi(argv[3]) : 20;
    double best_parallel = 1e30, best_barrier = 1e30, best_fib = 1e30;
    long fib_result = 0;
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

        t0 = now_ns();
#pragma omp parallel num_threads(2)
#pragma omp single
        fib_result = fib_tasks_rec(fib_n);
        t = now_ns() - t0;
        if (t < best_fib)
            best_fib = t;
    }
    if (fib_result < 0)
        return 1;
    printf("threads %d\n", team);
    printf("parallel_ns %.1f\n", best_parallel);
    printf("barrier_ns %.1f\n", best_barrier);
    printf("fib_ms %.2f\n", best_fib / 1e6);
    printf("fib_task_ns %.1f\n", best_fib / (double)fib_task_count(fib_n));
    return 0;
}
