"""PAPI counters per call path, with software-defined events (this machine
has no hardware counter unit): tests/programs/papi_sde.c registers
SMTEST::WORK and SMTEST::BYTES with libsde and adds known amounts inside
known regions on two threads.  Checked: exact inclusive and exclusive values
per call path and thread in profile.json, profile.csv and profile.txt, the
spreads across threads and ranks, the archive's metric definitions and the
values recorded with every enter and leave; then the error paths (an event
the program cannot count, with and without --papi-optional)."""
import csv
import os
import shutil
import subprocess
import sys

import otf2
import smtest
from smtest import (BUILD, Trace, callpath, check, check_messages, check_trace_consistent,
                    finish, load_json, measure, mpi_measure, program)

WORK, BYTES = "sde:::SMTEST::WORK", "sde:::SMTEST::BYTES"


# On thread k (main 0, pthread 1), f = k + 1: outer adds 10f WORK, then inner
# three times adds 2f WORK and 100 BYTES.
def expected(f):
    return {("outer",): {WORK: (16 * f, 10 * f), BYTES: (300, 0)},
            ("outer", "inner"): {WORK: (6 * f, 6 * f), BYTES: (300, 300)}}


@smtest.fixture
def counted():
    """The program on two threads counting WORK and BYTES: (out, proc)."""
    return measure([program("papi-sde")], "papi", launcher_args=["--papi", WORK + "," + BYTES])


def test_program_output():
    out, proc = counted()
    check("WORK=48 BYTES=600" in proc.stdout, "the program's own output: %r" % proc.stdout)
    profile = load_json(out, "profile.json")
    check(profile.get("papi_events") == [WORK, BYTES], "papi_events: %s" % profile.get("papi_events"))


def test_callpaths():
    profile = load_json(counted()[0], "profile.json")
    for path, visits in ((("outer",), 1), (("outer", "inner"), 3)):
        cp = callpath(profile, *path)
        if not check(cp is not None, "%s in the profile" % " > ".join(path)):
            continue
        threads = {t["member"]: t for t in cp["per_thread"]}
        check(sorted(threads) == [0, 1], "%s on both threads: %s" % (path, sorted(threads)))
        for member, t in threads.items():
            want = expected(member + 1)[path]
            check(t["visits"] == visits, "%s thread %d: %d visits" % (path, member, t["visits"]))
            for ev, (incl, excl) in want.items():
                c = t.get("counters", {}).get(ev)
                if not check(c is not None, "%s thread %d has %s" % (path, member, ev)):
                    continue
                check(c["inclusive"]["sum"] == incl and c["exclusive"]["sum"] == excl,
                      "%s thread %d %s: inclusive %s exclusive %s, planted %d / %d" %
                      (path, member, ev, c["inclusive"]["sum"], c["exclusive"]["sum"], incl, excl))
                per_visit = incl // visits
                check(c["inclusive"]["min"] == per_visit and c["inclusive"]["max"] == per_visit and
                      c["inclusive"]["stddev"] == 0,
                      "%s thread %d %s: every visit counts %d: %s" % (path, member, ev, per_visit,
                                                                      c["inclusive"]))
        across = cp["across_threads"]["counters"][WORK]["inclusive"]
        lo, hi = expected(1)[path][WORK][0], expected(2)[path][WORK][0]
        check(across["min"] == lo and across["min_thread"] == 0 and across["max"] == hi and
              across["max_thread"] == 1 and across["mean"] == (lo + hi) / 2 and
              abs(across["stddev"] - (hi - lo) / 2) < 1e-9,
              "%s WORK across threads: min %d on 0, max %d on 1: %s" % (path, lo, hi, across))
        rank = cp["per_rank"][0]["counters"][WORK]
        check(rank == {"inclusive": lo + hi, "exclusive": expected(1)[path][WORK][1] +
                       expected(2)[path][WORK][1]}, "%s WORK of rank 0 (sum of threads): %s" % (path, rank))
        check(cp["across_ranks"]["counters"][BYTES]["inclusive"]["max"] == 600,
              "%s BYTES across ranks: %s" % (path, cp["across_ranks"]["counters"][BYTES]))


