/* HSA: libsysmeasure-hsa.so, named in HSA_TOOLS_LIB by the launcher.  The
 * HSA runtime calls its OnLoad with the runtime's API table during hsa_init
 * (only where hsa_init succeeds, i.e. with an AMD GPU and /dev/kfd):
 *   - the HSA calls listed below become regions named hsa_* (paradigm HIP:
 *     OTF2 has no HSA paradigm), a failed call's status on its leave;
 *   - queues are created through the runtime's interception queues
 *     (hsa_amd_queue_intercept_create/_register) with profiling on: each
 *     kernel dispatch packet gets a completion signal of ours, whose handler
 *     reads the dispatch's start and end (hsa_amd_profiling_get_dispatch_time),
 *     converts them to the system domain and then to the host clock
 *     (rocm_convert.c), and passes the completion on to the application's
 *     own signal;
 *   - async copies (hsa_amd_memory_async_copy) likewise, timed by
 *     hsa_amd_profiling_get_async_copy_time;
 *   - kernel names from the code objects: at hsa_executable_freeze, every
 *     kernel symbol's kernel object is mapped to its name;
 *   - memory pool allocations and frees (hsa_amd_memory_pool_allocate,
 *     _free) go to the core's GPU memory accounting as the layer below the
 *     API (a GPU agent's pool: device memory; a CPU agent's: pinned host),
 *     which ignores them where HIP reports its own calls (hip_tool.c), and
 *     their address and size onto the call's leave.
 * C++ because hsa_api_trace.h is C++ (decltype); the rest of sysmeasure
 * is C.  None of this runs on a machine without an AMD GPU: built, not
 * verified on AMD hardware (see the manual). */
#include <hsa.h>
#include <hsa_api_trace.h>
#include <hsa_ext_amd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <time.h>
#include <unordered_map>

/* The core's headers are C11: their compile-time checks read as C++'s. */
#define _Static_assert static_assert
extern "C" {
#include "core/adapter_api.h"
#include "gpu/rocm/rocm_convert.h"
#include "gpu/rocm/rocm_deliver.h"
#include "util/log.h"
const sm_adapter_api_t *sysmeasure_adapter_api(unsigned version);
}
#undef _Static_assert

