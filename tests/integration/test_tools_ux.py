"""What a user meets first in the tools (issue 33): sysmeasure --help grouped
by topic with every option whole and no line over 100 columns, examples
that use real options; sysmeasure-avail saying what the build has, its
topics (-c, --categories), search (-s) and the config file it writes (-G),
which sysmeasure -c reads back; every tool naming itself in its errors;
-v2 / -v=2, and "--mpi no" refused with the form meant; a man page per tool
that groff renders without a warning."""
import json
import os
import re
import shutil
import subprocess

import smtest
from smtest import check

BUILD, SRC = smtest.BUILD, smtest.SRC
LAUNCHER = smtest.LAUNCHER
AVAIL = os.path.join(BUILD, "sysmeasure-avail")


def run(cmd, env=None, cwd=None):
    return subprocess.run(cmd, env=smtest.clean_env(env), cwd=cwd, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=120)


def variables():
    """Every variable of the table, from sysmeasure-avail --format=json."""
    p = run([AVAIL, "--format=json"])
    check(p.returncode == 0 and not p.stderr, "avail --format=json: %d %r" % (p.returncode, p.stderr))
    return json.loads(p.stdout)


def help_text():
    p = run([LAUNCHER, "--help"])
    check(p.returncode == 0 and not p.stderr, "--help: %d %r" % (p.returncode, p.stderr))
    return p.stdout


def without_asides(text):
    """text without what is in parentheses (and the space before them)."""
    out, depth = "", 0
    for c in text:
        if c == "(":
            if depth == 0:
                out = out.rstrip(" ")
            depth += 1
        elif c == ")" and depth:
            depth -= 1
        elif depth == 0:
            out += c
    return out


def help_entries(text):
    """{option: (heading, entry text joined)} of the help's option rows."""
    entries, heading, current = {}, None, None
    for line in text.splitlines():
        if re.match(r"^[A-Z].*:$", line):
            heading, current = line[:-1], None
            continue
        m = re.match(r"^  (?:-\w, )?\s*--([a-z0-9-]+)", line)
        if m:
            current = m.group(1)
            rest = line[32:] if len(line) > 32 and not line[31:32].strip() else ""
            entries[current] = [heading, rest.strip()]
        elif current and line.startswith(" " * 32):
            entries[current][1] = (entries[current][1] + " " + line.strip()).strip()
        else:
            current = None
    return {k: tuple(v) for k, v in entries.items()}


# ---------------------------------------------------------------- sysmeasure --help

def test_help_every_option_whole():
    text = help_text()
    entries = help_entries(text)
    for v in variables():
        if not v["option"]:
            continue
        opt = v["option"][2:]
        if not check(opt in entries, "--help does not list --%s" % opt):
            continue
        _, entry = entries[opt]
        tail = "[%s, default %s]" % (v["env"], v["default"] or "empty")
        check(entry.endswith(tail), "--%s: its entry does not end %r: %r" % (opt, tail, entry))
        summary = entry[:-len(tail)].strip()
        if opt == "verbose":
            summary = summary.replace(" Each -v adds one.", "")
        # The summary is the description's start, asides left out, ended at
        # a sentence or clause: never a word cut.
        desc = " ".join(without_asides(v["help"]).split())
        check(summary.endswith(".") and desc.startswith(summary[:-1]) and
              desc[len(summary) - 1:len(summary)] in (".", ":", ";"),
              "--%s: summary %r is not a whole start of %r" % (opt, summary, desc[:200]))
    # The entry the issue found cut mid-word.
    check("every gpu_sampling_interval. [SYSMEASURE_GPU_SAMPLING, default empty]" in
          entries.get("gpu-sampling", ("", ""))[1],
          "--gpu-sampling entry: %r" % (entries.get("gpu-sampling"),))