# ---- profile.csv: one incl/excl column pair per event
def test_profile_csv():
    out = counted()[0]
    with open(os.path.join(out, "profile.csv")) as f:
        rows = list(csv.DictReader(f))
    outer_rows = {r["thread"]: r for r in rows if r["path"] == "outer"}
    check(outer_rows.get("1", {}).get(WORK + " incl") == "32" and
          outer_rows.get("1", {}).get(WORK + " excl") == "20",
          "profile.csv outer thread 1 WORK 32 / 20: %s" % outer_rows.get("1"))


# ---- profile.txt: the events in the header and a row per event
def test_profile_text():
    out = counted()[0]
    text = open(os.path.join(out, "profile.txt")).read()
    check("PAPI events : %s, %s" % (WORK, BYTES) in text, "profile.txt names the events")
    rows = [l for l in text.splitlines() if "|1>>> outer" in l and WORK in l]
    cells = [c.strip() for c in rows[0].split("|")] if rows else []
    check(len(rows) == 1 and cells[6:8] == ["events", "32"] and cells[-3] == "62.5",
          "profile.txt row of outer / WORK on thread 1: %s" % rows)


# ---- the archive: metric members and a strictly synchronous class; values
# before every enter and leave, at the same time
def test_archive_metric_class():
    out = counted()[0]
    trace = Trace(out)
    check_trace_consistent(trace)
    classes = [c for c in trace.definitions.metric_classes
               if [m.name for m in c.members] == [WORK, BYTES]]
    if check(len(classes) == 1, "one metric class of both events: %s" %
             [[m.name for m in c.members] for c in trace.definitions.metric_classes]):
        cls = classes[0]
        check(cls.occurrence == otf2.MetricOccurrence.SYNCHRONOUS_STRICT,
              "the class is strictly synchronous: %s" % cls.occurrence)
        for m in cls.members:
            check(m.metric_type == otf2.MetricType.PAPI and
                  m.metric_mode == otf2.MetricMode.ACCUMULATED_START,
                  "%s: a PAPI counter accumulated from the start: %s %s" % (m.name, m.metric_type,
                                                                          m.metric_mode))


def test_archive_values():
    trace = Trace(counted()[0])
    for loc, events in trace.events.items():
        f = 1 if "main" in loc.name else 2
        regions = [e for e in events if isinstance(e, (otf2.events.Enter, otf2.events.Leave))]
        if not regions:
            continue
        paired = 0
        work_at = {}
        for prev, e in zip(events, events[1:]):
            if isinstance(e, (otf2.events.Enter, otf2.events.Leave)):
                if check(isinstance(prev, otf2.events.Metric) and prev.time == e.time,
                         "%s: a metric right before %s %s at the same time" %
                         (loc.name, type(e).__name__, e.region.name)):
                    paired += 1
                    work_at[(type(e).__name__, e.region.name, len(work_at))] = prev.values[0]
        check(paired == len(regions), "%s: %d of %d enters/leaves with counters" %
              (loc.name, paired, len(regions)))
        seq = [v for _, v in sorted(work_at.items(), key=lambda kv: kv[0][2])]
        # enter outer 0, enter inner 10f, leave inner 12f, ... leave outer 16f
        want = [0, 10 * f, 12 * f, 12 * f, 14 * f, 14 * f, 16 * f, 16 * f]
        check(seq == want, "%s: WORK at each enter/leave %s, planted %s" % (loc.name, seq, want))


