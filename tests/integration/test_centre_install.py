"""Installing at a centre: make install (staged with DESTDIR), then the
installation moved to another prefix, as a centre does when it installs into
a staging area or a Spack store.  From the moved prefix: the launcher runs;
the variables a modulefile sets (SYSMEASURE_ROOT, _DIR, _HOME) are accepted
and a misspelt one is refused with the nearest name; a program built with
sysmeasure-cc, with `pkg-config --cflags --libs sysmeasure` and with CMake's
find_package(sysmeasure) starts without LD_LIBRARY_PATH, unmeasured and
measured; the Lmod modulefile (with Debian's lmod) and setup-env.sh (bash)
put the moved prefix on the paths; LICENSE and NEWS are installed."""
import os
import shutil
import subprocess

import smtest
from smtest import check, skip

BUILD, SRC = smtest.BUILD, smtest.SRC
SOURCE = os.path.join(SRC, "tests", "programs", "centre_app.c")
LMOD_INIT = "/usr/share/lmod/lmod/init/bash"


def make_var(name):
    """A variable of the build's Makefile, expanded against the others (in
    a make of its own: not the jobserver or the flags of make check's)."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    proc = subprocess.run(["make", "-s", "-C", BUILD, "--no-print-directory", "-f", "Makefile",
                           "-f", "-", "sm-print-var"],
                          input="sm-print-var:\n\t@echo 'sm-var: $(%s)'\n" % name, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    values = [line[len("sm-var: "):] for line in proc.stdout.splitlines() if line.startswith("sm-var: ")]
    if len(values) != 1:
        raise RuntimeError("cannot read %s from the Makefile: %r" % (name, proc.stdout + proc.stderr))
    return values[0].strip()


@smtest.fixture
def moved():
    """The installation staged with DESTDIR, then moved: {top, bin, lib, ...}."""
    work = smtest.workdir("centre")
    stage = os.path.join(work, "stage")
    proc = subprocess.run(["make", "-s", "-C", BUILD, "install", "DESTDIR=" + stage],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        print(proc.stdout)
        raise RuntimeError("make install failed")
    bindir, prefix = make_var("bindir"), make_var("prefix")
    top = os.path.dirname(bindir)
    paths = {}
    for key in ("bindir", "libdir", "includedir", "datadir", "docdir", "mandir"):
        p = make_var(key)
        if not p.startswith(top + "/"):
            raise RuntimeError("%s %s is not under %s: cannot move it" % (key, p, top))
        paths[key] = os.path.relpath(p, top)
    dest = os.path.join(work, "moved", "sysmeasure-site")
    os.makedirs(os.path.dirname(dest))
    os.rename(stage + top, dest)
    shutil.rmtree(stage)
    d = {"top": dest, "prefix": prefix, "work": work}
    for key, rel in paths.items():
        d[key[:-3]] = os.path.join(dest, rel)
    return d


def plain_env(extra=None):
    """The environment without LD_LIBRARY_PATH nor any SYSMEASURE_ variable."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("SYSMEASURE_") and k not in ("LD_LIBRARY_PATH", "PKG_CONFIG_PATH",
                                                              "CMAKE_PREFIX_PATH")}
    env.update(extra or {})
    return env


def run(cmd, env=None, cwd=None):
    return subprocess.run(cmd, env=plain_env(env), cwd=cwd, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=300)


def check_runs(exe, what, env=None):
    """exe starts without LD_LIBRARY_PATH: alone (the API does nothing) and
    under the moved launcher (the planted region, 3 visits)."""
    m = moved()
    proc = run([exe], env=env)
    check(proc.returncode == 0 and proc.stdout == "centre_app total 1498500\n",
          "%s: unmeasured run exited %d, stdout %r, stderr %s"
          % (what, proc.returncode, proc.stdout, proc.stderr))
    out = os.path.join(smtest.workdir("centre-run"), "out")
    proc = run([os.path.join(m["bin"], "sysmeasure"), "-o", out, exe], env=env)
    check(proc.returncode == 0 and proc.stdout == "centre_app total 1498500\n",
          "%s: measured run exited %d, stdout %r, stderr %s"
          % (what, proc.returncode, proc.stdout, proc.stderr))
    if not os.path.exists(os.path.join(out, "profile.json")):
        check(False, "%s: no profile.json in %s" % (what, out))
        return None
    profile = smtest.load_json(out, "profile.json")
    visits = {}
    for cp in profile["callpaths"]:
        visits[cp["region"]] = visits.get(cp["region"], 0) + sum(t["visits"] for t in cp["per_thread"])
    check(visits.get("centre_region") == 3,
          "%s: centre_region visited %s times, expected 3" % (what, visits.get("centre_region")))
    return visits


