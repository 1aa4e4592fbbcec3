"""How a run ends and what it writes: exit() from another thread, start/stop
semantics, trace-only and profile-only runs, the default folder name, and a
program linked with libsysmeasure run without the launcher."""
import os
import re
import subprocess

import otf2
import smtest
from smtest import (Trace, callpath, check, check_trace_consistent, clean_env, load_json,
                    measure, program, run, workdir)


def test_exit_from_thread():
    # exit(7) from a second thread while both threads have regions open.
    out, proc = measure([program("exit-from-thread")], "exit-thread", expect_rc=7)
    trace = Trace(out)
    visits = check_trace_consistent(trace)  # open regions were closed at exit
    for name in ("main region", "worker region", "inner"):
        check(visits.get(name) == 1, "%s recorded once: %s" % (name, visits))
    profile = load_json(out, "profile.json")
    check(callpath(profile, "worker region", "inner") is not None, "worker > inner in the profile")


def test_busy_threads_at_exit():
    # Threads still recording while the process exits: no crash, exit code
    # kept, the main thread's events intact, the archive readable.  (The busy
    # threads' last events may race with the end; they are not checked for
    # balance.)  Three runs: the race ends differently each time.
    for attempt in range(3):
        out, proc = measure([program("busy-at-exit")], "busy-exit-%d" % attempt, expect_rc=9,
                            env={"SYSMEASURE_BUFFER_SIZE": "1M",
                                 "SYSMEASURE_BUFFER_CHUNK_SIZE": "16K"})
        trace = Trace(out)
        check(trace.count_enters("main") == 1, "run %d: main region recorded" % attempt)
        check(trace.count_enters("busy") > 0, "run %d: busy threads recorded" % attempt)
        check(len(trace.locations) == 3, "run %d: three threads: %d" % (attempt, len(trace.locations)))


def start_stop(init, expect_off_first):
    """The program references sysmeasure_start/stop, so with
    SYSMEASURE_INIT_ENABLED=auto measurement starts off (a MeasurementOnOff
    at the start); user regions are recorded anyway."""
    out, proc = measure([program("start-stop")], "start-stop-" + init,
                        env={"SYSMEASURE_INIT_ENABLED": init})
    check("active=1 pop-unpushed=no such region is open" in proc.stdout,
          "API results seen by the program: %r" % proc.stdout)
    trace = Trace(out)
    visits = check_trace_consistent(trace)
    check(visits.get("before start") == 1 and visits.get("measured") == 1,
          "user regions always recorded (%s): %s" % (init, visits))
    main = trace.locations[0]
    switches = [e.measurement_mode for e in trace.events[main]
                if isinstance(e, otf2.events.MeasurementOnOff)]
    modes = [str(m).split(".")[-1] for m in switches]
    expected = (["OFF"] if expect_off_first else []) + ["ON", "OFF"]
    check(modes == expected, "measurement switches with INIT_ENABLED=%s: %s" % (init, modes))
    meta = load_json(out, "metadata.json")
    check(meta["unmatched_leaves"] == 1, "the unpushed pop is counted")


def test_start_stop_init_auto():
    start_stop("auto", True)


def test_start_stop_init_yes():
    start_stop("yes", False)


def test_trace_only():
    out, _ = measure([program("exit-code")], "trace-only", launcher_args=["--no-profile"])
    check(os.path.exists(out + "/traces.otf2") and not os.path.exists(out + "/profile.txt"),
          "--no-profile: archive, no profile: %s" % os.listdir(out))


def test_profile_only():
    out, _ = measure([program("exit-code")], "profile-only", launcher_args=["--no-trace"])
    check(os.path.exists(out + "/profile.json") and not os.path.exists(out + "/traces.otf2"),
          "--no-trace: profile, no archive: %s" % os.listdir(out))
    check(os.path.exists(out + "/metadata.json"), "metadata always written")


