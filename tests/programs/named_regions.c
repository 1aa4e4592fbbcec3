/* Regions named on the command line, each sleeping a planted time:
 *   named-regions PATH=MS[xCOUNT] ...
 * PATH is one region name or several separated by '|' (nested, outermost
 * first); the innermost sleeps MS milliseconds, COUNT times (default 1).
 * Names may hold anything else (C++ templates: "X<int, Y<2>>::run"). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sysmeasure.h>

#define MAX_DEPTH 16

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

int main(int argc, char **argv)
{
    for (int a = 1; a < argc; a++) {
        char *spec = strdup(argv[a]);
        char *eq = spec ? strrchr(spec, '=') : NULL;
        if (!eq)
            return 2;
        *eq = '\0';
        char *x = strchr(eq + 1, 'x');
        long ms = strtol(eq + 1, NULL, 10), count = x ? strtol(x + 1, NULL, 10) : 1;
        char *names[MAX_DEPTH];
        int depth = 0;
        for (char *p = spec; p && depth < MAX_DEPTH; depth++) {
            names[depth] = p;
            p = strchr(p, '|');
            if (p)
                *p++ = '\0';
        }
        for (long c = 0; c < count; c++) {
            for (int d = 0; d < depth; d++)
                sysmeasure_push_region(names[d]);
            sleep_ms(ms);
            for (int d = depth; d-- > 0;)
                sysmeasure_pop_region(names[d]);
        }
        free(spec);
    }
    return 0;
}
