/* Planted timings: "sleep 20ms" sleeps 20 ms, ten times, inside "outer";
 * "spin 1ms" busy-waits 1 ms five times inside each visit of a second thread's
 * "worker".  The tests check counts, means and exclusive time. */
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include <sysmeasure.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(long ms)
{
    uint64_t until = now_ns() + (uint64_t)ms * 1000000u;
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    while (now_ns() < until) /* nanosleep may return early on a signal */
        ;
}

static void *worker(void *arg)
{
    (void)arg;
    sysmeasure_push_region("worker");
    for (int i = 0; i < 5; i++) {
        sysmeasure_push_region("spin 1ms");
        uint64_t until = now_ns() + 1000000u;
        while (now_ns() < until)
            ;
        sysmeasure_pop_region("spin 1ms");
    }
    sysmeasure_pop_region("worker");
    return NULL;
}

int main(void)
{
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    sysmeasure_push_region("outer");
    for (int i = 0; i < 10; i++) {
        sysmeasure_push_region("sleep 20ms");
        sleep_ms(20);
        sysmeasure_pop_region("sleep 20ms");
    }
    sysmeasure_pop_region("outer");
    pthread_join(t, NULL);
    return 0;
}