def test_help_lines_fit():
    lines = help_text().splitlines()
    long = [l for l in lines if len(l) > 100]
    check(not long, "lines over 100 columns: %r" % long[:3])
    check(len(lines) < 328, "--help has %d lines (was 328 in one list)" % len(lines))


def test_help_grouped_by_topic():
    titles = {}
    p = run([AVAIL, "--categories"])
    for line in p.stdout.splitlines():
        name, _, title = line.split(None, 2)
        titles[name] = title
    entries = help_entries(help_text())
    for v in variables():
        if v["option"]:
            opt = v["option"][2:]
            heading = entries.get(opt, (None,))[0]
            check(heading == titles.get(v["category"]),
                  "--%s is under %r, not under its topic %r" % (opt, heading,
                                                               titles.get(v["category"])))
    headings = [l[:-1] for l in help_text().splitlines() if re.match(r"^[A-Z].*:$", l)]
    order = [h for h in headings if h in titles.values()]
    check(order == [t for t in titles.values() if t in order],
          "topics not in the table's order: %r" % order)


def test_help_examples_use_real_options():
    text = help_text()
    check("\nExamples:\n" in text, "--help has no Examples section")
    examples = text.split("\nExamples:\n", 1)[-1].split("\n\n", 1)[0]
    commands = [l.strip() for l in examples.splitlines() if l.startswith("  ") and
                not l.startswith("    ")]
    check(len(commands) >= 4, "fewer than 4 examples: %r" % commands)
    options = {v["option"] for v in variables() if v["option"]}
    options |= {"--" + "no-" + o[2:] for o in options}
    for c in commands:
        for part in c.split(";"):
            words = part.split()
            if not words or words[0] != "sysmeasure":
                if "sysmeasure" in words:
                    words = words[words.index("sysmeasure"):]
                else:
                    continue
            for w in words[1:]:
                if not w.startswith("-"):
                    break
                if w.startswith("--"):
                    check(w.split("=")[0] in options, "example %r: unknown option %s" % (c, w))


# ---------------------------------------------------------------- sysmeasure-avail

def test_every_variable_has_a_topic():
    vs = variables()
    no_topic = [v["env"] for v in vs if not v["category"]]
    check(not no_topic, "variables of no topic (add them to src/core/config_categories.def): %r"
          % no_topic)
    p = run([AVAIL, "--categories"])
    total = sum(int(l.split()[1]) for l in p.stdout.splitlines())
    check(total == len(vs) and "(none)" not in p.stdout,
          "--categories counts %d of %d variables: %r" % (total, len(vs), p.stdout))


def test_avail_says_what_the_build_has():
    p = run([AVAIL])
    check("not in this version" not in p.stdout, "avail still says 'not in this version'")
    line = [l for l in p.stdout.splitlines() if l.strip().startswith("PAPI counters")]
    check(len(line) == 1, "no 'PAPI counters' line: %r" % p.stdout[-2000:])
    has_papi = os.environ.get("SM_HAVE_PAPI") == "yes"
    said = line[0].split(None, 2)[2] if line else ""
    check(said.startswith("yes" if has_papi else "no"),
          "PAPI built: %s, avail says %r" % (has_papi, said))
    if has_papi:
        p = run([AVAIL, "--papi"])
        check(p.returncode == 0, "PAPI said present but avail --papi fails: %r" % p.stderr)
    else:
        p = run([LAUNCHER, "--papi=PAPI_TOT_INS", "/bin/true"])
        check(p.returncode == 2, "PAPI said absent but --papi runs: %d" % p.returncode)


def listed(stdout):
    return {l for l in stdout.splitlines() if l.startswith("SYSMEASURE_")}


