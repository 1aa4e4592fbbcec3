"""The job's profile reduced up a tree, per-rank rows written by the ranks:
mpi-ranks on 8 ranks (tests/programs/mpi_ranks.c), rank 5 three times as
long in "work" as the others, r + 1 ints sent per step by rank r, and
(in the large job) 8 threads per rank, thread t entering "helper" t + 1
times: 72 threads and more, beyond the 64 whose per-thread rows profile.txt
and profile.json keep.  Checked: profile.txt and profile.json name rank 5
as the slowest of "work"; the statistics across ranks and threads equal a
direct computation from profile-ranks.csv; profile-ranks.csv has a row per
rank and path with the planted counts; the same after the job is left
without MPI_Finalize and sysmeasure-merge writes the folder."""
import csv
import math
import os
import subprocess
import sys

import smtest
from smtest import BUILD, check, load_json, mpi_measure, program

if os.environ.get("SM_HAVE_MPI", "yes") != "yes":
    print("built without MPI")
    sys.exit(77)

RANKS = 8
SLOW = 5
THREADS = 8
MERGE = os.path.join(BUILD, "sysmeasure-merge")
GRACE = {"OMPI_MCA_odls_base_sigkill_timeout": "5"}


def job(name, threads, mode=None, **kw):
    args = [program("mpi-ranks"), str(threads), str(SLOW)] + ([mode] if mode else [])
    return mpi_measure(RANKS, args, name, **kw)


@smtest.fixture
def small():
    out, proc = job("scale-small", 0)
    return out


@smtest.fixture
def large():
    out, proc = job("scale-large", THREADS)
    return out


