/* PAPI counters per region: each application thread counts the configured
 * events in its own event set, read at every region enter and leave.
 *
 * The events are named metrics of kind counter (metrics.h), defined in the
 * configured order, so the trace names them like any other definition.  On
 * enter a frame remembers the values; on leave the difference is the
 * region's inclusive count, which also goes to the parent frame so that the
 * parent's exclusive count is its inclusive minus its children's.  With
 * tracing, a record of all values (SM_REC_COUNTERS) precedes each enter and
 * leave record, at the same time.
 *
 * Compiled only where configure found PAPI (SM_HAVE_PAPI); the hot path
 * reaches it only through one test of loc->counters. */
#ifndef SM_PAPI_COUNTERS_H
#define SM_PAPI_COUNTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "../core/compiler.h"
#include "../core/config.h"
#include "../core/location.h"

typedef struct sm_counters_thread {
    int eventset;
    uint32_t n;             /* events */
    uint32_t frames;        /* frames the values have room for */
    uint64_t *values;       /* per frame: n start values, then n children's sums */
    uint64_t failed_reads;  /* reads PAPI refused (counted as no change) */
    long long read[];       /* [n]: PAPI's output */
} sm_counters_thread_t;

/* Reads cfg's event list, starts PAPI and defines the events.  Events this
 * process cannot count are left out when cfg->papi_optional (they are
 * named by sm_counters_dropped), else no event is counted; either way one
 * line says so on stderr.  0 when counting (or nothing was asked for). */
int sm_counters_init(const sm_config_t *cfg) SM_HIDDEN;

uint32_t sm_counters_count(void) SM_HIDDEN;
const char *sm_counters_name(uint32_t i) SM_HIDDEN;
/* The metric id of event 0; the others follow in order. */
uint32_t sm_counters_first_metric(void) SM_HIDDEN;
bool sm_counters_multiplexed(void) SM_HIDDEN;
/* "A, B" or "" */
const char *sm_counters_dropped(void) SM_HIDDEN;

/* On the thread itself, when its location is bound to it; and when it ends. */
void sm_counters_thread_start(sm_location_t *loc) SM_HIDDEN;
void sm_counters_thread_stop(sm_location_t *loc) SM_HIDDEN;

/* Frame f was just pushed (enter at t), or is about to be popped (leave). */
void sm_counters_enter(sm_location_t *loc, sm_frame_t *f, uint64_t t) SM_HIDDEN;
void sm_counters_leave(sm_location_t *loc, sm_frame_t *f, uint64_t t) SM_HIDDEN;

#endif
