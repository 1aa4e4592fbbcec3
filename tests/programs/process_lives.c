/* Odd ways for a process to live, for test_process_lives.py.
 *
 *   process-lives daemon EVENTS       "before" > "step" x EVENTS, a thread
 *                                     that records "thread work" and ends,
 *                                     then daemon(0, 1) (the parent exits
 *                                     inside the C library, the child goes on
 *                                     in "/"), then "after" > "step" x EVENTS;
 *                                     prints "daemon PID" (the child's pid)
 *   process-lives write6 EVENTS       "work" > "step" x EVENTS, then writes
 *                                     6 bytes to stdout and returns 0 (run
 *                                     under a small file size limit)
 *   process-lives sigjump JUMPS [US]  a SIGALRM handler of the program's own
 *                                     jumps (siglongjmp) out of a loop of
 *                                     "inner" regions inside "spin", JUMPS
 *                                     times, every US microseconds (300);
 *                                     after each jump, "spin" is popped
 *                                     (which closes what the jump left open);
 *                                     prints "jumps JUMPS"
 *   process-lives[-mpi] busy FILE     every rank records "step" regions, each
 *                                     a little work (and, with MPI, a ring
 *                                     exchange each 1000) until killed; once
 *                                     it has recorded 20000 steps it
 *                                     appends its rank to FILE (one line)
 *                                     and goes on */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>
#ifdef SM_WITH_MPI
#include <mpi.h>
#endif

#include <sysmeasure.h>

static void steps(const char *outer, long events)
{
    sysmeasure_push_region(outer);
    for (long i = 0; i < events; i++) {
        sysmeasure_push_region("step");
        sysmeasure_pop_region("step");
    }
    sysmeasure_pop_region(outer);
}

static void *thread_work(void *arg)
{
    steps("thread work", (long)arg);
    return NULL;
}

static int run_daemon(long events)
{
    steps("before", events);
    pthread_t t;
    if (pthread_create(&t, NULL, thread_work, (void *)events) != 0 || pthread_join(t, NULL) != 0)
        return 3;
    if (daemon(0, 1) != 0) {
        perror("daemon");
        return 4;
    }
    steps("after", events);
    printf("daemon %d\n", (int)getpid());
    return 0;
}

static int run_write6(long events)
{
    steps("work", events);
    if (write(1, "hello\n", 6) != 6)
        return 5;
    return 0;
}

static sigjmp_buf jump_to;
static volatile sig_atomic_t armed;

static void on_alarm(int sig)
{
    (void)sig;
    if (armed) {
        armed = 0;
        siglongjmp(jump_to, 1);
    }
}

static int run_sigjump(long jumps, long us)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGALRM, &sa, NULL) != 0)
        return 6;
    /* The jump lands at a random place of the loop, inside sysmeasure's
     * enter and leave too. */
    struct itimerval every = {{0, us}, {0, us}};
    volatile long done = 0;
    while (done < jumps) {
        if (sigsetjmp(jump_to, 1) == 0) {
            sysmeasure_push_region("spin");
            armed = 1;
            if (done == 0)
                setitimer(ITIMER_REAL, &every, NULL);
            for (;;) {
                sysmeasure_push_region("inner");
                sysmeasure_pop_region("inner");
            }
        }
        sysmeasure_pop_region("spin"); /* closes an "inner" the jump left open */
        done++;
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    printf("jumps %ld\n", (long)done);
    return 0;
}

static int run_busy(const char *file)
{
    int rank = 0, size = 1;
#ifdef SM_WITH_MPI
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
#endif
    for (long i = 0;; i++) {
        sysmeasure_push_region("step");
        for (volatile int k = 0; k < 2000; k++) /* some work: a few 100,000 events a second */
            ;
        sysmeasure_pop_region("step");
        if (i % 1000 == 999 && size > 1) {
#ifdef SM_WITH_MPI
            int out = rank, in = -1;
            MPI_Sendrecv(&out, 1, MPI_INT, (rank + 1) % size, 7, &in, 1, MPI_INT,
                         (rank + size - 1) % size, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
#endif
        }
        if (i == 19999) {
            char line[32];
            int n = snprintf(line, sizeof line, "%d\n", rank);
            int fd = open(file, O_WRONLY | O_APPEND | O_CREAT, 0644);
            if (fd < 0 || write(fd, line, (size_t)n) != n)
                return 7;
            close(fd);
        }
    }
}

int main(int argc, char **argv)
{
#ifdef SM_WITH_MPI
    MPI_Init(&argc, &argv);
#endif
    if (argc < 3) {
        fprintf(stderr, "usage: process-lives MODE ARG\n");
        return 2;
    }
    const char *mode = argv[1];
    if (!strcmp(mode, "daemon"))
        return run_daemon(atol(argv[2]));
    if (!strcmp(mode, "write6"))
        return run_write6(atol(argv[2]));
    if (!strcmp(mode, "sigjump"))
        return run_sigjump(atol(argv[2]), argc > 3 ? atol(argv[3]) : 300);
    if (!strcmp(mode, "busy"))
        return run_busy(argv[2]);
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
}
