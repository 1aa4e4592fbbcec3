/* Chunked event buffers under one memory budget, spilled to disk by a
 * background writer thread (see buffer.h).  This file: the budget and the
 * chunks.  The others, each one concern (their shared parts in
 * buffer_private.h):
 *   buffer_spill_file.c   the spill file: its name, header, frames
 *   buffer_crash_safe.c   --crash-safe: chunks that are slots of that file
 *   buffer_writer.c       the writer thread; a fork; a thread's end
 *   buffer_spill.c        a new chunk, handing full ones over, spilling
 *   buffer_stop.c         the trace stopped (a disk limit)
 *   buffer_readback.c     reading a location's records back, in order
 *   buffer_feed.c         background encoding: chunks fed to the encoder
 *   buffer_left_behind.c  spill files read by sysmeasure-merge */
#define _GNU_SOURCE
#include "buffer_private.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "pages.h"

/* ---------------------------------------------------------------- chunks */

uint64_t sm_budget = 64u << 20;
uint64_t sm_chunk_bytes = 256u << 10;
uint64_t sm_mark = 48u << 20; /* hand over above this */
int sm_crash;                 /* --crash-safe */
uint64_t sm_slot_bytes;       /* crash-safe slot size (page multiple) */
uint64_t sm_in_use;           /* atomic */
uint64_t sm_peak;             /* atomic */
int sm_discard;               /* forked child: records are not kept */

void sm_buffers_configure(uint64_t budget_bytes, uint64_t chunk_bytes)
{
    sm_budget = budget_bytes;
    sm_chunk_bytes = chunk_bytes;
    /* Hand over early enough that the application goes on in the headroom
     * while the writer writes: a quarter of the budget, at least 2 chunks. */
    uint64_t room = budget_bytes / 4;
    if (room < 2 * SM_CHUNK_TOTAL(chunk_bytes))
        room = 2 * SM_CHUNK_TOTAL(chunk_bytes);
    sm_mark = budget_bytes > room ? budget_bytes - room : 0;
}

uint64_t sm_buffers_in_use(void)
{
    return __atomic_load_n(&sm_in_use, __ATOMIC_RELAXED);
}

uint64_t sm_buffers_peak(void)
{
    return __atomic_load_n(&sm_peak, __ATOMIC_RELAXED);
}

uint64_t sm_buffers_budget(void)
{
    return sm_budget;
}

uint64_t sm_buffers_chunk_size(void)
{
    return sm_chunk_bytes;
}

void sm_buffer_init(sm_location_t *loc)
{
    memset(&loc->buffer, 0, sizeof loc->buffer);
    loc->pos = loc->end = NULL;
    loc->live_end = NULL;
}

/* Chunks a location gave back (after a spill, or when it is freed) are kept
 * for the next one: the memory stays mapped and touched, so refilling a
 * buffer costs no page faults.  The list never holds more than the budget
 * (plus one chunk per thread) ever allocated. */
static sm_chunk_t *sm_free_chunks;
pthread_mutex_t sm_free_lock = PTHREAD_MUTEX_INITIALIZER;

static void sm_chunk_account(sm_chunk_t *c)
{
    uint64_t now = __atomic_add_fetch(&sm_in_use, SM_CHUNK_TOTAL(c->capacity), __ATOMIC_RELAXED);
    uint64_t peak = __atomic_load_n(&sm_peak, __ATOMIC_RELAXED);
    while (now > peak && !__atomic_compare_exchange_n(&sm_peak, &peak, now, 1, __ATOMIC_RELAXED,
                                                      __ATOMIC_RELAXED))
        ;
}

sm_chunk_t *sm_chunk_alloc(void)
{
    if (__atomic_load_n(&sm_crash, __ATOMIC_ACQUIRE)) {
        sm_chunk_t *m = sm_crash_chunk_map();
        if (m) {
            sm_chunk_account(m);
            return m;
        }
    }
    pthread_mutex_lock(&sm_free_lock);
    sm_chunk_t *c = sm_free_chunks;
    if (c)
        sm_free_chunks = c->next;
    pthread_mutex_unlock(&sm_free_lock);
    if (c && c->capacity != sm_chunk_bytes) { /* chunk size changed (tests) */
        sm_pages_put(c, SM_CHUNK_TOTAL(c->capacity));
        c = NULL;
    }
    if (!c) {
        /* Populated memory (huge pages where offered, pages.h): faulting a
         * fresh chunk in page by page from the hot path costs several times more. */
        void *p = sm_pages_get(SM_CHUNK_TOTAL(sm_chunk_bytes));
        if (!p)
            return NULL;
        c = p;
        c->capacity = (uint32_t)sm_chunk_bytes;
    }
    c->next = c->qnext = NULL;
    c->owner = NULL;
    c->used = 0;
    c->slot_magic = c->slot_base = c->slot_offset = 0;
    c->live_end = NULL;
    sm_chunk_account(c);
    return c;
}

