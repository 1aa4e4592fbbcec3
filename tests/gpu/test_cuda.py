"""GPU integration test (make check-gpu; needs an NVIDIA GPU): the CUDA test
program gpu_app under the launcher, its archive read back with the OTF2
Python reader and checked against what the program says it did."""

import json
import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.environ.get("SM_SRCDIR", "."), "tests", "lib"))
import otf2  # noqa: E402
from smtest import (Trace, check, check_trace_consistent, finish, load_json,  # noqa: E402
                    measure, mpi_measure)

PROGRAMS = os.environ.get("SM_GPU_PROGRAMS",
                          os.path.join(os.environ.get("SM_BUILDDIR", "."), "tests", "gpu"))
APP = os.path.join(PROGRAMS, "gpu_app")
APP_MPI = os.path.join(PROGRAMS, "gpu_app_mpi")
SLACK_NS = 5000  # "a few µs": clocks of host and CUPTI read apart
# The runs whose copies are checked against their calls take GPU memory from
# the calls: with CUPTI's memory records on (the default), CUPTI's pageable
# copies end up to ~14 µs after their cudaMemcpy returns (H200, CUDA 13,
# 2026-11-28; 5 µs and inside without them).  test_memory covers the records.
TIMED = ["--gpu-memory=api"]


def expectation(proc):
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            return json.loads(line)
    check(False, "the program printed no expectation: %s" % proc.stdout)
    return None


def attrs(event):
    return {a.name: v for a, v in event.attributes.items()} if event.attributes else {}


def is_stream(loc):
    return loc.type == otf2.LocationType.ACCELERATOR_STREAM


def intervals(trace, locations):
    """(location, enter, leave) of every region visit on those locations."""
    out = []
    for loc in locations:
        stack = []
        for e in trace.events[loc]:
            if isinstance(e, otf2.events.Enter):
                stack.append(e)
            elif isinstance(e, otf2.events.Leave) and stack:
                out.append((loc, stack.pop(), e))
    return out


def gpu_part(trace):
    streams = [l for l in trace.locations if is_stream(l)]
    cpus = [l for l in trace.locations if l.type == otf2.LocationType.CPU_THREAD]
    return streams, intervals(trace, streams), intervals(trace, cpus)


def check_structure(trace, streams, n_ranks):
    check(streams, "no ACCELERATOR_STREAM locations")
    for s in streams:
        g = s.group
        check(g.location_group_type == otf2.LocationGroupType.ACCELERATOR,
              "stream %s is in group %s of type %s" % (s.name, g.name, g.location_group_type))
        check(g.creating_location_group is not None and
              g.creating_location_group.location_group_type == otf2.LocationGroupType.PROCESS,
              "device group %s has no creating process group" % g.name)
        node = g.system_tree_parent
        domains = [d.system_tree_node_domain for d in trace.definitions.system_tree_node_domains
                   if d.system_tree_node == node]
        check(otf2.SystemTreeDomain.ACCELERATOR_DEVICE in domains,
              "device group %s hangs under node %s without domain ACCELERATOR_DEVICE (%s)"
              % (g.name, node.name, domains))
        check("H100" in node.name or "NVIDIA" in node.name or "GPU" in node.name,
              "device node name %r" % node.name)
    groups = {s.group for s in streams}
    check(len(groups) == n_ranks, "%d device groups for %d ranks (one GPU)" % (len(groups), n_ranks))
    props = {p.name: p.value for p in trace.definitions.system_tree_node_properties}
    check(str(props.get("UUID", "")).startswith("GPU-"), "device UUID property: %s" % props)


