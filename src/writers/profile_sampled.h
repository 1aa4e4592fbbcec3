/* The summary's sampling sections: the functions seen by call-stack
 * sampling per instrumented call path (flat: exclusive and inclusive
 * samples per function, per thread, then across threads and ranks), and
 * the process metrics of the sampler thread (per rank and across ranks).
 * Called by profile.txt/.json/.csv; the callers tree itself is the
 * summary's call paths of paradigm "sampling". */
#ifndef SM_PROFILE_SAMPLED_H
#define SM_PROFILE_SAMPLED_H

#include <stdbool.h>
#include "summary_common.h"

/* Whether p is a node of a sampled function (not an instrumented region). */
bool sm_cpath_is_sampled(const sm_job_t *job, const sm_cpath_t *p) SM_HIDDEN;

/* Text sections (nothing when the run has no samples / no metrics). */
void sm_sampled_text(sm_out_t *o, const sm_run_info_t *run, const sm_job_t *job,
                     const sm_profile_summary_t *s) SM_HIDDEN;
void sm_procmetrics_text(sm_out_t *o, const sm_job_t *job) SM_HIDDEN;
/* "sampled_functions": [...] and "process_metrics": {...} members. */
void sm_sampled_json(sm_json_t *j, const sm_run_info_t *run, const sm_job_t *job,
                     const sm_profile_summary_t *s) SM_HIDDEN;
void sm_procmetrics_json(sm_json_t *j, const sm_job_t *job) SM_HIDDEN;
/* sampled_functions.csv, one row per (path, function, rank, thread); no
 * file without samples.  0 or -1. */
int sm_sampled_csv(const sm_run_info_t *run, const sm_job_t *job,
                   const sm_profile_summary_t *s) SM_HIDDEN;

#endif
