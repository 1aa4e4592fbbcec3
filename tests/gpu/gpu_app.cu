// GPU test program for tests/gpu: planted work whose counts the tests check.
//   gpu_app [mode]
//   mode "full" (default): 2 streams, several kernels, pageable and pinned
//     copies in every direction, a memset, NVTX push/pop, start/end and a
//     mark, a CUDA graph of 3 kernels launched twice, a failing API call;
//   mode "exit-thread": kernels still running when another thread calls exit;
//   mode "bench N": N empty launches then N 4-byte copies (bench/).
// It prints what it did as one JSON line on stdout ("expect").
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef SM_TEST_MPI
#include <mpi.h>
#endif

#include "cuda_check.h"

__global__ void scale_kernel(float *x, int n, float a)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] *= a;
}

__global__ void add_kernel(float *x, const float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] += y[i];
}

__global__ void graph_kernel(float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] += 1.0f;
}

// Spins for about `ns` nanoseconds of GPU time.
__global__ void spin_kernel(long long ns)
{
    long long start = clock64();
    // clock64 counts SM cycles; ~1.5 GHz is close enough for a pause.
    while (clock64() - start < ns * 3 / 2) {
    }
}

__global__ void empty_kernel() {}

__global__ void done_kernel(float *x) { x[threadIdx.x] += 1.0f; }

// An NVTX range started before the first CUDA call (main) and ended on
// another thread (full).
static nvtxRangeId_t across;

static void *end_across(void *arg)
{
    (void)arg;
    nvtxRangeEnd(across);
    return NULL;
}

static void full(int rank)
{
    const int n = 1 << 20;
    const size_t bytes = n * sizeof(float);
    float *d_x, *d_y, *h_page, *h_pin;
    cudaStream_t s1, s2;
    CHECK(cudaMalloc(&d_x, bytes));
    CHECK(cudaMalloc(&d_y, bytes));
    h_page = (float *)malloc(bytes);
    CHECK(cudaMallocHost(&h_pin, bytes));
    for (int i = 0; i < n; i++)
        h_page[i] = 1.0f;
    CHECK(cudaStreamCreate(&s1));
    CHECK(cudaStreamCreate(&s2));
    unsigned long long htod = 0, dtoh = 0, dtod = 0, memset_bytes = 0;

    nvtxRangePushA("setup");
    CHECK(cudaMemcpy(d_x, h_page, bytes, cudaMemcpyHostToDevice)); // pageable
    htod += bytes;
    CHECK(cudaMemset(d_y, 0, bytes));
    memset_bytes += bytes;
    nvtxRangePop();

    nvtxRangeId_t compute = nvtxRangeStartA("compute");
    nvtxRangePushA("kernels");
    int blocks = (n + 255) / 256;
    for (int k = 0; k < 6; k++)
        scale_kernel<<<blocks, 256, 0, s1>>>(d_x, n, 1.0001f);
    for (int k = 0; k < 4; k++)
        add_kernel<<<blocks, 256, 0, s2>>>(d_y, d_x, n);
    nvtxMarkA("kernels launched");
    CHECK(cudaStreamSynchronize(s1));
    CHECK(cudaStreamSynchronize(s2));
    nvtxRangePop();
    nvtxRangeEnd(compute);

    // Pinned copies, asynchronous on a stream, both directions; and DtoD.
    CHECK(cudaMemcpyAsync(h_pin, d_x, bytes, cudaMemcpyDeviceToHost, s1));
    dtoh += bytes;
    CHECK(cudaMemcpyAsync(d_y, h_pin, bytes / 2, cudaMemcpyHostToDevice, s2));
    htod += bytes / 2;
    CHECK(cudaMemcpyAsync(d_y, d_x, bytes / 4, cudaMemcpyDeviceToDevice, s1));
    dtod += bytes / 4;
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(h_page, d_y, bytes, cudaMemcpyDeviceToHost)); // pageable
    dtoh += bytes;

    // A graph of three kernels, captured from a stream, launched twice.
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
    for (int k = 0; k < 3; k++)
        graph_kernel<<<blocks, 256, 0, s1>>>(d_x, n);
    CHECK(cudaStreamEndCapture(s1, &graph));
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    CHECK(cudaGraphLaunch(exec, s1));
    CHECK(cudaGraphLaunch(exec, s1));
    CHECK(cudaStreamSynchronize(s1));

    // The range started in main ends on another thread.
    pthread_t t;
    pthread_create(&t, NULL, end_across, NULL);
    pthread_join(t, NULL);

    // A call that fails: its error code goes on the region.
    void *bad = NULL;
    cudaError_t fail = cudaMalloc(&bad, (size_t)1 << 62);
    cudaGetLastError();

    printf("{\"rank\": %d, \"kernels\": {\"scale_kernel\": 6, \"add_kernel\": 4, "
           "\"graph_kernel\": 6}, \"graph_launches\": 2, \"graph_nodes\": 3, "
           "\"bytes\": {\"HtoD\": %llu, \"DtoH\": %llu, \"DtoD\": %llu}, \"memset\": %llu, "
           "\"pageable\": 2, \"failed_error\": %d, "
           "\"nvtx\": [\"setup\", \"compute\", \"kernels\", \"kernels launched\", "
           "\"before cuda\", \"early\", \"across threads\"], \"nvtx_across\": \"across threads\"}\n",
           rank, htod, dtoh, dtod, memset_bytes, (int)fail);
    fflush(stdout);
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
    CHECK(cudaFreeHost(h_pin));
    free(h_page);
    CHECK(cudaFree(d_x));
    CHECK(cudaFree(d_y));
}

