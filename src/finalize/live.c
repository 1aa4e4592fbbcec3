/* The end of a live run: what the processes of the job hold, gathered over
 * them (unified definitions, processes, communication matrix, totals,
 * metrics, this process's profile), then the one pipeline (pipeline.h). */
#include "live.h"

#include <stdlib.h>
#include <string.h>

#include "comm_pairs.h"
#include "pipeline.h"
#include "../core/location.h"
#include "../core/metrics.h"
#include "../core/trace_space.h"
#include "../merge/merge.h"
#include "../merge/process_file.h"
#include "../merge/unify.h"
#include "../util/log.h"

/* The trace stopped in some process (trace_space.h): how many, the first
 * time, the reasons and the events not recorded, over the job; a note for
 * the summary.  This process's figures are in sm_run already. */
static void sm_live_trace_stop_totals(const sm_procs_t *procs, sm_run_info_t *run)
{
    sm_space_reason_t why = sm_space_reason();
    uint64_t stopped = why != SM_SPACE_RUNNING;
    uint64_t v[4] = {stopped, why == SM_SPACE_MAX_SIZE, why == SM_SPACE_FREE_SPACE,
                     run->trace_untraced};
    /* The earliest stop, as the largest of its complement. */
    uint64_t first = stopped ? UINT64_MAX - sm_space_stop_ns() : 0;
    if (procs->size > 1 && (procs->allreduce_sum_u64(procs->ctx, v, 4) != 0 ||
                            procs->allreduce_max_u64(procs->ctx, &first, 1) != 0))
        return; /* (the transport failed: said by the caller's next step) */
    if (!v[0])
        return;
    run->trace_stopped = (uint32_t)v[0];
    run->trace_untraced = v[3];
    run->trace_stop_s = (double)(UINT64_MAX - first) / 1e9;
    char a[300] = "", b[300] = "";
    if (v[1])
        sm_space_reason_words(SM_SPACE_MAX_SIZE, a, sizeof a);
    if (v[2])
        sm_space_reason_words(SM_SPACE_FREE_SPACE, b, sizeof b);
    snprintf(run->trace_stop_reason, sizeof run->trace_stop_reason, "%s%s%s", a,
             a[0] && b[0] ? "; " : "", b);
    char note[1200];
    sm_space_note(note, sizeof note, run->trace_stop_s, run->trace_stop_reason,
                  run->trace_untraced, run->trace_stopped, procs->size);
    sm_runtime_add_note(note);
    /* The other ranks said it only at -v: rank 0 says it for the job, once. */
    if (procs->rank == 0 && procs->size > 1 && !stopped)
        sm_warning("%s", note);
}

/* Sums of this process's buffer counters, over the job on rank 0. */
static void sm_live_job_totals(const sm_procs_t *procs, sm_run_info_t *run)
{
    sm_live_trace_stop_totals(procs, run);
    uint64_t v[6] = {run->spills, run->spilled_bytes, run->dropped_records,
                     run->unmatched_leaves, run->folded_enters, run->trace_folded_enters};
    uint64_t records[2 * SM_REC_KIND_COUNT];
    memcpy(records, run->record_count, sizeof run->record_count);
    memcpy(records + SM_REC_KIND_COUNT, run->record_words, sizeof run->record_words);
    if (procs->allreduce_sum_u64(procs->ctx, records, 2 * SM_REC_KIND_COUNT) == 0) {
        memcpy(run->record_count, records, sizeof run->record_count);
        memcpy(run->record_words, records + SM_REC_KIND_COUNT, sizeof run->record_words);
    }
    uint64_t most = run->record_bytes_max;
    if (procs->allreduce_max_u64(procs->ctx, &most, 1) == 0)
        run->record_bytes_max = most;
    if (procs->allreduce_sum_u64(procs->ctx, v, 6) == 0) {
        run->folded_enters = v[4];
        run->trace_folded_enters = v[5];
        run->spills = v[0];
        run->spilled_bytes = v[1];
        run->dropped_records = v[2];
        run->unmatched_leaves = v[3];
    }
}

/* The communication matrix at rank 0 as its pairs (comm_pairs.h): this
 * process's row is the sum over its threads' rows. */
static int sm_live_gather_matrix(const sm_procs_t *procs, sm_comm_pair_t **pairs,
                                 uint64_t *n_pairs)
{
    uint32_t n = procs->size, nloc = sm_location_count(), used = 0;
    uint64_t *row = calloc(2u * (size_t)n, sizeof *row);
    sm_comm_pair_t *mine = NULL;
    for (uint32_t i = 0; row && i < nloc; i++) {
        const sm_location_t *loc = sm_location_get(i);
        for (uint32_t k = 0; loc->msg_matrix && k < loc->msg_matrix_n && k < n; k++) {
            row[2 * k] += loc->msg_matrix[2 * k];
            row[2 * k + 1] += loc->msg_matrix[2 * k + 1];
        }
    }
    for (uint32_t k = 0; row && k < n; k++)
        used += row[2 * k] || row[2 * k + 1];
    if (row && used && (mine = malloc(sizeof *mine * used)) != NULL) {
        used = 0;
        for (uint32_t k = 0; k < n; k++)
            if (row[2 * k] || row[2 * k + 1])
                mine[used++] = (sm_comm_pair_t){procs->rank, k, row[2 * k], row[2 * k + 1]};
    } else if (used) {
        used = 0; /* out of memory: this rank's row is lost, the exchange goes on */
        sm_error("the communication matrix's row of this process: out of memory");
    }
    int rc = sm_comm_pairs_gather(procs, mine, used, pairs, n_pairs);
    free(row);
    free(mine);
    return rc;
}

