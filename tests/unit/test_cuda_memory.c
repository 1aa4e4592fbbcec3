/* GPU memory from CUDA without a GPU (gpu/cuda/cupti_memory.c): the
 * parameters of every runtime and driver call that allocates or frees, as
 * CUPTI hands them to the callback at the call's exit, and CUPTI's memory
 * records (CUpti_ActivityMemory4), built by hand from the headers' layouts;
 * then the planted program's records in the order CUPTI delivers them,
 * through the core's accounting: exact high-water marks and blocks left. */
#include <stdint.h>
#include <string.h>

#include "core/gpu_memory.h"
#include "gpu/cuda/cupti_memory.h"
#include "unit.h"

#define MiB (1024ull * 1024ull)

static sm_cum_call_t call(int driver, uint32_t cbid, const void *params, int expect)
{
    sm_cum_call_t c;
    CHECK_EQ_U(sm_cum_from_call(driver, cbid, params, &c) == 0, expect);
    return c;
}

static void test_runtime_calls(void)
{
    void *p = (void *)(uintptr_t)0x7f0010000000;
    cudaMalloc_v3020_params m = {&p, 64 * MiB};
    sm_cum_call_t c = call(0, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, &m, 1);
    CHECK_EQ_U(c.what, SM_GPU_MEM_ALLOC);
    CHECK_EQ_U(c.kind, SM_GPU_MEM_DEVICE);
    CHECK_EQ_U(c.address, 0x7f0010000000);
    CHECK_EQ_U(c.bytes, 64 * MiB);
    CHECK_EQ_U(c.flags, 0);

    size_t pitch = 512;
    cudaMallocPitch_v3020_params mp = {&p, &pitch, 500, 100};
    c = call(0, CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020, &mp, 1);
    CHECK_EQ_U(c.bytes, 512 * 100); /* the rows as padded */

    struct cudaPitchedPtr pp = {(void *)(uintptr_t)0x7f0011000000, 1024, 1000, 10};
    cudaMalloc3D_v3020_params m3 = {&pp, {1000, 10, 3}};
    c = call(0, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc3D_v3020, &m3, 1);
    CHECK_EQ_U(c.address, 0x7f0011000000);
    CHECK_EQ_U(c.bytes, 1024 * 10 * 3);

    cudaMallocManaged_v6000_params mm = {&p, 16 * MiB, 1};
    c = call(0, CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000, &mm, 1);
    CHECK_EQ_U(c.kind, SM_GPU_MEM_MANAGED);
    CHECK_EQ_U(c.bytes, 16 * MiB);

    cudaMallocHost_v3020_params mh = {&p, 8 * MiB};
    c = call(0, CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020, &mh, 1);
    CHECK_EQ_U(c.kind, SM_GPU_MEM_PINNED);
    cudaHostAlloc_v3020_params ha = {&p, 4 * MiB, 0};
    c = call(0, CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020, &ha, 1);
    CHECK_EQ_U(c.kind, SM_GPU_MEM_PINNED);
    CHECK_EQ_U(c.bytes, 4 * MiB);

    cudaMallocAsync_v11020_params ma = {&p, 32 * MiB, NULL};
    c = call(0, CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020, &ma, 1);
    CHECK_EQ_U(c.flags, SM_GPU_MEM_ASYNC);
    CHECK_EQ_U(c.bytes, 32 * MiB);
    cudaMallocAsync_ptsz_v11020_params maz = {&p, 33, NULL};
    c = call(0, CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020, &maz, 1);
    CHECK_EQ_U(c.bytes, 33);
    cudaMallocFromPoolAsync_v11020_params mpa = {&p, 77, NULL, NULL};
    c = call(0, CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020, &mpa, 1);
    CHECK_EQ_U(c.bytes, 77);
    CHECK_EQ_U(c.flags, SM_GPU_MEM_ASYNC);

    cudaFree_v3020_params f = {(void *)(uintptr_t)0x7f0010000000};
    c = call(0, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, &f, 1);
    CHECK_EQ_U(c.what, SM_GPU_MEM_FREE);
    CHECK_EQ_U(c.address, 0x7f0010000000);
    CHECK_EQ_U(c.bytes, 0);
    cudaFreeHost_v3020_params fh = {(void *)(uintptr_t)0x7f0060000000};
    c = call(0, CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020, &fh, 1);
    CHECK_EQ_U(c.address, 0x7f0060000000);
    cudaFreeAsync_v11020_params fa = {(void *)(uintptr_t)0x7f0040000000, NULL};
    c = call(0, CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020, &fa, 1);
    CHECK_EQ_U(c.flags, SM_GPU_MEM_ASYNC);
    CHECK_EQ_U(c.address, 0x7f0040000000);
    cudaFree_v3020_params null_free = {NULL};
    c = call(0, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, &null_free, 1);
    CHECK_EQ_U(c.address, 0); /* nothing freed: no attributes, no operation */

    /* calls that neither allocate nor free, and no parameters */
    call(0, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, &m, 0);
    call(0, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, NULL, 0);
}

