/* The GPU section of the summaries (profile.txt, profile.json,
 * profile_gpu.csv), computed from the job's profile summary, where every GPU
 * stream is a member whose call paths are the host paths that launched its
 * work, ending in the activity's region (gpu.c):
 *   - per kernel name: calls, total/mean/min/max/stddev of the duration,
 *     share of all kernel time, per device, and across ranks (per-rank
 *     totals: mean/min/max/stddev with the ranks of min and max);
 *   - per copy direction (and memset): count, bytes, time, bandwidth;
 *   - per host call path and activity: calls and device time;
 *   - the per-kernel GPU counter statistics (gpu_counter_table.h), in
 *     profile.txt, profile.json and profile_gpu_counters.csv;
 *   - GPU memory per device and kind: high-water marks, what was never
 *     freed (gpu_memory_table.h), in profile.txt, profile.json and
 *     profile_gpu_memory.csv. */
#ifndef SM_GPU_SUMMARY_H
#define SM_GPU_SUMMARY_H

#include <stdint.h>
#include "gpu_counter_table.h"
#include "gpu_memory_table.h"
#include "summary_common.h"
#include "../util/json.h"

#define SM_GPU_SUM_DEVICES 16

typedef struct sm_gpu_sum_stat {
    uint64_t calls;
    double total_ns, min_ns, max_ns, sumsq_ns2;
} sm_gpu_sum_stat_t;

typedef struct sm_gpu_sum_kernel {
    sm_region_id_t region;
    const char *name;
    sm_gpu_sum_stat_t all;
    double share;                              /* of all kernel time */
    sm_gpu_sum_stat_t device[SM_GPU_SUM_DEVICES];
    sm_spread_t ranks;                         /* per-rank totals, ns */
} sm_gpu_sum_kernel_t;

typedef struct sm_gpu_sum_copy {
    char kind[48]; /* "memcpy HtoD", "memset", ... */
    uint64_t count, bytes;
    double time_ns;
} sm_gpu_sum_copy_t;

typedef struct sm_gpu_sum_path {
    char *path;       /* host call path, "main > f > cudaLaunchKernel"; "" at top */
    const char *activity;
    uint64_t calls;
    double time_ns;
} sm_gpu_sum_path_t;

typedef struct sm_gpu_summary {
    uint32_t n_devices;
    char devices[SM_GPU_SUM_DEVICES][64]; /* "CUDA 0" */
    uint32_t n_kernels, n_copies, n_paths;
    sm_gpu_sum_kernel_t *kernels;         /* by total time, descending */
    sm_gpu_sum_copy_t *copies;
    sm_gpu_sum_path_t *paths;             /* by time, descending */
    double kernel_ns;                     /* all kernels */
    uint32_t n_ranks;
    sm_gct_t *counters;                   /* NULL: no GPU counter values */
    sm_gmt_t *memory;                     /* NULL: no GPU memory seen */
} sm_gpu_summary_t;

/* NULL when the job has no GPU activity nor GPU memory (or out of memory). */
sm_gpu_summary_t *sm_gpu_summary_build(const sm_job_t *job,
                                       const sm_profile_summary_t *s) SM_HIDDEN;
void sm_gpu_summary_free(sm_gpu_summary_t *g) SM_HIDDEN;

double sm_gpu_sum_mean(const sm_gpu_sum_stat_t *st) SM_HIDDEN;
double sm_gpu_sum_stddev(const sm_gpu_sum_stat_t *st) SM_HIDDEN;

void sm_gpu_summary_text(sm_out_t *o, const sm_gpu_summary_t *g) SM_HIDDEN;
void sm_gpu_summary_json(sm_json_t *j, const sm_gpu_summary_t *g) SM_HIDDEN;
/* profile_gpu.csv: one row per (section, name, device or rank); and
 * profile_gpu_counters.csv when there are counter values. */
int sm_gpu_summary_csv(const char *dir, const sm_gpu_summary_t *g) SM_HIDDEN;

#endif
