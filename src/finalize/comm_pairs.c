/* The communication matrix's pairs gathered up the tree (comm_pairs.h). */
#include "comm_pairs.h"

#include <stdlib.h>
#include <string.h>

#include "../merge/unify.h"
#include "../util/log.h"

static int sm_comm_pair_order(const void *a, const void *b)
{
    const sm_comm_pair_t *x = a, *y = b;
    if (x->sender != y->sender)
        return x->sender < y->sender ? -1 : 1;
    if (x->receiver != y->receiver)
        return x->receiver < y->receiver ? -1 : 1;
    return 0;
}

void sm_comm_pairs_sort(sm_comm_pair_t *pairs, uint64_t *n)
{
    if (*n == 0)
        return;
    qsort(pairs, *n, sizeof *pairs, sm_comm_pair_order);
    uint64_t used = 1;
    for (uint64_t i = 1; i < *n; i++) {
        sm_comm_pair_t *last = &pairs[used - 1];
        if (pairs[i].sender == last->sender && pairs[i].receiver == last->receiver) {
            last->messages += pairs[i].messages;
            last->bytes += pairs[i].bytes;
        } else {
            pairs[used++] = pairs[i];
        }
    }
    *n = used;
}

int sm_comm_pairs_gather(const sm_procs_t *procs, const sm_comm_pair_t *mine, uint32_t n_mine,
                         sm_comm_pair_t **all, uint64_t *n_all)
{
    *all = NULL;
    *n_all = 0;
    void *got = NULL;
    uint64_t got_len = 0;
    /* (An empty blob still travels: the tree needs every rank's record.) */
    if (sm_tree_gather(procs, n_mine ? (const void *)mine : "", sizeof *mine * (uint64_t)n_mine,
                       &got, &got_len) != 0)
        return -1;
    if (procs->rank != 0 || !got)
        return 0;
    /* The records' sizes add up to the pairs; one pass to count them. */
    uint64_t total = 0;
    const uint8_t *end = (const uint8_t *)got + got_len, *p = got, *blob;
    uint32_t rank;
    uint64_t len;
    while ((p = sm_tree_next(p, end, &rank, &blob, &len)) != NULL)
        total += len / sizeof(sm_comm_pair_t);
    if (total == 0) {
        free(got);
        return 0;
    }
    sm_comm_pair_t *pairs = malloc(sizeof *pairs * total);
    if (!pairs) {
        sm_error("the communication matrix of %llu pairs: out of memory",
                 (unsigned long long)total);
        free(got);
        return -1;
    }
    uint64_t used = 0;
    p = got;
    while ((p = sm_tree_next(p, end, &rank, &blob, &len)) != NULL) {
        uint64_t k = len / sizeof(sm_comm_pair_t);
        memcpy(pairs + used, blob, k * sizeof *pairs); /* (blob may be unaligned) */
        used += k;
    }
    free(got);
    sm_comm_pairs_sort(pairs, &used);
    *all = pairs;
    *n_all = used;
    return 0;
}
