/* libsysmeasure-cuda.so: the NVIDIA backend of the GPU layer (src/core/gpu.h),
 * on CUPTI.  The CUDA driver loads it through CUDA_INJECTION64_PATH and calls
 * InitializeInjection before the program's first CUDA call; NVTX loads it
 * through NVTX_INJECTION64_PATH and it hands NVTX on to CUPTI.
 *
 * Host side (callbacks, on the calling thread): runtime and driver API calls
 * are regions (a driver call made inside a runtime call is not: the runtime
 * call stands for it), entered with CUPTI's correlation id and left with the
 * call's error code when it failed; NVTX ranges and marks are regions.
 * Device side (activity records, on CUPTI's thread or the flushing one):
 * concurrent kernels (never the serialising KERNEL kind), copies, peer
 * copies, memsets and synchronisations become batches for the core.
 * GPU memory (core/gpu_memory.h): CUPTI's memory records (MEMORY2) become
 * the core's allocations and frees, and the calls that allocate or free
 * carry the address and size on their leave (cupti_memory.c reads both);
 * with gpu_memory=api, or where CUPTI refuses the memory records, the
 * calls themselves are the allocations and frees.
 *
 * CUPTI is never finalized (teardown races other threads in CUPTI 13): at
 * the end of the run its buffers are flushed (forced) and its callbacks
 * turned off. */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda.h>
#include <cupti.h>
#include <nvtx3/nvToolsExt.h>
#include <generated_nvtx_meta.h>

#include "../../src/core/adapter_api.h"
#include "../../src/core/compiler.h"
#include "../../src/util/log.h"
#include "cupti_counters.h"
#include "cupti_memory.h"
#include "cupti_pmsampling.h"
#include "nvml_sampler.h"

SM_EXPORT const sm_adapter_api_t *sysmeasure_adapter_api(unsigned version);
SM_EXPORT int InitializeInjection(void);
SM_EXPORT int InitializeInjectionNvtx2(void *get_export_table);

/* C++ kernel names: the C++ runtime's demangler, when the program has it. */
extern char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status)
    __attribute__((weak));
typedef char *(*sm_cu_demangle_fn)(const char *mangled, char *out, size_t *len, int *status);
static sm_cu_demangle_fn sm_cu_demangle;
static pthread_once_t sm_cu_demangle_once = PTHREAD_ONCE_INIT;

/* A program that loads its C++ runtime late (Python loads PyTorch, CuPy and
 * JAX with their libstdc++ in a local scope) left the weak reference empty:
 * the loaded libstdc++'s demangler then, or one loaded for the purpose. */
static void sm_cu_find_demangler(void)
{
    if (__cxa_demangle) {
        sm_cu_demangle = __cxa_demangle;
        return;
    }
    void *lib = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_NOLOAD);
    if (!lib)
        lib = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
    void *fn = lib ? dlsym(lib, "__cxa_demangle") : NULL;
    memcpy(&sm_cu_demangle, &fn, sizeof fn);
}

static const sm_adapter_api_t *sm_cu_api;
static CUpti_SubscriberHandle sm_cu_subscriber;
static int sm_cu_on; /* tracing is set up */
static int sm_cu_counting; /* per-kernel counters asked for (cupti_counters.c) */
/* Captures under way (stream capture into a CUDA graph, any thread):
 * launches then only record graph nodes, and a profiler call during a
 * capture invalidates it (the program's EndCapture fails), so counting
 * makes none until the capture ends. */
static int sm_cu_capturing;

/* Where GPU memory comes from (configuration gpu_memory). */
typedef enum {
    SM_CU_MEMORY_OFF = 0,
    SM_CU_MEMORY_RECORDS, /* CUPTI_ACTIVITY_KIND_MEMORY2 */
    SM_CU_MEMORY_CALLS    /* the runtime and driver calls, at their exit */
} sm_cu_memory_t;
static sm_cu_memory_t sm_cu_memory;
static sm_attribute_id_t sm_cu_attr_address = SM_INVALID_ID, sm_cu_attr_allocated = SM_INVALID_ID,
                         sm_cu_attr_freed = SM_INVALID_ID;

/* Our own CUDA/CUPTI calls (device names) are not the program's. */
static __thread int sm_cu_in_tool;
/* Runtime API calls open on this thread: driver calls inside them are the
 * runtime's own. */
static __thread int sm_cu_runtime_depth;

void sm_cu_own_calls(int delta)
{
    sm_cu_in_tool += delta;
}

static void sm_cu_warn_cupti(const char *what, CUptiResult rc)
{
    const char *text = NULL;
    cuptiGetResultString(rc, &text);
    sm_warning("GPU work is not measured: %s failed (%s); the program runs on and CPU "
               "measurement continues", what, text ? text : "unknown CUPTI error");
}

/* ---------------------------------------------------------------- regions */

#define SM_CU_MAX_CBID 4096
static sm_region_id_t sm_cu_api_regions[2][SM_CU_MAX_CBID];

/* "cudaLaunchKernel_v7000" -> "cudaLaunchKernel", "cuMemcpyHtoD_v2" -> "cuMemcpyHtoD". */
static void sm_cu_api_name(const char *in, char *out, size_t len)
{
    snprintf(out, len, "%s", in ? in : "?");
    char *v = strrchr(out, '_');
    if (v && v[1] == 'v' && v[2] >= '0' && v[2] <= '9' && v[2 + strspn(v + 2, "0123456789")] == '\0')
        *v = '\0';
}

static sm_region_id_t sm_cu_api_region(int driver, CUpti_CallbackId cbid, const char *name)
{
    if (cbid >= SM_CU_MAX_CBID)
        cbid = 0;
    sm_region_id_t r = __atomic_load_n(&sm_cu_api_regions[driver][cbid], __ATOMIC_RELAXED);
    if (SM_LIKELY(r != 0))
        return r - 1;
    char text[128];
    sm_cu_api_name(name, text, sizeof text);
    r = sm_cu_api->region_define(text, NULL, 0, SM_PARADIGM_CUDA, SM_ROLE_WRAPPER);
    __atomic_store_n(&sm_cu_api_regions[driver][cbid], r + 1, __ATOMIC_RELAXED);
    return r;
}

