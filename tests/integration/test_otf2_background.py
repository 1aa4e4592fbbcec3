"""The OTF2 event files encoded during the run (issue 13, fast exit) read
back as the archive written wholly at the end: SYSMEASURE_OTF2_BACKGROUND=check
writes both from the same records (the second into <output>/otf2-at-end), and
every definition and event must match, timestamps within 1 ns (the rounding of
the two clock offsets that map a location's ticks onto the job's ns).  Runs:
threads with the default budget, threads spilling to disk (threads that wait
for the disk leave the rest to the end: the encoded part, then the rest read
back), and 2-rank MPI jobs with messages, collectives and split
communicators, spilling and not.  (Threads left wholly to the end, such as
those with sampled call stacks, are covered by the tests of those features.)"""
import os
import re

import otf2
import smtest
from smtest import (Trace, check, check_trace_consistent, load_json, measure, mpi_measure,
                    program, workdir)


def text(x, depth=0):
    """A definition or value as comparable text: its own repr, or its fields
    (definitions it refers to by their repr: id and name)."""
    r = repr(x)
    if " object at 0x" not in r or depth > 1:
        return r
    fields = []
    for k in sorted(dir(x)):
        v = getattr(x, k, None) if not k.startswith("_") else None
        if v is not None and not callable(v):
            fields.append("%s=%s" % (k, text(v, depth + 1)))
    return "%s(%s)" % (type(x).__name__, ", ".join(fields))


def norm(v):
    """A field of an event as comparable text (definitions by id and name)."""
    if isinstance(v, dict):
        return sorted((norm(k), norm(x)) for k, x in v.items())
    if isinstance(v, (list, tuple)):
        return [norm(x) for x in v]
    return text(v)


def read(path):
    defs, events = {}, {}
    with otf2.reader.open(path) as t:
        d = t.definitions
        for what in ("strings", "regions", "comms", "groups", "locations", "location_groups",
                     "attributes", "metrics", "paradigms", "calling_contexts",
                     "location_properties", "system_tree_nodes"):
            defs[what] = [text(x) for x in getattr(d, what)]
        defs["clock"] = text(d.clock_properties)
        defs["events per location"] = [(repr(l), l.number_of_events) for l in d.locations]
        for loc, e in t.events:
            # (stop_time: a time too, compared within 1 ns below)
            fields = {k: norm(v) for k, v in vars(e).items() if k not in ("time", "stop_time")}
            if hasattr(e, "stop_time"):
                fields["stop_time"] = e.stop_time
            events.setdefault(repr(loc), []).append((type(e).__name__, e.time, fields))
    return defs, events


def compare(out, name, min_run_share=0.0, stderr=""):
    """The archive in out equals the one in out/otf2-at-end."""
    a_path = os.path.join(out, "traces.otf2")
    b_path = os.path.join(out, "otf2-at-end", "traces.otf2")
    if not check(os.path.exists(a_path) and os.path.exists(b_path), "%s: both archives" % name):
        return
    a_defs, a_ev = read(a_path)
    b_defs, b_ev = read(b_path)
    for what in sorted(b_defs):
        check(a_defs.get(what) == b_defs[what], "%s: definitions %s the same: %s / %s"
              % (name, what, str(a_defs.get(what))[:300], str(b_defs[what])[:300]))
    check(sorted(a_ev) == sorted(b_ev), "%s: same locations" % name)
    worst, n, bad = 0, 0, None
    for loc in b_ev:
        ea, eb = a_ev.get(loc, []), b_ev[loc]
        if not check(len(ea) == len(eb), "%s: %s has %d events, %d at the end"
                     % (name, loc, len(ea), len(eb))):
            continue
        for x, y in zip(ea, eb):
            n += 1
            worst = max(worst, abs(x[1] - y[1]))
            fx, fy = dict(x[2]), dict(y[2])
            if "stop_time" in fx and "stop_time" in fy:
                worst = max(worst, abs(fx.pop("stop_time") - fy.pop("stop_time")))
            if (x[0], fx) != (y[0], fy) and bad is None:
                bad = (loc, x, y)
    check(bad is None, "%s: events the same (first difference: %s)" % (name, bad))
    check(worst <= 1, "%s: timestamps within 1 ns (largest difference %d ns)" % (name, worst))
    print("%s: %d events compared, largest time difference %d ns" % (name, n, worst))
    # The verbose line of each location taken from the run's encoding.
    taken = [(int(a), int(b)) for a, b in
             re.findall(r"(\d+) records encoded during the run, (\d+) at its end", stderr)]
    if min_run_share > 0:
        run = sum(a for a, _ in taken)
        total = sum(a + b for a, b in taken)
        check(taken and run >= min_run_share * total,
              "%s: most records encoded during the run: %s" % (name, taken))
    return taken


