/* Call-stack sampling (--sampling): a timer per measured thread
 * (timer_create with SIGEV_THREAD_ID, on the thread's CPU time or on wall
 * time), and a signal handler that unwinds the interrupted stack with
 * libunwind into the thread's own preallocated tables.  The handler takes
 * no lock, allocates nothing, preserves errno, and is installed with
 * SA_RESTART so that the program's system calls are restarted, never cut
 * short with EINTR because of it.
 *
 * The signal is a real-time signal that no handler uses at start (SIGPROF
 * and the program's own timers stay the program's).  At the end of the run
 * the samples become:
 *  - nodes of the threads' call-path profiles, under the instrumented path
 *    active at each sample (regions of paradigm "sampling": function, source
 *    file and line of its start, module in the calling contexts); visits =
 *    samples in the node (inclusive), time = samples x period;
 *  - calling contexts (contexts.h) and one SM_REC_CALLING_CONTEXT_SAMPLE
 *    record per sample in the thread's trace. */
#ifndef SM_CALLSTACK_H
#define SM_CALLSTACK_H

#include <stdint.h>
#include "../core/compiler.h"
#include "../core/config.h"
#include "../core/subsystem.h"

/* Its lifecycle (src/plugins.def): init, a timer per thread, stop, end. */
extern const sm_subsystem_t sm_callstack_subsystem SM_HIDDEN;

/* Before the first thread is bound.  Sampling stays off, with one line,
 * when the build has no libunwind or no free signal.  0 or -1. */
int sm_callstack_init(const sm_config_t *cfg) SM_HIDDEN;
/* Every timer off, no sample from now on (the start of finalize). */
void sm_callstack_stop(void) SM_HIDDEN;
/* In the child that goes on after daemon(): the calling thread samples
 * again (a forked child has no timers). */
void sm_callstack_after_daemon(void) SM_HIDDEN;
/* After the locations closed: symbols, profile nodes, contexts, records. */
void sm_callstack_finish(void) SM_HIDDEN;

/* The sampling signal while timers run, else 0 (syscall_guard.c). */
int sm_callstack_active_signal(void) SM_HIDDEN;

typedef struct sm_callstack_stats {
    uint64_t samples;      /* recorded */
    uint64_t lost;         /* table full, or no stack unwound */
    uint64_t trace_lost;   /* kept in the profile, not in the trace */
    uint32_t threads;      /* threads that had a timer */
    uint32_t timer_failures;
    int signal;            /* 0 when sampling is off */
} sm_callstack_stats_t;
void sm_callstack_stats(sm_callstack_stats_t *out) SM_HIDDEN;

#endif
