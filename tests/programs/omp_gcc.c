/* An OpenMP program as GCC builds it (libgomp), for the --openmp-runtime
 * test (built by the test with gcc -fopenmp and the user API): 10 parallel
 * regions with a barrier inside "serial part" and "openmp part" user
 * regions, then exit status 3, which sysmeasure must keep. */
#include <omp.h>
#include <stdio.h>

#include <sysmeasure.h>

int main(void)
{
    long sum = 0;
    sysmeasure_push_region("serial part");
    for (long i = 0; i < 1000; i++)
        sum += i;
    sysmeasure_pop_region("serial part");
    sysmeasure_push_region("openmp part");
    for (int r = 0; r < 10; r++) {
#pragma omp parallel reduction(+ : sum)
        {
            sum += omp_get_thread_num();
#pragma omp barrier
            sum += 1;
        }
    }
    sysmeasure_pop_region("openmp part");
    printf("omp_gcc: %ld\n", sum);
    return 3;
}
