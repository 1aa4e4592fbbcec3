/* GPU memory from CUDA: records and calls to operations (cupti_memory.h). */
#include "cupti_memory.h"

#include <stddef.h>
#include <string.h>

/* cupti.h (through cupti_memory.h) brings the parameter structs of the
 * runtime and driver calls (generated_cuda*_meta.h, which have no include
 * guards). */

sm_gpu_mem_kind_t sm_cum_kind(uint32_t k)
{
    switch (k) {
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE:
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY:
        return SM_GPU_MEM_DEVICE;
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
        return SM_GPU_MEM_MANAGED;
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED:
        return SM_GPU_MEM_PINNED;
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC:
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC:
        return SM_GPU_MEM_STATIC;
    default: /* pageable (registered host memory), unknown */
        return SM_GPU_MEM_OTHER;
    }
}

int sm_cum_from_record(const CUpti_ActivityMemory4 *r, sm_gpu_device_t device, uint64_t time,
                       sm_gpu_mem_op_t *out)
{
    memset(out, 0, sizeof *out);
    switch (r->memoryOperationType) {
    case CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION:
        out->what = SM_GPU_MEM_ALLOC;
        break;
    case CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE:
        out->what = SM_GPU_MEM_FREE;
        break;
    default:
        return -1;
    }
    out->time = time;
    out->address = r->address;
    out->bytes = r->bytes;
    out->correlation = r->correlationId;
    out->device = device;
    out->kind = sm_cum_kind(r->memoryKind);
    out->vendor = SM_GPU_VENDOR_NVIDIA;
    out->level = SM_GPU_MEM_LEVEL_API;
    out->flags = r->isAsync ? SM_GPU_MEM_ASYNC : 0;
    return 0;
}

/* An allocation's pointer, read through the call's output argument. */
static uint64_t sm_cum_out_ptr(void *const *p)
{
    return p ? (uint64_t)(uintptr_t)*p : 0;
}

static uint64_t sm_cum_out_devptr(const CUdeviceptr *p)
{
    return p ? (uint64_t)*p : 0;
}

static int sm_cum_alloc(sm_cum_call_t *out, uint32_t kind, uint64_t address, uint64_t bytes,
                        uint32_t flags)
{
    out->what = SM_GPU_MEM_ALLOC;
    out->kind = kind;
    out->address = address;
    out->bytes = bytes;
    out->flags = flags;
    return 0;
}

static int sm_cum_free(sm_cum_call_t *out, uint64_t address, uint32_t flags)
{
    out->what = SM_GPU_MEM_FREE;
    out->address = address;
    out->flags = flags;
    return 0;
}

