// The kernel whose counts the GPU counter tests plant: 64 fused
// multiply-adds per element, so the instruction count depends only on the
// grid, never on the data (counters_app.cu, mt_counters.cu).
#ifndef SM_TESTS_FMA_KERNEL_CUH
#define SM_TESTS_FMA_KERNEL_CUH
__global__ void fma_kernel(float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
#pragma unroll 1
        for (int k = 0; k < 64; k++)
            v = v * 1.0001f + 0.5f;
        x[i] = v;
    }
}
#endif
