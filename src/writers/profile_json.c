/* profile.json: the numbers of profile.txt and more, machine-readable, times
 * in ns: per path the spread across threads and across ranks (per rank the
 * sum over its threads), the ranks that stand out and the per-rank times in
 * rank ranges; in a job of at most SM_PROFILE_DETAIL_MAX threads also the
 * per-thread statistics and per-rank sums; the MPI functions and the
 * communication matrix.  Its size does not grow with the ranks beyond that:
 * every thread's rows are in profile-ranks.csv. */
#include "sm_build.h" /* from configure: PACKAGE_VERSION, SM_OTF2_VERSION */
#include "../finalize/pipeline.h"
#include "summary_common.h"
#include "profile_sampled.h"
#include "gpu_summary.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "../core/definitions.h"
#include "../util/json.h"
#include "../util/log.h"

/* Blocks of ranks per side of a large job's matrix (report.html's heat map
 * draws as many). */
#define SM_PJSON_MATRIX_CELLS 64

typedef struct sm_pjson {
    sm_json_t *j;
    const sm_job_t *job;
    const sm_profile_summary_t *s;
    const char **names; /* path names, outermost first, reused between paths */
    uint64_t next_id;   /* pre-order, as profile.csv's path_id */
    uint64_t *id_at_depth; /* a path's parent is the last one a level up */
    uint32_t ids_cap;
    uint64_t cut;       /* paths named by their SM_PATH_NAMES innermost regions */
} sm_pjson_t;

static void sm_pjson_id_or_null(sm_json_t *j, const char *key, uint32_t id)
{
    sm_json_key(j, key);
    if (id == SM_INVALID_ID)
        sm_json_null(j);
    else
        sm_json_uint(j, id);
}

static void sm_pjson_processes(sm_json_t *j, const sm_job_t *job, uint32_t n)
{
    sm_json_key(j, "processes");
    sm_json_array_begin(j);
    for (uint32_t r = 0; job && job->processes && r < n; r++) {
        const sm_job_process_t *p = &job->processes[r];
        if (sm_job_missing(job, r)) /* no data (sysmeasure-merge): in metadata.json's missing_ranks */
            continue;
        sm_json_object_begin_inline(j);
        sm_json_field_uint(j, "rank", p->rank);
        sm_json_field_int(j, "pid", p->pid);
        char host[sizeof p->hostname + 1];
        snprintf(host, sizeof host, "%.*s", (int)sizeof p->hostname, p->hostname);
        sm_json_field_string(j, "host", host);
        sm_json_object_end(j);
    }
    sm_json_array_end(j);
}

static void sm_pjson_threads(sm_json_t *j, const sm_job_t *job, const sm_profile_summary_t *s)
{
    if (!s->per_member)
        return;
    sm_json_key(j, "threads");
    sm_json_array_begin(j);
    for (uint32_t i = 0; i < s->n_members; i++) {
        const sm_summary_member_t *m = &s->member_info[i];
        sm_json_object_begin_inline(j);
        sm_json_field_uint(j, "member", i);
        sm_json_field_uint(j, "rank", s->member_rank[i]);
        sm_json_field_uint(j, "location", s->member_location[i]);
        sm_json_field_string(j, "name", m->name);
        sm_pjson_id_or_null(j, "created_by", m->creator);
        sm_json_key(j, "creation_path");
        sm_json_array_begin_inline(j);
        for (uint32_t d = 0; d < m->creation_depth; d++)
            sm_json_string(j, sm_job_region_name(job, m->creation_path[d]));
        sm_json_array_end(j);
        sm_json_object_end(j);
    }
    sm_json_array_end(j);
}

/* Statistics per visit of one member, in ns. */
static void sm_pjson_stat(sm_json_t *j, const char *key, const sm_stat_t *st, uint64_t visits,
                          double npt)
{
    double var = sm_stat_variance(st, visits) * npt * npt;
    sm_json_key(j, key);
    sm_json_object_begin_inline(j);
    sm_json_field_double(j, "sum", (double)st->sum * npt);
    sm_json_field_double(j, "mean", sm_stat_mean(st, visits) * npt);
    sm_json_field_double(j, "min", visits ? (double)st->min * npt : 0.0);
    sm_json_field_double(j, "max", visits ? (double)st->max * npt : 0.0);
    sm_json_field_double(j, "variance", var);
    sm_json_field_double(j, "stddev", sqrt(var));
    sm_json_object_end(j);
}

