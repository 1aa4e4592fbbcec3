/* Counters per region: hardware or software event counts read at every
 * region enter and leave of a thread, from the counter sources listed in
 * src/plugins.def (PAPI today; src/sources/null/null_source.c is the
 * template for another).
 *
 * A source only starts its counting on a thread and reads the current
 * values; everything else is here, once: the events are named metrics of
 * kind counter (metrics.h), defined in order, so the trace names them like
 * any other definition.  On enter a frame remembers the values; on leave
 * the difference is the region's inclusive count, which also goes to the
 * parent frame so that the parent's exclusive count is its inclusive minus
 * its children's.  With tracing, a record of all values (SM_REC_COUNTERS)
 * precedes each enter and leave record, at the same time.  The hot path
 * reaches this module only through one test of loc->counters. */
#ifndef SM_COUNTERS_H
#define SM_COUNTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "compiler.h"
#include "config.h"
#include "location.h"

/* Most events counted at once, over all sources; most sources. */
#define SM_COUNTERS_MAX 32
#define SM_COUNTER_SOURCES_MAX 8

/* A counter source.  Its functions run at start-up (init), and on each
 * application thread itself (thread_start, read, thread_stop). */
typedef struct sm_counter_source {
    const char *name; /* in messages: "PAPI" */
    /* Reads the source's rows of cfg and prepares counting; the events'
     * names go into names[0..max) (each at most 127 bytes and static or
     * owned by the source).  Returns how many (0: nothing asked for, or
     * nothing countable: the source said why in one line). */
    uint32_t (*init)(const sm_config_t *cfg, const char **names, uint32_t max);
    /* The unit of its values ("events"). */
    const char *unit;
    /* Counting starts on the calling thread: its state, or NULL (counting
     * does not start there; the source said why, naming `thread`). */
    void *(*thread_start)(const char *thread);
    /* The current values of its events into values; false when the read
     * failed (the core then counts no change). */
    bool (*read)(void *state, uint64_t *values);
    /* Counting ends on the calling thread (the thread that started it). */
    void (*thread_stop)(void *state, const char *thread);
    /* Lines for the summary's notes (estimates, events left out), each
     * through add; may be NULL. */
    void (*notes)(void (*add)(const char *line));
} sm_counter_source_t;

/* The sources of this build (src/plugins.c, from src/plugins.def),
 * NULL-terminated. */
extern const sm_counter_source_t *const sm_counter_sources[] SM_HIDDEN;

/* Per thread: each source's state, and per frame n start values then n
 * children's sums. */
typedef struct sm_counters_thread {
    void *state[SM_COUNTER_SOURCES_MAX]; /* per counting source, NULL where it failed */
    uint32_t n;                   /* events */
    uint32_t frames;              /* frames the values have room for */
    uint64_t *values;
    uint64_t failed_reads;        /* reads a source refused (counted as no change) */
    uint64_t read[SM_COUNTERS_MAX];
} sm_counters_thread_t;

/* Starts every source and defines their events (before the first thread is
 * bound).  0 when counting or nothing was asked for. */
int sm_counters_init(const sm_config_t *cfg) SM_HIDDEN;
/* The sources' notes for the summary. */
void sm_counters_notes(void (*add)(const char *line)) SM_HIDDEN;

uint32_t sm_counters_count(void) SM_HIDDEN;
const char *sm_counters_name(uint32_t i) SM_HIDDEN;
/* The metric id of event 0; the others follow in order. */
uint32_t sm_counters_first_metric(void) SM_HIDDEN;

/* On the thread itself, when its location is bound to it; and when it ends. */
void sm_counters_thread_start(sm_location_t *loc) SM_HIDDEN;
void sm_counters_thread_stop(sm_location_t *loc) SM_HIDDEN;

/* Frame f was just pushed (enter at t), or is about to be popped (leave). */
void sm_counters_enter(sm_location_t *loc, sm_frame_t *f, uint64_t t) SM_HIDDEN;
void sm_counters_leave(sm_location_t *loc, sm_frame_t *f, uint64_t t) SM_HIDDEN;

#endif
