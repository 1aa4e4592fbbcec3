"""Filters (--filter): a Score-P filter file (rule order, continuation
lines), wildcards, MANGLED names, paradigms: exactly the regions they name
are left out of the archive and the profile, and the children of a region
left out nest in its parent.  MPI: --mpi-groups without p2p leaves sends,
receives and their regions out and the collectives in, matched; a filtered
MPI_Send keeps its message (the receive still matches).  Bad input: filter
files that do not parse, an unknown MPI group: one line, exit 2, the
program never runs."""
import os

import otf2
import smtest
from smtest import check

BUILD, SRC = smtest.BUILD, smtest.SRC


def write_filter(name, text):
    path = os.path.join(smtest.workdir("filter"), name)
    with open(path, "w") as f:
        f.write(text)
    return path


def paths_of(profile):
    """{call path as 'a > b': visits}."""
    return {" > ".join(cp["path"]): sum(t["visits"] for t in cp["per_thread"])
            for cp in profile["callpaths"]}


def check_filtered(out, kept, gone, paths):
    """kept: {region: visits} in archive and profile; gone: names in neither;
    paths: {'a > b': visits} the profile must have."""
    trace = smtest.Trace(out)
    visits = smtest.check_trace_consistent(trace)
    profile = smtest.load_json(out, "profile.json")
    in_profile = {}
    for cp in profile["callpaths"]:
        in_profile[cp["region"]] = in_profile.get(cp["region"], 0) + \
            sum(t["visits"] for t in cp["per_thread"])
    for name, n in kept.items():
        check(visits.get(name) == n, "%s: %s enters in the archive, expected %d"
              % (name, visits.get(name), n))
        check(in_profile.get(name) == n, "%s: %s visits in the profile, expected %d"
              % (name, in_profile.get(name), n))
    for name in gone:
        check(name not in visits, "%s filtered, but in the archive (%s)" % (name, visits.get(name)))
        check(name not in in_profile, "%s filtered, but in the profile" % name)
    got = paths_of(profile)
    for p, n in paths.items():
        check(got.get(p) == n, "path %s: %s visits, expected %d (paths: %s)"
              % (p, got.get(p), n, sorted(got)))
    with open(os.path.join(out, "profile.txt")) as f:
        check("applied: filtered regions are left out" in f.read(),
              "profile.txt does not say a filter was applied")
    return trace


@smtest.fixture
def c_exe():
    return smtest.build_wrapped("sysmeasure-cc", "instr_c.c", "instr-c")


ALL_C = ("main", "middle", "leaf", "work_50us", "tiny", "solve_a", "solve_b", "helper_excluded")


def test_scorep_filter_file():
    # A Score-P filter file, as Score-P documents it: the last matching rule
    # decides, patterns continue on the next line, '#' comments.
    scorep = write_filter("scorep.filter", """# a filter file written for Score-P
SCOREP_REGION_NAMES_BEGIN
  EXCLUDE *
  INCLUDE main middle  # the driver
          work_50us
          solve_*
  EXCLUDE solve_a
SCOREP_REGION_NAMES_END
""")
    out, _ = smtest.measure([c_exe(), "nothrottle"], "scorep-filter",
                            launcher_args=["--filter", scorep, "--no-throttle"])
    check_filtered(out, {"main": 1, "middle": 100, "work_50us": 20, "solve_b": 3},
                   ("leaf", "tiny", "solve_a", "helper_excluded"),
                   {"main > middle": 100, "main > solve_b": 3, "main > work_50us": 20})


def test_wildcards():
    # Wildcards: * and ?; solve_a stays, its child helper_excluded goes, and
    # solve_b's child leaf nests under solve_b as before.
    wild = write_filter("wild.filter", "SCOREP_REGION_NAMES_BEGIN\n EXCLUDE *_excluded t?ny\n"
                        "SCOREP_REGION_NAMES_END\n")
    out, _ = smtest.measure([c_exe(), "nothrottle"], "wild-filter",
                            launcher_args=["--filter", wild, "--no-throttle"])
    check_filtered(out, {"main": 1, "middle": 100, "leaf": 1003, "solve_a": 3, "solve_b": 3},
                   ("tiny", "helper_excluded"),
                   {"main > solve_a": 3, "main > solve_b > leaf": 3, "main > middle > leaf": 1000})


