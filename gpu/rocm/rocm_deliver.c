/* AMD activities into the GPU layer (see rocm_deliver.h). */
#include "rocm_deliver.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* Our kinds are the layer's. */
_Static_assert((int)SM_ROCM_KERNEL == (int)SM_GPU_KERNEL && (int)SM_ROCM_COPY_HTOD == (int)SM_GPU_COPY_HTOD &&
                   (int)SM_ROCM_COPY_DTOH == (int)SM_GPU_COPY_DTOH && (int)SM_ROCM_COPY_DTOD == (int)SM_GPU_COPY_DTOD &&
                   (int)SM_ROCM_COPY_HTOH == (int)SM_GPU_COPY_HTOH && (int)SM_ROCM_COPY_PEER == (int)SM_GPU_COPY_PEER &&
                   (int)SM_ROCM_MEMSET == (int)SM_GPU_MEMSET && (int)SM_ROCM_SYNC == (int)SM_GPU_SYNC &&
                   (int)SM_ROCM_MARKER == (int)SM_GPU_MARKER && (int)SM_ROCM_OTHER == (int)SM_GPU_OTHER,
               "AMD activity kinds are the GPU layer's");

/* Memory kinds too (core/gpu_memory.h). */
_Static_assert((int)SM_ROCM_MEM_DEVICE == (int)SM_GPU_MEM_DEVICE &&
                   (int)SM_ROCM_MEM_MANAGED == (int)SM_GPU_MEM_MANAGED &&
                   (int)SM_ROCM_MEM_PINNED == (int)SM_GPU_MEM_PINNED &&
                   (int)SM_ROCM_MEM_STATIC == (int)SM_GPU_MEM_STATIC &&
                   (int)SM_ROCM_MEM_OTHER == (int)SM_GPU_MEM_OTHER,
               "AMD memory kinds are the core's");

/* Definitions seen before, under one lock: activities come from the
 * runtime's completion thread (one per process in ROCm 5), not from the
 * application's threads. */
#define SM_ROCM_DEVICES 64
#define SM_ROCM_STREAMS 256
#define SM_ROCM_REGIONS 512

static pthread_mutex_t sm_rd_lock = PTHREAD_MUTEX_INITIALIZER;
static sm_gpu_device_t sm_rd_devices[SM_ROCM_DEVICES];
static uint32_t sm_rd_devices_known;
static struct {
    uint32_t device;
    uint64_t queue;
    sm_gpu_stream_t stream;
    int used;
} sm_rd_streams[SM_ROCM_STREAMS];
static struct {
    const char *name; /* the runtime's pointer (kernel names live as long as their code) */
    uint32_t kind;
    sm_region_id_t region;
} sm_rd_regions[SM_ROCM_REGIONS];

static sm_gpu_device_t sm_rd_device(const sm_adapter_api_t *api, uint32_t ordinal)
{
    if (ordinal < SM_ROCM_DEVICES && sm_rd_devices_known > ordinal &&
        sm_rd_devices[ordinal] != SM_GPU_NONE)
        return sm_rd_devices[ordinal];
    char name[32];
    snprintf(name, sizeof name, "AMD GPU %u", ordinal);
    sm_gpu_device_info_t info = {SM_GPU_VENDOR_AMD, ordinal, name, NULL, NULL};
    sm_gpu_device_t d = api->gpu_device_define(&info);
    if (ordinal < SM_ROCM_DEVICES) {
        while (sm_rd_devices_known <= ordinal)
            sm_rd_devices[sm_rd_devices_known++] = SM_GPU_NONE;
        sm_rd_devices[ordinal] = d;
    }
    return d;
}

static sm_gpu_stream_t sm_rd_stream(const sm_adapter_api_t *api, sm_gpu_device_t dev,
                                    uint32_t device, uint64_t queue, const char *kind)
{
    uint32_t h = (uint32_t)((queue ^ queue >> 17 ^ device * 2654435761u) % SM_ROCM_STREAMS);
    if (sm_rd_streams[h].used && sm_rd_streams[h].device == device &&
        sm_rd_streams[h].queue == queue)
        return sm_rd_streams[h].stream;
    char name[64];
    snprintf(name, sizeof name, "%s %llu", kind, (unsigned long long)queue);
    sm_gpu_stream_t s = api->gpu_stream_define(dev, queue, name);
    sm_rd_streams[h].used = 1;
    sm_rd_streams[h].device = device;
    sm_rd_streams[h].queue = queue;
    sm_rd_streams[h].stream = s;
    return s;
}

static sm_region_id_t sm_rd_region(const sm_adapter_api_t *api, const char *name, uint32_t kind)
{
    uintptr_t p = (uintptr_t)name;
    uint32_t h = (uint32_t)((p >> 4 ^ p >> 13 ^ kind) % SM_ROCM_REGIONS);
    if (sm_rd_regions[h].name == name && sm_rd_regions[h].kind == kind)
        return sm_rd_regions[h].region;
    sm_region_id_t r = api->region_define(name, NULL, 0, SM_PARADIGM_HIP,
                                          kind == SM_ROCM_KERNEL ? SM_ROLE_FUNCTION
                                                                 : SM_ROLE_DATA_TRANSFER);
    sm_rd_regions[h].name = name;
    sm_rd_regions[h].kind = kind;
    sm_rd_regions[h].region = r;
    return r;
}

sm_gpu_device_t sm_rocm_device(const sm_adapter_api_t *api, uint32_t ordinal)
{
    pthread_mutex_lock(&sm_rd_lock);
    sm_gpu_device_t d = sm_rd_device(api, ordinal);
    pthread_mutex_unlock(&sm_rd_lock);
    return d;
}

int sm_rocm_deliver(const sm_adapter_api_t *api, const sm_rocm_activity_t *a,
                    const char *stream_kind)
{
    sm_gpu_activity_t g;
    memset(&g, 0, sizeof g);
    pthread_mutex_lock(&sm_rd_lock);
    sm_gpu_device_t dev = sm_rd_device(api, a->device);
    g.stream = dev == SM_GPU_NONE ? SM_GPU_NONE
                                  : sm_rd_stream(api, dev, a->device, a->queue, stream_kind);
    g.region = sm_rd_region(api, a->name ? a->name : sm_rocm_kind_name(a->kind), a->kind);
    pthread_mutex_unlock(&sm_rd_lock);
    if (g.stream == SM_GPU_NONE || g.region == SM_INVALID_ID) {
        api->gpu_dropped(1);
        return -1;
    }
    g.start = api->gpu_ticks(SM_GPU_CLOCK_MONOTONIC, a->start_ns);
    g.end = api->gpu_ticks(SM_GPU_CLOCK_MONOTONIC, a->end_ns);
    g.correlation = a->correlation;
    g.bytes = a->bytes;
    g.kind = a->kind;
    return api->gpu_activities(&g, 1, sizeof g) == 1 ? 0 : -1;
}