/* "counters": {event: {"inclusive": stat, "exclusive": stat}} of one member. */
static void sm_pjson_member_counters(sm_json_t *j, const sm_profile_summary_t *s,
                                     const sm_cpath_member_t *m)
{
    if (!s->n_counters || !m->counters)
        return;
    sm_json_key(j, "counters");
    sm_json_object_begin_inline(j);
    for (uint32_t k = 0; k < s->n_counters; k++) {
        sm_json_key(j, s->counter_names[k]);
        sm_json_object_begin_inline(j);
        sm_pjson_stat(j, "inclusive", &m->counters[k], m->visits, 1.0);
        sm_pjson_stat(j, "exclusive", &m->counters[s->n_counters + k], m->visits, 1.0);
        sm_json_object_end(j);
    }
    sm_json_object_end(j);
}

/* "counters": {event: {"inclusive": spread, "exclusive": spread}} across
 * threads (ranks), then "derived": {figure: value over all of them}. */
static void sm_pjson_counter_spreads(sm_json_t *j, const sm_profile_summary_t *s,
                                     const sm_cpath_t *p, bool ranks)
{
    if (!s->n_counters)
        return;
    sm_json_key(j, "counters");
    sm_json_object_begin(j);
    for (uint32_t k = 0; k < s->n_counters; k++) {
        sm_json_key(j, s->counter_names[k]);
        sm_json_object_begin(j);
        for (int excl = 0; excl < 2; excl++)
            sm_json_spread(j, excl ? "exclusive" : "inclusive",
                            ranks ? sm_cpath_spread_ranks_counter(s, p, k, excl)
                                  : sm_cpath_spread_counter(s, p, k, excl),
                            ranks ? "rank" : "thread", false);
        sm_json_object_end(j);
    }
    sm_json_object_end(j);
    sm_derived_t d[SM_SUMMARY_MAX_COUNTERS];
    uint32_t n = sm_summary_derived(s, d, SM_SUMMARY_MAX_COUNTERS);
    if (!n || ranks)
        return;
    sm_json_key(j, "derived");
    sm_json_object_begin(j);
    for (uint32_t i = 0; i < n; i++) {
        double v = sm_derived_value(&d[i], sm_cpath_counter_total(s, p, d[i].num, 0),
                                    sm_cpath_counter_total(s, p, d[i].den, 0));
        sm_json_key(j, d[i].name);
        if (isnan(v))
            sm_json_null(j);
        else
            sm_json_double(j, v);
    }
    sm_json_object_end(j);
}

static void sm_pjson_per_thread(sm_json_t *j, const sm_profile_summary_t *s, const sm_cpath_t *p)
{
    if (!s->per_member)
        return;
    sm_json_key(j, "per_thread");
    sm_json_array_begin(j);
    for (uint32_t i = 0; i < s->n_members && !j->err; i++) {
        const sm_cpath_member_t *m = &p->members[i];
        if (!m->visits)
            continue;
        double npt = sm_summary_member_ns_per_tick(s, i);
        sm_json_object_begin_inline(j); /* one line per thread: large jobs have many */
        sm_json_field_uint(j, "member", i);
        sm_json_field_uint(j, "rank", s->member_rank[i]);
        sm_json_field_uint(j, "visits", m->visits);
        sm_pjson_stat(j, "inclusive", &m->incl, m->visits, npt);
        sm_pjson_stat(j, "exclusive", &m->excl, m->visits, npt);
        sm_json_field_uint(j, "bytes_sent", m->bytes_sent);
        sm_json_field_uint(j, "bytes_received", m->bytes_received);
        sm_pjson_member_counters(j, s, m);
        sm_json_object_end(j);
    }
    sm_json_array_end(j);
}

static void sm_pjson_per_rank(sm_json_t *j, const sm_profile_summary_t *s, const sm_cpath_t *p)
{
    if (!s->per_member)
        return;
    sm_json_key(j, "per_rank");
    sm_json_array_begin(j);
    for (uint32_t r = 0; r < s->n_ranks && !j->err; r++) {
        sm_cpath_rank_total_t t;
        sm_cpath_rank_total(s, p, r, &t);
        if (!t.threads)
            continue;
        sm_json_object_begin_inline(j);
        sm_json_field_uint(j, "rank", r);
        sm_json_field_uint(j, "threads", t.threads);
        sm_json_field_uint(j, "visits", t.visits);
        sm_json_field_double(j, "inclusive", t.incl_ns);
        sm_json_field_double(j, "exclusive", t.excl_ns);
        sm_json_field_uint(j, "bytes_sent", t.bytes_sent);
        sm_json_field_uint(j, "bytes_received", t.bytes_received);
        if (s->n_counters) {
            sm_json_key(j, "counters");
            sm_json_object_begin_inline(j);
            for (uint32_t k = 0; k < s->n_counters; k++) {
                sm_json_key(j, s->counter_names[k]);
                sm_json_object_begin_inline(j);
                sm_json_field_uint(j, "inclusive", sm_cpath_rank_counter(s, p, r, k, 0));
                sm_json_field_uint(j, "exclusive", sm_cpath_rank_counter(s, p, r, k, 1));
                sm_json_object_end(j);
            }
            sm_json_object_end(j);
        }
        sm_json_object_end(j);
    }
    sm_json_array_end(j);
}

