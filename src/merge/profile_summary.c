/* The profile as one tree of call paths, unified across threads and ranks.
 *
 * Paths are keyed on the sequence of region ids from the root, so the tree is
 * built by inserting each member's own tree in turn: locally the CPU threads
 * of this process, for the job the threads of every rank as their blobs
 * arrive (region ids already unified).  Child lookup goes through a hash
 * table on (parent, region) so that wide trees and many members stay linear
 * in the number of nodes. */
#include "profile_summary.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../core/clock.h"
#include "../util/bytes.h"
#include "../core/events.h"
#include "../core/gpu_counters.h"
#include "../core/location.h"
#include "../util/log.h"

/* A path as allocated here: the public node, then what building needs.  The
 * members array follows in the same allocation. */
typedef struct sm_cpath_node {
    sm_cpath_t path;        /* first, so an sm_cpath_t * converts back */
    sm_cpath_t *last_child; /* appending keeps first-seen order */
} sm_cpath_node_t;

/* The summary as allocated here. */
typedef struct sm_summary_impl {
    sm_profile_summary_t pub; /* first, so the public pointer converts back */
    sm_cpath_t *root_last_child;
    sm_cpath_node_t **table;  /* open addressing on (parent, region) */
    size_t table_size;        /* a power of two */
    size_t table_used;
    sm_region_id_t *paths;    /* every member's creation path, one pool */
} sm_summary_impl_t;

static sm_summary_impl_t *sm_summary_impl(sm_profile_summary_t *s)
{
    return (sm_summary_impl_t *)s;
}

/* n members, with their counter statistics in stats (2 x nc each). */
static void sm_cpath_members_clear(sm_cpath_member_t *m, uint32_t n, uint32_t nc,
                                   sm_stat_t *stats)
{
    for (uint32_t i = 0; i < n; i++) {
        m[i].visits = 0;
        sm_stat_clear(&m[i].incl);
        sm_stat_clear(&m[i].excl);
        m[i].bytes_sent = m[i].bytes_received = 0;
        m[i].counters = nc ? stats + (size_t)i * 2u * nc : NULL;
        for (uint32_t k = 0; k < 2u * nc; k++)
            sm_stat_clear(&m[i].counters[k]);
    }
}

/* Bytes of a path's members and their counter statistics. */
static size_t sm_cpath_members_size(uint32_t nm, uint32_t nc)
{
    return (size_t)nm * (sizeof(sm_cpath_member_t) + 2u * nc * sizeof(sm_stat_t));
}

/* ---------------------------------------------------------------- building */

static size_t sm_cpath_hash(const sm_cpath_t *parent, sm_region_id_t region)
{
    uint64_t h = (uint64_t)(uintptr_t)parent ^ ((uint64_t)region << 32 | region);
    h ^= h >> 33; /* a 64-bit finalizer: pointers differ in middle bits only */
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return (size_t)h;
}

static int sm_summary_grow_table(sm_summary_impl_t *im)
{
    size_t size = im->table_size ? im->table_size * 2 : 256;
    sm_cpath_node_t **t = calloc(size, sizeof *t);
    if (!t)
        return -1;
    for (size_t i = 0; i < im->table_size; i++) {
        sm_cpath_node_t *n = im->table[i];
        if (!n)
            continue;
        size_t k = sm_cpath_hash(n->path.parent, n->path.region) & (size_t)(size - 1);
        while (t[k])
            k = (k + 1) & (size - 1);
        t[k] = n;
    }
    free(im->table);
    im->table = t;
    im->table_size = size;
    return 0;
}

/* The child of parent for region, created (last among its siblings) if new;
 * NULL when out of memory. */
static sm_cpath_t *sm_summary_child(sm_summary_impl_t *im, sm_cpath_t *parent,
                                    sm_region_id_t region)
{
    if (parent->first_child && parent->first_child->region == region)
        return parent->first_child; /* the common single-child chain */
    if (im->table_used * 2 >= im->table_size && sm_summary_grow_table(im) != 0)
        return NULL;
    size_t mask = im->table_size - 1;
    size_t k = sm_cpath_hash(parent, region) & mask;
    for (sm_cpath_node_t *n; (n = im->table[k]) != NULL; k = (k + 1) & mask)
        if (n->path.parent == parent && n->path.region == region)
            return &n->path;

    uint32_t nm = im->pub.n_members, nc = im->pub.n_counters;
    sm_cpath_node_t *n = malloc(sizeof *n + sm_cpath_members_size(nm, nc));
    if (!n)
        return NULL;
    memset(n, 0, sizeof *n);
    n->path.region = region;
    n->path.depth = parent->depth + 1;
    n->path.parent = parent;
    n->path.members = (sm_cpath_member_t *)(n + 1);
    sm_cpath_members_clear(n->path.members, nm, nc, (sm_stat_t *)(n->path.members + nm));

    sm_cpath_t **tail = parent == &im->pub.root ? &im->root_last_child
                                                : &((sm_cpath_node_t *)parent)->last_child;
    if (*tail)
        (*tail)->next_sibling = &n->path;
    else
        parent->first_child = &n->path;
    *tail = &n->path;
    im->table[k] = n;
    im->table_used++;
    return &n->path;
}

