/* The communication matrix of the job gathered at rank 0 as the pairs that
 * talk (issue 29): each rank sends only its row's non-zero cells up the
 * tree, so what rank 0 holds grows with the pairs that exchanged messages
 * (about P x neighbours), not with P x P. */
#ifndef SM_FINALIZE_COMM_PAIRS_H
#define SM_FINALIZE_COMM_PAIRS_H

#include <stdint.h>
#include "../core/compiler.h"
#include "../core/procs.h"
#include "../writers/writers.h"

/* Collective over procs.  mine: this rank's pairs (its sends; any order).
 * At rank 0, *all (malloc'd, ordered by sender then receiver, a pair that
 * appears twice summed) and *n_all; NULL and 0 without any pair or
 * elsewhere.  0, or -1 when the exchange failed. */
int sm_comm_pairs_gather(const sm_procs_t *procs, const sm_comm_pair_t *mine, uint32_t n_mine,
                         sm_comm_pair_t **all, uint64_t *n_all) SM_HIDDEN;

/* Sorts pairs[0..*n) by sender then receiver and sums duplicates in place
 * (*n becomes the count left). */
void sm_comm_pairs_sort(sm_comm_pair_t *pairs, uint64_t *n) SM_HIDDEN;

#endif
