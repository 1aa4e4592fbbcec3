// CHECK(call) for the GPU test programs: a failed CUDA runtime call names
// itself and its error on stderr, and the program exits with status 3.
#ifndef SM_TESTS_CUDA_CHECK_H
#define SM_TESTS_CUDA_CHECK_H
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                                   \
    do {                                                                              \
        cudaError_t e_ = (call);                                                      \
        if (e_ != cudaSuccess) {                                                      \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,             \
                    cudaGetErrorString(e_));                                          \
            exit(3);                                                                  \
        }                                                                             \
    } while (0)
#endif
