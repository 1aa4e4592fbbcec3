"""OpenMP constructs named by their source line, from the program's DWARF
debug information (libdw), when it is built with -g: "omp parallel @ main
(omp_srcloc.c:26)", the line also in the archive's region definition
(sourceFile, beginLineNumber).  Two constructs on one line get names of
their own.  Without -g (or without libdw in this build) the names stay
"function+offset".  For an MPI job the lines survive the unification of the
ranks' definitions and sysmeasure-merge.  The expected lines are those of
the "srcloc: NAME" markers in tests/programs/omp_srcloc.c and mpi_omp.c."""
import os
import re
import subprocess

import smtest
from smtest import (BUILD, CLANG, SRC, Trace, build_program, callpath, check,
                    check_trace_consistent, load_json, measure, mpi_measure, need_openmp)


def markers(source):
    """{marker: line number} of the "srcloc: NAME" comments of a test program."""
    found = {}
    with open(os.path.join(SRC, "tests", "programs", source)) as f:
        for number, text in enumerate(f, 1):
            m = re.search(r"srcloc: (\w+)", text)
            if m:
                found[m.group(1)] = number
    return found


def with_libdw():
    try:
        with open(os.path.join(BUILD, "sm_build.h")) as f:
            return re.search(r"^#define SM_HAVE_LIBDW 1$", f.read(), re.M) is not None
    except OSError:
        return False


def omp_regions(trace):
    return {r.name: r for r in trace.definitions.regions if r.name.startswith("omp ")}


def check_offset_names(trace, what):
    """No source lines: every construct named function+offset, no sourceFile."""
    regions = omp_regions(trace)
    odd = [n for n in regions if not re.fullmatch(r"omp [^@]+ @ \S+\+0x[0-9a-f]+", n)]
    check(regions and not odd, "%s: function+offset names: %s" % (what, odd or regions))
    located = [n for n, r in regions.items() if r.source_file or r.begin_line_number]
    check(not located, "%s: no source location in the definitions: %s" % (what, located))


def check_located(regions, name, path, line, what):
    """The region is defined with the source file and line of its name."""
    r = regions.get(name)
    if check(r is not None, "%s: a region %r: %s" % (what, name, sorted(regions))):
        check(r.source_file and os.path.isabs(r.source_file) and os.path.samefile(r.source_file, path),
              "%s: %r has sourceFile %s: %s" % (what, name, path, r.source_file))
        check(r.begin_line_number == line, "%s: %r has beginLineNumber %d: %d"
              % (what, name, line, r.begin_line_number))


DWARF = with_libdw()
SOURCE = os.path.join(SRC, "tests", "programs", "omp_srcloc.c")


def test_markers():
    line = markers("omp_srcloc.c")
    check(sorted(line) == ["loop", "parallel", "task", "two"], "the program's markers: %s" % line)


