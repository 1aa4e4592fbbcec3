/* The OMPT tool's locks: every mutex kind (lock, nest lock, critical,
 * atomic, ordered) with an id of its own, waited for, held, released. */
#define _GNU_SOURCE
#include "sm_build.h"

#ifdef SM_HAVE_OMPT
#include "ompt_private.h"

#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/config.h"
#include "core/definitions.h"
#include "core/events.h"
#include "core/location.h"
#include "core/runtime.h"
#include "util/log.h"
#include "util/srcloc.h"
#include "util/symbols.h"

/* ---------------------------------------------------------------- lock ids */

/* A lock (any mutex: lock, nest lock, critical, atomic, ordered), keyed by
 * its OMPT wait id, with the small id the trace gives it and the count of
 * its acquisitions.  Open addressing, claimed by CAS: no lock taken, and a
 * lock seen before costs one lookup. */
#define SM_LOCK_HISTORY 4 /* a power of two */
typedef struct sm_ompt_lock {
    uint64_t key;   /* wait id; 0: free */
    uint32_t id;    /* trace id + 1; 0 until the claiming thread set it */
    uint32_t order; /* acquisitions recorded so far */
    /* The times of the last SM_LOCK_HISTORY acquisitions (tag: order + 1;
     * 0 while being written).  The runtime reports a release after the
     * unlock, so the next holder may have its acquire stamped first: the
     * release is stamped no later than that.  More than two: a releasing
     * thread descheduled after its unlock (an oversubscribed machine) may
     * find other threads acquired the lock twice more meanwhile. */
    struct {
        uint64_t tag, time;
    } acquired[SM_LOCK_HISTORY];
} sm_ompt_lock_t;

#ifndef SM_LOCK_BITS
#define SM_LOCK_BITS 15
#endif
#define SM_LOCK_SLOTS (1u << SM_LOCK_BITS)
#define SM_LOCK_PROBES 64 /* beyond: the table is too full here, not recorded */
static sm_ompt_lock_t sm_locks[SM_LOCK_SLOTS];
static uint32_t sm_lock_ids;
uint64_t sm_locks_unrecorded;

static sm_ompt_lock_t *sm_lock(ompt_wait_id_t wait_id)
{
    if (!wait_id)
        return NULL;
    uint32_t h = (uint32_t)((wait_id * 0x9E3779B97F4A7C15ull) >> (64 - SM_LOCK_BITS));
    for (uint32_t i = 0; i < SM_LOCK_PROBES; i++) {
        sm_ompt_lock_t *l = &sm_locks[(h + i) & (SM_LOCK_SLOTS - 1)];
        uint64_t k = __atomic_load_n(&l->key, __ATOMIC_ACQUIRE);
        if (!k) {
            if (__atomic_compare_exchange_n(&l->key, &k, wait_id, false, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE)) {
                __atomic_store_n(&l->id, __atomic_add_fetch(&sm_lock_ids, 1, __ATOMIC_RELAXED),
                                 __ATOMIC_RELEASE);
                return l;
            }
            /* another thread claimed it: k is its key */
        }
        if (k == wait_id) {
            /* Claimed just now by another thread, which sets the id next. */
            while (!__atomic_load_n(&l->id, __ATOMIC_ACQUIRE))
                sched_yield();
            return l;
        }
    }
    __atomic_add_fetch(&sm_locks_unrecorded, 1, __ATOMIC_RELAXED);
    return NULL;
}

/* The thread acquired a lock: ThreadAcquireLock, and remember it for the
 * release.  The counter moves only under the lock, so the orders of one
 * lock follow its acquisitions, with no gap. */
static void sm_lock_acquired(sm_ompt_thread_t *th, sm_location_t *loc, ompt_wait_id_t wait_id,
                             uint64_t t)
{
    if (th == &sm_ompt_nomem)
        return;
    if (th->held >= SM_MAX_HELD) {
        th->held++;
        return;
    }
    if (!sm_measuring(loc) || loc->closed)
        return;
    if (!loc->tracing) { /* only counted, the release with it (sysmeasure-score) */
        sm_event_count(loc, SM_REC_THREAD_ACQUIRE_LOCK, 1);
        sm_event_count(loc, SM_REC_THREAD_RELEASE_LOCK, 1);
        return;
    }
    sm_ompt_lock_t *l = sm_lock(wait_id);
    if (!l)
        return;
    sm_ompt_held_t *h = &th->locks[th->held++];
    h->wait_id = wait_id;
    h->lock = __atomic_load_n(&l->id, __ATOMIC_ACQUIRE) - 1;
    h->order = __atomic_fetch_add(&l->order, 1, __ATOMIC_RELAXED);
    /* Written under the lock: one writer at a time; readers check the tag
     * before and after (a seqlock). */
    __typeof__(l->acquired[0]) *at = &l->acquired[h->order & (SM_LOCK_HISTORY - 1)];
    __atomic_store_n(&at->tag, 0, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    __atomic_store_n(&at->time, t, __ATOMIC_RELAXED);
    __atomic_store_n(&at->tag, (uint64_t)h->order + 1, __ATOMIC_RELEASE);
    uint64_t order = h->order;
    sm_event_record(loc, SM_REC_THREAD_ACQUIRE_LOCK, h->lock, SM_PARADIGM_OPENMP, t, &order, 1);
}

/* The lock the thread releases among those it holds, or NULL. */
static sm_ompt_held_t *sm_lock_held(sm_ompt_thread_t *th, ompt_wait_id_t wait_id)
{
    if (th == &sm_ompt_nomem)
        return NULL;
    uint32_t n = th->held < SM_MAX_HELD ? th->held : SM_MAX_HELD;
    for (uint32_t i = n; i--;)
        if (th->locks[i].wait_id == wait_id)
            return &th->locks[i];
    return NULL;
}

/* The release time of h, taken at t after the unlock: no later than the
 * next acquisition's, never before what the thread recorded already. */
static uint64_t sm_lock_release_time(const sm_ompt_thread_t *th, const sm_location_t *loc,
                                     const sm_ompt_held_t *h, uint64_t t)
{
    sm_ompt_lock_t *l = sm_lock(h->wait_id);
    if (!l)
        return t;
    uint32_t next = h->order + 1;
    const __typeof__(l->acquired[0]) *at = &l->acquired[next & (SM_LOCK_HISTORY - 1)];
    uint64_t tag = __atomic_load_n(&at->tag, __ATOMIC_ACQUIRE);
    if (tag != (uint64_t)next + 1)
        return t; /* not acquired again yet (or twice since: then unknown) */
    uint64_t next_time = __atomic_load_n(&at->time, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&at->tag, __ATOMIC_RELAXED) != tag || next_time >= t)
        return t;
    t = next_time;
    if (t < th->last)
        t = th->last;
    if (t < loc->sp->start)
        t = loc->sp->start;
    return t;
}

