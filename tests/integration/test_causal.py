"""Causal profiling (--causal): planted bottlenecks with known answers
(tests/programs/causal_threads.c).

  threads: two threads meet at a barrier every iteration, small_work is 1
    unit, big_work 2 units.  Speeding small_work predicts about 0 %;
    speeding big_work by s predicts min(s, 50 %) (slope 1, then flat once
    the other thread is the bottleneck).
  serial: part_a is 40 % of one thread's time: speeding it by s predicts
    0.4 s.

The predictions hold only when the program's threads get their CPUs: on
an oversubscribed machine (other jobs running) a virtual speedup cannot
show what a real one would.  The slope cases first time the program
unmeasured and skip, saying so, when its threads did not run concurrently
on free CPUs.  Everything else (outputs, formats, results and exit code of
the program unchanged, off by default, bad input) is checked always."""

import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import smtest  # noqa: E402
from smtest import check  # noqa: E402



def calibrated_unit():
    """The spin count of one unit of work, 0.5 ms of CPU on this machine
    (the programs' run time, and so how many experiments fit, would
    otherwise follow the CPU's speed): 100 serial iterations of 5 units,
    unmeasured, timed by their CPU time."""
    nominal = 400000
    r0 = os.times()
    subprocess.run([smtest.program("causal-threads"), "serial", "100", str(nominal)],
                   stdout=subprocess.DEVNULL)
    r1 = os.times()
    cpu = (r1.children_user - r0.children_user) + (r1.children_system - r0.children_system)
    per_unit = cpu / 500 if cpu > 0 else 0.0005
    return str(max(50000, min(8000000, int(nominal * 0.0005 / per_unit))))


UNIT = calibrated_unit()  # about 0.5 ms of CPU per unit
THREADS_ITER = "6000"    # about 6 s unmeasured: some 14 experiments that are not 0 %
SERIAL_ITER = "1500"
FAST = ["--no-trace", "--causal-experiment", "200"]


def causal_json(out):
    path = os.path.join(out, "causal", "experiments.json")
    if not check(os.path.exists(path), "no causal/experiments.json in %s" % out):
        return None
    with open(path) as f:
        return json.load(f)


def per_experiment(data, point="iteration"):
    """(speedup, predicted program speedup) per experiment, against the
    pooled baseline of the 0 % experiments (Coz's estimate)."""
    exps = [e for e in data["experiments"] if e["progress"].get(point, 0) > 0]
    base = [e for e in exps if e["speedup"] == 0]
    if not base:
        return []
    base_period = (sum(e["duration_ns"] - e["delay_ns"] for e in base) /
                   sum(e["progress"][point] for e in base))
    return [(e["speedup"], 1 - (e["duration_ns"] - e["delay_ns"]) / e["progress"][point] /
             base_period) for e in exps if e["speedup"] > 0]


def slope(points):
    """Least squares through the origin: y = b s."""
    ss = sum(s * s for s, _ in points)
    return sum(s * y for s, y in points) / ss if ss else float("nan")


_free = {}


def cpus_free():
    """Whether the threads program runs its two threads concurrently on
    free CPUs (unmeasured): its run time close to big_work's CPU time."""
    if "ok" not in _free:
        t0 = time.monotonic()
        r0 = os.times()
        p = subprocess.run([smtest.program("causal-threads"), "threads", "600", UNIT],
                           stdout=subprocess.PIPE, text=True)
        r1 = os.times()
        wall = time.monotonic() - t0
        cpu = (r1.children_user - r0.children_user) + (r1.children_system - r0.children_system)
        # cpu = 3 units per iteration on two threads, wall = 2 units when concurrent.
        ratio = wall / (cpu * 2 / 3) if cpu > 0 else 99
        _free["ok"] = p.returncode == 3 and ratio < 1.35
        _free["why"] = "the machine is busy: the planted program ran %.2fx slower than its " \
                       "threads' CPU time allows (needs < 1.35)" % ratio
    if not _free["ok"]:
        smtest.skip(_free["why"])


