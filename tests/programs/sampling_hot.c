/* Planted shares for call-stack sampling: each thread (argv[1] of them,
 * the main thread included) runs, inside the user region "compute", the
 * same loop in hot() four times as long as in cold(): about 80% and 20% of
 * its CPU time.  argv[2]: iterations of cold() per round (work size).
 * Built with -g -O1: the two functions stay apart (no inlining, no identical
 * code folding, their constants differ).
 *
 * The same file is built three ways: with pthreads (sampling-hot), as an
 * MPI program (-DSM_WITH_MPI: each rank does the same) and with OpenMP
 * threads (-DSM_WITH_OPENMP, built by the test with clang -fopenmp). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef SM_WITH_MPI
#include <mpi.h>
#endif
#ifdef SM_WITH_OPENMP
#include <omp.h>
#endif

#include <sysmeasure.h>

static long sm_iters = 2000000;

__attribute__((noinline)) static double hot(long n)
{
    volatile double x = 1.0;
    for (long i = 0; i < n; i++)
        x = x * 1.0000001 + 0.5;
    return x;
}

__attribute__((noinline)) static double cold(long n)
{
    volatile double x = 2.0;
    for (long i = 0; i < n; i++)
        x = x * 0.9999999 + 0.25;
    return x;
}

static void *work(void *arg)
{
    double *out = arg;
    sysmeasure_push_region("compute");
    double s = 0;
    for (int round = 0; round < 10; round++) {
        s += hot(4 * sm_iters);
        s += cold(sm_iters);
    }
    sysmeasure_pop_region("compute");
    *out = s;
    return NULL;
}

int main(int argc, char **argv)
{
#ifdef SM_WITH_MPI
    MPI_Init(&argc, &argv);
#endif
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    if (argc > 2)
        sm_iters = atol(argv[2]);
    if (threads < 1 || threads > 64)
        threads = 2;
    double result[64];
#ifdef SM_WITH_OPENMP
#pragma omp parallel num_threads(threads)
    work(&result[omp_get_thread_num()]);
#else
    pthread_t tid[64];
    for (int t = 1; t < threads; t++)
        pthread_create(&tid[t], NULL, work, &result[t]);
    work(&result[0]);
    for (int t = 1; t < threads; t++)
        pthread_join(tid[t], NULL);
#endif
#ifdef SM_WITH_MPI
    MPI_Barrier(MPI_COMM_WORLD);
    /* argv[3] "nofinalize": end without MPI_Finalize (sysmeasure-merge). */
    if (!(argc > 3 && strcmp(argv[3], "nofinalize") == 0))
        MPI_Finalize();
#endif
    double s = 0;
    for (int t = 0; t < threads; t++)
        s += result[t];
    printf("done %d threads (%g)\n", threads, s > 0 ? 1.0 : 0.0);
    return 0;
}