def check_full(out, proc, trace, expect, rank_of=lambda loc: 0):
    streams, acts, calls = gpu_part(trace)
    kernels = [(l, en, lv) for l, en, lv in acts
               if en.region.paradigm == otf2.Paradigm.CUDA and en.region.region_role == otf2.RegionRole.FUNCTION
               and not en.region.name.startswith("[")]
    # Kernel names (demangled: "scale_kernel(float*, int, float)").
    counts = {}
    for _, en, _ in kernels:
        base = en.region.name.split("(")[0]
        counts[base] = counts.get(base, 0) + 1
    n_ranks = len({rank_of(l) for l, _, _ in calls}) or 1
    for name, n in expect["kernels"].items():
        check(counts.get(name, 0) == n * n_ranks,
              "kernel %s: %d activities, expected %d" % (name, counts.get(name, 0), n * n_ranks))

    # Correlation: launches and kernels by (rank, id).  Launches while a
    # stream is captured into a graph run nothing: they become its nodes.
    begin = {}
    captured = []
    for loc, en, lv in sorted(calls, key=lambda c: c[1].time):
        if en.region.name == "cudaStreamBeginCapture":
            begin[loc] = en.time
        elif en.region.name == "cudaStreamEndCapture" and loc in begin:
            captured.append((loc, begin.pop(loc), lv.time))
    launch = {}
    n_captured = 0
    for loc, en, lv in calls:
        if en.region.name == "cudaLaunchKernel" and any(
                l == loc and t0 <= en.time <= t1 for l, t0, t1 in captured):
            n_captured += 1
            continue
        if en.region.name in ("cudaLaunchKernel", "cudaGraphLaunch"):
            cid = attrs(en).get("correlation id")
            if check(cid, "%s without a correlation id" % en.region.name):
                launch[(rank_of(loc), cid)] = (en, lv)
    per_launch = {}
    for loc, en, lv in kernels:
        cid = attrs(en).get("correlation id")
        key = (rank_of(loc), cid)
        per_launch.setdefault(key, []).append((en, lv))
        if check(key in launch, "kernel %s (correlation %s) has no launch call"
                 % (en.region.name, cid)):
            check(en.time >= launch[key][0].time,
                  "kernel %s starts %d ns before its launch call" % (en.region.name,
                                                                       launch[key][0].time - en.time))
    for key, (en, lv) in launch.items():
        n = len(per_launch.get(key, []))
        want = expect["graph_nodes"] if en.region.name == "cudaGraphLaunch" else 1
        check(n == want, "%s (correlation %s) has %d kernel activities, expected %d"
              % (en.region.name, key[1], n, want))
    check(n_captured == expect["graph_nodes"] * n_ranks,
          "%d launches inside stream capture, expected %d" % (n_captured, expect["graph_nodes"] * n_ranks))
    n_graph = sum(1 for en, _ in launch.values() if en.region.name == "cudaGraphLaunch")
    check(n_graph == expect["graph_launches"] * n_ranks, "%d cudaGraphLaunch calls" % n_graph)

    # Copies: bytes per direction; pageable ones inside their cudaMemcpy.
    moved = {}
    for loc, en, lv in acts:
        name = en.region.name
        if name.startswith("[CUDA memcpy") or name.startswith("[CUDA memset"):
            check(en.region.region_role == otf2.RegionRole.DATA_TRANSFER,
                  "%s has role %s" % (name, en.region.region_role))
            key = name.strip("[]").replace("CUDA ", "")
            moved[key] = moved.get(key, 0) + attrs(en).get("bytes", 0)
    for d, b in expect["bytes"].items():
        check(moved.get("memcpy " + d, 0) == b * n_ranks,
              "memcpy %s: %d bytes in the trace, the program copied %d" % (d, moved.get("memcpy " + d, 0), b * n_ranks))
    check(moved.get("memset", 0) == expect["memset"] * n_ranks,
          "memset: %d bytes, expected %d" % (moved.get("memset", 0), expect["memset"] * n_ranks))
    copy_of = {}
    for loc, en, lv in acts:
        if en.region.name.startswith("[CUDA memcpy"):
            copy_of[(rank_of(loc), attrs(en).get("correlation id"))] = (en, lv)
    pageable = 0
    for loc, en, lv in calls:
        if en.region.name != "cudaMemcpy":
            continue
        c = copy_of.get((rank_of(loc), attrs(en).get("correlation id")))
        if check(c, "cudaMemcpy (correlation %s) has no copy activity" % attrs(en).get("correlation id")):
            pageable += 1
            check(c[0].time + SLACK_NS >= en.time and c[1].time <= lv.time + SLACK_NS,
                  "pageable copy [%d, %d] outside its cudaMemcpy call [%d, %d]"
                  % (c[0].time, c[1].time, en.time, lv.time))
    check(pageable == expect["pageable"] * n_ranks, "%d pageable cudaMemcpy calls" % pageable)
    print("  %d rank(s), %d stream locations: kernels %s; %d launch calls matched by correlation id "
          "(%d launches captured into the graph); copied bytes %s; %d pageable copies inside "
          "their cudaMemcpy" % (n_ranks, len(streams), counts, len(launch), n_captured,
                                {k: v for k, v in sorted(moved.items())}, pageable))

    # NVTX ranges and marks on the host threads; the failed call's error.
    names = {en.region.name for _, en, _ in calls}
    for n in expect["nvtx"]:
        check(n in names, "NVTX range/mark %r not in the trace" % n)
    errors = [attrs(lv).get("error code") for _, en, lv in calls if en.region.name == "cudaMalloc"]
    check(expect["failed_error"] in errors,
          "the failed cudaMalloc has no error code %d (%s)" % (expect["failed_error"], errors))
    return kernels


