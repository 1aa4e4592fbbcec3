/* GPU memory: the allocations and frees that the vendor backends report
 * (gpu/cuda: CUPTI's memory records or the API calls; gpu/rocm: HIP's API
 * calls, HSA's memory pools), accounted in one vendor-neutral place.
 *
 * Per device and kind of memory (device, managed, pinned host, static,
 * other) it keeps the bytes in use, the high-water mark, the counts of
 * allocations and frees, and every block still allocated (address, size,
 * the call path that allocated it), so that the end of the run knows what
 * was never freed and the largest such blocks.
 *
 * What the run gets from it:
 *   - the trace: per device a location "CUDA 0 memory" (or "HIP 0 memory")
 *     among the device's streams, with one Metric event per allocation or
 *     free: the bytes of that kind in use after it (metric "CUDA 0 memory
 *     in use: device"), with the attributes "memory address", "allocated
 *     bytes" or "freed bytes" and "correlation id" (the API call's, whose
 *     enter carries the same id);
 *   - the same metric's samples (metrics.h): its largest is the high-water
 *     mark, its last the bytes never freed, in metadata.json's metrics;
 *   - the figures of this process (sm_gpu_memory_serialize) travel with the
 *     metrics to rank 0 and into process files, where the GPU section of
 *     the summary reads them (writers/gpu_memory_table.h).
 *
 * The accounting itself (sm_gmem_*) is a plain object with no locking, no
 * clock and no output, unit-tested on planted sequences
 * (tests/unit/test_gpu_memory.c); sm_gpu_memory wraps one per process. */
#ifndef SM_GPU_MEMORY_H
#define SM_GPU_MEMORY_H

#include <stddef.h>
#include <stdint.h>
#include "compiler.h"
#include "gpu.h"

/* Kinds of memory, kept apart everywhere (stored in records and blobs:
 * keep the numbering). */
typedef enum {
    SM_GPU_MEM_DEVICE = 0,  /* device memory: cudaMalloc, cudaMallocAsync, cuMemAlloc, hipMalloc */
    SM_GPU_MEM_MANAGED = 1, /* managed (unified) memory: cudaMallocManaged, hipMallocManaged */
    SM_GPU_MEM_PINNED = 2,  /* page-locked host memory: cudaMallocHost, cudaHostAlloc, hipHostMalloc */
    SM_GPU_MEM_STATIC = 3,  /* a module's global variables, loaded with its code */
    SM_GPU_MEM_OTHER = 4,   /* what the vendor does not say */
    SM_GPU_MEM_KIND_COUNT
} sm_gpu_mem_kind_t;

typedef enum {
    SM_GPU_MEM_ALLOC = 1,
    SM_GPU_MEM_FREE = 2,
    /* The device's context is being destroyed (at exit the CUDA runtime
     * does it before sysmeasure's end): what it releases from now on was
     * never freed by the program, and stays listed so.  A new context of
     * the device (DEVICE_BEGIN) makes frees count again.  Only device and
     * time are read. */
    SM_GPU_MEM_DEVICE_END = 3,
    SM_GPU_MEM_DEVICE_BEGIN = 4
} sm_gpu_mem_what_t;

/* The layer that saw the operation: the runtime API the program calls
 * (CUDA runtime or driver, HIP), or the one below it (HSA), which also sees
 * the runtime's own allocations and the API's again.  Once a vendor's API
 * layer reports (sm_gpu_memory_api_source), that vendor's lower layer is
 * ignored, so nothing counts twice. */
typedef enum {
    SM_GPU_MEM_LEVEL_API = 0,
    SM_GPU_MEM_LEVEL_RUNTIME = 1
} sm_gpu_mem_level_t;

/* flags */
#define SM_GPU_MEM_ASYNC 1u /* stream-ordered (cudaMallocAsync, a memory pool) */

/* One allocation or free, as a backend hands it over. */
typedef struct sm_gpu_mem_op {
    uint64_t time;          /* core ticks (gpu_ticks of the vendor's time, or now) */
    uint64_t address;
    uint64_t bytes;         /* an allocation's size; a free's when the vendor says it, else 0 */
    uint64_t correlation;   /* the API call's correlation id (its call path); 0: none */
    sm_gpu_device_t device; /* an allocation's device; a free's, or SM_GPU_NONE: the block's */
    uint32_t what;          /* sm_gpu_mem_what_t */
    uint32_t kind;          /* sm_gpu_mem_kind_t (allocations; frees take the block's) */
    uint32_t vendor;        /* sm_gpu_vendor_t */
    uint32_t level;         /* sm_gpu_mem_level_t */
    uint32_t flags;         /* SM_GPU_MEM_ASYNC */
} sm_gpu_mem_op_t;

