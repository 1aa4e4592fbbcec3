"""GPU counter test (make check-gpu; needs an NVIDIA GPU with counter access):
tests/gpu/counters_app under the launcher, with per-kernel metrics in the
kernel, rotate and application modes, NVML samples and a bad metric name,
checked against what the program says it launched.

It reads counter_collection.csv, profile_gpu_counters.csv, profile.json and
metadata.json, so it
runs where the OTF2 Python reader is missing; where it is present, the
trace's metrics on the stream and the NVML timelines are checked too.
SM_GPU_KEEP=DIR copies every output folder there (to read the archives back
elsewhere)."""

import csv
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

BUILD = os.environ.get("SM_BUILDDIR", os.getcwd())
LAUNCHER = os.path.join(BUILD, "sysmeasure")
PASSES = os.path.join(BUILD, "sysmeasure-passes")
PROGRAMS = os.environ.get("SM_GPU_PROGRAMS", os.path.join(BUILD, "tests", "gpu"))
APP = os.path.join(PROGRAMS, "counters_app")
MT_APP = os.path.join(PROGRAMS, "mt_counters")
GPU_APP = os.path.join(PROGRAMS, "gpu_app")
KEEP = os.environ.get("SM_GPU_KEEP")
WORK = tempfile.mkdtemp(prefix="sm-gpu-counters-")
failures = []

try:
    import otf2  # noqa: F401
except ImportError:
    otf2 = None


def check(cond, message):
    if not cond:
        failures.append(message)
        print("CHECK FAILED: " + message, file=sys.stderr)
    return cond


