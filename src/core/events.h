/* The event API that every adapter uses: enter / leave and the few other
 * events.  Enter and leave are inline: a thread-local location, a timestamp,
 * a frame push/pop, a child lookup in the call-path tree, a 16-byte append.
 * No locks, no allocation, no system calls on the common path. */
#ifndef SM_EVENTS_H
#define SM_EVENTS_H

#include <stdbool.h>
#include <stdint.h>
#include "clock.h"
#include "compiler.h"
#include "event_record.h"
#include "location.h"
#include "sm_build.h"
#include "counters.h"

/* Process-wide measurement switch (sysmeasure_start/stop).  Regions entered
 * through the user API are recorded regardless; adapters ask sm_measuring(). */
extern volatile uint8_t sm_measurement_on SM_HIDDEN;

/* --dormant (SYSMEASURE_DORMANT) while no window is open: besides
 * sm_measurement_on being 0, user API regions and the threads' begin, end
 * and creation are not recorded either, so that no event buffer is touched
 * (window.h opens and closes the windows). */
extern volatile uint8_t sm_dormant_idle SM_HIDDEN;

static inline bool sm_measuring(const sm_location_t *loc)
{
    return sm_measurement_on && loc->thread_enabled;
}

/* A 16-byte record at r, loc's reserved room, published. */
static SM_ALWAYS_INLINE void sm_trace_put(sm_location_t *loc, sm_record_t *r,
                                          sm_record_kind_t kind, uint32_t ref, uint64_t t)
{
    r->time = t;
    r->kind = (uint8_t)kind;
    r->words = 0;
    r->aux = 0;
    r->ref = ref;
    SM_BUFFER_COMMIT(loc, r + 1);
}

static inline void sm_trace_record(sm_location_t *loc, sm_record_kind_t kind, uint32_t ref,
                                   uint64_t t)
{
    sm_trace_put(loc, (sm_record_t *)SM_BUFFER_RESERVE(loc, sizeof(sm_record_t)), kind, ref, t);
}

/* Room for a 16-byte record in loc's current chunk. */
static SM_ALWAYS_INLINE bool sm_trace_room(const sm_location_t *loc)
{
    return (size_t)(loc->end - loc->pos) >= sizeof(sm_record_t);
}

/* An event beside enter/leave, counted (traced or not): sysmeasure-score
 * estimates the full trace from these counts and the profile. */
static inline void sm_event_count(sm_location_t *loc, sm_record_kind_t kind, unsigned words)
{
    loc->record_count[kind]++;
    loc->record_words[kind] += words;
}

/* The memory (bytes) that records of these counts take in a buffer
 * (sm_location_t.record_count, .record_words). */
uint64_t sm_record_count_bytes(const uint64_t *count, const uint64_t *words) SM_HIDDEN;
/* A record kind's name ("thread_fork"), as metadata.json gives the counts. */
const char *sm_record_kind_name(sm_record_kind_t kind) SM_HIDDEN;

/* Frame f, the one above the top, opened for region at t and made the top. */
static SM_ALWAYS_INLINE void sm_frame_open(sm_location_t *loc, sm_frame_t *f, sm_region_id_t region,
                                           uint64_t t, sm_profile_node_t *node)
{
    f->start = t;
    f->child = 0;
    f->region = region;
    if (loc->profiling)
        f->node = node;
    loc->sp = f;
}

/* Push a frame whose profile node is `node` (unused when not profiling). */
static inline bool sm_event_push_frame_at(sm_location_t *loc, sm_region_id_t region, uint64_t t,
                                          sm_profile_node_t *node)
{
    sm_frame_t *f = loc->sp + 1;
    if (SM_UNLIKELY(f > loc->stack_limit) && !(f = sm_location_grow_stack(loc)))
        return false; /* beyond the depth limit: counted only */
    sm_frame_open(loc, f, region, t, node);
    if (SM_UNLIKELY(loc->counters != NULL))
        sm_counters_enter(loc, f, t);
    return true;
}