/* Kernel names -> regions, by CUPTI's name pointer (stable for a loaded
 * module) checked against a copy of the name. */
#define SM_CU_KERNEL_SLOTS 1024
static struct {
    const char *key;
    char *name;
    sm_region_id_t region;
} sm_cu_kernels[SM_CU_KERNEL_SLOTS];

static sm_region_id_t sm_cu_kernel_region(const char *name)
{
    if (!name)
        name = "(unnamed kernel)";
    uintptr_t h = ((uintptr_t)name >> 4) % SM_CU_KERNEL_SLOTS;
    if (sm_cu_kernels[h].key == name && strcmp(sm_cu_kernels[h].name, name) == 0)
        return sm_cu_kernels[h].region;
    char *demangled = NULL;
    int status = -1;
    if (name[0] == '_' && name[1] == 'Z') {
        pthread_once(&sm_cu_demangle_once, sm_cu_find_demangler);
        if (sm_cu_demangle)
            demangled = sm_cu_demangle(name, NULL, NULL, &status);
    }
    sm_region_id_t r = sm_cu_api->region_define(status == 0 && demangled ? demangled : name, NULL, 0,
                                                SM_PARADIGM_CUDA, SM_ROLE_FUNCTION);
    free(demangled);
    char *copy = strdup(name);
    if (copy) {
        free(sm_cu_kernels[h].name);
        sm_cu_kernels[h].key = name;
        sm_cu_kernels[h].name = copy;
        sm_cu_kernels[h].region = r;
    }
    return r;
}

/* ---------------------------------------------------------------- devices and streams */

#define SM_CU_MAX_DEVICES 64
static sm_gpu_device_t sm_cu_devices[SM_CU_MAX_DEVICES]; /* + 1; 0: not yet */
#define SM_CU_MAX_CONTEXTS 256
static struct {
    uint32_t id;
    uint32_t device; /* + 1 */
} sm_cu_contexts[SM_CU_MAX_CONTEXTS];
static pthread_mutex_t sm_cu_lock = PTHREAD_MUTEX_INITIALIZER;
/* Live contexts, to wait for their work at the end of the run. */
#define SM_CU_MAX_LIVE 32
static CUcontext sm_cu_live[SM_CU_MAX_LIVE];

static sm_gpu_device_t sm_cu_device(uint32_t ordinal)
{
    if (ordinal >= SM_CU_MAX_DEVICES)
        return SM_GPU_NONE;
    if (sm_cu_devices[ordinal])
        return sm_cu_devices[ordinal] - 1;
    char name[96] = "", uuid[64] = "", pci[32] = "";
    CUdevice dev;
    sm_cu_in_tool++;
    if (cuDeviceGet(&dev, (int)ordinal) == CUDA_SUCCESS) {
        CUuuid u;
        cuDeviceGetName(name, sizeof name, dev);
        if (cuDeviceGetUuid(&u, dev) == CUDA_SUCCESS) {
            const unsigned char *b = (const unsigned char *)u.bytes;
            snprintf(uuid, sizeof uuid,
                     "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                     b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
                     b[12], b[13], b[14], b[15]);
        }
        cuDeviceGetPCIBusId(pci, sizeof pci, dev);
    }
    sm_cu_in_tool--;
    sm_gpu_device_info_t info = {SM_GPU_VENDOR_NVIDIA, ordinal, name, uuid, pci};
    sm_gpu_device_t d = sm_cu_api->gpu_device_define(&info);
    if (d != SM_GPU_NONE)
        sm_cu_devices[ordinal] = d + 1;
    return d;
}

static void sm_cu_context_device(uint32_t context, uint32_t device)
{
    for (uint32_t i = 0; i < SM_CU_MAX_CONTEXTS; i++) {
        if (sm_cu_contexts[i].device && sm_cu_contexts[i].id != context)
            continue;
        sm_cu_contexts[i].id = context;
        sm_cu_contexts[i].device = device + 1;
        return;
    }
}

static uint32_t sm_cu_device_of_context(uint32_t context)
{
    for (uint32_t i = 0; i < SM_CU_MAX_CONTEXTS && sm_cu_contexts[i].device; i++)
        if (sm_cu_contexts[i].id == context)
            return sm_cu_contexts[i].device - 1;
    return 0;
}

/* (context, stream) -> the core's stream, open addressing. */
#define SM_CU_STREAM_SLOTS 8192
static struct {
    uint64_t key; /* context << 32 | stream, + 1; 0: empty */
    sm_gpu_stream_t stream;
} sm_cu_streams[SM_CU_STREAM_SLOTS];

static sm_gpu_stream_t sm_cu_stream(uint32_t device, uint32_t context, uint32_t stream)
{
    uint64_t key = ((uint64_t)context << 32 | stream) + 1;
    uint32_t h = (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 51) % SM_CU_STREAM_SLOTS;
    for (uint32_t probe = 0; probe < SM_CU_STREAM_SLOTS; probe++, h = (h + 1) % SM_CU_STREAM_SLOTS) {
        if (sm_cu_streams[h].key == key)
            return sm_cu_streams[h].stream;
        if (sm_cu_streams[h].key)
            continue;
        sm_gpu_device_t dev = sm_cu_device(device);
        if (dev == SM_GPU_NONE)
            return SM_GPU_NONE;
        char name[64];
        if (stream == UINT32_MAX)
            snprintf(name, sizeof name, "CUDA %" PRIu32 " context %" PRIu32 " synchronization",
                     device, context);
        else
            snprintf(name, sizeof name, "CUDA %" PRIu32 " stream %" PRIu32, device, stream);
        sm_gpu_stream_t s = sm_cu_api->gpu_stream_define(dev, key - 1, name);
        if (s == SM_GPU_NONE)
            return s;
        sm_cu_streams[h].key = key;
        sm_cu_streams[h].stream = s;
        return s;
    }
    return SM_GPU_NONE;
}

