/* System calls under sampling: a thread blocks in read() on a pipe that a
 * second thread fills after 2 s, while the main thread sleeps 2 s in
 * nanosleep; with --sampling-clock real the sampling signal keeps arriving
 * meanwhile.  Neither call may fail with EINTR (the handler is SA_RESTART;
 * nanosleep, which the kernel never restarts, must still sleep its time:
 * the program checks the time slept).  Then, with SIGPROF, a timer of the
 * program's own (setitimer ITIMER_PROF) must keep its handler and tick.
 * Prints what it saw; exits 1 on any failure. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static int sm_pipe[2];
static volatile sig_atomic_t sm_prof_ticks;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *writer(void *arg)
{
    (void)arg;
    struct timespec ts = {2, 0};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) /* the writer side tolerates it */
        ;
    if (write(sm_pipe[1], "x", 1) != 1)
        perror("write");
    return NULL;
}

static void *reader(void *arg)
{
    int *failed = arg;
    char c;
    double t0 = now_s();
    ssize_t n = read(sm_pipe[0], &c, 1);
    if (n != 1) {
        printf("read failed: %s\n", n < 0 ? strerror(errno) : "end of file");
        *failed = 1;
    } else {
        printf("read returned after %.2f s\n", now_s() - t0);
    }
    return NULL;
}

static void on_prof(int sig)
{
    (void)sig;
    sm_prof_ticks++;
}

int main(void)
{
    int failed = 0;
    if (pipe(sm_pipe) != 0)
        return 2;
    pthread_t w, r;
    pthread_create(&r, NULL, reader, &failed);
    pthread_create(&w, NULL, writer, NULL);

    struct timespec ts = {2, 0};
    double t0 = now_s();
    if (nanosleep(&ts, NULL) != 0) {
        printf("nanosleep failed: %s\n", strerror(errno));
        failed = 1;
    }
    double slept = now_s() - t0;
    printf("nanosleep slept %.2f s\n", slept);
    if (slept < 1.99)
        failed = 1;
    pthread_join(w, NULL);
    pthread_join(r, NULL);

    /* The program's own SIGPROF timer. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_prof;
    sigaction(SIGPROF, &sa, NULL);
    struct itimerval it = {{0, 10000}, {0, 10000}};
    setitimer(ITIMER_PROF, &it, NULL);
    volatile double x = 0;
    double t1 = now_s();
    while (sm_prof_ticks < 20 && now_s() - t1 < 20)
        x += 1.0;
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_PROF, &off, NULL);
    struct sigaction now;
    sigaction(SIGPROF, NULL, &now);
    printf("SIGPROF ticks %d (%g), handler kept %s\n", (int)sm_prof_ticks, x > 0 ? 1.0 : 0.0,
           now.sa_handler == on_prof ? "yes" : "no");
    if (sm_prof_ticks < 20 || now.sa_handler != on_prof)
        failed = 1;
    printf("%s\n", failed ? "FAILED" : "ok");
    return failed;
}