def test_avail_category():
    vs = variables()
    for topic in ("gpu", "output", "python"):
        p = run([AVAIL, "-c", topic])
        want = {v["env"] for v in vs if v["category"] == topic}
        check(p.returncode == 0 and want and listed(p.stdout) == want,
              "-c %s: %r, not %r" % (topic, sorted(listed(p.stdout)), sorted(want)))
    p = run([AVAIL, "--category=mpi"])
    check(listed(p.stdout) == {v["env"] for v in vs if v["category"] == "mpi"},
          "--category=mpi: %r" % p.stdout[:300])
    p = run([AVAIL, "-c", "nosuch"])
    check(p.returncode == 2 and p.stderr.count("\n") == 1 and
          p.stderr.startswith("sysmeasure-avail: error: unknown topic 'nosuch'"),
          "-c nosuch: %d %r" % (p.returncode, p.stderr))


def test_avail_search():
    vs = variables()
    want = {v["env"] for v in vs
            if any("spill" in (v[k] or "").lower() for k in ("env", "key", "option", "help"))}
    p = run([AVAIL, "-s", "Spill"])
    check(p.returncode == 0 and "SYSMEASURE_BUFFER_SIZE" in want and listed(p.stdout) == want,
          "-s Spill: %r, not %r" % (sorted(listed(p.stdout)), sorted(want)))
    # Both: the variables of the topic that have the word.
    want = {v["env"] for v in vs if v["category"] == "sampling" and
            any("gpu" in (v[k] or "").lower() for k in ("env", "key", "option", "help"))}
    p = run([AVAIL, "-s", "gpu", "-c", "sampling"])
    check("SYSMEASURE_SAMPLING_INTERVAL" in want and listed(p.stdout) == want,
          "-s gpu -c sampling: %r, not %r" % (sorted(listed(p.stdout)), sorted(want)))
    p = run([AVAIL, "--search=zzzqqq"])
    check(p.returncode == 1 and p.stderr.count("\n") == 1 and not listed(p.stdout) and
          p.stderr.startswith("sysmeasure-avail: error: no variable has 'zzzqqq'"),
          "-s zzzqqq: %d %r" % (p.returncode, p.stderr))


def test_avail_generate_config_read_back():
    """-G writes what the environment sets as active lines; sysmeasure -c
    FILE, without that environment, measures with those values."""
    work = smtest.workdir("ux-gen")
    conf = os.path.join(work, "site.conf")
    env = {"SYSMEASURE_BUFFER_SIZE": "1g", "SYSMEASURE_TRACE": "no",
           "SYSMEASURE_MPI_GROUPS": "coll,p2p"}
    p = run([AVAIL, "-G", conf], env=env)
    check(p.returncode == 0 and not p.stderr and not p.stdout,
          "-G: %d %r %r" % (p.returncode, p.stdout, p.stderr))
    text = open(conf).read()
    for v in variables():
        check("# %s:" % v["env"] in text, "-G: no comment for %s" % v["env"])
    active = [l for l in text.splitlines() if l and not l.startswith("#")]
    check(sorted(active) == ["buffer_size = 1G", "mpi_groups = coll,p2p", "trace = no"],
          "-G active lines: %r" % active)
    out = os.path.join(work, "out")
    p = run([LAUNCHER, "-c", conf, "-o", out, smtest.program("exit-code"), "0"])
    check(p.returncode == 0, "sysmeasure -c site.conf: %d %r" % (p.returncode, p.stderr))
    meta = json.load(open(os.path.join(out, "metadata.json")))["configuration"]
    for name, value in (("SYSMEASURE_BUFFER_SIZE", "1G"), ("SYSMEASURE_TRACE", "no"),
                        ("SYSMEASURE_MPI_GROUPS", "coll,p2p")):
        check(meta[name] == {"value": value, "source": "config file"},
              "%s in metadata.json: %r" % (name, meta[name]))
    check(not os.path.exists(os.path.join(out, "traces.otf2")),
          "trace = no from the file, but traces.otf2 was written")
    check(os.path.exists(os.path.join(out, "profile.json")), "no profile.json")


