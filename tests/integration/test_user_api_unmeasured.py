"""The user API without the launcher (tests/programs/user_api_unmeasured.c,
linked with libsysmeasure, run directly): every call says "not active",
errno is kept, the program's output and exit code are its own, nothing is
written (no output folder, no file in its working directory) and nothing
is printed on stderr.  Under the launcher the same calls are measured."""
import os
import re
import subprocess

import smtest
from smtest import check, clean_env, load_json, measure, program


def test_unmeasured():
    prog = program("user-api-unmeasured")
    n = 20000
    cwd = smtest.workdir("user-api-unmeasured")
    proc = subprocess.run([prog, str(n)], cwd=cwd, env=clean_env(), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=300)
    check(proc.returncode == 3, "the program's exit code passes through: %d" % proc.returncode)
    want = "pairs %d not-active %d errno-kept %d annotated %d sum %d active 0" % (
        n, n, n, n // 1000, n * (n - 1) // 2)
    check(proc.stdout.strip() == want, "unmeasured: %r, expected %r" % (proc.stdout.strip(), want))
    check(proc.stderr == "", "nothing on stderr: %r" % proc.stderr)
    check(os.listdir(cwd) == [], "nothing written in the working directory: %s" % os.listdir(cwd))


def test_measured():
    # The same program under the launcher: measured, so not "not active".
    out, proc = measure([program("user-api-unmeasured"), "1000"], "user-api-measured", expect_rc=3)
    m = re.search(r"not-active (\d+) errno-kept (\d+)", proc.stdout)
    check(m and m.group(1) == "0" and m.group(2) == "1000",
          "measured: no call says not active, errno kept: %s" % proc.stdout)
    profile = load_json(out, "profile.json")
    visits = {cp["region"]: sum(t["visits"] for t in cp["per_thread"]) for cp in profile["callpaths"]}
    check(visits.get("unmeasured") == 1000 and visits.get("unmeasured handle") == 1000,
          "measured: 1000 visits of each region: %s" % visits)


if __name__ == "__main__":
    smtest.run_cases(globals())
