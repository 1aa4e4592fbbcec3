/* The per-process profile blob: a local summary with its members, region
 * ids mapped to the job's, as each rank hands it to the reduction
 * (profile_reduce.c) and as a process file keeps it for sysmeasure-merge;
 * and the summary with members built back from such blobs (a small job's
 * per-member detail, or one rank's part of a reduction). */
#include "profile_summary.h"
#include "profile_build.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../util/bytes.h"
#include "../util/log.h"

/* ---------------------------------------------------------------- blob format
 *
 * Little-endian, fixed width, no padding:
 *
 *   header   u32 magic "SMPS", u32 version, u32 rank, u32 n_members,
 *            u64 ns_per_tick (IEEE 754 bits), u64 n_nodes
 *   counters u32 n_counters, n_counters x { u32 name length (< 128), name bytes }
 *   members  n_members x { u32 location, u32 creator location (or ~0),
 *            u32 name length (< 64), name bytes, u32 depth, depth x u32 region }
 *   nodes    n_nodes x, parents before children:
 *            { u32 parent (0 = root, else 1-based index of an earlier node),
 *              u32 region, u32 n_entries,
 *              n_entries x { u32 member, u64 visits, stat incl, stat excl,
 *                            u64 bytes sent, u64 bytes received,
 *                            n_counters x stat inclusive, n_counters x stat exclusive } }
 *            stat = u64 sum, u64 min, u64 max, u64 sumsq low, u64 sumsq high
 *   gpu      (version 3) u32 n_gpu_metrics, n_gpu_metrics x { u32 name length
 *            (< 128), name bytes }, u64 n_values, n_values x { u32 node (1-based
 *            index above), u32 member, u32 metric, u64 n, u64 covered,
 *            f64 sum, f64 mean, f64 m2, f64 min, f64 max }
 *            (version 2 blobs, from older process files, end after the nodes)
 *
 * Region ids are the job's unified ids; times are ticks of the rank's clock.
 * Entries exist only for members that were on the path. */

#define SM_BLOB_MAGIC 0x53504d53u /* "SMPS" in little-endian bytes */
#define SM_BLOB_VERSION 3u
#define SM_BLOB_VERSION_MIN 2u
#define SM_BLOB_GPU_VALUE 68u
#define SM_BLOB_HEADER 32u
#define SM_BLOB_MEMBER_MIN 16u /* without name and path */
#define SM_BLOB_NODE_MIN 12u
#define SM_BLOB_ENTRY 108u /* without counters */
#define SM_BLOB_STAT 40u
#define SM_BLOB_NAME_MAX 63u

static void sm_put_stat(sm_wbuf_t *w, const sm_stat_t *s)
{
    sm_put_u64(w, s->sum);
    sm_put_u64(w, s->min);
    sm_put_u64(w, s->max);
    sm_put_u64(w, (uint64_t)s->sumsq);
    sm_put_u64(w, (uint64_t)(s->sumsq >> 64));
}

static uint32_t sm_map_region(const sm_id_maps_t *maps, sm_region_id_t id)
{
    if (!maps || id == SM_INVALID_ID)
        return id;
    return id < maps->n_regions && maps->regions ? maps->regions[id] : SM_INVALID_ID;
}

typedef struct sm_ser_walk {
    sm_wbuf_t *w;
    const sm_profile_summary_t *s;
    const sm_id_maps_t *maps;
    uint32_t *index_at_depth; /* pre-order: a node's parent is the last node
                               * seen one level up */
    uint32_t depth_cap;
    uint32_t next_index;
    uint64_t count;
    /* With GPU values: (path, index) of every node, for their references. */
    struct sm_ser_index {
        const sm_cpath_t *path;
        uint64_t index;
    } *index;
} sm_ser_walk_t;

static int sm_ser_index_order(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const struct sm_ser_index *)a)->path;
    uintptr_t y = (uintptr_t)((const struct sm_ser_index *)b)->path;
    return x < y ? -1 : x > y;
}

