/* metadata.json: what was run, where, when, with which configuration, and
 * what sysmeasure saw of it (locations, buffer use). */
#include "sm_build.h" /* from configure: PACKAGE_VERSION, SM_OTF2_VERSION */
#include "../finalize/pipeline.h"
#include "writers.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../core/buffer.h"
#include "../core/clock.h"
#include "../core/config.h"
#include "../core/definitions.h"
#include "../core/events.h"
#include "../core/location.h"
#include "../core/metrics.h"
#include "../merge/image.h"
#include "../util/bytes.h"
#include "../util/json.h"
#include "../util/log.h"
#include "gpu_memory_table.h"
#include "summary_common.h"

/* ISO 8601 in UTC with milliseconds: 2024-05-01T12:34:56.789Z */
static void sm_meta_date(sm_json_t *j, const char *key, uint64_t epoch_ns)
{
    time_t sec = (time_t)(epoch_ns / 1000000000u);
    unsigned ms = (unsigned)(epoch_ns % 1000000000u / 1000000u);
    struct tm tm;
    char buf[64];
    sm_json_key(j, key);
    if (!gmtime_r(&sec, &tm)) {
        sm_json_null(j);
        return;
    }
    snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
    sm_json_string(j, buf);
}

/* Deepest creation path shown. */
#define SM_META_PATH_MAX 64

static const char *sm_meta_location_type(sm_location_type_t type)
{
    switch (type) {
    case SM_LOCATION_CPU_THREAD: return "cpu_thread";
    case SM_LOCATION_GPU_STREAM: return "gpu_stream";
    case SM_LOCATION_METRIC: return "metric";
    }
    return "unknown";
}

static void sm_meta_configuration(sm_json_t *j, const sm_config_t *cfg)
{
    char value[4096];
    sm_json_key(j, "configuration");
    sm_json_object_begin(j);
    for (size_t i = 0; cfg && i < SM_CONFIG_COUNT; i++) {
        const sm_config_var_t *var = &sm_config_vars[i];
        value[0] = '\0';
        sm_config_format(cfg, var, value, sizeof value);
        sm_json_key(j, var->env);
        sm_json_object_begin_inline(j);
        sm_json_field_string(j, "value", value);
        sm_json_field_string(j, "source", sm_config_source_name(cfg->source[i]));
        sm_json_object_end(j);
    }
    sm_json_object_end(j);
}

/* One location of rank 0: its id, name, type, thread id (0: not known),
 * creator and the regions open in the creator, outermost first. */
static void sm_meta_location(sm_json_t *j, uint32_t id, const char *name, uint32_t type,
                             int64_t tid, uint32_t creator, const char *const *path,
                             uint32_t depth)
{
    sm_json_object_begin_inline(j);
    sm_json_field_uint(j, "id", id);
    sm_json_field_string(j, "name", name);
    sm_json_field_string(j, "type", sm_meta_location_type((sm_location_type_t)type));
    sm_json_key(j, "tid");
    if (tid)
        sm_json_int(j, tid);
    else
        sm_json_null(j);
    sm_json_key(j, "created_by");
    if (creator == SM_INVALID_ID)
        sm_json_null(j);
    else
        sm_json_uint(j, creator);
    sm_json_key(j, "creation_path");
    sm_json_array_begin_inline(j);
    for (uint32_t d = 0; d < depth; d++)
        sm_json_string(j, path[d]);
    sm_json_array_end(j);
    sm_json_object_end(j);
}

/* Rank 0's locations: this process's own (a live end), or those of rank
 * 0's image (sysmeasure-merge: its process file keeps no thread ids, and
 * its creation paths as "a > b"). */
static void sm_meta_locations(sm_json_t *j, const sm_job_t *job)
{
    sm_json_key(j, "locations");
    sm_json_array_begin(j);
    const sm_image_t *img = job->rank0_image;
    uint32_t count = img ? img->n_locations : sm_location_count();
    for (uint32_t id = 0; id < count; id++) {
        const char *path[SM_META_PATH_MAX];
        uint32_t depth = 0;
        if (!img) {
            const sm_location_t *loc = sm_location_get(id);
            if (!loc)
                continue;
            for (uint32_t d = 0; loc->creator_path && d < loc->creator_depth &&
                                 depth < SM_META_PATH_MAX; d++)
                path[depth++] = sm_region_name(loc->creator_path[d]);
            sm_meta_location(j, loc->id, loc->name, loc->type, loc->tid, loc->creator, path,
                             depth);
            continue;
        }
        sm_image_location_t l;
        memset(&l, 0, sizeof l);
        if (img->location(img->ctx, id, &l) != 0)
            continue;
        for (char *p = l.creation_path; p && *p && depth < SM_META_PATH_MAX;) {
            path[depth++] = p;
            char *sep = strstr(p, " > ");
            if (!sep)
                break;
            *sep = '\0';
            p = sep + 3;
        }
        sm_meta_location(j, l.id, l.name, l.type, 0, l.creator, path, depth);
        free(l.creation_path);
    }
    sm_json_array_end(j);
}

