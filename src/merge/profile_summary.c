/* The profile as one tree of call paths, unified across threads and ranks:
 * the tree, local summaries, freeing, and what is read per member.
 *
 * Paths are keyed on the sequence of region ids from the root, so the tree is
 * built by inserting each member's own tree in turn: locally the CPU threads
 * of this process, for the job the threads of every rank as their blobs
 * arrive (region ids already unified), or the paths of reduced blobs.  Child
 * lookup goes through a hash table on (parent, region) so that wide trees
 * and many members stay linear in the number of nodes. */
#include "profile_summary.h"
#include "profile_build.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../core/clock.h"
#include "../core/counters.h"
#include "../util/bytes.h"
#include "../core/events.h"
#include "../core/gpu_counters.h"
#include "../core/location.h"
#include "../util/log.h"

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
sm_cpath_t *sm_summary_child(sm_summary_impl_t *im, sm_cpath_t *parent, sm_region_id_t region)
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
    im->n_paths++;
    return &n->path;
}

bool sm_member_on_path(const sm_cpath_member_t *m)
{
    return m->visits || m->incl.sum || m->excl.sum || m->bytes_sent || m->bytes_received;
}

/* A path seen twice for one member (not expected from one tree, but possible
 * when several trees or blob entries feed one member) adds up. */
void sm_cpath_member_merge(sm_cpath_member_t *into, const sm_cpath_member_t *from)
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

sm_summary_impl_t *sm_summary_create(uint32_t n_members, uint32_t n_ranks, uint32_t n_counters)
{
    sm_summary_impl_t *im = calloc(1, sizeof *im);
    if (!im)
        return NULL;
    im->first_rank = SM_INVALID_ID;
    im->pub.root.region = SM_INVALID_ID;
    im->pub.ns_per_tick = 1.0;
    if (!n_ranks && !n_members) {
        /* An accumulator: statistics only (profile_reduce.c). */
        im->pub.counter_names = calloc(1, sizeof *im->pub.counter_names);
        if (!im->pub.counter_names) {
            free(im);
            return NULL;
        }
        return im;
    }
    size_t nm = n_members ? n_members : 1; /* never malloc(0) */
    im->pub.n_members = n_members;
    im->pub.n_ranks = n_ranks;
    im->pub.per_member = true;
    im->pub.member_location = calloc(nm, sizeof(uint32_t));
    im->pub.member_rank = calloc(nm, sizeof(uint32_t));
    im->pub.member_info = calloc(nm, sizeof(sm_summary_member_t));
    im->pub.rank_first_member = calloc((size_t)n_ranks + 1, sizeof(uint32_t));
    im->pub.rank_ns_per_tick = calloc(n_ranks, sizeof(double));
    im->pub.root.members = malloc(sm_cpath_members_size((uint32_t)nm, n_counters));
    im->pub.n_counters = n_counters;
    im->pub.counter_names = calloc(n_counters ? n_counters : 1, sizeof *im->pub.counter_names);
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

void sm_summary_built(sm_summary_impl_t *im)
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

/* Members of a rank are sorted by location id in a job summary; a local
 * summary's given order may be any, so it searches linearly (few threads,
 * once). */
void sm_summary_link_creators(sm_profile_summary_t *s, bool sorted)
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
    /* The counter sources' (core/counters.h): none in a build without
     * one, which this file need not know. */
    const char *names[SM_SUMMARY_MAX_COUNTERS] = {NULL};
    uint32_t nc = sm_counters_count();
    if (nc > SM_SUMMARY_MAX_COUNTERS)
        nc = SM_SUMMARY_MAX_COUNTERS;
    for (uint32_t i = 0; i < nc; i++)
        names[i] = sm_counters_name(i);
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
    sm_summary_free_stats(s);
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
    free(im->detail);
    free(im);
}

/* ---------------------------------------------------------------- per member */

/* Counter k's sum over one member's visits (inclusive or exclusive). */
static uint64_t sm_member_counter(const sm_profile_summary_t *s, const sm_cpath_member_t *m,
                                  uint32_t k, int exclusive)
{
    return m->counters && k < s->n_counters ? m->counters[exclusive ? s->n_counters + k : k].sum
                                            : 0;
}

void sm_cpath_rank_total(const sm_profile_summary_t *s, const sm_cpath_t *p, uint32_t rank,
                         sm_cpath_rank_total_t *out)
{
    memset(out, 0, sizeof *out);
    if (!s->per_member || rank >= s->n_ranks || !p->members)
        return;
    /* Each thread's ticks to ns once, as the statistics do (profile_stats.h). */
    uint64_t incl = 0, excl = 0;
    double npt = s->rank_ns_per_tick[rank];
    for (uint32_t i = s->rank_first_member[rank]; i < s->rank_first_member[rank + 1]; i++) {
        const sm_cpath_member_t *m = &p->members[i];
        out->threads += m->visits != 0;
        out->visits += m->visits;
        incl += sm_ticks_ns(m->incl.sum, npt);
        excl += sm_ticks_ns(m->excl.sum, npt);
        out->bytes_sent += m->bytes_sent;
        out->bytes_received += m->bytes_received;
    }
    out->incl_ns = (double)incl;
    out->excl_ns = (double)excl;
}

uint64_t sm_cpath_rank_counter(const sm_profile_summary_t *s, const sm_cpath_t *p, uint32_t rank,
                               uint32_t k, int exclusive)
{
    if (!s->per_member || rank >= s->n_ranks || !p->members)
        return 0;
    uint64_t sum = 0;
    for (uint32_t i = s->rank_first_member[rank]; i < s->rank_first_member[rank + 1]; i++)
        sum += sm_member_counter(s, &p->members[i], k, exclusive);
    return sum;
}

int sm_summary_counter_index(const sm_profile_summary_t *s, const char *name)
{
    for (uint32_t k = 0; k < s->n_counters; k++)
        if (!strcmp(s->counter_names[k], name))
            return (int)k;
    return -1;
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
