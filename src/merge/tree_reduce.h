/* A reduction up a binomial tree: every process hands a blob, each parent
 * merges its children's reduced blobs into its own (one call of the merge
 * function with its own blob first, then its children's in rank order) and
 * sends the result to its parent, so that rank 0 ends with the reduction of
 * all, in O(log P) rounds, and no process holds more than its own reduction
 * and its children's (at most log2 P of them).  Unlike sm_tree_gather
 * (unify.h), the size of what travels is that of a merged blob, not the sum
 * of the blobs.  The order of a merge is rank order: rank r's own blob, then
 * the subtrees of ranks r + 1, r + 2, r + 4, ... */
#ifndef SM_TREE_REDUCE_H
#define SM_TREE_REDUCE_H

#include <stdint.h>
#include "../core/compiler.h"
#include "../core/procs.h"

/* Merges blobs[0..n) (n >= 1, lens[i] may be 0) into one malloc'd blob
 * (*out, *out_len); 0, or -1 (said) when it could not. */
typedef int (*sm_reduce_fn)(const void *const *blobs, const uint64_t *lens, uint32_t n,
                            void **out, uint64_t *out_len, void *arg);

/* Collective.  At rank 0 *out is the reduction of every process's blob
 * (malloc'd; NULL when it failed), elsewhere NULL.  0, or -1 when a
 * transfer or a merge failed on this process (the blobs that did arrive
 * are still reduced: a parent sends an empty blob for a failed merge). */
int sm_tree_reduce(const sm_procs_t *procs, const void *blob, uint64_t len, sm_reduce_fn merge,
                   void *arg, void **out, uint64_t *out_len) SM_HIDDEN;

#endif
