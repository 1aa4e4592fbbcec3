"""Every end writes once, completely, and keeps the exit status and stdout:
exit() from two threads at once (50 times), exit() from a thread while the
main thread's exit writes, SIGTERM and SIGPIPE during the end-of-run write,
signals whose default action ends the process (SIGUSR1, SIGUSR2, SIGALRM),
signals the program ignores or handles (its behaviour stays), and a program
that never leaves its regions (the profile depth limit)."""
import os
import signal
import subprocess

import smtest
from smtest import (Trace, callpath, check, check_trace_consistent, load_json, measure, program,
                    run, workdir)

PROG = program("exit-races")
OUTPUTS = ("traces.otf2", "profile.txt", "profile.json", "profile.csv", "metadata.json")


def complete(out, what, steps=None):
    """Every output there and readable; the planted steps all in the trace."""
    missing = [f for f in OUTPUTS if not os.path.exists(os.path.join(out, f))]
    if not check(not missing, "%s: outputs missing: %s (have %s)" % (what, missing,
                                                                     os.listdir(out) if os.path.isdir(out) else "no folder")):
        return None
    profile = load_json(out, "profile.json")
    load_json(out, "metadata.json")
    if steps is not None and steps > 10000:
        # Many events: counted with otf2-print (the Python reader is slow).
        p = subprocess.run("otf2-print %s | grep -c '^ENTER .*\"step\"'; "
                           "otf2-print %s | grep -c '^LEAVE .*\"step\"'"
                           % (os.path.join(out, "traces.otf2"), os.path.join(out, "traces.otf2")),
                           shell=True, stdout=subprocess.PIPE, text=True)
        check(p.stdout.split() == [str(steps)] * 2, "%s: steps entered and left in the trace: %s, "
              "planted %d" % (what, p.stdout.split(), steps))
    elif steps is not None:
        trace = Trace(out)
        check(trace.count_enters("step") == steps, "%s: %d steps in the trace, planted %d"
              % (what, trace.count_enters("step"), steps))
        check_trace_consistent(trace)
        cp = callpath(profile, "work", "step")
        check(cp is not None and sum(t["visits"] for t in cp["per_thread"]) == steps,
              "%s: work > step visited %d times in the profile" % (what, steps))
    return profile


# ---- exit() from two threads at the same moment: one of the two codes, the
# output complete every time, the application's stdout flushed once.
def test_concurrent_exits():
    codes = set()
    for i in range(50):
        out = os.path.join(workdir("concurrent-%d" % i), "out")
        proc = run([PROG, "concurrent", "200"], launcher_args=["--output", out])
        check(proc.returncode in (3, 4), "concurrent exits, run %d: exit code %d; stderr %s"
              % (i, proc.returncode, proc.stderr))
        codes.add(proc.returncode)
        check(proc.stdout == "application output\n", "run %d: stdout %r" % (i, proc.stdout))
        complete(out, "concurrent run %d" % i, steps=200 if i % 10 == 0 else None)
    print("exit codes seen over 50 runs: %s" % sorted(codes))


STEPS = 250000


def run_with_dir(args_before, args_after, name, env=None):
    """measure() with the output folder also given to the program."""
    out = os.path.join(workdir(name), "out")
    p = run([PROG] + args_before + [out] + args_after, env=env,
            launcher_args=["--output", out])
    return out, p


# ---- exit(42) from a thread while main's exit(41) is writing: 41 stays.
def test_thread_exit_during_write():
    out, proc = run_with_dir(["thread-exit", str(STEPS)], [], "thread-exit")
    check(proc.returncode == 41, "exit(42) during exit(41)'s write: code %d (41 expected); %s"
          % (proc.returncode, proc.stderr))
    check(proc.stdout == "application output\n", "thread exit: stdout %r" % proc.stdout)
    complete(out, "exit from a thread during the write", steps=STEPS)