static void test_driver_calls(void)
{
    CUdeviceptr d = 0x7f0070000000;
    void *h = (void *)(uintptr_t)0x7f0080000000;
    cuMemAlloc_v2_params a = {&d, 1000};
    sm_cum_call_t c = call(1, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &a, 1);
    CHECK_EQ_U(c.kind, SM_GPU_MEM_DEVICE);
    CHECK_EQ_U(c.address, 0x7f0070000000);
    CHECK_EQ_U(c.bytes, 1000);
    size_t pitch = 256;
    cuMemAllocPitch_v2_params ap = {&d, &pitch, 200, 7, 4};
    c = call(1, CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2, &ap, 1);
    CHECK_EQ_U(c.bytes, 256 * 7);
    cuMemAllocManaged_params am = {&d, 2000, 1};
    c = call(1, CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged, &am, 1);
    CHECK_EQ_U(c.kind, SM_GPU_MEM_MANAGED);
    cuMemAllocHost_v2_params ah = {&h, 3000};
    c = call(1, CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2, &ah, 1);
    CHECK_EQ_U(c.kind, SM_GPU_MEM_PINNED);
    CHECK_EQ_U(c.address, 0x7f0080000000);
    cuMemHostAlloc_params hh = {&h, 4000, 0};
    c = call(1, CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc, &hh, 1);
    CHECK_EQ_U(c.bytes, 4000);
    cuMemAllocAsync_params aa = {&d, 5000, NULL};
    c = call(1, CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync, &aa, 1);
    CHECK_EQ_U(c.flags, SM_GPU_MEM_ASYNC);
    cuMemAllocFromPoolAsync_params pa = {&d, 6000, NULL, NULL};
    c = call(1, CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync, &pa, 1);
    CHECK_EQ_U(c.bytes, 6000);
    cuMemFree_v2_params f = {0x7f0070000000};
    c = call(1, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, &f, 1);
    CHECK_EQ_U(c.what, SM_GPU_MEM_FREE);
    CHECK_EQ_U(c.address, 0x7f0070000000);
    cuMemFreeHost_params fh = {h};
    c = call(1, CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost, &fh, 1);
    CHECK_EQ_U(c.address, 0x7f0080000000);
    cuMemFreeAsync_params fa = {0x7f0070000000, NULL};
    c = call(1, CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync, &fa, 1);
    CHECK_EQ_U(c.flags, SM_GPU_MEM_ASYNC);
    /* a runtime id is not a driver one */
    call(1, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &a, 0);
}

static CUpti_ActivityMemory4 record(uint32_t op, uint32_t kind, uint64_t address, uint64_t bytes,
                                    uint64_t t, uint32_t corr)
{
    CUpti_ActivityMemory4 r;
    memset(&r, 0, sizeof r);
    r.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
    r.memoryOperationType = (CUpti_ActivityMemoryOperationType)op;
    r.memoryKind = (CUpti_ActivityMemoryKind)kind;
    r.address = address;
    r.bytes = bytes;
    r.timestamp = t;
    r.correlationId = corr;
    r.deviceId = 0;
    r.streamId = UINT32_MAX;
    return r;
}

#define A CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION
#define R CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE
#define DEV CUPTI_ACTIVITY_MEMORY_KIND_DEVICE