void sm_chunk_free(sm_chunk_t *c)
{
    __atomic_sub_fetch(&sm_in_use, SM_CHUNK_TOTAL(c->capacity), __ATOMIC_RELAXED);
    if (c->slot_offset) { /* its records are in the file: the memory goes */
        sm_crash_chunk_unmap(c);
        return;
    }
    pthread_mutex_lock(&sm_free_lock);
    c->next = sm_free_chunks;
    sm_free_chunks = c;
    pthread_mutex_unlock(&sm_free_lock);
}

void sm_buffers_release(void)
{
    pthread_mutex_lock(&sm_free_lock);
    sm_chunk_t *c = sm_free_chunks;
    sm_free_chunks = NULL;
    pthread_mutex_unlock(&sm_free_lock);
    while (c) {
        sm_chunk_t *next = c->next;
        sm_pages_put(c, SM_CHUNK_TOTAL(c->capacity));
        c = next;
    }
}

uint64_t sm_buffer_memory(const sm_location_t *loc)
{
    uint64_t bytes = 0;
    for (const sm_chunk_t *c = loc->buffer.first; c; c = c->next)
        bytes += SM_CHUNK_TOTAL(c->capacity);
    return bytes;
}

void sm_buffers_account(int64_t delta)
{
    if (delta >= 0) {
        uint64_t now = __atomic_add_fetch(&sm_in_use, (uint64_t)delta, __ATOMIC_RELAXED);
        uint64_t peak = __atomic_load_n(&sm_peak, __ATOMIC_RELAXED);
        while (now > peak && !__atomic_compare_exchange_n(&sm_peak, &peak, now, 1,
                                                          __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            ;
    } else {
        __atomic_sub_fetch(&sm_in_use, (uint64_t)-delta, __ATOMIC_RELAXED);
    }
}

static void sm_buffer_drop(sm_location_t *loc, int remove_spill);

void sm_buffer_free(sm_location_t *loc)
{
    sm_buffer_drop(loc, 1);
}

void sm_buffer_forget(sm_location_t *loc)
{
    sm_buffer_drop(loc, 0);
    sm_buffer_t *b = &loc->buffer;
    b->spills = b->spilled_bytes = b->spill_waits = b->dropped_records = 0;
    b->n_chunks = 0;
}

static void sm_buffer_drop(sm_location_t *loc, int remove_spill)
{
    sm_buffer_t *b = &loc->buffer;
    sm_buffers_quiesce();
    if (b->scratch)
        sm_pages_put(b->scratch, SM_CHUNK_TOTAL(b->scratch->capacity));
    b->scratch = NULL;
    free(b->stop_open);
    b->stop_open = NULL;
    for (sm_chunk_t *c = b->first, *next; c; c = next) {
        next = c->next;
        sm_chunk_free(c);
    }
    pthread_mutex_lock(&sm_w_lock);
    for (sm_chunk_t *c = b->flying_first, *next; c; c = next) {
        next = c->next;
        /* Still in the (stopped) writer's queue: take it out. */
        sm_chunk_t **p = &sm_q_head, *prev = NULL;
        while (*p && *p != c) {
            prev = *p;
            p = &(*p)->qnext;
        }
        if (*p) {
            *p = c->qnext;
            if (sm_q_tail == c)
                sm_q_tail = prev;
        }
        sm_chunk_free(c);
    }
    b->flying_first = b->flying_last = NULL;
    pthread_mutex_unlock(&sm_w_lock);
    b->first = b->current = NULL;
    loc->pos = loc->end = NULL;
    loc->live_end = NULL;
    if (remove_spill)
        sm_buffer_remove_spill(loc);
    else
        sm_buffer_spill_forget(loc);
}