static void sm_put_f64(sm_wbuf_t *w, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    sm_put_u64(w, bits);
}

static double sm_get_f64(sm_rbuf_t *r)
{
    uint64_t bits = sm_get_u64(r);
    double v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

static void sm_ser_count(const sm_cpath_t *p, void *arg)
{
    sm_ser_walk_t *x = arg;
    if (p->depth > x->depth_cap)
        x->depth_cap = p->depth;
    x->count++;
}

static void sm_ser_node(const sm_cpath_t *p, void *arg)
{
    sm_ser_walk_t *x = arg;
    if (p->depth == 0)
        return;
    uint32_t index = ++x->next_index;
    x->index_at_depth[p->depth] = index;
    if (x->index)
        x->index[index - 1] = (struct sm_ser_index){p, index};
    sm_put_u32(x->w, x->index_at_depth[p->depth - 1]);
    sm_put_u32(x->w, sm_map_region(x->maps, p->region));
    uint32_t entries = 0;
    for (uint32_t i = 0; i < x->s->n_members; i++)
        entries += sm_member_on_path(&p->members[i]);
    sm_put_u32(x->w, entries);
    for (uint32_t i = 0; i < x->s->n_members; i++) {
        const sm_cpath_member_t *m = &p->members[i];
        if (!sm_member_on_path(m))
            continue;
        sm_put_u32(x->w, i);
        sm_put_u64(x->w, m->visits);
        sm_put_stat(x->w, &m->incl);
        sm_put_stat(x->w, &m->excl);
        sm_put_u64(x->w, m->bytes_sent);
        sm_put_u64(x->w, m->bytes_received);
        for (uint32_t k = 0; k < 2u * x->s->n_counters; k++)
            sm_put_stat(x->w, &m->counters[k]);
    }
}

void *sm_profile_summary_serialize(const sm_profile_summary_t *s, const sm_id_maps_t *maps,
                                   uint32_t rank, uint64_t *len)
{
    *len = 0;
    sm_wbuf_t w = {0};
    sm_ser_walk_t x = {.w = &w, .s = s, .maps = maps};
    sm_cpath_walk(&s->root, sm_ser_count, &x);
    uint64_t n_nodes = x.count - 1; /* without the root */
    if (n_nodes >= UINT32_MAX)
        return NULL; /* parent indices are 32-bit */
    x.index_at_depth = calloc((size_t)x.depth_cap + 1, sizeof *x.index_at_depth);
    if (!x.index_at_depth)
        return NULL;
    if (s->n_gpu_values && !(x.index = malloc((n_nodes ? n_nodes : 1) * sizeof *x.index))) {
        free(x.index_at_depth);
        return NULL;
    }

    double npt = s->n_ranks ? s->rank_ns_per_tick[0] : s->ns_per_tick;
    uint64_t npt_bits;
    memcpy(&npt_bits, &npt, sizeof npt_bits);
    sm_put_u32(&w, SM_BLOB_MAGIC);
    sm_put_u32(&w, SM_BLOB_VERSION);
    sm_put_u32(&w, rank);
    sm_put_u32(&w, s->n_members);
    sm_put_u64(&w, npt_bits);
    sm_put_u64(&w, n_nodes);
    sm_put_u32(&w, s->n_counters);
    for (uint32_t k = 0; k < s->n_counters; k++) {
        size_t name_len = strnlen(s->counter_names[k], SM_SUMMARY_COUNTER_NAME - 1);
        sm_put_u32(&w, (uint32_t)name_len);
        uint8_t *p = sm_wbuf_room(&w, name_len);
        if (p)
            memcpy(p, s->counter_names[k], name_len);
    }
    for (uint32_t i = 0; i < s->n_members; i++) {
        const sm_summary_member_t *m = &s->member_info[i];
        size_t name_len = strnlen(m->name, sizeof m->name);
        if (name_len > SM_BLOB_NAME_MAX)
            name_len = SM_BLOB_NAME_MAX;
        sm_put_u32(&w, s->member_location[i]);
        sm_put_u32(&w, m->creator_location);
        sm_put_u32(&w, (uint32_t)name_len);
        uint8_t *p = sm_wbuf_room(&w, name_len);
        if (p)
            memcpy(p, m->name, name_len);
        sm_put_u32(&w, m->creation_depth);
        for (uint32_t d = 0; d < m->creation_depth; d++)
            sm_put_u32(&w, sm_map_region(maps, m->creation_path[d]));
    }
    sm_cpath_walk(&s->root, sm_ser_node, &x);
    free(x.index_at_depth);
    sm_put_u32(&w, s->n_gpu_metrics);
    for (uint32_t k = 0; k < s->n_gpu_metrics; k++) {
        size_t name_len = strnlen(s->gpu_metric_names[k], SM_SUMMARY_COUNTER_NAME - 1);
        sm_put_u32(&w, (uint32_t)name_len);
        uint8_t *p = sm_wbuf_room(&w, name_len);
        if (p)
            memcpy(p, s->gpu_metric_names[k], name_len);
    }
    if (x.index)
        qsort(x.index, n_nodes, sizeof *x.index, sm_ser_index_order);
    uint64_t placed = 0;
    for (uint64_t i = 0; x.index && i < s->n_gpu_values; i++) {
        struct sm_ser_index key = {s->gpu_values[i].path, 0};
        placed += bsearch(&key, x.index, n_nodes, sizeof *x.index, sm_ser_index_order) != NULL;
    }
    sm_put_u64(&w, placed);
    for (uint64_t i = 0; x.index && i < s->n_gpu_values; i++) {
        const sm_summary_gpu_value_t *v = &s->gpu_values[i];
        struct sm_ser_index key = {v->path, 0};
        const struct sm_ser_index *at =
            bsearch(&key, x.index, n_nodes, sizeof *x.index, sm_ser_index_order);
        if (!at)
            continue;
        sm_put_u32(&w, (uint32_t)at->index);
        sm_put_u32(&w, v->member);
        sm_put_u32(&w, v->metric);
        sm_put_u64(&w, v->st.n);
        sm_put_u64(&w, v->st.covered);
        sm_put_f64(&w, v->st.sum);
        sm_put_f64(&w, v->st.mean);
        sm_put_f64(&w, v->st.m2);
        sm_put_f64(&w, v->st.min);
        sm_put_f64(&w, v->st.max);
    }
    free(x.index);
    if (w.oom) {
        free(w.p);
        return NULL;
    }
    *len = w.len;
    return w.p;
}

/* ---------------------------------------------------------------- reading blobs */

static void sm_get_stat(sm_rbuf_t *r, sm_stat_t *s)
{
    s->sum = sm_get_u64(r);
    s->min = sm_get_u64(r);
    s->max = sm_get_u64(r);
    uint64_t lo = sm_get_u64(r), hi = sm_get_u64(r);
    s->sumsq = (unsigned __int128)hi << 64 | lo;
}

/* What the first pass learns of a blob. */
typedef struct sm_blob_head {
    const uint8_t *blob;
    uint64_t len;
    uint32_t n_members;
    uint64_t n_nodes;
    uint64_t path_regions; /* creation paths, summed */
    double ns_per_tick;
    uint32_t n_counters;
    const uint8_t *counter_names; /* the counters section after its count */
    uint32_t counter_map[SM_SUMMARY_MAX_COUNTERS]; /* -> the job summary's counter */
    uint32_t version;
    uint32_t n_gpu_metrics;
    const uint8_t *gpu_names;     /* the GPU section after its metric count */
    uint64_t n_gpu_values;
    uint32_t *gpu_map;            /* -> the job summary's GPU metric */
} sm_blob_head_t;

/* Scratch shared by the blobs, grown to the largest. */
typedef struct sm_blob_work {
    uint64_t *keys;   /* location << 32 | local member, sorted */
    uint32_t *perm;   /* local member -> position in location order */
    uint32_t members_cap;
    sm_cpath_t **at;  /* node index -> path (the second pass) */
    uint64_t at_cap;
} sm_blob_work_t;

static _Thread_local const char *sm_blob_why; /* the first problem found, for the message */

static int sm_u64_compare(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static bool sm_blob_fail(const char *why)
{
    if (!sm_blob_why)
        sm_blob_why = why;
    return false;
}

static bool sm_blob_header(sm_rbuf_t *r, uint32_t rank, sm_blob_head_t *h)
{
    if (sm_get_u32(r) != SM_BLOB_MAGIC || r->bad)
        return sm_blob_fail("not a profile summary");
    h->version = sm_get_u32(r);
    if (h->version < SM_BLOB_VERSION_MIN || h->version > SM_BLOB_VERSION)
        return sm_blob_fail("unknown version");
    uint32_t blob_rank = sm_get_u32(r);
    h->n_members = sm_get_u32(r);
    uint64_t bits = sm_get_u64(r);
    h->n_nodes = sm_get_u64(r);
    if (r->bad)
        return sm_blob_fail("truncated header");
    if (rank != SM_INVALID_ID && blob_rank != rank)
        return sm_blob_fail("rank differs from its record");
    memcpy(&h->ns_per_tick, &bits, sizeof bits);
    if (!isfinite(h->ns_per_tick) || !(h->ns_per_tick > 0))
        return sm_blob_fail("invalid tick length");
    h->n_counters = sm_get_u32(r);
    h->counter_names = r->p;
    if (r->bad || h->n_counters > SM_SUMMARY_MAX_COUNTERS)
        return sm_blob_fail("counter count beyond the limit");
    for (uint32_t k = 0; k < h->n_counters; k++) {
        uint32_t name_len = sm_get_u32(r);
        if (name_len >= SM_SUMMARY_COUNTER_NAME)
            return sm_blob_fail("counter name too long");
        sm_get_bytes(r, name_len);
    }
    if (r->bad)
        return sm_blob_fail("truncated counter names");
    /* Counts bounded by the bytes that could hold them: a corrupt count must
     * not drive an allocation. */
    if (h->n_members > sm_remaining(r) / SM_BLOB_MEMBER_MIN)
        return sm_blob_fail("member count beyond the blob");
    return true;
}

/* Sorts the members by location id into work->perm; false on a repeated
 * location. */
static bool sm_blob_order_members(sm_blob_work_t *work, uint32_t n)
{
    if (n > 1)
        qsort(work->keys, n, sizeof *work->keys, sm_u64_compare);
    for (uint32_t k = 0; k < n; k++) {
        if (k && work->keys[k] >> 32 == work->keys[k - 1] >> 32)
            return sm_blob_fail("a location appears twice");
        work->perm[(uint32_t)work->keys[k]] = k;
    }
    return true;
}

static bool sm_blob_work_members(sm_blob_work_t *work, uint32_t n)
{
    if (n <= work->members_cap)
        return true;
    uint64_t *keys = realloc(work->keys, n * sizeof *keys);
    if (keys)
        work->keys = keys;
    uint32_t *perm = realloc(work->perm, n * sizeof *perm);
    if (perm)
        work->perm = perm;
    if (!keys || !perm)
        return false;
    work->members_cap = n;
    return true;
}

/* Reads the members section.  With im, fills members base.. (in location
 * order) and their creation paths from *pool. */
static bool sm_blob_members(sm_rbuf_t *r, sm_blob_head_t *h, sm_blob_work_t *work,
                            sm_summary_impl_t *im, uint32_t index, uint32_t base,
                            sm_region_id_t **pool)
{
    h->path_regions = 0;
    const uint8_t *start = r->p;
    for (uint32_t i = 0; i < h->n_members; i++) {
        uint32_t location = sm_get_u32(r);
        sm_get_u32(r); /* creator */
        uint32_t name_len = sm_get_u32(r);
        if (name_len > SM_BLOB_NAME_MAX)
            return sm_blob_fail("thread name too long");
        sm_get_bytes(r, name_len);
        uint32_t depth = sm_get_u32(r);
        if (r->bad || depth > sm_remaining(r) / 4)
            return sm_blob_fail("truncated member");
        sm_get_bytes(r, (uint64_t)depth * 4);
        h->path_regions += depth;
        work->keys[i] = (uint64_t)location << 32 | i;
    }
    if (!sm_blob_order_members(work, h->n_members))
        return false;
    if (!im)
        return true;

    /* Second reading of the section, now that the order is known. */
    sm_rbuf_t again = {.p = start, .end = r->p};
    for (uint32_t i = 0; i < h->n_members; i++) {
        uint32_t m = base + work->perm[i];
        sm_summary_member_t *info = &im->pub.member_info[m];
        im->pub.member_location[m] = sm_get_u32(&again);
        im->pub.member_rank[m] = index;
        info->creator_location = sm_get_u32(&again);
        uint32_t name_len = sm_get_u32(&again);
        memcpy(info->name, sm_get_bytes(&again, name_len), name_len);
        info->name[name_len] = '\0';
        info->creation_depth = sm_get_u32(&again);
        info->creation_path = *pool;
        for (uint32_t d = 0; d < info->creation_depth; d++)
            *(*pool)++ = sm_get_u32(&again);
    }
    return true;
}

/* Reads the nodes section; with im, adds them to the tree. */
static bool sm_blob_nodes(sm_rbuf_t *r, const sm_blob_head_t *h, sm_blob_work_t *work,
                          sm_summary_impl_t *im, uint32_t base, bool *oom)
{
    if (h->n_nodes > sm_remaining(r) / SM_BLOB_NODE_MIN)
        return sm_blob_fail("node count beyond the blob");
    if (im && h->n_nodes + 1 > work->at_cap) {
        sm_cpath_t **at = realloc(work->at, (size_t)(h->n_nodes + 1) * sizeof *at);
        if (!at) {
            *oom = true;
            return false;
        }
        work->at = at;
        work->at_cap = h->n_nodes + 1;
    }
    if (im)
        work->at[0] = &im->pub.root;
    for (uint64_t i = 1; i <= h->n_nodes; i++) {
        uint32_t parent = sm_get_u32(r);
        uint32_t region = sm_get_u32(r);
        uint32_t entries = sm_get_u32(r);
        if (r->bad)
            return sm_blob_fail("truncated node");
        if (parent >= i)
            return sm_blob_fail("a node before its parent");
        if (entries > h->n_members ||
            entries > sm_remaining(r) / (SM_BLOB_ENTRY + 2u * SM_BLOB_STAT * h->n_counters))
            return sm_blob_fail("entry count beyond the blob");
        sm_cpath_t *c = NULL;
        if (im) {
            c = sm_summary_child(im, work->at[parent], region);
            if (!c) {
                *oom = true;
                return false;
            }
            work->at[i] = c;
        }
        for (uint32_t e = 0; e < entries; e++) {
            uint32_t member = sm_get_u32(r);
            sm_cpath_member_t v;
            v.visits = sm_get_u64(r);
            sm_get_stat(r, &v.incl);
            sm_get_stat(r, &v.excl);
            v.bytes_sent = sm_get_u64(r);
            v.bytes_received = sm_get_u64(r);
            if (member >= h->n_members)
                return sm_blob_fail("entry of an unknown member");
            sm_cpath_member_t *into = c ? &c->members[base + work->perm[member]] : NULL;
            if (into)
                sm_cpath_member_merge(into, &v);
            for (uint32_t k = 0; k < 2u * h->n_counters; k++) {
                sm_stat_t st;
                sm_get_stat(r, &st);
                uint32_t nc = h->n_counters, job_nc = im ? im->pub.n_counters : 0;
                if (into && into->counters)
                    sm_stat_merge(&into->counters[k < nc ? h->counter_map[k]
                                                         : job_nc + h->counter_map[k - nc]],
                                  &st);
            }
        }
    }
    if (r->bad)
        return sm_blob_fail("truncated node");
    return true;
}

/* Reads the GPU section (version 3); with im, adds its values. */
static bool sm_blob_gpu(sm_rbuf_t *r, sm_blob_head_t *h, sm_blob_work_t *work,
                        sm_summary_impl_t *im, uint32_t base)
{
    h->n_gpu_metrics = 0;
    h->n_gpu_values = 0;
    if (h->version >= 3) {
        h->n_gpu_metrics = sm_get_u32(r);
        h->gpu_names = r->p;
        if (r->bad || h->n_gpu_metrics > SM_SUMMARY_MAX_GPU_METRICS)
            return sm_blob_fail("GPU metric count beyond the limit");
        for (uint32_t k = 0; k < h->n_gpu_metrics; k++) {
            uint32_t name_len = sm_get_u32(r);
            if (name_len >= SM_SUMMARY_COUNTER_NAME)
                return sm_blob_fail("GPU metric name too long");
            sm_get_bytes(r, name_len);
        }
        h->n_gpu_values = sm_get_u64(r);
        if (r->bad || h->n_gpu_values > sm_remaining(r) / SM_BLOB_GPU_VALUE)
            return sm_blob_fail("GPU value count beyond the blob");
        for (uint64_t i = 0; i < h->n_gpu_values; i++) {
            uint32_t node = sm_get_u32(r), member = sm_get_u32(r), metric = sm_get_u32(r);
            sm_fstat_t st;
            st.n = sm_get_u64(r);
            st.covered = sm_get_u64(r);
            st.sum = sm_get_f64(r);
            st.mean = sm_get_f64(r);
            st.m2 = sm_get_f64(r);
            st.min = sm_get_f64(r);
            st.max = sm_get_f64(r);
            if (node == 0 || node > h->n_nodes || member >= h->n_members ||
                metric >= h->n_gpu_metrics)
                return sm_blob_fail("GPU value of an unknown node, member or metric");
            if (im && im->pub.gpu_values)
                im->pub.gpu_values[im->pub.n_gpu_values++] = (sm_summary_gpu_value_t){
                    work->at[node], base + work->perm[member], h->gpu_map[metric], st};
        }
    }
    if (r->bad)
        return sm_blob_fail("truncated GPU section");
    if (r->p != r->end)
        return sm_blob_fail("bytes after the last node");
    return true;
}

/* One blob: validated (im NULL) or added to im as rank index. */
static bool sm_blob_read(const sm_blob_head_t *known, uint32_t rank, uint32_t index,
                         sm_blob_head_t *h, sm_blob_work_t *work, sm_summary_impl_t *im,
                         uint32_t base, sm_region_id_t **pool, bool *oom)
{
    sm_rbuf_t r = {.p = known->blob, .end = known->blob + known->len};
    *h = *known;
    if (!sm_blob_header(&r, rank, h))
        return false;
    if (!sm_blob_work_members(work, h->n_members)) {
        *oom = true;
        return false;
    }
    return sm_blob_members(&r, h, work, im, index, base, pool) &&
           sm_blob_nodes(&r, h, work, im, base, oom) && sm_blob_gpu(&r, h, work, im, base);
}

bool sm_profile_blob_check(const void *blob, uint64_t len, uint32_t rank, uint32_t *n_members,
                           const char **why)
{
    sm_blob_work_t work = {0};
    sm_blob_head_t h, known = {.blob = blob, .len = len};
    bool oom = false;
    sm_blob_why = NULL;
    bool ok = sm_blob_read(&known, rank, 0, &h, &work, NULL, 0, NULL, &oom);
    free(work.keys);
    free(work.perm);
    free(work.at);
    *n_members = ok ? h.n_members : 0;
    *why = oom ? "out of memory" : sm_blob_why ? sm_blob_why : "?";
    return ok;
}

sm_profile_summary_t *sm_profile_detail_build(const sm_rank_blob_t *blobs, uint32_t n,
                                              uint32_t n_ranks, uint32_t rank_base)
{
    if (n_ranks == 0)
        n_ranks = 1;
    sm_blob_head_t *heads = calloc(n ? n : 1, sizeof *heads);
    sm_blob_work_t work = {0};
    sm_summary_impl_t *im = NULL;
    bool oom = false;
    if (!heads)
        goto fail;

    /* First pass: the counts give the member numbering (by rank, then
     * location) and the pool of creation paths. */
    uint64_t members = 0, path_regions = 0;
    for (uint32_t i = 0; i < n; i++) {
        heads[i].blob = blobs[i].blob;
        heads[i].len = blobs[i].len;
        sm_blob_head_t h;
        if (!sm_blob_read(&heads[i], blobs[i].rank, 0, &h, &work, NULL, 0, NULL, &oom))
            goto fail; /* (checked before: only out of memory) */
        heads[i] = h;
        members += h.n_members;
        path_regions += h.path_regions;
    }
    if (members >= UINT32_MAX)
        goto fail;

    /* The job's counters: every rank's, first seen first. */
    char (*names)[SM_SUMMARY_COUNTER_NAME] = calloc(SM_SUMMARY_MAX_COUNTERS, sizeof *names);
    uint32_t n_counters = 0;
    if (!names)
        goto fail;
    for (uint32_t i = 0; i < n; i++) {
        sm_rbuf_t cr = {.p = heads[i].counter_names, .end = heads[i].blob + heads[i].len};
        for (uint32_t k = 0; k < heads[i].n_counters; k++) {
            char name[SM_SUMMARY_COUNTER_NAME];
            uint32_t name_len = sm_get_u32(&cr);
            memcpy(name, sm_get_bytes(&cr, name_len), name_len);
            name[name_len] = '\0';
            uint32_t j = 0;
            while (j < n_counters && strcmp(names[j], name) != 0)
                j++;
            if (j == n_counters && n_counters < SM_SUMMARY_MAX_COUNTERS)
                memcpy(names[n_counters++], name, sizeof name);
            heads[i].counter_map[k] = j < SM_SUMMARY_MAX_COUNTERS ? j : 0;
        }
    }
    im = sm_summary_create((uint32_t)members, n_ranks, n_counters);
    if (im)
        memcpy(im->pub.counter_names, names, n_counters * sizeof *names);
    free(names);
    if (!im || !(im->paths = malloc((path_regions ? path_regions : 1) * sizeof *im->paths)))
        goto fail;
    /* The job's GPU metrics, the same way; values in one array. */
    uint64_t gpu_values = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (!heads[i].n_gpu_metrics)
            continue;
        if (!(heads[i].gpu_map = calloc(heads[i].n_gpu_metrics, sizeof *heads[i].gpu_map)))
            goto fail;
        gpu_values += heads[i].n_gpu_values;
        sm_rbuf_t gr = {.p = heads[i].gpu_names, .end = heads[i].blob + heads[i].len};
        for (uint32_t k = 0; k < heads[i].n_gpu_metrics; k++) {
            char name[SM_SUMMARY_COUNTER_NAME];
            uint32_t name_len = sm_get_u32(&gr);
            memcpy(name, sm_get_bytes(&gr, name_len), name_len);
            name[name_len] = '\0';
            uint32_t j = 0;
            while (j < im->pub.n_gpu_metrics && strcmp(im->pub.gpu_metric_names[j], name) != 0)
                j++;
            if (j == im->pub.n_gpu_metrics && j < SM_SUMMARY_MAX_GPU_METRICS) {
                char(*grown)[SM_SUMMARY_COUNTER_NAME] =
                    realloc(im->pub.gpu_metric_names, (j + 1) * sizeof *grown);
                if (!grown)
                    goto fail;
                im->pub.gpu_metric_names = grown;
                memcpy(grown[j], name, sizeof name);
                im->pub.n_gpu_metrics++;
            }
            heads[i].gpu_map[k] = j < SM_SUMMARY_MAX_GPU_METRICS ? j : 0;
        }
    }
    if (gpu_values && !(im->pub.gpu_values = malloc(gpu_values * sizeof *im->pub.gpu_values)))
        goto fail;
    sm_region_id_t *pool = im->paths;
    uint32_t base = 0, next = 0;
    bool first = true;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t index = blobs[i].rank - rank_base;
        while (next <= index)
            im->pub.rank_first_member[next++] = base;
        im->pub.rank_ns_per_tick[index] = heads[i].ns_per_tick;
        if (first)
            im->pub.ns_per_tick = heads[i].ns_per_tick;
        first = false;
        sm_blob_head_t h;
        if (!sm_blob_read(&heads[i], blobs[i].rank, index, &h, &work, im, base, &pool, &oom))
            goto fail; /* only out of memory: the blob was checked */
        base += h.n_members;
    }
    while (next <= n_ranks)
        im->pub.rank_first_member[next++] = base;
    sm_summary_link_creators(&im->pub, true);
    sm_summary_built(im);
    for (uint32_t i = 0; i < n; i++)
        free(heads[i].gpu_map);
    free(heads);
    free(work.keys);
    free(work.perm);
    free(work.at);
    return &im->pub;

fail:
    sm_error("building the job's profile summary failed: out of memory");
    if (im)
        sm_profile_summary_free(&im->pub);
    for (uint32_t i = 0; heads && i < n; i++)
        free(heads[i].gpu_map);
    free(heads);
    free(work.keys);
    free(work.perm);
    free(work.at);
    return NULL;
}

