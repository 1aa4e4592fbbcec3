/* Statistics of a call path across the threads and the ranks of a job, in a
 * form that merges: two ranks' (or two subtrees') statistics combine into
 * those of their union, so the job's are reduced up a tree instead of every
 * rank's profile being gathered at rank 0 (profile_reduce.h).
 *
 * Every value is an integer (visits, bytes, counter events, and times in
 * whole ns: each thread's ticks converted with its rank's tick length, then
 * rounded), so a statistic keeps the exact sum, the exact sum of squares
 * (128 bits), the min and the max with the rank (and location) that holds
 * them.  Exact integers make a merge associative and commutative: the
 * binomial tree of a live job and sysmeasure-merge, which reduce in
 * different orders, give the same numbers to the last digit, and the
 * variance computed at the end has no cancellation error (profile.h).
 * Only the GPU counter values are real numbers: their spreads use the
 * running mean and M2 merged by Chan's formula (sm_dstat_t). */
#ifndef SM_PROFILE_STATS_H
#define SM_PROFILE_STATS_H

#include <stdbool.h>
#include <stdint.h>
#include "../core/compiler.h"
#include "../core/definitions.h"
#include "../core/profile.h"

/* Per-member values travel up the tree with the statistics while the job
 * has at most this many members (threads of every rank): small jobs keep
 * their per-thread and per-rank rows in profile.txt, .json and .csv. */
#define SM_PROFILE_DETAIL_MAX 64
/* Per path, the ranks with the largest and the smallest inclusive time. */
#define SM_PROFILE_TOP_RANKS 5
/* Per path, the per-rank times binned into this many rank ranges (one rank
 * a bin in jobs of at most this many ranks), for the report's plots. */
#define SM_PROFILE_RANK_BINS 128

/* The values of a path, per thread and per rank (the sum over its threads). */
typedef enum {
    SM_PV_VISITS,
    SM_PV_INCL,     /* ns */
    SM_PV_EXCL,     /* ns */
    SM_PV_SENT,     /* bytes */
    SM_PV_RECEIVED, /* bytes */
    SM_PV_COUNTERS  /* then counter k inclusive at + k, exclusive at + n_counters + k */
} sm_pvalue_t;
#define SM_PV_COUNT(n_counters) (SM_PV_COUNTERS + 2u * (n_counters))

/* One value across threads or ranks. */
typedef struct sm_mstat {
    sm_stat_t st;     /* sum, min, max, sum of squares of the values */
    uint32_t n;       /* values: threads (ranks) that visited the path */
    uint32_t min_rank, min_loc; /* who holds the min: lowest (rank, location) on a tie */
    uint32_t max_rank, max_loc;
} sm_mstat_t;

/* A rank and its value (the ranks that stand out). */
typedef struct sm_rank_value {
    uint64_t value;
    uint32_t rank;
} sm_rank_value_t;

/* The ranks of one rank range on one path. */
typedef struct sm_rank_bin {
    uint32_t ranks; /* that visited the path */
    uint64_t incl_sum, incl_min, incl_max, excl_sum; /* of the per-rank ns */
} sm_rank_bin_t;

typedef struct sm_cpath_stats {
    uint32_t n_values;   /* SM_PV_COUNT(the summary's n_counters) */
    sm_mstat_t *threads; /* [n_values] across the threads that visited the path */
    sm_mstat_t *ranks;   /* [n_values] across the ranks that visited it */
    /* Per visit, over every visit of every thread (ns). */
    uint64_t visit_incl_min, visit_incl_max, visit_excl_min, visit_excl_max;
    double visit_incl_sumsq; /* ns^2 (the GPU section's spread of kernel times) */
    uint32_t n_top, n_bottom;
    sm_rank_value_t top[SM_PROFILE_TOP_RANKS];    /* largest per-rank inclusive ns first */
    sm_rank_value_t bottom[SM_PROFILE_TOP_RANKS]; /* smallest first */
    uint32_t bin_first, n_bins; /* bins [bin_first, bin_first + n_bins) of the job's */
    sm_rank_bin_t *bins;
} __attribute__((aligned(16))) sm_cpath_stats_t; /* (the statistics follow it in memory) */