# ---- SIGTERM and SIGPIPE during the end-of-run write (a thread of the
# program sends it once the archive's folder exists): the write finishes,
# stdout is flushed (exit was under way), the process dies by that signal.
def signal_in_write(sig):
    out, proc = run_with_dir(["signal-in-write", str(STEPS)], [str(int(sig))],
                             "in-write-%s" % sig.name)
    check(proc.returncode == -sig, "%s during the write: status %d, expected death by it; %s"
          % (sig.name, proc.returncode, proc.stderr))
    check(proc.stdout == "application output\n", "%s during the write: stdout %r"
          % (sig.name, proc.stdout))
    complete(out, "%s during the write" % sig.name, steps=STEPS)


def test_sigterm_during_write():
    signal_in_write(signal.SIGTERM)


def test_sigpipe_during_write():
    signal_in_write(signal.SIGPIPE)


# ---- signals whose default action ends the process: output, then death by it.
def raise_deadly(sig):
    out, proc = measure([PROG, "raise", "100", str(int(sig))], "raise-%s" % sig.name,
                        expect_rc=-sig)
    profile = complete(out, "raise %s" % sig.name, steps=100)
    check(profile is not None and callpath(profile, "before the signal") is not None,
          "%s: the region open at the signal is in the profile" % sig.name)


def test_raise_sigusr1():
    raise_deadly(signal.SIGUSR1)


def test_raise_sigusr2():
    raise_deadly(signal.SIGUSR2)


def test_raise_sigalrm():
    raise_deadly(signal.SIGALRM)


def test_raise_sigxcpu():
    raise_deadly(signal.SIGXCPU)


# ---- the program ignores or handles SIGUSR1: its behaviour stays.
def test_ignored_sigusr1():
    out, proc = measure([PROG, "ignore", "100", str(int(signal.SIGUSR1))], "ignore")
    check(proc.stdout == "application output\nstill running\n", "ignored SIGUSR1: %r" % proc.stdout)
    complete(out, "ignored SIGUSR1", steps=100)


def test_handled_sigusr1():
    out, proc = measure([PROG, "handle", "100", str(int(signal.SIGUSR1))], "handle")
    check(proc.stdout == "application output\nfound SIG_DFL\nhandled %d\n" % int(signal.SIGUSR1),
          "handled SIGUSR1 (the program sees SIG_DFL before, its handler runs): %r" % proc.stdout)
    complete(out, "handled SIGUSR1", steps=100)


def test_handler_taken_back():
    # A handler set and taken back with signal(SIG_DFL): the default again,
    # with output.
    out, proc = measure([PROG, "restore", "100", str(int(signal.SIGUSR2))], "restore",
                        expect_rc=-signal.SIGUSR2)
    check("did not give" not in proc.stdout, "signal() returns the program's handler: %r" % proc.stdout)
    complete(out, "SIG_DFL restored", steps=100)


# ---- _exit, _Exit and quick_exit skip atexit: the output is still written,
# the status kept; the application's unflushed stdout stays unflushed (as
# without sysmeasure: stdout is a pipe here, fully buffered).
def fast_exit(how):
    out, proc = measure([PROG, how, "100", "23"], "fast-" + how, expect_rc=23)
    check(proc.stdout == "", "%s: the unflushed stdout is not flushed: %r" % (how, proc.stdout))
    profile = complete(out, how, steps=100)
    check(profile is not None and callpath(profile, "before the exit") is not None,
          "%s: the region open at the exit is in the profile" % how)
    return proc, profile


def test_exit_by__exit():
    fast_exit("_exit")


def test_exit_by__Exit():
    fast_exit("_Exit")


def test_exit_by_quick_exit():
    proc, profile = fast_exit("quick_exit")
    check("quick exit handler ran" in proc.stderr, "quick_exit: the program's handler ran")
    check(profile is not None and callpath(profile, "before the exit", "quick exit handler")
          is not None, "quick_exit: the program's handler ran before the write (its region "
          "is in the profile)")


def test_vfork_child_exit():
    # A vfork child calling _exit shares the parent's memory: it writes
    # nothing, and the parent's output is complete.
    out, proc = measure([PROG, "vfork", "100"], "vfork")
    check(proc.stdout == "application output\nchild ended 0\n", "vfork: stdout %r" % proc.stdout)
    complete(out, "vfork child's _exit", steps=100)


