/* The sampling sections of the summary (profile_sampled.h). */
#include "profile_sampled.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/contexts.h"
#include "../core/metrics.h"
#include "../util/bytes.h"
#include "../util/json.h"
#include "../util/log.h"
#include "../util/srcloc.h"
#include "../util/grow.h"

#define SM_SAMPLED_TEXT_ROWS 20 /* functions per table in profile.txt */

bool sm_cpath_is_sampled(const sm_job_t *job, const sm_cpath_t *p)
{
    const sm_region_def_t *d =
        p->region != SM_INVALID_ID ? sm_defset_region_get(job->defs, p->region) : NULL;
    return d && d->paradigm == SM_PARADIGM_SAMPLING;
}

/* ---------------------------------------------------------------- collecting */

typedef struct sm_sfunc {
    sm_region_id_t region;
    double *excl; /* [members] samples that ended in the function */
    double *incl; /* [members] samples with the function on the stack */
    double excl_all;
} sm_sfunc_t;

typedef struct sm_spath {
    const sm_cpath_t *path; /* the instrumented path (the root: none) */
    double *total;          /* [members] samples under it */
    sm_sfunc_t *f;
    uint32_t n, cap;
} sm_spath_t;

typedef struct sm_sampled {
    const sm_job_t *job;
    const sm_profile_summary_t *s;
    double period_ns;
    sm_spath_t *paths;
    uint32_t n, cap;
    bool oom;
    sm_region_id_t stack[256]; /* regions above, in the sampled subtree */
    uint32_t depth;
} sm_sampled_t;

static sm_sfunc_t *sm_sampled_func(sm_sampled_t *c, sm_spath_t *sp, sm_region_id_t region)
{
    for (uint32_t i = 0; i < sp->n; i++)
        if (sp->f[i].region == region)
            return &sp->f[i];
    if (sp->n == sp->cap && SM_GROW(sp->f, sp->cap, 16) != 0)
        return NULL;
    sm_sfunc_t *f = &sp->f[sp->n];
    f->region = region;
    f->excl = calloc(c->s->n_members, sizeof *f->excl);
    f->incl = calloc(c->s->n_members, sizeof *f->incl);
    f->excl_all = 0;
    if (!f->excl || !f->incl) {
        free(f->excl);
        free(f->incl);
        return NULL;
    }
    sp->n++;
    return f;
}

static void sm_sampled_subtree(sm_sampled_t *c, sm_spath_t *sp, const sm_cpath_t *p)
{
    sm_sfunc_t *f = sm_sampled_func(c, sp, p->region);
    if (!f) {
        c->oom = true;
        return;
    }
    bool outermost = true; /* recursion: count a sample once per function */
    for (uint32_t i = 0; i < c->depth && i < 256; i++)
        if (c->stack[i] == p->region)
            outermost = false;
    for (uint32_t m = 0; m < c->s->n_members; m++) {
        const sm_cpath_member_t *mm = &p->members[m];
        if (!mm->visits)
            continue;
        double ex = (double)mm->excl.sum * sm_summary_member_ns_per_tick(c->s, m) / c->period_ns;
        ex = floor(ex + 0.5);
        f->excl[m] += ex;
        f->excl_all += ex;
        if (outermost)
            f->incl[m] += (double)mm->visits;
    }
    if (c->depth < 256)
        c->stack[c->depth] = p->region;
    c->depth++;
    for (const sm_cpath_t *k = p->first_child; k; k = k->next_sibling)
        if (sm_cpath_is_sampled(c->job, k))
            sm_sampled_subtree(c, sp, k);
    c->depth--;
}

static int sm_sampled_cmp(const void *a, const void *b)
{
    const sm_sfunc_t *x = a, *y = b;
    return x->excl_all < y->excl_all ? 1 : x->excl_all > y->excl_all ? -1 : 0;
}

