"""Call-stack sampling (--sampling): planted shares (hot 80%, cold 20% of
the CPU time of 2 threads inside the user region "compute") at 1000 Hz of
CPU time, attributed under that region's call path with hot's source file
and line; the same under mpirun -np 2 and with OpenMP threads (clang
-fopenmp); the samples in the archive (OTF2 reader, otf2-print) and through
sysmeasure-merge; system calls and the program's own SIGPROF timer under
sampling; bad input."""

import csv
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import smtest  # noqa: E402
from smtest import check  # noqa: E402

import otf2  # noqa: E402

HOT_ARGS = ["2", "3000000"]  # 2 threads, about 0.8 s of CPU each
SAMPLING = ["--sampling", "--sampling-freq", "1000", "--sampling-clock", "cpu"]


def sampled(profile, path):
    """The sampling section's entry for an instrumented path ("a > b")."""
    s = profile.get("sampling")
    if not check(s, "profile.json has no sampling section"):
        return None
    for cp in s["callpaths"]:
        if cp["path"] == path:
            return cp
    check(False, "no sampled functions under %r (paths: %s)"
          % (path, [c["path"] for c in s["callpaths"]]))
    return None


def check_shares(profile, path, threads, what):
    """hot about 80%, cold about 20% of each thread's samples under path."""
    cp = sampled(profile, path)
    if not cp:
        return
    funcs = {f["function"]: f for f in cp["functions"]}
    for name in ("hot", "cold"):
        check(name in funcs, "%s: %s not among the sampled functions %s"
              % (what, name, list(funcs)[:10]))
    if "hot" not in funcs or "cold" not in funcs:
        return
    hot, cold = funcs["hot"], funcs["cold"]
    check(hot["file"] and hot["file"].endswith("sampling_hot.c") and hot["line"] > 0,
          "%s: hot is named without its source: %s:%s" % (what, hot["file"], hot["line"]))
    check(hot["module"] != "", "%s: hot has no module" % what)
    per = {(t["rank"], t["thread"]): t for t in hot["per_thread"]}
    per_cold = {(t["rank"], t["thread"]): t for t in cold["per_thread"]}
    check(len(per) >= threads, "%s: hot sampled on %d threads, expected %d"
          % (what, len(per), threads))
    for key, t in per.items():
        c = per_cold.get(key)
        total = t["samples"] + (c["samples"] if c else 0)
        check(total >= 100, "%s: only %d samples of hot+cold on %s" % (what, total, key))
        share = 100.0 * t["samples"] / total if total else 0
        check(70 <= share <= 90, "%s: hot has %.1f%% of hot+cold on thread %s (expected 80 +- 10)"
              % (what, share, key))
        check(abs(100 * t["share"] - share) <= 10,
              "%s: hot's share of the path %.1f%% far from %.1f%%" % (what, 100 * t["share"], share))
    sp = hot["across_threads"]
    check(sp["n"] >= threads and sp["min"] <= sp["mean"] <= sp["max"],
          "%s: spread of hot across threads: %s" % (what, sp))


