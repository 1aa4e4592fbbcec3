/* GPU memory from HIP (core/gpu_memory.h): what a HIP call that allocates
 * or frees did, read from its arguments as the runtime hands them to the
 * API callback at the call's exit (hip_api_data_t, hip_prof_str.h):
 * hipMalloc, hipExtMallocWithFlags, hipMallocPitch, hipMemAllocPitch,
 * hipMallocManaged, hipHostMalloc, hipHostAlloc, hipMallocHost,
 * hipMemAllocHost, hipMallocAsync, hipMallocFromPoolAsync, hipFree,
 * hipHostFree, hipFreeHost, hipFreeAsync.  No runtime call here:
 * tests/unit/test_hip_memory.c fills the arguments by hand (no AMD GPU
 * anywhere: the runtime never calls back here). */
#ifndef SM_HIP_MEMORY_H
#define SM_HIP_MEMORY_H

#include <stdint.h>

#include <hip/hip_runtime_api.h>
#include <hip/amd_detail/hip_prof_str.h>

#include "core/compiler.h"
#include "core/gpu_memory.h"

/* What a HIP call did to memory (core/gpu_memory.h). */
typedef sm_gpu_mem_call_t sm_hip_mem_call_t;

/* 0, or -1 for a call that neither allocates nor frees. */
int sm_hip_mem_from_call(uint32_t cid, const hip_api_data_t *d, sm_hip_mem_call_t *out) SM_HIDDEN;

#endif
