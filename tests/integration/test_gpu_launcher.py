"""The launcher's GPU choices where there is no NVIDIA driver (CI): a CUDA
program gets one line saying its GPU work is not measured, runs to its end
and its CPU side is measured; --gpu values are checked before the program
starts; a program without CUDA is never given the CUDA injection."""
import ctypes
import otf2
import os
import sys

import smtest
from smtest import BUILD, Trace, check, measure, run

EXE = os.path.join(BUILD, "tests", "programs", "cuda-host")


def no_driver(args):
    out, proc = measure([EXE], "gpu-nodriver", launcher_args=args)
    lines = [l for l in proc.stderr.splitlines() if "GPU work" in l]
    check(len(lines) == 1 and "no CUDA driver" in lines[0],
          "%s: one line about the missing driver: %r" % (args, proc.stderr))
    check("cuda_host:" in proc.stdout, "%s: the program ran: %r" % (args, proc.stdout))
    trace = Trace(out)
    check(any(loc.type == otf2.LocationType.CPU_THREAD for loc in trace.locations),
          "%s: the CPU side is measured" % args)


def test_no_driver_default():
    no_driver([])


def test_no_driver_gpu():
    no_driver(["--gpu"])


def test_no_driver_gpu_auto():
    no_driver(["--gpu=auto"])


def test_no_gpu():
    out, proc = measure([EXE], "gpu-no", launcher_args=["--no-gpu"])
    check("GPU work" not in proc.stderr, "--no-gpu says nothing about the GPU: %r" % proc.stderr)


def test_bad_gpu_value():
    proc = run([EXE], launcher_args=["--gpu=maybe"])
    check(proc.returncode == 2 and "cuda_host" not in proc.stdout,
          "--gpu=maybe stops the launcher (exit %d): %r" % (proc.returncode, proc.stdout))
    check(len(proc.stderr.strip().splitlines()) == 1 and "--gpu" in proc.stderr,
          "one line naming --gpu: %r" % proc.stderr)


def test_program_without_cuda():
    # A program without CUDA: no injection variables, no line.
    proc = run(["/usr/bin/env"])
    check("CUDA_INJECTION64_PATH" not in proc.stdout and "NVTX_INJECTION64_PATH" not in proc.stdout,
          "a program without CUDA got the CUDA injection")
    check("GPU" not in proc.stderr, "a program without CUDA: %r" % proc.stderr)


if __name__ == "__main__":
    if not os.path.exists(EXE):
        print("SKIP: built without the CUDA toolkit (no tests/programs/cuda-host)")
        sys.exit(77)
    try:
        ctypes.CDLL("libcuda.so.1")
        print("SKIP: this machine has a CUDA driver; make check-gpu covers it")
        sys.exit(77)
    except OSError:
        pass
    smtest.run_cases(globals())