static void sm_sampled_visit(const sm_cpath_t *p, void *arg)
{
    sm_sampled_t *c = arg;
    if (c->oom || (p->depth && sm_cpath_is_sampled(c->job, p)))
        return;
    bool any = false;
    for (const sm_cpath_t *k = p->first_child; k && !any; k = k->next_sibling)
        any = sm_cpath_is_sampled(c->job, k);
    if (!any)
        return;
    if (c->n == c->cap && SM_GROW(c->paths, c->cap, 16) != 0) {
        c->oom = true;
        return;
    }
    sm_spath_t *sp = &c->paths[c->n++];
    memset(sp, 0, sizeof *sp);
    sp->path = p;
    sp->total = calloc(c->s->n_members, sizeof *sp->total);
    if (!sp->total) {
        c->oom = true;
        return;
    }
    c->depth = 0;
    for (const sm_cpath_t *k = p->first_child; k; k = k->next_sibling) {
        if (!sm_cpath_is_sampled(c->job, k))
            continue;
        for (uint32_t m = 0; m < c->s->n_members; m++)
            sp->total[m] += (double)k->members[m].visits;
        sm_sampled_subtree(c, sp, k);
    }
    qsort(sp->f, sp->n, sizeof *sp->f, sm_sampled_cmp);
}

static void sm_sampled_free(sm_sampled_t *c)
{
    for (uint32_t i = 0; i < c->n; i++) {
        for (uint32_t k = 0; k < c->paths[i].n; k++) {
            free(c->paths[i].f[k].excl);
            free(c->paths[i].f[k].incl);
        }
        free(c->paths[i].f);
        free(c->paths[i].total);
    }
    free(c->paths);
}

static bool sm_sampled_collect(sm_sampled_t *c, const sm_run_info_t *run, const sm_job_t *job,
                               const sm_profile_summary_t *s)
{
    memset(c, 0, sizeof *c);
    c->job = job;
    c->s = s;
    int64_t hz = run->config && run->config->sampling_freq > 0 ? run->config->sampling_freq : 100;
    c->period_ns = 1e9 / (double)hz;
    if (s && s->n_members)
        sm_cpath_walk(&s->root, sm_sampled_visit, c);
    if (c->oom)
        sm_error("the sampled-functions section is incomplete: out of memory");
    return c->n > 0;
}

/* The module of a sampled function, from the calling contexts. */
static const char *sm_sampled_module(const sm_job_t *job, sm_region_id_t region)
{
    uint32_t n = sm_defset_context_count(job->defs);
    for (uint32_t i = 0; i < n; i++) {
        const sm_context_def_t *c = sm_defset_context_get(job->defs, i);
        if (c->region == region && c->module != SM_INVALID_ID)
            return sm_defset_string_get(job->defs, c->module);
    }
    return "";
}

static void sm_sampled_where(const sm_job_t *job, sm_region_id_t region, const char **file,
                             uint32_t *line)
{
    const sm_region_def_t *d = sm_defset_region_get(job->defs, region);
    *file = d && d->file != SM_INVALID_ID ? sm_defset_string_get(job->defs, d->file) : NULL;
    *line = d ? d->line : 0;
}

/* "a > b > c" of an instrumented path (the root: "(no region)"). */
static void sm_sampled_path_name(const sm_job_t *job, const sm_cpath_t *p, char *buf, size_t len)
{
    const sm_cpath_t *chain[64];
    uint32_t n = 0;
    for (const sm_cpath_t *q = p; q && q->depth && n < 64; q = q->parent)
        chain[n++] = q;
    size_t o = 0;
    buf[0] = '\0';
    if (!n)
        snprintf(buf, len, "(outside every region)");
    while (n-- && o < len)
        o += (size_t)snprintf(buf + o, len - o, "%s%s", o ? " > " : "",
                              sm_job_region_name(job, chain[n]->region));
}

/* Mean, min, max, stddev over the members (or ranks) that sampled the path. */
static sm_spread_t sm_sampled_spread(const double *v, const double *present, uint32_t n)
{
    sm_spread_t sp = {0};
    double sum = 0, sumsq = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (present[i] <= 0)
            continue;
        if (!sp.n || v[i] < sp.min) {
            sp.min = v[i];
            sp.min_member = i;
        }
        if (!sp.n || v[i] > sp.max) {
            sp.max = v[i];
            sp.max_member = i;
        }
        sp.n++;
        sum += v[i];
        sumsq += v[i] * v[i];
    }
    if (sp.n) {
        sp.mean = sum / sp.n;
        double var = sumsq / sp.n - sp.mean * sp.mean;
        sp.stddev = var > 0 ? sqrt(var) : 0;
    }
    return sp;
}

