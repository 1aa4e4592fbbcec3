/* The GPU section of the summaries: see gpu_summary.h. */
#include "gpu_summary.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../merge/unify.h"

typedef enum { SM_GS_NONE, SM_GS_KERNEL, SM_GS_TRANSFER, SM_GS_OTHER } sm_gs_class_t;

/* What a region of the job is to the GPU section. */
static sm_gs_class_t sm_gs_class(const sm_job_t *job, sm_region_id_t id)
{
    const sm_region_def_t *d = job && job->defs ? sm_defset_region_get(job->defs, id) : NULL;
    if (!d || (d->paradigm != SM_PARADIGM_CUDA && d->paradigm != SM_PARADIGM_HIP))
        return SM_GS_NONE;
    if (d->role == SM_ROLE_DATA_TRANSFER)
        return SM_GS_TRANSFER;
    if (d->role != SM_ROLE_FUNCTION)
        return SM_GS_NONE; /* API calls are wrappers */
    return sm_job_region_name(job, id)[0] == '[' ? SM_GS_OTHER : SM_GS_KERNEL;
}

/* A stream member's device: its name up to " stream", " context", " queue"
 * ("CUDA 0 stream 7" -> "CUDA 0"); -1 for other members. */
static int sm_gs_device(sm_gpu_summary_t *g, const char *member)
{
    const char *cut = NULL;
    static const char *const words[] = {" stream ", " context ", " queue "};
    for (size_t i = 0; i < 3 && !cut; i++)
        cut = strstr(member, words[i]);
    if (!cut)
        return -1;
    size_t len = (size_t)(cut - member);
    if (len >= sizeof g->devices[0])
        len = sizeof g->devices[0] - 1;
    for (uint32_t d = 0; d < g->n_devices; d++)
        if (strlen(g->devices[d]) == len && !strncmp(g->devices[d], member, len))
            return (int)d;
    if (g->n_devices == SM_GPU_SUM_DEVICES)
        return SM_GPU_SUM_DEVICES - 1;
    memcpy(g->devices[g->n_devices], member, len);
    g->devices[g->n_devices][len] = '\0';
    return (int)g->n_devices++;
}

/* The path's visits over every thread of the job (its statistics). */
static void sm_gs_add_path(sm_gpu_sum_stat_t *st, const sm_profile_summary_t *s,
                           const sm_cpath_t *p)
{
    const sm_cpath_stats_t *ps = p->stats;
    uint64_t calls = sm_cpath_total(s, p, SM_PV_VISITS);
    if (!ps || !calls)
        return;
    double mn = (double)ps->visit_incl_min, mx = (double)ps->visit_incl_max;
    if (!st->calls || mn < st->min_ns)
        st->min_ns = mn;
    if (!st->calls || mx > st->max_ns)
        st->max_ns = mx;
    st->calls += calls;
    st->total_ns += (double)sm_cpath_total(s, p, SM_PV_INCL);
    st->sumsq_ns2 += ps->visit_incl_sumsq;
}

static void sm_gs_add(sm_gpu_sum_stat_t *st, const sm_cpath_member_t *m, double npt)
{
    double mn = (double)m->incl.min * npt, mx = (double)m->incl.max * npt;
    if (!st->calls || mn < st->min_ns)
        st->min_ns = mn;
    if (!st->calls || mx > st->max_ns)
        st->max_ns = mx;
    st->calls += m->visits;
    st->total_ns += (double)m->incl.sum * npt;
    st->sumsq_ns2 += (double)m->incl.sumsq * npt * npt;
}

double sm_gpu_sum_mean(const sm_gpu_sum_stat_t *st)
{
    return st->calls ? st->total_ns / (double)st->calls : 0.0;
}

double sm_gpu_sum_stddev(const sm_gpu_sum_stat_t *st)
{
    if (!st->calls)
        return 0.0;
    double mean = sm_gpu_sum_mean(st);
    double var = st->sumsq_ns2 / (double)st->calls - mean * mean;
    return var > 0 ? sqrt(var) : 0.0;
}

typedef struct sm_gs_walk {
    sm_gpu_summary_t *g;
    const sm_job_t *job;
    const sm_profile_summary_t *s;
    uint32_t cap_kernels, cap_copies, cap_paths;
    int oom;
} sm_gs_walk_t;

