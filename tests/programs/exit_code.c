/* Records a region, prints a line and exits with the code given: the tests
 * check that the application's exit code and output survive any sysmeasure
 * failure (for example a full disk). */
#include <stdio.h>
#include <stdlib.h>

#include <sysmeasure.h>

int main(int argc, char **argv)
{
    sysmeasure_push_region("work");
    puts("application output");
    sysmeasure_pop_region("work");
    return argc > 1 ? atoi(argv[1]) : 0;
}
