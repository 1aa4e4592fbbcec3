"""--dormant and sysmeasure-attach (issue 32): a program started with
measurement off runs as it would without sysmeasure and writes nothing;
windows switched on from outside become output folders of their own."""
import os
import subprocess
import time

import smtest
from smtest import (Trace, check, check_trace_consistent, clean_env, location_rank, load_json,
                    mpi_env, program, region_visits_by_rank, run, workdir)

ATTACH = os.path.join(smtest.BUILD, "sysmeasure-attach")


def plain(args):
    return subprocess.run(args, env=clean_env(), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=120)


def test_dormant_writes_nothing():
    base = workdir("dormant")
    out = os.path.join(base, "out")
    ref = plain([program("sleep-regions")])
    proc = run([program("sleep-regions")], launcher_args=["--dormant", "--output", out])
    check(proc.returncode == ref.returncode == 0, "exit code as without sysmeasure: %d" % proc.returncode)
    check(proc.stdout == ref.stdout, "the program's output unchanged")
    check(proc.stderr == "", "nothing said on stderr: %r" % proc.stderr)
    check(not os.path.exists(out), "no output folder: %s" % (os.listdir(out) if os.path.exists(out) else ""))


def test_dormant_exit_code_kept():
    base = workdir("dormant-rc")
    out = os.path.join(base, "out")
    proc = run([program("exit-code"), "7"], launcher_args=["--dormant", "--output", out])
    check(proc.returncode == 7, "exit code 7 kept: %d" % proc.returncode)
    check(not os.path.exists(out), "no output folder")


def test_dormant_leaves_out_crash_safe():
    base = workdir("dormant-crash-safe")
    out = os.path.join(base, "out")
    proc = run([program("exit-code"), "3"], launcher_args=["--dormant", "--crash-safe", "--output", out])
    lines = proc.stderr.strip().splitlines()
    check(proc.returncode == 3 and proc.stdout == "application output\n", "the program unharmed")
    check(len(lines) == 1 and "--crash-safe is left out with --dormant" in lines[0],
          "one line says so: %r" % proc.stderr)
    check(not os.path.exists(out), "nothing written")


def test_dormant_leaves_out_sampling():
    base = workdir("dormant-sampling")
    out = os.path.join(base, "out")
    proc = run([program("exit-code"), "4"], launcher_args=["--dormant", "--sampling", "--output", out])
    lines = proc.stderr.strip().splitlines()
    check(proc.returncode == 4 and proc.stdout == "application output\n", "the program unharmed")
    check(len(lines) == 1 and "--sampling is left out with --dormant" in lines[0],
          "one line says so: %r" % proc.stderr)
    check(not os.path.exists(out), "nothing written")


def test_dormant_mpi_job():
    base = workdir("dormant-mpi")
    out = os.path.join(base, "out")
    cmd = [smtest.MPIRUN, "-np", "4", "--oversubscribe", smtest.LAUNCHER, "--dormant", "--output", out,
           "--", program("mpi-ranks")]
    proc = subprocess.run(cmd, env=clean_env(mpi_env()), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=120)
    check(proc.returncode == 0, "the job ends with 0: %d %s" % (proc.returncode, proc.stderr[-2000:]))
    check("sysmeasure" not in proc.stderr, "nothing said on stderr: %r" % proc.stderr[-500:])
    check(not os.path.exists(out), "no output folder")


def start_dormant(cmd, base, env=None):
    """Starts cmd (a list, the launcher or mpirun first) in base; returns
    the process once the program made its STARTED file."""
    return smtest.start_until_file(cmd, base, env=env)


def attach(args):
    t0 = time.monotonic()
    p = subprocess.run([ATTACH] + args, env=clean_env(), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=120)
    return p, time.monotonic() - t0


def stop(proc, base):
    open(os.path.join(base, "STOP"), "w").close()
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, err


def event_span_s(trace):
    times = [e.time for evs in trace.events.values() for e in evs]
    return (max(times) - min(times)) / trace.clock.timer_resolution if times else 0.0


def check_window(folder, seconds, regions):
    """The window's folder is a whole output folder whose trace spans the
    window's time only and is balanced; returns the region visits."""
    for f in ("traces.otf2", "profile.json", "metadata.json", "profile.txt"):
        check(os.path.exists(os.path.join(folder, f)), "%s in %s" % (f, folder))
    trace = Trace(folder)
    visits = check_trace_consistent(trace)  # balanced: every enter has its leave
    span = event_span_s(trace)
    check(seconds * 0.7 <= span <= seconds + 0.6,
          "events only inside the %.1f s window: they span %.2f s" % (seconds, span))
    check("outer" not in visits, "a region open since before the window is not in it: %s" % visits)
    for r in regions:
        check(visits.get(r, 0) > 0, "%s inside the window: %s" % (r, visits))
    return visits, trace