static void sm_set_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t sm_at_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int sm_profile_summary_remap(void *blob, uint64_t len, const uint32_t *regions,
                             uint32_t n_regions)
{
    /* Checked whole first, so that the rewrite below can trust the counts
     * and a damaged blob stays untouched. */
    sm_blob_work_t work = {0};
    sm_blob_head_t h, known = {.blob = blob, .len = len};
    bool oom = false;
    sm_blob_why = NULL;
    bool ok = sm_blob_read(&known, SM_INVALID_ID, 0, &h, &work, NULL, 0, NULL, &oom);
    free(work.keys);
    free(work.perm);
    free(work.at);
    if (!ok)
        return -1;
    sm_id_maps_t maps = {.n_regions = n_regions, .regions = (uint32_t *)regions};
    uint8_t *p = (uint8_t *)blob + SM_BLOB_HEADER + 4;
    for (uint32_t k = 0; k < h.n_counters; k++)
        p += 4 + sm_at_u32(p);
    for (uint32_t i = 0; i < h.n_members; i++) {
        p += 8; /* location, creator */
        p += 4 + sm_at_u32(p);
        uint32_t depth = sm_at_u32(p);
        p += 4;
        for (uint32_t d = 0; d < depth; d++, p += 4)
            sm_set_u32(p, sm_map_region(&maps, sm_at_u32(p)));
    }
    for (uint64_t k = 0; k < h.n_nodes; k++) {
        sm_set_u32(p + 4, sm_map_region(&maps, sm_at_u32(p + 4)));
        p += SM_BLOB_NODE_MIN + (uint64_t)sm_at_u32(p + 8) *
                                    (SM_BLOB_ENTRY + 2u * SM_BLOB_STAT * h.n_counters);
    }
    return 0;
}
