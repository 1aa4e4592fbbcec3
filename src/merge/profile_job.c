/* The job's statistics of a profile summary: computed from the members of
 * a summary that has them (one rank's part of a reduction, or a small job
 * whose per-member values reached rank 0), and read by the writers (the
 * spreads across threads and ranks, the regions over their paths).  Every
 * job summary has them, whether it has members or not (profile_stats.h). */
#include "profile_summary.h"
#include "profile_build.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- computing */

typedef struct sm_stats_walk {
    sm_profile_summary_t *s;
    uint32_t rank_index, rank, job_ranks;
    uint64_t *values;        /* [n_values] one rank's sums on a path */
    uint32_t *region_slot;   /* region id -> index into s->region_stats */
    uint32_t max_region;
    uint8_t *called;         /* [n_region_stats] of this rank */
    uint64_t *time;          /* [n_region_stats] of this rank */
    int failed;
} sm_stats_walk_t;

static void sm_stats_alloc(const sm_cpath_t *p, void *arg)
{
    sm_stats_walk_t *w = arg;
    if (p->depth == 0 || w->failed)
        return;
    sm_cpath_t *q = (sm_cpath_t *)p; /* (the walk reads; this pass fills) */
    if (!(q->stats = sm_cpath_stats_new(w->s->n_counters)))
        w->failed = 1;
}

static bool sm_stats_region(const sm_cpath_t *p)
{
    return p->depth > 0 && p->region != SM_INVALID_ID;
}

static void sm_stats_scan_regions(const sm_cpath_t *p, void *arg)
{
    sm_stats_walk_t *w = arg;
    if (sm_stats_region(p) && p->region > w->max_region)
        w->max_region = p->region;
}

static void sm_stats_mark_regions(const sm_cpath_t *p, void *arg)
{
    sm_stats_walk_t *w = arg;
    if (sm_stats_region(p))
        w->region_slot[p->region] = 0;
}

/* Whether a call of p's region is inside another call of it. */
static bool sm_cpath_nested(const sm_cpath_t *p)
{
    for (const sm_cpath_t *q = p->parent; q && q->depth > 0; q = q->parent)
        if (q->region == p->region)
            return true;
    return false;
}

/* One rank's values on one path: its threads' (the threads' statistics, the
 * visits' extremes), then its sums (the ranks' statistics) and its share of
 * the regions. */
static void sm_stats_rank_path(const sm_cpath_t *p, void *arg)
{
    sm_stats_walk_t *w = arg;
    if (p->depth == 0 || w->failed)
        return;
    const sm_profile_summary_t *s = w->s;
    sm_cpath_stats_t *st = p->stats;
    uint32_t nc = s->n_counters, nv = st->n_values;
    double npt = s->rank_ns_per_tick[w->rank_index];
    memset(w->values, 0, nv * sizeof *w->values);
    bool visited = false, any = false;
    for (uint32_t i = s->rank_first_member[w->rank_index];
         i < s->rank_first_member[w->rank_index + 1]; i++) {
        const sm_cpath_member_t *m = &p->members[i];
        if (!sm_member_on_path(m))
            continue;
        any = true;
        uint64_t v[SM_PV_COUNT(SM_SUMMARY_MAX_COUNTERS)];
        v[SM_PV_VISITS] = m->visits;
        v[SM_PV_INCL] = sm_ticks_ns(m->incl.sum, npt);
        v[SM_PV_EXCL] = sm_ticks_ns(m->excl.sum, npt);
        v[SM_PV_SENT] = m->bytes_sent;
        v[SM_PV_RECEIVED] = m->bytes_received;
        for (uint32_t k = 0; k < 2u * nc; k++)
            v[SM_PV_COUNTERS + k] = m->counters ? m->counters[k].sum : 0;
        for (uint32_t k = 0; k < nv; k++)
            w->values[k] += v[k];
        if (!m->visits)
            continue;
        visited = true;
        for (uint32_t k = 0; k < nv; k++)
            sm_mstat_add(&st->threads[k], v[k], w->rank, s->member_location[i]);
        uint64_t x;
        if ((x = sm_ticks_ns(m->incl.min, npt)) < st->visit_incl_min)
            st->visit_incl_min = x;
        if ((x = sm_ticks_ns(m->incl.max, npt)) > st->visit_incl_max)
            st->visit_incl_max = x;
        if ((x = sm_ticks_ns(m->excl.min, npt)) < st->visit_excl_min)
            st->visit_excl_min = x;
        if ((x = sm_ticks_ns(m->excl.max, npt)) > st->visit_excl_max)
            st->visit_excl_max = x;
        st->visit_incl_sumsq += (double)m->incl.sumsq * npt * npt;
    }
    if (visited && sm_cpath_stats_add_rank(st, w->rank, w->job_ranks, w->values) != 0)
        w->failed = 1;
    if (!any || !sm_stats_region(p))
        return;
    uint32_t slot = w->region_slot[p->region];
    sm_region_stat_t *r = &s->region_stats[slot];
    r->calls += w->values[SM_PV_VISITS];
    r->bytes_sent += w->values[SM_PV_SENT];
    r->bytes_received += w->values[SM_PV_RECEIVED];
    w->called[slot] |= visited;
    if (!sm_cpath_nested(p))
        w->time[slot] += w->values[SM_PV_INCL];
}

