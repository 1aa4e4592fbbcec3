/* The GPU layer (gpu.h): devices, stream locations, activity batches from a
 * vendor's thread, the host side of correlation, and the end-of-run flush. */
#include "gpu.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "events.h"
#include "gpu_memory.h"
#include "location.h"
#include "runtime.h"
#include "../util/grow.h"

#define SM_GPU_MAX_DEVICES 64
#define SM_GPU_MAX_STREAMS 4096
#define SM_GPU_MAX_FLUSH 4

typedef struct sm_gpu_stream_entry {
    sm_location_t *loc;
    sm_gpu_device_t device;
    uint64_t key;
} sm_gpu_stream_entry_t;

static pthread_mutex_t sm_gpu_lock = PTHREAD_MUTEX_INITIALIZER;
static sm_gpu_device_def_t sm_gpu_devices[SM_GPU_MAX_DEVICES];
static uint32_t sm_gpu_n_devices; /* published with release */
static sm_gpu_stream_entry_t sm_gpu_streams[SM_GPU_MAX_STREAMS];
static uint32_t sm_gpu_n_streams; /* published with release */
static sm_gpu_flush_fn sm_gpu_flushes[SM_GPU_MAX_FLUSH];
static uint32_t sm_gpu_n_flushes;
static int sm_gpu_hooked;
static uint64_t sm_gpu_dropped_total; /* atomic */
/* Batches are taken until the end-of-run flush is over, even though the
 * runtime already stopped measuring new threads then. */
static volatile int sm_gpu_closing_done;
/* The end-of-run flush is under way: the runtime no longer measures new
 * threads, but devices and streams met in the last records still count. */
static volatile int sm_gpu_flushing;

static int sm_gpu_accepting(void)
{
    return (sm_runtime_active || sm_gpu_flushing) && !sm_gpu_closing_done;
}

/* Attributes of the host side (local ids; defined once). */
static sm_attribute_id_t sm_gpu_attr_correlation = SM_INVALID_ID;
static sm_attribute_id_t sm_gpu_attr_error = SM_INVALID_ID;
/* Regions the core names for work other than kernels: [kind][0 CUDA, 1 HIP]. */
static sm_region_id_t sm_gpu_kind_region[SM_GPU_KIND_COUNT][2];
static int sm_gpu_regions_ready;

static const char *const sm_gpu_kind_names[SM_GPU_KIND_COUNT] = {
    "kernel",         "memcpy HtoD",  "memcpy DtoH",  "memcpy DtoD", "memcpy HtoH",
    "memcpy PtoP",    "memset",       "synchronize",  "marker",      "other"};

const char *sm_gpu_kind_name(sm_gpu_kind_t kind)
{
    return (unsigned)kind < SM_GPU_KIND_COUNT ? sm_gpu_kind_names[kind] : "?";
}

/* ---------------------------------------------------------------- clock */

/* A (ticks, CLOCK_MONOTONIC ns) pair taken as close together as we can. */
static void sm_gpu_clock_pair(uint64_t *ticks, uint64_t *mono)
{
    uint64_t a = sm_clock_now();
    *mono = sm_clock_monotonic_ns();
    uint64_t b = sm_clock_now();
    *ticks = a + (b - a) / 2;
}

static uint64_t sm_gpu_clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Vendor ns -> CLOCK_MONOTONIC ns -> ticks.  With the TSC the rate is the
 * one measured since the clock's first point; the conversion is anchored
 * at a pair read now, so an activity a few ms old is off by its age times
 * the rate's error (well under a microsecond). */