/* ---------------------------------------------------------------- activity buffers */

#define SM_CU_BUFFER_SIZE (4u << 20)
#define SM_CU_FREE_MAX 16
static void *sm_cu_free_list[SM_CU_FREE_MAX];
static uint32_t sm_cu_n_free;
static pthread_mutex_t sm_cu_free_lock = PTHREAD_MUTEX_INITIALIZER;

static void CUPTIAPI sm_cu_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    void *b = NULL;
    pthread_mutex_lock(&sm_cu_free_lock);
    if (sm_cu_n_free)
        b = sm_cu_free_list[--sm_cu_n_free];
    pthread_mutex_unlock(&sm_cu_free_lock);
    if (!b)
        b = aligned_alloc(8, SM_CU_BUFFER_SIZE);
    *buffer = b;
    *size = b ? SM_CU_BUFFER_SIZE : 0;
    *max_records = 0;
}

static void sm_cu_buffer_release(uint8_t *b)
{
    pthread_mutex_lock(&sm_cu_free_lock);
    if (sm_cu_n_free < SM_CU_FREE_MAX) {
        sm_cu_free_list[sm_cu_n_free++] = b;
        b = NULL;
    }
    pthread_mutex_unlock(&sm_cu_free_lock);
    free(b);
}

static sm_gpu_kind_t sm_cu_copy_kind(uint8_t kind)
{
    switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
        return SM_GPU_COPY_HTOD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
        return SM_GPU_COPY_DTOH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
        return SM_GPU_COPY_DTOD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
        return SM_GPU_COPY_HTOH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
        return SM_GPU_COPY_PEER;
    default:
        return SM_GPU_OTHER;
    }
}

typedef struct sm_cu_batch {
    sm_gpu_activity_t a[512];
    size_t n;
} sm_cu_batch_t;

static void sm_cu_batch_flush(sm_cu_batch_t *b)
{
    if (b->n)
        sm_cu_api->gpu_activities(b->a, b->n, sizeof b->a[0]);
    b->n = 0;
}

static sm_gpu_activity_t *sm_cu_batch_next(sm_cu_batch_t *b)
{
    if (b->n == sizeof b->a / sizeof b->a[0])
        sm_cu_batch_flush(b);
    sm_gpu_activity_t *a = &b->a[b->n];
    memset(a, 0, sizeof *a);
    a->region = SM_INVALID_ID;
    return a;
}

static uint64_t sm_cu_ticks(uint64_t ns)
{
    return sm_cu_api->gpu_ticks(SM_GPU_CLOCK_MONOTONIC, ns);
}

/* Allocations and frees of CUPTI's memory records, in their order. */
typedef struct sm_cu_mem_batch {
    sm_gpu_mem_op_t op[256];
    size_t n;
} sm_cu_mem_batch_t;

static void sm_cu_mem_flush(sm_cu_mem_batch_t *b)
{
    if (b->n)
        sm_cu_api->gpu_memory(b->op, b->n, sizeof b->op[0]);
    b->n = 0;
}

static void sm_cu_mem_record(sm_cu_mem_batch_t *b, const CUpti_ActivityMemory4 *m)
{
    /* Pinned host memory may name no device: its context's then. */
    uint32_t ordinal = m->deviceId < SM_CU_MAX_DEVICES ? m->deviceId
                                                       : sm_cu_device_of_context(m->contextId);
    sm_gpu_device_t dev = sm_cu_device(ordinal);
    if (dev == SM_GPU_NONE &&
        m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION) {
        sm_cu_api->gpu_dropped(1);
        return;
    }
    if (b->n == sizeof b->op / sizeof b->op[0])
        sm_cu_mem_flush(b);
    if (sm_cum_from_record(m, dev, sm_cu_ticks(m->timestamp), &b->op[b->n]) == 0)
        b->n++;
}