/* The GPU rows: per (path, metric) and per (kernel, metric), each with the
 * spread across ranks of the per-rank sums. */
static sm_gpu_row_t *sm_stats_gpu_row(sm_profile_summary_t *s, const sm_cpath_t *path,
                                      sm_region_id_t region, uint32_t metric)
{
    for (uint64_t i = 0; i < s->n_gpu_rows; i++) {
        sm_gpu_row_t *g = &s->gpu_rows[i];
        if (g->path == path && g->region == region && g->metric == metric)
            return g;
    }
    sm_gpu_row_t *g = &s->gpu_rows[s->n_gpu_rows++];
    memset(g, 0, sizeof *g);
    g->path = path;
    g->region = region;
    g->metric = metric;
    sm_fstat_clear(&g->all);
    sm_dstat_clear(&g->ranks);
    return g;
}

static int sm_stats_gpu(sm_profile_summary_t *s, uint32_t rank_base)
{
    if (!s->n_gpu_values)
        return 0;
    uint64_t cap = 2 * s->n_gpu_values;
    s->gpu_rows = calloc(cap, sizeof *s->gpu_rows);
    double *sums = calloc(cap, sizeof *sums);
    uint8_t *touched = calloc(cap, 1);
    if (!s->gpu_rows || !sums || !touched) {
        free(sums);
        free(touched);
        return -1;
    }
    sm_summary_impl(s)->gpu_rows_cap = cap;
    for (uint32_t r = 0; r < s->n_ranks; r++) {
        memset(touched, 0, cap);
        for (uint64_t i = 0; i < s->n_gpu_values; i++) {
            const sm_summary_gpu_value_t *v = &s->gpu_values[i];
            if (v->member >= s->n_members || s->member_rank[v->member] != r || !v->st.n)
                continue;
            /* (room for both rows of every value: the rows never move) */
            sm_gpu_row_t *rows[2] = {sm_stats_gpu_row(s, v->path, v->path->region, v->metric),
                                     sm_stats_gpu_row(s, NULL, v->path->region, v->metric)};
            for (int k = 0; k < 2; k++) {
                uint64_t at = (uint64_t)(rows[k] - s->gpu_rows);
                sm_fstat_merge(&rows[k]->all, &v->st);
                if (!touched[at])
                    sums[at] = 0;
                touched[at] = 1;
                sums[at] += v->st.sum;
            }
        }
        for (uint64_t i = 0; i < s->n_gpu_rows; i++)
            if (touched[i])
                sm_dstat_add(&s->gpu_rows[i].ranks, sums[i], rank_base + r);
    }
    free(sums);
    free(touched);
    return 0;
}

static int sm_region_stat_order(const void *a, const void *b)
{
    sm_region_id_t x = ((const sm_region_stat_t *)a)->region;
    sm_region_id_t y = ((const sm_region_stat_t *)b)->region;
    return x < y ? -1 : x > y;
}