def test_source_file_rule():
    # Source files: a rule on the file excludes every function defined there
    # (the configuration file route, SYSMEASURE_FILTER, relative to the
    # program's working folder).
    files = write_filter("files.filter", "SCOREP_FILE_NAMES_BEGIN\n EXCLUDE */programs/instr_c.c\n"
                         "SCOREP_FILE_NAMES_END\n")
    out, _ = smtest.measure([c_exe(), "nothrottle"], "file-filter",
                            env={"SYSMEASURE_FILTER": files})
    check_filtered(out, {}, ALL_C, {})


def test_cxx_mangled_names():
    # C++: MANGLED rules match the mangled names (_ZN3geo..., _ZNK3geo... for
    # const methods: namespace geo).
    cxx_exe = smtest.build_wrapped("sysmeasure-c++", "instr_cxx.cpp", "instr-cxx")
    mangled = write_filter("mangled.filter", "SCOREP_REGION_NAMES_BEGIN\n EXCLUDE MANGLED _ZN3geo* _ZNK3geo*\n"
                           "SCOREP_REGION_NAMES_END\n")
    out, _ = smtest.measure([cxx_exe], "mangled-filter", launcher_args=["--filter", mangled])
    check_filtered(out, {"main": 1, "tools::Counter::bump()": 50,
                         "(anonymous namespace)::local_helper(int)": 5},
                   ("geo::Shape<double>::area() const", "geo::Shape<int>::area() const",
                    "geo::Shape<double>::Shape(double)",
                    "double geo::detail::accumulate<double>(double)"), {})


def test_user_api_names():
    # The user API: regions by name ("spin 1ms": a blank escaped with '\').
    user = write_filter("user.filter", "SCOREP_REGION_NAMES_BEGIN\n EXCLUDE outer spin\\ 1ms\n"
                        "SCOREP_REGION_NAMES_END\n")
    out, _ = smtest.measure([smtest.program("sleep-regions")], "user-filter",
                            launcher_args=["--filter", user])
    check_filtered(out, {"sleep 20ms": 10, "worker": 1}, ("outer", "spin 1ms"),
                   {"sleep 20ms": 10, "worker": 1})


# ---------------------------------------------------------------- bad input
def refused_filter(i, text, message):
    """Filter file bad<i>.filter: one line naming it, exit 2, the program never runs."""
    path = write_filter("bad%d.filter" % i, text)
    work = smtest.workdir("bad-filter")
    out = os.path.join(work, "out")
    proc = smtest.run([c_exe(), "nothrottle"], launcher_args=["--output", out, "--filter", path])
    check(proc.returncode == 2, "%s: exit %d, expected 2" % (message, proc.returncode))
    check(proc.stderr.count("\n") == 1 and message in proc.stderr,
          "%s: stderr %r" % (message, proc.stderr))
    check(proc.stdout == "" and not os.path.exists(out), "%s: the program ran" % message)


def test_bad_filter_rule_outside_block():
    refused_filter(1, "EXCLUDE foo\n", "bad1.filter:1: EXCLUDE outside a block")


def test_bad_filter_block_not_closed():
    refused_filter(2, "SCOREP_REGION_NAMES_BEGIN\n  EXCLUDE foo\n",
                   "bad2.filter:1: SCOREP_REGION_NAMES_BEGIN without its SCOREP_REGION_NAMES_END")


def test_bad_filter_include_without_pattern():
    refused_filter(3, "SCOREP_REGION_NAMES_BEGIN\n  EXCLUDE a\n  INCLUDE\nSCOREP_REGION_NAMES_END\n",
                   "bad3.filter:3: INCLUDE without a pattern")


def test_bad_filter_unknown_keyword():
    refused_filter(4, "SCOREP_REGION_NAMES_BEGIN\n  EXCLUDE a\nSCOREP_REGION_NAMES_ENDS\n",
                   "bad4.filter:3: unknown keyword 'SCOREP_REGION_NAMES_ENDS'")


def test_bad_filter_unknown_paradigm():
    refused_filter(5, "SYSMEASURE_PARADIGMS_BEGIN\n  EXCLUDE fortran\nSYSMEASURE_PARADIGMS_END\n",
                   "bad5.filter:2: unknown paradigm 'fortran'")