/* "outliers": the ranks with the most and the least inclusive time. */
static void sm_pjson_outliers(sm_json_t *j, const sm_cpath_t *p)
{
    if (!p->stats)
        return;
    sm_json_key(j, "outliers");
    sm_json_object_begin(j);
    for (int side = 0; side < 2; side++) {
        const sm_rank_value_t *list = side ? p->stats->bottom : p->stats->top;
        uint32_t n = side ? p->stats->n_bottom : p->stats->n_top;
        sm_json_key(j, side ? "fastest" : "slowest");
        sm_json_array_begin_inline(j);
        for (uint32_t i = 0; i < n; i++) {
            sm_json_object_begin_inline(j);
            sm_json_field_uint(j, "rank", list[i].rank);
            sm_json_field_uint(j, "inclusive", list[i].value);
            sm_json_object_end(j);
        }
        sm_json_array_end(j);
    }
    sm_json_object_end(j);
}

/* "rank_bins": the per-rank times of the path in rank ranges (bins of the
 * job's "rank_bins"), as columns: of bin "first_bin" + i, the ranks that
 * visited the path and the sum, min and max of their inclusive time, the
 * sum of their exclusive time. */
static void sm_pjson_rank_bins(sm_json_t *j, const sm_cpath_t *p)
{
    const sm_cpath_stats_t *st = p->stats;
    if (!st)
        return;
    sm_json_key(j, "rank_bins");
    sm_json_object_begin(j);
    sm_json_field_uint(j, "first_bin", st->bin_first);
    static const char *const cols[] = {"ranks", "inclusive_sum", "inclusive_min", "inclusive_max",
                                       "exclusive_sum"};
    for (int c = 0; c < 5; c++) {
        sm_json_key(j, cols[c]);
        sm_json_array_begin_inline(j);
        for (uint32_t b = 0; b < st->n_bins; b++) {
            const sm_rank_bin_t *x = &st->bins[b];
            uint64_t v = c == 0 ? x->ranks : c == 1 ? x->incl_sum : c == 2 ? (x->ranks ? x->incl_min : 0)
                       : c == 3 ? x->incl_max : x->excl_sum;
            sm_json_uint(j, v);
        }
        sm_json_array_end(j);
    }
    sm_json_object_end(j);
}

/* The job's rank ranges: "rank_bins" {first rank of each, ranks with a
 * profile, their threads and main threads}. */
static void sm_pjson_job_bins(sm_json_t *j, const sm_profile_summary_t *s)
{
    sm_json_key(j, "rank_bins");
    sm_json_object_begin(j);
    sm_json_field_uint(j, "bins", s->n_bins);
    static const char *const cols[] = {"first_rank", "ranks", "threads", "main_threads"};
    for (int c = 0; c < 4; c++) {
        sm_json_key(j, cols[c]);
        sm_json_array_begin_inline(j);
        for (uint32_t b = 0; b < s->n_bins; b++)
            sm_json_uint(j, c == 0 ? sm_rank_bin_first(b, s->n_ranks)
                          : c == 1 ? s->bins[b].ranks
                          : c == 2 ? s->bins[b].threads : s->bins[b].main_threads);
        sm_json_array_end(j);
    }
    sm_json_object_end(j);
}

