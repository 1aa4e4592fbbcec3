/* The job's profile summary, reduced up a tree instead of gathered.
 *
 * Each rank turns its profile blob (sm_profile_summary_serialize) into a
 * reduced blob: per call path the statistics of profile_stats.h over its
 * threads and of its per-rank sums; the regions over their paths; the GPU
 * counter rows; and, while the job is small, the rank's blob itself (the
 * per-member detail).  Parents merge their children's reduced blobs into
 * their own (sm_tree_reduce), so rank 0 ends with a summary whose size is
 * that of the distinct call paths.  The per-member blobs travel along as
 * long as the members of the ranks merged so far number at most
 * SM_PROFILE_DETAIL_MAX; past that they are dropped, and the job summary
 * has no members (per_member false): the per-thread rows of a large job
 * are written by each rank into profile-ranks.csv instead.
 *
 * sysmeasure-merge, which holds every rank's blob in one process, reduces
 * them with the same merge, in rank order (sm_profile_summary_from_blobs).
 *
 * The reduced blob, little-endian, fixed width, no padding:
 *
 *   header   u32 magic "SMPR", u32 version, u32 job ranks, u32 ranks with a
 *            profile, u32 lowest such rank (or ~0), u32 ranks without one,
 *            u32 flags (1: the per-member detail was dropped), u64 that
 *            rank's ns per tick (IEEE 754 bits), u64 threads
 *   names    u32 n_counters, { u32 length (< 128), bytes }; the same for the
 *            GPU metrics
 *   job bins u32 first, u32 count, count x { u32 ranks, threads, main threads }
 *   nodes    u64 n_nodes, parents before children: { u32 parent (0 = root,
 *            else 1-based index of an earlier node), u32 region,
 *            2 x n_values mstat (threads, then ranks), u64 visit incl min,
 *            incl max, excl min, excl max, f64 visit incl sum of squares,
 *            u32 n_top, n_top x { u64 ns, u32 rank }, the same for the
 *            bottom, u32 bin first, u32 bins, bins x { u32 ranks,
 *            u64 incl sum, incl min, incl max, excl sum } }
 *            mstat = u32 n, and when n > 0: u64 sum, min, max, sum of
 *            squares low, high, u32 min rank, min location, max rank,
 *            max location
 *   regions  u32 n, by region id: { u32 region, u64 calls, bytes sent,
 *            bytes received, mstat of the per-rank time }
 *   gpu      u64 n, { u32 node (0: the kernel over all its paths), u32
 *            region, u32 metric, u64 n, covered, f64 sum, mean, m2, min,
 *            max, u32 ranks, min rank, max rank, f64 mean, m2, min, max }
 *   detail   u32 n, n x { u32 rank, u64 length, the rank's profile blob } */
#ifndef SM_PROFILE_REDUCE_H
#define SM_PROFILE_REDUCE_H

#include <stdint.h>
#include "../core/compiler.h"
#include "../core/procs.h"
#include "profile_summary.h"

/* Collective over procs: every process hands its profile blob (NULL/0: it
 * has none); the job summary of n_ranks ranks at rank 0 (NULL when it could
 * not be built: said), NULL elsewhere. */
sm_profile_summary_t *sm_profiles_reduce(const sm_procs_t *procs, const void *local_blob,
                                         uint64_t len, uint32_t n_ranks) SM_HIDDEN;

/* Rank's part of the reduction from its profile blob (len 0: a rank
 * without one).  malloc'd; NULL when the blob is malformed or memory ran
 * out (said). */
void *sm_profile_reduced_of_rank(const void *blob, uint64_t len, uint32_t rank,
                                 uint32_t n_ranks, uint64_t *out_len) SM_HIDDEN;
/* The merge of reduced blobs (an sm_reduce_fn; arg unused). */
int sm_profile_reduced_merge(const void *const *blobs, const uint64_t *lens, uint32_t n,
                             void **out, uint64_t *out_len, void *arg) SM_HIDDEN;
/* One rank's summary with its members (member_rank 0) from its blob, for
 * the rows it writes itself (profile-ranks.csv); NULL when the blob is
 * malformed or memory ran out (said). */
sm_profile_summary_t *sm_profile_summary_of_rank(const void *blob, uint64_t len,
                                                 uint32_t rank) SM_HIDDEN;
/* The job summary from the reduction of all ranks; NULL when malformed or
 * out of memory (said). */
sm_profile_summary_t *sm_profile_summary_from_reduced(const void *blob, uint64_t len) SM_HIDDEN;

#endif
