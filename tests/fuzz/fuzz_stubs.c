/* What the fuzzing library lacks: the objects that stand in for system
 * functions (exit, sigaction, ...) are left out of it (they would take
 * over libFuzzer's own), and the few sm_* functions they define that
 * others call are given here, as the harnesses need them. */
#include <stdbool.h>

#include "core/ending.h"

/* No signal's default action is sysmeasure's to stand for in a harness. */
bool sm_ending_stands_for(int sig)
{
    (void)sig;
    return false;
}
