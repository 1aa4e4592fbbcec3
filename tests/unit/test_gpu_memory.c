/* GPU memory accounting (core/gpu_memory.h) on planted sequences: bytes in
 * use and high-water marks per device and kind, frees of unknown blocks,
 * stream-ordered (pool) allocations, several devices, a lower layer ignored
 * once the API layer reports, blocks replaced, null pointers, the largest
 * blocks never freed, and a table that grows and shrinks through many
 * blocks.  Then the process's side through the adapter table, as a backend
 * uses it, to the end of the run: the trace's memory location, the
 * metrics, the notes and the summary's GPU memory section. */
#include <inttypes.h>
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

int main(void)
{
    test_planted_sequence();
    test_unknown_free();
    test_devices();
    test_levels_and_invalid();
    test_many_blocks();
    return unit_failures;
}