static void *exit_now(void *arg)
{
    (void)arg;
    exit(0);
    return NULL;
}

static void exit_thread(void)
{
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    for (int k = 0; k < 4; k++)
        spin_kernel<<<1, 1, 0, s>>>(20000000); // 20 ms each
    printf("{\"kernels\": {\"spin_kernel\": 4}}\n");
    fflush(stdout);
    pthread_t t;
    pthread_create(&t, NULL, exit_now, NULL);
    pthread_join(t, NULL);
}

// Fatal signal or MPI_Abort (rank 0) with kernels in flight: 5 done_kernel
// finished (synchronized) before, 4 spin_kernel of 50 ms still running.
static void die(const char *how, int rank)
{
    float *d;
    cudaStream_t s;
    CHECK(cudaMalloc(&d, 32 * sizeof(float)));
    CHECK(cudaStreamCreate(&s));
    for (int k = 0; k < 5; k++)
        done_kernel<<<1, 32, 0, s>>>(d);
    CHECK(cudaStreamSynchronize(s));
    if (rank != 0) {
#ifdef SM_TEST_MPI
        MPI_Barrier(MPI_COMM_WORLD); // never returns: rank 0 aborts the job
#endif
        return;
    }
    for (int k = 0; k < 4; k++)
        spin_kernel<<<1, 1, 0, s>>>(50000000);
    printf("{\"kernels\": {\"done_kernel\": 5}, \"in_flight\": {\"spin_kernel\": 4}}\n");
    fflush(stdout);
#ifdef SM_TEST_MPI
    if (!strcmp(how, "abort"))
        MPI_Abort(MPI_COMM_WORLD, 3);
#endif
    if (!strcmp(how, "segv"))
        *(volatile int *)(uintptr_t)8 = 1; // a real crash: SIGSEGV
    raise(SIGTERM);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void bench(int n)
{
    float *d, h = 0;
    CHECK(cudaMalloc(&d, sizeof(float)));
    for (int k = 0; k < 1000; k++) // warm-up
        empty_kernel<<<1, 1>>>();
    CHECK(cudaDeviceSynchronize());
    double t0 = now_s();
    for (int k = 0; k < n; k++)
        empty_kernel<<<1, 1>>>();
    CHECK(cudaDeviceSynchronize());
    double t1 = now_s();
    for (int k = 0; k < n; k++)
        CHECK(cudaMemcpy(d, &h, sizeof h, cudaMemcpyHostToDevice));
    double t2 = now_s();
    printf("{\"launch_us\": %.4f, \"memcpy4_us\": %.4f, \"n\": %d}\n", (t1 - t0) * 1e6 / n,
           (t2 - t1) * 1e6 / n, n);
    CHECK(cudaFree(d));
}

int main(int argc, char **argv)
{
    int rank = 0;
    const char *mode = argc > 1 ? argv[1] : "full";
    if (!strcmp(mode, "full")) {
        // NVTX before any CUDA call (and before MPI_Init).
        nvtxMarkA("before cuda");
        nvtxRangePushA("early");
        nvtxRangePop();
        across = nvtxRangeStartA("across threads");
    }
#ifdef SM_TEST_MPI
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
#endif
    if (!strcmp(mode, "exit-thread"))
        exit_thread();
    else if (!strcmp(mode, "segv") || !strcmp(mode, "term") || !strcmp(mode, "abort"))
        die(mode, rank);
    else if (!strcmp(mode, "bench"))
        bench(argc > 2 ? atoi(argv[2]) : 100000);
    else
        full(rank);
#ifdef SM_TEST_MPI
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
#endif
    return 0;
}
