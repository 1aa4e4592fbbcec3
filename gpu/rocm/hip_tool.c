/* HIP: libsysmeasure-hip.so, preloaded by the launcher into programs that
 * use libamdhip64 (ROCm 5.x).  Through the callback interface the runtime
 * exports (hipRegisterApiCallback, hipInitActivityCallback,
 * hipEnableActivityCallback):
 *   - every HIP API call the runtime reports becomes a region of paradigm
 *     HIP on the calling thread, its enter carrying the runtime's correlation
 *     id and its leave the call's error code when it failed;
 *   - kernel dispatches, copies and fills arrive as HIP activity records on
 *     the runtime's own thread; rocm_convert.c turns them into activities
 *     (host clock, kind, bytes, kernel name by correlation id) for the GPU
 *     layer;
 *   - allocations and frees (hipMalloc, hipHostMalloc, hipMallocManaged,
 *     hipMallocAsync, their frees: hip_memory.c reads their arguments at
 *     the call's exit) go to the core's GPU memory accounting, on the
 *     calling thread, and their address and size onto the call's leave;
 *   - rocm-smi readings (rsmi_sampler.c).
 * With no AMD GPU (no /dev/kfd) the runtime reports no calls at all (seen
 * with Debian's 5.2: registering succeeds, the callback never fires), so
 * sysmeasure says so once and the program runs as it would.  What needs a
 * GPU is built, not verified on AMD hardware (manual, section "AMD GPUs"). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hip/hip_runtime_api.h>
#include <hip/amd_detail/hip_runtime_prof.h>
#include <hip/amd_detail/hip_prof_str.h>

#include "core/adapter_api.h"
#include "core/compiler.h"
#include "hip_memory.h"
#include "rocm_convert.h"
#include "rocm_deliver.h"
#include "rsmi_sampler.h"
#include "util/log.h"

SM_EXPORT const sm_adapter_api_t *sysmeasure_adapter_api(unsigned version);

/* What rocm_convert.h assumes of the HIP headers. */
_Static_assert(kHipVdiOpIdDispatch == SM_HIP_OP_DISPATCH && kHipVdiOpIdCopy == SM_HIP_OP_COPY &&
                   kHipVdiOpIdBarrier == SM_HIP_OP_BARRIER && kHipVdiOpIdNumber == SM_HIP_OP_COUNT,
               "HIP op ids");
_Static_assert(kHipVdiCommandKernel == SM_HIP_CMD_KERNEL &&
                   kHipVdiMemcpyDeviceToHost == SM_HIP_CMD_COPY_DTOH &&
                   kHipHipVdiMemcpyHostToDevice == SM_HIP_CMD_COPY_HTOD &&
                   kHipVdiMemcpyDeviceToDevice == SM_HIP_CMD_COPY_DTOD &&
                   kHipVidMemcpyDeviceToHostRect == SM_HIP_CMD_COPY_DTOH_RECT &&
                   kHipVdiMemcpyHostToDeviceRect == SM_HIP_CMD_COPY_HTOD_RECT &&
                   kHipVdiMemcpyDeviceToDeviceRect == SM_HIP_CMD_COPY_DTOD_RECT &&
                   kHipVdiFillMemory == SM_HIP_CMD_FILL,
               "HIP command kinds");
_Static_assert(offsetof(hip_api_data_t, correlation_id) == 0 &&
                   offsetof(hip_api_data_t, phase) == 8,
               "hip_api_data_t: correlation id and phase");

/* prof_protocol.h's callback phases. */
#define SM_HIP_PHASE_ENTER 0
#define SM_HIP_PHASE_EXIT 1

static const sm_adapter_api_t *sm_hip_api;
static sm_region_id_t sm_hip_regions[HIP_API_ID_LAST + 1];
static sm_rocm_clock_t sm_hip_clock;
static sm_rocm_names_t sm_hip_names;
static bool sm_hip_gpu; /* /dev/kfd opened: device work can be reported */
static uint64_t sm_hip_activities, sm_hip_records_skipped;
/* GPU memory asked for (configuration gpu_memory), and its attributes. */
static bool sm_hip_memory;
static sm_attribute_id_t sm_hip_attr_address, sm_hip_attr_allocated, sm_hip_attr_freed;

static void sm_hip_end(void);

static struct {
    hipError_t (*register_api)(uint32_t, void *, void *);
    hipError_t (*remove_api)(uint32_t);
    const char *(*api_name)(uint32_t);
    const char *(*kernel_name_ref)(const hipFunction_t);
    const char *(*kernel_name_by_ptr)(const void *, hipStream_t);
    hipError_t (*get_device)(int *);
    hipError_t (*peek_error)(void);
    void (*init_activity)(void *, void *, void *);
    bool (*enable_activity)(uint32_t, bool);
} sm_hip_rt;

