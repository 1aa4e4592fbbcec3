"""A deep profile (SYSMEASURE_PROFILE_DEPTH raised, a recursion of 3000
levels, tests/programs/deep_recursion.c) is written in files linear in its
call paths: each path names at most its 64 innermost regions ("... > "
first in the CSV files, "path_from_depth" in profile.json) and the rest
through its parent's id.  With every path written in full, one run of
depth 100000 wrote 37 GB.  Checked: the size per path stays bounded, the
ids and parents chain the 3001 paths, the full path rebuilt through the
parents is the program's, and every path has the planted visits."""
import csv
import json
import os

import smtest
from smtest import check, load_json, measure, program

PROG = program("deep-recursion")
DEPTH = 3000
REPS = 3
NAMES = 64  # SM_PATH_NAMES


@smtest.fixture
def deep():
    out, proc = measure([PROG, str(DEPTH), str(REPS)], "profile-deep",
                        env={"SYSMEASURE_PROFILE_DEPTH": "100000"})
    check("depth %d reps %d\n" % (DEPTH, REPS) == proc.stdout, "program output: %r" % proc.stdout)
    return out


def test_json():
    out = deep()
    profile = load_json(out, "profile.json")
    cps = profile["callpaths"]
    check(len(cps) == DEPTH + 1, "%d levels and the leaf: %d call paths" % (DEPTH, len(cps)))
    by_id = {c["id"]: c for c in cps}
    problems = []
    for c in cps:
        d = c["depth"]
        want = ["level"] * min(d + 1, NAMES)
        if d == DEPTH:
            want[-1] = "leaf"
        if c["path"] != want or c["region"] != want[-1]:
            problems.append("depth %d: path of %d names ending %s" % (d, len(c["path"]),
                                                                     c["path"][-1:]))
        if c.get("path_from_depth", 0) != max(0, d + 1 - NAMES):
            problems.append("depth %d: path_from_depth %s" % (d, c.get("path_from_depth")))
        parent = by_id.get(c["parent"])
        if (d == 0) != (c["parent"] == 0) or (d and (not parent or parent["depth"] != d - 1)):
            problems.append("depth %d: parent %s" % (d, c["parent"]))
        visits = sum(t["visits"] for t in c["per_thread"])
        if visits != REPS:
            problems.append("depth %d: %d visits, planted %d" % (d, visits, REPS))
    check(not problems, "every path named, chained and visited as planted: %s" % problems[:5])
    # The leaf's whole path through the parents.
    names, c = [], cps[-1]
    while c:
        names.append(c["region"])
        c = by_id.get(c["parent"])
    check(names[::-1] == ["level"] * DEPTH + ["leaf"],
          "the leaf's path rebuilt through the parents: %d names" % len(names))
    # Linear: the deepest path's record is no larger than one at depth 63
    # (the first with all 64 names); the file at most 4 KB per path.
    size = {c["depth"]: len(json.dumps(c)) for c in cps if c["depth"] in (NAMES - 1, DEPTH)}
    check(size[DEPTH] <= size[NAMES - 1] * 1.05,
          "the deepest record %d bytes, one at depth %d %d bytes" % (size[DEPTH], NAMES - 1,
                                                                       size[NAMES - 1]))
    total = os.path.getsize(os.path.join(out, "profile.json"))
    check(total <= 4096 * len(cps), "profile.json %d bytes for %d paths" % (total, len(cps)))


def csv_rows(out, name):
    with open(os.path.join(out, name)) as f:
        return list(csv.DictReader(f))


def check_csv_path(row, what):
    d = int(row["depth"])
    names = ["level"] * (d + 1)
    if d == DEPTH:
        names[-1] = "leaf"
    want = " > ".join(names[-NAMES:])
    if d + 1 > NAMES:
        want = "... > " + want
    return row["path"] == want or "%s depth %d: path %s..." % (what, d, row["path"][:80])


def test_csv():
    out = deep()
    rows = csv_rows(out, "profile.csv")
    check(len(rows) == DEPTH + 1, "one row per path: %d" % len(rows))
    ids = {r["path_id"]: r for r in rows}
    problems = [p for p in (check_csv_path(r, "profile.csv") for r in rows) if p is not True]
    for r in rows:
        d = int(r["depth"])
        parent = ids.get(r["parent_id"])
        if (d == 0) != (r["parent_id"] == "0") or (d and int(parent["depth"]) != d - 1):
            problems.append("profile.csv depth %d: parent %s" % (d, r["parent_id"]))
        if int(r["visits"]) != REPS:
            problems.append("profile.csv depth %d: %s visits" % (d, r["visits"]))
    check(not problems, "profile.csv: paths, parents and visits as planted: %s" % problems[:5])
    total = os.path.getsize(os.path.join(out, "profile.csv"))
    check(total <= 1024 * len(rows), "profile.csv %d bytes for %d rows" % (total, len(rows)))


def test_ranks_csv():
    out = deep()
    rows = csv_rows(out, "profile-ranks.csv")
    check(len(rows) == DEPTH + 1, "one row per path: %d" % len(rows))
    problems = [p for p in (check_csv_path(r, "profile-ranks.csv") for r in rows) if p is not True]
    problems += ["depth %s: %s visits" % (r["depth"], r["visits"]) for r in rows
                 if int(r["visits"]) != REPS]
    check(not problems, "profile-ranks.csv: paths and visits as planted: %s" % problems[:5])
    total = os.path.getsize(os.path.join(out, "profile-ranks.csv"))
    check(total <= 1024 * len(rows), "profile-ranks.csv %d bytes for %d rows" % (total, len(rows)))


if __name__ == "__main__":
    smtest.run_cases(globals())