/* What a vendor's API call did to memory, decoded from its parameters at
 * its exit (gpu/cuda's and gpu/rocm's decoders give the same). */
typedef struct sm_gpu_mem_call {
    uint32_t what;    /* sm_gpu_mem_what_t */
    uint32_t kind;    /* sm_gpu_mem_kind_t (allocations) */
    uint32_t flags;   /* SM_GPU_MEM_ASYNC */
    uint32_t pad;
    uint64_t address; /* the block allocated or freed (0: none, a null free) */
    uint64_t bytes;   /* an allocation's size (pitched: pitch x rows); 0 for a free */
} sm_gpu_mem_call_t;

/* The operation of such a call, seen at the API level, at core ticks time,
 * the call's correlation id: the device SM_GPU_NONE (a free: the block's;
 * an allocation's, the backend sets it). */
static inline sm_gpu_mem_op_t sm_gpu_mem_op_of_call(const sm_gpu_mem_call_t *c,
                                                    sm_gpu_vendor_t vendor,
                                                    uint64_t correlation, uint64_t time)
{
    sm_gpu_mem_op_t op = {
        .time = time,
        .address = c->address,
        .bytes = c->bytes,
        .correlation = correlation,
        .device = SM_GPU_NONE,
        .what = c->what,
        .kind = c->kind,
        .vendor = vendor,
        .level = SM_GPU_MEM_LEVEL_API,
        .flags = c->flags,
    };
    return op;
}

/* "device", "managed", "pinned host", "static", "other". */
const char *sm_gpu_mem_kind_name(sm_gpu_mem_kind_t kind) SM_HIDDEN;

/* ---------------------------------------------------------------- the accounting */

#define SM_GMEM_MAX_DEVICES 64

typedef struct sm_gmem sm_gmem_t;

/* What one operation did. */
typedef enum {
    SM_GMEM_TAKEN = 0,        /* accounted */
    SM_GMEM_UNKNOWN_FREE,     /* a free of no block we know (allocated before measurement
                               * began, or by a layer we do not see): counted, not subtracted */
    SM_GMEM_IGNORED,          /* a lower layer of a vendor whose API layer reports */
    SM_GMEM_INVALID,          /* no such device, kind or operation; out of memory */
    SM_GMEM_NULL,             /* a null pointer (an allocation of 0 bytes, a free of NULL):
                               * nothing to do */
    SM_GMEM_CONTEXT_GONE,     /* a free of a block whose device's context ended: the block
                               * stays as never freed (counted in released_with_context) */
    SM_GMEM_DEVICE_STATE      /* DEVICE_END or DEVICE_BEGIN taken */
} sm_gmem_status_t;

typedef struct sm_gmem_result {
    uint32_t status;          /* sm_gmem_status_t */
    sm_gpu_device_t device;   /* the block's */
    uint32_t kind;            /* the block's */
    uint32_t pad;
    uint64_t bytes;           /* the block's size */
    uint64_t in_use;          /* of (device, kind) after the operation */
} sm_gmem_result_t;

/* Per device and kind. */
typedef struct sm_gmem_figures {
    uint64_t in_use;          /* bytes allocated and not freed */
    uint64_t peak;            /* the largest in_use: the high-water mark */
    uint64_t peak_time;       /* when it was first reached */
    uint64_t allocs, frees;
    uint64_t bytes_allocated; /* over all allocations */
    uint64_t blocks;          /* blocks allocated and not freed */
} sm_gmem_figures_t;

/* A block still allocated. */
typedef struct sm_gmem_block {
    uint64_t address, bytes, time;
    const void *path;         /* what the caller handed to sm_gmem_apply */
    sm_gpu_device_t device;
    uint32_t kind;
} sm_gmem_block_t;

sm_gmem_t *sm_gmem_new(void) SM_HIDDEN;
void sm_gmem_delete(sm_gmem_t *g) SM_HIDDEN;
/* From now on lower layers of vendor are ignored. */
void sm_gmem_api_source(sm_gmem_t *g, uint32_t vendor) SM_HIDDEN;
/* One operation, in the order they happened; path: the allocating call
 * path, kept with the block (any pointer; NULL: unknown).  An allocation at
 * an address still allocated replaces that block (its free was missed:
 * counted in sm_gmem_counts' replaced).  Returns the status. */
