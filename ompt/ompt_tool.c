/* The OMPT tool (its parts: ompt_private.h): ompt_start_tool, the
 * callbacks registered at initialize, and the end of the run. */
#define _GNU_SOURCE
#include "sm_build.h"
#include "ompt_tool.h"

#ifdef SM_HAVE_OMPT
#include "ompt_private.h"

#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/config.h"
#include "core/definitions.h"
#include "core/events.h"
#include "core/location.h"
#include "core/runtime.h"
#include "util/log.h"
#include "util/srcloc.h"
#include "util/symbols.h"

SM_EXPORT ompt_start_tool_result_t *ompt_start_tool(unsigned int omp_version,
                                                    const char *runtime_version);

/* ---------------------------------------------------------------- tool */

bool sm_ompt_in_use(void)
{
    return __atomic_load_n(&sm_ompt_initialized, __ATOMIC_ACQUIRE) != 0;
}

static int sm_ompt_initialize(ompt_function_lookup_t lookup, int initial_device,
                              ompt_data_t *tool_data)
{
    (void)initial_device;
    (void)tool_data;
    ompt_set_callback_t set = (ompt_set_callback_t)lookup("ompt_set_callback");
    if (!set || !sm_runtime_active)
        return 0;
    sm_attr_requested = sm_attribute_define("omp requested threads", SM_ATTR_INT64);
    sm_attr_team = sm_attribute_define("omp team size", SM_ATTR_INT64);
    static const struct {
        ompt_callbacks_t event;
        ompt_callback_t fn;
        const char *name;
    } callbacks[] = {
#define SM_CB(event, fn) {ompt_callback_##event, (ompt_callback_t)fn, #event}
        SM_CB(thread_begin, sm_cb_thread_begin),
        SM_CB(parallel_begin, sm_cb_parallel_begin),
        SM_CB(parallel_end, sm_cb_parallel_end),
        SM_CB(implicit_task, sm_cb_implicit_task),
        SM_CB(work, sm_cb_work),
        SM_CB(sync_region, sm_cb_sync_region),
        SM_CB(masked, sm_cb_masked),
        SM_CB(task_create, sm_cb_task_create),
        SM_CB(task_schedule, sm_cb_task_schedule),
        SM_CB(mutex_acquire, sm_cb_mutex_acquire),
        SM_CB(mutex_acquired, sm_cb_mutex_acquired),
        SM_CB(mutex_released, sm_cb_mutex_released),
        SM_CB(nest_lock, sm_cb_nest_lock),
#undef SM_CB
    };
    char missing[256] = "";
    for (size_t i = 0; i < sizeof callbacks / sizeof callbacks[0]; i++) {
        ompt_set_result_t rc = set(callbacks[i].event, callbacks[i].fn);
        if (rc == ompt_set_error || rc == ompt_set_never) {
            size_t n = strlen(missing);
            snprintf(missing + n, sizeof missing - n, "%s%s", n ? ", " : "", callbacks[i].name);
        }
    }
    if (missing[0])
        sm_info(1, "OpenMP: the runtime does not report %s", missing);
    __atomic_store_n(&sm_ompt_initialized, 1, __ATOMIC_RELEASE);
    return 1; /* keep the tool */
}

static void sm_ompt_finalize(ompt_data_t *tool_data)
{
    (void)tool_data;
}

ompt_start_tool_result_t *ompt_start_tool(unsigned int omp_version, const char *runtime_version)
{
    (void)omp_version;
    int saved_errno = errno;
    /* The OpenMP runtime may start before our constructor ran. */
    if (!sm_runtime_active) {
        const char *enable = getenv(SM_ENV_PREFIX "ENABLE");
        bool on = false;
        if (enable && sm_config_parse_bool(enable, &on) == 0 && on)
            sm_runtime_init();
    }
    if (!sm_runtime_active) {
        errno = saved_errno;
        return NULL; /* not measured: no tool, the runtime looks further */
    }
    sm_info(1, "OpenMP: measuring through OMPT (%s)", runtime_version ? runtime_version : "?");
    errno = saved_errno;
    static ompt_start_tool_result_t result = {sm_ompt_initialize, sm_ompt_finalize, {0}};
    return &result;
}