/* One CUPTI record into the batch; the ones we do not trace are skipped. */
static void sm_cu_record(sm_cu_batch_t *b, sm_cu_mem_batch_t *mb, const CUpti_Activity *rec)
{
    uint32_t device, context, stream;
    sm_gpu_activity_t *a;
    switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: {
        const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
        device = k->deviceId, context = k->contextId, stream = k->streamId;
        sm_cu_context_device(context, device);
        a = sm_cu_batch_next(b);
        a->kind = SM_GPU_KERNEL;
        uint64_t ks = k->start, ke = k->end;
        /* A kernel replayed by the range profiler has no times in its
         * record: it ran inside its launch call (cupti_counters.c). */
        if (!ks && !ke && sm_cu_counting &&
            sm_cuc_launch_interval(k->correlationId, &ks, &ke) != 0) {
            sm_cu_api->gpu_dropped(1);
            return;
        }
        a->start = sm_cu_ticks(ks);
        a->end = sm_cu_ticks(ke);
        a->correlation = k->correlationId;
        a->region = sm_cu_kernel_region(k->name);
        a->launch.grid[0] = (uint32_t)k->gridX;
        a->launch.grid[1] = (uint32_t)k->gridY;
        a->launch.grid[2] = (uint32_t)k->gridZ;
        a->launch.block[0] = (uint32_t)k->blockX;
        a->launch.block[1] = (uint32_t)k->blockY;
        a->launch.block[2] = (uint32_t)k->blockZ;
        a->launch.registers = k->registersPerThread;
        a->launch.shared_static = (uint32_t)k->staticSharedMemory;
        a->launch.shared_dynamic = (uint32_t)k->dynamicSharedMemory;
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)rec;
        device = m->deviceId, context = m->contextId, stream = m->streamId;
        sm_cu_context_device(context, device);
        a = sm_cu_batch_next(b);
        a->kind = sm_cu_copy_kind(m->copyKind);
        a->start = sm_cu_ticks(m->start);
        a->end = sm_cu_ticks(m->end);
        a->correlation = m->correlationId;
        a->bytes = m->bytes;
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY2: {
        const CUpti_ActivityMemcpyPtoP4 *m = (const CUpti_ActivityMemcpyPtoP4 *)rec;
        device = m->deviceId, context = m->contextId, stream = m->streamId;
        a = sm_cu_batch_next(b);
        a->kind = SM_GPU_COPY_PEER;
        a->start = sm_cu_ticks(m->start);
        a->end = sm_cu_ticks(m->end);
        a->correlation = m->correlationId;
        a->bytes = m->bytes;
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)rec;
        device = m->deviceId, context = m->contextId, stream = m->streamId;
        sm_cu_context_device(context, device);
        a = sm_cu_batch_next(b);
        a->kind = SM_GPU_MEMSET;
        a->start = sm_cu_ticks(m->start);
        a->end = sm_cu_ticks(m->end);
        a->correlation = m->correlationId;
        a->bytes = m->bytes;
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMORY2:
        if (sm_cu_memory == SM_CU_MEMORY_RECORDS)
            sm_cu_mem_record(mb, (const CUpti_ActivityMemory4 *)rec);
        return;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
        const CUpti_ActivitySynchronization2 *s = (const CUpti_ActivitySynchronization2 *)rec;
        context = s->contextId;
        stream = s->streamId; /* UINT32_MAX (invalid) for a context-wide wait */
        device = sm_cu_device_of_context(context);
        a = sm_cu_batch_next(b);
        a->kind = SM_GPU_SYNC;
        a->start = sm_cu_ticks(s->start);
        a->end = sm_cu_ticks(s->end);
        a->correlation = s->correlationId;
        break;
    }
    default:
        return;
    }
    a->stream = sm_cu_stream(device, context, stream);
    if (a->stream == SM_GPU_NONE) {
        sm_cu_api->gpu_dropped(1); /* the slot stays free */
        return;
    }
    if (a->kind == SM_GPU_KERNEL && sm_cu_counting)
        sm_cuc_kernel_done(a);
    b->n++;
}

static void CUPTIAPI sm_cu_buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t *buffer,
                                            size_t size, size_t valid)
{
    (void)size;
    static sm_cu_batch_t batch; /* under sm_cu_lock */
    static sm_cu_mem_batch_t mem_batch;
    sm_cu_in_tool++;
    pthread_mutex_lock(&sm_cu_lock);
    CUpti_Activity *rec = NULL;
    while (valid && cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS)
        sm_cu_record(&batch, &mem_batch, rec);
    sm_cu_batch_flush(&batch);
    sm_cu_mem_flush(&mem_batch);
    pthread_mutex_unlock(&sm_cu_lock);
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped) == CUPTI_SUCCESS && dropped)
        sm_cu_api->gpu_dropped(dropped);
    sm_cu_in_tool--;
    if (buffer)
        sm_cu_buffer_release(buffer);
}

/* ---------------------------------------------------------------- callbacks */

static const char *sm_cu_nvtx_message(const nvtxEventAttributes_t *attr)
{
    if (attr && attr->messageType == NVTX_MESSAGE_TYPE_ASCII)
        return attr->message.ascii;
    return NULL;
}

/* NVTX marks are regions of no length.  A range opened by nvtxRangeStart
 * may end on another thread (nvtxRangeEnd takes only its id), so it belongs
 * to no thread's region stack: as for ROCTx start/stop, each end is a mark
 * on its own thread ("NAME (start)", "NAME (stop)", attribute "nvtx range
 * id") and the whole range is written at its end on an "async ranges" lane
 * of the process.  Push/pop: see the callback. */
#define SM_CU_NVTX_RANGES 4096 /* open start/end ranges at one time */
static struct {
    uint64_t id; /* 0: free */
    uint64_t start;
    sm_region_id_t region, stop_mark;
} sm_cu_nvtx_ranges[SM_CU_NVTX_RANGES];
static pthread_mutex_t sm_cu_nvtx_lock = PTHREAD_MUTEX_INITIALIZER;
static sm_attribute_id_t sm_cu_nvtx_attr = SM_INVALID_ID;
static uint64_t sm_cu_nvtx_lost; /* ranges not recorded: the table was full */

static sm_region_id_t sm_cu_nvtx_region(const char *name, const char *suffix)
{
    char text[512];
    snprintf(text, sizeof text, "%s%s", name ? name : "(unnamed NVTX range)", suffix);
    return sm_cu_api->region_define(text, NULL, 0, SM_PARADIGM_USER,
                                    suffix[0] ? SM_ROLE_ARTIFICIAL : SM_ROLE_CODE);
}

static void sm_cu_nvtx_start(const char *name, uint64_t id)
{
    if (!id || !SM_ADAPTER_API_HAS(sm_cu_api, async_range))
        return;
    sm_region_id_t range = sm_cu_nvtx_region(name, "");
    sm_region_id_t start_mark = sm_cu_nvtx_region(name, " (start)");
    sm_region_id_t stop_mark = sm_cu_nvtx_region(name, " (stop)");
    sm_adapter_attr_t a = {sm_cu_nvtx_attr, id};
    uint64_t now = sm_cu_api->now();
    sm_cu_api->mark(start_mark, &a, sm_cu_nvtx_attr != SM_INVALID_ID);
    pthread_mutex_lock(&sm_cu_nvtx_lock);
    uint32_t h = (uint32_t)(id % SM_CU_NVTX_RANGES), probe = 0;
    while (probe < SM_CU_NVTX_RANGES && sm_cu_nvtx_ranges[h].id)
        h = (h + 1) % SM_CU_NVTX_RANGES, probe++;
    if (probe < SM_CU_NVTX_RANGES) {
        sm_cu_nvtx_ranges[h].id = id;
        sm_cu_nvtx_ranges[h].start = now;
        sm_cu_nvtx_ranges[h].region = range;
        sm_cu_nvtx_ranges[h].stop_mark = stop_mark;
    } else {
        sm_cu_nvtx_lost++;
    }
    pthread_mutex_unlock(&sm_cu_nvtx_lock);
}

