/* GPU memory: the accounting and the process's side of it (gpu_memory.h). */
#include "gpu_memory.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "location.h"
#include "metrics.h"
#include "profile.h"
#include "runtime.h"
#include "sig_hold.h"
#include "../util/bytes.h"

static const char *const sm_gpu_mem_kind_names[SM_GPU_MEM_KIND_COUNT] = {
    "device", "managed", "pinned host", "static", "other"};

const char *sm_gpu_mem_kind_name(sm_gpu_mem_kind_t kind)
{
    return (unsigned)kind < SM_GPU_MEM_KIND_COUNT ? sm_gpu_mem_kind_names[kind] : "?";
}

/* ---------------------------------------------------------------- the accounting */

/* The blocks still allocated: open addressing on the address, deletion by
 * backward shift (no tombstones), grown at half full. */
typedef struct sm_gmem_slot {
    uint64_t address; /* 0: empty */
    uint64_t bytes, time;
    const void *path;
    uint32_t device, kind;
} sm_gmem_slot_t;

struct sm_gmem {
    sm_gmem_figures_t f[SM_GMEM_MAX_DEVICES][SM_GPU_MEM_KIND_COUNT];
    uint32_t n_devices;
    uint32_t api_vendors; /* 1 << vendor: its API layer reports */
    uint8_t context_gone[SM_GMEM_MAX_DEVICES]; /* DEVICE_END seen, no DEVICE_BEGIN since */
    sm_gmem_counts_t counts;
    sm_gmem_slot_t *slots;
    size_t cap, used; /* cap: a power of two */
};

sm_gmem_t *sm_gmem_new(void)
{
    return calloc(1, sizeof(sm_gmem_t));
}

void sm_gmem_delete(sm_gmem_t *g)
{
    if (!g)
        return;
    free(g->slots);
    free(g);
}

void sm_gmem_api_source(sm_gmem_t *g, uint32_t vendor)
{
    if (vendor < 32)
        g->api_vendors |= 1u << vendor;
}

static size_t sm_gmem_home(const sm_gmem_t *g, uint64_t address)
{
    uint64_t h = address * 0x9E3779B97F4A7C15ull;
    return (size_t)(h ^ h >> 29) & (g->cap - 1);
}

static sm_gmem_slot_t *sm_gmem_find(const sm_gmem_t *g, uint64_t address)
{
    if (!g->cap)
        return NULL;
    for (size_t i = sm_gmem_home(g, address);; i = (i + 1) & (g->cap - 1)) {
        if (g->slots[i].address == address)
            return &g->slots[i];
        if (!g->slots[i].address)
            return NULL;
    }
}

static int sm_gmem_grow(sm_gmem_t *g)
{
    size_t cap = g->cap ? 2 * g->cap : 1024;
    sm_gmem_slot_t *old = g->slots, *s = calloc(cap, sizeof *s);
    if (!s)
        return -1;
    size_t old_cap = g->cap;
    g->slots = s;
    g->cap = cap;
    for (size_t k = 0; k < old_cap; k++) {
        if (!old[k].address)
            continue;
        size_t i = sm_gmem_home(g, old[k].address);
        while (s[i].address)
            i = (i + 1) & (cap - 1);
        s[i] = old[k];
    }
    free(old);
    return 0;
}

static sm_gmem_slot_t *sm_gmem_insert(sm_gmem_t *g, uint64_t address)
{
    if (2 * (g->used + 1) > g->cap && sm_gmem_grow(g) != 0)
        return NULL;
    size_t i = sm_gmem_home(g, address);
    while (g->slots[i].address)
        i = (i + 1) & (g->cap - 1);
    g->used++;
    g->slots[i].address = address;
    return &g->slots[i];
}