/* ---------------------------------------------------------------- end of the run */

static int sm_ompt_find_runtimes(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    int *found = arg;
    const char *name = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
    name = name ? name + 1 : info->dlpi_name;
    if (!name)
        return 0;
    if (!strncmp(name, "libgomp.so", 10))
        found[0] = 1;
    else if (!strncmp(name, "libomp.so", 9) || !strncmp(name, "libiomp5.so", 11))
        found[1] = 1;
    return 0;
}

/* Workers idle since their last parallel region have not been told that it
 * ended (see sm_ompt_end_time): close it at its end, not at the process's.
 * Those threads are parked in the runtime, not recording. */
static void sm_ompt_close_idle_workers(void)
{
    pthread_mutex_lock(&sm_ompt_threads_lock);
    for (sm_ompt_thread_t *th = sm_ompt_threads; th; th = th->next) {
        sm_location_t *loc = th->loc;
        if (!loc || loc->closed || th->depth > SM_MAX_SCOPES)
            continue;
        sm_ompt_scope_t *implicit = sm_scope_find(th, SM_SCOPE_IMPLICIT, 0, false);
        const sm_ompt_instance_t *in = implicit ? sm_instance(implicit->aux) : NULL;
        uint64_t end = in ? __atomic_load_n(&in->end, __ATOMIC_ACQUIRE) : 0;
        if (end)
            sm_implicit_close(th, loc, implicit, sm_ompt_end_time(th, loc, implicit));
    }
    pthread_mutex_unlock(&sm_ompt_threads_lock);
}

static void sm_ompt_at_finalize(const sm_run_info_t *run)
{
    if (sm_ompt_in_use()) {
        sm_ompt_close_idle_workers();
        for (uint32_t i = 0; i < SM_TEAM_SLOTS; i++)
            if (__atomic_load_n(&sm_teams[i].state, __ATOMIC_ACQUIRE) && !sm_teams[i].defined)
                sm_team_define_members(&sm_teams[i], true);
        uint64_t unrecorded = __atomic_load_n(&sm_locks_unrecorded, __ATOMIC_RELAXED);
        if (unrecorded)
            sm_info(1, "OpenMP: %llu lock acquisitions not traced (too many locks)",
                    (unsigned long long)unrecorded);
        uint64_t no_team = __atomic_load_n(&sm_team_unrecorded, __ATOMIC_RELAXED);
        if (no_team)
            sm_info(1, "OpenMP: %llu times a thread's team was not traced (more than %u "
                    "distinct teams)", (unsigned long long)no_team, SM_TEAM_SLOTS / 4 * 3);
        uint64_t strangers = __atomic_load_n(&sm_team_strangers, __ATOMIC_RELAXED);
        if (strangers)
            sm_info(1, "OpenMP: %llu times a thread joined a team under a thread number that "
                    "another thread had in an earlier run of that team; the team's members "
                    "are the first ones", (unsigned long long)strangers);
        return;
    }
    int found[2] = {0, 0}; /* libgomp, libomp */
    dl_iterate_phdr(sm_ompt_find_runtimes, found);
    if (!found[0] || found[1])
        return;
    static const char note[] =
        "OpenMP: this program runs on GCC's libgomp, which has no OMPT interface, so its "
        "OpenMP constructs are not measured (everything else is); to measure them, run it on "
        "LLVM's libomp: sysmeasure --openmp-runtime=llvm";
    sm_runtime_add_note(note);
    if (run->rank == 0)
        sm_warning("%s", note);
}

const sm_subsystem_t sm_ompt_subsystem = {
    .name = "OpenMP (OMPT)",
    .flush = sm_ompt_at_finalize,
};

#else /* no omp-tools.h at build time: no tool */

const sm_subsystem_t sm_ompt_subsystem = {.name = "OpenMP (OMPT)"};

bool sm_ompt_in_use(void)
{
    return false;
}

#endif