def check_summary(out, kernels):
    """profile.json's GPU section against the archive."""
    prof = load_json(out, "profile.json")
    gpu = prof.get("gpu")
    if not check(gpu, "profile.json has no gpu section"):
        return
    by_name = {}
    for _, en, lv in kernels:
        by_name.setdefault(en.region.name, []).append(lv.time - en.time)
    table = {k["name"]: k for k in gpu.get("kernels", [])}
    for name, durs in by_name.items():
        row = table.get(name)
        if not check(row, "kernel %s missing from the summary" % name):
            continue
        check(row["calls"] == len(durs), "%s: %d calls in the summary, %d in the archive"
              % (name, row["calls"], len(durs)))
        total = sum(durs)
        check(abs(row["total_ns"] - total) <= max(1000, total * 0.01),
              "%s: total %d ns in the summary, %d in the archive" % (name, row["total_ns"], total))
        check(row["min_ns"] <= min(durs) + 1000 and row["max_ns"] + 1000 >= max(durs),
              "%s: min/max %s/%s against %d/%d" % (name, row["min_ns"], row["max_ns"], min(durs), max(durs)))
    text = open(os.path.join(out, "profile.txt")).read()
    check("GPU kernels" in text, "profile.txt has no GPU section")
    print("  summary: %d kernels agree with the archive (calls, total, min, max)" % len(by_name))


def check_nvtx_extra(trace):
    """NVTX before the first CUDA call, and a start/end range ended on
    another thread: a mark on each end's thread with the same range id, and
    the whole range on an "async ranges" lane."""
    cpu = [l for l in trace.locations if l.type == otf2.LocationType.CPU_THREAD]
    first = {}  # region name -> first Enter time on a CPU thread
    for loc in cpu:
        for e in trace.events[loc]:
            if isinstance(e, otf2.events.Enter):
                n = e.region.name
                if n not in first or e.time < first[n]:
                    first[n] = e.time
    cuda = [t for n, t in first.items() if n.startswith("cuda")]
    for n in ("before cuda", "early"):
        check(n in first and cuda and first[n] < min(cuda),
              "NVTX %r before the first CUDA call: %s, first CUDA call at %s"
              % (n, first.get(n), min(cuda) if cuda else None))
    ends = {}
    for loc in cpu:
        for e in trace.events[loc]:
            if isinstance(e, otf2.events.Enter) and e.region.name in ("across threads (start)",
                                                                     "across threads (stop)"):
                ends[e.region.name] = (loc, attrs(e).get("nvtx range id"))
    start, stop = ends.get("across threads (start)"), ends.get("across threads (stop)")
    if check(start and stop, "start and stop marks of the range ended on another thread: %s" % ends):
        check(start[0] != stop[0], "start and stop marks on different threads: %s, %s"
              % (start[0].name, stop[0].name))
        check(start[1] is not None and start[1] == stop[1],
              "the marks carry the same nvtx range id: %s, %s" % (start[1], stop[1]))
    lanes = [(l, en, lv) for l, en, lv in intervals(trace, cpu)
             if en.region.name == "across threads"]
    check(len(lanes) == 1 and lanes[0][0].name.startswith("async ranges"),
          "the range ended on another thread is one interval on an async ranges lane: %s"
          % [(l.name, lv.time - en.time) for l, en, lv in lanes])
    if lanes:
        print("  NVTX: 'before cuda' and 'early' before the first CUDA call; 'across threads' "
              "%d ns on %s, start on %s, stop on %s" % (lanes[0][2].time - lanes[0][1].time,
              lanes[0][0].name, start[0].name if start else "?", stop[0].name if stop else "?"))


