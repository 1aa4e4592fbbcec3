/* Causal profiling (--causal), after Coz (Curtsinger and Berger, SOSP
 * 2015): which function, made faster, would make the whole program faster.
 *
 * An experiment picks one function of the program (one that samples hit)
 * and a virtual speedup s (0 to 100 % in steps of 5, 0 % about half of the
 * time).  Each thread samples its own CPU time (a timer per thread, about
 * 1 ms); a sample inside the chosen function stands for s x period of
 * time saved, which every other thread pays by sleeping (a global delay
 * count and one per thread: causal_delay.c).  The rate of progress points
 * (sysmeasure_progress, the end of a named region) over the experiment,
 * with the delays taken out of its duration, says how fast the program
 * would run with that function s faster.
 *
 * Off by default: the subsystem does nothing, no timer, no thread, and the
 * interposed synchronisation calls live in libsysmeasure-causal.so, which
 * the launcher preloads only with --causal. */
#ifndef SM_CAUSAL_H
#define SM_CAUSAL_H

#include <stdint.h>
#include "../core/compiler.h"
#include "../core/definitions.h"
#include "../core/subsystem.h"

/* Its lifecycle (src/plugins.def). */
extern const sm_subsystem_t sm_causal_subsystem SM_HIDDEN;

/* Progress points (causal_progress.c): a throughput point passed once, a
 * latency point's begin and end.  Cheap after a name's first use (no lock,
 * no allocation); nothing when causal profiling is off.  0, or -1 when the
 * table of points is full or the name is empty. */
typedef enum {
    SM_PROGRESS_THROUGHPUT,
    SM_PROGRESS_BEGIN,
    SM_PROGRESS_END
} sm_progress_kind_t;
int sm_causal_progress(const char *name, sm_progress_kind_t kind) SM_HIDDEN;

/* Whether causal profiling runs (a load; for the user API's region end). */
extern volatile int sm_causal_running SM_HIDDEN;
/* A region has ended on the calling thread: a progress point when it is
 * one of --causal-progress's. */
void sm_causal_region_end(sm_region_id_t region) SM_HIDDEN;
/* An OpenMP parallel region ended (its encountering thread): a pass of
 * the point "openmp" when --causal-progress names it. */
void sm_causal_openmp_end(void) SM_HIDDEN;

#endif
