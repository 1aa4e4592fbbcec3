"""Odd process lives (issue 27): a program that calls daemon(), one that runs
under a file size limit, one whose signal handler jumps (siglongjmp) out of
a loop of instrumented regions, and an MPI job whose mpirun gets SIGTERM
while its ranks are busy on a loaded machine.  Each scenario is a function;
the programs are tests/programs/process_lives.c."""
import os
import re
import resource
import signal
import subprocess
import sys
import time

from smtest import (BUILD, LAUNCHER, MPIRUN, Trace, callpath, check, check_trace_consistent,
                    clean_env, finish, load_json, mpi_env, program, workdir)

PROG = program("process-lives")
MERGE = os.path.join(BUILD, "sysmeasure-merge")
OUTPUTS = ("traces.otf2", "profile.txt", "profile.json", "profile.csv", "metadata.json")


def launch(args, out, env=None, launcher_args=(), timeout=60, preexec_fn=None):
    """The program under the launcher into out; the CompletedProcess, or None
    when it did not end within timeout seconds (it is killed then)."""
    cmd = [LAUNCHER, "--output", out] + list(launcher_args) + ["--"] + list(args)
    try:
        return subprocess.run(cmd, env=clean_env(env), timeout=timeout, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, preexec_fn=preexec_fn)
    except subprocess.TimeoutExpired:
        return None


def visits(profile, *path):
    cp = callpath(profile, *path)
    return sum(t["visits"] for t in cp["per_thread"]) if cp else 0


def test_daemon():
    """daemon(0, 1): the parent ends inside the C library, the child goes on
    in "/" and returns from main.  One output, in the launcher's folder,
    written by the child: the events before daemon() (on the main thread and
    on a thread that ended before it) and after it."""
    events = 1000
    base = workdir("daemon")
    out = os.path.join(base, "out")
    # The child keeps stdout and stderr (noclose): the run ends when it does.
    proc = launch([PROG, "daemon", str(events)], out)
    if not check(proc is not None and proc.returncode == 0, "daemon: the parent's exit status "
                 "0: %r" % ((proc.returncode, proc.stderr) if proc else "no end",)):
        return
    m = re.match(r"daemon (\d+)\n$", proc.stdout)
    if not check(m, "daemon: the child says its pid: %r" % proc.stdout):
        return
    child = int(m.group(1))
    check("daemon(): the program goes on in process %d" % child in proc.stderr,
          "daemon: one line says the child goes on measuring: %r" % proc.stderr)
    check(sorted(os.listdir(base)) == ["out"], "daemon: one result folder: %s" % os.listdir(base))
    missing = [f for f in OUTPUTS if not os.path.exists(os.path.join(out, f))]
    if not check(not missing, "daemon: outputs missing: %s (have %s)"
                 % (missing, os.listdir(out) if os.path.isdir(out) else "no folder")):
        return
    check(not [e for e in os.listdir(out) if e.startswith("process-lives-")],
          "daemon: no sub-folder of a started process: %s" % os.listdir(out))
    profile = load_json(out, "profile.json")
    for path in (("before", "step"), ("thread work", "step"), ("after", "step")):
        check(visits(profile, *path) == events, "daemon: %s visited %d times in the profile, "
              "planted %d" % (" > ".join(path), visits(profile, *path), events))
    trace = Trace(out)
    seen = check_trace_consistent(trace)
    check(seen.get("before") == 1 and seen.get("after") == 1 and seen.get("thread work") == 1 and
          seen.get("step") == 3 * events, "daemon: the trace has the events before and after "
          "daemon(): %s" % seen)
    meta = load_json(out, "metadata.json")
    check(meta.get("pid") == child, "daemon: metadata names the process that wrote it (%d): %s"
          % (child, meta.get("pid")))
    check(any("daemon()" in n for n in meta.get("notes", [])), "daemon: a note in the summary: "
          "%s" % meta.get("notes"))


