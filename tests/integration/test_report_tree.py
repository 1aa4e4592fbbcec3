"""What a Cube or ParaProf user looks for in report.html: the call tree
(expandable, inclusive and exclusive time per path), the distribution of a
chosen path over the ranks and threads (drawn in the browser from the
values in the page), and two runs compared (sysmeasure-report --compare A B: what got
slower or faster, per call path and MPI function, largest change first, as
text and as a section of B's page).  Planted: tests/programs/named-regions
with "step > solve" sleeping 30 ms twice in A and 60 ms twice in B, and
mpi-ranks (rank 2 three times as slow in "work")."""
import html.parser
import os
import re
import shutil
import subprocess

import smtest
from smtest import BUILD, check, load_json, measure, mpi_measure, program, workdir

REPORT = os.path.join(BUILD, "sysmeasure-report")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@smtest.fixture
def runs():
    prog = program("named-regions")
    a, _ = measure([prog, "step|solve=30x2", "step|io=10x2"], "compare-a")
    b, _ = measure([prog, "step|solve=60x2", "step|io=10x2"], "compare-b")
    proc = subprocess.run([REPORT, "--compare", a, b], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=60)
    check(proc.returncode == 0, "--compare exits 0: %s" % proc.stderr)
    return a, b, proc


ROW = re.compile(r"^\s*([+-][0-9.]+ \S+)\s+([0-9.]+)x\s+\S+ \S+\s+\S+ \S+\s+(.*)$")


def text_rows(out):
    """(change, ratio, name) of each row of --compare's text."""
    return [(m.group(1), float(m.group(2)), m.group(3).rstrip())
            for m in map(ROW.match, out.splitlines()) if m]


def test_compare_text_names_slower_first():
    a, b, proc = runs()
    rows = text_rows(proc.stdout)
    if not check(rows, "rows in the text: %s" % proc.stdout):
        return
    change, ratio, name = rows[0]
    check(name == "step / solve", "the slowed region first: %s" % (rows[0],))
    check(change.startswith("+") and 1.7 <= ratio <= 2.3, "twice as slow: %s" % (rows[0],))
    io = [r for r in rows if r[2] == "step / io"]
    check(io and 0.8 <= io[0][1] <= 1.25, "io about the same: %s" % io)


def test_compare_section_in_page():
    a, b, proc = runs()
    page = open(os.path.join(b, "report.html")).read()
    check("<h2 id=compare>" in page and a in page, "B's page has the comparison, naming A")
    table = page[page.index("id=compare-table"):]
    first = re.search(r"<tbody>\s*<tr><td class=path>([^<]*)</td><td>[^<]*</td><td class=n "
                      r"data-v=\"([0-9.e+-]+)\">[^<]*</td><td class=n data-v=\"([0-9.e+-]+)\"", table)
    check(first and first.group(1) == "step / solve" and 1.7 <= float(first.group(3)) <= 2.3,
          "the page's first row: %s" % (first and str(first.groups())))
    # The ratio is that of the profiles' exclusive times.
    def excl(out):
        cp = [c for c in load_json(out, "profile.json")["callpaths"] if c["path"] == ["step", "solve"]][0]
        return sum(r["exclusive"] for r in cp["per_rank"])
    check(first and abs(float(first.group(3)) - excl(b) / excl(a)) < 1e-6, "ratio from the profiles")


def test_compare_refuses_a_non_output():
    a, b, proc = runs()
    empty = workdir("compare-empty")
    bad = subprocess.run([REPORT, "--compare", empty, b], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, timeout=60)
    check(bad.returncode == 2 and bad.stderr.count("\n") == 1 and empty in bad.stderr,
          "one line naming the folder, exit 2: %d %s" % (bad.returncode, bad.stderr))
    one = subprocess.run([REPORT, "--compare", a], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, timeout=60)
    check(one.returncode == 2 and "two folders" in one.stderr, "--compare needs two: %s" % one.stderr)


@smtest.fixture
def mpi_runs():
    ranks = program("mpi-ranks")
    a, _ = mpi_measure(4, [ranks, "0", "9"], "compare-mpi-a")  # no slow rank
    b, _ = mpi_measure(4, [ranks, "0", "2"], "compare-mpi-b")  # rank 2 60 ms a step
    proc = subprocess.run([REPORT, "--compare", a, b], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=60)
    return a, b, proc


def test_compare_mpi_functions():
    a, b, proc = mpi_runs()
    rows = text_rows(proc.stdout)
    # rank 2's 4 x 40 ms more in "work" (1.5 x in all), and the others'
    # waiting for it in MPI_Recv, which changed the most
    work = [r for r in rows if r[2] == "work"]
    check(work and work[0][0].startswith("+") and 1.3 <= work[0][1] <= 1.8,
          "work: rank 2 three times as slow: %s" % work)
    recv = [r for r in rows if r[2] == "MPI function MPI_Recv"]
    check(recv and recv[0][0].startswith("+") and rows.index(recv[0]) < rows.index(work[0]),
          "MPI_Recv (the wait) compared, before work: %s" % rows[:4])


