/* How libsysmeasure-causal.so (causal_wrap.c, the interposed calls that
 * wake or block threads) reaches the causal profiler inside
 * libsysmeasure.so: one table, from the one exported function
 * sysmeasure_causal_api(), NULL while causal profiling is off. */
#ifndef SM_CAUSAL_API_H
#define SM_CAUSAL_API_H

#include <stdint.h>

#define SM_CAUSAL_API_VERSION 3

typedef struct sm_causal_api {
    int version;
    /* Before the calling thread wakes another through obj (the mutex,
     * condition variable, barrier or semaphore): it pays the delays it
     * owes first, so that a thread it wakes is not ahead of the virtual
     * timeline, and notes on obj how far the delays had come. */
    void (*catch_up)(const void *obj);
    /* Around a call that may block on obj (NULL: a sleep, a join): the
     * delays inserted while the thread was blocked, up to its waker's
     * note on obj, are not its to pay. */
    void (*block_begin)(void);
    void (*block_end)(const void *obj);
    /* A region (its id) ended on the calling thread: a progress point when
     * --causal-progress names it (an MPI function, say). */
    void (*region_end)(uint32_t region);
} sm_causal_api_t;

typedef const sm_causal_api_t *(*sm_causal_api_fn)(void);

/* The object of MPI calls (the MPI adapter's): a call wakes and is woken by
 * other processes, whose catch-up the node's shared state notes. */
#define SM_CAUSAL_MPI ((const void *)1)

#endif