def runpath(exe):
    proc = subprocess.run(["readelf", "-d", exe], stdout=subprocess.PIPE, text=True)
    return [line for line in proc.stdout.splitlines() if "RUNPATH" in line or "RPATH" in line]


def test_installed_files():
    m = moved()
    for f in ("LICENSE", "NEWS", "manual.md"):
        check(os.path.isfile(os.path.join(m["doc"], f)), "%s not installed in %s" % (f, m["doc"]))
    with open(os.path.join(m["doc"], "LICENSE")) as f:
        check("BSD 3-Clause" in f.read(), "LICENSE is not the BSD-3-Clause text")
    version = make_var("PACKAGE_VERSION")
    for rel in ("share/modulefiles/sysmeasure/%s.lua" % version, "share/sysmeasure/setup-env.sh"):
        check(os.path.isfile(os.path.join(m["top"], rel)), "%s not installed" % rel)
    for f in ("sysmeasureConfig.cmake", "sysmeasureConfigVersion.cmake"):
        check(os.path.isfile(os.path.join(m["lib"], "cmake", "sysmeasure", f)), "%s not installed" % f)


def test_module_variables_accepted():
    """What a modulefile sets is no measurement variable: the launcher runs."""
    m = moved()
    out = os.path.join(smtest.workdir("centre-vars"), "out")
    proc = run([os.path.join(m["bin"], "sysmeasure"), "-o", out, "/bin/echo", "planted"],
               env={"SYSMEASURE_ROOT": m["top"], "SYSMEASURE_DIR": m["top"],
                    "SYSMEASURE_HOME": m["top"], "SYSMEASURE_CC": "cc"})
    check(proc.returncode == 0 and proc.stdout == "planted\n",
          "launcher with SYSMEASURE_ROOT/_DIR/_HOME/_CC: exit %d, stdout %r, stderr %s"
          % (proc.returncode, proc.stdout, proc.stderr))
    check(os.path.isfile(os.path.join(out, "metadata.json")), "no metadata.json: not measured")
    check("unknown variable" not in proc.stderr, "stderr: %s" % proc.stderr)


def test_misspelt_variable_nearest():
    """A misspelt measurement variable still stops the launcher, in one line
    naming the nearest variable, before the program starts."""
    m = moved()
    marker = os.path.join(smtest.workdir("centre-typo"), "ran")
    proc = run([os.path.join(m["bin"], "sysmeasure"), "/bin/touch", marker],
               env={"SYSMEASURE_ROOT": m["top"], "SYSMEASURE_BUFER_SIZE": "1M"})
    check(proc.returncode == 2, "exit %d, expected 2" % proc.returncode)
    check(proc.stderr.count("\n") == 1 and
          "unknown variable SYSMEASURE_BUFER_SIZE (did you mean SYSMEASURE_BUFFER_SIZE?" in proc.stderr,
          "stderr: %r" % proc.stderr)
    check(not os.path.exists(marker), "the program ran")


