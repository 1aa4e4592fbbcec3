"""Compiler instrumentation: a C, a C++ (templates, namespaces) and a
Fortran program built with sysmeasure-cc / -c++ / -fortran run under the
launcher; every function is a region with its demangled name, file:line and
its exact visit count, in the archive and the profile.  The programs run
without the launcher too.  Throttling: a planted tiny function called 1M
times is throttled after throttle_calls calls (traced that many times,
counted in full, listed with a filter line); a 50 us one is not."""
import os
import re
import subprocess

import otf2
import smtest
from smtest import check

BUILD, SRC = smtest.BUILD, smtest.SRC


def line_of(source, text):
    """The line number of the first line of tests/programs/source holding text."""
    with open(os.path.join(SRC, "tests", "programs", source)) as f:
        for n, line in enumerate(f, 1):
            if text in line:
                return n
    raise ValueError(text)


def regions_of(profile):
    """{region name: (file basename, line, visits summed over call paths)}."""
    out = {}
    for cp in profile["callpaths"]:
        visits = sum(t["visits"] for t in cp["per_thread"])
        f, l, v = out.get(cp["region"], (None, None, 0))
        out[cp["region"]] = (os.path.basename(cp["file"]) if cp["file"] else None, cp["line"],
                             v + visits)
        check(cp["paradigm"] == "compiler", "%s: paradigm %s" % (cp["region"], cp["paradigm"]))
    return out


def check_program(source, exe, expected, args=(), launcher_args=()):
    """expected: {region: (definition text in the source, visits)}."""
    out, proc = smtest.measure([exe] + list(args), os.path.basename(exe),
                               launcher_args=launcher_args)
    profile = smtest.load_json(out, "profile.json")
    got = regions_of(profile)
    trace = smtest.Trace(out)
    visits = smtest.check_trace_consistent(trace)
    for name, (text, n) in expected.items():
        want = (os.path.basename(source), line_of(source, text), n)
        check(got.get(name) == want, "%s: profile has %s, expected %s" % (name, got.get(name), want))
        check(visits.get(name) == n, "%s: %s enters in the archive, expected %d"
              % (name, visits.get(name), n))
    regions = {r.name: r for r in trace.definitions.regions}
    for name in expected:
        r = regions.get(name)
        if check(r is not None, "%s not defined in the archive" % name):
            check(r.paradigm == otf2.Paradigm.COMPILER, "%s: OTF2 paradigm %s" % (name, r.paradigm))
            check(os.path.basename(str(r.source_file)) == os.path.basename(source) and
                  r.begin_line_number == line_of(source, expected[name][0]),
                  "%s: OTF2 source %s:%s" % (name, r.source_file, r.begin_line_number))
    return out, proc, profile


@smtest.fixture
def c_exe():
    return smtest.build_wrapped("sysmeasure-cc", "instr_c.c", "instr-c")


