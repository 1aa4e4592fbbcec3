/* A terminating signal that lands while the program's threads hold the C
 * library's locks, for test_signal_end.py.  Every mode first records "work"
 * > "step" (STEPS pairs) on the main thread.
 *
 *   signal-storm malloc STEPS THREADS
 *       THREADS threads allocate and free blocks of many sizes (the heap's
 *       bins, sbrk and mmap), write lines to /dev/null through stdio and
 *       record an "alloc" region every 16 blocks; the main thread blocks
 *       SIGTERM (so that the test's SIGTERM lands on one of them) and
 *       prints "ready".  Prints "not killed" and returns 3 if it is still
 *       alive 30 s later.
 *   signal-storm read STEPS IDLE
 *       with IDLE 1, first starts a thread that blocks SIGTERM and waits;
 *       prints "ready", then reads stdin (a pipe the test keeps open): a
 *       SIGTERM comes while the main thread is in read().  Prints "read
 *       returned" and returns 4 if read() ever returns.
 *   signal-storm sleep STEPS SECONDS
 *       prints "ready", then sleeps SECONDS (in pieces, so that a signal's
 *       EINTR does not end it) and returns 0.
 *   signal-storm fork-child STEPS IDLE DELAY_US
 *       with IDLE 1, first starts a thread that waits (the C library then
 *       takes its locks in the child too); a forked child (no exec)
 *       allocates in a loop on its one thread until a SIGTERM the parent
 *       sends it DELAY_US later ends it; the parent prints "child killed by
 *       N" (0: not killed within 30 s) and returns 0.
 *   signal-storm after-end STEPS
 *       returns 0 from main; a destructor of the program's, which runs after
 *       sysmeasure wrote the output at exit, prints "in destructor" and
 *       sleeps 30 s.
 *   signal-storm daemon STEPS
 *       starts a thread that waits, then daemon(1, 1) (the parent exits in
 *       the C library, the child goes on measuring, without that thread);
 *       the child prints "daemon PID", records "after" > "step" (STEPS
 *       pairs) and sleeps 30 s. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sysmeasure.h>

static void work(long steps)
{
    sysmeasure_push_region("work");
    for (long i = 0; i < steps; i++) {
        sysmeasure_push_region("step");
        sysmeasure_pop_region("step");
    }
    sysmeasure_pop_region("work");
}

static int sleep_at_the_end;

static void __attribute__((destructor)) at_the_end(void)
{
    if (!sleep_at_the_end)
        return;
    static const char line[] = "in destructor\n";
    if (write(1, line, sizeof line - 1) < 0)
        return;
    struct timespec ts = {30, 0};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Blocks of sizes from a few bytes to beyond the mmap threshold, kept a
 * while, freed out of order: most of the thread's time is inside malloc
 * and free, with the arena's lock held. */
static void *allocator(void *arg)
{
    unsigned seed = (unsigned)(size_t)arg * 2654435761u;
    static const size_t sizes[] = {24, 200, 1500, 5000, 40000, 150000, 600000, 3000000};
    void *live[16] = {0};
    FILE *null = fopen("/dev/null", "w");
    for (unsigned long i = 0;; i++) {
        if (i % 16 == 0)
            sysmeasure_push_region("alloc");
        unsigned slot = rand_r(&seed) % 16;
        free(live[slot]);
        size_t n = sizes[rand_r(&seed) % (sizeof sizes / sizeof sizes[0])] +
                   (size_t)(rand_r(&seed) % 512);
        live[slot] = malloc(n);
        if (live[slot])
            ((char *)live[slot])[n - 1] = 1;
        if (i % 64 == 0 && null)
            fprintf(null, "block %lu of %zu bytes\n", i, n);
        if (i % 16 == 15)
            sysmeasure_pop_region("alloc");
    }
    return NULL;
}

/* A thread that blocks SIGTERM and waits for ever. */
static void *idle(void *arg)
{
    (void)arg;
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &term, NULL);
    for (;;)
        pause();
    return NULL;
}

static void start_idle(void)
{
    pthread_t t;
    pthread_create(&t, NULL, idle, NULL);
}

static int storm(long steps, int threads)
{
    work(steps);
    pthread_t t;
    for (int i = 0; i < threads; i++)
        pthread_create(&t, NULL, allocator, (void *)(size_t)(i + 1));
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &term, NULL);
    printf("ready\n");
    fflush(stdout);
    sleep_us(30000000);
    printf("not killed\n");
    return 3;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    const char *mode = argv[1];
    long steps = atol(argv[2]);
    if (!strcmp(mode, "malloc") && argc > 3)
        return storm(steps, atoi(argv[3]));
    work(steps);
    if (!strcmp(mode, "read")) {
        if (argc > 3 && atoi(argv[3]))
            start_idle();
        printf("ready\n");
        fflush(stdout);
        char c;
        ssize_t n = read(0, &c, 1);
        printf("read returned %zd\n", n);
        return 4;
    }
    if (!strcmp(mode, "sleep") && argc > 3) {
        printf("ready\n");
        fflush(stdout);
        sleep_us(atol(argv[3]) * 1000000);
        return 0;
    }
    if (!strcmp(mode, "after-end")) {
        sleep_at_the_end = 1;
        return 0;
    }
    if (!strcmp(mode, "daemon")) {
        start_idle();
        fflush(stdout);
        if (daemon(1, 1) != 0)
            return 5;
        printf("daemon %d\n", (int)getpid());
        fflush(stdout);
        sysmeasure_push_region("after");
        for (long i = 0; i < steps; i++) {
            sysmeasure_push_region("step");
            sysmeasure_pop_region("step");
        }
        sysmeasure_pop_region("after");
        sleep_us(30000000);
        return 0;
    }
    if (!strcmp(mode, "fork-child") && argc > 4) {
        if (atoi(argv[3]))
            start_idle();
        fflush(stdout);
        pid_t child = fork();
        if (child == 0) {
            allocator((void *)1);
            _exit(0);
        }
        sleep_us(atol(argv[4]));
        kill(child, SIGTERM);
        int status = 0;
        for (int i = 0; i < 3000 && waitpid(child, &status, WNOHANG) == 0; i++)
            sleep_us(10000);
        if (!WIFSIGNALED(status))
            kill(child, SIGKILL); /* a hang: the test says so */
        printf("child killed by %d\n", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
        return 0;
    }
    return 2;
}
