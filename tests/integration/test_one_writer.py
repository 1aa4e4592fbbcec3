"""A folder has one writer at a time (issue 27): processes that share an
output folder never overwrite each other.  An MPI program started through a
job script under mpirun gets the MPI wrappers and its ranks write one
archive; two runs with one --output at once give two complete results, the
second in a sub-folder it names in one line; the ranks of a non-MPI program
under mpirun share the folder as one job (issue 30); an MPI job beside a
running writer takes one sub-folder for the job; an MPI + Kokkos program measured through
KOKKOS_PROFILE_LIBRARY alone (no launcher) writes one job folder; a record
left by a process that is gone is taken over silently."""
import os
import subprocess
import sys
import time

import smtest
from smtest import (BUILD, LAUNCHER, MPIRUN, Trace, check, check_messages, check_trace_consistent,
                    clean_env, finish, load_json, mpi_env, program, region_visits_by_rank,
                    workdir)

HAVE_MPI = os.environ.get("SM_HAVE_MPI", "yes") == "yes"
LOCK = ".sysmeasure.lock"
WAIT = program("wait-file")


def subfolders(out):
    return sorted(d for d in os.listdir(out) if os.path.isdir(os.path.join(out, d))
                  and d not in ("traces", ".spill", ".ranks"))


def read_trace(out, what):
    """The archive, or None (a failed check) when it cannot be read."""
    try:
        return Trace(out)
    except Exception as e:  # an archive two writers broke: say so, go on
        check(False, "%s: the archive in %s cannot be read: %s" % (what, out, e))
        return None


def read_json(folder, name, what):
    """A JSON output, or {} (a failed check) when it is missing or broken."""
    try:
        return load_json(folder, name)
    except (OSError, ValueError) as e:
        check(False, "%s: %s/%s cannot be read: %s" % (what, folder, name, e))
        return {}


def lock_files(out):
    """The record and any private name of it (none must stay after a run)."""
    return [n for n in os.listdir(out) if n.startswith(LOCK)]


def moved_lines(stderr):
    return [l for l in stderr.splitlines() if "writes into" in l]


def check_alone_result(folder, pid, what):
    """A complete result of one wait-file process: its pid in metadata.json,
    its one region in profile.json and in the archive."""
    meta = read_json(folder, "metadata.json", what)
    check(meta.get("pid") == pid and meta.get("ranks") == 1, "%s: metadata.json is process %d's: "
          "pid %s, ranks %s" % (what, pid, meta.get("pid"), meta.get("ranks")))
    paths = [cp["path"] for cp in read_json(folder, "profile.json", what).get("callpaths", [])]
    check(paths == [["waiting"]], "%s: profile.json holds the one region: %s" % (what, paths))
    trace = read_trace(folder, what)
    visits = check_trace_consistent(trace) if trace else None
    check(visits == {"waiting": 1}, "%s: the archive holds the one region: %s" % (what, visits))
    check(os.path.exists(os.path.join(folder, "report.html")), "%s: report.html written" % what)


def wait_for(paths, procs, seconds=30):
    """Until every path exists (the test's own polling, not sysmeasure's)."""
    end = time.time() + seconds
    while time.time() < end and not all(os.path.exists(p) for p in paths):
        if any(p.poll() is not None for p in procs):
            break
        time.sleep(0.01)
    return all(os.path.exists(p) for p in paths)