def test_missing_filter_file():
    proc = smtest.run([c_exe()], launcher_args=["--filter", "/nonexistent/x.filter"])
    check(proc.returncode == 2 and proc.stderr.strip() ==
          "sysmeasure: error: filter file /nonexistent/x.filter: No such file or directory",
          "missing filter file: %d %r" % (proc.returncode, proc.stderr))


def test_unknown_mpi_group():
    proc = smtest.run([c_exe()], launcher_args=["--mpi-groups", "coll,p2pp"])
    check(proc.returncode == 2 and proc.stderr.count("\n") == 1 and
          "unknown MPI group 'p2pp'" in proc.stderr and proc.stdout == "",
          "unknown MPI group: %d %r" % (proc.returncode, proc.stderr))


# ---------------------------------------------------------------- MPI
P2P = ("MPI_Send", "MPI_Recv", "MPI_Isend", "MPI_Irecv", "MPI_Waitall", "MPI_Wait")
COLL = {"MPI_Barrier": 8, "MPI_Allreduce": 8, "MPI_Ibcast": 8, "MPI_Comm_split": 2}


@smtest.fixture
def mpi_exe():
    if os.environ.get("SM_HAVE_MPI") != "yes":
        smtest.skip("no MPI in this build")
    return smtest.build_wrapped("sysmeasure-instrument", "instr_mpi.c", "instr-mpi",
                                flags=("mpicc", "-O2"))


def test_mpi_groups_without_p2p():
    # --mpi-groups without p2p leaves sends, receives and their regions out
    # and the collectives in, matched.
    out, _ = smtest.mpi_measure(2, [mpi_exe()], "mpi-groups", launcher_args=["--mpi-groups", "all,~p2p"])
    trace = smtest.Trace(out)
    visits = smtest.check_trace_consistent(trace)
    for name in P2P:
        check(name not in visits, "%s traced with p2p left out" % name)
    for name, n in dict(COLL, compute=8).items():
        check(visits.get(name) == n, "%s: %s enters, expected %d" % (name, visits.get(name), n))
    check(not trace.of_type(otf2.events.MpiSend) and not trace.of_type(otf2.events.MpiIsend) and
          not trace.of_type(otf2.events.MpiRecv) and not trace.of_type(otf2.events.MpiIrecv),
          "message events with p2p left out")
    colls = smtest.collective_counts(trace)
    for op in ("BARRIER", "ALLREDUCE", "BCAST"):  # MPI_Ibcast completes in MPI_Wait (p2p)
        check(colls.get(("MPI_COMM_WORLD [0, 1]", op)) == {0: 4, 1: 4},
              "%s: %s" % (op, colls.get(("MPI_COMM_WORLD [0, 1]", op))))
    with open(os.path.join(out, "profile.txt")) as f:
        check("MPI groups not measured (--mpi-groups=all,~p2p): p2p" in f.read(),
              "profile.txt does not say p2p was left out")


def test_mpi_filter_keeps_messages():
    # A filter on MPI_Send and MPI_Isend, and on the compiler paradigm: their
    # regions go, their messages stay (every receive still has its send, at
    # the call's own time).
    mpifilter = write_filter("mpi.filter", "SCOREP_REGION_NAMES_BEGIN\n EXCLUDE MPI_Send MPI_Isend\n"
                             "SCOREP_REGION_NAMES_END\nSYSMEASURE_PARADIGMS_BEGIN\n EXCLUDE compiler\n"
                             "SYSMEASURE_PARADIGMS_END\n")
    out, _ = smtest.mpi_measure(2, [mpi_exe()], "mpi-filter", launcher_args=["--filter", mpifilter])
    trace = smtest.Trace(out)
    visits = smtest.check_trace_consistent(trace)
    for name in ("MPI_Send", "MPI_Isend", "compute", "main"):
        check(name not in visits, "%s traced though filtered" % name)
    for name, n in dict(COLL, MPI_Recv=8, MPI_Irecv=8, MPI_Waitall=8).items():
        check(visits.get(name) == n, "%s: %s enters, expected %d" % (name, visits.get(name), n))
    check(smtest.check_messages(trace, 2) == 16, "not 16 matched messages with MPI_Send filtered")


if __name__ == "__main__":
    smtest.run_cases(globals())
