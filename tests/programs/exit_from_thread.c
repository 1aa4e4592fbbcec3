/* exit() from a second thread while both threads have regions open: the
 * output must still be written, balanced, and the exit code kept (7). */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include <sysmeasure.h>

static void *worker(void *arg)
{
    (void)arg;
    sysmeasure_push_region("worker region");
    sysmeasure_push_region("inner");
    usleep(10000);
    exit(7);
}

int main(void)
{
    sysmeasure_push_region("main region");
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_join(t, NULL); /* never returns: the worker exits the process */
    sysmeasure_pop_region("main region");
    return 0;
}
