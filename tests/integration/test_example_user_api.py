"""The user API example under the launcher: archive, profile and metadata."""
import otf2
from smtest import (Trace, callpath, check, check_trace_consistent, finish, load_json, measure,
                    program)

THREADS = 4
exe = program("user-api-threads")
out, proc = measure([exe, str(THREADS), "1000", "10"], "example")
check("total 220000" in proc.stdout, "the program's own output is intact: %r" % proc.stdout)

trace = Trace(out)
visits = check_trace_consistent(trace)
for name in ("initialization", "thread_creation", "thread_wait"):
    check(visits.get(name) == 1, "%s visited once, got %s" % (name, visits.get(name)))
check(visits.get("run(10) x 1000") == THREADS, "run region once per thread: %s" % visits)
check(len(trace.locations) == THREADS + 1,
      "one location per thread: %d" % len(trace.locations))

# The custom push callback attaches errno to every pushed region.
enters = trace.of_type(otf2.events.Enter)
with_errno = [e for _, e in enters
              if e.attributes and any(a.name == "errno" for a in e.attributes.keys())]
check(len(with_errno) == len(enters) and enters, "errno annotation on every enter (%d of %d)"
      % (len(with_errno), len(enters)))

# Thread creation: both sides recorded, sequence numbers match.
created = sorted(e.sequence_count for _, e in trace.of_type(otf2.events.ThreadCreate))
begun = sorted(e.sequence_count for _, e in trace.of_type(otf2.events.ThreadBegin))
check(len(created) == THREADS and created == begun, "ThreadCreate %s vs ThreadBegin %s" % (created, begun))
props = [(p.location.name, p.name, p.value) for p in trace.location_properties]
check(sum(1 for p in props if p[1] == "creation path" and p[2] == "thread_creation") == THREADS,
      "creation path of each thread: %s" % props)

profile = load_json(out, "profile.json")
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

meta = load_json(out, "metadata.json")
check(meta["command"] == [exe, str(THREADS), "1000", "10"], "command line: %s" % meta["command"])
check(meta["configuration"]["SYSMEASURE_OUTPUT"]["source"] == "environment", "config source")
check(len(meta["locations"]) == THREADS + 1, "locations in metadata")
check(meta["end_time_ns"] >= meta["start_time_ns"], "dates")

text = open(out + "/profile.txt").read()
check("|0>>> thread_wait" in text and "CALL-PATH PROFILE ACROSS THREADS" in text,
      "profile.txt has both tables")
finish()
