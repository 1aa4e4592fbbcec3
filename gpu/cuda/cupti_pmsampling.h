/* Device-level counter sampling on NVIDIA (--gpu-sampling): CUPTI's PM
 * sampling.  The GPU samples the metrics itself every interval (GPU-time
 * trigger) into a hardware buffer, whatever runs on it.  Set-up (profiler,
 * chip, counter availability, names, config image) runs once on the
 * application thread that ends the device's first context's creation;
 * a sampler on the core's sampler thread (one per device) then enables and
 * starts sampling and decodes the buffer every 50 to 100 ms, handing each
 * sample's values to the core at the sample's end time, on the device's
 * metric location.  No application thread decodes.
 *
 * Found on the H100 (CUDA 13.0; manual section 8d.3):
 *   - sample times follow CUPTI's activity timestamp callback (our
 *     CLOCK_MONOTONIC): they convert as the activity records do;
 *   - the first sample covers the time before the start: dropped;
 *   - kernel activity records keep arriving while it runs;
 *   - the range profiler (--gpu-metrics) cannot start while it runs
 *     (CUPTI_ERROR_HARDWARE_BUSY): with both asked for, one line, and the
 *     per-kernel metrics win.
 * Bad names (one line with the nearest), a metric set needing several
 * passes, or a device without counter access: one line, the run goes on. */
#ifndef SM_CUPTI_PMSAMPLING_H
#define SM_CUPTI_PMSAMPLING_H

#include <stdint.h>
#include <cuda.h>
#include "../../src/core/adapter_api.h"

/* Reads the configuration; non-zero when sampling is asked for. */
int sm_cupm_init(const sm_adapter_api_t *api);
/* A context of device `device` was created (inside its creation): the
 * device's sampler is registered at the next API exit (sm_cupm_api_exit),
 * once per device; the sampler thread sets it up with that context
 * current. */
void sm_cupm_context(uint32_t device, CUcontext ctx);
/* At the exit of every CUDA API call (a load and a branch when nothing
 * waits). */
void sm_cupm_api_exit(void);
/* cupti_backend.c: the calling thread's CUDA calls are ours, not the
 * program's, while the count is above 0 (+1 / -1). */
void sm_cu_own_calls(int delta);
/* A context of `device` is being destroyed: a decode under way may end (the
 * calling thread waits, at most 1 s), then sampling stops here and the
 * sampler thread makes no more CUPTI calls for the device (the samples
 * since its last decode are counted as lost). */
void sm_cupm_context_end(uint32_t device);

#endif