static sm_gpu_sum_kernel_t *sm_gs_kernel(sm_gs_walk_t *w, sm_region_id_t region)
{
    sm_gpu_summary_t *g = w->g;
    for (uint32_t i = 0; i < g->n_kernels; i++)
        if (g->kernels[i].region == region)
            return &g->kernels[i];
    if (g->n_kernels == w->cap_kernels) {
        uint32_t cap = w->cap_kernels ? 2 * w->cap_kernels : 16;
        sm_gpu_sum_kernel_t *k = realloc(g->kernels, cap * sizeof *k);
        if (k)
            g->kernels = k;
        if (!k) {
            w->oom = 1;
            return NULL;
        }
        w->cap_kernels = cap;
    }
    sm_gpu_sum_kernel_t *k = &g->kernels[g->n_kernels];
    memset(k, 0, sizeof *k);
    k->region = region;
    k->name = sm_job_region_name(w->job, region);
    g->n_kernels++;
    return k;
}

static sm_gpu_sum_copy_t *sm_gs_copy(sm_gs_walk_t *w, const char *name)
{
    sm_gpu_summary_t *g = w->g;
    char kind[48];
    /* "[CUDA memcpy HtoD]" -> "memcpy HtoD" */
    const char *sp = strchr(name, ' ');
    snprintf(kind, sizeof kind, "%s", sp ? sp + 1 : name);
    char *close = strchr(kind, ']');
    if (close)
        *close = '\0';
    for (uint32_t i = 0; i < g->n_copies; i++)
        if (!strcmp(g->copies[i].kind, kind))
            return &g->copies[i];
    if (g->n_copies == w->cap_copies) {
        uint32_t cap = w->cap_copies ? 2 * w->cap_copies : 8;
        sm_gpu_sum_copy_t *c = realloc(g->copies, cap * sizeof *c);
        if (!c) {
            w->oom = 1;
            return NULL;
        }
        g->copies = c;
        w->cap_copies = cap;
    }
    sm_gpu_sum_copy_t *c = &g->copies[g->n_copies++];
    memset(c, 0, sizeof *c);
    snprintf(c->kind, sizeof c->kind, "%s", kind);
    return c;
}

/* "a > b > c": the host path above p (the activity itself left out). */
static char *sm_gs_host_path(const sm_job_t *job, const sm_cpath_t *p)
{
    const sm_cpath_t *chain[256];
    uint32_t n = 0;
    size_t len = 1;
    for (const sm_cpath_t *q = p->parent; q && q->depth > 0 && n < 256; q = q->parent) {
        chain[n++] = q;
        len += strlen(sm_job_region_name(job, q->region)) + 3;
    }
    char *s = malloc(len);
    if (!s)
        return NULL;
    s[0] = '\0';
    while (n--) {
        strcat(s, sm_job_region_name(job, chain[n]->region));
        if (n)
            strcat(s, " > ");
    }
    return s;
}

static void sm_gs_visit(const sm_cpath_t *p, void *arg)
{
    sm_gs_walk_t *w = arg;
    if (p->depth == 0 || w->oom)
        return;
    sm_gs_class_t cls = sm_gs_class(w->job, p->region);
    if (cls == SM_GS_NONE)
        return;
    const sm_profile_summary_t *s = w->s;
    sm_gpu_summary_t *g = w->g;
    sm_gpu_sum_kernel_t *k = cls == SM_GS_KERNEL ? sm_gs_kernel(w, p->region) : NULL;
    sm_gpu_sum_copy_t *c =
        cls == SM_GS_TRANSFER ? sm_gs_copy(w, sm_job_region_name(w->job, p->region)) : NULL;
    if (w->oom)
        return;
    /* The job's figures from the path's statistics; the devices from the
     * stream members' names, where the summary has its members. */
    uint64_t calls = sm_cpath_total(s, p, SM_PV_VISITS);
    double time_ns = (double)sm_cpath_total(s, p, SM_PV_INCL);
    if (k)
        sm_gs_add_path(&k->all, s, p);
    if (c) {
        c->count += calls;
        c->bytes += sm_cpath_total(s, p, SM_PV_SENT) + sm_cpath_total(s, p, SM_PV_RECEIVED);
        c->time_ns += time_ns;
    }
    for (uint32_t m = 0; k && s->per_member && m < s->n_members; m++) {
        const sm_cpath_member_t *pm = &p->members[m];
        if (!pm->visits)
            continue;
        int dev = sm_gs_device(g, s->member_info[m].name);
        if (dev >= 0)
            sm_gs_add(&k->device[dev], pm, sm_summary_member_ns_per_tick(s, m));
    }
    if (!calls)
        return;
    if (g->n_paths == w->cap_paths) {
        uint32_t cap = w->cap_paths ? 2 * w->cap_paths : 32;
        sm_gpu_sum_path_t *pp = realloc(g->paths, cap * sizeof *pp);
        if (!pp) {
            w->oom = 1;
            return;
        }
        g->paths = pp;
        w->cap_paths = cap;
    }
    char *path = sm_gs_host_path(w->job, p);
    if (!path) {
        w->oom = 1;
        return;
    }
    g->paths[g->n_paths++] = (sm_gpu_sum_path_t){path, sm_job_region_name(w->job, p->region),
                                                 calls, time_ns};
}

