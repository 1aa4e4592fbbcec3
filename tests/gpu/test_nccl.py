"""NCCL on 2 GPUs (make check-gpu; needs 2 NVIDIA GPUs and a python3 with
PyTorch built with NCCL: SM_TORCH_PYTHON names it, default python3).

tests/gpu/nccl_torch.py runs as 2 processes of one torch.distributed job
(RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT, as torchrun sets
them), each under the launcher with no option but its output folder (a
folder per process: the archive of each is read on its own).  PyTorch loads
libnccl.so.2 with libtorch_cuda.so from Python; libsysmeasure-nccl.so,
preloaded, answers the calls first.  Checked in each archive:

- exactly the NCCL calls the script makes (5 ncclAllReduce, 3 broadcasts
  (ncclBroadcast or ncclBcast, as the PyTorch version calls it), 2
  ncclAllGather, one ncclSend on rank 0 and one ncclRecv on rank 1; group and
  communicator calls are not counted), with their bytes, data type,
  reduction, root, peer, rank, size and stream;
- the same communicator identity ("nccl comm") in both processes, on the
  collectives and on the call that made the communicator; the send's and
  the receive's communicator the same;
- a CUDA communicator of that name in OTF2, with MpiCollectiveEnd records on
  it (their bytes) and MpiSend/MpiRecv for the send and the receive;
- every NCCL kernel on a GPU stream linked by its correlation id to a launch
  inside an NCCL call (the collective itself, or the ncclGroupEnd of its
  group), and every collective and send/receive with at least one kernel.
The case one_archive runs both processes into one folder: one archive of
the job with the communicator's 2 members.  The torchrun cases run a
DistributedDataParallel loop (tests/gpu/ddp_torch.py) as torchrun starts
it, `torchrun --nproc_per_node 2 --no-python sysmeasure -o OUT python3
ddp_torch.py`: the same loss as a plain run, one archive of 2 ranks, each
with its GPU's kernels and its ncclAllReduce calls.
SM_GPU_KEEP=DIR keeps the output folders."""

import json
import os
import shutil
import socket
import subprocess
import sys

sys.path.insert(0, os.path.join(os.environ.get("SM_SRCDIR", "."), "tests", "lib"))
import otf2  # noqa: E402
import smtest  # noqa: E402
from smtest import LAUNCHER, SRC, Trace, check, clean_env, skip, workdir  # noqa: E402

SCRIPT = os.path.join(SRC, "tests", "gpu", "nccl_torch.py")
TORCH_PY = os.environ.get("SM_TORCH_PYTHON", "python3")
KEEP = os.environ.get("SM_GPU_KEEP")
Enter, Leave = otf2.events.Enter, otf2.events.Leave

COLLECTIVES = ("ncclAllReduce", "ncclBroadcast", "ncclBcast", "ncclReduce", "ncclAllGather",
               "ncclReduceScatter", "ncclAlltoAll", "ncclAllToAll", "ncclAllToAllv",
               "ncclGather", "ncclScatter")
P2P = ("ncclSend", "ncclRecv")
MIB = 1048576


