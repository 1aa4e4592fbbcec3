"""An MPI+OpenMP program (2 ranks x 2 threads, clang/libomp) under
mpirun sysmeasure: one archive and one summary, every thread of every rank
a location, the parallel region 10 times on each of the 4 threads, the MPI
calls on the main threads."""
import os
import sys

from smtest import (CLANG, Trace, build_program, check, check_trace_consistent, finish, load_json,
                    location_rank, mpi_measure, need_openmp)

need_openmp()
if os.environ.get("SM_HAVE_MPI", "yes") != "yes":
    print("built without MPI")
    sys.exit(77)
# Open MPI's compiler wrapper, with clang underneath for LLVM's OpenMP.
os.environ["OMPI_CC"] = CLANG
prog = build_program("mpicc", "mpi_omp.c", "mpi-omp", ["-fopenmp", "-O1"])
out, proc = mpi_measure(2, [prog], "mpi-omp", env={"OMP_NUM_THREADS": "2"})
check("total 60" in proc.stdout, "the program's own result: %s" % proc.stdout)
trace = Trace(out)
check_trace_consistent(trace)
par = {}
for loc, events in trace.events.items():
    for e in events:
        if type(e).__name__ == "Enter" and e.region.name.startswith("omp parallel"):
            key = (location_rank(loc), loc.name)
            par[key] = par.get(key, 0) + 1
check(sorted(par.values()) == [10, 10, 10, 10] and {r for r, _ in par} == {0, 1},
      "the parallel region 10 times on each thread of each rank: %s" % par)
mpi = {(location_rank(l), l.name) for l, evs in trace.events.items()
       for e in evs if type(e).__name__ == "Enter" and e.region.name == "MPI_Allreduce"}
check(mpi == {(0, "Thread 0 (main)"), (1, "Thread 0 (main)")}, "MPI on the main threads: %s" % mpi)
profile = load_json(out, "profile.json")
cps = [c for c in profile["callpaths"] if c["path"] and c["path"][0].startswith("omp parallel")]
if check(cps, "the parallel region in the job's profile"):
    check(cps[0]["across_ranks"]["visits"]["mean"] == 20, "20 visits per rank (2 threads x 10): %s"
          % cps[0]["across_ranks"]["visits"])
finish()
