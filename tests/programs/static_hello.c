/* A program linked statically (built by its test with -static): the
 * launcher cannot preload into it and must say so; it still runs, prints
 * its line and exits with its own code. */
#include <stdio.h>

int main(void)
{
    printf("static hello\n");
    return 5;
}
