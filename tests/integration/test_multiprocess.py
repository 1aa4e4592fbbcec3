"""Jobs of several processes without MPI (issue 30, item 2): the processes of
one job that share an output folder end as one archive and one profile,
written by the last of them to end, with ranks numbered by their launcher.

- torchrun (RANK, WORLD_SIZE, MASTER_ADDR/PORT, TORCHELASTIC_RUN_ID), given
  by a shell as torchrun gives it, with the ranks ending in either order and
  at the same moment; a Slurm step (SLURM_PROCID, SLURM_NTASKS, ...); a
  program without MPI under mpirun: one archive with every rank, one profile
  whose statistics span the ranks (rank 1 sleeps twice as long as rank 0:
  the min on rank 0, the max on rank 1), metadata.json of every rank, no
  per-process file left, one closing line;
- a rank killed with SIGKILL: the survivor leaves the files and says in one
  line how to merge them; sysmeasure-merge then makes one archive with the
  killed rank's events up to the kill (--crash-safe) and names that rank;
- a second job given the folder while the first runs: its processes write
  sub-folders of their own, with a line each;
- a program and the processes it starts (fork, fork + exec, Python's
  multiprocessing with fork and spawn): one archive, the program process 0;
  --keep-process-files; a child killed with SIGKILL (the one line, then
  sysmeasure-merge);
- an MPI job is unchanged: one archive through MPI_Finalize."""
import os
import signal
import subprocess
import time

import smtest
from smtest import (LAUNCHER, MPIRUN, BUILD, Trace, check, check_messages,
                    check_trace_consistent, clean_env, load_json, mpi_env, program,
                    region_visits_by_rank, workdir)

HAVE_MPI = os.environ.get("SM_HAVE_MPI", "yes") == "yes"
MEMBER = program("job-member")
MERGE = os.path.join(BUILD, "sysmeasure-merge")
# The planted region: each rank visits "work" twice, rank r sleeping
# (r + 1) * MS each time.
MS = 50
# Launcher variables of the machine the test runs on are not the test's.
# The jobs here write little; a nearly full disk of the test machine must
# not stop their traces (the free-space floor has its own tests).
SYSMEASURE = [LAUNCHER, "--min-free-space", "0"]
LAUNCHER_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                 "MASTER_PORT", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT",
                 "TORCHELASTIC_ERROR_FILE", "GROUP_RANK")


def base_env(extra):
    env = clean_env()
    for k in list(env):
        if k in LAUNCHER_VARS or k.startswith(("OMPI_", "PMIX_", "PMI_", "SLURM_", "MV2_")):
            del env[k]
    env.update(extra)
    return env


def torch_env(rank, size, run_id):
    return base_env({"RANK": str(rank), "WORLD_SIZE": str(size), "LOCAL_RANK": str(rank),
                     "LOCAL_WORLD_SIZE": str(size), "MASTER_ADDR": "127.0.0.1",
                     "MASTER_PORT": "29500", "TORCHELASTIC_RUN_ID": run_id})


def slurm_env(rank, size, job_id):
    return base_env({"SLURM_PROCID": str(rank), "SLURM_NTASKS": str(size),
                     "SLURM_JOB_ID": job_id, "SLURM_STEP_ID": "0", "SLURM_LOCALID": str(rank)})


def wait_for(paths, procs, seconds=60):
    """Until every path exists (the test's own polling)."""
    end = time.time() + seconds
    while time.time() < end and not all(os.path.exists(p) for p in paths):
        if any(p.poll() is not None for p in procs):
            break
        time.sleep(0.01)
    return all(os.path.exists(p) for p in paths)


