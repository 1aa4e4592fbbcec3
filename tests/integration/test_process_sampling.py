"""Process sampling (--process-sampling): a program that allocates and
touches 200 MB in ten steps shows its high-water mark within 5% and a
rising resident-memory timeline in the archive (OTF2 metrics on a metric
location of the process, read back with the OTF2 Python reader); the
sampler thread is not a thread of the program; bad interval."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import smtest  # noqa: E402
from smtest import check  # noqa: E402

import otf2  # noqa: E402

MB = 1024 * 1024


@smtest.fixture
def measured():
    out, proc = smtest.measure([smtest.program("memory-steps")], "process-sampling",
                               launcher_args=["--process-sampling", "--sampling-interval", "40"])
    return out, proc


def test_program_ran():
    check("touched 200 MB" in measured()[1].stdout, "the program ran: %s" % measured()[1].stdout)


def test_profile_metrics():
    out = measured()[0]
    profile = smtest.load_json(out, "profile.json")
    metrics = {m["name"]: m for m in profile.get("sampled_metrics", [])}
    for name in ("memory resident", "memory virtual", "memory high-water mark",
                 "cpu utilization process", "page faults minor", "context switches voluntary"):
        check(name in metrics, "profile.json: no sampled metric %r (has %s)" % (name, list(metrics)))
    rss = metrics.get("memory resident", {}).get("per_rank", [{}])[0]
    hwm = metrics.get("memory high-water mark", {}).get("per_rank", [{}])[0]
    if rss and hwm:
        expected = rss["min"] + 200 * MB  # the process before its first step, plus 200 MB
        check(abs(hwm["max"] - expected) <= 0.05 * expected,
              "high-water mark %.1f MB, expected %.1f MB +- 5%%" % (hwm["max"] / MB, expected / MB))
        check(rss["max"] >= 0.95 * 200 * MB and rss["min"] < rss["mean"] < rss["max"],
              "resident memory: %s" % rss)
        check(hwm["high_water_mark"] == hwm["max"], "high_water_mark field: %s" % hwm)
    faults = metrics.get("page faults minor", {}).get("per_rank", [{}])[0]
    check(faults.get("last", 0) >= 200 * MB // 4096 * 0.9,
          "minor faults %s: touching 200 MB faults in 51200 pages" % faults.get("last"))
    text = open(os.path.join(out, "profile.txt")).read()
    check("SAMPLED METRICS PER RANK" in text and "memory high-water mark" in text,
          "profile.txt has no sampled-metrics section")


def test_timeline():
    # The timeline: Metric events of "memory resident" on the process's metric location.
    trace = smtest.Trace(measured()[0])
    cpu_threads = [l for l in trace.locations if l.type == otf2.LocationType.CPU_THREAD]
    metric_locs = [l for l in trace.locations if l.type == otf2.LocationType.METRIC]
    check(len(cpu_threads) == 1, "one thread of the program, the sampler is none: %s"
          % [l.name for l in cpu_threads])
    check(len(metric_locs) == 1, "one metric location: %s" % [l.name for l in metric_locs])
    values = []
    for loc in metric_locs:
        for e in trace.events[loc]:
            if isinstance(e, otf2.events.Metric) and \
                    e.metric.members[0].name == "memory resident":
                values.append(e.values[0])
    check(len(values) >= 20, "%d resident-memory samples at 40 ms over 1.8 s" % len(values))
    peak = values.index(max(values)) if values else 0
    levels = len({v // (10 * MB) for v in values[:peak + 1]})
    check(values and values[0] < 50 * MB and levels >= 10,
          "the resident memory rises from the start to 200 MB (%d levels of 10 MB): %s"
          % (levels, [v // MB for v in values]))
    check(values and max(values) >= 195 * MB and values[-1] < max(values) / 2,
          "the timeline peaks near 200 MB and falls after the free: %s" % [v // MB for v in values])
    check(all(b >= a - MB for a, b in zip(values[:peak], values[1:peak + 1])),
          "no fall before the peak: %s" % [v // MB for v in values[:peak + 1]])


def test_bad_interval():
    p = smtest.run(["/bin/true"], launcher_args=["--process-sampling", "--sampling-interval", "-5"])
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    check(p.returncode == 2 and len(lines) == 1 and "sampling-interval" in lines[0],
          "bad interval: exit %d, %r" % (p.returncode, p.stderr))


if __name__ == "__main__":
    smtest.run_cases(globals())