/* Set while this thread is inside our callback: the runtime calls we make
 * there (hipPeekAtLastError) report themselves too. */
static SM_TLS int sm_hip_busy;

#define SM_HIP_SYM(field, name)                                                           \
    do {                                                                                  \
        void *s = dlsym(RTLD_DEFAULT, name);                                              \
        memcpy(&sm_hip_rt.field, &s, sizeof s);                                           \
    } while (0)

/* ---------------------------------------------------------------- API calls */

static sm_region_id_t sm_hip_region(uint32_t cid)
{
    sm_region_id_t r = __atomic_load_n(&sm_hip_regions[cid], __ATOMIC_ACQUIRE);
    if (SM_LIKELY(r != SM_INVALID_ID))
        return r;
    const char *name = sm_hip_rt.api_name ? sm_hip_rt.api_name(cid) : NULL;
    char fallback[32];
    if (!name || !*name) {
        snprintf(fallback, sizeof fallback, "hip api %u", cid);
        name = fallback;
    }
    r = sm_hip_api->region_define(name, NULL, 0, SM_PARADIGM_HIP, SM_ROLE_WRAPPER);
    __atomic_store_n(&sm_hip_regions[cid], r, __ATOMIC_RELEASE);
    return r;
}

/* The kernel a launch call names, remembered by the call's correlation id
 * for its activity record. */
static void sm_hip_launch_name(uint32_t cid, const hip_api_data_t *d)
{
    const char *name = NULL;
    switch (cid) {
    case HIP_API_ID_hipLaunchKernel:
        if (sm_hip_rt.kernel_name_by_ptr)
            name = sm_hip_rt.kernel_name_by_ptr(d->args.hipLaunchKernel.function_address,
                                                d->args.hipLaunchKernel.stream);
        break;
    case HIP_API_ID_hipExtLaunchKernel:
        if (sm_hip_rt.kernel_name_by_ptr)
            name = sm_hip_rt.kernel_name_by_ptr(d->args.hipExtLaunchKernel.function_address,
                                                d->args.hipExtLaunchKernel.stream);
        break;
    case HIP_API_ID_hipLaunchCooperativeKernel:
        if (sm_hip_rt.kernel_name_by_ptr)
            name = sm_hip_rt.kernel_name_by_ptr(d->args.hipLaunchCooperativeKernel.f,
                                                d->args.hipLaunchCooperativeKernel.stream);
        break;
    case HIP_API_ID_hipModuleLaunchKernel:
        if (sm_hip_rt.kernel_name_ref)
            name = sm_hip_rt.kernel_name_ref(d->args.hipModuleLaunchKernel.f);
        break;
    case HIP_API_ID_hipExtModuleLaunchKernel:
        if (sm_hip_rt.kernel_name_ref)
            name = sm_hip_rt.kernel_name_ref(d->args.hipExtModuleLaunchKernel.f);
        break;
    case HIP_API_ID_hipHccModuleLaunchKernel:
        if (sm_hip_rt.kernel_name_ref)
            name = sm_hip_rt.kernel_name_ref(d->args.hipHccModuleLaunchKernel.f);
        break;
    default: return;
    }
    if (name)
        sm_rocm_names_put(&sm_hip_names, d->correlation_id, name);
}

/* A call that allocated or freed, at its successful exit: the operation
 * for the core's accounting (a free's size looked up first), and the
 * call's leave with the address and size.  1 when it left the region. */
static int sm_hip_memory_call(uint32_t cid, const hip_api_data_t *d, sm_region_id_t r)
{
    sm_hip_mem_call_t c;
    if (!sm_hip_memory || sm_hip_mem_from_call(cid, d, &c) != 0 || !c.address)
        return 0;
    sm_adapter_attr_t a[2] = {{sm_hip_attr_address, c.address}, {SM_INVALID_ID, 0}};
    uint32_t n = 1;
    sm_gpu_mem_op_t op =
        sm_gpu_mem_op_of_call(&c, SM_GPU_VENDOR_AMD, d->correlation_id, sm_hip_api->now());
    if (c.what == SM_GPU_MEM_ALLOC) {
        int ordinal = 0;
        if (sm_hip_rt.get_device && sm_hip_rt.get_device(&ordinal) != hipSuccess)
            ordinal = 0;
        op.device = sm_rocm_device(sm_hip_api, ordinal >= 0 ? (uint32_t)ordinal : 0);
        a[n++] = (sm_adapter_attr_t){sm_hip_attr_allocated, c.bytes};
    } else {
        uint64_t bytes = sm_hip_api->gpu_memory_block_bytes(c.address);
        if (bytes)
            a[n++] = (sm_adapter_attr_t){sm_hip_attr_freed, bytes};
    }
    sm_hip_api->gpu_memory(&op, 1, sizeof op);
    sm_hip_api->leave_attrs(r, a, n);
    return 1;
}

