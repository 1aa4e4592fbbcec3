/* OpenMP parallel regions that compute (tests/integration/test_causal.py,
 * built by the test with clang -fopenmp): N regions, each thread spins
 * about UNIT rounds in work() per region.  With --causal-progress openmp
 * every region's end is a pass.
 *
 *   causal-omp N UNIT */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) double work(long rounds, double x)
{
    for (long i = 0; i < rounds; i++)
        x = x * 1.0000001 + 1e-9;
    return x;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 100, unit = argc > 2 ? atol(argv[2]) : 400000;
    double sum = 0;
    for (long i = 0; i < n; i++) {
#pragma omp parallel reduction(+ : sum)
        sum += work(unit, 1.0 + omp_get_thread_num());
    }
    printf("omp %ld regions, sum %.6e\n", n, sum);
    return 0;
}
