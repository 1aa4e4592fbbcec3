"""One finalize pipeline: the output folder of an MPI job that ends in
MPI_Finalize and the folder that sysmeasure-merge writes for the same job
killed after its last step (it returns without MPI_Finalize) hold the same
files with the same content, but for the fields listed here that must
differ (dates, pids, the mode argument, MPI_Finalize itself, measured
times).  Both come from mpi-patterns on 3 ranks: a token 3 times around the
ring, then a barrier; the live one then calls MPI_Finalize."""
import os
import re
import subprocess
import sys

import otf2

import smtest
from smtest import (BUILD, Trace, check, check_messages, load_json, mpi_measure, program,
                    region_visits_by_rank)

if os.environ.get("SM_HAVE_MPI", "yes") != "yes":
    print("built without MPI")
    sys.exit(77)

RANKS = 3
MERGE = os.path.join(BUILD, "sysmeasure-merge")
# Open MPI kills 1 s after SIGTERM; on an oversubscribed machine the ranks
# get more time to write their process files.
GRACE = {"OMPI_MCA_odls_base_sigkill_timeout": "5"}

# What only the live end has: the MPI_Finalize call itself.
LIVE_ONLY_REGIONS = {"MPI_Finalize"}
# metadata.json fields that differ between any two runs, or by the way the
# folder was written (flattened paths; a trailing "/" covers what is below).
METADATA_DIFFER = (
    "/start_time", "/end_time", "/start_time_ns", "/end_time_ns", "/duration_ns",
    "/pid", "/processes/", "/output_dir", "/command/1",  # the mode: finalize, nofinalize
    "/configuration/SYSMEASURE_OUTPUT/", "/configuration/SYSMEASURE_LAUNCHED_PID/",
    "/clock/",  # the merge puts every rank on the job's timeline ("merged")
    "/locations/",  # thread ids and who created them: compared below
    "/end_reason",
)


