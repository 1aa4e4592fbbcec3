/* profile.csv: one row per (call path, rank, thread) that was on the path,
 * a tidy table for pandas or R.  Times in ns like profile.json; a path is
 * named by its id, its parent's id (0: top level) and its region names
 * joined with " > " (the innermost SM_PATH_NAMES, "... > " first, where
 * deeper).  A job of more than SM_PROFILE_DETAIL_MAX threads has
 * one row per path instead, rank, thread and location empty: the sums over
 * every thread of every rank, min and max per visit over all of them (each
 * thread's rows are in profile-ranks.csv). */
#include "summary_common.h"
#include "../finalize/pipeline.h"
#include "profile_sampled.h"
#include "gpu_summary.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "../util/log.h"

typedef struct sm_pcsv {
    sm_out_t *o;
    const sm_job_t *job;
    const sm_profile_summary_t *s;
    uint64_t next_id;
    uint64_t *id_at_depth;  /* pre-order: a path's parent is the last one a level up */
    uint32_t depth_cap;
    char *path;             /* the joined names, grown as needed */
    size_t path_cap;
} sm_pcsv_t;

static void sm_pcsv_depth(const sm_cpath_t *p, void *arg)
{
    sm_pcsv_t *x = arg;
    if (p->depth > x->depth_cap)
        x->depth_cap = p->depth;
}

/* The joined names of p into x->path; false when out of memory. */
static bool sm_pcsv_path(sm_pcsv_t *x, const sm_cpath_t *p)
{
    return sm_cpath_joined(x->job, p, &x->path, &x->path_cap);
}

/* ns to the picosecond, trailing zeros dropped: "4046.007", "60000000".
 * Finer digits would only be noise of the tick conversion. */
static const char *sm_pcsv_ns(char *buf, size_t len, double ns)
{
    snprintf(buf, len, "%.3f", ns);
    char *dot = strchr(buf, '.');
    if (dot) {
        char *end = buf + strlen(buf);
        while (end > dot + 1 && end[-1] == '0')
            *--end = '\0';
        if (end == dot + 1)
            *dot = '\0';
    }
    return buf;
}

/* The whole job's row of a path (a job without per-member values). */
static void sm_pcsv_job_row(sm_pcsv_t *x, const sm_cpath_t *p, uint64_t id)
{
    const sm_profile_summary_t *s = x->s;
    const sm_cpath_stats_t *st = p->stats;
    if (!st || !st->ranks[SM_PV_VISITS].n)
        return;
    sm_out_printf(x->o, "%llu,%llu,%u,", (unsigned long long)id,
                  (unsigned long long)x->id_at_depth[p->depth - 1], (unsigned)(p->depth - 1));
    sm_csv_field(x->o, sm_job_region_name(x->job, p->region));
    sm_out_printf(x->o, ",%s,", sm_job_region_kind(x->job, p->region));
    sm_csv_field(x->o, x->path);
    bool visited = st->threads[SM_PV_VISITS].n > 0;
    sm_out_printf(x->o, ",,,,%llu,%llu,", (unsigned long long)sm_cpath_total(s, p, SM_PV_VISITS),
                  (unsigned long long)sm_cpath_total(s, p, SM_PV_INCL));
    if (visited)
        sm_out_printf(x->o, "%llu,%llu", (unsigned long long)st->visit_incl_min,
                      (unsigned long long)st->visit_incl_max);
    else
        sm_out_printf(x->o, ",");
    sm_out_printf(x->o, ",%llu,", (unsigned long long)sm_cpath_total(s, p, SM_PV_EXCL));
    if (visited)
        sm_out_printf(x->o, "%llu,%llu", (unsigned long long)st->visit_excl_min,
                      (unsigned long long)st->visit_excl_max);
    else
        sm_out_printf(x->o, ",");
    sm_out_printf(x->o, ",%llu,%llu", (unsigned long long)sm_cpath_total(s, p, SM_PV_SENT),
                  (unsigned long long)sm_cpath_total(s, p, SM_PV_RECEIVED));
    for (uint32_t k = 0; k < s->n_counters; k++)
        sm_out_printf(x->o, ",%llu,%llu", (unsigned long long)sm_cpath_counter_total(s, p, k, 0),
                      (unsigned long long)sm_cpath_counter_total(s, p, k, 1));
    sm_out_printf(x->o, "\n");
}

