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
 * lock seen before costs one lookup.
 *
 * Handing a lock over.  The runtime reports a release after its unlock, so
 * the next holder's acquire may be stamped before the release is: two
 * holders would overlap.  Each hand-over (acquisition n to n + 1) has one
 * word, pass[n % SM_LOCK_HISTORY], which the releasing and the acquiring
 * thread both try to fill by CAS with their own time; the second one adapts
 * to the first:
 *   - the release came first (time r): the acquisition is stamped at
 *     max(own time, r).  r was read before that CAS, the acquirer's later
 *     clock reads come after it: its events stay in order.
 *   - the acquisition came first (time a): the release is stamped at
 *     min(own time, a).  a was read after the unlock, after every event
 *     the releasing thread recorded while holding the lock.
 * A releasing thread descheduled so long that SM_LOCK_HISTORY hand-overs
 * happened since finds its word reused: it stamps the release at its own
 * last recorded time (no later than the unlock).  Either way consecutive
 * holders never overlap; the hold may only look shorter than it was. */
#define SM_LOCK_HISTORY 4 /* a power of two */
typedef struct sm_ompt_lock {
    uint64_t key;   /* wait id; 0: free */
    uint32_t id;    /* trace id + 1; 0 until the claiming thread set it */
    uint32_t order; /* acquisitions recorded so far */
    uint64_t base;  /* ticks when claimed: pass words hold times from it */
    uint64_t pass[SM_LOCK_HISTORY]; /* SM_PASS_* encoded; 0: never written */
} sm_ompt_lock_t;

/* A pass word: valid bit, the hand-over's order (7 bits, mod 128), which
 * side wrote it, and its time in ticks after the lock's base (55 bits: over
 * 80 days at 5 GHz; later the hand-over is not paired, stamped as above). */
typedef enum sm_pass_side { SM_PASS_RELEASE = 0, SM_PASS_ACQUIRE = 1 } sm_pass_side_t;
#define SM_PASS_VALID (1ull << 63)
#define SM_PASS_TAG_SHIFT 56
#define SM_PASS_TAG_MASK 0x7Fu
#define SM_PASS_SIDE (1ull << 55)
#define SM_PASS_TIME_MASK (SM_PASS_SIDE - 1)

static uint64_t sm_pass_encode(uint32_t order, sm_pass_side_t side, uint64_t delta)
{
    return SM_PASS_VALID | ((uint64_t)(order & SM_PASS_TAG_MASK) << SM_PASS_TAG_SHIFT) |
           (side == SM_PASS_ACQUIRE ? SM_PASS_SIDE : 0) | delta;
}

/* How a pass word stands to hand-over `order`. */
typedef enum sm_pass_state {
    SM_PASS_FREE,     /* empty or an older hand-over's: ours to fill */
    SM_PASS_MINE,     /* this hand-over, filled by the other side */
    SM_PASS_SAME,     /* this hand-over, filled by this side (a stale word) */
    SM_PASS_NEWER     /* a later hand-over's: this one is long past */
} sm_pass_state_t;

static sm_pass_state_t sm_pass_state(uint64_t w, uint32_t order, sm_pass_side_t side)
{
    if (!(w & SM_PASS_VALID))
        return SM_PASS_FREE;
    uint32_t d = ((uint32_t)(w >> SM_PASS_TAG_SHIFT) - order) & SM_PASS_TAG_MASK;
    if (d == 0)
        return ((w & SM_PASS_SIDE) != 0) == (side == SM_PASS_ACQUIRE) ? SM_PASS_SAME
                                                                        : SM_PASS_MINE;
    return d < (SM_PASS_TAG_MASK + 1) / 2 ? SM_PASS_NEWER : SM_PASS_FREE;
}

/* This side's time t for hand-over `order` of l: fills the word and returns
 * true, or returns false with *other the other side's time (MINE) or 0 (the
 * word is no longer this hand-over's, or t cannot be encoded). */