def stream_kernels(trace, name):
    return [(l, e) for l, e in trace.of_type(otf2.events.Enter)
            if is_stream(l) and e.region.name.startswith(name)]


# ---------------------------------------------------------------- one process

print("gpu_app under sysmeasure:")
out, proc = measure([APP], "gpu-full", launcher_args=TIMED)
expect = expectation(proc)
if expect:
    trace = Trace(out)
    check_trace_consistent(trace)
    streams = [l for l in trace.locations if is_stream(l)]
    check_structure(trace, streams, 1)
    check(len(streams) >= 2, "%d stream locations, the program used 2 streams" % len(streams))
    kernels = check_full(out, proc, trace, expect)
    check_summary(out, kernels)
    check_nvtx_extra(trace)
    meta = load_json(out, "metadata.json")
    print("metadata gpu_dropped_records:", json.dumps(meta.get("metadata", {}).get("gpu_dropped_records")))

# Records survive exit() from another thread with kernels in flight.
print("exit() from a thread with kernels in flight:")
out, proc = measure([APP, "exit-thread"], "gpu-exit")
trace = Trace(out)
check_trace_consistent(trace)
spins = [e for l, e in trace.of_type(otf2.events.Enter) if is_stream(l) and e.region.name.startswith("spin_kernel")]
check(len(spins) == 4, "%d spin_kernel activities after exit() from a thread, expected 4" % len(spins))
print("  %d of 4 spin_kernel activities in the archive" % len(spins))

# A fatal signal with kernels in flight: the kernels finished before it are
# in the archive (the handler flushes CUPTI's buffers before dying).
for mode, sig in (("segv", signal.SIGSEGV), ("term", signal.SIGTERM)):
    print("fatal signal (%s) with kernels in flight:" % mode)
    out, proc = measure([APP, mode], "gpu-" + mode, expect_rc=-sig)
    if check(os.path.exists(os.path.join(out, "traces.otf2")), "no archive after %s" % mode):
        trace = Trace(out)
        check_trace_consistent(trace)
        done = stream_kernels(trace, "done_kernel")
        spins = stream_kernels(trace, "spin_kernel")
        check(len(done) == 5, "%s: %d done_kernel activities, expected 5" % (mode, len(done)))
        print("  %d of 5 finished done_kernel, %d of 4 in-flight spin_kernel in the archive"
              % (len(done), len(spins)))

# --no-gpu: the program runs, nothing of the GPU is measured.
print("--no-gpu:")
out, proc = measure([APP], "gpu-off", launcher_args=["--no-gpu"])
trace = Trace(out)
check(not [l for l in trace.locations if is_stream(l)], "--no-gpu still recorded streams")
check("cudaLaunchKernel" not in trace.regions, "--no-gpu still recorded CUDA API calls")

