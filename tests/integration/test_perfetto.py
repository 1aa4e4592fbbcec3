"""trace.pftrace (Perfetto's trace format), decoded by Google's protobuf
library for Python with our message definitions (src/writers/perfetto_trace.proto
compiled by protoc), checked against the OTF2 archive of the same run read
with the OTF2 Python reader:

- a real 3-rank MPI job (tests/programs/perfetto_job.c: a ring of blocking
  and non-blocking messages, an OpenMP region on 2 threads, user regions with
  planted visit counts and annotations) run with --perfetto and process
  sampling: a process track per rank, a thread track per thread, slice
  counts per (rank, thread, name) equal to the archive's enters, the
  annotations as arguments, a counter track per sampled metric with every
  value, a flow from each send to its receive;
- the GPU layer's unit test (synthetic CUDA streams and activities) left
  its archive for sysmeasure-convert: a track per stream under the process,
  its slices, the flow from the launch call to its kernel;
- bad input: not an output folder, a damaged anchor file, a truncated event
  file: one line, exit 2, no trace.pftrace left."""
import importlib
import os
import shutil
import subprocess
import sys

import otf2
import smtest
from smtest import (BUILD, CLANG, SRC, Trace, build_program, check, check_messages,
                    mpi_measure, need_openmp, user_api_flags, workdir)

PROTOC = os.environ.get("SM_PROTOC") or shutil.which("protoc")
try:
    import google.protobuf  # noqa: F401 (Debian's python3-protobuf)
except ImportError:
    PROTOC = None
CONVERT = os.path.join(BUILD, "sysmeasure-convert")
pb = TE = None  # the decoder and its TrackEvent, once load_decoder() ran


def need_perfetto():
    """Skip (exit 77) unless this build writes Perfetto traces and this
    machine can decode them; the job needs OpenMP and MPI too."""
    if os.environ.get("SM_HAVE_PERFETTO") != "yes":
        print("skipped: this build has no Perfetto writer (protobuf-c not found)")
        sys.exit(77)
    if not PROTOC or PROTOC == "no":
        print("skipped: needs protoc and Python's google.protobuf (protobuf-compiler, python3-protobuf)")
        sys.exit(77)
    need_openmp()
    if os.environ.get("SM_HAVE_MPI", "yes") != "yes":
        print("skipped: built without MPI")
        sys.exit(77)


def load_decoder():
    """The decoder: our .proto compiled for Python by protoc."""
    global pb, TE
    gen = workdir("perfetto-proto")
    subprocess.run([PROTOC, "--proto_path=" + os.path.join(SRC, "src", "writers"),
                    "--python_out=" + gen, "perfetto_trace.proto"], check=True)
    sys.path.insert(0, gen)
    pb = importlib.import_module("perfetto_trace_pb2")
    TE = pb.TrackEvent


