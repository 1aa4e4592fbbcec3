/* GPU memory from AMD's runtimes without an AMD GPU (none exists here: the
 * HIP runtime never calls back, HSA never loads its tools): HIP's call
 * arguments as the API callback gets them at the call's exit
 * (hip_api_data_t, filled by hand) to operations (gpu/rocm/hip_memory.c);
 * HSA's memory pools to kinds (rocm_convert.c); then the planted sequence
 * through the adapter table as hip_tool.c and hsa_tool.cpp hand it over:
 * HIP's calls on the calling thread, HSA's pool allocations below them
 * ignored once HIP reports, figures exact on a "HIP 0 memory" location. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/adapter_api.h"
#include "core/location.h"
#include "core/metrics.h"
#include "gpu/rocm/hip_memory.h"
#include "gpu/rocm/rocm_convert.h"
#include "gpu/rocm/rocm_deliver.h"
#include "unit.h"

const sm_adapter_api_t *sysmeasure_adapter_api(unsigned version);

#define MiB (1024ull * 1024ull)

static sm_hip_mem_call_t decode(uint32_t cid, const hip_api_data_t *d, int expect)
{
    sm_hip_mem_call_t c;
    CHECK_EQ_U(sm_hip_mem_from_call(cid, d, &c) == 0, expect);
    return c;
}

static void test_calls(void)
{
    hip_api_data_t d;
    void *p = (void *)(uintptr_t)0x7f0010000000;
    memset(&d, 0, sizeof d);
    d.correlation_id = 41;
    d.phase = 1;
    d.args.hipMalloc.ptr = &p;
    d.args.hipMalloc.size = 64 * MiB;
    sm_hip_mem_call_t c = decode(HIP_API_ID_hipMalloc, &d, 1);
    CHECK_EQ_U(c.what, SM_GPU_MEM_ALLOC);
    CHECK_EQ_U(c.kind, SM_GPU_MEM_DEVICE);
    CHECK_EQ_U(c.address, 0x7f0010000000);
    CHECK_EQ_U(c.bytes, 64 * MiB);

    memset(&d.args, 0, sizeof d.args);
    d.args.hipExtMallocWithFlags.ptr = &p;
    d.args.hipExtMallocWithFlags.sizeBytes = 5;
    CHECK_EQ_U(decode(HIP_API_ID_hipExtMallocWithFlags, &d, 1).bytes, 5);

    size_t pitch = 512;
    memset(&d.args, 0, sizeof d.args);
    d.args.hipMallocPitch.ptr = &p;
    d.args.hipMallocPitch.pitch = &pitch;
    d.args.hipMallocPitch.width = 500;
    d.args.hipMallocPitch.height = 10;
    CHECK_EQ_U(decode(HIP_API_ID_hipMallocPitch, &d, 1).bytes, 5120);

    hipDeviceptr_t dp = p;
    memset(&d.args, 0, sizeof d.args);
    d.args.hipMemAllocPitch.dptr = &dp;
    d.args.hipMemAllocPitch.pitch = &pitch;
    d.args.hipMemAllocPitch.widthInBytes = 500;
    d.args.hipMemAllocPitch.height = 3;
    c = decode(HIP_API_ID_hipMemAllocPitch, &d, 1);
    CHECK_EQ_U(c.bytes, 1536);
    CHECK_EQ_U(c.address, 0x7f0010000000);

    memset(&d.args, 0, sizeof d.args);
    d.args.hipMallocManaged.dev_ptr = &p;
    d.args.hipMallocManaged.size = 16 * MiB;
    CHECK_EQ_U(decode(HIP_API_ID_hipMallocManaged, &d, 1).kind, SM_GPU_MEM_MANAGED);

    memset(&d.args, 0, sizeof d.args);
    d.args.hipHostMalloc.ptr = &p;
    d.args.hipHostMalloc.size = 8 * MiB;
    c = decode(HIP_API_ID_hipHostMalloc, &d, 1);
    CHECK_EQ_U(c.kind, SM_GPU_MEM_PINNED);
    CHECK_EQ_U(c.bytes, 8 * MiB);
    memset(&d.args, 0, sizeof d.args);
    d.args.hipHostAlloc.ptr = &p;
    d.args.hipHostAlloc.size = 7;
    CHECK_EQ_U(decode(HIP_API_ID_hipHostAlloc, &d, 1).kind, SM_GPU_MEM_PINNED);
    memset(&d.args, 0, sizeof d.args);
    d.args.hipMallocHost.ptr = &p;
    d.args.hipMallocHost.size = 7;
    CHECK_EQ_U(decode(HIP_API_ID_hipMallocHost, &d, 1).kind, SM_GPU_MEM_PINNED);
    memset(&d.args, 0, sizeof d.args);
    d.args.hipMemAllocHost.ptr = &p;
    d.args.hipMemAllocHost.size = 7;
    CHECK_EQ_U(decode(HIP_API_ID_hipMemAllocHost, &d, 1).kind, SM_GPU_MEM_PINNED);

    memset(&d.args, 0, sizeof d.args);
    d.args.hipMallocAsync.dev_ptr = &p;
    d.args.hipMallocAsync.size = 32 * MiB;
    c = decode(HIP_API_ID_hipMallocAsync, &d, 1);
    CHECK_EQ_U(c.flags, SM_GPU_MEM_ASYNC);
    CHECK_EQ_U(c.bytes, 32 * MiB);
    memset(&d.args, 0, sizeof d.args);
    d.args.hipMallocFromPoolAsync.dev_ptr = &p;
    d.args.hipMallocFromPoolAsync.size = 9;
    CHECK_EQ_U(decode(HIP_API_ID_hipMallocFromPoolAsync, &d, 1).flags, SM_GPU_MEM_ASYNC);

    memset(&d.args, 0, sizeof d.args);
    d.args.hipFree.ptr = p;
    c = decode(HIP_API_ID_hipFree, &d, 1);
    CHECK_EQ_U(c.what, SM_GPU_MEM_FREE);
    CHECK_EQ_U(c.address, 0x7f0010000000);
    d.args.hipHostFree.ptr = p;
    CHECK_EQ_U(decode(HIP_API_ID_hipHostFree, &d, 1).what, SM_GPU_MEM_FREE);
    d.args.hipFreeHost.ptr = p;
    CHECK_EQ_U(decode(HIP_API_ID_hipFreeHost, &d, 1).what, SM_GPU_MEM_FREE);
    memset(&d.args, 0, sizeof d.args);
    d.args.hipFreeAsync.dev_ptr = p;
    c = decode(HIP_API_ID_hipFreeAsync, &d, 1);
    CHECK_EQ_U(c.flags, SM_GPU_MEM_ASYNC);
    CHECK_EQ_U(c.address, 0x7f0010000000);

    /* a failed allocation leaves the pointer null: nothing to account */
    void *null = NULL;
    memset(&d.args, 0, sizeof d.args);
    d.args.hipMalloc.ptr = &null;
    d.args.hipMalloc.size = 1;
    CHECK_EQ_U(decode(HIP_API_ID_hipMalloc, &d, 1).address, 0);
    decode(HIP_API_ID_hipMemcpy, &d, 0);
    decode(HIP_API_ID_hipMalloc, NULL, 0);
}

