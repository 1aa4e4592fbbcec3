/* rocm-smi readings of AMD GPUs (librocm_smi64, loaded with dlopen): power,
 * energy, temperature, utilization and memory used per device.
 *
 * sm_rsmi_open loads and initialises the library (one line on stderr when it
 * is missing or rsmi_init fails; the run goes on); sm_rsmi_read fills one
 * sample per device.  The HIP library registers a sampler on the core's
 * sampler thread that calls sm_rsmi_read at the sampling interval
 * (hip_tool.c). */
#ifndef SM_RSMI_SAMPLER_H
#define SM_RSMI_SAMPLER_H

#include <stdint.h>
#include "core/compiler.h"

#define SM_RSMI_MAX_DEVICES 16

/* One device's values; a field the device does not report is UINT64_MAX. */
typedef struct sm_rsmi_sample {
    uint64_t power_uw;        /* average power, microwatts */
    uint64_t energy_uj;       /* energy counter, microjoules (monotonic) */
    uint64_t temperature_mc;  /* edge temperature, millidegrees Celsius */
    uint64_t busy_percent;    /* GPU utilization, % */
    uint64_t memory_used;     /* VRAM bytes in use */
} sm_rsmi_sample_t;

/* Number of devices (0 when rocm-smi is not usable: the reason was said in
 * one line, unless quiet). */
uint32_t sm_rsmi_open(int quiet) SM_HIDDEN;
/* Fills out[0..n) for the first n devices; returns how many were read. */
uint32_t sm_rsmi_read(sm_rsmi_sample_t *out, uint32_t n) SM_HIDDEN;
void sm_rsmi_close(void) SM_HIDDEN;

#endif
