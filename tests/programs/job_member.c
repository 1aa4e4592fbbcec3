/* One process of a job without MPI (the tests give it a launcher's
 * environment): "job-member MS [GO STARTED]" visits the region "work" twice,
 * sleeping MS ms in each; then, given GO and STARTED, enters "waiting",
 * creates STARTED and stays until the file GO exists (so that a test decides
 * the order in which the processes end, or kills one there); prints a line
 * and exits 0. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <sysmeasure.h>

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

int main(int argc, char **argv)
{
    if (argc != 2 && argc != 4) {
        fprintf(stderr, "usage: job-member MS [GO STARTED]\n");
        return 2;
    }
    long ms = atol(argv[1]);
    for (int i = 0; i < 2; i++) {
        sysmeasure_push_region("work");
        sleep_ms(ms);
        sysmeasure_pop_region("work");
    }
    if (argc == 4) {
        sysmeasure_push_region("waiting");
        FILE *f = fopen(argv[3], "w");
        if (!f) {
            perror(argv[3]);
            return 1;
        }
        fclose(f);
        for (int i = 0; i < 6000 && access(argv[2], F_OK) != 0; i++)
            sleep_ms(10); /* a minute at most */
        sysmeasure_pop_region("waiting");
    }
    puts("application output");
    return 0;
}
