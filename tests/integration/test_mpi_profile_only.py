"""MPI jobs without a trace (--no-trace): the definitions are unified at rank
0 only and every other rank gets its maps down the tree (SM_UNIFY_ROOT_ONLY,
src/merge/unify.h).  Ranks that define their regions in different orders,
some regions on some ranks only, a job size that is no power of two: the
profile names every region and counts every rank's visits as planted, the
same as a traced run's (the union broadcast to every rank)."""
import os
import sys

import smtest
from smtest import check, load_json, mpi_measure, program

NP = 5
NAMES = ["alpha", "beta", "gamma", "delta"]


def orders(name, launcher_args=()):
    out, proc = mpi_measure(NP, [program("mpi-patterns"), "orders"], name,
                            launcher_args=launcher_args)
    check(proc.stderr.count("sysmeasure:") == 1,
          "%s: one line of sysmeasure output, from rank 0: %s" % (name, proc.stderr))
    profile = load_json(out, "profile.json")
    visits = {tuple(c["path"]): {r["rank"]: r["visits"] for r in c.get("per_rank", [])}
              for c in profile["callpaths"]}
    return out, visits


def check_planted(name, visits):
    for k, region in enumerate(NAMES):
        check(visits.get((region,)) == {r: k + 1 for r in range(NP)},
              "%s: %s visited %d times on every rank: %s" % (name, region, k + 1,
                                                           visits.get((region,))))
    check(visits.get(("rank_zero",)) == {0: 1}, "%s: rank_zero on rank 0 only: %s"
          % (name, visits.get(("rank_zero",))))
    check(visits.get(("odd_only",)) == {r: 1 for r in range(1, NP, 2)},
          "%s: odd_only on the odd ranks: %s" % (name, visits.get(("odd_only",))))
    check(visits.get(("MPI_Barrier",)) == {r: 1 for r in range(NP)},
          "%s: MPI_Barrier once per rank" % name)


def test_orders_without_trace():
    out, visits = orders("profile-only-orders", ["--no-trace"])
    check(not os.path.exists(os.path.join(out, "traces.otf2")), "no archive without a trace")
    check_planted("no trace", visits)
    meta = load_json(out, "metadata.json")
    check(meta["ranks"] == NP and len(meta["processes"]) == NP, "metadata: %d ranks" % NP)


def test_same_as_traced():
    _, without = orders("profile-only-orders-again", ["--no-trace"])
    out, traced = orders("traced-orders")
    check(os.path.exists(os.path.join(out, "traces.otf2")), "the traced run has its archive")
    check_planted("traced", traced)
    check(without == traced, "the same call paths and visits with and without a trace: %s / %s"
          % (sorted(without), sorted(traced)))


def test_imbalance_without_trace():
    # rank r sleeps (r+1)*20 ms in "imbalanced"
    out, proc = mpi_measure(4, [program("mpi-patterns"), "imbalance"], "profile-only-imbalance",
                            launcher_args=["--no-trace"])
    profile = load_json(out, "profile.json")
    cp = [c for c in profile["callpaths"] if c["path"] == ["imbalanced"]]
    if check(len(cp) == 1, "the imbalanced region in the profile"):
        across = cp[0]["across_ranks"]["inclusive"]
        check(across["min_rank"] == 0 and across["max_rank"] == 3,
              "min rank 0, max rank 3: %s" % across)


if __name__ == "__main__":
    if os.environ.get("SM_HAVE_MPI", "yes") != "yes":
        print("built without MPI")
        sys.exit(77)
    smtest.run_cases(globals())
