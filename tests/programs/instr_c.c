/* Built with sysmeasure-cc: every function becomes a region.  Planted
 * counts: leaf 1000, middle 100, work_50us 20 (about 50 us each), tiny
 * 1000000 (throttled), helper_excluded 10 and solve_a/solve_b 3 each (for
 * the filter tests).  argv[1] = "nothrottle": tiny is called 1000 times. */
#include <stdio.h>
#include <string.h>
#include <time.h>

static volatile long sink;

__attribute__((noinline)) void leaf(int i)
{
    sink += i;
}

__attribute__((noinline)) void middle(int i)
{
    for (int k = 0; k < 10; k++)
        leaf(i + k);
}

/* About 50 us of work, by the clock (not a sleep: the thread stays busy). */
__attribute__((noinline)) void work_50us(void)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do {
        for (int k = 0; k < 100; k++)
            sink += k;
        clock_gettime(CLOCK_MONOTONIC, &b);
    } while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < 50000);
}

__attribute__((noinline)) void tiny(void)
{
    sink++;
}

__attribute__((noinline)) void helper_excluded(void)
{
    sink--;
}

__attribute__((noinline)) void solve_a(void)
{
    helper_excluded();
}

__attribute__((noinline)) void solve_b(void)
{
    leaf(1);
}

int main(int argc, char **argv)
{
    long n_tiny = argc > 1 && strcmp(argv[1], "nothrottle") == 0 ? 1000 : 1000000;
    for (int i = 0; i < 100; i++)
        middle(i);
    for (int i = 0; i < 20; i++)
        work_50us();
    for (long i = 0; i < n_tiny; i++)
        tiny();
    for (int i = 0; i < 3; i++) {
        solve_a();
        solve_b();
    }
    for (int i = 0; i < 7; i++)
        helper_excluded();
    printf("sink %ld\n", (long)sink);
    return 0;
}