class Pftrace:
    """trace.pftrace decoded: tracks, and per track its events with names
    resolved through each sequence's interned data."""

    def __init__(self, path):
        with open(path, "rb") as f:
            data = f.read()
        trace = pb.Trace()
        trace.ParseFromString(data)
        self.packets = list(trace.packet)
        self.tracks = {}     # uuid -> descriptor
        self.process = {}    # pid -> process name
        self.events = {}     # track uuid -> [(ts, type, name, args, flows, ends)]
        interned = {}        # sequence -> ({iid: event name}, {iid: arg name})
        default_track = {}   # sequence -> its events' track (TrackEventDefaults)
        self.cleared = set()
        self.errors = []
        for p in self.packets:
            if p.HasField("track_descriptor"):
                td = p.track_descriptor
                self.tracks[td.uuid] = td
                if td.HasField("process"):
                    self.process[td.process.pid] = td.process.process_name
                continue
            seq = p.trusted_packet_sequence_id
            if p.sequence_flags & 1:
                interned[seq] = ({}, {})
                self.cleared.add(seq)
                default_track.pop(seq, None)
            if p.HasField("trace_packet_defaults"):
                default_track[seq] = p.trace_packet_defaults.track_event_defaults.track_uuid
            if not p.HasField("track_event"):
                continue
            if seq not in interned:
                self.errors.append("sequence %d used before its state was cleared" % seq)
                interned[seq] = ({}, {})
            names, anames = interned[seq]
            if p.HasField("interned_data"):
                for n in p.interned_data.event_names:
                    names[n.iid] = n.name
                for n in p.interned_data.debug_annotation_names:
                    anames[n.iid] = n.name
            e = p.track_event
            name = e.name if e.HasField("name") else names.get(e.name_iid) if e.HasField("name_iid") else None
            if e.type in (TE.TYPE_SLICE_BEGIN, TE.TYPE_INSTANT) and name is None:
                self.errors.append("an event names iid %d, never interned" % e.name_iid)
            args = {}
            for a in e.debug_annotations:
                key = a.name if a.HasField("name") else anames.get(a.name_iid, "?%d" % a.name_iid)
                kind = None
                for field in ("int_value", "uint_value", "double_value", "string_value",
                              "bool_value"):
                    if a.HasField(field):
                        kind = field
                args[key] = getattr(a, kind) if kind else None
            track = e.track_uuid if e.HasField("track_uuid") else default_track.get(seq)
            if track is None:
                self.errors.append("an event without a track on sequence %d" % seq)
            self.events.setdefault(track, []).append(
                (p.timestamp, e.type, name, args, list(e.flow_ids), list(e.terminating_flow_ids),
                 e.counter_value if e.HasField("counter_value") else e.double_counter_value))

    def track_key(self, uuid):
        """(process name, track name) of a thread or stream track."""
        td = self.tracks[uuid]
        if td.HasField("thread"):
            return (self.process.get(td.thread.pid), td.thread.thread_name)
        parent = self.tracks.get(td.parent_uuid)
        pname = parent.process.process_name if parent is not None and parent.HasField("process") else None
        if parent is not None and not parent.HasField("process"):  # a counter under a location
            return self.track_key(td.parent_uuid) + (td.name,)
        return (pname, td.name)

    def slices(self):
        """{(process, track, name): begins}; checks that ends balance."""
        out = {}
        for uuid, evs in self.events.items():
            depth = 0
            for ts, typ, name, *_ in evs:
                if typ == TE.TYPE_SLICE_BEGIN:
                    key = self.track_key(uuid) + (name,)
                    out[key] = out.get(key, 0) + 1
                    depth += 1
                elif typ == TE.TYPE_SLICE_END:
                    depth -= 1
                    check(depth >= 0, "a slice end without begin on %s" % (self.track_key(uuid),))
            check(depth == 0, "slices left open on %s: %d" % (self.track_key(uuid), depth))
        return out

    def flows(self):
        """[(begin track, begin name, begin ts, end track, end name, end ts, end args)]."""
        begins, ends = {}, {}
        for uuid, evs in self.events.items():
            for ts, typ, name, args, flows, terms, _ in evs:
                for f in flows:
                    check(f not in begins, "flow id %x begun twice" % f)
                    begins[f] = (self.track_key(uuid), name, ts, args)
                for f in terms:
                    check(f not in ends, "flow id %x ended twice" % f)
                    ends[f] = (self.track_key(uuid), name, ts, args)
        return begins, ends


def otf2_process_name(loc):
    g = loc.group
    if g.location_group_type == otf2.LocationGroupType.ACCELERATOR and g.creating_location_group:
        g = g.creating_location_group
    return g.name


def otf2_enters(trace):
    out = {}
    for loc, events in trace.events.items():
        for e in events:
            if isinstance(e, otf2.events.Enter):
                key = (otf2_process_name(loc), loc.name, e.region.name)
                out[key] = out.get(key, 0) + 1
    return out


def convert(folder):
    return subprocess.run([CONVERT, "--perfetto", folder], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=300)


# ---------------------------------------------------------------- the MPI + OpenMP job
class NoTrace(Exception):
    """The job wrote no trace.pftrace: the cases that read it cannot run."""


@smtest.fixture
def job_program():
    os.environ["OMPI_CC"] = CLANG
    return build_program("mpicc", "perfetto_job.c", "perfetto-job",
                         ["-fopenmp", "-O1"] + user_api_flags())


@smtest.fixture
def job():
    """The 3-rank job run with --perfetto and process sampling: (its folder,
    the process, trace.pftrace's path, the trace decoded, the archive)."""
    out, proc = mpi_measure(3, [job_program()], "perfetto", env={"OMP_NUM_THREADS": "2"},
                            launcher_args=["--perfetto", "--process-sampling",
                                           "--sampling-interval", "20"])
    path = os.path.join(out, "trace.pftrace")
    if not check(os.path.exists(path), "--perfetto wrote trace.pftrace: %s" % os.listdir(out)):
        raise NoTrace(proc.stderr)
    return out, proc, path, Pftrace(path), Trace(out)


@smtest.fixture
def job_slices():
    """{(process, track, name): begins} of the job's trace (the slices'
    balance checked once, by the first case that asks)."""
    return job()[3].slices()