class Tree(html.parser.HTMLParser):
    """The call tree of a page: {path of names: (id, summary text, data-d)}."""

    def __init__(self):
        super().__init__()
        self.inside, self.stack, self.nodes, self.cur, self.span = False, [], {}, None, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "div" and a.get("id") == "calltree":
            self.inside = True
        if not self.inside:
            return
        if tag == "details":
            self.stack.append([a.get("id"), "", "", None])
        elif tag == "summary" and self.stack:
            self.stack[-1][3] = a.get("data-d")
        elif tag == "span" and self.stack:
            self.span = a.get("class")

    def handle_endtag(self, tag):
        if not self.inside:
            return
        if tag == "details" and self.stack:
            node = self.stack.pop()
            path = tuple(n[1] for n in self.stack) + (node[1],)
            self.nodes[path] = (node[0], node[2], node[3])
        elif tag == "span":
            self.span = None
        elif tag == "div" and not self.stack:
            self.inside = False

    def handle_data(self, data):
        if self.inside and self.stack and self.span == "tn":
            self.stack[-1][1] += data
        elif self.inside and self.stack and self.span == "tm":
            self.stack[-1][2] += data


def test_call_tree():
    a, b, proc = runs()
    t = Tree()
    t.feed(open(os.path.join(b, "report.html")).read())
    check(("step",) in t.nodes and ("step", "solve") in t.nodes and ("step", "io") in t.nodes,
          "step > solve and step > io in the tree: %s" % sorted(t.nodes))
    solve = t.nodes.get(("step", "solve"))
    cp = [c for c in load_json(b, "profile.json")["callpaths"] if c["path"] == ["step", "solve"]][0]
    incl = sum(r["inclusive"] for r in cp["per_rank"]) / 1e6
    m = re.match(r"([0-9.]+) ms \(([0-9.]+)%\) incl, ([0-9.]+) ms excl, 2 visits", solve[1] if solve else "")
    check(m and abs(float(m.group(1)) - incl) / incl < 0.01, "solve's inclusive time: %s vs %.1f ms"
          % (solve and solve[1], incl))
    step = t.nodes.get(("step",))
    check(step and re.search(r"\(100\.0%\)", step[1]), "step is all of the time: %s" % (step and step[1]))
    page = open(os.path.join(b, "report.html")).read()
    order = [page.index(">step<"), page.index(">solve<"), page.index(">io<")]
    check(order == sorted(order), "children by inclusive time: solve before io")


@smtest.fixture
def imbalanced():
    out, _ = mpi_measure(4, [program("mpi-ranks"), "0", "2"], "tree-dist")
    return out


def test_distribution_values():
    out = imbalanced()
    t = Tree()
    t.feed(open(os.path.join(out, "report.html")).read())
    work = t.nodes.get(("work",))
    if not check(work and work[2], "work has its per-rank values: %s" % (work,)):
        return
    values = dict((int(r), float(v)) for r, v in (x.split(":") for x in work[2].split(",")))
    check(sorted(values) == [0, 1, 2, 3], "one value per rank: %s" % values)
    check(max(values, key=values.get) == 2 and values[2] > 2 * values[0],
          "rank 2 the slowest, about 3 x: %s" % values)


def test_distribution_drawn_in_browser():
    if not CHROMIUM:
        smtest.skip("no chromium")
    out = imbalanced()
    t = Tree()
    page = os.path.join(out, "report.html")
    t.feed(open(page).read())
    node = t.nodes[("work",)][0]
    profile = workdir("tree-chromium")
    dom = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                          "--user-data-dir=" + profile, "--dump-dom", "file://%s#dist-%s" % (page, node)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=240)
    at = dom.stdout.find('<div id="dist"')
    text = dom.stdout[at:] if at >= 0 else ""
    ranks = re.search(r'<div class="dist-ranks">(.*?)</div>', text, re.S)
    threads = re.search(r'<div class="dist-threads">(.*?)</div>', text, re.S)
    check(ranks and "4 ranks," in ranks.group(1) and "slowest rank 2," in ranks.group(1),
          "over the ranks, the slowest named: %s" % text[:300])
    check(ranks and ranks.group(1).count("<rect") == 16, "a histogram of 16 columns")
    check(threads and re.search(r"slowest thread \d+ \(rank 2\)", threads.group(1))
          and threads.group(1).count("<rect") == 16,
          "over the threads too, the slowest rank 2's: %s" % (threads and threads.group(1)[:200]))


if __name__ == "__main__":
    smtest.run_cases(globals())
