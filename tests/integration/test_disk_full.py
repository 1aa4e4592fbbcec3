"""A disk that fills while writing: one error line naming the file and the
problem, the other outputs still written, and the application's exit code
and output kept.  A link to /dev/full at profile.txt is skipped (nothing is
written through a link); a small tmpfs (when this machine lets us mount
one) gives a real ENOSPC under the OTF2 archive."""
import contextlib
import os
import subprocess

import smtest
from smtest import check, program, run, workdir


def test_devfull_link():
    out = os.path.join(workdir("devfull"), "out")
    os.makedirs(out)
    os.symlink("/dev/full", os.path.join(out, "profile.txt"))
    p = run([program("exit-code"), "3"], launcher_args=["--output", out])
    check(p.returncode == 3, "exit code kept: %d" % p.returncode)
    check(p.stdout == "application output\n", "application output kept: %r" % p.stdout)
    lines = [l for l in p.stderr.splitlines() if "error" in l]
    # A link planted in the output folder is never written through (fs.h): the
    # link to /dev/full is skipped with one line, like a full disk.
    check(any("profile.txt" in l and "symbolic link" in l for l in lines),
          "one line names profile.txt and the link: %r" % p.stderr)
    check(len([l for l in lines if "profile.txt" in l]) == 1, "said once: %r" % p.stderr)
    check(os.path.getsize(os.path.join(out, "profile.json")) > 0, "profile.json still written")
    check(os.path.exists(os.path.join(out, "traces.otf2")), "archive still written")


@contextlib.contextmanager
def small_tmpfs():
    """A fresh 128k tmpfs, unmounted afterwards; the case is skipped where
    this machine does not let us mount one."""
    mnt = workdir("tmpfs")
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=128k", "tmpfs", mnt],
                      stderr=subprocess.DEVNULL).returncode != 0:
        smtest.skip("tmpfs cannot be mounted here")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", mnt])


def test_tmpfs_full():
    # The floor of free space (on by default, test_disk_limits.py) would
    # stop the trace first with a line of its own: off here, so that the
    # disk really fills.
    with small_tmpfs() as mnt:
        p = run([program("many-regions"), "2", "20000"],
                launcher_args=["--output", os.path.join(mnt, "out"), "--min-free-space", "0"])
        check(p.returncode == 0, "exit code kept on a full tmpfs: %d" % p.returncode)
        check("No space left on device" in p.stderr and "traces.otf2" in p.stderr,
              "archive failure named: %r" % p.stderr)
        # (at most a line per output that could not be written, and the last)
        check(len(p.stderr.splitlines()) <= 8, "a few lines, not a flood: %r" % p.stderr)


# The same with OTF2's writes done by a second thread (write-behind, a CPU
# more than the encoders need; OTF2 writes its full 4 MiB buffers there, the
# rest of a file at its close): the failed write is reported all the same.
def test_tmpfs_full_write_behind():
    with small_tmpfs() as mnt:
        p = run([program("many-regions"), "2", "200000"],
                launcher_args=["--output", os.path.join(mnt, "out-wb")],
                env={"SYSMEASURE_OTF2_END_THREADS": "8", "SYSMEASURE_OTF2_BACKGROUND": "no"})
        check(p.returncode == 0, "write-behind: exit code kept on a full tmpfs: %d" % p.returncode)
        check("No space left on device" in p.stderr and "traces.otf2" in p.stderr,
              "write-behind: archive failure named: %r" % p.stderr)
        check(len(p.stderr.splitlines()) <= 8, "write-behind: a few lines: %r" % p.stderr)


if __name__ == "__main__":
    smtest.run_cases(globals())