def start_ranks(work, env_of, size, launcher_args=()):
    """The job's processes, each stopped in "waiting" after its planted
    work until its GO file exists; returns (out, procs, go files)."""
    out = os.path.join(work, "out")
    procs, gos, started = [], [], []
    for r in range(size):
        gos.append(os.path.join(work, "go-%d" % r))
        started.append(os.path.join(work, "started-%d" % r))
        cmd = SYSMEASURE + ["-o", out] + list(launcher_args) + \
            [MEMBER, str((r + 1) * MS), gos[-1], started[-1]]
        procs.append(subprocess.Popen(cmd, env=env_of(r), stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    check(wait_for(started, procs), "every rank runs: %s" % [p.poll() for p in procs])
    return out, procs, gos


def end_ranks(procs, gos, order):
    """Lets the ranks end: one after the other in order (each gone before
    the next is let go), or all at once (order None)."""
    if order is None:
        for g in gos:
            open(g, "w").close()
        order = range(len(procs))
    else:
        for r in order:
            open(gos[r], "w").close()
            procs[r].wait(timeout=120)
    return {r: procs[r].communicate(timeout=120) + (procs[r].returncode,) for r in order}


def read_json(folder, name):
    try:
        return load_json(folder, name)
    except (OSError, ValueError) as e:
        check(False, "%s/%s cannot be read: %s" % (folder, name, e))
        return {}


def leftovers(out):
    """What must not stay: per-process files, the folder's record, sub-folders."""
    if not os.path.isdir(out):
        return ["(no folder)"]
    return sorted(n for n in os.listdir(out)
                  if n in (".ranks", ".spill") or n.startswith(".sysmeasure.lock")
                  or (os.path.isdir(os.path.join(out, n)) and n != "traces"))


def check_job_result(out, results, pids, launcher):
    """One archive and one profile of every rank, by the last to end."""
    size = len(pids)
    for r, (stdout, stderr, rc) in sorted(results.items()):
        check(rc == 0 and stdout == "application output\n",
              "rank %d: rc 0, its output kept: %d %r %s" % (r, rc, stdout, stderr))
    lines = [l for _, stderr, _ in results.values() for l in stderr.splitlines()]
    closing = "sysmeasure: %d processes of the %s job measured; output in %s" % (size, launcher, out)
    check(lines == [closing], "one closing line for the job, nothing else: %s" % lines)
    check(leftovers(out) == [], "no per-process file or record left: %s" % leftovers(out))

    meta = read_json(out, "metadata.json")
    check(meta.get("ranks") == size and [p.get("pid") for p in meta.get("processes", [])] == pids,
          "metadata.json: %d ranks, the pids by rank %s: %s %s"
          % (size, pids, meta.get("ranks"), meta.get("processes")))
    profile = read_json(out, "profile.json")
    work = [c for c in profile.get("callpaths", []) if c.get("path") == ["work"]]
    if check(len(work) == 1, "profile.json: one call path 'work': %s"
             % [c.get("path") for c in profile.get("callpaths", [])]):
        per_rank = work[0].get("per_rank", [])
        check([(p["rank"], p["visits"]) for p in per_rank] == [(r, 2) for r in range(size)],
              "profile.json: 2 visits of 'work' on every rank: %s" % per_rank)
        incl = work[0].get("across_ranks", {}).get("inclusive", {})
        # Planted: rank r sleeps 2 x (r + 1) x MS ms in "work".
        check(incl.get("min_rank") == 0 and incl.get("max_rank") == size - 1
              and incl.get("min", 0) >= 2 * MS * 1e6 and incl.get("max", 0) >= 2 * size * MS * 1e6,
              "profile.json: across the ranks, min on rank 0 (>= %d ms), max on rank %d "
              "(>= %d ms): %s" % (2 * MS, size - 1, 2 * size * MS, incl))
    try:
        with open(os.path.join(out, "profile.txt")) as f:
            text = f.read()
    except OSError as e:
        text = ""
        check(False, "profile.txt: %s" % e)
    row = [l for l in text.splitlines() if l.startswith("| work ") and "ACROSS" not in l]
    ranks_row = [l.split("|") for l in row if len(l.split("|")) > 16]
    check(("ranks       : %d on 1 host" % size) in text and ranks_row
          and ranks_row[0][2].strip() == str(size) and ranks_row[0][7].strip() == "0"
          and ranks_row[0][9].strip() == str(size - 1),
          "profile.txt: %d ranks, across the ranks 'work' has its min on rank 0 and its max on "
          "rank %d: %s" % (size, size - 1, row))
    try:
        trace = Trace(out)
    except Exception as e:
        check(False, "the archive cannot be read: %s" % e)
        return
    check_trace_consistent(trace)
    visits = region_visits_by_rank(trace)
    check(visits.get("work") == {r: 2 for r in range(size)}
          and visits.get("waiting") == {r: 1 for r in range(size)},
          "the archive holds every rank's planted regions: %s" % visits)
    check_process_names(trace, size, launcher)


def torch_job(name, order):
    work = workdir(name)
    run_id = os.path.basename(work)
    out, procs, gos = start_ranks(work, lambda r: torch_env(r, 2, run_id), 2)
    results = end_ranks(procs, gos, order)
    check_job_result(out, results, [p.pid for p in procs], "torchrun")


def test_torchrun_rank1_ends_first():
    """Two torchrun ranks in one folder, rank 1 ends first: rank 0 merges."""
    torch_job("torch-1-first", [1, 0])


def test_torchrun_rank0_ends_first():
    """The other order: rank 1 is the last and merges."""
    torch_job("torch-0-first", [0, 1])


def test_torchrun_ranks_end_at_once():
    """Both let go at the same moment: exactly one of them merges."""
    torch_job("torch-at-once", None)


def test_torchrun_folder_per_rank():
    """Each torchrun process with a folder of its own (-o out.$RANK, the way
    users kept the processes apart before a job's processes shared one):
    each folder gets its process's archive and profile when it ends, with
    one line that says so; nothing waits for the other."""
    work = workdir("torch-own-folders")
    run_id = os.path.basename(work)
    procs, gos, started, outs = [], [], [], []
    for r in range(2):
        outs.append(os.path.join(work, "out.%d" % r))
        gos.append(os.path.join(work, "go-%d" % r))
        started.append(os.path.join(work, "started-%d" % r))
        cmd = SYSMEASURE + ["-o", outs[r], MEMBER, str((r + 1) * MS), gos[r], started[r]]
        procs.append(subprocess.Popen(cmd, env=torch_env(r, 2, run_id), stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    check(wait_for(started, procs), "every rank runs: %s" % [p.poll() for p in procs])
    results = end_ranks(procs, gos, [0, 1])
    for r in range(2):
        stdout, stderr, rc = results[r]
        check(rc == 0 and stdout == "application output\n",
              "rank %d: rc 0, its output kept: %d %r %s" % (r, rc, stdout, stderr))
        check("is the only one in %s" % outs[r] in stderr,
              "rank %d says its folder holds it alone: %r" % (r, stderr))
        profile = read_json(outs[r], "profile.json")
        work_cp = [c for c in profile.get("callpaths", []) if c.get("path") == ["work"]]
        check(len(work_cp) == 1 and [p["visits"] for p in work_cp[0].get("per_rank", [])] == [2],
              "rank %d: profile.json has its 2 visits of 'work': %s" % (r, work_cp))
        try:
            trace = Trace(outs[r])
        except Exception as e:
            check(False, "rank %d: the archive cannot be read: %s" % (r, e))
            continue
        check_trace_consistent(trace)
        visits = region_visits_by_rank(trace)
        counts = {k: sum(v.values()) for k, v in visits.items() if k in ("work", "waiting")}
        check(counts == {"work": 2, "waiting": 1},
              "rank %d: its archive holds its planted regions: %s" % (r, visits))


def test_slurm_step():
    """Two tasks of a Slurm step without MPI (srun -n 2 sysmeasure -o DIR)."""
    work = workdir("slurm-step")
    job = "%d" % (os.getpid() * 1000 + int(time.time()) % 1000)
    out, procs, gos = start_ranks(work, lambda r: slurm_env(r, 2, job), 2)
    results = end_ranks(procs, gos, [1, 0])
    check_job_result(out, results, [p.pid for p in procs], "Slurm")


def test_killed_rank():
    """Rank 1 of a torchrun job killed with SIGKILL (--crash-safe): rank 0,
    the last, leaves the files and says so in one line; sysmeasure-merge
    then makes one archive with rank 1's events up to the kill and names
    rank 1 as recovered."""
    work = workdir("killed-rank")
    run_id = os.path.basename(work)
    out, procs, gos = start_ranks(work, lambda r: torch_env(r, 2, run_id), 2,
                                  launcher_args=["--crash-safe"])
    procs[1].send_signal(signal.SIGKILL)
    procs[1].communicate(timeout=60)
    check(procs[1].returncode == -signal.SIGKILL, "rank 1 killed: %s" % procs[1].returncode)
    results = end_ranks(procs, gos, [0])
    stdout, stderr, rc = results[0]
    check(rc == 0 and stdout == "application output\n", "rank 0: rc 0, its output: %d %r"
          % (rc, stdout))
    line = "sysmeasure: warning: 1 process wrote %s; run `sysmeasure-merge %s` to make one " \
           "archive (1 of the 2 processes of the torchrun job ended without writing their files: " \
           "rank 1 (pid %d on %s))" % (out, out, procs[1].pid, os.uname().nodename)
    check(stderr.splitlines() == [line], "rank 0 says the one line: %r" % stderr)
    check(not os.path.exists(os.path.join(out, "traces.otf2"))
          and os.path.isdir(os.path.join(out, ".ranks")),
          "the per-process files are left, no archive: %s" % os.listdir(out))
    proc = subprocess.run([MERGE, out], env=clean_env(), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=120)
    check(proc.returncode == 0, "the merge exits 0: %d %s" % (proc.returncode, proc.stderr))
    check("rank 1 (pid %d on %s) left no process file (killed): recovered from its crash-safe "
          "files" % (procs[1].pid, os.uname().nodename) in proc.stderr
          and "2 of 2 ranks merged into %s" % out in proc.stderr,
          "the merge names rank 1 as recovered, 2 ranks merged: %s" % proc.stderr)
    check(leftovers(out) == [], "nothing of the job's files left after the merge: %s"
          % leftovers(out))
    meta = read_json(out, "metadata.json")
    check(meta.get("ranks") == 2, "metadata.json: 2 ranks: %s" % meta.get("ranks"))
    try:
        trace = Trace(out)
    except Exception as e:
        check(False, "the archive cannot be read: %s" % e)
        return
    check_process_names(trace, 2, "killed rank, merged")
    visits = region_visits_by_rank(trace)
    check(visits.get("work") == {0: 2, 1: 2} and visits.get("waiting") == {0: 1, 1: 1},
          "the archive has rank 0's regions and rank 1's up to the kill: %s" % visits)


def test_program_without_mpi_under_mpirun():
    """mpirun -np 3 sysmeasure -o DIR of a program that does not use MPI:
    one archive of the 3 ranks, by the last to end."""
    if not HAVE_MPI:
        smtest.skip("built without MPI")
    out = os.path.join(workdir("mpirun-no-mpi"), "out")
    cmd = [MPIRUN, "-np", "3", "--oversubscribe"] + SYSMEASURE + ["-o", out, MEMBER, str(MS)]
    proc = subprocess.run(cmd, env=clean_env(mpi_env()), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=120)
    check(proc.returncode == 0 and proc.stdout.count("application output") == 3,
          "rc 0, every rank's output: %d %r %s" % (proc.returncode, proc.stdout, proc.stderr))
    closing = "sysmeasure: 3 processes of the Open MPI job measured; output in %s" % out
    check(proc.stderr.splitlines() == [closing], "one closing line: %s" % proc.stderr)
    check(leftovers(out) == [], "no per-process file left: %s" % leftovers(out))
    meta = read_json(out, "metadata.json")
    check(meta.get("ranks") == 3 and len({p["pid"] for p in meta.get("processes", [])}) == 3,
          "metadata.json: 3 ranks: %s" % meta.get("processes"))
    try:
        trace = Trace(out)
        visits = region_visits_by_rank(trace)
        check_process_names(trace, 3, "mpirun without MPI")
    except Exception as e:
        visits = {}
        check(False, "the archive cannot be read: %s" % e)
    check(visits.get("work") == {0: 2, 1: 2, 2: 2}, "every rank's visits: %s" % visits)


def test_another_job_beside():
    """A second torchrun job given the folder while the first runs there:
    its ranks never touch the first job's files; each writes a sub-folder
    of its own, said in one line; the first job's archive is whole."""
    work = workdir("two-jobs")
    first = os.path.basename(work) + "-a"
    out, procs, gos = start_ranks(work, lambda r: torch_env(r, 2, first), 2)
    second = [subprocess.Popen(SYSMEASURE + ["-o", out, MEMBER, str(MS)],
                               env=torch_env(r, 2, os.path.basename(work) + "-b"),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
              for r in range(2)]
    for r, p in enumerate(second):
        _, stderr = p.communicate(timeout=120)
        lines = stderr.splitlines()
        sub = os.path.join(out, "job-member-%d" % p.pid)
        check(p.returncode == 0 and len(lines) == 2 and "writes into %s" % sub in lines[0]
              and "another job" in lines[0] and lines[1].endswith("output in %s" % sub),
              "second job, rank %d: its own sub-folder, said in one line: %s" % (r, lines))
        meta = read_json(sub, "metadata.json")
        check(meta.get("ranks") == 1 and meta.get("pid") == p.pid,
              "second job, rank %d: a whole result of its own: %s" % (r, meta.get("processes")))
    results = end_ranks(procs, gos, [1, 0])
    subs = sorted(n for n in os.listdir(out) if n.startswith("job-member-"))
    check(len(subs) == 2, "the second job's two sub-folders: %s" % subs)
    for n in subs:  # (not the first job's leftovers)
        os.rename(os.path.join(out, n), os.path.join(work, n))
    check_job_result(out, results, [p.pid for p in procs], "torchrun")


FORKER = program("fork-children")
PY = "/usr/bin/python3"
POOL = r"""
import ctypes, multiprocessing as mp, sys, time
lib = ctypes.CDLL(None)  # the user API of the preloaded libsysmeasure
# (the regions' names differ from the Python functions', which are measured too)
def task(i):
    lib.sysmeasure_push_region(b"pool task")
    time.sleep(0.02)
    lib.sysmeasure_pop_region(b"pool task")
    return i * i
if __name__ == "__main__":
    mp.set_start_method(sys.argv[1])
    lib.sysmeasure_push_region(b"pool main")
    pool = mp.Pool(3)
    print(sum(pool.map(task, range(6), chunksize=1)))
    # close and join, not terminate: a SIGTERM that lands while a worker
    # is still starting (in malloc) can abort it inside sysmeasure's
    # end-of-run write, which runs in the signal handler (a known limit).
    pool.close()
    pool.join()
    lib.sysmeasure_pop_region(b"pool main")
"""


def run_family(name, cmd, work=None):
    """cmd under sysmeasure -o OUT; (out, proc).  Its stderr is read to its
    end, so that every process that holds it (the last to end) has ended."""
    out = os.path.join(work or workdir(name), "out")
    proc = subprocess.run(SYSMEASURE + ["-o", out] + cmd, env=base_env({}), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=120)
    return out, proc


def check_process_names(trace, n, what, kind="Process"):
    """The archive's processes are named "<kind> 0" .. "<kind> n-1": a job
    without MPI does not call its processes MPI ranks."""
    groups = sorted({l.group.name for l in trace.locations}, key=lambda g: int(g.split()[-1]))
    check(groups == ["%s %d" % (kind, r) for r in range(n)],
          "%s: the archive's %d processes named %s 0..%d: %s" % (what, n, kind, n - 1, groups))


def check_family(out, proc, n, what):
    """One archive of n processes (the program and those it started), one
    closing line, nothing left."""
    closing = "sysmeasure: %d processes measured (the program (pid %d) and the processes it " \
              "started); output in %s" % (n, proc.pid if hasattr(proc, "pid") else 0, out)
    lines = proc.stderr.splitlines()
    check(len(lines) == 1 and lines[0].startswith("sysmeasure: %d processes measured (the "
                                                   "program (pid " % n)
          and lines[0].endswith("and the processes it started); output in %s" % out),
          "%s: one closing line for %d processes: %s (like %r)" % (what, n, lines, closing))
    check(leftovers(out) == [], "%s: no per-process file or record left: %s" % (what, leftovers(out)))
    meta = read_json(out, "metadata.json")
    check(meta.get("ranks") == n and [p.get("rank") for p in meta.get("processes", [])]
          == list(range(n)), "%s: metadata.json of %d processes: %s"
          % (what, n, meta.get("processes")))
    try:
        trace = Trace(out)
    except Exception as e:
        check(False, "%s: the archive cannot be read: %s" % (what, e))
        return {}, {}
    check_trace_consistent(trace)
    check_process_names(trace, n, what)
    return region_visits_by_rank(trace), read_json(out, "profile.json")


def test_fork_children():
    """A C program forks 2 children inside its region "spawn"; child i
    visits "child work" i+1 times and ends with _exit: one archive, the
    program as process 0 and the children as 1 and 2, each child inside
    "spawn" as it was at the fork and nothing of the parent's before it."""
    out, proc = run_family("fork", [FORKER, "2", "20"])
    check(proc.returncode == 0 and proc.stdout == "parent: 2 children, 0 failed\n",
          "fork: rc 0, the program's output: %d %r" % (proc.returncode, proc.stdout))
    visits, profile = check_family(out, proc, 3, "fork")
    check(visits.get("parent work") == {0: 2} and visits.get("spawn") == {0: 1, 1: 1, 2: 1}
          and visits.get("child work") == {1: 1, 2: 2} and visits.get("child") == {1: 1, 2: 1},
          "fork: each process's planted regions, none of the parent's in a child: %s" % visits)
    paths = {tuple(c["path"]): [(r["rank"], r["visits"]) for r in c["per_rank"]]
             for c in profile.get("callpaths", [])}
    check(paths.get(("spawn", "child", "child work")) == [(1, 1), (2, 2)]
          and paths.get(("parent work",)) == [(0, 2)],
          "fork: the children's call paths under the region open at the fork: %s" % paths)


def test_keep_process_files():
    """--keep-process-files: the last process writes the outputs and leaves
    every process's files, from which sysmeasure-merge makes them again."""
    out = os.path.join(workdir("keep"), "out")
    proc = subprocess.run(SYSMEASURE + ["-o", out, "--keep-process-files", FORKER, "2", "10"],
                          env=base_env({}), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=120)
    ranks = sorted(os.listdir(os.path.join(out, ".ranks"))) if os.path.isdir(
        os.path.join(out, ".ranks")) else []
    check(proc.returncode == 0 and len(proc.stderr.splitlines()) == 1
          and "3 processes measured" in proc.stderr and len(ranks) == 3
          and all(n.startswith("rank-%d." % r) for r, n in enumerate(ranks))
          and read_json(out, "metadata.json").get("ranks") == 3,
          "keep: the outputs, and the 3 process files kept: %s %s" % (ranks, proc.stderr))
    os.remove(os.path.join(out, "metadata.json"))
    merged = subprocess.run([MERGE, out], env=clean_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, timeout=120)
    check(merged.returncode == 0 and "3 of 3 ranks merged" in merged.stderr
          and read_json(out, "metadata.json").get("ranks") == 3 and leftovers(out) == [],
          "keep: sysmeasure-merge makes the outputs again: %s %s" % (merged.stderr, leftovers(out)))


def test_exec_children():
    """The same children exec the program again: each keeps the number its
    forked self had, and its regions are in the archive."""
    out, proc = run_family("exec", [FORKER, "2", "20", "exec"])
    check(proc.returncode == 0, "exec: rc 0: %d %s" % (proc.returncode, proc.stderr))
    visits, _ = check_family(out, proc, 3, "exec")
    check(visits.get("child work") == {1: 1, 2: 2} and visits.get("parent work") == {0: 2},
          "exec: each process's planted regions: %s" % visits)


def pool_script(work):
    """The pool program as a file (spawn's workers import it)."""
    path = os.path.join(work, "pool.py")
    with open(path, "w") as f:
        f.write(POOL)
    return path


def test_multiprocessing_pool():
    """Python's multiprocessing, a pool of 3 workers (fork, the default on
    Linux), 6 tasks recorded through the user API: one archive with the
    program and its 3 workers; every task once, in the workers."""
    work = workdir("pool-fork")
    out, proc = run_family("pool-fork", [PY, pool_script(work), "fork"], work)
    check(proc.returncode == 0 and proc.stdout == "55\n",
          "pool: rc 0, the program's output: %d %r %s" % (proc.returncode, proc.stdout, proc.stderr))
    visits, _ = check_family(out, proc, 4, "pool")
    tasks = visits.get("pool task", {})
    check(sum(tasks.values()) == 6 and 0 not in tasks and visits.get("pool main", {}).get(0) == 1,
          "pool: the 6 tasks in the workers, main in the program: %s" % visits)


def test_multiprocessing_spawn():
    """The same with the spawn start method: the workers (and Python's
    resource tracker) are new programs that join the family at their start."""
    work = workdir("pool-spawn")
    out, proc = run_family("pool-spawn", [PY, pool_script(work), "spawn"], work)
    check(proc.returncode == 0 and proc.stdout == "55\n",
          "spawn: rc 0, the program's output: %d %r %s" % (proc.returncode, proc.stdout, proc.stderr))
    meta = read_json(out, "metadata.json")
    n = meta.get("ranks", 0)
    visits, _ = check_family(out, proc, n, "spawn")
    check(n >= 4 and sum(visits.get("pool task", {}).values()) == 6,
          "spawn: the program and its workers, the 6 tasks: %d %s" % (n, visits))


def test_killed_child():
    """A child killed with SIGKILL (--crash-safe): the last to end says the
    one line and leaves the files; sysmeasure-merge makes one archive."""
    work = workdir("killed-child")
    out = os.path.join(work, "out")
    go, started = os.path.join(work, "go"), os.path.join(work, "started")
    victim = subprocess.Popen(SYSMEASURE + ["-o", out, "--crash-safe", FORKER, "1", "400",
                               "exec"],
                              env=base_env({}), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    # The exec'd child visits "child work" once, 400 ms: killed in there,
    # once its record names it (it names the parent until the child names
    # itself) and its exec'd self has made its crash-safe files.
    pid = None
    end = time.time() + 60
    while time.time() < end and victim.poll() is None and pid is None:
        ranks = os.path.join(out, ".ranks")
        jobs = [d for d in os.listdir(ranks) if d.endswith(".job")] if os.path.isdir(ranks) else []
        try:
            with open(os.path.join(ranks, jobs[0], "start-1")) as f:
                text = f.read()
            if "forking" not in text and "pid %d\n" % victim.pid not in text:
                pid = int(text.split("pid ")[1].split()[0])
        except (IndexError, OSError, ValueError):
            pass
        time.sleep(0.002)
    while pid and time.time() < end and victim.poll() is None:
        try:
            with open("/proc/%d/cmdline" % pid) as f:
                exec_d = "child" in f.read().split("\0")
            spill = os.path.join(out, ".spill")
            if exec_d and any(n.endswith(".%d.events" % pid) and
                              os.path.getsize(os.path.join(spill, n)) > 0 for n in os.listdir(spill)):
                break
        except OSError:
            pass
        time.sleep(0.002)
    time.sleep(0.1)
    if check(pid is not None, "the child joined the family"):
        os.kill(pid, signal.SIGKILL)
    stdout, stderr = victim.communicate(timeout=60)
    check(victim.returncode == 1 and stdout == "parent: 1 children, 1 failed\n",
          "the program saw its child killed: %d %r" % (victim.returncode, stdout))
    line = ("sysmeasure: warning: 1 process wrote %s; run `sysmeasure-merge %s` to make one "
            "archive (1 of the 2 processes of the program (pid %d) and the processes it started "
            "ended without writing their files: process 1 (pid %s on %s))"
            % (out, out, victim.pid, pid, os.uname().nodename))
    check(stderr.splitlines() == [line], "the program, the last, says the one line: %r" % stderr)
    proc = subprocess.run([MERGE, out], env=clean_env(), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=120)
    check(proc.returncode == 0 and "rank 1 (pid %s on %s) left no process file (killed): "
          "recovered from its crash-safe files" % (pid, os.uname().nodename) in proc.stderr
          and "2 of 2 ranks merged" in proc.stderr,
          "the merge recovers the killed child as rank 1: %d %s" % (proc.returncode, proc.stderr))
    check(leftovers(out) == [], "nothing left after the merge: %s" % leftovers(out))
    meta = read_json(out, "metadata.json")
    check(meta.get("ranks") == 2, "metadata.json: the program and its child: %s"
          % meta.get("processes"))
    try:
        visits = region_visits_by_rank(Trace(out))
    except Exception as e:
        visits = {}
        check(False, "the archive cannot be read: %s" % e)
    check(visits.get("parent work") == {0: 2} and visits.get("child work") == {1: 1},
          "the program's regions and the child's up to the kill: %s" % visits)


def test_mpi_job_unchanged():
    """An MPI program under mpirun still ends through MPI_Finalize: one
    archive, its messages matched, no per-process files on the way."""
    if not HAVE_MPI:
        smtest.skip("built without MPI")
    out = os.path.join(workdir("mpi-unchanged"), "out")
    cmd = [MPIRUN, "-np", "2", "--oversubscribe"] + SYSMEASURE + ["-o", out,
                                                                   program("mpi-patterns"), "ring"]
    proc = subprocess.run(cmd, env=clean_env(mpi_env()), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=120)
    check(proc.returncode == 0, "rc 0: %d %s" % (proc.returncode, proc.stderr))
    check(len(proc.stderr.splitlines()) == 1 and "2 ranks measured" in proc.stderr,
          "the MPI job's closing line: %s" % proc.stderr)
    check(leftovers(out) == [], "nothing left beside the outputs: %s" % leftovers(out))
    check(read_json(out, "metadata.json").get("ranks") == 2, "metadata.json: 2 ranks")
    try:
        trace = Trace(out)
        check(check_messages(trace, 2) == 6, "the ring's 6 messages matched")
        check_process_names(trace, 2, "MPI job", "MPI Rank")
    except Exception as e:
        check(False, "the archive cannot be read: %s" % e)


smtest.run_cases(globals())
