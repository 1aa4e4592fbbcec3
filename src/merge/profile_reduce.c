/* The job's profile reduced up a tree (profile_reduce.h). */
#include "profile_reduce.h"
#include "profile_build.h"
#include "tree_reduce.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../util/bytes.h"
#include "../util/log.h"

#define SM_SMPR_MAGIC 0x52504d53u /* "SMPR" in little-endian bytes */
#define SM_SMPR_VERSION 1u
#define SM_SMPR_DETAIL_LOST 1u
#define SM_SMPR_MSTAT_MIN 4u      /* an empty statistic */
#define SM_SMPR_NODE_MIN 64u      /* and 8 bytes a value (its two empty statistics) */
#define SM_SMPR_BIN 36u
#define SM_SMPR_GPU_ROW 112u

/* ---------------------------------------------------------------- writing */

static void sm_put_f64(sm_wbuf_t *w, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    sm_put_u64(w, bits);
}

static void sm_put_name(sm_wbuf_t *w, const char *name)
{
    size_t n = strnlen(name, SM_SUMMARY_COUNTER_NAME - 1);
    sm_put_u32(w, (uint32_t)n);
    sm_put_bytes(w, name, n);
}

static void sm_put_mstat(sm_wbuf_t *w, const sm_mstat_t *m)
{
    sm_put_u32(w, m->n);
    if (!m->n)
        return;
    sm_put_u64(w, m->st.sum);
    sm_put_u64(w, m->st.min);
    sm_put_u64(w, m->st.max);
    sm_put_u64(w, (uint64_t)m->st.sumsq);
    sm_put_u64(w, (uint64_t)(m->st.sumsq >> 64));
    sm_put_u32(w, m->min_rank);
    sm_put_u32(w, m->min_loc);
    sm_put_u32(w, m->max_rank);
    sm_put_u32(w, m->max_loc);
}

static void sm_put_stats(sm_wbuf_t *w, const sm_cpath_stats_t *st)
{
    for (uint32_t v = 0; v < 2u * st->n_values; v++)
        sm_put_mstat(w, &st->threads[v]); /* (ranks follow threads in memory) */
    sm_put_u64(w, st->visit_incl_min);
    sm_put_u64(w, st->visit_incl_max);
    sm_put_u64(w, st->visit_excl_min);
    sm_put_u64(w, st->visit_excl_max);
    sm_put_f64(w, st->visit_incl_sumsq);
    for (int side = 0; side < 2; side++) {
        uint32_t n = side ? st->n_bottom : st->n_top;
        const sm_rank_value_t *list = side ? st->bottom : st->top;
        sm_put_u32(w, n);
        for (uint32_t i = 0; i < n; i++) {
            sm_put_u64(w, list[i].value);
            sm_put_u32(w, list[i].rank);
        }
    }
    sm_put_u32(w, st->bin_first);
    sm_put_u32(w, st->n_bins);
    for (uint32_t b = 0; b < st->n_bins; b++) {
        const sm_rank_bin_t *x = &st->bins[b];
        sm_put_u32(w, x->ranks);
        sm_put_u64(w, x->incl_sum);
        sm_put_u64(w, x->incl_min);
        sm_put_u64(w, x->incl_max);
        sm_put_u64(w, x->excl_sum);
    }
}

/* Pre-order node numbers, for the GPU rows' references. */
typedef struct sm_smpr_index {
    const sm_cpath_t *path;
    uint32_t index;
} sm_smpr_index_t;

typedef struct sm_smpr_walk {
    sm_wbuf_t *w;
    const sm_profile_summary_t *s;
    uint32_t *index_at_depth; /* a node's parent is the last node a level up */
    uint32_t depth_cap;
    uint32_t next;
    sm_smpr_index_t *index;   /* [nodes] */
    const sm_cpath_stats_t *empty;
} sm_smpr_walk_t;

static void sm_smpr_depth(const sm_cpath_t *p, void *arg)
{
    sm_smpr_walk_t *x = arg;
    if (p->depth > x->depth_cap)
        x->depth_cap = p->depth;
}

static void sm_smpr_node(const sm_cpath_t *p, void *arg)
{
    sm_smpr_walk_t *x = arg;
    if (p->depth == 0)
        return;
    uint32_t index = ++x->next;
    x->index_at_depth[p->depth] = index;
    x->index[index - 1] = (sm_smpr_index_t){p, index};
    sm_put_u32(x->w, x->index_at_depth[p->depth - 1]);
    sm_put_u32(x->w, p->region);
    sm_put_stats(x->w, p->stats ? p->stats : x->empty);
}

static int sm_smpr_index_order(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const sm_smpr_index_t *)a)->path;
    uintptr_t y = (uintptr_t)((const sm_smpr_index_t *)b)->path;
    return x < y ? -1 : x > y;
}

/* A summary with statistics (an accumulator, or one rank's summary with
 * members) as a reduced blob. */