def test_avail_generate_every_line_loads():
    """Each commented line, uncommented, is valid and sets the default."""
    work = smtest.workdir("ux-gen-all")
    conf = os.path.join(work, "all.conf")
    p = run([AVAIL, "--generate-config=-"])
    check(p.returncode == 0 and not p.stderr, "-G -: %d %r" % (p.returncode, p.stderr))
    lines = [re.sub(r"^# ([a-z0-9_]+ =)", r"\1", l) for l in p.stdout.splitlines()]
    with open(conf, "w") as f:
        f.write("\n".join(lines) + "\n")
    defaults = {v["env"]: v["value"] for v in variables()}
    p = run([AVAIL, "--format=json"], env={"SYSMEASURE_CONFIG_FILE": conf})
    check(p.returncode == 0 and not p.stderr, "reading all.conf: %r" % p.stderr)
    loaded = json.loads(p.stdout)
    for v in loaded:
        if v["env"] == "SYSMEASURE_CONFIG_FILE":
            continue
        check(v["source"] == "config file" and v["value"] == defaults[v["env"]],
              "%s from all.conf: %r (%s), default %r" % (v["env"], v["value"], v["source"],
                                                          defaults[v["env"]]))


# ---------------------------------------------------------------- errors

def one_error(p, tool, what, *words, rc=2):
    lines = p.stderr.splitlines()
    check(p.returncode == rc and len(lines) == 1 and lines[0].startswith(tool + ": error: "),
          "%s: exit %d (not %d), stderr %r" % (what, p.returncode, rc, p.stderr))
    for w in words:
        check(w in p.stderr, "%s: does not say %r: %r" % (what, w, p.stderr))


def test_tools_name_themselves():
    empty = smtest.workdir("ux-empty")
    for tool in ("sysmeasure-merge", "sysmeasure-report", "sysmeasure-score",
                 "sysmeasure-convert", "sysmeasure-passes", "sysmeasure-avail",
                 "sysmeasure-attach", "sysmeasure-stacks"):
        p = run([os.path.join(BUILD, tool), "--no-such-option"])
        one_error(p, tool, tool + " --no-such-option", "--no-such-option")
    # Messages of the shared code the tools run name the tool too.
    p = run([os.path.join(BUILD, "sysmeasure-merge"), empty])
    one_error(p, "sysmeasure-merge", "merge of an empty folder", "nothing to merge", rc=1)
    p = run([os.path.join(BUILD, "sysmeasure-report"), empty])
    one_error(p, "sysmeasure-report", "report of an empty folder", "metadata.json")
    p = run([LAUNCHER, "--no-such-option", "/bin/true"])
    one_error(p, "sysmeasure", "sysmeasure --no-such-option")
    for tool in ("sysmeasure-cc", "sysmeasure-c++", "sysmeasure-fortran"):
        p = run([os.path.join(BUILD, tool), "-c", "x.c"],
                env={"SYSMEASURE_CC": "nocc1", "SYSMEASURE_CXX": "nocc1", "SYSMEASURE_FC": "nocc1"})
        one_error(p, tool, tool + " with an unknown compiler", "unknown compiler 'nocc1'")


def test_verbose_level_forms():
    for form in ("-v2", "-v=2"):
        out = os.path.join(smtest.workdir("ux-v"), "out")
        p = run([LAUNCHER, form, "-o", out, smtest.program("exit-code"), "0"])
        check(p.returncode == 0, "%s: %d %r" % (form, p.returncode, p.stderr[-500:]))
        meta = json.load(open(os.path.join(out, "metadata.json")))["configuration"]
        check(meta["SYSMEASURE_VERBOSE"]["value"] == "2", "%s: verbose %r" % (form, meta[
            "SYSMEASURE_VERBOSE"]))
        check("end of run: " in p.stderr, "%s: no level-2 messages: %r" % (form, p.stderr[-500:]))
    p = run([LAUNCHER, "-v=x", "/bin/true"])
    one_error(p, "sysmeasure", "-v=x", "--verbose")