/* Per-rank sums of a per-member array. */
static void sm_sampled_rank_sums(const sm_profile_summary_t *s, const double *v, double *out)
{
    for (uint32_t r = 0; r < s->n_ranks; r++) {
        out[r] = 0;
        for (uint32_t m = s->rank_first_member[r]; m < s->rank_first_member[r + 1]; m++)
            out[r] += v[m];
    }
}

/* ---------------------------------------------------------------- profile.txt */

static void sm_sampled_text_head(sm_out_t *o)
{
    sm_out_printf(o, "  %-32s %-28s %-20s %9s %8s %12s %9s %8s\n", "FUNCTION", "FILE:LINE",
                  "MODULE", "SAMPLES", "SHARE %", "EXCL TIME s", "INCL", "INCL %");
}

/* Whether any path of the summary is a sampled function. */
typedef struct sm_sampled_any {
    const sm_job_t *job;
    bool any;
} sm_sampled_any_t;

static void sm_sampled_any_visit(const sm_cpath_t *p, void *arg)
{
    sm_sampled_any_t *a = arg;
    a->any |= p->depth > 0 && sm_cpath_is_sampled(a->job, p);
}

void sm_sampled_text(sm_out_t *o, const sm_run_info_t *run, const sm_job_t *job,
                     const sm_profile_summary_t *s)
{
    if (s && !s->per_member) {
        /* The sampled functions are per thread: a large job's are in its
         * per-thread rows. */
        sm_sampled_any_t a = {job, false};
        sm_cpath_walk(&s->root, sm_sampled_any_visit, &a);
        if (a.any)
            sm_out_printf(o, "\nSAMPLED FUNCTIONS: per thread, in profile-ranks.csv (paths whose "
                          "region has the paradigm \"sampling\"; this job has more than %u "
                          "threads)\n", (unsigned)SM_PROFILE_DETAIL_MAX);
        return;
    }
    sm_sampled_t c;
    if (!sm_sampled_collect(&c, run, job, s)) {
        sm_sampled_free(&c);
        return;
    }
    bool multi = s->n_ranks > 1;
    sm_out_printf(o, "\nSAMPLED FUNCTIONS PER CALL PATH AND THREAD (call-stack sampling, %.0f Hz "
                  "of %s time; SAMPLES: the function on top of the stack, INCL: anywhere on "
                  "it; the callers tree is in profile.json and profile.csv)\n",
                  1e9 / c.period_ns,
                  run->config && run->config->sampling_clock == SM_SAMPLING_CLOCK_REAL
                      ? "wall-clock" : "CPU");
    char path[1024];
    for (uint32_t i = 0; i < c.n; i++) {
        const sm_spath_t *sp = &c.paths[i];
        sm_sampled_path_name(job, sp->path, path, sizeof path);
        for (uint32_t m = 0; m < s->n_members; m++) {
            if (sp->total[m] <= 0)
                continue;
            sm_out_printf(o, "\ncall path: %s | thread %u", path, (unsigned)m);
            if (multi)
                sm_out_printf(o, " (rank %u)", (unsigned)s->member_rank[m]);
            sm_out_printf(o, " %s: %.0f samples\n", s->member_info[m].name, sp->total[m]);
            sm_sampled_text_head(o);
            for (uint32_t k = 0, shown = 0; k < sp->n && shown < SM_SAMPLED_TEXT_ROWS; k++) {
                const sm_sfunc_t *f = &sp->f[k];
                if (f->incl[m] <= 0)
                    continue;
                shown++;
                const char *file;
                uint32_t line;
                sm_sampled_where(job, f->region, &file, &line);
                char where[64];
                if (file)
                    snprintf(where, sizeof where, "%s:%u", sm_srcloc_basename(file), (unsigned)line);
                else
                    snprintf(where, sizeof where, "-");
                sm_out_printf(o, "  %-32.32s %-28.28s %-20.20s %9.0f %8.1f %12.6f %9.0f %8.1f\n",
                              sm_job_region_name(job, f->region), where,
                              sm_sampled_module(job, f->region), f->excl[m],
                              100.0 * f->excl[m] / sp->total[m], f->excl[m] * c.period_ns / 1e9,
                              f->incl[m], 100.0 * f->incl[m] / sp->total[m]);
            }
        }
    }

    /* Across threads, then across ranks: the exclusive samples. */
    for (int ranks = 0; ranks <= (multi ? 1 : 0); ranks++) {
        sm_out_printf(o, "\nSAMPLED FUNCTIONS ACROSS %s (samples on top of the stack, over the "
                      "%s that sampled the path)\n", ranks ? "RANKS" : "THREADS",
                      ranks ? "ranks" : "threads");
        double *ev = ranks ? calloc(s->n_ranks, sizeof *ev) : NULL;
        double *tv = ranks ? calloc(s->n_ranks, sizeof *tv) : NULL;
        if (ranks && (!ev || !tv)) {
            free(ev);
            free(tv);
            break;
        }
        for (uint32_t i = 0; i < c.n; i++) {
            const sm_spath_t *sp = &c.paths[i];
            sm_sampled_path_name(job, sp->path, path, sizeof path);
            sm_out_printf(o, "\ncall path: %s\n", path);
            sm_out_printf(o, "  %-32s %7s %9s %10s %10s %9s %10s %9s %10s\n", "FUNCTION",
                          ranks ? "RANKS" : "THREADS", "SHARE %", "MEAN", "MIN",
                          ranks ? "MIN RANK" : "MIN THR", "MAX", ranks ? "MAX RANK" : "MAX THR",
                          "STDDEV");
            double all = 0;
            for (uint32_t m = 0; m < s->n_members; m++)
                all += sp->total[m];
            if (ranks)
                sm_sampled_rank_sums(s, sp->total, tv);
            for (uint32_t k = 0; k < sp->n && k < SM_SAMPLED_TEXT_ROWS; k++) {
                const sm_sfunc_t *f = &sp->f[k];
                if (f->excl_all <= 0)
                    continue;
                sm_spread_t sd;
                if (ranks) {
                    sm_sampled_rank_sums(s, f->excl, ev);
                    sd = sm_sampled_spread(ev, tv, s->n_ranks);
                } else {
                    sd = sm_sampled_spread(f->excl, sp->total, s->n_members);
                }
                sm_out_printf(o, "  %-32.32s %7u %9.1f %10.1f %10.0f %9u %10.0f %9u %10.1f\n",
                              sm_job_region_name(job, f->region), (unsigned)sd.n,
                              all > 0 ? 100.0 * f->excl_all / all : 0.0, sd.mean, sd.min,
                              (unsigned)sd.min_member, sd.max, (unsigned)sd.max_member,
                              sd.stddev);
            }
        }
        free(ev);
        free(tv);
    }
    sm_sampled_free(&c);
}

