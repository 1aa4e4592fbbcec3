/* Subsystems: the optional parts with a lifecycle of their own (call-stack
 * sampling, process sampling, ...), listed once in src/plugins.def.  The
 * core calls each one's hooks at the same points of every run and never
 * names one.  Every hook may be NULL. */
#ifndef SM_SUBSYSTEM_H
#define SM_SUBSYSTEM_H

#include "compiler.h"
#include "config.h"
#include "location.h"
#include "runtime.h"

typedef struct sm_subsystem {
    const char *name;
    /* At start-up, before the first thread is bound: reads its own rows of
     * cfg (config_vars.def) and starts, or stays off with one line saying
     * why.  0, or -1 when off. */
    int (*init)(const sm_config_t *cfg);
    /* On a CPU thread right after it is bound to its location. */
    void (*thread_begin)(sm_location_t *loc);
    /* When a CPU thread's location closes: on the thread, or on the thread
     * that ends the run. */
    void (*thread_end)(sm_location_t *loc);
    /* In the child that carries the measurement on after daemon() (the
     * fork's parent ends there): what is per thread and not inherited
     * (timers) made again for the calling thread. */
    void (*after_daemon)(void);
    /* The end of the run begins: produce nothing more (timers off). */
    void (*stop)(void);
    /* Then, before the threads' open regions are closed: hand over what is
     * still in flight (GPU records, OpenMP teams, function names), add
     * notes (sm_runtime_add_note).  Not called for a process whose output
     * is discarded. */
    void (*flush)(const sm_run_info_t *run);
    /* The locations are closed and the clock calibrated: turn what was
     * kept aside into profile nodes, definitions and records. */
    void (*end)(void);
} sm_subsystem_t;

/* This build's subsystems (src/plugins.c, from src/plugins.def),
 * NULL-terminated. */
extern const sm_subsystem_t *const sm_subsystems[] SM_HIDDEN;

void sm_subsystems_init(const sm_config_t *cfg) SM_HIDDEN;
void sm_subsystems_thread_begin(sm_location_t *loc) SM_HIDDEN;
void sm_subsystems_thread_end(sm_location_t *loc) SM_HIDDEN;
void sm_subsystems_after_daemon(void) SM_HIDDEN;
void sm_subsystems_stop(void) SM_HIDDEN;
void sm_subsystems_flush(const sm_run_info_t *run) SM_HIDDEN;
void sm_subsystems_end(void) SM_HIDDEN;

#endif