static void *sm_smpr_serialize(sm_summary_impl_t *im, uint64_t *len)
{
    const sm_profile_summary_t *s = &im->pub;
    sm_wbuf_t w = {0};
    uint64_t nodes = im->n_paths;
    sm_smpr_walk_t x = {.w = &w, .s = s};
    sm_cpath_walk(&s->root, sm_smpr_depth, &x);
    x.index_at_depth = calloc((size_t)x.depth_cap + 1, sizeof *x.index_at_depth);
    x.index = malloc((nodes ? nodes : 1) * sizeof *x.index);
    sm_cpath_stats_t *empty = sm_cpath_stats_new(s->n_counters);
    x.empty = empty;
    if (!x.index_at_depth || !x.index || !empty || nodes >= UINT32_MAX) {
        free(x.index_at_depth);
        free(x.index);
        sm_cpath_stats_free(empty);
        return NULL;
    }
    double npt = s->ns_per_tick;
    sm_put_u32(&w, SM_SMPR_MAGIC);
    sm_put_u32(&w, SM_SMPR_VERSION);
    sm_put_u32(&w, im->job_ranks);
    sm_put_u32(&w, s->ranks_present);
    sm_put_u32(&w, im->first_rank);
    sm_put_u32(&w, im->ranks_without);
    sm_put_u32(&w, im->detail_lost ? SM_SMPR_DETAIL_LOST : 0);
    sm_put_f64(&w, npt);
    sm_put_u64(&w, s->n_threads);
    sm_put_u32(&w, s->n_counters);
    for (uint32_t k = 0; k < s->n_counters; k++)
        sm_put_name(&w, s->counter_names[k]);
    sm_put_u32(&w, s->n_gpu_metrics);
    for (uint32_t k = 0; k < s->n_gpu_metrics; k++)
        sm_put_name(&w, s->gpu_metric_names[k]);
    /* The job's bins that have ranks. */
    uint32_t lo = 0, hi = 0;
    for (uint32_t b = 0; b < s->n_bins; b++)
        if (s->bins[b].ranks) {
            if (hi == 0)
                lo = b;
            hi = b + 1;
        }
    sm_put_u32(&w, lo);
    sm_put_u32(&w, hi - lo);
    for (uint32_t b = lo; b < hi; b++) {
        sm_put_u32(&w, s->bins[b].ranks);
        sm_put_u32(&w, s->bins[b].threads);
        sm_put_u32(&w, s->bins[b].main_threads);
    }
    sm_put_u64(&w, nodes);
    sm_cpath_walk(&s->root, sm_smpr_node, &x);
    free(x.index_at_depth);
    sm_cpath_stats_free(empty);
    sm_put_u32(&w, s->n_region_stats);
    for (uint32_t i = 0; i < s->n_region_stats; i++) {
        const sm_region_stat_t *r = &s->region_stats[i];
        sm_put_u32(&w, r->region);
        sm_put_u64(&w, r->calls);
        sm_put_u64(&w, r->bytes_sent);
        sm_put_u64(&w, r->bytes_received);
        sm_put_mstat(&w, &r->rank_time);
    }
    qsort(x.index, x.next, sizeof *x.index, sm_smpr_index_order);
    sm_put_u64(&w, s->n_gpu_rows);
    for (uint64_t i = 0; i < s->n_gpu_rows; i++) {
        const sm_gpu_row_t *g = &s->gpu_rows[i];
        uint32_t node = 0;
        if (g->path) {
            sm_smpr_index_t key = {g->path, 0};
            const sm_smpr_index_t *at =
                bsearch(&key, x.index, x.next, sizeof *x.index, sm_smpr_index_order);
            node = at ? at->index : 0;
        }
        sm_put_u32(&w, node);
        sm_put_u32(&w, g->region);
        sm_put_u32(&w, g->metric);
        sm_put_u64(&w, g->all.n);
        sm_put_u64(&w, g->all.covered);
        sm_put_f64(&w, g->all.sum);
        sm_put_f64(&w, g->all.mean);
        sm_put_f64(&w, g->all.m2);
        sm_put_f64(&w, g->all.min);
        sm_put_f64(&w, g->all.max);
        sm_put_u32(&w, g->ranks.n);
        sm_put_u32(&w, g->ranks.min_rank);
        sm_put_u32(&w, g->ranks.max_rank);
        sm_put_f64(&w, g->ranks.mean);
        sm_put_f64(&w, g->ranks.m2);
        sm_put_f64(&w, g->ranks.min);
        sm_put_f64(&w, g->ranks.max);
    }
    free(x.index);
    sm_put_u32(&w, im->detail_lost ? 0 : im->n_detail);
    if (!im->detail_lost)
        sm_put_bytes(&w, im->detail, im->detail_len);
    return sm_wbuf_finish(&w, len);
}

/* ---------------------------------------------------------------- merging */

