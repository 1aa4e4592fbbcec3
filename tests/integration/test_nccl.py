"""NCCL calls on a machine without NCCL or a GPU (what CI can run; the
real collectives are tests/gpu/test_nccl.py on a 2-GPU host).

tests/programs/nccl_calls.c looks the NCCL functions up by name, as a program
that loads NCCL itself finds them.  Under the launcher they are
libsysmeasure-nccl.so's (preloaded into every program): each call is a
region of paradigm nccl (OTF2: CUDA) with its attributes, and, with no real
NCCL to pass it on to, returns ncclSystemError with one line on stderr for
the whole run.  A program that makes no NCCL call has nothing of NCCL in its
output; --no-nccl and SYSMEASURE_NCCL=no leave the library out."""
import os

import otf2
import smtest
from smtest import check, load_json, measure, program, run, workdir

Enter, Leave = otf2.events.Enter, otf2.events.Leave


def attrs(e):
    return {k.name: v for k, v in (e.attributes or {}).items()}


def nccl_events(out):
    """(region name, Enter/Leave, attributes, region paradigm) of the main
    thread's NCCL regions, in order."""
    seen = []
    with otf2.reader.open(os.path.join(out, "traces.otf2")) as tr:
        for loc, e in tr.events:
            if isinstance(e, (Enter, Leave)) and str(e.region.name).startswith("nccl"):
                seen.append((str(e.region.name), type(e), attrs(e), e.region.paradigm))
    return seen


def warnings(stderr):
    return [l for l in stderr.splitlines() if l.startswith("sysmeasure: warning")]


@smtest.fixture
def calls():
    return measure([program("nccl-calls"), "calls"], "nccl-calls")


def test_calls_pass_through():
    out, proc = calls()
    check("rc 2 2 2 2 2" in proc.stdout, "every call answers ncclSystemError: %r" % proc.stdout)
    check("errno kept" in proc.stdout, "errno as the program set it: %r" % proc.stdout)
    w = warnings(proc.stderr)
    check(len(w) == 1 and "ncclAllReduce was called, but no NCCL or RCCL library" in w[0],
          "one line for the run, naming the first call: %r" % proc.stderr)


def test_regions_and_attributes():
    out, _ = calls()
    ev = nccl_events(out)
    names = [(n, t) for n, t, _, _ in ev]
    want = [("ncclAllReduce", Enter), ("ncclAllReduce", Leave)] * 2 + \
        [("ncclGroupStart", Enter), ("ncclGroupStart", Leave), ("ncclBroadcast", Enter),
         ("ncclBroadcast", Leave), ("ncclGroupEnd", Enter), ("ncclGroupEnd", Leave)]
    check(names == want, "the calls as regions, in order: %s" % names)
    if names != want:
        return
    check(all(p == otf2.Paradigm.CUDA for _, _, _, p in ev),
          "NCCL's regions are CUDA's in OTF2: %s" % {p for _, _, _, p in ev})
    for i in (0, 2):
        a = ev[i][2]
        check(a.get("nccl bytes") == 1048576, "all-reduce: 262144 float32 are 1 MiB: %s" % a)
        check(a.get("nccl datatype") == "float32" and a.get("nccl op") == "sum",
              "all-reduce: type and op named: %s" % a)
        check(a.get("nccl stream") == 0x1234, "all-reduce: the stream: %s" % a)
        check("nccl group" not in a, "all-reduce: in no group: %s" % a)
        check("nccl comm" not in a and "nccl rank" not in a,
              "no communicator made: none claimed: %s" % a)
        check(ev[i + 1][2].get("nccl result") == 2, "the result on the leave: %s" % ev[i + 1][2])
    b = ev[6][2]
    check(b.get("nccl bytes") == 262144 and b.get("nccl root") == 0 and "nccl op" not in b,
          "broadcast: 256 KiB from root 0, no op: %s" % b)
    groups = [ev[k][2].get("nccl group") for k in (4, 6, 8)]
    check(groups[0] is not None and groups[0] > 0 and len(set(groups)) == 1,
          "start, broadcast and end carry one group number: %s" % groups)


def test_no_collective_records_without_communicator():
    out, _ = calls()
    n = 0
    with otf2.reader.open(os.path.join(out, "traces.otf2")) as tr:
        for _, e in tr.events:
            n += isinstance(e, (otf2.events.MpiCollectiveBegin, otf2.events.MpiCollectiveEnd,
                                otf2.events.MpiSend, otf2.events.MpiRecv))
        comms = list(tr.definitions.comms)
    check(n == 0 and not comms, "no communicator: no collective records (%d), no comm (%d)"
          % (n, len(comms)))


def test_profile():
    out, _ = calls()
    prof = load_json(out, "profile.json")
    paths = {tuple(c["path"]): c for c in prof.get("callpaths", [])}
    want = {("ncclAllReduce",): 2, ("ncclGroupStart",): 1, ("ncclBroadcast",): 1,
            ("ncclGroupEnd",): 1}
    for path, visits in want.items():
        c = paths.get(path)
        check(c is not None and c.get("paradigm") == "nccl" and
              sum(t["visits"] for t in c["per_thread"]) == visits,
              "profile: %s, paradigm nccl, %d visits: %s" % (path, visits, c and
                                                              (c.get("paradigm"),
                                                               c["per_thread"])))


def test_program_without_nccl():
    out, proc = measure([program("nccl-calls"), "plain"], "nccl-plain",
                        launcher_args=["-v", "-v"])
    check(proc.stdout == "plain\n", "the program's output as it is: %r" % proc.stdout)
    preload = [l for l in proc.stderr.splitlines() if "LD_PRELOAD=" in l]
    check(preload and "libsysmeasure-nccl.so" in preload[0],
          "preloaded into a program that has no NCCL: %s" % preload)
    check(not warnings(proc.stderr), "nothing said about NCCL: %s" % warnings(proc.stderr))
    check(not nccl_events(out), "no NCCL region")


def test_switched_off():
    for name, launcher_args, env in (("option", ["--no-nccl"], None),
                                     ("variable", [], {"SYSMEASURE_NCCL": "no"})):
        out, proc = measure([program("nccl-calls"), "calls"], "nccl-off-" + name,
                            env=env, launcher_args=["-v", "-v"] + launcher_args)
        check(proc.stdout == "no ncclAllReduce\n",
              "%s: the library is not there to answer: %r" % (name, proc.stdout))
        preload = [l for l in proc.stderr.splitlines() if "LD_PRELOAD=" in l]
        check(preload and "libsysmeasure-nccl" not in preload[0],
              "%s: not preloaded: %s" % (name, preload))


def test_filtered():
    """A filter that leaves the nccl paradigm out: the calls still pass
    through (same results), nothing of them is recorded."""
    d = workdir("nccl-filter")
    path = os.path.join(d, "filter.txt")
    with open(path, "w") as f:
        f.write("SYSMEASURE_PARADIGMS_BEGIN\n  EXCLUDE nccl\nSYSMEASURE_PARADIGMS_END\n")
    out, proc = measure([program("nccl-calls"), "calls"], "nccl-filtered",
                        launcher_args=["--filter", path])
    check("rc 2 2 2 2 2" in proc.stdout and "errno kept" in proc.stdout,
          "the calls answered as unfiltered: %r" % proc.stdout)
    check(not nccl_events(out), "no NCCL region recorded")


if __name__ == "__main__":
    smtest.run_cases(globals())