static int sm_gs_kernel_order(const void *a, const void *b)
{
    const sm_gpu_sum_kernel_t *x = a, *y = b;
    if (x->all.total_ns != y->all.total_ns)
        return x->all.total_ns > y->all.total_ns ? -1 : 1;
    return x->region < y->region ? -1 : x->region > y->region;
}

static int sm_gs_path_order(const void *a, const void *b)
{
    const sm_gpu_sum_path_t *x = a, *y = b;
    if (x->time_ns != y->time_ns)
        return x->time_ns > y->time_ns ? -1 : 1;
    int c = strcmp(x->path, y->path);
    return c ? c : strcmp(x->activity, y->activity);
}

/* Across the ranks that ran the kernel: its time per rank over its paths
 * (the region's statistics). */
static sm_spread_t sm_gs_rank_spread(const sm_profile_summary_t *s, sm_region_id_t region)
{
    sm_spread_t sp;
    memset(&sp, 0, sizeof sp);
    for (uint32_t i = 0; i < s->n_region_stats; i++) {
        const sm_mstat_t *m = &s->region_stats[i].rank_time;
        if (s->region_stats[i].region != region || !m->n)
            continue;
        sp.n = m->n;
        sp.mean = sm_mstat_mean(m);
        sp.min = (double)m->st.min;
        sp.max = (double)m->st.max;
        sp.stddev = sm_mstat_stddev(m);
        sp.min_member = m->min_rank;
        sp.max_member = m->max_rank;
    }
    return sp;
}

/* The counter statistics of the kernels, per (launching path, kernel) and
 * per kernel, from the summary's reduced GPU rows. */
static sm_gct_t *sm_gs_counters(const sm_job_t *job, const sm_profile_summary_t *s, uint32_t n_ranks)
{
    if (!s->n_gpu_rows)
        return NULL;
    sm_gct_t *t = sm_gct_new_reduced(n_ranks);
    sm_fstat_t none;
    sm_spread_t no_spread;
    sm_fstat_clear(&none);
    memset(&no_spread, 0, sizeof no_spread);
    for (uint32_t k = 0; t && k < s->n_gpu_metrics; k++) /* the metrics in the job's order */
        sm_gct_add_reduced(t, "", NULL, s->gpu_metric_names[k], &none, no_spread);
    for (uint64_t i = 0; t && i < s->n_gpu_rows; i++) {
        const sm_gpu_row_t *v = &s->gpu_rows[i];
        if (v->metric >= s->n_gpu_metrics)
            continue;
        sm_spread_t ranks;
        memset(&ranks, 0, sizeof ranks);
        ranks.n = v->ranks.n;
        ranks.mean = v->ranks.mean;
        ranks.min = v->ranks.min;
        ranks.max = v->ranks.max;
        ranks.stddev = v->ranks.n && v->ranks.m2 > 0 ? sqrt(v->ranks.m2 / v->ranks.n) : 0.0;
        ranks.min_member = v->ranks.min_rank;
        ranks.max_member = v->ranks.max_rank;
        char *path = v->path ? sm_gs_host_path(job, v->path) : NULL;
        if ((v->path && !path) ||
            sm_gct_add_reduced(t, sm_job_region_name(job, v->region), path,
                               s->gpu_metric_names[v->metric], &v->all, ranks) != 0) {
            free(path);
            sm_gct_free(t);
            return NULL;
        }
        free(path);
    }
    sm_gct_finish(t);
    return t;
}

