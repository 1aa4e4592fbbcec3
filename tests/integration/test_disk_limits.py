"""The disk space a run's trace takes (issue 27: a busy run with --crash-safe
wrote its trace twice over, crash-safe events and staged OTF2, until the
disk was full).

Each scenario runs tests/programs/disk-busy (threads, each "run" around
ITERATIONS x "outer" > "inner"; "run" stays open) under the launcher and
reads the output back:

- test_max_trace_size: --max-trace-size 8M stops the trace with one line
  on stderr; the output folder never takes more than 8 MiB; the archive is
  balanced (the regions open at the stop are left there, a MeasurementOnOff
  marks it) and read by otf2-print and the Python reader; the events in it
  and the events "not recorded" add up to the planted ones exactly; the
  profile has every planted visit; profile.txt, profile.json and
  metadata.json say when, why and how many.
- test_min_free_space: SYSMEASURE_MIN_FREE_SPACE on a small tmpfs: the
  trace stops before the free space falls below the floor, said once.
- test_crash_safe_bounded: --crash-safe with OTF2 encoding during the run:
  the staged archive stops at an eighth of the limit, so the files of the
  run never hold the trace twice over; the trace is complete.
- test_mpi_job: a 2-rank MPI job whose ranks both stop says it in one line
  (rank 0's), its archive is balanced and its note counts both ranks.
- test_rank_without_finalize: ranks that stop and then end without
  MPI_Finalize leave balanced events; sysmeasure-merge's summary says it.
- test_bad_free_space: a share of 100% or more is refused in one line.
"""
import os
import re
import subprocess
import threading
import time

import otf2
import smtest
from smtest import (BUILD, LAUNCHER, MPIRUN, Trace, callpath, check, check_trace_consistent,
                    clean_env, load_json, mpi_env, program, workdir)

PROG = program("disk-busy")
MiB = 1 << 20


def disk_usage(path):
    """Bytes the files under path take on disk (what a full disk counts)."""
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_blocks * 512
            except OSError:
                pass  # gone meanwhile (moved into the archive, removed)
    return total