env = {"SYSMEASURE_OTF2_BACKGROUND": "check", "SYSMEASURE_VERBOSE": "1"}
# Spilling: a small budget, small chunks.
spill_env = dict(env, SYSMEASURE_BUFFER_SIZE="256K", SYSMEASURE_BUFFER_CHUNK_SIZE="4K")


# Two threads, default budget: nothing spills; 600K records per thread, so
# most chunks are full and encoded while the threads still run.
def test_threads():
    out, p = measure([program("many-regions"), "2", "100000"], "bg-threads", env=env)
    taken = compare(out, "threads", 0.0, p.stderr)
    check(taken, "threads encoded during the run: %s" % taken)
    check_trace_consistent(Trace(out))
    check(not os.path.exists(os.path.join(out, ".spill")), "staging folder removed")


# Spilling: a small budget, small chunks; everything that goes to disk is
# encoded first.
# (Under a budget below 16M nothing is encoded during the run: the staged
# writers' memory counts against it.  16M: one thread is.)
def test_spill():
    out, p = measure([program("many-regions"), "3", "20000"], "bg-spill", env=spill_env)
    taken = compare(out, "spill", 0.0, p.stderr)
    # (Threads that wait for the disk leave their chunks to the end: how much
    # was encoded during the run depends on the machine's load.)
    print("spill: taken from the run's encoding: %s" % taken)
    meta = load_json(out, "metadata.json")
    check(meta["buffers"]["spills"] > 0, "it spilled")
    check(not os.path.exists(os.path.join(out, ".spill")), "spill and staging folders removed")


# Many short threads (issue 13): each that ends is encoded to its end and
# its event file closed during the run, so far more threads than the few
# slots (4 under the default budget) are taken from the run's encoding, all
# of their records (0 at the end); the archive is the same.
def test_short_threads():
    WAVES, PER_WAVE, PAIRS = 10, 40, 3000
    out, p = measure([program("spill-stress"), "threads", str(WAVES), str(PER_WAVE), str(PAIRS)],
                     "bg-short-threads", env=env)
    taken = compare(out, "short threads", 0.0, p.stderr)
    whole = [t for t in taken if t[1] == 0]
    print("short threads: %d taken from the run's encoding, %d of them whole" % (len(taken), len(whole)))
    # (4 slots under the default budget: more than that shows slots reused;
    # how many more depends on the spare processor time, 97 to 291 seen.)
    check(len(whole) > 4, "short threads: more than the slots encoded whole during the run: %d"
          % len(whole))
    visits = check_trace_consistent(Trace(out))
    check(visits.get("worker") == WAVES * PER_WAVE * PAIRS, "short threads: worker visits %s"
          % visits.get("worker"))
    check(not os.path.exists(os.path.join(out, ".spill")), "short threads: staging folder removed")


# Off: the archive is the same as before (written at the end).
def test_off():
    out, p = measure([program("many-regions"), "2", "20000"], "bg-off",
                     env={"SYSMEASURE_OTF2_BACKGROUND": "no", "SYSMEASURE_VERBOSE": "1"})
    check("encoded during the run" not in p.stderr, "off: nothing encoded during the run")
    visits = check_trace_consistent(Trace(out))
    check(visits.get("iteration") == 40000, "off: iterations %s" % visits.get("iteration"))


# auto (the default): on only where the writer thread has a CPU of its own:
# CPUs of the affinity mask > processes on the node x OMP_NUM_THREADS, or
# else the node's CPUs (cpuset cgroup, online) outside the mask.
CPUS = len(os.sched_getaffinity(0))


def auto(threads, procs):
    cpus = CPUS
    env_auto = {"SYSMEASURE_VERBOSE": "2", "OMP_NUM_THREADS": str(threads)}
    if procs:
        env_auto["OMPI_COMM_WORLD_LOCAL_SIZE"] = str(procs)
    out, p = measure([program("many-regions"), "1", "1000"], "bg-auto-%d-%s" % (threads, procs),
                     env=env_auto)
    want = "yes" if cpus > threads * (procs or 1) else "no"
    check("OTF2 during the run: %s (%d CPUs, %d processes on the node x %d threads;"
          % (want, cpus, procs or 1, threads) in p.stderr,
          "auto with %d CPUs, %d threads, %s processes: %s" % (cpus, threads, procs, want))
    check(check_trace_consistent(Trace(out)).get("iteration") == 1000, "auto: iterations")