static void sm_pjson_callpath(const sm_cpath_t *p, void *arg)
{
    sm_pjson_t *x = arg;
    sm_json_t *j = x->j;
    const sm_profile_summary_t *s = x->s;
    if (p->depth == 0 || j->err)
        return;
    if (p->depth >= x->ids_cap) {
        uint32_t cap = p->depth * 2;
        uint64_t *ids = realloc(x->id_at_depth, cap * sizeof *ids);
        if (!ids) {
            j->err = ENOMEM;
            return;
        }
        x->id_at_depth = ids;
        x->ids_cap = cap;
    }
    uint64_t id = ++x->next_id;
    x->id_at_depth[p->depth] = id;
    /* At most SM_PATH_NAMES names: the file stays linear in the paths at
     * any depth (the outer part of a deeper path: through "parent"). */
    uint32_t from = sm_cpath_names_from(p), n = p->depth - from;
    for (const sm_cpath_t *q = p; q->depth > from; q = q->parent)
        x->names[q->depth - from - 1] = sm_job_region_name(x->job, q->region);

    sm_json_object_begin(j);
    sm_json_field_uint(j, "id", id);
    sm_json_field_uint(j, "parent", p->depth > 1 ? x->id_at_depth[p->depth - 1] : 0);
    sm_json_key(j, "path");
    sm_json_array_begin_inline(j);
    for (uint32_t d = 0; d < n; d++)
        sm_json_string(j, x->names[d]);
    sm_json_array_end(j);
    if (from) {
        sm_json_field_uint(j, "path_from_depth", from);
        x->cut++;
    }
    sm_json_field_string(j, "region", x->names[n - 1]);
    sm_json_field_uint(j, "depth", p->depth - 1);
    const sm_region_def_t *def = x->job && x->job->defs
                                     ? sm_defset_region_get(x->job->defs, p->region) : NULL;
    sm_json_field_string(j, "paradigm",
                         sm_paradigm_name(def ? (sm_paradigm_t)def->paradigm : SM_PARADIGM_COUNT));
    sm_json_field_string(j, "kind",
                         def ? sm_region_kind_name((sm_paradigm_t)def->paradigm,
                                                   (sm_region_role_t)def->role)
                             : "?");
    if (def && def->file != SM_INVALID_ID)
        sm_json_field_string(j, "file", sm_defset_string_get(x->job->defs, def->file));
    if (def && def->line)
        sm_json_field_uint(j, "line", def->line);

    sm_pjson_per_thread(j, s, p);
    sm_spread_t visits = sm_cpath_spread_visits(s, p);
    sm_json_key(j, "across_threads");
    sm_json_object_begin(j);
    sm_json_field_uint(j, "threads", visits.n);
    sm_json_spread(j, "visits", visits, "thread", false);
    sm_json_spread(j, "inclusive", sm_cpath_spread_time(s, p, 0), "thread", false);
    sm_json_spread(j, "exclusive", sm_cpath_spread_time(s, p, 1), "thread", false);
    sm_pjson_counter_spreads(j, s, p, false);
    sm_json_object_end(j);

    sm_pjson_per_rank(j, s, p);
    sm_spread_t rvisits = sm_cpath_spread_ranks_visits(s, p);
    sm_json_key(j, "across_ranks");
    sm_json_object_begin(j);
    sm_json_field_uint(j, "ranks", rvisits.n);
    sm_json_spread(j, "visits", rvisits, "rank", false);
    sm_json_spread(j, "inclusive", sm_cpath_spread_ranks_time(s, p, 0), "rank", false);
    sm_json_spread(j, "exclusive", sm_cpath_spread_ranks_time(s, p, 1), "rank", false);
    sm_json_spread(j, "bytes_sent", sm_cpath_spread_ranks_bytes(s, p, 0), "rank", false);
    sm_json_spread(j, "bytes_received", sm_cpath_spread_ranks_bytes(s, p, 1), "rank", false);
    sm_pjson_counter_spreads(j, s, p, true);
    sm_json_object_end(j);
    sm_pjson_outliers(j, p);
    sm_pjson_rank_bins(j, p);
    sm_json_object_end(j);
}

/* Per MPI function over all its call paths; ENOMEM or 0. */
static int sm_pjson_mpi(sm_json_t *j, const sm_job_t *job, const sm_profile_summary_t *s)
{
    uint32_t n;
    sm_region_total_t *tot = sm_profile_region_totals(s, sm_job_region_is_mpi, (void *)job, &n);
    if (n == UINT32_MAX)
        return ENOMEM;
    sm_json_key(j, "mpi");
    sm_json_array_begin(j);
    for (uint32_t i = 0; i < n; i++) {
        const sm_region_total_t *f = &tot[i];
        sm_json_object_begin_inline(j);
        sm_json_field_string(j, "function", sm_job_region_name(job, f->region));
        sm_json_field_uint(j, "calls", f->calls);
        sm_json_field_uint(j, "ranks", f->ranks);
        sm_json_field_double(j, "time", f->time_ns);
        sm_json_field_double(j, "time_per_rank_mean", f->mean_rank_ns);
        sm_json_field_double(j, "time_per_rank_max", f->max_rank_ns);
        sm_pjson_id_or_null(j, "max_rank", f->max_rank);
        sm_json_field_uint(j, "bytes_sent", f->bytes_sent);
        sm_json_field_uint(j, "bytes_received", f->bytes_received);
        sm_json_object_end(j);
    }
    sm_json_array_end(j);
    free(tot);
    return 0;
}

