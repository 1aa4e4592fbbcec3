"""Files that sysmeasure reads but does not control (issue 27): each reader
opens without blocking, takes only a regular file, bounds what it reads and
checks every number it sizes or indexes by; bad input costs one line, never
a crash, a hang or memory without bound, and the measured program keeps its
exit code and output.

- sysmeasure-report on a real 2-rank MPI folder with "ranks": -3 in
  profile.json (it divided by zero in the communication matrix's heat map)
  and in metadata.json (it looped over 4,294,967,293 ranks): one line, exit 2;
- sysmeasure-report with a FIFO as profile.json: one line, no hang; with
  200,000 hosts in metadata.json or 200,000 sampled functions in
  profile.json: the page in well under a second (it compared each name
  with every one before it: minutes);
- sysmeasure-convert --perfetto on an anchor file (traces.otf2) with 8
  bytes 0xff over its number of properties (libotf2 looped, its memory
  growing): one line, exit 2, at once;
- a FIFO, and a symbolic link to /dev/zero, in place of profile.json in
  the output folder: the end of the run skips it with one line and no
  longer reads it back (it hung at exit, or grew without bound): the
  program's exit code and output kept, report.html written without it;
- --filter, --gpu-metrics-file and --config naming /dev/zero or a FIFO:
  one line naming what it is, exit 2, the program not run (memory without
  bound, or a hang, before).

The tool runs are limited to 4 GiB of address space and a timeout, so that
a regression fails here instead of filling the machine."""
import json
import os
import re
import resource
import shutil
import subprocess
import time

from smtest import (BUILD, LAUNCHER, check, clean_env, finish, mpi_measure, program, workdir)

REPORT = os.path.join(BUILD, "sysmeasure-report")
CONVERT = os.path.join(BUILD, "sysmeasure-convert")
EXIT = program("exit-code")
HAVE_MPI = os.environ.get("SM_HAVE_MPI", "yes") == "yes"
HAVE_PERFETTO = os.environ.get("SM_HAVE_PERFETTO", "yes") == "yes"
work = workdir("hostile-readers")


def limit_memory():
    """In the child: 4 GiB of address space (a reader growing without bound
    stops there instead of taking the machine)."""
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


def bounded(cmd, timeout):
    """Runs cmd; returns (rc, stdout, stderr, seconds), rc None when it ran
    past timeout (then it is killed)."""
    start = time.monotonic()
    try:
        p = subprocess.run(cmd, env=clean_env(), cwd=work, timeout=timeout,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           errors="replace", preexec_fn=limit_memory)
        return p.returncode, p.stdout, p.stderr, time.monotonic() - start
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        return None, out, err, time.monotonic() - start


# Each tool names itself in its messages ("sysmeasure-merge: error: ").
ERROR_LINE = re.compile(r"^sysmeasure(-[a-z+]+)?: error: ")


def errors(stderr):
    return [l for l in stderr.splitlines() if ERROR_LINE.match(l)]


def one_refusal(what, result, *words, rc=2, seconds=10):
    """A tool's refusal: exit rc, exactly one line on stderr, within seconds,
    the line holding each of words."""
    code, _, err, took = result
    check(code is not None, "%s: it ended (it ran past its timeout: a hang)" % what)
    check(code == rc, "%s: exit %d, not %r; stderr %r" % (what, rc, code, err[-500:]))
    lines = err.splitlines()
    check(len(lines) == 1 and ERROR_LINE.match(lines[0]) is not None,
          "%s: exactly one error line: %r" % (what, err[-1000:]))
    for w in words:
        check(w in err, "%s: the line says %r: %r" % (what, w, err[-500:]))
    check(took < seconds, "%s: took %.1f s (at most %d)" % (what, took, seconds))


# One real job's output folder, copied for each case.
job = None
if HAVE_MPI:
    job, _ = mpi_measure(2, [program("mpi-imbalance")], "hostile-job")


def job_copy(name):
    dst = os.path.join(work, name)
    shutil.copytree(job, dst)
    if os.path.exists(os.path.join(dst, "report.html")):
        os.unlink(os.path.join(dst, "report.html"))
    return dst


def rewrite_json(folder, name, change):
    path = os.path.join(folder, name)
    with open(path) as f:
        doc = json.load(f)
    change(doc)
    with open(path, "w") as f:
        json.dump(doc, f)


def test_report_profile_ranks_negative():
    """profile.json with "ranks": -3 (as the job's own and its matrix's):
    it divided by zero (SIGFPE) in the heat map."""
    if not check(job is not None, "sysmeasure is built with MPI (the case needs a 2-rank job)"):
        return
    folder = job_copy("profile-ranks")
    with open(os.path.join(folder, "profile.json")) as f:
        check(json.load(f).get("comm_matrix", {}).get("pairs"),
              "the job's profile.json has a communication matrix (the heat map's input)")

    def minus3(doc):
        doc["ranks"] = -3
        doc["comm_matrix"]["ranks"] = -3
    rewrite_json(folder, "profile.json", minus3)
    one_refusal("report, profile.json ranks -3", bounded([REPORT, folder], 20),
                "profile.json is damaged", '"ranks" is -3')
    check(not os.path.exists(os.path.join(folder, "report.html")),
          "no report.html from a damaged profile.json")