def env_clean(extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SYSMEASURE_")}
    env.update(extra or {})
    return env


def keep(out, name):
    if KEEP and os.path.isdir(out):
        shutil.copytree(out, os.path.join(KEEP, name), dirs_exist_ok=True)


def measure(name, args, launcher_args=(), env=None, expect_rc=0, app=APP):
    out = os.path.join(WORK, name)
    cmd = [LAUNCHER, "--output", out] + list(launcher_args) + ["--", app] + list(args)
    p = subprocess.run(cmd, env=env_clean(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=600)
    check(p.returncode == expect_rc, "%s: exit %d, expected %d; stderr: %s"
          % (name, p.returncode, expect_rc, p.stderr))
    keep(out, name)
    return out, p


def expectation(p):
    for line in p.stdout.splitlines():
        if line.startswith("{"):
            return json.loads(line)
    check(False, "no expectation line in %r" % p.stdout)
    return {}


def rows_of(out):
    rows = []
    for f in sorted(glob.glob(os.path.join(out, "counter_collection*.csv"))):
        with open(f, newline="") as fh:
            rows.extend(csv.DictReader(fh))
    return rows


def values(rows, kernel, metric):
    """{launch number: value} of one kernel's metric."""
    return {int(r["Launch"]): float(r["Counter_Value"]) for r in rows
            if kernel in r["Kernel_Name"] and r["Counter_Name"] == metric}


def profile_stats(out):
    """The per-kernel statistics of the profile (profile_gpu_counters.csv)."""
    with open(os.path.join(out, "profile_gpu_counters.csv"), newline="") as fh:
        return list(csv.DictReader(fh))


def metadata(out):
    with open(os.path.join(out, "metadata.json")) as fh:
        return json.load(fh)


INST = "smsp__inst_executed.sum"
TIME = "gpu__time_duration.sum"
# Throughput metrics combine many counters: these 8 need more than one pass.
EIGHT = [INST, "sm__throughput.avg.pct_of_peak_sustained_elapsed",
         "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
         "l1tex__throughput.avg.pct_of_peak_sustained_active",
         "lts__throughput.avg.pct_of_peak_sustained_elapsed",
         "dram__throughput.avg.pct_of_peak_sustained_elapsed",
         "sm__warps_active.avg.pct_of_peak_sustained_active",
         "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"]


def test_kernel_mode():
    out, p = measure("kernel", ["8"], ["--gpu-metrics", INST + "," + TIME])
    e = expectation(p)
    rows = rows_of(out)
    inst = values(rows, "fma_kernel", INST)
    check(sorted(inst) == list(range(1, e.get("fma_launches", 8) + 1)),
          "kernel mode: fma_kernel launches with values %s" % sorted(inst))
    check(len(set(inst.values())) == 1 and all(v > 0 for v in inst.values()),
          "kernel mode: smsp__inst_executed.sum differs between equal launches: %s" % inst)
    check(len(values(rows, "copy_kernel", INST)) == 3, "kernel mode: 3 copy_kernel launches")
    # A replayed kernel's record has no times: the trace gives it its launch
    # call's interval, which holds every replay, so gpu__time_duration.sum of
    # each launch lies within it (and is not zero).
    for r in rows:
        if "fma_kernel" in r["Kernel_Name"] and r["Counter_Name"] == TIME:
            traced = int(r["End_Timestamp"]) - int(r["Start_Timestamp"])
            check(0 < float(r["Counter_Value"]) <= traced,
                  "gpu__time_duration.sum %s ns outside the traced %d ns (launch %s)"
                  % (r["Counter_Value"], traced, r["Launch"]))
    with open(os.path.join(out, "profile_gpu.csv"), newline="") as fh:
        kernels = [r for r in csv.reader(fh) if any("fma_kernel" in c for c in r)]
    check(kernels, "kernel mode: the GPU summary has fma_kernel: %s" % kernels)
    m = metadata(out)
    check(m.get("metadata", {}).get("gpu_counter_passes") == "1",
          "2 metrics: passes %s" % m.get("metadata", {}).get("gpu_counter_passes"))
    stats = profile_stats(out)
    per_path = [r for r in stats if r["section"] == "path" and "fma_kernel" in r["kernel"]
                and r["metric"] == INST]
    check(len(per_path) == 1 and int(per_path[0]["values"]) == 8 and
          float(per_path[0]["stddev"]) == 0.0 and "cudaLaunchKernel" in per_path[0]["path"] and
          float(per_path[0]["mean"]) == inst.get(1),
          "profile_gpu_counters.csv for fma_kernel from its call path: %s" % per_path)
    with open(os.path.join(out, "profile.json")) as fh:
        kernels = json.load(fh)["gpu"]["counters"]["kernels"]
    k = [x for x in kernels if "fma_kernel" in x["kernel"] and x["metric"] == INST]
    check(len(k) == 1 and k[0]["values"] == 8 and k[0]["min"] == k[0]["max"] == inst.get(1),
          "profile.json's GPU counters for fma_kernel: %s" % k)
    with open(os.path.join(out, "profile.txt")) as fh:
        check("GPU counters per kernel and launching call path" in fh.read(),
              "profile.txt has the GPU counter section")
    check(any("GPU counters: kernel mode" in n for n in m.get("notes", [])),
          "the summary notes state the mode and passes: %s" % m.get("notes"))
    return inst.get(1)


def test_eight_metrics():
    out, p = measure("eight", ["4"], ["--gpu-metrics", ",".join(EIGHT)])
    rows = rows_of(out)
    m = metadata(out)
    check(int(m.get("metadata", {}).get("gpu_counter_passes", "0")) >= 2,
          "8 metrics: passes %s (expected 2 or more)" % m.get("metadata", {}).get("gpu_counter_passes"))
    print("8 metrics: %s hardware passes" % m.get("metadata", {}).get("gpu_counter_passes"))
    for metric in EIGHT:
        check(len(values(rows, "fma_kernel", metric)) == 4,
              "8 metrics: %s has %d of 4 launches" % (metric, len(values(rows, "fma_kernel", metric))))


def test_rotate():
    spec = os.path.join(WORK, "rotate.json")
    with open(spec, "w") as fh:
        json.dump({"jobs": [{"pmc_groups": [[INST], ["sm__cycles_elapsed.avg"]],
                             "pmc_group_interval": 2}]}, fh)
    out, p = measure("rotate", ["8"], ["--gpu-counter-mode", "rotate", "--gpu-metrics-file", spec])
    rows = [r for r in rows_of(out) if "fma_kernel" in r["Kernel_Name"]]
    got = {int(r["Launch"]): (int(r["Group"]), r["Counter_Name"], int(r["Launches_Covered"]))
           for r in rows}
    want = {n: ((n - 1) // 2 % 2, INST if (n - 1) // 2 % 2 == 0 else "sm__cycles_elapsed.avg", 2)
            for n in range(1, 9)}
    check(got == want, "rotate: launches -> (group, metric, covered) %s, expected %s" % (got, want))
    st = [r for r in profile_stats(out) if r["section"] == "kernel" and "fma_kernel" in r["kernel"]]
    cov = {r["metric"]: (int(r["values"]), int(r["launches"])) for r in st}
    check(cov == {INST: (4, 8), "sm__cycles_elapsed.avg": (4, 8)},
          "rotate: the profile's values and the launches they cover %s" % cov)
    return {n: float(r["Counter_Value"]) for n, r in
            ((int(r["Launch"]), r) for r in rows) if r["Counter_Name"] == INST}


def test_application(single):
    spec = os.path.join(WORK, "passes.txt")
    with open(spec, "w") as fh:
        fh.write("pmc: %s\npmc: sm__cycles_elapsed.avg %s\n" % (INST, TIME))
    out = os.path.join(WORK, "application")
    cmd = [PASSES, "--", LAUNCHER, "--output", out, "--gpu-counter-mode=application",
           "--gpu-metrics-file", spec, "--", APP, "8"]
    p = subprocess.run(cmd, env=env_clean(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=900)
    check(p.returncode == 0, "application: exit %d: %s" % (p.returncode, p.stderr))
    check(p.stdout.count("fma_launches") == 2, "application: the program ran twice")
    keep(out, "application")
    for k, metric in ((0, INST), (1, TIME)):
        vals = values(rows_of(os.path.join(out, "pass%d" % k)), "fma_kernel", metric)
        check(len(vals) == 8, "application pass %d: %d values of %s" % (k, len(vals), metric))
        if k == 0:
            check(set(vals.values()) == {single},
                  "application pass 0: inst_executed %s, kernel mode %s" % (set(vals.values()), single))
    merged = rows_of(out)
    for metric in (INST, "sm__cycles_elapsed.avg", TIME):
        check(len(values(merged, "fma_kernel", metric)) == 8,
              "application merged: %s for %d of 8 launches" % (metric, len(values(merged, "fma_kernel", metric))))
    check(set(values(merged, "fma_kernel", INST).values()) == {single},
          "application merged inst_executed equals the single-pass value")
    # The merged statistics: one computation with the profile's.
    st = [r for r in profile_stats(out) if r["section"] == "kernel" and "fma_kernel" in r["kernel"]]
    got = {r["metric"]: (int(r["values"]), float(r["min"]), float(r["max"])) for r in st}
    check(got.get(INST) == (8, single, single) and got.get(TIME, (0,))[0] == 8 and
          got.get("sm__cycles_elapsed.avg", (0,))[0] == 8,
          "application merged profile_gpu_counters.csv: %s" % got)
    # The launcher drives the passes itself when not under MPI.
    out2 = os.path.join(WORK, "application-self")
    p = subprocess.run([LAUNCHER, "--output", out2, "--gpu-counter-mode=application",
                        "--gpu-metrics-file", spec, "--", APP, "4"], env=env_clean(),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=900)
    check(p.returncode == 0 and len(values(rows_of(out2), "fma_kernel", TIME)) == 4,
          "application mode from the launcher alone: %s" % p.stderr)


def test_threads():
    """4 (and 8) host threads launching into one context at once
    (mt_counters): in kernel and rotate mode every launch has its values, thread t's grid is
    (t + 1) times thread 0's and so is its instruction count, the run ends
    (the subprocess timeout catches a hang) and the trace has every kernel."""
    spec = os.path.join(WORK, "rotate-mt.json")
    with open(spec, "w") as fh:
        json.dump({"jobs": [{"pmc_groups": [[INST], ["sm__cycles_elapsed.avg"]],
                             "pmc_group_interval": 3}]}, fh)
    kernel = ["--gpu-metrics", INST + "," + TIME]
    rotate = ["--gpu-counter-mode", "rotate", "--gpu-metrics-file", spec]
    # (name, mode, threads, launches each, sync every): the third never
    # synchronises before its end, so batches of 64 fill from 8 threads.
    for name, mode, threads, per, sync, extra in (("kernel", "kernel", 4, 24, 5, kernel),
                                                  ("rotate", "rotate", 4, 24, 5, rotate),
                                                  ("kernel-nosync", "kernel", 8, 40, 0, kernel)):
        out, p = measure("threads-" + name, [str(threads), str(per), str(sync)], extra, app=MT_APP)
        e = expectation(p)
        check(e.get("threads") == threads, "threads %s: the program did not finish: %s" % (name, e))
        base = e.get("base_grid", 256) * e.get("block", 256)
        rows = [r for r in rows_of(out) if "fma_kernel" in r["Kernel_Name"]]
        launches = {}  # correlation -> (grid, {metric: value})
        for r in rows:
            g, vals = launches.setdefault(r["Correlation_Id"], (int(r["Grid_Size"]), {}))
            vals[r["Counter_Name"]] = float(r["Counter_Value"])
        per_grid = {}
        for g, vals in launches.values():
            per_grid.setdefault(g, []).append(vals)
        check(sorted(per_grid) == [base * (t + 1) for t in range(threads)],
              "threads %s: grids with values %s" % (name, sorted(per_grid)))
        for g, launch_vals in sorted(per_grid.items()):
            check(len(launch_vals) == per, "threads %s: grid %d has %d of %d launches with values"
                  % (name, g, len(launch_vals), per))
        insts = {g: {v[INST] for v in lv if INST in v} for g, lv in per_grid.items()}
        unit = insts.get(base, set())
        check(len(unit) == 1, "threads %s: thread 0's equal launches differ: %s" % (name, unit))
        for g, vs in sorted(insts.items()):
            check(vs and unit and vs == {next(iter(unit)) * g // base},
                  "threads %s: grid %d instructions %s, expected %d x thread 0's %s"
                  % (name, g, vs, g // base, unit))
        if mode == "kernel":
            check(all(INST in v and TIME in v for lv in per_grid.values() for v in lv),
                  "threads %s: a launch lacks one of the 2 metrics" % name)
        else:
            # Every 3 launches of the kernel (counted over all threads) the
            # other group; a value stands for as many launches as there are
            # groups (2).
            turns = {}
            for r in rows:
                turns[r["Counter_Name"]] = turns.get(r["Counter_Name"], 0) + 1
            check(all(len(v) == 1 for lv in per_grid.values() for v in lv)
                  and all(int(r["Launches_Covered"]) == 2 for r in rows)
                  and turns == {INST: threads * per // 2, "sm__cycles_elapsed.avg": threads * per // 2},
                  "threads rotate: each launch one group's metric, covering 2 launches: %s" % turns)
        print("threads %s: %d launches with values, instructions per grid %s"
              % (name, len(launches), {g: sorted(v) for g, v in sorted(insts.items())}))
        if otf2:
            enters, last, broken = 0, {}, 0
            with otf2.reader.open(os.path.join(out, "traces.otf2")) as tr:
                for loc, ev in tr.events:
                    if ev.time < last.get(loc, 0):
                        broken += 1
                    last[loc] = ev.time
                    if isinstance(ev, otf2.events.Enter) and "fma_kernel" in ev.region.name:
                        enters += 1
            check(enters == threads * per and broken == 0,
                  "threads %s: trace has %d fma_kernel enters of %d, %d timestamps going back"
                  % (name, enters, threads * per, broken))


def test_nvml():
    out, p = measure("nvml", ["spin", "100", "20"], ["--sampling-interval", "50"])
    with open(os.path.join(out, "profile.json")) as fh:
        prof = json.load(fh)
    sampled = {m["name"]: m for m in prof.get("sampled_metrics", [])}
    power = sampled.get("NVIDIA GPU 0 power")
    energy = sampled.get("NVIDIA GPU 0 energy")
    check(power and power["per_rank"][0]["min"] > 0, "NVML power not positive: %s" % power)
    check(energy and energy["per_rank"][0]["samples"] >= 20 and
          energy["per_rank"][0]["max"] == energy["per_rank"][0]["last"] and
          energy["per_rank"][0]["last"] > 0,
          "NVML energy (from the run's start) must end at its largest value: %s" % energy)
    # Every GPU's energy has a series of its own, keyed by its name
    # ("NVIDIA GPU 1 energy"): on a host with two GPUs, one series made of
    # both went up and down.
    energies = sorted(n for n in sampled if n.startswith("NVIDIA GPU ") and n.endswith(" energy"))
    check(energies and energies[0] == "NVIDIA GPU 0 energy",
          "NVML energy per GPU in the summary: %s" % energies)
    if otf2:
        series = {}
        with otf2.reader.open(os.path.join(out, "traces.otf2")) as tr:
            for loc, ev in tr.events:
                name = str(ev.metric.member.name) if isinstance(ev, otf2.events.Metric) else ""
                if "energy" in name:
                    series.setdefault(name, []).append((ev.time, ev.value))
        check(sorted(series) == energies,
              "one energy series per GPU in the trace: %s, summary %s" % (sorted(series), energies))
        for name, points in sorted(series.items()):
            vals = [v for _, v in sorted(points)]
            check(vals and all(b >= a for a, b in zip(vals, vals[1:])),
                  "%s decreases: %s" % (name, vals))


def test_bad_metric():
    out, p = measure("bad", ["2"], ["--gpu-metrics", "smsp__inst_executd.sum"])
    lines = [l for l in p.stderr.splitlines() if "smsp__inst_executd.sum" in l]
    check(len(lines) == 1 and "nearest:" in lines[0] and "smsp__inst_executed" in lines[0],
          "bad metric: one line with the nearest names, got %s" % p.stderr)
    check("fma_launches" in p.stdout, "bad metric: the program ran on")


def test_collection_disabled():
    """This build checks the metrics but does not collect them (cupti_counters.c,
    SM_CUC_COLLECT): one line saying so, the trace and the program unharmed."""
    out, p = measure("disabled", ["8"], ["--gpu-metrics", INST + "," + TIME])
    lines = [l for l in p.stderr.splitlines() if "GPU counters" in l]
    check(len(lines) == 1 and "collection is disabled in this build" in lines[0],
          "valid metrics, collection disabled: one line, got %r" % p.stderr)
    check(expectation(p).get("fma_launches") == 8, "the program ran as usual")
    check(not rows_of(out), "no counter rows when collection is disabled")
    with open(os.path.join(out, "profile_gpu.csv"), newline="") as fh:
        kernels = [r for r in csv.reader(fh) if any("fma_kernel" in c for c in r)]
    check(kernels, "the GPU summary still has fma_kernel: %s" % kernels)


def test_graphs():
    """gpu_app captures 3 kernels into a CUDA graph (global capture mode) and
    launches it twice: counting must not invalidate the capture (a profiler
    call during it did: the program's EndCapture failed), the graph's kernels
    run outside the profiler's batches (not counted), the others are."""
    out, p = measure("graphs", [], ["--gpu-metrics", INST], app=GPU_APP)
    kernels = expectation(p).get("kernels", {})
    rows = rows_of(out)
    for name in ("scale_kernel", "add_kernel"):
        v = values(rows, name, INST)
        check(len(v) == kernels.get(name) and all(x > 0 for x in v.values()),
              "graphs: every %s launch counted (%d expected): %s" % (name, kernels.get(name, -1), v))
    check(not values(rows, "graph_kernel", INST), "graphs: the graph's kernels are not counted")


def main():
    single = None
    # Collection is on in this build (SM_CUC_COLLECT 1 in cupti_counters.c);
    # a build with it off is checked with SM_GPU_COUNTERS_COLLECT=0.
    collect = os.environ.get("SM_GPU_COUNTERS_COLLECT", "1") != "0"
    tests = (test_kernel_mode, test_eight_metrics, test_rotate, test_application,
             test_threads, test_graphs) if collect \
        else (test_collection_disabled,)
    for t in tests + (test_nvml, test_bad_metric):
        try:
            r = t(single) if t is test_application else t()
            if t is test_kernel_mode:
                single = r
        except Exception as e:  # one part's failure must not hide the others
            check(False, "%s raised %r" % (t.__name__, e))
    if failures:
        print("%d check(s) failed" % len(failures), file=sys.stderr)
        sys.exit(1)
    print("all checks passed")


if __name__ == "__main__":
    main()
