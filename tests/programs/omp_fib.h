/* Task-recursive fibonacci, shared by tests/programs/omp_fib_tasks.c and
 * bench/bench_omp.c: one OpenMP task per call (two task constructs, then a
 * taskwait).  fib_tasks(n) makes exactly 2 * (fib(n + 1) - 1) tasks. */
#ifndef SM_OMP_FIB_H
#define SM_OMP_FIB_H

static long fib_tasks_rec(int n)
{
    long x, y;
    if (n < 2)
        return n;
#pragma omp task shared(x) firstprivate(n)
    x = fib_tasks_rec(n - 1);
#pragma omp task shared(y) firstprivate(n)
    y = fib_tasks_rec(n - 2);
#pragma omp taskwait
    return x + y;
}

/* The count of tasks fib_tasks_rec(n) creates, computed serially. */
static long fib_task_count(int n)
{
    long a = 0, b = 1; /* fib(n + 1) */
    for (int i = 0; i < n + 1; i++) {
        long c = a + b;
        a = b;
        b = c;
    }
    return 2 * (a - 1);
}

#endif
