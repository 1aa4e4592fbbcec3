// GPU counter test program for tests/gpu/test_counters.py (GPU II):
//   counters_app [launches]     `launches` launches of a deterministic kernel
//                               (fixed grid, fixed work per thread: the same
//                               instruction count every time), then 3 of a
//                               second kernel; default 8
//   counters_app spin MS N [IDLE_MS]
//                               N launches of a kernel spinning MS ms each
//                               (power, energy and PM samples over time),
//                               with IDLE_MS of an idle GPU before and after
//   counters_app bench N        N launches of a tiny kernel (bench/)
// It prints what it did as one JSON line on stdout.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_check.h"
#include "fma_kernel.cuh"

__global__ void copy_kernel(float *y, const float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = x[i];
}

__global__ void tiny_kernel(int *p)
{
    if (threadIdx.x == 0 && blockIdx.x == 0)
        p[0] += 1;
}

__global__ void spin_kernel(long long cycles)
{
    long long start = clock64();
    while (clock64() - start < cycles) {
    }
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "bench")) {
        int n = argc > 2 ? atoi(argv[2]) : 1000;
        int *p;
        CHECK(cudaMalloc(&p, sizeof(int)));
        CHECK(cudaMemset(p, 0, sizeof(int)));
        for (int i = 0; i < n; i++)
            tiny_kernel<<<1, 32>>>(p);
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaFree(p));
        printf("{\"tiny_launches\": %d}\n", n);
        return 0;
    }
    if (argc > 1 && !strcmp(argv[1], "spin")) {
        int ms = argc > 2 ? atoi(argv[2]) : 100;
        int n = argc > 3 ? atoi(argv[3]) : 20;
        int rate_khz = 0;
        CHECK(cudaDeviceGetAttribute(&rate_khz, cudaDevAttrClockRate, 0));
        int idle_ms = argc > 4 ? atoi(argv[4]) : 0;
        long long cycles = (long long)rate_khz * ms;
        CHECK(cudaFree(0));
        if (idle_ms > 0)
            usleep((useconds_t)idle_ms * 1000u);
        for (int i = 0; i < n; i++)
            spin_kernel<<<132, 128>>>(cycles);
        CHECK(cudaDeviceSynchronize());
        if (idle_ms > 0)
            usleep((useconds_t)idle_ms * 1000u);
        printf("{\"spin_launches\": %d, \"spin_ms\": %d, \"idle_ms\": %d}\n", n, ms, idle_ms);
        return 0;
    }
    int launches = argc > 1 ? atoi(argv[1]) : 8;
    const int n = 1 << 20;
    float *x, *y;
    CHECK(cudaMalloc(&x, n * sizeof(float)));
    CHECK(cudaMalloc(&y, n * sizeof(float)));
    CHECK(cudaMemset(x, 0, n * sizeof(float)));
    for (int i = 0; i < launches; i++)
        fma_kernel<<<n / 256, 256>>>(x, n);
    for (int i = 0; i < 3; i++)
        copy_kernel<<<n / 256, 256>>>(y, x, n);
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaFree(x));
    CHECK(cudaFree(y));
    printf("{\"fma_launches\": %d, \"copy_launches\": 3, \"grid\": %d, \"block\": 256}\n", launches,
           n / 256);
    return 0;
}