static void sm_gmem_remove(sm_gmem_t *g, sm_gmem_slot_t *s)
{
    size_t hole = (size_t)(s - g->slots), mask = g->cap - 1;
    g->slots[hole].address = 0;
    g->used--;
    /* Later entries of the probe chain move into the hole unless their
     * home lies cyclically in (hole, j]. */
    for (size_t j = (hole + 1) & mask; g->slots[j].address; j = (j + 1) & mask) {
        size_t k = sm_gmem_home(g, g->slots[j].address);
        if (hole <= j ? (hole < k && k <= j) : (hole < k || k <= j))
            continue;
        g->slots[hole] = g->slots[j];
        g->slots[j].address = 0;
        hole = j;
    }
}

static void sm_gmem_take_block(sm_gmem_t *g, const sm_gmem_slot_t *s)
{
    sm_gmem_figures_t *f = &g->f[s->device][s->kind];
    f->in_use -= s->bytes;
    f->blocks--;
}

sm_gmem_status_t sm_gmem_apply(sm_gmem_t *g, const sm_gpu_mem_op_t *op, const void *path,
                               sm_gmem_result_t *out)
{
    sm_gmem_result_t r;
    memset(&r, 0, sizeof r);
    r.device = op->device;
    r.kind = op->kind;
    r.bytes = op->bytes;
    if (op->level != SM_GPU_MEM_LEVEL_API && op->vendor < 32 &&
        (g->api_vendors >> op->vendor & 1)) {
        g->counts.ignored++;
        r.status = SM_GMEM_IGNORED;
    } else if (op->what == SM_GPU_MEM_DEVICE_END || op->what == SM_GPU_MEM_DEVICE_BEGIN) {
        if (op->device < SM_GMEM_MAX_DEVICES) {
            g->context_gone[op->device] = op->what == SM_GPU_MEM_DEVICE_END;
            r.status = SM_GMEM_DEVICE_STATE;
        } else {
            g->counts.invalid++;
            r.status = SM_GMEM_INVALID;
        }
    } else if (op->what != SM_GPU_MEM_ALLOC && op->what != SM_GPU_MEM_FREE) {
        g->counts.invalid++;
        r.status = SM_GMEM_INVALID;
    } else if (!op->address) {
        r.status = SM_GMEM_NULL;
    } else if (op->what == SM_GPU_MEM_ALLOC) {
        sm_gmem_slot_t *s = NULL;
        if (op->device >= SM_GMEM_MAX_DEVICES || op->kind >= SM_GPU_MEM_KIND_COUNT) {
            g->counts.invalid++;
            r.status = SM_GMEM_INVALID;
        } else if ((s = sm_gmem_find(g, op->address)) != NULL) {
            /* Its free never came (a layer we do not see): the old block
             * goes, the new one takes its place. */
            g->counts.replaced++;
            sm_gmem_take_block(g, s);
        } else if ((s = sm_gmem_insert(g, op->address)) == NULL) {
            g->counts.invalid++;
            r.status = SM_GMEM_INVALID;
        }
        if (s) {
            s->bytes = op->bytes;
            s->time = op->time;
            s->path = path;
            s->device = op->device;
            s->kind = op->kind;
            sm_gmem_figures_t *f = &g->f[op->device][op->kind];
            f->in_use += op->bytes;
            f->blocks++;
            f->allocs++;
            f->bytes_allocated += op->bytes;
            if (f->in_use > f->peak) {
                f->peak = f->in_use;
                f->peak_time = op->time;
            }
            if (op->device >= g->n_devices)
                g->n_devices = op->device + 1;
            r.in_use = f->in_use;
            r.status = SM_GMEM_TAKEN;
        }
    } else {
        sm_gmem_slot_t *s = sm_gmem_find(g, op->address);
        if (!s) {
            g->counts.unknown_frees++;
            g->counts.unknown_free_bytes += op->bytes;
            r.status = SM_GMEM_UNKNOWN_FREE;
        } else if (g->context_gone[s->device]) {
            /* The context's teardown, not the program: never freed. */
            r.device = s->device;
            r.kind = s->kind;
            r.bytes = s->bytes;
            g->counts.released_with_context++;
            r.status = SM_GMEM_CONTEXT_GONE;
        } else {
            r.device = s->device;
            r.kind = s->kind;
            r.bytes = s->bytes;
            sm_gmem_take_block(g, s);
            sm_gmem_figures_t *f = &g->f[s->device][s->kind];
            f->frees++;
            r.in_use = f->in_use;
            sm_gmem_remove(g, s);
            r.status = SM_GMEM_TAKEN;
        }
    }
    if (out)
        *out = r;
    return (sm_gmem_status_t)r.status;
}

