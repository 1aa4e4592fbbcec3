/* OpenMP constructs with known counts, for the OMPT adapter's tests (built
 * by the test with clang -fopenmp).  argv[1] picks one:
 *   repeat N    N parallel regions (team size from OMP_NUM_THREADS), 1 ms
 *               of serial sleep between them
 *   nested      2 threads, each starting 2: 4 threads
 *   tasks       10 tasks and a taskwait, 5 tasks in a taskgroup, 1
 *               undeferred task, 1 final task with an included child
 *   locks [T]   T threads (2 if not given), 50 x per thread: omp_set_lock,
 *               critical, nest lock (twice)
 *   reduction   a parallel for with a sum reduction
 * Prints a result line, exits 0 (or 1 when the result is wrong). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static int repeat(int n)
{
    long total = 0;
    for (int i = 0; i < n; i++) {
#pragma omp parallel
        {
#pragma omp atomic
            total++;
        }
        sleep_us(1000);
    }
    printf("repeat: %ld thread visits\n", total);
    return total == (long)n * omp_get_max_threads() ? 0 : 1;
}

static int nested(void)
{
    int count = 0;
    omp_set_max_active_levels(2);
#pragma omp parallel num_threads(2)
    {
#pragma omp parallel num_threads(2)
        {
#pragma omp atomic
            count++;
            /* Both inner teams at once: else the runtime may give the
             * second one the thread the first one gave back (3 threads). */
            sleep_us(50000);
        }
    }
    printf("nested: %d inner threads\n", count);
    return count == 4 ? 0 : 1;
}

static int tasks(void)
{
    int done = 0;
#pragma omp parallel num_threads(2)
#pragma omp single
    {
        for (int i = 0; i < 10; i++) {
#pragma omp task
            {
                sleep_us(200);
#pragma omp atomic
                done++;
            }
        }
#pragma omp taskwait
#pragma omp taskgroup
        {
            for (int i = 0; i < 5; i++) {
#pragma omp task
                {
                    sleep_us(200);
#pragma omp atomic
                    done++;
                }
            }
        }
#pragma omp task if (0)
        {
#pragma omp atomic
            done++;
        }
#pragma omp task final(1)
        {
#pragma omp task
            {
#pragma omp atomic
                done++;
            }
#pragma omp atomic
            done++;
        }
    }
    printf("tasks: %d done\n", done);
    return done == 18 ? 0 : 1;
}

static int locks(int threads)
{
    omp_lock_t lock;
    omp_nest_lock_t nest;
    long a = 0, b = 0, c = 0;
    omp_init_lock(&lock);
    omp_init_nest_lock(&nest);
#pragma omp parallel num_threads(threads)
    for (int i = 0; i < 50; i++) {
        omp_set_lock(&lock);
        a++;
        omp_unset_lock(&lock);
#pragma omp critical
        b++;
        omp_set_nest_lock(&nest);
        omp_set_nest_lock(&nest);
        c++;
        omp_unset_nest_lock(&nest);
        omp_unset_nest_lock(&nest);
    }
    omp_destroy_lock(&lock);
    omp_destroy_nest_lock(&nest);
    printf("locks: %ld %ld %ld\n", a, b, c);
    long want = 50L * threads;
    return a == want && b == want && c == want ? 0 : 1;
}

static int reduction(void)
{
    long sum = 0;
#pragma omp parallel for num_threads(2) reduction(+ : sum)
    for (long i = 1; i <= 100000; i++)
        sum += i;
    printf("reduction: %ld\n", sum);
    return sum == 5000050000L ? 0 : 1;
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "";
    if (!strcmp(what, "repeat"))
        return repeat(argc > 2 ? atoi(argv[2]) : 100);
    if (!strcmp(what, "nested"))
        return nested();
    if (!strcmp(what, "tasks"))
        return tasks();
    if (!strcmp(what, "locks"))
        return locks(argc > 2 ? atoi(argv[2]) : 2);
    if (!strcmp(what, "reduction"))
        return reduction();
    fprintf(stderr, "usage: %s repeat [N] | nested | tasks | locks [T] | reduction\n", argv[0]);
    return 2;
}