static void sm_hip_api_callback(uint32_t domain, uint32_t cid, const void *data, void *arg)
{
    (void)domain;
    (void)arg;
    const hip_api_data_t *d = data;
    if (sm_hip_busy || !d || cid > HIP_API_ID_LAST || !sm_hip_api->runtime_active())
        return;
    int saved_errno = errno;
    sm_hip_busy = 1;
    sm_region_id_t r = sm_hip_region(cid);
    if (d->phase == SM_HIP_PHASE_ENTER) {
        /* The GPU layer puts the correlation id on the enter and charges
         * the device work of that id to this call path. */
        sm_hip_api->gpu_api_enter(r, d->correlation_id);
    } else {
        sm_hip_launch_name(cid, d);
        /* HIP stores each call's result as the thread's last error before
         * the exit callback runs; peeking does not reset it. */
        hipError_t err = sm_hip_rt.peek_error ? sm_hip_rt.peek_error() : hipSuccess;
        if (err != hipSuccess || !sm_hip_memory_call(cid, d, r))
            sm_hip_api->gpu_api_leave(r, (int64_t)err);
    }
    sm_hip_busy = 0;
    errno = saved_errno;
}

/* ---------------------------------------------------------------- device work */

/* Hands a finished activity to the GPU layer (a stream location per HIP
 * queue, the kernel's or copy's region, linked to its launch by the
 * correlation id). */
static void sm_hip_deliver(const sm_rocm_activity_t *a)
{
    if (sm_rocm_deliver(sm_hip_api, a, "HIP queue") == 0)
        __atomic_fetch_add(&sm_hip_activities, 1, __ATOMIC_RELAXED);
}

static void sm_hip_id_callback(uint64_t correlation)
{
    (void)correlation;
}

static void sm_hip_async_callback(uint32_t op, void *record, void *arg)
{
    (void)op;
    (void)arg;
    const sm_hip_record_t *r = record;
    sm_rocm_activity_t a;
    if (!r || sm_rocm_from_hip_record(r, &sm_hip_clock,
                                      sm_rocm_names_get(&sm_hip_names, r->correlation_id),
                                      &a) != 0) {
        __atomic_fetch_add(&sm_hip_records_skipped, 1, __ATOMIC_RELAXED);
        return;
    }
    sm_hip_deliver(&a);
}

/* ---------------------------------------------------------------- rocm-smi */

/* rocm-smi on the core's sampler thread: per device, power, energy,
 * temperature, utilization and VRAM used, at the sampling interval. */
static uint32_t sm_hip_rsmi_devices;
static uint32_t sm_hip_rsmi_metric[SM_RSMI_MAX_DEVICES][5];

static int sm_hip_rsmi_start(void *ctx)
{
    (void)ctx;
    static const char *const what[5] = {"power", "energy", "temperature", "busy",
                                        "memory used"};
    static const char *const unit[5] = {"uW", "uJ", "mC", "%", "bytes"};
    for (uint32_t d = 0; d < sm_hip_rsmi_devices; d++)
        for (int k = 0; k < 5; k++) {
            char name[64];
            snprintf(name, sizeof name, "AMD GPU %u %s", d, what[k]);
            sm_hip_rsmi_metric[d][k] = sm_hip_api->metric_define(name, unit[k]);
        }
    return 0;
}

static void sm_hip_rsmi_read(void *ctx, sm_sample_sink_t *sink)
{
    (void)ctx;
    sm_rsmi_sample_t s[SM_RSMI_MAX_DEVICES];
    uint32_t n = sm_rsmi_read(s, sm_hip_rsmi_devices);
    for (uint32_t d = 0; d < n; d++) {
        const uint64_t v[5] = {s[d].power_uw, s[d].energy_uj, s[d].temperature_mc,
                               s[d].busy_percent, s[d].memory_used};
        for (int k = 0; k < 5; k++)
            if (v[k] != UINT64_MAX && sm_hip_rsmi_metric[d][k] != SM_INVALID_ID)
                sm_hip_api->sample_put(sink, sm_hip_rsmi_metric[d][k], v[k]);
    }
}

static void sm_hip_rsmi_stop(void *ctx)
{
    (void)ctx;
    sm_rsmi_close();
}

/* ---------------------------------------------------------------- start and end */

