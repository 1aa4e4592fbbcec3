"""An MPI+OpenMP program (2 ranks x 2 threads, clang/libomp) under
mpirun sysmeasure: one archive and one summary, every thread of every rank
a location, the parallel region 10 times on each of the 4 threads, the MPI
calls on the main threads; each rank's thread teams are communicators of
their own, numbered alike on all ranks (the events of each rank name its
own teams, whose members are its threads)."""
import os
import sys

import smtest
from smtest import (CLANG, Trace, build_program, check, check_thread_teams, check_trace_consistent,
                    load_json, location_rank, mpi_measure, need_openmp)


@smtest.fixture
def job():
    """The job, measured: (output folder, process, trace)."""
    # Open MPI's compiler wrapper, with clang underneath for LLVM's OpenMP.
    os.environ["OMPI_CC"] = CLANG
    prog = build_program("mpicc", "mpi_omp.c", "mpi-omp", ["-fopenmp", "-O1"])
    out, proc = mpi_measure(2, [prog], "mpi-omp", env={"OMP_NUM_THREADS": "2"})
    return out, proc, Trace(out)


def parallel_enters(trace):
    """{(rank, location name): enters of the parallel region}."""
    par = {}
    for loc, events in trace.events.items():
        for e in events:
            if type(e).__name__ == "Enter" and e.region.name.startswith("omp parallel"):
                key = (location_rank(loc), loc.name)
                par[key] = par.get(key, 0) + 1
    return par


def test_program_output():
    check("total 60" in job()[1].stdout, "the program's own result: %s" % job()[1].stdout)


def test_parallel_regions():
    trace = job()[2]
    check_trace_consistent(trace)
    par = parallel_enters(trace)
    check(sorted(par.values()) == [10, 10, 10, 10] and {r for r, _ in par} == {0, 1},
          "the parallel region 10 times on each thread of each rank: %s" % par)


def test_thread_teams():
    trace = job()[2]
    par = parallel_enters(trace)
    teams = check_thread_teams(trace)
    team_ranks = {}
    for loc, inst in teams.items():
        if (location_rank(loc), loc.name) not in par:
            continue  # a thread of MPI's own
        check(len(inst) == 10, "10 team begin/end pairs on %s of rank %d: %d"
              % (loc.name, location_rank(loc), len(inst)))
        for _, _, c in inst:
            ranks = {location_rank(m) for m in c.group.members}
            check(ranks == {location_rank(loc)}, "a team of rank %d has only its threads: %s"
                  % (location_rank(loc), [(location_rank(m), m.name) for m in c.group.members]))
            team_ranks.setdefault(c, set()).add(location_rank(loc))
    check(len(team_ranks) == 2 and sorted(min(r) for r in team_ranks.values()) == [0, 1] and
          all(len(c.group.members) == 2 for c in team_ranks),
          "one 2-thread team per rank, its own: %s" % {c.name: r for c, r in team_ranks.items()})


def test_mpi_on_main_threads():
    trace = job()[2]
    mpi = {(location_rank(l), l.name) for l, evs in trace.events.items()
           for e in evs if type(e).__name__ == "Enter" and e.region.name == "MPI_Allreduce"}
    check(mpi == {(0, "Thread 0 (main)"), (1, "Thread 0 (main)")}, "MPI on the main threads: %s" % mpi)


def test_profile():
    profile = load_json(job()[0], "profile.json")
    cps = [c for c in profile["callpaths"] if c["path"] and c["path"][0].startswith("omp parallel")]
    if check(cps, "the parallel region in the job's profile"):
        check(cps[0]["across_ranks"]["visits"]["mean"] == 20, "20 visits per rank (2 threads x 10): %s"
              % cps[0]["across_ranks"]["visits"])


if __name__ == "__main__":
    need_openmp()
    if os.environ.get("SM_HAVE_MPI", "yes") != "yes":
        print("built without MPI")
        sys.exit(77)
    smtest.run_cases(globals())
