/* Planted answers for causal profiling (tests/integration/test_causal.py).
 *
 *   causal-threads threads ITER UNIT: two threads meet at a barrier every
 *     iteration; one runs small_work (1 unit), the other big_work (2
 *     units).  Speeding small_work cannot help (the other thread is the
 *     bottleneck): about 0 %.  Speeding big_work by s shortens the
 *     iteration from 2 units to max(1, 2 (1 - s)): a program speedup of
 *     min(s, 50 %).
 *   causal-threads serial ITER UNIT: one thread, part_a (2 units, 40 %)
 *     then part_b (3 units, 60 %) per iteration: speeding part_a by s
 *     gives 0.4 s.
 *
 * Each iteration passes the progress point "iteration" (and, serial, ends
 * the user region "step").  A unit is UNIT
 * rounds of a dependent floating-point chain (about 1 ns each).  The
 * checksum printed and the exit code do not depend on the measurement. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sysmeasure.h"

static long n_iter, unit;
static pthread_barrier_t barrier;
static double sums[2];

static inline __attribute__((always_inline)) double spin(long rounds, double x)
{
    for (long i = 0; i < rounds; i++)
        x = x * 1.0000001 + 1e-9;
    return x;
}

__attribute__((noinline)) double small_work(double x)
{
    return spin(unit, x);
}

__attribute__((noinline)) double big_work(double x)
{
    return spin(2 * unit, x);
}

__attribute__((noinline)) double part_a(double x)
{
    return spin(2 * unit, x);
}

__attribute__((noinline)) double part_b(double x)
{
    return spin(3 * unit, x);
}

static void *worker(void *arg)
{
    long id = (long)arg;
    double x = 1.0;
    for (long i = 0; i < n_iter; i++) {
        x = id == 0 ? small_work(x) : big_work(x);
        pthread_barrier_wait(&barrier);
        if (id == 0)
            sysmeasure_progress("iteration");
    }
    sums[id] = x;
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: causal-threads threads|serial ITER UNIT\n");
        return 2;
    }
    n_iter = atol(argv[2]);
    unit = atol(argv[3]);
    if (!strcmp(argv[1], "serial")) {
        double x = 1.0;
        for (long i = 0; i < n_iter; i++) {
            sysmeasure_push_region("step"); /* a progress point by --causal-progress step */
            x = part_a(x);
            x = part_b(x);
            sysmeasure_pop_region("step");
            sysmeasure_progress("iteration");
        }
        printf("serial checksum %.6e\n", x);
        return 3; /* a planted exit code: unchanged by the measurement */
    }
    pthread_barrier_init(&barrier, NULL, 2);
    pthread_t t[2];
    for (long id = 0; id < 2; id++)
        pthread_create(&t[id], NULL, worker, (void *)id);
    for (int id = 0; id < 2; id++)
        pthread_join(t[id], NULL);
    printf("threads checksum %.6e %.6e\n", sums[0], sums[1]);
    return 3;
}
