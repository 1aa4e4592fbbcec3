"""Readable at a glance: long C++ names abbreviated in profile.txt and
report.html (full in profile.json and profile.csv, and on hover in the
page), the per-thread table showing the threads that matter at 16 ranks'
worth of threads (the slowest and fastest ranks, threads with events, how
many hidden), one palette (colours mean kinds of work; slow and fast ranks
and metric lines in greys), idle worker threads drawn as idle, and the
metric timeline's axis labels inside the picture."""
import csv
import os
import re

import smtest
from smtest import check, load_json, measure, mpi_measure, program

LONG = ("Kokkos::Impl::ParallelFor<Functor<double, std::vector<int, std::allocator<int> > >, "
        "Kokkos::RangePolicy<Kokkos::Serial, Kokkos::IndexType<long> >, Kokkos::Serial>::execute() const")
SHORT = "Kokkos::Impl::ParallelFor<...>::execute() const"
PLAIN = "b" * 120  # no template: cut at 60 characters


@smtest.fixture
def long_names():
    out, proc = measure([program("named-regions"), "outer|%s=5x2" % LONG, "%s=1" % PLAIN], "long-names")
    return out


def test_long_names_text():
    out = long_names()
    text = open(os.path.join(out, "profile.txt")).read()
    rows = [l for l in text.splitlines() if l.startswith("|")]
    widest = max(len(l) for l in rows)
    check(widest <= 200, "profile.txt's tables at most 200 columns: %d" % widest)
    check(any(SHORT in l for l in rows), "templates collapsed in profile.txt")
    check(all(l.startswith("command") for l in text.splitlines() if LONG in l),
          "the full template name only in the header's command line")
    cut = [l for l in rows if "bbbb" in l]
    check(cut and all("b" * 57 + "..." in l and "b" * 58 not in l for l in cut),
          "a long plain name cut at 60 characters with ...: %s" % cut[:1])


def test_long_names_full_in_files():
    out = long_names()
    profile = load_json(out, "profile.json")
    names = {cp["region"] for cp in profile["callpaths"]}
    check(LONG in names and PLAIN in names, "profile.json has the full names")
    with open(os.path.join(out, "profile.csv")) as f:
        regions = {r["region"] for r in csv.DictReader(f)}
    check(LONG in regions and PLAIN in regions, "profile.csv has the full names")


def test_long_names_html():
    out = long_names()
    html = open(os.path.join(out, "report.html")).read()
    esc = LONG.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    short = SHORT.replace("<", "&lt;").replace(">", "&gt;")
    check('<span class=abbr title="%s">%s</span>' % (esc, short) in html,
          "report.html: the abbreviation with the full name on hover")
    table = html[html.index("id=paths-table"):]
    table = table[:table.index("</table>")]
    check(esc not in re.sub(r'title="[^"]*"', "", table), "the table's text is the short name")


# ---- at 8 ranks of 2+ threads: the per-thread table picks the threads that matter
@smtest.fixture
def ranks8():
    # rank 5 is the slow one; each rank has a helper thread with events,
    # and Open MPI's own threads have none
    out, proc = mpi_measure(8, [program("mpi-ranks"), "1", "5"], "readable-8")
    return out


def test_threads_that_matter():
    out = ranks8()
    text = open(os.path.join(out, "profile.txt")).read()
    profile = load_json(out, "profile.json")
    threads = profile["threads"]
    check(len(threads) > 16, "more than 16 threads in the job: %d" % len(threads))
    legend = text[text.index("threads (|N>>> in the labels):"):]
    legend = legend[:legend.index("\n\n")]
    shown = {int(m.group(1)): int(m.group(2)) for m in re.finditer(r"thread (\d+): rank (\d+)", legend)}
    ranks_shown = set(shown.values())
    check(5 in ranks_shown, "the slowest rank (5) is in the per-thread table: %s" % sorted(ranks_shown))
    check("[slowest rank]" in legend and "[fastest rank]" in legend, "the legend marks them: %s" % legend)
    busy = {}
    for cp in profile["callpaths"]:
        for t in cp["per_thread"]:
            busy[t["member"]] = busy.get(t["member"], 0) + t["visits"]
    idle = [m for m in range(len(threads)) if not busy.get(m)]
    check(idle and not set(idle) & set(shown), "no thread without events shown: %s of %s" % (set(idle) & set(shown), idle))
    m = re.search(r"\.\.\. (\d+) more threads not shown \((\d+) of them without any event\)", legend)
    check(m and int(m.group(1)) == len(threads) - len(shown) and int(m.group(2)) == len(idle),
          "says how many are hidden: %s" % (m and m.group(0)))
    rows = {int(x) for x in re.findall(r"^\| \|(\d+)>>> ", text, re.M)}
    check(rows == set(shown), "the table's rows are the legend's threads: %s / %s" % (sorted(rows), sorted(shown)))


def test_one_palette():
    out = ranks8()
    html = open(os.path.join(out, "report.html")).read()
    imb = html[html.index("id=imbalance"):]
    imb = imb[:imb.index("<h2", 10)]
    fills = set(re.findall(r'fill="(#[0-9a-f]{6})"', imb))
    paradigm = {"#e15759", "#59a14f", "#4e79a7", "#f28e2b"}
    check(fills and not fills & paradigm, "load imbalance drawn without the kinds' colours: %s" % fills)
    check("#2f2f2f" in fills and "#c8c8c8" in fills, "slowest darkest, fastest lightest: %s" % fills)


def test_idle_threads():
    """OpenMP workers between parallel regions: idle, not compute."""
    if os.environ.get("SM_HAVE_OMPT") != "yes" or smtest.CLANG in ("", "no"):
        smtest.skip("no OMPT adapter or no clang -fopenmp")
    prog = smtest.build_program(smtest.CLANG, "kokkos4_tools_env.c", "readable-omp",
                                ["-fopenmp", "-O1", "-ldl", "-Wl,--no-as-needed", "-lstdc++"])
    out, proc = measure([prog], "readable-idle")
    tl = load_json(out, "timeline.json")
    workers = [l for l in tl["lanes"] if "OpenMP thread" in l["name"]]
    mains = [l for l in tl["lanes"] if "(main)" in l["name"]]
    idle = "idle (other threads outside regions)"
    if check(workers and mains, "a lane per thread: %s" % [l["name"] for l in tl["lanes"]]):
        check(all(sum(l["per_mille"].get(idle, [])) > 0 for l in workers)
              and all("compute outside regions" not in l["per_mille"] for l in workers),
              "workers outside regions are idle: %s" % [sorted(l["per_mille"]) for l in workers])
        check(all(idle not in l["per_mille"] for l in mains), "the main thread is never idle")
    html = open(os.path.join(out, "report.html")).read()
    check(idle in html, "the page's legend has idle")


def test_metric_axis_inside():
    out, proc = measure([program("named-regions"), "a=300"], "readable-metrics",
                        launcher_args=["--process-sampling"])
    html = open(os.path.join(out, "report.html")).read()
    figs = re.findall(r"<figure class=metric.*?</figure>", html, re.S)
    if not check(figs, "the page has metric timelines"):
        return
    for fig in figs:
        for x, label in re.findall(r"<text x=(\d+) y=\d+ text-anchor=end>([^<]*)</text>", fig):
            check(int(x) >= 7 * len(label), "axis label %r fits left of x=%s" % (label, x))


if __name__ == "__main__":
    smtest.run_cases(globals())