# ---- 100,000 regions entered and never left: the profile stops at the depth
# limit (256), folds the rest with a note; fast, small output.
DEPTH = 100000


@smtest.fixture
def deep():
    """The run that never leaves its regions: (out, proc, profile or None,
    metadata)."""
    out, proc = measure([PROG, "deep", str(DEPTH)], "deep")
    profile = complete(out, "deep")
    meta = load_json(out, "metadata.json")
    return out, proc, profile, meta


def test_deep_profile_depth_limit():
    out, proc, profile, meta = deep()
    check(proc.stdout == "application output\n", "deep: stdout %r" % proc.stdout)
    check("profile depth limit" in proc.stderr, "deep: a warning names the limit: %r" % proc.stderr)
    check(meta.get("profile_folded_enters") == DEPTH - 256,
          "deep: %d enters folded: %s" % (DEPTH - 256, meta.get("profile_folded_enters")))
    check(any("profile depth limit" in n for n in meta.get("notes", [])) or
          "profile depth limit" in open(os.path.join(out, "metadata.json")).read(),
          "deep: the note in metadata.json")
    check("profile depth limit" in open(os.path.join(out, "profile.txt")).read(),
          "deep: the note in profile.txt")
    if profile:
        depths = [cp["depth"] + 1 for cp in profile["callpaths"]]
        check(max(depths) == 256 and len(depths) == 256, "deep: 256 call paths of depth up to 256: %d, %d"
              % (len(depths), max(depths)))
    size = sum(os.path.getsize(os.path.join(out, f)) for f in ("profile.json", "profile.txt", "profile.csv"))
    check(size < 8 << 20, "deep: the profile stays small: %d bytes" % size)


def test_deep_trace_depth_limit():
    # The trace keeps the first 4096 levels (SYSMEASURE_TRACE_DEPTH), each
    # closed at the end; the enters beyond are counted, and said.
    out, proc, profile, meta = deep()
    p = subprocess.run("otf2-print %s | grep -c '^ENTER '; otf2-print %s | grep -c '^LEAVE '"
                       % ((os.path.join(out, "traces.otf2"),) * 2), shell=True,
                       stdout=subprocess.PIPE, text=True)
    check(p.stdout.split() == ["4096"] * 2,
          "deep: the trace keeps 4096 levels, each closed at the end: %s" % p.stdout.split())
    check(meta.get("trace_folded_enters") == DEPTH - 4096,
          "deep: %d enters beyond the trace depth counted: %s" % (DEPTH - 4096,
                                                                   meta.get("trace_folded_enters")))
    check("trace depth limit" in open(os.path.join(out, "profile.txt")).read(),
          "deep: the trace depth note in profile.txt")


def test_deep_then_return():
    # Deep, then all left again: the leaves beyond the limit are matched by
    # the count, the rest by region; what follows is recorded at the top again.
    out, proc = measure([PROG, "deep-return", "10000"], "deep-return",
                        env={"SYSMEASURE_TRACE_DEPTH": "1000"})
    trace = Trace(out)
    visits = check_trace_consistent(trace)
    check(visits.get("even", 0) + visits.get("odd", 0) == 1000 and visits.get("after") == 1,
          "deep-return: 1000 levels and the region after them in the trace: %s" % visits)
    check(load_json(out, "metadata.json").get("trace_folded_enters") == 9000,
          "deep-return: 9000 enters counted")
    check(load_json(out, "metadata.json").get("unmatched_leaves") == 0,
          "deep-return: every leave matched")


def test_profile_depth_from_env():
    # A lower limit, from the environment.
    out, proc = measure([PROG, "deep", "50"], "deep-10", env={"SYSMEASURE_PROFILE_DEPTH": "10"})
    profile = complete(out, "deep with SYSMEASURE_PROFILE_DEPTH=10")
    if profile:
        check(max(cp["depth"] + 1 for cp in profile["callpaths"]) == 10, "depth limit 10 holds")
    check(load_json(out, "metadata.json").get("profile_folded_enters") == 40, "40 enters folded")


if __name__ == "__main__":
    smtest.run_cases(globals())