static _Thread_local const char *sm_smpr_why;

static bool sm_smpr_fail(const char *why)
{
    if (!sm_smpr_why)
        sm_smpr_why = why;
    return false;
}

static double sm_get_f64(sm_rbuf_t *r)
{
    uint64_t bits = sm_get_u64(r);
    double v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

static bool sm_get_mstat(sm_rbuf_t *r, sm_mstat_t *m)
{
    sm_mstat_clear(m);
    m->n = sm_get_u32(r);
    if (!m->n)
        return !r->bad;
    m->st.sum = sm_get_u64(r);
    m->st.min = sm_get_u64(r);
    m->st.max = sm_get_u64(r);
    uint64_t lo = sm_get_u64(r), hi = sm_get_u64(r);
    m->st.sumsq = (unsigned __int128)hi << 64 | lo;
    m->min_rank = sm_get_u32(r);
    m->min_loc = sm_get_u32(r);
    m->max_rank = sm_get_u32(r);
    m->max_loc = sm_get_u32(r);
    return !r->bad && m->st.min <= m->st.max;
}

/* Scratch for one node's statistics as the blob has them. */
typedef struct sm_smpr_scratch {
    sm_cpath_stats_t *st; /* for the blob's counters */
    uint32_t bins_cap;
} sm_smpr_scratch_t;

static bool sm_get_stats(sm_rbuf_t *r, sm_smpr_scratch_t *x, uint32_t job_bins)
{
    sm_cpath_stats_t *st = x->st;
    for (uint32_t v = 0; v < 2u * st->n_values; v++)
        if (!sm_get_mstat(r, &st->threads[v]))
            return sm_smpr_fail("truncated statistics");
    st->visit_incl_min = sm_get_u64(r);
    st->visit_incl_max = sm_get_u64(r);
    st->visit_excl_min = sm_get_u64(r);
    st->visit_excl_max = sm_get_u64(r);
    st->visit_incl_sumsq = sm_get_f64(r);
    for (int side = 0; side < 2; side++) {
        uint32_t n = sm_get_u32(r);
        if (n > SM_PROFILE_TOP_RANKS)
            return sm_smpr_fail("too many ranks that stand out");
        sm_rank_value_t *list = side ? st->bottom : st->top;
        for (uint32_t i = 0; i < n; i++) {
            list[i].value = sm_get_u64(r);
            list[i].rank = sm_get_u32(r);
        }
        *(side ? &st->n_bottom : &st->n_top) = n;
    }
    st->bin_first = sm_get_u32(r);
    st->n_bins = sm_get_u32(r);
    if (r->bad || st->n_bins > job_bins || st->bin_first > job_bins - st->n_bins ||
        st->n_bins > sm_remaining(r) / SM_SMPR_BIN)
        return sm_smpr_fail("bins beyond the job");
    if (st->n_bins > x->bins_cap) {
        sm_rank_bin_t *bins = realloc(st->bins, st->n_bins * sizeof *bins);
        if (!bins)
            return sm_smpr_fail("out of memory");
        st->bins = bins;
        x->bins_cap = st->n_bins;
    }
    for (uint32_t b = 0; b < st->n_bins; b++) {
        sm_rank_bin_t *bin = &st->bins[b];
        bin->ranks = sm_get_u32(r);
        bin->incl_sum = sm_get_u64(r);
        bin->incl_min = sm_get_u64(r);
        bin->incl_max = sm_get_u64(r);
        bin->excl_sum = sm_get_u64(r);
    }
    return !r->bad || sm_smpr_fail("truncated statistics");
}

/* Reads a name list, adding new names to names[*n] (grown); map[k] the
 * index of the blob's name k. */
static bool sm_smpr_names(sm_rbuf_t *r, char (**names)[SM_SUMMARY_COUNTER_NAME], uint32_t *n,
                          uint32_t max, uint32_t *map, uint32_t *count)
{
    *count = sm_get_u32(r);
    if (r->bad || *count > max)
        return sm_smpr_fail("too many names");
    for (uint32_t k = 0; k < *count; k++) {
        uint32_t len = sm_get_u32(r);
        const uint8_t *bytes = len < SM_SUMMARY_COUNTER_NAME ? sm_get_bytes(r, len) : NULL;
        if (!bytes)
            return sm_smpr_fail("a name too long or truncated");
        char name[SM_SUMMARY_COUNTER_NAME];
        memcpy(name, bytes, len);
        name[len] = '\0';
        uint32_t j = 0;
        while (j < *n && strcmp((*names)[j], name) != 0)
            j++;
        if (j == *n) {
            if (j == max)
                return sm_smpr_fail("too many names");
            char(*grown)[SM_SUMMARY_COUNTER_NAME] = realloc(*names, (j + 1) * sizeof *grown);
            if (!grown)
                return sm_smpr_fail("out of memory");
            *names = grown;
            memcpy(grown[j], name, sizeof name);
            (*n)++;
        }
        map[k] = j;
    }
    return true;
}

static void sm_acc_grow_path(const sm_cpath_t *p, void *arg)
{
    uint32_t *nc = arg; /* [old, new, failed] */
    sm_cpath_t *q = (sm_cpath_t *)p;
    if (q->stats && sm_cpath_stats_grow(&q->stats, nc[0], nc[1]) != 0)
        nc[2] = 1;
}

static bool sm_acc_regions(sm_rbuf_t *r, sm_profile_summary_t *s)
{
    uint32_t n = sm_get_u32(r);
    if (r->bad || n > sm_remaining(r) / (28 + SM_SMPR_MSTAT_MIN))
        return sm_smpr_fail("region count beyond the blob");
    sm_region_stat_t *out = malloc(((uint64_t)n + s->n_region_stats + 1) * sizeof *out);
    if (!out)
        return sm_smpr_fail("out of memory");
    uint32_t i = 0, k = 0, last = 0;
    for (uint32_t j = 0; j < n; j++) {
        sm_region_stat_t in;
        in.region = sm_get_u32(r);
        in.calls = sm_get_u64(r);
        in.bytes_sent = sm_get_u64(r);
        in.bytes_received = sm_get_u64(r);
        if (!sm_get_mstat(r, &in.rank_time) || (j && in.region <= last) ||
            in.region == SM_INVALID_ID) {
            free(out);
            return sm_smpr_fail("malformed region row");
        }
        last = in.region;
        /* Both lists by region id: a merge of sorted lists. */
        while (i < s->n_region_stats && s->region_stats[i].region < in.region)
            out[k++] = s->region_stats[i++];
        if (i < s->n_region_stats && s->region_stats[i].region == in.region) {
            sm_region_stat_t m = s->region_stats[i++];
            m.calls += in.calls;
            m.bytes_sent += in.bytes_sent;
            m.bytes_received += in.bytes_received;
            sm_mstat_merge(&m.rank_time, &in.rank_time);
            out[k++] = m;
        } else {
            out[k++] = in;
        }
    }
    while (i < s->n_region_stats)
        out[k++] = s->region_stats[i++];
    free(s->region_stats);
    s->region_stats = out;
    s->n_region_stats = k;
    return true;
}

static bool sm_acc_gpu(sm_rbuf_t *r, sm_summary_impl_t *im, sm_cpath_t **at, uint64_t n_nodes,
                       const uint32_t *gmap, uint32_t n_gm)
{
    sm_profile_summary_t *s = &im->pub;
    uint64_t n = sm_get_u64(r);
    if (r->bad || n > sm_remaining(r) / SM_SMPR_GPU_ROW)
        return sm_smpr_fail("GPU row count beyond the blob");
    for (uint64_t i = 0; i < n; i++) {
        uint32_t node = sm_get_u32(r), region = sm_get_u32(r), metric = sm_get_u32(r);
        sm_gpu_row_t in;
        in.all.n = sm_get_u64(r);
        in.all.covered = sm_get_u64(r);
        in.all.sum = sm_get_f64(r);
        in.all.mean = sm_get_f64(r);
        in.all.m2 = sm_get_f64(r);
        in.all.min = sm_get_f64(r);
        in.all.max = sm_get_f64(r);
        in.ranks.n = sm_get_u32(r);
        in.ranks.min_rank = sm_get_u32(r);
        in.ranks.max_rank = sm_get_u32(r);
        in.ranks.mean = sm_get_f64(r);
        in.ranks.m2 = sm_get_f64(r);
        in.ranks.min = sm_get_f64(r);
        in.ranks.max = sm_get_f64(r);
        if (r->bad || node > n_nodes || metric >= n_gm)
            return sm_smpr_fail("GPU row of an unknown path or metric");
        in.path = node ? at[node] : NULL;
        in.region = region;
        in.metric = gmap[metric];
        uint64_t k = 0;
        while (k < s->n_gpu_rows &&
               (s->gpu_rows[k].path != in.path || s->gpu_rows[k].region != in.region ||
                s->gpu_rows[k].metric != in.metric))
            k++;
        if (k < s->n_gpu_rows) {
            sm_fstat_merge(&s->gpu_rows[k].all, &in.all);
            sm_dstat_merge(&s->gpu_rows[k].ranks, &in.ranks);
            continue;
        }
        if (s->n_gpu_rows == im->gpu_rows_cap) {
            uint64_t cap = im->gpu_rows_cap ? 2 * im->gpu_rows_cap : 16;
            sm_gpu_row_t *rows = realloc(s->gpu_rows, cap * sizeof *rows);
            if (!rows)
                return sm_smpr_fail("out of memory");
            s->gpu_rows = rows;
            im->gpu_rows_cap = cap;
        }
        s->gpu_rows[s->n_gpu_rows++] = in;
    }
    return true;
}

/* The per-member blobs: kept while every part has them and the members
 * merged so far are few enough. */
static bool sm_acc_detail(sm_rbuf_t *r, sm_summary_impl_t *im, bool lost)
{
    uint32_t n = sm_get_u32(r);
    const uint8_t *start = r->p;
    for (uint32_t i = 0; i < n; i++) {
        sm_get_u32(r);
        uint64_t len = sm_get_u64(r);
        if (r->bad || !sm_get_bytes(r, len))
            return sm_smpr_fail("truncated detail");
    }
    if (r->bad)
        return sm_smpr_fail("truncated detail");
    uint64_t bytes = (uint64_t)(r->p - start);
    if (lost || im->detail_lost || im->pub.n_threads > SM_PROFILE_DETAIL_MAX) {
        im->detail_lost = true;
        free(im->detail);
        im->detail = NULL;
        im->n_detail = 0;
        im->detail_len = im->detail_cap = 0;
        return true;
    }
    if (im->detail_len + bytes > im->detail_cap) {
        uint64_t cap = 2 * (im->detail_len + bytes);
        uint8_t *d = realloc(im->detail, cap ? cap : 1);
        if (!d)
            return sm_smpr_fail("out of memory");
        im->detail = d;
        im->detail_cap = cap;
    }
    if (bytes)
        memcpy(im->detail + im->detail_len, start, bytes);
    im->detail_len += bytes;
    im->n_detail += n;
    return true;
}

/* Merges one reduced blob into the accumulator im.  false when the blob is
 * malformed or memory ran out (sm_smpr_why); im is then incomplete. */
static bool sm_acc_add(sm_summary_impl_t *im, const void *blob, uint64_t len)
{
    sm_profile_summary_t *s = &im->pub;
    sm_rbuf_t r = {.p = blob, .end = (const uint8_t *)blob + len};
    if (sm_get_u32(&r) != SM_SMPR_MAGIC || sm_get_u32(&r) != SM_SMPR_VERSION || r.bad)
        return sm_smpr_fail("not a reduced profile");
    uint32_t job_ranks = sm_get_u32(&r), present = sm_get_u32(&r), first = sm_get_u32(&r);
    uint32_t without = sm_get_u32(&r), flags = sm_get_u32(&r);
    double npt = sm_get_f64(&r);
    uint64_t threads = sm_get_u64(&r);
    if (r.bad || !job_ranks || (im->job_ranks && job_ranks != im->job_ranks))
        return sm_smpr_fail("another job's number of ranks");
    if (present && (first >= job_ranks || !isfinite(npt) || !(npt > 0)))
        return sm_smpr_fail("invalid first rank or tick length");
    if (!im->job_ranks) {
        im->job_ranks = job_ranks;
        s->n_ranks = job_ranks;
        s->n_bins = sm_rank_bins(job_ranks);
        if (!(s->bins = calloc(s->n_bins, sizeof *s->bins)))
            return sm_smpr_fail("out of memory");
    }
    s->ranks_present += present;
    im->ranks_without += without;
    s->n_threads += threads;
    if (present && (im->first_rank == SM_INVALID_ID || first < im->first_rank)) {
        im->first_rank = first;
        s->ns_per_tick = npt;
    }

    /* Names: the union, first seen first; the statistics make room. */
    uint32_t cmap[SM_SUMMARY_MAX_COUNTERS], gmap[SM_SUMMARY_MAX_GPU_METRICS], nc_blob, ng_blob;
    uint32_t old_nc = s->n_counters;
    if (!sm_smpr_names(&r, &s->counter_names, &s->n_counters, SM_SUMMARY_MAX_COUNTERS, cmap,
                       &nc_blob))
        return false;
    if (s->n_counters != old_nc) {
        uint32_t nc[3] = {old_nc, s->n_counters, 0};
        sm_cpath_walk(&s->root, sm_acc_grow_path, nc);
        if (nc[2])
            return sm_smpr_fail("out of memory");
    }
    if (!sm_smpr_names(&r, &s->gpu_metric_names, &s->n_gpu_metrics, SM_SUMMARY_MAX_GPU_METRICS,
                       gmap, &ng_blob))
        return false;
    uint32_t nv_blob = SM_PV_COUNT(nc_blob), vmap[SM_PV_COUNT(SM_SUMMARY_MAX_COUNTERS)];
    for (uint32_t v = 0; v < SM_PV_COUNTERS; v++)
        vmap[v] = v;
    for (uint32_t k = 0; k < nc_blob; k++) {
        vmap[SM_PV_COUNTERS + k] = SM_PV_COUNTERS + cmap[k];
        vmap[SM_PV_COUNTERS + nc_blob + k] = SM_PV_COUNTERS + s->n_counters + cmap[k];
    }

    uint32_t bfirst = sm_get_u32(&r), bcount = sm_get_u32(&r);
    if (r.bad || bcount > s->n_bins || bfirst > s->n_bins - bcount ||
        bcount > sm_remaining(&r) / 12)
        return sm_smpr_fail("bins beyond the job");
    for (uint32_t b = bfirst; b < bfirst + bcount; b++) {
        s->bins[b].ranks += sm_get_u32(&r);
        s->bins[b].threads += sm_get_u32(&r);
        s->bins[b].main_threads += sm_get_u32(&r);
    }

    uint64_t n_nodes = sm_get_u64(&r);
    uint64_t node_min = SM_SMPR_NODE_MIN + 2u * nv_blob * SM_SMPR_MSTAT_MIN;
    if (r.bad || n_nodes >= UINT32_MAX || n_nodes > sm_remaining(&r) / node_min)
        return sm_smpr_fail("node count beyond the blob");
    sm_cpath_t **at = malloc((n_nodes + 1) * sizeof *at);
    sm_smpr_scratch_t x = {.st = sm_cpath_stats_new(nc_blob)};
    bool ok = at && x.st;
    if (!ok)
        sm_smpr_fail("out of memory");
    if (ok)
        at[0] = &s->root;
    for (uint64_t i = 1; ok && i <= n_nodes; i++) {
        uint32_t parent = sm_get_u32(&r), region = sm_get_u32(&r);
        if (r.bad || parent >= i) {
            ok = sm_smpr_fail("a node before its parent");
            break;
        }
        x.st->n_top = x.st->n_bottom = 0;
        if (!sm_get_stats(&r, &x, s->n_bins)) {
            ok = false;
            break;
        }
        sm_cpath_t *c = sm_summary_child(im, at[parent], region);
        if (c && !c->stats)
            c->stats = sm_cpath_stats_new(s->n_counters);
        if (!c || !c->stats || sm_cpath_stats_merge(c->stats, x.st, vmap) != 0) {
            ok = sm_smpr_fail("out of memory");
            break;
        }
        at[i] = c;
    }
    sm_cpath_stats_free(x.st);
    ok = ok && sm_acc_regions(&r, s) && sm_acc_gpu(&r, im, at, n_nodes, gmap, ng_blob) &&
         sm_acc_detail(&r, im, flags & SM_SMPR_DETAIL_LOST);
    free(at);
    if (ok && r.p != r.end)
        ok = sm_smpr_fail("bytes after the end");
    return ok;
}

static sm_summary_impl_t *sm_acc_new(void)
{
    return sm_summary_create(0, 0, 0);
}

int sm_profile_reduced_merge(const void *const *blobs, const uint64_t *lens, uint32_t n,
                             void **out, uint64_t *out_len, void *arg)
{
    (void)arg;
    *out = NULL;
    *out_len = 0;
    sm_summary_impl_t *im = sm_acc_new();
    if (!im) {
        sm_error("reducing the profiles failed: out of memory");
        return -1;
    }
    sm_smpr_why = NULL;
    uint32_t bad = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (!lens[i])
            continue; /* a part lost on the way (said where it was lost) */
        if (!sm_acc_add(im, blobs[i], lens[i])) {
            bad = i + 1;
            break;
        }
    }
    if (!bad)
        *out = sm_smpr_serialize(im, out_len);
    sm_profile_summary_free(&im->pub);
    if (bad)
        sm_error("reducing the profiles failed: %s (part %u)", sm_smpr_why ? sm_smpr_why : "?",
                 (unsigned)(bad - 1));
    else if (!*out)
        sm_error("reducing the profiles failed: out of memory");
    return *out ? 0 : -1;
}

