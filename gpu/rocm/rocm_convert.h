/* ROCm records to vendor-neutral activities: the pure part of the AMD
 * backend (no ROCm header, no runtime call), unit-tested on recorded inputs
 * (tests/unit/test_rocm_convert.c).
 *
 * Inputs:
 *   - HIP's asynchronous activity records (ROCm 5.x, the layout of
 *     roctracer's prof_protocol.h activity_record_t, which Debian does not
 *     ship: declared here, its offsets checked at compile time);
 *   - HSA's profiling times (hsa_amd_profiling_dispatch_time_t and
 *     hsa_amd_profiling_async_copy_time_t: two uint64 ticks of the system
 *     domain), with the system timestamp frequency and the host clock's
 *     offset measured against it.
 * Output: sm_rocm_activity_t, the fields of the GPU layer's activity
 * (kind numbering as the layer's sm_gpu_kind_t), with host-clock ns
 * (CLOCK_MONOTONIC) for start and end. */
#ifndef SM_ROCM_CONVERT_H
#define SM_ROCM_CONVERT_H

#include <stddef.h>
#include <stdint.h>
#include "core/compiler.h"

/* ---------------------------------------------------------------- HIP's activity record */

/* prof_protocol.h's activity domains that HIP 5.x reports with. */
#define SM_HIP_DOMAIN_HIP_OPS 2 /* asynchronous device work */
#define SM_HIP_DOMAIN_HIP_API 3

/* HIP's op ids (hip_runtime_prof.h HipVdiOpId) and command kinds
 * (HipVdiCommandKind): checked against the header where it is included. */
#define SM_HIP_OP_DISPATCH 0
#define SM_HIP_OP_COPY 1
#define SM_HIP_OP_BARRIER 2
#define SM_HIP_OP_COUNT 3
#define SM_HIP_CMD_KERNEL 0x11F0
#define SM_HIP_CMD_COPY_DTOH 0x11F3
#define SM_HIP_CMD_COPY_HTOD 0x11F4
#define SM_HIP_CMD_COPY_DTOD 0x11F5
#define SM_HIP_CMD_COPY_DTOH_RECT 0x1201
#define SM_HIP_CMD_COPY_HTOD_RECT 0x1202
#define SM_HIP_CMD_COPY_DTOD_RECT 0x1203
#define SM_HIP_CMD_FILL 0x1207

typedef struct sm_hip_record {
    uint32_t domain;
    uint32_t kind; /* HIP command kind */
    uint32_t op;   /* HIP op id */
    uint64_t correlation_id;
    uint64_t begin_ns;
    uint64_t end_ns;
    int32_t device_id;
    uint64_t queue_id;
    uint64_t bytes;
} sm_hip_record_t;

/* The layout the runtime writes (x86-64, LP64); checked in C and C++. */
#ifdef __cplusplus
#define SM_ROCM_STATIC_ASSERT static_assert
#else
#define SM_ROCM_STATIC_ASSERT _Static_assert
#endif
SM_ROCM_STATIC_ASSERT(offsetof(sm_hip_record_t, domain) == 0, "activity_record_t.domain");
SM_ROCM_STATIC_ASSERT(offsetof(sm_hip_record_t, kind) == 4, "activity_record_t.kind");
SM_ROCM_STATIC_ASSERT(offsetof(sm_hip_record_t, op) == 8, "activity_record_t.op");
SM_ROCM_STATIC_ASSERT(offsetof(sm_hip_record_t, correlation_id) == 16, "activity_record_t.correlation_id");
SM_ROCM_STATIC_ASSERT(offsetof(sm_hip_record_t, begin_ns) == 24, "activity_record_t.begin_ns");
SM_ROCM_STATIC_ASSERT(offsetof(sm_hip_record_t, end_ns) == 32, "activity_record_t.end_ns");
SM_ROCM_STATIC_ASSERT(offsetof(sm_hip_record_t, device_id) == 40, "activity_record_t.device_id");
SM_ROCM_STATIC_ASSERT(offsetof(sm_hip_record_t, queue_id) == 48, "activity_record_t.queue_id");
SM_ROCM_STATIC_ASSERT(offsetof(sm_hip_record_t, bytes) == 56, "activity_record_t.bytes");
SM_ROCM_STATIC_ASSERT(sizeof(sm_hip_record_t) == 64, "activity_record_t is 64 bytes");

/* ---------------------------------------------------------------- the vendor-neutral activity */

/* As the GPU layer's sm_gpu_kind_t. */
typedef enum {
    SM_ROCM_KERNEL = 0,
    SM_ROCM_COPY_HTOD = 1,
    SM_ROCM_COPY_DTOH = 2,
    SM_ROCM_COPY_DTOD = 3,
    SM_ROCM_COPY_HTOH = 4,
    SM_ROCM_COPY_PEER = 5,
    SM_ROCM_MEMSET = 6,
    SM_ROCM_SYNC = 7,
    SM_ROCM_MARKER = 8,
    SM_ROCM_OTHER = 9
} sm_rocm_kind_t;

