"""Python functions as regions (issue 30, item 3): `sysmeasure python3
app.py` records the functions a planted program calls with their exact
visits, qualified names, file and line, nested as they were called, on the
main thread and on a threading thread, with generators (a yield leaves,
a resume enters), exceptions and recursion, balanced in the OTF2 archive;
the sysmeasure module's regions and start/stop, and the module without the
launcher; --python=no, a filter file, the module rules and throttling;
built-in functions on request; fork and multiprocessing; mpi4py on 2 ranks
in one archive; the program's output and exit status unchanged.  Every
interpreter named in SM_TEST_PYTHONS (colon-separated, e.g. a Python 3.12
or 3.13) runs the planted program too."""
import json
import os
import re
import subprocess
import sys

import otf2

import smtest
from smtest import (BUILD, LAUNCHER, SRC, Trace, callpath, check, check_trace_consistent,
                    clean_env, load_json, mpi_measure, region_visits_by_rank, workdir)

PYTHON = "/usr/bin/python3"
PROGRAMS = os.path.join(SRC, "tests", "programs", "python")


def prog(name):
    return os.path.join(PROGRAMS, name + ".py")


def def_line(name, funcname):
    """The line of `def funcname` in a test program."""
    with open(prog(name)) as f:
        for n, line in enumerate(f, 1):
            if re.match(r"\s*def %s\(" % re.escape(funcname), line):
                return n
    raise ValueError("no def %s in %s" % (funcname, name))


def run_plain(args, env=None):
    return subprocess.run(args, env=clean_env(env), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=120)


def visits(cp, member=None):
    """Visits of a profile.json call path (of one thread, or all)."""
    if cp is None:
        return None
    return sum(t["visits"] for t in cp["per_thread"] if member is None or t["member"] == member)


def paths_ending(profile, *tail):
    return [cp for cp in profile["callpaths"] if cp["path"][-len(tail):] == list(tail)]


def python_regions(profile):
    return {cp["region"] for cp in profile["callpaths"] if cp.get("paradigm") == "python"}


@smtest.fixture
def planted(python=PYTHON):
    """The planted program under the launcher: (folder, process)."""
    out, proc = smtest.measure([python, prog("planted")], "py-planted")
    check(proc.stdout == "total 67\n", "the planted program's output: %r" % proc.stdout)
    return out, proc


def check_planted_profile(out, what, qualname=True):
    """qualname: the interpreter has co_qualname (3.11 on); before, the
    code's own name (step, not Solver.step)."""
    profile = load_json(out, "profile.json")
    file = os.path.realpath(prog("planted"))
    step = "Solver.step" if qualname else "step"
    for name, func, n in (("work", "work", 7), (step, "step", 5), ("gen", "gen", 4),
                          ("early", "early", 2), ("raiser", "raiser", 1)):
        cp = callpath(profile, "<module>", "main", name)
        if not check(cp is not None, "%s: call path <module> > main > %s; paths: %s"
                     % (what, name, [c["path"] for c in profile["callpaths"]][:40])):
            continue
        # A generator is entered at each resumption: gen's 3 yields and its
        # end make 4 visits, early's first item and its close() 2.
        check(visits(cp) == n, "%s: %s has %s visits, planted %d" % (what, name, visits(cp), n))
        check(cp["paradigm"] == "python", "%s: %s is of paradigm python: %s"
              % (what, name, cp["paradigm"]))
        check(os.path.realpath(cp.get("file") or "") == file and
              cp.get("line") == def_line("planted", func),
              "%s: %s defined at %s:%s, planted %s:%d" % (what, name, cp.get("file"),
                                                          cp.get("line"), file,
                                                          def_line("planted", func)))
    fib = [cp for cp in profile["callpaths"] if cp["region"] == "fib"]
    check(sum(visits(cp) for cp in fib) == 15 and max(len(cp["path"]) for cp in fib) == 7,
          "%s: fib(5) is 15 visits, 5 deep below main: %s"
          % (what, [(cp["path"], visits(cp)) for cp in fib]))
    main = callpath(profile, "<module>", "main")
    check(visits(main) == 1, "%s: main once under <module>: %s" % (what, visits(main)))
    workers = paths_ending(profile, "run_worker", "worker")
    check(len(workers) == 1 and visits(workers[0]) == 4 and
          all(t["member"] != 0 for t in workers[0]["per_thread"]),
          "%s: worker 4 times under run_worker, on the thread threading started: %s"
          % (what, [(cp["path"], cp["per_thread"]) for cp in workers]))
    return profile