sm_gpu_summary_t *sm_gpu_summary_build(const sm_job_t *job, const sm_profile_summary_t *s)
{
    if (!s)
        return NULL;
    sm_gpu_summary_t *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->n_ranks = s->n_ranks ? s->n_ranks : 1;
    sm_gs_walk_t w = {.g = g, .job = job, .s = s};
    sm_cpath_walk(&s->root, sm_gs_visit, &w);
    g->memory = w.oom ? NULL : sm_gmt_build(job);
    if (w.oom || (!g->n_kernels && !g->n_copies && !g->n_paths && !g->memory)) {
        sm_gpu_summary_free(g);
        return NULL;
    }
    for (uint32_t i = 0; i < g->n_kernels; i++) {
        g->kernel_ns += g->kernels[i].all.total_ns;
        g->kernels[i].ranks = sm_gs_rank_spread(s, g->kernels[i].region);
    }
    for (uint32_t i = 0; i < g->n_kernels; i++)
        g->kernels[i].share = g->kernel_ns > 0 ? g->kernels[i].all.total_ns / g->kernel_ns : 0;
    qsort(g->kernels, g->n_kernels, sizeof *g->kernels, sm_gs_kernel_order);
    qsort(g->paths, g->n_paths, sizeof *g->paths, sm_gs_path_order);
    g->counters = sm_gs_counters(job, s, g->n_ranks);
    return g;
}

void sm_gpu_summary_free(sm_gpu_summary_t *g)
{
    if (!g)
        return;
    for (uint32_t i = 0; i < g->n_paths; i++)
        free(g->paths[i].path);
    free(g->paths);
    free(g->kernels);
    free(g->copies);
    sm_gct_free(g->counters);
    sm_gmt_free(g->memory);
    free(g);
}

/* ---------------------------------------------------------------- profile.txt */

static void sm_gs_text_name(sm_out_t *o, const char *name, int width)
{
    int len = (int)strlen(name);
    if (len > width)
        sm_out_printf(o, "%.*s...", width - 3, name);
    else
        sm_out_printf(o, "%-*s", width, name);
}

void sm_gpu_summary_text(sm_out_t *o, const sm_gpu_summary_t *g)
{
    if (!g)
        return;
    if (!g->n_kernels && !g->n_copies && !g->n_paths) {
        sm_gmt_text(o, g->memory); /* a program that only allocated */
        return;
    }
    sm_out_printf(o, "\nGPU kernels (durations in us; share of all kernel time %.3f ms)\n",
                  g->kernel_ns / 1e6);
    sm_out_printf(o, "  %-48s %-10s %8s %12s %10s %10s %10s %10s %7s\n", "KERNEL", "DEVICE", "CALLS",
                  "TOTAL", "MEAN", "MIN", "MAX", "STDDEV", "SHARE");
    for (uint32_t i = 0; i < g->n_kernels; i++) {
        const sm_gpu_sum_kernel_t *k = &g->kernels[i];
        for (int d = -1; d < (int)g->n_devices; d++) {
            const sm_gpu_sum_stat_t *st = d < 0 ? &k->all : &k->device[d];
            if (!st->calls || (d >= 0 && g->n_devices < 2))
                continue;
            sm_out_printf(o, "  ");
            sm_gs_text_name(o, d < 0 ? k->name : "", 48);
            sm_out_printf(o, " %-10s %8llu %12.3f %10.3f %10.3f %10.3f %10.3f %6.1f%%\n",
                          d < 0 ? "all" : g->devices[d], (unsigned long long)st->calls,
                          st->total_ns / 1e3, sm_gpu_sum_mean(st) / 1e3, st->min_ns / 1e3,
                          st->max_ns / 1e3, sm_gpu_sum_stddev(st) / 1e3,
                          d < 0 ? 100.0 * k->share
                                : 100.0 * (g->kernel_ns > 0 ? st->total_ns / g->kernel_ns : 0));
        }
    }
    if (g->n_ranks > 1) {
        sm_out_printf(o, "\nGPU kernels across ranks (kernel time per rank, us)\n");
        sm_out_printf(o, "  %-48s %6s %12s %12s %6s %12s %6s %12s\n", "KERNEL", "RANKS", "MEAN", "MIN",
                      "@RANK", "MAX", "@RANK", "STDDEV");
        for (uint32_t i = 0; i < g->n_kernels; i++) {
            const sm_gpu_sum_kernel_t *k = &g->kernels[i];
            sm_out_printf(o, "  ");
            sm_gs_text_name(o, k->name, 48);
            sm_out_printf(o, " %6u %12.3f %12.3f %6u %12.3f %6u %12.3f\n", k->ranks.n,
                          k->ranks.mean / 1e3, k->ranks.min / 1e3, k->ranks.min_member,
                          k->ranks.max / 1e3, k->ranks.max_member, k->ranks.stddev / 1e3);
        }
    }
    if (g->n_copies) {
        sm_out_printf(o, "\nGPU copies and memsets\n");
        sm_out_printf(o, "  %-14s %8s %16s %12s %12s\n", "KIND", "COUNT", "BYTES", "TIME (us)",
                      "GB/s");
        for (uint32_t i = 0; i < g->n_copies; i++) {
            const sm_gpu_sum_copy_t *c = &g->copies[i];
            sm_out_printf(o, "  %-14s %8llu %16llu %12.3f %12.3f\n", c->kind,
                          (unsigned long long)c->count, (unsigned long long)c->bytes,
                          c->time_ns / 1e3, c->time_ns > 0 ? (double)c->bytes / c->time_ns : 0.0);
        }
    }
    sm_gct_text(o, g->counters, "all launches of the job");
    sm_out_printf(o, "\nGPU time under host call paths (the call that issued the work)\n");
    sm_out_printf(o, "  %10s %8s  %s\n", "TIME (us)", "CALLS", "HOST PATH => GPU ACTIVITY");
    for (uint32_t i = 0; i < g->n_paths; i++)
        sm_out_printf(o, "  %10.3f %8llu  %s => %s\n", g->paths[i].time_ns / 1e3,
                      (unsigned long long)g->paths[i].calls,
                      g->paths[i].path[0] ? g->paths[i].path : "(unknown)", g->paths[i].activity);
    sm_gmt_text(o, g->memory);
}