@smtest.fixture
def torch_ready():
    """None, or why this machine cannot run the job."""
    probe = ("import torch, torch.distributed as d; "
             "print(torch.cuda.device_count(), int(d.is_available() and d.is_nccl_available()))")
    try:
        p = subprocess.run([TORCH_PY, "-c", probe], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as e:
        return "%s cannot run: %s" % (TORCH_PY, e)
    if p.returncode != 0:
        return "no PyTorch in %s (SM_TORCH_PYTHON names another python)" % TORCH_PY
    words = p.stdout.split()
    n, nccl = (int(words[-2]), int(words[-1])) if len(words) >= 2 else (0, 0)
    if n < 2:
        return "needs 2 GPUs, torch sees %d" % n
    if not nccl:
        return "PyTorch here has no NCCL"
    return None


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@smtest.fixture
def job(shared):
    """Both processes under the launcher; [(out, returncode, stdout, stderr)]
    per rank (out: the rank's folder, or the one shared folder)."""
    why = torch_ready()
    if why:
        skip(why)
    base = workdir("nccl-torch-shared" if shared else "nccl-torch")
    port = free_port()
    procs = []
    for r in (0, 1):
        out = os.path.join(base, "out" if shared else "rank%d" % r)
        env = clean_env({"RANK": str(r), "WORLD_SIZE": "2", "LOCAL_RANK": str(r),
                         "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1",
                         "MASTER_PORT": str(port)})
        procs.append((out, subprocess.Popen([LAUNCHER, "--output", out, "--", TORCH_PY, SCRIPT],
                                            env=env, stdout=subprocess.PIPE,
                                            stderr=subprocess.PIPE, text=True)))
    runs = []
    for out, p in procs:
        try:
            so, se = p.communicate(timeout=600)
        except subprocess.TimeoutExpired:
            p.kill()
            so, se = p.communicate()
        runs.append((out, p.returncode, so, se))
    if KEEP:
        shutil.copytree(base, os.path.join(KEEP, os.path.basename(base)), dirs_exist_ok=True)
    return runs


def attrs(e):
    return {k.name: v for k, v in (e.attributes or {}).items()} if e.attributes else {}


@smtest.fixture
def trace_of(rank):
    return Trace(job(False)[rank][0])


def nccl_calls(trace):
    """(region name, enter, leave) of the NCCL regions on CPU threads."""
    calls = []
    for loc, evs in trace.events.items():
        if loc.type != otf2.LocationType.CPU_THREAD:
            continue
        stack = []
        for e in evs:
            if isinstance(e, Enter):
                stack.append(e)
            elif isinstance(e, Leave) and stack:
                en = stack.pop()
                if str(en.region.name).startswith("nccl"):
                    calls.append((str(en.region.name), en, e))
    calls.sort(key=lambda c: c[1].time)
    return calls


def test_runs():
    for rank, (out, rc, so, se) in enumerate(job(False)):
        check(rc == 0, "rank %d exits 0 (%s): %s" % (rank, rc, se[-3000:]))
        check("nccl_torch ok" in so, "rank %d: the collectives gave the right results: %s"
              % (rank, so))
        check(os.path.exists(os.path.join(out, "traces.otf2")), "rank %d wrote its archive" % rank)
        for line in so.splitlines():
            if line.startswith("{"):
                print("  rank %d: %s" % (rank, line))


def test_regions():
    for rank in (0, 1):
        calls = nccl_calls(trace_of(rank))
        counted = {}
        for name, _, _ in calls:
            if name in COLLECTIVES or name in P2P:
                counted[name] = counted.get(name, 0) + 1
        bcasts = counted.pop("ncclBroadcast", 0) + counted.pop("ncclBcast", 0)
        want = {"ncclAllReduce": 5, "ncclAllGather": 2}
        want["ncclSend" if rank == 0 else "ncclRecv"] = 1
        check(counted == want and bcasts == 3,
              "rank %d: exactly the script's calls: %s, broadcasts %d (all NCCL calls: %s)"
              % (rank, counted, bcasts, sorted({n for n, _, _ in calls})))
        for name, en, lv in calls:
            a = attrs(en)
            where = "rank %d %s %s" % (rank, name, a)
            if name in COLLECTIVES or name in P2P:
                check(a.get("nccl ranks") == 2, where + ": 2 ranks")
                check(a.get("nccl datatype") == "float32", where + ": float32")
                # The stream the call names: 0 is the program's default
                # stream, where PyTorch 2.8 and later run a collective that
                # is not async_op (the current stream).
                check("nccl stream" in a, where + ": names its stream")
                check(attrs(lv).get("nccl result", 7) == 7,
                      where + ": succeeded (or in progress, on a nonblocking communicator)")
            if name == "ncclAllReduce":
                check(a.get("nccl bytes") == MIB and a.get("nccl op") == "sum" and
                      a.get("nccl rank") == rank, where + ": 1 MiB, sum, rank")
            elif name in ("ncclBroadcast", "ncclBcast"):
                check(a.get("nccl bytes") == MIB // 4 and a.get("nccl root") == 0,
                      where + ": 256 KiB from root 0")
            elif name == "ncclAllGather":
                check(a.get("nccl bytes") == 4096, where + ": 4 KiB per rank")
            elif name in P2P:
                check(a.get("nccl bytes") == 16384 and a.get("nccl peer") == 1 - a.get("nccl rank", -9),
                      where + ": 16 KiB with the other rank")


def comm_ids(trace, names):
    return {attrs(en).get("nccl comm") for n, en, _ in nccl_calls(trace) if n in names}


def test_same_communicator():
    ids = [comm_ids(trace_of(r), ("ncclAllReduce",)) for r in (0, 1)]
    check(len(ids[0]) == 1 and ids[0] == ids[1] and None not in ids[0],
          "the all-reduces of both processes name one communicator: %s" % ids)
    inits = [comm_ids(trace_of(r), ("ncclCommInitRank", "ncclCommInitRankConfig",
                                    "ncclCommInitRankScalable")) for r in (0, 1)]
    check(ids[0] <= inits[0] and ids[1] <= inits[1],
          "the call that made it carries the same id: %s, made %s" % (ids, inits))
    p2p = comm_ids(trace_of(0), ("ncclSend",)), comm_ids(trace_of(1), ("ncclRecv",))
    check(len(p2p[0]) == 1 and p2p[0] == p2p[1] and None not in p2p[0],
          "send and receive on one communicator: %s" % (p2p,))


def test_collective_records():
    for rank in (0, 1):
        tr = trace_of(rank)
        (cid,) = comm_ids(tr, ("ncclAllReduce",)) or (None,)
        name = "NCCL communicator %016x" % cid if cid is not None else "?"
        comms = [c for c in tr.definitions.comms if str(c.name) == name]
        if not check(len(comms) == 1, "rank %d: a communicator %r: %s"
                     % (rank, name, [str(c.name) for c in tr.definitions.comms])):
            continue
        check(comms[0].group.paradigm == otf2.Paradigm.CUDA,
              "rank %d: a CUDA communicator: %s" % (rank, comms[0].group.paradigm))
        ends = [e for _, e in tr.of_type(otf2.events.MpiCollectiveEnd) if e.communicator == comms[0]]
        ops = {}
        for e in ends:
            ops.setdefault(e.collective_op, []).append((e.size_sent, e.size_received))
        ar = ops.get(otf2.CollectiveOp.ALLREDUCE, [])
        bc = ops.get(otf2.CollectiveOp.BCAST, [])
        ag = ops.get(otf2.CollectiveOp.ALLGATHER, [])
        check(ar == [(MIB, MIB)] * 5, "rank %d: 5 all-reduce records, 1 MiB each way: %s" % (rank, ar))
        check(bc == ([(MIB // 4, 0)] if rank == 0 else [(0, MIB // 4)]) * 3,
              "rank %d: 3 broadcast records (root sends): %s" % (rank, bc))
        check(ag == [(4096, 4096)] * 2, "rank %d: 2 all-gather records: %s" % (rank, ag))
        msgs = tr.of_type(otf2.events.MpiSend if rank == 0 else otf2.events.MpiRecv)
        check(len(msgs) == 1 and msgs[0][1].msg_length == 16384,
              "rank %d: one message of 16 KiB: %s" % (rank, [m[1] for m in msgs]))


def test_kernels_linked():
    for rank in (0, 1):
        tr = trace_of(rank)
        # the innermost NCCL call open at each launch (correlation id)
        launched_in = {}
        for loc, evs in tr.events.items():
            if loc.type != otf2.LocationType.CPU_THREAD:
                continue
            stack = []
            for e in evs:
                if isinstance(e, Enter):
                    cid = attrs(e).get("correlation id")
                    if cid is not None:
                        inner = [s for s in stack if str(s.region.name).startswith("nccl")]
                        launched_in[cid] = inner[-1] if inner else None
                    stack.append(e)
                elif isinstance(e, Leave) and stack:
                    stack.pop()
        kernels = [(loc, e) for loc, evs in tr.events.items()
                   if loc.type == otf2.LocationType.ACCELERATOR_STREAM
                   for e in evs if isinstance(e, Enter) and "nccl" in str(e.region.name).lower()]
        if not check(kernels, "rank %d: NCCL kernels on the GPU streams" % rank):
            continue
        per_call = {}
        unlinked = []
        for loc, k in kernels:
            call = launched_in.get(attrs(k).get("correlation id"))
            if call is None:
                unlinked.append(str(k.region.name))
                continue
            check(k.time >= call.time, "rank %d: kernel %s starts after its call %s began"
                  % (rank, k.region.name, call.region.name))
            per_call[id(call)] = per_call.get(id(call), 0) + 1
        check(not unlinked, "rank %d: every NCCL kernel inside an NCCL call: not %s"
              % (rank, unlinked[:5]))
        calls = nccl_calls(tr)
        ends = {attrs(en).get("nccl group"): en for n, en, _ in calls if n == "ncclGroupEnd"}
        for name, en, _ in calls:
            if name not in COLLECTIVES and name not in P2P:
                continue
            group = attrs(en).get("nccl group")
            n = per_call.get(id(en), 0) + (per_call.get(id(ends[group]), 0)
                                           if group in ends else 0)
            check(n >= 1, "rank %d: %s at %d has its kernel (itself or its group's end)"
                  % (rank, name, en.time))


def test_one_archive():
    runs = job(True)
    out = runs[0][0]
    check(all(rc == 0 for _, rc, _, _ in runs), "both processes exit 0: %s"
          % [(rc, se[-500:]) for _, rc, _, se in runs])
    path = os.path.join(out, "metadata.json")
    ranks = json.load(open(path)).get("ranks") if os.path.exists(path) else None
    check(ranks == 2, "the two processes sharing a folder are one job of 2 ranks "
          "(metadata.json ranks: %s)" % ranks)
    tr = Trace(out)
    comms = [c for c in tr.definitions.comms if str(c.name).startswith("NCCL communicator")]
    both = [c for c in comms if len(c.group.members) == 2]
    check(both, "a communicator with both processes as members: %s"
          % [(str(c.name), len(c.group.members)) for c in comms])
    for c in both:
        groups = {m.group for m in c.group.members}
        check(len(groups) == 2, "%s: its members are the two processes" % c.name)


DDP = os.path.join(SRC, "tests", "gpu", "ddp_torch.py")


@smtest.fixture
def torchrun(measured):
    """(returncode, stdout, stderr, out) of the DDP loop under torchrun, with
    the launcher between torchrun and python3 when measured."""
    why = torch_ready()
    if why:
        skip(why)
    base = workdir("ddp-torchrun" if measured else "ddp-plain")
    out = os.path.join(base, "out")
    cmd = [TORCH_PY, "-m", "torch.distributed.run", "--nproc_per_node", "2",
           "--master_port", str(free_port()), "--no-python"]
    cmd += [LAUNCHER, "-o", out, TORCH_PY, DDP] if measured else [TORCH_PY, DDP]
    p = subprocess.run(cmd, env=clean_env({}), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=900)
    if KEEP:
        shutil.copytree(base, os.path.join(KEEP, os.path.basename(base)), dirs_exist_ok=True)
    return p.returncode, p.stdout, p.stderr, out


def ddp_loss(so):
    return [line.split()[-1] for line in so.splitlines() if line.startswith("ddp loss")]


def test_torchrun_ddp_runs():
    rc, so, se, out = torchrun(True)
    prc, pso, pse, _ = torchrun(False)
    check(prc == 0, "the plain torchrun exits 0: %s" % pse[-2000:])
    check(rc == 0, "torchrun under sysmeasure exits 0: %s" % se[-3000:])
    check(so.count("ddp ok rank") == 2, "both processes end: %s" % so)
    check(ddp_loss(so) and ddp_loss(so) == ddp_loss(pso),
          "the same loss as the plain run: %s vs %s" % (ddp_loss(so), ddp_loss(pso)))
    check("overwrit" not in se, "no process overwrote another's files: %s" % se[-2000:])


def test_torchrun_ddp_one_archive():
    rc, so, se, out = torchrun(True)
    path = os.path.join(out, "metadata.json")
    meta = json.load(open(path)) if os.path.exists(path) else {}
    check(meta.get("ranks") == 2, "metadata.json: one job of 2 ranks (%s)" % meta.get("ranks"))
    tr = Trace(out)
    by_group = {}
    for loc, evs in tr.events.items():
        g = loc.group
        stream = loc.type == otf2.LocationType.ACCELERATOR_STREAM
        if stream and g.creating_location_group is not None:
            g = g.creating_location_group  # the process that owns the GPU
        d = by_group.setdefault(str(g.name), {"kernels": 0, "allreduce": 0, "gpu": set()})
        for e in evs:
            if not isinstance(e, Enter):
                continue
            name = str(e.region.name)
            if stream:
                d["kernels"] += 1
                d["gpu"].add(str(loc.name))
            elif name == "ncclAllReduce":
                d["allreduce"] += 1
    procs = {k: v for k, v in by_group.items() if v["kernels"] or v["allreduce"]}
    check(len(procs) == 2, "two processes with GPU work in the archive: %s" % sorted(procs))
    for name, d in procs.items():
        # 20 steps: DDP reduces the gradients of each step (one bucket here),
        # plus the final loss's all_reduce.
        check(d["allreduce"] >= 21, "%s: %d ncclAllReduce calls, expected at least 21"
              % (name, d["allreduce"]))
        check(d["kernels"] >= 20 * 3, "%s: %d kernels on its GPU streams" % (name, d["kernels"]))
    comms = [c for c in tr.definitions.comms if str(c.name).startswith("NCCL communicator")]
    check(any(len(c.group.members) == 2 for c in comms),
          "an NCCL communicator with both processes: %s"
          % [(str(c.name), len(c.group.members)) for c in comms])


if __name__ == "__main__":
    smtest.run_cases(globals())
