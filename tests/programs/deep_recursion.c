/* A deep recursion for test_profile_deep.py: "level" entered DEPTH times,
 * one inside the other, with "leaf" at the bottom; all of it REPS times.
 *
 *   deep-recursion DEPTH REPS
 *
 * Prints "depth DEPTH reps REPS" and returns 0. */
#include <stdio.h>
#include <stdlib.h>
#include <sysmeasure.h>

static volatile unsigned long sink;

static void level(long d, long depth)
{
    sysmeasure_push_region("level");
    if (d < depth)
        level(d + 1, depth);
    else {
        sysmeasure_push_region("leaf");
        sink++;
        sysmeasure_pop_region("leaf");
    }
    sysmeasure_pop_region("level");
}

int main(int argc, char **argv)
{
    long depth = argc > 1 ? atol(argv[1]) : 3000;
    long reps = argc > 2 ? atol(argv[2]) : 3;
    for (long r = 0; r < reps; r++)
        level(1, depth);
    printf("depth %ld reps %ld\n", depth, reps);
    return 0;
}