def test_script_under_mpirun():
    """mpirun -np 4 sysmeasure -o DIR ./run.sh, run.sh execs the MPI program:
    the launcher sees a script; the program, once exec'd, is started again
    with the wrappers, and the 4 ranks write one archive with their MPI data."""
    work = workdir("script-mpi")
    for name, body in (("run.sh", "exec %s ring\n"), ("run-noexec.sh", "%s ring\nexit $?\n")):
        with open(os.path.join(work, name), "w") as f:
            f.write("#!/bin/sh\n" + body % program("mpi-patterns"))
        os.chmod(os.path.join(work, name), 0o755)
    out = os.path.join(work, "out")
    cmd = [MPIRUN, "-np", "4", "--oversubscribe", LAUNCHER, "-o", out, os.path.join(work, "run.sh")]
    proc = subprocess.run(cmd, env=clean_env(mpi_env()), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=120)
    check(proc.returncode == 0, "script: rc 0: %d %s" % (proc.returncode, proc.stderr[-2000:]))
    check(proc.stderr.count("sysmeasure:") == 1 and "4 ranks measured" in proc.stderr,
          "script: one closing line for 4 ranks: %s" % proc.stderr[-2000:])
    meta = read_json(out, "metadata.json", "script")
    check(meta.get("ranks") == 4 and len({p["pid"] for p in meta.get("processes", [])}) == 4,
          "script: metadata.json has 4 ranks: %s" % meta.get("ranks"))
    trace = read_trace(out, "script")
    if trace:
        check_trace_consistent(trace)
        groups = {l.group.name for l in trace.locations if l.group.name.startswith("MPI Rank")}
        check(len(groups) == 4, "script: the archive has 4 ranks: %s" % sorted(groups))
        check(check_messages(trace, 4) == 12, "script: the ring's 12 messages matched")
        visits = region_visits_by_rank(trace)
        check(sorted(visits.get("MPI_Send", {})) == [0, 1, 2, 3],
              "script: MPI calls recorded on every rank: %s" % visits.get("MPI_Send"))
    check(subfolders(out) == [] and lock_files(out) == [],
          "script: no other writer's folder, no lock left: %s" % os.listdir(out))

    # Without exec the shells are measured too: the 4 shells are the ranks
    # of a job without MPI (issue 30), which share the folder and end as one
    # archive there; the MPI job of the programs they start goes to its rank
    # 0's sub-folder.
    out = os.path.join(work, "out-noexec")
    cmd[-1] = os.path.join(work, "run-noexec.sh")
    cmd[cmd.index("-o") + 1] = out
    proc = subprocess.run(cmd, env=clean_env(mpi_env()), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=120)
    check(proc.returncode == 0, "no exec: rc 0: %d %s" % (proc.returncode, proc.stderr[-2000:]))
    jobs = [d for d in subfolders(out) if d.startswith("mpi-patterns-")]
    if check(len(jobs) == 1, "no exec: one job folder: %s" % subfolders(out)):
        meta = read_json(os.path.join(out, jobs[0]), "metadata.json", "no exec")
        check(meta.get("ranks") == 4, "no exec: the job folder has 4 ranks: %s" % meta.get("ranks"))
        trace = read_trace(os.path.join(out, jobs[0]), "no exec")
        check(trace is not None and check_messages(trace, 4) == 12,
              "no exec: the ring's 12 messages matched")
    shells = [d for d in subfolders(out) if d.startswith("sh-")]
    check(shells == [] and moved_lines(proc.stderr) == [],
          "no exec: no shell in a sub-folder, no line: %s %s" % (shells, moved_lines(proc.stderr)))
    meta = read_json(out, "metadata.json", "no exec")
    check(meta.get("program") == "sh" and meta.get("ranks") == 4,
          "no exec: the 4 shells' archive in the folder: %s %s" % (meta.get("program"),
                                                                   meta.get("ranks")))
    check("4 processes of the Open MPI job measured; output in %s\n" % out in proc.stderr,
          "no exec: the shells' closing line: %s" % proc.stderr)


