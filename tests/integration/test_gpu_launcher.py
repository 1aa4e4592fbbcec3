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
    # Every program is given the CUDA backend (the driver loads it only when
    # the program initialises CUDA, so one that loads CUDA late, as Python
    # does, is measured), and a program without CUDA neither loads it nor
    # hears of it.
    proc = run(["/usr/bin/env"])
    env = dict(l.split("=", 1) for l in proc.stdout.splitlines() if "=" in l)
    check(env.get("CUDA_INJECTION64_PATH", "").endswith("libsysmeasure-cuda.so")
          and env.get("NVTX_INJECTION64_PATH", "").endswith("libsysmeasure-cuda.so"),
          "the injection variables name the backend: %r" % {k: v for k, v in env.items()
                                                           if "INJECTION" in k})
    check("GPU" not in proc.stderr and "CUDA" not in proc.stderr,
          "a program without CUDA hears nothing of it: %r" % proc.stderr)
    maps = run(["/bin/cat", "/proc/self/maps"]).stdout
    check("libsysmeasure-cuda" not in maps and "libcupti" not in maps and "libcuda." not in maps,
          "a program without CUDA does not load the backend, CUPTI or the driver")


def test_no_gpu_names_no_backend():
    proc = run(["/usr/bin/env"], launcher_args=["--no-gpu"])
    check("CUDA_INJECTION64_PATH" not in proc.stdout and "NVTX_INJECTION64_PATH" not in proc.stdout
          and "HSA_TOOLS_LIB" not in proc.stdout,
          "--no-gpu names no GPU backend: %r" % proc.stdout)


def test_gpu_forced_says_nothing_of_amd():
    # --gpu on a machine without AMD GPU, for a program that does not use
    # AMD's libraries: the one line about the missing CUDA driver, nothing
    # about AMD, rocm-smi or /dev/kfd.
    proc = run(["/bin/true"], launcher_args=["--gpu"])
    amd = [l for l in proc.stderr.splitlines()
           if "AMD" in l or "rocm" in l or "kfd" in l or "HIP" in l or "HSA" in l]
    check(proc.returncode == 0 and not amd, "nothing about AMD: %r" % proc.stderr)


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