/* ---------------------------------------------------------------- a rank's part */

void *sm_profile_reduced_of_rank(const void *blob, uint64_t len, uint32_t rank,
                                 uint32_t n_ranks, uint64_t *out_len)
{
    *out_len = 0;
    if (!n_ranks)
        n_ranks = 1;
    if (!len) {
        /* A rank without a profile: counted, so that rank 0 can say so. */
        sm_summary_impl_t *im = sm_acc_new();
        void *out = NULL;
        if (im) {
            im->job_ranks = im->pub.n_ranks = n_ranks;
            im->ranks_without = 1;
            out = sm_smpr_serialize(im, out_len);
            sm_profile_summary_free(&im->pub);
        }
        if (!out)
            sm_error("reducing the profiles failed: out of memory");
        return out;
    }
    uint32_t members;
    const char *why;
    if (!sm_profile_blob_check(blob, len, rank, &members, &why)) {
        sm_error("the profile summary of rank %u is malformed (%s); it is left out of the "
                 "job's profile", (unsigned)rank, why);
        return NULL;
    }
    sm_rank_blob_t one = {rank, blob, len};
    sm_profile_summary_t *s = sm_profile_detail_build(&one, 1, 1, rank);
    if (!s)
        return NULL;
    sm_summary_impl_t *im = sm_summary_impl(s);
    void *out = NULL;
    if (sm_summary_compute_stats(s, rank, n_ranks) == 0) {
        im->job_ranks = n_ranks;
        im->first_rank = rank;
        /* The rank's own blob is its per-member detail, while small. */
        if (members <= SM_PROFILE_DETAIL_MAX) {
            sm_wbuf_t d = {0};
            sm_put_u32(&d, rank);
            sm_put_u64(&d, len);
            sm_put_bytes(&d, blob, len);
            im->detail = sm_wbuf_finish(&d, &im->detail_len);
            im->n_detail = im->detail ? 1 : 0;
            im->detail_lost = !im->detail;
        } else {
            im->detail_lost = true;
        }
        out = sm_smpr_serialize(im, out_len);
    }
    sm_profile_summary_free(s);
    if (!out)
        sm_error("reducing the profiles failed: out of memory");
    return out;
}

