/* The table of NCCL communicators by handle (nccl_comms.h). */
#include "nccl_comms.h"

#include <pthread.h>
#include <string.h>
#include "core/definitions.h"

static sm_nccl_entry_t sm_nccl_comms[SM_NCCL_COMMS];
static pthread_mutex_t sm_nccl_comms_lock = PTHREAD_MUTEX_INITIALIZER;

static inline uint32_t sm_nccl_slot(const void *handle)
{
    uint64_t p = (uint64_t)(uintptr_t)handle;
    p ^= p >> 33;
    p *= UINT64_C(0xff51afd7ed558ccd);
    p ^= p >> 29;
    return (uint32_t)p & (SM_NCCL_COMMS - 1);
}

/* The slot holding handle (dead or alive), or the empty slot that ends its
 * chain (NULL: neither, the table is full). */
static sm_nccl_entry_t *sm_nccl_probe(const void *handle)
{
    uint32_t at = sm_nccl_slot(handle);
    for (uint32_t n = 0; n < SM_NCCL_COMMS; n++, at = (at + 1) & (SM_NCCL_COMMS - 1)) {
        sm_nccl_entry_t *c = &sm_nccl_comms[at];
        void *h = __atomic_load_n(&c->handle, __ATOMIC_ACQUIRE);
        if (h == handle || !h)
            return c;
    }
    return NULL;
}

sm_nccl_entry_t *sm_nccl_comm_find(const void *handle)
{
    if (!handle)
        return NULL;
    sm_nccl_entry_t *c = sm_nccl_probe(handle);
    if (!c || __atomic_load_n(&c->handle, __ATOMIC_ACQUIRE) != handle ||
        __atomic_load_n(&c->dead, __ATOMIC_ACQUIRE))
        return NULL;
    return c;
}

sm_nccl_entry_t *sm_nccl_comm_add(const void *handle, uint64_t id, int rank, int nranks,
                                 uint32_t parent, int amd)
{
    if (!handle)
        return NULL;
    pthread_mutex_lock(&sm_nccl_comms_lock);
    sm_nccl_entry_t *c = sm_nccl_probe(handle);
    if (c) {
        /* Readers look at a slot only once its handle is published and it
         * is not dead: fill it in between. */
        __atomic_store_n(&c->dead, 1, __ATOMIC_RELEASE);
        c->id = id;
        __atomic_store_n(&c->rank, rank, __ATOMIC_RELAXED);
        __atomic_store_n(&c->nranks, nranks, __ATOMIC_RELAXED);
        __atomic_store_n(&c->core, SM_COMM_NONE, __ATOMIC_RELAXED);
        __atomic_store_n(&c->splits, 0, __ATOMIC_RELAXED);
        c->parent = parent;
        c->amd = (uint8_t)(amd != 0);
        __atomic_store_n(&c->handle, (void *)handle, __ATOMIC_RELEASE);
        __atomic_store_n(&c->dead, 0, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&sm_nccl_comms_lock);
    return c;
}

void sm_nccl_comm_forget(const void *handle)
{
    sm_nccl_entry_t *c = sm_nccl_comm_find(handle);
    if (c)
        __atomic_store_n(&c->dead, 1, __ATOMIC_RELEASE);
}

void sm_nccl_comms_reset(void)
{
    pthread_mutex_lock(&sm_nccl_comms_lock);
    memset(sm_nccl_comms, 0, sizeof sm_nccl_comms);
    pthread_mutex_unlock(&sm_nccl_comms_lock);
}