def test_job_trace_decodes():
    _, proc, _, pf, _ = job()
    check("total" in proc.stdout, "the program's own output: %s" % proc.stdout)
    check(not pf.errors, "decoding: %s" % pf.errors[:5])


def test_job_process_and_thread_tracks():
    # a process track per rank, a thread track per thread
    pf, trace = job()[3:]
    ranks = sorted(g.name for g in trace.definitions.location_groups
                   if g.location_group_type == otf2.LocationGroupType.PROCESS)
    check(sorted(pf.process.values()) == ranks == ["MPI Rank 0", "MPI Rank 1", "MPI Rank 2"],
          "a process per rank: %s (archive: %s)" % (sorted(pf.process.values()), ranks))
    threads = sorted((pf.process.get(td.thread.pid), td.thread.thread_name)
                     for td in pf.tracks.values() if td.HasField("thread"))
    otf2_threads = sorted((otf2_process_name(l), l.name) for l in trace.locations
                          if l.type == otf2.LocationType.CPU_THREAD)
    check(threads == otf2_threads, "a thread track per thread: %s, archive %s" % (threads, otf2_threads))
    check(sum(1 for _, t in threads if "OpenMP" in t or "Thread 1" in t) >= 3,
          "the OpenMP threads of every rank have tracks: %s" % threads)


def test_job_slices_equal_archive_enters():
    # slices: the archive's enters, per rank, thread and region
    slices = job_slices()
    enters = otf2_enters(job()[4])
    check(slices == enters, "slices per (rank, thread, name) equal the archive's enters: %s" %
          sorted(set(slices.items()) ^ set(enters.items()))[:10])


def test_job_planted_slices():
    slices = job_slices()
    for r in range(3):
        rank = "MPI Rank %d" % r
        check(slices.get((rank, "Thread 0 (main)", "step")) == 5, "5 steps on rank %d" % r)
        check(slices.get((rank, "Thread 0 (main)", "inner")) == 15 + (2 if r == 0 else 0),
              "planted inner visits on rank %d: %s" % (r, slices.get((rank, "Thread 0 (main)", "inner"))))
        par = {k: v for k, v in slices.items() if k[0] == rank and k[2].startswith("omp parallel")}
        check(len(par) == 2 and set(par.values()) == {4},
              "the parallel region 4 times on each of the 2 threads of rank %d: %s" % (r, par))
        check(slices.get((rank, "Thread 0 (main)", "MPI_Send")) == 5 and
              slices.get((rank, "Thread 0 (main)", "MPI_Recv")) == 5, "MPI calls on rank %d" % r)


def test_job_step_annotations():
    # the annotations of "step" as arguments
    pf = job()[3]
    steps = []
    for uuid, evs in pf.events.items():
        for ts, typ, name, args, *_ in evs:
            if typ == TE.TYPE_SLICE_BEGIN and name == "step":
                steps.append((pf.track_key(uuid)[0], args.get("step"), args.get("phase")))
    want = sorted(("MPI Rank %d" % r, s, "odd" if s % 2 else "even") for r in range(3) for s in range(5))
    check(sorted(steps) == want, "step slices carry step and phase: %s" % sorted(steps)[:6])


def test_job_annotation_at_slice_end():
    # the annotation given at the end of "step": the value the right-hand rank sent
    pf = job()[3]
    got = sorted((pf.track_key(uuid)[0], args.get("received")) for uuid, evs in pf.events.items()
                 for ts, typ, name, args, *_ in evs if typ == TE.TYPE_SLICE_END and "received" in args)
    want = sorted(("MPI Rank %d" % r, ((r + 1) % 3) * 100 + s) for r in range(3) for s in range(5))
    check(got == want, "step slices end with what was received: %s" % got[:6])


