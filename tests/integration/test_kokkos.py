"""The Kokkos tool library with real Kokkos programs: loaded by Kokkos alone
(KOKKOS_PROFILE_LIBRARY, no launcher), under the launcher (which names it
itself), behind --no-kokkos, in front of a second KokkosP tool, and under
mpirun -np 2 sysmeasure.  Checks names, counts, nesting, paradigm and roles in
the archive, deep-copy bytes in profile.json, the memory space's metric and
high-water mark and the declared metadata in metadata.json."""
import glob
import os
import re
import subprocess
import sys

import otf2

import smtest
from smtest import (BUILD, Trace, callpath, check, check_trace_consistent, clean_env,
                    load_json, location_rank, measure, mpi_measure, program, region_visits_by_rank,
                    workdir)

try:
    PROG = program("kokkos-patterns")
except FileNotFoundError:
    print("built without Kokkos (apt-get install libtrilinos-kokkos-dev)")
    sys.exit(77)

LIB = os.path.join(BUILD, ".libs", "libsysmeasure-kokkos.so")
PROBE = os.path.join(BUILD, "tests", "programs", ".libs", "libkp-probe.so")
MIB = 1 << 20
# The caller's Kokkos tool settings would change what these runs load.
for var in ("KOKKOS_TOOLS_LIBS", "KOKKOS_PROFILE_LIBRARY"):
    os.environ.pop(var, None)

COPY_B = "deep_copy view_b <- view_a (Host <- Host)"
COPY_H = "deep_copy view_a_mirror <- view_a (Host <- Host)"
# region: (visits, call path above it, OTF2 role)
EXPECTED = {
    "phase_a": (1, ("user_outer",), otf2.RegionRole.CODE),
    "phase_a_inner": (1, ("user_outer", "phase_a"), otf2.RegionRole.CODE),
    "pf_label": (3, ("user_outer", "phase_a", "phase_a_inner"), otf2.RegionRole.LOOP),
    "pr_label": (2, ("user_outer", "phase_a", "phase_a_inner"), otf2.RegionRole.LOOP),
    "ps_label": (1, ("user_outer", "phase_a", "phase_a_inner"), otf2.RegionRole.LOOP),
    COPY_B: (1, ("user_outer", "phase_a"), otf2.RegionRole.FUNCTION),
    COPY_H: (1, ("user_outer", "phase_a"), otf2.RegionRole.FUNCTION),
    "test_fence": (1, ("user_outer", "phase_a"), otf2.RegionRole.BARRIER),
    "section_s": (1, ("user_outer",), otf2.RegionRole.CODE),
    "in_section": (1, ("user_outer", "section_s"), otf2.RegionRole.LOOP),
    "marker": (1, ("user_outer",), otf2.RegionRole.ARTIFICIAL),
}


def enter_paths(trace):
    """{region name: {call path above each of its enters}}, all locations."""
    paths = {}
    for loc, events in trace.events.items():
        stack = []
        for e in events:
            if isinstance(e, otf2.events.Enter):
                paths.setdefault(e.region.name, set()).add(tuple(stack))
                stack.append(e.region.name)
            elif isinstance(e, otf2.events.Leave) and stack:
                stack.pop()
    return paths


