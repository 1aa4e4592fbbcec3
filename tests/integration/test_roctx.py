"""ROCTx without a GPU: tests/programs/roctx_ranges.c, linked with -lroctx64
(sysmeasure's libroctx64.so.4), on 2 MPI ranks under the launcher.  Checked
in the archive and in profile.json with the exact planted counts: push/pop
ranges nested with MPI and user regions, marks as zero-length regions,
start/stop ranges that cross threads as marks on both threads (with the range
id) and whole on an "async ranges" lane; the levels and ids roctx answers
(the program checks them); the calls passed on to another ROCTx library
behind ours; and the program run without the launcher."""
import os
import subprocess
import sys

import otf2
import smtest
from smtest import (BUILD, Trace, callpath, check, check_trace_consistent, clean_env,
                    load_json, location_rank, mpi_env, mpi_measure, program, workdir)

Enter, Leave = otf2.events.Enter, otf2.events.Leave


@smtest.fixture
def job():
    """The job under the launcher: (out, proc, the next library's counts file).
    The launcher finds libroctx64 among the program's libraries and preloads
    libsysmeasure-roctx.so; libroctx-next.so stands behind it."""
    next_lib = os.path.join(BUILD, "tests/programs/.libs/libroctx-next.so")
    next_out = os.path.join(workdir("roctx-next"), "counts")
    out, proc = mpi_measure(2, [program("roctx-ranges")], "roctx",
                            env={"LD_PRELOAD": next_lib, "ROCTX_NEXT_OUT": next_out})
    return out, proc, next_out


def attr(e, name):
    for k, v in (e.attributes or {}).items():
        if k.name == name:
            return v
    return None


def test_program_checks():
    proc = job()[1]
    check(proc.stdout.count("roctx ok") == 2, "both ranks' own checks pass: %s %s"
          % (proc.stdout, proc.stderr[-2000:]))


def test_archive():
    trace = Trace(job()[0])
    check_trace_consistent(trace)
    for rank in (0, 1):
        locs = [l for l in trace.events if location_rank(l) == rank]
        main = [l for l in locs if l.name == "Thread 0 (main)"]
        lanes = [l for l in locs if l.name.startswith("async ranges")]
        if not check(len(main) == 1, "rank %d has its main thread: %s" % (rank, [l.name for l in locs])):
            continue
        main = main[0]
        ev = trace.events[main]
        enters = {}
        stack = []
        paths = {}
        for e in ev:
            if isinstance(e, Enter):
                stack.append(e.region.name)
                enters[e.region.name] = enters.get(e.region.name, 0) + 1
                paths.setdefault(tuple(stack), 0)
                paths[tuple(stack)] += 1
            elif isinstance(e, Leave):
                stack.pop()
        for path, n in ((("outer",), 1), (("outer", "inner"), 3), (("outer", "inner", "tick"), 3),
                        (("outer", "inner", "MPI_Barrier"), 3), (("user",), 1),
                        (("user", "in user"), 1), (("local (start)",), 1), (("local (stop)",), 1),
                        (("handoff (start)",), 2)):
            check(paths.get(path) == n, "rank %d main thread: %s %d times: %s"
                  % (rank, " > ".join(path), n, paths.get(path)))
        # A mark is an enter and a leave at one time.
        ticks = [(a.time, b.time) for a, b in zip(ev, ev[1:])
                 if isinstance(a, Enter) and a.region.name == "tick"]
        check(len(ticks) == 3 and all(x == y for x, y in ticks),
              "rank %d: each mark's enter and leave at one time: %s" % (rank, ticks))
        starts = {attr(e, "roctx range id"): e.time for e in ev
                  if isinstance(e, Enter) and e.region.name.endswith("(start)")}
        # The ids are those of the ROCTx library behind ours (it counts from 1001).
        check(len(starts) == 3 and all(i is not None and i > 1000 for i in starts),
              "rank %d: 3 start marks with the next library's range ids: %s" % (rank, starts))
        others = [l for l in locs if l is not main and not l.name.startswith("async ranges")]
        stops = {}
        for l in others:
            for e in trace.events[l]:
                if isinstance(e, Enter) and e.region.name == "handoff (stop)":
                    stops[attr(e, "roctx range id")] = (l.name, e.time)
        check(len(stops) == 2 and set(stops) <= set(starts) and
              len({n for n, _ in stops.values()}) == 1,
              "rank %d: both handoff ranges stopped on the worker thread, ids as started: %s"
              % (rank, stops))
        # The ranges themselves, whole, on the lanes: two handoff ranges overlap,
        # so they are on two lanes.
        ranges = []
        for l in lanes:
            lev = trace.events[l]
            for a, b in zip(lev, lev[1:]):
                if isinstance(a, Enter) and isinstance(b, Leave) and a.region == b.region:
                    ranges.append((a.region.name, attr(a, "roctx range id"), a.time, b.time, l.name))
        names = sorted(r[0] for r in ranges)
        check(names == ["handoff", "handoff", "local"], "rank %d: the 3 start/stop ranges on lanes: %s"
              % (rank, ranges))
        check(len(lanes) == 2, "rank %d: 2 lanes (two ranges overlap): %s"
              % (rank, [l.name for l in lanes]))
        for name, rid, t0, t1, lane in ranges:
            if name == "handoff" and check(rid in stops and rid in starts,
                                           "rank %d: range %s has its marks" % (rank, rid)):
                check(t0 <= starts[rid] and stops[rid][1] <= t1 + 1,
                      "rank %d: range %s spans its start and stop marks: %d..%d, %d, %d"
                      % (rank, rid, t0, t1, starts[rid], stops[rid][1]))