/* ---------------------------------------------------------------- profile.json */

void sm_sampled_json(sm_json_t *j, const sm_run_info_t *run, const sm_job_t *job,
                     const sm_profile_summary_t *s)
{
    sm_sampled_t c;
    bool any = sm_sampled_collect(&c, run, job, s);
    sm_json_key(j, "sampling");
    if (!any) {
        sm_json_null(j);
        sm_sampled_free(&c);
        return;
    }
    double *ev = calloc(s->n_ranks, sizeof *ev), *tv = calloc(s->n_ranks, sizeof *tv);
    sm_json_object_begin(j);
    sm_json_field_double(j, "frequency_hz", 1e9 / c.period_ns);
    sm_json_field_string(j, "clock", run->config && run->config->sampling_clock ==
                                             SM_SAMPLING_CLOCK_REAL ? "real" : "cpu");
    sm_json_key(j, "callpaths");
    sm_json_array_begin(j);
    char path[1024];
    for (uint32_t i = 0; i < c.n && ev && tv; i++) {
        const sm_spath_t *sp = &c.paths[i];
        sm_json_object_begin(j);
        sm_sampled_path_name(job, sp->path, path, sizeof path);
        sm_json_field_string(j, "path", path);
        sm_json_key(j, "samples_per_thread");
        sm_json_array_begin(j);
        for (uint32_t m = 0; m < s->n_members; m++)
            if (sp->total[m] > 0) {
                sm_json_object_begin_inline(j);
                sm_json_field_uint(j, "thread", m);
                sm_json_field_uint(j, "rank", s->member_rank[m]);
                sm_json_field_uint(j, "samples", (uint64_t)sp->total[m]);
                sm_json_object_end(j);
            }
        sm_json_array_end(j);
        sm_sampled_rank_sums(s, sp->total, tv);
        sm_json_key(j, "functions");
        sm_json_array_begin(j);
        for (uint32_t k = 0; k < sp->n; k++) {
            const sm_sfunc_t *f = &sp->f[k];
            const char *file;
            uint32_t line;
            sm_sampled_where(job, f->region, &file, &line);
            sm_json_object_begin(j);
            sm_json_field_string(j, "function", sm_job_region_name(job, f->region));
            if (file)
                sm_json_field_string(j, "file", file);
            else
                sm_json_field_null(j, "file");
            sm_json_field_uint(j, "line", line);
            sm_json_field_string(j, "module", sm_sampled_module(job, f->region));
            sm_json_key(j, "per_thread");
            sm_json_array_begin(j);
            for (uint32_t m = 0; m < s->n_members; m++) {
                if (f->incl[m] <= 0)
                    continue;
                sm_json_object_begin_inline(j);
                sm_json_field_uint(j, "thread", m);
                sm_json_field_uint(j, "rank", s->member_rank[m]);
                sm_json_field_uint(j, "samples", (uint64_t)f->excl[m]);
                sm_json_field_double(j, "share", sp->total[m] > 0 ? f->excl[m] / sp->total[m] : 0);
                sm_json_field_double(j, "exclusive_ns", f->excl[m] * c.period_ns);
                sm_json_field_uint(j, "inclusive_samples", (uint64_t)f->incl[m]);
                sm_json_field_double(j, "inclusive_share",
                                     sp->total[m] > 0 ? f->incl[m] / sp->total[m] : 0);
                sm_json_object_end(j);
            }
            sm_json_array_end(j);
            sm_json_spread(j, "across_threads",
                                   sm_sampled_spread(f->excl, sp->total, s->n_members), "thread", true);
            sm_sampled_rank_sums(s, f->excl, ev);
            sm_json_spread(j, "across_ranks", sm_sampled_spread(ev, tv, s->n_ranks), "rank", true);
            sm_json_object_end(j);
        }
        sm_json_array_end(j);
        sm_json_object_end(j);
    }
    sm_json_array_end(j);
    sm_json_object_end(j);
    free(ev);
    free(tv);
    sm_sampled_free(&c);
}