def test_planted_profile():
    out, _ = planted()
    check_planted_profile(out, "python3.11")
    meta = load_json(out, "metadata.json")
    check(any(n.startswith("Python 3.") and "functions through" in n
              for n in meta.get("notes", [])),
          "metadata.json's notes say how Python was measured: %s" % meta.get("notes"))


def test_planted_trace():
    out, _ = planted()
    trace = Trace(out)
    v = check_trace_consistent(trace)  # every enter left, in order, per location
    for name, n in (("work", 7), ("Solver.step", 5), ("gen", 4), ("early", 2), ("raiser", 1),
                    ("fib", 15), ("worker", 4), ("main", 1)):
        check(v.get(name) == n, "archive: %s entered %s times, planted %d" % (name, v.get(name), n))
    work = [r for r in trace.definitions.regions if r.name == "work"]
    if check(len(work) == 1, "one region work in the archive"):
        check(os.path.realpath(work[0].source_file) == os.path.realpath(prog("planted")) and
              work[0].begin_line_number == def_line("planted", "work") and
              work[0].region_role == otf2.RegionRole.FUNCTION,
              "work's definition: %s:%d %s" % (work[0].source_file, work[0].begin_line_number,
                                               work[0].region_role))
    on = {loc.name for loc, evs in trace.events.items()
          if any(isinstance(e, otf2.events.Enter) and e.region.name == "worker" for e in evs)}
    check(len(on) == 1 and len(trace.events) >= 2,
          "worker on one location of several: %s" % on)


def test_other_interpreters():
    pythons = [p for p in os.environ.get("SM_TEST_PYTHONS", "").split(":") if p]
    if not pythons:
        smtest.skip("SM_TEST_PYTHONS names no other interpreter")
    for python in pythons:
        version = version_of(python)
        what = "python%s (%s)" % (".".join(map(str, version)), python)
        out, _ = planted(python)
        check_planted_profile(out, what, qualname=version >= (3, 11))
        check_trace_consistent(Trace(out))
        meta = load_json(out, "metadata.json")
        want = "sys.monitoring" if version >= (3, 12) else "the profile hook"
        check(any(want in n for n in meta.get("notes", [])),
              "%s: measured through %s: %s" % (what, want, meta.get("notes")))
        check_own_profiler(python, version, what)


def check_own_profiler(python, version, what):
    """cProfile still starts and sees its calls; from 3.12 sysmeasure sees
    them too (its own sys.monitoring tool id), up to 3.11 cProfile's
    profile hook replaces sysmeasure's on that thread (manual 8h)."""
    out, proc = smtest.measure([python, prog("own_profiler")], "py-cprofile")
    check(proc.stdout == "cProfile saw f: True\n",
          "%s: the program's cProfile works under sysmeasure: %r %s"
          % (what, proc.stdout, proc.stderr[-500:]))
    v = check_trace_consistent(Trace(out))
    if version >= (3, 12):
        check(v.get("f") == 3, "%s: f measured beside cProfile: %s" % (what, v.get("f")))


def version_of(python):
    ver = run_plain([python, "-c", "import sys; print('%d %d' % sys.version_info[:2])"])
    return tuple(int(x) for x in ver.stdout.split())


def test_own_profiler():
    check_own_profiler(PYTHON, version_of(PYTHON), PYTHON)


def test_threading_imported_at_startup():
    # A sitecustomize of the user's that imports threading before the
    # program starts: the user's module still runs, and up to 3.11 the copy
    # of _thread.start_new_thread that threading took is wrapped too.
    work = workdir("py-sitecustomize")
    with open(os.path.join(work, "sitecustomize.py"), "w") as f:
        f.write("import threading\nimport sys\nsys.stderr.write('user sitecustomize ran\\n')\n")
    out, proc = smtest.measure([PYTHON, prog("planted")], "py-site", env={"PYTHONPATH": work})
    check(proc.stdout == "total 67\n" and "user sitecustomize ran" in proc.stderr,
          "the user's sitecustomize runs, the output is the same: %r %r"
          % (proc.stdout, proc.stderr[-500:]))
    profile = load_json(out, "profile.json")
    workers = paths_ending(profile, "run_worker", "worker")
    check(len(workers) == 1 and visits(workers[0]) == 4,
          "worker measured on its thread: %s" % [(cp["path"], visits(cp)) for cp in workers])


