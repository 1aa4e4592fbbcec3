"""The OpenMP events of the OTF2 archive (tests/programs/omp_constructs.c on
clang/libomp): OmpFork/OmpJoin on the encountering thread around each
parallel region, OmpAcquireLock/OmpReleaseLock matched per lock in
acquisition order, OmpTaskCreate/OmpTaskSwitch/OmpTaskComplete for every
task.  otf2-print reads the archives without a warning."""
import os
import shutil
import subprocess

import otf2
from smtest import (CLANG, Trace, build_program, check, check_trace_consistent, finish, measure,
                    need_openmp)

need_openmp()
prog = build_program(CLANG, "omp_constructs.c", "omp-constructs", ["-fopenmp", "-O1", "-Wall"])
MAIN = "Thread 0 (main)"


def run(name, *args):
    out, proc = measure([prog] + list(args), "omp-events-" + name, env={"OMP_NUM_THREADS": "2"})
    trace = Trace(out)
    check_trace_consistent(trace)
    return out, trace


def merged(trace, classes):
    """(time, location name, event) of these classes on all locations, by
    time; at one time a lock's release before another thread's acquire; on
    one location in the order written."""
    evs = [(e.time, not isinstance(e, otf2.events.OmpReleaseLock), i, loc.name, e)
           for loc, events in trace.events.items()
           for i, e in enumerate(events) if isinstance(e, classes)]
    return [(x[0], x[3], x[4]) for x in sorted(evs, key=lambda x: x[:3])]


def otf2_print_clean(out):
    tool = shutil.which("otf2-print")
    if not tool:
        return
    anchor = os.path.join(out, "traces.otf2")
    proc = subprocess.run([tool, anchor], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
    check(proc.returncode == 0 and "warning" not in proc.stderr.lower() and
          "error" not in proc.stderr.lower(),
          "otf2-print reads %s cleanly: %d %s" % (out, proc.returncode, proc.stderr[-500:]))
    return proc.stdout


# ---- fork/join: a parallel region 100 times on 2 threads
out, trace = run("repeat", "repeat", "100")
for loc, events in trace.events.items():
    kinds = [type(e).__name__ for e in events if isinstance(e, (otf2.events.OmpFork,
                                                                 otf2.events.OmpJoin))]
    if loc.name == MAIN:
        check(kinds == ["OmpFork", "OmpJoin"] * 100,
              "100 fork/join pairs on the main thread, each fork before its join: %d forks, "
              "%d joins" % (kinds.count("OmpFork"), kinds.count("OmpJoin")))
        forks = [e for e in events if isinstance(e, otf2.events.OmpFork)]
        req = {e.number_of_requested_threads for e in forks}
        check(req == {2}, "2 requested threads at each fork: %s" % req)
        # Inside the region: fork right after its enter, join right before its leave.
        seq = [e for e in events if isinstance(e, (otf2.events.Enter, otf2.events.Leave,
                                                   otf2.events.OmpFork, otf2.events.OmpJoin))]
        ok = all(isinstance(seq[i - 1], otf2.events.Enter) and
                 seq[i - 1].region.name.startswith("omp parallel @")
                 for i, e in enumerate(seq) if isinstance(e, otf2.events.OmpFork))
        ok = ok and all(i + 1 < len(seq) and isinstance(seq[i + 1], otf2.events.Leave) and
                        seq[i + 1].region.name.startswith("omp parallel @")
                        for i, e in enumerate(seq) if isinstance(e, otf2.events.OmpJoin))
        check(ok, "each fork follows the parallel region's enter, each join precedes its leave")
    else:
        check(kinds == [], "no fork/join on the worker %s: %d" % (loc.name, len(kinds)))
otf2_print_clean(out)

# ---- nested: the outer region forks on the main thread, each inner one on
# its encountering thread (the outer team's 2 threads)
out, trace = run("nested", "nested")
forks = {loc.name: [e.number_of_requested_threads for e in evs
                    if isinstance(e, otf2.events.OmpFork)] for loc, evs in trace.events.items()}
joins = {loc.name: sum(isinstance(e, otf2.events.OmpJoin) for e in evs)
         for loc, evs in trace.events.items()}
check(sorted(len(f) for f in forks.values()) == [0, 0, 1, 2] and forks.get(MAIN) == [2, 2],
      "nested: 2 forks on the main thread, 1 on the outer team's other thread: %s" % forks)
check(all(joins[n] == len(forks[n]) for n in forks), "a join for every fork: %s" % joins)
otf2_print_clean(out)

# ---- locks: 50 x per thread on 2 threads: a lock, a critical, a nest lock (twice)
out, trace = run("locks", "locks")
evs = merged(trace, (otf2.events.OmpAcquireLock, otf2.events.OmpReleaseLock))
per_lock = {}
holder = {}
problems = []
for t, where, e in evs:
    lid, order = e.lock_id, e.acquisition_order
    if isinstance(e, otf2.events.OmpAcquireLock):
        if lid in holder:
            problems.append("lock %d acquired by %s while %s holds it" % (lid, where, holder[lid]))
        holder[lid] = (where, order)
        per_lock.setdefault(lid, []).append(order)
    else:
        if holder.get(lid) != (where, order):
            problems.append("lock %d released by %s (order %d), held by %s"
                            % (lid, where, order, holder.get(lid)))
        holder.pop(lid, None)
check(not problems, "never two holders, each release by the holder with its order: %s"
      % problems[:5])
check(not holder, "every acquired lock released: %s" % holder)
check(len(per_lock) == 3, "3 locks (lock, critical, nest lock): %s" % sorted(per_lock))
for lid, orders in per_lock.items():
    check(orders == list(range(len(orders))) and len(orders) == 100,
          "lock %d: acquisition orders 0..99 in time order: %d acquisitions" % (lid, len(orders)))
otf2_print_clean(out)

# ---- tasks: 18 tasks (10 + taskwait, 5 in a taskgroup, undeferred, final + included)
out, trace = run("tasks", "tasks")
evs = merged(trace, (otf2.events.OmpTaskCreate, otf2.events.OmpTaskSwitch,
                     otf2.events.OmpTaskComplete))
created, switched, completed, problems = {}, {}, {}, []
for t, where, e in evs:
    tid = e.task_id
    if isinstance(e, otf2.events.OmpTaskCreate):
        if tid in created:
            problems.append("task %d created twice" % tid)
        created[tid] = where
    elif isinstance(e, otf2.events.OmpTaskSwitch):
        if tid not in created or tid in completed:
            problems.append("switch to task %d outside its life" % tid)
        switched[tid] = switched.get(tid, 0) + 1
    else:
        if tid not in switched or tid in completed:
            problems.append("task %d completed before it ran, or twice" % tid)
        completed[tid] = completed.get(tid, 0) + 1
check(len(created) == 18, "18 tasks created: %d" % len(created))
check(not problems, "create, switch, complete in order: %s" % problems[:5])
check(set(switched) == set(created), "every created task switched to: %d of %d"
      % (len(switched), len(created)))
check(set(completed) == set(created) and set(completed.values()) == {1},
      "every created task completed exactly once: %s" % completed)
# Each (first) switch opens the task's region on the same thread.
ok = True
for loc, events in trace.events.items():
    for i, e in enumerate(events):
        if isinstance(e, otf2.events.OmpTaskSwitch) and i + 1 < len(events):
            nxt = events[i + 1]
            if isinstance(nxt, otf2.events.Enter) and not nxt.region.name.startswith("omp task"):
                ok = False
check(ok, "a switch is followed by the task's region where one is entered")
otf2_print_clean(out)

finish()