sm_profile_summary_t *sm_profile_summary_of_rank(const void *blob, uint64_t len, uint32_t rank)
{
    uint32_t members;
    const char *why;
    if (!sm_profile_blob_check(blob, len, rank, &members, &why)) {
        sm_error("the profile summary of rank %u is malformed (%s)", (unsigned)rank, why);
        return NULL;
    }
    sm_rank_blob_t one = {rank, blob, len};
    return sm_profile_detail_build(&one, 1, 1, rank);
}

/* ---------------------------------------------------------------- the job summary */

/* The accumulator of every rank, made the job's summary: with members when
 * every rank's per-member blob came along, else the statistics alone. */
static sm_profile_summary_t *sm_acc_finish(sm_summary_impl_t *im)
{
    sm_profile_summary_t *s = &im->pub;
    if (im->ranks_without)
        sm_warning("%u rank%s sent no profile summary; the job's profile lacks %s threads",
                   (unsigned)im->ranks_without, im->ranks_without == 1 ? "" : "s",
                   im->ranks_without == 1 ? "its" : "their");
    if (!im->detail_lost && im->n_detail && im->n_detail == s->ranks_present) {
        sm_rank_blob_t *blobs = malloc(im->n_detail * sizeof *blobs);
        sm_rbuf_t r = {.p = im->detail, .end = im->detail + im->detail_len};
        for (uint32_t i = 0; blobs && i < im->n_detail; i++) {
            blobs[i].rank = sm_get_u32(&r);
            blobs[i].len = sm_get_u64(&r);
            blobs[i].blob = sm_get_bytes(&r, blobs[i].len);
        }
        /* Rank order (the tree merges in rank order; a merge of files may
         * not), each rank once, each blob sound. */
        bool sound = blobs && !r.bad;
        for (uint32_t i = 1; sound && i < im->n_detail; i++)
            for (uint32_t k = i; k > 0 && blobs[k - 1].rank >= blobs[k].rank; k--) {
                sm_rank_blob_t t = blobs[k];
                blobs[k] = blobs[k - 1];
                blobs[k - 1] = t;
            }
        for (uint32_t i = 0; sound && i < im->n_detail; i++) {
            uint32_t members;
            const char *why;
            sound = blobs[i].rank < im->job_ranks && (!i || blobs[i - 1].rank < blobs[i].rank) &&
                    sm_profile_blob_check(blobs[i].blob, blobs[i].len, blobs[i].rank, &members,
                                          &why);
        }
        sm_profile_summary_t *d =
            sound ? sm_profile_detail_build(blobs, im->n_detail, im->job_ranks, 0) : NULL;
        free(blobs);
        if (d && sm_summary_compute_stats(d, 0, im->job_ranks) == 0) {
            sm_profile_summary_free(s);
            return d;
        }
        sm_profile_summary_free(d);
        /* (out of memory: the statistics alone) */
    }
    /* The statistics alone. */
    free(im->detail);
    im->detail = NULL;
    im->n_detail = 0;
    s->n_members = 0;
    s->per_member = false;
    s->n_ranks = im->job_ranks ? im->job_ranks : 1;
    sm_summary_built(im);
    return s;
}