def check_archive(out, what, ranks=1):
    trace = smtest.Trace(out)
    samples = trace.of_type(otf2.events.CallingContextSample)
    check(len(samples) >= 50, "%s: %d CallingContextSample events" % (what, len(samples)))
    regions = {}
    under_compute = 0
    for _, e in samples:
        ctx = e.calling_context
        regions[ctx.region.name] = regions.get(ctx.region.name, 0) + 1
        chain = []
        while ctx is not None:
            chain.append(ctx.region.name)
            ctx = ctx.parent
        if "compute" in chain and chain[0] in ("hot", "cold"):
            under_compute += 1
        check(e.interrupt_generator is not None, "%s: sample without interrupt generator" % what)
    check(regions.get("hot", 0) > regions.get("cold", 0) > 0,
          "%s: samples by leaf function: %s" % (what, regions))
    check(under_compute >= 0.8 * (regions.get("hot", 0) + regions.get("cold", 0)),
          "%s: hot/cold samples not under the region compute (%d)" % (what, under_compute))
    ranks_seen = {smtest.location_rank(loc) for loc, _ in samples}
    check(len(ranks_seen) == ranks, "%s: samples on ranks %s" % (what, ranks_seen))
    smtest.check_trace_consistent(trace)
    p = subprocess.run(["otf2-print", os.path.join(out, "traces.otf2")], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    check(p.returncode == 0 and "CALLING_CONTEXT_SAMPLE" in p.stdout,
          "%s: otf2-print shows no CALLING_CONTEXT_SAMPLE (rc %d, %s)"
          % (what, p.returncode, p.stderr[-300:]))


# ---------------------------------------------------------------- 2 pthreads
@smtest.fixture
def pthreads():
    out, proc = smtest.measure([smtest.program("sampling-hot")] + HOT_ARGS, "sampling",
                               launcher_args=SAMPLING)
    return out


def test_pthreads_profile():
    out = pthreads()
    profile = smtest.load_json(out, "profile.json")
    check_shares(profile, "compute", 2, "pthreads")
    text = open(os.path.join(out, "profile.txt")).read()
    check("SAMPLED FUNCTIONS PER CALL PATH AND THREAD" in text and "sampling_hot.c:" in text,
          "profile.txt has no sampled-functions section naming sampling_hot.c")
    with open(os.path.join(out, "sampled_functions.csv")) as f:
        rows = [r for r in csv.DictReader(f) if r["function"] == "hot" and r["path"] == "compute"]
    check(len(rows) == 2, "sampled_functions.csv: %d rows of hot under compute" % len(rows))
    # The callers tree: call paths of paradigm sampling under compute, ending in hot.
    tree = [cp for cp in profile["callpaths"] if cp["path"][0] == "compute" and
            cp["path"][-1] == "hot"]
    check(tree, "profile.json has no call path compute > ... > hot")
    meta = smtest.load_json(out, "metadata.json")
    check(any("call-stack sampling" in n for n in meta.get("notes", [])) or
          "call-stack sampling" in text, "the run's notes do not mention call-stack sampling")


def test_pthreads_archive():
    check_archive(pthreads(), "pthreads")


# ---------------------------------------------------------------- OpenMP threads
def test_openmp():
    if os.environ.get("SM_HAVE_OMPT") != "yes" or smtest.CLANG in ("", "no"):
        smtest.skip("no OMPT adapter / clang -fopenmp in this build")
    exe = smtest.build_program(smtest.CLANG, "sampling_hot.c", "sampling-hot-omp",
                               ["-fopenmp", "-g", "-O1", "-DSM_WITH_OPENMP"] +
                               smtest.user_api_flags())
    out, proc = smtest.measure([exe] + HOT_ARGS, "sampling-omp", launcher_args=SAMPLING)
    profile = smtest.load_json(out, "profile.json")
    paths = [c["path"] for c in (profile.get("sampling") or {}).get("callpaths", [])]
    omp = [p for p in paths if p.endswith("compute")]
    check(omp, "OpenMP: no sampled path ending in compute: %s" % paths)
    for p in omp:
        check_shares(profile, p, 1, "OpenMP %s" % p)
    threads = set()
    for p in omp:
        cp = sampled(profile, p)
        for f in cp["functions"] if cp else []:
            if f["function"] == "hot":
                threads |= {t["thread"] for t in f["per_thread"]}
    check(len(threads) == 2, "OpenMP: hot sampled on threads %s, expected 2" % threads)


# ---------------------------------------------------------------- MPI, and the merge
def need_mpi():
    if os.environ.get("SM_HAVE_MPI") != "yes":
        smtest.skip("no MPI adapter in this build")


@smtest.fixture
def mpi_job():
    # (with process sampling too: its summary across ranks)
    need_mpi()
    out, proc = smtest.mpi_measure(2, [smtest.program("sampling-hot-mpi")] + HOT_ARGS,
                                   "sampling-mpi", launcher_args=SAMPLING + ["--process-sampling"])
    return out


def test_mpi_profile():
    out = mpi_job()
    profile = smtest.load_json(out, "profile.json")
    rss = [m for m in profile.get("sampled_metrics", []) if m["name"] == "memory resident"]
    if check(rss, "MPI: no resident-memory metric in profile.json"):
        a = rss[0]["across_ranks"]
        check(len(rss[0]["per_rank"]) == 2 and a["ranks"] == 2 and a["min_rank"] in (0, 1) and
              a["min"] <= a["mean"] <= a["max"] and a["max_rank"] in (0, 1),
              "MPI: resident memory per rank and across ranks: %s" % rss[0])
    check_shares(profile, "compute", 4, "MPI")
    cp = sampled(profile, "compute")
    hot = [f for f in (cp["functions"] if cp else []) if f["function"] == "hot"]
    if hot:
        r = hot[0]["across_ranks"]
        check(r["n"] == 2 and r["min"] <= r["max"], "MPI: hot across ranks: %s" % r)
    text = open(os.path.join(out, "profile.txt")).read()
    check("SAMPLED FUNCTIONS ACROSS RANKS" in text and "SAMPLED METRICS ACROSS RANKS" in text,
          "MPI: profile.txt has no across-ranks sections")
    # No sample of sysmeasure's own end of run (it resolves every address
    # with libdw and writes the archive: seconds of CPU here).
    ours = {"sm_runtime_finalize", "sm_runtime_finalize_job", "sm_runtime_write_job",
            "sm_callstack_finish", "sm_otf2_write", "sm_unify"}
    seen = {f["function"] for c in (profile.get("sampling") or {}).get("callpaths", [])
            for f in c["functions"]}
    check(not (seen & ours), "MPI: samples inside sysmeasure's finalize: %s" % (seen & ours))
    # Open MPI's own threads (PMIx, progress: started in MPI_Init) are not
    # sampled without --sampling-runtime-threads: no runtime code outside
    # every region, where those threads run.
    outside = [c for c in (profile.get("sampling") or {}).get("callpaths", [])
               if c["path"] == "(outside every region)"]
    outside = outside[0] if outside else {"functions": []}
    runtime = [f["function"] for f in outside["functions"]
               if f["module"].startswith(("libpmix", "libevent", "libopen-pal", "libmpi"))]
    check(not runtime, "MPI: runtime threads sampled: %s" % runtime[:5])


def test_mpi_archive():
    check_archive(mpi_job(), "MPI", ranks=2)


def test_mpi_merged():
    # A job that ends without MPI_Finalize: the samples survive sysmeasure-merge.
    need_mpi()
    out2, proc = smtest.mpi_measure(2, [smtest.program("sampling-hot-mpi")] + HOT_ARGS +
                                    ["nofinalize"], "sampling-merge",
                                    launcher_args=SAMPLING + ["--process-sampling"],
                                    expect_rc=None,
                                    # Open MPI ends the other rank when one exits
                                    # without MPI_Finalize: time to write its files.
                                    env={"OMPI_MCA_odls_base_sigkill_timeout": "5"})
    p = subprocess.run([os.path.join(smtest.BUILD, "sysmeasure-merge"), out2],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(p.returncode == 0, "sysmeasure-merge after a job without MPI_Finalize: %s" % p.stderr)
    if p.returncode == 0:
        merged = smtest.load_json(out2, "profile.json")
        check_shares(merged, "compute", 4, "merged")
        rss = [m for m in merged.get("sampled_metrics", []) if m["name"] == "memory resident"]
        check(rss and rss[0]["across_ranks"]["ranks"] == 2,
              "merged: the process metrics of both ranks: %s" % rss)
        check_archive(out2, "merged", ranks=2)


# ---------------------------------------------------------------- Kokkos
def test_kokkos():
    kokkos = os.path.join(smtest.BUILD, "tests", "programs", "kokkos-patterns")
    if not os.path.exists(kokkos):
        smtest.skip("no Kokkos test program in this build")
    out, proc = smtest.measure([kokkos], "sampling-kokkos",
                               launcher_args=["--sampling", "--sampling-freq", "1000",
                                              "--sampling-clock", "real"])
    profile = smtest.load_json(out, "profile.json")
    paths = [c["path"] for c in (profile.get("sampling") or {}).get("callpaths", [])]
    check(any("Kokkos" in p for p in paths),
          "Kokkos: no samples under a Kokkos region: %s" % paths[:10])


# ---------------------------------------------------------------- system calls, SIGPROF
def test_syscalls_and_sigprof():
    out, proc = smtest.measure([smtest.program("sampling-blocking")], "sampling-syscalls",
                               launcher_args=["--sampling", "--sampling-freq", "1000",
                                              "--sampling-clock", "real"])
    check("ok" in proc.stdout and "EINTR" not in proc.stdout and "Interrupted" not in proc.stdout,
          "system calls under sampling: %s" % proc.stdout)
    check("SIGPROF ticks" in proc.stdout and "handler kept yes" in proc.stdout,
          "the program's SIGPROF timer: %s" % proc.stdout)


# ---------------------------------------------------------------- bad input
def test_bad_input():
    for args, word in ((["--sampling-freq", "0"], "sampling-freq"),
                       (["--sampling-freq", "20000"], "sampling-freq"),
                       (["--sampling-clock", "gpu"], "sampling-clock"),
                       (["--sampling-interval", "0"], "sampling-interval")):
        p = smtest.run(["/bin/true"], launcher_args=["--sampling"] + args)
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        check(p.returncode == 2 and len(lines) == 1 and word in lines[0],
              "%s: exit %d, stderr %r" % (args, p.returncode, p.stderr))


if __name__ == "__main__":
    smtest.run_cases(globals())
