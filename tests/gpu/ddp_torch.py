"""One process of a DistributedDataParallel training loop over NCCL, for
tests/gpu/test_nccl.py's torchrun cases: torchrun sets RANK, WORLD_SIZE,
LOCAL_RANK, MASTER_ADDR and MASTER_PORT.

A small MLP (seeded, so every run computes the same numbers) trains for
STEPS steps on fixed random data; DDP averages its gradients with
ncclAllReduce.  Rank 0 prints the final loss as "ddp loss %.6f" and every
rank prints "ddp ok rank R" at the end: the test compares the loss with a
plain run's."""
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

STEPS = 20
rank = int(os.environ["RANK"])
local = int(os.environ.get("LOCAL_RANK", rank))
torch.cuda.set_device(local)
dev = torch.device("cuda", local)
dist.init_process_group("nccl")
torch.manual_seed(1234)
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(),
                            torch.nn.Linear(512, 10)).to(dev)
ddp = DistributedDataParallel(model, device_ids=[local])
opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
g = torch.Generator().manual_seed(99 + rank)
x = torch.randn(64, 256, generator=g).to(dev)
y = torch.randint(0, 10, (64,), generator=g).to(dev)
loss = None
for _ in range(STEPS):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(ddp(x), y)
    loss.backward()
    opt.step()
torch.cuda.synchronize()
total = loss.detach().clone()
dist.all_reduce(total)
if rank == 0:
    print("ddp loss %.6f" % (total.item() / dist.get_world_size()))
print("ddp ok rank %d" % rank)
dist.destroy_process_group()