int sm_summary_compute_stats(sm_profile_summary_t *s, uint32_t rank_base, uint32_t job_ranks)
{
    sm_summary_free_stats(s);
    sm_stats_walk_t w = {.s = s, .job_ranks = job_ranks};
    sm_cpath_walk(&s->root, sm_stats_alloc, &w);
    s->n_threads = s->n_members;
    s->n_bins = sm_rank_bins(job_ranks);
    s->bins = calloc(s->n_bins ? s->n_bins : 1, sizeof *s->bins);
    w.values = calloc(SM_PV_COUNT(s->n_counters), sizeof *w.values);
    if (w.failed || !s->bins || !w.values)
        goto fail;

    /* The regions of the tree, sorted by id. */
    sm_cpath_walk(&s->root, sm_stats_scan_regions, &w);
    w.region_slot = malloc(((size_t)w.max_region + 1) * sizeof *w.region_slot);
    if (!w.region_slot)
        goto fail;
    memset(w.region_slot, 0xff, ((size_t)w.max_region + 1) * sizeof *w.region_slot);
    sm_cpath_walk(&s->root, sm_stats_mark_regions, &w);
    uint32_t nr = 0;
    for (uint32_t id = 0; id <= w.max_region; id++)
        if (w.region_slot[id] != SM_INVALID_ID)
            w.region_slot[id] = nr++;
    s->region_stats = calloc(nr ? nr : 1, sizeof *s->region_stats);
    w.called = calloc(nr ? nr : 1, 1);
    w.time = calloc(nr ? nr : 1, sizeof *w.time);
    if (!s->region_stats || !w.called || !w.time)
        goto fail;
    s->n_region_stats = nr;
    for (uint32_t id = 0; id <= w.max_region; id++)
        if (w.region_slot[id] != SM_INVALID_ID) {
            sm_region_stat_t *r = &s->region_stats[w.region_slot[id]];
            r->region = id;
            sm_mstat_clear(&r->rank_time);
        }

    for (uint32_t i = 0; i < s->n_ranks; i++) {
        if (!(s->rank_ns_per_tick[i] > 0))
            continue; /* no profile from this rank */
        w.rank_index = i;
        w.rank = rank_base + i;
        s->ranks_present++;
        sm_job_bin_t *b = &s->bins[sm_rank_bin_of(w.rank, job_ranks)];
        b->ranks++;
        for (uint32_t m = s->rank_first_member[i]; m < s->rank_first_member[i + 1]; m++) {
            b->threads++;
            b->main_threads += s->member_info[m].creator_location == SM_INVALID_ID;
        }
        memset(w.called, 0, nr ? nr : 1);
        memset(w.time, 0, (nr ? nr : 1) * sizeof *w.time);
        sm_cpath_walk(&s->root, sm_stats_rank_path, &w);
        for (uint32_t k = 0; k < nr; k++)
            if (w.called[k])
                sm_mstat_add(&s->region_stats[k].rank_time, w.time[k], w.rank, SM_INVALID_ID);
    }
    if (w.failed || sm_stats_gpu(s, rank_base) != 0)
        goto fail;
    qsort(s->region_stats, nr, sizeof *s->region_stats, sm_region_stat_order);
    free(w.values);
    free(w.region_slot);
    free(w.called);
    free(w.time);
    return 0;
fail:
    free(w.values);
    free(w.region_slot);
    free(w.called);
    free(w.time);
    sm_summary_free_stats(s);
    return -1;
}

static void sm_stats_free_path(const sm_cpath_t *p, void *arg)
{
    (void)arg;
    sm_cpath_t *q = (sm_cpath_t *)p;
    sm_cpath_stats_free(q->stats);
    q->stats = NULL;
}

void sm_summary_free_stats(sm_profile_summary_t *s)
{
    sm_cpath_walk(&s->root, sm_stats_free_path, NULL);
    free(s->bins);
    free(s->region_stats);
    free(s->gpu_rows);
    s->bins = NULL;
    s->region_stats = NULL;
    s->gpu_rows = NULL;
    s->n_bins = s->n_region_stats = 0;
    s->n_gpu_rows = 0;
    s->ranks_present = 0;
    sm_summary_impl(s)->gpu_rows_cap = 0;
}

/* ---------------------------------------------------------------- reading */

/* The member at (rank, location) of a summary with members, or
 * SM_INVALID_ID. */
static uint32_t sm_summary_member_at(const sm_profile_summary_t *s, uint32_t rank, uint32_t loc)
{
    if (!s->per_member || rank >= s->n_ranks)
        return SM_INVALID_ID;
    uint32_t first = s->rank_first_member[rank], last = s->rank_first_member[rank + 1];
    while (first < last) {
        uint32_t mid = first + (last - first) / 2;
        if (s->member_location[mid] < loc)
            first = mid + 1;
        else if (s->member_location[mid] > loc)
            last = mid;
        else
            return mid;
    }
    return SM_INVALID_ID;
}

static sm_spread_t sm_spread_of(const sm_profile_summary_t *s, const sm_mstat_t *m, bool threads)
{
    sm_spread_t sp;
    memset(&sp, 0, sizeof sp);
    sp.min_member = sp.max_member = SM_INVALID_ID;
    sp.min_rank = sp.max_rank = sp.min_loc = sp.max_loc = SM_INVALID_ID;
    if (!m || !m->n)
        return sp;
    sp.n = m->n;
    sp.sum = (double)m->st.sum;
    sp.mean = sm_mstat_mean(m);
    sp.min = (double)m->st.min;
    sp.max = (double)m->st.max;
    sp.stddev = sm_mstat_stddev(m);
    sp.min_rank = m->min_rank;
    sp.max_rank = m->max_rank;
    sp.min_loc = m->min_loc;
    sp.max_loc = m->max_loc;
    if (threads) {
        sp.min_member = sm_summary_member_at(s, m->min_rank, m->min_loc);
        sp.max_member = sm_summary_member_at(s, m->max_rank, m->max_loc);
    } else {
        sp.min_member = m->min_rank;
        sp.max_member = m->max_rank;
    }
    return sp;
}

