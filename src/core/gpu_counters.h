/* Per-kernel GPU counter values (GPU II), vendor-neutral.
 *
 * A backend (gpu/cuda: CUPTI's range profiler) hands over the values of a
 * kernel launch once the profiler has them, keyed by the launch's
 * correlation id and carrying the kernel's times, stream and launch
 * configuration.  The core
 *   - writes each value to the trace as a metric on the kernel's stream
 *     location at the kernel's end (OTF2 metrics are integers here: values
 *     are rounded);
 *   - keeps one row per launch and metric for counter_collection.csv (like
 *     rocprofv3's), with the host call path that launched the kernel and the
 *     launch's number among the launches of that kernel from that path;
 *   - keeps statistics per (stream, call path, kernel, metric) (sm_fstat_t:
 *     values, launches covered, sum, min, max, mean, deviations), which the
 *     profile summary takes into the stream's call path (profile_summary.c)
 *     for profile.txt/.json/profile_gpu.csv, per rank and across ranks.
 * Rows beyond SM_GPU_COUNTER_ROWS_MAX are counted, not kept (a note says
 * so); the statistics and the trace still take every value. */
#ifndef SM_GPU_COUNTERS_H
#define SM_GPU_COUNTERS_H

#include <stddef.h>
#include <stdint.h>
#include "subsystem.h"
#include "compiler.h"
#include "gpu.h"
#include "profile.h"

#define SM_GPU_COUNTER_ROWS_MAX (4u << 20)

typedef struct sm_gpu_counter_value {
    uint64_t correlation;    /* of the launch (its host call and activity) */
    uint64_t start, end;     /* the kernel's times, core ticks */
    sm_region_id_t region;   /* the kernel */
    sm_gpu_stream_t stream;
    uint32_t metric;         /* from sm_gpu_counter_define */
    uint32_t covered;        /* launches the value stands for (rotate: the turn's; else 1) */
    uint32_t group;          /* metric group (rotate, application pass) */
    uint32_t pad;
    double value;
    sm_gpu_launch_t launch;
} sm_gpu_counter_value_t;

/* A metric's number for sm_gpu_counter_value_t.metric (same name, same
 * number); UINT32_MAX when the core is not up or the table is full. */
uint32_t sm_gpu_counter_define(const char *name, const char *unit) SM_HIDDEN;

/* n values `stride` bytes apart, from any thread; returns how many were
 * taken. */
size_t sm_gpu_counters(const sm_gpu_counter_value_t *v, size_t n, size_t stride) SM_HIDDEN;

/* fn once per (stream location, launching call, kernel, metric) with its
 * statistics so far, under this module's lock (fn must not call back). */
typedef void (*sm_gpu_counter_stat_fn)(uint32_t stream_location, const sm_profile_node_t *host,
                                       sm_region_id_t kernel, const char *metric,
                                       const sm_fstat_t *st, void *arg);
void sm_gpu_counters_each(sm_gpu_counter_stat_fn fn, void *arg) SM_HIDDEN;

/* Writes counter_collection.csv into dir (suffix ".rank<R>" before the
 * extension when n_ranks > 1); 0 when there is nothing or it was written,
 * else 1. */
int sm_gpu_counters_write(const char *dir, uint32_t rank, uint32_t n_ranks) SM_HIDDEN;

/* Its part of the end (src/plugins.def): counter_collection.csv. */
extern const sm_subsystem_t sm_gpu_counters_subsystem SM_HIDDEN;

#endif
