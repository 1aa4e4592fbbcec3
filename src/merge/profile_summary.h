/* The profile of the process as one tree of call paths, unified across its
 * locations (threads): for each path, each member's visits and time statistics,
 * and the spread of a value across members.  Merging across ranks (MPI) will
 * build on the same structure. */
#ifndef SM_PROFILE_SUMMARY_H
#define SM_PROFILE_SUMMARY_H

#include <stdint.h>
#include "../core/compiler.h"
#include "../core/definitions.h"
#include "../core/profile.h"

typedef struct sm_cpath_member {
    uint64_t visits;  /* 0: this member never was on the path */
    sm_stat_t incl;   /* ticks */
    sm_stat_t excl;   /* ticks */
} sm_cpath_member_t;

typedef struct sm_cpath {
    sm_region_id_t region; /* SM_INVALID_ID for the root */
    uint32_t depth;        /* root 0 */
    struct sm_cpath *parent;
    struct sm_cpath *first_child;
    struct sm_cpath *next_sibling;
    sm_cpath_member_t *members; /* [n_members] */
} sm_cpath_t;

typedef struct sm_profile_summary {
    uint32_t n_members;
    uint32_t *member_location; /* location id of each member */
    sm_cpath_t root;
    double ns_per_tick;
} sm_profile_summary_t;

/* Across the members that visited a path: mean, min, max and population
 * standard deviation of one value, with the members that hold min and max. */
typedef struct sm_spread {
    uint32_t n;
    double mean, min, max, stddev;
    uint32_t min_member, max_member;
} sm_spread_t;

/* Built from every CPU-thread location with a profile. */
sm_profile_summary_t *sm_profile_summarize(void) SM_HIDDEN;
void sm_profile_summary_free(sm_profile_summary_t *s) SM_HIDDEN;

/* Spread across members of the inclusive (or exclusive) time sum, in ns. */
sm_spread_t sm_cpath_spread_time(const sm_profile_summary_t *s, const sm_cpath_t *p,
                                 int exclusive) SM_HIDDEN;
/* Spread across members of the visit count. */
sm_spread_t sm_cpath_spread_visits(const sm_profile_summary_t *s, const sm_cpath_t *p) SM_HIDDEN;

/* Depth-first, parents first, children in first-seen order. */
typedef void (*sm_cpath_visit_fn)(const sm_cpath_t *p, void *arg);
void sm_cpath_walk(const sm_cpath_t *root, sm_cpath_visit_fn fn, void *arg) SM_HIDDEN;

#endif
