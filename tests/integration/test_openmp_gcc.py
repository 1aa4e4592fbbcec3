"""A program built with gcc -fopenmp (libgomp, no OMPT), run both ways: on
libgomp it runs and is measured for everything else, and sysmeasure says
once how to measure its OpenMP; with --openmp-runtime=llvm it runs on LLVM's
libomp and its parallel regions are measured."""
import shutil

import smtest
from smtest import (Trace, build_program, check, check_trace_consistent, load_json, measure,
                    need_openmp, user_api_flags)

ENV = {"OMP_NUM_THREADS": "2"}


@smtest.fixture
def prog():
    return build_program(shutil.which("gcc"), "omp_gcc.c", "omp-gcc",
                         ["-fopenmp", "-O1"] + user_api_flags())


def parallel_visits(trace):
    return {loc.name: sum(1 for e in evs if type(e).__name__ == "Enter" and
                          e.region.name.startswith("omp parallel @"))
            for loc, evs in trace.events.items()}


def test_libgomp():
    # on libgomp: the notice, the exit status, the rest measured
    out, proc = measure([prog()], "omp-gcc-native", env=ENV, expect_rc=3)
    lines = [l for l in proc.stderr.splitlines() if "libgomp" in l or "OMPT" in l]
    check(len(lines) == 1, "one notice on stderr: %s" % proc.stderr)
    check(lines and "--openmp-runtime=llvm" in lines[0] and "OMPT" in lines[0],
          "it says what is missing and how to get it: %s" % lines)
    trace = Trace(out)
    visits = check_trace_consistent(trace)
    check(visits.get("serial part") == 1 and visits.get("openmp part") == 1,
          "the user regions are measured: %s" % visits)
    check(not any(v.startswith("omp ") for v in visits), "no OpenMP regions: %s" % visits)
    check(len(trace.locations) == 2, "libgomp's thread is still a location: %s"
          % [l.name for l in trace.locations])
    meta = load_json(out, "metadata.json")
    if "notes" in meta:  # the writers print the run's notes
        check(any("--openmp-runtime=llvm" in n for n in meta["notes"]), "the notice in metadata.json")
        check("--openmp-runtime=llvm" in open(out + "/profile.txt").read(), "and in profile.txt")


def test_llvm_runtime():
    # on LLVM's libomp: its parallel regions measured
    out, proc = measure([prog()], "omp-gcc-llvm", env=ENV, launcher_args=["--openmp-runtime=llvm"],
                        expect_rc=3)
    check("libgomp" not in proc.stderr, "no notice: %s" % proc.stderr)
    check("omp_gcc: " in proc.stdout, "the program's output: %s" % proc.stdout)
    trace = Trace(out)
    visits = check_trace_consistent(trace)
    names = sorted(loc.name for loc in trace.locations)
    check(names == ["OpenMP thread 1", "Thread 0 (main)"], "one location per thread: %s" % names)
    check(parallel_visits(trace) == {"Thread 0 (main)": 10, "OpenMP thread 1": 10},
          "10 parallel regions on each thread: %s" % parallel_visits(trace))
    check(any(v.startswith("omp parallel @ main+") for v in visits),
          "named after the function: %s" % sorted(visits))
    check(visits.get("serial part") == 1 and visits.get("openmp part") == 1,
          "the user regions too: %s" % visits)
    profile = load_json(out, "profile.json")
    paths = [cp["path"] for cp in profile["callpaths"]]
    check(any(len(p) == 2 and p[0] == "openmp part" and p[1].startswith("omp parallel @") for p in paths),
          "the parallel region inside the user region on the main thread: %s" % paths)
    check(any(len(p) == 1 and p[0].startswith("omp parallel @") for p in paths),
          "and at the root of the worker thread")
    meta = load_json(out, "metadata.json")
    check(meta["configuration"]["SYSMEASURE_OPENMP_RUNTIME"]["value"] == "llvm",
          "metadata.json records the runtime chosen")


if __name__ == "__main__":
    need_openmp()  # the adapter, and libomp for the second run
    if not shutil.which("gcc"):
        print("skipped: no gcc to build a libgomp program")
        raise SystemExit(77)
    smtest.run_cases(globals())