/* ---------------------------------------------------------------- sampled_functions.csv */

int sm_sampled_csv(const sm_run_info_t *run, const sm_job_t *job, const sm_profile_summary_t *s)
{
    sm_sampled_t c;
    if (!sm_sampled_collect(&c, run, job, s)) {
        sm_sampled_free(&c);
        return 0;
    }
    sm_out_t o;
    if (sm_out_open(&o, run->output_dir, "sampled_functions.csv") != 0) {
        sm_sampled_free(&c);
        return -1;
    }
    sm_out_printf(&o, "path,function,file,line,module,rank,thread,location,samples,share,"
                      "exclusive_ns,inclusive_samples,inclusive_share,path_samples\n");
    char path[1024];
    for (uint32_t i = 0; i < c.n; i++) {
        const sm_spath_t *sp = &c.paths[i];
        sm_sampled_path_name(job, sp->path, path, sizeof path);
        for (uint32_t k = 0; k < sp->n; k++) {
            const sm_sfunc_t *f = &sp->f[k];
            const char *file;
            uint32_t line;
            sm_sampled_where(job, f->region, &file, &line);
            for (uint32_t m = 0; m < s->n_members; m++) {
                if (f->incl[m] <= 0)
                    continue;
                sm_csv_field(&o, path);
                sm_out_printf(&o, ",");
                sm_csv_field(&o, sm_job_region_name(job, f->region));
                sm_out_printf(&o, ",");
                sm_csv_field(&o, file ? file : "");
                sm_out_printf(&o, ",%u,", (unsigned)line);
                sm_csv_field(&o, sm_sampled_module(job, f->region));
                sm_out_printf(&o, ",%u,%u,%u,%.0f,%.6f,%.0f,%.0f,%.6f,%.0f\n",
                              (unsigned)s->member_rank[m], (unsigned)m,
                              (unsigned)s->member_location[m], f->excl[m],
                              f->excl[m] / sp->total[m], f->excl[m] * c.period_ns, f->incl[m],
                              f->incl[m] / sp->total[m], sp->total[m]);
            }
        }
    }
    sm_sampled_free(&c);
    return sm_out_close(&o);
}