static void sm_pcsv_row(const sm_cpath_t *p, void *arg)
{
    sm_pcsv_t *x = arg;
    if (p->depth == 0 || x->o->err)
        return;
    uint64_t id = ++x->next_id;
    x->id_at_depth[p->depth] = id;
    if (!sm_pcsv_path(x, p)) {
        sm_out_fail(x->o, ENOMEM);
        return;
    }
    const sm_profile_summary_t *s = x->s;
    if (!s->per_member) {
        sm_pcsv_job_row(x, p, id);
        return;
    }
    for (uint32_t i = 0; i < s->n_members; i++) {
        const sm_cpath_member_t *m = &p->members[i];
        if (!m->visits && !m->bytes_sent && !m->bytes_received)
            continue;
        double npt = sm_summary_member_ns_per_tick(s, i);
        sm_out_printf(x->o, "%llu,%llu,%u,", (unsigned long long)id,
                      (unsigned long long)x->id_at_depth[p->depth - 1], (unsigned)(p->depth - 1));
        sm_csv_field(x->o, sm_job_region_name(x->job, p->region));
        sm_out_printf(x->o, ",%s,", sm_job_region_kind(x->job, p->region));
        sm_csv_field(x->o, x->path);
        /* Empty min/max without visits (R and pandas read NA). */
        char isum[48], imin[48] = "", imax[48] = "", esum[48], emin[48] = "", emax[48] = "";
        sm_pcsv_ns(isum, sizeof isum, (double)m->incl.sum * npt);
        sm_pcsv_ns(esum, sizeof esum, (double)m->excl.sum * npt);
        if (m->visits) {
            sm_pcsv_ns(imin, sizeof imin, (double)m->incl.min * npt);
            sm_pcsv_ns(imax, sizeof imax, (double)m->incl.max * npt);
            sm_pcsv_ns(emin, sizeof emin, (double)m->excl.min * npt);
            sm_pcsv_ns(emax, sizeof emax, (double)m->excl.max * npt);
        }
        sm_out_printf(x->o, ",%u,%u,%u,%llu,%s,%s,%s,%s,%s,%s,%llu,%llu",
                      (unsigned)s->member_rank[i], (unsigned)i, (unsigned)s->member_location[i],
                      (unsigned long long)m->visits, isum, imin, imax, esum, emin, emax,
                      (unsigned long long)m->bytes_sent, (unsigned long long)m->bytes_received);
        /* Per PAPI event: inclusive and exclusive sums (empty: not counted). */
        for (uint32_t k = 0; k < s->n_counters; k++) {
            if (m->counters)
                sm_out_printf(x->o, ",%llu,%llu", (unsigned long long)m->counters[k].sum,
                              (unsigned long long)m->counters[s->n_counters + k].sum);
            else
                sm_out_printf(x->o, ",,");
        }
        sm_out_printf(x->o, "\n");
    }
}

int sm_profile_write_csv(const sm_run_info_t *run, const sm_job_t *job,
                         const sm_profile_summary_t *summary)
{
    if (!summary) { /* the summary could not be built (message printed) */
        sm_error("writing %s/profile.csv failed: no profile summary", run->output_dir);
        return -1;
    }
    sm_out_t o;
    if (sm_out_open(&o, run->output_dir, "profile.csv") != 0)
        return -1;
    sm_out_printf(&o, "path_id,parent_id,depth,region,kind,path,rank,thread,location,visits,"
                      "incl_sum_ns,incl_min_ns,incl_max_ns,excl_sum_ns,excl_min_ns,excl_max_ns,"
                      "bytes_sent,bytes_received");
    for (uint32_t k = 0; k < summary->n_counters; k++) {
        char col[SM_SUMMARY_COUNTER_NAME + 16];
        snprintf(col, sizeof col, "%s incl", summary->counter_names[k]);
        sm_out_printf(&o, ",");
        sm_csv_field(&o, col);
        snprintf(col, sizeof col, "%s excl", summary->counter_names[k]);
        sm_out_printf(&o, ",");
        sm_csv_field(&o, col);
    }
    sm_out_printf(&o, "\n");
    sm_pcsv_t x = {.o = &o, .job = job, .s = summary};
    sm_cpath_walk(&summary->root, sm_pcsv_depth, &x);
    x.id_at_depth = calloc((size_t)x.depth_cap + 1, sizeof *x.id_at_depth);
    if (x.id_at_depth)
        sm_cpath_walk(&summary->root, sm_pcsv_row, &x);
    else
        sm_out_fail(&o, ENOMEM);
    free(x.id_at_depth);
    free(x.path);
    int rc = sm_out_close(&o);
    /* The sampled functions, flat, in a file of their own. */
    if (sm_sampled_csv(run, job, summary) != 0)
        rc = -1;
    /* The GPU section is a table of another shape: profile_gpu.csv. */
    sm_gpu_summary_t *gpu = sm_gpu_summary_build(job, summary);
    if (gpu && sm_gpu_summary_csv(run->output_dir, gpu) != 0)
        rc = -1;
    sm_gpu_summary_free(gpu);
    return rc;
}

static bool sm_profile_csv_wanted(const sm_finalize_t *f)
{
    return f->profile && f->summary;
}

static int sm_profile_csv_output(sm_finalize_t *f)
{
    return sm_profile_write_csv(f->run, &f->job, f->summary);
}

const sm_output_t sm_output_profile_csv = {
    .file = "profile.csv",
    .who = SM_OUTPUT_ROOT,
    .wanted = sm_profile_csv_wanted,
    .write = sm_profile_csv_output,
};
