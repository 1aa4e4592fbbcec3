/* GPU memory as the summaries show it (profile.txt, profile.json,
 * profile_gpu_memory.csv, metadata.json): from every process's figures
 * (core/gpu_memory.h, gathered with the metrics), per device and kind of
 * memory over the job:
 *   - the high-water mark: the largest over the ranks, with its rank, and
 *     the mean over the ranks that used that device and kind;
 *   - allocations, frees, bytes allocated, and what was still allocated at
 *     the end (blocks, bytes);
 *   - the largest blocks never freed in the job (their rank, device, kind,
 *     address and the call path that allocated them), module globals left
 *     out;
 *   - frees of blocks allocated before measurement began (or unseen).
 * A row per (device, kind), never per rank. */
#ifndef SM_GPU_MEMORY_TABLE_H
#define SM_GPU_MEMORY_TABLE_H

#include <stdint.h>
#include "summary_common.h"
#include "../core/gpu_memory.h"
#include "../util/json.h"

#define SM_GMT_TOP 10 /* largest blocks never freed, over the job */

typedef struct sm_gmt_row {
    char device[32];       /* "CUDA 0" */
    char device_name[96];  /* rank 0's first name for it */
    uint32_t kind;         /* sm_gpu_mem_kind_t */
    uint32_t ranks;        /* ranks that allocated this kind on this device */
    uint64_t peak;         /* the largest high-water mark */
    uint32_t peak_rank;
    double peak_mean;      /* over those ranks */
    uint64_t allocs, frees, bytes_allocated;
    uint64_t left_blocks, left_bytes; /* still allocated at the end */
} sm_gmt_row_t;

typedef struct sm_gmt_top {
    uint32_t rank;
    sm_gmem_top_t block;
} sm_gmt_top_t;

typedef struct sm_gmt {
    uint32_t n_rows;
    sm_gmt_row_t *rows;       /* by device, then kind */
    uint32_t n_top;
    sm_gmt_top_t top[SM_GMT_TOP];
    uint64_t unfreed_blocks, unfreed_bytes; /* never freed, module globals left out */
    sm_gmem_counts_t counts;  /* summed over the ranks */
    uint32_t damaged;         /* ranks whose figures could not be read */
} sm_gmt_t;

/* NULL when no process saw GPU memory (or out of memory). */
sm_gmt_t *sm_gmt_build(const sm_job_t *job) SM_HIDDEN;
void sm_gmt_free(sm_gmt_t *t) SM_HIDDEN;

void sm_gmt_text(sm_out_t *o, const sm_gmt_t *t) SM_HIDDEN;
/* The object's members (the caller opens and closes it). */
void sm_gmt_json_members(sm_json_t *j, const sm_gmt_t *t) SM_HIDDEN;
/* "gpu_memory": {...} or null (metadata.json). */
void sm_gmt_json_field(sm_json_t *j, const sm_job_t *job) SM_HIDDEN;
/* profile_gpu_memory.csv: a row per (device, kind).  0 or -1. */
int sm_gmt_csv(const char *dir, const sm_gmt_t *t) SM_HIDDEN;

#endif