def test_otf2_print():
    out = counted()[0]
    tool = shutil.which("otf2-print")
    if not tool:
        smtest.skip("no otf2-print")
    p = subprocess.run([tool, os.path.join(out, "traces.otf2")], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    check(p.returncode == 0 and not p.stderr.strip(), "otf2-print reads it cleanly: %s" % p.stderr)


# ---- a software-defined event of a library the program does not have:
# one line naming it, the program's own exit code and output kept
def test_missing_event():
    out, proc = measure([program("sleep-regions")], "papi-missing",
                        launcher_args=["--papi", "sde:::NOLIB::X"])
    errs = [l for l in proc.stderr.splitlines() if "sde:::NOLIB::X" in l]
    check(len(errs) == 1 and "cannot be counted" in errs[0],
          "one line names the event that cannot be counted: %r" % proc.stderr)
    check("20ms" in proc.stdout or proc.returncode == 0, "the program ran to its end")
    check(load_json(out, "profile.json").get("papi_events") == [], "no events counted")


# ... with --papi-optional: the others are counted, the summary names the
# dropped one.  (In a program linked with libsde any sde::: name can be added,
# since its library may register it later: so an unknown native event here.)
def test_papi_optional():
    prog = program("papi-sde")
    BAD = "perf::NO-SUCH-EVENT"
    out, proc = measure([prog], "papi-optional",
                        launcher_args=["--papi", WORK + "," + BAD, "--papi-optional"])
    check(BAD in proc.stderr, "a warning names the dropped event: %r" % proc.stderr)
    profile = load_json(out, "profile.json")
    check(profile.get("papi_events") == [WORK], "WORK still counted: %s" % profile.get("papi_events"))
    cp = callpath(profile, "outer")
    check(cp is not None and cp["per_thread"][0]["counters"][WORK]["inclusive"]["sum"] == 16,
          "outer WORK on the main thread is 16 with the other event dropped")
    text = open(os.path.join(out, "profile.txt")).read()
    check("PAPI events not counted (this process cannot count them): " + BAD in text,
          "profile.txt names the dropped event")
    notes = load_json(out, "metadata.json").get("notes", [])
    check(any(BAD in n for n in notes), "metadata.json notes name it: %s" % notes)


# ---- across MPI ranks: rank r adds 7(r+1) WORK in "work", 5 times; the
# same after a job without MPI_Finalize, through sysmeasure-merge
def check_ranks(out, what):
    profile = load_json(out, "profile.json")
    cp = callpath(profile, "work")
    if not check(cp is not None, "%s: work in the profile" % what):
        return
    per_rank = {r["rank"]: r["counters"][WORK] for r in cp["per_rank"]}
    check(per_rank == {0: {"inclusive": 35, "exclusive": 35}, 1: {"inclusive": 70, "exclusive": 70}},
          "%s: WORK per rank 35 / 70: %s" % (what, per_rank))
    across = cp["across_ranks"]["counters"][WORK]["inclusive"]
    check(across["min"] == 35 and across["min_rank"] == 0 and across["max"] == 70 and
          across["max_rank"] == 1, "%s: WORK across ranks: %s" % (what, across))
    trace = Trace(out)
    check_trace_consistent(trace)
    check(check_messages(trace, 2) == 2, "%s: the ring's 2 messages matched" % what)
    for loc, events in trace.events.items():
        works = [e for e in events if isinstance(e, otf2.events.Enter) and e.region.name == "work"]
        if not works:
            continue
        before = [prev for prev, e in zip(events, events[1:])
                  if isinstance(e, (otf2.events.Enter, otf2.events.Leave)) and e.region.name == "work"]
        ok = all(isinstance(m, otf2.events.Metric) for m in before)
        vals = [m.values[0] for m in before] if ok else []
        step = vals[1] - vals[0] if len(vals) > 1 else None
        check(ok and len(vals) == 10 and step in (7, 14) and
              all(vals[2 * i + 1] - vals[2 * i] == step for i in range(5)),
              "%s %s: WORK before each enter/leave of work: %s" % (what, loc.name, vals))


def mpi_program():
    if not os.path.exists(os.path.join(BUILD, "tests/programs/papi-sde-mpi")):
        smtest.skip("no tests/programs/papi-sde-mpi in this build")
    return program("papi-sde-mpi")


def test_mpi_ranks():
    mprog = mpi_program()
    out, proc = mpi_measure(2, [mprog], "papi-mpi", launcher_args=["--papi", WORK])
    check("rank 1 WORK=70" in proc.stdout, "the ranks' own output: %r" % proc.stdout)
    check_ranks(out, "2 ranks")


def test_mpi_merged():
    mprog = mpi_program()
    out, proc = mpi_measure(2, [mprog, "nofinalize"], "papi-mpi-nofin",
                            launcher_args=["--papi", WORK], expect_rc=None)
    merge = subprocess.run([os.path.join(BUILD, "sysmeasure-merge"), out], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    check(merge.returncode == 0, "sysmeasure-merge of the counting job: %s" % merge.stderr)
    check_ranks(out, "merged")


if __name__ == "__main__":
    if os.environ.get("SM_HAVE_PAPI") == "without":
        print("built --without-papi")
        sys.exit(77)
    if not check(os.environ.get("SM_HAVE_PAPI") == "yes",
                 "sysmeasure is built with PAPI (apt-get install libpapi-dev)"):
        finish()
    smtest.run_cases(globals())
