/* NVML readings of NVIDIA GPUs (libnvidia-ml.so.1, loaded with dlopen: the
 * build machines have no nvml.h, so the few functions used are declared
 * here): power, energy, temperature, utilization, clocks and memory used per
 * device, as a sampler on the core's sampler thread (sampler.h) at the
 * sampling interval.  Absent library or no device: one line, the run goes
 * on.  The AMD counterpart is gpu/rocm/rsmi_sampler.c. */
#ifndef SM_NVML_SAMPLER_H
#define SM_NVML_SAMPLER_H

#include "../../src/core/adapter_api.h"

/* Loads NVML and registers the sampler: 0, or -1 (said on stderr). */
int sm_nvml_start(const sm_adapter_api_t *api);

#endif
