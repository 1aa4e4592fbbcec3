/* Output writers.  Each reads the event layer (locations, buffers, definitions,
 * the profile summary) and writes one format into the run's output folder.
 * Each returns 0, or -1 after printing one line naming the file and the
 * problem (for example a full disk). */
#ifndef SM_WRITERS_H
#define SM_WRITERS_H

#include "../core/compiler.h"
#include "../core/runtime.h"
#include "../merge/profile_summary.h"
#include "../util/json.h"

/* traces.otf2, traces.def, traces/ : one archive, one event file per location. */
int sm_otf2_write(const sm_run_info_t *run) SM_HIDDEN;

/* profile.txt: per-thread call-path table, then the same paths across threads. */
int sm_profile_write_text(const sm_run_info_t *run, const sm_profile_summary_t *summary) SM_HIDDEN;

/* profile.json: the same numbers, machine-readable. */
int sm_profile_write_json(const sm_run_info_t *run, const sm_profile_summary_t *summary) SM_HIDDEN;

/* metadata.json: command line, configuration, host, pid, version, dates, threads. */
int sm_metadata_write_json(const sm_run_info_t *run) SM_HIDDEN;

/* The "buffers" object (budget, chunk size, spills, dropped events) and
 * "unmatched_leaves", shared by profile.json and metadata.json. */
void sm_json_run_totals(sm_json_t *j, const sm_run_info_t *run) SM_HIDDEN;

#endif
