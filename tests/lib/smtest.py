"""Helpers for sysmeasure's integration tests: run a program under the
launcher, read the OTF2 archive back with the OTF2 Python reader, load the
summary files, and check what every trace must satisfy."""

import functools
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback

import otf2

BUILD = os.environ.get("SM_BUILDDIR", os.getcwd())
SRC = os.environ.get("SM_SRCDIR", BUILD)
LAUNCHER = os.path.join(BUILD, "sysmeasure")

failures = []
failed_cases = []
case = None  # the case run_cases is running: named in every failed check
checks_made = 0


def check(cond, message):
    """Record a failed expectation and go on (a test reports all it finds)."""
    global checks_made
    checks_made += 1
    if not cond:
        if case:
            message = "[%s] %s" % (case, message)
        failures.append(message)
        print("CHECK FAILED: " + message, file=sys.stderr, flush=True)
    return cond


def finish():
    if failures:
        print("%d check(s) failed" % len(failures), file=sys.stderr)
        if failed_cases:
            print("failed case(s): %s" % " ".join(failed_cases), file=sys.stderr)
        sys.exit(1)
    print("all checks passed")
    sys.exit(0)


# ---------------------------------------------------------------- named cases

class Skip(Exception):
    """A case that cannot run on this build or machine (skip(reason))."""


def skip(reason):
    raise Skip(reason)


def fixture(make):
    """A set-up that several cases read (a measured run, a built program):
    made once per set of arguments, by the first case that asks for it, its
    checks named "<case>, set-up <function>"; if it raised, every later
    case that asks gets the same exception (the set-up is not made again)."""
    made = {}

    @functools.wraps(make)
    def get(*args):
        global case
        if args not in made:
            outer = case
            case = "%s, set-up %s" % (outer, make.__name__) if outer else make.__name__
            try:
                made[args] = (True, make(*args))
            except (Exception, SystemExit) as e:
                made[args] = (False, e)
            finally:
                case = outer
        ok, value = made[args]
        if not ok:
            raise value
        return value
    return get


def _selected(cases, path, argv):
    """The cases to run: those named on the command line, else in SM_CASES
    (names separated by spaces or commas; FILE:NAME names a case of one test
    file, FILE its basename without .py), else all.  A name is the function's,
    with or without its test_ prefix."""
    names = list(argv)
    base = os.path.splitext(os.path.basename(path))[0]
    if not names and os.environ.get("SM_CASES", "").strip():
        for word in os.environ["SM_CASES"].replace(",", " ").split():
            where, _, name = word.rpartition(":")
            if where in ("", base):
                names.append(name)
        if not names:
            print("skipped: SM_CASES names no case of %s" % base)
            sys.exit(77)
    if not names:
        return cases
    known = dict(cases)
    unknown = [n for n in names if n not in known and n[5:] not in known]
    if unknown:
        print("%s: no case %s (its cases: %s)" % (base, ", ".join(unknown), " ".join(known)),
              file=sys.stderr)
        sys.exit(2)
    want = {n[5:] if n not in known else n for n in names}
    return [(n, f) for n, f in cases if n in want]


def run_cases(namespace, argv=None):
    """Run the cases of a test file (namespace: its globals()): its test_NAME
    functions in the order they are defined, all or those selected (see
    _selected; --list prints the names).  Each case's failed checks carry its
    name; a case that raises (or exits) fails and the next one runs; a case
    that checks nothing fails; skip() or exit 77 skips a case, and the file
    when every case it ran was skipped.  Ends with finish()."""
    global case
    module = namespace.get("__name__")
    cases = [(n[5:], f) for n, f in namespace.items()
             if n.startswith("test_") and callable(f) and getattr(f, "__module__", None) == module]
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["--list"]:
        print("\n".join(n for n, _ in cases))
        sys.exit(0)
    selected = _selected(cases, namespace.get("__file__", module), argv)
    skipped = []
    for name, fn in selected:
        case, before, checks_before = name, len(failures), checks_made
        print("CASE %s" % name, flush=True)
        start = time.monotonic()
        skip_reason = None
        try:
            fn()
        except Skip as e:
            skip_reason = str(e)
        except SystemExit as e:
            if e.code == 77:
                skip_reason = "exit 77"
            else:
                check(False, "the case exited with %s" % e.code)
        except Exception:
            check(False, "the case raised:\n" + traceback.format_exc())
        if skip_reason is None and checks_made == checks_before:
            check(False, "the case checked nothing")
        took = time.monotonic() - start
        if len(failures) > before:
            failed_cases.append(name)
            print("CASE FAILED: %s (%.2f s)" % (name, took), flush=True)
        elif skip_reason is not None:
            skipped.append(name)
            print("CASE SKIPPED: %s (%s)" % (name, skip_reason), flush=True)
        else:
            print("CASE PASSED: %s (%.2f s)" % (name, took), flush=True)
    case = None
    if selected and len(skipped) == len(selected) and not failures:
        print("skipped: every case (%s)" % " ".join(skipped))
        sys.exit(77)
    finish()