def test_file_size_limit():
    """ulimit -f 100 (102,400 bytes): the program writes 6 bytes and returns 0;
    sysmeasure's own archive passes the limit.  The program keeps its exit
    code (no SIGXFSZ from our write ends it), its output, and one line says
    which write the limit stopped; the summaries that fit are written."""
    out = os.path.join(workdir("fsize"), "out")

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (102400, 102400))

    proc = launch([PROG, "write6", "100000"], out, preexec_fn=limit)
    if not check(proc is not None, "ulimit -f: the run did not end"):
        return
    check(proc.returncode == 0, "ulimit -f: exit status %d, expected 0 (the program's); stderr %s"
          % (proc.returncode, proc.stderr))
    check(proc.stdout == "hello\n", "ulimit -f: the program's output %r" % proc.stdout)
    lines = [l for l in proc.stderr.splitlines() if "file size limit" in l]
    check(len(lines) == 1 and "ulimit -f" in lines[0] and "102400 bytes" in lines[0],
          "ulimit -f: one line says the limit stopped a write: %r" % proc.stderr)
    for name in ("profile.json", "metadata.json"):
        if check(os.path.exists(os.path.join(out, name)), "ulimit -f: %s written" % name):
            load_json(out, name)
    if os.path.exists(os.path.join(out, "profile.json")):
        check(visits(load_json(out, "profile.json"), "work", "step") == 100000,
              "ulimit -f: the profile has every step")


def test_siglongjmp_out_of_handler():
    """A SIGALRM handler of the program's own jumps out of a loop of regions,
    300 times, every 100 us, with small chunks and a small budget (so that
    many jumps land inside sysmeasure's own recording, new chunks included).
    The run ends (it hung at exit: the jump had left the writer's lock
    taken); the profile has 300 visits of "spin"; the trace is well nested
    with 300 "spin" regions, and misses at most one "inner" per jump (the
    one whose recording the jump cut short)."""
    jumps = 300
    out = os.path.join(workdir("sigjump"), "out")
    env = {"SYSMEASURE_BUFFER_CHUNK_SIZE": "4K", "SYSMEASURE_BUFFER_SIZE": "64K"}
    start = time.time()
    proc = launch([PROG, "sigjump", str(jumps), "100"], out, env=env, timeout=30)
    if not check(proc is not None, "siglongjmp: the run did not end within 30 s (hang at exit)"):
        return
    check(proc.returncode == 0 and proc.stdout == "jumps %d\n" % jumps,
          "siglongjmp: exit %d, stdout %r; stderr %s" % (proc.returncode, proc.stdout, proc.stderr))
    print("siglongjmp: %d jumps measured in %.1f s" % (jumps, time.time() - start))
    profile = load_json(out, "profile.json")
    check(visits(profile, "spin") == jumps, "siglongjmp: spin visited %d times in the profile, "
          "expected %d" % (visits(profile, "spin"), jumps))
    inner = visits(profile, "spin", "inner")
    trace = Trace(out)
    seen = check_trace_consistent(trace)
    check(seen.get("spin") == jumps, "siglongjmp: %s spin regions in the trace, expected %d"
          % (seen.get("spin"), jumps))
    check(inner - jumps <= seen.get("inner", 0) <= inner, "siglongjmp: %s inner regions in the "
          "trace, %d in the profile" % (seen.get("inner"), inner))