def test_window_of_a_process_two_windows():
    base = workdir("attach-one")
    out = os.path.join(base, "out")
    proc = start_dormant([smtest.LAUNCHER, "--dormant", "--output", out, "--",
                          program("attach-loop"), "STOP", "STARTED"], base)
    time.sleep(0.5)  # before the first window: nothing of it is kept
    a1, took1 = attach(["--duration", "1s", str(proc.pid)])
    time.sleep(1.0)  # between the windows
    a2, took2 = attach(["--duration", "500ms", str(proc.pid)])
    rc, stdout, stderr = stop(proc, base)
    check(a1.returncode == 0 and a2.returncode == 0,
          "both windows attached: %d %d %s %s" % (a1.returncode, a2.returncode, a1.stderr, a2.stderr))
    check(rc == 0, "the program ends with 0: %d %s" % (rc, stderr))
    check(stdout == "steps made\n", "its output unchanged: %r" % stdout)
    check(stderr == "", "nothing said in the program's stderr: %r" % stderr)
    w1, t1 = check_window(os.path.join(out, "window-1"), 1.0, ("step", "tick"))
    w2, t2 = check_window(os.path.join(out, "window-2"), 0.5, ("step", "tick"))
    # 2 ms steps: about 500 in 1 s, 250 in 0.5 s; window 2 holds none of window 1's.
    check(w2.get("step", 0) < w1.get("step", 0), "window 2 (0.5 s) has fewer steps than window 1 "
          "(1 s): %s %s" % (w2.get("step"), w1.get("step")))
    check(w1.get("step", 0) <= 1.6 / 0.002 and w2.get("step", 0) <= 1.1 / 0.002,
          "no window holds steps from outside it: %s %s" % (w1.get("step"), w2.get("step")))
    check(len(t1.locations) == 2, "both threads in window 1: %d" % len(t1.locations))
    profile = load_json(os.path.join(out, "window-2"), "profile.json")
    check("outer" not in json_names(profile), "the window's profile has no region from before it")
    check(sorted(os.listdir(out)) == ["window-1", "window-2"],
          "the folder holds the two windows only: %s" % sorted(os.listdir(out)))


def json_names(profile):
    names = set()

    def walk(x):
        if isinstance(x, dict):
            for k, v in x.items():
                if k in ("name", "region") and isinstance(v, str):
                    names.add(v)
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
    walk(profile)
    return names


def test_windows_that_spill():
    """A budget the windows exceed: each spills into its own folder, and
    neither holds the other's events."""
    base = workdir("attach-spill")
    out = os.path.join(base, "out")
    proc = start_dormant([smtest.LAUNCHER, "--dormant", "--buffer-size", "16K", "--output", out,
                          "--", program("attach-loop"), "STOP", "STARTED"], base,
                         env={"SYSMEASURE_BUFFER_CHUNK_SIZE": "4K"})
    a1, _ = attach(["--duration", "1s", str(proc.pid)])
    time.sleep(0.3)
    a2, _ = attach(["--duration", "500ms", str(proc.pid)])
    rc, stdout, _ = stop(proc, base)
    check(rc == 0 and a1.returncode == 0 and a2.returncode == 0,
          "both windows: %d %d %d %s %s" % (rc, a1.returncode, a2.returncode, a1.stderr, a2.stderr))
    w1, _ = check_window(os.path.join(out, "window-1"), 1.0, ("step", "tick"))
    w2, _ = check_window(os.path.join(out, "window-2"), 0.5, ("step", "tick"))
    for w in ("window-1", "window-2"):
        b = load_json(os.path.join(out, w), "metadata.json")["buffers"]
        check(b["spills"] > 0 and b["dropped_records"] == 0, "%s spilled, lost nothing: %s" % (w, b))
    check(w2["step"] < w1["step"], "window 2 holds its own steps only: %s %s" % (w1, w2))


def test_window_of_a_job():
    base = workdir("attach-job")
    out = os.path.join(base, "out")
    cmd = [smtest.MPIRUN, "-np", "4", "--oversubscribe", smtest.LAUNCHER, "--dormant", "--output",
           out, "--", program("attach-mpi"), "STOP", "STARTED"]
    proc = start_dormant(cmd, base, env=mpi_env())
    time.sleep(0.5)
    a, took = attach(["--duration", "1s", "--job", out])
    rc, stdout, stderr = stop(proc, base)
    check(a.returncode == 0, "attached to the job: %d %s" % (a.returncode, a.stderr))
    check("4 of 4 ranks merged" in a.stderr, "one archive of the 4 ranks: %s" % a.stderr)
    check(rc == 0 and stdout == "sum 6\n", "the job's result unchanged: %d %r %s" % (rc, stdout, stderr[-500:]))
    visits, trace = check_window(os.path.join(out, "window-1"), 1.0, ("step", "MPI_Allreduce"))
    by_rank = region_visits_by_rank(trace)
    check(sorted(by_rank.get("MPI_Allreduce", {})) == [0, 1, 2, 3],
          "MPI_Allreduce on the 4 ranks: %s" % by_rank.get("MPI_Allreduce"))
    check(sorted({location_rank(l) for l in trace.locations}) == [0, 1, 2, 3], "4 ranks in the archive")
    check(load_json(os.path.join(out, "window-1"), "metadata.json") is not None, "metadata.json reads")