sm_gmem_figures_t sm_gmem_figures(const sm_gmem_t *g, sm_gpu_device_t device,
                                  sm_gpu_mem_kind_t kind)
{
    sm_gmem_figures_t z;
    if (g && device < SM_GMEM_MAX_DEVICES && (unsigned)kind < SM_GPU_MEM_KIND_COUNT)
        return g->f[device][kind];
    memset(&z, 0, sizeof z);
    return z;
}

uint32_t sm_gmem_devices(const sm_gmem_t *g)
{
    return g ? g->n_devices : 0;
}

sm_gmem_counts_t sm_gmem_counts(const sm_gmem_t *g)
{
    sm_gmem_counts_t z;
    if (g)
        return g->counts;
    memset(&z, 0, sizeof z);
    return z;
}

/* Larger first, then earlier, then lower address: one order whatever the
 * table's layout. */
static int sm_gmem_before(const sm_gmem_slot_t *a, const sm_gmem_block_t *b)
{
    if (a->bytes != b->bytes)
        return a->bytes > b->bytes;
    if (a->time != b->time)
        return a->time < b->time;
    return a->address < b->address;
}

size_t sm_gmem_unfreed(const sm_gmem_t *g, uint32_t kinds_mask, sm_gmem_block_t *out, size_t max)
{
    size_t n = 0;
    if (!g || !max)
        return 0;
    /* Insertion into the short sorted list: max is a handful. */
    for (size_t k = 0; k < g->cap; k++) {
        const sm_gmem_slot_t *s = &g->slots[k];
        if (!s->address || !(kinds_mask >> s->kind & 1))
            continue;
        size_t i = n < max ? n : max;
        while (i > 0 && sm_gmem_before(s, &out[i - 1]))
            i--;
        if (i >= max)
            continue;
        size_t keep = n < max ? n : max - 1;
        memmove(&out[i + 1], &out[i], (keep - i) * sizeof *out);
        out[i] = (sm_gmem_block_t){s->address, s->bytes, s->time, s->path, s->device, s->kind};
        if (n < max)
            n++;
    }
    return n;
}

/* ---------------------------------------------------------------- the process's accounting */

/* The key of a device's memory location among its streams (no vendor
 * stream id comes near it). */
#define SM_GMEM_STREAM_KEY (UINT64_MAX - 0x6d656d)

static pthread_mutex_t sm_gm_lock = PTHREAD_MUTEX_INITIALIZER;
static sm_gmem_t *sm_gm;
static sm_gpu_stream_t sm_gm_stream[SM_GMEM_MAX_DEVICES];       /* + 1; 0: not yet */
static sm_metric_id_t sm_gm_metric[SM_GMEM_MAX_DEVICES][SM_GPU_MEM_KIND_COUNT]; /* + 1 */
static sm_attribute_id_t sm_gm_attr_address, sm_gm_attr_allocated, sm_gm_attr_freed,
    sm_gm_attr_correlation;
static int sm_gm_noted;

/* "CUDA 0", "HIP 1": the device as its streams are named. */
static void sm_gm_device_label(sm_gpu_device_t device, char *out, size_t len)
{
    const sm_gpu_device_def_t *d = sm_gpu_device_get(device);
    if (d)
        snprintf(out, len, "%s %" PRIu32, d->vendor == SM_GPU_VENDOR_AMD ? "HIP" : "CUDA",
                 d->ordinal);
    else
        snprintf(out, len, "GPU %" PRIu32, device);
}