def test_job_message_flows():
    # flows: one per message, from the send on the sender's main thread to the
    # receive on the receiver's, in the order MPI matched them
    pf, trace = job()[3:]
    matched = check_messages(trace, 3)
    begins, ends = pf.flows()
    pairs = []
    for fid, (track, name, ts, args) in ends.items():
        if not check(fid in begins, "a receive's flow %x has no send" % fid):
            continue
        btrack, bname, bts, bargs = begins[fid]
        check(bname in ("MPI_Send", "MPI_Isend"), "a message flow starts at %s" % bname)
        check(name == "MPI message received", "a message flow ends at %s" % name)
        check(bts <= ts, "flow %x ends (%d) before it begins (%d)" % (fid, ts, bts))
        pairs.append((btrack[0], track[0], args.get("tag"), bargs.get("tag")))
    otf2_pairs = []
    for loc, events in trace.events.items():
        for e in events:
            if isinstance(e, (otf2.events.MpiSend, otf2.events.MpiIsend)):
                members = [m.group.name for m in e.communicator.group.members]
                otf2_pairs.append((loc.group.name, members[e.receiver], e.msg_tag, e.msg_tag))
    check(matched == 30 and len(pairs) == matched and sorted(pairs) == sorted(otf2_pairs),
          "a flow per message (%d messages in the archive, %d flows): %s vs %s"
          % (matched, len(pairs), sorted(pairs)[:4], sorted(otf2_pairs)[:4]))
    print("MPI job: %d tracks, %d slices, %d message flows" % (len(pf.tracks), sum(job_slices().values()),
                                                             len(pairs)))


def test_job_counter_tracks():
    # counter tracks: every sampled value of the archive, per location and metric
    pf, trace = job()[3:]
    counts = {}
    for uuid, evs in pf.events.items():
        for ts, typ, *_ in evs:
            if typ == TE.TYPE_COUNTER:
                key = pf.track_key(uuid)
                counts[key] = counts.get(key, 0) + 1
    otf2_counts = {}
    for loc, events in trace.events.items():
        for e in events:
            if isinstance(e, otf2.events.Metric):
                members = e.metric.members if hasattr(e.metric, "members") else e.metric.metric_class.members
                for m in members[:len(e.values)]:
                    key = (otf2_process_name(loc), loc.name, m.name)
                    otf2_counts[key] = otf2_counts.get(key, 0) + 1
    check(otf2_counts and counts == otf2_counts,
          "a counter track per metric and location with every value: %s" %
          sorted(set(counts.items()) ^ set(otf2_counts.items()))[:6])
    print("counter values: %d on %d tracks" % (sum(counts.values()), len(counts)))
    check(any("resident" in k[2].lower() or "memory" in k[2].lower() for k in counts),
          "process sampling's memory is a counter track: %s" % sorted(counts)[:8])


def test_job_names_interned_once():
    # interned names keep the file small: each name once per sequence
    pf, trace = job()[3:]
    names = sum(len(p.interned_data.event_names) for p in pf.packets if p.HasField("interned_data"))
    seqs = len({p.trusted_packet_sequence_id for p in pf.packets if p.HasField("track_event")})
    check(names <= len(trace.regions) * seqs + 5 * seqs, "names interned once per sequence: %d" % names)


def test_convert_writes_same_trace():
    # sysmeasure-convert writes the same trace again
    out, _, path = job()[:3]
    before = os.path.getsize(path)
    res = convert(out)
    check(res.returncode == 0 and "trace.pftrace written" in res.stderr and
          os.path.getsize(path) == before, "sysmeasure-convert: rc %d, %s" % (res.returncode, res.stderr))