def test_output_and_exit_status():
    for how, rc in (("exit", 3), ("raise", 1)):
        plain = run_plain([PYTHON, prog("ending"), how])
        out, proc = smtest.measure([PYTHON, prog("ending"), how], "py-" + how, expect_rc=rc)
        check(plain.returncode == rc, "%s: the plain run exits %d" % (how, plain.returncode))
        check(proc.stdout == plain.stdout == "before the end\n",
              "%s: stdout %r, plain %r" % (how, proc.stdout, plain.stdout))
        if how == "raise":
            check("RuntimeError: planted uncaught" in proc.stderr,
                  "the uncaught exception's traceback on stderr: %s" % proc.stderr)
        profile = load_json(out, "profile.json")
        check(visits(callpath(profile, "<module>", "finish")) == 1,
              "%s: finish, left by %s, in the profile" % (how, how))
        check_trace_consistent(Trace(out))


def test_user_module():
    out, proc = smtest.measure([PYTHON, prog("api")], "py-api")
    check(proc.stdout == "result 126\n", "api.py's output: %r" % proc.stdout)
    check("active True" in proc.stderr, "the module says it is measured: %s" % proc.stderr)
    profile = load_json(out, "profile.json")
    solve = callpath(profile, "<module>", "main", "solve")
    check(solve is not None and solve["paradigm"] == "user" and visits(solve) == 3,
          "with sysmeasure.region('solve'): a user region of 3 visits under main: %s" % solve)
    check(visits(callpath(profile, "<module>", "main", "solve", "solve_step")) == 3,
          "solve_step nests in the region solve")
    setup = callpath(profile, "<module>", "main", "setup")
    check(setup is not None and setup["paradigm"] == "user" and visits(setup) == 2 and
          visits(callpath(profile, "<module>", "main", "setup", "configure")) == 2,
          "@sysmeasure.region('setup'): 2 visits around configure: %s" % setup)
    check("hidden" not in python_regions(profile),
          "hidden, called while measurement was off, is not recorded")
    check(not [r for r in python_regions(profile) if r.startswith("region.")],
          "the module's own functions are no regions: %s" % python_regions(profile))
    check_trace_consistent(Trace(out))