def test_auto_one_thread():
    auto(1, None)


def test_auto_threads_fill_the_cpus():
    auto(CPUS, None)


def test_auto_processes_fill_the_cpus():
    auto(1, CPUS)


# A process bound to one CPU of a node with more (ranks bound one per core):
# the writer thread runs on the node's other CPUs when the node has a spare
# one (processes x threads < the node's CPUs), never on the process's own;
# not when the launcher did not say how many processes it started there.
def test_bound():
    cpus = CPUS
    if cpus < 2:
        smtest.skip("one CPU: no CPU to bind the process away from")
    own = min(os.sched_getaffinity(0))
    cases = [({"OMPI_COMM_WORLD_LOCAL_SIZE": str(n)}, n, n < cpus) for n in (1, cpus - 1, cpus)]
    cases += [({"SLURM_STEP_TASKS_PER_NODE": "%d(x2),1" % n, "SLURM_NODEID": "1"}, n, n < cpus)
              for n in (1, cpus)]
    cases.append(({}, 1, False))
    for k, (launcher_env, procs, want) in enumerate(cases):
        env_auto = dict(launcher_env, SYSMEASURE_VERBOSE="2", OMP_NUM_THREADS="1")
        mask = os.sched_getaffinity(0)
        os.sched_setaffinity(0, {own})  # (inherited by the launcher and the program)
        try:
            out, p = measure([program("many-regions"), "1", "3000"], "bg-bound-%d" % k,
                             env=env_auto)
        finally:
            os.sched_setaffinity(0, mask)
        line = [x for x in p.stderr.splitlines() if "OTF2 during the run" in x]
        text_want = "OTF2 during the run: %s (1 CPUs, %d processes" % ("yes" if want else "no",
                                                                        procs)
        check(len(line) == 1 and text_want in line[0],
              "bound to CPU %d, %s: %s (%s)" % (own, launcher_env, text_want, line))
        if want:
            check(line and "writer thread on the node's other CPUs " in line[0] and
                  str(own) not in line[0].split("other CPUs ")[-1].split(","),
                  "bound: the writer thread off CPU %d (%s)" % (own, line))
        if not launcher_env:
            check(line and "the processes on the node are unknown" in line[0],
                  "bound, no launcher: %s" % line)
        check(check_trace_consistent(Trace(out)).get("iteration") == 3000, "bound: iterations")


# Several encoders at the end (SYSMEASURE_OTF2_END_THREADS, issue 13).
# Under a budget below 16M nothing is encoded during the run, so every
# thread is encoded at the end, here by 3 threads at once; check writes
# otf2-at-end with one encoder.  Both archives must match event for event,
# and so must their timeline.json (the lanes kept in location order).
def same_timeline(out, name):
    a, b = (os.path.join(d, "timeline.json") for d in (out, os.path.join(out, "otf2-at-end")))
    check(os.path.exists(a) and os.path.exists(b) and open(a).read() == open(b).read(),
          "%s: timeline.json the same with 3 encoders and with one" % name)


par_env = dict(spill_env, SYSMEASURE_OTF2_END_THREADS="3", SYSMEASURE_VERBOSE="2")


def test_end_threads():
    out, p = measure([program("many-regions"), "5", "20000"], "end-threads", env=par_env)
    check("OTF2: 6 of 6 locations encoded at the end by 3 threads" in p.stderr,
          "end threads: 6 locations by 3 threads: %r" % p.stderr[-600:])
    compare(out, "3 encoders", 0.0, p.stderr)
    same_timeline(out, "3 encoders")
    check(check_trace_consistent(Trace(out)).get("iteration") == 5 * 20000,
          "3 encoders: iterations")


def test_end_threads_short():
    # Many short threads: 401 locations handed out among the 3.
    out, p = measure([program("spill-stress"), "threads", "10", "40", "300"], "end-threads-short",
                     env=par_env)
    check("OTF2: 401 of 401 locations encoded at the end by 3 threads" in p.stderr,
          "short threads: 401 locations by 3 threads: %r" % p.stderr[-600:])
    compare(out, "3 encoders, short threads", 0.0, p.stderr)
    same_timeline(out, "3 encoders, short threads")
    check(check_trace_consistent(Trace(out)).get("worker") == 10 * 40 * 300,
          "3 encoders, short threads: worker visits")


