"""Fortran MPI programs (mpif.h, the mpi module, mpi_f08) under mpirun
sysmeasure: Open MPI's Fortran bindings call PMPI_ directly, so only the
Fortran wrappers see these calls; a C routine the program calls is seen by
the C wrappers; each call is counted once."""
import os
import subprocess
import sys

import smtest
from smtest import (SRC, Trace, check, check_messages, check_trace_consistent, mpi_measure,
                    region_visits_by_rank, workdir)

MPIFORT = os.environ.get("MPIFORT", "")


def ring(flavour):
    work = workdir("fortran")
    helper = os.path.join(SRC, "tests/programs/mpi_fortran_c_helper.c")
    source = os.path.join(SRC, "tests/programs/mpi_fortran_%s.f90" % flavour)
    exe = os.path.join(work, "ring-" + flavour)
    build = subprocess.run([MPIFORT, "-o", exe, source, helper], cwd=work,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if flavour == "f08" and build.returncode != 0:
        smtest.skip("no mpi_f08 module: %s" % build.stdout[-300:])
    if not check(build.returncode == 0, "%s builds: %s" % (flavour, build.stdout[-500:])):
        return
    out, proc = mpi_measure(3, [exe], "fortran-" + flavour)
    trace = Trace(out)
    check_trace_consistent(trace)
    visits = region_visits_by_rank(trace)
    each = {0: 1, 1: 1, 2: 1}
    for name, per_rank in (("MPI_Init", 1), ("MPI_Finalize", 1), ("MPI_Send", 3), ("MPI_Recv", 3),
                           ("MPI_Isend", 1), ("MPI_Irecv", 1), ("MPI_Waitall", 1),
                           ("MPI_Allreduce", 2)):
        want = {r: per_rank for r in each}
        check(visits.get(name) == want,
              "%s: %s %d time(s) per rank, got %s" % (flavour, name, per_rank, visits.get(name)))
    check(check_messages(trace, 3) == 9 + 3, "%s: 12 matched messages" % flavour)


def test_mpif():
    ring("mpif")


def test_usempi():
    ring("usempi")


def test_f08():
    ring("f08")


if __name__ == "__main__":
    if os.environ.get("SM_HAVE_MPI", "yes") != "yes" or not MPIFORT or MPIFORT == "no":
        print("no MPI Fortran compiler")
        sys.exit(77)
    smtest.run_cases(globals())
