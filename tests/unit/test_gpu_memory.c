/* GPU memory accounting (core/gpu_memory.h) on planted sequences: bytes in
 * use and high-water marks per device and kind, frees of unknown blocks,
 * stream-ordered (pool) allocations, several devices, a lower layer ignored
 * once the API layer reports, blocks replaced, null pointers, the largest
 * blocks never freed, and a table that grows and shrinks through many
 * blocks.  Then the process's side through the adapter table, as a backend
 * uses it, to the end of the run: the trace's memory location, the
 * metrics, the notes and the summary's GPU memory section. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/adapter_api.h"
#include "core/clock.h"
#include "core/events.h"
#include "core/gpu_memory.h"
#include "core/location.h"
#include "core/metrics.h"
#include "core/runtime.h"
#include "unit.h"

const sm_adapter_api_t *sysmeasure_adapter_api(unsigned version);

#define MiB (1024ull * 1024ull)

static sm_gpu_mem_op_t op(uint32_t what, uint32_t device, uint32_t kind, uint64_t address,
                          uint64_t bytes, uint64_t time)
{
    sm_gpu_mem_op_t o;
    memset(&o, 0, sizeof o);
    o.what = what;
    o.device = device;
    o.kind = kind;
    o.address = address;
    o.bytes = bytes;
    o.time = time;
    o.vendor = SM_GPU_VENDOR_NVIDIA;
    o.level = SM_GPU_MEM_LEVEL_API;
    return o;
}

static sm_gmem_status_t apply(sm_gmem_t *g, sm_gpu_mem_op_t o, sm_gmem_result_t *r)
{
    return sm_gmem_apply(g, &o, NULL, r);
}

/* The planted CUDA program's sequence (tests/gpu/gpu_memory_app.cu): 3 x 64
 * MiB, one freed, 32 MiB from the stream-ordered pool and freed, 16 MiB
 * managed, 8 MiB pinned, 2 device blocks never freed. */
static void test_planted_sequence(void)
{
    sm_gmem_t *g = sm_gmem_new();
    sm_gmem_result_t r;
    uint64_t t = 1000;
    CHECK_EQ_U(apply(g, op(SM_GPU_MEM_ALLOC, 0, SM_GPU_MEM_DEVICE, 0x10000000, 64 * MiB, t++), &r),
               SM_GMEM_TAKEN);
    CHECK_EQ_U(r.in_use, 64 * MiB);
    apply(g, op(SM_GPU_MEM_ALLOC, 0, SM_GPU_MEM_DEVICE, 0x20000000, 64 * MiB, t++), &r);
    apply(g, op(SM_GPU_MEM_ALLOC, 0, SM_GPU_MEM_DEVICE, 0x30000000, 64 * MiB, t++), &r);
    CHECK_EQ_U(r.in_use, 192 * MiB);
    /* a free names the address only: the block's size, device and kind */
    CHECK_EQ_U(apply(g, op(SM_GPU_MEM_FREE, SM_GPU_NONE, 0, 0x20000000, 0, t++), &r),
               SM_GMEM_TAKEN);
    CHECK_EQ_U(r.bytes, 64 * MiB);
    CHECK_EQ_U(r.device, 0);
    CHECK_EQ_U(r.kind, SM_GPU_MEM_DEVICE);
    CHECK_EQ_U(r.in_use, 128 * MiB);
    sm_gpu_mem_op_t a = op(SM_GPU_MEM_ALLOC, 0, SM_GPU_MEM_DEVICE, 0x40000000, 32 * MiB, t++);
    a.flags = SM_GPU_MEM_ASYNC;
    CHECK_EQ_U(apply(g, a, &r), SM_GMEM_TAKEN);
    CHECK_EQ_U(r.in_use, 160 * MiB);
    sm_gpu_mem_op_t f = op(SM_GPU_MEM_FREE, 0, SM_GPU_MEM_DEVICE, 0x40000000, 32 * MiB, t++);
    f.flags = SM_GPU_MEM_ASYNC;
    CHECK_EQ_U(apply(g, f, &r), SM_GMEM_TAKEN);
    CHECK_EQ_U(r.in_use, 128 * MiB);
    apply(g, op(SM_GPU_MEM_ALLOC, 0, SM_GPU_MEM_MANAGED, 0x50000000, 16 * MiB, t++), &r);
    CHECK_EQ_U(r.in_use, 16 * MiB); /* kinds apart */
    apply(g, op(SM_GPU_MEM_ALLOC, 0, SM_GPU_MEM_PINNED, 0x60000000, 8 * MiB, t++), &r);
    CHECK_EQ_U(r.in_use, 8 * MiB);
    apply(g, op(SM_GPU_MEM_FREE, SM_GPU_NONE, 0, 0x50000000, 0, t++), &r);
    apply(g, op(SM_GPU_MEM_FREE, SM_GPU_NONE, 0, 0x60000000, 0, t++), &r);

    sm_gmem_figures_t d = sm_gmem_figures(g, 0, SM_GPU_MEM_DEVICE);
    CHECK_EQ_U(d.in_use, 128 * MiB);
    CHECK_EQ_U(d.peak, 192 * MiB);
    CHECK_EQ_U(d.peak_time, 1002);
    CHECK_EQ_U(d.allocs, 4);
    CHECK_EQ_U(d.frees, 2);
    CHECK_EQ_U(d.blocks, 2);
    CHECK_EQ_U(d.bytes_allocated, 224 * MiB);
    sm_gmem_figures_t m = sm_gmem_figures(g, 0, SM_GPU_MEM_MANAGED);
    CHECK_EQ_U(m.peak, 16 * MiB);
    CHECK_EQ_U(m.in_use, 0);
    CHECK_EQ_U(m.blocks, 0);
    CHECK_EQ_U(sm_gmem_figures(g, 0, SM_GPU_MEM_PINNED).peak, 8 * MiB);
    CHECK_EQ_U(sm_gmem_figures(g, 0, SM_GPU_MEM_STATIC).allocs, 0);
    CHECK_EQ_U(sm_gmem_devices(g), 1);

    sm_gmem_block_t top[4];
    size_t n = sm_gmem_unfreed(g, ~0u, top, 4);
    CHECK_EQ_U(n, 2);
    CHECK_EQ_U(top[0].address, 0x10000000); /* equal sizes: the earlier first */
    CHECK_EQ_U(top[1].address, 0x30000000);
    CHECK_EQ_U(top[0].bytes, 64 * MiB);
    sm_gmem_counts_t c = sm_gmem_counts(g);
    CHECK_EQ_U(c.unknown_frees + c.ignored + c.invalid + c.replaced, 0);
    sm_gmem_delete(g);
}

