"""PyTorch GPU memory case for tests/gpu/test_memory.py: tensors allocated
and freed through PyTorch's caching allocator (which takes device memory
from CUDA with cudaMalloc in segments and keeps it until empty_cache), no
library kernels (cuBLAS, cuDNN) that would hold workspaces of their own.
Prints one JSON line: what PyTorch says it reserved at most
(max_memory_reserved: the CUDA-level high-water mark, the one sysmeasure
measures), allocated at most (max_memory_allocated: tensors only), reserved
at the end, and the device memory in use by every process as the driver
saw it at the peak (mem_get_info: NVML's used memory, a bound).  Prints
{"skip": reason} where PyTorch or a GPU is missing."""
import json
import sys

try:
    import torch
except ImportError as e:
    print(json.dumps({"skip": "no PyTorch: %s" % e}))
    sys.exit(0)
if not torch.cuda.is_available():
    print(json.dumps({"skip": "PyTorch sees no GPU"}))
    sys.exit(0)

MiB = 1 << 20
dev = torch.device("cuda")
used_peak = 0


def used():
    global used_peak
    free, total = torch.cuda.mem_get_info()
    used_peak = max(used_peak, total - free)


xs = []
for mb in (1, 3, 20, 64, 100, 7, 250):
    xs.append(torch.empty(mb * MiB, dtype=torch.uint8, device=dev))
    used()
del xs[3]
del xs[1]
y = torch.ones(40 * MiB, dtype=torch.uint8, device=dev) + 1  # an elementwise kernel's result
torch.cuda.synchronize()
used()
xs.clear()
del y
torch.cuda.empty_cache()  # the segments go back to CUDA (cudaFree)
z = torch.empty(10 * MiB, dtype=torch.uint8, device=dev)
torch.cuda.synchronize()
used()
print(json.dumps({"device": torch.cuda.current_device(),
                  "max_memory_reserved": torch.cuda.max_memory_reserved(),
                  "max_memory_allocated": torch.cuda.max_memory_allocated(),
                  "reserved_end": torch.cuda.memory_reserved(),
                  "used_peak": used_peak,
                  "torch": torch.__version__}))
sys.stdout.flush()
