"""GPU memory on an NVIDIA GPU (make check-gpu): the planted program
tests/gpu/gpu_memory_app under the launcher, its archive and summaries read
back and checked against what the program says it did, with GPU memory
taken from CUPTI's memory records (the default) and from the CUDA calls
(--gpu-memory=api), which must agree; then PyTorch's own figures
(tests/gpu/torch_memory.py) against sysmeasure's high-water mark.

Planted (gpu_memory_app): cudaMalloc 3 x 64 MiB in an NVTX range "alloc
phase", cudaFree of one, cudaMallocAsync 32 MiB + cudaFreeAsync, 16 MiB
managed and 8 MiB pinned (both freed), a 4 KiB module global, 2 device
blocks of 64 MiB never freed: device memory peaks at 192 MiB."""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.environ.get("SM_SRCDIR", "."), "tests", "lib"))
import otf2  # noqa: E402
import smtest  # noqa: E402
from smtest import Trace, check, load_json, measure  # noqa: E402

PROGRAMS = os.environ.get("SM_GPU_PROGRAMS",
                          os.path.join(os.environ.get("SM_BUILDDIR", "."), "tests", "gpu"))
APP = os.path.join(PROGRAMS, "gpu_memory_app")
TORCH_CASE = os.path.join(os.environ.get("SM_SRCDIR", "."), "tests", "gpu", "torch_memory.py")
MiB = 1 << 20
SOURCES = {"records": ("CUPTI memory records", []), "calls": ("CUDA API calls", ["--gpu-memory=api"])}


def expectation(proc):
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            return json.loads(line)
    check(False, "the program printed no expectation: %s %s" % (proc.stdout, proc.stderr))
    return None


def attrs(event):
    return {a.name: v for a, v in event.attributes.items()} if event.attributes else {}


def metric_name(event):
    m = event.metric
    members = getattr(m, "members", None) or m.metric_class.members
    return members[0].name


@smtest.fixture
def planted(source):
    out, proc = measure([APP], "gpumem-" + source, launcher_args=["--gpu"] + SOURCES[source][1])
    return out, proc, expectation(proc)


def memory_rows(out):
    gpu = load_json(out, "profile.json").get("gpu") or {}
    mem = gpu.get("memory") or {}
    return {(r["device"], r["kind"]): r for r in mem.get("devices", [])}, mem


