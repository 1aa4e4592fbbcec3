/* Activities of the AMD backends (HIP, HSA) into the core's GPU layer:
 * devices, streams (HIP queues, HSA queues) and regions defined on first
 * sight and remembered, times converted to core ticks, one activity per
 * call from the runtime's completion thread. */
#ifndef SM_ROCM_DELIVER_H
#define SM_ROCM_DELIVER_H

#include "core/adapter_api.h"
#include "rocm_convert.h"

/* 0 when the GPU layer kept it. stream_kind names the stream locations
 * ("HIP queue", "HSA queue"). */
int sm_rocm_deliver(const sm_adapter_api_t *api, const sm_rocm_activity_t *a,
                    const char *stream_kind) SM_HIDDEN;

/* The core's device of the runtime's device `ordinal` (defined on first
 * sight, as for activities); SM_GPU_NONE when the core is not up. */
sm_gpu_device_t sm_rocm_device(const sm_adapter_api_t *api, uint32_t ordinal) SM_HIDDEN;

#endif
