/* The end-of-run pipeline (pipeline.h). */
#include "pipeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/clock.h"
#include "../merge/profile_reduce.h"
#include "../merge/unify.h"
#include "../writers/summary_common.h"
#include "../util/log.h"

const sm_output_t *const sm_outputs[] = {
#define SM_OUTPUT(symbol) &symbol,
#include "outputs.def"
#undef SM_OUTPUT
    NULL,
};

/* The share of the ranks' time in MPI and the functions that took most of
 * it, for the closing line of a job of several ranks. */
static void sm_fin_mpi_share(sm_finalize_t *f)
{
    f->summary_line[0] = '\0';
    uint32_t ranks = f->job.n_ranks ? f->job.n_ranks : f->procs->size;
    if (ranks < 2 || !f->summary)
        return;
    uint32_t n = 0;
    sm_region_total_t *tot =
        sm_profile_region_totals(f->summary, sm_job_region_is_mpi, &f->job, &n);
    double wall = (double)(f->run->end_time - f->run->start_time) * sm_clock_ns_per_tick();
    if (!f->run->end_time)
        wall = (double)(f->run->end_realtime_ns - f->run->start_realtime_ns);
    if (!tot || !n || n == UINT32_MAX || wall <= 0) {
        free(tot);
        return;
    }
    double mpi = 0;
    for (uint32_t i = 0; i < n; i++)
        mpi += tot[i].time_ns;
    double all = wall * ranks;
    if (mpi > all)
        all = mpi; /* other ranks may have run a little longer than rank 0 */
    char *line = f->summary_line;
    size_t cap = sizeof f->summary_line;
    size_t len = (size_t)snprintf(line, cap, "; MPI %.1f%% of the ranks' time (",
                                  100.0 * mpi / all);
    for (uint32_t i = 0; i < n && i < 3 && len < cap; i++)
        len += (size_t)snprintf(line + len, cap - len, "%s%s %.1f%%", i ? ", " : "",
                                sm_defset_region_name(f->job.defs, tot[i].region),
                                100.0 * tot[i].time_ns / all);
    if (len < cap)
        snprintf(line + len, cap - len, ")");
    free(tot);
}

/* Step 2: the profiles reduced to the job's summary at rank 0 (up the tree
 * of the live job's processes, or in this one process from every rank's
 * blob: a merge).  Collective for a live job.  Returns the failures. */
static int sm_fin_profiles(sm_finalize_t *f)
{
    uint32_t ranks = f->job.n_ranks ? f->job.n_ranks : f->procs->size;
    if (f->profiles_gathered) {
        if (f->profiles && f->profiles_len)
            f->summary = sm_profile_summary_from_blobs(f->profiles, f->profiles_len, ranks);
    } else {
        /* (every process takes part, with or without a blob: the others wait) */
        f->summary = sm_profiles_reduce(f->procs, f->profiles, f->profiles_len, ranks);
    }
    if (f->procs->rank == 0 && !f->summary && f->profiles_len) {
        sm_error("building the profile summary of the job failed");
        return 1;
    }
    return 0;
}

/* Whether the output named `file` was written (a later one reads it). */
static bool sm_fin_written(const sm_output_t *const *outputs, const bool *ok, const char *file)
{
    for (uint32_t i = 0; outputs[i]; i++)
        if (!strcmp(outputs[i]->file, file))
            return ok[i];
    return false;
}

int sm_finalize_run(sm_finalize_t *f)
{
    int failures = 0;
    bool ok[64] = {false};
    const sm_output_t *const *outputs = f->outputs ? f->outputs : sm_outputs;
    sm_log_step(NULL);
    /* 1. Each rank its part. */
    for (uint32_t i = 0; outputs[i] && i < 64; i++) {
        const sm_output_t *o = outputs[i];
        if (o->who != SM_OUTPUT_EVERY_RANK || !o->wanted(f))
            continue;
        ok[i] = o->write(f) == 0;
        failures += !ok[i];
        sm_log_step(o->file);
    }
    /* Rank 0's outputs that read every rank's part wait for all of them. */
    bool wait = false;
    for (uint32_t i = 0; outputs[i]; i++)
        wait |= outputs[i]->after_every_rank && outputs[i]->wanted(f);
    if (wait && f->procs->size > 1 && f->procs->barrier(f->procs->ctx) != 0)
        failures++;
    /* 2. The profiles. */
    if (f->profile) {
        failures += sm_fin_profiles(f);
        sm_fin_mpi_share(f);
        sm_log_step("reducing the profiles");
    }
    /* 2b. Each rank its part that needs the job's profile. */
    for (uint32_t i = 0; outputs[i] && i < 64; i++) {
        const sm_output_t *o = outputs[i];
        if (o->who != SM_OUTPUT_EVERY_RANK_AFTER_PROFILES || !o->wanted(f))
            continue;
        ok[i] = o->write(f) == 0;
        failures += !ok[i];
        sm_log_step(o->file);
    }
    /* 3. Rank 0's outputs. */
    if (f->procs->rank == 0)
        for (uint32_t i = 0; outputs[i] && i < 64; i++) {
            const sm_output_t *o = outputs[i];
            if (o->who != SM_OUTPUT_ROOT || !o->wanted(f))
                continue;
            if (o->follows && !sm_fin_written(outputs, ok, o->follows))
                continue; /* (that output's failure was said) */
            ok[i] = o->write(f) == 0;
            failures += !ok[i];
            sm_log_step(o->file);
        }
    sm_profile_summary_free(f->summary);
    f->summary = NULL;
    return failures;
}