/* ---------------------------------------------------------------- process metrics */

typedef struct sm_pm_rank {
    uint64_t last, max, samples, min, sum;
} sm_pm_rank_t;

typedef struct sm_pm {
    char name[128], unit[128];
    sm_pm_rank_t *ranks; /* [n_ranks]; samples 0: none */
} sm_pm_t;

typedef struct sm_pms {
    sm_pm_t *m;
    uint32_t n, cap, n_ranks;
} sm_pms_t;

static sm_pm_t *sm_pm_find(sm_pms_t *p, const char *name, const char *unit)
{
    for (uint32_t i = 0; i < p->n; i++)
        if (!strcmp(p->m[i].name, name))
            return &p->m[i];
    if (p->n == p->cap && SM_GROW(p->m, p->cap, 32) != 0)
        return NULL;
    sm_pm_t *m = &p->m[p->n];
    snprintf(m->name, sizeof m->name, "%s", name);
    snprintf(m->unit, sizeof m->unit, "%s", unit);
    m->ranks = calloc(p->n_ranks, sizeof *m->ranks);
    if (!m->ranks)
        return NULL;
    p->n++;
    return m;
}

typedef struct sm_pm_arg {
    sm_pms_t *p;
    uint32_t rank;
} sm_pm_arg_t;

static void sm_pm_entry(const sm_metric_entry_t *e, void *arg)
{
    const sm_pm_arg_t *a = arg;
    if (!e->samples)
        return;
    sm_pm_t *m = sm_pm_find(a->p, e->name, e->unit);
    if (m && a->rank < a->p->n_ranks)
        m->ranks[a->rank] = (sm_pm_rank_t){e->last, e->max, e->samples, e->min, e->sum};
}

static void sm_pm_parse(sm_pms_t *p, uint32_t rank, const uint8_t *blob, uint64_t len)
{
    sm_pm_arg_t a = {p, rank};
    sm_metrics_deserialize(blob, len, sm_pm_entry, &a);
}

static void sm_pm_collect(sm_pms_t *p, const sm_job_t *job)
{
    memset(p, 0, sizeof *p);
    p->n_ranks = sm_job_ranks(job);
    if (job->metrics) {
        const uint8_t *q = job->metrics, *end = q + job->metrics_len, *blob;
        uint32_t rank;
        uint64_t len;
        while ((q = sm_tree_next(q, end, &rank, &blob, &len)) != NULL)
            sm_pm_parse(p, rank, blob, len);
    } else {
        uint64_t len = 0;
        uint8_t *mine = sm_metrics_serialize(&len);
        if (mine)
            sm_pm_parse(p, 0, mine, len);
        free(mine);
    }
}

static void sm_pm_free(sm_pms_t *p)
{
    for (uint32_t i = 0; i < p->n; i++)
        free(p->m[i].ranks);
    free(p->m);
}

/* Across the ranks that sampled m: lowest min, mean of means, highest max. */
typedef struct sm_pm_across {
    uint32_t ranks;
    uint64_t min, max, hwm;
    uint32_t min_rank, max_rank;
    double mean, last;
} sm_pm_across_t;

static sm_pm_across_t sm_pm_across(const sm_pm_t *m, uint32_t n_ranks)
{
    sm_pm_across_t a = {0};
    for (uint32_t r = 0; r < n_ranks; r++) {
        const sm_pm_rank_t *v = &m->ranks[r];
        if (!v->samples)
            continue;
        if (!a.ranks || v->min < a.min) {
            a.min = v->min;
            a.min_rank = r;
        }
        if (!a.ranks || v->max > a.max) {
            a.max = v->max;
            a.max_rank = r;
        }
        a.mean += (double)v->sum / (double)v->samples;
        a.last += (double)v->last;
        a.ranks++;
    }
    if (a.ranks) {
        a.mean /= a.ranks;
        a.last /= a.ranks;
    }
    a.hwm = a.max;
    return a;
}

