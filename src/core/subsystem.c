/* The subsystems' lifecycle (subsystem.h). */
#include "subsystem.h"

#include <stdbool.h>

/* Whether init succeeded: the others of a subsystem that stayed off are not
 * called. */
static bool sm_subsystem_on[32];

void sm_subsystems_init(const sm_config_t *cfg)
{
    for (int i = 0; sm_subsystems[i] && i < 32; i++)
        sm_subsystem_on[i] = !sm_subsystems[i]->init || sm_subsystems[i]->init(cfg) == 0;
}

/* Each one's hook where it is on. */
#define SM_EACH_SUBSYSTEM(hook, ...)                                         \
    for (int i = 0; sm_subsystems[i] && i < 32; i++)                         \
        if (sm_subsystem_on[i] && sm_subsystems[i]->hook)                    \
            sm_subsystems[i]->hook(__VA_ARGS__)

void sm_subsystems_thread_begin(sm_location_t *loc)
{
    if (loc->type == SM_LOCATION_CPU_THREAD)
        SM_EACH_SUBSYSTEM(thread_begin, loc);
}

void sm_subsystems_thread_end(sm_location_t *loc)
{
    if (loc->type == SM_LOCATION_CPU_THREAD)
        SM_EACH_SUBSYSTEM(thread_end, loc);
}

void sm_subsystems_after_daemon(void)
{
    SM_EACH_SUBSYSTEM(after_daemon);
}

void sm_subsystems_stop(void)
{
    SM_EACH_SUBSYSTEM(stop);
}

void sm_subsystems_flush(const sm_run_info_t *run)
{
    SM_EACH_SUBSYSTEM(flush, run);
}

void sm_subsystems_end(void)
{
    SM_EACH_SUBSYSTEM(end);
}