/* A free of a block allocated before measurement began (or by a layer we
 * do not see): counted, never subtracted, so in use never goes negative. */
static void test_unknown_free(void)
{
    sm_gmem_t *g = sm_gmem_new();
    sm_gmem_result_t r;
    apply(g, op(SM_GPU_MEM_ALLOC, 0, SM_GPU_MEM_DEVICE, 0x1000, 100, 1), &r);
    CHECK_EQ_U(apply(g, op(SM_GPU_MEM_FREE, 0, SM_GPU_MEM_DEVICE, 0x9000, 4096, 2), &r),
               SM_GMEM_UNKNOWN_FREE);
    CHECK_EQ_U(apply(g, op(SM_GPU_MEM_FREE, SM_GPU_NONE, 0, 0xa000, 0, 3), &r),
               SM_GMEM_UNKNOWN_FREE);
    /* the same block freed twice: the second is unknown */
    CHECK_EQ_U(apply(g, op(SM_GPU_MEM_FREE, SM_GPU_NONE, 0, 0x1000, 0, 4), &r), SM_GMEM_TAKEN);
    CHECK_EQ_U(apply(g, op(SM_GPU_MEM_FREE, SM_GPU_NONE, 0, 0x1000, 0, 5), &r),
               SM_GMEM_UNKNOWN_FREE);
    sm_gmem_counts_t c = sm_gmem_counts(g);
    CHECK_EQ_U(c.unknown_frees, 3);
    CHECK_EQ_U(c.unknown_free_bytes, 4096);
    sm_gmem_figures_t f = sm_gmem_figures(g, 0, SM_GPU_MEM_DEVICE);
    CHECK_EQ_U(f.in_use, 0);
    CHECK_EQ_U(f.peak, 100);
    CHECK_EQ_U(f.frees, 1);
    sm_gmem_delete(g);
}

/* Two devices, interleaved: each its own figures. */
static void test_devices(void)
{
    sm_gmem_t *g = sm_gmem_new();
    sm_gmem_result_t r;
    apply(g, op(SM_GPU_MEM_ALLOC, 0, SM_GPU_MEM_DEVICE, 0xa0000, 1000, 1), &r);
    apply(g, op(SM_GPU_MEM_ALLOC, 1, SM_GPU_MEM_DEVICE, 0xb0000, 5000, 2), &r);
    apply(g, op(SM_GPU_MEM_ALLOC, 0, SM_GPU_MEM_DEVICE, 0xa1000, 3000, 3), &r);
    CHECK_EQ_U(r.in_use, 4000);
    apply(g, op(SM_GPU_MEM_FREE, SM_GPU_NONE, 0, 0xb0000, 0, 4), &r);
    CHECK_EQ_U(r.device, 1);
    CHECK_EQ_U(r.in_use, 0);
    apply(g, op(SM_GPU_MEM_ALLOC, 1, SM_GPU_MEM_DEVICE, 0xb1000, 2000, 5), &r);
    CHECK_EQ_U(sm_gmem_figures(g, 0, SM_GPU_MEM_DEVICE).peak, 4000);
    CHECK_EQ_U(sm_gmem_figures(g, 1, SM_GPU_MEM_DEVICE).peak, 5000);
    CHECK_EQ_U(sm_gmem_figures(g, 1, SM_GPU_MEM_DEVICE).in_use, 2000);
    CHECK_EQ_U(sm_gmem_devices(g), 2);
    /* the largest never freed, across devices */
    sm_gmem_block_t top[2];
    CHECK_EQ_U(sm_gmem_unfreed(g, ~0u, top, 2), 2);
    CHECK_EQ_U(top[0].bytes, 3000);
    CHECK_EQ_U(top[1].bytes, 2000);
    CHECK_EQ_U(top[1].device, 1);
    sm_gmem_delete(g);
}

