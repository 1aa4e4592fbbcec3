/* What GPU counters to collect per kernel: the --gpu-metrics list and the
 * --gpu-metrics-file input file, in one vendor-neutral form.
 *
 * A spec is a list of metric groups plus kernel filters:
 *   - --gpu-metrics "A,B" is one group; "A,B;C" two (';' separates groups);
 *   - a text file of rocprofv3's form: every "pmc: A B" line is a group
 *     ('#' starts a comment);
 *   - a JSON or YAML file of rocprofv3's form: {"jobs": [{...}, ...]}, each
 *     job's "pmc" (a list or a string of names) one group, its "pmc_groups"
 *     (a list of lists) one group each, "pmc_group_interval" the rotation
 *     interval, "kernel_include_regex", "kernel_exclude_regex" and
 *     "kernel_iteration_range" the kernel filters (one set per run: jobs that
 *     name different filters are refused).
 * What a group means depends on --gpu-counter-mode: kernel: all groups are
 * collected together (the profiler replays each kernel as often as needed);
 * rotate: the groups take turns every `interval` launches of a kernel;
 * application: each group is one run of the program (a pass).
 *
 * Shared by the launcher (checks before the program runs, the pass driver)
 * and the vendor backends (linked in as hidden copies). */
#ifndef SM_GPU_METRICS_H
#define SM_GPU_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include "../core/compiler.h"

#define SM_GPU_SPEC_MAX_GROUPS 64
#define SM_GPU_SPEC_MAX_METRICS 64 /* per group, and distinct over all groups */
#define SM_GPU_SPEC_MAX_RANGES 32

typedef struct sm_gpu_group {
    char *metrics[SM_GPU_SPEC_MAX_METRICS];
    uint32_t n;
} sm_gpu_group_t;

typedef struct sm_gpu_spec {
    sm_gpu_group_t groups[SM_GPU_SPEC_MAX_GROUPS];
    uint32_t n_groups;
    uint32_t interval;       /* rotate: launches of a kernel per turn (>= 1) */
    char *include_regex;     /* POSIX extended; NULL: every kernel */
    char *exclude_regex;     /* NULL: none */
    /* kernel_iteration_range: the n-th launches of each kernel (1 = the
     * first) that are counted, inclusive pairs; none: every launch. */
    uint64_t ranges[SM_GPU_SPEC_MAX_RANGES][2];
    uint32_t n_ranges;
} sm_gpu_spec_t;

void sm_gpu_spec_init(sm_gpu_spec_t *s) SM_HIDDEN;
void sm_gpu_spec_free(sm_gpu_spec_t *s) SM_HIDDEN;

/* Whether name looks like a metric name (letters, digits, '_' and '.';
 * the GPU itself says whether it exists). */
int sm_gpu_metric_name_ok(const char *name) SM_HIDDEN;

/* The --gpu-metrics list into s (appending groups).  0, or -1 with one
 * phrase in err. */
int sm_gpu_spec_parse_list(const char *text, sm_gpu_spec_t *s, char *err,
                           size_t errlen) SM_HIDDEN;
/* An input file's text (text, JSON or YAML form, told apart by its first
 * character and its lines) into s.  0, or -1 with "line N: ..." in err. */
int sm_gpu_spec_parse_text(const char *text, size_t len, sm_gpu_spec_t *s, char *err,
                           size_t errlen) SM_HIDDEN;
/* Bytes of the largest GPU metrics file read. */
#define SM_GPU_SPEC_FILE_MAX ((size_t)16 << 20)
/* The file the user named (a regular file, its links followed, at most
 * SM_GPU_SPEC_FILE_MAX bytes) into s.  0, or -1 with the problem in err. */
int sm_gpu_spec_read_file(const char *path, sm_gpu_spec_t *s, char *err,
                          size_t errlen) SM_HIDDEN;
/* The configuration's list and file together: 0, or -1 with err. */
int sm_gpu_spec_load(const char *list, const char *file, sm_gpu_spec_t *s, char *err,
                     size_t errlen) SM_HIDDEN;

/* The distinct metrics of every group, in first-seen order (pointers into
 * s); returns how many. */
uint32_t sm_gpu_spec_all(const sm_gpu_spec_t *s, const char **out, uint32_t max) SM_HIDDEN;

/* Whether the n-th launch (1 = first) of kernel `name` is counted under the
 * filters.  The regexes are compiled on first use (not thread-safe: call it
 * under the caller's lock). */
int sm_gpu_spec_selects(sm_gpu_spec_t *s, const char *name, uint64_t nth) SM_HIDDEN;

#endif