/* A path seen twice for one member (not expected from one tree, but possible
 * when several trees or blob entries feed one member) adds up. */
static void sm_cpath_member_merge(sm_cpath_member_t *into, const sm_cpath_member_t *from)
{
    into->visits += from->visits;
    sm_stat_merge(&into->incl, &from->incl);
    sm_stat_merge(&into->excl, &from->excl);
    into->bytes_sent += from->bytes_sent;
    into->bytes_received += from->bytes_received;
}

static void sm_cpath_accumulate(sm_cpath_member_t *m, const sm_profile_node_t *n, uint32_t nc)
{
    sm_cpath_member_t v = {.visits = n->visits, .incl = n->incl, .excl = n->excl,
                           .bytes_sent = n->bytes_sent, .bytes_received = n->bytes_received};
    sm_cpath_member_merge(m, &v);
    /* A node made before its thread began counting has no values. */
    for (uint32_t k = 0; n->counters && m->counters && k < 2u * nc; k++)
        sm_stat_merge(&m->counters[k], &n->counters[k]);
}

/* Add one member's call-path tree (region ids in this summary's numbering).
 * Iterative: recursive programs make deep trees. */
static int sm_summary_add_tree(sm_summary_impl_t *im, uint32_t member,
                               const sm_profile_node_t *root)
{
    const sm_profile_node_t *n = root;
    sm_cpath_t *c = &im->pub.root;
    for (;;) {
        if (n->first_child) {
            n = n->first_child;
            c = sm_summary_child(im, c, n->region);
        } else {
            while (n != root && !n->next_sibling) {
                n = n->parent;
                c = c->parent;
            }
            if (n == root)
                return 0;
            n = n->next_sibling;
            c = sm_summary_child(im, c->parent, n->region);
        }
        if (!c)
            return -1;
        sm_cpath_accumulate(&c->members[member], n, im->pub.n_counters);
    }
}

/* An empty summary for n_members members of n_ranks ranks (n_ranks >= 1),
 * with n_counters counters (names set by the caller). */
static sm_summary_impl_t *sm_summary_create(uint32_t n_members, uint32_t n_ranks,
                                            uint32_t n_counters)
{
    sm_summary_impl_t *im = calloc(1, sizeof *im);
    if (!im)
        return NULL;
    size_t nm = n_members ? n_members : 1; /* never malloc(0) */
    im->pub.n_members = n_members;
    im->pub.n_ranks = n_ranks;
    im->pub.member_location = calloc(nm, sizeof(uint32_t));
    im->pub.member_rank = calloc(nm, sizeof(uint32_t));
    im->pub.member_info = calloc(nm, sizeof(sm_summary_member_t));
    im->pub.rank_first_member = calloc((size_t)n_ranks + 1, sizeof(uint32_t));
    im->pub.rank_ns_per_tick = calloc(n_ranks, sizeof(double));
    im->pub.root.members = malloc(sm_cpath_members_size((uint32_t)nm, n_counters));
    im->pub.n_counters = n_counters;
    im->pub.counter_names = calloc(n_counters ? n_counters : 1, sizeof *im->pub.counter_names);
    im->pub.root.region = SM_INVALID_ID;
    im->pub.ns_per_tick = 1.0;
    if (!im->pub.member_location || !im->pub.member_rank || !im->pub.member_info ||
        !im->pub.rank_first_member || !im->pub.rank_ns_per_tick || !im->pub.root.members ||
        !im->pub.counter_names) {
        sm_profile_summary_free(&im->pub);
        return NULL;
    }
    sm_cpath_members_clear(im->pub.root.members, n_members, n_counters,
                           (sm_stat_t *)(im->pub.root.members + nm));
    for (uint32_t i = 0; i < n_members; i++)
        im->pub.member_info[i].creator = im->pub.member_info[i].creator_location = SM_INVALID_ID;
    return im;
}

/* The lookup table only serves building. */
static void sm_summary_built(sm_summary_impl_t *im)
{
    free(im->table);
    im->table = NULL;
    im->table_size = im->table_used = 0;
}

/* Member of [first, last) (sorted by location id) at location, or
 * SM_INVALID_ID. */
static uint32_t sm_summary_find_location(const sm_profile_summary_t *s, uint32_t first,
                                         uint32_t last, uint32_t location)
{
    while (first < last) {
        uint32_t mid = first + (last - first) / 2;
        if (s->member_location[mid] < location)
            first = mid + 1;
        else if (s->member_location[mid] > location)
            last = mid;
        else
            return mid;
    }
    return SM_INVALID_ID;
}