/* The job's threads per rank range (the report's share outside regions). */
typedef struct sm_job_bin {
    uint32_t ranks, threads, main_threads; /* main: created by no other thread */
} sm_job_bin_t;

/* A region over every path it is on (the MPI section). */
typedef struct sm_region_stat {
    sm_region_id_t region;
    uint64_t calls, bytes_sent, bytes_received;
    /* Per rank that called it: its inclusive ns over those paths, a call
     * of the region inside itself not again. */
    sm_mstat_t rank_time;
} sm_region_stat_t;

/* Real values across ranks: count, running mean and M2 (Chan's formula),
 * min and max with their ranks (lowest on a tie). */
typedef struct sm_dstat {
    uint32_t n, min_rank, max_rank;
    double mean, m2, min, max;
} sm_dstat_t;

/* GPU counter statistics of one kernel metric: on one path (path set) or
 * over every path of the kernel (path NULL). */
typedef struct sm_gpu_row {
    const struct sm_cpath *path;
    sm_region_id_t region; /* the kernel */
    uint32_t metric;       /* into the summary's gpu_metric_names */
    sm_fstat_t all;        /* every launch of every rank */
    sm_dstat_t ranks;      /* of the per-rank sums */
} sm_gpu_row_t;

/* ns of ticks of a clock of npt ns per tick, rounded: the one conversion,
 * so that per-thread rows and the statistics agree to the ns. */
uint64_t sm_ticks_ns(uint64_t ticks, double npt) SM_HIDDEN;

void sm_mstat_clear(sm_mstat_t *m) SM_HIDDEN;
void sm_mstat_add(sm_mstat_t *m, uint64_t v, uint32_t rank, uint32_t loc) SM_HIDDEN;
void sm_mstat_merge(sm_mstat_t *into, const sm_mstat_t *from) SM_HIDDEN;
double sm_mstat_mean(const sm_mstat_t *m) SM_HIDDEN;
/* Population standard deviation. */
double sm_mstat_stddev(const sm_mstat_t *m) SM_HIDDEN;

void sm_dstat_clear(sm_dstat_t *d) SM_HIDDEN;
void sm_dstat_add(sm_dstat_t *d, double v, uint32_t rank) SM_HIDDEN;
void sm_dstat_merge(sm_dstat_t *into, const sm_dstat_t *from) SM_HIDDEN;

/* Rank ranges: min(n_ranks, SM_PROFILE_RANK_BINS) bins of consecutive ranks. */
uint32_t sm_rank_bins(uint32_t n_ranks) SM_HIDDEN;
uint32_t sm_rank_bin_of(uint32_t rank, uint32_t n_ranks) SM_HIDDEN;
uint32_t sm_rank_bin_first(uint32_t bin, uint32_t n_ranks) SM_HIDDEN;

/* Path statistics for nc counters: zeroed (n 0 everywhere); NULL when out
 * of memory.  Freed with sm_cpath_stats_free. */
sm_cpath_stats_t *sm_cpath_stats_new(uint32_t nc) SM_HIDDEN;
void sm_cpath_stats_free(sm_cpath_stats_t *st) SM_HIDDEN;
/* Makes room for nc counters (values keep their meaning); 0 or -1. */
int sm_cpath_stats_grow(sm_cpath_stats_t **st, uint32_t old_nc, uint32_t nc) SM_HIDDEN;
/* One rank's sums on a path: the ranks' statistics, the ranks that stand
 * out and its bin. */
int sm_cpath_stats_add_rank(sm_cpath_stats_t *st, uint32_t rank, uint32_t n_ranks,
                            const uint64_t *values) SM_HIDDEN;
/* into += from; from's values k at into's map[k] (NULL: the same index).
 * 0 or -1 (out of memory: bins). */
int sm_cpath_stats_merge(sm_cpath_stats_t *into, const sm_cpath_stats_t *from,
                         const uint32_t *map) SM_HIDDEN;
/* A ranked list of at most SM_PROFILE_TOP_RANKS: v goes in when it is among
 * the largest (descending true) or the smallest; ties: the lower rank. */
void sm_top_insert(sm_rank_value_t *list, uint32_t *n, uint64_t value, uint32_t rank,
                   bool descending) SM_HIDDEN;

#endif
