/* The process's profile as one tree of call paths, unified across threads.
 *
 * Paths are keyed on the sequence of region ids from the root, so the tree is
 * built by inserting each member's own tree in turn: a member is anything with
 * a tree of sm_profile_node_t (here the CPU threads of this process; for the
 * MPI merge, the threads of every rank once region ids are unified).  Child
 * lookup goes through a hash table on (parent, region) so that wide trees and
 * many members stay linear in the number of nodes. */
#include "profile_summary.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "../core/clock.h"
#include "../core/location.h"

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
} sm_summary_impl_t;

static sm_summary_impl_t *sm_summary_impl(sm_profile_summary_t *s)
{
    return (sm_summary_impl_t *)s;
}

static void sm_cpath_members_clear(sm_cpath_member_t *m, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        m[i].visits = 0;
        sm_stat_clear(&m[i].incl);
        sm_stat_clear(&m[i].excl);
    }
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

    uint32_t nm = im->pub.n_members;
    sm_cpath_node_t *n = malloc(sizeof *n + (size_t)nm * sizeof(sm_cpath_member_t));
    if (!n)
        return NULL;
    memset(n, 0, sizeof *n);
    n->path.region = region;
    n->path.depth = parent->depth + 1;
    n->path.parent = parent;
    n->path.members = (sm_cpath_member_t *)(n + 1);
    sm_cpath_members_clear(n->path.members, nm);

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

static void sm_cpath_accumulate(sm_cpath_member_t *m, const sm_profile_node_t *n)
{
    /* A path seen twice for one member (not expected from one tree, but
     * possible when several trees feed one member) adds up. */
    m->visits += n->visits;
    sm_stat_merge(&m->incl, &n->incl);
    sm_stat_merge(&m->excl, &n->excl);
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
        sm_cpath_accumulate(&c->members[member], n);
    }
}

/* An empty summary for n_members members. */
static sm_summary_impl_t *sm_summary_create(uint32_t n_members)
{
    sm_summary_impl_t *im = calloc(1, sizeof *im);
    if (!im)
        return NULL;
    size_t nm = n_members ? n_members : 1; /* never malloc(0) */
    im->pub.n_members = n_members;
    im->pub.member_location = calloc(nm, sizeof(uint32_t));
    im->pub.root.members = malloc(nm * sizeof(sm_cpath_member_t));
    im->pub.root.region = SM_INVALID_ID;
    im->pub.ns_per_tick = sm_clock_ns_per_tick();
    if (!im->pub.member_location || !im->pub.root.members) {
        sm_profile_summary_free(&im->pub);
        return NULL;
    }
    sm_cpath_members_clear(im->pub.root.members, n_members);
    return im;
}

static bool sm_location_is_member(const sm_location_t *loc)
{
    return loc && loc->type == SM_LOCATION_CPU_THREAD && loc->profiling;
}

sm_profile_summary_t *sm_profile_summarize(void)
{
    uint32_t count = sm_location_count();
    uint32_t n_members = 0;
    for (uint32_t id = 0; id < count; id++)
        if (sm_location_is_member(sm_location_get(id)))
            n_members++;

    sm_summary_impl_t *im = sm_summary_create(n_members);
    if (!im)
        return NULL;
    uint32_t member = 0;
    for (uint32_t id = 0; id < count && member < n_members; id++) {
        const sm_location_t *loc = sm_location_get(id);
        if (!sm_location_is_member(loc))
            continue;
        im->pub.member_location[member] = loc->id;
        if (sm_summary_add_tree(im, member, &loc->profile.root) != 0) {
            sm_profile_summary_free(&im->pub);
            return NULL;
        }
        member++;
    }
    /* The lookup table only serves building. */
    free(im->table);
    im->table = NULL;
    im->table_size = im->table_used = 0;
    return &im->pub;
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
    free(im->table);
    free(im);
}

/* ---------------------------------------------------------------- reading */

typedef enum { SM_VALUE_INCL, SM_VALUE_EXCL, SM_VALUE_VISITS } sm_value_kind_t;

/* Welford's update: one pass, no cancellation when values are large and close
 * (time sums in ns of many similar threads). */
static sm_spread_t sm_cpath_spread(const sm_profile_summary_t *s, const sm_cpath_t *p,
                                   sm_value_kind_t kind)
{
    sm_spread_t r;
    memset(&r, 0, sizeof r);
    r.min_member = r.max_member = SM_INVALID_ID;
    double mean = 0, m2 = 0;
    for (uint32_t i = 0; i < s->n_members; i++) {
        const sm_cpath_member_t *m = &p->members[i];
        if (m->visits == 0)
            continue;
        double x = kind == SM_VALUE_VISITS ? (double)m->visits
                 : (double)(kind == SM_VALUE_INCL ? m->incl.sum : m->excl.sum) * s->ns_per_tick;
        r.n++;
        /* Strict comparisons: the lowest member wins a tie. */
        if (r.n == 1 || x < r.min) {
            r.min = x;
            r.min_member = i;
        }
        if (r.n == 1 || x > r.max) {
            r.max = x;
            r.max_member = i;
        }
        double d = x - mean;
        mean += d / r.n;
        m2 += d * (x - mean);
    }
    if (r.n) {
        r.mean = mean;
        r.stddev = m2 > 0 ? sqrt(m2 / r.n) : 0.0; /* population */
    }
    return r;
}

sm_spread_t sm_cpath_spread_time(const sm_profile_summary_t *s, const sm_cpath_t *p,
                                 int exclusive)
{
    return sm_cpath_spread(s, p, exclusive ? SM_VALUE_EXCL : SM_VALUE_INCL);
}

sm_spread_t sm_cpath_spread_visits(const sm_profile_summary_t *s, const sm_cpath_t *p)
{
    return sm_cpath_spread(s, p, SM_VALUE_VISITS);
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