uint64_t sm_gpu_ticks(sm_gpu_clock_t clock, uint64_t ns)
{
    if (clock == SM_GPU_CLOCK_REALTIME || clock == SM_GPU_CLOCK_BOOTTIME) {
        clockid_t id = clock == SM_GPU_CLOCK_REALTIME ? CLOCK_REALTIME : CLOCK_BOOTTIME;
        uint64_t m0 = sm_clock_monotonic_ns();
        uint64_t other = sm_gpu_clock_ns(id);
        uint64_t m1 = sm_clock_monotonic_ns();
        int64_t offset = (int64_t)(other - (m0 + (m1 - m0) / 2));
        ns = (uint64_t)((int64_t)ns - offset);
    }
    if (!sm_clock_use_tsc)
        return ns;
    sm_clock_params_t p;
    sm_clock_export(&p);
    uint64_t tick_now, mono_now;
    sm_gpu_clock_pair(&tick_now, &mono_now);
    if (mono_now <= p.mono0 || tick_now <= p.tick0)
        return tick_now;
    double ticks_per_ns = (double)(tick_now - p.tick0) / (double)(mono_now - p.mono0);
    double back = (double)(int64_t)(mono_now - ns) * ticks_per_ns;
    return (uint64_t)((double)tick_now - back);
}

/* ---------------------------------------------------------------- correlation */

/* Correlation id -> the profile node of the host call that issued the work:
 * a direct-mapped table written by the calling thread, read by the vendor's
 * thread.  The slot's id is cleared while the node changes (a reader that
 * sees the same id before and after reading the node has a consistent pair).
 * Work still in flight when 2^16 later calls reuse its slot is charged to
 * the stream's top level instead. */
#define SM_GPU_CORR_SLOTS (1u << 16)
typedef struct sm_gpu_corr_slot {
    uint64_t correlation;
    const sm_profile_node_t *node;
} sm_gpu_corr_slot_t;
static sm_gpu_corr_slot_t *sm_gpu_corr;

static void sm_gpu_corr_put(uint64_t correlation, const sm_profile_node_t *node)
{
    if (!sm_gpu_corr)
        return;
    sm_gpu_corr_slot_t *s = &sm_gpu_corr[correlation & (SM_GPU_CORR_SLOTS - 1)];
    __atomic_store_n(&s->correlation, 0, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    __atomic_store_n(&s->node, node, __ATOMIC_RELAXED);
    __atomic_store_n(&s->correlation, correlation, __ATOMIC_RELEASE);
}

static const sm_profile_node_t *sm_gpu_corr_get(uint64_t correlation)
{
    if (!sm_gpu_corr || !correlation)
        return NULL;
    sm_gpu_corr_slot_t *s = &sm_gpu_corr[correlation & (SM_GPU_CORR_SLOTS - 1)];
    if (__atomic_load_n(&s->correlation, __ATOMIC_ACQUIRE) != correlation)
        return NULL;
    const sm_profile_node_t *n = __atomic_load_n(&s->node, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&s->correlation, __ATOMIC_RELAXED) != correlation)
        return NULL;
    return n;
}

/* For gpu_counters.c: the host call of a correlation, a stream's location. */
const sm_profile_node_t *sm_gpu_correlation_node(uint64_t correlation)
{
    return sm_gpu_corr_get(correlation);
}

sm_location_t *sm_gpu_stream_location(sm_gpu_stream_t stream)
{
    if (stream >= __atomic_load_n(&sm_gpu_n_streams, __ATOMIC_ACQUIRE))
        return NULL;
    return sm_gpu_streams[stream].loc;
}

int sm_gpu_taking(void)
{
    return sm_gpu_accepting() || (sm_gpu_flushing && !sm_gpu_closing_done);
}

/* ---------------------------------------------------------------- definitions */

static void sm_gpu_finalize_hook(const sm_run_info_t *run);

