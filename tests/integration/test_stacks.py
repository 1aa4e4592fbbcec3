"""sysmeasure-stacks (issue 32): where every thread of a --dormant job is
now, merged with rank lists; a thread inside MPI names the call, its peer,
tag and communicator."""
import json
import os
import signal
import subprocess
import time

import smtest
from smtest import check, clean_env, mpi_env, program, workdir

STACKS = os.path.join(smtest.BUILD, "sysmeasure-stacks")


def start(cmd, base, env=None):
    # (a session of its own: the test kills the whole hung job at the end)
    return smtest.start_until_file(cmd, base, env=env, new_session=True)


def stacks(args):
    t0 = time.monotonic()
    p = subprocess.run([STACKS] + args, env=clean_env(), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=60)
    return p, time.monotonic() - t0


def test_hung_job_names_the_stuck_rank():
    hung_job("--dormant")


def test_hung_measured_job_with_control():
    hung_job("--control")


def test_measured_run_with_control_leaves_no_endpoint():
    base = workdir("stacks-control-end")
    out = os.path.join(base, "out")
    proc = smtest.run([program("sleep-regions")], launcher_args=["--control", "--output", out])
    check(proc.returncode == 0, "the run ends: %s" % proc.stderr)
    check(os.path.exists(os.path.join(out, "traces.otf2")), "its output as usual")
    check(not os.path.exists(os.path.join(out, ".control")), "no endpoint left: %s" % os.listdir(out))


def hung_job(how):
    base = workdir("stacks-hung")
    out = os.path.join(base, "out")
    cmd = [smtest.MPIRUN, "-np", "4", "--oversubscribe", smtest.LAUNCHER, how, "--output",
           out, "--", program("stuck-mpi"), "STARTED"]
    proc = start(cmd, base, env=mpi_env())
    try:
        time.sleep(0.5)  # every rank reaches its wait
        js = os.path.join(base, "stacks.json")
        p, took = stacks(["--job", out, "--json", js])
        check(p.returncode == 0, "stacks taken: %d %s" % (p.returncode, p.stderr))
        check(took < 10, "within seconds: %.1f s" % took)
        lines = p.stdout.splitlines()
        check(lines and lines[0].startswith("4 processes"), "4 processes answered: %s" % lines[:1])
        check("ranks 0-2: MPI_Allreduce(comm MPI_COMM_WORLD) < solve < main" in lines,
              "ranks 0-2 wait in the collective: %s" % p.stdout)
        check("rank 3: MPI_Recv(source 0, tag 7, comm MPI_COMM_WORLD) < solve < main" in lines,
              "rank 3 named, waiting for source 0, tag 7: %s" % p.stdout)
        doc = json.load(open(js))
        groups = {tuple(g.get("ranks", [])): g for g in doc["stacks"] if g["call"]}
        check(groups.get((3,), {}).get("call") == "MPI_Recv(source 0, tag 7, comm MPI_COMM_WORLD)"
              and groups[(3,)]["frames"] == ["solve", "main"], "JSON: rank 3's wait: %s" % groups.get((3,)))
        check(groups.get((0, 1, 2), {}).get("threads") == 3, "JSON: ranks 0-2 in one group: %s" % list(groups))
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # the job never ends on its own
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    check(proc.returncode is not None, "the job is gone")


def test_stacks_of_a_process_by_pid():
    base = workdir("stacks-pid")
    out = os.path.join(base, "out")
    proc = start([smtest.LAUNCHER, "--dormant", "--output", out, "--", program("attach-loop"),
                  "STOP", "STARTED"], base)
    p, _ = stacks([str(proc.pid)])
    open(os.path.join(base, "STOP"), "w").close()
    stdout, stderr = proc.communicate(timeout=60)
    check(p.returncode == 0, "stacks taken: %d %s" % (p.returncode, p.stderr))
    check(p.stdout.startswith("1 process, 2 threads"), "both threads: %s" % p.stdout)
    check(any(l.startswith("pid %d: " % proc.pid) and l.endswith("< main") for l in p.stdout.splitlines()),
          "the main thread's stack ends in main: %s" % p.stdout)
    check(any("ticker" in l for l in p.stdout.splitlines()), "the second thread in ticker: %s" % p.stdout)
    check(proc.returncode == 0 and stdout == "steps made\n" and stderr == "",
          "the program unharmed: %d %r %r" % (proc.returncode, stdout, stderr))


TRACER = """
import ctypes, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
if libc.ptrace(0x4206, int(sys.argv[1]), None, None) != 0:  # PTRACE_SEIZE
    sys.exit(1)
print("tracing", flush=True)
time.sleep(60)
"""


def test_plain_process_through_ptrace():
    base = workdir("stacks-ptrace")
    proc = subprocess.Popen([program("attach-loop"), "STOP", "STARTED"], cwd=base, env=clean_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for _ in range(600):
        if os.path.exists(os.path.join(base, "STARTED")):
            break
        time.sleep(0.05)
    js = os.path.join(base, "s.json")
    p, took = stacks([str(proc.pid), "--json", js])
    open(os.path.join(base, "STOP"), "w").close()
    stdout, stderr = proc.communicate(timeout=60)
    check(p.returncode == 0, "stacks through ptrace: %d %s" % (p.returncode, p.stderr))
    check(p.stdout.startswith("1 process, 2 threads"), "both threads: %s" % p.stdout)
    lines = p.stdout.splitlines()
    check(any(l.endswith("nanosleep < main") for l in lines),
          "the main thread in nanosleep < main: %s" % p.stdout)
    check(any("ticker" in l for l in lines), "the second thread in ticker: %s" % p.stdout)
    doc = json.load(open(js))
    check(doc["processes"] == 1 and doc["threads"] == 2 and all("pids" in g for g in doc["stacks"]),
          "JSON by pid: %s" % doc)
    check(proc.returncode == 0 and stdout == "steps made\n" and stderr == "",
          "the program unharmed: %d %r %r" % (proc.returncode, stdout, stderr))


def test_ptrace_refused_under_another_tracer():
    target = subprocess.Popen(["sleep", "30"], env=clean_env())
    tracer = subprocess.Popen(["/usr/bin/python3", "-c", TRACER, str(target.pid)], env=clean_env(),
                              stdout=subprocess.PIPE, text=True)
    try:
        check(tracer.stdout.readline().strip() == "tracing", "the other tracer holds the process")
        p, _ = stacks([str(target.pid)])
        lines = p.stderr.strip().splitlines()
        check(p.returncode != 0, "refused: %d" % p.returncode)
        check(len(lines) == 1 and "is traced by process %d" % tracer.pid in lines[0],
              "one line naming the other tracer: %r" % p.stderr)
        state = open("/proc/%d/status" % target.pid).read().split("State:")[1].split()[0]
        check(target.poll() is None and state == "S", "the target unharmed, running: %s" % state)
    finally:
        tracer.kill()
        tracer.wait()
        target.kill()
        target.wait()
    p, _ = stacks(["999999999"])
    check(p.returncode != 0 and p.stderr.strip() == "sysmeasure-stacks: error: no process 999999999",
          "no such process: one line: %r" % p.stderr)


if __name__ == "__main__":
    smtest.run_cases(globals())
