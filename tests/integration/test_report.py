"""report.html in a real browser: a 4-rank MPI job with planted imbalance
(tests/programs/mpi_imbalance.c: rank r sleeps (r + 1) x 30 ms in "solve",
so rank 3 is the slowest and rank 0 the fastest) writes report.html at
finalize; headless Chromium loads it, and the page's text after its script
ran must name the planted ranks and hold every section, with nothing on
the browser's console; the screenshot
(kept as tests/logs/report-screenshot.png) must not be blank; the file
loads nothing from elsewhere and escapes the region name with markup.
sysmeasure-report rebuilds the same page; on a folder that is no
sysmeasure output it says so in one line and exits 2.  A job that ends
without MPI_Finalize gets its page from sysmeasure-merge."""
import os
import re
import shutil
import struct
import subprocess
import zlib

from smtest import BUILD, check, finish, measure, mpi_measure, program, workdir

if not check(os.environ.get("SM_HAVE_MPI", "yes") == "yes", "sysmeasure is built with MPI"):
    finish()
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if not check(CHROMIUM is not None, "Chromium is installed (apt-get install chromium)"):
    finish()
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


out, proc = mpi_measure(4, [program("mpi-imbalance")], "report")
page = os.path.join(out, "report.html")
if not check(os.path.exists(page), "report.html written at finalize; stderr: %s" % proc.stderr):
    finish()
with open(page, encoding="utf-8") as f:
    html = f.read()

# Self-contained: no URL that loads anything, no external script or style.
check(not re.search(r"https?://", html), "report.html names no http(s) URL")
check(not re.search(r"<(script|img|link|iframe)[^>]*\b(src|href)=", html, re.I),
      "no element loads a resource")
check("&lt;b&gt;halo&amp;exchange&lt;/b&gt;" in html and "<b>halo&exchange</b>" not in html,
      "the region name with markup is escaped")

# The page as the browser shows it, after its script ran.
dom = chromium("--enable-logging=stderr", "--v=0", "--dump-dom", "file://" + page)
check(dom.returncode == 0 and "<body" in dom.stdout,
      "chromium --dump-dom: rc %d, stderr %s" % (dom.returncode, dom.stderr[-2000:]))
console = [l for l in dom.stderr.splitlines() if ":CONSOLE" in l]
check(not console, "no console messages (script errors): %s" % console)
text = re.sub(r"<[^>]+>", " ", dom.stdout)
text = re.sub(r"\s+", " ", text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&"))
for section in ("The run", "Notes and warnings", "Configuration", "Where the time went",
                "In total", "Per rank", "Top call paths", "Load imbalance", "MPI",
                "Communication matrix"):
    check(section in text, "section %r on the page" % section)
m = re.search(r"Most imbalanced work \(outside MPI\): (.*?) — slowest rank (\d+) .*?fastest rank "
              r"(\d+)", text)
check(m is not None and m.group(1).strip() == "timestep / solve" and m.group(2) == "3" and
      m.group(3) == "0", "the headline names solve, slowest rank 3, fastest rank 0: %s" %
      (m.group(0) if m else text[:300]))
check(re.search(r"timestep / solve rank 3 \([\d.]+ ms\) rank 0 \([\d.]+ ms\)", text) is not None,
      "the imbalance table's row of solve: slowest rank 3, fastest rank 0")
check("4 ranks × up to" in text, "ranks x threads in the run section")
for fn in ("MPI_Barrier", "MPI_Send", "MPI_Irecv", "MPI_Wait"):
    check(re.search(r"<td>%s</td>" % fn, dom.stdout) is not None, "%s in the MPI table" % fn)
check(dom.stdout.count('id="matrix-messages"') == 1 and dom.stdout.count('id="matrix-bytes"') == 1,
      "both heat maps")
# 4 ranks x 4 steps: solve visited 16 times
check(re.search(r'timestep / <b>solve</b></td><td>user</td><td class="n" data-v="4">4</td><td class="n" '
                r'data-v="16">16</td>', dom.stdout) is not None, "solve: 4 ranks, 16 visits")

# The screenshot: every section drawn, not a blank page.
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

# sysmeasure-report rebuilds the page from the folder's files.
os.unlink(page)
r = subprocess.run([REPORT, out], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
check(r.returncode == 0 and os.path.exists(page), "sysmeasure-report: rc %d %s" %
      (r.returncode, r.stderr))
if os.path.exists(page):
    with open(page, encoding="utf-8") as f:
        check(f.read() == html, "sysmeasure-report writes the same page as finalize")

# Bad input: one line, exit 2, nothing written.
bad = workdir("report-bad")
for args, why in (([bad], "is not a sysmeasure output folder"),
                  ([os.path.join(bad, "none")], "is not a folder"),
                  ([], "one folder expected")):
    r = subprocess.run([REPORT] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    check(r.returncode == 2 and r.stderr.count("\n") == 1 and why in r.stderr,
          "sysmeasure-report %s: rc %d, %r" % (args, r.returncode, r.stderr))
check(not os.path.exists(os.path.join(bad, "report.html")), "nothing written into a foreign folder")
shutil.copy(os.path.join(out, "metadata.json"), bad)
with open(os.path.join(bad, "profile.json"), "w") as f:
    f.write('{"callpaths": [{"path": ["solve"], ')
r = subprocess.run([REPORT, bad], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
check(r.returncode == 2 and r.stderr.count("\n") == 1 and "profile.json is damaged" in r.stderr,
      "a damaged profile.json: rc %d, %r" % (r.returncode, r.stderr))
shutil.rmtree(bad, ignore_errors=True)
shutil.rmtree(os.path.dirname(out), ignore_errors=True)

# A process without MPI: its page; none with --no-report.
out, proc = measure([program("sleep-regions")], "report-single")
page = os.path.join(out, "report.html")
if check(os.path.exists(page), "report.html of a process without MPI: %s" % proc.stderr):
    with open(page, encoding="utf-8") as f:
        single = f.read()
    check("1 rank &times;" in single and "No MPI function was called." in single,
          "one rank, no MPI")
out, proc = measure([program("sleep-regions")], "report-off", launcher_args=["--no-report"])
check(os.path.exists(os.path.join(out, "profile.json")) and
      not os.path.exists(os.path.join(out, "report.html")), "--no-report: no report.html")

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
shutil.rmtree(os.path.dirname(out), ignore_errors=True)
finish()