# ---------------------------------------------------------------- sysmeasure-merge --perfetto
def test_merge_writes_perfetto():
    # A job without MPI_Finalize leaves process files; the merge writes the
    # archive and, asked to, the Perfetto trace of it.
    grace = {"OMP_NUM_THREADS": "2", "OMPI_MCA_odls_base_sigkill_timeout": "5"}
    mout, proc = mpi_measure(3, [job_program(), "nofinalize"], "perfetto-merge", expect_rc=None,
                             env=grace)
    res = subprocess.run([os.path.join(BUILD, "sysmeasure-merge"), "--perfetto", mout],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    if check(res.returncode == 0 and os.path.exists(os.path.join(mout, "trace.pftrace")),
             "sysmeasure-merge --perfetto: rc %d, %s" % (res.returncode, res.stderr[-1500:])):
        mpf = Pftrace(os.path.join(mout, "trace.pftrace"))
        mtrace = Trace(mout)
        check(mpf.slices() == otf2_enters(mtrace), "merged: slices equal the archive's enters")
        mb, me = mpf.flows()
        check(len([f for f in me if f in mb]) == check_messages(mtrace, 3) == 30,
              "merged: a flow per message: %d" % len([f for f in me if f in mb]))


# ---------------------------------------------------------------- GPU streams (synthetic)
class NoGpuArchive(Exception):
    """The GPU layer's unit test failed: no archive to convert."""


@smtest.fixture
def gpu():
    """The archive test-gpu left, converted: (the trace decoded, the archive)."""
    folder = os.path.join(workdir("perfetto-gpu"), "out")
    res = subprocess.run([os.path.join(BUILD, "tests", "unit", "test-gpu")], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, timeout=300,
                         env=dict(os.environ, SM_TEST_KEEP_OUTPUT=folder))
    if not check(res.returncode == 0, "test-gpu: %s" % res.stderr[-2000:]):
        raise NoGpuArchive(res.stderr[-2000:])
    res = convert(folder)
    check(res.returncode == 0, "sysmeasure-convert on the GPU archive: %s" % res.stderr)
    return Pftrace(os.path.join(folder, "trace.pftrace")), Trace(folder)


def test_gpu_stream_tracks():
    g, gt = gpu()
    streams = sorted(l.name for l in gt.locations if l.type == otf2.LocationType.ACCELERATOR_STREAM)
    tracks = sorted(td.name for td in g.tracks.values()
                    if not td.HasField("thread") and not td.HasField("process")
                    and not td.HasField("counter") and td.HasField("parent_uuid")
                    and g.tracks[td.parent_uuid].HasField("process"))
    check(streams and set(streams) <= set(tracks), "a track per GPU stream under the process: "
          "%s, archive %s" % (tracks, streams))


def test_gpu_slices_equal_archive_enters():
    g, gt = gpu()
    gs = g.slices()
    check(gs == otf2_enters(gt), "GPU slices equal the archive's enters: %s" %
          sorted(set(gs.items()) ^ set(otf2_enters(gt).items()))[:6])


def test_gpu_launch_flows():
    g, gt = gpu()
    streams = sorted(l.name for l in gt.locations if l.type == otf2.LocationType.ACCELERATOR_STREAM)
    b, e = g.flows()
    launches = [(b[f][0][1], b[f][1], e[f][0][1], e[f][1]) for f in e if f in b]
    # the archive: host calls and stream work that share a correlation id
    host, dev = {}, {}
    for loc, events in gt.events.items():
        for ev in events:
            if isinstance(ev, otf2.events.Enter) and ev.attributes:
                for a, v in ev.attributes.items():
                    if a.name == "correlation id" and v:
                        side = dev if loc.type == otf2.LocationType.ACCELERATOR_STREAM else host
                        side.setdefault(v, []).append((loc.name, ev.region.name))
    want = sorted(host[c][0] + dev[c][0] for c in host if c in dev)
    check(want and sorted(launches) == want,
          "a flow from each launch to its device work: %s, archive %s" % (launches, want))
    print("GPU: streams %s, launch flows %s" % (streams, launches))
    check(("CUDA 0 stream 7", "axpy") in [(x[2], x[3]) for x in launches] and
          any(x[1] == "cudaLaunchKernel" for x in launches), "cudaLaunchKernel -> axpy: %s" % launches)


# ---------------------------------------------------------------- bad input
def test_convert_not_an_output_folder():
    res = convert(workdir("perfetto-bad"))
    check(res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1 and
          "traces.otf2" in res.stderr, "not an output folder: rc %d, %r" % (res.returncode, res.stderr))


def test_convert_no_format_named():
    res = subprocess.run([CONVERT, workdir("perfetto-bad")], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    check(res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1, "no format named: %r"
          % res.stderr)


def convert_damaged(damage):
    """The job's folder copied, its anchor file or its largest event file
    damaged: one line, exit 2, nothing left behind."""
    bad = os.path.join(workdir("perfetto-" + damage), "out")
    shutil.copytree(job()[0], bad)
    os.remove(os.path.join(bad, "trace.pftrace"))
    if damage == "anchor":
        with open(os.path.join(bad, "traces.otf2"), "wb") as f:
            f.write(b"this is not an OTF2 anchor file\n")
    else:
        evt = sorted(os.path.join(bad, "traces", n) for n in os.listdir(os.path.join(bad, "traces"))
                     if n.endswith(".evt"))
        big = max(evt, key=os.path.getsize)
        with open(big, "r+b") as f:
            f.truncate(os.path.getsize(big) // 2)
    res = convert(bad)
    check(res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1 and
          "damaged" in res.stderr, "damaged %s: rc %d, %r" % (damage, res.returncode, res.stderr))
    check(not os.path.exists(os.path.join(bad, "trace.pftrace")) and
          not [n for n in os.listdir(bad) if n.startswith(".trace.pftrace")],
          "nothing left behind after damaged %s: %s" % (damage, os.listdir(bad)))


def test_convert_damaged_anchor():
    convert_damaged("anchor")


def test_convert_damaged_events():
    convert_damaged("events")


if __name__ == "__main__":
    need_perfetto()
    load_decoder()
    smtest.run_cases(globals())