static int sm_u64_compare(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Creator location -> member, per rank.  Members of a rank are sorted by
 * location id in a job summary; a local summary's given order may be any, so
 * it searches linearly (few threads, once). */
static void sm_summary_link_creators(sm_profile_summary_t *s, bool sorted)
{
    for (uint32_t i = 0; i < s->n_members; i++) {
        sm_summary_member_t *m = &s->member_info[i];
        if (m->creator_location == SM_INVALID_ID)
            continue;
        uint32_t r = s->member_rank[i];
        uint32_t first = s->rank_first_member[r], last = s->rank_first_member[r + 1];
        if (sorted) {
            m->creator = sm_summary_find_location(s, first, last, m->creator_location);
            continue;
        }
        for (uint32_t k = first; k < last; k++)
            if (s->member_location[k] == m->creator_location) {
                m->creator = k;
                break;
            }
    }
}

sm_profile_summary_t *sm_profile_summary_from_threads(const sm_summary_thread_t *threads,
                                                      uint32_t n, double ns_per_tick)
{
    return sm_profile_summary_from_counting_threads(threads, n, ns_per_tick, 0, NULL);
}

sm_profile_summary_t *sm_profile_summary_from_counting_threads(
    const sm_summary_thread_t *threads, uint32_t n, double ns_per_tick, uint32_t n_counters,
    const char *const *counter_names)
{
    if (n_counters > SM_SUMMARY_MAX_COUNTERS)
        n_counters = SM_SUMMARY_MAX_COUNTERS;
    sm_summary_impl_t *im = sm_summary_create(n, 1, n_counters);
    if (!im)
        return NULL;
    for (uint32_t k = 0; k < n_counters; k++)
        snprintf(im->pub.counter_names[k], SM_SUMMARY_COUNTER_NAME, "%s", counter_names[k]);
    size_t depth = 0;
    for (uint32_t i = 0; i < n; i++)
        if (threads[i].creator_path)
            depth += threads[i].creator_depth;
    im->paths = malloc((depth ? depth : 1) * sizeof *im->paths);
    if (!im->paths) {
        sm_profile_summary_free(&im->pub);
        return NULL;
    }
    size_t used = 0;
    for (uint32_t i = 0; i < n; i++) {
        const sm_summary_thread_t *t = &threads[i];
        sm_summary_member_t *m = &im->pub.member_info[i];
        im->pub.member_location[i] = t->location;
        snprintf(m->name, sizeof m->name, "%s", t->name ? t->name : "");
        m->creator_location = t->creator;
        m->creation_path = im->paths + used;
        if (t->creator_path) {
            memcpy(im->paths + used, t->creator_path, t->creator_depth * sizeof *im->paths);
            m->creation_depth = t->creator_depth;
            used += t->creator_depth;
        }
        if (t->root && sm_summary_add_tree(im, i, t->root) != 0) {
            sm_profile_summary_free(&im->pub);
            return NULL;
        }
    }
    im->pub.rank_first_member[1] = n;
    im->pub.rank_ns_per_tick[0] = ns_per_tick;
    im->pub.ns_per_tick = ns_per_tick;
    sm_summary_link_creators(&im->pub, false);
    sm_summary_built(im);
    return &im->pub;
}

static bool sm_location_is_member(const sm_location_t *loc)
{
    /* A GPU stream is a member too: its paths are the host paths that
     * issued its work, ending in the activity (gpu.c). */
    return loc && (loc->type == SM_LOCATION_CPU_THREAD || loc->type == SM_LOCATION_GPU_STREAM) &&
           loc->profiling;
}

typedef struct sm_summary_gpu_walk {
    sm_profile_summary_t *s;
    uint64_t unplaced;
} sm_summary_gpu_walk_t;

/* One statistic of gpu_counters.c onto the stream's path: the launching
 * call's path, then the kernel (as gpu.c builds the stream's tree). */
static void sm_summary_gpu_stat(uint32_t location, const sm_profile_node_t *host,
                                sm_region_id_t kernel, const char *metric, const sm_fstat_t *st,
                                void *arg)
{
    sm_summary_gpu_walk_t *g = arg;
    sm_region_id_t path[257];
    uint32_t depth = 0;
    for (const sm_profile_node_t *n = host; n && n->parent && depth < 256; n = n->parent)
        depth++;
    uint32_t d = depth;
    for (const sm_profile_node_t *n = host; n && n->parent && d > 0; n = n->parent)
        path[--d] = n->region;
    path[depth++] = kernel;
    uint32_t member = 0;
    while (member < g->s->n_members && g->s->member_location[member] != location)
        member++;
    if (sm_profile_summary_add_gpu(g->s, member, path, depth, metric, st) != 0)
        g->unplaced++;
}

sm_profile_summary_t *sm_profile_summarize(void)
{
    uint32_t count = sm_location_count();
    uint32_t n = 0;
    for (uint32_t id = 0; id < count; id++)
        if (sm_location_is_member(sm_location_get(id)))
            n++;
    sm_summary_thread_t *t = calloc(n ? n : 1, sizeof *t);
    if (!t)
        return NULL;
    uint32_t k = 0;
    for (uint32_t id = 0; id < count && k < n; id++) {
        const sm_location_t *loc = sm_location_get(id);
        if (!sm_location_is_member(loc))
            continue;
        t[k++] = (sm_summary_thread_t){.location = loc->id,
                                       .name = loc->name,
                                       .creator = loc->creator,
                                       .creator_depth = loc->creator_depth,
                                       .creator_path = loc->creator_path,
                                       .root = &loc->profile.root};
    }
    const char *names[SM_SUMMARY_MAX_COUNTERS];
    uint32_t nc = 0;
#ifdef SM_HAVE_PAPI
    nc = sm_counters_count();
    for (uint32_t i = 0; i < nc && i < SM_SUMMARY_MAX_COUNTERS; i++)
        names[i] = sm_counters_name(i);
#endif
    sm_profile_summary_t *s =
        sm_profile_summary_from_counting_threads(t, k, sm_clock_ns_per_tick(), nc, names);
    free(t);
    if (s) {
        sm_summary_gpu_walk_t g = {.s = s};
        sm_gpu_counters_each(sm_summary_gpu_stat, &g);
        if (g.unplaced)
            sm_warning("GPU counters: %" PRIu64 " statistics of kernels without a profile path "
                       "(their activity records were lost) are only in counter_collection.csv",
                       g.unplaced);
    }
    return s;
}

int sm_profile_summary_add_gpu(sm_profile_summary_t *s, uint32_t member,
                               const sm_region_id_t *regions, uint32_t depth, const char *metric,
                               const sm_fstat_t *st)
{
    if (member >= s->n_members || !depth)
        return -1;
    const sm_cpath_t *p = &s->root;
    for (uint32_t d = 0; d < depth && p; d++) {
        const sm_cpath_t *c = p->first_child;
        while (c && c->region != regions[d])
            c = c->next_sibling;
        p = c;
    }
    if (!p)
        return -1;
    uint32_t k = 0;
    while (k < s->n_gpu_metrics && strcmp(s->gpu_metric_names[k], metric) != 0)
        k++;
    if (k == s->n_gpu_metrics) {
        if (k == SM_SUMMARY_MAX_GPU_METRICS)
            return -1;
        char(*names)[SM_SUMMARY_COUNTER_NAME] =
            realloc(s->gpu_metric_names, (k + 1) * sizeof *names);
        if (!names)
            return -1;
        s->gpu_metric_names = names;
        snprintf(names[k], SM_SUMMARY_COUNTER_NAME, "%s", metric);
        s->n_gpu_metrics++;
    }
    for (uint64_t i = 0; i < s->n_gpu_values; i++) {
        sm_summary_gpu_value_t *v = &s->gpu_values[i];
        if (v->path == p && v->member == member && v->metric == k) {
            sm_fstat_merge(&v->st, st);
            return 0;
        }
    }
    sm_summary_gpu_value_t *grown =
        realloc(s->gpu_values, (size_t)(s->n_gpu_values + 1) * sizeof *grown);
    if (!grown)
        return -1;
    s->gpu_values = grown;
    s->gpu_values[s->n_gpu_values++] = (sm_summary_gpu_value_t){p, member, k, *st};
    return 0;
}

void sm_profile_summary_free(sm_profile_summary_t *s)
{
    if (!s)
        return;
    sm_summary_impl_t *im = sm_summary_impl(s);
    /* Post-order without a stack: free a node once its children are gone. */
    sm_cpath_t *p = s->root.first_child;
    while (p) {
        if (p->first_child) {
            p = p->first_child;
            continue;
        }
        sm_cpath_t *next = p->next_sibling;
        sm_cpath_t *parent = p->parent;
        free(p); /* p is the start of its sm_cpath_node_t allocation */
        if (next) {
            p = next;
        } else {
            parent->first_child = NULL; /* all of parent's children are gone */
            p = parent == &s->root ? NULL : parent;
        }
    }
    s->root.first_child = NULL;
    free(s->root.members);
    free(s->member_location);
    free(s->member_rank);
    free(s->member_info);
    free(s->rank_first_member);
    free(s->rank_ns_per_tick);
    free(s->counter_names);
    free(s->gpu_metric_names);
    free(s->gpu_values);
    free(im->paths);
    free(im->table);
    free(im);
}

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

static bool sm_member_on_path(const sm_cpath_member_t *m)
{
    return m->visits || m->incl.sum || m->excl.sum || m->bytes_sent || m->bytes_received;
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

static const char *sm_blob_why; /* the first problem found, for the message */

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
                            sm_summary_impl_t *im, uint32_t rank, uint32_t base,
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
        im->pub.member_rank[m] = rank;
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

/* One blob: validated (im NULL) or added to im. */
static bool sm_blob_read(const sm_blob_head_t *known, uint32_t rank, sm_blob_head_t *h,
                         sm_blob_work_t *work, sm_summary_impl_t *im, uint32_t base,
                         sm_region_id_t **pool, bool *oom)
{
    sm_rbuf_t r = {.p = known->blob, .end = known->blob + known->len};
    *h = *known;
    if (!sm_blob_header(&r, rank, h))
        return false;
    if (!sm_blob_work_members(work, h->n_members)) {
        *oom = true;
        return false;
    }
    return sm_blob_members(&r, h, work, im, rank, base, pool) &&
           sm_blob_nodes(&r, h, work, im, base, oom) && sm_blob_gpu(&r, h, work, im, base);
}

sm_profile_summary_t *sm_profile_summary_from_blobs(const void *seq, uint64_t len,
                                                    uint32_t n_ranks)
{
    if (n_ranks == 0)
        n_ranks = 1;
    sm_blob_head_t *heads = calloc(n_ranks, sizeof *heads);
    if (!heads)
        return NULL;
    sm_blob_work_t work = {0};
    sm_summary_impl_t *im = NULL;
    bool oom = false;
    uint32_t bad_rank = SM_INVALID_ID;
    sm_blob_why = NULL;

    /* First pass: every record is checked before anything is built, and
     * the counts give the member numbering (by rank, then location). */
    const uint8_t *p = seq, *end = p ? p + len : NULL;
    uint32_t rank;
    const uint8_t *blob;
    uint64_t blob_len;
    uint64_t members = 0, path_regions = 0;
    while (p && p < end) {
        p = sm_tree_next(p, end, &rank, &blob, &blob_len);
        if (!p)
            break;
        if (rank >= n_ranks) {
            sm_blob_fail("rank beyond the job");
            bad_rank = rank;
            goto fail;
        }
        if (heads[rank].blob) {
            sm_blob_fail("rank sent two summaries");
            bad_rank = rank;
            goto fail;
        }
        if (blob_len == 0) {
            /* The rank took part in the gather without a summary (it said
             * why); the others still make a job profile. */
            sm_warning("rank %u sent no profile summary; the job's profile lacks its threads",
                       (unsigned)rank);
            continue;
        }
        heads[rank].blob = blob;
        heads[rank].len = blob_len;
        sm_blob_head_t h;
        if (!sm_blob_read(&heads[rank], rank, &h, &work, NULL, 0, NULL, &oom)) {
            bad_rank = rank;
            goto fail;
        }
        heads[rank] = h;
        members += h.n_members;
        path_regions += h.path_regions;
    }
    if (members >= UINT32_MAX) {
        sm_blob_fail("too many threads");
        goto fail;
    }

    /* The job's counters: every rank's, first seen first. */
    char (*names)[SM_SUMMARY_COUNTER_NAME] = calloc(SM_SUMMARY_MAX_COUNTERS, sizeof *names);
    uint32_t n_counters = 0;
    if (!names) {
        oom = true;
        goto fail;
    }
    for (uint32_t r = 0; r < n_ranks; r++) {
        if (!heads[r].blob) /* a rank without a summary (a partial merge) */
            continue;
        sm_rbuf_t cr = {.p = heads[r].counter_names, .end = heads[r].blob + heads[r].len};
        for (uint32_t k = 0; heads[r].blob && k < heads[r].n_counters; k++) {
            char name[SM_SUMMARY_COUNTER_NAME];
            uint32_t name_len = sm_get_u32(&cr);
            memcpy(name, sm_get_bytes(&cr, name_len), name_len);
            name[name_len] = '\0';
            uint32_t j = 0;
            while (j < n_counters && strcmp(names[j], name) != 0)
                j++;
            if (j == n_counters && n_counters < SM_SUMMARY_MAX_COUNTERS)
                memcpy(names[n_counters++], name, sizeof name);
            heads[r].counter_map[k] = j < SM_SUMMARY_MAX_COUNTERS ? j : 0;
        }
    }
    im = sm_summary_create((uint32_t)members, n_ranks, n_counters);
    if (im)
        memcpy(im->pub.counter_names, names, n_counters * sizeof *names);
    free(names);
    if (!im || !(im->paths = malloc((path_regions ? path_regions : 1) * sizeof *im->paths))) {
        oom = true;
        goto fail;
    }
    /* The job's GPU metrics, the same way; values in one array. */
    uint64_t gpu_values = 0;
    for (uint32_t r = 0; r < n_ranks; r++) {
        if (!heads[r].blob || !heads[r].n_gpu_metrics)
            continue;
        if (!(heads[r].gpu_map = calloc(heads[r].n_gpu_metrics, sizeof *heads[r].gpu_map))) {
            oom = true;
            goto fail;
        }
        gpu_values += heads[r].n_gpu_values;
        sm_rbuf_t gr = {.p = heads[r].gpu_names, .end = heads[r].blob + heads[r].len};
        for (uint32_t k = 0; k < heads[r].n_gpu_metrics; k++) {
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
                if (!grown) {
                    oom = true;
                    goto fail;
                }
                im->pub.gpu_metric_names = grown;
                memcpy(grown[j], name, sizeof name);
                im->pub.n_gpu_metrics++;
            }
            heads[r].gpu_map[k] = j < SM_SUMMARY_MAX_GPU_METRICS ? j : 0;
        }
    }
    if (gpu_values && !(im->pub.gpu_values = malloc(gpu_values * sizeof *im->pub.gpu_values))) {
        oom = true;
        goto fail;
    }
    sm_region_id_t *pool = im->paths;
    uint32_t base = 0;
    bool first = true;
    for (uint32_t r = 0; r < n_ranks; r++) {
        im->pub.rank_first_member[r] = base;
        if (!heads[r].blob)
            continue;
        im->pub.rank_ns_per_tick[r] = heads[r].ns_per_tick;
        if (first)
            im->pub.ns_per_tick = heads[r].ns_per_tick;
        first = false;
        sm_blob_head_t h;
        if (!sm_blob_read(&heads[r], r, &h, &work, im, base, &pool, &oom)) {
            bad_rank = r; /* only out of memory: the blob was checked */
            goto fail;
        }
        base += h.n_members;
    }
    im->pub.rank_first_member[n_ranks] = base;
    sm_summary_link_creators(&im->pub, true);
    sm_summary_built(im);
    for (uint32_t r = 0; r < n_ranks; r++)
        free(heads[r].gpu_map);
    free(heads);
    free(work.keys);
    free(work.perm);
    free(work.at);
    return &im->pub;

fail:
    if (oom)
        sm_error("building the job's profile summary failed: out of memory");
    else if (bad_rank != SM_INVALID_ID)
        sm_error("the profile summary of rank %u is malformed (%s); no job profile written",
                 (unsigned)bad_rank, sm_blob_why ? sm_blob_why : "?");
    else
        sm_error("the profile summaries are malformed (%s); no job profile written",
                 sm_blob_why ? sm_blob_why : "?");
    if (im)
        sm_profile_summary_free(&im->pub);
    for (uint32_t r = 0; r < n_ranks; r++)
        free(heads[r].gpu_map);
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
    bool ok = sm_blob_read(&known, SM_INVALID_ID, &h, &work, NULL, 0, NULL, &oom);
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

/* ---------------------------------------------------------------- reading */

typedef enum {
    SM_VALUE_INCL,
    SM_VALUE_EXCL,
    SM_VALUE_VISITS,
    SM_VALUE_SENT,
    SM_VALUE_RECEIVED,
    SM_VALUE_COUNTER_INCL, /* of counter k */
    SM_VALUE_COUNTER_EXCL
} sm_value_kind_t;

/* Counter k's sum over one member's visits (inclusive or exclusive). */
static uint64_t sm_member_counter(const sm_profile_summary_t *s, const sm_cpath_member_t *m,
                                  uint32_t k, int exclusive)
{
    return m->counters && k < s->n_counters ? m->counters[exclusive ? s->n_counters + k : k].sum
                                            : 0;
}

/* ... summed over members [first, last). */
static uint64_t sm_members_counter(const sm_profile_summary_t *s, const sm_cpath_t *p,
                                   uint32_t first, uint32_t last, uint32_t k, int exclusive)
{
    uint64_t sum = 0;
    for (uint32_t i = first; i < last; i++)
        sum += sm_member_counter(s, &p->members[i], k, exclusive);
    return sum;
}

/* Welford's update: one pass, no cancellation when values are large and close
 * (time sums in ns of many similar threads). */
typedef struct sm_spread_acc {
    sm_spread_t r;
    double mean, m2;
} sm_spread_acc_t;

static void sm_spread_begin(sm_spread_acc_t *a)
{
    memset(a, 0, sizeof *a);
    a->r.min_member = a->r.max_member = SM_INVALID_ID;
}

static void sm_spread_add(sm_spread_acc_t *a, double x, uint32_t who)
{
    sm_spread_t *r = &a->r;
    r->n++;
    /* Strict comparisons: the lowest member (rank) wins a tie. */
    if (r->n == 1 || x < r->min) {
        r->min = x;
        r->min_member = who;
    }
    if (r->n == 1 || x > r->max) {
        r->max = x;
        r->max_member = who;
    }
    double d = x - a->mean;
    a->mean += d / r->n;
    a->m2 += d * (x - a->mean);
}

static sm_spread_t sm_spread_end(sm_spread_acc_t *a)
{
    if (a->r.n) {
        a->r.mean = a->mean;
        a->r.stddev = a->m2 > 0 ? sqrt(a->m2 / a->r.n) : 0.0; /* population */
    }
    return a->r;
}

/* Across the members that visited p; k: the counter of the counter kinds. */
static sm_spread_t sm_cpath_spread(const sm_profile_summary_t *s, const sm_cpath_t *p,
                                   sm_value_kind_t kind, uint32_t k)
{
    sm_spread_acc_t a;
    sm_spread_begin(&a);
    for (uint32_t i = 0; i < s->n_members; i++) {
        const sm_cpath_member_t *m = &p->members[i];
        if (m->visits == 0)
            continue;
        double npt = sm_summary_member_ns_per_tick(s, i);
        double x = kind == SM_VALUE_VISITS ? (double)m->visits
                 : kind == SM_VALUE_INCL   ? (double)m->incl.sum * npt
                 : kind == SM_VALUE_EXCL   ? (double)m->excl.sum * npt
                 : (double)sm_member_counter(s, m, k, kind == SM_VALUE_COUNTER_EXCL);
        sm_spread_add(&a, x, i);
    }
    return sm_spread_end(&a);
}

sm_spread_t sm_cpath_spread_time(const sm_profile_summary_t *s, const sm_cpath_t *p,
                                 int exclusive)
{
    return sm_cpath_spread(s, p, exclusive ? SM_VALUE_EXCL : SM_VALUE_INCL, 0);
}

sm_spread_t sm_cpath_spread_visits(const sm_profile_summary_t *s, const sm_cpath_t *p)
{
    return sm_cpath_spread(s, p, SM_VALUE_VISITS, 0);
}

void sm_cpath_rank_total(const sm_profile_summary_t *s, const sm_cpath_t *p, uint32_t rank,
                         sm_cpath_rank_total_t *out)
{
    memset(out, 0, sizeof *out);
    if (rank >= s->n_ranks)
        return;
    /* Ticks add up exactly within a rank (one clock); ns only at the end. */
    uint64_t incl = 0, excl = 0;
    for (uint32_t i = s->rank_first_member[rank]; i < s->rank_first_member[rank + 1]; i++) {
        const sm_cpath_member_t *m = &p->members[i];
        out->threads += m->visits != 0;
        out->visits += m->visits;
        incl += m->incl.sum;
        excl += m->excl.sum;
        out->bytes_sent += m->bytes_sent;
        out->bytes_received += m->bytes_received;
    }
    out->incl_ns = (double)incl * s->rank_ns_per_tick[rank];
    out->excl_ns = (double)excl * s->rank_ns_per_tick[rank];
}

static sm_spread_t sm_cpath_spread_ranks(const sm_profile_summary_t *s, const sm_cpath_t *p,
                                         sm_value_kind_t kind, uint32_t k)
{
    sm_spread_acc_t a;
    sm_spread_begin(&a);
    for (uint32_t r = 0; r < s->n_ranks; r++) {
        sm_cpath_rank_total_t t;
        sm_cpath_rank_total(s, p, r, &t);
        if (t.threads == 0)
            continue;
        double x = kind == SM_VALUE_INCL   ? t.incl_ns
                 : kind == SM_VALUE_EXCL   ? t.excl_ns
                 : kind == SM_VALUE_VISITS ? (double)t.visits
                 : kind == SM_VALUE_SENT   ? (double)t.bytes_sent
                 : kind == SM_VALUE_RECEIVED ? (double)t.bytes_received
                 : (double)sm_cpath_rank_counter(s, p, r, k, kind == SM_VALUE_COUNTER_EXCL);
        sm_spread_add(&a, x, r);
    }
    return sm_spread_end(&a);
}

sm_spread_t sm_cpath_spread_ranks_time(const sm_profile_summary_t *s, const sm_cpath_t *p,
                                       int exclusive)
{
    return sm_cpath_spread_ranks(s, p, exclusive ? SM_VALUE_EXCL : SM_VALUE_INCL, 0);
}

sm_spread_t sm_cpath_spread_ranks_visits(const sm_profile_summary_t *s, const sm_cpath_t *p)
{
    return sm_cpath_spread_ranks(s, p, SM_VALUE_VISITS, 0);
}

sm_spread_t sm_cpath_spread_ranks_bytes(const sm_profile_summary_t *s, const sm_cpath_t *p,
                                        int received)
{
    return sm_cpath_spread_ranks(s, p, received ? SM_VALUE_RECEIVED : SM_VALUE_SENT, 0);
}

sm_spread_t sm_cpath_spread_counter(const sm_profile_summary_t *s, const sm_cpath_t *p,
                                    uint32_t k, int exclusive)
{
    return sm_cpath_spread(s, p, exclusive ? SM_VALUE_COUNTER_EXCL : SM_VALUE_COUNTER_INCL, k);
}

sm_spread_t sm_cpath_spread_ranks_counter(const sm_profile_summary_t *s, const sm_cpath_t *p,
                                          uint32_t k, int exclusive)
{
    return sm_cpath_spread_ranks(s, p, exclusive ? SM_VALUE_COUNTER_EXCL : SM_VALUE_COUNTER_INCL,
                                 k);
}

uint64_t sm_cpath_rank_counter(const sm_profile_summary_t *s, const sm_cpath_t *p, uint32_t rank,
                               uint32_t k, int exclusive)
{
    if (rank >= s->n_ranks)
        return 0;
    return sm_members_counter(s, p, s->rank_first_member[rank], s->rank_first_member[rank + 1],
                              k, exclusive);
}

uint64_t sm_cpath_counter_total(const sm_profile_summary_t *s, const sm_cpath_t *p, uint32_t k,
                                int exclusive)
{
    return sm_members_counter(s, p, 0, s->n_members, k, exclusive);
}

int sm_summary_counter_index(const sm_profile_summary_t *s, const char *name)
{
    for (uint32_t k = 0; k < s->n_counters; k++)
        if (!strcmp(s->counter_names[k], name))
            return (int)k;
    return -1;
}

/* ---------------------------------------------------------------- region totals */

typedef struct sm_totals_walk {
    const sm_profile_summary_t *s;
    sm_region_select_fn select;
    void *arg;
    uint32_t *slot_of;      /* region -> slot, SM_INVALID_ID: none yet */
    uint32_t max_region;    /* first walk */
    bool any;
    sm_region_total_t *totals;
    uint32_t n_slots;
    double *rank_time;      /* [slot][rank] */
    uint8_t *rank_called;   /* [slot][rank] */
} sm_totals_walk_t;

static bool sm_totals_selected(sm_totals_walk_t *x, const sm_cpath_t *p)
{
    return p->depth > 0 && p->region != SM_INVALID_ID && x->select(p->region, x->arg);
}

static void sm_totals_scan(const sm_cpath_t *p, void *arg)
{
    sm_totals_walk_t *x = arg;
    if (!sm_totals_selected(x, p))
        return;
    if (!x->any || p->region > x->max_region)
        x->max_region = p->region;
    x->any = true;
}

static void sm_totals_slot(const sm_cpath_t *p, void *arg)
{
    sm_totals_walk_t *x = arg;
    if (sm_totals_selected(x, p) && x->slot_of[p->region] == SM_INVALID_ID)
        x->slot_of[p->region] = x->n_slots++;
}

static void sm_totals_add(const sm_cpath_t *p, void *arg)
{
    sm_totals_walk_t *x = arg;
    if (!sm_totals_selected(x, p))
        return;
    const sm_profile_summary_t *s = x->s;
    uint32_t slot = x->slot_of[p->region];
    sm_region_total_t *t = &x->totals[slot];
    t->region = p->region;
    /* A call of the region inside itself is already in the outer call's
     * inclusive time. */
    bool nested = false;
    for (const sm_cpath_t *q = p->parent; q && q->depth > 0 && !nested; q = q->parent)
        nested = q->region == p->region;
    for (uint32_t i = 0; i < s->n_members; i++) {
        const sm_cpath_member_t *m = &p->members[i];
        if (!sm_member_on_path(m))
            continue;
        uint32_t r = s->member_rank[i];
        size_t k = (size_t)slot * s->n_ranks + r;
        t->calls += m->visits;
        t->bytes_sent += m->bytes_sent;
        t->bytes_received += m->bytes_received;
        if (m->visits)
            x->rank_called[k] = 1;
        if (!nested)
            x->rank_time[k] += (double)m->incl.sum * s->rank_ns_per_tick[r];
    }
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
    sm_totals_walk_t x = {.s = s, .select = select, .arg = arg};
    sm_cpath_walk(&s->root, sm_totals_scan, &x);
    if (!x.any)
        return NULL;
    x.slot_of = malloc(((size_t)x.max_region + 1) * sizeof *x.slot_of);
    if (!x.slot_of)
        goto oom;
    memset(x.slot_of, 0xff, ((size_t)x.max_region + 1) * sizeof *x.slot_of);
    sm_cpath_walk(&s->root, sm_totals_slot, &x);
    size_t cells = (size_t)x.n_slots * s->n_ranks;
    x.totals = calloc(x.n_slots, sizeof *x.totals);
    x.rank_time = calloc(cells, sizeof *x.rank_time);
    x.rank_called = calloc(cells, 1);
    if (!x.totals || !x.rank_time || !x.rank_called)
        goto oom;
    sm_cpath_walk(&s->root, sm_totals_add, &x);
    for (uint32_t k = 0; k < x.n_slots; k++) {
        sm_region_total_t *t = &x.totals[k];
        t->max_rank = SM_INVALID_ID;
        for (uint32_t r = 0; r < s->n_ranks; r++) {
            size_t c = (size_t)k * s->n_ranks + r;
            if (!x.rank_called[c])
                continue;
            double v = x.rank_time[c];
            t->time_ns += v;
            t->ranks++;
            if (t->max_rank == SM_INVALID_ID || v > t->max_rank_ns) {
                t->max_rank_ns = v;
                t->max_rank = r;
            }
        }
        t->mean_rank_ns = t->ranks ? t->time_ns / t->ranks : 0.0;
    }
    qsort(x.totals, x.n_slots, sizeof *x.totals, sm_region_total_compare);
    free(x.slot_of);
    free(x.rank_time);
    free(x.rank_called);
    *n = x.n_slots;
    return x.totals;
oom:
    free(x.slot_of);
    free(x.totals);
    free(x.rank_time);
    free(x.rank_called);
    *n = UINT32_MAX;
    return NULL;
}

/* Visits root itself, then its subtree: pre-order, without recursion. */
void sm_cpath_walk(const sm_cpath_t *root, sm_cpath_visit_fn fn, void *arg)
{
    const sm_cpath_t *p = root;
    while (p) {
        fn(p, arg);
        if (p->first_child) {
            p = p->first_child;
            continue;
        }
        while (p != root && !p->next_sibling)
            p = p->parent;
        p = p == root ? NULL : p->next_sibling;
    }
}
