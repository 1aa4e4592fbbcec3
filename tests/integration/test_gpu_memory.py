"""GPU memory in the OTF2 archive, without a GPU: the archive that the GPU
memory unit test (tests/unit/test-gpu-memory) leaves after planting the
CUDA test program's allocations through the adapter table (3 x 64 MiB, one
freed, 32 MiB stream-ordered and freed, 16 MiB managed, 8 MiB pinned, a
free of a block from before measurement; 3 MiB allocated and freed on a
second device), read back with the OTF2 Python reader:

- per device a location "CUDA <n> memory" of type ACCELERATOR_STREAM in
  that device's location group (ACCELERATOR), beside its streams;
- on it one Metric event per allocation or free, in time order, whose value
  is the bytes of its kind in use after it (metrics "CUDA 0 memory in use:
  device", ...: absolute values, unit bytes), peaking at the planted 192 MiB;
- each with the attributes "memory address", "allocated bytes" or "freed
  bytes" (a free carries its block's size) and "correlation id", which the
  API call's Enter on the calling thread carries too;
- the Perfetto conversion keeps them as counter tracks;
- across MPI ranks (tests/programs/gpu-memory-ranks: rank r peaks at
  (r + 1) x 64 MiB and never frees one 64 MiB block): one row per device
  and kind with the largest high-water mark, its rank and the mean, the
  blocks never freed of every rank with the call path that allocated them,
  each rank's memory location in the archive -- at MPI_Finalize and, after
  MPI_Abort, through sysmeasure-merge alike."""
import os
import subprocess

import otf2
import smtest
from smtest import BUILD, Trace, check, load_json, mpi_measure

MiB = 1024 * 1024
PLANTED = [64, 128, 192, 128, 160, 128, 16, 8]  # MiB in use after each operation, device 0