/* ---------------------------------------------------------------- profile.json */

static void sm_gs_json_stat(sm_json_t *j, const sm_gpu_sum_stat_t *st)
{
    sm_json_field_uint(j, "calls", st->calls);
    sm_json_field_double(j, "total_ns", st->total_ns);
    sm_json_field_double(j, "mean_ns", sm_gpu_sum_mean(st));
    sm_json_field_double(j, "min_ns", st->min_ns);
    sm_json_field_double(j, "max_ns", st->max_ns);
    sm_json_field_double(j, "stddev_ns", sm_gpu_sum_stddev(st));
}

void sm_gpu_summary_json(sm_json_t *j, const sm_gpu_summary_t *g)
{
    sm_json_key(j, "gpu");
    if (!g) {
        sm_json_null(j);
        return;
    }
    sm_json_object_begin(j);
    sm_json_field_double(j, "kernel_time_ns", g->kernel_ns);
    sm_json_key(j, "kernels");
    sm_json_array_begin(j);
    for (uint32_t i = 0; i < g->n_kernels; i++) {
        const sm_gpu_sum_kernel_t *k = &g->kernels[i];
        sm_json_object_begin_inline(j);
        sm_json_field_string(j, "name", k->name);
        sm_gs_json_stat(j, &k->all);
        sm_json_field_double(j, "share", k->share);
        sm_json_key(j, "devices");
        sm_json_array_begin_inline(j);
        for (uint32_t d = 0; d < g->n_devices; d++) {
            if (!k->device[d].calls)
                continue;
            sm_json_object_begin_inline(j);
            sm_json_field_string(j, "device", g->devices[d]);
            sm_gs_json_stat(j, &k->device[d]);
            sm_json_object_end(j);
        }
        sm_json_array_end(j);
        sm_json_key(j, "ranks");
        sm_json_object_begin_inline(j);
        sm_json_field_uint(j, "n", k->ranks.n);
        sm_json_field_double(j, "mean_ns", k->ranks.mean);
        sm_json_field_double(j, "min_ns", k->ranks.min);
        sm_json_field_uint(j, "min_rank", k->ranks.min_member);
        sm_json_field_double(j, "max_ns", k->ranks.max);
        sm_json_field_uint(j, "max_rank", k->ranks.max_member);
        sm_json_field_double(j, "stddev_ns", k->ranks.stddev);
        sm_json_object_end(j);
        sm_json_object_end(j);
    }
    sm_json_array_end(j);
    sm_json_key(j, "copies");
    sm_json_array_begin(j);
    for (uint32_t i = 0; i < g->n_copies; i++) {
        const sm_gpu_sum_copy_t *c = &g->copies[i];
        sm_json_object_begin_inline(j);
        sm_json_field_string(j, "kind", c->kind);
        sm_json_field_uint(j, "count", c->count);
        sm_json_field_uint(j, "bytes", c->bytes);
        sm_json_field_double(j, "time_ns", c->time_ns);
        sm_json_field_double(j, "bandwidth_gb_s", c->time_ns > 0 ? (double)c->bytes / c->time_ns : 0);
        sm_json_object_end(j);
    }
    sm_json_array_end(j);
    sm_json_key(j, "host_paths");
    sm_json_array_begin(j);
    for (uint32_t i = 0; i < g->n_paths; i++) {
        sm_json_object_begin_inline(j);
        sm_json_field_string(j, "path", g->paths[i].path);
        sm_json_field_string(j, "activity", g->paths[i].activity);
        sm_json_field_uint(j, "calls", g->paths[i].calls);
        sm_json_field_double(j, "time_ns", g->paths[i].time_ns);
        sm_json_object_end(j);
    }
    sm_json_array_end(j);
    sm_gct_json(j, g->counters);
    sm_json_key(j, "memory");
    if (g->memory) {
        sm_json_object_begin(j);
        sm_gmt_json_members(j, g->memory);
        sm_json_object_end(j);
    } else {
        sm_json_null(j);
    }
    sm_json_object_end(j);
}

