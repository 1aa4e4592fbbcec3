// Several host threads launching into one CUDA context at the same time, for
// tests/gpu/test_counters.py (per-kernel counters from concurrent threads):
//   mt_counters [threads] [launches] [sync]
//                               default 4 threads, 24 launches each, each
//                               thread synchronising its stream every 5
//                               launches (sync 0: only at its end)
// Thread t launches the deterministic fma_kernel on its own stream with a
// grid of (t + 1) * 256 blocks, so every launch's instruction count is
// (t + 1) times thread 0's: a value given to the wrong launch shows.  The
// counters are decoded at synchronising calls and every 64 counted
// launches; the threads start together behind a barrier.
// It prints what it did as one JSON line on stdout.
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda_check.h"
#include "fma_kernel.cuh"

#define BLOCK 256
#define BASE_GRID 256

static pthread_barrier_t start;
static int launches = 24, sync_every = 5;

static void *worker(void *arg)
{
    int t = (int)(long)arg;
    int grid = (t + 1) * BASE_GRID, n = grid * BLOCK;
    float *x;
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK(cudaMalloc(&x, n * sizeof(float)));
    CHECK(cudaMemsetAsync(x, 0, n * sizeof(float), s));
    CHECK(cudaStreamSynchronize(s));
    pthread_barrier_wait(&start);
    for (int i = 0; i < launches; i++) {
        fma_kernel<<<grid, BLOCK, 0, s>>>(x, n);
        CHECK(cudaGetLastError());
        if (sync_every > 0 && i % sync_every == sync_every - 1)
            CHECK(cudaStreamSynchronize(s));
    }
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaFree(x));
    CHECK(cudaStreamDestroy(s));
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 4;
    launches = argc > 2 ? atoi(argv[2]) : 24;
    sync_every = argc > 3 ? atoi(argv[3]) : 5;
    if (threads < 1 || threads > 64 || launches < 1 || sync_every < 0) {
        fprintf(stderr, "usage: mt_counters [threads 1..64] [launches] [sync every, 0: never]\n");
        return 2;
    }
    CHECK(cudaFree(0)); // the context exists before the threads start
    pthread_t tid[64];
    pthread_barrier_init(&start, NULL, (unsigned)threads);
    for (int t = 0; t < threads; t++)
        if (pthread_create(&tid[t], NULL, worker, (void *)(long)t) != 0) {
            fprintf(stderr, "mt_counters: pthread_create failed\n");
            return 3;
        }
    for (int t = 0; t < threads; t++)
        pthread_join(tid[t], NULL);
    CHECK(cudaDeviceSynchronize());
    printf("{\"threads\": %d, \"launches_per_thread\": %d, \"base_grid\": %d, \"block\": %d}\n",
           threads, launches, BASE_GRID, BLOCK);
    return 0;
}