@smtest.fixture
def archive():
    folder = os.path.join(smtest.workdir("gpu-memory"), "out")
    res = subprocess.run([os.path.join(BUILD, "tests", "unit", "test-gpu-memory")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300,
                         env=dict(os.environ, SM_TEST_KEEP_OUTPUT=folder))
    check(res.returncode == 0, "test-gpu-memory: %s" % res.stderr[-2000:])
    return folder, Trace(folder)


def location(trace, name):
    for loc in trace.locations:
        if loc.name == name:
            return loc
    return None


def metric_events(trace, loc):
    return [e for e in trace.events[loc] if isinstance(e, otf2.events.Metric)]


def attrs(event):
    return {a.name: v for a, v in (event.attributes or {}).items()}


def metric_name(event):
    m = event.metric
    members = getattr(m, "members", None)
    if members is None:  # an instance: its class's
        members = m.metric_class.members
    return members[0].name, members[0].unit, members[0].value_type, members[0].metric_mode


def test_memory_locations():
    """One memory location per device, among the device's streams."""
    _, trace = archive()
    for name in ("CUDA 0 memory", "CUDA 1 memory"):
        loc = location(trace, name)
        if not check(loc is not None, "location %s in %s" % (name, [l.name for l in trace.locations])):
            continue
        check(loc.type == otf2.LocationType.ACCELERATOR_STREAM, "%s: type %s" % (name, loc.type))
        group = loc.group
        check(group.location_group_type == otf2.LocationGroupType.ACCELERATOR,
              "%s: in group %s of type %s" % (name, group.name, group.location_group_type))
        check(group.name.startswith("GPU " + name.split()[1]), "%s: group %s" % (name, group.name))


def test_in_use_timeline():
    """The bytes in use after each operation, in time order, peaking at the
    planted 192 MiB on device 0; device 1 back to 0."""
    _, trace = archive()
    loc = location(trace, "CUDA 0 memory")
    if not check(loc is not None, "CUDA 0 memory"):
        return
    ev = metric_events(trace, loc)
    values = [e.values[0] for e in ev]
    check(values == [v * MiB for v in PLANTED], "in use after each operation: %s" %
          [v // MiB for v in values])
    check(all(a.time <= b.time for a, b in zip(ev, ev[1:])), "in time order")
    check(max(values) == 192 * MiB, "the peak is the planted high-water mark")
    names = [metric_name(e) for e in ev]
    check([n[0] for n in names] == ["CUDA 0 memory in use: device"] * 6 +
          ["CUDA 0 memory in use: managed", "CUDA 0 memory in use: pinned host"],
          "metric per kind: %s" % [n[0] for n in names])
    check(all(n[1] == "bytes" and n[3] == otf2.MetricMode.ABSOLUTE_POINT for n in names),
          "bytes, absolute values: %s" % set((n[1], n[3]) for n in names))
    loc1 = location(trace, "CUDA 1 memory")
    v1 = [e.values[0] for e in metric_events(trace, loc1)] if loc1 else []
    check(v1 == [3 * MiB, 0], "device 1: %s" % v1)


def test_attributes_and_correlation():
    """Address, bytes and correlation id on each event; the API call's
    Enter on the calling thread carries the same correlation id."""
    _, trace = archive()
    loc = location(trace, "CUDA 0 memory")
    ev = metric_events(trace, loc) if loc else []
    if not check(len(ev) == 8, "8 events: %d" % len(ev)):
        return
    a = [attrs(e) for e in ev]
    check(a[0] == {"memory address": 0x7f0010000000, "allocated bytes": 64 * MiB,
                   "correlation id": 101}, "the first allocation: %s" % a[0])
    check(a[3] == {"memory address": 0x7f0020000000, "freed bytes": 64 * MiB,
                   "correlation id": 104}, "the free carries its block's size: %s" % a[3])
    check(a[4]["allocated bytes"] == 32 * MiB and a[5]["freed bytes"] == 32 * MiB,
          "the stream-ordered pair: %s %s" % (a[4], a[5]))
    enters = {}
    for l, evs in trace.events.items():
        if l.type != otf2.LocationType.CPU_THREAD:
            continue
        for e in evs:
            if isinstance(e, otf2.events.Enter):
                c = attrs(e).get("correlation id")
                if c is not None:
                    enters[c] = e.region.name
    check(enters.get(101) == "cudaMalloc" and enters.get(104) == "cudaFree" and
          enters.get(105) == "cudaMallocAsync",
          "the API calls with the same ids: %s" % sorted(enters.items()))


def test_perfetto_counter_tracks():
    """sysmeasure-convert turns the memory metrics into counter tracks."""
    folder, _ = archive()
    conv = os.path.join(BUILD, "sysmeasure-convert")
    if not os.path.exists(conv):
        smtest.skip("no sysmeasure-convert in this build")
    res = subprocess.run([conv, "--perfetto", folder], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(res.returncode == 0, "sysmeasure-convert: %s" % res.stderr)
    with open(os.path.join(folder, "trace.pftrace"), "rb") as f:
        data = f.read()
    check(b"CUDA 0 memory in use: device" in data, "the metric's name in trace.pftrace")


def check_ranks(out, what):
    """The job's GPU memory figures of the 2-rank planted program."""
    mem = (load_json(out, "profile.json").get("gpu") or {}).get("memory") or {}
    rows = mem.get("devices", [])
    check(len(rows) == 1, "%s: one row (CUDA 0, device): %s" % (what, rows))
    if rows:
        r = rows[0]
        got = (r["device"], r["kind"], r["ranks"], r["high_water_bytes"], r["high_water_rank"],
               r["high_water_mean_bytes"], r["allocations"], r["frees"], r["left_blocks"],
               r["left_bytes"])
        check(got == ("CUDA 0", "device", 2, 128 * MiB, 1, 96.0 * MiB, 3, 1, 2, 128 * MiB),
              "%s: device row %s" % (what, got))
    nf = mem.get("never_freed") or {}
    largest = [(b["rank"], b["bytes"], b["path"]) for b in nf.get("largest", [])]
    check(largest == [(0, 64 * MiB, "planted > cudaMalloc"), (1, 64 * MiB, "planted > cudaMalloc")],
          "%s: the blocks never freed of both ranks: %s" % (what, largest))
    meta = load_json(out, "metadata.json")
    m = sorted((x["rank"], x["max"], x["last"]) for x in meta.get("metrics", [])
               if x["name"] == "CUDA 0 memory in use: device")
    check(m == [(0, 64 * MiB, 64 * MiB), (1, 128 * MiB, 64 * MiB)],
          "%s: each rank's high-water mark and what it left in metadata.json: %s" % (what, m))
    check((meta.get("gpu_memory") or {}).get("never_freed", {}).get("blocks") == 2,
          "%s: metadata.json gpu_memory" % what)
    trace = Trace(out)
    lanes = sorted([e.values[0] // MiB for e in trace.events[l] if isinstance(e, otf2.events.Metric)]
                   for l in trace.locations if l.name == "CUDA 0 memory")
    check(lanes == [[64], [64, 128, 64]], "%s: each rank's memory lane: %s" % (what, lanes))


def need_mpi():
    if os.environ.get("SM_HAVE_MPI", "yes") != "yes":
        smtest.skip("built without MPI")
    return smtest.program("gpu-memory-ranks")


def test_ranks():
    """2 ranks to MPI_Finalize: the figures reduced over the ranks."""
    prog = need_mpi()
    out, proc = mpi_measure(2, [prog], "gpu-memory-ranks")
    check(len([l for l in proc.stdout.splitlines() if l.startswith("{")]) == 2, "both ranks ran")
    check_ranks(out, "MPI_Finalize")


def test_ranks_merged():
    """Rank 1 calls MPI_Abort: sysmeasure-merge gives the same figures."""
    prog = need_mpi()
    out, proc = mpi_measure(2, [prog, "abort"], "gpu-memory-abort", expect_rc=None,
                            env={"OMPI_MCA_odls_base_sigkill_timeout": "5"})
    check(proc.returncode != 0, "an aborted job fails: %d" % proc.returncode)
    merge = subprocess.run([os.path.join(BUILD, "sysmeasure-merge"), out], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    check(merge.returncode == 0 and "2 of 2 ranks merged" in merge.stderr,
          "sysmeasure-merge: %s" % merge.stderr)
    check_ranks(out, "merged")


if __name__ == "__main__":
    smtest.run_cases(globals())