/* The accounting and the attributes, once (under the lock). */
static int sm_gm_ready_locked(void)
{
    if (sm_gm)
        return 0;
    sm_gm = sm_gmem_new();
    if (!sm_gm)
        return -1;
    sm_gm_attr_address = sm_attribute_define("memory address", SM_ATTR_INT64);
    sm_gm_attr_allocated = sm_attribute_define("allocated bytes", SM_ATTR_INT64);
    sm_gm_attr_freed = sm_attribute_define("freed bytes", SM_ATTR_INT64);
    sm_gm_attr_correlation = sm_attribute_define("correlation id", SM_ATTR_INT64);
    return 0;
}

static sm_metric_id_t sm_gm_metric_of(sm_gpu_device_t device, uint32_t kind)
{
    if (sm_gm_metric[device][kind])
        return sm_gm_metric[device][kind] - 1;
    char label[32], name[96];
    sm_gm_device_label(device, label, sizeof label);
    snprintf(name, sizeof name, "%s memory in use: %s", label,
             sm_gpu_mem_kind_name((sm_gpu_mem_kind_t)kind));
    sm_metric_id_t m = sm_metric_define(name, "bytes");
    if (m != SM_INVALID_ID)
        sm_gm_metric[device][kind] = m + 1;
    return m;
}

static sm_location_t *sm_gm_location(sm_gpu_device_t device)
{
    if (!sm_gm_stream[device]) {
        char label[32], name[48];
        sm_gm_device_label(device, label, sizeof label);
        snprintf(name, sizeof name, "%s memory", label);
        sm_gpu_stream_t s = sm_gpu_stream_define(device, SM_GMEM_STREAM_KEY, name);
        if (s == SM_GPU_NONE)
            return NULL;
        sm_gm_stream[device] = s + 1;
        sm_location_t *loc = sm_gpu_stream_location(s);
        if (loc) {
            /* A timeline only: no call paths of its own in the profile. */
            pthread_mutex_lock(&loc->lock);
            loc->profiling = 0;
            pthread_mutex_unlock(&loc->lock);
        }
    }
    return sm_gpu_stream_location(sm_gm_stream[device] - 1);
}

/* The Metric event of an accounted operation on the device's memory
 * location (sorted by time when written, as every stream). */
static void sm_gm_trace(const sm_gpu_mem_op_t *op, const sm_gmem_result_t *r, sm_metric_id_t m)
{
    sm_metric_def_t def;
    sm_location_t *loc = sm_gm_location(r->device);
    if (!loc || sm_metric_get(m, &def) != 0)
        return;
    uint64_t w[2 + 2 * 3];
    uint16_t n = 0;
    w[0] = r->in_use;
    w[1] = def.unit;
    sm_record_attr_t *a = (sm_record_attr_t *)(void *)&w[2];
    a[n].attribute = sm_gm_attr_address;
    a[n++].value.raw = op->address;
    a[n].attribute = op->what == SM_GPU_MEM_ALLOC ? sm_gm_attr_allocated : sm_gm_attr_freed;
    a[n++].value.raw = r->bytes;
    if (op->correlation) {
        a[n].attribute = sm_gm_attr_correlation;
        a[n++].value.raw = op->correlation;
    }
    pthread_mutex_lock(&loc->lock);
    if (!loc->closed) {
        if (loc->tracing)
            sm_event_record(loc, SM_REC_METRIC_NAMED_ATTRS, def.name, n, op->time, w,
                            (uint8_t)(2 + 2 * n));
        else
            sm_event_count(loc, SM_REC_METRIC_NAMED_ATTRS, 2u + 2u * n);
    }
    pthread_mutex_unlock(&loc->lock);
}

