/* Many events on several threads: T threads, each I iterations of
 * "iteration" > "step" (two steps).  Used with a tiny buffer budget to force
 * spills; the tests check that every planted event is in the archive.
 *   many-regions THREADS ITERATIONS */
#include <pthread.h>
#include <stdlib.h>

#include <sysmeasure.h>

static long iterations;

static void *work(void *arg)
{
    (void)arg;
    for (long i = 0; i < iterations; i++) {
        sysmeasure_push_region("iteration");
        for (int s = 0; s < 2; s++) {
            sysmeasure_push_region("step");
            sysmeasure_pop_region("step");
        }
        sysmeasure_pop_region("iteration");
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    iterations = argc > 2 ? atol(argv[2]) : 10000;
    pthread_t *t = calloc((size_t)threads, sizeof *t);
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, work, NULL);
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    free(t);
    return 0;
}
