"""--crash-safe: a process killed with SIGKILL (no handler runs, nothing is
written at the end) still leaves every event it recorded in its memory-mapped
files, and sysmeasure-merge rebuilds its part of the archive and profile.

The victim (tests/programs/crash_victim.c) records numbered "step" regions
and, after each, stores how many it completed in a shared-memory counter
file; it is killed with kill -9 at a random moment.  After the merge, at
least 99% of the steps completed before the kill are in the archive (read
with the OTF2 Python reader), every enter has its leave, otf2-print reads
the archive, and the profile counts the same steps.  20 kills of one rank of
a 4-rank MPI job, and kills of a single process (also with a small memory
budget, so that chunks were sealed and spilled before the kill).  A normal
end leaves no crash-safe file behind."""
import os
import random
import signal
import struct
import subprocess
import time

import otf2
import smtest
from smtest import (BUILD, LAUNCHER, MPIRUN, callpath, check, clean_env, load_json,
                    mpi_env, program, run, workdir)

MERGE = os.path.join(BUILD, "sysmeasure-merge")
STEPS = "100000000"  # the victim runs until it is killed
random.seed(int(os.environ.get("SM_TEST_SEED", "11")))


def new_counter(folder):
    path = os.path.join(folder, "counter")
    with open(path, "wb") as f:
        f.write(b"\0" * 4096)
    return path


def read_counter(path):
    with open(path, "rb") as f:
        return struct.unpack("QQ", f.read(16))


def wait_for_pid(counter, proc, limit=60.0):
    """The victim's pid, once it has begun (polling: this is the test)."""
    end = time.time() + limit
    while time.time() < end and proc.poll() is None:
        pid, _ = read_counter(counter)
        if pid:
            return pid
        time.sleep(0.02)
    return 0


def steps_in_archive(out, rank=None):
    """(enters, leaves) of "step" on the victim's location(s)."""
    enters = leaves = 0
    with otf2.reader.open(os.path.join(out, "traces.otf2")) as trace:
        for loc, e in trace.events:
            if rank is not None:
                group = loc.group.name
                if not (group.startswith("MPI Rank") and int(group.split()[-1]) == rank):
                    continue
            if isinstance(e, otf2.events.Enter) and e.region.name == "step":
                enters += 1
            elif isinstance(e, otf2.events.Leave) and e.region.name == "step":
                leaves += 1
    return enters, leaves


def check_recovered(out, what, completed, rank=None, n_ranks=1):
    proc = subprocess.run([MERGE, out], env=clean_env(), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=120)
    if not check(proc.returncode == 0, "%s: sysmeasure-merge exits 0: %d %s"
                 % (what, proc.returncode, proc.stderr)):
        return
    check("recovered from its crash-safe files" in proc.stderr,
          "%s: the merge says the rank was recovered: %s" % (what, proc.stderr))
    check("%d of %d ranks merged" % (n_ranks, n_ranks) in proc.stderr,
          "%s: every rank merged: %s" % (what, proc.stderr))
    enters, leaves = steps_in_archive(out, rank)
    # The step being written at the kill may be in (its enter, or its
    # leave too before the counter was stored): at most one more.
    check(enters >= 0.99 * completed and enters <= completed + 1,
          "%s: %d steps in the archive, %d completed before the kill" % (what, enters, completed))
    check(enters == leaves, "%s: every step entered is left (%d, %d)" % (what, enters, leaves))
    p = subprocess.run(["otf2-print", os.path.join(out, "traces.otf2")],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    check(p.returncode == 0, "%s: otf2-print reads the archive: %s" % (what, p.stderr[-500:]))
    profile = load_json(out, "profile.json")
    cp = callpath(profile, "step")
    visits = sum(t["visits"] for t in cp["per_thread"]) if cp else 0
    check(enters - 1 <= visits <= enters + 1 if rank is None else visits >= enters,
          "%s: the profile counts the steps: %d (archive %d)" % (what, visits, enters))
    return enters


# ---- a normal end: the crash-safe files go, the output is as without it.
def test_normal_end():
    out = os.path.join(workdir("crash-normal"), "out")
    counter = new_counter(os.path.dirname(out))
    proc = run([program("crash-victim"), counter, "0", "3000"], launcher_args=["--output", out,
                                                                              "--crash-safe"])
    check(proc.returncode == 0, "normal end: exit 0: %s" % proc.stderr)
    check(not os.path.exists(os.path.join(out, ".spill")),
          "normal end: no crash-safe files left: %s" % os.listdir(out))
    check(steps_in_archive(out) == (3000, 3000), "normal end: 3000 steps in the archive")
    meta = load_json(out, "metadata.json")
    check(meta["configuration"]["SYSMEASURE_CRASH_SAFE"]["value"] == "yes",
          "the option reaches the configuration: %s" % meta["configuration"]["SYSMEASURE_CRASH_SAFE"])


# ---- a single process killed (5 times; twice with a small budget and
# chunks, so that sealed chunks, spilled while it ran, precede the live one).
def kill_single(i, small):
    folder = workdir("crash-single-%d" % i)
    out = os.path.join(folder, "out")
    counter = new_counter(folder)
    env = {"SYSMEASURE_CRASH_SAFE": "yes"}
    if small:
        env.update({"SYSMEASURE_BUFFER_SIZE": "256K", "SYSMEASURE_BUFFER_CHUNK_SIZE": "16K"})
    victim = subprocess.Popen([LAUNCHER, "--output", out, "--", program("crash-victim"), counter,
                               "0", STEPS], env=clean_env(env), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    pid = wait_for_pid(counter, victim)
    if not check(pid, "single %d: the victim started" % i):
        victim.kill()
        return
    time.sleep(random.uniform(0.05, 0.4))
    os.kill(pid, signal.SIGKILL)
    victim.wait(timeout=60)
    _, completed = read_counter(counter)
    check(not os.path.exists(os.path.join(out, "traces.otf2")), "single %d: nothing written "
          "by the killed process" % i)
    what = "single %d (%s, killed after %d steps)" % (i, "small budget" if small else "default",
                                                       completed)
    check_recovered(out, what, completed)


def test_single_killed():
    for i in range(3):
        kill_single(i, small=False)


def test_single_killed_small_budget():
    for i in range(3, 5):
        kill_single(i, small=True)


# ---- one rank of a 4-rank MPI job killed at a random moment, 20 times; the
# others are torn down by mpirun (they write their process files).
def test_mpi_rank_killed():
    kills = []
    for i in range(20):
        folder = workdir("crash-mpi-%d" % i)
        out = os.path.join(folder, "out")
        counter = new_counter(folder)
        victim_rank = random.randrange(4)
        cmd = [MPIRUN, "-np", "4", "--oversubscribe", LAUNCHER, "--crash-safe", "--output", out,
               "--", program("crash-victim-mpi"), counter, str(victim_rank), STEPS]
        job = subprocess.Popen(cmd, env=clean_env(mpi_env()), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        pid = wait_for_pid(counter, job)
        if not check(pid, "mpi %d: the victim rank started" % i):
            job.kill()
            job.communicate()
            continue
        time.sleep(random.uniform(0.0, 0.3))
        os.kill(pid, signal.SIGKILL)
        _, err = job.communicate(timeout=120)
        _, completed = read_counter(counter)
        what = "mpi %d (rank %d killed after %d steps)" % (i, victim_rank, completed)
        got = check_recovered(out, what, completed, rank=victim_rank, n_ranks=4)
        kills.append((completed, got))
    print("kills (steps completed, steps in the archive): %s" % kills)


if __name__ == "__main__":
    smtest.run_cases(globals())
