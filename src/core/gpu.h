/* The GPU layer: vendor-neutral devices, streams and finished device work.
 *
 * A vendor backend (gpu/cuda: CUPTI; gpu/rocm: HIP/HSA) is a library built
 * apart from the core; it reaches this layer only through the adapter API
 * table (adapter_api.h, the gpu_* entries), never through these sm_*
 * functions, and it includes this header only for the types below.  No
 * vendor header is ever included here.
 *
 * The model:
 *   - a device (vendor, ordinal, name, UUID, PCI id) becomes, per process, an
 *     OTF2 system-tree node of domain ACCELERATOR_DEVICE under the process's
 *     node and a location group of type ACCELERATOR;
 *   - a stream (CUDA stream, HIP stream, HSA queue) becomes a location of type
 *     ACCELERATOR_STREAM in its device's group;
 *   - finished device work arrives late, in batches, from the vendor's own
 *     thread (sm_gpu_activities): each activity is one record on its stream
 *     location, under the same memory budget and spill rules as CPU events,
 *     written to the trace as an Enter/Leave pair in time order per stream
 *     (batches may arrive in any order), and into the stream's profile;
 *   - the host API call that issued the work enters its region with the
 *     activity's correlation id (sm_gpu_api_enter): both sides carry the id as
 *     the OTF2 attribute "correlation id", and the profile charges the
 *     activity's device time to the host call path of that call.
 *
 * Room for what comes next (GPU II): per-kernel counters will arrive as their
 * own batches keyed by correlation id (a kernel's values joined to its
 * activity record), and device-level samples (power, utilisation, PM
 * sampling) as metric samples on a metric location per device.  Both add
 * entries at the end of the adapter table; the activity layout below carries
 * its own size (the `stride` of a batch) so it can grow too. */
#ifndef SM_GPU_H
#define SM_GPU_H

#include <stddef.h>
#include <stdint.h>
#include "subsystem.h"
#include "buffer.h"
#include "compiler.h"
#include "definitions.h"

typedef enum {
    SM_GPU_VENDOR_UNKNOWN = 0,
    SM_GPU_VENDOR_NVIDIA = 1,
    SM_GPU_VENDOR_AMD = 2
} sm_gpu_vendor_t;

/* What a backend knows of a device.  Strings are copied; NULL: unknown. */
typedef struct sm_gpu_device_info {
    uint32_t vendor;        /* sm_gpu_vendor_t */
    uint32_t ordinal;       /* the runtime's device number in this process */
    const char *name;       /* "NVIDIA H100 80GB HBM3" */
    const char *uuid;       /* "GPU-5c1e...", as the vendor prints it */
    const char *pci_bus_id; /* "0000:3b:00.0" */
} sm_gpu_device_info_t;

/* Dense per-process numbers handed out by the core. */
typedef uint32_t sm_gpu_device_t;
typedef uint32_t sm_gpu_stream_t;
#define SM_GPU_NONE UINT32_MAX

/* Kinds of device work.  Copy directions are the profile's rows; keep the
 * numbering (it is stored in records and process files). */
typedef enum {
    SM_GPU_KERNEL = 0,
    SM_GPU_COPY_HTOD = 1,  /* host to device */
    SM_GPU_COPY_DTOH = 2,  /* device to host */
    SM_GPU_COPY_DTOD = 3,  /* within one device */
    SM_GPU_COPY_HTOH = 4,  /* host to host through the runtime */
    SM_GPU_COPY_PEER = 5,  /* device to another device */
    SM_GPU_MEMSET = 6,
    SM_GPU_SYNC = 7,       /* a synchronisation the device or host waited on */
    SM_GPU_MARKER = 8,     /* an instant or range on the stream (start == end: instant) */
    SM_GPU_OTHER = 9,
    SM_GPU_KIND_COUNT
} sm_gpu_kind_t;

/* Clocks a vendor may stamp with (sm_gpu_ticks converts them). */
typedef enum {
    SM_GPU_CLOCK_MONOTONIC = 0,
    SM_GPU_CLOCK_REALTIME = 1,
    SM_GPU_CLOCK_BOOTTIME = 2
} sm_gpu_clock_t;

/* A kernel's launch configuration (zeros where unknown), kept with the
 * kernel's record for the trace and for later per-kernel counters. */
typedef struct sm_gpu_launch {
    uint32_t grid[3];
    uint32_t block[3];
    uint32_t registers;      /* per thread */
    uint32_t shared_static;  /* bytes per block */
    uint32_t shared_dynamic; /* bytes per block */
    uint32_t pad;
} sm_gpu_launch_t;