def test_with_g():
    # built with -g: file:line names
    source, line = SOURCE, markers("omp_srcloc.c")
    prog = build_program(CLANG, "omp_srcloc.c", "omp-srcloc-g", ["-fopenmp", "-O1", "-g", "-Wall"])
    out, proc = measure([prog], "omp-srcloc-g", env={"OMP_NUM_THREADS": "2"})
    check("visits 2 tasks 1 twice 6 sum 5050" in proc.stdout, "the program's own counts: %s" % proc.stdout)
    trace = Trace(out)
    visits = check_trace_consistent(trace)
    regions = omp_regions(trace)
    if not DWARF:
        print("this build has no libdw: -g makes no difference")
        check_offset_names(trace, "-g without libdw")
        return
    par = "omp parallel @ main (omp_srcloc.c:%d)" % line["parallel"]
    check(visits.get(par) == 2, "%r on both threads: %s" % (par, visits))
    check_located(regions, par, source, line["parallel"], "-g")
    barrier = "omp barrier (implicit) @ main (omp_srcloc.c:%d)" % line["parallel"]
    check(visits.get(barrier) == 2, "its closing barrier under the same line: %s" % visits)
    check_located(regions, barrier, source, line["parallel"], "-g")
    task = "omp task @ main.omp_outlined (omp_srcloc.c:%d)" % line["task"]
    check(visits.get(task) == 1, "the task, named after the region's body: %s" % visits)
    check_located(regions, task, source, line["task"], "-g")
    loops = [n for n in regions if re.fullmatch(r"omp for @ \S+ \(omp_srcloc\.c:%d\)" % line["loop"], n)]
    check(len(loops) == 1 and visits.get(loops[0]) == 2, "the loop on both threads: %s" % visits)
    if loops:
        check_located(regions, loops[0], source, line["loop"], "-g")
    # Two parallel regions from one macro on one line: two names (by the
    # column, else the offset), each visited by both threads.
    two = [n for n in regions if n.startswith("omp parallel @ main") and
           re.search(r"omp_srcloc\.c:%d\b" % line["two"], n)]
    check(len(two) == 2 and all(visits.get(n) == 2 for n in two),
          "two regions on one line, two names: %s" % two)
    for n in two:
        check_located(regions, n, source, line["two"], "-g")
    # Every construct of the program has its line (the runtime's own have none).
    unlocated = [n for n, r in regions.items() if not r.begin_line_number]
    check(not unlocated, "every construct has a source line: %s" % unlocated)
    profile = load_json(out, "profile.json")
    check(callpath(profile, par, barrier) is not None, "profile.json: the barrier inside the region")
    text = open(os.path.join(out, "profile.txt")).read()
    check("|0>>> " + par in text and "|1>>> " + par in text, "profile.txt: the region on both threads")
    # otf2-print shows the location of a region's definition too.
    defs = subprocess.run(["otf2-print", "-G", os.path.join(out, "traces.otf2")],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True).stdout
    check(re.search(r'REGION .*Name: "%s".*File: "%s" <\d+>, Begin: %d,'
                    % (re.escape(par), re.escape(source), line["parallel"]), defs) is not None,
          "otf2-print -G shows the region's source file and line")


def test_without_g():
    # built without -g: function+offset names, as before
    prog = build_program(CLANG, "omp_srcloc.c", "omp-srcloc", ["-fopenmp", "-O1", "-Wall"])
    out, proc = measure([prog], "omp-srcloc", env={"OMP_NUM_THREADS": "2"})
    trace = Trace(out)
    visits = check_trace_consistent(trace)
    check_offset_names(trace, "no -g")
    check(sum(v for n, v in visits.items() if n.startswith("omp parallel @ main+")) == 8,
          "the 4 parallel regions on 2 threads each: %s" % visits)


# ---- an MPI job: one definition per line for all ranks, also after sysmeasure-merge
MPI_SOURCE = os.path.join(SRC, "tests", "programs", "mpi_omp.c")


@smtest.fixture
def mpi_prog():
    if os.environ.get("SM_HAVE_MPI", "yes") != "yes":
        smtest.skip("built without MPI")
    if not DWARF:
        smtest.skip("this build has no libdw")
    os.environ["OMPI_CC"] = CLANG
    return build_program("mpicc", "mpi_omp.c", "mpi-omp-g", ["-fopenmp", "-O1", "-g"])


def mpi_par():
    """The parallel region's name and line in mpi_omp.c."""
    line = markers("mpi_omp.c")["parallel"]
    return "omp parallel @ main (mpi_omp.c:%d)" % line, line


def test_mpi():
    prog, (par, mpi_line) = mpi_prog(), mpi_par()
    out, proc = mpi_measure(2, [prog], "mpi-omp-g", env={"OMP_NUM_THREADS": "2"})
    trace = Trace(out)
    visits = check_trace_consistent(trace)
    check(visits.get(par) == 40, "MPI: %r 10 times on each of 4 threads: %s" % (par, visits))
    check_located(omp_regions(trace), par, MPI_SOURCE, mpi_line, "MPI")


def test_mpi_merged():
    prog, (par, mpi_line) = mpi_prog(), mpi_par()
    out, proc = mpi_measure(2, [prog, "nofinalize"], "mpi-omp-g-nofinalize", expect_rc=None,
                            env={"OMP_NUM_THREADS": "2", "OMPI_MCA_odls_base_sigkill_timeout": "5"})
    merge = subprocess.run([os.path.join(BUILD, "sysmeasure-merge"), out], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    if check(merge.returncode == 0, "sysmeasure-merge: %s" % merge.stderr):
        trace = Trace(out)
        visits = check_trace_consistent(trace)
        check(visits.get(par) == 40, "merged: %r on 4 threads: %s" % (par, visits))
        check_located(omp_regions(trace), par, MPI_SOURCE, mpi_line, "merged")


if __name__ == "__main__":
    need_openmp()
    smtest.run_cases(globals())