def program(name):
    """A test program (tests/programs) or example (examples/) of the build."""
    for folder in ("tests/programs", "examples"):
        path = os.path.join(BUILD, folder, name)
        if os.path.exists(path):
            return path
    raise FileNotFoundError(name)


def workdir(prefix):
    base = os.environ.get("SM_TEST_WORK") or tempfile.gettempdir()
    return tempfile.mkdtemp(prefix=prefix + "-", dir=base)


def clean_env(extra=None):
    """The environment without any SYSMEASURE_ variable of the caller."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SYSMEASURE_")}
    env.update(extra or {})
    return env


def start_until_file(cmd, base, name="STARTED", env=None, new_session=False):
    """Starts cmd in folder base and waits (at most 30 s) until the program
    made the file base/name, or ended; returns the Popen (stdout and stderr
    piped, text)."""
    proc = subprocess.Popen(cmd, cwd=base, env=clean_env(env), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=new_session)
    for _ in range(600):
        if os.path.exists(os.path.join(base, name)) or proc.poll() is not None:
            break
        time.sleep(0.05)
    check(os.path.exists(os.path.join(base, name)), "the program started")
    return proc


def run(args, env=None, cwd=None, launcher_args=(), timeout=300):
    """Run args under the launcher; returns the CompletedProcess."""
    cmd = [LAUNCHER] + list(launcher_args) + ["--"] + list(args)
    return subprocess.run(cmd, env=clean_env(env), cwd=cwd, timeout=timeout,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def measure(args, name, env=None, launcher_args=(), expect_rc=0):
    """Run under the launcher into a fresh output folder; returns its path."""
    out = os.path.join(workdir(name), "out")
    proc = run(args, env=env, launcher_args=["--output", out] + list(launcher_args))
    if not check(proc.returncode == expect_rc,
                 "%s exited %d, expected %d; stderr: %s" % (args[0], proc.returncode,
                                                            expect_rc, proc.stderr)):
        print(proc.stdout)
    return out, proc


def load_json(out, name):
    with open(os.path.join(out, name)) as f:
        return json.load(f)


class Trace:
    """The events of an archive, per location, with definitions."""

    def __init__(self, out):
        path = os.path.join(out, "traces.otf2")
        self.events = {}  # location name -> [event]
        self.location_of = {}
        with otf2.reader.open(path) as trace:
            self.definitions = trace.definitions
            self.regions = [r.name for r in trace.definitions.regions]
            self.locations = list(trace.definitions.locations)
            for loc in self.locations:
                self.events[loc] = []
            for location, event in trace.events:
                self.events[location].append(event)
            self.location_properties = list(trace.definitions.location_properties)
            self.clock = trace.definitions.clock_properties

    def of_type(self, cls):
        return [(loc, e) for loc, evs in self.events.items() for e in evs if isinstance(e, cls)]

    def count_enters(self, region_name):
        return sum(1 for _, e in self.of_type(otf2.events.Enter) if e.region.name == region_name)


def check_trace_consistent(trace):
    """Every enter has its leave (properly nested), and timestamps never
    decrease on a location.  Returns {region name: visits}."""
    visits = {}
    for loc, events in trace.events.items():
        stack = []
        last = None
        for e in events:
            if last is not None:
                check(e.time >= last, "time goes back on %s: %d after %d" % (loc.name, e.time, last))
            last = e.time
            if isinstance(e, otf2.events.Enter):
                stack.append(e.region.name)
                visits[e.region.name] = visits.get(e.region.name, 0) + 1
            elif isinstance(e, otf2.events.Leave):
                if check(stack, "leave of %s without enter on %s" % (e.region.name, loc.name)):
                    top = stack.pop()
                    check(top == e.region.name,
                          "leave of %s closes %s on %s" % (e.region.name, top, loc.name))
        check(not stack, "regions left open on %s: %s" % (loc.name, stack))
    return visits


def check_thread_teams(trace):
    """OpenMP thread teams: on every location ThreadTeamBegin/End balanced
    and nested, each naming an OpenMP team communicator whose group has the
    location as a member; ThreadFork/Join paired on the encountering thread,
    each join no earlier than the team's ends on its other threads; a team
    forked inside another has that team as parent.  Returns
    {location: [(begin time, end time, comm)]} of the team instances."""
    T = otf2.events
    teams = {}
    ends = {}  # comm -> [end times], the instances of all threads, in order
    for loc, events in trace.events.items():
        stack, forks, inst = [], [], []
        for e in events:
            if isinstance(e, T.ThreadTeamBegin):
                c = e.thread_team
                check(c.group.paradigm == otf2.Paradigm.OPENMP and
                      c.group.group_type == otf2.GroupType.COMM_GROUP,
                      "team %s of %s is an OpenMP comm group" % (c.name, loc.name))
                check(loc in c.group.members, "%s is a member of the team it begins: %s"
                      % (loc.name, [m.name for m in c.group.members]))
                if stack:
                    check(c.parent is stack[-1][1], "a team begun inside team %s has it as parent"
                          % stack[-1][1])
                stack.append((e.time, c))
            elif isinstance(e, T.ThreadTeamEnd):
                if check(stack and stack[-1][1] is e.thread_team,
                         "team end on %s matches its begin" % loc.name):
                    b, c = stack.pop()
                    inst.append((b, e.time, c))
                    ends.setdefault(c, []).append(e.time)
            elif isinstance(e, T.ThreadFork):
                check(e.model == otf2.Paradigm.OPENMP, "fork model OpenMP")
                forks.append(e)
            elif isinstance(e, T.ThreadJoin):
                if check(forks, "join after a fork on %s" % loc.name):
                    forks.pop()
        check(not stack, "every team ended on %s: %d open" % (loc.name, len(stack)))
        check(not forks, "every fork joined on %s: %d open" % (loc.name, len(forks)))
        teams[loc] = inst
    # A team runs one instance at a time (its encountering thread is in it):
    # the k-th instance of a team is the k-th on each of its threads.  The
    # join on the encountering thread (thread 0) comes with its team end.
    for loc in teams:
        events = trace.events[loc]
        ended = {}  # comm -> team ends so far on loc
        for i, e in enumerate(events):
            if isinstance(e, T.ThreadTeamEnd):
                ended[e.thread_team] = ended.get(e.thread_team, 0) + 1
            if not isinstance(e, T.ThreadJoin):
                continue
            prev = events[i - 1] if i else None
            if not check(isinstance(prev, T.ThreadTeamEnd),
                         "a join right after a team end on %s" % loc.name):
                continue
            c = prev.thread_team
            check(c.group.members[0] is loc, "the join's team %s has %s as thread 0"
                  % (c.name, loc.name))
            k = ended[c] - 1
            for other in c.group.members[1:]:
                theirs = [x[1] for x in teams.get(other, []) if x[2] is c]
                if check(k < len(theirs), "instance %d of %s on %s" % (k, c.name, other.name)):
                    check(theirs[k] <= e.time, "join on %s at %d no earlier than the team end "
                          "on %s at %d" % (loc.name, e.time, other.name, theirs[k]))
    return teams


def callpath(profile, *names):
    """The profile.json call path with this exact path, or None."""
    for cp in profile["callpaths"]:
        if cp["path"] == list(names):
            return cp
    return None


# ---------------------------------------------------------------- MPI

MPIRUN = os.environ.get("MPIRUN", "mpirun")


def mpi_env(extra=None):
    env = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1"}
    env.update(extra or {})
    return env


def mpi_measure(np, args, name, launcher_args=(), expect_rc=0, env=None, timeout=300, out=None):
    """mpirun -np N sysmeasure --output OUT -- args; returns (out, proc)."""
    out = out or os.path.join(workdir(name), "out")
    cmd = [MPIRUN, "-np", str(np), "--oversubscribe", LAUNCHER, "--output", out] + \
        list(launcher_args) + ["--"] + list(args)
    proc = subprocess.run(cmd, env=clean_env(mpi_env(env)), timeout=timeout,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if expect_rc is not None and proc.returncode != expect_rc and not proc.stdout and not proc.stderr:
        # Seen once in CI: mpirun exited 1 with no output at all, the job's
        # files complete.  Not understood yet: say so in the log and run the
        # job once more, so the rest of the checks still run.
        print("NOTE: mpirun exited %d without any output; running the job again" % proc.returncode)
        proc = subprocess.run(cmd, env=clean_env(mpi_env(env)), timeout=timeout,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if expect_rc is not None and not check(proc.returncode == expect_rc,
                                           "%s exited %d, expected %d; stderr: %s"
                                           % (" ".join(args), proc.returncode, expect_rc,
                                              proc.stderr[-3000:])):
        print(proc.stdout)
    return out, proc


def location_rank(loc):
    """The rank of a location: its location group is 'MPI Rank r' in an MPI
    job, 'Process r' in a job of several processes without MPI ('Process
    PID' for a process alone); a process's group is numbered by its rank."""
    name = loc.group.name
    if name.startswith("MPI Rank"):
        return int(name.split()[-1])
    if name.startswith("Process ") and loc.group.location_group_type == \
            otf2.LocationGroupType.PROCESS:
        return loc.group._ref
    return 0


def comm_world_ranks(comm, n_ranks=None):
    """World ranks of a communicator's members, in comm rank order (the
    reader gives them as the ranks' locations)."""
    g = comm.group
    if g.group_type == otf2.GroupType.COMM_SELF:
        return None
    return [location_rank(m) if hasattr(m, "group") else int(m) for m in g.members]


def check_messages(trace, n_ranks):
    """Every send has exactly one matching receive (communicator, world ranks,
    tag, bytes), and no receive completes before its send began.  Returns the
    number of matched messages."""
    sends, recvs = {}, {}
    for loc, events in trace.events.items():
        me = location_rank(loc)
        for e in events:
            if isinstance(e, (otf2.events.MpiSend, otf2.events.MpiIsend)):
                members = comm_world_ranks(e.communicator, n_ranks)
                dst = members[e.receiver] if members else me
                key = (e.communicator.name, me, dst, e.msg_tag, e.msg_length)
                sends.setdefault(key, []).append(e.time)
            elif isinstance(e, (otf2.events.MpiRecv, otf2.events.MpiIrecv)):
                members = comm_world_ranks(e.communicator, n_ranks)
                src = members[e.sender] if members else me
                key = (e.communicator.name, src, me, e.msg_tag, e.msg_length)
                recvs.setdefault(key, []).append(e.time)
    matched = 0
    for key in set(sends) | set(recvs):
        s, r = sorted(sends.get(key, [])), sorted(recvs.get(key, []))
        if not check(len(s) == len(r), "message %s: %d sends, %d receives" % (key, len(s), len(r))):
            continue
        for ts, tr in zip(s, r):
            check(tr >= ts, "message %s received at %d before it was sent at %d" % (key, tr, ts))
        matched += len(s)
    return matched


def collective_counts(trace):
    """{(communicator name, op): {rank: count}} from MpiCollectiveEnd and
    NonBlockingCollectiveComplete."""
    counts = {}
    for loc, events in trace.events.items():
        me = location_rank(loc)
        for e in events:
            if isinstance(e, (otf2.events.MpiCollectiveEnd,
                              otf2.events.NonBlockingCollectiveComplete)):
                members = comm_world_ranks(e.communicator)
                key = (e.communicator.name + (" %s" % members if members else ""),
                       str(e.collective_op).split(".")[-1])
                counts.setdefault(key, {}).setdefault(me, 0)
                counts[key][me] += 1
    return counts


def region_visits_by_rank(trace):
    """{region name: {rank: enters}}."""
    out = {}
    for loc, events in trace.events.items():
        me = location_rank(loc)
        for e in events:
            if isinstance(e, otf2.events.Enter):
                d = out.setdefault(e.region.name, {})
                d[me] = d.get(me, 0) + 1
    return out


# ---------------------------------------------------------------- OpenMP

CLANG = os.environ.get("SM_CLANG", "")


def need_openmp():
    """Skip (exit 77) unless this build has the OMPT adapter and a clang
    with -fopenmp to build the test programs."""
    if os.environ.get("SM_HAVE_OMPT") != "yes" or CLANG in ("", "no"):
        print("skipped: this build has no OMPT adapter (configure found no clang -fopenmp "
              "with omp-tools.h)")
        sys.exit(77)


def build_program(compiler, source, name, flags=()):
    """Compile tests/programs/<source> into a work folder; returns its path."""
    out = os.path.join(workdir("build-" + name), name)
    cmd = [compiler, os.path.join(SRC, "tests", "programs", source), "-o", out] + list(flags)
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        print("cannot build %s: %s\n%s" % (source, " ".join(cmd), proc.stderr), file=sys.stderr)
        sys.exit(1)
    return out


def build_wrapped(wrapper, source, name, flags=("-O2",), libs=()):
    """Compile tests/programs/<source> with one of this build's compiler
    wrappers (sysmeasure-cc, -c++, -fortran, sysmeasure-instrument: then
    flags begin with the compiler); returns the executable's path."""
    out = os.path.join(workdir("build-" + name), name)
    cmd = [os.path.join(BUILD, wrapper)] + list(flags) + \
        [os.path.join(SRC, "tests", "programs", source), "-o", out] + list(libs)
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        print("cannot build %s: %s\n%s" % (source, " ".join(cmd), proc.stderr), file=sys.stderr)
        sys.exit(1)
    return out


def user_api_flags():
    """Compiler flags for a program that uses the user API of this build."""
    libs = os.path.join(BUILD, ".libs")
    return ["-I" + os.path.join(SRC, "include"), "-L" + libs, "-Wl,-rpath," + libs, "-lsysmeasure"]
