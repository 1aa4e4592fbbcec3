/* Task-recursive fibonacci: one OpenMP task per call (two task constructs,
 * then a taskwait), started by one thread of a parallel region.  fib(N)
 * makes exactly 2 * (fib(N + 1) - 1) tasks: the program prints N, the
 * result and that count, for the test to check the profile against.
 *   omp-fib-tasks [N]    (default 18) */
#include <stdio.h>
#include <stdlib.h>

static long fib(int n)
{
    long x, y;
    if (n < 2)
        return n;
#pragma omp task shared(x) firstprivate(n)
    x = fib(n - 1);
#pragma omp task shared(y) firstprivate(n)
    y = fib(n - 2);
#pragma omp taskwait
    return x + y;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 18;
    long r = 0;
#pragma omp parallel
#pragma omp single
    r = fib(n);
    long a = 0, b = 1; /* fib(n + 1), serially */
    for (int i = 0; i < n + 1; i++) {
        long c = a + b;
        a = b;
        b = c;
    }
    printf("fib %d = %ld tasks %ld\n", n, r, 2 * (a - 1));
    return 0;
}
