/* Two runs that overlap for certain: "wait-file GO STARTED" records the
 * region "waiting", creates the file STARTED (from main, so after
 * sysmeasure came up in this process), and stays in the region until the
 * file GO exists; then prints a line and exits 0. */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include <sysmeasure.h>

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: wait-file GO STARTED\n");
        return 2;
    }
    sysmeasure_push_region("waiting");
    FILE *f = fopen(argv[2], "w");
    if (!f) {
        perror(argv[2]);
        return 1;
    }
    fclose(f);
    struct timespec ts = {0, 10 * 1000 * 1000};
    for (int i = 0; i < 6000 && access(argv[1], F_OK) != 0; i++)
        nanosleep(&ts, NULL); /* a minute at most */
    sysmeasure_pop_region("waiting");
    puts("application output");
    return 0;
}