# Write-behind (issue 13): with a CPU more than the encoders need, OTF2's
# writes of full 4 MiB buffers go to another thread while the encoder fills
# the next buffer.  One location (a single thread, about 9 MB of events):
# the calling thread encodes alone; two locations and 4 CPUs: two encoders
# share it.  The archives must be the same as the one written at the end
# by one encoder without it (check mode).
def behind_mb(stderr):
    m = re.search(r"OTF2: ([0-9.]+) MB of event files written by a second thread", stderr)
    return float(m.group(1)) if m else 0.0


wb_env = dict(spill_env, SYSMEASURE_OTF2_END_THREADS="2", SYSMEASURE_VERBOSE="2")


def test_write_behind_one():
    out, p = measure([program("spill-stress"), "closefrom", "400000",
                      os.path.join(workdir("wb-file"), "lines.txt")], "write-behind-one", env=wb_env)
    check(p.returncode == 0, "write-behind, one location: the program's file intact (%d)" % p.returncode)
    check(behind_mb(p.stderr) > 8, "write-behind, one location: its event file written by the "
          "second thread: %r" % p.stderr[-600:])
    compare(out, "write-behind, one location", 0.0, p.stderr)
    same_timeline(out, "write-behind, one location")
    check(check_trace_consistent(Trace(out)).get("before") == 400000, "write-behind: visits")


def test_write_behind_two():
    out, p = measure([program("many-regions"), "1", "150000"], "write-behind-two",
                     env=dict(wb_env, SYSMEASURE_OTF2_END_THREADS="4"))
    check("OTF2: 2 of 2 locations encoded at the end by" in p.stderr and behind_mb(p.stderr) > 4,
          "write-behind, two encoders: %r" % p.stderr[-600:])
    compare(out, "write-behind, two encoders", 0.0, p.stderr)
    same_timeline(out, "write-behind, two encoders")
    check(check_trace_consistent(Trace(out)).get("iteration") == 150000, "write-behind: iterations")


def need_mpi():
    if os.environ.get("SM_HAVE_MPI", "yes") != "yes":
        smtest.skip("built without MPI")


# 2 ranks: point-to-point, collectives, split communicators, spilling (a
# 64K budget of 4K chunks: most chunks are full long before the end).
def mpi_pattern(mode):
    need_mpi()
    out, p = mpi_measure(2, [program("mpi-patterns"), mode], "bg-mpi-" + mode,
                         env=dict(spill_env, SYSMEASURE_BUFFER_SIZE="64K"))
    compare(out, "mpi " + mode, 0.0, p.stderr)


def test_mpi_ring():
    mpi_pattern("ring")


def test_mpi_collectives():
    mpi_pattern("collectives")


def test_mpi_comms():
    mpi_pattern("comms")


def test_mpi_nonblocking():
    mpi_pattern("nonblocking")


# A long stream of messages, nonblocking pairs and collectives on 2 ranks,
# spilling, then with the default budget.
def mpi_stream(name, extra):
    need_mpi()
    out, p = mpi_measure(2, [program("mpi-stream"), "60000" if extra else "20000"], "bg-mpi-stream",
                         env=dict(spill_env if extra else env, **extra))
    taken = compare(out, "mpi stream, " + name, 0.0, p.stderr)
    # With a budget this small the ranks wait for the disk from the start,
    # and a waiting thread's chunks are not encoded first (they are read
    # back at the end): only the default budget must have been encoded.
    check(taken and len(taken) == 2 or extra,
          "mpi stream, %s: both ranks encoded during the run: %s" % (name, taken))
    print("mpi stream, %s: taken from the run's encoding: %s" % (name, taken))
    visits = check_trace_consistent(Trace(out))
    check(visits.get("round") == (120000 if extra else 40000), "mpi stream: rounds %s" % visits.get("round"))


def test_mpi_stream_spilling():
    mpi_stream("spilling", {"SYSMEASURE_BUFFER_SIZE": "16M"})


def test_mpi_stream_default_budget():
    mpi_stream("default budget", {})


if __name__ == "__main__":
    smtest.run_cases(globals())