void sm_procmetrics_text(sm_out_t *o, const sm_job_t *job)
{
    sm_pms_t p;
    sm_pm_collect(&p, job);
    if (p.n) {
        sm_out_printf(o, "\nSAMPLED METRICS PER RANK (process sampling; HWM: the largest "
                      "sample; running totals end at LAST)\n");
        sm_out_printf(o, "  %-40s %-4s %5s %8s %16s %18s %16s %16s %16s\n", "METRIC", "UNIT",
                      "RANK", "SAMPLES", "MIN", "MEAN", "MAX", "LAST", "HWM");
        for (uint32_t i = 0; i < p.n; i++)
            for (uint32_t r = 0; r < p.n_ranks; r++) {
                const sm_pm_rank_t *v = &p.m[i].ranks[r];
                if (!v->samples)
                    continue;
                sm_out_printf(o, "  %-40.40s %-4.4s %5u %8llu %16llu %18.1f %16llu %16llu %16llu\n",
                              p.m[i].name, p.m[i].unit, (unsigned)r,
                              (unsigned long long)v->samples, (unsigned long long)v->min,
                              (double)v->sum / (double)v->samples, (unsigned long long)v->max,
                              (unsigned long long)v->last, (unsigned long long)v->max);
            }
        if (p.n_ranks > 1) {
            sm_out_printf(o, "\nSAMPLED METRICS ACROSS RANKS (MEAN and LAST: means over the "
                          "ranks)\n");
            sm_out_printf(o, "  %-40s %-4s %5s %16s %8s %18s %16s %8s %18s\n", "METRIC", "UNIT",
                          "RANKS", "MIN", "MIN RANK", "MEAN", "MAX", "MAX RANK", "LAST");
            for (uint32_t i = 0; i < p.n; i++) {
                sm_pm_across_t a = sm_pm_across(&p.m[i], p.n_ranks);
                if (!a.ranks)
                    continue;
                sm_out_printf(o, "  %-40.40s %-4.4s %5u %16llu %8u %18.1f %16llu %8u %18.1f\n",
                              p.m[i].name, p.m[i].unit, (unsigned)a.ranks,
                              (unsigned long long)a.min, (unsigned)a.min_rank, a.mean,
                              (unsigned long long)a.max, (unsigned)a.max_rank, a.last);
            }
        }
    }
    sm_pm_free(&p);
}

void sm_procmetrics_json(sm_json_t *j, const sm_job_t *job)
{
    sm_pms_t p;
    sm_pm_collect(&p, job);
    sm_json_key(j, "sampled_metrics");
    sm_json_array_begin(j);
    for (uint32_t i = 0; i < p.n; i++) {
        sm_json_object_begin(j);
        sm_json_field_string(j, "name", p.m[i].name);
        sm_json_field_string(j, "unit", p.m[i].unit);
        sm_json_key(j, "per_rank");
        sm_json_array_begin(j);
        for (uint32_t r = 0; r < p.n_ranks; r++) {
            const sm_pm_rank_t *v = &p.m[i].ranks[r];
            if (!v->samples)
                continue;
            sm_json_object_begin_inline(j);
            sm_json_field_uint(j, "rank", r);
            sm_json_field_uint(j, "samples", v->samples);
            sm_json_field_uint(j, "min", v->min);
            sm_json_field_double(j, "mean", (double)v->sum / (double)v->samples);
            sm_json_field_uint(j, "max", v->max);
            sm_json_field_uint(j, "last", v->last);
            sm_json_field_uint(j, "high_water_mark", v->max);
            sm_json_object_end(j);
        }
        sm_json_array_end(j);
        sm_pm_across_t a = sm_pm_across(&p.m[i], p.n_ranks);
        sm_json_key(j, "across_ranks");
        sm_json_object_begin_inline(j);
        sm_json_field_uint(j, "ranks", a.ranks);
        sm_json_field_uint(j, "min", a.min);
        sm_json_field_uint(j, "min_rank", a.min_rank);
        sm_json_field_double(j, "mean", a.mean);
        sm_json_field_uint(j, "max", a.max);
        sm_json_field_uint(j, "max_rank", a.max_rank);
        sm_json_field_double(j, "last", a.last);
        sm_json_field_uint(j, "high_water_mark", a.hwm);
        sm_json_object_end(j);
        sm_json_object_end(j);
    }
    sm_json_array_end(j);
    sm_pm_free(&p);
}