def run_watching(args, out, env=None, launcher_args=(), sample=None, period=0.004):
    """Runs args under the launcher into out; sample() is called every
    period seconds while it runs.  Returns (returncode, stdout, stderr)."""
    cmd = [LAUNCHER, "--output", out] + list(launcher_args) + ["--"] + list(args)
    proc = subprocess.Popen(cmd, env=clean_env(env), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    result = {}
    reader = threading.Thread(target=lambda: result.update(
        zip(("out", "err"), proc.communicate(timeout=120))))
    reader.start()
    while proc.poll() is None:
        if sample:
            sample()
        time.sleep(period)
    reader.join()
    return proc.returncode, result.get("out", ""), result.get("err", "")


EVENT = re.compile(r'^([A-Z_]+)\s+(\d+)\s+(\d+)(?:\s+(.*))?$')
REGION = re.compile(r'Region: "([^"]*)"')


def archive_events(out, what):
    """The archive through otf2-print: per location {kind: count}, and
    whether each location is balanced and in time order (checked here).
    'synthetic' counts the leaves that close the regions open where the
    trace stopped: at the time of the MeasurementOnOff that follows them."""
    p = subprocess.run(["otf2-print", os.path.join(out, "traces.otf2")],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(p.returncode == 0, "%s: otf2-print reads the archive: %s" % (what, p.stderr[-300:]))
    locs = {}
    for line in p.stdout.splitlines():
        m = EVENT.match(line)
        if not m:
            continue
        kind, loc, t = m.group(1), int(m.group(2)), int(m.group(3))
        st = locs.setdefault(loc, {"counts": {}, "stack": [], "last": 0, "leaves_at": [],
                                   "synthetic": 0, "bad": [], "last_kind": None,
                                   "closed_at_stop": []})
        st["counts"][kind] = st["counts"].get(kind, 0) + 1
        if t < st["last"]:
            st["bad"].append("time goes back at %d" % t)
        st["last"] = t
        region = REGION.search(m.group(4) or "")
        if kind == "ENTER":
            st["stack"].append(region.group(1))
        elif kind == "LEAVE":
            name = region.group(1)
            if not st["stack"] or st["stack"][-1] != name:
                st["bad"].append("leave of %s closes %s" % (name, st["stack"][-1:]))
            else:
                st["stack"].pop()
            st["leaves_at"] = (st["leaves_at"] + [(t, name)]) if st["last_kind"] == "LEAVE" \
                else [(t, name)]
        elif kind == "MEASUREMENT_ON_OFF":
            closing = [n for (lt, n) in st["leaves_at"] if lt == t] \
                if st["last_kind"] == "LEAVE" else []
            st["synthetic"] += len(closing)
            st["closed_at_stop"] = closing
        st["last_kind"] = kind
    for loc, st in locs.items():
        check(not st["bad"], "%s: location %d out of order: %s" % (what, loc, st["bad"][:3]))
        check(not st["stack"], "%s: regions left open on location %d: %s"
              % (what, loc, st["stack"]))
    return locs


def python_reader_count(out):
    n = 0
    with otf2.reader.open(os.path.join(out, "traces.otf2")) as trace:
        for _ in trace.events:
            n += 1
    return n


def stop_lines(stderr):
    return [l for l in stderr.splitlines() if "trace stopped" in l]


def check_profile_complete(out, what, threads, iterations):
    profile = load_json(out, "profile.json")
    for path, planted in ((("run",), threads), (("run", "outer"), threads * iterations),
                          (("run", "outer", "inner"), threads * iterations)):
        cp = callpath(profile, *path)
        visits = sum(t["visits"] for t in cp["per_thread"]) if cp else 0
        check(visits == planted, "%s: the profile has %s visited %d times, planted %d"
              % (what, " > ".join(path), visits, planted))
    return profile


def check_summaries(out, what, reason):
    """The note in profile.txt and metadata.json, the object in profile.json
    and metadata.json; returns the events not recorded."""
    text = open(os.path.join(out, "profile.txt")).read()
    notes = [l for l in text.splitlines() if "trace stopped at" in l]
    check(len(notes) == 1 and reason in notes[0] and "events not recorded" in notes[0],
          "%s: profile.txt says when, why and how many: %s" % (what, notes))
    meta = load_json(out, "metadata.json")
    check(any("trace stopped at" in n and reason in n for n in meta.get("notes", [])),
          "%s: metadata.json's notes say it: %s" % (what, meta.get("notes")))
    stopped = meta.get("trace_stopped") or {}
    check(reason in stopped.get("reason", "") and stopped.get("ranks") == 1 and
          stopped.get("at_s", -1) >= 0, "%s: metadata.json trace_stopped: %s" % (what, stopped))
    pj = load_json(out, "profile.json").get("trace_stopped") or {}
    check(pj == stopped, "%s: profile.json says the same: %s" % (what, pj))
    n = stopped.get("events_not_recorded", -1)
    check(n > 0 and bool(notes) and ("%d events not recorded" % n) in notes[0],
          "%s: the note counts %d events not recorded" % (what, n))
    return n


def test_max_trace_size():
    what = "--max-trace-size 8M"
    threads, iterations = 2, 300000
    out = os.path.join(workdir("disk-max"), "out")
    peak = [0]

    def sample():
        peak[0] = max(peak[0], disk_usage(out))

    rc, stdout, stderr = run_watching([PROG, str(threads), str(iterations), "0"], out,
                                      env={"SYSMEASURE_BUFFER_SIZE": "1M"},
                                      launcher_args=["--max-trace-size", "8M"], sample=sample)
    check(rc == 0 and stdout.startswith("done "), "%s: the program's exit and output kept: %d %r"
          % (what, rc, stdout))
    lines = stop_lines(stderr)
    check(len(lines) == 1 and "SYSMEASURE_MAX_TRACE_SIZE" in lines[0],
          "%s: one line says the trace stopped and why: %r" % (what, stderr))
    check(len(stderr.splitlines()) <= 2, "%s: nothing else but the closing line: %r"
          % (what, stderr))
    check(0 < peak[0] <= 8 * MiB, "%s: the output folder took at most 8 MiB while the run "
          "lasted and ended: %.1f MiB" % (what, peak[0] / MiB))
    check(not os.path.exists(os.path.join(out, ".spill")), "%s: no spill files left" % what)

    locs = archive_events(out, what)
    workers = [l for l in locs if l != 0]
    check(len(workers) == threads, "%s: %d worker locations in the archive: %s"
          % (what, threads, sorted(locs)))
    recorded = 0
    for loc in workers:
        c = locs[loc]["counts"]
        check(c.get("MEASUREMENT_ON_OFF") == 1, "%s: location %d marks where its trace ends: %s"
              % (what, loc, c))
        check("run" in locs[loc]["closed_at_stop"], "%s: location %d: 'run', open at the stop, "
              "is left there: %s" % (what, loc, locs[loc]["closed_at_stop"]))
        recorded += (c.get("ENTER", 0) + c.get("LEAVE", 0) - locs[loc]["synthetic"] +
                     c.get("THREAD_BEGIN", 0) + c.get("THREAD_END", 0))
    total = sum(sum(st["counts"].values()) for st in locs.values())
    check(python_reader_count(out) == total, "%s: the Python reader reads all %d events"
          % (what, total))
    not_recorded = check_summaries(out, what, "SYSMEASURE_MAX_TRACE_SIZE")
    # Each thread: enter and leave of "run", 2 x 2 per iteration, its begin
    # and end.  What the trace holds and what was counted add up exactly.
    planted = threads * (4 * iterations + 4)
    check(recorded + not_recorded == planted, "%s: %d events recorded + %d not recorded = %d, "
          "planted %d" % (what, recorded, not_recorded, recorded + not_recorded, planted))
    check_profile_complete(out, what, threads, iterations)


def test_min_free_space():
    what = "SYSMEASURE_MIN_FREE_SPACE on a small file system"
    threads, iterations = 2, 400000
    mnt = workdir("disk-tmpfs")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", mnt],
                             stderr=subprocess.DEVNULL).returncode == 0
    try:
        st = os.statvfs(mnt)
        if mounted:
            floor, floor_text = st.f_blocks * st.f_frsize // 2, "50%"
        else:
            # No mount here: a floor 24 MiB below the free space of the
            # test's own file system (shared: only the stop is checked).
            print("tmpfs cannot be mounted here: the floor is set below the free space of %s"
                  % mnt)
            floor = st.f_bavail * st.f_frsize - 24 * MiB
            floor_text = str(floor)
        out = os.path.join(mnt, "out")
        low = [1 << 62]

        def sample():
            s = os.statvfs(mnt)
            low[0] = min(low[0], s.f_bavail * s.f_frsize)

        rc, stdout, stderr = run_watching(
            [PROG, str(threads), str(iterations), "0"], out, sample=sample, period=0.002,
            env={"SYSMEASURE_BUFFER_SIZE": "1M", "SYSMEASURE_MIN_FREE_SPACE": floor_text})
        check(rc == 0 and stdout.startswith("done "), "%s: the program's exit and output kept: "
              "%d %r" % (what, rc, stdout))
        lines = stop_lines(stderr)
        check(len(lines) == 1 and "SYSMEASURE_MIN_FREE_SPACE" in lines[0] and mnt in lines[0],
              "%s: one line says the trace stopped, where and why: %r" % (what, stderr))
        if mounted:
            check(low[0] >= floor, "%s: the free space never fell below the floor: %.1f MiB, "
                  "floor %.1f MiB" % (what, low[0] / MiB, floor / MiB))
        locs = archive_events(out, what)
        check(all(locs[l]["counts"].get("MEASUREMENT_ON_OFF") == 1 for l in locs if l != 0),
              "%s: every worker's trace ends where it stopped" % what)
        check_summaries(out, what, "SYSMEASURE_MIN_FREE_SPACE")
        check_profile_complete(out, what, threads, iterations)
    finally:
        if mounted:
            subprocess.run(["umount", mnt])


def test_crash_safe_bounded():
    what = "--crash-safe with OTF2 encoding during the run"
    iterations = 1000000
    limit = 192 * MiB
    out = os.path.join(workdir("disk-crash"), "out")
    spill = os.path.join(out, ".spill")
    seen = {"events": 0, "staged": 0, "run_total": 0, "total": 0, "samples": 0}

    def sample():
        seen["total"] = max(seen["total"], disk_usage(out))
        # While the program runs: before the end of the run makes the
        # archive (traces/) or its encoders' folders (otf2-end-*).
        try:
            names = os.listdir(spill)
        except OSError:
            return
        if os.path.exists(os.path.join(out, "traces")) or \
                any(n.startswith("otf2-end") for n in names):
            return
        events = staged = 0
        for n in names:
            path = os.path.join(spill, n)
            if n.endswith(".events"):
                try:
                    events += os.lstat(path).st_blocks * 512
                except OSError:
                    pass
            elif n.startswith("otf2-"):
                staged += disk_usage(path)
        seen["events"] = max(seen["events"], events)
        seen["staged"] = max(seen["staged"], staged)
        seen["run_total"] = max(seen["run_total"], events + staged)
        seen["samples"] += 1

    rc, stdout, stderr = run_watching(
        [PROG, "0", str(iterations), "30"], out, sample=sample,
        env={"SYSMEASURE_BUFFER_SIZE": "16M", "SYSMEASURE_OTF2_BACKGROUND": "yes"},
        launcher_args=["--crash-safe", "--max-trace-size", str(limit)])
    check(rc == 0 and stdout.startswith("done "), "%s: the program's exit and output kept: %d %r"
          % (what, rc, stdout))
    check(not stop_lines(stderr), "%s: the trace did not stop: %r" % (what, stderr))
    check(seen["samples"] >= 5 and seen["events"] >= 40 * MiB,
          "%s: the run was watched (%d samples, crash-safe file %.1f MiB)"
          % (what, seen["samples"], seen["events"] / MiB))
    # The copy: the staged archive stops at an eighth of the limit (24 MiB),
    # give or take the 4 MiB chunk it was writing.
    check(seen["staged"] <= limit // 8 + 8 * MiB, "%s: the staged OTF2 files took at most "
          "%.1f MiB beside the crash-safe file: %.1f MiB" % (what, (limit // 8 + 8 * MiB) / MiB,
                                                           seen["staged"] / MiB))
    check(seen["run_total"] <= 1.5 * seen["events"], "%s: not the trace twice over: %.1f MiB "
          "for %.1f MiB of crash-safe events" % (what, seen["run_total"] / MiB,
                                                 seen["events"] / MiB))
    check(seen["total"] <= limit, "%s: the output folder stayed below the limit, its end "
          "included: %.1f MiB" % (what, seen["total"] / MiB))
    check(not os.path.exists(spill), "%s: the crash-safe files are removed at the end" % what)
    # 4 million events: counted by otf2-print and awk (the other scenarios
    # check the order in Python).
    p = subprocess.run("otf2-print %s | awk '$1 == \"ENTER\" || $1 == \"LEAVE\" || "
                       "$1 == \"MEASUREMENT_ON_OFF\" {n[$1]++} END {print n[\"ENTER\"] + 0, "
                       "n[\"LEAVE\"] + 0, n[\"MEASUREMENT_ON_OFF\"] + 0}'"
                       % os.path.join(out, "traces.otf2"), shell=True, stdout=subprocess.PIPE,
                       text=True)
    planted = 2 * iterations + 1
    check(p.stdout.split() == [str(planted), str(planted), "0"],
          "%s: the whole trace is in the archive (enters, leaves, stops): %s, planted %d"
          % (what, p.stdout.split(), planted))
    check(load_json(out, "metadata.json").get("trace_stopped", 0) is None,
          "%s: metadata.json says the trace did not stop" % what)
    check_profile_complete(out, what, 1, iterations)


def mpi_run(args, out, env):
    cmd = [MPIRUN, "-np", "2", "--oversubscribe", LAUNCHER, "--output", out,
           "--max-trace-size", "6M", "--"] + args
    return subprocess.run(cmd, env=clean_env(mpi_env(env)), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=120)


def test_mpi_job():
    what = "2 MPI ranks"
    rounds = 100000
    out = os.path.join(workdir("disk-mpi"), "out")
    p = mpi_run([program("mpi-stream"), str(rounds)], out, {"SYSMEASURE_BUFFER_SIZE": "1M"})
    check(p.returncode == 0, "%s: the job's exit kept: %d %s" % (what, p.returncode, p.stderr))
    lines = stop_lines(p.stderr)
    check(len(lines) == 1, "%s: one line for the job: %r" % (what, p.stderr))
    visits = check_trace_consistent(Trace(out))
    check(0 < visits.get("round", 0) < 2 * rounds, "%s: the trace holds a part of the rounds: "
          "%s" % (what, visits.get("round")))
    meta = load_json(out, "metadata.json")
    stopped = meta.get("trace_stopped") or {}
    check(stopped.get("ranks") == 2 and stopped.get("events_not_recorded", 0) > 0,
          "%s: both ranks stopped, counted: %s" % (what, stopped))
    check(any("in 2 of 2 ranks" in n for n in meta.get("notes", [])),
          "%s: the note says how many ranks: %s" % (what, meta.get("notes")))
    cp = callpath(load_json(out, "profile.json"), "round")
    check(cp is not None and sum(t["visits"] for t in cp["per_thread"]) == 2 * rounds,
          "%s: the profile has every round: %s" % (what, cp and cp["per_thread"]))


def test_rank_without_finalize():
    what = "ranks ending without MPI_Finalize"
    pairs = 300000
    out = os.path.join(workdir("disk-alone"), "out")
    mpi_run([program("spill-stress-mpi"), "mpi", str(pairs)], out,
            {"SYSMEASURE_BUFFER_SIZE": "1M"})
    p = subprocess.run([os.path.join(BUILD, "sysmeasure-merge"), out], env=clean_env(),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    check(p.returncode == 0 and "2 of 2 ranks merged" in p.stderr,
          "%s: sysmeasure-merge merges both: %s" % (what, p.stderr))
    visits = check_trace_consistent(Trace(out))
    check(0 < visits.get("rank-work", 0) < 2 * pairs, "%s: the archive holds a part of the "
          "work, balanced: %s" % (what, visits.get("rank-work")))
    text = open(os.path.join(out, "profile.txt")).read()
    check("trace stopped at" in text and "SYSMEASURE_MAX_TRACE_SIZE" in text and
          "in 2 ranks" in text, "%s: the merged summary says the trace stopped" % what)


def test_bad_free_space():
    out = os.path.join(workdir("disk-bad"), "out")
    for env, opts in (({"SYSMEASURE_MIN_FREE_SPACE": "150%"}, []),
                      ({}, ["--min-free-space", "5 percent"])):
        p = subprocess.run([LAUNCHER, "--output", out] + opts + ["--", PROG, "0", "10", "0"],
                           env=clean_env(env), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        lines = p.stderr.splitlines()
        check(p.returncode != 0 and p.stdout == "" and len(lines) == 1 and
              "MIN_FREE_SPACE" in lines[0].upper().replace("-", "_") and "5%" in lines[0],
              "bad free space %s%s: one line naming it and what it takes: %d %r"
              % (env, opts, p.returncode, p.stderr))


if __name__ == "__main__":
    for test in (test_max_trace_size, test_min_free_space, test_crash_safe_bounded, test_mpi_job,
                 test_rank_without_finalize, test_bad_free_space):
        began = time.time()
        test()
        print("%s: %.1f s" % (test.__name__, time.time() - began))
    smtest.finish()
