/* A CUDA program of host code only (linked with libcudart): for the tests of
 * the launcher's GPU choices on machines with or without a GPU.  It asks for
 * the devices, prints what it got, and exits 0 either way. */
#include <cuda_runtime_api.h>
#include <stdio.h>

int main(void)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    printf("cuda_host: %d device(s), %s\n", e == cudaSuccess ? n : 0, cudaGetErrorName(e));
    return 0;
}