static void test_pools(void)
{
    CHECK_EQ_U(sm_rocm_pool_kind(1, SM_HSA_SEGMENT_GLOBAL), SM_GPU_MEM_DEVICE);
    CHECK_EQ_U(sm_rocm_pool_kind(0, SM_HSA_SEGMENT_GLOBAL), SM_GPU_MEM_PINNED);
    CHECK_EQ_U(sm_rocm_pool_kind(1, 3 /* group */), SM_GPU_MEM_OTHER);
}

static sm_gpu_mem_op_t amd_op(uint32_t what, uint32_t level, sm_gpu_device_t dev, uint32_t kind,
                              uint64_t address, uint64_t bytes, const sm_adapter_api_t *api)
{
    sm_gpu_mem_op_t o;
    memset(&o, 0, sizeof o);
    o.what = what;
    o.level = level;
    o.vendor = SM_GPU_VENDOR_AMD;
    o.device = dev;
    o.kind = kind;
    o.address = address;
    o.bytes = bytes;
    o.time = api->now();
    return o;
}

/* As the AMD libraries hand it over: HSA's pools first (the runtime's own
 * start-up allocation, before HIP reports), then HIP's calls with HSA's
 * allocations below them, which must not count twice. */
static void test_through_the_layer(void)
{
    char dir[] = "/tmp/sm-test-hip-memory-XXXXXX";
    if (!mkdtemp(dir))
        return;
    setenv("SYSMEASURE_OUTPUT", dir, 1);
    unsetenv("SYSMEASURE_ENABLE");
    const sm_adapter_api_t *api = sysmeasure_adapter_api(SM_ADAPTER_API_VERSION);
    CHECK_EQ_U(api->runtime_init_forced(), 0);
    sm_gpu_device_t d0 = sm_rocm_device(api, 0);
    CHECK(d0 != SM_GPU_NONE);
    CHECK_EQ_U(sm_rocm_device(api, 0), d0);
    sm_gpu_mem_op_t o = amd_op(SM_GPU_MEM_ALLOC, SM_GPU_MEM_LEVEL_RUNTIME, d0, SM_GPU_MEM_PINNED,
                               0x7e0000000000, 4096, api);
    CHECK_EQ_U(api->gpu_memory(&o, 1, sizeof o), 1); /* HSA alone: counted */
    api->gpu_memory_api_source(SM_GPU_VENDOR_AMD);   /* hip_tool.c at its start */
    sm_gpu_mem_op_t seq[] = {
        amd_op(SM_GPU_MEM_ALLOC, SM_GPU_MEM_LEVEL_RUNTIME, d0, SM_GPU_MEM_DEVICE, 0x7f0010000000,
               64 * MiB, api),
        amd_op(SM_GPU_MEM_ALLOC, SM_GPU_MEM_LEVEL_API, d0, SM_GPU_MEM_DEVICE, 0x7f0010000000,
               64 * MiB, api),
        amd_op(SM_GPU_MEM_ALLOC, SM_GPU_MEM_LEVEL_API, d0, SM_GPU_MEM_DEVICE, 0x7f0020000000,
               64 * MiB, api),
        amd_op(SM_GPU_MEM_FREE, SM_GPU_MEM_LEVEL_RUNTIME, SM_GPU_NONE, 0, 0x7f0010000000, 0, api),
        amd_op(SM_GPU_MEM_FREE, SM_GPU_MEM_LEVEL_API, SM_GPU_NONE, 0, 0x7f0010000000, 0, api),
        amd_op(SM_GPU_MEM_ALLOC, SM_GPU_MEM_LEVEL_API, d0, SM_GPU_MEM_MANAGED, 0x7f0050000000,
               16 * MiB, api),
    };
    CHECK_EQ_U(api->gpu_memory(seq, 6, sizeof seq[0]), 4); /* the two HSA ones ignored */
    CHECK_EQ_U(api->gpu_memory_block_bytes(0x7f0020000000), 64 * MiB);
    sm_metric_def_t m;
    int found = 0;
    for (uint32_t i = 0; i < sm_metric_count(); i++)
        if (sm_metric_get(i, &m) == 0 && !strcmp(sm_string_get(m.name), "HIP 0 memory in use: device")) {
            found = 1;
            CHECK_EQ_U(m.max, 128 * MiB);
            CHECK_EQ_U(m.last, 64 * MiB);
        }
    CHECK(found);
    found = 0;
    for (uint32_t i = 0; i < sm_location_count(); i++)
        found |= !strcmp(sm_location_get(i)->name, "HIP 0 memory");
    CHECK(found);
    sm_runtime_finalize();
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}

int main(void)
{
    test_calls();
    test_pools();
    test_through_the_layer();
    return unit_failures;
}
