/* GPU memory from HIP's calls (hip_memory.h). */
#include "hip_memory.h"

#include <string.h>

static uint64_t sm_hip_out(void *const *p)
{
    return p ? (uint64_t)(uintptr_t)*p : 0;
}

static int sm_hip_alloc(sm_hip_mem_call_t *out, uint32_t kind, uint64_t address, uint64_t bytes,
                        uint32_t flags)
{
    out->what = SM_GPU_MEM_ALLOC;
    out->kind = kind;
    out->address = address;
    out->bytes = bytes;
    out->flags = flags;
    return 0;
}

static int sm_hip_free(sm_hip_mem_call_t *out, const void *ptr, uint32_t flags)
{
    out->what = SM_GPU_MEM_FREE;
    out->address = (uint64_t)(uintptr_t)ptr;
    out->flags = flags;
    return 0;
}

int sm_hip_mem_from_call(uint32_t cid, const hip_api_data_t *d, sm_hip_mem_call_t *out)
{
    memset(out, 0, sizeof *out);
    if (!d)
        return -1;
    const __typeof__(d->args) *a = &d->args;
    switch (cid) {
    case HIP_API_ID_hipMalloc:
        return sm_hip_alloc(out, SM_GPU_MEM_DEVICE, sm_hip_out(a->hipMalloc.ptr), a->hipMalloc.size,
                            0);
    case HIP_API_ID_hipExtMallocWithFlags:
        return sm_hip_alloc(out, SM_GPU_MEM_DEVICE, sm_hip_out(a->hipExtMallocWithFlags.ptr),
                            a->hipExtMallocWithFlags.sizeBytes, 0);
    case HIP_API_ID_hipMallocPitch: {
        uint64_t pitch = a->hipMallocPitch.pitch ? *a->hipMallocPitch.pitch : a->hipMallocPitch.width;
        return sm_hip_alloc(out, SM_GPU_MEM_DEVICE, sm_hip_out(a->hipMallocPitch.ptr),
                            pitch * a->hipMallocPitch.height, 0);
    }
    case HIP_API_ID_hipMemAllocPitch: {
        uint64_t pitch = a->hipMemAllocPitch.pitch ? *a->hipMemAllocPitch.pitch
                                                   : a->hipMemAllocPitch.widthInBytes;
        uint64_t ptr = a->hipMemAllocPitch.dptr ? (uint64_t)(uintptr_t)*a->hipMemAllocPitch.dptr : 0;
        return sm_hip_alloc(out, SM_GPU_MEM_DEVICE, ptr, pitch * a->hipMemAllocPitch.height, 0);
    }
    case HIP_API_ID_hipMallocManaged:
        return sm_hip_alloc(out, SM_GPU_MEM_MANAGED, sm_hip_out(a->hipMallocManaged.dev_ptr),
                            a->hipMallocManaged.size, 0);
    case HIP_API_ID_hipHostMalloc:
        return sm_hip_alloc(out, SM_GPU_MEM_PINNED, sm_hip_out(a->hipHostMalloc.ptr),
                            a->hipHostMalloc.size, 0);
    case HIP_API_ID_hipHostAlloc:
        return sm_hip_alloc(out, SM_GPU_MEM_PINNED, sm_hip_out(a->hipHostAlloc.ptr),
                            a->hipHostAlloc.size, 0);
    case HIP_API_ID_hipMallocHost:
        return sm_hip_alloc(out, SM_GPU_MEM_PINNED, sm_hip_out(a->hipMallocHost.ptr),
                            a->hipMallocHost.size, 0);
    case HIP_API_ID_hipMemAllocHost:
        return sm_hip_alloc(out, SM_GPU_MEM_PINNED, sm_hip_out(a->hipMemAllocHost.ptr),
                            a->hipMemAllocHost.size, 0);
    case HIP_API_ID_hipMallocAsync:
        return sm_hip_alloc(out, SM_GPU_MEM_DEVICE, sm_hip_out(a->hipMallocAsync.dev_ptr),
                            a->hipMallocAsync.size, SM_GPU_MEM_ASYNC);
    case HIP_API_ID_hipMallocFromPoolAsync:
        return sm_hip_alloc(out, SM_GPU_MEM_DEVICE, sm_hip_out(a->hipMallocFromPoolAsync.dev_ptr),
                            a->hipMallocFromPoolAsync.size, SM_GPU_MEM_ASYNC);
    case HIP_API_ID_hipFree:
        return sm_hip_free(out, a->hipFree.ptr, 0);
    case HIP_API_ID_hipHostFree:
        return sm_hip_free(out, a->hipHostFree.ptr, 0);
    case HIP_API_ID_hipFreeHost:
        return sm_hip_free(out, a->hipFreeHost.ptr, 0);
    case HIP_API_ID_hipFreeAsync:
        return sm_hip_free(out, a->hipFreeAsync.dev_ptr, SM_GPU_MEM_ASYNC);
    default:
        return -1;
    }
}