sm_gmem_status_t sm_gmem_apply(sm_gmem_t *g, const sm_gpu_mem_op_t *op, const void *path,
                               sm_gmem_result_t *out) SM_HIDDEN;
/* The figures of (device, kind); zeros for one never used. */
sm_gmem_figures_t sm_gmem_figures(const sm_gmem_t *g, sm_gpu_device_t device,
                                  sm_gpu_mem_kind_t kind) SM_HIDDEN;
/* 1 + the highest device id used so far. */
uint32_t sm_gmem_devices(const sm_gmem_t *g) SM_HIDDEN;

typedef struct sm_gmem_counts {
    uint64_t unknown_frees, unknown_free_bytes; /* bytes where the vendor gave them */
    uint64_t ignored, invalid, replaced;
    uint64_t released_with_context; /* frees after their device's context ended */
} sm_gmem_counts_t;
sm_gmem_counts_t sm_gmem_counts(const sm_gmem_t *g) SM_HIDDEN;

/* The largest blocks still allocated, at most max of them, largest first
 * (equal sizes: the earlier first), kinds in kinds_mask (1 << kind) only;
 * returns how many were written. */
size_t sm_gmem_unfreed(const sm_gmem_t *g, uint32_t kinds_mask, sm_gmem_block_t *out,
                       size_t max) SM_HIDDEN;

/* ---------------------------------------------------------------- the process's accounting */

/* Operations from a backend (adapter table: gpu_memory), any thread, in the
 * order they happened: accounted, traced on the device's memory location
 * and sampled as its metrics.  Returns how many were taken (the others are
 * frees of unknown blocks, ignored lower layers or invalid: counted). */
size_t sm_gpu_memory(const sm_gpu_mem_op_t *ops, size_t n, size_t stride) SM_HIDDEN;
/* A backend that reports vendor's memory at its API layer (HIP). */
void sm_gpu_memory_api_source(uint32_t vendor) SM_HIDDEN;
/* The size of the block at address, 0 when none is known (a free's size
 * for its API call's attributes). */
uint64_t sm_gpu_memory_block_bytes(uint64_t address) SM_HIDDEN;

/* In the child that goes on after daemon(): the lock made new (a thread of
 * the parent may have held it); the accounting goes on. */
void sm_gpu_memory_after_daemon_child(void) SM_HIDDEN;

/* At the end of the run, once the backends have flushed (gpu.c): the notes
 * (blocks never freed, frees of unknown blocks). */
void sm_gpu_memory_end(void) SM_HIDDEN;

/* This process's figures, appended to the metrics' bytes (metrics.c):
 * nothing when no GPU memory was seen. */
struct sm_wbuf;
void sm_gpu_memory_serialize(struct sm_wbuf *w) SM_HIDDEN;

/* Such figures read back (writers/gpu_memory_table.c). */
#define SM_GMEM_TOP 5        /* largest unfreed blocks per process */
#define SM_GMEM_MAX_ROWS (SM_GMEM_MAX_DEVICES * SM_GPU_MEM_KIND_COUNT) /* (device, kind) pairs */
typedef struct sm_gmem_row {
    char device[32];     /* "CUDA 0" */
    char device_name[96];
    uint32_t kind;
    sm_gmem_figures_t f;
} sm_gmem_row_t;
typedef struct sm_gmem_top {
    char device[32];
    uint32_t kind;
    uint64_t address, bytes;
    char path[512];      /* "main > solve > cudaMalloc"; "" unknown */
} sm_gmem_top_t;
typedef struct sm_gmem_process {
    uint32_t n_rows, n_top;
    sm_gmem_row_t rows[SM_GMEM_MAX_ROWS];
    sm_gmem_top_t top[SM_GMEM_TOP];
    sm_gmem_counts_t counts;
} sm_gmem_process_t;
/* The figures in a process's metrics bytes (sm_metrics_serialize): 1 when
 * there are some (out filled), 0 when none, -1 when they are damaged. */
int sm_gpu_memory_read(const void *metrics_blob, uint64_t len, sm_gmem_process_t *out) SM_HIDDEN;

#endif
