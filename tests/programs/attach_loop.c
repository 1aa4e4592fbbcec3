/* A long-running program for sysmeasure-attach: "attach-loop STOP STARTED"
 * creates STARTED once it runs, then repeats "step" (a 2 ms sleep inside
 * the region) on the main thread and "tick" (1 ms) on a second thread
 * until the file STOP exists (at most a minute); prints the steps it made
 * and exits 0.  "outer" stays open the whole time: it began before any
 * window and ends after all. */
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include <sysmeasure.h>

static volatile int stop;

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void *ticker(void *arg)
{
    (void)arg;
    while (!stop) {
        sysmeasure_push_region("tick");
        sleep_ms(1);
        sysmeasure_pop_region("tick");
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: attach-loop STOP STARTED\n");
        return 2;
    }
    pthread_t t;
    pthread_create(&t, NULL, ticker, NULL);
    sysmeasure_push_region("outer");
    FILE *f = fopen(argv[2], "w");
    if (!f) {
        perror(argv[2]);
        return 1;
    }
    fclose(f);
    long steps = 0;
    for (int i = 0; i < 20000 && access(argv[1], F_OK) != 0; i++) {
        sysmeasure_push_region("step");
        sleep_ms(2);
        sysmeasure_pop_region("step");
        steps++;
    }
    stop = 1;
    pthread_join(t, NULL);
    sysmeasure_pop_region("outer");
    printf("steps %s\n", steps > 0 ? "made" : "none");
    return 0;
}