/* The call-path half of an enter: find the profile node, push a frame. */
static inline bool sm_event_push_frame(sm_location_t *loc, sm_region_id_t region, uint64_t t)
{
    sm_profile_node_t *n = NULL;
    if (loc->profiling) {
        sm_profile_node_t *parent = loc->sp->node;
        n = parent->last_hit;
        if (SM_UNLIKELY(!n || n->region != region))
            n = sm_profile_child(&loc->profile, parent, region);
    }
    return sm_event_push_frame_at(loc, region, t, n);
}

static inline void sm_event_enter(sm_location_t *loc, sm_region_id_t region, uint64_t t)
{
    if (SM_UNLIKELY(loc->closed || sm_region_filtered(region)))
        return;
    if (SM_LIKELY(sm_event_push_frame(loc, region, t)) && loc->tracing)
        sm_trace_record(loc, SM_REC_ENTER, region, t);
}

/* An enter whose profile node the caller chose: `node` (a node of loc's
 * own profile) instead of the child of the current one.  Adapters fold
 * recursion with it (a task of a construct that is open below it takes
 * that frame's node), so the tree stays as small as the program's
 * constructs.  Each visit of a folded node still adds its own inclusive
 * time, so a folded node's inclusive sum counts nested visits more than
 * once; its exclusive time is exact. */
static inline void sm_event_enter_at(sm_location_t *loc, sm_region_id_t region, uint64_t t,
                                     sm_profile_node_t *node)
{
    if (SM_UNLIKELY(loc->closed))
        return;
    if (SM_LIKELY(sm_event_push_frame_at(loc, region, t, node)) && loc->tracing)
        sm_trace_record(loc, SM_REC_ENTER, region, t);
}

/* Pop frame f (the top) into the profile at t: its times, no counters. */
static SM_ALWAYS_INLINE sm_region_id_t sm_event_pop_frame_times(sm_location_t *loc, sm_frame_t *f,
                                                                uint64_t t)
{
    uint64_t incl = t - f->start;
    loc->sp = f - 1;
    (f - 1)->child += incl;
    if (loc->profiling) {
        sm_profile_node_t *n = f->node;
        if (SM_UNLIKELY(n->depth == SM_PROFILE_FOLD_DEPTH))
            (f - 1)->child -= incl; /* folded: the ancestor's own time */
        n->visits++;
        sm_stat_add(&n->incl, incl);
        sm_stat_add(&n->excl, incl - f->child);
    }
    return f->region;
}

/* The call-path half of a leave: pop the top frame into the profile.
 * Returns the region left. */
static SM_ALWAYS_INLINE sm_region_id_t sm_event_pop_frame(sm_location_t *loc, uint64_t t)
{
    sm_frame_t *f = loc->sp;
    if (SM_UNLIKELY(loc->counters != NULL))
        sm_counters_leave(loc, f, t);
    return sm_event_pop_frame_times(loc, f, t);
}

/* Leave the region on top of the stack. */
static SM_ALWAYS_INLINE void sm_event_leave_top(sm_location_t *loc, uint64_t t)
{
    if (SM_UNLIKELY(loc->sp->region == SM_DEEP_REGION)) {
        sm_location_leave_deep(loc);
        return;
    }
    sm_region_id_t region = sm_event_pop_frame(loc, t);
    if (loc->tracing)
        sm_trace_record(loc, SM_REC_LEAVE, region, t);
}

/* The common case of an enter and of a leave, inline and with no call in
 * it, so that the compiler saves no registers for it: on the Xeon host
 * most work between a pair's two clock reads adds to the pair (there, ALU
 * work that waits for a TSC read's result overlaps it hardly at all,
 * independent work about half; loads and stores mostly do).  Each returns
 * false, having recorded nothing, where the general path must do it
 * (sm_event_enter, sm_event_leave_top): the thread's first visit of the
 * call path, a full stack or chunk, counters, the clock not the TSC.
 *
 * The enter reads the clock after its checks and the profile lookup, right
 * before it stores; callers of the leave read it after their own checks:
 * the region's time leaves out the tool's own work, and the loads before
 * the read do not wait for it. */
