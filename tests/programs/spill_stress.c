/* Workloads for test_spill_background.py, run with a buffer budget small
 * enough to spill many times; every count below is planted and checked in
 * the archive.
 *
 *   spill-stress threads WAVES PER_WAVE PAIRS
 *       WAVES waves of PER_WAVE threads, each PAIRS pairs of "worker"; the
 *       main thread does PAIRS pairs of "main" per wave while they run.
 *       Prints "vmhwm_kb N", the peak resident memory (/proc/self/status).
 *   spill-stress closefrom PAIRS FILE
 *       PAIRS pairs of "before"; then closes every descriptor above 2 (as
 *       daemons and closefrom() do), creates FILE, and writes 100 numbered
 *       lines to it between blocks of PAIRS/100 pairs of "after"; then reads
 *       FILE back: exit 3 if it is not exactly those lines.
 *   spill-stress fork PAIRS
 *       PAIRS pairs of "parent"; a child (fork, no exec) does 2*PAIRS pairs
 *       of "child" and exits; then PAIRS more pairs of "parent".
 *   spill-stress mpi PAIRS   (spill-stress-mpi only)
 *       every rank: PAIRS pairs of "rank-work", then exit without
 *       MPI_Finalize. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef SPILL_STRESS_MPI
#include <mpi.h>
#endif

#include <sysmeasure.h>

static long pairs;

static void work(const char *name, long n)
{
    for (long i = 0; i < n; i++) {
        sysmeasure_push_region(name);
        sysmeasure_pop_region(name);
    }
}

static void *worker(void *arg)
{
    (void)arg;
    work("worker", pairs);
    return NULL;
}

static long vmhwm_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6))
            kb = atol(line + 6);
    if (f)
        fclose(f);
    return kb;
}

static int threads(int waves, int per_wave)
{
    pthread_t *t = calloc((size_t)per_wave, sizeof *t);
    for (int w = 0; w < waves; w++) {
        for (int i = 0; i < per_wave; i++)
            if (pthread_create(&t[i], NULL, worker, NULL) != 0)
                return 1;
        work("main", pairs);
        for (int i = 0; i < per_wave; i++)
            pthread_join(t[i], NULL);
    }
    free(t);
    printf("vmhwm_kb %ld\n", vmhwm_kb());
    return 0;
}

static int closefrom_case(const char *path)
{
    work("before", pairs);
    struct rlimit rl;
    long max = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 65536 ? (long)rl.rlim_cur : 65536;
    for (long fd = 3; fd < max; fd++)
        close((int)fd);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return 2;
    char line[64];
    for (int i = 0; i < 100; i++) {
        work("after", pairs / 100);
        int n = snprintf(line, sizeof line, "line %d of the program's own data\n", i);
        if (write(fd, line, (size_t)n) != n)
            return 2;
    }
    close(fd);
    FILE *f = fopen(path, "r");
    if (!f)
        return 2;
    int i = 0, bad = 0;
    char got[256];
    while (fgets(got, sizeof got, f)) {
        snprintf(line, sizeof line, "line %d of the program's own data\n", i++);
        bad |= strcmp(got, line) != 0;
    }
    fclose(f);
    return bad || i != 100 ? 3 : 0;
}

static int fork_case(void)
{
    work("parent", pairs);
    pid_t pid = fork();
    if (pid == 0) {
        work("child", 2 * pairs);
        exit(0);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
        return 4;
    work("parent", pairs);
    return 0;
}

int main(int argc, char **argv)
{
#ifdef SPILL_STRESS_MPI
    if (argc >= 3 && !strcmp(argv[1], "mpi")) {
        MPI_Init(&argc, &argv);
        pairs = atol(argv[2]);
        work("rank-work", pairs);
        MPI_Barrier(MPI_COMM_WORLD);
        return 0; /* no MPI_Finalize */
    }
#endif
    if (argc >= 5 && !strcmp(argv[1], "threads")) {
        pairs = atol(argv[4]);
        return threads(atoi(argv[2]), atoi(argv[3]));
    }
    if (argc >= 4 && !strcmp(argv[1], "closefrom")) {
        pairs = atol(argv[2]);
        return closefrom_case(argv[3]);
    }
    if (argc >= 3 && !strcmp(argv[1], "fork")) {
        pairs = atol(argv[2]);
        return fork_case();
    }
    fprintf(stderr, "usage: spill-stress threads|closefrom|fork|mpi ...\n");
    return 2;
}
