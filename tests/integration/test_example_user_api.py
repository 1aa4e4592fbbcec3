"""The user API example under the launcher: archive, profile and metadata."""
import otf2
import smtest
from smtest import (Trace, callpath, check, check_trace_consistent, load_json, measure, program)

THREADS = 4


@smtest.fixture
def example():
    """One measured run of the example: (its command, output folder, process)."""
    cmd = [program("user-api-threads"), str(THREADS), "1000", "10"]
    out, proc = measure(cmd, "example")
    return cmd, out, proc


@smtest.fixture
def trace():
    return Trace(example()[1])


def test_program_output():
    proc = example()[2]
    check("total 220000" in proc.stdout, "the program's own output is intact: %r" % proc.stdout)


def test_trace_regions():
    t = trace()
    visits = check_trace_consistent(t)
    for name in ("initialization", "thread_creation", "thread_wait"):
        check(visits.get(name) == 1, "%s visited once, got %s" % (name, visits.get(name)))
    check(visits.get("run(10) x 1000") == THREADS, "run region once per thread: %s" % visits)
    check(len(t.locations) == THREADS + 1,
          "one location per thread: %d" % len(t.locations))


def test_errno_annotation():
    # The custom push callback attaches errno to every pushed region.
    enters = trace().of_type(otf2.events.Enter)
    with_errno = [e for _, e in enters
                  if e.attributes and any(a.name == "errno" for a in e.attributes.keys())]
    check(len(with_errno) == len(enters) and enters, "errno annotation on every enter (%d of %d)"
          % (len(with_errno), len(enters)))


def test_thread_creation():
    # Thread creation: both sides recorded, sequence numbers match.
    t = trace()
    created = sorted(e.sequence_count for _, e in t.of_type(otf2.events.ThreadCreate))
    begun = sorted(e.sequence_count for _, e in t.of_type(otf2.events.ThreadBegin))
    check(len(created) == THREADS and created == begun,
          "ThreadCreate %s vs ThreadBegin %s" % (created, begun))
    props = [(p.location.name, p.name, p.value) for p in t.location_properties]
    check(sum(1 for p in props if p[1] == "creation path" and p[2] == "thread_creation") == THREADS,
          "creation path of each thread: %s" % props)


def test_profile():
    profile = load_json(example()[1], "profile.json")
    cp = callpath(profile, "run(10) x 1000")
    if check(cp is not None, "run path in profile.json"):
        check(len(cp["per_thread"]) == THREADS, "run on %d threads" % len(cp["per_thread"]))
        check(all(t["visits"] == 1 for t in cp["per_thread"]), "one visit per thread")
        across = cp["across_threads"]
        check(across["threads"] == THREADS, "across_threads.threads = %s" % across["threads"])
        inc = across["inclusive"]
        check(inc["min"] <= inc["mean"] <= inc["max"], "min <= mean <= max: %s" % inc)
        sums = {t["member"]: t["inclusive"]["sum"] for t in cp["per_thread"]}
        check(sums[inc["min_thread"]] == min(sums.values()), "min thread holds the min")
        check(sums[inc["max_thread"]] == max(sums.values()), "max thread holds the max")
    for t in profile["threads"][1:]:
        check(t["created_by"] == 0 and t["creation_path"] == ["thread_creation"],
              "lineage of %s: %s" % (t["name"], t))


def test_metadata():
    cmd, out, _ = example()
    meta = load_json(out, "metadata.json")
    check(meta["command"] == cmd, "command line: %s" % meta["command"])
    check(meta["configuration"]["SYSMEASURE_OUTPUT"]["source"] == "environment", "config source")
    check(len(meta["locations"]) == THREADS + 1, "locations in metadata")
    check(meta["end_time_ns"] >= meta["start_time_ns"], "dates")


def test_profile_text():
    text = open(example()[1] + "/profile.txt").read()
    check("|0>>> thread_wait" in text and "CALL-PATH PROFILE ACROSS THREADS" in text,
          "profile.txt has both tables")


if __name__ == "__main__":
    smtest.run_cases(globals())