def test_window_ended_by_the_program():
    base = workdir("attach-ended")
    out = os.path.join(base, "out")
    proc = start_dormant([smtest.LAUNCHER, "--dormant", "--output", out, "--",
                          program("attach-loop"), "STOP", "STARTED"], base)
    t0 = time.monotonic()
    a = subprocess.Popen([ATTACH, "--duration", "60s", str(proc.pid)], env=clean_env(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    state = os.path.join(out, ".control", "%s.%d.state" % (os.uname().nodename, proc.pid))
    for _ in range(200):
        if os.path.exists(state) and " on " in open(state).read():
            break
        time.sleep(0.05)
    time.sleep(0.5)
    rc, stdout, _ = stop(proc, base)  # the program ends inside the window
    a_out, a_err = a.communicate(timeout=60)
    took = time.monotonic() - t0
    check(rc == 0 and stdout == "steps made\n", "the program ends as it would: %d %r" % (rc, stdout))
    check(a.returncode == 0, "the window written at the program's end, merged: %d %s" % (a.returncode, a_err))
    check(took < 20, "sysmeasure-attach did not wait out its 60 s: %.1f s" % took)
    visits, _ = check_window(os.path.join(out, "window-1"), 0.6, ("step",))  # from "on" to the end
    check(visits.get("step", 0) > 0, "steps in the window: %s" % visits)


TRACER = """
import ctypes, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
if libc.ptrace(0x4206, int(sys.argv[1]), None, None) != 0:  # PTRACE_SEIZE
    sys.exit(1)
print("tracing", flush=True)
time.sleep(60)
"""


def test_attach_to_a_program_not_under_sysmeasure():
    base = workdir("attach-inject")
    # A plain shell (no sysmeasure in it) that waits for its child, then prints.
    proc = subprocess.Popen(["/bin/sh", "-c", "sleep 2.5; echo done"], cwd=base, env=clean_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.3)
    p = subprocess.run([ATTACH, "--duration", "1s", str(proc.pid)], cwd=base, env=clean_env(),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    stdout, stderr = proc.communicate(timeout=60)
    check(p.returncode == 0, "attached by loading sysmeasure into it: %d %s" % (p.returncode, p.stderr))
    check("process sampling only" in p.stderr and "bound already" in p.stderr,
          "says plainly what is measured and what is not: %s" % p.stderr)
    window = os.path.join(base, "sysmeasure-sh-%d" % proc.pid, "window-1")
    check(os.path.exists(os.path.join(window, "traces.otf2")), "the window's archive: %s" % window)
    text = open(os.path.join(window, "profile.txt")).read() if os.path.exists(os.path.join(window, "profile.txt")) else ""
    check("SAMPLED METRICS" in text, "its process sampling in the window's profile")
    check(proc.returncode == 0 and stdout == "done\n" and stderr == "",
          "the program unharmed: %d %r %r" % (proc.returncode, stdout, stderr))


def test_attach_refused_under_another_tracer():
    base = workdir("attach-refuse")
    proc = subprocess.Popen(["sleep", "30"], env=clean_env())
    tracer = subprocess.Popen(["/usr/bin/python3", "-c", TRACER, str(proc.pid)], env=clean_env(),
                              stdout=subprocess.PIPE, text=True)
    try:
        check(tracer.stdout.readline().strip() == "tracing", "the other tracer holds the process")
        a, _ = attach(["--duration", "1s", str(proc.pid)])
        check(a.returncode != 0, "refused: %d" % a.returncode)
        lines = a.stderr.strip().splitlines()
        check(len(lines) == 1 and "is traced by process %d" % tracer.pid in lines[0],
              "one line naming the reason: %r" % a.stderr)
        state = open("/proc/%d/status" % proc.pid).read().split("State:")[1].split()[0]
        check(proc.poll() is None and state == "S", "the process is unharmed: %s" % state)
    finally:
        tracer.kill()
        tracer.wait()
        proc.kill()
        proc.wait()
    a, _ = attach(["--job", base])
    check(a.returncode != 0 and len(a.stderr.strip().splitlines()) == 1,
          "a folder without a dormant job: one line: %r" % a.stderr)
    a, _ = attach(["--duration", "soon", "1"])
    check(a.returncode == 2 and "not a time" in a.stderr, "a bad duration: %r" % a.stderr)


if __name__ == "__main__":
    smtest.run_cases(globals())
