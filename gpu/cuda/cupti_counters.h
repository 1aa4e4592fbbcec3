/* Per-kernel GPU counters on NVIDIA: CUPTI's range profiler (auto range:
 * one range per kernel launch; kernel replay: each kernel replayed as often
 * as its metrics need), driven from the launch callbacks of
 * cupti_backend.c.
 *
 * Per context, on the launching thread: the profiler is set up at the
 * context's first launch (device support, chip, counter availability,
 * config images of the metric groups, counter data image), the launches
 * counted since the last decode are remembered in order (one range each),
 * and every SM_CUC_RANGES launches (and at a context's end and the end of
 * the run) the ranges are decoded and evaluated.  A launch's values are
 * joined to its kernel activity record by correlation id, whichever comes
 * first, and handed to the core (gpu_counters).
 *
 * Modes: kernel (all groups in one config), rotate (groups take turns every
 * `interval` launches of a kernel: the config changes between launches),
 * application (the group of this pass, SYSMEASURE_GPU_PASS).  Kernel
 * filters (name regexes, iteration ranges) pause the profiler around the
 * launches they leave out. */
#ifndef SM_CUPTI_COUNTERS_H
#define SM_CUPTI_COUNTERS_H

#include <stdint.h>
#include <cuda.h>
#include "../../src/core/adapter_api.h"

/* Reads the configuration; non-zero when counters are asked for (the spec
 * was already checked by the launcher; a bad one here costs one line). */
int sm_cuc_init(const sm_adapter_api_t *api);
/* Before and after a launch call on the calling thread. */
void sm_cuc_launch_enter(CUcontext ctx, uint32_t device, uint64_t correlation, const char *kernel);
void sm_cuc_launch_exit(CUcontext ctx, uint64_t correlation, int failed);
/* A kernel's activity record reached the backend (under its lock). */
void sm_cuc_kernel_done(const sm_gpu_activity_t *a);
/* The CLOCK_MONOTONIC interval of the counted launch's call: its kernel was
 * replayed inside it, and CUPTI's record of it has no times.  0 or -1. */
int sm_cuc_launch_interval(uint64_t correlation, uint64_t *start_ns, uint64_t *end_ns);
/* A synchronising call returned on ctx: the ranges so far are decoded. */
void sm_cuc_sync(CUcontext ctx);
/* A context ends: its ranges are decoded first (on the destroying thread). */
void sm_cuc_context_end(CUcontext ctx);
/* End of run, with ctx current: decode what is left of ctx. */
void sm_cuc_flush_context(CUcontext ctx);
/* After the last activity records: launches whose values or records never
 * came are counted in a note. */
void sm_cuc_finish(void);

#endif
