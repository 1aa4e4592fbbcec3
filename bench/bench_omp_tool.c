/* A do-nothing OMPT tool that asks for the same callbacks as sysmeasure's:
 * bench/bench_omp.sh runs bench-omp with it (OMP_TOOL_LIBRARIES) to tell
 * what the OpenMP runtime itself spends on reporting the events from what
 * sysmeasure spends on recording them. */
#include <omp-tools.h>

static void sm_bench_nothing(void)
{
}

static int sm_bench_initialize(ompt_function_lookup_t lookup, int device, ompt_data_t *data)
{
    (void)device;
    (void)data;
    static const ompt_callbacks_t events[] = {
        ompt_callback_thread_begin, ompt_callback_parallel_begin, ompt_callback_parallel_end,
        ompt_callback_implicit_task, ompt_callback_work, ompt_callback_sync_region,
        ompt_callback_masked, ompt_callback_task_create, ompt_callback_task_schedule,
        ompt_callback_mutex_acquire, ompt_callback_mutex_acquired, ompt_callback_mutex_released,
        ompt_callback_nest_lock};
    ompt_set_callback_t set = (ompt_set_callback_t)lookup("ompt_set_callback");
    for (unsigned i = 0; set && i < sizeof events / sizeof events[0]; i++)
        set(events[i], (ompt_callback_t)sm_bench_nothing);
    return 1;
}

static void sm_bench_finalize(ompt_data_t *data)
{
    (void)data;
}

ompt_start_tool_result_t *ompt_start_tool(unsigned int version, const char *runtime)
{
    (void)version;
    (void)runtime;
    static ompt_start_tool_result_t result = {sm_bench_initialize, sm_bench_finalize, {0}};
    return &result;
}
