/* The profile as one tree of call paths, unified across threads and, at
 * finalize, across the ranks of the job.
 *
 * Each process builds a local summary (members = its CPU threads and GPU
 * streams, region ids = its own) and serializes it with region ids mapped
 * to the job's unified ids (profile_blob.c).  The job summary at rank 0 is
 * reduced up a tree from those blobs (profile_reduce.h): per path it holds
 * mergeable statistics across threads and across ranks (sm_cpath_t.stats,
 * profile_stats.h), whose size is that of the distinct paths, not of ranks
 * x paths.  While the job has at most SM_PROFILE_DETAIL_MAX members, the
 * per-member values come along (per_member: members = every thread of every
 * rank, ordered by rank, then location id).  A process without MPI goes
 * through the same path as a job of one rank.
 *
 * For each path and member: visits, inclusive/exclusive time statistics (in
 * the member's own clock ticks: ranks may run on hosts with different tick
 * lengths), bytes moved and, when threads count PAPI events, each event's
 * inclusive/exclusive statistics.  Spreads summarise a value across members
 * (threads) or across ranks (per rank, the sum over its threads).
 *
 * Counters are named: each process lists the events it counted, and the job
 * summary's list is their union in rank order (a rank that dropped an event
 * simply has no values for it). */
#ifndef SM_PROFILE_SUMMARY_H
#define SM_PROFILE_SUMMARY_H

#include <stdbool.h>
#include <stdint.h>
#include "../core/compiler.h"
#include "../core/definitions.h"
#include "../core/profile.h"
#include "profile_stats.h"
#include "unify.h"

typedef struct sm_cpath_member {
    uint64_t visits;  /* 0: this member never was on the path */
    sm_stat_t incl;   /* ticks of the member's rank */
    sm_stat_t excl;   /* ticks of the member's rank */
    uint64_t bytes_sent;     /* in the path's own calls */
    uint64_t bytes_received;
    /* [2 x n_counters]: inclusive, then exclusive counts per visit; NULL
     * when the summary has no counters. */
    sm_stat_t *counters;
} sm_cpath_member_t;

#define SM_SUMMARY_MAX_COUNTERS 64
#define SM_SUMMARY_COUNTER_NAME 128

typedef struct sm_cpath {
    sm_region_id_t region; /* SM_INVALID_ID for the root */
    uint32_t depth;        /* root 0 */
    struct sm_cpath *parent;
    struct sm_cpath *first_child;
    struct sm_cpath *next_sibling;
    sm_cpath_member_t *members; /* [n_members] */
    sm_cpath_stats_t *stats;    /* the job's statistics (a job summary; NULL in a local one) */
} sm_cpath_t;

/* What the writers need about a member without the live location. */
typedef struct sm_summary_member {
    char name[64];                       /* the location's name */
    uint32_t creator;                    /* member that created this thread, or
                                          * SM_INVALID_ID (none, or not a member) */
    uint32_t creator_location;           /* its location id on the same rank, or
                                          * SM_INVALID_ID when no thread created it */
    uint32_t creation_depth;             /* regions open in the creator then */
    const sm_region_id_t *creation_path; /* those regions, outermost first */
} sm_summary_member_t;

/* Per-kernel GPU counter statistics on a stream member's path (the kernel
 * under the host path that launched it): one per (path, member, metric). */
#define SM_SUMMARY_MAX_GPU_METRICS 256
typedef struct sm_summary_gpu_value {
    const sm_cpath_t *path;
    uint32_t member;
    uint32_t metric; /* into gpu_metric_names */
    sm_fstat_t st;
} sm_summary_gpu_value_t;

typedef struct sm_profile_summary {
    uint32_t n_members;
    uint32_t *member_location;        /* location id of each member (on its rank) */
    uint32_t *member_rank;            /* rank of each member; 0 in a local summary */
    sm_summary_member_t *member_info; /* [n_members] */
    uint32_t n_ranks;                 /* 1 in a local summary */
    /* Members of rank r are [rank_first_member[r], rank_first_member[r + 1]). */
    uint32_t *rank_first_member;      /* [n_ranks + 1] */
    double *rank_ns_per_tick;         /* [n_ranks]; 0 for a rank without a blob */
    sm_cpath_t root;
    double ns_per_tick;               /* of the lowest rank present (for headers) */
    uint32_t n_counters;              /* PAPI events with values */
    char (*counter_names)[SM_SUMMARY_COUNTER_NAME]; /* [n_counters] */
    /* GPU counters per kernel launch (gpu_counters.h), union of the ranks'
     * metrics in rank order; values in no particular order. */
    uint32_t n_gpu_metrics;
    char (*gpu_metric_names)[SM_SUMMARY_COUNTER_NAME]; /* [n_gpu_metrics] */
    uint64_t n_gpu_values;
    sm_summary_gpu_value_t *gpu_values; /* per member: a local summary, or per_member */
    /* ---- the job's statistics (profile_stats.h), in every job summary */
    bool per_member;           /* members, member_* and rank_* hold every member */
    uint64_t n_threads;        /* members of every rank (also beyond the per-member cap) */
    uint32_t ranks_present;    /* ranks with a profile */
    uint32_t n_bins;           /* sm_rank_bins(n_ranks) */
    sm_job_bin_t *bins;        /* [n_bins] */
    uint32_t n_region_stats;
    sm_region_stat_t *region_stats; /* by region id */
    uint64_t n_gpu_rows;
    sm_gpu_row_t *gpu_rows;    /* per (path, metric), then per (kernel, metric) */
} sm_profile_summary_t;