size_t sm_gpu_memory(const sm_gpu_mem_op_t *ops, size_t n, size_t stride)
{
    size_t taken = 0;
    if (!ops || !n || !sm_gpu_taking())
        return 0;
    if (!stride)
        stride = sizeof *ops;
    sm_sig_hold(SM_SIG_LOCKS);
    pthread_mutex_lock(&sm_gm_lock);
    if (sm_gm_ready_locked() == 0) {
        for (size_t i = 0; i < n; i++) {
            sm_gpu_mem_op_t op;
            memset(&op, 0, sizeof op);
            memcpy(&op, (const uint8_t *)ops + i * stride, stride < sizeof op ? stride : sizeof op);
            if (op.what == SM_GPU_MEM_ALLOC && op.device >= sm_gpu_device_count())
                op.device = SM_GMEM_MAX_DEVICES; /* not a device of the layer: invalid */
            const void *path = op.what == SM_GPU_MEM_ALLOC && op.correlation
                                   ? (const void *)sm_gpu_correlation_node(op.correlation)
                                   : NULL;
            sm_gmem_result_t r;
            if (sm_gmem_apply(sm_gm, &op, path, &r) != SM_GMEM_TAKEN)
                continue;
            taken++;
            sm_metric_id_t m = sm_gm_metric_of(r.device, r.kind);
            if (m == SM_INVALID_ID)
                continue;
            sm_metric_sample(m, r.in_use);
            sm_gm_trace(&op, &r, m);
        }
    }
    pthread_mutex_unlock(&sm_gm_lock);
    sm_sig_release();
    return taken;
}

void sm_gpu_memory_api_source(uint32_t vendor)
{
    sm_sig_hold(SM_SIG_LOCKS);
    pthread_mutex_lock(&sm_gm_lock);
    if (sm_gm_ready_locked() == 0)
        sm_gmem_api_source(sm_gm, vendor);
    pthread_mutex_unlock(&sm_gm_lock);
    sm_sig_release();
}

uint64_t sm_gpu_memory_block_bytes(uint64_t address)
{
    uint64_t bytes = 0;
    if (!address)
        return 0;
    sm_sig_hold(SM_SIG_LOCKS);
    pthread_mutex_lock(&sm_gm_lock);
    const sm_gmem_slot_t *s = sm_gm ? sm_gmem_find(sm_gm, address) : NULL;
    if (s)
        bytes = s->bytes;
    pthread_mutex_unlock(&sm_gm_lock);
    sm_sig_release();
    return bytes;
}

void sm_gpu_memory_after_daemon_child(void)
{
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    sm_gm_lock = m;
}

/* Every kind but module globals, which go with their code. */
#define SM_GM_LEAK_KINDS                                                                  \
    ((1u << SM_GPU_MEM_KIND_COUNT) - 1 - (1u << SM_GPU_MEM_STATIC))

void sm_gpu_memory_end(void)
{
    uint64_t blocks = 0, bytes = 0;
    sm_gmem_counts_t c;
    pthread_mutex_lock(&sm_gm_lock);
    if (!sm_gm || sm_gm_noted) {
        pthread_mutex_unlock(&sm_gm_lock);
        return;
    }
    sm_gm_noted = 1;
    for (uint32_t d = 0; d < sm_gmem_devices(sm_gm); d++)
        for (uint32_t k = 0; k < SM_GPU_MEM_KIND_COUNT; k++)
            if (SM_GM_LEAK_KINDS >> k & 1) {
                blocks += sm_gm->f[d][k].blocks;
                bytes += sm_gm->f[d][k].in_use;
            }
    c = sm_gmem_counts(sm_gm);
    pthread_mutex_unlock(&sm_gm_lock);
    char text[256];
    if (blocks) {
        snprintf(text, sizeof text,
                 "GPU memory: %" PRIu64 " blocks (%" PRIu64
                 " bytes) were never freed (the summary's GPU section lists the largest)",
                 blocks, bytes);
        sm_runtime_add_note(text);
    }
    if (c.unknown_frees) {
        snprintf(text, sizeof text,
                 "GPU memory: %" PRIu64 " frees of blocks allocated before measurement began "
                 "(or unseen) were not subtracted",
                 c.unknown_frees);
        sm_runtime_add_note(text);
    }
}

