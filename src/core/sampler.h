/* The background sampler thread: one per process, started when the first
 * sampler is registered while the runtime runs, and stopped at finalize.
 *
 * A sampler is a source of metric values read at a period: process and
 * system figures from /proc (src/sampling/process_sampler.c), and later GPU
 * power, clocks and memory (NVML, rocm-smi).  To add one, fill an
 * sm_sampler_t and call sm_sampler_register; its read function runs on the
 * sampler thread only, never on an application thread, and reports values
 * through sm_sample_put.  The core takes care of the rest: each sampler gets
 * a metric location of its own (a timeline in the trace), and every value
 * updates the metric's min/mean/max/last for the summary (metrics.h).
 *
 * The thread sleeps between samples (a timed wait, never a spin), has every
 * signal blocked, and is not a measured thread: it has no location of its
 * own and is not created through sysmeasure's pthread_create wrapper. */
#ifndef SM_SAMPLER_H
#define SM_SAMPLER_H

#include <stdint.h>
#include "compiler.h"
#include "metrics.h"

/* Where a read function puts its values: one timestamp per read. */
typedef struct sm_sample_sink sm_sample_sink_t;

typedef struct sm_sampler {
    const char *name;   /* names its metric location: "<name> metrics" */
    uint64_t period_ns; /* 0: the configured sampling interval */
    void *ctx;          /* handed to the functions */
    /* Optional, on the sampler thread before the first read: define the
     * metrics (sm_metric_define), open files.  Non-zero: the sampler is
     * dropped (it says why itself, one line). */
    int (*start)(void *ctx);
    /* Each period: sm_sample_put for every value read now. */
    void (*read)(void *ctx, sm_sample_sink_t *sink);
    /* Optional, on the sampler thread after the last read (at finalize). */
    void (*stop)(void *ctx);
} sm_sampler_t;

/* A value of metric id (from sm_metric_define) at the sink's time. */
void sm_sample_put(sm_sample_sink_t *sink, sm_metric_id_t id, uint64_t value) SM_HIDDEN;

/* A value measured at an earlier time (core ticks) than the read: a device
 * that samples by itself (GPU PM sampling) hands over its samples in
 * batches, each at its own time.  Times must increase per metric. */
void sm_sample_put_at(sm_sample_sink_t *sink, sm_metric_id_t id, uint64_t value,
                      uint64_t time) SM_HIDDEN;

/* Non-zero in a sampler's last read, at the end of the run (a sampler that
 * must stop its source before the last values does it then). */
int sm_sample_last(const sm_sample_sink_t *sink) SM_HIDDEN;

/* Register a sampler (the struct is copied; ctx must outlive the run).  The
 * thread starts with the first registration.  0, or -1 when the table (16
 * samplers) is full, the runtime is not active or the thread cannot start
 * (message printed). */
int sm_sampler_register(const sm_sampler_t *s) SM_HIDDEN;

/* Ends the sampler registered with ctx now, on the calling thread: waits
 * (no spin) for a read of it under way on the sampler thread, then makes
 * its last read (sm_sample_last non-zero) and its stop here; the sampler
 * thread leaves it alone from then on.  For a source whose library is torn
 * down at exit before the runtime's own end (the CUDA runtime and CUPTI:
 * the GPU backend calls this from an atexit handler of its own).  0, or -1
 * when no sampler has that ctx.  Ending an ended sampler does nothing. */
int sm_sampler_finish_now(const void *ctx) SM_HIDDEN;

/* The interval for samplers with period_ns 0 (from the configuration). */
void sm_samplers_set_default_period(uint64_t period_ns) SM_HIDDEN;

/* Takes a last sample of every sampler and waits until the thread has
 * done so (at finalize, before the locations close); the thread then sleeps
 * until the process ends instead of exiting (sampler.c says why).
 * Idempotent. */
void sm_samplers_stop(void) SM_HIDDEN;

/* In the child that goes on after daemon(): the sampler thread again, for
 * the samplers the parent had. */
void sm_samplers_after_daemon(void) SM_HIDDEN;

/* The thread's own CPU time so far in ns (for the benchmark); 0 when none. */
uint64_t sm_samplers_cpu_ns(void) SM_HIDDEN;

#endif