sm_profile_summary_t *sm_profile_summary_from_reduced(const void *blob, uint64_t len)
{
    sm_summary_impl_t *im = sm_acc_new();
    if (!im) {
        sm_error("building the job's profile summary failed: out of memory");
        return NULL;
    }
    sm_smpr_why = NULL;
    if (!sm_acc_add(im, blob, len)) {
        sm_error("building the job's profile summary failed: %s",
                 sm_smpr_why ? sm_smpr_why : "?");
        sm_profile_summary_free(&im->pub);
        return NULL;
    }
    return sm_acc_finish(im);
}

sm_profile_summary_t *sm_profiles_reduce(const sm_procs_t *procs, const void *local_blob,
                                         uint64_t len, uint32_t n_ranks)
{
    if (!n_ranks)
        n_ranks = procs->size;
    uint64_t mine_len = 0;
    void *mine = sm_profile_reduced_of_rank(local_blob, local_blob ? len : 0, procs->rank,
                                            n_ranks, &mine_len);
    void *all = NULL;
    uint64_t all_len = 0;
    /* (a rank whose part could not be made takes part with an empty one:
     * the others wait for it) */
    if (sm_tree_reduce(procs, mine, mine ? mine_len : 0, sm_profile_reduced_merge, NULL, &all,
                       &all_len) != 0)
        sm_error("reducing the profiles: a transfer failed on rank %u; the job's profile lacks "
                 "what did not arrive", (unsigned)procs->rank);
    free(mine);
    if (procs->rank != 0) {
        free(all);
        return NULL;
    }
    sm_profile_summary_t *s = all && all_len ? sm_profile_summary_from_reduced(all, all_len) : NULL;
    if (!s && !(all && all_len))
        sm_error("building the job's profile summary failed: nothing arrived at rank 0");
    free(all);
    return s;
}