static void test_records(void)
{
    CHECK_EQ_U(sm_cum_kind(CUPTI_ACTIVITY_MEMORY_KIND_DEVICE), SM_GPU_MEM_DEVICE);
    CHECK_EQ_U(sm_cum_kind(CUPTI_ACTIVITY_MEMORY_KIND_ARRAY), SM_GPU_MEM_DEVICE);
    CHECK_EQ_U(sm_cum_kind(CUPTI_ACTIVITY_MEMORY_KIND_MANAGED), SM_GPU_MEM_MANAGED);
    CHECK_EQ_U(sm_cum_kind(CUPTI_ACTIVITY_MEMORY_KIND_PINNED), SM_GPU_MEM_PINNED);
    CHECK_EQ_U(sm_cum_kind(CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC), SM_GPU_MEM_STATIC);
    CHECK_EQ_U(sm_cum_kind(CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC), SM_GPU_MEM_STATIC);
    CHECK_EQ_U(sm_cum_kind(CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE), SM_GPU_MEM_OTHER);
    CHECK_EQ_U(sm_cum_kind(CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN), SM_GPU_MEM_OTHER);

    CUpti_ActivityMemory4 r = record(A, DEV, 0x7f0010000000, 64 * MiB, 5000, 17);
    r.isAsync = 1;
    sm_gpu_mem_op_t o;
    CHECK_EQ_U(sm_cum_from_record(&r, 3, 123456, &o), 0);
    CHECK_EQ_U(o.what, SM_GPU_MEM_ALLOC);
    CHECK_EQ_U(o.device, 3);
    CHECK_EQ_U(o.time, 123456);
    CHECK_EQ_U(o.address, 0x7f0010000000);
    CHECK_EQ_U(o.bytes, 64 * MiB);
    CHECK_EQ_U(o.correlation, 17);
    CHECK_EQ_U(o.flags, SM_GPU_MEM_ASYNC);
    CHECK_EQ_U(o.vendor, SM_GPU_VENDOR_NVIDIA);
    CHECK_EQ_U(o.level, SM_GPU_MEM_LEVEL_API);
    r = record(R, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, 0x1000, 10, 6000, 18);
    CHECK_EQ_U(sm_cum_from_record(&r, 0, 1, &o), 0);
    CHECK_EQ_U(o.what, SM_GPU_MEM_FREE);
    CHECK_EQ_U(o.bytes, 10);
    r = record(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_INVALID, DEV, 0x1000, 10, 6000, 18);
    CHECK(sm_cum_from_record(&r, 0, 1, &o) != 0);
}

/* The planted CUDA program (tests/gpu/gpu_memory_app.cu) as CUPTI reports
 * it, a module global first: through the accounting. */
static void test_planted_records(void)
{
    const CUpti_ActivityMemory4 seq[] = {
        record(A, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC, 0x7f00a0000000, 4096, 1, 0),
        record(A, DEV, 0x7f0010000000, 64 * MiB, 10, 1),
        record(A, DEV, 0x7f0020000000, 64 * MiB, 11, 2),
        record(A, DEV, 0x7f0030000000, 64 * MiB, 12, 3),
        record(R, DEV, 0x7f0020000000, 64 * MiB, 13, 4),
        record(A, DEV, 0x7f0040000000, 32 * MiB, 14, 5),
        record(R, DEV, 0x7f0040000000, 32 * MiB, 15, 6),
        record(A, CUPTI_ACTIVITY_MEMORY_KIND_MANAGED, 0x7f0050000000, 16 * MiB, 16, 7),
        record(A, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, 0x7f0060000000, 8 * MiB, 17, 8),
        record(R, CUPTI_ACTIVITY_MEMORY_KIND_MANAGED, 0x7f0050000000, 16 * MiB, 18, 9),
        record(R, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, 0x7f0060000000, 8 * MiB, 19, 10),
    };
    sm_gmem_t *g = sm_gmem_new();
    for (size_t i = 0; i < sizeof seq / sizeof seq[0]; i++) {
        sm_gpu_mem_op_t o;
        CHECK_EQ_U(sm_cum_from_record(&seq[i], 0, seq[i].timestamp, &o), 0);
        CHECK_EQ_U(sm_gmem_apply(g, &o, NULL, NULL), SM_GMEM_TAKEN);
    }
    sm_gmem_figures_t d = sm_gmem_figures(g, 0, SM_GPU_MEM_DEVICE);
    CHECK_EQ_U(d.peak, 192 * MiB);
    CHECK_EQ_U(d.in_use, 128 * MiB);
    CHECK_EQ_U(d.blocks, 2);
    CHECK_EQ_U(sm_gmem_figures(g, 0, SM_GPU_MEM_MANAGED).peak, 16 * MiB);
    CHECK_EQ_U(sm_gmem_figures(g, 0, SM_GPU_MEM_PINNED).peak, 8 * MiB);
    CHECK_EQ_U(sm_gmem_figures(g, 0, SM_GPU_MEM_STATIC).in_use, 4096);
    sm_gmem_block_t top[4];
    CHECK_EQ_U(sm_gmem_unfreed(g, ~(1u << SM_GPU_MEM_STATIC), top, 4), 2);
    sm_gmem_delete(g);
}

int main(void)
{
    test_runtime_calls();
    test_driver_calls();
    test_records();
    test_planted_records();
    return unit_failures;
}
