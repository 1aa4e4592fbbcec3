/* The KokkosP tool: Kokkos kernels, profile regions and sections, fences and
 * deep copies become regions of paradigm Kokkos on the calling thread's
 * region stack (so they nest with user, OpenMP and MPI regions); memory
 * spaces become counter metrics of their bytes in use; declared metadata goes
 * to metadata.json.  Everything goes through the core's adapter API.
 *
 * Without the launcher the library brings the core up itself at
 * kokkosp_init_library.  A tool named after this one in the same
 * ;-separated KOKKOS_TOOLS_LIBS / KOKKOS_PROFILE_LIBRARY list is loaded here
 * and gets every callback too (Kokkos itself loads only the first). */
#define _GNU_SOURCE
#include "kokkos_tool.h"
#include "util/grow.h"
#include "util/log.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "causal/causal_api.h"
#include "core/adapter_api.h"
#include "core/compiler.h"

/* Exported by libsysmeasure.so: NULL for a version it does not serve. */
SM_EXPORT const sm_adapter_api_t *sysmeasure_adapter_api(unsigned version);

static const sm_adapter_api_t *sm_kp_api;

/* Causal profiling's table (causal_api.h) when it runs, else NULL: a
 * kernel named by --causal-progress is a progress point. */
static const sm_causal_api_t *sm_kp_causal;

/* Set while callbacks record (the core is up and measuring this process). */
static int sm_kp_on;

/* A kernel or fence id that names no region (the core did not define one). */
#define SM_KP_NO_REGION UINT64_MAX

/* The fences Kokkos makes because a tool asked for global fencing carry
 * this in their name (Kokkos 3.5 and newer; kokkos-tools filters them
 * likewise).  They are the tool's, not the program's: left out unless
 * SYSMEASURE_KOKKOS_TOOL_FENCES asks for them, and counted. */
#define SM_KP_TOOL_FENCE "Kokkos Profile Tool Fence"
static int sm_kp_tool_fences;          /* record them */
static uint64_t sm_kp_tool_fences_out; /* left out */
/* The region cached for a tool fence left out (never a region id: the
 * filter bit is set, and no core hands out so many). */
#define SM_KP_SKIPPED_REGION (SM_INVALID_ID - 1)


/* ---------------------------------------------------------------- the next tool */

/* The tool after this one in the list, and the entry points it has. */
typedef struct sm_kp_next {
    void (*init_library)(const int, const uint64_t, const uint32_t,
                         struct Kokkos_Profiling_KokkosPDeviceInfo *);
    void (*finalize_library)(void);
    void (*print_help)(char *);
    void (*parse_args)(int, char **);
    void (*request_tool_settings)(const uint32_t, struct Kokkos_Tools_ToolSettings *);
    void (*provide_tool_programming_interface)(const uint32_t,
                                               struct Kokkos_Tools_ToolProgrammingInterface);
    void (*begin_parallel_for)(const char *, const uint32_t, uint64_t *);
    void (*end_parallel_for)(const uint64_t);
    void (*begin_parallel_reduce)(const char *, const uint32_t, uint64_t *);
    void (*end_parallel_reduce)(const uint64_t);
    void (*begin_parallel_scan)(const char *, const uint32_t, uint64_t *);
    void (*end_parallel_scan)(const uint64_t);
    void (*begin_fence)(const char *, const uint32_t, uint64_t *);
    void (*end_fence)(const uint64_t);
    void (*push_profile_region)(const char *);
    void (*pop_profile_region)(void);
    void (*create_profile_section)(const char *, uint32_t *);
    void (*start_profile_section)(const uint32_t);
    void (*stop_profile_section)(const uint32_t);
    void (*destroy_profile_section)(const uint32_t);
    void (*profile_event)(const char *);
    void (*allocate_data)(const struct Kokkos_Profiling_SpaceHandle, const char *, const void *,
                          const uint64_t);
    void (*deallocate_data)(const struct Kokkos_Profiling_SpaceHandle, const char *, const void *,
                            const uint64_t);
    void (*begin_deep_copy)(struct Kokkos_Profiling_SpaceHandle, const char *, const void *,
                            struct Kokkos_Profiling_SpaceHandle, const char *, const void *,
                            uint64_t);
    void (*end_deep_copy)(void);
    void (*dual_view_sync)(const char *, const void *const, bool);
    void (*dual_view_modify)(const char *, const void *const, bool);
    void (*declare_metadata)(const char *, const char *);
} sm_kp_next_t;