/* HSA below HIP: ignored once HIP reports; another vendor's lower layer is
 * not.  Invalid operations and null pointers change nothing. */
static void test_levels_and_invalid(void)
{
    sm_gmem_t *g = sm_gmem_new();
    sm_gmem_result_t r;
    sm_gpu_mem_op_t hsa = op(SM_GPU_MEM_ALLOC, 0, SM_GPU_MEM_DEVICE, 0x7000, 64, 1);
    hsa.vendor = SM_GPU_VENDOR_AMD;
    hsa.level = SM_GPU_MEM_LEVEL_RUNTIME;
    CHECK_EQ_U(apply(g, hsa, &r), SM_GMEM_TAKEN); /* no HIP layer yet */
    sm_gmem_api_source(g, SM_GPU_VENDOR_AMD);
    hsa.address = 0x8000;
    CHECK_EQ_U(apply(g, hsa, &r), SM_GMEM_IGNORED);
    sm_gpu_mem_op_t hip = hsa;
    hip.level = SM_GPU_MEM_LEVEL_API;
    CHECK_EQ_U(apply(g, hip, &r), SM_GMEM_TAKEN);
    sm_gpu_mem_op_t other = hsa;
    other.vendor = SM_GPU_VENDOR_NVIDIA;
    other.address = 0x9000;
    CHECK_EQ_U(apply(g, other, &r), SM_GMEM_TAKEN);
    CHECK_EQ_U(apply(g, op(SM_GPU_MEM_ALLOC, SM_GMEM_MAX_DEVICES, 0, 0xc000, 1, 2), &r),
               SM_GMEM_INVALID);
    CHECK_EQ_U(apply(g, op(SM_GPU_MEM_ALLOC, 0, SM_GPU_MEM_KIND_COUNT, 0xc000, 1, 2), &r),
               SM_GMEM_INVALID);
    CHECK_EQ_U(apply(g, op(7, 0, 0, 0xc000, 1, 2), &r), SM_GMEM_INVALID);
    CHECK_EQ_U(apply(g, op(SM_GPU_MEM_ALLOC, 0, SM_GPU_MEM_DEVICE, 0, 0, 3), &r), SM_GMEM_NULL);
    CHECK_EQ_U(apply(g, op(SM_GPU_MEM_FREE, SM_GPU_NONE, 0, 0, 0, 3), &r), SM_GMEM_NULL);
    sm_gmem_counts_t c = sm_gmem_counts(g);
    CHECK_EQ_U(c.ignored, 1);
    CHECK_EQ_U(c.invalid, 3);
    CHECK_EQ_U(c.unknown_frees, 0);
    CHECK_EQ_U(sm_gmem_figures(g, 0, SM_GPU_MEM_DEVICE).in_use, 64 * 3);
    /* an allocation at an address still allocated: its free was missed */
    CHECK_EQ_U(apply(g, op(SM_GPU_MEM_ALLOC, 0, SM_GPU_MEM_MANAGED, 0x7000, 10, 4), &r),
               SM_GMEM_TAKEN);
    CHECK_EQ_U(sm_gmem_counts(g).replaced, 1);
    CHECK_EQ_U(sm_gmem_figures(g, 0, SM_GPU_MEM_DEVICE).in_use, 64 * 2);
    CHECK_EQ_U(sm_gmem_figures(g, 0, SM_GPU_MEM_DEVICE).blocks, 2);
    CHECK_EQ_U(sm_gmem_figures(g, 0, SM_GPU_MEM_MANAGED).in_use, 10);
    /* module globals left out of the list on request */
    apply(g, op(SM_GPU_MEM_ALLOC, 0, SM_GPU_MEM_STATIC, 0xd000, 1 << 20, 5), &r);
    sm_gmem_block_t top[8];
    size_t n = sm_gmem_unfreed(g, ~0u & ~(1u << SM_GPU_MEM_STATIC), top, 8);
    CHECK_EQ_U(n, 3);
    CHECK(top[0].kind != SM_GPU_MEM_STATIC);
    CHECK_EQ_U(sm_gmem_unfreed(g, ~0u, top, 8), 4);
    CHECK_EQ_U(top[0].kind, SM_GPU_MEM_STATIC);
    sm_gmem_delete(g);
}

