"""A terminating signal sent to a measured process (kill, Slurm's scancel,
mpirun's teardown, a timeout) ends it by that signal, with its output
complete, wherever the signal lands: on a thread inside malloc or stdio (the
end of the run once waited there for ever on the lock that thread held), on
a main thread blocked in read(), on a forked child, a daemon() child, very
early in the run, or after the output was written.  The programs are
tests/programs/signal_storm.c."""
import os
import random
import re
import signal
import subprocess
import time

import smtest
from smtest import (LAUNCHER, Trace, callpath, check, check_trace_consistent, clean_env,
                    load_json, program, workdir)

PROG = program("signal-storm")
OUTPUTS = ("traces.otf2", "profile.txt", "profile.json", "profile.csv", "metadata.json")
STEPS = 1000


def launch(args, out, stdin=None):
    """The program under the launcher into out, started (a Popen)."""
    cmd = [LAUNCHER, "--output", out, "--", PROG] + [str(a) for a in args]
    return subprocess.Popen(cmd, env=clean_env(), stdin=stdin, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def ended(proc, what, timeout=20):
    """(stdout, stderr) once proc ended, or None when it hung (it is killed)."""
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        check(False, "%s: no end within %d s after SIGTERM (a hang)" % (what, timeout))
        return None


def complete(out, what, steps=STEPS):
    """Every output there and readable, with the main thread's planted
    "work" > "step" regions; the profile (or None)."""
    missing = [f for f in OUTPUTS if not os.path.exists(os.path.join(out, f))]
    if not check(not missing, "%s: outputs missing: %s (have %s)" % (
            what, missing, os.listdir(out) if os.path.isdir(out) else "no folder")):
        return None
    load_json(out, "metadata.json")
    profile = load_json(out, "profile.json")
    cp = callpath(profile, "work", "step")
    got = sum(t["visits"] for t in cp["per_thread"]) if cp else 0
    check(got == steps, "%s: work > step visited %d times in the profile, planted %d"
          % (what, got, steps))
    check("work" in open(os.path.join(out, "profile.txt")).read(), "%s: profile.txt" % what)
    return profile


def thread_names(pid):
    """The names (comm) of the threads of process pid."""
    names = []
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                names.append(f.read().strip())
        except OSError:
            pass
    return sorted(names)


def threads_measured(stderr):
    m = re.search(r"sysmeasure: (\d+) threads? measured", stderr)
    return int(m.group(1)) if m else None


# ---- four threads allocate and free blocks of every size (heap bins, sbrk,
# mmap) and print through stdio; the main thread blocks SIGTERM, so the
# test's SIGTERMs (three, 2 ms apart, at a random moment) land on them,
# mostly inside malloc with the arena's lock held.  Before the ending
# thread, about two runs in three hung there (the end's first allocation
# waited for the lock of the thread it had interrupted).  30 runs: each ends
# by SIGTERM, its output complete; the ending thread is no measured thread.
def test_sigterm_in_malloc_storm():
    rng = random.Random(os.getpid())
    runs, took, hangs = 30, [], 0
    for i in range(runs):
        if hangs == 3:
            check(False, "malloc storm: 3 runs hung, the rest not run")
            break
        out = os.path.join(workdir("storm-%d" % i), "out")
        delay = rng.uniform(0.002, 0.04)
        start = time.monotonic()
        proc = launch(["malloc", STEPS, 4], out)
        line = proc.stdout.readline()
        time.sleep(delay)
        for k in range(3):
            if k:
                time.sleep(0.002)
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        res = ended(proc, "malloc storm, run %d (SIGTERM %.0f ms after ready)" % (i, delay * 1000))
        if res is None:
            hangs += 1
            continue
        took.append(time.monotonic() - start)
        what = "malloc storm, run %d" % i
        check(proc.returncode == -signal.SIGTERM, "%s: status %d, expected death by SIGTERM; %s"
              % (what, proc.returncode, res[1][-600:]))
        check(line + res[0] == "ready\n", "%s: the program went on after SIGTERM: %r"
              % (what, line + res[0]))
        complete(out, what)
        n = threads_measured(res[1])
        check(n is not None and 1 <= n <= 5, "%s: main and at most 4 threads measured: %s"
              % (what, res[1][-300:]))
        if i % 6 == 0:
            trace = Trace(out)
            names = [l.name for l in trace.locations]
            check(len(names) == n and names[0] == "Thread 0 (main)",
                  "%s: the trace's threads are the program's (%d said): %s" % (what, n, names))
            check(trace.count_enters("work") == 1 and trace.count_enters("step") == STEPS,
                  "%s: the planted regions in the trace" % what)
    if took:
        print("malloc storm: %d runs, longest %.2f s" % (len(took), max(took)))


# ---- the main thread is in read() (a pipe that stays open), a second
# thread blocks SIGTERM: the ending thread started with that second thread;
# the handler returns, read() goes on (SA_RESTART) and never returns; the
# ending thread writes the output and ends the process by SIGTERM.
def sigterm_in_read(idle, what):
    out = os.path.join(workdir("read-%d" % idle), "out")
    proc = launch(["read", STEPS, idle], out, stdin=subprocess.PIPE)
    line = proc.stdout.readline()
    check(line == "ready\n", "%s: the program runs: %r" % (what, line))
    names = thread_names(proc.pid)
    proc.send_signal(signal.SIGTERM)
    res = ended(proc, what)
    if res is None:
        return None
    check(proc.returncode == -signal.SIGTERM, "%s: status %d, expected death by SIGTERM; %s"
          % (what, proc.returncode, res[1]))
    check(res[0] == "", "%s: read() returned after SIGTERM: %r" % (what, res[0]))
    complete(out, what)
    check(threads_measured(res[1]) == 1 + idle, "%s: %d threads measured: %r"
          % (what, 1 + idle, res[1]))
    return names


def test_sigterm_in_blocking_read():
    names = sigterm_in_read(1, "SIGTERM during read()")
    check(names is None or (len(names) == 3 and names.count("sysmeasure-end") == 1),
          "read: the program's two threads and the ending thread: %s" % names)


# ---- a program with one thread only: no thread of sysmeasure's (the C
# library keeps its lock-free single-thread paths); the end is written on
# that thread, where malloc and stdio take no lock.
def test_sigterm_single_threaded():
    names = sigterm_in_read(0, "SIGTERM to a single thread in read()")
    check(names is None or names == ["signal-storm"],
          "single thread: no thread of sysmeasure's: %s" % names)


# ---- SIGTERM at random moments from the launcher's start on: before
# sysmeasure's handler exists (the default action), while the runtime starts,
# once the program runs.  Each run ends by SIGTERM at once; where the output
# was written, it is readable.
def test_sigterm_very_early():
    rng = random.Random(os.getpid() + 1)
    written = 0
    for i in range(12):
        out = os.path.join(workdir("early-%d" % i), "out")
        proc = launch(["sleep", STEPS, 20], out)
        time.sleep(rng.uniform(0, 0.03))
        proc.send_signal(signal.SIGTERM)
        res = ended(proc, "early SIGTERM, run %d" % i)
        if res is None:
            continue
        check(proc.returncode == -signal.SIGTERM, "early SIGTERM, run %d: status %d; %s"
              % (i, proc.returncode, res[1][-400:]))
        if os.path.exists(os.path.join(out, "metadata.json")):
            load_json(out, "metadata.json")
            if os.path.exists(os.path.join(out, "profile.json")):
                load_json(out, "profile.json")
                written += 1
    print("early SIGTERM: %d of 12 runs wrote their output" % written)


# ---- a forked child (no exec) of a program with two threads measures on as
# a process of the program's family, on its one thread, where the C library
# still takes its locks (the parent had threads): it starts its own ending
# thread.  A SIGTERM from the parent, at a random moment of its malloc loop,
# ends it by SIGTERM; the family's output is complete.  8 runs.
def test_sigterm_to_forked_child():
    rng = random.Random(os.getpid() + 2)
    for i in range(8):
        out = os.path.join(workdir("fork-child-%d" % i), "out")
        proc = launch(["fork-child", STEPS, 1, rng.randint(5000, 30000)], out)
        res = ended(proc, "forked child, run %d" % i, timeout=60)
        if res is None:
            return
        if not check(proc.returncode == 0 and res[0] == "child killed by %d\n" % signal.SIGTERM,
                     "forked child, run %d: %d %r (0: it hung); %s"
                     % (i, proc.returncode, res[0], res[1][-400:])):
            return
        complete(out, "forked child's family, run %d" % i)


# ---- the output is written (exit), then a destructor of the program's
# sleeps: a SIGTERM then ends the process at once; the output stays.
def test_sigterm_after_the_end():
    out = os.path.join(workdir("after-end"), "out")
    proc = launch(["after-end", STEPS], out)
    line = proc.stdout.readline()
    check(line == "in destructor\n", "after the end: the destructor runs: %r" % line)
    start = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    res = ended(proc, "SIGTERM after the end", timeout=10)
    if res is None:
        return
    check(proc.returncode == -signal.SIGTERM and time.monotonic() - start < 5,
          "after the end: status %d after %.1f s" % (proc.returncode, time.monotonic() - start))
    complete(out, "SIGTERM after the end")


# ---- daemon() from a process with two threads: the child that goes on
# measuring starts its own ending thread.  A SIGTERM to it ends it by the
# signal, with the whole run's output, before and after daemon().
def test_sigterm_to_daemon_child():
    out = os.path.join(workdir("daemon"), "out")
    proc = launch(["daemon", STEPS], out)
    line = proc.stdout.readline()
    m = re.match(r"daemon (\d+)\n$", line)
    if not check(m, "daemon: the child says its pid: %r" % line):
        proc.kill()
        return
    child = int(m.group(1))
    time.sleep(0.1)
    names = thread_names(child)
    check(names.count("sysmeasure-end") == 1, "daemon: the child has its ending thread (the "
          "parent had two threads): %s" % names)
    os.kill(child, signal.SIGTERM)
    res = ended(proc, "SIGTERM to the daemon() child")  # (its end closes stdout)
    if res is None:
        return
    profile = complete(out, "SIGTERM to the daemon() child")
    after = callpath(profile, "after", "step") if profile else None
    check(after is not None and sum(t["visits"] for t in after["per_thread"]) == STEPS,
          "daemon: after > step in the profile")
    check(load_json(out, "metadata.json").get("pid") == child,
          "daemon: the child wrote the output")
    if profile:
        seen = check_trace_consistent(Trace(out))
        check(seen.get("work") == 1 and seen.get("after") == 1 and seen.get("step") == 2 * STEPS,
              "daemon: the trace before and after daemon(): %s" % seen)


POOL = r"""
import ctypes, multiprocessing as mp, sys, time
lib = ctypes.CDLL(None)  # the user API of the preloaded libsysmeasure
def task(i):
    lib.sysmeasure_push_region(b"pool task")
    blocks = [bytearray(1000 + 37 * k) for k in range(200)]  # (SIGTERM lands in malloc)
    lib.sysmeasure_pop_region(b"pool task")
    return i * i
if __name__ == "__main__":
    mp.set_start_method("fork")
    lib.sysmeasure_push_region(b"pool main")
    pool = mp.Pool(3)
    pool.map_async(task, range(1000000), chunksize=1)
    time.sleep(float(sys.argv[1]))
    pool.terminate()
    pool.join()
    lib.sysmeasure_pop_region(b"pool main")
    print("terminated")
"""


# ---- Python's multiprocessing.Pool.terminate() while its 3 workers (forked
# from a program with threads, measured as its family) allocate: each
# worker gets SIGTERM inside or near malloc.  Where it hung (the report
# this came from), 5 runs of 15 without the workers' own ending threads.
# 6 runs: the program ends with its output, one archive of 4 processes.
def test_pool_terminate():
    work = workdir("pool-terminate")
    script = os.path.join(work, "pool.py")
    with open(script, "w") as f:
        f.write(POOL)
    for i, wait in enumerate((0.15, 0.3, 0.45, 0.6, 0.75, 0.9)):
        out = os.path.join(work, "out-%d" % i)
        proc = subprocess.Popen([LAUNCHER, "-o", out, "--", "/usr/bin/python3", script, str(wait)],
                                env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=True)
        res = ended(proc, "Pool.terminate(), run %d" % i, timeout=60)
        if res is None:
            return
        what = "Pool.terminate(), run %d" % i
        check(proc.returncode == 0 and res[0] == "terminated\n", "%s: %d %r; %s"
              % (what, proc.returncode, res[0], res[1][-500:]))
        check(re.search(r"sysmeasure: 4 processes measured \(the program", res[1]),
              "%s: one archive of the program and its 3 workers: %s" % (what, res[1][-500:]))
        if os.path.exists(os.path.join(out, "traces.otf2")):
            seen = check_trace_consistent(Trace(out))
            # ("pool main" is open in each worker too: a child of fork
            # starts with the regions open at the fork)
            check(seen.get("pool main") == 4 and seen.get("pool task", 0) > 0,
                  "%s: the program's and the workers' regions: pool main %s, pool task %s"
                  % (what, seen.get("pool main"), seen.get("pool task")))


if __name__ == "__main__":
    smtest.run_cases(globals())
