"""A small PyTorch loop on the GPU: STEPS steps of a matmul, a ReLU and an
add, in the Python function step().  `--count` runs the same loop under
torch.profiler (no sysmeasure) and prints the kernels it saw per name as a
JSON line; without it, prints a JSON line with the loss.  PyTorch loads
CUDA with dlopen: the launcher is not told."""
import json
import sys

import torch

STEPS = 20


def step(a, b):
    c = torch.relu(a @ b)
    return c + 1.0


def loop():
    torch.manual_seed(1)
    a = torch.randn(512, 512, device="cuda")
    b = torch.randn(512, 512, device="cuda")
    torch.cuda.synchronize()
    out = None
    for _ in range(STEPS):
        out = step(a, b)
    torch.cuda.synchronize()
    return out


def main():
    if "--count" in sys.argv:
        loop()  # warm-up: cuBLAS picks its kernels
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            loop()
        names = {}
        for e in prof.events():
            if e.device_type == torch.autograd.DeviceType.CUDA and not e.name.startswith("Memcpy") \
                    and not e.name.startswith("Memset"):
                names[e.name] = names.get(e.name, 0) + 1
        print(json.dumps({"kernels": names}))
        return
    loop()
    out = loop()
    print(json.dumps({"sum": float(out.sum().item())}))


if __name__ == "__main__":
    main()