/* The device's context torn down (the CUDA runtime at exit, before
 * sysmeasure's end): what it releases stays as never freed; a new context
 * makes frees count again. */
static void test_context_end(void)
{
    sm_gmem_t *g = sm_gmem_new();
    sm_gmem_result_t r;
    apply(g, op(SM_GPU_MEM_ALLOC, 0, SM_GPU_MEM_DEVICE, 0x1000, 64, 1), &r);
    apply(g, op(SM_GPU_MEM_ALLOC, 0, SM_GPU_MEM_DEVICE, 0x2000, 32, 2), &r);
    apply(g, op(SM_GPU_MEM_ALLOC, 1, SM_GPU_MEM_DEVICE, 0x3000, 16, 3), &r);
    CHECK_EQ_U(apply(g, op(SM_GPU_MEM_DEVICE_END, 0, 0, 0, 0, 4), &r), SM_GMEM_DEVICE_STATE);
    CHECK_EQ_U(apply(g, op(SM_GPU_MEM_FREE, SM_GPU_NONE, 0, 0x1000, 64, 5), &r),
               SM_GMEM_CONTEXT_GONE);
    CHECK_EQ_U(r.bytes, 64);
    /* another device's context lives on */
    CHECK_EQ_U(apply(g, op(SM_GPU_MEM_FREE, SM_GPU_NONE, 0, 0x3000, 0, 6), &r), SM_GMEM_TAKEN);
    sm_gmem_figures_t f = sm_gmem_figures(g, 0, SM_GPU_MEM_DEVICE);
    CHECK_EQ_U(f.in_use, 96);
    CHECK_EQ_U(f.blocks, 2);
    CHECK_EQ_U(f.frees, 0);
    CHECK_EQ_U(sm_gmem_counts(g).released_with_context, 1);
    sm_gmem_block_t top[4];
    CHECK_EQ_U(sm_gmem_unfreed(g, ~0u, top, 4), 2);
    CHECK_EQ_U(apply(g, op(SM_GPU_MEM_DEVICE_BEGIN, 0, 0, 0, 0, 7), &r), SM_GMEM_DEVICE_STATE);
    CHECK_EQ_U(apply(g, op(SM_GPU_MEM_FREE, SM_GPU_NONE, 0, 0x2000, 0, 8), &r), SM_GMEM_TAKEN);
    CHECK_EQ_U(sm_gmem_figures(g, 0, SM_GPU_MEM_DEVICE).in_use, 64);
    CHECK_EQ_U(apply(g, op(SM_GPU_MEM_DEVICE_END, SM_GMEM_MAX_DEVICES, 0, 0, 0, 9), &r),
               SM_GMEM_INVALID);
    sm_gmem_delete(g);
}

/* 20000 blocks in and out in a scrambled order: every one found, the sums
 * exact, and the largest few right. */
static void test_many_blocks(void)
{
    enum { N = 20000 };
    sm_gmem_t *g = sm_gmem_new();
    sm_gmem_result_t r;
    uint64_t expect = 0, peak = 0;
    for (uint64_t i = 0; i < N; i++) {
        /* addresses 256 bytes apart, as an allocator's neighbours */
        apply(g, op(SM_GPU_MEM_ALLOC, 0, SM_GPU_MEM_DEVICE, 0x7f0000000000 + 256 * i, i + 1, i), &r);
        expect += i + 1;
    }
    peak = expect;
    uint32_t freed = 0;
    for (uint64_t k = 0; k < N; k++) {
        uint64_t i = (k * 7919) % N; /* a permutation: 7919 is prime */
        if (i % 3 == 0)
            continue;
        CHECK_EQ_U(apply(g, op(SM_GPU_MEM_FREE, SM_GPU_NONE, 0, 0x7f0000000000 + 256 * i, 0, N + k),
                         &r),
                   SM_GMEM_TAKEN);
        if (r.bytes != i + 1) {
            CHECK_EQ_U(r.bytes, i + 1);
            break;
        }
        expect -= i + 1;
        freed++;
    }
    sm_gmem_figures_t f = sm_gmem_figures(g, 0, SM_GPU_MEM_DEVICE);
    CHECK_EQ_U(f.in_use, expect);
    CHECK_EQ_U(f.peak, peak);
    CHECK_EQ_U(f.blocks, N - freed);
    sm_gmem_block_t top[3];
    CHECK_EQ_U(sm_gmem_unfreed(g, ~0u, top, 3), 3);
    /* kept: multiples of 3 below N, sizes i + 1 */
    CHECK_EQ_U(top[0].bytes, 19998 + 1);
    CHECK_EQ_U(top[1].bytes, 19995 + 1);
    CHECK_EQ_U(top[2].bytes, 19992 + 1);
    CHECK_EQ_U(sm_gmem_counts(g).unknown_frees, 0);
    sm_gmem_delete(g);
}