def test_wrapper_moved_prefix():
    """sysmeasure-cc of the moved prefix: its -I, its library, an rpath."""
    m = moved()
    exe = os.path.join(smtest.workdir("centre-cc"), "app")
    proc = run([os.path.join(m["bin"], "sysmeasure-cc"), "-O1", SOURCE, "-o", exe])
    if not check(proc.returncode == 0, "sysmeasure-cc failed: %s" % proc.stderr):
        return
    rp = runpath(exe)
    check(any(m["lib"] in line for line in rp), "RUNPATH %s does not name %s" % (rp, m["lib"]))
    check(not any(m["prefix"] + "/lib" in line for line in rp),
          "RUNPATH %s still names the configured prefix" % rp)
    visits = check_runs(exe, "sysmeasure-cc")
    if visits is not None:
        check(visits.get("centre_work") == 3,
              "sysmeasure-cc: the instrumented centre_work visited %s times" % visits.get("centre_work"))
    # Through a symbolic link elsewhere (a site's bin folder) as well.
    link = os.path.join(m["work"], "site-bin")
    os.makedirs(link, exist_ok=True)
    os.symlink(os.path.join(m["bin"], "sysmeasure-cc"), os.path.join(link, "sysmeasure-cc"))
    exe2 = exe + "-link"
    proc = run([os.path.join(link, "sysmeasure-cc"), SOURCE, "-o", exe2])
    check(proc.returncode == 0 and run([exe2]).returncode == 0,
          "sysmeasure-cc through a symbolic link: %s" % proc.stderr)


def test_pkg_config_moved_prefix():
    """The documented line: cc app.c $(pkg-config --cflags --libs sysmeasure)."""
    m = moved()
    if not shutil.which("pkg-config"):
        skip("no pkg-config")
    env = {"PKG_CONFIG_PATH": os.path.join(m["lib"], "pkgconfig")}
    flags = run(["pkg-config", "--cflags", "--libs", "sysmeasure"], env=env)
    if not check(flags.returncode == 0, "pkg-config: %s" % flags.stderr):
        return
    check("-Wl,-rpath," in flags.stdout, "pkg-config --libs gives no rpath: %s" % flags.stdout)
    exe = os.path.join(smtest.workdir("centre-pc"), "app")
    proc = run(["cc", SOURCE, "-o", exe] + flags.stdout.split())
    if not check(proc.returncode == 0, "cc with pkg-config's flags failed: %s" % proc.stderr):
        return
    rp = runpath(exe)
    check(any(os.path.realpath(m["lib"]) in os.path.realpath(line.split("[")[-1].rstrip("]"))
              for line in rp), "RUNPATH %s does not name %s" % (rp, m["lib"]))
    check_runs(exe, "pkg-config")


CMAKE_PROJECT = """cmake_minimum_required(VERSION 3.13)
project(centre_app C)
find_package(sysmeasure 0.1 REQUIRED)
add_executable(centre_app centre_app.c)
target_link_libraries(centre_app PRIVATE sysmeasure::sysmeasure)
install(TARGETS centre_app DESTINATION bin)
"""


def test_cmake_package():
    """find_package(sysmeasure) against the moved prefix: the imported target
    gives the header, the library and an rpath, in the build tree and after
    cmake --install; a version the package does not offer is refused."""
    m = moved()
    if not shutil.which("cmake"):
        skip("no cmake (apt-get install cmake)")
    proj = smtest.workdir("centre-cmake")
    shutil.copy(SOURCE, proj)
    with open(os.path.join(proj, "CMakeLists.txt"), "w") as f:
        f.write(CMAKE_PROJECT)
    build, inst = os.path.join(proj, "build"), os.path.join(proj, "inst")
    proc = run(["cmake", "-S", proj, "-B", build, "-DCMAKE_PREFIX_PATH=" + m["top"],
                "-DCMAKE_INSTALL_PREFIX=" + inst])
    if not check(proc.returncode == 0, "cmake configure: %s %s" % (proc.stdout, proc.stderr)):
        return
    proc = run(["cmake", "--build", build])
    if not check(proc.returncode == 0, "cmake --build: %s %s" % (proc.stdout, proc.stderr)):
        return
    check_runs(os.path.join(build, "centre_app"), "CMake build tree")
    proc = run(["cmake", "--install", build])
    if check(proc.returncode == 0, "cmake --install: %s" % proc.stderr):
        check_runs(os.path.join(inst, "bin", "centre_app"), "CMake, installed")
    with open(os.path.join(proj, "CMakeLists.txt"), "w") as f:
        f.write(CMAKE_PROJECT.replace("sysmeasure 0.1 REQUIRED", "sysmeasure 9.0 REQUIRED"))
    proc = run(["cmake", "-S", proj, "-B", os.path.join(proj, "build9"),
                "-DCMAKE_PREFIX_PATH=" + m["top"]])
    check(proc.returncode != 0 and "sysmeasure" in proc.stderr,
          "find_package(sysmeasure 9.0) was accepted: %s" % proc.stderr[-400:])


