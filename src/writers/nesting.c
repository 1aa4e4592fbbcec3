/* Well-nested enters and leaves for the archive (see nesting.h). */
#include "nesting.h"

#include <stdlib.h>

#include "../util/grow.h"

void sm_nesting_enter(sm_nesting_t *n, uint32_t region)
{
    if (n->off)
        return;
    if (n->depth == n->cap && SM_GROW(n->open, n->cap, 64) != 0) {
        n->off = 1;
        return;
    }
    n->open[n->depth++] = region;
}

int64_t sm_nesting_leave(sm_nesting_t *n, uint32_t region)
{
    if (n->off)
        return 0;
    for (uint32_t i = n->depth; i > 0; i--)
        if (n->open[i - 1] == region) {
            n->closed += n->depth - i;
            return (int64_t)(n->depth - i);
        }
    n->dropped++;
    return -1;
}

uint32_t sm_nesting_top(const sm_nesting_t *n)
{
    return !n->off && n->depth ? n->open[n->depth - 1] : UINT32_MAX;
}

void sm_nesting_pop(sm_nesting_t *n)
{
    if (!n->off && n->depth)
        n->depth--;
}

void sm_nesting_reset(sm_nesting_t *n)
{
    n->depth = 0;
    n->off = 0;
}

void sm_nesting_free(sm_nesting_t *n)
{
    free(n->open);
    n->open = NULL;
    n->depth = n->cap = 0;
}
