"""Planted timings: 10 x 20 ms sleeps, 5 x 1 ms spins on a second thread;
with both time sources: the TSC (auto, where invariant) and the
CLOCK_MONOTONIC fallback."""
import smtest
from smtest import Trace, callpath, check, check_trace_consistent, load_json, measure, program


def sleep_regions(clock):
    out, proc = measure([program("sleep-regions")], "sleep-" + clock, launcher_args=["--clock", clock])
    profile = load_json(out, "profile.json")
    if clock == "monotonic":
        check(load_json(out, "metadata.json")["clock"]["source"] == "monotonic", "monotonic clock used")

    sleep = callpath(profile, "outer", "sleep 20ms")
    if check(sleep is not None, "outer > sleep 20ms in the profile"):
        t = sleep["per_thread"]
        check(len(t) == 1 and t[0]["member"] == 0, "sleeps on the main thread only")
        check(t[0]["visits"] == 10, "count 10, got %s" % t[0]["visits"])
        mean = t[0]["inclusive"]["mean"]
        check(abs(mean - 20e6) <= 2e6, "mean %.0f ns within 10%% of 20 ms" % mean)
        check(t[0]["inclusive"]["min"] >= 20e6, "no sleep shorter than 20 ms: %s" % t[0]["inclusive"]["min"])
        check(abs(t[0]["inclusive"]["sum"] - 10 * mean) < 1e3, "sum = 10 x mean")

    outer = callpath(profile, "outer")
    if check(outer is not None, "outer in the profile"):
        o = outer["per_thread"][0]
        check(o["visits"] == 1, "outer once")
        check(o["inclusive"]["sum"] >= 200e6, "outer includes the sleeps: %s" % o["inclusive"]["sum"])
        check(o["exclusive"]["sum"] < 5e6, "outer's own time is small: %s" % o["exclusive"]["sum"])
        check(abs(o["inclusive"]["sum"] - o["exclusive"]["sum"] - sleep["per_thread"][0]["inclusive"]["sum"]) < 1e3,
              "inclusive = exclusive + children")

    spin = callpath(profile, "worker", "spin 1ms")
    if check(spin is not None, "worker > spin 1ms in the profile"):
        t = spin["per_thread"]
        check(len(t) == 1 and t[0]["member"] == 1, "spins on the second thread: %s" % [x["member"] for x in t])
        check(t[0]["visits"] == 5, "count 5")
        # A spin can be preempted on a busy machine: never shorter than planted,
        # and not absurdly longer.
        check(t[0]["inclusive"]["min"] >= 1e6, "no spin shorter than 1 ms: %s" % t[0]["inclusive"]["min"])
        check(t[0]["inclusive"]["mean"] < 5e6, "spin mean near 1 ms: %s" % t[0]["inclusive"]["mean"])
        check(spin["across_threads"]["threads"] == 1, "one thread on that path")

    text = open(out + "/profile.txt").read()
    rows = [l for l in text.splitlines() if "|0>>> |_sleep 20ms" in l]
    check(len(rows) == 1 and "|     10 |" in rows[0].replace("|    10 |", "|     10 |"),
          "profile.txt row for sleep 20ms with count 10: %s" % rows)

    visits = check_trace_consistent(Trace(out))
    check(visits.get("sleep 20ms") == 10 and visits.get("spin 1ms") == 5, "trace visits: %s" % visits)


def test_clock_auto():
    sleep_regions("auto")


def test_clock_monotonic():
    sleep_regions("monotonic")


if __name__ == "__main__":
    smtest.run_cases(globals())
