"""Spilling on the background writer thread, under stress; every planted
event must be in the archive:
- threads that end mid-run, in waves, under a budget that spills many times;
- 4,000 short threads (200 alive at once) under a 4M budget: resident memory
  stays bounded (the program reads its peak from /proc);
- a program that closes every descriptor above 2 after the first spill and
  then writes its own data file: the file is intact (the program checks it)
  and the spill file was opened again by its path;
- fork without exec: the child's events are not written anywhere, the
  parent's are all there;
- an MPI job without MPI_Finalize under a small budget: sysmeasure-merge
  reads the spill files back, every event is there."""
import os
import subprocess

import otf2
import smtest
from smtest import (BUILD, Trace, check, check_trace_consistent, load_json, measure,
                    mpi_measure, program, workdir)

SMALL = {"SYSMEASURE_BUFFER_SIZE": "256K", "SYSMEASURE_BUFFER_CHUNK_SIZE": "16K"}


def spilled_cleanly(out, what):
    meta = load_json(out, "metadata.json")
    b = meta["buffers"]
    check(b["spills"] > 10, "%s: spilled many times: %s" % (what, b))
    check(b["dropped_records"] == 0, "%s: nothing dropped: %s" % (what, b))
    check(not os.path.exists(os.path.join(out, ".spill")), "%s: spill files removed" % what)
    return b


# ---- threads ending in waves while the main thread records too
WAVES, PER_WAVE, PAIRS = 6, 8, 3000


def test_waves():
    out, proc = measure([program("spill-stress"), "threads", str(WAVES), str(PER_WAVE), str(PAIRS)],
                        "spill-waves", env=SMALL)
    b = spilled_cleanly(out, "waves")
    trace = Trace(out)
    visits = check_trace_consistent(trace)
    check(visits.get("worker") == WAVES * PER_WAVE * PAIRS, "worker visits: %s" % visits.get("worker"))
    check(visits.get("main") == WAVES * PAIRS, "main visits: %s" % visits.get("main"))
    flushes = trace.of_type(otf2.events.BufferFlush)
    check(len(flushes) <= b["spills"], "a BufferFlush only for a wait: %d <= %d" % (len(flushes), b["spills"]))
    check(all(e.stop_time >= e.time for _, e in flushes), "flush stop >= start")
    ends = trace.of_type(otf2.events.ThreadEnd)
    check(len(ends) >= WAVES * PER_WAVE, "every worker's end is there: %d" % len(ends))


# ---- 4,000 short threads, 200 alive at once, 4M budget
def test_many_short_threads():
    out, proc = measure([program("spill-stress"), "threads", "20", "200", "40"], "spill-4000",
                        env={"SYSMEASURE_BUFFER_SIZE": "4M"})
    hwm = [int(l.split()[1]) for l in proc.stdout.splitlines() if l.startswith("vmhwm_kb")]
    # 4M of budget, plus one 256K chunk for each of the 200 live threads (a
    # thread always gets its first chunk), plus the program and its stacks.
    check(hwm and hwm[0] < 160 * 1024, "resident memory bounded: %s KiB" % hwm)
    meta = load_json(out, "metadata.json")
    check(meta["buffers"]["dropped_records"] == 0, "4000 threads: nothing dropped")
    trace = Trace(out)
    visits = check_trace_consistent(trace)
    check(visits.get("worker") == 4000 * 40, "4000 threads: worker visits %s" % visits.get("worker"))
    check(len(trace.locations) >= 4001, "4000 threads: a location each: %d" % len(trace.locations))


# ---- the program closes our descriptors and reuses the numbers
def test_closefrom():
    data = os.path.join(workdir("spill-own-data"), "own-data.txt")
    out, proc = measure([program("spill-stress"), "closefrom", "40000", data], "spill-closefrom",
                        env=SMALL, launcher_args=["-v"])
    check(proc.returncode == 0, "the program's own file is intact (exit %d)" % proc.returncode)
    with open(data) as f:
        lines = f.read().splitlines()
    check(lines == ["line %d of the program's own data" % i for i in range(100)],
          "own data file holds exactly its 100 lines (%d lines)" % len(lines))
    check("opened again" in proc.stderr, "the spill file was opened again: %s" % proc.stderr[-600:])
    spilled_cleanly(out, "closefrom")
    visits = check_trace_consistent(Trace(out))
    check(visits.get("before") == 40000 and visits.get("after") == 40000,
          "closefrom: every event there: %s" % visits)


# ---- fork without exec
def test_fork():
    out, proc = measure([program("spill-stress"), "fork", "20000"], "spill-fork", env=SMALL)
    spilled_cleanly(out, "fork")
    trace = Trace(out)
    check_trace_consistent(trace)
    # The child measures on as a process of the program's family (its own
    # rank of the archive): the parent's process holds its 40,000 pairs and
    # none of the child's, the child's its 40,000 and none of the parent's.
    per_process = {}
    for loc, events in trace.events.items():
        counts = per_process.setdefault(loc.group.name, {})
        for e in events:
            if isinstance(e, otf2.events.Enter):
                counts[e.region.name] = counts.get(e.region.name, 0) + 1
    parents = [c for c in per_process.values() if "parent" in c]
    children = [c for c in per_process.values() if "child" in c]
    check(len(parents) == 1 and parents[0].get("parent") == 40000 and "child" not in parents[0],
          "fork: the parent's process has its 40000 pairs, none of the child's: %s" % per_process)
    check(len(children) == 1 and children[0].get("child") == 40000 and "parent" not in children[0],
          "fork: the child's process has its 40000 pairs, none of the parent's: %s" % per_process)


# ---- MPI without MPI_Finalize, then sysmeasure-merge
def test_mpi_nofinalize():
    out, proc = mpi_measure(2, [program("spill-stress-mpi"), "mpi", "30000"], "spill-nofinalize",
                            env=SMALL, expect_rc=None)
    spill_dir = os.path.join(out, ".spill")
    check(os.path.isdir(spill_dir) and len(os.listdir(spill_dir)) == 2,
          "one spill file per rank: %s" % (os.listdir(spill_dir) if os.path.isdir(spill_dir) else None))
    m = subprocess.run([os.path.join(BUILD, "sysmeasure-merge"), out], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    check(m.returncode == 0, "merge exits 0: %s" % m.stderr)
    visits = check_trace_consistent(Trace(out))
    check(visits.get("rank-work") == 2 * 30000, "merged: every rank's events: %s" % visits.get("rank-work"))


if __name__ == "__main__":
    smtest.run_cases(globals())
