// A HIP program as a user writes it, for test_hip.py: it asks for devices,
// allocates, launches a kernel when it can, and reports what the runtime
// answered.  On a machine without an AMD GPU it prints the error codes and
// exits 3; sysmeasure must not change either.
#include <hip/hip_runtime.h>
#include <stdio.h>

__global__ void add_one(float *x)
{
    x[threadIdx.x] += 1.0f;
}

int main()
{
    int n = -1;
    hipError_t e = hipGetDeviceCount(&n);
    printf("hipGetDeviceCount: %d (%s), %d devices\n", (int)e, hipGetErrorName(e), n);
    float *p = nullptr;
    e = hipMalloc(&p, 64 * sizeof(float));
    printf("hipMalloc: %d (%s)\n", (int)e, hipGetErrorName(e));
    if (e != hipSuccess)
        return 3;
    hipLaunchKernelGGL(add_one, dim3(1), dim3(64), 0, 0, p);
    e = hipDeviceSynchronize();
    printf("kernel: %d\n", (int)e);
    hipFree(p);
    return 0;
}
