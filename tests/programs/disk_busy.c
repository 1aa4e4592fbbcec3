/* A busy program for test_disk_limits.py: every count below is planted.
 *
 *   disk-busy THREADS ITERATIONS WORK
 *       THREADS threads (0: the main thread itself), each: "run" around
 *       ITERATIONS times "outer" > "inner", with WORK rounds of arithmetic
 *       in each "inner" (so that the event rate is a program's, not a
 *       loop's); then prints "done" and the checksum of the arithmetic.
 *       "run" stays open the whole time: when the trace stops, it is open.
 *       The threads enter "run" together (a barrier), before any of them
 *       has recorded enough to fill a disk. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <sysmeasure.h>

static long iterations, work;
static pthread_barrier_t start;
static int threaded;

static void *busy(void *arg)
{
    volatile unsigned long *sum = arg;
    unsigned long x = 1;
    sysmeasure_push_region("run");
    if (threaded)
        pthread_barrier_wait(&start);
    for (long i = 0; i < iterations; i++) {
        sysmeasure_push_region("outer");
        sysmeasure_push_region("inner");
        for (long k = 0; k < work; k++)
            x = x * 6364136223846793005ul + 1442695040888963407ul;
        sysmeasure_pop_region("inner");
        sysmeasure_pop_region("outer");
    }
    sysmeasure_pop_region("run");
    *sum = x;
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 0;
    iterations = argc > 2 ? atol(argv[2]) : 100000;
    work = argc > 3 ? atol(argv[3]) : 0;
    unsigned long total = 0;
    if (threads <= 0) {
        volatile unsigned long sum = 0;
        busy((void *)&sum);
        total = sum;
    } else {
        threaded = 1;
        pthread_barrier_init(&start, NULL, (unsigned)threads);
        pthread_t *t = calloc((size_t)threads, sizeof *t);
        volatile unsigned long *sums = calloc((size_t)threads, sizeof *sums);
        for (int i = 0; i < threads; i++)
            if (pthread_create(&t[i], NULL, busy, (void *)&sums[i]) != 0)
                return 1;
        for (int i = 0; i < threads; i++) {
            pthread_join(t[i], NULL);
            total ^= sums[i];
        }
        free(t);
        free((void *)sums);
    }
    printf("done %lx\n", total);
    return 0;
}
