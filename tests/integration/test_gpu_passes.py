"""GPU counters without a GPU: the application-mode pass driver
(sysmeasure-passes, C) and its merge by (rank, call path, kernel, n-th launch)
(sysmeasure-merge --gpu-passes, C), on counter rows recorded from an H100
run of tests/gpu/counters_app; and the launcher's one-line errors for GPU
metric options.

- merge: two passes with the same launches give every metric of both per
  launch, and the statistics per kernel and per (call path, kernel) over
  all launches and across ranks in profile_gpu_counters.csv/.json/.txt
  (rank 1's cycles and times planted at twice rank 0's);
- a pass that launched a kernel more often: the extra launches are listed
  in gpu_passes.json, named in one line on stderr, and not merged;
- the driver: runs the command once per pass with SYSMEASURE_GPU_PASS and
  the pass folder (its --output rewritten), stops at a failing pass with
  that exit code, and reads the pass count from pass 0's metadata.json;
- the launcher: a bad --gpu-metrics name or metrics file is one line and
  exit 2 before the program runs; application mode under an MPI launcher
  says how to drive it; application mode alone hands the command to the
  driver, which runs the program once (no GPU: no counters) and leaves its
  output and exit code alone."""
import csv
import json
import os
import subprocess
import sys

import smtest
from smtest import check

BUILD = smtest.BUILD
PASSES = os.path.join(BUILD, "sysmeasure-passes")
COLUMNS = ["Correlation_Id", "Rank", "Device", "Stream", "Kernel_Name", "Call_Path", "Launch",
           "Grid_Size", "Block_Size", "Registers", "Shared_Memory", "Group",
           "Launches_Covered", "Counter_Name", "Counter_Value", "Start_Timestamp",
           "End_Timestamp"]
PATH = "main > cudaLaunchKernel"
FMA = "fma_kernel(float*, int)"
# Recorded per launch on the H100 (deterministic kernel: equal launches give
# equal instruction counts; cycles and times vary).
INST = 5144576.0
CYCLES = [8123.0, 8090.5, 8101.25, 8077.0]
TIMES = [6144.0, 6112.0, 6080.0, 6176.0]