/* ---------------------------------------------------------------- the figures in bytes */

/* Appended to the metrics' bytes: a tag, then the section's length. */
#define SM_GM_TAG 0x4d454d47u /* "GMEM" */

static void sm_gm_put_string(sm_wbuf_t *w, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    sm_put_u32(w, (uint32_t)n);
    sm_put_bytes(w, s, n);
}

/* "main > solve > cudaMalloc": the regions from the root down to node. */
static void sm_gm_path(const sm_profile_node_t *node, char *out, size_t len)
{
    const sm_profile_node_t *chain[128];
    uint32_t n = 0;
    out[0] = '\0';
    for (const sm_profile_node_t *p = node; p && p->parent && n < 128; p = p->parent)
        chain[n++] = p;
    size_t at = 0;
    while (n-- && at + 1 < len) {
        const sm_region_def_t *r = sm_region_get(chain[n]->region);
        const char *name = r ? sm_string_get(r->name) : NULL;
        int k = snprintf(out + at, len - at, "%s%s", at ? " > " : "", name ? name : "?");
        if (k < 0)
            break;
        at += (size_t)k < len - at ? (size_t)k : len - at - 1;
    }
}

void sm_gpu_memory_serialize(sm_wbuf_t *w)
{
    sm_sig_hold(SM_SIG_LOCKS);
    pthread_mutex_lock(&sm_gm_lock);
    if (!sm_gm || !sm_gmem_devices(sm_gm)) {
        pthread_mutex_unlock(&sm_gm_lock);
        sm_sig_release();
        return;
    }
    sm_wbuf_t s = {0};
    uint32_t rows = 0;
    for (uint32_t d = 0; d < sm_gmem_devices(sm_gm); d++)
        for (uint32_t k = 0; k < SM_GPU_MEM_KIND_COUNT; k++)
            rows += sm_gm->f[d][k].allocs > 0;
    if (rows > SM_GMEM_MAX_ROWS)
        rows = SM_GMEM_MAX_ROWS;
    sm_put_u32(&s, rows);
    uint32_t written = 0;
    for (uint32_t d = 0; d < sm_gmem_devices(sm_gm); d++)
        for (uint32_t k = 0; k < SM_GPU_MEM_KIND_COUNT && written < rows; k++) {
            const sm_gmem_figures_t *f = &sm_gm->f[d][k];
            if (!f->allocs)
                continue;
            char label[32];
            const sm_gpu_device_def_t *def = sm_gpu_device_get(d);
            sm_gm_device_label(d, label, sizeof label);
            sm_gm_put_string(&s, label);
            sm_gm_put_string(&s, def ? def->name : "");
            sm_put_u32(&s, k);
            sm_put_u64(&s, f->in_use);
            sm_put_u64(&s, f->peak);
            sm_put_u64(&s, f->peak_time);
            sm_put_u64(&s, f->allocs);
            sm_put_u64(&s, f->frees);
            sm_put_u64(&s, f->bytes_allocated);
            sm_put_u64(&s, f->blocks);
            written++;
        }
    sm_gmem_block_t top[SM_GMEM_TOP];
    size_t n_top = sm_gmem_unfreed(sm_gm, SM_GM_LEAK_KINDS, top, SM_GMEM_TOP);
    sm_put_u32(&s, (uint32_t)n_top);
    for (size_t i = 0; i < n_top; i++) {
        char label[32], path[512];
        sm_gm_device_label(top[i].device, label, sizeof label);
        sm_gm_path(top[i].path, path, sizeof path);
        sm_gm_put_string(&s, label);
        sm_put_u32(&s, top[i].kind);
        sm_put_u64(&s, top[i].address);
        sm_put_u64(&s, top[i].bytes);
        sm_gm_put_string(&s, path);
    }
    sm_gmem_counts_t c = sm_gmem_counts(sm_gm);
    sm_put_u64(&s, c.unknown_frees);
    sm_put_u64(&s, c.unknown_free_bytes);
    sm_put_u64(&s, c.ignored);
    sm_put_u64(&s, c.invalid);
    sm_put_u64(&s, c.replaced);
    sm_put_u64(&s, c.released_with_context);
    pthread_mutex_unlock(&sm_gm_lock);
    sm_sig_release();
    if (s.oom) {
        free(s.p);
        w->oom = true;
        return;
    }
    sm_put_u32(w, SM_GM_TAG);
    sm_put_u64(w, s.len);
    sm_put_bytes(w, s.p, s.len);
    free(s.p);
}

