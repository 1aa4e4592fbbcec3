"""--dormant and sysmeasure-attach (issue 32): a program started with
measurement off runs as it would without sysmeasure and writes nothing;
windows switched on from outside become output folders of their own."""
import os
import smtest
from smtest import check, clean_env, mpi_env, program, run, workdir
import subprocess


def plain(args):
    return subprocess.run(args, env=clean_env(), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=120)


def test_dormant_writes_nothing():
    base = workdir("dormant")
    out = os.path.join(base, "out")
    ref = plain([program("sleep-regions")])
    proc = run([program("sleep-regions")], launcher_args=["--dormant", "--output", out])
    check(proc.returncode == ref.returncode == 0, "exit code as without sysmeasure: %d" % proc.returncode)
    check(proc.stdout == ref.stdout, "the program's output unchanged")
    check(proc.stderr == "", "nothing said on stderr: %r" % proc.stderr)
    check(not os.path.exists(out), "no output folder: %s" % (os.listdir(out) if os.path.exists(out) else ""))


def test_dormant_exit_code_kept():
    base = workdir("dormant-rc")
    out = os.path.join(base, "out")
    proc = run([program("exit-code"), "7"], launcher_args=["--dormant", "--output", out])
    check(proc.returncode == 7, "exit code 7 kept: %d" % proc.returncode)
    check(not os.path.exists(out), "no output folder")


def test_dormant_mpi_job():
    base = workdir("dormant-mpi")
    out = os.path.join(base, "out")
    cmd = [smtest.MPIRUN, "-np", "4", "--oversubscribe", smtest.LAUNCHER, "--dormant", "--output", out,
           "--", program("mpi-ranks")]
    proc = subprocess.run(cmd, env=clean_env(mpi_env()), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=120)
    check(proc.returncode == 0, "the job ends with 0: %d %s" % (proc.returncode, proc.stderr[-2000:]))
    check("sysmeasure" not in proc.stderr, "nothing said on stderr: %r" % proc.stderr[-500:])
    check(not os.path.exists(out), "no output folder")


if __name__ == "__main__":
    smtest.run_cases(globals())
