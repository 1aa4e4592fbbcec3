/* Inside the profile summary: how its tree is allocated and built, shared
 * by the files that make summaries (profile_summary.c: local summaries and
 * the tree; profile_blob.c: the per-process blob; profile_job.c: the
 * statistics of a summary with members; profile_reduce.c: the reduction).
 * Nothing outside src/merge/profile_*.c includes it. */
#ifndef SM_PROFILE_BUILD_H
#define SM_PROFILE_BUILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "profile_summary.h"

/* A path as allocated here: the public node, then what building needs.  The
 * members array follows in the same allocation (aligned: its statistics
 * hold 128-bit sums). */
typedef struct sm_cpath_node {
    sm_cpath_t path;        /* first, so an sm_cpath_t * converts back */
    sm_cpath_t *last_child; /* appending keeps first-seen order */
} __attribute__((aligned(16))) sm_cpath_node_t;

/* The summary as allocated here. */
typedef struct sm_summary_impl {
    sm_profile_summary_t pub; /* first, so the public pointer converts back */
    sm_cpath_t *root_last_child;
    sm_cpath_node_t **table;  /* open addressing on (parent, region) */
    size_t table_size;        /* a power of two */
    size_t table_used;
    sm_region_id_t *paths;    /* every member's creation path, one pool */
    uint64_t n_paths;         /* nodes below the root */
    /* ---- a reduction's accumulator (profile_reduce.c) */
    uint32_t job_ranks;       /* the job's ranks (0: not known yet) */
    uint32_t first_rank;      /* lowest rank merged, SM_INVALID_ID: none */
    uint32_t ranks_without;   /* ranks that sent no profile */
    bool detail_lost;         /* the per-member blobs were dropped (too many members) */
    uint32_t n_detail;        /* per-member blobs kept, as {rank, len, bytes} records */
    uint8_t *detail;
    uint64_t detail_len, detail_cap;
    uint64_t gpu_rows_cap;
} sm_summary_impl_t;

static inline sm_summary_impl_t *sm_summary_impl(sm_profile_summary_t *s)
{
    return (sm_summary_impl_t *)s;
}

/* An empty summary for n_members members of n_ranks ranks (n_ranks >= 1),
 * with n_counters counters (names set by the caller); with n_ranks 0 and
 * no members, an accumulator without the per-rank tables. */
sm_summary_impl_t *sm_summary_create(uint32_t n_members, uint32_t n_ranks,
                                     uint32_t n_counters) SM_HIDDEN;
/* The child of parent for region, created (last among its siblings) if
 * new; NULL when out of memory. */
sm_cpath_t *sm_summary_child(sm_summary_impl_t *im, sm_cpath_t *parent,
                             sm_region_id_t region) SM_HIDDEN;
/* The lookup table only serves building. */
void sm_summary_built(sm_summary_impl_t *im) SM_HIDDEN;
/* Creator location -> member, per rank (sorted: members of a rank by
 * location id). */
void sm_summary_link_creators(sm_profile_summary_t *s, bool sorted) SM_HIDDEN;
void sm_cpath_member_merge(sm_cpath_member_t *into, const sm_cpath_member_t *from) SM_HIDDEN;

/* One rank's blob (sm_profile_summary_serialize), for the builders. */
typedef struct sm_rank_blob {
    uint32_t rank;
    const uint8_t *blob;
    uint64_t len;
} sm_rank_blob_t;
/* The summary with members of the given blobs (sorted by rank, no rank
 * twice, each rank - rank_base < n_ranks), member_rank = rank - rank_base;
 * the blobs were checked (sm_profile_blob_check).  NULL when out of memory
 * (message printed). */
sm_profile_summary_t *sm_profile_detail_build(const sm_rank_blob_t *blobs, uint32_t n,
                                              uint32_t n_ranks, uint32_t rank_base) SM_HIDDEN;
/* Whether a blob is well-formed for that rank (SM_INVALID_ID: any), and its
 * number of members; *why the first problem. */
bool sm_profile_blob_check(const void *blob, uint64_t len, uint32_t rank, uint32_t *n_members,
                           const char **why) SM_HIDDEN;

/* The job's statistics of a summary with members (profile_job.c): every
 * path's, the job's bins, region and GPU rows; its ranks are the job's
 * rank_base + i of job_ranks.  0, or -1 out of memory. */
int sm_summary_compute_stats(sm_profile_summary_t *s, uint32_t rank_base,
                             uint32_t job_ranks) SM_HIDDEN;
/* Frees what sm_summary_compute_stats or a reduction added. */
void sm_summary_free_stats(sm_profile_summary_t *s) SM_HIDDEN;

#endif
