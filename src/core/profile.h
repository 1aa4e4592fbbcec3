/* The per-location call-path profile: a tree of nodes (one per distinct path of
 * regions) with visits and inclusive/exclusive time statistics.  Statistics
 * keep exact integer sums (time in ticks, squares in 128 bits), so the variance
 * computed from them at the end has no cancellation error, and two of them
 * merge by addition (threads, ranks). */
#ifndef SM_PROFILE_H
#define SM_PROFILE_H

#include <stdint.h>
#include "compiler.h"
#include "definitions.h"

typedef struct sm_stat {
    uint64_t sum;
    uint64_t min; /* UINT64_MAX when empty */
    uint64_t max;
    unsigned __int128 sumsq;
} sm_stat_t;

typedef struct sm_profile_node {
    /* --- hot: what a visit's enter and leave touch, in the node's first two
     * cache lines (nodes are cache-line aligned) --- */
    sm_region_id_t region;            /* SM_INVALID_ID for the root */
    uint32_t depth;                   /* root 0, its children 1, ... */
    struct sm_profile_node *last_hit; /* the child found last: loops hit it */
    uint64_t visits;
    sm_stat_t incl;
    sm_stat_t excl;
    /* --- cold --- */
    struct sm_profile_node *parent;
    struct sm_profile_node *first_child;
    struct sm_profile_node *next_sibling;
    /* Data moved inside this region's own calls (messages, collectives,
     * I/O, one-sided), added by adapters through the event layer. */
    uint64_t bytes_sent;
    uint64_t bytes_received;
    /* Counter values (PAPI events) when the thread counts n of them:
     * [0, n) inclusive, [n, 2n) exclusive, per visit; NULL otherwise. */
    sm_stat_t *counters;
} __attribute__((aligned(64))) sm_profile_node_t;

typedef struct sm_profile_block sm_profile_block_t;

/* Depth of the node that stands for the regions entered below the depth
 * limit (sm_profile_max_depth): their time stays with the ancestor at the
 * limit, as its own (exclusive) time. */
#define SM_PROFILE_FOLD_DEPTH UINT32_MAX

/* Call paths deeper than this fold into their ancestor at this depth
 * (SYSMEASURE_PROFILE_DEPTH); set once at init. */
extern uint32_t sm_profile_max_depth SM_HIDDEN;

typedef struct sm_profile {
    sm_profile_node_t root;
    sm_profile_node_t fold;     /* see SM_PROFILE_FOLD_DEPTH; not in the tree */
    uint64_t folded_enters;     /* enters folded so */
    sm_profile_block_t *blocks; /* node arena, never freed while running */
    uint32_t free_in_block;
    uint32_t n_counters; /* nodes made from now on get counter statistics */
    uint64_t node_count;
} sm_profile_t;

void sm_profile_init(sm_profile_t *p) SM_HIDDEN;
void sm_profile_free(sm_profile_t *p) SM_HIDDEN;

/* The child of parent for region, created if new. */
/* A forked child measures on as a process of its own: the tree holds
 * only the path of the regions open at the fork (open[0] the root's child,
 * outermost first), every statistic cleared; the nodes stay where they
 * are.  A node of open that is not its predecessor's child (folded) ends
 * the path kept. */
void sm_profile_restart(sm_profile_t *p, sm_profile_node_t *const *open, uint32_t n_open)
    SM_HIDDEN;

sm_profile_node_t *sm_profile_child(sm_profile_t *p, sm_profile_node_t *parent,
                                    sm_region_id_t region) SM_HIDDEN;

static inline void sm_stat_clear(sm_stat_t *s)
{
    s->sum = 0;
    s->min = UINT64_MAX;
    s->max = 0;
    s->sumsq = 0;
}

/* Without branches: a new minimum or maximum is rare but comes at random
 * (timing noise), and a mispredicted branch costs more than two stores. */
static inline void sm_stat_add(sm_stat_t *s, uint64_t v)
{
    uint64_t lo = s->min, hi = s->max;
    s->sum += v;
    s->min = v < lo ? v : lo;
    s->max = v > hi ? v : hi;
    s->sumsq += (unsigned __int128)v * v;
}

void sm_stat_merge(sm_stat_t *into, const sm_stat_t *from) SM_HIDDEN;
/* Population variance (divided by n) of n values, in the stat's unit squared. */
double sm_stat_variance(const sm_stat_t *s, uint64_t n) SM_HIDDEN;
double sm_stat_mean(const sm_stat_t *s, uint64_t n) SM_HIDDEN;

/* Statistics of real-valued samples (per-kernel GPU counter values): the
 * count, the launches they stand for (rotate mode: a value covers its
 * turn), sum, min, max and the running mean and sum of squared deviations
 * (Welford; merged by Chan's formula), so equal values give a standard
 * deviation of exactly 0 however large they are.  The one implementation
 * of these statistics: the runtime, the job's merge across ranks and
 * sysmeasure-merge's merge of application-mode passes all use it. */
typedef struct sm_fstat {
    uint64_t n;
    uint64_t covered;
    double sum, mean, m2, min, max;
} sm_fstat_t;

void sm_fstat_clear(sm_fstat_t *s) SM_HIDDEN;
/* One value standing for `covered` launches (0 counts as 1). */
void sm_fstat_add(sm_fstat_t *s, double v, uint64_t covered) SM_HIDDEN;
void sm_fstat_merge(sm_fstat_t *into, const sm_fstat_t *from) SM_HIDDEN;
/* sum / n (0 when empty); population standard deviation. */
double sm_fstat_mean(const sm_fstat_t *s) SM_HIDDEN;
double sm_fstat_stddev(const sm_fstat_t *s) SM_HIDDEN;

/* Depth-first, parents before children, children in creation order. */
typedef void (*sm_profile_visit_fn)(const sm_profile_node_t *node, void *arg);
void sm_profile_walk(const sm_profile_t *p, sm_profile_visit_fn fn, void *arg) SM_HIDDEN;

#endif