typedef struct sm_rocm_activity {
    uint64_t start_ns, end_ns; /* host CLOCK_MONOTONIC ns, start <= end */
    uint64_t correlation;      /* the launching HIP call's id; 0: none */
    uint64_t bytes;
    uint64_t queue;            /* the stream's key on its device */
    uint32_t device;           /* the runtime's device ordinal */
    uint32_t kind;             /* sm_rocm_kind_t */
    const char *name;          /* kernel name, or the copy's/command's name */
} sm_rocm_activity_t;

/* How HIP stamps its records: ns of clock `source` (CLOCK_MONOTONIC,
 * CLOCK_BOOTTIME, ...); offset_ns = host CLOCK_MONOTONIC - source, measured
 * once (sm_rocm_clock_measure). */
typedef struct sm_rocm_clock {
    int64_t offset_ns;
} sm_rocm_clock_t;

/* Reads both clocks close together, the pair with the shortest gap of a
 * few tries. */
void sm_rocm_clock_measure(sm_rocm_clock_t *c, int source_clockid) SM_HIDDEN;

static inline uint64_t sm_rocm_to_host_ns(const sm_rocm_clock_t *c, uint64_t source_ns)
{
    int64_t v = (int64_t)source_ns + c->offset_ns;
    return v > 0 ? (uint64_t)v : 0;
}

/* A HIP activity record to an activity.  name: the kernel's name found for
 * its correlation id (NULL: named by its command kind).  0, or -1 for a
 * record that is not device work (another domain, no times). */
int sm_rocm_from_hip_record(const sm_hip_record_t *r, const sm_rocm_clock_t *clock,
                            const char *name, sm_rocm_activity_t *out) SM_HIDDEN;

/* The name of a copy or memset region ("hipMemcpy DtoH", ...). */
const char *sm_rocm_kind_name(sm_rocm_kind_t kind) SM_HIDDEN;

/* ---------------------------------------------------------------- HSA times */

/* HSA profiling ticks of the system domain (hsa_amd_profiling_convert_tick_to
 * _system_domain's output) to host ns: ticks at frequency freq_hz
 * (HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY), whose value was sys_ref when the
 * host CLOCK_MONOTONIC read host_ref_ns.  Exact for 1 GHz; 128-bit products
 * otherwise, so that 2^63 ticks do not overflow. */
typedef struct sm_hsa_clock {
    uint64_t freq_hz;
    uint64_t sys_ref;
    uint64_t host_ref_ns;
} sm_hsa_clock_t;

uint64_t sm_hsa_ticks_to_host_ns(const sm_hsa_clock_t *c, uint64_t ticks) SM_HIDDEN;

/* A kernel dispatch or async copy timed by HSA: start/end ticks (system
 * domain) to an activity on queue `queue` of device `device`. */
void sm_rocm_from_hsa_times(const sm_hsa_clock_t *c, uint64_t start_ticks, uint64_t end_ticks,
                            sm_rocm_kind_t kind, uint32_t device, uint64_t queue,
                            uint64_t correlation, uint64_t bytes, const char *name,
                            sm_rocm_activity_t *out) SM_HIDDEN;

/* ---------------------------------------------------------------- HSA memory pools */

/* Kinds of GPU memory, as the core's sm_gpu_mem_kind_t (gpu_memory.h). */
typedef enum {
    SM_ROCM_MEM_DEVICE = 0,
    SM_ROCM_MEM_MANAGED = 1,
    SM_ROCM_MEM_PINNED = 2,
    SM_ROCM_MEM_STATIC = 3,
    SM_ROCM_MEM_OTHER = 4
} sm_rocm_mem_kind_t;

/* HSA's segment numbering (hsa_amd_segment_t) for the pool's segment. */
#define SM_HSA_SEGMENT_GLOBAL 0

/* What hsa_amd_memory_pool_allocate gives from a pool: a GPU agent's
 * global pool holds device memory (coarse or fine grained); a CPU agent's,
 * page-locked host memory the GPUs reach (its kernel-argument pool too);
 * other segments are counted as other. */
sm_rocm_mem_kind_t sm_rocm_pool_kind(int agent_is_gpu, uint32_t segment) SM_HIDDEN;

/* ---------------------------------------------------------------- correlation -> kernel name */

/* The kernel name of each launch, by correlation id, from the launching
 * call (API thread) to the activity record (HIP's completion thread):
 * a fixed table, slots claimed and read with atomics, no lock.  A launch
 * whose slot was overwritten before its record came is named by its kind. */
#define SM_ROCM_NAMES 8192

typedef struct sm_rocm_names {
    struct {
        uint64_t correlation;
        const char *name;
    } slot[SM_ROCM_NAMES];
} sm_rocm_names_t;

void sm_rocm_names_put(sm_rocm_names_t *t, uint64_t correlation, const char *name) SM_HIDDEN;
const char *sm_rocm_names_get(sm_rocm_names_t *t, uint64_t correlation) SM_HIDDEN;

#endif