def check_patterns(out, what, kokkos=True):
    """The output of one run of kokkos-patterns."""
    trace = Trace(out)
    visits = check_trace_consistent(trace)
    check(visits.get("user_outer") == 1, "%s: user_outer once: %s" % (what, visits.get("user_outer")))
    if not kokkos:
        check("pf_label" not in visits, "%s: no Kokkos regions: %s" % (what, sorted(visits)))
        return trace
    paths = enter_paths(trace)
    regions = {r.name: r for r in trace.definitions.regions}
    for name, (count, parents, role) in EXPECTED.items():
        check(visits.get(name) == count, "%s: %s entered %d times: %s" % (what, name, count, visits.get(name)))
        check(paths.get(name) == {parents}, "%s: %s inside %s: %s" % (what, name, parents, paths.get(name)))
        r = regions.get(name)
        if check(r is not None, "%s: region %s defined" % (what, name)):
            check(r.paradigm == otf2.Paradigm.KOKKOS, "%s: %s is a Kokkos region: %s" % (what, name, r.paradigm))
            check(r.region_role == role, "%s: %s has role %s: %s" % (what, name, role, r.region_role))
    check(regions["user_outer"].paradigm == otf2.Paradigm.USER, "%s: user_outer is a user region" % what)
    init = [n for n in visits if n.startswith("Kokkos::View::initialization [view_")]
    check(len(init) == 3, "%s: 3 view initialization kernels: %s" % (what, init))

    profile = load_json(out, "profile.json")
    for name in (COPY_B, COPY_H):
        cp = callpath(profile, "user_outer", "phase_a", name)
        if check(cp is not None, "%s: %s in profile.json" % (what, name)):
            t = cp["per_thread"][0]
            check(t["bytes_sent"] == MIB and t["bytes_received"] == MIB,
                  "%s: %s moved 1 MiB: %s" % (what, name, (t["bytes_sent"], t["bytes_received"])))
    cp = callpath(profile, "user_outer", "phase_a", "phase_a_inner", "pf_label")
    check(cp is not None and cp["per_thread"][0]["visits"] == 3, "%s: pf_label 3 visits in profile.json" % what)
    check(cp is not None and cp["paradigm"] == "kokkos", "%s: paradigm kokkos in profile.json" % what)

    meta = load_json(out, "metadata.json")
    declared = meta.get("metadata", {})
    check(declared.get("test_key") == "test value", "%s: declared metadata: %s" % (what, declared.get("test_key")))
    check("Kokkos Version" in declared, "%s: Kokkos' own metadata: %s" % (what, sorted(declared)[:5]))
    metrics = {m["name"]: m for m in meta.get("metrics", []) if m["rank"] == 0}
    host = metrics.get("Kokkos Host bytes in use")
    if check(host is not None, "%s: Host space metric: %s" % (what, metrics)):
        check(host["unit"] == "bytes", "%s: in bytes" % what)
        # view_a, view_b and view_a_mirror at once, plus Kokkos' own scratch
        check(3 * MIB <= host["max"] < 3 * MIB + MIB // 4, "%s: high-water mark ~3 MiB: %d" % (what, host["max"]))
        check(host["last"] < MIB // 4, "%s: views freed at the end: %d" % (what, host["last"]))
        check(host["samples"] >= 6, "%s: an allocation and a free per view: %d" % (what, host["samples"]))
        # The same samples as counter events in the archive.
        values = [e.values[0] for _, e in trace.of_type(otf2.events.Metric)
                  if e.metric.members[0].name == "Kokkos Host bytes in use"]
        check(values and max(values) == host["max"] and values[-1] == host["last"],
              "%s: metric events agree with metadata.json: %s" % (what, values))
    return trace


def run_alone(out=None, env=None, cwd=None):
    """kokkos-patterns with only KOKKOS_PROFILE_LIBRARY: Kokkos loads us."""
    e = {"KOKKOS_PROFILE_LIBRARY": LIB}
    if out:
        e["SYSMEASURE_OUTPUT"] = out
    e.update(env or {})
    return subprocess.run([PROG], env=clean_env(e), cwd=cwd, timeout=120,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


# ---- Kokkos alone loads the library; the core comes up by itself
@smtest.fixture
def alone():
    """The run with only KOKKOS_PROFILE_LIBRARY: (its folder, the process)."""
    out = os.path.join(workdir("kokkos-alone"), "out")
    return out, run_alone(out)


def test_alone():
    alone_out, proc = alone()
    check(proc.returncode == 0, "alone: exit 0: %d %s" % (proc.returncode, proc.stderr))
    check(proc.stdout.startswith("total "), "alone: the program's output is its own: %r" % proc.stdout)
    check(proc.stderr.count("sysmeasure:") == 1 and alone_out in proc.stderr,
          "alone: one closing line naming the folder: %s" % proc.stderr)
    check_patterns(alone_out, "alone")


# ... into the default folder, named as under the launcher
def test_default_folder():
    cwd = workdir("kokkos-default")
    proc = run_alone(cwd=cwd)
    folders = glob.glob(os.path.join(cwd, "sysmeasure-kokkos-patterns-*"))
    check(proc.returncode == 0 and len(folders) == 1, "alone: one default folder: %s %s" % (folders, proc.stderr))


# ... and not at all when SYSMEASURE_ENABLE=no says so
def test_disabled():
    cwd = workdir("kokkos-disabled")
    proc = run_alone(cwd=cwd, env={"SYSMEASURE_ENABLE": "no"})
    check(proc.returncode == 0 and proc.stdout.startswith("total ") and not os.listdir(cwd)
          and "sysmeasure" not in proc.stderr,
          "SYSMEASURE_ENABLE=no: the program runs unmeasured: %s %s" % (os.listdir(cwd), proc.stderr))


# ---- under the launcher, which names the library itself
def test_launcher():
    launched, proc = measure([PROG], "kokkos-launcher")
    check_patterns(launched, "launcher")
    unlaunched = alone()[0]
    check(sorted(os.listdir(launched)) == sorted(os.listdir(unlaunched)),
          "the same files with and without the launcher: %s / %s"
          % (os.listdir(launched), os.listdir(unlaunched)))


# ... not with --no-kokkos
def test_no_kokkos():
    out, proc = measure([PROG], "kokkos-off", launcher_args=["--no-kokkos"])
    check_patterns(out, "--no-kokkos", kokkos=False)


# ---- the launcher names the tool in the one variable the program's Kokkos reads
def read_tool_variables(path):
    """{variable: value or "(unset)"} as kokkos-patterns wrote them."""
    values = {"KOKKOS_TOOLS_LIBS": "(unset)", "KOKKOS_PROFILE_LIBRARY": "(unset)"}
    for line in open(path):
        k, _, v = line.rstrip("\n").partition("=")
        values[k] = v
    return values


def test_kokkos3_variable():
    """Kokkos 3.4.1 reads only KOKKOS_PROFILE_LIBRARY: that one is set, the
    other not, and the program is still measured."""
    env_out = os.path.join(workdir("kokkos3-var"), "env.txt")
    out, proc = measure([PROG], "kokkos3-var", env={"KP_ENV_OUT": env_out})
    check_patterns(out, "kokkos 3 variable")
    if check(os.path.exists(env_out), "kokkos-patterns wrote its variables: %s" % proc.stderr):
        got = read_tool_variables(env_out)
        check(got.get("KOKKOS_TOOLS_LIBS") == "(unset)",
              "Kokkos 3.4: KOKKOS_TOOLS_LIBS unset: %s" % got)
        check(got.get("KOKKOS_PROFILE_LIBRARY", "").endswith("libsysmeasure-kokkos.so"),
              "Kokkos 3.4: KOKKOS_PROFILE_LIBRARY names our tool: %s" % got)
    check("deprecated" not in proc.stderr, "no deprecation warning: %s" % proc.stderr)


def test_kokkos4_variable():
    """A program that reads the variables as Kokkos 4 does (warning on the
    deprecated one) gets only KOKKOS_TOOLS_LIBS: no warning, kernels measured."""
    k4 = program("kokkos4-tools-env")
    out, proc = measure([k4], "kokkos4-var")
    check("deprecated" not in proc.stderr, "Kokkos 4: no deprecation warning: %s" % proc.stderr)
    check(proc.stdout.startswith("done "), "Kokkos 4: the program ran: %r" % proc.stdout)
    profile = load_json(out, "profile.json")
    cp = callpath(profile, "k4_kernel")
    check(cp is not None and cp["per_thread"][0]["visits"] == 3 and cp["paradigm"] == "kokkos",
          "Kokkos 4: k4_kernel measured 3 times: %s" % (cp and cp["per_thread"][0]))
    # The user's KOKKOS_PROFILE_LIBRARY naming our tool: the same.
    out2, proc2 = measure([k4], "kokkos4-user", env={"KOKKOS_PROFILE_LIBRARY": LIB})
    check("deprecated" not in proc2.stderr, "the user's KOKKOS_PROFILE_LIBRARY: no warning: %s" % proc2.stderr)
    cp = callpath(load_json(out2, "profile.json"), "k4_kernel")
    check(cp is not None and cp["per_thread"][0]["visits"] == 3, "measured through the user's variable")
    # Without the launcher, what the user set is left alone (Kokkos 4 warns).
    alone = subprocess.run([k4], env=clean_env({"KOKKOS_PROFILE_LIBRARY": LIB,
                                                "SYSMEASURE_OUTPUT": os.path.join(workdir("kokkos4-alone"), "out")}),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    check(alone.returncode == 0 and "deprecated" in alone.stderr,
          "without the launcher the user's variable stays: %s" % alone.stderr)


# ---- what each region is: the kinds of kokkos-tools' kernel-timer
KINDS = {"pf_label": "ParFor", "pr_label": "ParRed", "ps_label": "ParScan", "phase_a": "REGION",
         "section_s": "REGION", "test_fence": "FENCE", COPY_B: "DEEPCOPY", "marker": "EVENT",
         "user_outer": "region"}


def test_kinds():
    out, proc = measure([PROG], "kokkos-kinds")
    profile = load_json(out, "profile.json")
    got = {cp["region"]: cp.get("kind") for cp in profile["callpaths"] if cp["region"] in KINDS}
    check(got == KINDS, "kinds in profile.json: %s" % got)
    import csv
    with open(os.path.join(out, "profile.csv")) as f:
        rows = {r["region"]: r["kind"] for r in csv.DictReader(f) if r["region"] in KINDS}
    check(rows == KINDS, "kinds in profile.csv: %s" % rows)
    text = open(os.path.join(out, "profile.txt")).read()
    check("| KIND |" in text.replace("  ", " ") or " KIND " in text, "profile.txt has a KIND column")
    lines = [l for l in text.splitlines() if "pr_label" in l and "wall_clock" in l]
    check(lines and all(l.rstrip().endswith("ParRed |") or "ParRed" in l for l in lines),
          "profile.txt: pr_label is ParRed: %s" % lines[:2])


# ---- the fences sysmeasure asks Kokkos for are not the program's
TOOL_FENCE = "Kokkos::Tools::invoke_kokkosp_callback: Kokkos Profile Tool Fence"


def test_tool_fences():
    k4 = program("kokkos4-tools-env")
    out, proc = measure([k4], "kokkos-tool-fences")
    profile = load_json(out, "profile.json")
    regions = {cp["region"] for cp in profile["callpaths"]}
    check(TOOL_FENCE not in regions, "tool fences not recorded by default: %s" % sorted(regions))
    fence = callpath(profile, "k4_user_fence")
    check(fence is not None and fence["kind"] == "FENCE" and fence["per_thread"][0]["visits"] == 1,
          "the program's own fence is recorded: %s" % (fence and fence["kind"]))
    kernel = callpath(profile, "k4_kernel")
    check(kernel is not None and kernel["per_thread"][0]["visits"] == 3, "kernels still measured")
    meta = load_json(out, "metadata.json")
    check(meta["metadata"].get("kokkosp.tool_fences_not_recorded") == "6",
          "6 tool fences counted in metadata.json: %s" % meta["metadata"].get("kokkosp.tool_fences_not_recorded"))
    trace = Trace(out)
    check(TOOL_FENCE not in trace.regions, "no tool fence in the archive")
    # One switch away: --kokkos-tool-fences records them (3 before the
    # kernels, 3 inside them, before their end).
    out2, proc2 = measure([k4], "kokkos-tool-fences-on", launcher_args=["--kokkos-tool-fences"])
    profile2 = load_json(out2, "profile.json")
    top = callpath(profile2, TOOL_FENCE)
    inner = callpath(profile2, "k4_kernel", TOOL_FENCE)
    check(top is not None and inner is not None and top["per_thread"][0]["visits"] == 3
          and inner["per_thread"][0]["visits"] == 3 and top["kind"] == "FENCE",
          "--kokkos-tool-fences: recorded, 3 + 3: %s %s" % (top and top["per_thread"][0]["visits"],
                                                          inner and inner["per_thread"][0]["visits"]))


# ---- OpenMP that a Kokkos kernel runs counts as Kokkos in the report
def test_openmp_in_kokkos():
    if os.environ.get("SM_HAVE_OMPT") != "yes" or smtest.CLANG in ("", "no"):
        smtest.skip("no OMPT adapter or no clang -fopenmp")
    k4 = smtest.build_program(smtest.CLANG, "kokkos4_tools_env.c", "kokkos4-omp",
                              ["-fopenmp", "-O1", "-ldl", "-Wl,--no-as-needed", "-lstdc++"])
    out, proc = measure([k4], "kokkos-omp")
    profile = load_json(out, "profile.json")
    omp = sum(t["exclusive"]["sum"] for cp in profile["callpaths"] if cp["paradigm"] == "openmp"
              for t in cp["per_thread"])
    # 3 kernels x 20 ms x 2 threads, nearly all of it in OpenMP regions
    check(omp > 100e6, "the kernels' OpenMP regions hold their time: %.0f ms" % (omp / 1e6))
    html = open(os.path.join(out, "report.html")).read()
    start = html.index("<table id=paradigm-table>")
    rows = {}
    for name, share in re.findall(r"</span> ([^<]+)</td><td class=n>[^<]*</td><td class=n>([0-9.]+)%",
                                  html[start:html.index("</table>", start)]):
        rows[name] = float(share)
    check(rows.get("Kokkos", 0) > 90 and rows.get("OpenMP", 0) < 5,
          "where the time went: Kokkos, not OpenMP: %s" % rows)
    check('id=openmp-in-kokkos' in html, "the report says the OpenMP inside kernels counts as Kokkos")


# ---- in front of a second tool (the user's), which sees every callback
def test_chained():
    probe_out = os.path.join(workdir("kokkos-chain"), "probe.txt")
    chained, proc = measure([PROG], "kokkos-chain",
                            env={"KOKKOS_PROFILE_LIBRARY": PROBE, "KP_PROBE_OUT": probe_out})
    trace = check_patterns(chained, "chained")
    counts = {}
    if check(os.path.exists(probe_out), "the second tool ran to its finalize: %s" % proc.stderr):
        for line in open(probe_out):
            k, v = line.split()
            counts[k] = int(v)
    kernels = sum(1 for _, e in trace.of_type(otf2.events.Enter)
                  if e.region.paradigm == otf2.Paradigm.KOKKOS and e.region.region_role == otf2.RegionRole.LOOP)
    got = counts.get("begin_for", 0) + counts.get("begin_reduce", 0) + counts.get("begin_scan", 0)
    check(got == kernels, "the second tool saw every kernel: %d of %d" % (got, kernels))
    for b, e in (("begin_for", "end_for"), ("begin_reduce", "end_reduce"), ("begin_scan", "end_scan"),
                 ("push", "pop"), ("begin_copy", "end_copy"), ("begin_fence", "end_fence")):
        check(counts.get(b, -1) == counts.get(e, -2), "second tool: %s == %s: %s" % (b, e, counts))
    check(counts.get("load_seq") == 1 and counts.get("init") == 1 and counts.get("finalize") == 1,
          "second tool loaded behind ours (load sequence 1): %s" % counts)
    check(counts.get("bad_id") == 0, "second tool got its own kernel and section ids back: %s" % counts)
    check(counts.get("push") == 2 and counts.get("begin_copy") == 2 and counts.get("begin_fence", 0) >= 1,
          "second tool: regions, deep copies, fence: %s" % counts)
    check(counts.get("create_section") == 1 and counts.get("start_section") == 1 and counts.get("event") == 1,
          "second tool: section and event: %s" % counts)
    # (Kokkos frees its scratch memory after the tools' finalize)
    check(counts.get("alloc", 0) >= 3 and counts.get("dealloc", 0) >= 3 and counts.get("metadata", 0) >= 2, "second tool: allocations, metadata: %s" % counts)
    meta = load_json(chained, "metadata.json")
    check(meta["metadata"].get("kokkosp.next_tool") == PROBE, "metadata names the second tool")


# ---- Kokkos + MPI under mpirun -np 2 sysmeasure: one archive, one summary
def test_mpi():
    if os.environ.get("SM_HAVE_MPI", "yes") != "yes":
        smtest.skip("built without MPI")
    mpi_prog = program("kokkos-mpi")
    out, proc = mpi_measure(2, [mpi_prog], "kokkos-mpi")
    trace = Trace(out)
    check_trace_consistent(trace)
    groups = {l.group.name for l in trace.locations if l.group.name.startswith("MPI Rank")}
    check(len(groups) == 2, "kokkos-mpi: one archive with both ranks: %s" % groups)
    check(proc.stderr.count("sysmeasure:") <= 1, "kokkos-mpi: one closing line: %s" % proc.stderr)
    visits = region_visits_by_rank(trace)
    check(visits.get("mpi_kernel") == {0: 1, 1: 2}, "rank r runs r+1 kernels: %s" % visits.get("mpi_kernel"))
    check(visits.get("rank_work") == {0: 1, 1: 1}, "rank_work once per rank: %s" % visits.get("rank_work"))
    nested = {}
    for loc, events in trace.events.items():
        stack = []
        for e in events:
            if isinstance(e, otf2.events.Enter):
                if e.region.name == "MPI_Allreduce":
                    nested[location_rank(loc)] = tuple(stack)
                stack.append(e.region.name)
            elif isinstance(e, otf2.events.Leave) and stack:
                stack.pop()
    check(nested == {0: ("rank_work",), 1: ("rank_work",)},
          "MPI_Allreduce inside the Kokkos region on each rank: %s" % nested)
    profile = load_json(out, "profile.json")
    cp = callpath(profile, "rank_work", "mpi_kernel")
    if check(cp is not None, "kokkos-mpi: rank_work > mpi_kernel in profile.json"):
        check([r["visits"] for r in cp["per_rank"]] == [1, 2], "per-rank visits: %s" % cp["per_rank"])
    check(callpath(profile, "rank_work", "MPI_Allreduce") is not None, "rank_work > MPI_Allreduce in profile.json")
    meta = load_json(out, "metadata.json")
    check(meta["ranks"] == 2, "kokkos-mpi: metadata of 2 ranks")
    check("Kokkos Version" in meta.get("metadata", {}), "kokkos-mpi: Kokkos metadata")
    # rank r's view: 8 KiB * (r + 1), plus Kokkos' scratch
    hwm = {m["rank"]: m["max"] for m in meta.get("metrics", []) if m["name"] == "Kokkos Host bytes in use"}
    check(sorted(hwm) == [0, 1] and all(8192 * (r + 1) <= hwm[r] < 8192 * (r + 1) + MIB // 4 for r in hwm),
          "kokkos-mpi: each rank's high-water mark in metadata.json: %s" % hwm)


if __name__ == "__main__":
    smtest.run_cases(globals())