# Another tool holds CUPTI: one line naming it; the program and the CPU
# measurement go on, and the summary says it.
OTHER = os.path.join(PROGRAMS, "other_tool.so")
if os.path.exists(OTHER):
    print("beside another CUPTI subscriber:")
    out, proc = measure([APP], "gpu-other", env={"LD_PRELOAD": OTHER})
    lines = [l for l in proc.stderr.splitlines() if "another tool holds CUPTI" in l]
    check(len(lines) == 1 and "other-tool" in lines[0],
          "one line naming the other CUPTI tool: %s" % proc.stderr)
    print("  " + (lines[0] if lines else "(no line)"))
    check(expectation(proc) is not None, "the program ran to its end beside the other tool")
    trace = Trace(out)
    check(not [l for l in trace.locations if is_stream(l)], "streams recorded beside another tool")
    check(any(l.type == otf2.LocationType.CPU_THREAD for l in trace.locations),
          "no CPU thread measured beside another tool")
    meta = load_json(out, "metadata.json")
    check("other-tool" in json.dumps(meta), "metadata.json does not name the other tool")
    check("other-tool" in open(os.path.join(out, "profile.txt")).read(),
          "profile.txt does not name the other tool")

# ---------------------------------------------------------------- MPI + CUDA, 2 ranks on one GPU

if os.path.exists(APP_MPI):
    print("mpirun -np 2 sysmeasure gpu_app_mpi (one GPU):")
    out, proc = mpi_measure(2, [APP_MPI], "gpu-mpi", launcher_args=TIMED)
    lines = [json.loads(l) for l in proc.stdout.splitlines() if l.startswith("{")]
    check(len(lines) == 2, "2 ranks should print their expectation: %s" % proc.stdout)
    if lines:
        trace = Trace(out)
        check_trace_consistent(trace)

        def rank_of(loc):
            g = loc.group
            if g.location_group_type == otf2.LocationGroupType.ACCELERATOR:
                g = g.creating_location_group
            return int(g.name.split()[-1]) if g.name.startswith("MPI Rank") else 0
        streams = [l for l in trace.locations if is_stream(l)]
        check_structure(trace, streams, 2)
        check({rank_of(s) for s in streams} == {0, 1}, "streams of both ranks in one archive")
        kernels = check_full(out, proc, trace, lines[0], rank_of)
        check_summary(out, kernels)
        gpu = load_json(out, "profile.json").get("gpu") or {}
        for k in gpu.get("kernels", []):
            check(k["ranks"]["n"] == 2, "kernel %s: across ranks n=%s" % (k["name"], k["ranks"]["n"]))

    # MPI_Abort on rank 0 with kernels in flight: both ranks' finished
    # kernels reach the merged archive.
    print("MPI_Abort with kernels in flight, then sysmeasure-merge:")
    out, proc = mpi_measure(2, [APP_MPI, "abort"], "gpu-abort", expect_rc=None,
                            env={"OMPI_MCA_odls_base_sigkill_timeout": "10"})
    check(proc.returncode != 0, "an aborted job fails: %d" % proc.returncode)
    merge = subprocess.run([os.path.join(os.environ.get("SM_BUILDDIR", "."), "sysmeasure-merge"), out],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    print("  " + merge.stderr.strip().replace("\n", "\n  "))
    if check(os.path.exists(os.path.join(out, "traces.otf2")), "no archive after MPI_Abort and merge"):
        trace = Trace(out)
        check_trace_consistent(trace)
        done = stream_kernels(trace, "done_kernel")
        spins = stream_kernels(trace, "spin_kernel")
        per_rank = {}
        for l, _ in done:
            g = l.group.creating_location_group
            per_rank[g.name] = per_rank.get(g.name, 0) + 1
        check(len(done) == 10 and len(per_rank) == 2,
              "%d done_kernel activities after MPI_Abort, expected 5 per rank: %s" % (len(done), per_rank))
        print("  finished done_kernel per rank: %s; in-flight spin_kernel: %d of 4" % (per_rank, len(spins)))

finish()