/* Across the members (or ranks) that visited a path: mean, min, max and
 * population standard deviation of one value, with the members (or ranks)
 * that hold min and max; on a tie, the lowest. */
typedef struct sm_spread {
    uint32_t n;
    double mean, min, max, stddev;
    /* Ranks, for the across-ranks spreads; across threads the member
     * (SM_INVALID_ID without per-member values: then min_rank, min_loc). */
    uint32_t min_member, max_member;
    uint32_t min_rank, min_loc, max_rank, max_loc; /* loc: SM_INVALID_ID across ranks */
    double sum;
} sm_spread_t;

/* One rank's share of a path: the sums over its threads. */
typedef struct sm_cpath_rank_total {
    uint32_t threads; /* threads of the rank that visited the path */
    uint64_t visits;
    double incl_ns, excl_ns;
    uint64_t bytes_sent, bytes_received;
} sm_cpath_rank_total_t;

/* A thread as the local summary reads it (see sm_location_t). */
typedef struct sm_summary_thread {
    uint32_t location;
    const char *name;
    uint32_t creator;                    /* location id, or SM_INVALID_ID */
    uint32_t creator_depth;
    const sm_region_id_t *creator_path;
    const sm_profile_node_t *root;       /* its call-path tree */
} sm_summary_thread_t;

/* The local summary of every CPU-thread location with a profile. */
sm_profile_summary_t *sm_profile_summarize(void) SM_HIDDEN;
/* The same from given trees (members in the given order; tests). */
sm_profile_summary_t *sm_profile_summary_from_threads(const sm_summary_thread_t *threads,
                                                      uint32_t n, double ns_per_tick) SM_HIDDEN;
/* ... whose nodes carry statistics of these counters (profile.h). */
sm_profile_summary_t *sm_profile_summary_from_counting_threads(
    const sm_summary_thread_t *threads, uint32_t n, double ns_per_tick, uint32_t n_counters,
    const char *const *counter_names) SM_HIDDEN;
void sm_profile_summary_free(sm_profile_summary_t *s) SM_HIDDEN;
/* Adds a GPU counter's statistics to member's path (parents first, from the
 * root; regions[depth - 1] the kernel), which must exist; metric by name.
 * 0; -1 when the path is not in the summary or out of memory. */
int sm_profile_summary_add_gpu(sm_profile_summary_t *s, uint32_t member,
                               const sm_region_id_t *regions, uint32_t depth, const char *metric,
                               const sm_fstat_t *st) SM_HIDDEN;

/* A local summary as a blob for the reduction, region ids mapped through
 * maps->regions (NULL maps: ids kept; an id beyond the map becomes
 * SM_INVALID_ID, named "?").  malloc'd; NULL when out of memory. */
void *sm_profile_summary_serialize(const sm_profile_summary_t *s, const sm_id_maps_t *maps,
                                   uint32_t rank, uint64_t *len) SM_HIDDEN;
/* The job summary from every rank's blob, as records {rank, len, blob} of
 * sm_tree_gather (sysmeasure-merge: one process holds them all), reduced
 * by the same merge as the live tree (profile_reduce.c).  NULL when out of
 * memory or when a record is malformed, repeats a rank or names a rank >=
 * n_ranks (message printed).  Ranks without a record, or with an empty one
 * (a rank that could not build its blob), have no members. */
sm_profile_summary_t *sm_profile_summary_from_blobs(const void *seq, uint64_t len,
                                                    uint32_t n_ranks) SM_HIDDEN;
/* Maps the region ids of a blob in place through regions[n_regions] (a
 * per-process file's blob, written with its own ids, into the job's ids;
 * an id beyond the map becomes SM_INVALID_ID).  0, or -1 when the blob is
 * malformed (then it is left as it was). */