def write_pass(folder, metric_values, rank=0, kernel=FMA, extra_launches=0, scale=1.0):
    os.makedirs(folder, exist_ok=True)
    name = "counter_collection.csv" if rank == 0 else "counter_collection.rank%d.csv" % rank
    with open(os.path.join(folder, name), "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(COLUMNS)
        n = len(next(iter(metric_values.values()))) + extra_launches
        for launch in range(1, n + 1):
            for metric, vals in metric_values.items():
                v = vals[(launch - 1) % len(vals)] * scale
                start = 1000000 + launch * 20000
                w.writerow([launch * 3, rank, 0, 7, kernel, PATH, launch, 1048576, 256, 16, 0,
                            0, 1, metric, repr(v), start, start + 6100])
    with open(os.path.join(folder, "metadata.json"), "w") as fh:
        json.dump({"metadata": {"gpu_passes": "2"}}, fh)


def rows(folder, name="counter_collection.csv"):
    with open(os.path.join(folder, name), newline="") as fh:
        return list(csv.DictReader(fh))


def test_merge():
    out = smtest.workdir("passes-merge")
    for rank in (0, 1):
        write_pass(os.path.join(out, "pass0"), {"smsp__inst_executed.sum": [INST] * 4}, rank)
        write_pass(os.path.join(out, "pass1"), {"sm__cycles_elapsed.avg": CYCLES,
                                                "gpu__time_duration.sum": TIMES}, rank,
                   scale=1.0 + rank)
    p = subprocess.run([PASSES, "--merge", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    check(p.returncode == 0 and p.stderr == "", "merge: %d %s" % (p.returncode, p.stderr))
    merged = rows(out)
    check(len(merged) == 2 * 4 * 3, "merge: %d rows, expected 24" % len(merged))
    per_launch = {}
    for r in merged:
        per_launch.setdefault((r["Rank"], int(r["Launch"])), {})[r["Counter_Name"]] = \
            (float(r["Counter_Value"]), r["Group"])
    check(len(per_launch) == 8, "merge: %d launches" % len(per_launch))
    for (rank, launch), m in per_launch.items():
        f = 1.0 + int(rank)
        check(m.get("smsp__inst_executed.sum") == (INST, "0") and
              m.get("sm__cycles_elapsed.avg") == (CYCLES[launch - 1] * f, "1") and
              m.get("gpu__time_duration.sum") == (TIMES[launch - 1] * f, "1"),
              "merge: rank %s launch %d has %s" % (rank, launch, m))
    # The statistics: the profile's own computation (profile_gpu_counters.*).
    stats = {(r["section"], r["path"], r["metric"]): r
             for r in rows(out, "profile_gpu_counters.csv")}
    cyc = [c * f for f in (1.0, 2.0) for c in CYCLES]
    s = stats.get(("kernel", "", "sm__cycles_elapsed.avg"), {})
    mean = sum(cyc) / 8
    sd = (sum((c - mean) ** 2 for c in cyc) / 8) ** 0.5
    check(s.get("kernel") == FMA and s.get("values") == "8" and s.get("launches") == "8" and
          abs(float(s.get("mean", 0)) - mean) < 1e-9 and abs(float(s.get("stddev", 0)) - sd) < 1e-9
          and float(s.get("min", 0)) == min(cyc) and float(s.get("max", 0)) == max(cyc),
          "merge statistics per kernel: %s" % s)
    # Across ranks: per-rank sums S (rank 0) and 2S (rank 1).
    S = sum(CYCLES)
    check(s.get("ranks") == "2" and abs(float(s.get("rank_mean", 0)) - 1.5 * S) < 1e-9 and
          float(s.get("rank_min", 0)) == S and s.get("rank_min_rank") == "0" and
          float(s.get("rank_max", 0)) == 2 * S and s.get("rank_max_rank") == "1" and
          abs(float(s.get("rank_stddev", 0)) - 0.5 * S) < 1e-9,
          "merge statistics across ranks: %s" % s)
    i = stats.get(("path", PATH, "smsp__inst_executed.sum"), {})
    check(i.get("values") == "8" and float(i.get("sum", 0)) == 8 * INST and
          float(i.get("stddev", 1)) == 0.0 and i.get("ranks") == "2" and
          float(i.get("rank_stddev", 1)) == 0.0,
          "inst_executed per call path: 8 equal values: %s" % i)
    with open(os.path.join(out, "profile_gpu_counters.txt")) as fh:
        text = fh.read()
    check("fma_kernel" in text and "from " + PATH in text and "2 passes merged" in text and
          "GPU counters across ranks" in text, "profile_gpu_counters.txt: %s" % text[:400])
    with open(os.path.join(out, "profile_gpu_counters.json")) as fh:
        js = json.load(fh)
    k = [x for x in js["counters"]["kernels"] if x["metric"] == "gpu__time_duration.sum"]
    check(js["passes"] == 2 and js["ranks"] == 2 and len(k) == 1 and
          k[0]["sum"] == 3 * sum(TIMES) and k[0]["ranks"]["max_rank"] == 1,
          "profile_gpu_counters.json: %s" % k)
    with open(os.path.join(out, "gpu_passes.json")) as fh:
        report = json.load(fh)
    check(report["merged_launches"] == 8 and report["differing_launches"] == [],
          "merge report: %s" % report)


def test_merge_differs():
    out = smtest.workdir("passes-differ")
    write_pass(os.path.join(out, "pass0"), {"smsp__inst_executed.sum": [INST] * 4})
    # Pass 1 launched the kernel twice more (a data-dependent loop).
    write_pass(os.path.join(out, "pass1"), {"sm__cycles_elapsed.avg": CYCLES}, extra_launches=2)
    p = subprocess.run([PASSES, "--merge", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    lines = p.stderr.strip().splitlines()
    check(p.returncode == 0 and len(lines) == 1 and "2 kernel launches differ" in lines[0] and
          "fma_kernel" in lines[0] and "merged only the 4" in lines[0],
          "differing passes: one line naming them, got %r" % p.stderr)
    with open(os.path.join(out, "gpu_passes.json")) as fh:
        report = json.load(fh)
    check(sorted((d["pass"], d["launch"]) for d in report["differing_launches"]) == [(1, 5), (1, 6)],
          "differing launches listed: %s" % report["differing_launches"])
    check(len(rows(out)) == 8, "only the 4 common launches merged (8 rows)")
    with open(os.path.join(out, "profile_gpu_counters.txt")) as fh:
        check("2 launches were not in every pass" in fh.read(), "the text names the unmerged")
    # No counters in a pass: said, nothing merged.
    empty = smtest.workdir("passes-empty")
    os.makedirs(os.path.join(empty, "pass0"))
    p = subprocess.run([PASSES, "--merge", empty], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    check(p.returncode == 2 and "no counter_collection.csv" in p.stderr and
          len(p.stderr.strip().splitlines()) == 1, "empty pass: %r" % p.stderr)


def test_driver():
    out = os.path.join(smtest.workdir("passes-driver"), "job")
    # A stand-in for one pass of a job: it writes the rows recorded for its
    # pass where the driver says (the real launcher does it on a GPU).
    script = os.path.join(smtest.workdir("passes-script"), "job.py")
    with open(script, "w") as fh:
        fh.write("import os, sys\n"
                 "sys.path.insert(0, %r)\n"
                 "import test_gpu_passes as t\n"
                 "k = int(os.environ['SYSMEASURE_GPU_PASS'])\n"
                 "a = sys.argv\n"
                 "out = a[a.index('--output') + 1] if '--output' in a else "
                 "[x for x in a if x.startswith('--output=')][0][9:]\n"
                 "assert out == os.environ['SYSMEASURE_OUTPUT'], (out, os.environ['SYSMEASURE_OUTPUT'])\n"
                 "m = {'smsp__inst_executed.sum': [t.INST] * 4} if k == 0 else "
                 "{'gpu__time_duration.sum': t.TIMES}\n"
                 "t.write_pass(out, m)\n"
                 "print('pass', k)\n"
                 "sys.exit(int(os.environ.get('FAIL_AT', '-1')) == k and 7 or 0)\n"
                 % os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    p = subprocess.run([PASSES, "--", sys.executable, script, "--output", out], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(p.returncode == 0 and p.stdout.split() == ["pass", "0", "pass", "1"],
          "driver: %d %r %r" % (p.returncode, p.stdout, p.stderr))
    check(len(rows(out)) == 8 and os.path.isdir(os.path.join(out, "pass1")),
          "driver merged the 2 passes it ran")
    env["FAIL_AT"] = "1"
    out2 = out + "-fail"
    p = subprocess.run([PASSES, "--passes", "3", "--", sys.executable, script, "--output=" + out2],
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(p.returncode == 7 and "pass 1 ended with exit code 7" in p.stderr and
          not os.path.exists(os.path.join(out2, "pass2")),
          "driver stops at the failing pass with its code: %d %r" % (p.returncode, p.stderr))
    p = subprocess.run([PASSES, "--passes", "x", "--", "true"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    check(p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, "bad --passes: %r" % p.stderr)


def test_launcher():
    prog = smtest.program("sleep-regions")
    p = smtest.run([prog], launcher_args=["--gpu-metrics", "smsp__inst_executed.sum,bad/name"])
    check(p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and
          "'bad/name' is not a metric name" in p.stderr, "bad name: %r" % p.stderr)
    bad = os.path.join(smtest.workdir("gpu-metrics"), "bad.txt")
    with open(bad, "w") as fh:
        fh.write("pmc: smsp__inst_executed.sum\npmx: oops\n")
    p = smtest.run([prog], launcher_args=["--gpu-metrics-file", bad])
    check(p.returncode == 2 and p.stderr.strip().endswith("line 2: expected 'pmc: METRIC METRIC ...'")
          and len(p.stderr.strip().splitlines()) == 1, "bad file: %r" % p.stderr)
    two = os.path.join(smtest.workdir("gpu-metrics"), "two.txt")
    with open(two, "w") as fh:
        fh.write("pmc: smsp__inst_executed.sum\npmc: sm__cycles_elapsed.avg\n")
    p = smtest.run([prog], env={"OMPI_COMM_WORLD_RANK": "0"},
                   launcher_args=["--gpu-counter-mode=application", "--gpu-metrics-file", two])
    check(p.returncode == 2 and "sysmeasure-passes -- mpirun" in p.stderr and
          len(p.stderr.strip().splitlines()) == 1, "application under MPI: %r" % p.stderr)
    # Alone, the launcher hands the command to the driver: one run (no GPU:
    # pass 0 reports no counters), the program's output and exit code intact.
    exit_code = smtest.program("exit-code")
    for code in (0, 5):
        out = os.path.join(smtest.workdir("gpu-app-mode"), "out")
        p = smtest.run([exit_code, str(code)], launcher_args=["--output", out,
                                                              "--gpu-counter-mode=application",
                                                              "--gpu-metrics-file", two])
        check(p.returncode == code and p.stdout == "application output\n",
              "application mode alone: exit %d (expected %d), stdout %r" % (p.returncode, code, p.stdout))
        said = "pass 0 collected no GPU counters" if code == 0 else "pass 0 ended with exit code 5"
        check(os.path.isdir(os.path.join(out, "pass0")) and
              not os.path.exists(os.path.join(out, "pass1")) and said in p.stderr,
              "application mode without a GPU: one pass, said: %r" % p.stderr)


if __name__ == "__main__":
    smtest.run_cases(globals())