void sm_json_run_totals(sm_json_t *j, const sm_run_info_t *run)
{
    sm_json_key(j, "buffers");
    sm_json_object_begin(j);
    if (run->config)
        sm_json_field_uint(j, "budget", run->config->buffer_size);
    else
        sm_json_field_null(j, "budget");
    sm_json_field_uint(j, "chunk_size", sm_buffers_chunk_size());
    sm_json_field_uint(j, "spills", run->spills);
    sm_json_field_uint(j, "spilled_bytes", run->spilled_bytes);
    sm_json_field_uint(j, "dropped_records", run->dropped_records);
    sm_json_object_end(j);
    sm_json_field_uint(j, "unmatched_leaves", run->unmatched_leaves);
    sm_json_field_uint(j, "profile_folded_enters", run->folded_enters);
    /* Events beside enter/leave, traced or not (sysmeasure-score):
     * {kind: [records, payload words]} over the job, and the most memory
     * their records take in one process. */
    sm_json_key(j, "records");
    sm_json_object_begin(j);
    for (int k = 0; k < SM_REC_KIND_COUNT; k++) {
        if (!run->record_count[k])
            continue;
        sm_json_key(j, sm_record_kind_name((sm_record_kind_t)k));
        sm_json_array_begin_inline(j);
        sm_json_uint(j, run->record_count[k]);
        sm_json_uint(j, run->record_words[k]);
        sm_json_array_end(j);
    }
    sm_json_object_end(j);
    sm_json_field_uint(j, "records_bytes_max_process", run->record_bytes_max);
    sm_json_field_uint(j, "trace_folded_enters", run->trace_folded_enters);
    /* The trace stopped before a disk limit (trace_space.h); null: it
     * recorded to the end. */
    if (run->trace_stopped) {
        sm_json_key(j, "trace_stopped");
        sm_json_object_begin(j);
        sm_json_field_double(j, "at_s", run->trace_stop_s);
        sm_json_field_string(j, "reason", run->trace_stop_reason);
        sm_json_field_uint(j, "events_not_recorded", run->trace_untraced);
        sm_json_field_uint(j, "ranks", run->trace_stopped);
        sm_json_object_end(j);
    } else {
        sm_json_field_null(j, "trace_stopped");
    }
}

/* What the program declared about itself (Kokkos declare_metadata). */
static void sm_meta_declared(sm_json_t *j)
{
    sm_json_key(j, "metadata");
    sm_json_object_begin(j);
    const char *key, *value;
    for (uint32_t i = 0; sm_runtime_metadata_get(i, &key, &value) == 0; i++)
        sm_json_field_string(j, key, value);
    sm_json_object_end(j);
}

/* One process's named counter metrics (sm_metrics_serialize): the last
 * sample and the largest (for a memory space's bytes in use, its
 * high-water mark). */
typedef struct sm_meta_metric_arg {
    sm_json_t *j;
    uint32_t rank;
} sm_meta_metric_arg_t;

static void sm_meta_metric(const sm_metric_entry_t *e, void *arg)
{
    const sm_meta_metric_arg_t *a = arg;
    sm_json_t *j = a->j;
    sm_json_object_begin_inline(j);
    sm_json_field_uint(j, "rank", a->rank);
    sm_json_field_string(j, "name", e->name);
    sm_json_field_string(j, "unit", e->unit);
    sm_json_field_uint(j, "last", e->last);
    sm_json_field_uint(j, "max", e->max);
    sm_json_field_uint(j, "samples", e->samples);
    sm_json_field_uint(j, "min", e->min);
    sm_json_field_double(j, "mean", e->samples ? (double)e->sum / (double)e->samples : 0.0);
    sm_json_object_end(j);
}

static void sm_meta_metrics_of(sm_json_t *j, uint32_t rank, const uint8_t *blob, uint64_t len)
{
    sm_meta_metric_arg_t a = {j, rank};
    sm_metrics_deserialize(blob, len, sm_meta_metric, &a);
}

/* Every process's metrics, in rank order. */
static void sm_meta_metrics(sm_json_t *j, const sm_job_t *job)
{
    sm_json_key(j, "metrics");
    sm_json_array_begin(j);
    if (job && job->metrics) {
        /* (sysmeasure-merge: one process holds every rank's metrics) */
        uint32_t n = job->n_ranks ? job->n_ranks : job->procs ? job->procs->size : 1;
        const uint8_t **blobs = calloc(n, sizeof *blobs);
        uint64_t *lens = calloc(n, sizeof *lens);
        const uint8_t *p = job->metrics, *end = p + job->metrics_len, *blob;
        uint32_t rank;
        uint64_t len;
        while (blobs && lens && (p = sm_tree_next(p, end, &rank, &blob, &len)) != NULL)
            if (rank < n) {
                blobs[rank] = blob;
                lens[rank] = len;
            }
        for (uint32_t r = 0; blobs && lens && r < n; r++)
            if (blobs[r])
                sm_meta_metrics_of(j, r, blobs[r], lens[r]);
        free(blobs);
        free(lens);
    } else {
        uint64_t len = 0;
        uint8_t *mine = sm_metrics_serialize(&len);
        if (mine)
            sm_meta_metrics_of(j, 0, mine, len);
        free(mine);
    }
    sm_json_array_end(j);
}