def test_value_after_a_space_says_the_form_meant():
    cwd = smtest.workdir("ux-detached")
    for args, meant in ((["--mpi", "no"], "--mpi=no"), (["--trace", "yes"], "--trace=yes"),
                        (["--gpu-memory", "api"], "--gpu-memory=api"),
                        (["-v", "2"], "--verbose=2"), (["--verbose", "3"], "--verbose=3")):
        p = run([LAUNCHER] + args + [smtest.program("exit-code"), "0"], cwd=cwd)
        one_error(p, "sysmeasure", " ".join(args), meant, "'--'")
    check(os.listdir(cwd) == [], "a refused command left %r" % os.listdir(cwd))
    # After "--" the word is the program, as the message says.
    p = run([LAUNCHER, "--mpi", "--", "no-such-program-qq"], cwd=cwd)
    one_error(p, "sysmeasure", "--mpi -- no-such-program-qq", "no-such-program-qq", rc=127)
    # A word that is no value of the option is the program, as before.
    out = os.path.join(cwd, "out")
    p = run([LAUNCHER, "-o", out, "--trace", smtest.program("exit-code"), "3"])
    check(p.returncode == 3, "--trace PROGRAM: %d %r" % (p.returncode, p.stderr))


# ---------------------------------------------------------------- man pages

def makefile_list(name, text):
    """The words of a (possibly continued) 'NAME = ...' or 'NAME += ...' of a makefile."""
    words = []
    for m in re.finditer(r"^%s \+?= ((?:.*\\\n)*.*)$" % re.escape(name), text, re.M):
        words += m.group(1).replace("\\\n", " ").split()
    return words


def test_every_tool_has_a_man_page():
    am = open(os.path.join(SRC, "Makefile.am")).read()
    pages = set(makefile_list("SM_TOOL_MANS", am)) | set(makefile_list("man1_MANS", am))
    tools = makefile_list("bin_PROGRAMS", am) + makefile_list("bin_SCRIPTS", am)
    check(len(tools) >= 11, "bin_PROGRAMS and bin_SCRIPTS: %r" % tools)
    for t in tools:
        check("doc/%s.1" % t in pages, "%s has no man page (add doc/%s.1 to SM_TOOL_MANS)" % (t, t))
        # (A tool of a conditional part of the build is there only when built.)
        if os.path.exists(os.path.join(BUILD, t)):
            check(os.path.exists(os.path.join(BUILD, "doc", t + ".1")), "doc/%s.1 not built" % t)


def test_man_pages_render_without_warnings():
    groff = shutil.which("groff")
    if not groff:
        smtest.skip("no groff")
    folder = os.path.join(BUILD, "doc")
    pages = sorted(f for f in os.listdir(folder) if f.endswith(".1"))
    check(len(pages) >= 11, "man pages: %r" % pages)
    for page in pages:
        path = os.path.join(folder, page)
        p = run([groff, "-man", "-Tutf8", "-ww", "-z", path])
        check(p.returncode == 0 and not p.stderr, "groff -ww %s: %d %r" % (page, p.returncode,
                                                                          p.stderr))
        p = run([groff, "-man", "-Tascii", "-P-cbou", path], env={"MANWIDTH": "80"})
        rendered = p.stdout
        tool = page[:-2]
        check(re.search(r"NAME\n +%s +- +\S" % re.escape(tool), rendered) is not None,
              "%s: no NAME line: %r" % (page, rendered[:300]))
        if tool == "sysmeasure":
            continue
        # Every option of the tool's --help is on its page.
        h = run([os.path.join(BUILD, tool), "--help"]).stdout
        flat = " ".join(rendered.split())
        for opt in sorted(set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", h))):
            check(opt in flat, "%s: %s of --help is not on the page" % (page, opt))


if __name__ == "__main__":
    smtest.run_cases(globals())
