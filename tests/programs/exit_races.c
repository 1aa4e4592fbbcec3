/* Hard ways for a process to end, for test_exit_races.py.  Every mode first
 * records "work" > "step" regions (EVENTS pairs of them) and prints
 * "application output" to stdout (buffered: the end must flush it).
 *
 *   exit-races concurrent EVENTS         two threads call exit(3) and exit(4)
 *                                        at the same moment
 *   exit-races thread-exit EVENTS DIR    main calls exit(41); a thread calls
 *                                        exit(42) once DIR/traces exists (the
 *                                        end-of-run write has begun)
 *   exit-races signal-in-write EVENTS DIR SIG
 *                                        main returns 0; a thread sends SIG
 *                                        to the process once DIR/traces exists
 *   exit-races raise EVENTS SIG          raise(SIG) inside a region
 *   exit-races ignore EVENTS SIG         SIG ignored, raised, the program goes on
 *   exit-races handle EVENTS SIG         SIG handled, raised, the program goes
 *                                        on; says what disposition it found
 *   exit-races restore EVENTS SIG        a handler set, then SIG_DFL again
 *                                        with signal(); then raise(SIG)
 *   exit-races deep DEPTH                DEPTH nested regions never left
 *   exit-races deep-return DEPTH         DEPTH nested regions, all left again,
 *                                        then one "after" region
 *   exit-races _exit EVENTS CODE         _exit(CODE) inside a region (stdout
 *                                        is not flushed: _exit leaves it)
 *   exit-races _Exit EVENTS CODE         the same with _Exit
 *   exit-races quick_exit EVENTS CODE    quick_exit(CODE) with a handler of
 *                                        the program's (at_quick_exit) that
 *                                        records a region and says so on stderr
 *   exit-races vfork EVENTS              a vfork child calls _exit(0) (it must
 *                                        write nothing); then exit(0) */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sysmeasure.h>

static pthread_barrier_t barrier;
static char traces[4096];
static int sig_to_send;

static void work(long events)
{
    sysmeasure_push_region("work");
    for (long i = 0; i < events; i++) {
        sysmeasure_push_region("step");
        sysmeasure_pop_region("step");
    }
    sysmeasure_pop_region("work");
}

static void *exit_now(void *arg)
{
    pthread_barrier_wait(&barrier);
    exit((int)(long)arg);
}

/* Waits (polling: this is the test program, not sysmeasure) until the
 * output's traces folder appears. */
static void wait_for_write(void)
{
    struct stat st;
    struct timespec ms = {0, 1000000};
    while (stat(traces, &st) != 0)
        nanosleep(&ms, NULL);
}

static void *exit_in_write(void *arg)
{
    (void)arg;
    wait_for_write();
    exit(42);
}

static void *signal_in_write(void *arg)
{
    (void)arg;
    wait_for_write();
    kill(getpid(), sig_to_send);
    return NULL;
}

static void on_quick_exit(void)
{
    sysmeasure_push_region("quick exit handler");
    sysmeasure_pop_region("quick exit handler");
    fprintf(stderr, "quick exit handler ran\n");
}

static volatile sig_atomic_t handled;
static void on_signal(int sig)
{
    handled = sig;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    const char *mode = argv[1];
    long n = atol(argv[2]);
    if (!strcmp(mode, "deep-return")) {
        for (long i = 0; i < n; i++)
            sysmeasure_push_region(i % 2 ? "odd" : "even");
        for (long i = n - 1; i >= 0; i--)
            sysmeasure_pop_region(i % 2 ? "odd" : "even");
        sysmeasure_push_region("after");
        sysmeasure_pop_region("after");
        printf("application output\n");
        return 0;
    }
    if (!strcmp(mode, "deep")) {
        for (long i = 0; i < n; i++)
            sysmeasure_push_region(i % 2 ? "odd" : "even");
        printf("application output\n");
        return 0;
    }
    work(n);
    printf("application output\n");
    int sig = argc > 3 ? atoi(argv[3]) : 0;
    if (!strcmp(mode, "concurrent")) {
        pthread_t t[2];
        pthread_barrier_init(&barrier, NULL, 3);
        pthread_create(&t[0], NULL, exit_now, (void *)3L);
        pthread_create(&t[1], NULL, exit_now, (void *)4L);
        pthread_barrier_wait(&barrier);
        pthread_join(t[0], NULL); /* never returns */
        return 5;
    }
    if (!strcmp(mode, "thread-exit") && argc > 3) {
        snprintf(traces, sizeof traces, "%s/traces", argv[3]);
        pthread_t t;
        pthread_create(&t, NULL, exit_in_write, NULL);
        exit(41);
    }
    if (!strcmp(mode, "signal-in-write") && argc > 4) {
        snprintf(traces, sizeof traces, "%s/traces", argv[3]);
        sig_to_send = atoi(argv[4]);
        pthread_t t;
        pthread_create(&t, NULL, signal_in_write, NULL);
        return 0;
    }
    if (!strcmp(mode, "_exit") || !strcmp(mode, "_Exit")) {
        sysmeasure_push_region("before the exit");
        if (mode[1] == 'e')
            _exit(sig);
        _Exit(sig);
    }
    if (!strcmp(mode, "quick_exit")) {
        at_quick_exit(on_quick_exit);
        sysmeasure_push_region("before the exit");
        quick_exit(sig);
    }
    if (!strcmp(mode, "vfork")) {
        fflush(stdout);
        pid_t child = vfork();
        if (child == 0)
            _exit(0);
        int status = 0;
        waitpid(child, &status, 0);
        printf("child ended %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        exit(0);
    }
    if (!strcmp(mode, "raise")) {
        sysmeasure_push_region("before the signal");
        raise(sig);
        return 6; /* not reached: the default action ends the process */
    }
    if (!strcmp(mode, "ignore")) {
        signal(sig, SIG_IGN);
        raise(sig);
        printf("still running\n");
        return 0;
    }
    if (!strcmp(mode, "handle")) {
        struct sigaction sa, old;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(sig, &sa, &old);
        printf("found %s\n", old.sa_handler == SIG_DFL && !(old.sa_flags & SA_SIGINFO)
                                 ? "SIG_DFL" : "something else");
        raise(sig);
        printf("handled %d\n", (int)handled);
        return 0;
    }
    if (!strcmp(mode, "restore")) {
        signal(sig, on_signal);
        if (signal(sig, SIG_DFL) != on_signal)
            printf("signal() did not give the handler back\n");
        sysmeasure_push_region("before the signal");
        raise(sig);
        return 6;
    }
    return 2;
}