static void sm_cu_nvtx_end(uint64_t id)
{
    if (!id)
        return;
    int found = 0;
    uint64_t start = 0;
    sm_region_id_t range = SM_INVALID_ID, stop_mark = SM_INVALID_ID;
    pthread_mutex_lock(&sm_cu_nvtx_lock);
    uint32_t h = (uint32_t)(id % SM_CU_NVTX_RANGES);
    for (uint32_t probe = 0; probe < SM_CU_NVTX_RANGES; probe++, h = (h + 1) % SM_CU_NVTX_RANGES)
        if (sm_cu_nvtx_ranges[h].id == id) {
            found = 1;
            start = sm_cu_nvtx_ranges[h].start;
            range = sm_cu_nvtx_ranges[h].region;
            stop_mark = sm_cu_nvtx_ranges[h].stop_mark;
            sm_cu_nvtx_ranges[h].id = 0;
            /* Backward-shift deletion: later entries of the probe chain
             * move into the hole unless their home lies in (hole, j]. */
            for (uint32_t i = h, j = (h + 1) % SM_CU_NVTX_RANGES; sm_cu_nvtx_ranges[j].id;
                 j = (j + 1) % SM_CU_NVTX_RANGES) {
                uint32_t k = (uint32_t)(sm_cu_nvtx_ranges[j].id % SM_CU_NVTX_RANGES);
                if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
                    continue;
                sm_cu_nvtx_ranges[i] = sm_cu_nvtx_ranges[j];
                sm_cu_nvtx_ranges[j].id = 0;
                i = j;
            }
            break;
        } else if (!sm_cu_nvtx_ranges[h].id) {
            break;
        }
    pthread_mutex_unlock(&sm_cu_nvtx_lock);
    if (!found)
        return; /* an id we never saw start (before measurement began) */
    sm_adapter_attr_t a = {sm_cu_nvtx_attr, id};
    uint32_t n = sm_cu_nvtx_attr != SM_INVALID_ID;
    sm_cu_api->mark(stop_mark, &a, n);
    sm_cu_api->async_range(range, start, sm_cu_api->now(), &a, n);
}

static void sm_cu_nvtx(CUpti_CallbackId cbid, const CUpti_NvtxData *d)
{
    const char *name = NULL;
    int start = 0;
    switch (cbid) {
    case CUPTI_CBID_NVTX_nvtxMarkA:
        name = ((const nvtxMarkA_params *)d->functionParams)->message;
        break;
    case CUPTI_CBID_NVTX_nvtxMarkEx:
        name = sm_cu_nvtx_message(((const nvtxMarkEx_params *)d->functionParams)->eventAttrib);
        break;
    case CUPTI_CBID_NVTX_nvtxRangeStartA:
        name = ((const nvtxRangeStartA_params *)d->functionParams)->message;
        start = 1;
        break;
    case CUPTI_CBID_NVTX_nvtxRangeStartEx:
        name = sm_cu_nvtx_message(
            ((const nvtxRangeStartEx_params *)d->functionParams)->eventAttrib);
        start = 1;
        break;
    case CUPTI_CBID_NVTX_nvtxRangeEnd:
        sm_cu_nvtx_end(((const nvtxRangeEnd_params *)d->functionParams)->id);
        return;
    default:
        return;
    }
    if (start) {
        sm_cu_nvtx_start(name,
                         d->functionReturnValue ? *(const nvtxRangeId_t *)d->functionReturnValue : 0);
        return;
    }
    sm_region_id_t r = sm_cu_api->region_define(name ? name : "(unnamed NVTX mark)", NULL, 0,
                                                SM_PARADIGM_USER, SM_ROLE_CODE);
    if (SM_ADAPTER_API_HAS(sm_cu_api, mark)) {
        sm_cu_api->mark(r, NULL, 0); /* an instant: enter and leave at one time */
    } else {
        sm_cu_api->enter(r);
        sm_cu_api->leave(r);
    }
}

/* A call that allocated or freed, at its successful exit: its leave with
 * the address and size (a free's size where the calls are the source: the
 * records come later), and where the calls are the source the operation
 * itself.  1 when it left the region, 0 for any other call. */
static int sm_cu_memory_call(int driver, CUpti_CallbackId cbid, const CUpti_CallbackData *cb,
                             sm_region_id_t r)
{
    sm_cum_call_t c;
    if (sm_cum_from_call(driver, cbid, cb->functionParams, &c) != 0 || !c.address)
        return 0;
    sm_adapter_attr_t a[2] = {{sm_cu_attr_address, c.address}, {SM_INVALID_ID, 0}};
    uint32_t n = 1;
    if (c.what == SM_GPU_MEM_ALLOC) {
        a[n++] = (sm_adapter_attr_t){sm_cu_attr_allocated, c.bytes};
    } else if (sm_cu_memory == SM_CU_MEMORY_CALLS) {
        uint64_t bytes = sm_cu_api->gpu_memory_block_bytes(c.address);
        if (bytes)
            a[n++] = (sm_adapter_attr_t){sm_cu_attr_freed, bytes};
    }
    if (sm_cu_memory == SM_CU_MEMORY_CALLS) {
        sm_gpu_mem_op_t op = sm_gpu_mem_op_of_call(&c, SM_GPU_VENDOR_NVIDIA, cb->correlationId,
                                                   sm_cu_api->now());
        if (c.what == SM_GPU_MEM_ALLOC) {
            CUcontext ctx = cb->context;
            uint32_t ordinal = 0;
            sm_cu_in_tool++;
            if (!ctx)
                cuCtxGetCurrent(&ctx);
            if (ctx)
                cuptiGetDeviceId(ctx, &ordinal);
            op.device = sm_cu_device(ordinal);
            sm_cu_in_tool--;
        }
        sm_cu_api->gpu_memory(&op, 1, sizeof op);
    }
    sm_cu_api->leave_attrs(r, a, n);
    return 1;
}