static int sm_cum_runtime(uint32_t cbid, const void *params, sm_cum_call_t *out)
{
    switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020: {
        const cudaMalloc_v3020_params *p = params;
        return sm_cum_alloc(out, SM_GPU_MEM_DEVICE, sm_cum_out_ptr(p->devPtr), p->size, 0);
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020: {
        const cudaMallocPitch_v3020_params *p = params;
        uint64_t pitch = p->pitch ? *p->pitch : p->width;
        return sm_cum_alloc(out, SM_GPU_MEM_DEVICE, sm_cum_out_ptr(p->devPtr), pitch * p->height,
                            0);
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMalloc3D_v3020: {
        const cudaMalloc3D_v3020_params *p = params;
        if (!p->pitchedDevPtr)
            return -1;
        uint64_t rows = (uint64_t)p->extent.height * (p->extent.depth ? p->extent.depth : 1);
        return sm_cum_alloc(out, SM_GPU_MEM_DEVICE, (uint64_t)(uintptr_t)p->pitchedDevPtr->ptr,
                            (uint64_t)p->pitchedDevPtr->pitch * rows, 0);
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000: {
        const cudaMallocManaged_v6000_params *p = params;
        return sm_cum_alloc(out, SM_GPU_MEM_MANAGED, sm_cum_out_ptr(p->devPtr), p->size, 0);
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020: {
        const cudaMallocHost_v3020_params *p = params;
        return sm_cum_alloc(out, SM_GPU_MEM_PINNED, sm_cum_out_ptr(p->ptr), p->size, 0);
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020: {
        const cudaHostAlloc_v3020_params *p = params;
        return sm_cum_alloc(out, SM_GPU_MEM_PINNED, sm_cum_out_ptr(p->pHost), p->size, 0);
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020: {
        /* The _ptsz variant's parameters have the same layout. */
        const cudaMallocAsync_v11020_params *p = params;
        return sm_cum_alloc(out, SM_GPU_MEM_DEVICE, sm_cum_out_ptr(p->devPtr), p->size,
                            SM_GPU_MEM_ASYNC);
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_ptsz_v11020: {
        const cudaMallocFromPoolAsync_v11020_params *p = params;
        return sm_cum_alloc(out, SM_GPU_MEM_DEVICE, sm_cum_out_ptr(p->ptr), p->size,
                            SM_GPU_MEM_ASYNC);
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020:
        return sm_cum_free(out, (uint64_t)(uintptr_t)((const cudaFree_v3020_params *)params)->devPtr,
                           0);
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020:
        return sm_cum_free(out, (uint64_t)(uintptr_t)((const cudaFreeHost_v3020_params *)params)->ptr,
                           0);
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020:
        return sm_cum_free(out,
                           (uint64_t)(uintptr_t)((const cudaFreeAsync_v11020_params *)params)->devPtr,
                           SM_GPU_MEM_ASYNC);
    default:
        return -1;
    }
}

static int sm_cum_driver(uint32_t cbid, const void *params, sm_cum_call_t *out)
{
    switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2: {
        const cuMemAlloc_v2_params *p = params;
        return sm_cum_alloc(out, SM_GPU_MEM_DEVICE, sm_cum_out_devptr(p->dptr), p->bytesize, 0);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2: {
        const cuMemAllocPitch_v2_params *p = params;
        uint64_t pitch = p->pPitch ? *p->pPitch : p->WidthInBytes;
        return sm_cum_alloc(out, SM_GPU_MEM_DEVICE, sm_cum_out_devptr(p->dptr), pitch * p->Height,
                            0);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged: {
        const cuMemAllocManaged_params *p = params;
        return sm_cum_alloc(out, SM_GPU_MEM_MANAGED, sm_cum_out_devptr(p->dptr), p->bytesize, 0);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost: {
        const cuMemAllocHost_params *p = params;
        return sm_cum_alloc(out, SM_GPU_MEM_PINNED, sm_cum_out_ptr(p->pp), p->bytesize, 0);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2: {
        const cuMemAllocHost_v2_params *p = params;
        return sm_cum_alloc(out, SM_GPU_MEM_PINNED, sm_cum_out_ptr(p->pp), p->bytesize, 0);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc: {
        const cuMemHostAlloc_params *p = params;
        return sm_cum_alloc(out, SM_GPU_MEM_PINNED, sm_cum_out_ptr(p->pp), p->bytesize, 0);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz: {
        const cuMemAllocAsync_params *p = params;
        return sm_cum_alloc(out, SM_GPU_MEM_DEVICE, sm_cum_out_devptr(p->dptr), p->bytesize,
                            SM_GPU_MEM_ASYNC);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz: {
        const cuMemAllocFromPoolAsync_params *p = params;
        return sm_cum_alloc(out, SM_GPU_MEM_DEVICE, sm_cum_out_devptr(p->dptr), p->bytesize,
                            SM_GPU_MEM_ASYNC);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
        return sm_cum_free(out, (uint64_t)((const cuMemFree_v2_params *)params)->dptr, 0);
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost:
        return sm_cum_free(out, (uint64_t)(uintptr_t)((const cuMemFreeHost_params *)params)->p, 0);
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz:
        return sm_cum_free(out, (uint64_t)((const cuMemFreeAsync_params *)params)->dptr,
                           SM_GPU_MEM_ASYNC);
    default:
        return -1;
    }
}

/* The variants read through one struct must share its layout. */
_Static_assert(sizeof(cudaMallocAsync_v11020_params) == sizeof(cudaMallocAsync_ptsz_v11020_params) &&
                   offsetof(cudaMallocAsync_ptsz_v11020_params, size) ==
                       offsetof(cudaMallocAsync_v11020_params, size),
               "cudaMallocAsync variants");
_Static_assert(offsetof(cudaMallocFromPoolAsync_ptsz_v11020_params, size) ==
                   offsetof(cudaMallocFromPoolAsync_v11020_params, size),
               "cudaMallocFromPoolAsync variants");
_Static_assert(offsetof(cudaFreeAsync_ptsz_v11020_params, devPtr) ==
                   offsetof(cudaFreeAsync_v11020_params, devPtr),
               "cudaFreeAsync variants");
_Static_assert(offsetof(cuMemAllocAsync_ptsz_params, bytesize) ==
                   offsetof(cuMemAllocAsync_params, bytesize),
               "cuMemAllocAsync variants");
_Static_assert(offsetof(cuMemAllocFromPoolAsync_ptsz_params, bytesize) ==
                   offsetof(cuMemAllocFromPoolAsync_params, bytesize),
               "cuMemAllocFromPoolAsync variants");
_Static_assert(offsetof(cuMemFreeAsync_ptsz_params, dptr) == offsetof(cuMemFreeAsync_params, dptr),
               "cuMemFreeAsync variants");

int sm_cum_from_call(int driver, uint32_t cbid, const void *params, sm_cum_call_t *out)
{
    memset(out, 0, sizeof *out);
    if (!params)
        return -1;
    return driver ? sm_cum_driver(cbid, params, out) : sm_cum_runtime(cbid, params, out);
}
