/* ROCm records to vendor-neutral activities (see rocm_convert.h). */
#define _GNU_SOURCE
#include "rocm_convert.h"

#include <string.h>
#include <time.h>

static uint64_t sm_rocm_read_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void sm_rocm_clock_measure(sm_rocm_clock_t *c, int source_clockid)
{
    uint64_t best_gap = UINT64_MAX;
    c->offset_ns = 0;
    for (int i = 0; i < 5; i++) {
        uint64_t h0 = sm_rocm_read_ns(CLOCK_MONOTONIC);
        uint64_t s = sm_rocm_read_ns((clockid_t)source_clockid);
        uint64_t h1 = sm_rocm_read_ns(CLOCK_MONOTONIC);
        if (h1 - h0 < best_gap) {
            best_gap = h1 - h0;
            c->offset_ns = (int64_t)(h0 + (h1 - h0) / 2) - (int64_t)s;
        }
    }
}

const char *sm_rocm_kind_name(sm_rocm_kind_t kind)
{
    switch (kind) {
    case SM_ROCM_KERNEL: return "kernel";
    case SM_ROCM_COPY_HTOD: return "copy HtoD";
    case SM_ROCM_COPY_DTOH: return "copy DtoH";
    case SM_ROCM_COPY_DTOD: return "copy DtoD";
    case SM_ROCM_COPY_HTOH: return "copy HtoH";
    case SM_ROCM_COPY_PEER: return "copy peer";
    case SM_ROCM_MEMSET: return "memset";
    case SM_ROCM_SYNC: return "synchronization";
    case SM_ROCM_MARKER: return "marker";
    default: return "device work";
    }
}

/* HIP's command kind to ours; the op decides what the kind does not. */
static sm_rocm_kind_t sm_rocm_hip_kind(uint32_t op, uint32_t cmd)
{
    switch (cmd) {
    case SM_HIP_CMD_KERNEL: return SM_ROCM_KERNEL;
    case SM_HIP_CMD_COPY_DTOH:
    case SM_HIP_CMD_COPY_DTOH_RECT: return SM_ROCM_COPY_DTOH;
    case SM_HIP_CMD_COPY_HTOD:
    case SM_HIP_CMD_COPY_HTOD_RECT: return SM_ROCM_COPY_HTOD;
    case SM_HIP_CMD_COPY_DTOD:
    case SM_HIP_CMD_COPY_DTOD_RECT: return SM_ROCM_COPY_DTOD;
    case SM_HIP_CMD_FILL: return SM_ROCM_MEMSET;
    default: break;
    }
    switch (op) {
    case SM_HIP_OP_DISPATCH: return SM_ROCM_KERNEL;
    case SM_HIP_OP_BARRIER: return SM_ROCM_SYNC;
    default: return SM_ROCM_OTHER; /* a copy of a kind not listed: bytes still count */
    }
}

int sm_rocm_from_hip_record(const sm_hip_record_t *r, const sm_rocm_clock_t *clock,
                            const char *name, sm_rocm_activity_t *out)
{
    if (r->domain != SM_HIP_DOMAIN_HIP_OPS || (r->begin_ns == 0 && r->end_ns == 0))
        return -1;
    memset(out, 0, sizeof *out);
    out->kind = sm_rocm_hip_kind(r->op, r->kind);
    out->start_ns = sm_rocm_to_host_ns(clock, r->begin_ns);
    out->end_ns = sm_rocm_to_host_ns(clock, r->end_ns);
    if (out->end_ns < out->start_ns)
        out->end_ns = out->start_ns;
    out->correlation = r->correlation_id;
    out->device = r->device_id >= 0 ? (uint32_t)r->device_id : 0;
    out->queue = r->queue_id;
    /* bytes shares its word with a kernel-name pointer in later ROCm
     * versions: only copies and fills carry bytes. */
    out->bytes = out->kind == SM_ROCM_KERNEL || out->kind == SM_ROCM_SYNC ? 0 : r->bytes;
    out->name = name && out->kind == SM_ROCM_KERNEL ? name : sm_rocm_kind_name(out->kind);
    return 0;
}

uint64_t sm_hsa_ticks_to_host_ns(const sm_hsa_clock_t *c, uint64_t ticks)
{
    uint64_t freq = c->freq_hz ? c->freq_hz : 1000000000u;
    __int128 d = (__int128)ticks - (__int128)c->sys_ref;
    __int128 ns = d * 1000000000 / (__int128)freq + (__int128)c->host_ref_ns;
    return ns > 0 ? (uint64_t)ns : 0;
}

void sm_rocm_from_hsa_times(const sm_hsa_clock_t *c, uint64_t start_ticks, uint64_t end_ticks,
                            sm_rocm_kind_t kind, uint32_t device, uint64_t queue,
                            uint64_t correlation, uint64_t bytes, const char *name,
                            sm_rocm_activity_t *out)
{
    memset(out, 0, sizeof *out);
    out->kind = kind;
    out->start_ns = sm_hsa_ticks_to_host_ns(c, start_ticks);
    out->end_ns = sm_hsa_ticks_to_host_ns(c, end_ticks < start_ticks ? start_ticks : end_ticks);
    out->device = device;
    out->queue = queue;
    out->correlation = correlation;
    out->bytes = bytes;
    out->name = name ? name : sm_rocm_kind_name(kind);
}

sm_rocm_mem_kind_t sm_rocm_pool_kind(int agent_is_gpu, uint32_t segment)
{
    if (segment != SM_HSA_SEGMENT_GLOBAL)
        return SM_ROCM_MEM_OTHER;
    return agent_is_gpu ? SM_ROCM_MEM_DEVICE : SM_ROCM_MEM_PINNED;
}

/* ---------------------------------------------------------------- correlation -> kernel name */

static inline uint32_t sm_rocm_name_slot(uint64_t correlation)
{
    return (uint32_t)(correlation % SM_ROCM_NAMES);
}

void sm_rocm_names_put(sm_rocm_names_t *t, uint64_t correlation, const char *name)
{
    uint32_t s = sm_rocm_name_slot(correlation);
    /* Invalidate, write the name, publish the id: a reader that sees the id
     * after reading the name knows the name is this id's. */
    __atomic_store_n(&t->slot[s].correlation, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&t->slot[s].name, name, __ATOMIC_RELEASE);
    __atomic_store_n(&t->slot[s].correlation, correlation, __ATOMIC_RELEASE);
}

const char *sm_rocm_names_get(sm_rocm_names_t *t, uint64_t correlation)
{
    uint32_t s = sm_rocm_name_slot(correlation);
    if (!correlation || __atomic_load_n(&t->slot[s].correlation, __ATOMIC_ACQUIRE) != correlation)
        return NULL;
    const char *name = __atomic_load_n(&t->slot[s].name, __ATOMIC_ACQUIRE);
    return __atomic_load_n(&t->slot[s].correlation, __ATOMIC_ACQUIRE) == correlation ? name
                                                                                      : NULL;
}