static sm_kp_next_t sm_kp_next;
static int sm_kp_chained; /* a next tool is loaded */
static char sm_kp_next_path[1024];

/* dlsym's object pointer as a function pointer, without a cast warning. */
#define SM_KP_RESOLVE(handle, field)                                                      \
    do {                                                                                  \
        void *sym = dlsym(handle, "kokkosp_" #field);                                     \
        memcpy(&sm_kp_next.field, &sym, sizeof sym);                                      \
    } while (0)

/* Entry load_seq + 1 of the list that named this library: the same rule as
 * kokkos-tools' chaining tools, so that they and we can be combined. */
static void sm_kp_load_next(int load_seq)
{
    const char *list = getenv("KOKKOS_TOOLS_LIBS");
    if (!list || !list[0])
        list = getenv("KOKKOS_PROFILE_LIBRARY");
    if (!list || load_seq < 0)
        return;
    const char *p = list;
    for (int i = 0; i <= load_seq && p; i++) {
        p = strchr(p, ';');
        if (p)
            p++;
    }
    if (!p || !*p)
        return;
    size_t len = strcspn(p, ";");
    if (len == 0 || len >= sizeof sm_kp_next_path)
        return;
    memcpy(sm_kp_next_path, p, len);
    sm_kp_next_path[len] = '\0';
    void *h = dlopen(sm_kp_next_path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        sm_warning("cannot load the next Kokkos tool %s: %s", sm_kp_next_path, dlerror());
        return;
    }
    /* The same library again would call itself forever. */
    void *self = dlsym(h, "kokkosp_init_library");
    void *mine = (void *)kokkosp_init_library;
    if (self == mine) {
        sm_warning("the Kokkos tool list names libsysmeasure-kokkos.so twice; the second is "
                   "ignored");
        return;
    }
    SM_KP_RESOLVE(h, init_library);
    SM_KP_RESOLVE(h, finalize_library);
    SM_KP_RESOLVE(h, print_help);
    SM_KP_RESOLVE(h, parse_args);
    SM_KP_RESOLVE(h, request_tool_settings);
    SM_KP_RESOLVE(h, provide_tool_programming_interface);
    SM_KP_RESOLVE(h, begin_parallel_for);
    SM_KP_RESOLVE(h, end_parallel_for);
    SM_KP_RESOLVE(h, begin_parallel_reduce);
    SM_KP_RESOLVE(h, end_parallel_reduce);
    SM_KP_RESOLVE(h, begin_parallel_scan);
    SM_KP_RESOLVE(h, end_parallel_scan);
    SM_KP_RESOLVE(h, begin_fence);
    SM_KP_RESOLVE(h, end_fence);
    SM_KP_RESOLVE(h, push_profile_region);
    SM_KP_RESOLVE(h, pop_profile_region);
    SM_KP_RESOLVE(h, create_profile_section);
    SM_KP_RESOLVE(h, start_profile_section);
    SM_KP_RESOLVE(h, stop_profile_section);
    SM_KP_RESOLVE(h, destroy_profile_section);
    SM_KP_RESOLVE(h, profile_event);
    SM_KP_RESOLVE(h, allocate_data);
    SM_KP_RESOLVE(h, deallocate_data);
    SM_KP_RESOLVE(h, begin_deep_copy);
    SM_KP_RESOLVE(h, end_deep_copy);
    SM_KP_RESOLVE(h, dual_view_sync);
    SM_KP_RESOLVE(h, dual_view_modify);
    SM_KP_RESOLVE(h, declare_metadata);
    sm_kp_chained = 1;
}

/* ---------------------------------------------------------------- per thread */

/* KokkosP calls come from the thread that launches the work, so what must
 * pair a begin with its end lives per thread and needs no lock. */
#define SM_KP_CACHE 256 /* region names, direct-mapped */
#define SM_KP_CHAIN_DEPTH 64

typedef struct sm_kp_stack {
    uint32_t *v;
    uint32_t n, cap;
} sm_kp_stack_t;

typedef struct sm_kp_thread {
    struct {
        uint64_t hash;
        char *name;
        sm_region_id_t region;
    } cache[SM_KP_CACHE];
    sm_kp_stack_t regions; /* push/pop_profile_region */
    sm_kp_stack_t copies;  /* begin/end_deep_copy */
    /* The next tool's ids of the kernels and fences open on this thread:
     * they begin and end in LIFO order, as their launches do. */
    uint64_t next_ids[SM_KP_CHAIN_DEPTH];
    uint32_t next_depth;
} sm_kp_thread_t;

static SM_TLS sm_kp_thread_t *sm_kp_tls;
static pthread_key_t sm_kp_key;
static pthread_once_t sm_kp_key_once = PTHREAD_ONCE_INIT;

static void sm_kp_thread_release(void *p)
{
    sm_kp_thread_t *t = p;
    for (int i = 0; i < SM_KP_CACHE; i++)
        free(t->cache[i].name);
    free(t->regions.v);
    free(t->copies.v);
    free(t);
    sm_kp_tls = NULL;
}

static void sm_kp_key_create(void)
{
    if (pthread_key_create(&sm_kp_key, sm_kp_thread_release) != 0)
        sm_kp_key = (pthread_key_t)-1;
}

static SM_NOINLINE sm_kp_thread_t *sm_kp_thread_slow(void)
{
    int saved_errno = errno;
    sm_kp_thread_t *t = calloc(1, sizeof *t);
    if (t) {
        pthread_once(&sm_kp_key_once, sm_kp_key_create);
        if (sm_kp_key != (pthread_key_t)-1)
            pthread_setspecific(sm_kp_key, t);
        sm_kp_tls = t;
    }
    errno = saved_errno;
    return t;
}

static inline sm_kp_thread_t *sm_kp_thread(void)
{
    sm_kp_thread_t *t = sm_kp_tls;
    return SM_LIKELY(t != NULL) ? t : sm_kp_thread_slow();
}

static void sm_kp_push(sm_kp_stack_t *s, uint32_t v)
{
    if (SM_UNLIKELY(s->n == s->cap)) {
        int saved_errno = errno;
        int grown = SM_GROW(s->v, s->cap, 16);
        errno = saved_errno;
        if (grown != 0) {
            s->n++; /* counted, not stored: its pop leaves nothing */
            return;
        }
    }
    s->v[s->n++] = v;
}

static uint32_t sm_kp_pop(sm_kp_stack_t *s)
{
    if (!s->n)
        return SM_INVALID_ID;
    s->n--;
    return s->n < s->cap ? s->v[s->n] : SM_INVALID_ID;
}

/* ---------------------------------------------------------------- regions */

static inline uint64_t sm_kp_hash(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

static SM_NOINLINE sm_region_id_t sm_kp_region_slow(sm_kp_thread_t *t, unsigned slot,
                                                    uint64_t h, const char *name,
                                                    sm_region_role_t role)
{
    int saved_errno = errno;
    /* A tool fence is cached as no region: later ones cost the lookup. */
    int skip = role == SM_ROLE_BARRIER && !sm_kp_tool_fences && strstr(name, SM_KP_TOOL_FENCE);
    sm_region_id_t r = skip ? SM_KP_SKIPPED_REGION
                            : sm_kp_api->region_define(name, NULL, 0, SM_PARADIGM_KOKKOS, role);
    if (r != SM_INVALID_ID || skip) {
        char *copy = strdup(name);
        if (copy) {
            free(t->cache[slot].name);
            t->cache[slot].name = copy;
            t->cache[slot].hash = h;
            t->cache[slot].region = r;
        }
    }
    errno = saved_errno;
    return r;
}

/* The region of a name: Kokkos hands names as temporary strings, so the
 * per-thread cache keys on the text (hash, then compare), never the pointer. */
static inline sm_region_id_t sm_kp_region(sm_kp_thread_t *t, const char *name,
                                          sm_region_role_t role)
{
    if (!name)
        name = "(unnamed)";
    uint64_t h = sm_kp_hash(name);
    unsigned slot = (unsigned)(h ^ (h >> 32)) & (SM_KP_CACHE - 1);
    if (SM_LIKELY(t->cache[slot].hash == h && t->cache[slot].name &&
                  strcmp(t->cache[slot].name, name) == 0))
        return t->cache[slot].region;
    return sm_kp_region_slow(t, slot, h, name, role);
}

/* Enters the region of name; returns it as a kernel/fence id. */
static inline uint64_t sm_kp_enter_named(const char *name, sm_region_role_t role)
{
    if (!__atomic_load_n(&sm_kp_on, __ATOMIC_RELAXED))
        return SM_KP_NO_REGION;
    sm_kp_thread_t *t = sm_kp_thread();
    if (SM_UNLIKELY(!t))
        return SM_KP_NO_REGION;
    sm_region_id_t r = sm_kp_region(t, name, role);
    if (SM_UNLIKELY(r >= SM_KP_SKIPPED_REGION)) {
        if (r == SM_KP_SKIPPED_REGION)
            __atomic_add_fetch(&sm_kp_tool_fences_out, 1, __ATOMIC_RELAXED);
        return SM_KP_NO_REGION;
    }
    sm_kp_api->enter(r);
    return r;
}

static inline void sm_kp_leave_id(uint64_t id)
{
    /* The core leaves only the region on top of this thread's stack: an id
     * whose enter was not recorded (measurement off then) changes nothing. */
    if (id < SM_INVALID_ID && __atomic_load_n(&sm_kp_on, __ATOMIC_RELAXED))
        sm_kp_api->leave((sm_region_id_t)id);
}

/* An instant: a region entered and left at once (events, DualView marks). */
static void sm_kp_instant(const char *name)
{
    uint64_t id = sm_kp_enter_named(name, SM_ROLE_ARTIFICIAL);
    sm_kp_leave_id(id);
}

/* ---------------------------------------------------------------- life cycle */

static SM_NOINLINE void sm_kp_metadata_u64(const char *key, uint64_t v)
{
    char text[32];
    snprintf(text, sizeof text, "%llu", (unsigned long long)v);
    sm_kp_api->metadata(key, text);
}

void kokkosp_init_library(const int load_seq, const uint64_t interface_version,
                          const uint32_t dev_info_count,
                          struct Kokkos_Profiling_KokkosPDeviceInfo *dev_info)
{
    int saved_errno = errno;
    const sm_adapter_api_t *api = sysmeasure_adapter_api(SM_ADAPTER_API_VERSION);
    if (api && api->version == SM_ADAPTER_API_VERSION && SM_ADAPTER_API_HAS(api, metadata)) {
        sm_kp_api = api;
        /* Under the launcher the core is up already; alone, bring it up. */
        if (api->runtime_init_forced() == 0) {
            sm_kp_metadata_u64("kokkosp.interface_version", interface_version);
            sm_kp_metadata_u64("kokkosp.load_sequence", (uint64_t)load_seq);
            sm_kp_metadata_u64("kokkosp.devices", dev_info_count);
            char yes[8] = "";
            if (SM_ADAPTER_API_HAS(api, config_value))
                api->config_value("kokkos_tool_fences", yes, sizeof yes);
            sm_kp_tool_fences = !strcmp(yes, "yes");
            __atomic_store_n(&sm_kp_on, 1, __ATOMIC_RELEASE);
            sm_causal_api_fn causal;
            *(void **)&causal = dlsym(RTLD_DEFAULT, "sysmeasure_causal_api");
            if (causal && causal() && causal()->version == SM_CAUSAL_API_VERSION)
                sm_kp_causal = causal();
        }
    } else {
        sm_warning("libsysmeasure-kokkos.so does not match this libsysmeasure.so; Kokkos is "
                   "not measured");
    }
    sm_kp_load_next(load_seq);
    if (sm_kp_chained && sm_kp_on)
        sm_kp_api->metadata("kokkosp.next_tool", sm_kp_next_path);
    if (sm_kp_next.init_library)
        sm_kp_next.init_library(load_seq + 1, interface_version, dev_info_count, dev_info);
    errno = saved_errno;
}

void kokkosp_finalize_library(void)
{
    if (sm_kp_next.finalize_library)
        sm_kp_next.finalize_library();
    if (__atomic_load_n(&sm_kp_on, __ATOMIC_RELAXED) && !sm_kp_tool_fences)
        sm_kp_metadata_u64("kokkosp.tool_fences_not_recorded",
                           __atomic_load_n(&sm_kp_tool_fences_out, __ATOMIC_RELAXED));
    /* The output is written when the process ends (or at MPI_Finalize), so
     * that what the program does after Kokkos::finalize is measured too. */
}

void kokkosp_print_help(char *exe)
{
    printf("sysmeasure Kokkos tool (libsysmeasure-kokkos.so) for %s:\n"
           "  records Kokkos kernels, profile regions and sections, fences and deep copies as\n"
           "  regions of paradigm Kokkos, the bytes each memory space holds as counter metrics,\n"
           "  and declared metadata, in sysmeasure's output folder. It takes no tool arguments;\n"
           "  SYSMEASURE_* variables configure it (sysmeasure-avail lists them). A tool listed\n"
           "  after it in KOKKOS_TOOLS_LIBS (or KOKKOS_PROFILE_LIBRARY), separated by ';',\n"
           "  runs behind it.\n",
           exe ? exe : "this program");
    if (sm_kp_next.print_help)
        sm_kp_next.print_help(exe);
}

void kokkosp_parse_args(int argc, char **argv)
{
    /* Tool arguments are for the tool behind us; we take none. */
    if (sm_kp_next.parse_args)
        sm_kp_next.parse_args(argc, argv);
}

void kokkosp_request_tool_settings(const uint32_t num_settings,
                                   struct Kokkos_Tools_ToolSettings *settings)
{
    if (sm_kp_next.request_tool_settings)
        sm_kp_next.request_tool_settings(num_settings, settings);
    /* Kernel regions should cover the kernel's execution, not its launch:
     * Kokkos then fences around each kernel, as it does for tools that say
     * nothing. */
    if (num_settings >= 1 && settings)
        settings->requires_global_fencing = true;
}

void kokkosp_provide_tool_programming_interface(const uint32_t num_functions,
                                                struct Kokkos_Tools_ToolProgrammingInterface interface)
{
    /* We invoke no fence ourselves; the tool behind us may. */
    if (sm_kp_next.provide_tool_programming_interface)
        sm_kp_next.provide_tool_programming_interface(num_functions, interface);
}

/* ---------------------------------------------------------------- kernels and fences */

static inline void sm_kp_next_begin(void (*begin)(const char *, const uint32_t, uint64_t *),
                                    const char *name, uint32_t dev_id)
{
    sm_kp_thread_t *t = sm_kp_thread();
    if (!t)
        return;
    uint64_t id = 0;
    begin(name, dev_id, &id);
    if (t->next_depth < SM_KP_CHAIN_DEPTH)
        t->next_ids[t->next_depth] = id;
    t->next_depth++;
}

static inline void sm_kp_next_end(void (*end)(const uint64_t))
{
    sm_kp_thread_t *t = sm_kp_thread();
    if (!t || !t->next_depth)
        return;
    t->next_depth--;
    end(t->next_depth < SM_KP_CHAIN_DEPTH ? t->next_ids[t->next_depth] : 0);
}

#define SM_KP_KERNEL(kind, role)                                                          \
    void kokkosp_begin_##kind(const char *name, const uint32_t dev_id, uint64_t *kernel_id) \
    {                                                                                     \
        uint64_t id = sm_kp_enter_named(name, role);                                      \
        if (kernel_id)                                                                    \
            *kernel_id = id;                                                              \
        if (SM_UNLIKELY(sm_kp_chained) && sm_kp_next.begin_##kind)                        \
            sm_kp_next_begin(sm_kp_next.begin_##kind, name, dev_id);                      \
    }                                                                                     \
    void kokkosp_end_##kind(const uint64_t kernel_id)                                     \
    {                                                                                     \
        if (SM_UNLIKELY(sm_kp_chained) && sm_kp_next.end_##kind)                          \
            sm_kp_next_end(sm_kp_next.end_##kind);                                        \
        sm_kp_leave_id(kernel_id);                                                        \
        if (SM_UNLIKELY(sm_kp_causal != NULL) && kernel_id < SM_INVALID_ID)               \
            sm_kp_causal->region_end((uint32_t)kernel_id); /* --causal-progress KERNEL */ \
    }

/* A kernel's id is its region: end_* needs no table to find it. */
SM_KP_KERNEL(parallel_for, SM_ROLE_LOOP)
SM_KP_KERNEL(parallel_reduce, SM_ROLE_REDUCE)
SM_KP_KERNEL(parallel_scan, SM_ROLE_SCAN)
SM_KP_KERNEL(fence, SM_ROLE_BARRIER)

/* ---------------------------------------------------------------- regions and sections */

void kokkosp_push_profile_region(const char *name)
{
    uint64_t id = sm_kp_enter_named(name, SM_ROLE_CODE);
    sm_kp_thread_t *t = sm_kp_on ? sm_kp_thread() : NULL;
    if (t)
        sm_kp_push(&t->regions, id == SM_KP_NO_REGION ? SM_INVALID_ID : (uint32_t)id);
    if (sm_kp_next.push_profile_region)
        sm_kp_next.push_profile_region(name);
}

void kokkosp_pop_profile_region(void)
{
    if (sm_kp_next.pop_profile_region)
        sm_kp_next.pop_profile_region();
    sm_kp_thread_t *t = sm_kp_on ? sm_kp_thread() : NULL;
    if (t) {
        uint32_t r = sm_kp_pop(&t->regions);
        if (r != SM_INVALID_ID)
            sm_kp_leave_id(r);
    }
}

/* Sections: ids handed out once, never reused (programs make few). */
#define SM_KP_SECTIONS 4096

typedef struct sm_kp_section {
    sm_region_id_t region;
    uint32_t next_id; /* the next tool's id of the section */
} sm_kp_section_t;

static sm_kp_section_t sm_kp_sections[SM_KP_SECTIONS];
static uint32_t sm_kp_n_sections;

void kokkosp_create_profile_section(const char *name, uint32_t *section_id)
{
    int saved_errno = errno;
    uint32_t i = __atomic_fetch_add(&sm_kp_n_sections, 1, __ATOMIC_RELAXED);
    if (i >= SM_KP_SECTIONS) {
        __atomic_store_n(&sm_kp_n_sections, SM_KP_SECTIONS, __ATOMIC_RELAXED);
        i = SM_KP_SECTIONS - 1; /* all later sections share the last slot */
    }
    sm_kp_section_t *s = &sm_kp_sections[i];
    s->region = sm_kp_on ? sm_kp_api->region_define(name ? name : "(unnamed)", NULL, 0,
                                                    SM_PARADIGM_KOKKOS, SM_ROLE_CODE)
                         : SM_INVALID_ID;
    s->next_id = 0;
    if (sm_kp_next.create_profile_section)
        sm_kp_next.create_profile_section(name, &s->next_id);
    if (section_id)
        *section_id = i;
    errno = saved_errno;
}

void kokkosp_start_profile_section(const uint32_t section_id)
{
    if (section_id >= SM_KP_SECTIONS)
        return;
    const sm_kp_section_t *s = &sm_kp_sections[section_id];
    if (s->region != SM_INVALID_ID && sm_kp_on)
        sm_kp_api->enter(s->region);
    if (sm_kp_next.start_profile_section)
        sm_kp_next.start_profile_section(s->next_id);
}

void kokkosp_stop_profile_section(const uint32_t section_id)
{
    if (section_id >= SM_KP_SECTIONS)
        return;
    const sm_kp_section_t *s = &sm_kp_sections[section_id];
    if (sm_kp_next.stop_profile_section)
        sm_kp_next.stop_profile_section(s->next_id);
    if (s->region != SM_INVALID_ID)
        sm_kp_leave_id(s->region);
}

void kokkosp_destroy_profile_section(const uint32_t section_id)
{
    if (section_id < SM_KP_SECTIONS && sm_kp_next.destroy_profile_section)
        sm_kp_next.destroy_profile_section(sm_kp_sections[section_id].next_id);
}

void kokkosp_profile_event(const char *name)
{
    sm_kp_instant(name);
    if (sm_kp_next.profile_event)
        sm_kp_next.profile_event(name);
}

/* ---------------------------------------------------------------- memory */

/* Memory spaces by name, each with its bytes in use (process-wide: a view
 * may be freed by another thread than the one that made it). */
#define SM_KP_SPACES 32

typedef struct sm_kp_space {
    char name[64];
    uint32_t metric;
    uint64_t in_use;
} sm_kp_space_t;

static sm_kp_space_t sm_kp_spaces[SM_KP_SPACES];
static uint32_t sm_kp_n_spaces;
static pthread_mutex_t sm_kp_spaces_lock = PTHREAD_MUTEX_INITIALIZER;

static sm_kp_space_t *sm_kp_space_find(const char name[64])
{
    uint32_t n = __atomic_load_n(&sm_kp_n_spaces, __ATOMIC_ACQUIRE);
    for (uint32_t i = 0; i < n; i++)
        if (strncmp(sm_kp_spaces[i].name, name, sizeof sm_kp_spaces[i].name) == 0)
            return &sm_kp_spaces[i];
    return NULL;
}

static SM_NOINLINE sm_kp_space_t *sm_kp_space_add(const char name[64])
{
    int saved_errno = errno;
    pthread_mutex_lock(&sm_kp_spaces_lock);
    sm_kp_space_t *s = sm_kp_space_find(name);
    uint32_t n = sm_kp_n_spaces;
    if (!s && n < SM_KP_SPACES) {
        s = &sm_kp_spaces[n];
        memcpy(s->name, name, sizeof s->name);
        s->name[sizeof s->name - 1] = '\0';
        char metric[128];
        snprintf(metric, sizeof metric, "Kokkos %s bytes in use", s->name[0] ? s->name : "?");
        s->metric = sm_kp_api->metric_define(metric, "bytes");
        __atomic_store_n(&sm_kp_n_spaces, n + 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&sm_kp_spaces_lock);
    errno = saved_errno;
    return s;
}

static void sm_kp_space_change(const struct Kokkos_Profiling_SpaceHandle *space, uint64_t size,
                               int allocated)
{
    if (!__atomic_load_n(&sm_kp_on, __ATOMIC_RELAXED))
        return;
    sm_kp_space_t *s = sm_kp_space_find(space->name);
    if (!s && !(s = sm_kp_space_add(space->name)))
        return;
    uint64_t now;
    if (allocated) {
        now = __atomic_add_fetch(&s->in_use, size, __ATOMIC_RELAXED);
    } else {
        /* Never below 0 (memory made before the tool came up). */
        uint64_t cur = __atomic_load_n(&s->in_use, __ATOMIC_RELAXED);
        do
            now = cur >= size ? cur - size : 0;
        while (!__atomic_compare_exchange_n(&s->in_use, &cur, now, true, __ATOMIC_RELAXED,
                                            __ATOMIC_RELAXED));
    }
    if (s->metric != SM_INVALID_ID)
        sm_kp_api->metric(s->metric, now);
}

void kokkosp_allocate_data(const struct Kokkos_Profiling_SpaceHandle space, const char *label,
                           const void *ptr, const uint64_t size)
{
    sm_kp_space_change(&space, size, 1);
    if (sm_kp_next.allocate_data)
        sm_kp_next.allocate_data(space, label, ptr, size);
}

void kokkosp_deallocate_data(const struct Kokkos_Profiling_SpaceHandle space, const char *label,
                             const void *ptr, const uint64_t size)
{
    sm_kp_space_change(&space, size, 0);
    if (sm_kp_next.deallocate_data)
        sm_kp_next.deallocate_data(space, label, ptr, size);
}

/* A deep copy is the region "deep_copy DST <- SRC (DSTSPACE <- SRCSPACE)"
 * (view labels and memory spaces), carrying its bytes: read from the source
 * (received) and written to the destination (sent). */
void kokkosp_begin_deep_copy(struct Kokkos_Profiling_SpaceHandle dst_space, const char *dst_label,
                             const void *dst_ptr, struct Kokkos_Profiling_SpaceHandle src_space,
                             const char *src_label, const void *src_ptr, uint64_t size)
{
    if (__atomic_load_n(&sm_kp_on, __ATOMIC_RELAXED)) {
        char name[320];
        snprintf(name, sizeof name, "deep_copy %s <- %s (%.64s <- %.64s)",
                 dst_label && dst_label[0] ? dst_label : "?",
                 src_label && src_label[0] ? src_label : "?", dst_space.name, src_space.name);
        uint64_t id = sm_kp_enter_named(name, SM_ROLE_FUNCTION);
        if (id != SM_KP_NO_REGION)
            sm_kp_api->bytes(size, size);
        sm_kp_thread_t *t = sm_kp_thread();
        if (t)
            sm_kp_push(&t->copies, id == SM_KP_NO_REGION ? SM_INVALID_ID : (uint32_t)id);
    }
    if (sm_kp_next.begin_deep_copy)
        sm_kp_next.begin_deep_copy(dst_space, dst_label, dst_ptr, src_space, src_label, src_ptr,
                                   size);
}

void kokkosp_end_deep_copy(void)
{
    if (sm_kp_next.end_deep_copy)
        sm_kp_next.end_deep_copy();
    sm_kp_thread_t *t = sm_kp_on ? sm_kp_thread() : NULL;
    if (t) {
        uint32_t r = sm_kp_pop(&t->copies);
        if (r != SM_INVALID_ID)
            sm_kp_leave_id(r);
    }
}

void kokkosp_dual_view_sync(const char *label, const void *const ptr, bool to_device)
{
    if (__atomic_load_n(&sm_kp_on, __ATOMIC_RELAXED)) {
        char name[320];
        snprintf(name, sizeof name, "DualView sync %s to %s", label ? label : "?",
                 to_device ? "device" : "host");
        sm_kp_instant(name);
    }
    if (sm_kp_next.dual_view_sync)
        sm_kp_next.dual_view_sync(label, ptr, to_device);
}

void kokkosp_dual_view_modify(const char *label, const void *const ptr, bool on_device)
{
    if (__atomic_load_n(&sm_kp_on, __ATOMIC_RELAXED)) {
        char name[320];
        snprintf(name, sizeof name, "DualView modify %s on %s", label ? label : "?",
                 on_device ? "device" : "host");
        sm_kp_instant(name);
    }
    if (sm_kp_next.dual_view_modify)
        sm_kp_next.dual_view_modify(label, ptr, on_device);
}

void kokkosp_declare_metadata(const char *key, const char *value)
{
    if (__atomic_load_n(&sm_kp_on, __ATOMIC_RELAXED) && key)
        sm_kp_api->metadata(key, value ? value : "");
    if (sm_kp_next.declare_metadata)
        sm_kp_next.declare_metadata(key, value);
}