def cpus_free_now():
    """cpus_free's answer, without skipping the case."""
    try:
        cpus_free()
    except smtest.Skip:
        return False
    return True


def unmeasured(args):
    return subprocess.run([smtest.program("causal-threads")] + args, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)


# ---------------------------------------------------------------- outputs, program unchanged
@smtest.fixture
def threads_run():
    args = ["threads", "3000", UNIT]  # about 3 s: a dozen experiments
    out, proc = smtest.measure([smtest.program("causal-threads")] + args, "causal-threads",
                               launcher_args=["--causal"] + FAST, expect_rc=3)
    return out, proc, args


def test_program_unchanged():
    out, proc, args = threads_run()
    ref = unmeasured(args)
    check(ref.returncode == 3 and proc.returncode == 3,
          "exit codes: measured %d, unmeasured %d (3 planted)" % (proc.returncode, ref.returncode))
    check(proc.stdout == ref.stdout, "output changed under --causal: %r vs %r"
          % (proc.stdout, ref.stdout))


def test_coz_format():
    out, _, _ = threads_run()
    path = os.path.join(out, "causal", "experiments.coz")
    if not check(os.path.exists(path), "no causal/experiments.coz"):
        return
    lines = [l.rstrip("\n").split("\t") for l in open(path) if l.strip()]
    check(lines[0][0] == "startup" and re.match(r"time=\d+$", lines[0][1]),
          "first line: %s" % lines[0])
    check(lines[-1][0] == "runtime" and re.match(r"time=\d+$", lines[-1][1]),
          "last line: %s" % lines[-1])
    kinds = {"startup", "runtime", "experiment", "throughput-point", "latency-point", "samples"}
    exps, zero, after_exp = 0, 0, True
    for i, f in enumerate(lines):
        check(f[0] in kinds, "line %d: unknown record %s" % (i + 1, f[0]))
        fields = dict(x.split("=", 1) for x in f[1:])
        if f[0] == "experiment":
            exps += 1
            check(set(fields) == {"selected", "speedup", "duration", "selected-samples"},
                  "experiment fields: %s" % sorted(fields))
            sp = float(fields["speedup"])
            check(0 <= sp <= 1 and abs(sp * 20 - round(sp * 20)) < 1e-6,
                  "speedup %s not a step of 5 %%" % sp)
            zero += sp == 0
            check(int(fields["duration"]) > 0, "experiment duration %s" % fields["duration"])
            check(fields["selected"].split(" ")[0] in ("small_work", "big_work"),
                  "experiment chose %s, not one of the program's work functions"
                  % fields["selected"])
            after_exp = True
        elif f[0] == "throughput-point":
            check(after_exp and fields.get("name") == "iteration" and
                  fields.get("delta", "").isdigit(), "throughput-point line %d: %s" % (i + 1, f))
        elif f[0] == "samples":
            after_exp = False
            check(fields.get("count", "").isdigit() and fields.get("location"),
                  "samples line %d: %s" % (i + 1, f))
    check(exps >= 10, "%d experiments in about 3 s" % exps)
    check(0.25 <= zero / max(exps, 1) <= 0.75, "%d of %d experiments at 0 %%" % (zero, exps))
    data = causal_json(out)
    if data:
        check(len(data["experiments"]) == exps, "json has %d experiments, coz %d"
              % (len(data["experiments"]), exps))
        check(data["progress_points"][0]["name"] == "iteration" and
              data["estimates_for"] == "iteration", "progress points: %s" % data["progress_points"])
        check(data["samples"] > 1000, "only %d samples" % data["samples"])