def test_config_file():
    # A config file reaches the runtime: its values apply, and metadata.json
    # says where each came from (the environment overrides the file).
    conf = os.path.join(workdir("config"), "run.conf")
    with open(conf, "w") as f:
        f.write("# measured with a config file\nprofile = no\nbuffer_size = 32M\nclock = monotonic\n")
    out, _ = measure([program("exit-code")], "config-run", launcher_args=["--config", conf],
                     env={"SYSMEASURE_CLOCK": "tsc"})
    check(not os.path.exists(out + "/profile.txt") and os.path.exists(out + "/traces.otf2"),
          "profile = no from the file: %s" % os.listdir(out))
    cfg = load_json(out, "metadata.json")["configuration"]
    check(cfg["SYSMEASURE_BUFFER_SIZE"] == {"value": "32M", "source": "config file"},
          "buffer_size from the file: %s" % cfg["SYSMEASURE_BUFFER_SIZE"])
    check(cfg["SYSMEASURE_CLOCK"]["value"] == "tsc" and cfg["SYSMEASURE_CLOCK"]["source"] == "environment",
          "environment overrides the file: %s" % cfg["SYSMEASURE_CLOCK"])


def test_default_folders_of_two_runs():
    # Default folder: sysmeasure-<program>-<date>-<time>-<pid> in the working
    # directory; two runs started together get two folders.
    cwd = workdir("default-name")
    procs = [subprocess.Popen([os.path.join(os.environ["SM_BUILDDIR"], "sysmeasure"),
                               program("exit-code")],
                              cwd=cwd, env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for _ in range(2)]
    for p in procs:
        p.communicate()
        check(p.returncode == 0, "concurrent run exit code %d" % p.returncode)
    folders = sorted(os.listdir(cwd))
    check(len(folders) == 2 and all(re.fullmatch(r"sysmeasure-exit-code-\d{8}-\d{6}-\d+(-\d+)?", f)
                                    for f in folders), "two distinct default folders: %s" % folders)
    for f in folders:
        check(os.path.exists(os.path.join(cwd, f, "profile.txt")), "output in %s" % f)


def test_child_processes():
    # Processes the program starts are measured too; with an explicit output
    # folder they are processes of the program's job (issue 30): one archive
    # of the program and its two children, written by the last of them to
    # end, never one over another's files.
    exe = program("exit-code")
    parent = ("import subprocess, sys; subprocess.run([%r, '0']); subprocess.run([%r, '0']); sys.exit(6)"
              % (exe, exe))
    out, proc = measure(["/usr/bin/python3", "-c", parent], "children", expect_rc=6)
    subs = sorted(d for d in os.listdir(out) if d.startswith("exit-code-"))
    check(subs == [], "no folder of a child process: %s" % os.listdir(out))
    meta = load_json(out, "metadata.json")
    check(meta["command"][0] == "/usr/bin/python3" and meta["ranks"] == 3,
          "the program's folder, with the program and its 2 children: %s %s"
          % (meta["command"], meta["ranks"]))
    prof = load_json(out, "profile.json")
    work = callpath(prof, "work")
    check(work is not None and [(r["rank"], r["visits"]) for r in work["per_rank"]] == [(1, 1), (2, 1)],
          "each child's region, as processes 1 and 2: %s" % (work and work["per_rank"]))


def test_without_launcher():
    # Without the launcher: the program runs as before and writes nothing.
    cwd = workdir("no-launcher")
    p = subprocess.run([program("exit-code"), "4"], cwd=cwd, env=clean_env(), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    check(p.returncode == 4 and p.stdout == "application output\n" and p.stderr == "",
          "unmeasured run: rc %d, out %r, err %r" % (p.returncode, p.stdout, p.stderr))
    check(os.listdir(cwd) == [], "no output folder without the launcher: %s" % os.listdir(cwd))


def test_exit_code_and_stdout_kept():
    # The application's exit code and stdout pass through the launcher.
    p = run([program("exit-code"), "5"], cwd=workdir("rc"))
    check(p.returncode == 5 and p.stdout == "application output\n", "rc 5 and stdout kept")


if __name__ == "__main__":
    smtest.run_cases(globals())