@smtest.fixture
def merged():
    out, proc = job("scale-merged", THREADS, "nofinalize", expect_rc=None, env=GRACE)
    m = subprocess.run([MERGE, out], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(m.returncode == 0 and "%d of %d ranks merged" % (RANKS, RANKS) in m.stderr,
          "sysmeasure-merge merges every rank: %s" % m.stderr)
    return out


def ranks_csv(out):
    with open(os.path.join(out, "profile-ranks.csv"), newline="") as f:
        return list(csv.DictReader(f))


def per_rank(rows, path):
    """{rank: {"visits", "incl", "excl", "sent", "threads"}} summed over the
    rank's threads on path (the threads that visited it counted)."""
    out = {}
    for r in rows:
        if r["path"] != path:
            continue
        t = out.setdefault(int(r["rank"]), {"visits": 0, "incl": 0, "excl": 0, "sent": 0,
                                             "threads": 0})
        t["visits"] += int(r["visits"])
        t["incl"] += int(r["incl_ns"])
        t["excl"] += int(r["excl_ns"])
        t["sent"] += int(r["bytes_sent"])
        t["threads"] += int(r["visits"]) > 0
    return {k: v for k, v in out.items() if v["threads"]}


def spread(values):
    """{who: value} -> n, mean, min, who of min, max, who of max (lowest on a
    tie), population stddev."""
    n = len(values)
    mean = sum(values.values()) / n
    lo = min(values.values())
    hi = max(values.values())
    var = sum((v - mean) ** 2 for v in values.values()) / n
    return {"n": n, "mean": mean, "min": lo, "max": hi, "stddev": math.sqrt(var),
            "min_who": min(k for k, v in values.items() if v == lo),
            "max_who": min(k for k, v in values.items() if v == hi)}


def callpath(prof, path):
    for c in prof["callpaths"]:
        if " > ".join(c["path"]) == path:
            return c
    return None


def near(a, b, rel=1e-9):
    return abs(a - b) <= rel * max(abs(a), abs(b), 1.0)


def check_stats(out, what):
    """profile.json's spreads across ranks (and threads) against the rows."""
    rows, prof = ranks_csv(out), load_json(out, "profile.json")
    for path, value in (("work", "incl"), ("work", "excl"), ("exchange", "incl"),
                        ("exchange > MPI_Send", "incl"), ("helper", "incl"),
                        ("exchange > MPI_Send", "sent"), ("work", "visits")):
        sums = per_rank(rows, path)
        cp = callpath(prof, path)
        if not check(sums and cp, "%s: %s in profile-ranks.csv and profile.json" % (what, path)):
            continue
        want = spread({r: v[value] for r, v in sums.items()})
        key = {"incl": "inclusive", "excl": "exclusive", "sent": "bytes_sent",
               "visits": "visits"}[value]
        got = cp["across_ranks"][key]
        check(cp["across_ranks"]["ranks"] == want["n"] and got["min"] == want["min"] and
              got["max"] == want["max"] and got["min_rank"] == want["min_who"] and
              got["max_rank"] == want["max_who"] and near(got["mean"], want["mean"]) and
              near(got["stddev"], want["stddev"], 1e-6),
              "%s: %s %s across ranks is that of profile-ranks.csv: %s / %s"
              % (what, path, key, got, want))
    # Across threads: each helper thread's visits (t + 1) and time.
    helpers = {(int(r["rank"]), int(r["location"])): r for r in rows if r["path"] == "helper"}
    cp = callpath(prof, "helper")
    if check(cp and helpers, "%s: helper rows" % what):
        want = spread({k: int(r["incl_ns"]) for k, r in helpers.items()})
        got = cp["across_threads"]["inclusive"]
        check(cp["across_threads"]["threads"] == RANKS * THREADS == want["n"] and
              got["max"] == want["max"] and
              (got["max_rank"], got["max_location"]) == want["max_who"] and
              near(got["mean"], want["mean"]) and near(got["stddev"], want["stddev"], 1e-6),
              "%s: helper across threads is that of profile-ranks.csv: %s / %s"
              % (what, got, want))
        visits = cp["across_threads"]["visits"]
        check(visits["min"] == 1 and visits["max"] == THREADS and
              near(visits["mean"], (THREADS + 1) / 2.0),
              "%s: helper visits 1 to %d per thread: %s" % (what, THREADS, visits))


def check_planted(out, what, threads):
    rows = ranks_csv(out)
    work = [r for r in rows if r["path"] == "work"]
    check(sorted(int(r["rank"]) for r in work) == list(range(RANKS)) and
          all(r["visits"] == "4" and r["thread"] == "0" for r in work),
          "%s: profile-ranks.csv has a work row per rank, 4 visits each: %s"
          % (what, [(r["rank"], r["thread"], r["visits"]) for r in work]))
    incl = {int(r["rank"]): int(r["incl_ns"]) for r in work}
    others = [v for k, v in incl.items() if k != SLOW]
    # (sleeps never end early, but a loaded machine wakes ranks late: the
    # slow rank is the slowest and slept at least its planted 3 x 4 x 20 ms)
    check(len(incl) == RANKS and incl[SLOW] > max(others) and incl[SLOW] >= 3 * 4 * 20e6
          and min(others) >= 4 * 20e6,
          "%s: rank %d works 3 x as long: %s" % (what, SLOW, incl))
    sends = per_rank(rows, "exchange > MPI_Send")
    check({r: v["sent"] for r, v in sends.items()} ==
          {r: 4 * 4 * (r + 1) for r in range(RANKS)} and
          all(v["visits"] == 4 for v in sends.values()),
          "%s: MPI_Send: 4 calls of r + 1 ints per rank: %s" % (what, sends))
    helpers = {}
    for r in rows:
        if r["path"] == "helper":
            helpers.setdefault(int(r["rank"]), []).append(int(r["visits"]))
    want = {r: list(range(1, threads + 1)) for r in range(RANKS)} if threads else {}
    check({r: sorted(v) for r, v in helpers.items()} == want,
          "%s: helper rows: per rank one per thread, t + 1 visits: %s" % (what, helpers))


def across_ranks_row(text, label):
    """The cells of label's row in the table across ranks of profile.txt."""
    table = text.split("CALL-PATH PROFILE ACROSS RANKS", 1)[-1].split("\n\n", 1)[0]
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells and cells[0] == label:
            return cells
    return None


def check_text(out, what):
    text = open(os.path.join(out, "profile.txt")).read()
    row = across_ranks_row(text, "work")
    check(row is not None and row[1] == str(RANKS) and row[2] == "32" and row[8] == str(SLOW),
          "%s: profile.txt across ranks: work on 8 ranks, 32 visits, max at rank %d: %s"
          % (what, SLOW, row))
    stand = text.split("RANKS THAT STAND OUT", 1)[-1]
    rows = [[c.strip() for c in l.strip("|").split("|")] for l in stand.splitlines()
            if l.startswith("| work ")]
    check(len(rows) == 1 and rows[0][6].startswith("%d: " % SLOW) and
          "%d: " % SLOW not in rows[0][7],
          "%s: profile.txt names rank %d first among the slowest of work, not among the "
          "fastest: %s" % (what, SLOW, rows))
    prof = load_json(out, "profile.json")
    cp = callpath(prof, "work")
    slowest = cp["outliers"]["slowest"] if cp else []
    fastest = cp["outliers"]["fastest"] if cp else []
    check(len(slowest) == 5 and slowest[0]["rank"] == SLOW and len(fastest) == 5 and
          SLOW not in [f["rank"] for f in fastest] and
          cp["across_ranks"]["inclusive"]["max_rank"] == SLOW,
          "%s: profile.json: rank %d the slowest of work: %s / %s" % (what, SLOW, slowest, fastest))
    return text, prof


def test_small_job_keeps_per_thread_rows():
    out = small()
    text, prof = check_text(out, "small")
    check(prof["per_thread_detail"] is True and len(prof.get("threads", [])) >= RANKS and
          "CALL-PATH PROFILE PER THREAD" in text,
          "small: 8 threads: per-thread rows in profile.json and profile.txt")
    cp = callpath(prof, "work")
    per = {r["rank"]: r["visits"] for r in cp["per_rank"]} if cp else {}
    check(per == {r: 4 for r in range(RANKS)}, "small: per_rank rows of work: %s" % per)
    with open(os.path.join(out, "profile.csv"), newline="") as f:
        work = [r for r in csv.DictReader(f) if r["path"] == "work"]
    check(sorted(r["rank"] for r in work) == [str(r) for r in range(RANKS)],
          "small: profile.csv keeps a row per rank: %s" % [r["rank"] for r in work])
    check_planted(out, "small", 0)


def test_small_job_statistics():
    out = small()
    rows, prof = ranks_csv(out), load_json(out, "profile.json")
    for path in ("work", "exchange > MPI_Send"):
        sums = per_rank(rows, path)
        cp = callpath(prof, path)
        per = {r["rank"]: int(round(r["inclusive"])) for r in cp["per_rank"]} if cp else {}
        check(per == {r: v["incl"] for r, v in sums.items()},
              "small: %s per_rank equals the sums of profile-ranks.csv: %s / %s"
              % (path, per, sums))


def test_large_job_text_and_json():
    out = large()
    text, prof = check_text(out, "large")
    check("no per-thread rows here" in text and "CALL-PATH PROFILE PER THREAD" not in text,
          "large: profile.txt has no per-thread table")
    check(prof["per_thread_detail"] is False and prof["thread_count"] >= RANKS * (THREADS + 1)
          and "threads" not in prof and "processes" not in prof and
          not any("per_rank" in c or "per_thread" in c for c in prof["callpaths"]),
          "large: profile.json without per-thread and per-rank rows, %s threads"
          % prof.get("thread_count"))
    cm = prof.get("comm_matrix") or {}
    cells = cm.get("cells", [])
    top = cm.get("top_pairs", [])
    check("pairs" not in cm and cm.get("bytes") == 16 * sum(range(1, RANKS + 1)) and
          sum(c["bytes"] for c in cells) == cm.get("bytes") and top and
          (top[0]["sender"], top[0]["receiver"], top[0]["bytes"]) == (RANKS - 1, 0, 16 * RANKS),
          "large: profile.json's matrix in blocks of ranks, the top pair 7 -> 0: %s" % cm)
    bins = prof.get("rank_bins", {})
    check(bins.get("bins") == RANKS and bins.get("first_rank") == list(range(RANKS)) and
          sum(bins.get("threads", [])) == prof["thread_count"],
          "large: one rank range per rank, the threads in them: %s" % bins)
    cp = callpath(prof, "work")
    b = cp.get("rank_bins", {}) if cp else {}
    check(b.get("ranks") == [1] * RANKS and b.get("inclusive_max", [0] * RANKS)[SLOW] ==
          cp["across_ranks"]["inclusive"]["max"],
          "large: work's bins: one rank each, rank %d's the max: %s" % (SLOW, b))


def test_large_job_statistics():
    check_stats(large(), "large")


def test_large_job_rows():
    out = large()
    check_planted(out, "large", THREADS)
    rows = ranks_csv(out)
    with open(os.path.join(out, "profile.csv"), newline="") as f:
        job_rows = {r["path"]: r for r in csv.DictReader(f)}
    work = job_rows.get("work", {})
    check(work.get("rank") == "" and work.get("visits") == "32" and
          int(work.get("incl_sum_ns", -1)) == sum(int(r["incl_ns"]) for r in rows
                                                  if r["path"] == "work"),
          "large: profile.csv has the job's row of work: %s" % work)


def test_large_job_report():
    out = large()
    html = open(os.path.join(out, "report.html")).read()
    table = html.split("id=imbalance-table", 1)[-1].split("</table>", 1)[0]
    row = [r for r in table.split("<tr>") if ">work<" in r or "work</" in r]
    check(row and "<td>rank %d (" % SLOW in row[0],
          "large: report.html names rank %d the slowest of work: %s" % (SLOW, row[:1]))


def test_merged_job():
    out = merged()
    check_text(out, "merged")
    check_stats(out, "merged")
    check_planted(out, "merged", THREADS)
    live = large()

    def counts(folder):
        return sorted((r["rank"], r["path"], r["visits"], r["bytes_sent"])
                      for r in ranks_csv(folder) if "MPI_Finalize" not in r["path"])
    check(counts(out) == counts(live),
          "merged: profile-ranks.csv has the live job's rows (ranks, paths, visits, bytes)")


smtest.run_cases(globals())
