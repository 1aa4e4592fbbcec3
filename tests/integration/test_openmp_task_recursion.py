"""Task recursion folds (tests/programs/omp_fib_tasks.c: fibonacci with one
OpenMP task per call, two task constructs and a taskwait, on 2 threads).
A task that runs while a task of the same construct is open below it on
the thread takes that task's call path: the profile has a path per chain
of distinct constructs, so no path holds a task construct twice and the
number of paths does not grow with the recursion depth.  The visits stay
exact (every task counted once), and the trace keeps every task's enter
and leave, properly nested."""
import re

import smtest
from smtest import (CLANG, Trace, build_program, check, check_trace_consistent, load_json, measure,
                    need_openmp)


@smtest.fixture
def prog():
    return build_program(CLANG, "omp_fib_tasks.c", "omp-fib-tasks", ["-fopenmp", "-O1", "-g", "-Wall"])


def task_regions(names):
    return [n for n in names if n.startswith("omp task @")]


def run(n, trace_too):
    args = [] if trace_too else ["--trace=no"]
    out, proc = measure([prog(), str(n)], "omp-fib-%d-%s" % (n, "trace" if trace_too else "profile"),
                        env={"OMP_NUM_THREADS": "2"}, launcher_args=args)
    m = re.search(r"fib (\d+) = (\d+) tasks (\d+)", proc.stdout)
    check(m is not None, "fib(%d): the program's output: %s" % (n, proc.stdout))
    tasks = int(m.group(3)) if m else -1
    profile = load_json(out, "profile.json")
    paths = profile["callpaths"]
    # No path holds a task construct twice: recursion folded.
    for cp in paths:
        regions = task_regions(cp["path"])
        check(len(regions) == len(set(regions)),
              "fib(%d): a task construct twice on one path: %s" % (n, cp["path"]))
    # Every task counted once, over both constructs, both threads.
    visits = {}
    for cp in paths:
        if cp["region"].startswith("omp task @"):
            visits[cp["region"]] = visits.get(cp["region"], 0) + sum(
                t["visits"] for t in cp["per_thread"])
    check(len(visits) == 2, "fib(%d): two task constructs: %s" % (n, sorted(visits)))
    check(sum(visits.values()) == tasks,
          "fib(%d): %d task visits in the profile: %s" % (n, tasks, visits))
    # fib's two constructs make the same number of tasks.
    check(len(set(visits.values())) == 1, "fib(%d): equal visits per construct: %s" % (n, visits))
    return out, tasks, len(paths)


def test_fib10_traced():
    out, tasks, paths_small = run(10, True)
    trace = Trace(out)
    entered = check_trace_consistent(trace)
    check(sum(v for k, v in entered.items() if k.startswith("omp task @")) == tasks,
          "fib(10): every task entered in the trace (%d): %s" % (tasks, entered))
    check(paths_small <= 40, "fib(10): a bounded call tree: %d paths" % paths_small)


def test_fib20_profile_only():
    out, tasks, paths_large = run(20, False)
    # Two threads, two constructs: a handful of chains of constructs, whatever
    # the depth (without folding fib(20) makes tens of thousands of paths).
    check(paths_large <= 40, "fib(20): a bounded call tree: %d paths" % paths_large)


if __name__ == "__main__":
    need_openmp()
    smtest.run_cases(globals())