def test_summary_note():
    out, _, _ = threads_run()
    text = open(os.path.join(out, "profile.txt")).read()
    m = re.search(r"causal profiling: (\d+) experiments, 1 progress points, (\d+) samples on "
                  r"(\d+) threads .*delays inserted ([\d.]+) s, pauses added ([\d.]+) s", text)
    if check(m, "profile.txt has no causal profiling note"):
        check(int(m.group(1)) >= 10 and int(m.group(3)) >= 2,
              "note: %s" % m.group(0))


@smtest.fixture
def table_run():
    """big_work alone, always at 25 %: the table's 25 % cell is known."""
    out, proc = smtest.measure([smtest.program("causal-threads"), "threads", "3000", UNIT],
                               "causal-table",
                               launcher_args=["--causal", "--causal-scope-function", "^big_work$",
                                              "--causal-speedup", "25"] + FAST, expect_rc=3)
    return out


def test_profile_table():
    out = table_run()
    text = open(os.path.join(out, "profile.txt")).read()
    i = text.find("CAUSAL PROFILE")
    if not check(i >= 0, "profile.txt has no CAUSAL PROFILE section"):
        return
    section = text[i:].splitlines()
    check("progress point 'iteration'" in section[1], "section header: %s" % section[1])
    head = [l for l in section if l.strip().startswith("FUNCTION")]
    check(head and "CODE 10 %" in head[0] and "CODE 50 %" in head[0], "table head: %s" % head)
    rows = [l for l in section if l.strip().split()[:1] == ["big_work"]]
    if not check(len(rows) == 1, "one row, big_work's: %s" % section[:8]):
        return
    # FUNCTION, then the cells at 10, 25 and 50 %: only 25 % has experiments.
    cells = re.findall(r"(-|[+-]\d+\.\d% \+-\s*\d+\.\d \(\d+\))(?=\s|$)", rows[0])
    if not check(len(cells) == 3 and cells[0] == "-" and cells[2] == "-",
                 "cells at 10 and 50 %% empty: %s" % rows[0]):
        return
    m = re.match(r"([+-]\d+\.\d)% \+-\s*(\d+\.\d) \((\d+)\)", cells[1])
    if check(m and int(m.group(3)) >= 4, "the 25 %% cell with its experiments: %s" % rows[0]):
        print("profile.txt, big_work at 25 %%: %s" % cells[1])
        if cpus_free_now():
            check(abs(float(m.group(1)) - 25) <= 10, "big_work at 25 %% predicts %s%% (expected "
                  "25 +- 10 on free CPUs)" % m.group(1))


def test_report_plots():
    out, _, _ = threads_run()
    html = open(os.path.join(out, "report.html")).read()
    check('href="#causal"' in html and "id=causal" in html, "report.html has no causal section")
    plots = re.findall(r'<svg class=causal [^>]*aria-label="causal profile of ([^"]+)"', html)
    data = causal_json(out)
    if data:  # (function mode: each plot named by its function)
        check(sorted(plots) == sorted(f["function"] for f in data["functions"]),
              "plots for %s, functions chosen %s" % (plots, [f["function"] for f in
                                                            data["functions"]]))
    check(html.count("<circle") >= 2, "no estimate drawn")


def test_off_by_default():
    args = ["serial", "50", UNIT]
    out, proc = smtest.measure([smtest.program("causal-threads")] + args, "causal-off",
                               launcher_args=["--no-trace"], expect_rc=3)
    check(not os.path.exists(os.path.join(out, "causal")), "causal/ written without --causal")
    check("causal profiling" not in open(os.path.join(out, "profile.txt")).read(),
          "profile.txt mentions causal profiling without --causal")
    check("id=causal" not in open(os.path.join(out, "report.html")).read(),
          "report.html has a causal section without --causal")
    check(proc.stdout == unmeasured(args).stdout, "output changed")