def test_report_metadata_ranks_negative():
    """metadata.json with "ranks": -3: it looped to 4,294,967,293 ranks."""
    if not check(job is not None, "sysmeasure is built with MPI (the case needs a 2-rank job)"):
        return
    folder = job_copy("metadata-ranks")
    rewrite_json(folder, "metadata.json", lambda doc: doc.update(ranks=-3))
    one_refusal("report, metadata.json ranks -3", bounded([REPORT, folder], 20),
                "metadata.json is damaged", '"ranks" is -3')
    check(not os.path.exists(os.path.join(folder, "report.html")),
          "no report.html from a damaged metadata.json")


def test_report_fifo_profile():
    """sysmeasure-report on a folder whose profile.json is a FIFO: it
    blocked on opening it."""
    if not check(job is not None, "sysmeasure is built with MPI (the case needs a 2-rank job)"):
        return
    folder = job_copy("report-fifo")
    os.unlink(os.path.join(folder, "profile.json"))
    os.mkfifo(os.path.join(folder, "profile.json"))
    one_refusal("report, FIFO as profile.json", bounded([REPORT, folder], 20),
                "profile.json is a FIFO, not a regular file")


def test_report_many_hosts():
    """metadata.json of 200,000 processes, each on a host of its own: the
    list of hosts compared each with all before it (2 x 10^10 string
    compares, minutes)."""
    if not check(job is not None, "sysmeasure is built with MPI (the case needs a 2-rank job)"):
        return
    folder = job_copy("many-hosts")
    n = 200000

    def hosts(doc):
        doc["ranks"] = n
        doc["processes"] = [{"rank": i, "pid": 1000 + i, "host": "node%06d" % i}
                            for i in range(n)]
    rewrite_json(folder, "metadata.json", hosts)
    code, _, err, took = bounded([REPORT, folder], 20)
    check(code == 0 and took < 10, "report of 200,000 hosts: rc %r in %.1f s (at most 10): %r"
          % (code, took, err[-500:]))
    if code == 0:
        with open(os.path.join(folder, "report.html"), encoding="utf-8") as f:
            page = f.read()
        check("node000000, node000001, node000002" in page and "node000031 &hellip; "
              "(200000 hosts in all)" in page, "the first 32 hosts in rank order, then the count")


def test_report_many_sampled_functions():
    """profile.json with 200,000 sampled functions: the hot-function table
    searched every name before it for each (minutes)."""
    if not check(job is not None, "sysmeasure is built with MPI (the case needs a 2-rank job)"):
        return
    folder = job_copy("many-functions")
    n = 200000

    def functions(doc):
        # function i: (1 + i % 7) x 2 samples; the most (14): i = 6, 13, 20, ...
        doc["sampling"] = {"frequency_hz": 1000, "clock": "cpu", "callpaths": [
            {"functions": [{"function": "fn_%06d" % i, "file": "hot.c", "line": i,
                            "across_ranks": {"mean": 1 + i % 7, "n": 2}} for i in range(n)]}]}
    rewrite_json(folder, "profile.json", functions)
    code, _, err, took = bounded([REPORT, folder], 20)
    check(code == 0 and took < 10, "report of 200,000 sampled functions: rc %r in %.1f s (at "
          "most 10): %r" % (code, took, err[-500:]))
    if code == 0:
        with open(os.path.join(folder, "report.html"), encoding="utf-8") as f:
            page = f.read()
        table = page[page.find("id=hot-table"):]
        first = table.find("fn_")
        check(table[first:first + 9] == "fn_000006" and "hot.c:6<" in table,
              "the hottest function first, with its file and line: %r" % table[first:first + 200])


def test_convert_damaged_anchor():
    """traces.otf2 with 8 bytes 0xff over its number of properties: libotf2
    allocated and looped for minutes, its memory growing (otf2-print failed
    at once)."""
    if not check(job is not None, "sysmeasure is built with MPI (the case needs a 2-rank job)"):
        return
    if not HAVE_PERFETTO:
        print("no Perfetto writer in this build: the converter's case is not run")
        return
    folder = job_copy("anchor")
    anchor = os.path.join(folder, "traces.otf2")
    with open(anchor, "rb") as f:
        data = bytearray(f.read())
    # The anchor's description (its third string) ends just before the
    # number of properties.
    desc = data.find(b"sysmeasure trace of")
    end = data.find(b"\0", desc) + 1
    check(desc > 0 and end > desc, "the job's anchor holds its description")
    data[end:end + 8] = b"\xff" * 8
    with open(anchor, "wb") as f:
        f.write(data)
    # Where libotf2's 32 GiB calloc for the properties succeeded, it then
    # read all of it in its cleanup (memory growing for minutes); under the
    # 4 GiB limit here the calloc fails.  Either way only the check of the
    # anchor before libotf2 names the number of properties.
    one_refusal("convert, damaged anchor", bounded([CONVERT, "--perfetto", folder], 20),
                "traces.otf2 is damaged", "anchor", "number of properties")
    check(not os.path.exists(os.path.join(folder, "trace.pftrace")),
          "no trace.pftrace from a damaged archive")