/* ---------------------------------------------------------------- the process's side */

static const sm_adapter_api_t *api;

typedef struct {
    uint64_t value[32], attrs[32][3], time[32];
    uint32_t n, backwards;
    uint64_t last;
} lane_t;

static int collect_lane(const sm_record_t *r, void *arg)
{
    lane_t *l = arg;
    if (r->kind != SM_REC_METRIC_NAMED_ATTRS)
        return 0;
    if (l->n && r->time < l->last)
        l->backwards++;
    l->last = r->time;
    if (l->n < 32) {
        const uint64_t *w = sm_record_payload(r);
        l->value[l->n] = w[0];
        l->time[l->n] = r->time;
        for (uint32_t k = 0; k < 3 && k < r->aux; k++)
            l->attrs[l->n][k] = w[2 + 2 * k + 1];
        l->n++;
    }
    return 0;
}

static int live_source(void *ctx, uint32_t i, sm_record_fn fn, void *arg)
{
    (void)ctx;
    return sm_buffer_for_each(sm_location_get(i), fn, arg);
}

static uint32_t location_named(const char *name)
{
    for (uint32_t i = 0; i < sm_location_count(); i++)
        if (!strcmp(sm_location_get(i)->name, name))
            return i;
    return SM_INVALID_ID;
}

static int metric_named(const char *name, sm_metric_def_t *out)
{
    for (uint32_t i = 0; i < sm_metric_count(); i++)
        if (sm_metric_get(i, out) == 0 && !strcmp(sm_string_get(out->name), name))
            return 0;
    return -1;
}

static char *slurp(const char *dir, const char *name)
{
    static char buf[1 << 20];
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    size_t len = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    buf[len] = '\0';
    if (f)
        fclose(f);
    return buf;
}

/* What the vendor's thread hands over later (CUPTI's memory records). */
typedef struct {
    sm_gpu_mem_op_t ops[16];
    size_t n;
    size_t taken;
} batch_t;

static void *vendor_thread(void *arg)
{
    batch_t *b = arg;
    b->taken = api->gpu_memory(b->ops, b->n, sizeof b->ops[0]);
    return NULL;
}

/* An API call of the program that allocates or frees: its region with the
 * correlation id, and the operation as the vendor will report it. */
static void api_call(sm_region_id_t region, uint64_t corr, batch_t *b, uint32_t what,
                     uint32_t kind, uint64_t address, uint64_t bytes)
{
    api->gpu_api_enter(region, corr);
    sm_gpu_mem_op_t o = op(what, what == SM_GPU_MEM_ALLOC ? 0 : 0, kind, address, bytes,
                           sm_clock_now());
    o.correlation = corr;
    b->ops[b->n++] = o;
    api->gpu_api_leave(region, 0);
}