static SM_ALWAYS_INLINE bool sm_event_enter_fast(sm_location_t *loc, sm_region_id_t region)
{
    sm_frame_t *f = loc->sp + 1;
    sm_profile_node_t *n = NULL;
    if (loc->profiling) {
        n = loc->sp->node->last_hit;
        if (SM_UNLIKELY(!n || n->region != region))
            return false;
    }
    if (SM_UNLIKELY(f > loc->stack_limit || loc->closed || sm_region_filtered(region) ||
                    loc->counters != NULL || (loc->tracing && !sm_trace_room(loc))))
        return false;
    uint64_t t = sm_clock_tsc_or_zero();
    if (SM_UNLIKELY(!t))
        return false;
    sm_frame_open(loc, f, region, t, n);
    if (loc->tracing)
        sm_trace_put(loc, (sm_record_t *)loc->pos, SM_REC_ENTER, region, t);
    return true;
}

/* The leave of the frame on top, which the caller found to be the region's
 * (and the stack not at its root, the location open), at t (not 0). */
static SM_ALWAYS_INLINE bool sm_event_leave_top_fast(sm_location_t *loc, uint64_t t)
{
    sm_frame_t *f = loc->sp;
    if (SM_UNLIKELY(f->region == SM_DEEP_REGION || loc->counters != NULL ||
                    (loc->tracing && !sm_trace_room(loc))))
        return false;
    sm_region_id_t region = sm_event_pop_frame_times(loc, f, t);
    if (loc->tracing)
        sm_trace_put(loc, (sm_record_t *)loc->pos, SM_REC_LEAVE, region, t);
    return true;
}

/* A leave that does not match the top: close the regions above `region` if it
 * is open, else count it as unmatched. */
void sm_event_leave_mismatch(sm_location_t *loc, sm_region_id_t region, uint64_t t) SM_HIDDEN;

static inline void sm_event_leave(sm_location_t *loc, sm_region_id_t region, uint64_t t)
{
    if (SM_UNLIKELY(loc->sp == loc->stack || loc->sp->region != region || loc->closed)) {
        sm_event_leave_mismatch(loc, region, t);
        return;
    }
    sm_event_leave_top(loc, t);
}

/* Adapter form: recorded only while measurement is on; a leave whose enter was
 * not recorded is dropped silently. */
static inline void sm_adapter_enter(sm_region_id_t region)
{
    sm_location_t *loc = sm_location_current();
    if (SM_LIKELY(sm_measuring(loc)))
        sm_event_enter(loc, region, sm_clock_now());
}

static inline void sm_adapter_leave(sm_region_id_t region)
{
    sm_location_t *loc = sm_location_current();
    if (SM_LIKELY(loc->sp->region == region && loc->sp != loc->stack && !loc->closed))
        sm_event_leave_top(loc, sm_clock_now());
    else if (SM_UNLIKELY(loc->deep_open && !loc->closed))
        sm_location_leave_deep(loc);
}

/* Enter/leave carrying attributes (annotated regions). */
typedef struct sm_attr_value {
    sm_attribute_id_t attribute;
    uint64_t raw; /* int64, double bits or string id, by the attribute's type */
} sm_attr_value_t;

void sm_event_enter_attrs(sm_location_t *loc, sm_region_id_t region, uint64_t t,
                          const sm_attr_value_t *attrs, uint32_t n) SM_HIDDEN;
void sm_event_leave_attrs(sm_location_t *loc, sm_region_id_t region, uint64_t t,
                          const sm_attr_value_t *attrs, uint32_t n) SM_HIDDEN;

void sm_event_measurement(sm_location_t *loc, bool on, uint64_t t) SM_HIDDEN;

/* A trace record with n payload words (messages, collectives, metrics);
 * words may be NULL when n is 0. */
void sm_event_record(sm_location_t *loc, sm_record_kind_t kind, uint32_t ref, uint16_t aux,
                     uint64_t t, const uint64_t *words, uint8_t n) SM_HIDDEN;
/* Bytes moved inside the innermost open region, for its profile. */
void sm_event_bytes(sm_location_t *loc, uint64_t sent, uint64_t received) SM_HIDDEN;
/* A message to process `to` of the n_processes of the job. */
void sm_event_matrix(sm_location_t *loc, uint32_t to, uint32_t n_processes, uint64_t bytes) SM_HIDDEN;
void sm_event_thread_create(sm_location_t *loc, uint32_t created, uint64_t t) SM_HIDDEN;

#endif
