/* The end of a run, once: every output folder is written by
 * sm_finalize_run, whether the run ends normally (MPI_Finalize, exit, a
 * fatal signal: src/finalize/live.c gathers what the processes hold) or a
 * crashed job's process files are merged afterwards (sysmeasure-merge).
 *
 *   1. the outputs every rank writes its part of (the OTF2 archive);
 *   2. the profiles reduced to the job's summary at rank 0 (up a tree:
 *      profile_reduce.h), and the job's summary line (share of MPI); then
 *      the outputs every rank writes its part of with that summary known
 *      (profile-ranks.csv);
 *   3. rank 0's outputs, in the order of src/finalize/outputs.def; an
 *      output that reads another back runs only when that one succeeded.
 *
 * The callers prepare sm_finalize_t (the job's unified definitions,
 * processes, matrix, metrics, run totals) and nothing else writes an
 * output. */
#ifndef SM_FINALIZE_PIPELINE_H
#define SM_FINALIZE_PIPELINE_H

#include <stdbool.h>
#include <stdint.h>
#include "../core/compiler.h"
#include "../core/procs.h"
#include "../core/runtime.h"
#include "../merge/profile_summary.h"
#include "../writers/output.h"
#include "../writers/writers.h"

struct sm_image;

typedef struct sm_finalize {
    /* ---- set by the caller */
    const sm_procs_t *procs; /* the job's processes (a group of one for a merge) */
    const sm_run_info_t *run;
    sm_job_t job;            /* definitions, maps, processes, matrix, metrics */
    /* The events: NULL for this process's own (a live run), else one image
     * per merged process. */
    const struct sm_image *images;
    uint32_t n_images;
    /* Profiles: this process's blob (sm_profile_summary_serialize), reduced
     * up the tree here; or, with profiles_gathered, every rank's already in
     * sm_tree_gather's sequence form (a merge).  NULL/0: none. */
    const void *profiles;
    uint64_t profiles_len;
    bool profiles_gathered;
    /* What this run writes. */
    bool trace, profile, report, perfetto;
    /* The outputs, NULL-terminated; NULL: sm_outputs (a test's own list). */
    const sm_output_t *const *outputs;
    /* ---- filled by the pipeline (rank 0) */
    sm_profile_summary_t *summary;
    /* "; MPI 12.3% of the ranks' time (MPI_Allreduce 8.1%, ...)" for the
     * closing line of a job of several ranks, or "". */
    char summary_line[320];
} sm_finalize_t;

/* The outputs of src/finalize/outputs.def, each defined by its writer,
 * and the list of them (NULL-terminated). */
#define SM_OUTPUT(symbol) extern const sm_output_t symbol SM_HIDDEN;
#include "outputs.def"
#undef SM_OUTPUT
extern const sm_output_t *const sm_outputs[] SM_HIDDEN;

/* Writes every output of f (collectively over f->procs).  Returns this
 * process's failures (each said in one line). */
int sm_finalize_run(sm_finalize_t *f) SM_HIDDEN;

#endif