def check_planted(source):
    out, proc, e = planted(source)
    if not e:
        return
    dev = "CUDA %d" % e["device"]
    meta = load_json(out, "metadata.json")
    check(meta.get("metadata", {}).get("gpu_memory_source") == SOURCES[source][0],
          "gpu_memory_source: %s" % meta.get("metadata", {}).get("gpu_memory_source"))

    # The summary: per device and kind, and the blocks never freed.
    rows, mem = memory_rows(out)
    d = rows.get((dev, "device"))
    if check(d, "%s device row in profile.json: %s" % (dev, sorted(rows))):
        got = (d["high_water_bytes"], d["allocations"], d["frees"], d["left_blocks"], d["left_bytes"])
        want = (e["device_peak"], e["device_allocations"], e["device_frees"], e["left_blocks"],
                e["device_left"])
        check(got == want, "device (high-water, allocations, frees, left blocks, left bytes) "
              "%s, the program: %s" % (got, want))
    for kind, peak in (("managed", e["managed_peak"]), ("pinned host", e["pinned_peak"])):
        r = rows.get((dev, kind))
        if check(r, "%s %s row: %s" % (dev, kind, sorted(rows))):
            check((r["high_water_bytes"], r["left_blocks"]) == (peak, 0),
                  "%s: high-water %d, left %d; the program: %d, 0" % (kind, r["high_water_bytes"],
                                                                      r["left_blocks"], peak))
    nf = mem.get("never_freed") or {}
    check((nf.get("blocks"), nf.get("bytes")) == (2, e["device_left"]),
          "never freed: %s" % {k: nf.get(k) for k in ("blocks", "bytes")})
    largest = nf.get("largest") or []
    check(sorted(int(b["address"], 16) for b in largest) == sorted(e["leaked"]),
          "the blocks never freed are the program's: %s, %s" % ([b["address"] for b in largest],
                                                               [hex(a) for a in e["leaked"]]))
    check(all(b["bytes"] == 64 * MiB and b["kind"] == "device" and
              b["path"].endswith("alloc phase > cudaMalloc") for b in largest),
          "their size and the call path that allocated them: %s" % largest)
    check(mem.get("unknown_frees") == 0, "frees of unknown blocks: %s" % mem.get("unknown_frees"))
    text = open(os.path.join(out, "profile.txt")).read()
    check("GPU memory never freed: 2 blocks, %d bytes" % e["device_left"] in text,
          "profile.txt names the blocks never freed")
    gm = meta.get("gpu_memory") or {}
    check(any(r["device"] == dev and r["kind"] == "device" and
              r["high_water_bytes"] == e["device_peak"] for r in gm.get("devices", [])),
          "metadata.json gpu_memory: %s" % gm.get("devices"))
    m = [x for x in meta.get("metrics", []) if x["name"] == dev + " memory in use: device"]
    check(m and (m[0]["max"], m[0]["last"]) == (e["device_peak"], e["device_left"]),
          "metadata.json's metric %s memory in use: device: %s" % (dev, m))

    # The trace: the device's memory location, a metric event per operation.
    trace = Trace(out)
    loc = next((l for l in trace.locations if l.name == dev + " memory"), None)
    if not check(loc, "no location %r: %s" % (dev + " memory", [l.name for l in trace.locations])):
        return
    check(loc.type == otf2.LocationType.ACCELERATOR_STREAM and
          loc.group.location_group_type == otf2.LocationGroupType.ACCELERATOR,
          "%s is a location of the device's group" % loc.name)
    ev = [x for x in trace.events[loc] if isinstance(x, otf2.events.Metric)]
    devev = [x for x in ev if metric_name(x) == dev + " memory in use: device"]
    values = [x.values[0] // MiB for x in devev]
    check(values == [64, 128, 192, 128, 160, 128],
          "device memory in use after each operation (MiB): %s, planted 64 128 192 128 160 128"
          % values)
    check(all(a.time <= b.time for a, b in zip(ev, ev[1:])), "memory events in time order")
    first = attrs(devev[0]) if devev else {}
    check(first.get("memory address") == e["leaked"][0] and first.get("allocated bytes") == 64 * MiB,
          "the first allocation's attributes: %s" % first)
    # The calls on the host: the same correlation id, their address and size.
    calls = {}
    for l, evs in trace.events.items():
        if l.type != otf2.LocationType.CPU_THREAD:
            continue
        for x in evs:
            if isinstance(x, (otf2.events.Enter, otf2.events.Leave)) and x.region.name.startswith("cuda"):
                calls.setdefault(x.region.name, []).append(x)
    enter_ids = {attrs(x).get("correlation id"): x.region.name for xs in calls.values() for x in xs
                 if isinstance(x, otf2.events.Enter)}
    check(enter_ids.get(first.get("correlation id")) == "cudaMalloc",
          "the allocation's correlation id is its cudaMalloc's: %s" % first.get("correlation id"))
    mallocs = [attrs(x) for x in calls.get("cudaMalloc", []) if isinstance(x, otf2.events.Leave)]
    check(sorted(a.get("memory address", 0) for a in mallocs) ==
          sorted(e["leaked"] + [e["freed"]]) and all(a.get("allocated bytes") == 64 * MiB for a in mallocs),
          "cudaMalloc leaves carry address and size: %s" % mallocs)
    frees = [attrs(x) for x in calls.get("cudaFree", []) if isinstance(x, otf2.events.Leave)]
    check(any(a.get("memory address") == e["freed"] for a in frees), "cudaFree's leave: %s" % frees)
    asyncs = [attrs(x) for x in calls.get("cudaMallocAsync", []) if isinstance(x, otf2.events.Leave)]
    check(asyncs and asyncs[0].get("allocated bytes") == e["async_bytes"] and
          asyncs[0].get("memory address") == e["async"], "cudaMallocAsync's leave: %s" % asyncs)
    print("  %s: device in use %s MiB; never freed %s; %d memory events" %
          (source, values, [(b["address"], b["path"]) for b in largest], len(ev)))


def test_planted_records():
    """GPU memory from CUPTI's memory records (the default)."""
    check_planted("records")


def test_planted_calls():
    """GPU memory from the CUDA calls (--gpu-memory=api)."""
    check_planted("calls")


def test_sources_agree():
    """Both sources give the same rows for device, managed and pinned memory."""
    a, _ = memory_rows(planted("records")[0])
    b, _ = memory_rows(planted("calls")[0])
    keys = ("high_water_bytes", "allocations", "frees", "left_blocks", "left_bytes")
    for k in sorted(set(a) | set(b)):
        if k[1] == "static":  # module globals: only the records see them
            continue
        check(k in a and k in b and all(a[k][x] == b[k][x] for x in keys),
              "%s: records %s, calls %s" % (k, {x: a.get(k, {}).get(x) for x in keys},
                                            {x: b.get(k, {}).get(x) for x in keys}))


def test_threads():
    """4 threads allocating and freeing at once: every free matched."""
    for source in SOURCES:
        out, proc = measure([APP, "threads"], "gpumem-threads-" + source,
                            launcher_args=["--gpu"] + SOURCES[source][1])
        e = expectation(proc)
        if not e:
            continue
        rows, mem = memory_rows(out)
        d = next((r for (dev, kind), r in rows.items() if kind == "device"), None)
        if check(d, "%s: a device row: %s" % (source, rows)):
            check((d["allocations"], d["frees"], d["left_blocks"]) ==
                  (e["device_allocations"], e["device_frees"], 0),
                  "%s: allocations, frees, left: %s" % (source, (d["allocations"], d["frees"],
                                                                d["left_blocks"])))
            check(MiB <= d["high_water_bytes"] <= e["most_peak"],
                  "%s: high-water %d between 1 and 8 MiB" % (source, d["high_water_bytes"]))
        check(mem.get("unknown_frees") == 0, "%s: unknown frees %s" % (source, mem.get("unknown_frees")))


def test_off():
    """--gpu-memory=no: no memory location, no memory section."""
    out, proc = measure([APP], "gpumem-off", launcher_args=["--gpu", "--gpu-memory=no"])
    check(expectation(proc) is not None, "the program ran")
    trace = Trace(out)
    check(not [l for l in trace.locations if l.name.endswith(" memory")], "a memory location")
    gpu = load_json(out, "profile.json").get("gpu") or {}
    check(gpu.get("memory") is None, "profile.json gpu.memory: %s" % gpu.get("memory"))


def test_torch():
    """PyTorch: sysmeasure's device high-water mark is PyTorch's
    max_memory_reserved (what its caching allocator took from CUDA), at
    least max_memory_allocated, at most the device memory in use."""
    probe = subprocess.run([sys.executable, "-c", "import torch; assert torch.cuda.is_available()"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if probe.returncode != 0:
        smtest.skip("no PyTorch with a GPU in %s" % sys.executable)
    for source in SOURCES:
        out, proc = measure([sys.executable, TORCH_CASE], "gpumem-torch-" + source,
                            launcher_args=["--gpu"] + SOURCES[source][1])
        t = expectation(proc)
        if not t or not check("skip" not in t, "torch_memory.py: %s" % t):
            continue
        rows, mem = memory_rows(out)
        d = rows.get(("CUDA %d" % t["device"], "device"))
        if not check(d, "%s: a device row: %s" % (source, sorted(rows))):
            continue
        hw = d["high_water_bytes"]
        check(hw == t["max_memory_reserved"],
              "%s: high-water %d bytes, torch.cuda.max_memory_reserved() %d" %
              (source, hw, t["max_memory_reserved"]))
        check(t["max_memory_allocated"] <= hw <= t["used_peak"],
              "%s: max_memory_allocated %d <= high-water %d <= device memory used %d" %
              (source, t["max_memory_allocated"], hw, t["used_peak"]))
        print("  %s: high-water %d, torch max_memory_reserved %d, max_memory_allocated %d, "
              "used at the peak %d, left at the end %d (torch reserved %d) [torch %s]" %
              (source, hw, t["max_memory_reserved"], t["max_memory_allocated"], t["used_peak"],
               d["left_bytes"], t["reserved_end"], t["torch"]))


if __name__ == "__main__":
    smtest.run_cases(globals())
