/* Process sampling: allocates and touches 200 MB in ten steps of 20 MB,
 * 150 ms apart, then holds it for 300 ms and frees it.  The resident set
 * rises step by step; its high-water mark is about 200 MB above the
 * start. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(void)
{
    enum { STEPS = 10, STEP = 20 * 1024 * 1024 };
    char *block[STEPS];
    for (int i = 0; i < STEPS; i++) {
        block[i] = malloc(STEP);
        if (!block[i])
            return 2;
        memset(block[i], i + 1, STEP); /* touched: resident */
        struct timespec ts = {0, 150000000};
        nanosleep(&ts, NULL);
    }
    struct timespec hold = {0, 300000000};
    nanosleep(&hold, NULL);
    long sum = 0;
    for (int i = 0; i < STEPS; i++) {
        sum += block[i][STEP / 2];
        free(block[i]);
    }
    printf("touched %d MB (%ld)\n", STEPS * STEP / (1024 * 1024), sum);
    return 0;
}
