"""A HIP program built with Debian's hipcc, run under sysmeasure on this
machine, which has no AMD GPU (no /dev/kfd): the program gets
hipErrorNoDevice and hipErrorOutOfMemory exactly as without sysmeasure, its
output and exit code unchanged; sysmeasure says once that no AMD GPU was
found and once that rocm-smi failed (rsmi_init), and records the HIP calls
the runtime reports -- ROCm 5.2 reports none without a device (it returns
before its callback), so none are in the archive.  --no-gpu leaves the AMD
libraries out.  What needs a GPU (callbacks firing, kernels, copies) is not
tested here: see the manual's AMD section."""
import os
import re
import subprocess
import sys

import smtest
from smtest import (LAUNCHER, Trace, build_program, check, clean_env, load_json, measure, run,
                    workdir)


@smtest.fixture
def prog():
    # An explicit target, so hipcc does not probe for a GPU (it would print
    # rocm_agent_enumerator's traceback without one).
    return build_program(os.environ["SM_HIPCC"], "hip_nodevice.hip", "hip-nodevice",
                         ["--offload-arch=gfx90a"])


@smtest.fixture
def plain():
    """The program without sysmeasure."""
    return subprocess.run([prog()], env=clean_env(), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, cwd=workdir("hip-plain"), timeout=120)


@smtest.fixture
def measured():
    return measure([prog()], "hip", expect_rc=plain().returncode, launcher_args=["-v"])


def test_without_sysmeasure():
    p = plain()
    check(p.returncode == 3 and "hipErrorNoDevice" in p.stdout,
          "without sysmeasure: hipErrorNoDevice, exit 3: %d %s" % (p.returncode, p.stdout))


def test_measured_output_and_messages():
    out, proc = measured()
    check(proc.stdout == plain().stdout, "the program's output unchanged:\n%s\nvs\n%s"
          % (proc.stdout, plain().stdout))
    lines = proc.stderr.splitlines()
    nogpu = [l for l in lines if "no AMD GPU found" in l]
    check(len(nogpu) == 1, "'no AMD GPU found' said once: %s" % proc.stderr)
    rsmi = [l for l in lines if "rocm-smi" in l or "drm" in l or "rsmi" in l]
    check(len(rsmi) == 1 and "rsmi_init failed (8" in rsmi[0],
          "rocm-smi's failure is one line (rsmi_init returns 8 here): %s" % rsmi)
    check(not any("Exception" in l for l in lines), "rocm-smi's own messages are not shown: %s"
          % proc.stderr)


def test_measured_archive():
    # The runtime reports no call without a device: no HIP region, nothing
    # left open; the run is complete.
    out, proc = measured()
    trace = Trace(out)
    hip = [r.name for r in trace.definitions.regions
           if str(r.paradigm).endswith("HIP") or r.name.startswith("hip")]
    check(hip == [], "no HIP call reported by the runtime, none recorded: %s" % hip)
    meta = load_json(out, "metadata.json")
    md = meta.get("metadata", {})
    check(md.get("amd_gpu", "").startswith("no"), "metadata.json says there is no AMD GPU: %s" % md)
    check(md.get("hip_device_activities") == "0", "and no device work: %s" % md)


def test_preloaded():
    # The ROCTx and HIP libraries were preloaded (a HIP program is a GPU program).
    verbose = run([prog()], launcher_args=["-vv", "--output", os.path.join(workdir("hip-vv"), "out")])
    pre = [l for l in verbose.stderr.splitlines() if "LD_PRELOAD=" in l]
    check(pre and "libsysmeasure-hip.so" in pre[0] and "libsysmeasure-roctx.so" in pre[0],
          "the HIP and ROCTx libraries preloaded: %s" % pre)
    check(verbose.returncode == 3, "exit code kept: %d" % verbose.returncode)
    # The HSA tool is named for the runtime, which loads it only where hsa_init
    # succeeds (not here: no /dev/kfd).
    hsa = [l for l in verbose.stderr.splitlines() if "HSA_TOOLS_LIB=" in l]
    check(hsa and "libsysmeasure-hsa.so" in hsa[0], "HSA_TOOLS_LIB names the HSA tool: %s" % hsa)


def test_no_gpu():
    # --no-gpu: none of it.
    nog = run([prog()], launcher_args=["-vv", "--no-gpu", "--output",
                                       os.path.join(workdir("hip-nogpu"), "out")])
    pre = [l for l in nog.stderr.splitlines() if "LD_PRELOAD=" in l]
    check(pre and "libsysmeasure-hip" not in pre[0] and "roctx" not in pre[0],
          "--no-gpu preloads no AMD library: %s" % pre)
    check("no AMD GPU" not in nog.stderr and nog.returncode == 3 and nog.stdout == plain().stdout,
          "--no-gpu: nothing said, the program as without: %d %s" % (nog.returncode, nog.stderr))


def test_avail():
    # sysmeasure-avail says what was tested here and what was not.
    avail = subprocess.run([os.path.join(os.path.dirname(LAUNCHER), "sysmeasure-avail")],
                           env=clean_env(), stdout=subprocess.PIPE, text=True).stdout
    # A long state goes on to lines indented under it: one line each again.
    avail = re.sub(r"\n {20,}", " ", avail)
    for feature, state in (("ROCTx ranges and marks", "tested here"),
                           ("HIP without an AMD GPU", "tested here"),
                           ("HIP API calls as regions", "built, not verified on AMD hardware"),
                           ("HIP kernels and copies", "built, not verified on AMD hardware"),
                           ("HSA calls, kernel and copy timing", "built, not verified on AMD hardware")):
        line = [l for l in avail.splitlines() if l.strip().startswith(feature)]
        check(line and state in line[0], "sysmeasure-avail: %s: %s (%s)" % (feature, state, line))


if __name__ == "__main__":
    if os.environ.get("SM_HAVE_HIPCC", "no") != "yes" or not os.environ.get("SM_HIPCC"):
        print("skipped: this build has no HIP adapter or no hipcc (apt-get install hipcc "
              "libamdhip64-dev librocm-smi-dev)")
        sys.exit(77)
    if os.path.exists("/dev/kfd"):
        print("skipped: this machine has an AMD GPU (/dev/kfd); this test is for machines without")
        sys.exit(77)
    smtest.run_cases(globals())
