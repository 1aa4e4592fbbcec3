"""report.html in a real browser: a 4-rank MPI job with planted imbalance
(tests/programs/mpi_imbalance.c: rank r sleeps (r + 1) x 30 ms in "solve",
so rank 3 is the slowest and rank 0 the fastest) writes report.html at
finalize; headless Chromium loads it, and the page's text after its script
ran must name the planted ranks and hold every section, with nothing on
the browser's console; the screenshot
(kept as tests/logs/report-screenshot.png) must not be blank; the file
loads nothing from elsewhere and escapes the region name with markup.
The timeline (timeline.json, binned while the archive was written) has a
lane per rank; inside the time steps as the OTF2 reader finds them in the
archive, rank 3's lane is mostly its user region and rank 0's mostly MPI.
A PAPI (software-defined events) run shows the planted counts in the
counters section; a sampling run the hot functions, the flame graph and
the metric timelines, in the browser without console errors.
sysmeasure-report rebuilds the same page; on a folder that is no
sysmeasure output it says so in one line and exits 2.  A job that ends
without MPI_Finalize gets its page from sysmeasure-merge."""
import os
import re
import shutil
import struct
import subprocess
import zlib

import otf2

import smtest
from smtest import (BUILD, Trace, check, finish, load_json, measure, mpi_measure, program,
                    workdir)

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
REPORT = os.path.join(BUILD, "sysmeasure-report")
LOGS = os.path.join(BUILD, "tests", "logs")


def chromium(*args):
    """Headless Chromium with a profile of its own (no state shared between runs)."""
    profile = workdir("report-chromium")
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--user-data-dir=" + profile] + list(args)
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=240)
    shutil.rmtree(profile, ignore_errors=True)
    return proc