/* A context of device `ordinal` begins or is being destroyed.  At exit the
 * CUDA runtime destroys the primary context before sysmeasure's end, and
 * what the teardown releases was never freed by the program: the records
 * so far are handed over first, then the core is told. */
static void sm_cu_memory_context(uint32_t ordinal, sm_gpu_mem_what_t what)
{
    if (!sm_cu_memory)
        return;
    if (what == SM_GPU_MEM_DEVICE_END && sm_cu_memory == SM_CU_MEMORY_RECORDS) {
        sm_cu_in_tool++;
        cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        sm_cu_in_tool--;
    }
    sm_gpu_mem_op_t op;
    memset(&op, 0, sizeof op);
    op.what = what;
    op.device = sm_cu_device(ordinal);
    op.vendor = SM_GPU_VENDOR_NVIDIA;
    op.level = SM_GPU_MEM_LEVEL_API;
    op.time = sm_cu_api->now();
    if (op.device != SM_GPU_NONE)
        sm_cu_api->gpu_memory(&op, 1, sizeof op);
}

/* NVTX push/pop: the pushed regions of this thread, to pop the right one. */
static __thread sm_region_id_t sm_cu_nvtx_stack[128];
static __thread uint32_t sm_cu_nvtx_depth;

static void CUPTIAPI sm_cu_callback(void *userdata, CUpti_CallbackDomain domain,
                                    CUpti_CallbackId cbid, const void *data)
{
    (void)userdata;
    if (sm_cu_in_tool)
        return;
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API) {
        const CUpti_CallbackData *cb = data;
        int driver = domain == CUPTI_CB_DOMAIN_DRIVER_API;
        if (driver && sm_cu_runtime_depth > 0)
            return;
        sm_region_id_t r = sm_cu_api_region(driver, cbid, cb->functionName);
        /* Kernel launches carry the kernel's name (symbolName). */
        int capturing = sm_cu_counting && __atomic_load_n(&sm_cu_capturing, __ATOMIC_ACQUIRE);
        int launch = sm_cu_counting && !capturing && cb->symbolName && cb->functionName &&
                     strstr(cb->functionName, "aunch") && !strstr(cb->functionName, "Graph");
        /* A graph's kernels do not match the range profiler's ranges one
         * to one: the batch ends before a graph launch, so they run outside
         * it, not counted. */
        int graph_launch = sm_cu_counting && !capturing && cb->functionName &&
                           strstr(cb->functionName, "GraphLaunch");
        if (sm_cu_counting && cb->callbackSite == CUPTI_API_EXIT && cb->functionName) {
            if (strstr(cb->functionName, "BeginCapture") && cb->functionReturnValue &&
                *(const int *)cb->functionReturnValue == 0)
                __atomic_add_fetch(&sm_cu_capturing, 1, __ATOMIC_ACQ_REL);
            else if (strstr(cb->functionName, "EndCapture") &&
                     __atomic_load_n(&sm_cu_capturing, __ATOMIC_ACQUIRE) > 0)
                __atomic_sub_fetch(&sm_cu_capturing, 1, __ATOMIC_ACQ_REL);
        }
        if (cb->callbackSite == CUPTI_API_ENTER) {
            sm_cu_runtime_depth += !driver;
            sm_cu_api->gpu_api_enter(r, cb->correlationId);
            /* Counter values wait for no later than a synchronising call:
             * the batch is decoded at its entry (the launches before it
             * have returned; at the end of the run the context may be gone
             * before the final flush). */
            if (sm_cu_counting && !capturing && cb->functionName &&
                (graph_launch || strstr(cb->functionName, "Synchronize") ||
                 (strstr(cb->functionName, "emcpy") && !strstr(cb->functionName, "Async")))) {
                CUcontext cur = cb->context;
                if (!cur)
                    cuCtxGetCurrent(&cur);
                sm_cu_in_tool++;
                sm_cuc_sync(cur);
                sm_cu_in_tool--;
            }
            if (launch) {
                uint32_t dev = 0;
                sm_cu_in_tool++;
                if (cb->context)
                    cuptiGetDeviceId(cb->context, &dev);
                sm_cuc_launch_enter(cb->context, dev, cb->correlationId, cb->symbolName);
                sm_cu_in_tool--;
            }
        } else {
            if (launch) {
                /* cudaError_t and CUresult alike: 0 is success. */
                int failed = cb->functionReturnValue && *(const int *)cb->functionReturnValue != 0;
                sm_cu_in_tool++;
                sm_cuc_launch_exit(cb->context, cb->correlationId, failed);
                sm_cu_in_tool--;
            }
            sm_cu_runtime_depth -= !driver && sm_cu_runtime_depth > 0;
            sm_cupm_api_exit(); /* a device sampler waiting for its context's creation to end */
            int64_t err = 0;
            if (cb->functionReturnValue)
                err = driver ? (int64_t) * (const CUresult *)cb->functionReturnValue
                             : (int64_t) * (const int *)cb->functionReturnValue;
            if (err || !sm_cu_memory || !sm_cu_memory_call(driver, cbid, cb, r))
                sm_cu_api->gpu_api_leave(r, err);
            /* No device or no usable driver: say it once. */
            static int said;
            if ((err == 100 || err == 35) && !__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED)) {
                sm_warning("GPU work is not measured: %s returned %s (%" PRId64 "); the program "
                           "runs on and CPU measurement continues", cb->functionName,
                           err == 100 ? "no CUDA device" : "CUDA driver too old", err);
                char note[160];
                snprintf(note, sizeof note, "GPU: %s (CUDA error %" PRId64 ")",
                         err == 100 ? "no CUDA device" : "CUDA driver too old", err);
                sm_cu_api->note(note);
            }
        }
        return;
    }
    if (domain == CUPTI_CB_DOMAIN_RESOURCE && cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) {
        const CUpti_ResourceData *rd = data;
        uint32_t ctx_id = 0, dev = 0;
        if (cuptiGetContextId(rd->context, &ctx_id) == CUPTI_SUCCESS &&
            cuptiGetDeviceId(rd->context, &dev) == CUPTI_SUCCESS) {
            pthread_mutex_lock(&sm_cu_lock);
            sm_cu_context_device(ctx_id, dev);
            sm_cu_device(dev);
            for (uint32_t i = 0; i < SM_CU_MAX_LIVE; i++)
                if (!sm_cu_live[i]) {
                    sm_cu_live[i] = rd->context;
                    break;
                }
            pthread_mutex_unlock(&sm_cu_lock);
            sm_cupm_context(dev, rd->context); /* device sampling, set up on the sampler thread */
            sm_cu_memory_context(dev, SM_GPU_MEM_DEVICE_BEGIN);
        }
        return;
    }
    if (domain == CUPTI_CB_DOMAIN_RESOURCE && cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
        const CUpti_ResourceData *rd = data;
        if (sm_cu_counting) {
            sm_cu_in_tool++;
            sm_cuc_context_end(rd->context);
            sm_cu_in_tool--;
        }
        uint32_t dev = 0;
        if (cuptiGetDeviceId(rd->context, &dev) == CUPTI_SUCCESS) {
            sm_cu_in_tool++;
            sm_cupm_context_end(dev);
            sm_cu_in_tool--;
            sm_cu_memory_context(dev, SM_GPU_MEM_DEVICE_END);
        }
        pthread_mutex_lock(&sm_cu_lock);
        for (uint32_t i = 0; i < SM_CU_MAX_LIVE; i++)
            if (sm_cu_live[i] == rd->context)
                sm_cu_live[i] = NULL;
        pthread_mutex_unlock(&sm_cu_lock);
        return;
    }
    if (domain == CUPTI_CB_DOMAIN_NVTX) {
        const CUpti_NvtxData *d = data;
        if (cbid == CUPTI_CBID_NVTX_nvtxRangePushA || cbid == CUPTI_CBID_NVTX_nvtxRangePushEx) {
            const char *name =
                cbid == CUPTI_CBID_NVTX_nvtxRangePushA
                    ? ((const nvtxRangePushA_params *)d->functionParams)->message
                    : sm_cu_nvtx_message(
                          ((const nvtxRangePushEx_params *)d->functionParams)->eventAttrib);
            sm_region_id_t r = sm_cu_api->region_define(name ? name : "(unnamed NVTX range)", NULL,
                                                        0, SM_PARADIGM_USER, SM_ROLE_CODE);
            if (sm_cu_nvtx_depth < 128)
                sm_cu_nvtx_stack[sm_cu_nvtx_depth] = r;
            sm_cu_nvtx_depth++;
            sm_cu_api->enter(r);
        } else if (cbid == CUPTI_CBID_NVTX_nvtxRangePop) {
            if (sm_cu_nvtx_depth && --sm_cu_nvtx_depth < 128)
                sm_cu_api->leave(sm_cu_nvtx_stack[sm_cu_nvtx_depth]);
        } else {
            sm_cu_nvtx(cbid, d);
        }
    }
}