def test_user_module_without_launcher():
    folder = os.path.join(BUILD, "python")
    env = {"PYTHONPATH": folder}
    work = workdir("py-unlaunched")
    proc = subprocess.run([PYTHON, prog("api")], env=clean_env(env), cwd=work, timeout=60,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(proc.returncode == 0 and proc.stdout == "result 126\n",
          "without the launcher api.py runs as before: %d %r %s"
          % (proc.returncode, proc.stdout, proc.stderr))
    check(proc.stderr == "active False\n", "and is told it is not measured: %r" % proc.stderr)
    check(os.listdir(work) == [], "nothing written: %s" % os.listdir(work))


def test_python_off():
    out, proc = smtest.measure([PYTHON, prog("api")], "py-off", launcher_args=["--python=no"])
    check(proc.stdout == "result 126\n", "output with --python=no: %r" % proc.stdout)
    profile = load_json(out, "profile.json")
    check(not python_regions(profile), "--python=no: no Python region: %s"
          % sorted(python_regions(profile))[:10])
    check(visits(callpath(profile, "solve")) == 3,
          "--python=no: the module's regions still work: %s"
          % [cp["path"] for cp in profile["callpaths"]])
    meta = load_json(out, "metadata.json")
    check(not any(n.startswith("Python") for n in meta.get("notes", [])),
          "--python=no: no Python note: %s" % meta.get("notes"))


def test_filter_file():
    work = workdir("py-filter")
    path = os.path.join(work, "py.filter")
    with open(path, "w") as f:
        f.write("SCOREP_REGION_NAMES_BEGIN\n  EXCLUDE work Solver.*\nSCOREP_REGION_NAMES_END\n"
                "SCOREP_FILE_NAMES_BEGIN\n  EXCLUDE */threading.py\nSCOREP_FILE_NAMES_END\n")
    out, proc = smtest.measure([PYTHON, prog("planted")], "py-filtered",
                               launcher_args=["--filter", path])
    check(proc.stdout == "total 67\n", "output with a filter: %r" % proc.stdout)
    profile = load_json(out, "profile.json")
    names = python_regions(profile)
    check("work" not in names and "Solver.step" not in names,
          "the filter's names are left out: %s" % sorted(names))
    check(not [cp for cp in profile["callpaths"] if (cp.get("file") or "").endswith("threading.py")],
          "the filter's file rule leaves threading.py out")
    check(visits(callpath(profile, "<module>", "main", "gen")) == 4 and
          visits(paths_ending(profile, "run_worker", "worker")[0]) == 4,
          "the others stay: gen 4, worker 4")


def test_module_rules():
    out, proc = smtest.measure([PYTHON, prog("planted")], "py-modules",
                               launcher_args=["--python-modules=-threading"])
    check(proc.stdout == "total 67\n", "output with module rules: %r" % proc.stdout)
    profile = load_json(out, "profile.json")
    check(not [cp for cp in profile["callpaths"] if (cp.get("file") or "").endswith("threading.py")],
          "-threading: no function of threading")
    check(visits(callpath(profile, "<module>", "main", "work")) == 7, "-threading: work stays")
    meta = load_json(out, "metadata.json")
    check(any("left out by python_modules" in n for n in meta.get("notes", [])),
          "the note counts what the rules left out: %s" % meta.get("notes"))
    out, proc = smtest.measure([PYTHON, prog("planted")], "py-only-main",
                               launcher_args=["--python-modules=-*,+__main__"])
    profile = load_json(out, "profile.json")
    files = {os.path.realpath(cp["file"]) for cp in profile["callpaths"]
             if cp.get("paradigm") == "python"}
    check(files == {os.path.realpath(prog("planted"))},
          "-*,+__main__: only the program's own functions: %s" % files)
    proc = smtest.run([PYTHON, prog("planted")], launcher_args=["--python-modules=numpy"])
    lines = proc.stderr.strip().splitlines()
    check(proc.returncode == 2 and len(lines) == 1 and "python_modules" in lines[0] and
          not proc.stdout, "a bad rule: exit 2 and one line before the program runs: %d %r %r"
          % (proc.returncode, proc.stderr, proc.stdout))


def test_deep_recursion():
    # 3 x deep(5000) below <module> and main: 5003 frames, 907 beyond the
    # trace's 4096 each time, counted and matched by the count.
    out, proc = smtest.measure([PYTHON, prog("deep")], "py-deep", launcher_args=["--no-throttle"])
    check(proc.stdout == "5000\n" * 3, "deep.py's output: %r" % proc.stdout[:100])
    meta = load_json(out, "metadata.json")
    check(meta.get("unmatched_leaves") == 0 and meta.get("trace_folded_enters") == 3 * 907,
          "every leave matched, 3 x 907 enters beyond the trace's depth: %s, %s"
          % (meta.get("unmatched_leaves"), meta.get("trace_folded_enters")))
    v = check_trace_consistent(Trace(out))
    check(v.get("deep") == 3 * (5001 - 907), "the archive keeps the 3 x 4094 enters of deep "
          "within its depth: %s" % v.get("deep"))


def test_sampling_below_python_functions():
    # Call-stack sampling attaches each sample to the regions open then:
    # the Python functions, with the interpreter's C frames below them.
    out, proc = smtest.measure([PYTHON, prog("busy")], "py-sampling",
                               launcher_args=["--sampling", "--sampling-freq", "200"])
    if "built without libunwind" in proc.stderr:
        smtest.skip("this build has no call-stack sampling (libunwind)")
    check(proc.stdout == "True\n", "busy.py's output: %r" % proc.stdout)
    with open(os.path.join(out, "sampled_functions.csv")) as f:
        rows = [line.split(",") for line in f.read().splitlines()[1:]]
    hot = [r for r in rows if r[0] == "<module> > main > hot"]
    check(hot and int(hot[0][-1]) >= 10,
          "samples attached to the Python call path <module> > main > hot: %s"
          % sorted({(r[0], r[-1]) for r in rows}))


def test_throttling():
    out, proc = smtest.measure([PYTHON, prog("tiny")], "py-throttle",
                               launcher_args=["--throttle-calls", "1000"])
    check(proc.stdout == "4999950000\n", "tiny.py's output: %r" % proc.stdout)
    profile = load_json(out, "profile.json")
    check(visits(callpath(profile, "<module>", "main", "tiny")) == 1000,
          "tiny traced for its first 1000 calls only")
    check(visits(callpath(profile, "<module>", "main", "slow")) == 1001,
          "slow (20 us and more a call) traced for all its 1001 calls")
    with open(os.path.join(out, "profile.txt")) as f:
        text = f.read()
    check(re.search(r"note +: throttled: tiny \(100000 calls, [0-9.e+-]+ us per call; traced for "
                    r"its first 1000\); filter line: EXCLUDE tiny", text) is not None,
          "profile.txt lists tiny as throttled with all its calls")
    check("throttled: slow" not in text, "slow is not throttled")
    with open(os.path.join(out, "throttled.filter")) as f:
        check("EXCLUDE tiny" in f.read(), "throttled.filter excludes tiny")
    check_trace_consistent(Trace(out))


def test_builtin_calls():
    out, proc = smtest.measure([PYTHON, prog("ccalls")], "py-ccalls",
                               launcher_args=["--python-c-calls"])
    check(proc.stdout == "3\n", "ccalls.py's output: %r" % proc.stdout)
    profile = load_json(out, "profile.json")
    for name, n in (("math.sqrt", 5), ("list.append", 3), ("len", 1)):
        cp = callpath(profile, "<module>", "main", name)
        check(visits(cp) == n and cp["paradigm"] == "python",
              "--python-c-calls: %s %d times under main: %s" % (name, n, visits(cp)))
    check_trace_consistent(Trace(out))
    out, _ = smtest.measure([PYTHON, prog("ccalls")], "py-no-ccalls")
    profile = load_json(out, "profile.json")
    check(callpath(profile, "<module>", "main", "math.sqrt") is None,
          "built-ins are no regions by default")


def test_fork_and_multiprocessing():
    plain = run_plain([PYTHON, prog("forks")])
    out = os.path.join(workdir("py-forks"), "out")
    try:  # a deadlock fails the case in 2 minutes, not 5
        proc = smtest.run([PYTHON, prog("forks")], launcher_args=["--output", out], timeout=120)
    except subprocess.TimeoutExpired:
        check(False, "forks.py did not end within 120 s under sysmeasure")
        return
    check(proc.returncode == 0, "forks.py exits 0: %d %s" % (proc.returncode, proc.stderr[-2000:]))
    want = "child 0\nchild 0\nchild 0\nfork pool 2470\nspawn pool 285\n"
    check(plain.stdout == want and proc.stdout == want,
          "forks.py's output, plain %r and measured %r" % (plain.stdout, proc.stdout))
    profile = load_json(out, "profile.json")
    # With --output the forked children are processes of the program's
    # family, in its archive (manual, "Jobs of several processes without
    # MPI"): each goes on inside main, entered again at its fork.
    main = callpath(profile, "<module>", "main")
    main_ranks = sorted(t["rank"] for t in main["per_thread"]) if main else []
    check(main is not None and sum(t["visits"] for t in main["per_thread"] if t["rank"] == 0) == 1
          and paths_ending(profile, "spin", "square"),
          "the parent's main and its thread's spin > square are measured")
    check(len(main_ranks) >= 6 and main_ranks[0] == 0 and len(set(main_ranks)) == len(main_ranks),
          "the 3 forked children and the 2 fork-pool workers, each in main: ranks %s" % main_ranks)
    check_trace_consistent(Trace(out))


def test_mpi4py():
    if os.environ.get("SM_HAVE_MPI", "yes") != "yes":
        smtest.skip("this build has no MPI")
    if run_plain([PYTHON, "-c", "import mpi4py"]).returncode != 0:
        smtest.skip("no mpi4py for %s (Debian: python3-mpi4py)" % PYTHON)
    # No --mpi: the launcher sees a Python rank of an MPI job.
    out, proc = mpi_measure(2, [PYTHON, prog("mpi")], "py-mpi4py")
    check(proc.stdout == "total 12.0\n", "mpi.py's output: %r" % proc.stdout)
    meta = load_json(out, "metadata.json")
    check(meta.get("ranks") == 2 and len(meta.get("processes", [])) == 2,
          "metadata.json: one job of 2 ranks: %s, %s" % (meta.get("ranks"), meta.get("processes")))
    trace = Trace(out)
    check_trace_consistent(trace)
    by_rank = region_visits_by_rank(trace)
    check(by_rank.get("reduce_step") == {0: 4, 1: 4},
          "reduce_step 4 times on each rank: %s" % by_rank.get("reduce_step"))
    check(by_rank.get("MPI_Allreduce") == {0: 4, 1: 4},
          "MPI_Allreduce 4 times on each rank: %s" % by_rank.get("MPI_Allreduce"))
    profile = load_json(out, "profile.json")
    cp = callpath(profile, "<module>", "main", "reduce_step", "MPI_Allreduce")
    check(cp is not None and sorted(t["rank"] for t in cp["per_thread"]) == [0, 1] and
          visits(cp) == 8, "MPI_Allreduce nests in the Python function on both ranks: %s"
          % (cp and cp["per_thread"]))


if __name__ == "__main__":
    smtest.run_cases(globals())