def shell_env_of(script):
    """Run a bash script that prints `env -0` last; its environment."""
    proc = subprocess.run(["bash", "-c", script], env=plain_env(), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=120)
    env = {}
    for item in proc.stdout.split(b"\0"):
        k, _, v = item.decode(errors="replace").partition("=")
        if k:
            env[k] = v
    return proc, env


def check_paths(env, m, what):
    check(env.get("SYSMEASURE_ROOT") == m["top"],
          "%s: SYSMEASURE_ROOT %r, expected %r" % (what, env.get("SYSMEASURE_ROOT"), m["top"]))
    for var, want in (("PATH", m["bin"]), ("MANPATH", m["man"]),
                      ("PKG_CONFIG_PATH", os.path.join(m["lib"], "pkgconfig")),
                      ("LD_LIBRARY_PATH", m["lib"]), ("CMAKE_PREFIX_PATH", m["top"])):
        first = env.get(var, "").split(":")[0]
        check(os.path.normpath(first) == os.path.normpath(want),
              "%s: %s begins with %r, expected %r" % (what, var, first, want))
    # MANPATH was unset: an empty entry keeps the system's pages.
    check("" in env.get("MANPATH", "x").split(":"),
          "%s: MANPATH %r hides the system's man pages" % (what, env.get("MANPATH")))


def test_lmod_module():
    """module use PREFIX/share/modulefiles; module load sysmeasure; the
    launcher of the moved prefix runs with SYSMEASURE_ROOT set."""
    m = moved()
    if not os.path.isfile(LMOD_INIT):
        skip("no Lmod (apt-get install lmod)")
    out = os.path.join(smtest.workdir("centre-lmod"), "out")
    script = """set -e
. %s
module use %s
module load sysmeasure
command -v sysmeasure >&2
sysmeasure -o %s /bin/echo measured >&2
env -0""" % (LMOD_INIT, os.path.join(m["data"], "modulefiles"), out)
    proc, env = shell_env_of(script)
    if not check(proc.returncode == 0, "module load, then sysmeasure: exit %d, stderr %s"
                 % (proc.returncode, proc.stderr.decode(errors="replace"))):
        return
    check(proc.stderr.decode().startswith(os.path.join(m["bin"], "sysmeasure") + "\nmeasured\n"),
          "not the moved launcher, or the program's output is lost: %r" % proc.stderr)
    check(os.path.isfile(os.path.join(out, "metadata.json")), "no metadata.json: not measured")
    check_paths(env, m, "module load")
    # module unload takes it all away again.
    proc, env = shell_env_of(". %s; module use %s; module load sysmeasure; module unload sysmeasure; env -0"
                             % (LMOD_INIT, os.path.join(m["data"], "modulefiles")))
    check("SYSMEASURE_ROOT" not in env and m["bin"] not in env.get("PATH", ""),
          "module unload left SYSMEASURE_ROOT=%r, PATH=%r" % (env.get("SYSMEASURE_ROOT"), env.get("PATH")))


def test_setup_env_bash():
    """. PREFIX/share/sysmeasure/setup-env.sh in bash, twice: the moved
    prefix on each path once; the launcher runs."""
    m = moved()
    setup = os.path.join(m["data"], "sysmeasure", "setup-env.sh")
    out = os.path.join(smtest.workdir("centre-setup"), "out")
    proc, env = shell_env_of("set -e; . %s; . %s; sysmeasure -o %s /bin/true; env -0"
                             % (setup, setup, out))
    if not check(proc.returncode == 0, "setup-env.sh, then sysmeasure: exit %d, stderr %s"
                 % (proc.returncode, proc.stderr.decode(errors="replace"))):
        return
    check_paths(env, m, "setup-env.sh")
    check(env.get("PATH", "").split(":").count(m["bin"]) == 1, "PATH holds the bin folder twice")
    check(os.path.isfile(os.path.join(out, "metadata.json")), "no metadata.json: not measured")
    check(not any(k.startswith("_sm_") for k in env), "setup-env.sh leaves its own variables")


if __name__ == "__main__":
    smtest.run_cases(globals())