__attribute__((constructor)) static void sm_hip_start(void)
{
    int saved_errno = errno;
    const sm_adapter_api_t *api = sysmeasure_adapter_api(SM_ADAPTER_API_VERSION);
    if (!api || !SM_ADAPTER_API_HAS(api, sample_put) || !api->runtime_active()) {
        errno = saved_errno;
        return;
    }
    sm_hip_api = api;
    for (uint32_t i = 0; i <= HIP_API_ID_LAST; i++)
        sm_hip_regions[i] = SM_INVALID_ID;
    SM_HIP_SYM(register_api, "hipRegisterApiCallback");
    SM_HIP_SYM(remove_api, "hipRemoveApiCallback");
    SM_HIP_SYM(api_name, "hipApiName");
    SM_HIP_SYM(kernel_name_ref, "hipKernelNameRef");
    SM_HIP_SYM(kernel_name_by_ptr, "hipKernelNameRefByPtr");
    SM_HIP_SYM(peek_error, "hipPeekAtLastError");
    SM_HIP_SYM(get_device, "hipGetDevice");
    SM_HIP_SYM(init_activity, "hipInitActivityCallback");
    SM_HIP_SYM(enable_activity, "hipEnableActivityCallback");

    int fd = open("/dev/kfd", O_RDWR | O_CLOEXEC);
    sm_hip_gpu = fd >= 0;
    if (fd >= 0)
        close(fd);
    else if (sm_hip_rt.register_api) /* (a program without HIP hears nothing of AMD) */
        sm_warning("no AMD GPU found (/dev/kfd: %s): HIP calls are recorded only as far as the "
                   "HIP runtime reports them, and no kernels or copies", strerror(errno));

    if (!sm_hip_rt.register_api) {
        sm_info(1, "libamdhip64 not loaded: HIP is not measured");
    } else {
        /* GPU memory from HIP's calls: HSA's pools below them (hsa_tool)
         * would count HIP's allocations again. */
        char memory[8] = "yes";
        if (SM_ADAPTER_API_HAS(api, gpu_memory_block_bytes) &&
            (api->config_value("gpu_memory", memory, sizeof memory) != 0 ||
             strcmp(memory, "no") != 0)) {
            sm_hip_attr_address = api->attribute_define("memory address", SM_ATTR_INT64);
            sm_hip_attr_allocated = api->attribute_define("allocated bytes", SM_ATTR_INT64);
            sm_hip_attr_freed = api->attribute_define("freed bytes", SM_ATTR_INT64);
            api->gpu_memory_api_source(SM_GPU_VENDOR_AMD);
            sm_hip_memory = true;
        }
        uint32_t failed = 0;
        for (uint32_t id = HIP_API_ID_FIRST; id <= HIP_API_ID_LAST; id++)
            failed += sm_hip_rt.register_api(id, (void *)sm_hip_api_callback, NULL) != hipSuccess;
        if (failed)
            sm_info(1, "HIP: %u of %u API callbacks not registered", failed,
                    (unsigned)(HIP_API_ID_LAST - HIP_API_ID_FIRST + 1));
        if (sm_hip_gpu && sm_hip_rt.init_activity && sm_hip_rt.enable_activity) {
            /* HIP 5.x stamps its records with the system clock of HSA
             * (CLOCK_BOOTTIME on Linux). */
            sm_rocm_clock_measure(&sm_hip_clock, CLOCK_BOOTTIME);
            sm_hip_rt.init_activity((void *)sm_hip_id_callback, (void *)sm_hip_async_callback,
                                    NULL);
            for (uint32_t op = 0; op < SM_HIP_OP_COUNT; op++)
                sm_hip_rt.enable_activity(op, true);
        }
    }
    api->metadata("amd_gpu", sm_hip_gpu ? "yes" : "no (/dev/kfd missing)");
    char power[8] = "yes";
    api->config_value("gpu_power", power, sizeof power);
    /* rocm-smi only for a program that uses HIP or on a machine with an AMD
     * GPU, and quiet where neither (--gpu on an NVIDIA machine). */
    sm_hip_rsmi_devices = strcmp(power, "no") != 0 && (sm_hip_rt.register_api || sm_hip_gpu)
                              ? sm_rsmi_open(!sm_hip_rt.register_api)
                              : 0;
    if (sm_hip_rsmi_devices) {
        sm_sampler_t sampler = {"rocm-smi", 0, NULL, sm_hip_rsmi_start, sm_hip_rsmi_read,
                                sm_hip_rsmi_stop};
        if (api->sampler_register(&sampler) != 0)
            sm_rsmi_close();
    }
    atexit(sm_hip_end);
    errno = saved_errno;
}

/* At exit, before the core writes the output of a program without MPI
 * (atexit handlers run in reverse order: ours was registered after the
 * core's).  An MPI program's output is written at MPI_Finalize, before. */
static void sm_hip_end(void)
{
    if (!sm_hip_api->runtime_active())
        return;
    char v[32];
    snprintf(v, sizeof v, "%llu", (unsigned long long)sm_hip_activities);
    sm_hip_api->metadata("hip_device_activities", v);
}