def busy_loads(n):
    """n processes that keep a CPU busy (the machine under load)."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def step_enters_by_rank(archive):
    """{rank: enters of "step"} of a merged archive (otf2-print: fast)."""
    p = subprocess.run("otf2-print %s | awk '$1 == \"ENTER\" && /Region: \"step\"/ {print $2}' "
                       "| sort | uniq -c" % archive, shell=True, stdout=subprocess.PIPE, text=True)
    counts = {}
    for line in p.stdout.splitlines():
        n, loc = line.split()
        counts[int(loc) >> 32] = counts.get(int(loc) >> 32, 0) + int(n)
    return counts


def test_sigterm_to_mpirun():
    """mpirun -np 4 sysmeasure ... gets SIGTERM while its ranks are busy, with
    two more processes keeping the CPUs busy.  Open MPI sends SIGCONT, then
    SIGTERM a second later, then SIGKILL when its sleep of a second ends or
    when one of the ranks exits, whichever comes first: a rank that had saved
    its data and died first had the others killed while they wrote.  Now
    every rank leaves its process file (definitions and profile first, in
    milliseconds), and its events, unless the SIGKILL cut their saving short
    (then the merge says so for that rank and its trace has fewer).  Two
    rounds."""
    if os.environ.get("SM_HAVE_MPI", "yes") != "yes":
        print("SIGTERM to mpirun: skipped, this build has no MPI")
        return
    np_ = 4
    mpi_prog = program("process-lives-mpi")
    for round_ in range(2):
        base = workdir("sigterm-mpirun-%d" % round_)
        out, ready = os.path.join(base, "out"), os.path.join(base, "ready")
        loads = busy_loads(2)
        try:
            cmd = [MPIRUN, "-np", str(np_), "--oversubscribe", LAUNCHER, "--output", out, "--",
                   mpi_prog, "busy", ready]
            job = subprocess.Popen(cmd, env=clean_env(mpi_env()), stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True)
            end = time.time() + 60
            while time.time() < end and job.poll() is None and \
                    (not os.path.exists(ready) or len(open(ready).read().split()) < np_):
                time.sleep(0.02)
            if not check(job.poll() is None, "SIGTERM to mpirun: the job ended early"):
                print(job.stdout.read())
            job.send_signal(signal.SIGTERM)
            try:
                log = job.communicate(timeout=60)[0]
            except subprocess.TimeoutExpired:
                job.kill()
                log = job.communicate()[0]
                check(False, "SIGTERM to mpirun: the job did not end")
        finally:
            for p in loads:
                p.kill()
                p.wait()
        ranks_dir = os.path.join(out, ".ranks")
        files = sorted(os.listdir(ranks_dir)) if os.path.isdir(ranks_dir) else []
        check(len(files) == np_, "SIGTERM to mpirun, round %d: %d of %d ranks left their process "
              "file: %s; mpirun said: %s" % (round_, len(files), np_, files, log[-2000:]))
        merge = subprocess.run([MERGE, out], env=clean_env(), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, timeout=120)
        check("%d of %d ranks merged" % (np_, np_) in merge.stdout + merge.stderr,
              "SIGTERM to mpirun, round %d: the merge: %s %s" % (round_, merge.stdout,
                                                                 merge.stderr))
        if not os.path.exists(os.path.join(out, "profile.json")):
            check(False, "SIGTERM to mpirun, round %d: no merged profile" % round_)
            continue
        cut = {int(m) for m in re.findall(r"rank (\d+) \(pid \d+ on [^)]*\) was killed while it "
                                          r"saved its events", merge.stderr)}
        profile = load_json(out, "profile.json")
        cp = callpath(profile, "step")
        in_profile = {}
        for t in (cp["per_thread"] if cp else []):
            in_profile[t["rank"]] = in_profile.get(t["rank"], 0) + t["visits"]
        in_trace = step_enters_by_rank(os.path.join(out, "traces.otf2"))
        for r in range(np_):
            check(in_profile.get(r, 0) >= 20000, "SIGTERM to mpirun, round %d: rank %d's profile "
                  "has %d steps (it had recorded 20000 at least)" % (round_, r,
                                                                     in_profile.get(r, 0)))
            if r in cut:
                check(in_trace.get(r, 0) <= in_profile.get(r, 0), "rank %d: trace %d, profile %d"
                      % (r, in_trace.get(r, 0), in_profile.get(r, 0)))
            else:
                check(in_trace.get(r, 0) == in_profile.get(r, 0), "SIGTERM to mpirun, round %d: "
                      "rank %d's trace has %d steps, its profile %d" % (round_, r,
                                                                        in_trace.get(r, 0),
                                                                        in_profile.get(r, 0)))
        print("SIGTERM to mpirun, round %d: %d process files, steps per rank %s, events cut short "
              "on ranks %s" % (round_, len(files), in_profile, sorted(cut)))


SCENARIOS = [test_daemon, test_file_size_limit, test_siglongjmp_out_of_handler,
             test_sigterm_to_mpirun]

if __name__ == "__main__":
    for scenario in SCENARIOS:
        t0 = time.time()
        scenario()
        print("%s: %.1f s" % (scenario.__name__, time.time() - t0))
    finish()
