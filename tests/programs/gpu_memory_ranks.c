/* GPU memory across MPI ranks without a GPU: each rank hands the core the
 * allocations and frees a GPU backend would (through the adapter table, as
 * gpu/cuda and gpu/rocm do), inside a region "planted":
 *   rank r allocates r + 1 blocks of 64 MiB on device 0 (cudaMalloc calls
 *   with correlation ids) and frees all but the first, so its high-water
 *   mark is (r + 1) x 64 MiB and one 64 MiB block is never freed.
 *   gpu_memory_ranks abort: then rank 1 calls MPI_Abort (the job's files
 *   are merged by sysmeasure-merge).
 * Prints one JSON line per rank. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/adapter_api.h"

const sm_adapter_api_t *sysmeasure_adapter_api(unsigned version);

#define MiB (1024ull * 1024ull)

int main(int argc, char **argv)
{
    int rank = 0, size = 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const sm_adapter_api_t *api = sysmeasure_adapter_api(SM_ADAPTER_API_VERSION);
    if (!api || !SM_ADAPTER_API_HAS(api, gpu_memory_block_bytes) || !api->runtime_active()) {
        fprintf(stderr, "rank %d: not measured\n", rank);
        MPI_Finalize();
        return 2;
    }
    sm_gpu_device_info_t info = {SM_GPU_VENDOR_NVIDIA, 0, "Planted GPU", NULL, NULL};
    sm_gpu_device_t dev = api->gpu_device_define(&info);
    sm_region_id_t planted = api->region_define("planted", NULL, 0, SM_PARADIGM_USER, SM_ROLE_CODE);
    sm_region_id_t r_malloc =
        api->region_define("cudaMalloc", NULL, 0, SM_PARADIGM_CUDA, SM_ROLE_WRAPPER);
    sm_region_id_t r_free = api->region_define("cudaFree", NULL, 0, SM_PARADIGM_CUDA, SM_ROLE_WRAPPER);
    uint64_t base = 0x7f0000000000ull + ((uint64_t)rank << 36), corr = 1;
    api->enter(planted);
    for (int i = 0; i <= rank; i++) {
        api->gpu_api_enter(r_malloc, corr);
        sm_gpu_mem_op_t op;
        memset(&op, 0, sizeof op);
        op.what = SM_GPU_MEM_ALLOC;
        op.kind = SM_GPU_MEM_DEVICE;
        op.device = dev;
        op.vendor = SM_GPU_VENDOR_NVIDIA;
        op.level = SM_GPU_MEM_LEVEL_API;
        op.address = base + (uint64_t)i * 0x10000000ull;
        op.bytes = 64 * MiB;
        op.correlation = corr++;
        op.time = api->now();
        api->gpu_memory(&op, 1, sizeof op);
        api->gpu_api_leave(r_malloc, 0);
    }
    for (int i = 1; i <= rank; i++) {
        api->gpu_api_enter(r_free, corr);
        sm_gpu_mem_op_t op;
        memset(&op, 0, sizeof op);
        op.what = SM_GPU_MEM_FREE;
        op.device = SM_GPU_NONE;
        op.vendor = SM_GPU_VENDOR_NVIDIA;
        op.level = SM_GPU_MEM_LEVEL_API;
        op.address = base + (uint64_t)i * 0x10000000ull;
        op.correlation = corr++;
        op.time = api->now();
        api->gpu_memory(&op, 1, sizeof op);
        api->gpu_api_leave(r_free, 0);
    }
    api->leave(planted);
    printf("{\"rank\": %d, \"peak\": %llu, \"left\": %llu, \"leaked\": %llu}\n", rank,
           (unsigned long long)((rank + 1) * 64 * MiB), (unsigned long long)(64 * MiB),
           (unsigned long long)base);
    fflush(stdout);
    if (argc > 1 && !strcmp(argv[1], "abort")) {
        MPI_Barrier(MPI_COMM_WORLD); /* every rank's figures are in */
        if (rank == 1)
            MPI_Abort(MPI_COMM_WORLD, 3);
        sleep(30); /* the job is torn down meanwhile */
    }
    MPI_Finalize();
    return 0;
}