# ---------------------------------------------------------------- C
def test_c_without_launcher():
    # Without the launcher: runs as it always did, and writes no output
    # folder (where it would: its working directory).
    exe = c_exe()
    cwd = smtest.workdir("instr-c-plain")
    plain = subprocess.run([exe, "nothrottle"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, env=smtest.clean_env(), cwd=cwd)
    check(plain.returncode == 0 and plain.stdout.startswith("sink ") and plain.stderr == "",
          "without the launcher: rc %d, stdout %r, stderr %r" % (plain.returncode, plain.stdout,
                                                                 plain.stderr))
    check(not any(n.startswith("sysmeasure-") for n in os.listdir(os.path.dirname(exe)) +
                  os.listdir(cwd)),
          "without the launcher the program wrote an output folder")


C_EXPECTED = {
    "main": ("int main(", 1), "middle": ("void middle(int i)", 100),
    "leaf": ("void leaf(int i)", 1003), "work_50us": ("void work_50us(void)", 20),
    "solve_a": ("void solve_a(void)", 3), "solve_b": ("void solve_b(void)", 3),
    "helper_excluded": ("void helper_excluded(void)", 10),
}


def test_c_default_throttling():
    # Default throttling (100000 calls, 10 us): tiny is traced for its first
    # 100000 calls, then only counted; the others are not throttled.
    exp = dict(C_EXPECTED, tiny=("void tiny(void)", 100000))
    out, proc, profile = check_program("instr_c.c", c_exe(), exp)
    with open(os.path.join(out, "profile.txt")) as f:
        text = f.read()
    m = re.search(r"note +: throttled: tiny \((\d+) calls, [0-9.e+-]+ us per call; traced for its "
                  r"first 100000\); filter line: EXCLUDE tiny\n", text)
    check(m is not None and m.group(1) == "1000000",
          "profile.txt does not list tiny as throttled after 1000000 calls")
    check(text.count("throttled:") == 1, "more than tiny throttled:\n" + text[:2000])
    with open(os.path.join(out, "throttled.filter")) as f:
        tf = f.read()
    check("SCOREP_REGION_NAMES_BEGIN\n  EXCLUDE tiny\nSCOREP_REGION_NAMES_END\n" in tf,
          "throttled.filter: " + tf)
    meta = smtest.load_json(out, "metadata.json")
    check(any("throttled: tiny" in n for n in meta.get("notes", [])),
          "metadata.json notes: %s" % meta.get("notes"))


def test_c_throttle_calls_10():
    # throttle_calls 10: tiny and helper_excluded (well under 10 us per call)
    # are throttled after 10 calls; work_50us (about 50 us per call, 20 calls)
    # is not.  (middle and leaf are not checked here: middle's first calls
    # include the first-call lookup of leaf, so whether its first 10 calls
    # average under 10 us depends on the machine.)
    exp = dict(C_EXPECTED, tiny=("void tiny(void)", 10),
               helper_excluded=("void helper_excluded(void)", 10))
    del exp["middle"], exp["leaf"]
    out, proc, profile = check_program("instr_c.c", c_exe(), exp,
                                       launcher_args=["--throttle-calls", "10"])
    with open(os.path.join(out, "profile.txt")) as f:
        text = f.read()
    check("throttled: work_50us" not in text, "work_50us (50 us per call) was throttled")
    check("throttled: tiny (1000000 calls" in text, "tiny not throttled at 10 calls")


def test_c_no_throttle():
    # No throttling: every call traced.
    out, proc, profile = check_program("instr_c.c", c_exe(),
                                       dict(C_EXPECTED, tiny=("void tiny(void)", 1000)),
                                       args=["nothrottle"], launcher_args=["--no-throttle"])
    check(not os.path.exists(os.path.join(out, "throttled.filter")),
          "throttled.filter without throttling")


# ---------------------------------------------------------------- C++
def test_cxx():
    cxx_exe = smtest.build_wrapped("sysmeasure-c++", "instr_cxx.cpp", "instr-cxx")
    check_program("instr_cxx.cpp", cxx_exe, {
        "main": ("int main(", 1),
        "geo::Shape<double>::Shape(double)": ("explicit Shape(T side)", 30),
        "geo::Shape<double>::area() const": ("T area() const", 30),
        "geo::Shape<int>::Shape(int)": ("explicit Shape(T side)", 20),
        "geo::Shape<int>::area() const": ("T area() const", 20),
        "double geo::detail::accumulate<double>(double)": ("T accumulate(T x)", 30),
        "tools::Counter::bump()": ("void bump()", 50),
        "(anonymous namespace)::local_helper(int)": ("int local_helper(int i)", 5),
    })


# ---------------------------------------------------------------- C++ with std::
# No function of the system headers becomes a region (g++ leaves them out
# when compiling; clang++ has no option for it: the runtime leaves them out
# by their source file), and the application's own are all there, exactly.
STD_EXPECTED = {"int main(": 1, "std::vector<std::string> fill(int n)": 4,
                "void tally(const std::vector<std::string> &v)": 4,
                "bool by_length(const std::vector<std::string> &v)": 1,
                "void record(const std::string &word)": 40}


def check_std(exe, what):
    out, proc = smtest.measure([exe], os.path.basename(exe))
    profile = smtest.load_json(out, "profile.json")
    by_line = {}
    for cp in profile["callpaths"]:
        f = cp.get("file") or ""
        check(os.path.basename(f) == "instr_std.cpp",
              "%s: %s measured, from %s" % (what, cp["region"][:100], f))
        check(not cp["region"].startswith(("std::", "__gnu_cxx::")),
              "%s: %s measured" % (what, cp["region"][:100]))
        by_line[cp.get("line")] = by_line.get(cp.get("line"), 0) + \
            sum(t["visits"] for t in cp["per_thread"])
    for text, n in STD_EXPECTED.items():
        line = line_of("instr_std.cpp", text)
        check(by_line.get(line) == n, "%s: line %d (%s): %s visits, expected %d"
              % (what, line, text, by_line.get(line), n))
    trace = smtest.Trace(out)
    smtest.check_trace_consistent(trace)
    for r in trace.definitions.regions:
        check(not str(r.source_file).startswith("/usr/"),
              "%s: %s defined, from %s" % (what, r.name[:100], r.source_file))


def test_std_gxx():
    check_std(smtest.build_wrapped("sysmeasure-c++", "instr_std.cpp", "instr-std-gnu"), "g++ -O2")


def std_clang(opt):
    if smtest.CLANG in ("", "no"):
        smtest.skip("configure found no clang")
    clangxx = smtest.CLANG + "++"
    check_std(smtest.build_wrapped("sysmeasure-instrument", "instr_std.cpp",
                                   "instr-std-clang" + opt, flags=(clangxx, opt)),
              "clang++ " + opt)


def test_std_clang_O0():
    std_clang("-O0")


def test_std_clang_O2():
    std_clang("-O2")


# ---------------------------------------------------------------- Fortran
def test_fortran():
    f_exe = smtest.build_wrapped("sysmeasure-fortran", "instr_fortran.f90", "instr-fortran")
    check_program("instr_fortran.f90", f_exe, {
        "MAIN__": ("program instr_fortran", 1),
        "stencil_mod::smooth": ("subroutine smooth(a, n)", 12),
        "stencil_mod::norm2": ("double precision function norm2(a, n)", 12),
        "fill": ("subroutine fill(a, n, v)", 3),
    })


# ---------------------------------------------------------------- a shared library
def test_shared_library():
    libdir = smtest.workdir("build-lib")
    lib = os.path.join(libdir, "libinstr.so")
    proc = subprocess.run([os.path.join(BUILD, "sysmeasure-cc"), "-O2", "-shared", "-fPIC", "-o", lib,
                           os.path.join(SRC, "tests", "programs", "instr_lib.c")],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(proc.returncode == 0, "cannot build the library: " + proc.stderr)
    main_exe = smtest.build_wrapped("sysmeasure-cc", "instr_lib_main.c", "instr-lib-main",
                                    libs=("-L" + libdir, "-Wl,-rpath," + libdir, "-linstr"))
    out, _, profile = check_program("instr_lib.c", main_exe, {
        "lib_work": ("int lib_work(int x)", 7), "lib_inner": ("int lib_inner(int x)", 14)})
    check(smtest.callpath(profile, "main", "lib_work", "lib_inner") is not None,
          "main > lib_work > lib_inner not in the profile")


# ---------------------------------------------------------------- the wrapper's errors
def test_unknown_compiler():
    proc = subprocess.run([os.path.join(BUILD, "sysmeasure-instrument"), "tcc", "-c", "x.c"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(proc.returncode == 2 and proc.stderr.startswith("sysmeasure-instrument: error: unknown compiler 'tcc'")
          and proc.stderr.count("\n") == 1, "unknown compiler: rc %d, %r" % (proc.returncode, proc.stderr))


if __name__ == "__main__":
    smtest.run_cases(globals())