def program_survives(what, out, rc=3):
    """The launcher runs exit-code into out, where something is in the way
    of profile.json: the program's exit code and output kept, within a
    timeout, one line on profile.json, the other files written."""
    code, stdout, stderr, took = bounded([LAUNCHER, "--output", out, EXIT, str(rc)], 30)
    check(code is not None, "%s: the program ended (it hung at exit)" % what)
    check(code == rc, "%s: the program's exit code %d kept, not %r: %r" % (what, rc, code,
                                                                            stderr[-500:]))
    check(stdout == "application output\n", "%s: the program's output kept: %r" % (what, stdout))
    named = [l for l in errors(stderr) if "profile.json" in l]
    check(len(named) == 1, "%s: one line on profile.json: %r" % (what, stderr[-1000:]))
    check(took < 20, "%s: ended in %.1f s" % (what, took))
    for name in ("metadata.json", "profile.txt", "report.html"):
        check(os.path.isfile(os.path.join(out, name)), "%s: %s written" % (what, name))
    report = os.path.join(out, "report.html")
    if os.path.isfile(report):
        with open(report, encoding="utf-8") as f:
            check("No profile.json in this folder" in f.read(),
                  "%s: report.html is written without profile.json (not read back)" % what)
    return stderr


def test_fifo_as_profile_json():
    """A FIFO in place of profile.json: skipped with one line, then the
    report writer read it back and the program hung at exit."""
    out = os.path.join(work, "fifo-out")
    os.makedirs(out)
    os.mkfifo(os.path.join(out, "profile.json"))
    program_survives("FIFO as profile.json", out)
    check(os.path.exists(os.path.join(out, "profile.json")) and
          not os.path.isfile(os.path.join(out, "profile.json")), "the FIFO is left as it is")


def test_symlink_dev_zero_as_profile_json():
    """profile.json a symbolic link to /dev/zero: "not followed", then the
    report writer read through it, memory without bound, SIGTERM ignored."""
    out = os.path.join(work, "zero-out")
    os.makedirs(out)
    os.symlink("/dev/zero", os.path.join(out, "profile.json"))
    stderr = program_survives("symbolic link to /dev/zero as profile.json", out)
    check("not followed" in stderr, "the link is named as not followed: %r" % stderr[-500:])
    check(os.readlink(os.path.join(out, "profile.json")) == "/dev/zero", "the link is left as it is")


def launcher_refusal(what, option, path, *words):
    """The launcher with option path: one line, exit 2, the program not run."""
    result = bounded([LAUNCHER, option, path, EXIT, "0"], 20)
    one_refusal(what, result, path, *words)
    check("application output" not in result[1], "%s: the program is not run" % what)


def fifo(name):
    path = os.path.join(work, name)
    os.mkfifo(path)
    return path


def test_filter_dev_zero():
    """--filter /dev/zero: no line, memory without bound."""
    launcher_refusal("--filter /dev/zero", "--filter", "/dev/zero",
                     "filter file", "is a character device, not a regular file")


def test_filter_fifo():
    """--filter naming a FIFO: the launcher blocked on it."""
    launcher_refusal("--filter FIFO", "--filter", fifo("filter.fifo"),
                     "filter file", "is a FIFO, not a regular file")


def test_gpu_metrics_file_dev_zero():
    """--gpu-metrics-file /dev/zero (checked by the launcher, no GPU needed):
    it read 16 MiB of zeros before it said anything."""
    launcher_refusal("--gpu-metrics-file /dev/zero", "--gpu-metrics-file", "/dev/zero",
                     "is a character device, not a regular file")


def test_gpu_metrics_file_fifo():
    """--gpu-metrics-file naming a FIFO: the launcher blocked on it."""
    launcher_refusal("--gpu-metrics-file FIFO", "--gpu-metrics-file", fifo("metrics.fifo"),
                     "is a FIFO, not a regular file")


def test_config_fifo():
    """--config naming a FIFO: the launcher blocked on it."""
    launcher_refusal("--config FIFO", "--config", fifo("config.fifo"),
                     "config file", "is a FIFO, not a regular file")


for case in (test_report_profile_ranks_negative, test_report_metadata_ranks_negative,
             test_report_fifo_profile, test_report_many_hosts, test_report_many_sampled_functions,
             test_convert_damaged_anchor, test_fifo_as_profile_json,
             test_symlink_dev_zero_as_profile_json, test_filter_dev_zero, test_filter_fifo,
             test_gpu_metrics_file_dev_zero, test_gpu_metrics_file_fifo, test_config_fifo):
    print("case:", case.__name__)
    case()
finish()