namespace {

const sm_adapter_api_t *api;
sm_attribute_id_t attr_status = SM_INVALID_ID;
CoreApiTable core;  // the runtime's own entries, saved before ours go in
AmdExtTable amd;
sm_hsa_clock_t hsa_clock;
std::atomic<uint64_t> activities{0};
bool memory_on; /* configuration gpu_memory */
sm_attribute_id_t attr_address = SM_INVALID_ID, attr_allocated = SM_INVALID_ID,
                  attr_freed = SM_INVALID_ID;

/* ---------------------------------------------------------------- calls as regions */

enum CallId {
#define SM_HSA_CALL(table, fn) ID_##fn,
#include "hsa_calls.def"
#undef SM_HSA_CALL
    ID_COUNT
};

const char *const call_names[ID_COUNT] = {
#define SM_HSA_CALL(table, fn) #fn,
#include "hsa_calls.def"
#undef SM_HSA_CALL
};

std::atomic<sm_region_id_t> regions[ID_COUNT];

sm_region_id_t region(int id)
{
    sm_region_id_t r = regions[id].load(std::memory_order_acquire);
    if (r == SM_INVALID_ID) {
        r = api->region_define(call_names[id], nullptr, 0, SM_PARADIGM_HIP, SM_ROLE_WRAPPER);
        regions[id].store(r, std::memory_order_release);
    }
    return r;
}

template <typename R> void leave(sm_region_id_t r, const R &)
{
    api->leave(r);
}

template <> void leave<hsa_status_t>(sm_region_id_t r, const hsa_status_t &status)
{
    sm_adapter_attr_t a = {attr_status, (uint64_t)(int64_t)status};
    api->leave_attrs(r, &a, status != HSA_STATUS_SUCCESS && attr_status != SM_INVALID_ID);
}

/* One wrapper per listed call: enter, the runtime's entry, leave. */
template <int ID, typename F> struct Wrap;
template <int ID, typename R, typename... A> struct Wrap<ID, R (*)(A...)> {
    static R (*next)(A...);
    static R call(A... args)
    {
        if (!api->runtime_active())
            return next(args...);
        sm_region_id_t r = region(ID);
        api->enter(r);
        R result = next(args...);
        int saved = errno;
        leave<R>(r, result);
        errno = saved;
        return result;
    }
};
template <int ID, typename R, typename... A> R (*Wrap<ID, R (*)(A...)>::next)(A...);

/* ---------------------------------------------------------------- kernel names */

std::mutex names_lock;
std::unordered_map<uint64_t, std::string> *kernel_names;

hsa_status_t note_symbol(hsa_executable_t, hsa_executable_symbol_t sym, void *)
{
    hsa_symbol_kind_t kind;
    if (core.hsa_executable_symbol_get_info_fn(sym, HSA_EXECUTABLE_SYMBOL_INFO_TYPE, &kind) !=
            HSA_STATUS_SUCCESS ||
        kind != HSA_SYMBOL_KIND_KERNEL)
        return HSA_STATUS_SUCCESS;
    uint64_t object = 0;
    uint32_t len = 0;
    if (core.hsa_executable_symbol_get_info_fn(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT,
                                               &object) != HSA_STATUS_SUCCESS ||
        core.hsa_executable_symbol_get_info_fn(sym, HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH,
                                               &len) != HSA_STATUS_SUCCESS)
        return HSA_STATUS_SUCCESS;
    std::string name(len, '\0');
    if (core.hsa_executable_symbol_get_info_fn(sym, HSA_EXECUTABLE_SYMBOL_INFO_NAME, &name[0]) !=
        HSA_STATUS_SUCCESS)
        return HSA_STATUS_SUCCESS;
    /* Kernel descriptors are named "<kernel>.kd" in code object v3+. */
    if (name.size() > 3 && name.compare(name.size() - 3, 3, ".kd") == 0)
        name.resize(name.size() - 3);
    std::lock_guard<std::mutex> g(names_lock);
    (*kernel_names)[object] = name;
    return HSA_STATUS_SUCCESS;
}

hsa_status_t executable_freeze(hsa_executable_t exe, const char *options)
{
    hsa_status_t s = Wrap<ID_hsa_executable_freeze, decltype(core.hsa_executable_freeze_fn)>::call(
        exe, options);
    if (s == HSA_STATUS_SUCCESS)
        core.hsa_executable_iterate_symbols_fn(exe, note_symbol, nullptr);
    return s;
}

/* The name's copy lives as long as the map entry: never erased. */
const char *kernel_name(uint64_t object)
{
    std::lock_guard<std::mutex> g(names_lock);
    auto it = kernel_names->find(object);
    return it == kernel_names->end() ? nullptr : it->second.c_str();
}

/* ---------------------------------------------------------------- timed work */

/* One piece of work in flight: our completion signal and what to report. */
struct Pending {
    hsa_signal_t ours;
    hsa_signal_t theirs; /* the application's completion signal, or 0 */
    hsa_agent_t agent;
    uint32_t device;
    uint64_t queue;
    uint64_t bytes;
    sm_rocm_kind_t kind;
    const char *name;
};

/* Into the GPU layer: a stream location per HSA queue. */
void deliver(const sm_rocm_activity_t &a)
{
    if (sm_rocm_deliver(api, &a, "HSA queue") == 0)
        activities.fetch_add(1, std::memory_order_relaxed);
}

bool completed(hsa_signal_value_t, void *arg)
{
    Pending *p = static_cast<Pending *>(arg);
    uint64_t t0 = 0, t1 = 0;
    bool timed = false;
    if (p->kind == SM_ROCM_KERNEL) {
        hsa_amd_profiling_dispatch_time_t t;
        timed = amd.hsa_amd_profiling_get_dispatch_time_fn(p->agent, p->ours, &t) ==
                HSA_STATUS_SUCCESS;
        /* GPU ticks to the system domain, which hsa_clock maps to the host. */
        timed = timed &&
                amd.hsa_amd_profiling_convert_tick_to_system_domain_fn(p->agent, t.start, &t0) ==
                    HSA_STATUS_SUCCESS &&
                amd.hsa_amd_profiling_convert_tick_to_system_domain_fn(p->agent, t.end, &t1) ==
                    HSA_STATUS_SUCCESS;
    } else {
        hsa_amd_profiling_async_copy_time_t t;
        /* Copy times are in the system domain already. */
        timed = amd.hsa_amd_profiling_get_async_copy_time_fn(p->ours, &t) == HSA_STATUS_SUCCESS;
        t0 = t.start;
        t1 = t.end;
    }
    if (timed) {
        sm_rocm_activity_t a;
        sm_rocm_from_hsa_times(&hsa_clock, t0, t1, p->kind, p->device, p->queue, 0, p->bytes,
                               p->name, &a);
        deliver(a);
    }
    /* The application's signal gets the completion the device gave ours. */
    if (p->theirs.handle)
        core.hsa_signal_subtract_screlease_fn(p->theirs, 1);
    core.hsa_signal_destroy_fn(p->ours);
    delete p;
    return false; /* handler done: not called again */
}

/* A pending piece of work with a completion signal of ours, handled when
 * the device finishes it.  nullptr when that could not be set up (the work
 * then runs untimed, as the application asked). */
Pending *watch(hsa_agent_t agent, uint32_t device, uint64_t queue, hsa_signal_t theirs,
               sm_rocm_kind_t kind, uint64_t bytes, const char *name)
{
    Pending *p = new (std::nothrow) Pending{{0}, theirs, agent, device, queue, bytes, kind, name};
    if (!p)
        return nullptr;
    if (core.hsa_signal_create_fn(1, 0, nullptr, &p->ours) != HSA_STATUS_SUCCESS) {
        delete p;
        return nullptr;
    }
    if (amd.hsa_amd_signal_async_handler_fn(p->ours, HSA_SIGNAL_CONDITION_LT, 1, completed, p) !=
        HSA_STATUS_SUCCESS) {
        core.hsa_signal_destroy_fn(p->ours);
        delete p;
        return nullptr;
    }
    return p;
}

struct QueueInfo {
    hsa_agent_t agent;
    uint32_t device;
    uint64_t id;
};

std::mutex agents_lock;
std::unordered_map<uint64_t, uint32_t> *agent_ordinals;

uint32_t device_of(hsa_agent_t agent)
{
    std::lock_guard<std::mutex> g(agents_lock);
    auto it = agent_ordinals->find(agent.handle);
    if (it != agent_ordinals->end())
        return it->second;
    uint32_t n = (uint32_t)agent_ordinals->size();
    (*agent_ordinals)[agent.handle] = n;
    return n;
}

/* Every packet written to an intercepted queue passes here: kernel
 * dispatches get our completion signal, the rest go through unchanged. */
void intercept(const void *pkts, uint64_t count, uint64_t, void *data,
               hsa_amd_queue_intercept_packet_writer writer)
{
    const QueueInfo *q = static_cast<const QueueInfo *>(data);
    const hsa_kernel_dispatch_packet_t *in = static_cast<const hsa_kernel_dispatch_packet_t *>(pkts);
    for (uint64_t i = 0; i < count; i++) {
        hsa_kernel_dispatch_packet_t pkt = in[i];
        unsigned type = (pkt.header >> HSA_PACKET_HEADER_TYPE) & ((1u << HSA_PACKET_HEADER_WIDTH_TYPE) - 1);
        if (type == HSA_PACKET_TYPE_KERNEL_DISPATCH && api->runtime_active()) {
            Pending *p = watch(q->agent, q->device, q->id, pkt.completion_signal, SM_ROCM_KERNEL, 0,
                               kernel_name(pkt.kernel_object));
            if (p)
                pkt.completion_signal = p->ours;
        }
        writer(&pkt, 1);
    }
}

hsa_status_t queue_create(hsa_agent_t agent, uint32_t size, hsa_queue_type32_t type,
                          void (*callback)(hsa_status_t, hsa_queue_t *, void *), void *data,
                          uint32_t private_segment_size, uint32_t group_segment_size,
                          hsa_queue_t **queue)
{
    sm_region_id_t r = region(ID_hsa_queue_create);
    api->enter(r);
    hsa_status_t s = amd.hsa_amd_queue_intercept_create_fn(
        agent, size, type, callback, data, private_segment_size, group_segment_size, queue);
    if (s == HSA_STATUS_SUCCESS) {
        QueueInfo *q = new (std::nothrow) QueueInfo{agent, device_of(agent), (*queue)->id};
        if (q && amd.hsa_amd_queue_intercept_register_fn(*queue, intercept, q) == HSA_STATUS_SUCCESS)
            amd.hsa_amd_profiling_set_profiler_enabled_fn(*queue, 1);
        else
            delete q;
    } else {
        /* An interception queue could not be made: a plain one, untimed. */
        s = core.hsa_queue_create_fn(agent, size, type, callback, data, private_segment_size,
                                     group_segment_size, queue);
    }
    leave<hsa_status_t>(r, s);
    return s;
}

hsa_status_t async_copy(void *dst, hsa_agent_t dst_agent, const void *src, hsa_agent_t src_agent,
                        size_t size, uint32_t num_dep_signals, const hsa_signal_t *dep_signals,
                        hsa_signal_t completion_signal)
{
    sm_region_id_t r = region(ID_hsa_amd_memory_async_copy);
    api->enter(r);
    /* The direction from the agents' kinds: a CPU agent is the host. */
    hsa_device_type_t sk = HSA_DEVICE_TYPE_CPU, dk = HSA_DEVICE_TYPE_CPU;
    core.hsa_agent_get_info_fn(src_agent, HSA_AGENT_INFO_DEVICE, &sk);
    core.hsa_agent_get_info_fn(dst_agent, HSA_AGENT_INFO_DEVICE, &dk);
    sm_rocm_kind_t kind = sk == HSA_DEVICE_TYPE_GPU
                              ? (dk == HSA_DEVICE_TYPE_GPU
                                     ? (src_agent.handle == dst_agent.handle ? SM_ROCM_COPY_DTOD
                                                                             : SM_ROCM_COPY_PEER)
                                     : SM_ROCM_COPY_DTOH)
                              : (dk == HSA_DEVICE_TYPE_GPU ? SM_ROCM_COPY_HTOD : SM_ROCM_COPY_HTOH);
    hsa_agent_t gpu = sk == HSA_DEVICE_TYPE_GPU ? src_agent : dst_agent;
    Pending *p = watch(gpu, device_of(gpu), 0, completion_signal, kind, size, nullptr);
    hsa_status_t s = amd.hsa_amd_memory_async_copy_fn(dst, dst_agent, src, src_agent, size,
                                                      num_dep_signals, dep_signals,
                                                      p ? p->ours : completion_signal);
    if (s != HSA_STATUS_SUCCESS && p) {
        /* Not queued: complete our signal ourselves so that its handler
         * cleans up, leaving the application's signal alone (untimed). */
        p->theirs.handle = 0;
        core.hsa_signal_store_screlease_fn(p->ours, 0);
    }
    leave<hsa_status_t>(r, s);
    return s;
}

/* ---------------------------------------------------------------- memory pools */

static_assert(HSA_AMD_SEGMENT_GLOBAL == SM_HSA_SEGMENT_GLOBAL, "HSA's global segment");

struct PoolInfo {
    hsa_agent_t agent;
    bool gpu;
};
std::mutex pools_lock;
std::unordered_map<uint64_t, PoolInfo> *pools; /* pool handle -> its agent */
hsa_agent_t first_gpu;

hsa_status_t note_pool(hsa_amd_memory_pool_t pool, void *data)
{
    const PoolInfo *owner = static_cast<const PoolInfo *>(data);
    (*pools)[pool.handle] = *owner;
    return HSA_STATUS_SUCCESS;
}

hsa_status_t note_agent(hsa_agent_t agent, void *)
{
    hsa_device_type_t type = HSA_DEVICE_TYPE_CPU;
    core.hsa_agent_get_info_fn(agent, HSA_AGENT_INFO_DEVICE, &type);
    PoolInfo owner = {agent, type == HSA_DEVICE_TYPE_GPU};
    if (owner.gpu && !first_gpu.handle)
        first_gpu = agent;
    amd.hsa_amd_agent_iterate_memory_pools_fn(agent, note_pool, &owner);
    return HSA_STATUS_SUCCESS;
}

/* The pool's agent (every agent's pools are listed once, at the first
 * allocation); false for a pool never listed. */
bool pool_owner(hsa_amd_memory_pool_t pool, PoolInfo *out)
{
    std::lock_guard<std::mutex> g(pools_lock);
    if (!pools) {
        pools = new (std::nothrow) std::unordered_map<uint64_t, PoolInfo>();
        if (!pools)
            return false;
        core.hsa_iterate_agents_fn(note_agent, nullptr);
    }
    auto it = pools->find(pool.handle);
    if (it == pools->end())
        return false;
    *out = it->second;
    return true;
}

void memory_op(uint32_t what, uint32_t kind, uint64_t address, uint64_t bytes, hsa_agent_t agent)
{
    sm_gpu_mem_op_t op;
    memset(&op, 0, sizeof op);
    op.what = what;
    op.kind = kind;
    op.address = address;
    op.bytes = bytes;
    op.vendor = SM_GPU_VENDOR_AMD;
    op.level = SM_GPU_MEM_LEVEL_RUNTIME;
    op.time = api->now();
    /* Host memory belongs to no GPU: it is counted under the first. */
    op.device = what == SM_GPU_MEM_ALLOC
                    ? sm_rocm_device(api, device_of(agent.handle ? agent : first_gpu))
                    : SM_GPU_NONE;
    api->gpu_memory(&op, 1, sizeof op);
}

hsa_status_t pool_allocate(hsa_amd_memory_pool_t pool, size_t size, uint32_t flags, void **ptr)
{
    if (!api->runtime_active())
        return amd.hsa_amd_memory_pool_allocate_fn(pool, size, flags, ptr);
    sm_region_id_t r = region(ID_hsa_amd_memory_pool_allocate);
    api->enter(r);
    hsa_status_t s = amd.hsa_amd_memory_pool_allocate_fn(pool, size, flags, ptr);
    int saved = errno;
    if (s == HSA_STATUS_SUCCESS && memory_on && ptr && *ptr) {
        PoolInfo owner = {{0}, false};
        uint32_t segment = SM_HSA_SEGMENT_GLOBAL;
        bool known = pool_owner(pool, &owner);
        amd.hsa_amd_memory_pool_get_info_fn(pool, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &segment);
        memory_op(SM_GPU_MEM_ALLOC, known ? sm_rocm_pool_kind(owner.gpu, segment) : SM_ROCM_MEM_OTHER,
                  (uint64_t)(uintptr_t)*ptr, size, owner.agent);
        sm_adapter_attr_t a[2] = {{attr_address, (uint64_t)(uintptr_t)*ptr}, {attr_allocated, size}};
        api->leave_attrs(r, a, 2);
    } else {
        leave<hsa_status_t>(r, s);
    }
    errno = saved;
    return s;
}

hsa_status_t pool_free(void *ptr)
{
    if (!api->runtime_active() || !memory_on || !ptr)
        return Wrap<ID_hsa_amd_memory_pool_free, decltype(amd.hsa_amd_memory_pool_free_fn)>::call(ptr);
    sm_region_id_t r = region(ID_hsa_amd_memory_pool_free);
    api->enter(r);
    uint64_t bytes = api->gpu_memory_block_bytes((uint64_t)(uintptr_t)ptr);
    hsa_status_t s = amd.hsa_amd_memory_pool_free_fn(ptr);
    int saved = errno;
    if (s == HSA_STATUS_SUCCESS) {
        memory_op(SM_GPU_MEM_FREE, 0, (uint64_t)(uintptr_t)ptr, 0, hsa_agent_t{0});
        sm_adapter_attr_t a[2] = {{attr_address, (uint64_t)(uintptr_t)ptr}, {attr_freed, bytes}};
        api->leave_attrs(r, a, bytes ? 2 : 1);
    } else {
        leave<hsa_status_t>(r, s);
    }
    errno = saved;
    return s;
}

uint64_t read_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The system domain against the host clock: the runtime's timestamp and
 * CLOCK_MONOTONIC read together. */
void measure_clock()
{
    uint64_t freq = 0, best = UINT64_MAX;
    core.hsa_system_get_info_fn(HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY, &freq);
    hsa_clock.freq_hz = freq;
    for (int i = 0; i < 5; i++) {
        uint64_t h0 = read_ns(CLOCK_MONOTONIC), sys = 0;
        core.hsa_system_get_info_fn(HSA_SYSTEM_INFO_TIMESTAMP, &sys);
        uint64_t h1 = read_ns(CLOCK_MONOTONIC);
        if (h1 - h0 < best) {
            best = h1 - h0;
            hsa_clock.sys_ref = sys;
            hsa_clock.host_ref_ns = h0 + (h1 - h0) / 2;
        }
    }
}

} // namespace

