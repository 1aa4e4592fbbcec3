"""Hostile inputs to the launcher, and the weak messages of before: a config
file that is no regular file (/dev/zero), one too large, one with NUL bytes, control
characters, invalid UTF-8 or a byte-order mark -- one line naming it, exit 2,
the program not run; a key given twice is warned about (the last counts).
--help=foo, an empty program name, output folders left behind on bad input,
a statically linked program (runs unmeasured, one line says so), region
names with invalid UTF-8 (valid UTF-8 in every output, U+FFFD in place)."""
import os
import shutil
import subprocess

import smtest
from smtest import (LAUNCHER, Trace, build_program, check, clean_env, load_json, program,
                    user_api_flags, workdir)

EXIT = program("exit-code")
work = workdir("inputs")
CC = shutil.which("cc") or shutil.which("gcc") or "cc"


def launch(args, env=None, cwd=None):
    return subprocess.run([LAUNCHER] + args, env=clean_env(env), cwd=cwd or work,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)


def one_error(proc, what, *words):
    lines = proc.stderr.splitlines()
    check(proc.returncode == 2, "%s: exit 2, not %d" % (what, proc.returncode))
    check(len(lines) == 1 and lines[0].startswith("sysmeasure: error: "),
          "%s: exactly one error line: %r" % (what, proc.stderr))
    for w in words:
        check(w in proc.stderr, "%s: says %r: %r" % (what, w, proc.stderr))
    check("application output" not in proc.stdout, "%s: the program did not run" % what)