static bool sm_pass_offer(sm_ompt_lock_t *l, uint32_t order, sm_pass_side_t side, uint64_t t,
                          uint64_t *other)
{
    *other = 0;
    uint64_t base = __atomic_load_n(&l->base, __ATOMIC_ACQUIRE);
    uint64_t *word = &l->pass[order & (SM_LOCK_HISTORY - 1)];
    uint64_t w = __atomic_load_n(word, __ATOMIC_ACQUIRE);
    /* The other side writes the word at most once per hand-over: a CAS
     * fails at most once for it, more only for later hand-overs. */
    for (int tries = 0; tries < 8; tries++) {
        switch (sm_pass_state(w, order, side)) {
        case SM_PASS_MINE:
            *other = base + (w & SM_PASS_TIME_MASK);
            return false;
        case SM_PASS_SAME:
        case SM_PASS_NEWER:
            return false;
        case SM_PASS_FREE:
            break;
        }
        if (t < base || t - base > SM_PASS_TIME_MASK)
            return false;
        if (__atomic_compare_exchange_n(word, &w, sm_pass_encode(order, side, t - base), false,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            return true;
    }
    return false;
}

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
                __atomic_store_n(&l->base, sm_clock_now(), __ATOMIC_RELAXED);
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

/* The thread acquired a lock at *t: takes its order and remembers it for
 * the release; *t moves to the previous holder's release where that was
 * stamped later (see "Handing a lock over").  Returns what to record as
 * ThreadAcquireLock, or NULL when nothing is.  The counter moves only under
 * the lock, so the orders of one lock follow its acquisitions, with no gap. */
static sm_ompt_held_t *sm_lock_take(sm_ompt_thread_t *th, sm_location_t *loc,
                                    ompt_wait_id_t wait_id, uint64_t *t)
{
    if (th == &sm_ompt_nomem)
        return NULL;
    if (th->held >= SM_MAX_HELD) {
        th->held++;
        return NULL;
    }
    if (!sm_measuring(loc) || loc->closed)
        return NULL;
    if (!loc->tracing) { /* only counted, the release with it (sysmeasure-score) */
        sm_event_count(loc, SM_REC_THREAD_ACQUIRE_LOCK, 1);
        sm_event_count(loc, SM_REC_THREAD_RELEASE_LOCK, 1);
        return NULL;
    }
    sm_ompt_lock_t *l = sm_lock(wait_id);
    if (!l)
        return NULL;
    sm_ompt_held_t *h = &th->locks[th->held++];
    h->wait_id = wait_id;
    h->lock = __atomic_load_n(&l->id, __ATOMIC_ACQUIRE) - 1;
    h->order = __atomic_fetch_add(&l->order, 1, __ATOMIC_RELAXED);
    uint64_t released;
    if (h->order > 0 && !sm_pass_offer(l, h->order - 1, SM_PASS_ACQUIRE, *t, &released) &&
        released > *t)
        *t = released;
    h->time = *t;
    return h;
}

static void sm_lock_record_acquire(sm_location_t *loc, const sm_ompt_held_t *h)
{
    uint64_t order = h->order;
    sm_event_record(loc, SM_REC_THREAD_ACQUIRE_LOCK, h->lock, SM_PARADIGM_OPENMP, h->time,
                    &order, 1);
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
 * next acquisition's (see "Handing a lock over"), never before what the
 * thread recorded already. */
static uint64_t sm_lock_release_time(const sm_ompt_thread_t *th, const sm_location_t *loc,
                                     const sm_ompt_held_t *h, uint64_t t)
{
    sm_ompt_lock_t *l = sm_lock(h->wait_id);
    if (!l)
        return t;
    uint64_t acquired;
    if (sm_pass_offer(l, h->order, SM_PASS_RELEASE, t, &acquired))
        return t; /* first: the next acquisition will be stamped no earlier */
    if (acquired && acquired < t)
        t = acquired;
    else if (!acquired)
        t = 0; /* the hand-over is past or unknown: the last recorded time */
    if (t < h->time)
        t = h->time;
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
        if (kind == ompt_mutex_test_lock || kind == ompt_mutex_test_nest_lock) {
            sm_ompt_held_t *h = sm_lock_take(th, loc, wait_id, &t);
            if (h)
                sm_lock_record_acquire(loc, h);
        }
        return;
    }
    /* The wait ends when the lock is taken, stamped after its release. */
    sm_ompt_held_t *h = sm_lock_take(th, loc, wait_id, &t);
    sm_scope_end(th, loc, SM_SCOPE_WAIT, wait_id, true, t);
    if (h)
        sm_lock_record_acquire(loc, h);
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