extern "C" __attribute__((visibility("default"))) bool
OnLoad(HsaApiTable *table, uint64_t runtime_version, uint64_t failed_tool_count,
       const char *const *failed_tool_names)
{
    (void)runtime_version;
    (void)failed_tool_count;
    (void)failed_tool_names;
    const sm_adapter_api_t *a = sysmeasure_adapter_api(SM_ADAPTER_API_VERSION);
    if (!a || !SM_ADAPTER_API_HAS(a, async_range) || !a->runtime_active() || !table ||
        !table->core_ || !table->amd_ext_)
        return true; /* loaded, nothing to do: the runtime goes on */
    api = a;
    kernel_names = new std::unordered_map<uint64_t, std::string>();
    agent_ordinals = new std::unordered_map<uint64_t, uint32_t>();
    for (auto &r : regions)
        r.store(SM_INVALID_ID);
    attr_status = api->attribute_define("error code", SM_ATTR_INT64);
    core = *table->core_;
    amd = *table->amd_ext_;
    measure_clock();
    amd.hsa_amd_profiling_async_copy_enable_fn(true);

    /* Ours in the runtime's table: every later call of the application
     * (and of HIP above it) goes through them. */
#define SM_HSA_CALL(tab, fn)                                                              \
    Wrap<ID_##fn, decltype(table->tab->fn##_fn)>::next = table->tab->fn##_fn;             \
    table->tab->fn##_fn = &Wrap<ID_##fn, decltype(table->tab->fn##_fn)>::call;
#include "hsa_calls.def"
#undef SM_HSA_CALL
    table->core_->hsa_queue_create_fn = queue_create;
    table->core_->hsa_executable_freeze_fn = executable_freeze;
    table->amd_ext_->hsa_amd_memory_async_copy_fn = async_copy;
    char memory[8] = "yes";
    if (SM_ADAPTER_API_HAS(api, gpu_memory_block_bytes) &&
        (api->config_value("gpu_memory", memory, sizeof memory) != 0 || strcmp(memory, "no") != 0)) {
        memory_on = true;
        attr_address = api->attribute_define("memory address", SM_ATTR_INT64);
        attr_allocated = api->attribute_define("allocated bytes", SM_ATTR_INT64);
        attr_freed = api->attribute_define("freed bytes", SM_ATTR_INT64);
        table->amd_ext_->hsa_amd_memory_pool_allocate_fn = pool_allocate;
        table->amd_ext_->hsa_amd_memory_pool_free_fn = pool_free;
    }
    sm_info(1, "HSA tool loaded: HSA calls, kernel dispatches and async copies are timed");
    return true;
}

extern "C" __attribute__((visibility("default"))) void OnUnload(void)
{
    if (!api || !api->runtime_active())
        return;
    char v[32];
    snprintf(v, sizeof v, "%llu", (unsigned long long)activities.load());
    api->metadata("hsa_device_activities", v);
}