static void sm_gm_get_string(sm_rbuf_t *r, char *out, size_t cap)
{
    uint32_t n = sm_get_u32(r);
    const uint8_t *p = sm_get_bytes(r, n);
    size_t keep = n < cap ? n : cap - 1;
    if (p)
        memcpy(out, p, keep);
    out[p ? keep : 0] = '\0';
}

int sm_gpu_memory_read(const void *metrics_blob, uint64_t len, sm_gmem_process_t *out)
{
    uint64_t tail_len = 0;
    const uint8_t *tail = sm_metrics_tail(metrics_blob, len, &tail_len);
    memset(out, 0, sizeof *out);
    if (!tail)
        return -1;
    sm_rbuf_t r = {tail, tail + tail_len, false};
    /* Sections: a tag and a length each; an unknown one is skipped. */
    while (sm_remaining(&r) >= 12) {
        uint32_t tag = sm_get_u32(&r);
        uint64_t n = sm_get_u64(&r);
        const uint8_t *body = sm_get_bytes(&r, n);
        if (!body)
            return -1;
        if (tag != SM_GM_TAG)
            continue;
        sm_rbuf_t b = {body, body + n, false};
        uint32_t rows = sm_get_u32(&b);
        if (rows > SM_GMEM_MAX_ROWS)
            return -1;
        for (uint32_t i = 0; i < rows && !b.bad; i++) {
            sm_gmem_row_t *row = &out->rows[i];
            sm_gm_get_string(&b, row->device, sizeof row->device);
            sm_gm_get_string(&b, row->device_name, sizeof row->device_name);
            row->kind = sm_get_u32(&b);
            row->f.in_use = sm_get_u64(&b);
            row->f.peak = sm_get_u64(&b);
            row->f.peak_time = sm_get_u64(&b);
            row->f.allocs = sm_get_u64(&b);
            row->f.frees = sm_get_u64(&b);
            row->f.bytes_allocated = sm_get_u64(&b);
            row->f.blocks = sm_get_u64(&b);
            if (row->kind >= SM_GPU_MEM_KIND_COUNT)
                return -1;
        }
        out->n_rows = rows;
        uint32_t n_top = sm_get_u32(&b);
        if (n_top > SM_GMEM_TOP)
            return -1;
        for (uint32_t i = 0; i < n_top && !b.bad; i++) {
            sm_gmem_top_t *t = &out->top[i];
            sm_gm_get_string(&b, t->device, sizeof t->device);
            t->kind = sm_get_u32(&b);
            t->address = sm_get_u64(&b);
            t->bytes = sm_get_u64(&b);
            sm_gm_get_string(&b, t->path, sizeof t->path);
            if (t->kind >= SM_GPU_MEM_KIND_COUNT)
                return -1;
        }
        out->n_top = n_top;
        out->counts.unknown_frees = sm_get_u64(&b);
        out->counts.unknown_free_bytes = sm_get_u64(&b);
        out->counts.ignored = sm_get_u64(&b);
        out->counts.invalid = sm_get_u64(&b);
        out->counts.replaced = sm_get_u64(&b);
        out->counts.released_with_context = sm_get_u64(&b);
        return b.bad ? -1 : 1;
    }
    return r.bad ? -1 : 0;
}
