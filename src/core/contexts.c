/* The calling-context table (contexts.h): an array and an open-addressing
 * index, under a mutex (defined at finalize only, from one thread). */
#include "contexts.h"
#include "journal.h"
#include "../util/grow.h"

#include <pthread.h>
#include <stdlib.h>

static sm_context_def_t *sm_ctx;
static uint32_t sm_ctx_n, sm_ctx_cap;
static uint32_t *sm_ctx_index; /* id + 1; 0 empty */
static uint32_t sm_ctx_index_size;
static pthread_mutex_t sm_ctx_lock = PTHREAD_MUTEX_INITIALIZER;

static uint32_t sm_ctx_hash(sm_region_id_t region, sm_context_id_t parent)
{
    uint64_t h = ((uint64_t)region << 32 | parent) * 0x9e3779b97f4a7c15ull;
    return (uint32_t)(h >> 32);
}

static int sm_ctx_reindex(void)
{
    uint32_t size = sm_ctx_index_size ? sm_ctx_index_size * 2 : 1024;
    uint32_t *index = calloc(size, sizeof *index);
    if (!index)
        return -1;
    for (uint32_t id = 0; id < sm_ctx_n; id++) {
        uint32_t i = sm_ctx_hash(sm_ctx[id].region, sm_ctx[id].parent) & (size - 1);
        while (index[i])
            i = (i + 1) & (size - 1);
        index[i] = id + 1;
    }
    free(sm_ctx_index);
    sm_ctx_index = index;
    sm_ctx_index_size = size;
    return 0;
}

sm_context_id_t sm_context_define(sm_region_id_t region, sm_context_id_t parent,
                                  sm_string_id_t module)
{
    sm_context_id_t id = SM_INVALID_ID;
    pthread_mutex_lock(&sm_ctx_lock);
    if ((sm_ctx_n + 1) * 2 >= sm_ctx_index_size && sm_ctx_reindex() != 0)
        goto out;
    uint32_t mask = sm_ctx_index_size - 1, i = sm_ctx_hash(region, parent) & mask;
    for (; sm_ctx_index[i]; i = (i + 1) & mask) {
        const sm_context_def_t *c = &sm_ctx[sm_ctx_index[i] - 1];
        if (c->region == region && c->parent == parent) {
            id = sm_ctx_index[i] - 1;
            goto out;
        }
    }
    if (sm_ctx_n == sm_ctx_cap && SM_GROW(sm_ctx, sm_ctx_cap, 256) != 0)
        goto out;
    id = sm_ctx_n++;
    sm_ctx[id] = (sm_context_def_t){region, parent, module};
    sm_ctx_index[i] = id + 1;
    if (sm_journal_on())
        sm_journal_add(SM_J_CONTEXT, &id, sizeof id, &sm_ctx[id], sizeof sm_ctx[id]);
out:
    pthread_mutex_unlock(&sm_ctx_lock);
    return id;
}

uint32_t sm_context_count(void)
{
    pthread_mutex_lock(&sm_ctx_lock);
    uint32_t n = sm_ctx_n;
    pthread_mutex_unlock(&sm_ctx_lock);
    return n;
}

const sm_context_def_t *sm_context_get(sm_context_id_t id)
{
    pthread_mutex_lock(&sm_ctx_lock);
    const sm_context_def_t *c = id < sm_ctx_n ? &sm_ctx[id] : NULL;
    pthread_mutex_unlock(&sm_ctx_lock);
    return c;
}