/* ---------------------------------------------------------------- one process, every rank */

static int sm_rank_blob_order(const void *a, const void *b)
{
    uint32_t x = ((const sm_rank_blob_t *)a)->rank, y = ((const sm_rank_blob_t *)b)->rank;
    return x < y ? -1 : x > y;
}

sm_profile_summary_t *sm_profile_summary_from_blobs(const void *seq, uint64_t len,
                                                    uint32_t n_ranks)
{
    if (n_ranks == 0)
        n_ranks = 1;
    /* Every record checked before anything is built. */
    uint32_t count = 0;
    const uint8_t *p = seq, *end = p ? p + len : NULL;
    uint32_t rank;
    const uint8_t *blob;
    uint64_t blob_len;
    while (p && p < end && (p = sm_tree_next(p, end, &rank, &blob, &blob_len)) != NULL)
        count++;
    sm_rank_blob_t *blobs = calloc(count ? count : 1, sizeof *blobs);
    uint8_t *seen = calloc(n_ranks, 1);
    if (!blobs || !seen) {
        free(blobs);
        free(seen);
        sm_error("building the job's profile summary failed: out of memory");
        return NULL;
    }
    uint32_t n = 0, without = 0;
    uint64_t members = 0;
    p = seq;
    while (p && p < end && (p = sm_tree_next(p, end, &rank, &blob, &blob_len)) != NULL) {
        const char *why = NULL;
        uint32_t m = 0;
        if (rank >= n_ranks)
            why = "rank beyond the job";
        else if (seen[rank])
            why = "rank sent two summaries";
        else if (blob_len && sm_profile_blob_check(blob, blob_len, rank, &m, &why))
            why = NULL;
        else if (!blob_len)
            why = NULL;
        if (why) {
            sm_error("the profile summary of rank %u is malformed (%s); no job profile written",
                     (unsigned)rank, why);
            free(blobs);
            free(seen);
            return NULL;
        }
        seen[rank] = 1;
        if (!blob_len) {
            /* The rank took part without a summary (it said why); the
             * others still make a job profile. */
            sm_warning("rank %u sent no profile summary; the job's profile lacks its threads",
                       (unsigned)rank);
            without++;
            continue;
        }
        blobs[n++] = (sm_rank_blob_t){rank, blob, blob_len};
        members += m;
    }
    free(seen);
    qsort(blobs, n, sizeof *blobs, sm_rank_blob_order);

    sm_profile_summary_t *s = NULL;
    if (members <= SM_PROFILE_DETAIL_MAX) {
        /* Every member's values: what the tree's root builds for a small
         * job from the blobs that came along. */
        s = sm_profile_detail_build(blobs, n, n_ranks, 0);
        if (s && sm_summary_compute_stats(s, 0, n_ranks) != 0) {
            sm_profile_summary_free(s);
            s = NULL;
            sm_error("building the job's profile summary failed: out of memory");
        }
        free(blobs);
        return s;
    }
    /* Each rank's part, merged in rank order as the tree merges. */
    sm_summary_impl_t *im = sm_acc_new();
    bool ok = im != NULL;
    for (uint32_t i = 0; ok && i < n; i++) {
        uint64_t part_len = 0;
        void *part = sm_profile_reduced_of_rank(blobs[i].blob, blobs[i].len, blobs[i].rank,
                                                n_ranks, &part_len);
        sm_smpr_why = NULL;
        ok = part && sm_acc_add(im, part, part_len);
        if (part && !ok)
            sm_error("reducing the profiles failed: %s", sm_smpr_why ? sm_smpr_why : "?");
        free(part);
    }
    free(blobs);
    if (!ok) {
        if (im)
            sm_profile_summary_free(&im->pub);
        return NULL;
    }
    if (!im->job_ranks) {
        im->job_ranks = n_ranks;
        im->pub.n_ranks = n_ranks;
    }
    im->ranks_without = 0; /* (each said above) */
    return sm_acc_finish(im);
}