int sm_profile_write_json(const sm_run_info_t *run, const sm_job_t *job,
                          const sm_profile_summary_t *summary)
{
    if (!summary) { /* the summary could not be built (message printed) */
        sm_error("writing %s/profile.json failed: no profile summary", run->output_dir);
        return -1;
    }
    sm_json_t j;
    if (sm_json_open(&j, run->output_dir, "profile.json") != 0)
        return -1;
    sm_json_object_begin(&j);
    sm_json_field_string(&j, "sysmeasure_version", PACKAGE_VERSION);
    sm_json_field_string(&j, "time_unit", "ns");
    sm_json_field_string(&j, "program", run->program);
    sm_json_field_int(&j, "pid", run->pid);
    sm_json_field_uint(&j, "ranks", summary->n_ranks);
    /* A merge of some of the job's ranks (sysmeasure-merge) says which,
     * as metadata.json does: the statistics are of those ranks. */
    uint32_t present = sm_job_ranks_present(job);
    if (present != sm_job_ranks(job)) {
        char text[2048];
        sm_json_field_uint(&j, "ranks_merged", present);
        sm_job_missing_text(job, text, sizeof text);
        sm_json_field_string(&j, "missing_ranks", text);
    }
    sm_json_field_uint(&j, "thread_count", summary->n_threads);
    /* Whether "threads", "per_thread" and "per_rank" are there (at most
     * SM_PROFILE_DETAIL_MAX threads in the job). */
    sm_json_field_bool(&j, "per_thread_detail", summary->per_member);
    /* (beyond the per-thread detail, the ranks' processes are those of
     * metadata.json: this file does not grow with the ranks) */
    if (summary->per_member)
        sm_pjson_processes(&j, job, sm_job_ranks(job));
    sm_pjson_threads(&j, job, summary);
    sm_pjson_job_bins(&j, summary);
    sm_json_key(&j, "papi_events");
    sm_json_array_begin_inline(&j);
    for (uint32_t k = 0; k < summary->n_counters; k++)
        sm_json_string(&j, summary->counter_names[k]);
    sm_json_array_end(&j);

    sm_pjson_t x = {.j = &j, .job = job, .s = summary};
    x.names = malloc(SM_PATH_NAMES * sizeof *x.names);
    if (!x.names)
        j.err = ENOMEM;
    sm_json_key(&j, "callpaths");
    sm_json_array_begin(&j);
    sm_cpath_walk(&summary->root, sm_pjson_callpath, &x);
    sm_json_array_end(&j);
    free(x.names);
    free(x.id_at_depth);
    if (x.cut)
        sm_info(1, "profile.json: %llu call paths deeper than %d levels are named by their "
                "%d innermost regions (\"path_from_depth\"; the rest through \"parent\")",
                (unsigned long long)x.cut, SM_PATH_NAMES, SM_PATH_NAMES);

    int rc = sm_pjson_mpi(&j, job, summary);
    if (rc && !j.err)
        j.err = rc;
    sm_gpu_summary_t *gpu = sm_gpu_summary_build(job, summary);
    sm_gpu_summary_json(&j, gpu);
    sm_gpu_summary_free(gpu);
    sm_json_key(&j, "comm_matrix");
    if (summary->per_member)
        sm_comm_matrix_json(&j, job);
    else /* (every pair is in comm_matrix.json and .csv) */
        sm_comm_matrix_json_binned(&j, job, SM_PJSON_MATRIX_CELLS);
    sm_sampled_json(&j, run, job, summary);
    sm_procmetrics_json(&j, job);
    sm_json_run_totals(&j, run);
    sm_json_object_end(&j);
    return sm_json_close(&j);
}

static bool sm_profile_json_wanted(const sm_finalize_t *f)
{
    return f->profile && f->summary;
}

static int sm_profile_json_output(sm_finalize_t *f)
{
    return sm_profile_write_json(f->run, &f->job, f->summary);
}

const sm_output_t sm_output_profile_json = {
    .file = "profile.json",
    .who = SM_OUTPUT_ROOT,
    .wanted = sm_profile_json_wanted,
    .write = sm_profile_json_output,
};