/* Attributes, kind regions and the correlation table, once (under the lock). */
static void sm_gpu_prepare_locked(void)
{
    if (sm_gpu_regions_ready)
        return;
    sm_gpu_attr_correlation = sm_attribute_define("correlation id", SM_ATTR_INT64);
    sm_gpu_attr_error = sm_attribute_define("error code", SM_ATTR_INT64);
    /* Those of the stream side, named by the trace writer (writers/otf2/archive.c). */
    static const char *const stream_attrs[] = {
        "bytes",   "grid x",  "grid y", "grid z", "block x", "block y", "block z",
        "registers per thread", "static shared memory", "dynamic shared memory"};
    for (size_t i = 0; i < sizeof stream_attrs / sizeof stream_attrs[0]; i++)
        sm_attribute_define(stream_attrs[i], SM_ATTR_INT64);
    for (int k = 0; k < SM_GPU_KIND_COUNT; k++)
        for (int v = 0; v < 2; v++) {
            char name[64];
            snprintf(name, sizeof name, "[%s %s]", v ? "HIP" : "CUDA", sm_gpu_kind_names[k]);
            int transfer = k >= SM_GPU_COPY_HTOD && k <= SM_GPU_MEMSET;
            sm_gpu_kind_region[k][v] =
                sm_region_define(name, NULL, 0, v ? SM_PARADIGM_HIP : SM_PARADIGM_CUDA,
                                 transfer ? SM_ROLE_DATA_TRANSFER : SM_ROLE_FUNCTION);
        }
    if (!sm_gpu_corr)
        sm_gpu_corr = calloc(SM_GPU_CORR_SLOTS, sizeof *sm_gpu_corr);
    __atomic_store_n(&sm_gpu_regions_ready, 1, __ATOMIC_RELEASE);
}

int sm_gpu_init(void)
{
    pthread_mutex_lock(&sm_gpu_lock);
    sm_gpu_prepare_locked();
    pthread_mutex_unlock(&sm_gpu_lock);
    return sm_gpu_corr ? 0 : -1;
}

static void sm_gpu_copy_text(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src ? src : "");
}

