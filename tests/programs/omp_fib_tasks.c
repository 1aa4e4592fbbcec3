/* Task-recursive fibonacci: one OpenMP task per call (two task constructs,
 * then a taskwait; omp_fib.h), started by one thread of a parallel region.  fib(N)
 * makes exactly 2 * (fib(N + 1) - 1) tasks: the program prints N, the
 * result and that count, for the test to check the profile against.
 *   omp-fib-tasks [N]    (default 18) */
#include <stdio.h>
#include <stdlib.h>

#include "omp_fib.h"

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 18;
    long r = 0;
#pragma omp parallel
#pragma omp single
    r = fib_tasks_rec(n);
    printf("fib %d = %ld tasks %ld\n", n, r, fib_task_count(n));
    return 0;
}