static void test_process(void)
{
    char dir[4096] = "/tmp/sm-test-gpu-memory-XXXXXX";
    const char *keep = getenv("SM_TEST_KEEP_OUTPUT");
    if (keep && *keep)
        snprintf(dir, sizeof dir, "%s", keep);
    else if (!mkdtemp(dir))
        return;
    setenv("SYSMEASURE_OUTPUT", dir, 1);
    /* (a shared, nearly full disk must not stop this trace) */
    setenv("SYSMEASURE_MIN_FREE_SPACE", "0", 1);
    unsetenv("SYSMEASURE_ENABLE");
    api = sysmeasure_adapter_api(SM_ADAPTER_API_VERSION);
    CHECK(api && SM_ADAPTER_API_HAS(api, gpu_memory_block_bytes));
    if (!api)
        return;
    sm_gpu_mem_op_t early = op(SM_GPU_MEM_ALLOC, 0, SM_GPU_MEM_DEVICE, 0x100, 1, 1);
    CHECK_EQ_U(api->gpu_memory(&early, 1, sizeof early), 0); /* the core is not up */
    CHECK_EQ_U(api->runtime_init_forced(), 0);
    sm_gpu_device_info_t info = {SM_GPU_VENDOR_NVIDIA, 0, "Test GPU", "GPU-0000", NULL};
    sm_gpu_device_t d0 = api->gpu_device_define(&info);
    info.ordinal = 1;
    sm_gpu_device_t d1 = api->gpu_device_define(&info);
    CHECK(d0 == 0 && d1 == 1);

    sm_region_id_t solver = api->region_define("solver", NULL, 0, SM_PARADIGM_USER, SM_ROLE_CODE);
    sm_region_id_t r_malloc =
        api->region_define("cudaMalloc", NULL, 0, SM_PARADIGM_CUDA, SM_ROLE_WRAPPER);
    sm_region_id_t r_free = api->region_define("cudaFree", NULL, 0, SM_PARADIGM_CUDA, SM_ROLE_WRAPPER);
    sm_region_id_t r_async =
        api->region_define("cudaMallocAsync", NULL, 0, SM_PARADIGM_CUDA, SM_ROLE_WRAPPER);
    sm_region_id_t r_fasync =
        api->region_define("cudaFreeAsync", NULL, 0, SM_PARADIGM_CUDA, SM_ROLE_WRAPPER);
    sm_region_id_t r_managed =
        api->region_define("cudaMallocManaged", NULL, 0, SM_PARADIGM_CUDA, SM_ROLE_WRAPPER);
    sm_region_id_t r_host =
        api->region_define("cudaMallocHost", NULL, 0, SM_PARADIGM_CUDA, SM_ROLE_WRAPPER);

    /* device 0: the planted program's calls, reported later by the vendor's
     * thread in one batch */
    batch_t b;
    memset(&b, 0, sizeof b);
    api->enter(solver);
    api_call(r_malloc, 101, &b, SM_GPU_MEM_ALLOC, SM_GPU_MEM_DEVICE, 0x7f0010000000, 64 * MiB);
    api_call(r_malloc, 102, &b, SM_GPU_MEM_ALLOC, SM_GPU_MEM_DEVICE, 0x7f0020000000, 64 * MiB);
    api_call(r_malloc, 103, &b, SM_GPU_MEM_ALLOC, SM_GPU_MEM_DEVICE, 0x7f0030000000, 64 * MiB);
    api_call(r_free, 104, &b, SM_GPU_MEM_FREE, 0, 0x7f0020000000, 64 * MiB);
    api->leave(solver);
    api_call(r_async, 105, &b, SM_GPU_MEM_ALLOC, SM_GPU_MEM_DEVICE, 0x7f0040000000, 32 * MiB);
    b.ops[b.n - 1].flags = SM_GPU_MEM_ASYNC;
    api_call(r_fasync, 106, &b, SM_GPU_MEM_FREE, 0, 0x7f0040000000, 32 * MiB);
    api_call(r_managed, 107, &b, SM_GPU_MEM_ALLOC, SM_GPU_MEM_MANAGED, 0x7f0050000000, 16 * MiB);
    api_call(r_host, 108, &b, SM_GPU_MEM_ALLOC, SM_GPU_MEM_PINNED, 0x7f0060000000, 8 * MiB);
    /* a free of a block from before measurement began */
    api_call(r_free, 109, &b, SM_GPU_MEM_FREE, 0, 0x7f00f0000000, 0);
    pthread_t th;
    CHECK_EQ_U(pthread_create(&th, NULL, vendor_thread, &b), 0);
    pthread_join(th, NULL);
    CHECK_EQ_U(b.taken, 8);
    CHECK_EQ_U(api->gpu_memory_block_bytes(0x7f0030000000), 64 * MiB);
    CHECK_EQ_U(api->gpu_memory_block_bytes(0x7f0020000000), 0);
    /* the context's teardown at exit releases a block the program never
     * freed: it stays never freed, no event */
    sm_gpu_mem_op_t end = op(SM_GPU_MEM_DEVICE_END, d0, 0, 0, 0, sm_clock_now());
    sm_gpu_mem_op_t late = op(SM_GPU_MEM_FREE, d0, 0, 0x7f0030000000, 64 * MiB, sm_clock_now());
    CHECK_EQ_U(api->gpu_memory(&end, 1, sizeof end), 0);
    CHECK_EQ_U(api->gpu_memory(&late, 1, sizeof late), 0);
    CHECK_EQ_U(api->gpu_memory_block_bytes(0x7f0030000000), 64 * MiB);

    /* device 1: reported on the calling thread during the call (HIP) */
    api->gpu_api_enter(r_malloc, 201);
    sm_gpu_mem_op_t o = op(SM_GPU_MEM_ALLOC, d1, SM_GPU_MEM_DEVICE, 0x7e0000000000, 3 * MiB,
                           sm_clock_now());
    o.correlation = 201;
    CHECK_EQ_U(api->gpu_memory(&o, 1, sizeof o), 1);
    api->gpu_api_leave(r_malloc, 0);
    o.what = SM_GPU_MEM_FREE;
    o.device = SM_GPU_NONE;
    o.bytes = 0;
    o.correlation = 0;
    o.time = sm_clock_now();
    CHECK_EQ_U(api->gpu_memory(&o, 1, sizeof o), 1);

    /* the trace: a memory location per device among its streams, one
     * metric event per operation with the bytes in use after it */
    uint32_t l0 = location_named("CUDA 0 memory"), l1 = location_named("CUDA 1 memory");
    CHECK(l0 != SM_INVALID_ID && l1 != SM_INVALID_ID);
    if (l0 == SM_INVALID_ID || l1 == SM_INVALID_ID)
        return;
    CHECK_EQ_U(sm_location_get(l0)->type, SM_LOCATION_GPU_STREAM);
    CHECK_EQ_U(sm_gpu_location_device(l0), d0);
    CHECK_EQ_U(sm_location_get(l0)->profiling, 0);
    lane_t lane;
    memset(&lane, 0, sizeof lane);
    CHECK_EQ_U(sm_gpu_for_each_in_order(live_source, NULL, l0, collect_lane, &lane), 0);
    CHECK_EQ_U(lane.n, 8);
    CHECK_EQ_U(lane.backwards, 0);
    static const uint64_t in_use[8] = {64 * MiB,  128 * MiB, 192 * MiB, 128 * MiB,
                                       160 * MiB, 128 * MiB, 16 * MiB,  8 * MiB};
    for (int i = 0; i < 8; i++)
        CHECK_EQ_U(lane.value[i], in_use[i]);
    /* attributes: address, allocated or freed bytes, correlation id */
    CHECK_EQ_U(lane.attrs[0][0], 0x7f0010000000);
    CHECK_EQ_U(lane.attrs[0][1], 64 * MiB);
    CHECK_EQ_U(lane.attrs[0][2], 101);
    CHECK_EQ_U(lane.attrs[3][0], 0x7f0020000000);
    CHECK_EQ_U(lane.attrs[3][1], 64 * MiB); /* the freed block's size */
    CHECK_EQ_U(lane.attrs[3][2], 104);
    CHECK_EQ_U(lane.time[0], b.ops[0].time);
    memset(&lane, 0, sizeof lane);
    sm_gpu_for_each_in_order(live_source, NULL, l1, collect_lane, &lane);
    CHECK_EQ_U(lane.n, 2);
    CHECK_EQ_U(lane.value[0], 3 * MiB);
    CHECK_EQ_U(lane.value[1], 0);

    /* the metrics: largest sample = high-water mark, last = left */
    sm_metric_def_t m;
    CHECK_EQ_U(metric_named("CUDA 0 memory in use: device", &m), 0);
    CHECK_EQ_U(m.max, 192 * MiB);
    CHECK_EQ_U(m.last, 128 * MiB);
    CHECK_EQ_U(metric_named("CUDA 0 memory in use: managed", &m), 0);
    CHECK_EQ_U(m.max, 16 * MiB);
    CHECK_EQ_U(metric_named("CUDA 0 memory in use: pinned host", &m), 0);
    CHECK_EQ_U(m.max, 8 * MiB);
    CHECK_EQ_U(metric_named("CUDA 1 memory in use: device", &m), 0);
    CHECK_EQ_U(m.max, 3 * MiB);
    CHECK_EQ_U(m.last, 0);

    sm_runtime_finalize();
    /* nothing is taken after the end */
    o.what = SM_GPU_MEM_ALLOC;
    o.device = d0;
    o.address = 0x7d0000000000;
    CHECK_EQ_U(api->gpu_memory(&o, 1, sizeof o), 0);

    /* the summary: per device and kind, and what was never freed with the
     * call path that allocated it */
    const char *text = slurp(dir, "profile.txt");
    CHECK(strstr(text, "GPU memory: 4 blocks (159383552 bytes) were never freed") != NULL);
    CHECK(strstr(text, "GPU memory: 1 frees of blocks allocated before measurement") != NULL);
    CHECK(strstr(text, "\nGPU memory (bytes allocated through the GPU runtime") != NULL);
    CHECK(strstr(text, "  CUDA 0     device            1        201326592      0        201326592 "
                       "         4          2            2        134217728\n") != NULL);
    CHECK(strstr(text, "  CUDA 0     managed           1         16777216      0         16777216 "
                       "         1          0            1         16777216\n") != NULL);
    CHECK(strstr(text, "  CUDA 0     pinned host       1          8388608      0          8388608 "
                       "         1          0            1          8388608\n") != NULL);
    CHECK(strstr(text, "  CUDA 1     device            1          3145728      0          3145728 "
                       "         1          1            0                0\n") != NULL);
    CHECK(strstr(text, "GPU memory never freed: 4 blocks, 159383552 bytes") != NULL);
    CHECK(strstr(text, "         67108864 CUDA 0     device            0 0x7f0010000000     "
                       "solver > cudaMalloc\n") != NULL);
    CHECK(strstr(text, "         67108864 CUDA 0     device            0 0x7f0030000000     "
                       "solver > cudaMalloc\n") != NULL);
    CHECK(strstr(text, "          8388608 CUDA 0     pinned host       0 0x7f0060000000     "
                       "cudaMallocHost\n") != NULL);
    CHECK(strstr(text, "1 frees of blocks allocated before measurement began") != NULL);
    const char *json = slurp(dir, "profile.json");
    CHECK(strstr(json, "\"memory\": {") != NULL);
    CHECK(strstr(json, "\"device\": \"CUDA 0\", \"device_name\": \"Test GPU\", \"kind\": \"device\", "
                       "\"ranks\": 1, \"high_water_bytes\": 201326592") != NULL);
    CHECK(strstr(json, "\"path\": \"solver > cudaMalloc\"") != NULL);
    CHECK(strstr(json, "\"released_with_context\": 1") != NULL);
    const char *csv = slurp(dir, "profile_gpu_memory.csv");
    CHECK(strstr(csv, "\"CUDA 0\",\"Test GPU\",device,1,201326592,0,201326592.0,4,2,234881024,2,"
                      "134217728\n") != NULL ||
          strstr(csv, "CUDA 0,Test GPU,device,1,201326592,0,201326592.0,4,2,234881024,2,"
                      "134217728\n") != NULL);
    const char *meta = slurp(dir, "metadata.json");
    CHECK(strstr(meta, "\"gpu_memory\": {") != NULL);
    CHECK(strstr(meta, "\"name\": \"CUDA 0 memory in use: device\", \"unit\": \"bytes\", "
                       "\"last\": 134217728, \"max\": 201326592") != NULL);
    if (unit_failures)
        fprintf(stderr, "profile.txt:\n%s\n", slurp(dir, "profile.txt"));
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (keep && *keep)
        fprintf(stderr, "output kept in %s\n", dir);
    else if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}

