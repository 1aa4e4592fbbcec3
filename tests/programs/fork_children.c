/* A program that starts processes of its own: "fork-children N MS [exec]"
 * visits "parent work" once (MS ms), then forks N children; child i visits
 * "child work" i+1 times, sleeping MS ms each, inside "child" (which it
 * enters after the fork, inside the parent's open "spawn"), and ends with
 * _exit (as Python's multiprocessing does) or, given "exec", execs this
 * program again as "fork-children 0 MS child I", which visits "child work"
 * I+1 times.  The parent waits for them and visits "parent work" once more. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sysmeasure.h>

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static void child_work(int visits, long ms)
{
    sysmeasure_push_region("child");
    for (int v = 0; v < visits; v++) {
        sysmeasure_push_region("child work");
        sleep_ms(ms);
        sysmeasure_pop_region("child work");
    }
    sysmeasure_pop_region("child");
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: fork-children N MS [exec]\n");
        return 2;
    }
    int n = atoi(argv[1]);
    long ms = atol(argv[2]);
    if (argc == 5 && !strcmp(argv[3], "child")) { /* the exec'd child */
        child_work(atoi(argv[4]) + 1, ms);
        return 0;
    }
    int exec_them = argc > 3 && !strcmp(argv[3], "exec");
    sysmeasure_push_region("parent work");
    sleep_ms(ms);
    sysmeasure_pop_region("parent work");
    sysmeasure_push_region("spawn");
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            return 1;
        }
        if (pid == 0) {
            if (exec_them) {
                char num[16];
                snprintf(num, sizeof num, "%d", i);
                execl(argv[0], argv[0], "0", argv[2], "child", num, (char *)NULL);
                perror("exec");
                _exit(127);
            }
            child_work(i + 1, ms);
            _exit(0);
        }
    }
    sysmeasure_pop_region("spawn");
    int failed = 0;
    for (int i = 0; i < n; i++) {
        int status;
        if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            failed++;
    }
    sysmeasure_push_region("parent work");
    sleep_ms(ms);
    sysmeasure_pop_region("parent work");
    printf("parent: %d children, %d failed\n", n, failed);
    return failed != 0;
}
