/* A program as a centre's user builds it against an installed sysmeasure
 * (test_centre_install.py): through sysmeasure-cc, pkg-config or CMake's
 * find_package.  One planted user-API region, entered 3 times, around a
 * function of its own; it prints one line, which it prints measured or not. */
#include <stdio.h>
#include <sysmeasure.h>

__attribute__((noinline)) static long centre_work(long n)
{
    volatile long s = 0;
    for (long i = 0; i < n; i++)
        s += i;
    return s;
}

int main(void)
{
    long total = 0;
    for (int i = 0; i < 3; i++) {
        sysmeasure_push_region("centre_region");
        total += centre_work(1000);
        sysmeasure_pop_region("centre_region");
    }
    printf("centre_app total %ld\n", total);
    return 0;
}