/* The operation of an API call (both vendors' backends build theirs with
 * it): every field from the call, the vendor, the correlation and the time;
 * the API level; no device (a free's is the block's; an allocation's the
 * backend sets), and then accounted as an allocation of that call. */
static void test_op_of_call(void)
{
    sm_gpu_mem_call_t c = {SM_GPU_MEM_ALLOC, SM_GPU_MEM_MANAGED, SM_GPU_MEM_ASYNC, 0,
                           0x7f0000001000ull, 4096};
    sm_gpu_mem_op_t o = sm_gpu_mem_op_of_call(&c, SM_GPU_VENDOR_AMD, 77, 123456);
    CHECK_EQ_U(o.what, SM_GPU_MEM_ALLOC);
    CHECK_EQ_U(o.kind, SM_GPU_MEM_MANAGED);
    CHECK_EQ_U(o.flags, SM_GPU_MEM_ASYNC);
    CHECK_EQ_U(o.address, 0x7f0000001000ull);
    CHECK_EQ_U(o.bytes, 4096);
    CHECK_EQ_U(o.correlation, 77);
    CHECK_EQ_U(o.time, 123456);
    CHECK_EQ_U(o.vendor, SM_GPU_VENDOR_AMD);
    CHECK_EQ_U(o.level, SM_GPU_MEM_LEVEL_API);
    CHECK_EQ_U(o.device, SM_GPU_NONE);
    sm_gpu_mem_call_t f = {SM_GPU_MEM_FREE, 0, 0, 0, 0x7f0000001000ull, 0};
    sm_gpu_mem_op_t fo = sm_gpu_mem_op_of_call(&f, SM_GPU_VENDOR_AMD, 78, 123999);
    CHECK_EQ_U(fo.what, SM_GPU_MEM_FREE);
    CHECK_EQ_U(fo.bytes, 0);
    CHECK_EQ_U(sm_gpu_mem_op_of_call(&f, SM_GPU_VENDOR_NVIDIA, 1, 2).vendor, SM_GPU_VENDOR_NVIDIA);
    CHECK_EQ_U(fo.device, SM_GPU_NONE);
    CHECK_EQ_U(fo.correlation, 78);

    /* Accounted: the allocation on device 0 in use, the free takes it back. */
    sm_gmem_t *g = sm_gmem_new();
    sm_gmem_result_t r;
    o.device = 0;
    CHECK(apply(g, o, &r) == SM_GMEM_TAKEN);
    CHECK_EQ_U(r.in_use, 4096);
    CHECK(apply(g, fo, &r) == SM_GMEM_TAKEN);
    CHECK_EQ_U(r.in_use, 0);
    sm_gmem_delete(g);
}

int main(void)
{
    test_op_of_call();
    test_planted_sequence();
    test_unknown_free();
    test_devices();
    test_levels_and_invalid();
    test_context_end();
    test_many_blocks();
    test_process();
    return unit_failures;
}