def test_two_launches_at_once():
    """The same command twice at once with one --output: two complete
    results, one in the folder, the other in a sub-folder that exactly one
    line names."""
    work = workdir("two-launches")
    out, go = os.path.join(work, "out"), os.path.join(work, "go")
    cmd = [LAUNCHER, "--output", out, WAIT, go]
    procs = [subprocess.Popen(cmd + [os.path.join(work, "started-%d" % i)], env=clean_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(2)]
    started = wait_for([os.path.join(work, "started-%d" % i) for i in range(2)], procs)
    check(started, "both runs are running at once")
    open(go, "w").close()
    results = [p.communicate(timeout=60) + (p.returncode,) for p in procs]
    for i, (stdout, stderr, rc) in enumerate(results):
        check(rc == 0 and stdout == "application output\n", "run %d: rc 0, output kept: %d %r" % (i, rc, stdout))
    lines = [l for _, stderr, _ in results for l in moved_lines(stderr)]
    subs = subfolders(out)
    check(len(lines) == 1 and len(subs) == 1, "one line and one sub-folder: %s %s" % (lines, subs))
    if len(subs) == 1:
        sub = os.path.join(out, subs[0])
        check(lines and sub in lines[0] and "another process" in lines[0],
              "the line names the sub-folder and why: %s" % lines)
        moved = [i for i, (_, stderr, _) in enumerate(results) if moved_lines(stderr)]
        pids = [p.pid for p in procs]  # the launcher execs: the program's pid
        if moved:
            check_alone_result(sub, pids[moved[0]], "the second writer")
            check_alone_result(out, pids[1 - moved[0]], "the first writer")
    check(lock_files(out) == [], "the lock is gone after both: %s" % os.listdir(out))


def test_non_mpi_ranks():
    """A program without MPI under mpirun -np 3 sysmeasure -o DIR: the ranks
    share the folder and the last to end writes one archive of the three
    (issue 30; before, ranks 1 and 2 wrote a sub-folder each)."""
    out = os.path.join(workdir("non-mpi-ranks"), "out")
    cmd = [MPIRUN, "-np", "3", "--oversubscribe", LAUNCHER, "-o", out, program("exit-code")]
    proc = subprocess.run(cmd, env=clean_env(mpi_env()), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=120)
    check(proc.returncode == 0 and proc.stdout.count("application output") == 3,
          "non-MPI ranks: rc 0, every rank's output: %d %r" % (proc.returncode, proc.stdout))
    subs = subfolders(out)
    check(subs == [] and moved_lines(proc.stderr) == [] and lock_files(out) == [],
          "non-MPI ranks: no sub-folder, no line, no lock left: %s %s" % (subs, proc.stderr))
    meta = read_json(out, "metadata.json", "non-MPI ranks")
    pids = {p.get("pid") for p in meta.get("processes", [])}
    check(meta.get("ranks") == 3 and len(pids) == 3,
          "non-MPI ranks: metadata.json of three processes: %s" % meta.get("processes"))
    trace = read_trace(out, "non-MPI ranks")
    if trace:
        check_trace_consistent(trace)
        check(region_visits_by_rank(trace).get("work") == {0: 1, 1: 1, 2: 1},
              "non-MPI ranks: every rank's region in the archive: %s"
              % region_visits_by_rank(trace))


def test_kokkos_mpi_without_launcher():
    """MPI + Kokkos with only KOKKOS_PROFILE_LIBRARY and SYSMEASURE_OUTPUT
    (the manual's Kokkos section) under mpirun -np 2: the ranks join one job
    and write one correct folder."""
    try:
        prog = program("kokkos-mpi")
    except FileNotFoundError:
        print("built without Kokkos: Kokkos + MPI without the launcher not checked")
        return
    out = os.path.join(workdir("kokkos-mpi-alone"), "out")
    lib = os.path.join(BUILD, ".libs", "libsysmeasure-kokkos.so")
    env = clean_env(mpi_env({"KOKKOS_PROFILE_LIBRARY": lib, "SYSMEASURE_OUTPUT": out}))
    env.pop("KOKKOS_TOOLS_LIBS", None)
    proc = subprocess.run([MPIRUN, "-np", "2", "--oversubscribe", "-x", "KOKKOS_PROFILE_LIBRARY",
                           "-x", "SYSMEASURE_OUTPUT", prog], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=120)
    check(proc.returncode == 0 and "global " in proc.stdout,
          "kokkos-mpi alone: rc 0, the program's output: %d %s" % (proc.returncode, proc.stderr[-2000:]))
    check(proc.stderr.count("sysmeasure:") == 1 and "2 ranks measured" in proc.stderr,
          "kokkos-mpi alone: one closing line for 2 ranks: %s" % proc.stderr)
    check(subfolders(out) == [] and lock_files(out) == [],
          "kokkos-mpi alone: one folder, no lock left: %s" % os.listdir(out))
    meta = read_json(out, "metadata.json", "kokkos-mpi alone")
    check(meta.get("ranks") == 2 and len({p["pid"] for p in meta.get("processes", [])}) == 2,
          "kokkos-mpi alone: metadata.json of 2 ranks: %s" % meta.get("ranks"))
    profile = read_json(out, "profile.json", "kokkos-mpi alone")
    cp = [c for c in profile.get("callpaths", []) if c["path"] == ["rank_work", "mpi_kernel"]]
    check(len(cp) == 1 and [r["visits"] for r in cp[0]["per_rank"]] == [1, 2],
          "kokkos-mpi alone: per-rank kernel visits in profile.json: %s" % cp)
    trace = read_trace(out, "kokkos-mpi alone")
    visits = region_visits_by_rank(trace) if trace else {}
    if trace:
        check_trace_consistent(trace)
    check(visits.get("mpi_kernel") == {0: 1, 1: 2}, "kokkos-mpi alone: rank r runs r+1 kernels: %s"
          % visits.get("mpi_kernel"))
    check(os.path.exists(os.path.join(out, "report.html")), "kokkos-mpi alone: report.html")


def test_stale_lock_taken_over():
    """A record left by a process that is gone (its pid dead on this host) is
    taken over without a word: the run holds the folder while it runs and
    leaves nothing behind."""
    work = workdir("stale-lock")
    out, go, started = os.path.join(work, "out"), os.path.join(work, "go"), os.path.join(work, "started")
    os.makedirs(out)
    dead = subprocess.Popen(["true"])
    dead.wait()
    host = os.uname().nodename
    with open(os.path.join(out, LOCK), "w") as f:
        f.write("sysmeasure output folder writer\njob proc-old\nhost %s\npid %d\nstart 1\n"
                % (host, dead.pid))
    p = subprocess.Popen([LAUNCHER, "--output", out, WAIT, go, started], env=clean_env(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    running = wait_for([started], [p])
    held = ""
    if running:
        with open(os.path.join(out, LOCK)) as f:
            held = f.read()
    open(go, "w").close()
    stdout, stderr = p.communicate(timeout=60)
    check(running and ("pid %d\n" % p.pid) in held and "proc-old" not in held,
          "the running process holds the folder: %r" % held)
    check(p.returncode == 0 and stderr.count("sysmeasure:") == 1 and "output in %s\n" % out in stderr,
          "taken over silently (the closing line only): %d %r" % (p.returncode, stderr))
    check(subfolders(out) == [], "no sub-folder: %s" % subfolders(out))
    check_alone_result(out, p.pid, "after a stale lock")
    check(lock_files(out) == [], "no lock left: %s" % os.listdir(out))


def test_mpi_job_beside_a_writer():
    """An MPI job given a folder that a running process writes: rank 0 finds
    the writer at MPI_Init and the whole job writes one sub-folder, said in
    one line; the running process keeps the folder."""
    work = workdir("job-beside")
    out, go, started = os.path.join(work, "out"), os.path.join(work, "go"), os.path.join(work, "started")
    holder = subprocess.Popen([LAUNCHER, "--output", out, WAIT, go, started], env=clean_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    running = wait_for([started], [holder])
    check(running, "job beside a writer: the writer runs")
    cmd = [MPIRUN, "-np", "2", "--oversubscribe", LAUNCHER, "-o", out, program("mpi-patterns"), "ring"]
    proc = subprocess.run(cmd, env=clean_env(mpi_env()), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=120)
    open(go, "w").close()
    hout, herr = holder.communicate(timeout=60)
    lines = moved_lines(proc.stderr)
    subs = subfolders(out)
    check(proc.returncode == 0 and len(lines) == 1 and "this MPI job" in lines[0] and len(subs) == 1
          and subs[0].startswith("mpi-patterns-") and os.path.join(out, subs[0]) in lines[0],
          "job beside a writer: one line names the job's sub-folder: %s %s" % (subs, proc.stderr))
    if len(subs) == 1:
        job = os.path.join(out, subs[0])
        check(read_json(job, "metadata.json", "job beside").get("ranks") == 2,
              "job beside a writer: 2 ranks in the sub-folder")
        trace = read_trace(job, "job beside")
        check(trace is not None and check_messages(trace, 2) == 6,
              "job beside a writer: the ring's 6 messages matched")
    check(holder.returncode == 0 and moved_lines(herr) == [], "the writer kept its folder: %r" % herr)
    check_alone_result(out, holder.pid, "the writer beside the job")
    check(lock_files(out) == [], "job beside a writer: no lock left: %s" % os.listdir(out))


TESTS = [test_two_launches_at_once, test_stale_lock_taken_over]
if HAVE_MPI:
    TESTS += [test_script_under_mpirun, test_non_mpi_ranks, test_mpi_job_beside_a_writer,
              test_kokkos_mpi_without_launcher]

for t in TESTS:
    print("== " + t.__name__)
    n = len(smtest.failures)
    t0 = time.time()
    t()
    print("   %s, %.1f s" % ("ok" if len(smtest.failures) == n else "FAILED", time.time() - t0))
finish()
