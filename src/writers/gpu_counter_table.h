/* Per-kernel GPU counter statistics as the summaries show them: per kernel
 * name and per (launching host call path, kernel), each metric over every
 * launch of the job (values, launches covered, sum, mean, min, max,
 * stddev) and across ranks of the per-rank sums (mean, min, max, stddev,
 * ranks of min and max), like the CPU regions' across-ranks statistics.
 *
 * Built from keyed statistics (sm_fstat_t, profile.h): the job's profile
 * summary feeds it (gpu_summary.c: profile.txt, profile.json,
 * profile_gpu_counters.csv) and so does sysmeasure-merge's merge of
 * application-mode passes (gpu_passes.c), so both print one computation. */
#ifndef SM_GPU_COUNTER_TABLE_H
#define SM_GPU_COUNTER_TABLE_H

#include <stdint.h>
#include "summary_common.h"
#include "../core/profile.h"
#include "../util/json.h"

typedef struct sm_gct_row {
    char *kernel;
    char *path;      /* host call path, "" when unknown; NULL: the kernel's row */
    uint32_t metric; /* into sm_gct_t.metrics */
    sm_fstat_t all;  /* every launch of every rank */
    sm_spread_t ranks; /* of the per-rank sums (after sm_gct_finish) */
    sm_fstat_t *rank; /* [n_ranks]; NULL in a table of reduced rows */
} sm_gct_row_t;

typedef struct sm_gct sm_gct_t;
struct sm_gct {
    uint32_t n_ranks;
    uint32_t n_metrics;
    char **metrics;
    uint32_t n_rows, cap_rows;
    sm_gct_row_t *rows; /* after sm_gct_finish: by kernel, path (kernel row
                         * first), metric name */
    uint32_t *table;    /* open addressing, row index + 1 */
    uint32_t table_size;
    int oom;
    int reduced; /* rows come with their spread across ranks (sm_gct_add_reduced) */
};

sm_gct_t *sm_gct_new(uint32_t n_ranks) SM_HIDDEN;
/* A table of rows reduced across the n_ranks ranks already (the job's
 * profile summary: profile_stats.h). */
sm_gct_t *sm_gct_new_reduced(uint32_t n_ranks) SM_HIDDEN;
/* One reduced row: every launch (all) and the spread across ranks of the
 * per-rank sums; path NULL: the kernel's row over its paths.  A second row
 * of the same key merges into the first (its launches; the spread of the
 * first stays).  0; -1 out of memory. */
int sm_gct_add_reduced(sm_gct_t *t, const char *kernel, const char *path, const char *metric,
                       const sm_fstat_t *all, sm_spread_t ranks) SM_HIDDEN;
void sm_gct_free(sm_gct_t *t) SM_HIDDEN;
/* Statistics of one rank's launches of kernel from path: added to the
 * (path, kernel) row and to the kernel's row.  0; -1 out of memory or a
 * rank beyond the table. */
int sm_gct_add(sm_gct_t *t, uint32_t rank, const char *kernel, const char *path,
               const char *metric, const sm_fstat_t *st) SM_HIDDEN;
/* Sorts the rows and computes the across-ranks spreads. */
void sm_gct_finish(sm_gct_t *t) SM_HIDDEN;

/* The text section (heading names what the values are). */
void sm_gct_text(sm_out_t *o, const sm_gct_t *t, const char *heading) SM_HIDDEN;
/* "counters": {"metrics": [...], "kernels": [...], "paths": [...]} */
void sm_gct_json(sm_json_t *j, const sm_gct_t *t) SM_HIDDEN;
/* dir/name, one row per kernel or (path, kernel) and metric. */
int sm_gct_csv(const char *dir, const char *name, const sm_gct_t *t) SM_HIDDEN;

#endif
