/* The clock: raw ticks on the hot path (rdtsc where the TSC is invariant, else
 * CLOCK_MONOTONIC in ns), converted to nanoseconds at finalize through a
 * two-point calibration against CLOCK_MONOTONIC (start and end of the run). */
#ifndef SM_CLOCK_H
#define SM_CLOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define SM_CLOCK_HAVE_TSC 1
#endif
#include "compiler.h"

extern bool sm_clock_use_tsc SM_HIDDEN;

static inline uint64_t sm_clock_monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Ticks: the unit of every timestamp in the event layer. */
static inline uint64_t sm_clock_now(void)
{
#ifdef SM_CLOCK_HAVE_TSC
    if (SM_LIKELY(sm_clock_use_tsc))
        return __rdtsc();
#endif
    return sm_clock_monotonic_ns();
}

/* The clock read of the inline fast paths (events.h): the TSC, or 0 where
 * the clock is CLOCK_MONOTONIC, whose read is a call: a path with a call in
 * it saves registers on every pass, so those leave it to the general one. */
static SM_ALWAYS_INLINE uint64_t sm_clock_tsc_or_zero(void)
{
#ifdef SM_CLOCK_HAVE_TSC
    if (SM_LIKELY(sm_clock_use_tsc))
        return __rdtsc();
#endif
    return 0;
}

/* Whether this CPU's TSC is invariant (constant_tsc and nonstop_tsc). */
bool sm_clock_tsc_invariant(void) SM_HIDDEN;

/* Choose the source (SM_CLOCK_AUTO/TSC/MONOTONIC from config.h) and take the
 * first calibration point.  Returns the source actually used. */
int sm_clock_init(int requested) SM_HIDDEN;

/* Take the second calibration point (a run shorter than 10 ms takes the TSC
 * rate the CPU states, if any; see clock.c).  Idempotent. */
void sm_clock_finish(void) SM_HIDDEN;

/* After sm_clock_finish: ticks to CLOCK_MONOTONIC nanoseconds, and a duration
 * in ticks to ns. */
uint64_t sm_clock_to_ns(uint64_t ticks) SM_HIDDEN;
double sm_clock_ns_per_tick(void) SM_HIDDEN;
/* Ticks per second (measured), and the name of the source ("tsc"/"monotonic"). */
double sm_clock_ticks_per_second(void) SM_HIDDEN;
const char *sm_clock_source_name(void) SM_HIDDEN;
/* CLOCK_REALTIME ns at the first calibration point, for absolute dates. */
uint64_t sm_clock_realtime_at_init_ns(void) SM_HIDDEN;
uint64_t sm_clock_monotonic_at_init_ns(void) SM_HIDDEN;

/* The job's timeline is rank 0's CLOCK_MONOTONIC: offsets measured at
 * MPI_Init (which 0) and MPI_Finalize (1) map this process's ns onto it,
 * linearly between the two.  Without offsets the map is the identity. */
void sm_clock_set_offset(int which, uint64_t local_ns, int64_t offset_ns) SM_HIDDEN;

/* The conversion as data, for a process's file that sysmeasure-merge reads:
 * the calibration and the offsets. */
typedef struct sm_clock_params {
    uint64_t tick0, mono0;
    double ns_per_tick;
    uint32_t have_offset[2];
    uint64_t offset_local_ns[2];
    int64_t offset_ns[2];
} sm_clock_params_t;
void sm_clock_export(sm_clock_params_t *p) SM_HIDDEN;
uint64_t sm_clock_to_job_ns(uint64_t ticks) SM_HIDDEN;

/* A process's ticks to ns on the job's timeline, as data: the calibration
 * and the offsets with the drift divided once (the one definition of that
 * arithmetic; the writer converts every event inline with it: through a
 * function per event it was a sixth of the end of the run's encoding). */
typedef struct sm_clock_job {
    uint64_t tick0;
    int64_t mono0;
    double ns_per_tick;
    int sloped;     /* offset + slope * (ns - local0); else offset */
    double slope;
    int64_t offset;
    uint64_t local0;
} sm_clock_job_t;
/* From a process's parameters (sm_clock_export's, or a process file's). */
void sm_clock_job_of(const sm_clock_params_t *p, sm_clock_job_t *c) SM_HIDDEN;
/* This process's, once the offsets are known. */
void sm_clock_job_get(sm_clock_job_t *c) SM_HIDDEN;

/* The offset at local ns: linear between the two points (a constant
 * drift), extended beyond; the one known, or 0. */
/* A double of ns as int64_t: beyond the range (only times from a damaged
 * or crafted file get there) it is clamped, never undefined. */
static inline int64_t sm_clock_ns_i64(double v)
{
    if (!(v > -9.0e18 && v < 9.0e18))
        v = v < 0 ? -9.0e18 : 9.0e18;
    return (int64_t)v;
}

static inline int64_t sm_clock_job_offset(const sm_clock_job_t *c, uint64_t ns)
{
    return c->sloped ? (int64_t)((uint64_t)c->offset +
                                 (uint64_t)sm_clock_ns_i64(c->slope *
                                                           (double)(int64_t)(ns - c->local0)))
                     : c->offset;
}

static inline uint64_t sm_clock_job_ns(const sm_clock_job_t *c, uint64_t ticks)
{
    double delta = ((double)(int64_t)(ticks - c->tick0)) * c->ns_per_tick;
    uint64_t ns = (uint64_t)c->mono0 + (uint64_t)sm_clock_ns_i64(delta < 0 ? delta - 0.5
                                                                           : delta + 0.5);
    return ns + (uint64_t)sm_clock_job_offset(c, ns);
}

#endif