def test_profile():
    out = job()[0]
    profile = load_json(out, "profile.json")
    for path, n in ((["outer"], 1), (["outer", "inner"], 3), (["outer", "inner", "tick"], 3),
                    (["outer", "inner", "MPI_Barrier"], 3), (["user", "in user"], 1),
                    (["handoff (start)"], 2), (["handoff (stop)"], 2), (["local (start)"], 1),
                    (["local (stop)"], 1), (["handoff"], 2), (["local"], 1)):
        cp = callpath(profile, *path)
        if check(cp, "profile.json has %s" % path):
            v = cp["across_ranks"]["visits"]
            check(v["mean"] == n and v["min"] == n and v["max"] == n,
                  "%s: %d visits on each rank: %s" % (path, n, v))
    with open(os.path.join(out, "profile.txt")) as f:
        text = f.read()
    check("handoff (stop)" in text and "inner" in text, "profile.txt names the ROCTx regions")


def test_passed_on():
    next_out = job()[2]
    # Every call reached the library behind ours: per rank push 5 (and pop 6:
    # one without a push), mark 3, start 3, stop 3.
    counts = {}
    if check(os.path.exists(next_out), "the next ROCTx library wrote its counts"):
        with open(next_out) as f:
            for line in f:
                k, v = line.split()
                counts[k] = counts.get(k, 0) + int(v)
    check(counts == {"push": 10, "pop": 12, "mark": 6, "start": 6, "stop": 6},
          "each ROCTx call passed on once (2 ranks): %s" % counts)


def test_without_launcher():
    prog = program("roctx-ranges")
    # Without the launcher: our libroctx64 alone, nothing measured, the same answers.
    plain = subprocess.run([prog], env=clean_env(mpi_env()), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=300,
                           cwd=workdir("roctx-plain"))
    check(plain.returncode == 0 and plain.stdout.strip() == "roctx ok",
          "without the launcher the program runs as it would: %d %s %s"
          % (plain.returncode, plain.stdout, plain.stderr[-1000:]))
    check("sysmeasure" not in plain.stderr, "and sysmeasure says nothing: %s" % plain.stderr[-500:])


if __name__ == "__main__":
    if os.environ.get("SM_HAVE_MPI", "yes") != "yes":
        print("built without MPI")
        sys.exit(77)
    smtest.run_cases(globals())