def test_progress_region():
    out, proc = smtest.measure([smtest.program("causal-threads"), "serial", "600", UNIT],
                               "causal-region",
                               launcher_args=["--causal", "--causal-progress", "step"] + FAST,
                               expect_rc=3)
    data = causal_json(out)
    if not data:
        return
    points = {p["name"]: p for p in data["progress_points"]}
    check("step" in points and "iteration" in points, "progress points: %s" % list(points))
    for e in data["experiments"]:
        p = e["progress"]
        check(abs(p.get("step", 0) - p.get("iteration", 0)) <= 1,
              "step and iteration passes differ in an experiment: %s" % p)


def test_bad_input():
    for args, word in ((["--causal-scope-function", "("], "causal-scope-function"),
                       (["--causal-scope-binary", "a["], "causal-scope-binary"),
                       (["--causal-scope-function-exclude", "*x"],
                        "causal-scope-function-exclude"),
                       (["--causal-period", "5"], "causal-period"),
                       (["--causal-experiment", "0"], "causal-experiment"),
                       (["--causal-speedup", "150"], "causal-speedup")):
        p = smtest.run(["/bin/true"], launcher_args=["--causal"] + args)
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        check(p.returncode == 2 and len(lines) == 1 and word in lines[0],
              "%s: exit %d, stderr %r" % (args, p.returncode, p.stderr))


def test_scope_exclude():
    # Everything of the program but big_work and small_work left out: only
    # those two are ever chosen; with big_work excluded too, only small_work.
    out, proc = smtest.measure([smtest.program("causal-threads"), "threads", "500", UNIT],
                               "causal-exclude",
                               launcher_args=["--causal", "--causal-scope-function", "_work$",
                                              "--causal-scope-function-exclude", "^big"] + FAST,
                               expect_rc=3)
    data = causal_json(out)
    if data:
        chosen = {e["function"] for e in data["experiments"]}
        check(chosen == {"small_work"}, "functions chosen: %s" % chosen)
        check(data["functions_in_scope"] == 1, "%d functions in scope"
              % data["functions_in_scope"])


def test_line_mode():
    # Source lines: the spin loop's line, inlined into part_a and part_b, is
    # chosen per function ("file:line in part_a").
    with open(os.path.join(smtest.BUILD, "sm_build.h")) as f:
        if not re.search(r"^#define SM_HAVE_LIBDW 1$", f.read(), re.M):
            smtest.skip("built without libdw: no source lines")
    out, proc = smtest.measure([smtest.program("causal-threads"), "serial", "600", UNIT],
                               "causal-line", launcher_args=["--causal", "--causal-mode", "line",
                                                             "--no-trace"] + FAST[1:],
                               expect_rc=3)
    data = causal_json(out)
    if not data:
        return
    check(data["mode"] == "line" and data["functions"], "mode %s, %d selections"
          % (data["mode"], len(data["functions"])))
    for f in data["functions"]:
        check(re.search(r"causal_threads\.c:\d+ in (part_a|part_b)$", f["selected"] or "") and
              f.get("line", 0) > 0, "a line chosen: %s" % f)
    with open(os.path.join(out, "causal", "experiments.coz")) as c:
        sel = [l for l in c if l.startswith("experiment\t")]
    check(sel and all(re.search(r"selected=\S+causal_threads\.c:\d+ in part_[ab]\t", l)
                      for l in sel), "experiment lines: %s" % sel[:2])
    check("LINE" in open(os.path.join(out, "profile.txt")).read(), "profile.txt's table head")


def test_no_progress_point():
    # A program without progress points: it runs as always, one line says why
    # nothing is predicted.
    out, proc = smtest.measure([smtest.program("sampling-hot"), "1", "300000"], "causal-none",
                               launcher_args=["--causal"] + FAST)
    lines = [l for l in proc.stderr.splitlines() if "causal profiling" in l]
    check(len(lines) == 1 and "no progress point" in lines[0],
          "stderr: %r" % proc.stderr)


