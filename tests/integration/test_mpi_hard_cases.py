"""Jobs that cannot finish together: a rank calls MPI_Abort, the job is
killed, the program never calls MPI_Finalize.  Every rank leaves its data
(process file and events) and sysmeasure-merge turns them into a readable
archive and summaries.  MPI_Finalize from an atexit handler finishes
normally.  An MPI program without the launcher is unaffected, and the
launcher loads the MPI wrappers only into MPI programs."""
import glob
import os
import shutil
import signal
import subprocess
import sys
import time

import smtest
from smtest import (BUILD, LAUNCHER, MPIRUN, Trace, check, check_messages, check_trace_consistent,
                    clean_env, load_json, mpi_env, mpi_measure, program,
                    region_visits_by_rank, workdir)

if os.environ.get("SM_HAVE_MPI", "yes") != "yes":
    print("built without MPI")
    sys.exit(77)

PROG = program("mpi-patterns")
MERGE = os.path.join(BUILD, "sysmeasure-merge")


def merged(out, what, n=4):
    ranks = sorted(os.listdir(os.path.join(out, ".ranks"))) if os.path.isdir(os.path.join(out, ".ranks")) else []
    check([r.split(".")[0] for r in ranks] == ["rank-%d" % r for r in range(n)] and
          len({r.split(".")[1] for r in ranks}) == 1, "%s: a process file per rank: %s" % (what, ranks))
    check(not os.path.exists(os.path.join(out, "traces.otf2")), "%s: no archive before the merge" % what)
    # --keep: the abort case's files are merged again below, without rank 2
    proc = subprocess.run([MERGE, "--keep", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
    check(proc.returncode == 0, "%s: sysmeasure-merge exits 0: %s" % (what, proc.stderr))
    check("%d of %d ranks merged" % (n, n) in proc.stderr, "%s: merge says so: %s" % (what, proc.stderr))
    trace = Trace(out)
    check_trace_consistent(trace)
    check(len({l.group.name for l in trace.locations if l.group.name.startswith("MPI Rank")}) == n,
          "%s: every rank in the merged archive" % what)
    check(check_messages(trace, n) >= 12, "%s: the ring's 12 messages matched" % what)
    profile = load_json(out, "profile.json")
    check(any(c["path"] == ["MPI_Send"] for c in profile["callpaths"]), "%s: MPI_Send in the profile" % what)
    meta = load_json(out, "metadata.json")
    check(meta["ranks"] == n, "%s: %d ranks in the merged metadata" % (what, n))
    check(meta["command"][:1] == [PROG] and len(meta["command"]) == 2,
          "%s: the job's command line in the merged metadata: %s" % (what, meta["command"]))
    check(meta["configuration"].get("SYSMEASURE_OUTPUT", {}).get("value") == out,
          "%s: the ranks' configuration in the merged metadata" % what)
    return trace


# ---- MPI_Abort on rank 1: the job ends with its code; the data is merged.
# Open MPI sends SIGKILL 1 s after SIGTERM; on this oversubscribed machine
# the ranks get more time to write their files (as the manual advises).
GRACE = {"OMPI_MCA_odls_base_sigkill_timeout": "5"}


@smtest.fixture
def aborted():
    """The aborted job, merged with --keep (its files are merged again
    without rank 2 by test_partial)."""
    out, proc = mpi_measure(4, [PROG, "abort"], "abort", expect_rc=None, env=GRACE)
    trace = merged(out, "abort")
    return out, proc, trace


def test_abort():
    out, proc, trace = aborted()
    check(proc.returncode != 0, "an aborted job fails: %d" % proc.returncode)
    check("sysmeasure-merge " + out in proc.stderr, "rank 0 says how to merge: %s" % proc.stderr[-500:])
    check(region_visits_by_rank(trace).get("MPI_Abort") == {1: 1}, "MPI_Abort on rank 1")


# ---- a rank that left nothing (SIGKILL): the others are merged, it is named
def test_partial():
    out = aborted()[0]
    partial = os.path.join(workdir("partial"), "out")
    shutil.copytree(out, partial)
    os.remove(glob.glob(os.path.join(partial, ".ranks", "rank-2.*.smp"))[0])
    proc = subprocess.run([MERGE, partial], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(proc.returncode == 0 and "3 of the job's 4 ranks left a process file" in proc.stderr,
          "merge without rank 2: %d %s" % (proc.returncode, proc.stderr))
    t = Trace(partial)
    check_trace_consistent(t)
    check(sorted(region_visits_by_rank(t).get("MPI_Send", {})) == [0, 1, 3], "ranks 0, 1, 3 merged")


# ---- killed mid-run (SIGTERM to mpirun, which forwards it)
def test_killed():
    out = os.path.join(workdir("killed"), "out")
    cmd = [MPIRUN, "-np", "4", "--oversubscribe", LAUNCHER, "--output", out, "--", PROG, "hang"]
    job = subprocess.Popen(cmd, env=clean_env(mpi_env(GRACE)), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    line = job.stdout.readline()
    check(line.strip() == "ready", "the job runs: %r" % line)
    time.sleep(0.5)
    job.send_signal(signal.SIGTERM)
    try:
        job.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        job.kill()
        check(False, "the killed job ends")
    merged(out, "killed")


# ---- no MPI_Finalize at all
def test_nofinalize():
    out, proc = mpi_measure(4, [PROG, "nofinalize"], "nofinalize", expect_rc=None, env=GRACE)
    merged(out, "nofinalize")


# ---- rank 1 exits without MPI_Finalize while rank 0 waits inside it: the
# job is torn down (SIGTERM to rank 0, on whichever thread it lands), and
# rank 0 still keeps its data, put on disk before MPI_Finalize waited.
def test_rank_exits():
    for attempt in range(2):
        out, proc = mpi_measure(2, [PROG, "rank-exits"], "rank-exits-%d" % attempt, expect_rc=None,
                                env=GRACE)
        ranks = sorted(os.listdir(os.path.join(out, ".ranks"))) if os.path.isdir(os.path.join(out, ".ranks")) else []
        check([r.split(".")[0] for r in ranks if r.endswith(".smp")] == ["rank-0", "rank-1"],
              "rank-exits: both ranks left their data: %s; %s" % (ranks, proc.stderr[-800:]))
        mp = subprocess.run([MERGE, out], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        check(mp.returncode == 0 and "2 of 2 ranks merged" in mp.stderr, "rank-exits: merge: %d %s"
              % (mp.returncode, mp.stderr))
        if mp.returncode == 0:
            t = Trace(out)
            check_trace_consistent(t)
            visits = region_visits_by_rank(t)
            check(visits.get("waiting") == {0: 1}, "rank 0's events merged: waiting %s" % visits.get("waiting"))
            check(visits.get("MPI_Finalize", {}).get(0) == 1 and 1 not in visits.get("MPI_Finalize", {}),
                  "MPI_Finalize on rank 0 only: %s" % visits.get("MPI_Finalize"))
            check(check_messages(t, 2) >= 6, "rank-exits: the ring's messages matched")


# ---- MPI_Finalize from an atexit handler: the normal, collective output
def test_atexit():
    out, proc = mpi_measure(4, [PROG, "atexit"], "atexit")
    trace = Trace(out)
    check_trace_consistent(trace)
    check(check_messages(trace, 4) == 12, "atexit: 12 matched messages")
    check(not os.path.exists(os.path.join(out, ".ranks")), "atexit: no process files")


# ---- two jobs started at once in one folder, default names: two folders
def test_two_jobs():
    cwd = workdir("two-jobs")
    cmd = [MPIRUN, "-np", "2", "--oversubscribe", LAUNCHER, "--", PROG, "ring"]
    jobs = [subprocess.Popen(cmd, cwd=cwd, env=clean_env(mpi_env()), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for j in jobs:
        j.communicate(timeout=120)
        check(j.returncode == 0, "concurrent job exits 0")
    folders = sorted(os.listdir(cwd))
    check(len(folders) == 2 and all(f.startswith("sysmeasure-mpi-patterns-") for f in folders),
          "two jobs, two folders: %s" % folders)
    for f in folders:
        t = Trace(os.path.join(cwd, f))
        check(len({l.group.name for l in t.locations}) == 2 and check_messages(t, 2) == 6,
              "%s: one job of 2 ranks with its 6 messages" % f)


# ---- sysmeasure-merge errors: one line, an exit status
def test_merge_errors():
    empty = workdir("merge-empty")
    proc = subprocess.run([MERGE, empty], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(proc.returncode == 1 and proc.stderr.count("\n") == 1 and "nothing to merge" in proc.stderr,
          "merge of a folder without process files: %d %r" % (proc.returncode, proc.stderr))
    proc = subprocess.run([MERGE, empty + "/missing"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(proc.returncode == 2 and "is not a folder" in proc.stderr, "merge of a missing folder: %r" % proc.stderr)


# ---- without the launcher, an MPI program is unaffected
def test_no_launcher():
    cwd = workdir("nolauncher")
    proc = subprocess.run([MPIRUN, "-np", "2", "--oversubscribe", PROG, "ring"], cwd=cwd,
                          env=clean_env(mpi_env()), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(proc.returncode == 0 and os.listdir(cwd) == [], "no launcher: rc 0, nothing written: %s" % os.listdir(cwd))


# ---- the MPI wrappers go only into MPI programs (auto), or as told
def preload(args, extra=()):
    proc = subprocess.run([LAUNCHER, "-vv", "--output", os.path.join(workdir("preload"), "o")] +
                          list(extra) + ["--"] + args, env=clean_env(mpi_env()),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = [l for l in proc.stderr.splitlines() if "LD_PRELOAD=" in l]
    return lines[0] if lines else ""


def test_preload():
    check("libsysmeasure-mpi" in preload([PROG, "ring"]), "an MPI program gets the wrappers")
    check("libsysmeasure-mpi" not in preload([program("exit-code"), "0"]), "a non-MPI program does not")
    check("libsysmeasure-mpi" not in preload([PROG, "ring"], ["--no-mpi"]), "--no-mpi")
    check("libsysmeasure-mpi" in preload([program("exit-code"), "0"], ["--mpi"]), "--mpi")


if __name__ == "__main__":
    smtest.run_cases(globals())