int sm_finalize_live(const sm_procs_t *procs, sm_run_info_t *run, char *summary_line,
                     size_t summary_len)
{
    int failures = 0;
    sm_id_maps_t maps = {0};
    summary_line[0] = '\0';
    /* (After the save at MPI_Finalize: the wait for the other ranks.) */
    sm_log_step("the barrier and the clock exchange");
    /* Only the OTF2 writer reads the union on every rank: without a trace,
     * rank 0 alone gets it and the others only their maps, so their work
     * and memory do not grow with the job's definitions (issue 29). */
    sm_defset_t *local = sm_defset_from_process(procs->rank), *defs = NULL;
    int unified = sm_unify_set(procs, local,
                               run->config->trace ? SM_UNIFY_EVERY_RANK : SM_UNIFY_ROOT_ONLY,
                               &defs, &maps);
    sm_defset_free(local);
    uint64_t unusable = unified != 0;
    if (procs->allreduce_max_u64(procs->ctx, &unusable, 1) != 0 || unusable) {
        if (unified == 0)
            sm_error("the definitions of another process could not be unified; no trace or "
                     "profile written");
        sm_defset_free(defs);
        sm_id_maps_free(&maps);
        return 1;
    }

    sm_job_process_t me, *all = NULL;
    memset(&me, 0, sizeof me);
    me.rank = procs->rank;
    me.pid = (int64_t)run->pid;
    size_t hl = strnlen(run->hostname, sizeof me.hostname - 1);
    memcpy(me.hostname, run->hostname, hl); /* a longer name is cut */
    if (procs->rank == 0)
        all = calloc(procs->size, sizeof *all);
    if (procs->gather(procs->ctx, 0, &me, sizeof me, all) != 0 || (procs->rank == 0 && !all))
        failures++;

    sm_comm_pair_t *pairs = NULL;
    uint64_t n_pairs = 0;
    if (sm_live_gather_matrix(procs, &pairs, &n_pairs) != 0)
        failures++;
    sm_live_job_totals(procs, run);
    /* Every process's named metrics (their high-water marks), for rank 0's
     * metadata.json. */
    uint64_t metrics_len = 0, mine_len = 0;
    void *metrics = NULL, *mine = sm_metrics_serialize(&mine_len);
    if (sm_tree_gather(procs, mine ? mine : "", mine ? mine_len : 0, &metrics, &metrics_len) != 0)
        failures++;
    free(mine);
    sm_log_step("unifying the definitions and gathering the totals");

    const sm_config_t *cfg = run->config;
    sm_finalize_t f = {
        .procs = procs,
        .run = run,
        .job = {
            .procs = procs,
            .defs = defs,
            .maps = &maps,
            .processes = all,
            .matrix_pairs = pairs,
            .matrix_pairs_n = n_pairs,
            .metrics = metrics,
            .metrics_len = metrics_len,
        },
        .trace = cfg->trace,
        .profile = cfg->profile,
        .report = cfg->report,
        .perfetto = cfg->perfetto,
    };
    /* This process's profile, in the job's region ids. */
    void *blob = NULL;
    if (cfg->profile) {
        sm_profile_summary_t *local = sm_profile_summarize();
        blob = local ? sm_profile_summary_serialize(local, &maps, procs->rank, &f.profiles_len)
                     : NULL;
        sm_profile_summary_free(local);
        if (!blob) {
            sm_error("building the profile summary failed: out of memory");
            failures++;
            f.profiles_len = 0;
        }
        f.profiles = blob;
    }
    failures += sm_finalize_run(&f);
    snprintf(summary_line, summary_len, "%s", f.summary_line);
    free(blob);
    free(pairs);
    free(metrics);
    free(all);
    sm_defset_free(defs);
    sm_id_maps_free(&maps);
    return failures;
}

static int sm_live_merge_job(const char *folder, const char *job, bool keep)
{
    sm_merge_options_t opt = {.job = job, .keep = keep, .live = 1};
    return sm_merge_folder(folder, &opt) != SM_MERGE_OK;
}

const sm_end_layer_t sm_end_layer = {
    .trace_during_run = sm_otf2_background,
    .write_job = sm_finalize_live,
    .save_process = sm_process_file_write,
    .save_process_first = sm_process_file_write_first,
    .remove_process = sm_process_file_remove,
    .single_process = sm_procs_single,
    .merge_job = sm_live_merge_job,
};
