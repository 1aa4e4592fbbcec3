/* Throttling of tiny hot functions, shared by the adapters that make every
 * function a region (compiler instrumentation, Python functions).
 *
 * A function starts "counting": its calls and their inclusive time are
 * summed; after throttle_calls calls it is either traced from then on or,
 * when its calls took less than throttle_per_call us each, throttled: no
 * longer entered, only counted.  A throttled function gets a slot; its
 * calls are counted per thread (loc->throttled_calls[slot], a plain
 * increment: no atomic on that path) and summed at the end.  The end
 * (sm_throttle_subsystem) lists the throttled functions of every adapter
 * in the summary and in throttled.filter.
 *
 * Each adapter keeps an sm_throttle_fn_t per function in its own table
 * (found without a lock); this module decides and reports. */
#ifndef SM_THROTTLE_H
#define SM_THROTTLE_H

#include <stdint.h>

#include "../core/compiler.h"
#include "../core/definitions.h"
#include "../core/location.h"
#include "../core/subsystem.h"

typedef enum sm_fn_state {
    SM_FN_TRACED,    /* the common case: enter and leave */
    SM_FN_COUNTING,  /* traced, calls and time summed until throttling decides */
    SM_FN_THROTTLED, /* only counted */
    SM_FN_FILTERED,  /* left out by a filter */
} sm_fn_state_t;

typedef struct sm_throttle_fn {
    sm_region_id_t region;
    uint32_t state;       /* sm_fn_state_t, read and written atomically */
    uint32_t slot;        /* throttled: index into loc->throttled_calls */
    uint32_t pad;
    uint64_t calls;       /* while counting (and throttled beyond the slots) */
    uint64_t ticks;       /* inclusive, while counting */
} sm_throttle_fn_t;

/* Throttled functions with a per-thread counter; beyond, an atomic one. */
#define SM_THROTTLE_SLOTS 1024u

/* The state a newly defined function starts in: FILTERED for an invalid or
 * filtered region, else COUNTING when throttling is on, else TRACED.  The
 * first call reads the configuration. */
sm_fn_state_t sm_throttle_initial_state(sm_region_id_t region) SM_HIDDEN;

/* A COUNTING function was left after incl ticks: summed, and once it has
 * throttle_calls calls it is judged (traced or throttled, once). */
void sm_throttle_counted_leave(sm_throttle_fn_t *f, uint64_t incl) SM_HIDDEN;

/* A throttled call without the thread's counters yet (or beyond the slots). */
void sm_throttle_count_slow(sm_location_t *loc, sm_throttle_fn_t *f) SM_HIDDEN;

/* A call of a THROTTLED function: counted. */
static inline void sm_throttle_call(sm_location_t *loc, sm_throttle_fn_t *f)
{
    uint32_t slot = f->slot;
    uint64_t *c = loc->throttled_calls;
    if (SM_LIKELY(c != NULL && slot < SM_THROTTLE_SLOTS))
        c[slot]++;
    else
        sm_throttle_count_slow(loc, f);
}

/* Its part of the end (src/plugins.def): the throttled functions in the
 * summary's notes and in throttled.filter. */
extern const sm_subsystem_t sm_throttle_subsystem SM_HIDDEN;

#endif