sm_gpu_device_t sm_gpu_device_define(const sm_gpu_device_info_t *info)
{
    if (!info || !sm_gpu_accepting())
        return SM_GPU_NONE;
    pthread_mutex_lock(&sm_gpu_lock);
    sm_gpu_prepare_locked();
    sm_gpu_device_t id = SM_GPU_NONE;
    for (uint32_t i = 0; i < sm_gpu_n_devices; i++)
        if (sm_gpu_devices[i].vendor == info->vendor && sm_gpu_devices[i].ordinal == info->ordinal)
            id = i;
    if (id == SM_GPU_NONE && sm_gpu_n_devices < SM_GPU_MAX_DEVICES) {
        sm_gpu_device_def_t *d = &sm_gpu_devices[sm_gpu_n_devices];
        d->vendor = info->vendor;
        d->ordinal = info->ordinal;
        sm_gpu_copy_text(d->name, sizeof d->name, info->name);
        sm_gpu_copy_text(d->uuid, sizeof d->uuid, info->uuid);
        sm_gpu_copy_text(d->pci_bus_id, sizeof d->pci_bus_id, info->pci_bus_id);
        id = sm_gpu_n_devices;
        __atomic_store_n(&sm_gpu_n_devices, id + 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&sm_gpu_lock);
    return id;
}

sm_gpu_stream_t sm_gpu_stream_define(sm_gpu_device_t device, uint64_t key, const char *name)
{
    if (!sm_gpu_accepting() || device >= __atomic_load_n(&sm_gpu_n_devices, __ATOMIC_ACQUIRE))
        return SM_GPU_NONE;
    pthread_mutex_lock(&sm_gpu_lock);
    sm_gpu_stream_t id = SM_GPU_NONE;
    for (uint32_t i = 0; i < sm_gpu_n_streams && id == SM_GPU_NONE; i++)
        if (sm_gpu_streams[i].device == device && sm_gpu_streams[i].key == key)
            id = i;
    if (id == SM_GPU_NONE && sm_gpu_n_streams < SM_GPU_MAX_STREAMS) {
        char text[64];
        const sm_gpu_device_def_t *d = &sm_gpu_devices[device];
        if (name && name[0])
            snprintf(text, sizeof text, "%s", name);
        else
            snprintf(text, sizeof text, "%s %" PRIu32 " stream %" PRIu64,
                     d->vendor == SM_GPU_VENDOR_AMD ? "HIP" : "CUDA", d->ordinal, key);
        sm_location_t *loc = sm_location_create(SM_LOCATION_GPU_STREAM, text);
        if (loc) {
            sm_gpu_stream_entry_t *s = &sm_gpu_streams[sm_gpu_n_streams];
            s->loc = loc;
            s->device = device;
            s->key = key;
            id = sm_gpu_n_streams;
            __atomic_store_n(&sm_gpu_n_streams, id + 1, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&sm_gpu_lock);
    return id;
}

uint32_t sm_gpu_device_count(void)
{
    return __atomic_load_n(&sm_gpu_n_devices, __ATOMIC_ACQUIRE);
}

const sm_gpu_device_def_t *sm_gpu_device_get(sm_gpu_device_t id)
{
    return id < sm_gpu_device_count() ? &sm_gpu_devices[id] : NULL;
}

sm_gpu_device_t sm_gpu_location_device(uint32_t location_id)
{
    uint32_t n = __atomic_load_n(&sm_gpu_n_streams, __ATOMIC_ACQUIRE);
    for (uint32_t i = 0; i < n; i++)
        if (sm_gpu_streams[i].loc->id == location_id)
            return sm_gpu_streams[i].device;
    return SM_GPU_NONE;
}

/* ---------------------------------------------------------------- batches */

/* The stream's profile node for an activity: under the host call path that
 * issued it (the path's nodes mirrored in the stream's own tree, where only
 * the activity's node counts visits), or at the top when none is known. */
static sm_profile_node_t *sm_gpu_profile_node(sm_location_t *loc, const sm_profile_node_t *host,
                                              sm_region_id_t region)
{
    sm_region_id_t path[256];
    uint32_t depth = 0;
    for (const sm_profile_node_t *n = host; n && n->parent && depth < 256; n = n->parent)
        path[depth++] = n->region;
    sm_profile_node_t *p = &loc->profile.root;
    while (depth--) {
        sm_profile_node_t *c = p->last_hit;
        p = c && c->region == path[depth] ? c : sm_profile_child(&loc->profile, p, path[depth]);
    }
    sm_profile_node_t *c = p->last_hit;
    return c && c->region == region ? c : sm_profile_child(&loc->profile, p, region);
}

static void sm_gpu_put(sm_location_t *loc, const sm_gpu_activity_t *a, sm_region_id_t region)
{
    uint64_t start = a->start, end = a->end < a->start ? a->start : a->end;
    if (!loc->tracing) /* counted for sysmeasure-score */
        sm_event_count(loc, SM_REC_GPU_ACTIVITY, a->kind == SM_GPU_KERNEL ? 8 : 3);
    else {
        uint64_t w[8];
        uint8_t nw = 3;
        w[0] = end;
        w[1] = a->correlation;
        w[2] = a->bytes;
        if (a->kind == SM_GPU_KERNEL) {
            const sm_gpu_launch_t *l = &a->launch;
            w[3] = (uint64_t)l->grid[0] | (uint64_t)l->grid[1] << 32;
            w[4] = (uint64_t)l->grid[2] | (uint64_t)l->block[0] << 32;
            w[5] = (uint64_t)l->block[1] | (uint64_t)l->block[2] << 32;
            w[6] = l->registers;
            w[7] = (uint64_t)l->shared_static | (uint64_t)l->shared_dynamic << 32;
            nw = 8;
        }
        sm_event_record(loc, SM_REC_GPU_ACTIVITY, region, (uint16_t)a->kind, start, w, nw);
    }
    if (loc->profiling) {
        sm_profile_node_t *n = sm_gpu_profile_node(loc, sm_gpu_corr_get(a->correlation), region);
        uint64_t d = end - start;
        n->visits++;
        sm_stat_add(&n->incl, d);
        sm_stat_add(&n->excl, d);
        if (a->kind == SM_GPU_COPY_DTOH)
            n->bytes_received += a->bytes;
        else
            n->bytes_sent += a->bytes;
    }
}

size_t sm_gpu_activities(const sm_gpu_activity_t *batch, size_t n, size_t stride)
{
    size_t kept = 0;
    if (!batch || !n)
        return 0;
    if (stride == 0)
        stride = sizeof(sm_gpu_activity_t);
    uint32_t n_streams = __atomic_load_n(&sm_gpu_n_streams, __ATOMIC_ACQUIRE);
    for (size_t i = 0; i < n; i++) {
        sm_gpu_activity_t a;
        memset(&a, 0, sizeof a);
        memcpy(&a, (const uint8_t *)batch + i * stride, stride < sizeof a ? stride : sizeof a);
        if (a.stream >= n_streams || a.kind >= SM_GPU_KIND_COUNT || sm_gpu_closing_done)
            continue;
        sm_gpu_stream_entry_t *s = &sm_gpu_streams[a.stream];
        sm_region_id_t region = a.region;
        if (region == SM_INVALID_ID || region >= sm_region_count()) {
            int hip = sm_gpu_devices[s->device].vendor == SM_GPU_VENDOR_AMD;
            region = sm_gpu_kind_region[a.kind][hip];
        }
        pthread_mutex_lock(&s->loc->lock);
        if (!s->loc->closed) {
            sm_gpu_put(s->loc, &a, region);
            kept++;
        }
        pthread_mutex_unlock(&s->loc->lock);
    }
    if (kept < n)
        __atomic_fetch_add(&sm_gpu_dropped_total, n - kept, __ATOMIC_RELAXED);
    return kept;
}

void sm_gpu_dropped(uint64_t n)
{
    __atomic_fetch_add(&sm_gpu_dropped_total, n, __ATOMIC_RELAXED);
}

uint64_t sm_gpu_dropped_count(void)
{
    return __atomic_load_n(&sm_gpu_dropped_total, __ATOMIC_RELAXED);
}

/* ---------------------------------------------------------------- host side */

static int sm_gpu_host_ready(void)
{
    if (SM_LIKELY(__atomic_load_n(&sm_gpu_regions_ready, __ATOMIC_ACQUIRE)))
        return 1;
    sm_gpu_init();
    return __atomic_load_n(&sm_gpu_regions_ready, __ATOMIC_ACQUIRE);
}

void sm_gpu_api_enter(sm_region_id_t region, uint64_t correlation)
{
    if (SM_UNLIKELY(!sm_runtime_active))
        return;
    sm_location_t *loc = sm_location_current();
    if (!sm_measuring(loc) || loc->closed)
        return;
    uint64_t t = sm_clock_now();
    if (!correlation || !sm_gpu_host_ready()) {
        sm_event_enter(loc, region, t);
        return;
    }
    sm_attr_value_t attr = {sm_gpu_attr_correlation, correlation};
    sm_event_enter_attrs(loc, region, t, &attr, 1);
    if (loc->profiling)
        sm_gpu_corr_put(correlation, loc->sp->node);
}

void sm_gpu_api_leave(sm_region_id_t region, int64_t error)
{
    if (SM_UNLIKELY(!sm_runtime_active))
        return;
    sm_location_t *loc = sm_location_current();
    if (loc->sp == loc->stack || loc->sp->region != region || loc->closed)
        return; /* its enter was not recorded */
    uint64_t t = sm_clock_now();
    if (error && sm_gpu_host_ready()) {
        sm_attr_value_t attr = {sm_gpu_attr_error, (uint64_t)error};
        sm_event_leave_attrs(loc, region, t, &attr, 1);
    } else {
        sm_event_leave_top(loc, t);
    }
}

/* ---------------------------------------------------------------- end of run */

int sm_gpu_on_flush(sm_gpu_flush_fn fn)
{
    if (!fn)
        return -1;
    pthread_mutex_lock(&sm_gpu_lock);
    int rc = -1;
    if (sm_gpu_n_flushes < SM_GPU_MAX_FLUSH) {
        sm_gpu_flushes[sm_gpu_n_flushes++] = fn;
        rc = 0;
    }
    sm_gpu_hooked = 1;
    pthread_mutex_unlock(&sm_gpu_lock);
    return rc;
}

/* Before the locations close: every backend hands over what it still holds;
 * then no more batches are taken, and losses become a note. */
static void sm_gpu_finalize_hook(const sm_run_info_t *run)
{
    (void)run;
    pthread_mutex_lock(&sm_gpu_lock);
    if (!sm_gpu_hooked) { /* no GPU backend with a flush in this process */
        pthread_mutex_unlock(&sm_gpu_lock);
        sm_gpu_memory_end();
        return;
    }
    uint32_t n = sm_gpu_n_flushes;
    sm_gpu_flush_fn fns[SM_GPU_MAX_FLUSH];
    memcpy(fns, sm_gpu_flushes, sizeof fns);
    pthread_mutex_unlock(&sm_gpu_lock);
    sm_gpu_flushing = 1;
    for (uint32_t i = 0; i < n; i++)
        fns[i]();
    sm_gpu_closing_done = 1;
    sm_gpu_flushing = 0;
    sm_gpu_memory_end(); /* every allocation and free is in */
    uint64_t dropped = sm_gpu_dropped_count();
    char text[160];
    snprintf(text, sizeof text, "%" PRIu64, dropped);
    sm_runtime_metadata_set("gpu_dropped_records", text);
    if (dropped) {
        snprintf(text, sizeof text,
                 "GPU: %" PRIu64 " activity records were lost (not in the trace or profile)",
                 dropped);
        sm_runtime_add_note(text);
    }
}

/* ---------------------------------------------------------------- records in time order */

typedef struct sm_gpu_sorter {
    uint8_t *data;
    size_t len, cap;
    size_t *offsets;
    size_t n, ncap;
    int oom;
} sm_gpu_sorter_t;

static int sm_gpu_collect(const sm_record_t *rec, void *arg)
{
    sm_gpu_sorter_t *s = arg;
    size_t size = sm_record_size(rec);
    if (s->len + size > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 65536;
        while (cap < s->len + size)
            cap *= 2;
        uint8_t *d = realloc(s->data, cap);
        if (!d) {
            s->oom = 1;
            return 1;
        }
        s->data = d;
        s->cap = cap;
    }
    if (s->n == s->ncap && SM_GROW(s->offsets, s->ncap, 4096) != 0) {
        s->oom = 1;
        return 1;
    }
    memcpy(s->data + s->len, rec, size);
    s->offsets[s->n++] = s->len;
    s->len += size;
    return 0;
}

static const uint8_t *sm_gpu_sort_base;

/* By time, then by arrival (offsets grow with arrival): a stable order. */
static int sm_gpu_compare(const void *x, const void *y)
{
    size_t a = *(const size_t *)x, b = *(const size_t *)y;
    uint64_t ta, tb;
    memcpy(&ta, sm_gpu_sort_base + a, sizeof ta);
    memcpy(&tb, sm_gpu_sort_base + b, sizeof tb);
    if (ta != tb)
        return ta < tb ? -1 : 1;
    return a < b ? -1 : a > b;
}

int sm_gpu_for_each_in_order(int (*source)(void *ctx, uint32_t i, sm_record_fn fn, void *arg),
                             void *ctx, uint32_t i, sm_record_fn fn, void *arg)
{
    sm_gpu_sorter_t s = {0};
    int rc = source(ctx, i, sm_gpu_collect, &s);
    if (s.oom) {
        free(s.data);
        free(s.offsets);
        return -1;
    }
    /* The writer runs on one thread at the end: a static base is enough. */
    sm_gpu_sort_base = s.data;
    qsort(s.offsets, s.n, sizeof *s.offsets, sm_gpu_compare);
    int out = 0;
    for (size_t k = 0; k < s.n && !out; k++) {
        /* Records keep their 8-byte alignment in the collected copy. */
        out = fn((const sm_record_t *)(const void *)(s.data + s.offsets[k]), arg);
    }
    free(s.data);
    free(s.offsets);
    return out ? out : rc;
}

const sm_subsystem_t sm_gpu_subsystem = {
    .name = "GPU activity",
    .flush = sm_gpu_finalize_hook, /* the backends' last records, then the losses */
};