def test_openmp_progress():
    # --causal-progress openmp: the end of every parallel region is a pass.
    if os.environ.get("SM_HAVE_OMPT") != "yes" or smtest.CLANG in ("", "no"):
        smtest.skip("no OMPT adapter or clang -fopenmp in this build")
    prog = smtest.build_program(smtest.CLANG, "causal_omp.c", "causal-omp",
                                ["-fopenmp", "-O1", "-g"])
    out, proc = smtest.measure([prog, "1000", UNIT], "causal-omp",
                               env={"OMP_NUM_THREADS": "2"},
                               launcher_args=["--causal", "--causal-progress", "openmp",
                                              "--causal-experiment", "100", "--no-trace"])
    data = causal_json(out)
    if not data:
        return
    points = {p["name"]: p["visits_in_experiments"] for p in data["progress_points"]}
    check(0 < points.get("openmp", 0) <= 1000, "openmp passes in experiments: %s" % points)
    check({e["function"] for e in data["experiments"]} <= {"work"} | {
        e["function"] for e in data["experiments"] if e["function"].startswith(".omp")},
        "functions chosen: %s" % {e["function"] for e in data["experiments"]})


# ---------------------------------------------------------------- end to end
def test_end_to_end():
    out, proc = smtest.measure([smtest.program("causal-threads"), "serial", "200", UNIT],
                               "causal-e2e", launcher_args=[
                                   "--causal", "--causal-end-to-end", "--causal-speedup", "40",
                                   "--causal-scope-function", "^part_a$", "--no-trace"],
                               expect_rc=3)
    data = causal_json(out)
    if not data:
        return
    exps = data["experiments"]
    check(data["mode"] == "end-to-end" and len(exps) == 1, "mode %s, %d experiments"
          % (data["mode"], len(exps)))
    if exps:
        e = exps[0]
        check(e["function"] == "part_a" and e["speedup"] == 0.4 and
              e["progress"].get("end-to-end") == 1 and e["progress"].get("iteration", 0) >= 190,
              "the experiment: %s" % e)
        # part_a is 40 % of the CPU time: 40 % of it is inserted as delay.
        check(e["delay_ns"] > 0 and e["selected_samples"] > 0, "no delay inserted: %s" % e)