def config(name, data):
    path = os.path.join(work, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


# ---- config files that are not config files
def test_config_dev_zero():
    one_error(launch(["--config", "/dev/zero", EXIT, "0"]), "/dev/zero", "/dev/zero",
              "is a character device, not a regular file")


def test_config_too_large():
    one_error(launch(["--config", config("big.conf", b"# padding\n" * 150000), EXIT, "0"]),
              "a 1.5 MB file", "larger than 1M")


def test_config_nul_byte():
    one_error(launch(["--config", config("nul.conf", b"trace = yes\nprofile\0 = no\n"), EXIT, "0"]),
              "NUL byte", "nul.conf:2:", "NUL byte")


def test_config_byte_order_mark():
    one_error(launch(["--config", config("bom.conf", b"\xef\xbb\xbftrace = yes\n"), EXIT, "0"]),
              "byte-order mark", "bom.conf", "byte-order mark")


def test_config_control_character():
    one_error(launch(["--config", config("ctl.conf", b"trace = yes\nprofile = \x01no\n"), EXIT, "0"]),
              "control character", "ctl.conf:2:", "binary data", "0x01")


def test_config_binary_junk():
    one_error(launch(["--config", config("bin.conf", b"trace = yes\n\x7fELF\x02\x01\x01\xff\xfe"),
                      EXIT, "0"]),
              "binary junk", "bin.conf:2:", "binary data")


def test_config_invalid_utf8():
    one_error(launch(["--config", config("latin1.conf", b"output = caf\xe9\n"), EXIT, "0"]),
              "invalid UTF-8", "latin1.conf:1:", "not UTF-8")


def test_config_is_a_folder():
    one_error(launch(["--config", work, EXIT, "0"]), "a folder as config", "is a folder")


def test_runtime_config_dev_zero():
    # The runtime reads the file too (without the launcher): the same answer.
    proc = subprocess.run([EXIT, "0"], env=clean_env({"SYSMEASURE_ENABLE": "yes",
                                                      "SYSMEASURE_CONFIG_FILE": "/dev/zero",
                                                      "LD_PRELOAD": os.path.join(os.path.dirname(LAUNCHER), ".libs", "libsysmeasure.so")}),
                          cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    check(proc.returncode == 0 and "not a regular file" in proc.stderr and "not measured" in proc.stderr,
          "runtime with /dev/zero as config: one line, the program runs: %d %r" % (proc.returncode, proc.stderr))


def test_config_key_given_twice():
    # A key given twice: a warning, the last value counts, the program runs.
    out = os.path.join(work, "dup-out")
    dup = config("dup.conf", b"trace = yes\nbuffer_size = 32M\n# again\ntrace = no\n")
    proc = launch(["--config", dup, "--output", out, EXIT, "3"])
    check(proc.returncode == 3, "duplicate key: the program runs: %d" % proc.returncode)
    warn = [l for l in proc.stderr.splitlines() if "given twice" in l]
    check(len(warn) == 1 and "dup.conf:4:" in warn[0] and "'trace'" in warn[0] and "line 1" in warn[0],
          "duplicate key: one warning naming the key and both lines: %r" % proc.stderr)
    meta = load_json(out, "metadata.json")
    check(meta["configuration"]["SYSMEASURE_TRACE"]["value"] in ("no", False, "false"),
          "duplicate key: the last value counts: %s" % meta["configuration"]["SYSMEASURE_TRACE"])
    check(not os.path.exists(os.path.join(out, "traces.otf2")), "duplicate key: trace = no applied")


# ---- weak messages
def test_help_with_value():
    one_error(launch(["--help=foo", EXIT, "0"]), "--help=foo", "--help", "takes no value")


def test_version_with_value():
    one_error(launch(["--version=2", EXIT, "0"]), "--version=2", "--version", "takes no value")


def test_empty_program_name():
    one_error(launch(["--", "", "x"]), "empty program name", "program name is empty")


def test_empty_program_name_without_dashes():
    one_error(launch([""]), "empty program name (no --)", "program name is empty")


# ---- bad input after the output folder was made: no folder is left behind
def test_missing_program_leaves_no_folders():
    proc = launch(["--output", "new/deeper/out", os.path.join(work, "no-such-program")])
    check(proc.returncode == 127 and "not found" in proc.stderr, "missing program: 127: %r" % proc.stderr)
    check(not os.path.exists(os.path.join(work, "new")), "missing program: no empty folders left: %s"
          % os.listdir(work))


def test_budget_below_chunk_keeps_users_folder():
    os.makedirs(os.path.join(work, "mine"))
    # (the buffer budget is checked against the chunk size after the folder is made)
    proc = launch(["--output", "mine/out/deep", "--buffer-size", "4K", EXIT, "0"])
    check(proc.returncode == 2 and "smaller than" in proc.stderr, "budget below a chunk: exit 2: %r"
          % proc.stderr)
    check(os.path.isdir(os.path.join(work, "mine")) and not os.path.exists(os.path.join(work, "mine", "out")),
          "budget below a chunk: the folders it made are gone, the user's own stays")


def test_static_program():
    # A statically linked program: runs, with its output and code, one line
    # says it is not measured, and no empty output folder stays.
    static = build_program(CC, "static_hello.c", "static-hello", ["-static"])
    proc = launch(["--output", "static-out", static])
    check(proc.returncode == 5 and proc.stdout == "static hello\n",
          "static program runs as it would: %d %r" % (proc.returncode, proc.stdout))
    lines = proc.stderr.splitlines()
    check(len(lines) == 1 and "statically linked" in lines[0] and "unmeasured" in lines[0],
          "static program: one line says so: %r" % proc.stderr)
    check(not os.path.exists(os.path.join(work, "static-out")), "static program: no empty folder left")


# ---- region names with invalid UTF-8: valid UTF-8 everywhere, U+FFFD in place
WANT = ["caf\ufffd", "cut\ufffd\ufffd", "lone\ufffdx", "na\u00efve"]


@smtest.fixture
def bad_utf8_run():
    """The output folder of the program whose region names are invalid UTF-8."""
    bad = build_program(CC, "bad_utf8_regions.c", "bad-utf8", user_api_flags())
    out = os.path.join(work, "utf8-out")
    proc = launch(["--output", out, bad])
    check(proc.returncode == 0, "bad UTF-8 names: rc 0: %r" % proc.stderr)
    return out


def test_bad_utf8_names_outputs_are_utf8():
    out = bad_utf8_run()
    for name in ("profile.txt", "profile.json", "profile.csv", "metadata.json"):
        with open(os.path.join(out, name), "rb") as f:
            data = f.read()
        try:
            data.decode("utf-8")
            ok = True
        except UnicodeDecodeError as e:
            ok = False
            print(e)
        check(ok, "bad UTF-8 names: %s is valid UTF-8" % name)


def test_bad_utf8_names_in_profile():
    profile = load_json(bad_utf8_run(), "profile.json")
    paths = {tuple(c["path"]) for c in profile["callpaths"]}
    check(all((w,) in paths for w in WANT), "bad UTF-8 names: profile.json paths: %s" % paths)


def test_bad_utf8_names_in_archive():
    out = bad_utf8_run()
    t = Trace(out)
    for w in WANT:
        check(t.count_enters(w) == 3, "bad UTF-8 names: %r entered 3 times in the archive" % w)
    with open(os.path.join(out, "traces.def"), "rb") as f:
        check(b"caf\xe9" not in f.read(), "no raw Latin-1 byte in the archive's definitions")


if __name__ == "__main__":
    smtest.run_cases(globals())