static const sm_mstat_t *sm_cpath_value(const sm_profile_summary_t *s, const sm_cpath_t *p,
                                        bool ranks, uint32_t v)
{
    if (!p->stats || v >= p->stats->n_values || SM_PV_COUNT(s->n_counters) != p->stats->n_values)
        return NULL;
    return ranks ? &p->stats->ranks[v] : &p->stats->threads[v];
}

static uint32_t sm_counter_value(const sm_profile_summary_t *s, uint32_t k, int exclusive)
{
    return k < s->n_counters ? SM_PV_COUNTERS + (exclusive ? s->n_counters : 0) + k : UINT32_MAX;
}

sm_spread_t sm_cpath_spread_time(const sm_profile_summary_t *s, const sm_cpath_t *p,
                                 int exclusive)
{
    return sm_spread_of(s, sm_cpath_value(s, p, false, exclusive ? SM_PV_EXCL : SM_PV_INCL),
                        true);
}

sm_spread_t sm_cpath_spread_visits(const sm_profile_summary_t *s, const sm_cpath_t *p)
{
    return sm_spread_of(s, sm_cpath_value(s, p, false, SM_PV_VISITS), true);
}

sm_spread_t sm_cpath_spread_counter(const sm_profile_summary_t *s, const sm_cpath_t *p,
                                    uint32_t k, int exclusive)
{
    return sm_spread_of(s, sm_cpath_value(s, p, false, sm_counter_value(s, k, exclusive)), true);
}

sm_spread_t sm_cpath_spread_ranks_time(const sm_profile_summary_t *s, const sm_cpath_t *p,
                                       int exclusive)
{
    return sm_spread_of(s, sm_cpath_value(s, p, true, exclusive ? SM_PV_EXCL : SM_PV_INCL),
                        false);
}

sm_spread_t sm_cpath_spread_ranks_visits(const sm_profile_summary_t *s, const sm_cpath_t *p)
{
    return sm_spread_of(s, sm_cpath_value(s, p, true, SM_PV_VISITS), false);
}

sm_spread_t sm_cpath_spread_ranks_bytes(const sm_profile_summary_t *s, const sm_cpath_t *p,
                                        int received)
{
    return sm_spread_of(s, sm_cpath_value(s, p, true, received ? SM_PV_RECEIVED : SM_PV_SENT),
                        false);
}

sm_spread_t sm_cpath_spread_ranks_counter(const sm_profile_summary_t *s, const sm_cpath_t *p,
                                          uint32_t k, int exclusive)
{
    return sm_spread_of(s, sm_cpath_value(s, p, true, sm_counter_value(s, k, exclusive)), false);
}

uint64_t sm_cpath_counter_total(const sm_profile_summary_t *s, const sm_cpath_t *p, uint32_t k,
                                int exclusive)
{
    const sm_mstat_t *m = sm_cpath_value(s, p, true, sm_counter_value(s, k, exclusive));
    return m ? m->st.sum : 0;
}

uint64_t sm_cpath_total(const sm_profile_summary_t *s, const sm_cpath_t *p, sm_pvalue_t v)
{
    const sm_mstat_t *m = sm_cpath_value(s, p, true, v);
    return m ? m->st.sum : 0;
}

static int sm_region_total_compare(const void *a, const void *b)
{
    const sm_region_total_t *x = a, *y = b;
    if (x->time_ns != y->time_ns)
        return x->time_ns > y->time_ns ? -1 : 1;
    return x->region < y->region ? -1 : x->region > y->region;
}

sm_region_total_t *sm_profile_region_totals(const sm_profile_summary_t *s,
                                            sm_region_select_fn select, void *arg,
                                            uint32_t *n)
{
    *n = 0;
    uint32_t count = 0;
    for (uint32_t i = 0; i < s->n_region_stats; i++)
        count += select(s->region_stats[i].region, arg);
    if (!count)
        return NULL;
    sm_region_total_t *tot = calloc(count, sizeof *tot);
    if (!tot) {
        *n = UINT32_MAX;
        return NULL;
    }
    for (uint32_t i = 0, k = 0; i < s->n_region_stats; i++) {
        const sm_region_stat_t *r = &s->region_stats[i];
        if (!select(r->region, arg))
            continue;
        sm_region_total_t *t = &tot[k++];
        t->region = r->region;
        t->calls = r->calls;
        t->bytes_sent = r->bytes_sent;
        t->bytes_received = r->bytes_received;
        t->ranks = r->rank_time.n;
        t->time_ns = (double)r->rank_time.st.sum;
        t->mean_rank_ns = sm_mstat_mean(&r->rank_time);
        t->max_rank_ns = r->rank_time.n ? (double)r->rank_time.st.max : 0.0;
        t->max_rank = r->rank_time.n ? r->rank_time.max_rank : SM_INVALID_ID;
    }
    qsort(tot, count, sizeof *tot, sm_region_total_compare);
    *n = count;
    return tot;
}
