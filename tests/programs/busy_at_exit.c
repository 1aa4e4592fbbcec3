/* Two detached threads record regions in a tight loop while main returns
 * with code 9: the process must exit cleanly with 9 and write its output. */
#include <pthread.h>
#include <unistd.h>

#include <sysmeasure.h>

static void *busy(void *arg)
{
    (void)arg;
    for (;;) {
        sysmeasure_push_region("busy");
        sysmeasure_push_region("inner");
        sysmeasure_pop_region("inner");
        sysmeasure_pop_region("busy");
    }
    return NULL;
}

int main(void)
{
    for (int i = 0; i < 2; i++) {
        pthread_t t;
        pthread_create(&t, NULL, busy, NULL);
        pthread_detach(t);
    }
    sysmeasure_push_region("main");
    usleep(50000);
    sysmeasure_pop_region("main");
    return 9;
}
