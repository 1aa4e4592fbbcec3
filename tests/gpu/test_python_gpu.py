"""Python-driven GPU jobs (make check-gpu; needs an NVIDIA GPU and the
host's python3 with CuPy, PyTorch, JAX): the frameworks load CUDA with
dlopen, so the launcher cannot see CUDA in the program; sysmeasure measures
their GPU work without --gpu all the same (issue 30, item 1), and Python's
own functions are regions beside it.  A framework the host lacks is
skipped, by name."""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.environ.get("SM_SRCDIR", "."), "tests", "lib"))
import otf2  # noqa: E402
import smtest  # noqa: E402
from smtest import Trace, check  # noqa: E402

HERE = os.path.join(os.environ.get("SM_SRCDIR", "."), "tests", "gpu", "python")
PYTHON = os.environ.get("SM_GPU_PYTHON", "python3")  # the host's, with the frameworks


def has(module):
    return subprocess.run([PYTHON, "-c", "import " + module], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0


def last_json(text):
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return None


def kernel_key(name):
    """A kernel's name without its return type, template and parameter
    lists: torch.profiler and the CUDA backend spell the rest apart."""
    if name.startswith("void "):
        name = name[5:]
    for stop in "<(":
        if stop in name:
            name = name[:name.index(stop)]
    return name.strip()


def stream_kernels(trace):
    """{kernel name: launches} over the GPU streams of the archive."""
    names = {}
    for loc, events in trace.events.items():
        if loc.type != otf2.LocationType.ACCELERATOR_STREAM:
            continue
        for e in events:
            if isinstance(e, otf2.events.Enter):
                names[e.region.name] = names.get(e.region.name, 0) + 1
    return names


def test_cupy_planted_kernel():
    if not has("cupy"):
        smtest.skip("no CuPy on this host")
    out = os.path.join(smtest.workdir("cupy"), "out")
    proc = smtest.run([PYTHON, os.path.join(HERE, "cupy_planted.py"), "25"],
                      launcher_args=["--output", out])
    said = last_json(proc.stdout)
    check(proc.returncode == 0 and said and said["launches"] == 25,
          "the CuPy program ran (exit %d): %s %s" % (proc.returncode, proc.stdout, proc.stderr))
    check("GPU work" not in proc.stderr and "AMD" not in proc.stderr,
          "nothing said about the GPU: %r" % proc.stderr)
    trace = Trace(out)
    kernels = stream_kernels(trace)
    planted = sum(n for k, n in kernels.items() if "sm_planted_kernel" in k)
    check(planted == 25, "sm_planted_kernel 25 times on the streams, without --gpu: %d (%s)"
          % (planted, sorted(kernels.items())[:8]))
    launch = trace.count_enters("launch")
    check(launch == 25, "the Python function launch() 25 visits: %d" % launch)


def test_torch_kernels_equal_torch_profiler():
    if not has("torch"):
        smtest.skip("no PyTorch on this host")
    plain = subprocess.run([PYTHON, os.path.join(HERE, "torch_loop.py"), "--count"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
    expected = (last_json(plain.stdout) or {}).get("kernels", {})
    if not check(expected, "torch.profiler counted the loop's kernels: %s" % plain.stderr[-500:]):
        return
    out = os.path.join(smtest.workdir("torch"), "out")
    proc = smtest.run([PYTHON, os.path.join(HERE, "torch_loop.py")],
                      launcher_args=["--output", out])
    check(proc.returncode == 0 and last_json(proc.stdout),
          "the PyTorch program ran (exit %d): %s" % (proc.returncode, proc.stderr[-800:]))
    kernels = stream_kernels(Trace(out))
    ours, theirs = {}, {}
    for k, c in kernels.items():
        ours[kernel_key(k)] = ours.get(kernel_key(k), 0) + c
    for k, c in expected.items():
        theirs[kernel_key(k)] = theirs.get(kernel_key(k), 0) + c
    # The measured run makes the loop twice (torch.profiler saw it once,
    # after a warm-up): each of its kernels twice as often.
    for key, n in theirs.items():
        check(ours.get(key, 0) == 2 * n,
              "kernel %s: %d launches measured, torch.profiler saw %d per loop (ours: %s)"
              % (key[:80], ours.get(key, 0), n, sorted(ours.items())[:12]))
    steps = Trace(out).count_enters("step")
    check(steps == 40, "the Python function step() 40 visits: %d" % steps)


def test_jax_kernels():
    if not has("jax"):
        smtest.skip("no JAX on this host")
    out = os.path.join(smtest.workdir("jax"), "out")
    proc = smtest.run([PYTHON, os.path.join(HERE, "jax_loop.py")],
                      launcher_args=["--output", out])
    said = last_json(proc.stdout)
    check(proc.returncode == 0 and said and said["backend"] == "gpu",
          "the JAX program ran on the GPU (exit %d): %s %s"
          % (proc.returncode, proc.stdout[-300:], proc.stderr[-800:]))
    kernels = stream_kernels(Trace(out))
    check(sum(kernels.values()) >= 10, "JAX's kernels on the streams: %s"
          % sorted(kernels.items())[:8])


def test_python_without_cuda_loads_nothing():
    out = os.path.join(smtest.workdir("nocuda"), "out")
    code = ("import sys\n"
            "maps = open('/proc/self/maps').read()\n"
            "print('cupti' in maps, 'libsysmeasure-cuda' in maps, 'libcuda.so' in maps)\n")
    proc = smtest.run([PYTHON, "-c", code], launcher_args=["--output", out])
    check(proc.returncode == 0 and proc.stdout.strip().endswith("False False False"),
          "a Python program without CUDA loads neither the backend, CUPTI nor the driver: %r %r"
          % (proc.stdout, proc.stderr))


if __name__ == "__main__":
    smtest.run_cases(globals())