/* ---------------------------------------------------------------- profile_gpu.csv */

int sm_gpu_summary_csv(const char *dir, const sm_gpu_summary_t *g)
{
    if (!g)
        return 0;
    sm_out_t o;
    if (sm_out_open(&o, dir, "profile_gpu.csv") != 0)
        return -1;
    sm_out_printf(&o, "section,name,device,calls,bytes,total_ns,mean_ns,min_ns,max_ns,stddev_ns,"
                      "share,min_rank,max_rank,path\n");
    for (uint32_t i = 0; i < g->n_kernels; i++) {
        const sm_gpu_sum_kernel_t *k = &g->kernels[i];
        for (int d = -1; d < (int)g->n_devices; d++) {
            const sm_gpu_sum_stat_t *st = d < 0 ? &k->all : &k->device[d];
            if (!st->calls)
                continue;
            sm_out_printf(&o, "kernel,");
            sm_csv_field(&o, k->name);
            sm_out_printf(&o, ",");
            sm_csv_field(&o, d < 0 ? "all" : g->devices[d]);
            sm_out_printf(&o, ",%llu,,%.1f,%.1f,%.1f,%.1f,%.1f,%.6f,,,\n",
                          (unsigned long long)st->calls, st->total_ns, sm_gpu_sum_mean(st),
                          st->min_ns, st->max_ns, sm_gpu_sum_stddev(st),
                          g->kernel_ns > 0 ? st->total_ns / g->kernel_ns : 0.0);
        }
        sm_out_printf(&o, "kernel_ranks,");
        sm_csv_field(&o, k->name);
        sm_out_printf(&o, ",all,%u,,,%.1f,%.1f,%.1f,%.1f,,%u,%u,\n", k->ranks.n, k->ranks.mean,
                      k->ranks.min, k->ranks.max, k->ranks.stddev, k->ranks.min_member,
                      k->ranks.max_member);
    }
    for (uint32_t i = 0; i < g->n_copies; i++) {
        const sm_gpu_sum_copy_t *c = &g->copies[i];
        sm_out_printf(&o, "copy,");
        sm_csv_field(&o, c->kind);
        sm_out_printf(&o, ",all,%llu,%llu,%.1f,,,,,,,,\n", (unsigned long long)c->count,
                      (unsigned long long)c->bytes, c->time_ns);
    }
    for (uint32_t i = 0; i < g->n_paths; i++) {
        sm_out_printf(&o, "host_path,");
        sm_csv_field(&o, g->paths[i].activity);
        sm_out_printf(&o, ",all,%llu,,%.1f,,,,,,,,", (unsigned long long)g->paths[i].calls,
                      g->paths[i].time_ns);
        sm_csv_field(&o, g->paths[i].path);
        sm_out_printf(&o, "\n");
    }
    int rc = sm_out_close(&o);
    if (sm_gct_csv(dir, "profile_gpu_counters.csv", g->counters) != 0)
        rc = -1;
    if (sm_gmt_csv(dir, g->memory) != 0)
        rc = -1;
    return rc;
}
