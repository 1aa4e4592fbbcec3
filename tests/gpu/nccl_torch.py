"""One process of a 2-process torch.distributed job over NCCL (no DDP), for
tests/gpu/test_nccl.py: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and
MASTER_PORT in the environment, as torchrun sets them.

It makes exactly these NCCL calls on the default group's communicator and
prints what it did (one JSON line) and "nccl_torch ok" when every result is
what the collectives must give:
  5 all_reduce (sum) of 1 MiB of float32 (262144 elements),
  3 broadcast of 256 KiB of float32 (65536 elements) from rank 0,
  2 all_gather_into_tensor of 4 KiB of float32 (1024 elements per rank),
  1 send of 16 KiB of float32 (4096 elements) from rank 0 to rank 1."""
import json
import os

import torch
import torch.distributed as dist

rank = int(os.environ["RANK"])
world = int(os.environ["WORLD_SIZE"])
local = int(os.environ.get("LOCAL_RANK", rank))
torch.cuda.set_device(local)
dev = torch.device("cuda", local)
dist.init_process_group("nccl", rank=rank, world_size=world)

ok = True
x = torch.ones(262144, dtype=torch.float32, device=dev)
for _ in range(5):
    dist.all_reduce(x)  # sum: world ** 5 after five
b = torch.full((65536,), float(rank + 7), dtype=torch.float32, device=dev)
for _ in range(3):
    dist.broadcast(b, src=0)
g_in = torch.full((1024,), float(rank), dtype=torch.float32, device=dev)
g_out = torch.empty(1024 * world, dtype=torch.float32, device=dev)
for _ in range(2):
    dist.all_gather_into_tensor(g_out, g_in)
p = torch.full((4096,), 3.5 if rank == 0 else 0.0, dtype=torch.float32, device=dev)
if rank == 0:
    dist.send(p, dst=1)
elif rank == 1:
    dist.recv(p, src=0)
torch.cuda.synchronize()

ok &= bool(torch.all(x == float(world ** 5)))
ok &= bool(torch.all(b == 7.0))
ok &= all(bool(torch.all(g_out[1024 * r:1024 * (r + 1)] == float(r))) for r in range(world))
ok &= rank > 1 or bool(torch.all(p == 3.5))
print(json.dumps({"rank": rank, "world": world, "torch": torch.__version__,
                  "nccl": ".".join(str(v) for v in torch.cuda.nccl.version()),
                  "all_reduce": 5, "broadcast": 3, "all_gather": 2,
                  "send": 1 if rank == 0 else 0, "recv": 1 if rank == 1 else 0}), flush=True)
dist.destroy_process_group()
print("nccl_torch ok" if ok else "nccl_torch WRONG RESULTS", flush=True)
