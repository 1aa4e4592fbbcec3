/* OpenMP constructs at known source lines, for the names taken from DWARF
 * (tests/integration/test_openmp_srcloc.py, built with and without -g).
 * The test finds each construct's line by its "srcloc:" marker. */
#include <omp.h>
#include <stdio.h>

/* Two parallel regions from one source line: their names must differ. */
#define TWO_REGIONS(counter)                                                                       \
    do {                                                                                           \
        _Pragma("omp parallel") _Pragma("omp atomic") counter++;                                   \
        _Pragma("omp parallel") _Pragma("omp atomic") counter += 2;                                \
    } while (0)

static int sum_to(int n)
{
    int sum = 0;
#pragma omp parallel for reduction(+ : sum) /* srcloc: loop */
    for (int i = 1; i <= n; i++)
        sum += i;
    return sum;
}

int main(void)
{
    int visits = 0, tasks = 0, twice = 0;
#pragma omp parallel /* srcloc: parallel */
    {
#pragma omp atomic
        visits++;
#pragma omp single
        {
#pragma omp task /* srcloc: task */
            {
#pragma omp atomic
                tasks++;
            }
        }
    }
    TWO_REGIONS(twice); /* srcloc: two */
    printf("visits %d tasks %d twice %d sum %d\n", visits, tasks, twice, sum_to(100));
    return 0;
}