int sm_profile_summary_remap(void *blob, uint64_t len, const uint32_t *regions,
                             uint32_t n_regions) SM_HIDDEN;

static inline double sm_summary_member_ns_per_tick(const sm_profile_summary_t *s, uint32_t m)
{
    return s->rank_ns_per_tick[s->member_rank[m]];
}

/* A member that has anything on the path (visits, time, bytes). */
bool sm_member_on_path(const sm_cpath_member_t *m) SM_HIDDEN;

/* The readers below need a job summary (stats).  Across members (threads)
 * of the inclusive (or exclusive) time sum, in ns. */
sm_spread_t sm_cpath_spread_time(const sm_profile_summary_t *s, const sm_cpath_t *p,
                                 int exclusive) SM_HIDDEN;
/* Across members of the visit count. */
sm_spread_t sm_cpath_spread_visits(const sm_profile_summary_t *s, const sm_cpath_t *p) SM_HIDDEN;
/* Across members of counter k's inclusive (or exclusive) sum. */
sm_spread_t sm_cpath_spread_counter(const sm_profile_summary_t *s, const sm_cpath_t *p,
                                    uint32_t k, int exclusive) SM_HIDDEN;
/* Across ranks of counter k's per-rank inclusive (or exclusive) sum. */
sm_spread_t sm_cpath_spread_ranks_counter(const sm_profile_summary_t *s, const sm_cpath_t *p,
                                          uint32_t k, int exclusive) SM_HIDDEN;
/* Counter k's inclusive (exclusive) sum over rank r's members on p
 * (per_member; 0 otherwise). */
uint64_t sm_cpath_rank_counter(const sm_profile_summary_t *s, const sm_cpath_t *p, uint32_t rank,
                               uint32_t k, int exclusive) SM_HIDDEN;
/* Counter k's inclusive (exclusive) sum over every member on the path. */
uint64_t sm_cpath_counter_total(const sm_profile_summary_t *s, const sm_cpath_t *p, uint32_t k,
                                int exclusive) SM_HIDDEN;
/* Value v summed over every thread of every rank on the path. */
uint64_t sm_cpath_total(const sm_profile_summary_t *s, const sm_cpath_t *p,
                        sm_pvalue_t v) SM_HIDDEN;
/* Index of the counter of that name, or -1. */
int sm_summary_counter_index(const sm_profile_summary_t *s, const char *name) SM_HIDDEN;

/* Rank r's sums over its threads on p (per_member; zeros otherwise). */
void sm_cpath_rank_total(const sm_profile_summary_t *s, const sm_cpath_t *p, uint32_t rank,
                         sm_cpath_rank_total_t *out) SM_HIDDEN;
/* Across the ranks that visited p (any of their threads) of the per-rank
 * sums: inclusive/exclusive time in ns, visits, bytes sent (or received). */
sm_spread_t sm_cpath_spread_ranks_time(const sm_profile_summary_t *s, const sm_cpath_t *p,
                                       int exclusive) SM_HIDDEN;
sm_spread_t sm_cpath_spread_ranks_visits(const sm_profile_summary_t *s,
                                         const sm_cpath_t *p) SM_HIDDEN;
sm_spread_t sm_cpath_spread_ranks_bytes(const sm_profile_summary_t *s, const sm_cpath_t *p,
                                        int received) SM_HIDDEN;

/* A region summed over every call path where it appears (the MPI section). */
typedef struct sm_region_total {
    sm_region_id_t region;
    uint64_t calls;           /* visits on all those paths */
    double time_ns;           /* inclusive; nested calls of itself not again */
    uint32_t ranks;           /* ranks that called it */
    double mean_rank_ns;      /* time per calling rank */
    double max_rank_ns;
    uint32_t max_rank;        /* lowest on a tie */
    uint64_t bytes_sent, bytes_received;
} sm_region_total_t;
typedef bool (*sm_region_select_fn)(sm_region_id_t region, void *arg);
/* The regions for which select holds, by time_ns descending (then region
 * id); malloc'd array of *n (NULL with *n = 0 when none or out of memory:
 * *n = UINT32_MAX then). */
sm_region_total_t *sm_profile_region_totals(const sm_profile_summary_t *s,
                                            sm_region_select_fn select, void *arg,
                                            uint32_t *n) SM_HIDDEN;

/* Depth-first, parents first, children in first-seen order. */
typedef void (*sm_cpath_visit_fn)(const sm_cpath_t *p, void *arg);
void sm_cpath_walk(const sm_cpath_t *root, sm_cpath_visit_fn fn, void *arg) SM_HIDDEN;

#endif