def png_pixels(path):
    """(width, height, set of distinct RGB(A) pixels sampled) of an 8-bit PNG."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return 0, 0, set()
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            width, height, depth, ctype = struct.unpack(">IIBB", body[:10])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    if depth != 8 or ctype not in (2, 6):
        return width, height, set()
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    prev = bytearray(stride)
    colours = set()
    for y in range(height):
        ftype = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):  # undo the PNG filters
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if ftype == 1:
                line[i] = (line[i] + a) & 255
            elif ftype == 2:
                line[i] = (line[i] + b) & 255
            elif ftype == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        if y % 4 == 0:
            for x in range(0, width, 2):
                colours.add(bytes(line[x * bpp:x * bpp + 3]))
        prev = line
    return width, height, colours


class NoPage(Exception):
    """The MPI job wrote no report.html: the cases that read it cannot run."""


# ---- a 4-rank MPI job with planted imbalance, its page, and the page as
# the browser shows it
@smtest.fixture
def imbalance():
    """The job's (out, proc, report.html's path, its text as finalize wrote it)."""
    out, proc = mpi_measure(4, [program("mpi-imbalance")], "report")
    page = os.path.join(out, "report.html")
    if not check(os.path.exists(page), "report.html written at finalize; stderr: %s" % proc.stderr):
        raise NoPage(proc.stderr)
    with open(page, encoding="utf-8") as f:
        html = f.read()
    return out, proc, page, html


@smtest.fixture
def browser_view():
    """The page as the browser shows it, after its script ran: (chromium's
    process with the DOM on stdout, the page's text)."""
    page = imbalance()[2]
    dom = chromium("--enable-logging=stderr", "--v=0", "--dump-dom", "file://" + page)
    text = re.sub(r"<[^>]+>", " ", dom.stdout)
    text = re.sub(r"\s+", " ", text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&"))
    return dom, text


def test_page_self_contained():
    # Self-contained: no URL that loads anything, no external script or style.
    html = imbalance()[3]
    check(not re.search(r"https?://", html), "report.html names no http(s) URL")
    check(not re.search(r"<(script|img|link|iframe)[^>]*\b(src|href)=", html, re.I),
          "no element loads a resource")
    check("&lt;b&gt;halo&amp;exchange&lt;/b&gt;" in html and "<b>halo&exchange</b>" not in html,
          "the region name with markup is escaped")


def test_page_loads_without_console_messages():
    dom, _ = browser_view()
    check(dom.returncode == 0 and "<body" in dom.stdout,
          "chromium --dump-dom: rc %d, stderr %s" % (dom.returncode, dom.stderr[-2000:]))
    console = [l for l in dom.stderr.splitlines() if ":CONSOLE" in l]
    check(not console, "no console messages (script errors): %s" % console)


def test_page_sections():
    _, text = browser_view()
    for section in ("The run", "Notes and warnings", "Configuration", "Where the time went",
                    "In total", "Per rank", "Timeline", "Top call paths", "Load imbalance", "MPI",
                    "Communication matrix"):
        check(section in text, "section %r on the page" % section)


def test_page_names_planted_imbalance():
    dom, text = browser_view()
    m = re.search(r"Most imbalanced work \(outside MPI\): (.*?) — slowest rank (\d+) .*?fastest rank "
                  r"(\d+)", text)
    check(m is not None and m.group(1).strip() == "timestep / solve" and m.group(2) == "3" and
          m.group(3) == "0", "the headline names solve, slowest rank 3, fastest rank 0: %s" %
          (m.group(0) if m else text[:300]))
    check(re.search(r"timestep / solve rank 3 \([\d.]+ ms\) rank 0 \([\d.]+ ms\)", text) is not None,
          "the imbalance table's row of solve: slowest rank 3, fastest rank 0")
    # 4 ranks x 4 steps: solve visited 16 times
    check(re.search(r'timestep / <b>solve</b></td><td>user</td><td class="n" data-v="4">4</td><td class="n" '
                    r'data-v="16">16</td>', dom.stdout) is not None, "solve: 4 ranks, 16 visits")


def test_page_run_and_mpi_sections():
    dom, text = browser_view()
    check("4 ranks × up to" in text, "ranks x threads in the run section")
    for fn in ("MPI_Barrier", "MPI_Send", "MPI_Irecv", "MPI_Wait"):
        check(re.search(r"<td>%s</td>" % fn, dom.stdout) is not None, "%s in the MPI table" % fn)
    check(dom.stdout.count('id="matrix-messages"') == 1 and dom.stdout.count('id="matrix-bytes"') == 1,
          "both heat maps")


def test_timeline_lanes():
    # The timeline: one lane per rank, from the trace.
    out = imbalance()[0]
    dom, text = browser_view()
    lanes = load_json(out, "timeline.json")["lanes"]
    check([(l["rank"], l["kind"]) for l in lanes] == [(r, "cpu") for r in range(4)],
          "timeline.json: one lane per rank: %s" % [(l["name"], l["kind"]) for l in lanes])
    check(len(re.findall(r'<g class="lane" data-rank="\d" data-kind="cpu"', dom.stdout)) == 4 and
          "rank 3 Thread 0 (main)" in text, "the page draws the 4 lanes")


def test_timeline_planted_shares():
    # Inside the time steps as the OTF2 reader finds them in the archive,
    # rank 3's lane is mostly its user region and rank 0's mostly MPI.
    out = imbalance()[0]
    tl = load_json(out, "timeline.json")
    lanes = tl["lanes"]
    trace = Trace(out)
    begins = [e.time for _, e in trace.of_type(otf2.events.Enter) if e.region.name == "timestep"]
    ends = [e.time for _, e in trace.of_type(otf2.events.Leave) if e.region.name == "timestep"]
    bins, bin_ns, start = tl["bins"], tl["bin_ns"], tl["start_ns"]
    b0 = int((min(begins) - start) / bin_ns) + 1
    b1 = int((max(ends) - start) / bin_ns) - 1

    def share(lane, kind):
        """The lane's share of time in kind over the time steps' bins."""
        per = lane["per_mille"].get(kind, [0] * bins)
        return sum(per[b0:b1]) / (1000.0 * max(b1 - b0, 1))

    check(b1 - b0 >= 20, "the time steps span %d of %d bins" % (b1 - b0, bins))
    check(share(lanes[3], "user regions") > 0.6 and share(lanes[3], "MPI") < 0.3,
          "rank 3 (the slow one) computes in its user region: user %.2f, MPI %.2f" %
          (share(lanes[3], "user regions"), share(lanes[3], "MPI")))
    check(share(lanes[0], "MPI") > 0.5 and share(lanes[0], "user regions") < 0.4,
          "rank 0 (the fast one) waits in MPI: MPI %.2f, user %.2f" %
          (share(lanes[0], "MPI"), share(lanes[0], "user regions")))
    for r in range(4):
        print("timeline rank %d over the steps: user %.2f, MPI %.2f" %
              (r, share(lanes[r], "user regions"), share(lanes[r], "MPI")))


def test_screenshot_not_blank():
    # The screenshot: every section drawn, not a blank page.
    page = imbalance()[2]
    os.makedirs(LOGS, exist_ok=True)
    shot = os.path.join(LOGS, "report-screenshot.png")
    if os.path.exists(shot):
        os.unlink(shot)
    sc = chromium("--window-size=1200,3200", "--hide-scrollbars", "--screenshot=" + shot,
                  "file://" + page)
    check(os.path.exists(shot), "screenshot written: %s" % sc.stderr[-2000:])
    if os.path.exists(shot):
        w, h, colours = png_pixels(shot)
        print("screenshot %s: %dx%d, %d colours sampled" % (shot, w, h, len(colours)))
        check(w == 1200 and h == 3200 and len(colours) > 50,
              "the screenshot is not blank: %dx%d, %d colours" % (w, h, len(colours)))
        # the planted colours: MPI red and user blue of the bars
        check(b"\xe1\x57\x59" in colours and b"\x4e\x79\xa7" in colours,
              "the stacked bars' colours are on the screenshot")


def test_report_tool_rebuilds_page():
    # sysmeasure-report rebuilds the page from the folder's files.  (It
    # removes the page finalize wrote: the cases above that read it come
    # first, and the fixture's copy of its text stays.)
    out, _, page, html = imbalance()
    os.unlink(page)
    r = subprocess.run([REPORT, out], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(r.returncode == 0 and os.path.exists(page), "sysmeasure-report: rc %d %s" %
          (r.returncode, r.stderr))
    if os.path.exists(page):
        with open(page, encoding="utf-8") as f:
            check(f.read() == html, "sysmeasure-report writes the same page as finalize")


# ---- bad input to sysmeasure-report: one line, exit 2, nothing written
def report_refuses(args, why):
    r = subprocess.run([REPORT] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    check(r.returncode == 2 and r.stderr.count("\n") == 1 and why in r.stderr,
          "sysmeasure-report %s: rc %d, %r" % (args, r.returncode, r.stderr))


def test_report_tool_foreign_folder():
    bad = workdir("report-bad")
    report_refuses([bad], "is not a sysmeasure output folder")
    check(not os.path.exists(os.path.join(bad, "report.html")), "nothing written into a foreign folder")
    shutil.rmtree(bad, ignore_errors=True)


def test_report_tool_no_such_folder():
    bad = workdir("report-bad")
    report_refuses([os.path.join(bad, "none")], "is not a folder")
    shutil.rmtree(bad, ignore_errors=True)


def test_report_tool_no_argument():
    report_refuses([], "one folder expected")


def test_report_tool_damaged_profile():
    bad = workdir("report-bad")
    shutil.copy(os.path.join(imbalance()[0], "metadata.json"), bad)
    with open(os.path.join(bad, "profile.json"), "w") as f:
        f.write('{"callpaths": [{"path": ["solve"], ')
    r = subprocess.run([REPORT, bad], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(r.returncode == 2 and r.stderr.count("\n") == 1 and "profile.json is damaged" in r.stderr,
          "a damaged profile.json: rc %d, %r" % (r.returncode, r.stderr))
    shutil.rmtree(bad, ignore_errors=True)


# ---- a process without MPI: its page; none with --no-report
def test_page_of_process_without_mpi():
    out, proc = measure([program("sleep-regions")], "report-single")
    page = os.path.join(out, "report.html")
    if check(os.path.exists(page), "report.html of a process without MPI: %s" % proc.stderr):
        with open(page, encoding="utf-8") as f:
            single = f.read()
        check("1 rank &times;" in single and "No MPI function was called." in single,
              "one rank, no MPI")


def test_no_report_option():
    out, proc = measure([program("sleep-regions")], "report-off", launcher_args=["--no-report"])
    check(os.path.exists(os.path.join(out, "profile.json")) and
          not os.path.exists(os.path.join(out, "report.html")), "--no-report: no report.html")


def test_papi_counters_section():
    # PAPI (software-defined events, tests/programs/papi_sde.c): on thread k
    # (f = k + 1) "outer" counts 10f WORK exclusive, "inner" 6f WORK and 300
    # BYTES; two threads.
    WORK, BYTES = "sde:::SMTEST::WORK", "sde:::SMTEST::BYTES"
    out, proc = measure([program("papi-sde")], "report-papi",
                        launcher_args=["--papi", WORK + "," + BYTES])
    page = os.path.join(out, "report.html")
    if check(os.path.exists(page), "report.html of the PAPI run: %s" % proc.stderr):
        with open(page, encoding="utf-8") as f:
            papi = f.read()
        check("<h2 id=counters>Counters</h2>" in papi and "<th>%s</th>" % WORK in papi,
              "the counters section with its events")
        check(re.search(r'<td class=path>outer</td><td class=n data-v="30">30</td>'
                        r'<td class=n data-v="0">0</td>', papi) is not None and
              re.search(r'<td class=path>outer / inner</td><td class=n data-v="18">18</td>'
                        r'<td class=n data-v="600">600</td>', papi) is not None,
              "the planted counts: outer 30 WORK, inner 18 WORK and 600 BYTES")
        check("<h2 id=sampling>" not in papi and "<h2 id=gpu>" not in papi,
              "no sampling or GPU section without their data")
    shutil.rmtree(os.path.dirname(out), ignore_errors=True)


def test_sampling_sections():
    # Call-stack and process sampling: hot functions, flame graph, metrics,
    # in the browser without console errors.
    out, proc = measure([program("sampling-hot"), "2", "3000000"], "report-sampling",
                        launcher_args=["--sampling", "--sampling-freq", "1000", "--process-sampling",
                                       "--sampling-interval", "50"])
    page = os.path.join(out, "report.html")
    if check(os.path.exists(page), "report.html of the sampling run: %s" % proc.stderr):
        dom = chromium("--enable-logging=stderr", "--v=0", "--dump-dom", "file://" + page)
        console = [l for l in dom.stderr.splitlines() if ":CONSOLE" in l]
        check(dom.returncode == 0 and not console, "sampling page: rc %d, console %s" %
              (dom.returncode, console))
        for section in ("Sampled hot functions", "Flame graph", "Metric timelines"):
            check(section in dom.stdout, "section %r on the sampling page" % section)
        m = re.search(r'<table class="sortable" id="hot-table">.*?<tbody>\s*<tr><td class="path">'
                      r'([^<]*)</td>', dom.stdout, re.S)
        check(m is not None and m.group(1) == "hot", "the hottest function is hot: %s" %
              (m.group(1) if m else None))
        check(re.search(r'<svg id="flame"[^>]*>.*?<title>hot \(sampled\)', dom.stdout, re.S)
              is not None, "the flame graph has the sampled frame hot")
        check('aria-label="memory resident"' in dom.stdout, "the memory timeline is drawn")
        os.makedirs(LOGS, exist_ok=True)
        shot = os.path.join(LOGS, "report-sampling-screenshot.png")
        chromium("--window-size=1200,3200", "--hide-scrollbars", "--screenshot=" + shot,
                 "file://" + page)
        check(os.path.exists(shot), "the sampling page's screenshot is kept")
    shutil.rmtree(os.path.dirname(out), ignore_errors=True)


def test_merge_writes_page():
    # A job without MPI_Finalize: sysmeasure-merge writes report.html too.
    out, proc = mpi_measure(2, [program("mpi-patterns"), "nofinalize"], "report-merge",
                            expect_rc=None, env={"OMPI_MCA_odls_base_sigkill_timeout": "5"})
    page = os.path.join(out, "report.html")
    check(not os.path.exists(page), "no report.html before the merge")
    r = subprocess.run([os.path.join(BUILD, "sysmeasure-merge"), out], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    check(r.returncode == 0 and os.path.exists(page), "sysmeasure-merge writes report.html: rc %d %s"
          % (r.returncode, r.stderr))
    if os.path.exists(page):
        with open(page, encoding="utf-8") as f:
            merged = f.read()
        check("<td>MPI_Send</td>" in merged and "2 ranks &times;" in merged and
              'id="matrix-bytes"' in merged, "the merged page has both ranks, MPI_Send and the matrix")
        tl = load_json(out, "timeline.json")
        check(sorted({l["rank"] for l in tl["lanes"]}) == [0, 1] and
              all(l["per_mille"].get("MPI") for l in tl["lanes"] if l["kind"] == "cpu" and
                  l["name"].endswith("(main)")) and
              merged.count('<g class=lane data-rank="') == len(tl["lanes"]),
              "sysmeasure-merge writes timeline.json with both ranks' lanes, on the page: %s" %
              [(l["name"], sorted(l["per_mille"])) for l in tl["lanes"]])
    shutil.rmtree(os.path.dirname(out), ignore_errors=True)


if __name__ == "__main__":
    # Without MPI or a browser this file fails (it is not skipped): both are
    # what it is about.
    if not check(os.environ.get("SM_HAVE_MPI", "yes") == "yes", "sysmeasure is built with MPI"):
        finish()
    if not check(CHROMIUM is not None, "Chromium is installed (apt-get install chromium)"):
        finish()
    smtest.run_cases(globals())
