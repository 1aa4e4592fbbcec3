"""sysmeasure-merge of part of a job: 8 ranks that end without MPI_Finalize,
ranks 1, 3, 5 and 7 leaving no process file.  Every output says what was
merged (4 of 8, which ranks are missing and why): profile.txt,
metadata.json, profile.json and report.html.  After the merge, .ranks is
gone and .spill holds only the files that could not be merged (the
missing ranks' events, which have no names without their process files);
a merge of every rank leaves neither folder."""
import glob
import json
import os
import re
import subprocess

import smtest
from smtest import BUILD, check, load_json, mpi_measure, program

MERGE = os.path.join(BUILD, "sysmeasure-merge")
MISSING = [1, 3, 5, 7]


def run_job(name):
    """The 8-rank job without MPI_Finalize: its folder, its process files there."""
    # (mpirun says 1: the ranks ended without MPI_Finalize)
    # (and gets 5 s to save their data before it kills them)
    out, proc = mpi_measure(8, [program("mpi-ranks"), "0", "5", "nofinalize"], name, expect_rc=None,
                            env={"OMPI_MCA_odls_base_sigkill_timeout": "5"})
    files = sorted(glob.glob(os.path.join(out, ".ranks", "rank-*.smp")))
    # (the even ranks are what the cases need)
    ranks = {rank_of(f) for f in files}
    if not check({0, 2, 4, 6} <= ranks, "ranks 0, 2, 4, 6 left process files: %s" % sorted(ranks)):
        raise RuntimeError("no job to merge")
    return out, files


def rank_of(path):
    return int(re.search(r"rank-(\d+)\.", os.path.basename(path)).group(1))


def missing_numbers(text):
    """The rank numbers of a "missing" text, the reasons in parentheses left out."""
    depth, bare = 0, ""
    for c in text:
        depth += c == "("
        if not depth:
            bare += c
        depth -= c == ")" and depth > 0
    return [int(n) for n in re.findall(r"\d+", bare)]


def merge(out):
    return subprocess.run([MERGE, out], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=120)


@smtest.fixture
def partial():
    out, files = run_job("merge-partial")
    for f in files:
        if rank_of(f) in MISSING:
            os.unlink(f)
    proc = merge(out)
    check(proc.returncode == 0, "the merge of 4 of 8 succeeds: %d %s" % (proc.returncode, proc.stderr))
    return out, proc


def test_profile_txt_says_what_was_merged():
    out, proc = partial()
    text = open(os.path.join(out, "profile.txt")).read()
    check(re.search(r"^ranks\s+: 4 of 8\b", text, re.M), "profile.txt: 4 of 8 ranks")
    m = re.search(r"^missing\s+: (.*)$", text, re.M)
    check(m and missing_numbers(m.group(1)) == MISSING, "profile.txt names the missing ranks: %s" % (m and m.group(0)))


def test_metadata_and_profile_json():
    out, proc = partial()
    meta = load_json(out, "metadata.json")
    check(meta["ranks"] == 8 and meta.get("ranks_merged") == 4, "metadata.json: 4 of 8 merged")
    check([r["rank"] for r in meta.get("missing_ranks", [])] == MISSING, "metadata.json: missing ranks")
    check(sorted(p["rank"] for p in meta["processes"]) == [0, 2, 4, 6], "metadata.json: the processes merged")
    profile = load_json(out, "profile.json")
    check(profile["ranks"] == 8 and profile.get("ranks_merged") == 4,
          "profile.json: 4 of 8 merged: %s" % profile.get("ranks_merged"))
    check(missing_numbers(profile.get("missing_ranks", "")) == MISSING,
          "profile.json names the missing ranks: %s" % profile.get("missing_ranks"))


def test_report_says_what_was_merged():
    out, proc = partial()
    html = open(os.path.join(out, "report.html")).read()
    ranks = re.search(r"<dd id=ranks>([^<]*)</dd>", html)
    check(ranks and ranks.group(1).startswith("4 of 8 ranks") and ranks.group(1).endswith("missing: ranks 1, 3, 5, 7"),
          "report.html: 4 of 8 ranks, the missing named: %s" % (ranks and ranks.group(1)))
    check("id=missing-ranks>4 of 8 ranks merged" in html, "report.html: a warning in the notes")


def test_files_removed_after_success():
    out, proc = partial()
    check(not os.path.exists(os.path.join(out, ".ranks")), ".ranks removed after the merge")
    kept = sorted(os.listdir(os.path.join(out, ".spill"))) if os.path.isdir(os.path.join(out, ".spill")) else []
    check(len(kept) <= len(MISSING) and all(f.endswith(".events") for f in kept),
          ".spill keeps only the missing ranks' event files: %s" % kept)
    check(not kept or "%d file%s kept there: of ranks not merged" % (len(kept), "s" if len(kept) > 1 else "")
          in proc.stderr, "the closing line says what is kept: %s" % proc.stderr)


def test_complete_merge_leaves_nothing():
    out, files = run_job("merge-complete")
    proc = merge(out)
    n = len(files)
    check(proc.returncode == 0 and "%d of %d ranks merged" % (n, n) in proc.stderr, "merged: %s" % proc.stderr)
    check(not os.path.exists(os.path.join(out, ".ranks")) and not os.path.exists(os.path.join(out, ".spill")),
          "a complete merge removes .ranks and .spill: %s" % os.listdir(out))
    meta = load_json(out, "metadata.json")
    if n == 8:
        check("ranks_merged" not in meta and "missing_ranks" not in load_json(out, "profile.json"),
              "a complete merge says nothing of missing ranks")


if __name__ == "__main__":
    smtest.run_cases(globals())
