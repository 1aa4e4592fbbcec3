// GPU memory test program for tests/gpu/test_memory.py: planted allocations
// and frees whose figures the test checks.
//   gpu_memory_app [planted]: in an NVTX range "alloc phase", cudaMalloc 3 x
//     64 MiB; cudaFree one of them; cudaMallocAsync 32 MiB and cudaFreeAsync
//     on a stream; cudaMallocManaged 16 MiB and cudaMallocHost 8 MiB, both
//     freed; a module global of 4 KiB (static memory); the two other 64 MiB
//     blocks are never freed (no cudaDeviceReset either).  Device memory
//     peaks at 192 MiB, 128 MiB are left in 2 blocks.
//   gpu_memory_app threads: 4 threads, each 200 times cudaMalloc 1 MiB then
//     cudaFree it, at most 2 blocks of its own at once; nothing is left.
// It prints what it did as one JSON line on stdout.
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cuda_check.h"

#define MiB ((size_t)1 << 20)

__device__ float sm_module_table[1024]; // 4 KiB of module memory

__global__ void touch_kernel(float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        x[i] = 1.0f;
        sm_module_table[i % 1024] = x[i];
    }
}

static int planted(void)
{
    int device = 0;
    CHECK(cudaGetDevice(&device));
    void *a = NULL, *b = NULL, *c = NULL, *d = NULL, *m = NULL, *h = NULL;
    nvtxRangePushA("alloc phase");
    CHECK(cudaMalloc(&a, 64 * MiB));
    CHECK(cudaMalloc(&b, 64 * MiB));
    CHECK(cudaMalloc(&c, 64 * MiB));
    nvtxRangePop();
    touch_kernel<<<64, 256>>>((float *)a, 64 * 256);
    CHECK(cudaGetLastError());
    CHECK(cudaMemset(c, 0, 64 * MiB));
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaFree(b));

    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    CHECK(cudaMallocAsync(&d, 32 * MiB, s));
    CHECK(cudaMemsetAsync(d, 0, 32 * MiB, s));
    CHECK(cudaFreeAsync(d, s));
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaStreamDestroy(s));

    CHECK(cudaMallocManaged(&m, 16 * MiB));
    CHECK(cudaMallocHost(&h, 8 * MiB));
    memset(h, 1, 8 * MiB);
    CHECK(cudaFree(m));
    CHECK(cudaFreeHost(h));
    printf("{\"device\": %d, \"device_peak\": %zu, \"device_left\": %zu, \"left_blocks\": 2, "
           "\"device_allocations\": 4, \"device_frees\": 2, \"managed_peak\": %zu, "
           "\"pinned_peak\": %zu, \"async_bytes\": %zu, \"static_bytes\": %zu, "
           "\"leaked\": [%llu, %llu], \"freed\": %llu, \"async\": %llu}\n",
           device, 192 * MiB, 128 * MiB, 16 * MiB, 8 * MiB, 32 * MiB, sizeof(float) * 1024,
           (unsigned long long)(uintptr_t)a, (unsigned long long)(uintptr_t)c,
           (unsigned long long)(uintptr_t)b, (unsigned long long)(uintptr_t)d);
    fflush(stdout);
    return 0; /* a and c are never freed */
}

static void *churn(void *arg)
{
    (void)arg;
    void *p[2] = {NULL, NULL};
    for (int i = 0; i < 200; i++) {
        CHECK(cudaMalloc(&p[i % 2], MiB));
        if (i > 0)
            CHECK(cudaFree(p[(i + 1) % 2]));
    }
    CHECK(cudaFree(p[199 % 2]));
    return NULL;
}

static int threads(void)
{
    pthread_t t[4];
    CHECK(cudaFree(0)); /* the context, before the threads race for it */
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, churn, NULL);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    printf("{\"device_allocations\": 800, \"device_frees\": 800, \"left_blocks\": 0, "
           "\"device_left\": 0, \"most_peak\": %zu}\n", 8 * MiB);
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "planted";
    if (!strcmp(mode, "threads"))
        return threads();
    return planted();
}