def test_driver():
    work = smtest.workdir("causal-driver")
    out = os.path.join(work, "out")
    args = [smtest.program("causal-threads"), "serial", "100", UNIT]
    p = subprocess.run([os.path.join(smtest.BUILD, "sysmeasure-causal"), "-n", "4", "-o", out,
                        "--no-trace", "--causal-scope-function", "^part_a$", "--"] + args,
                       env=smtest.clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=300)
    ref = unmeasured(["serial", "100", UNIT]).stdout
    check(p.returncode == 3, "exit %d (the program's 3 expected); stderr %s"
          % (p.returncode, p.stderr[-500:]))
    check(p.stdout.count(ref.strip()) == 4, "the program's output, 4 times: %r" % p.stdout)
    data = causal_json(out)
    if data:
        exps = data["experiments"]
        check(data["mode"] == "end-to-end" and data["runs"] == 4 and len(exps) == 4,
              "combined: %s runs, %d experiments" % (data.get("runs"), len(exps)))
        check([e["speedup"] for e in exps] == [0, 0.1, 0, 0.2],
              "speedups of the runs: %s" % [e["speedup"] for e in exps])
        check(all(e["function"] == "part_a" for e in exps), "functions: %s" % exps)
    coz = os.path.join(out, "causal", "experiments.coz")
    check(os.path.exists(coz) and open(coz).read().count("experiment\t") == 4,
          "experiments.coz of the runs")
    bad = subprocess.run([os.path.join(smtest.BUILD, "sysmeasure-causal"), "-n", "1", "--",
                          "/bin/true"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = [l for l in bad.stderr.splitlines() if l.strip()]
    check(bad.returncode == 2 and len(lines) == 1 and "-n" in lines[0],
          "-n 1: exit %d, %r" % (bad.returncode, bad.stderr))


# ---------------------------------------------------------------- the planted answers
def run_scoped(mode, iters, function, extra, name):
    out, proc = smtest.measure([smtest.program("causal-threads"), mode, iters, UNIT], name,
                               launcher_args=["--causal", "--causal-scope-function",
                                              "^%s$" % function] + FAST + extra, expect_rc=3)
    return causal_json(out)


def test_threads_small_work_flat():
    cpus_free()
    data = run_scoped("threads", THREADS_ITER, "small_work", ["--causal-speedup", "50"],
                      "causal-small")
    pts = per_experiment(data) if data else []
    if not check(len(pts) >= 6, "%d experiments at 50 %%" % len(pts)):
        return
    mean = sum(y for _, y in pts) / len(pts)
    print("small_work at 50 %%: predicted %.3f over %d experiments" % (mean, len(pts)))
    check(abs(mean) <= 0.10, "speeding small_work by 50 %% predicts %.3f (expected 0 +- 0.10)"
          % mean)


def test_threads_big_work_rises():
    # Speeding big_work (2 units) by s makes an iteration max(1, 2 (1 - s))
    # units: the program speeds up by s up to 50 %, where small_work's thread
    # becomes the bottleneck.  One run at 25 % (the rising part) and one at
    # 75 % (the plateau), each with its own 0 % experiments as the baseline.
    cpus_free()
    for s, want, tol in ((25, 0.25, 0.10), (75, 0.50, 0.15)):
        data = run_scoped("threads", THREADS_ITER, "big_work", ["--causal-speedup", str(s)],
                          "causal-big-%d" % s)
        pts = per_experiment(data) if data else []
        if not check(len(pts) >= 6, "%d experiments at %d %%" % (len(pts), s)):
            continue
        mean = sum(y for _, y in pts) / len(pts)
        print("big_work at %d %%: predicted %.3f over %d experiments" % (s, mean, len(pts)))
        check(abs(mean - want) <= tol, "speeding big_work by %d %% predicts %.3f (expected "
              "%.2f +- %.2f)" % (s, mean, want, tol))


def test_serial_share():
    cpus_free()
    data = run_scoped("serial", SERIAL_ITER, "part_a", [], "causal-serial")
    pts = per_experiment(data) if data else []
    if not check(len(pts) >= 6, "%d experiments" % len(pts)):
        return
    b = slope(pts)
    print("part_a (40 %% of the time): slope %.2f over %d experiments" % (b, len(pts)))
    check(0.25 <= b <= 0.55, "slope of part_a is %.2f (expected 0.4 +- 0.15)" % b)


# ---------------------------------------------------------------- across MPI ranks
def need_mpi():
    if os.environ.get("SM_HAVE_MPI") != "yes":
        smtest.skip("built without MPI")


MPI_ITER = 2500  # about 2.5 s: some 12 experiments


@smtest.fixture
def mpi_run():
    args = [smtest.program("causal-mpi"), str(MPI_ITER), UNIT]
    return smtest.mpi_measure(2, args, "causal-mpi", launcher_args=["--causal"] + FAST)


def test_mpi_same_experiments():
    need_mpi()
    out, proc = mpi_run()
    check(sorted(proc.stdout.splitlines()) ==
          sorted(l for l in proc.stdout.splitlines() if re.match(r"rank [01] checksum", l)) and
          len(proc.stdout.splitlines()) == 2, "program output: %r" % proc.stdout)
    data = causal_json(out)
    if not data:
        return
    exps = data["experiments"]
    check(data["ranks"] == 2 and len(exps) >= 8, "%d experiments over %s ranks"
          % (len(exps), data["ranks"]))
    both = [e for e in exps if e["ranks"] == 2]
    check(len(both) >= len(exps) - 1, "only %d of %d experiments ran on both ranks"
          % (len(both), len(exps)))
    # Each rank passes "iteration" MPI_ITER times; experiments cover about
    # three quarters of the run: summed over both ranks, more than one rank has.
    total = sum(e["progress"]["iteration"] for e in exps)
    check(1.1 * MPI_ITER < total <= 2 * MPI_ITER, "job-wide passes in experiments: %d "
          "(expected between %d and %d: both ranks' summed)"
          % (total, 1.1 * MPI_ITER, 2 * MPI_ITER))
    names = {e["function"] for e in exps}
    check(names <= {"small_work", "big_work"}, "functions chosen: %s" % names)
    # Each experiment runs its planned 200 ms (the last may be cut short by
    # the end, to no less than half): the plan's times are kept.
    ms = sorted(e["duration_ns"] / 1e6 for e in exps)
    check(ms and 90 <= ms[0] and ms[-1] <= 260 and 170 <= ms[len(ms) // 2] <= 230,
          "experiment lengths (ms, 200 planned): %s" % [round(x) for x in ms])
    check(not [f for f in os.listdir(out) if f.startswith(".causal-plan")],
          "the plan file was left in the output folder")


def test_mpi_progress_region():
    # --causal-progress names an MPI function: every end of it is a pass,
    # as many as the program's own progress point.
    need_mpi()
    out, proc = smtest.mpi_measure(2, [smtest.program("causal-mpi"), "400", UNIT],
                                   "causal-mpi-region",
                                   launcher_args=["--causal", "--causal-progress",
                                                  "MPI_Sendrecv"] + FAST)
    data = causal_json(out)
    if not data:
        return
    points = {p["name"]: p["visits_in_experiments"] for p in data["progress_points"]}
    check("MPI_Sendrecv" in points and points.get("MPI_Sendrecv") == points.get("iteration"),
          "progress points: %s" % points)


def test_mpi_launcher_without_mpi():
    # Under mpirun, a program that never calls MPI_Init: the experiments wait
    # for it, and each process says why none ran.
    need_mpi()
    out, proc = smtest.mpi_measure(2, [smtest.program("causal-threads"), "serial", "50", UNIT],
                                   "causal-nompi", launcher_args=["--causal", "--no-trace"],
                                   expect_rc=None)
    lines = [l for l in proc.stderr.splitlines() if "causal profiling" in l]
    check(len(lines) == 2 and all("MPI_Init never came" in l for l in lines),
          "stderr: %r" % proc.stderr[-1500:])
    check(proc.stdout.count("serial checksum") == 2, "program output: %r" % proc.stdout)


def test_mpi_slopes():
    # Rank 0 runs small_work (1 unit), rank 1 big_work (2 units), exchanging
    # every iteration: speeding rank 0's function gives nothing, speeding
    # rank 1's by 25 % gives 25 %.
    need_mpi()
    cpus_free()
    for fn, s, want, tol in (("small_work", 50, 0.0, 0.12), ("big_work", 25, 0.25, 0.125)):
        args = [smtest.program("causal-mpi"), "6000", UNIT]  # some 14 experiments not at 0 %
        out, proc = smtest.mpi_measure(2, args, "causal-mpi-" + fn,
                                       launcher_args=["--causal", "--causal-scope-function",
                                                      "^%s$" % fn, "--causal-speedup", str(s)]
                                       + FAST)
        data = causal_json(out)
        pts = per_experiment(data) if data else []
        if check(len(pts) >= 6, "%s: %d experiments at %d %%" % (fn, len(pts), s)):
            mean = sum(y for _, y in pts) / len(pts)
            print("MPI %s at %d %%: %.3f over %d experiments" % (fn, s, mean, len(pts)))
            check(abs(mean - want) <= tol, "speeding %s by %d %% predicts %.3f (expected "
                  "%.2f +- %.3f)" % (fn, s, mean, want, tol))


if __name__ == "__main__":
    smtest.run_cases(globals())
