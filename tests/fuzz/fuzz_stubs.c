/* What the fuzzing library lacks: the objects that stand in for system
 * functions (exit, sigaction, ...) are left out of it (they would take
 * over libFuzzer's own: ending.c, the OMPT tool, the compiler hooks), and
 * the sm_* functions and tables they define that the rest refers to are
 * given here.  A harness never starts a measurement, so none of them is
 * reached but sm_ending_stands_for (signals held) and the tables. */
#include <stdbool.h>

#include "core/ending.h"
#include "core/subsystem.h"

/* No signal's default action is sysmeasure's to stand for in a harness. */
bool sm_ending_stands_for(int sig)
{
    (void)sig;
    return false;
}

void sm_ending_install(void)
{
}

int sm_ending_begin_write(void)
{
    return 0;
}

void sm_ending_saved(void)
{
}

void sm_ending_end_write(bool at_exit)
{
    (void)at_exit;
}

void sm_ending_wait_done(void)
{
}

int sm_ending_phase(void)
{
    return SM_END_RUNNING;
}

bool sm_ending_writer_is_self(void)
{
    return false;
}

void sm_ending_after_fork_child(void)
{
}

const sm_subsystem_t sm_ompt_subsystem = {.name = "OpenMP (OMPT)"};
const sm_subsystem_t sm_compiler_subsystem = {.name = "compiler instrumentation"};
