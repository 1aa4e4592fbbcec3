/* GPU memory from CUDA (core/gpu_memory.h), the part that needs no GPU:
 *   - CUPTI's memory records (CUPTI_ACTIVITY_KIND_MEMORY2,
 *     CUpti_ActivityMemory4: one record per allocation or release, with
 *     address, bytes, kind, device and the API call's correlation id) to
 *     the core's operations;
 *   - the runtime and driver calls that allocate or free (cudaMalloc,
 *     cudaMallocPitch, cudaMalloc3D, cudaMallocManaged, cudaMallocHost,
 *     cudaHostAlloc, cudaMallocAsync, cudaMallocFromPoolAsync, cuMemAlloc,
 *     cuMemAllocPitch, cuMemAllocManaged, cuMemAllocHost, cuMemHostAlloc,
 *     cuMemAllocAsync, cuMemAllocFromPoolAsync and their frees) read from
 *     their parameters at the call's exit: the address and size for the
 *     call's leave, and the operation itself where the memory records are
 *     not used (gpu_memory=api).
 * No CUPTI function is called here; tests/unit/test_cuda_memory.c builds
 * records and parameter structs by hand. */
#ifndef SM_CUPTI_MEMORY_H
#define SM_CUPTI_MEMORY_H

#include <stdint.h>
#include <cupti.h>

#include "../../src/core/compiler.h"
#include "../../src/core/gpu_memory.h"

/* What an API call did to memory (core/gpu_memory.h). */
typedef sm_gpu_mem_call_t sm_cum_call_t;

/* The memory effect of a runtime (driver 0) or driver (driver 1) API call,
 * from its parameters at its exit (the call succeeded): 0, or -1 for a
 * call that neither allocates nor frees. */
int sm_cum_from_call(int driver, uint32_t cbid, const void *params, sm_cum_call_t *out) SM_HIDDEN;

/* CUPTI's memory kind as ours. */
sm_gpu_mem_kind_t sm_cum_kind(uint32_t cupti_memory_kind) SM_HIDDEN;

/* A MEMORY2 record as an operation on the core's device `device`, at core
 * time `time` (the record's timestamp converted): 0, or -1 for a record
 * that is neither an allocation nor a release. */
int sm_cum_from_record(const CUpti_ActivityMemory4 *r, sm_gpu_device_t device, uint64_t time,
                       sm_gpu_mem_op_t *out) SM_HIDDEN;

#endif