@smtest.fixture
def folders():
    live, proc = mpi_measure(RANKS, [program("mpi-patterns"), "finalize"], "equal-live")
    check(proc.returncode == 0, "the live job exits 0: %s" % proc.stderr[-400:])
    merged, proc = mpi_measure(RANKS, [program("mpi-patterns"), "nofinalize"], "equal-merged",
                               expect_rc=None, env=GRACE)
    m = subprocess.run([MERGE, merged], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(m.returncode == 0 and "%d of %d ranks merged" % (RANKS, RANKS) in m.stderr,
          "sysmeasure-merge merges every rank: %s" % m.stderr)
    return live, merged


def flat(x, path=""):
    """{"/a/0/b": value} for every leaf of a JSON document."""
    out = {}
    if isinstance(x, dict):
        for k, v in x.items():
            out.update(flat(v, path + "/" + k))
    elif isinstance(x, list):
        out[path + "#len"] = len(x)
        for i, v in enumerate(x):
            out.update(flat(v, "%s/%d" % (path, i)))
    else:
        out[path] = x
    return out


def listed(key, prefixes):
    return any(key == p or (p.endswith("/") and key.startswith(p)) or key == p + "#len"
               for p in prefixes)


def visible_files(folder):
    names = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        rel = os.path.relpath(root, folder)
        names += [os.path.normpath(os.path.join(rel, f)) for f in files if not f.startswith(".")]
    return sorted(names)


def test_same_files():
    live, merged = folders()
    a, b = visible_files(live), visible_files(merged)
    check(a == b and "report.html" in a and "traces.otf2" in a,
          "the same files in both folders: only live %s, only merged %s"
          % (sorted(set(a) - set(b)), sorted(set(b) - set(a))))


def test_profile_call_paths():
    live, merged = folders()

    def paths(folder):
        prof = load_json(folder, "profile.json")
        return {tuple(c["path"]): [r["visits"] for r in c["per_rank"]] for c in prof["callpaths"]
                if not LIVE_ONLY_REGIONS & set(c["path"])}
    a, b = paths(live), paths(merged)
    check(a == b and a.get(("MPI_Send",)) == [3] * RANKS,
          "every call path with the same visits per rank: live %s, merged %s" % (a, b))


def test_profile_fields():
    live, merged = folders()
    a, b = load_json(live, "profile.json"), load_json(merged, "profile.json")
    check(sorted(a) == sorted(b), "profile.json has the same sections: %s / %s"
          % (sorted(set(a) - set(b)), sorted(set(b) - set(a))))
    # pids and measured times differ; names, counts and totals do not.
    for key in ("program", "ranks", "threads", "papi_events", "comm_matrix", "records",
                "unmatched_leaves", "profile_folded_enters", "trace_folded_enters"):
        check(a.get(key) == b.get(key), "profile.json %s the same: %r / %r"
              % (key, a.get(key), b.get(key)))

    def mpi(prof):
        return {f["function"]: (f["calls"], f["ranks"], f["bytes_sent"], f["bytes_received"])
                for f in prof["mpi"] if f["function"] not in LIVE_ONLY_REGIONS}
    check(mpi(a) == mpi(b), "the MPI functions' calls, ranks and bytes: %s / %s"
          % (mpi(a), mpi(b)))


def test_metadata():
    live, merged = folders()
    a, b = flat(load_json(live, "metadata.json")), flat(load_json(merged, "metadata.json"))
    check(set(a) - set(b) == set() or all(listed(k, METADATA_DIFFER) for k in set(a) ^ set(b)),
          "metadata.json has the same fields: only live %s, only merged %s"
          % (sorted(set(a) - set(b))[:12], sorted(set(b) - set(a))[:12]))
    differ = sorted(k for k in set(a) & set(b) if a[k] != b[k] and not listed(k, METADATA_DIFFER))
    check(not differ, "metadata.json values the same but for the listed ones: %s"
          % ["%s: %r / %r" % (k, a[k], b[k]) for k in differ[:12]])
    # Rank 0's threads: the same locations, names and creators.
    def locations(folder):
        return [(l["id"], l["name"], l["type"], l["created_by"], l["creation_path"])
                for l in load_json(folder, "metadata.json").get("locations", [])]
    check(locations(live) == locations(merged) and locations(live),
          "rank 0's locations the same: %s / %s" % (locations(live), locations(merged)))


def test_comm_matrix():
    live, merged = folders()
    for name in ("comm_matrix.json", "comm_matrix.csv"):
        with open(os.path.join(live, name)) as fa, open(os.path.join(merged, name)) as fb:
            check(fa.read() == fb.read(), "%s identical" % name)


def test_trace():
    live, merged = folders()
    ta, tb = Trace(live), Trace(merged)

    def counts(trace):
        out = {}
        for loc, events in trace.events.items():
            for e in events:
                region = getattr(getattr(e, "region", None), "name", None)
                if region in LIVE_ONLY_REGIONS:
                    continue
                key = (str(loc.name), str(loc.group.name), type(e).__name__, region)
                out[key] = out.get(key, 0) + 1
        return out
    a, b = counts(ta), counts(tb)
    check(a == b, "the same events per location, kind and region: only live %s, only merged %s"
          % ({k: v for k, v in a.items() if b.get(k) != v}, {k: v for k, v in b.items()
                                                              if a.get(k) != v}))
    check(check_messages(ta, RANKS) == check_messages(tb, RANKS) == 3 * RANKS,
          "the ring's messages matched in both")
    va, vb = region_visits_by_rank(ta), region_visits_by_rank(tb)
    check(va.get("MPI_Finalize") == {r: 1 for r in range(RANKS)} and "MPI_Finalize" not in vb,
          "MPI_Finalize only in the live archive")


def test_report():
    live, merged = folders()

    def headings(folder):
        with open(os.path.join(folder, "report.html")) as f:
            return re.findall(r"<h2[^>]*>(.*?)</h2>", f.read())
    check(headings(live) == headings(merged) and headings(live),
          "report.html: the same sections: %s / %s" % (headings(live), headings(merged)))


smtest.run_cases(globals())
