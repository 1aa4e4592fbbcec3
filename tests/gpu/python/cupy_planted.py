"""CuPy with a planted kernel: sm_planted_kernel launched N times (argv[1],
default 25) from the Python function launch(); prints a JSON line with what
it did.  CUDA is loaded by CuPy with dlopen: the launcher is not told."""
import json
import sys

import cupy

SRC = r'''
extern "C" __global__ void sm_planted_kernel(float *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * 2.0f + 1.0f;
}
'''


def launch(kernel, x, n):
    kernel(((n + 255) // 256,), (256,), (x, cupy.int32(n)))


def main():
    times = int(sys.argv[1]) if len(sys.argv) > 1 else 25
    kernel = cupy.RawKernel(SRC, "sm_planted_kernel")
    n = 1 << 20
    x = cupy.zeros(n, dtype=cupy.float32)
    for _ in range(times):
        launch(kernel, x, n)
    cupy.cuda.Device().synchronize()
    print(json.dumps({"kernel": "sm_planted_kernel", "launches": times,
                      "value": float(x[0].get())}))


if __name__ == "__main__":
    main()
