/* Reduction up a binomial tree (tree_reduce.h). */
#include "tree_reduce.h"

#include <stdlib.h>
#include <string.h>

/* A process of rank r receives from r + 1, r + 2, r + 4, ... while the bit
 * is clear in r, then sends to r - (its lowest set bit): at most 32
 * children. */
#define SM_TREE_MAX_PARTS 33

int sm_tree_reduce(const sm_procs_t *procs, const void *blob, uint64_t len, sm_reduce_fn merge,
                   void *arg, void **out, uint64_t *out_len)
{
    const void *parts[SM_TREE_MAX_PARTS];
    uint64_t lens[SM_TREE_MAX_PARTS];
    void *children[SM_TREE_MAX_PARTS];
    uint32_t n = 1;
    int failed = 0;
    uint32_t parent = UINT32_MAX;
    parts[0] = blob ? blob : "";
    lens[0] = blob ? len : 0;
    *out = NULL;
    *out_len = 0;
    for (uint32_t mask = 1; mask && mask < procs->size; mask <<= 1) {
        if (procs->rank & mask) {
            parent = procs->rank - mask;
            break;
        }
        if (procs->rank + mask >= procs->size)
            continue;
        void *child = NULL;
        uint64_t clen = 0;
        if (procs->recv(procs->ctx, procs->rank + mask, &child, &clen) != 0) {
            failed = 1; /* (that subtree's profiles are lost; the rest still counts) */
            free(child);
            continue;
        }
        children[n] = child;
        parts[n] = child ? child : "";
        lens[n] = child ? clen : 0;
        n++;
    }
    void *merged = NULL;
    uint64_t mlen = 0;
    if (n == 1 && parent != UINT32_MAX) {
        /* A leaf forwards its own blob as it is. */
        if (procs->send(procs->ctx, parent, parts[0], lens[0]) != 0)
            failed = 1;
        return failed ? -1 : 0;
    }
    if (merge(parts, lens, n, &merged, &mlen, arg) != 0) {
        failed = 1;
        merged = NULL;
        mlen = 0;
    }
    for (uint32_t i = 1; i < n; i++)
        free(children[i]);
    if (parent != UINT32_MAX) {
        if (procs->send(procs->ctx, parent, merged ? merged : "", merged ? mlen : 0) != 0)
            failed = 1;
        free(merged);
        return failed ? -1 : 0;
    }
    *out = merged;
    *out_len = merged ? mlen : 0;
    return failed ? -1 : 0;
}