static void sm_lock_released(sm_ompt_thread_t *th, sm_location_t *loc, sm_ompt_held_t *h,
                             uint64_t t)
{
    if (!h) {
        if (th->held > SM_MAX_HELD)
            th->held--; /* one of those only counted */
        return;
    }
    uint64_t order = h->order;
    sm_event_record(loc, SM_REC_THREAD_RELEASE_LOCK, h->lock, SM_PARADIGM_OPENMP, t, &order, 1);
    uint32_t n = th->held < SM_MAX_HELD ? th->held : SM_MAX_HELD;
    memmove(h, h + 1, (size_t)(&th->locks[n] - (h + 1)) * sizeof *h);
    th->held--;
}

/* ---------------------------------------------------------------- mutex callbacks */

static sm_site_kind_t sm_wait_kind(ompt_mutex_t kind)
{
    switch (kind) {
    case ompt_mutex_lock: return SM_SITE_WAIT_LOCK;
    case ompt_mutex_nest_lock: return SM_SITE_WAIT_NEST_LOCK;
    case ompt_mutex_critical: return SM_SITE_WAIT_CRITICAL;
    case ompt_mutex_atomic: return SM_SITE_WAIT_ATOMIC;
    case ompt_mutex_ordered: return SM_SITE_WAIT_ORDERED;
    default: return 0; /* test_lock, test_nest_lock: they do not wait */
    }
}

/* The structured ones (critical, atomic, ordered) are also regions while
 * held; locks are not, since a program may release them in any order. */
static sm_site_kind_t sm_held_kind(ompt_mutex_t kind)
{
    switch (kind) {
    case ompt_mutex_critical: return SM_SITE_CRITICAL;
    case ompt_mutex_atomic: return SM_SITE_ATOMIC;
    case ompt_mutex_ordered: return SM_SITE_ORDERED;
    default: return 0;
    }
}

void sm_cb_mutex_acquire(ompt_mutex_t kind, unsigned int hint, unsigned int impl,
                         ompt_wait_id_t wait_id, const void *codeptr)
{
    (void)hint;
    (void)impl;
    sm_site_kind_t wait = sm_wait_kind(kind);
    if (!wait)
        return;
    sm_ompt_thread_t *th = sm_ompt_thread();
    sm_scope_push(th, sm_location_current(), SM_SCOPE_WAIT,
                  sm_site(wait, codeptr, th), wait_id, sm_clock_now());
}

void sm_cb_mutex_acquired(ompt_mutex_t kind, ompt_wait_id_t wait_id, const void *codeptr)
{
    sm_ompt_thread_t *th = sm_ompt_thread();
    sm_location_t *loc = sm_location_current();
    uint64_t t = sm_clock_now();
    if (!sm_wait_kind(kind)) { /* a test_lock that got it: no wait, no region */
        if (kind == ompt_mutex_test_lock || kind == ompt_mutex_test_nest_lock)
            sm_lock_acquired(th, loc, wait_id, t);
        return;
    }
    sm_scope_end(th, loc, SM_SCOPE_WAIT, wait_id, true, t);
    sm_lock_acquired(th, loc, wait_id, t);
    sm_site_kind_t held = sm_held_kind(kind);
    if (held)
        sm_scope_push(th, loc, SM_SCOPE_HELD, sm_site(held, codeptr, th),
                      wait_id, t);
}

void sm_cb_mutex_released(ompt_mutex_t kind, ompt_wait_id_t wait_id, const void *codeptr)
{
    (void)codeptr; /* LLVM gives none on some threads */
    sm_ompt_thread_t *th = sm_ompt_thread();
    sm_location_t *loc = sm_location_current();
    uint64_t t = sm_clock_now();
    sm_ompt_held_t *h = sm_lock_held(th, wait_id);
    if (h)
        t = sm_lock_release_time(th, loc, h, t);
    if (sm_held_kind(kind))
        sm_scope_end(th, loc, SM_SCOPE_HELD, wait_id, true, t);
    sm_lock_released(th, loc, h, t);
}

/* A nest lock the thread owns already: acquire, then this, no acquired. */
void sm_cb_nest_lock(ompt_scope_endpoint_t endpoint, ompt_wait_id_t wait_id,
                     const void *codeptr)
{
    (void)codeptr;
    if (endpoint != ompt_scope_begin)
        return;
    sm_ompt_thread_t *th = sm_ompt_thread();
    sm_scope_end(th, sm_location_current(), SM_SCOPE_WAIT, wait_id, true, sm_clock_now());
}

#endif