/* ---------------------------------------------------------------- start and end */

static uint64_t CUPTIAPI sm_cu_timestamp(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The core's end-of-run flush (finalize, exit, signal, MPI_Abort): every
 * finished record into the core, then no more callbacks. */
static void sm_cu_flush(void)
{
    if (!sm_cu_on)
        return;
    sm_cu_in_tool++;
    /* Work still running (a thread called exit with kernels in flight)
     * ends first, so that its records exist. */
    CUcontext live[SM_CU_MAX_LIVE];
    pthread_mutex_lock(&sm_cu_lock);
    memcpy(live, sm_cu_live, sizeof live);
    pthread_mutex_unlock(&sm_cu_lock);
    for (uint32_t i = 0; i < SM_CU_MAX_LIVE; i++) {
        CUcontext popped;
        if (live[i] && cuCtxPushCurrent(live[i]) == CUDA_SUCCESS) {
            cuCtxSynchronize();
            if (sm_cu_counting)
                sm_cuc_flush_context(live[i]); /* the last ranges' values */
            cuCtxPopCurrent(&popped);
        }
    }
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    uint32_t open = 0;
    pthread_mutex_lock(&sm_cu_nvtx_lock);
    for (uint32_t i = 0; i < SM_CU_NVTX_RANGES; i++)
        open += sm_cu_nvtx_ranges[i].id != 0;
    uint64_t lost = sm_cu_nvtx_lost;
    pthread_mutex_unlock(&sm_cu_nvtx_lock);
    if (open || lost) {
        char note[200];
        snprintf(note, sizeof note,
                 "NVTX: %" PRIu64 " start/end ranges not recorded (%" PRIu32
                 " still open at the end, %" PRIu64 " beyond %d open at once)",
                 open + lost, open, lost, SM_CU_NVTX_RANGES);
        sm_warning("%s", note);
        sm_cu_api->note(note);
    }
    if (sm_cu_counting)
        sm_cuc_finish();
    cuptiEnableDomain(0, sm_cu_subscriber, CUPTI_CB_DOMAIN_RUNTIME_API);
    cuptiEnableDomain(0, sm_cu_subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
    cuptiEnableDomain(0, sm_cu_subscriber, CUPTI_CB_DOMAIN_NVTX);
    sm_cu_in_tool--;
    sm_cu_on = 0;
}

static const CUpti_ActivityKind sm_cu_kinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMCPY2,           CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION};

int InitializeInjection(void)
{
    static int done;
    if (__atomic_exchange_n(&done, 1, __ATOMIC_RELAXED))
        return 1;
    const sm_adapter_api_t *api = sysmeasure_adapter_api(SM_ADAPTER_API_VERSION);
    if (!api || !SM_ADAPTER_API_HAS(api, note)) {
        sm_warning("GPU work is not measured: libsysmeasure.so is missing or too old for "
                   "libsysmeasure-cuda.so");
        return 1;
    }
    if (api->runtime_init() != 0)
        return 1; /* this process is not measured */
    /* This library's own copy of the message code: the run's verbosity. */
    char verbose[16] = "0";
    if (SM_ADAPTER_API_HAS(api, config_value) &&
        api->config_value("verbose", verbose, sizeof verbose) == 0)
        sm_log_set_verbosity(atoi(verbose));
    if (SM_ADAPTER_API_HAS(api, attribute_define))
        sm_cu_nvtx_attr = api->attribute_define("nvtx range id", SM_ATTR_INT64);
    sm_cu_api = api;
    char memory[8] = "yes";
    if (SM_ADAPTER_API_HAS(api, gpu_memory_block_bytes) &&
        (api->config_value("gpu_memory", memory, sizeof memory) != 0 || strcmp(memory, "no") != 0)) {
        sm_cu_memory = strcmp(memory, "api") == 0 ? SM_CU_MEMORY_CALLS : SM_CU_MEMORY_RECORDS;
        /* The same names as the core's memory events. */
        sm_cu_attr_address = api->attribute_define("memory address", SM_ATTR_INT64);
        sm_cu_attr_allocated = api->attribute_define("allocated bytes", SM_ATTR_INT64);
        sm_cu_attr_freed = api->attribute_define("freed bytes", SM_ATTR_INT64);
    }

    char other[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 1] = "";
    CUpti_SubscriberParams params;
    memset(&params, 0, sizeof params);
    params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    params.subscriberName = "sysmeasure";
    params.oldSubscriberName = other;
    params.oldSubscriberSize = sizeof other - 1;
    CUptiResult rc = cuptiSubscribe_v2(&sm_cu_subscriber, sm_cu_callback, NULL, &params);
    if (rc == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
        sm_warning("GPU work is not measured: another tool holds CUPTI (%s); the program runs "
                   "on and CPU measurement continues", other[0] ? other : "unnamed");
        char note[160];
        snprintf(note, sizeof note, "GPU not measured: another tool holds CUPTI (%s)",
                 other[0] ? other : "unnamed");
        api->note(note);
        return 1;
    }
    if (rc != CUPTI_SUCCESS) {
        sm_cu_warn_cupti("cuptiSubscribe_v2", rc);
        api->note("GPU not measured: CUPTI could not be set up");
        return 1;
    }
    /* Activity records on CLOCK_MONOTONIC, before any kind is enabled. */
    if ((rc = cuptiActivityRegisterTimestampCallback(sm_cu_timestamp)) != CUPTI_SUCCESS ||
        (rc = cuptiActivityRegisterCallbacks(sm_cu_buffer_requested, sm_cu_buffer_completed)) !=
            CUPTI_SUCCESS) {
        sm_cu_warn_cupti("setting up CUPTI's activity buffers", rc);
        cuptiUnsubscribe(sm_cu_subscriber);
        return 1;
    }
    for (size_t i = 0; i < sizeof sm_cu_kinds / sizeof sm_cu_kinds[0]; i++)
        if ((rc = cuptiActivityEnable(sm_cu_kinds[i])) != CUPTI_SUCCESS)
            sm_cu_warn_cupti("cuptiActivityEnable", rc);
    if (sm_cu_memory == SM_CU_MEMORY_RECORDS &&
        (rc = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMORY2)) != CUPTI_SUCCESS) {
        const char *text = NULL;
        cuptiGetResultString(rc, &text);
        sm_warning("GPU memory: CUPTI's memory records are not available (%s); allocations and "
                   "frees are taken from the CUDA calls instead", text ? text : "unknown error");
        sm_cu_memory = SM_CU_MEMORY_CALLS;
    }
    api->metadata("gpu_memory_source", sm_cu_memory == SM_CU_MEMORY_RECORDS ? "CUPTI memory records"
                                       : sm_cu_memory == SM_CU_MEMORY_CALLS ? "CUDA API calls"
                                                                            : "off");
    cuptiEnableDomain(1, sm_cu_subscriber, CUPTI_CB_DOMAIN_RUNTIME_API);
    cuptiEnableDomain(1, sm_cu_subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
    cuptiEnableDomain(1, sm_cu_subscriber, CUPTI_CB_DOMAIN_NVTX);
    cuptiEnableCallback(1, sm_cu_subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                        CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
    cuptiEnableCallback(1, sm_cu_subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                        CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
    const char *period = getenv("SYSMEASURE_GPU_FLUSH_PERIOD");
    long ms = period && period[0] ? strtol(period, NULL, 10) : 100;
    if (ms > 0)
        cuptiActivityFlushPeriod((uint32_t)ms);
    sm_cu_on = 1;
    api->gpu_on_flush(sm_cu_flush);
    /* After gpu_on_flush: the counters' output hook runs after the flush. */
    sm_cu_counting = sm_cuc_init(api);
    sm_cupm_init(api);
    char power[8] = "yes";
    if (SM_ADAPTER_API_HAS(api, sample_put) &&
        (api->config_value("gpu_power", power, sizeof power) != 0 || strcmp(power, "no") != 0))
        sm_nvml_start(api);
    return 1;
}

/* NVTX found us through NVTX_INJECTION64_PATH, at the program's first NVTX
 * call, which may come before its first CUDA call: CUPTI is set up now (it
 * needs no CUDA context; the driver's later InitializeInjection finds it
 * done), then CUPTI's NVTX support does the rest and reports NVTX calls to
 * the callback above. */
int InitializeInjectionNvtx2(void *get_export_table)
{
    InitializeInjection();
    Dl_info self;
    void *cupti = NULL;
    if (dladdr((void *)cuptiGetVersion, &self) && self.dli_fname)
        cupti = dlopen(self.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    int (*init)(void *) = cupti ? (int (*)(void *))dlsym(cupti, "InitializeInjectionNvtx2") : NULL;
    return init ? init(get_export_table) : 0;
}
