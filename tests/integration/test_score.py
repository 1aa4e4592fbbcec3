"""sysmeasure-score: the trace size it estimates from a run's profile is
within 10% of the archive written (a compiler-instrumented program, a tiny
trace where definitions dominate, and OpenMP runs with fork/join, teams,
tasks and locks, from a traced and from a profile-only run); its -g filter (regions under 1 us per
visit taking more than 1% of the trace) names the planted tiny function,
and fed back with --filter it shrinks the trace to the size it predicted
(within 10%).  It works on a folder completed by sysmeasure-merge, and
says what is wrong with a folder it cannot read."""
import os
import re
import subprocess

import smtest
from smtest import check

BUILD, SRC = smtest.BUILD, smtest.SRC
SCORE = os.path.join(BUILD, "sysmeasure-score")


def archive_bytes(out):
    """The bytes of the OTF2 archive as written: anchor, definitions, events."""
    total = 0
    for name in ("traces.otf2", "traces.def"):
        total += os.path.getsize(os.path.join(out, name))
    folder = os.path.join(out, "traces")
    for name in os.listdir(folder):
        total += os.path.getsize(os.path.join(folder, name))
    return total


def score(out, *args):
    proc = subprocess.run([SCORE, out] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    check(proc.returncode == 0, "sysmeasure-score %s: exit %d: %s" % (out, proc.returncode,
                                                                      proc.stderr))
    m = re.search(r"estimated trace size +: .* \((\d+) bytes", proc.stdout)
    check(m is not None, "no size estimate in: " + proc.stdout[:500])
    return (int(m.group(1)) if m else 0), proc.stdout


def near(estimate, actual, what):
    check(abs(estimate - actual) <= 0.10 * actual, "%s: estimated %d bytes, written %d (%.1f%%)"
          % (what, estimate, actual, 100.0 * (estimate - actual) / actual))


@smtest.fixture
def exe():
    return smtest.build_wrapped("sysmeasure-cc", "instr_c.c", "instr-c")


@smtest.fixture
def full():
    """No throttling: tiny's 1M calls all go into the trace (about 24 MB).
    (out, bytes written, the score's text)."""
    out, _ = smtest.measure([exe()], "score-full", launcher_args=["--no-throttle"])
    estimate, text = score(out, "-g", os.path.join(out, "proposed.filter"))
    written = archive_bytes(out)
    near(estimate, written, "full trace")
    return out, written, text


def test_full_trace():
    out, written, text = full()
    check(re.search(r"compiler +1000000 .* tiny \(instr_c\.c:\d+\)", text) is not None,
          "tiny's row: " + text[:3000])
    m = re.search(r"estimated memory per process : .* \(largest: rank 0", text)
    check(m is not None, "no memory estimate: " + text[:500])
    with open(os.path.join(out, "proposed.filter")) as f:
        proposal = f.read()
    excluded = re.findall(r"^  EXCLUDE (.*)$", proposal, re.M)
    check(excluded == ["tiny"], "proposed filter excludes %s, expected tiny only:\n%s"
          % (excluded, proposal))


def test_proposed_filter():
    # Fed back as it is: the trace shrinks as predicted.
    out, written, text = full()
    m = re.search(r"estimated trace size with it: .* \((\d+) bytes\)", text)
    predicted = int(m.group(1)) if check(m is not None, "no prediction: " + text[-500:]) else 0
    out2, _ = smtest.measure([exe()], "score-filtered",
                             launcher_args=["--no-throttle", "--filter",
                                            os.path.join(out, "proposed.filter")])
    near(predicted, archive_bytes(out2), "trace with the proposed filter")
    check(archive_bytes(out2) < written / 20, "the filter did not shrink the trace")
    estimate2, _ = score(out2)
    near(estimate2, archive_bytes(out2), "filtered trace")


def test_profile_only():
    # A profile-only run (no trace at all) still gets the estimate of its trace.
    written = full()[1]
    out3, _ = smtest.measure([exe()], "score-profile-only", launcher_args=["--no-throttle", "--no-trace"])
    check(not os.path.exists(os.path.join(out3, "traces.otf2")), "--no-trace wrote an archive")
    estimate3, _ = score(out3)
    near(estimate3, written, "trace estimated from a profile-only run")


def test_tiny_trace():
    # A tiny trace: one function, where the definitions are most of the archive.
    hello = smtest.build_wrapped("sysmeasure-cc", "static_hello.c", "hello-instr")
    out, _ = smtest.measure([hello], "score-tiny", expect_rc=5)
    estimate, text = score(out)
    near(estimate, archive_bytes(out), "tiny trace")
    check(re.search(r"compiler +1 .* main \(static_hello\.c:\d+\)", text) is not None,
          "main's row: " + text[:2000])


# OpenMP: the fork/join, team, task and lock events beside the regions,
# counted by the runtime whether it traces or not.
@smtest.fixture
def omp():
    if os.environ.get("SM_HAVE_OMPT") != "yes" or smtest.CLANG in ("", "no"):
        smtest.skip("this build has no OMPT adapter")
    return smtest.build_program(smtest.CLANG, "omp_constructs.c", "score-omp", ["-fopenmp", "-O1"])


def openmp(args):
    env = {"OMP_NUM_THREADS": "4"}
    out, _ = smtest.measure([omp()] + args, "score-omp-" + args[0], env=env)
    written = archive_bytes(out)
    estimate, text = score(out)
    near(estimate, written, "OpenMP " + args[0])
    m = re.search(r"other events (\d+)", text)
    check(m is not None and int(m.group(1)) > 0, "OpenMP %s: no other events counted: %s"
          % (args[0], text[:400]))
    pout, _ = smtest.measure([omp()] + args, "score-omp-profile-" + args[0], env=env,
                             launcher_args=["--no-trace"])
    estimate, _ = score(pout)
    near(estimate, written, "OpenMP %s, estimated from a profile-only run" % args[0])


def test_openmp_repeat():
    openmp(["repeat", "200"])


def test_openmp_tasks():
    openmp(["tasks"])


def test_openmp_locks():
    openmp(["locks"])


def test_merged_folder():
    # A folder completed by sysmeasure-merge (a job without MPI_Finalize).
    if os.environ.get("SM_HAVE_MPI") != "yes":
        smtest.skip("no MPI adapter in this build")
    mout, proc = smtest.mpi_measure(2, [smtest.program("mpi-patterns"), "nofinalize"],
                                    "score-merge", expect_rc=None)
    proc = subprocess.run([os.path.join(BUILD, "sysmeasure-merge"), mout],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(proc.returncode == 0, "sysmeasure-merge: %s" % proc.stderr)
    est, text = score(mout)
    check("(mpi-patterns, 2 processes)" in text, "merged folder: " + text[:300])
    check(re.search(r"mpi +\d+ .* MPI_Send", text) is not None, "no MPI_Send row: " + text[:2000])


# Errors: one line, exit 2.
def test_missing_folder():
    proc = subprocess.run([SCORE, "/nonexistent/folder"], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    check(proc.returncode == 2 and proc.stderr.count("\n") == 1 and "not a folder" in proc.stderr,
          "missing folder: %d %r" % (proc.returncode, proc.stderr))


def test_folder_without_profile():
    empty = smtest.workdir("score-empty")
    proc = subprocess.run([SCORE, empty], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(proc.returncode != 0 and proc.stderr.count("\n") == 1 and "no profile.json" in proc.stderr,
          "folder without profile: %d %r" % (proc.returncode, proc.stderr))


if __name__ == "__main__":
    smtest.run_cases(globals())