/* The processes of the job: rank, pid, host; ranks that left no data
 * (sysmeasure-merge) are listed apart with the reason, never as processes. */
static void sm_meta_processes(sm_json_t *j, const sm_run_info_t *run, const sm_job_t *job)
{
    uint32_t n = job && job->n_ranks ? job->n_ranks : job && job->procs ? job->procs->size : 1;
    uint32_t present = sm_job_ranks_present(job);
    sm_json_field_uint(j, "ranks", n);
    if (present != n)
        sm_json_field_uint(j, "ranks_merged", present);
    sm_json_key(j, "processes");
    sm_json_array_begin(j);
    for (uint32_t r = 0; r < n; r++) {
        const sm_job_process_t *p = job && job->processes ? &job->processes[r] : NULL;
        if (sm_job_missing(job, r))
            continue;
        sm_json_object_begin_inline(j);
        sm_json_field_uint(j, "rank", r);
        sm_json_field_int(j, "pid", p ? p->pid : (int64_t)run->pid);
        sm_json_field_string(j, "host", p ? p->hostname : run->hostname);
        sm_json_object_end(j);
    }
    sm_json_array_end(j);
    if (present == n)
        return;
    sm_json_key(j, "missing_ranks");
    sm_json_array_begin(j);
    for (uint32_t r = 0; r < n; r++) {
        if (!sm_job_missing(job, r))
            continue;
        sm_json_object_begin_inline(j);
        sm_json_field_uint(j, "rank", r);
        sm_json_field_string(j, "reason", sm_job_missing(job, r));
        sm_json_object_end(j);
    }
    sm_json_array_end(j);
}

int sm_metadata_write_json(const sm_run_info_t *run, const sm_job_t *job)
{
    sm_json_t j;
    if (sm_json_open(&j, run->output_dir, "metadata.json") != 0)
        return -1;
    sm_json_object_begin(&j);
    sm_json_field_string(&j, "sysmeasure_version", PACKAGE_VERSION);
    sm_json_field_string(&j, "otf2_version", SM_OTF2_VERSION);

    sm_json_key(&j, "command");
    sm_json_array_begin_inline(&j);
    for (int i = 0; run->argv && i < run->argc; i++)
        sm_json_string(&j, run->argv[i]);
    sm_json_array_end(&j);
    sm_json_field_string(&j, "program", run->program);
    sm_json_field_int(&j, "pid", run->pid);
    sm_json_field_string(&j, "host", run->hostname);
    sm_json_field_string(&j, "output_dir", run->output_dir);

    sm_meta_date(&j, "start_time", run->start_realtime_ns);
    sm_meta_date(&j, "end_time", run->end_realtime_ns);
    sm_json_field_uint(&j, "start_time_ns", run->start_realtime_ns);
    sm_json_field_uint(&j, "end_time_ns", run->end_realtime_ns);
    /* From the run's own clock: the wall clock may have been stepped. */
    uint64_t duration = 0;
    if (run->end_time > run->start_time)
        duration = (uint64_t)((double)(run->end_time - run->start_time) * sm_clock_ns_per_tick() + 0.5);
    else if (run->end_realtime_ns >= run->start_realtime_ns)
        duration = run->end_realtime_ns - run->start_realtime_ns;
    sm_json_field_uint(&j, "duration_ns", duration);

    sm_json_key(&j, "clock");
    sm_json_object_begin_inline(&j);
    sm_json_field_string(&j, "source", run->clock_source);
    sm_json_field_double(&j, "ticks_per_second", sm_clock_ticks_per_second());
    sm_json_object_end(&j);

    sm_meta_configuration(&j, run->config);
    sm_meta_processes(&j, run, job);
    /* This process's (rank 0's) threads; the others' are in the archive. */
    sm_meta_locations(&j, job);
    /* Rank 0's declared pairs (the ranks of a job declare alike). */
    sm_meta_declared(&j);
    sm_meta_metrics(&j, job);
    sm_gmt_json_field(&j, job); /* GPU memory per device and kind */

    sm_json_run_totals(&j, run);
    /* What an adapter could not see of the program (see sm_runtime_add_note). */
    sm_json_key(&j, "notes");
    sm_json_array_begin(&j);
    for (uint32_t i = 0; i < run->n_notes; i++)
        sm_json_string(&j, run->notes[i]);
    sm_json_array_end(&j);
    sm_json_object_end(&j);
    return sm_json_close(&j);
}

static bool sm_metadata_wanted(const sm_finalize_t *f)
{
    (void)f;
    return true;
}

static int sm_metadata_output(sm_finalize_t *f)
{
    return sm_metadata_write_json(f->run, &f->job);
}

const sm_output_t sm_output_metadata = {
    .file = "metadata.json",
    .who = SM_OUTPUT_ROOT,
    .wanted = sm_metadata_wanted,
    .write = sm_metadata_output,
};