/* One finished piece of device work. */
typedef struct sm_gpu_activity {
    uint64_t start, end;     /* core ticks (sm_gpu_ticks), start <= end */
    uint64_t correlation;    /* the host call's correlation id; 0: none */
    uint64_t bytes;          /* copies and memsets; 0 otherwise */
    sm_region_id_t region;   /* region_define(name, ..., CUDA/HIP, FUNCTION or DATA_TRANSFER) */
    sm_gpu_stream_t stream;  /* from gpu_stream_define */
    uint32_t kind;           /* sm_gpu_kind_t */
    uint32_t pad;
    sm_gpu_launch_t launch;  /* kernels */
} sm_gpu_activity_t;

/* ---------------------------------------------------------------- the core side
 * (the adapter table's gpu_* entries call these; see adapter_api.h) */

int sm_gpu_init(void) SM_HIDDEN;

/* Same (vendor, ordinal) gives the same id; SM_GPU_NONE when the core is not
 * up or out of memory. */
sm_gpu_device_t sm_gpu_device_define(const sm_gpu_device_info_t *info) SM_HIDDEN;
/* Same (device, key) gives the same id; key is the vendor's stream id. */
sm_gpu_stream_t sm_gpu_stream_define(sm_gpu_device_t device, uint64_t key,
                                     const char *name) SM_HIDDEN;

/* Vendor clock ns to core ticks (the conversion is linear, exact to the
 * calibration; call it from any thread). */
uint64_t sm_gpu_ticks(sm_gpu_clock_t clock, uint64_t ns) SM_HIDDEN;

/* A batch of finished work: n activities, `stride` bytes apart (the
 * backend's sizeof(sm_gpu_activity_t)).  Any thread; batches in any order.
 * Returns how many were stored (the others are counted as dropped). */
size_t sm_gpu_activities(const sm_gpu_activity_t *a, size_t n, size_t stride) SM_HIDDEN;

/* The host side of a correlation, on the calling thread: enter region
 * (an API call) with the attribute "correlation id" and remember the call
 * path for that id; leave it, with the attribute "error code" when the call
 * failed (error != 0). */
void sm_gpu_api_enter(sm_region_id_t region, uint64_t correlation) SM_HIDDEN;
void sm_gpu_api_leave(sm_region_id_t region, int64_t error) SM_HIDDEN;

/* Records the backend lost before handing them over (vendor buffer full). */
void sm_gpu_dropped(uint64_t n) SM_HIDDEN;

/* The backend's flush: called by the core before anything is written at
 * the end of the run (finalize, exit from any thread, fatal signal,
 * MPI_Abort); it must hand over every finished activity (one batch call or
 * several) before returning.  One per backend, at most 4. */
typedef void (*sm_gpu_flush_fn)(void);
int sm_gpu_on_flush(sm_gpu_flush_fn fn) SM_HIDDEN;

/* ---------------------------------------------------------------- for writers and summaries */

typedef struct sm_gpu_device_def {
    uint32_t vendor, ordinal;
    char name[96];
    char uuid[64];
    char pci_bus_id[32];
} sm_gpu_device_def_t;

uint32_t sm_gpu_device_count(void) SM_HIDDEN;
const sm_gpu_device_def_t *sm_gpu_device_get(sm_gpu_device_t id) SM_HIDDEN;
/* The device of a stream location (SM_GPU_NONE for other locations). */
sm_gpu_device_t sm_gpu_location_device(uint32_t location_id) SM_HIDDEN;
uint64_t sm_gpu_dropped_count(void) SM_HIDDEN;
const char *sm_gpu_kind_name(sm_gpu_kind_t kind) SM_HIDDEN;

/* Location i's records from source (an image's for_each), handed to fn in
 * time order (stable: records of equal time keep their arrival order).  A
 * stream's batches may have arrived in any order; the writers read GPU
 * stream locations through this.  Returns as sm_buffer_for_each. */
int sm_gpu_for_each_in_order(int (*source)(void *ctx, uint32_t i, sm_record_fn fn, void *arg),
                             void *ctx, uint32_t i, sm_record_fn fn, void *arg) SM_HIDDEN;

/* For the per-kernel counters (gpu_counters.c): the profile node of the
 * host call that issued correlation (NULL: unknown), a stream's location
 * (NULL: no such stream), and whether batches are still taken. */
struct sm_location;
struct sm_profile_node;
const struct sm_profile_node *sm_gpu_correlation_node(uint64_t correlation) SM_HIDDEN;
struct sm_location *sm_gpu_stream_location(sm_gpu_stream_t stream) SM_HIDDEN;
int sm_gpu_taking(void) SM_HIDDEN;

/* Its part of the end (src/plugins.def): the backends' last records. */
extern const sm_subsystem_t sm_gpu_subsystem SM_HIDDEN;

#endif
