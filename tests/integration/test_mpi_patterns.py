"""MPI programs under mpirun -np N sysmeasure: one archive for the job in
which every send has exactly one matching receive (after clock correction
never received before it was sent), every member of a collective records it,
communicators unify across ranks, and the summary across ranks matches
planted imbalance."""
import math
import os
import sys

import otf2
import smtest
from smtest import (Trace, check, check_messages, comm_world_ranks, location_rank, workdir,
                    check_trace_consistent, collective_counts, load_json, mpi_measure, program,
                    region_visits_by_rank)

def prog():
    return program("mpi-patterns")


def job(mode, np=4, **kw):
    out, proc = mpi_measure(np, [prog(), mode], "mpi-" + mode, **kw)
    trace = Trace(out)
    check_trace_consistent(trace)
    check(len({l.group.name for l in trace.locations if l.group.name.startswith("MPI Rank")}) == np,
          "%s: one location group per rank" % mode)
    check(proc.stderr.count("sysmeasure:") <= 1,
          "%s: one line of sysmeasure output, from rank 0: %s" % (mode, proc.stderr))
    return out, trace


def test_ring():
    # 3 rounds around 4 ranks, 8*(rank+1) bytes
    out, trace = job("ring")
    check(check_messages(trace, 4) == 12, "ring: 12 matched messages")
    visits = region_visits_by_rank(trace)
    check(visits.get("MPI_Send") == {0: 3, 1: 3, 2: 3, 3: 3}, "3 MPI_Send per rank: %s" % visits.get("MPI_Send"))
    check(visits.get("MPI_Init") == {0: 1, 1: 1, 2: 1, 3: 1}, "MPI_Init once per rank")
    profile = load_json(out, "profile.json")
    mpi = {m["function"]: m for m in profile.get("mpi", [])}
    if check("MPI_Send" in mpi, "MPI section lists MPI_Send: %s" % list(mpi)):
        check(mpi["MPI_Send"]["calls"] == 12, "12 sends in the MPI section")
        check(mpi["MPI_Send"]["bytes_sent"] == 3 * 8 * (1 + 2 + 3 + 4), "bytes sent: %s" % mpi["MPI_Send"])
    matrix = profile.get("comm_matrix") or {}
    pairs = sorted((p["sender"], p["receiver"], p["messages"], p["bytes"]) for p in matrix.get("pairs", []))
    check(pairs == [(0, 1, 3, 24), (1, 2, 3, 48), (2, 3, 3, 72), (3, 0, 3, 96)], "ring matrix: %s" % pairs)
    csv = open(os.path.join(out, "comm_matrix.csv")).read().split()
    check("0,1,3,24" in csv and "3,0,3,96" in csv, "comm_matrix.csv rows: %s" % csv)
    meta = load_json(out, "metadata.json")
    check(meta["ranks"] == 4 and len(meta["processes"]) == 4, "metadata: 4 ranks")


def test_collectives():
    # every member of each collective records it, once per call
    out, trace = job("collectives")
    counts = collective_counts(trace)
    ops = {op for (_, op) in counts}
    for op in ("BARRIER", "BCAST", "GATHER", "GATHERV", "SCATTER", "SCATTERV", "ALLGATHER",
               "ALLGATHERV", "ALLTOALL", "ALLTOALLV", "ALLTOALLW", "REDUCE", "ALLREDUCE",
               "REDUCE_SCATTER", "REDUCE_SCATTER_BLOCK", "SCAN", "EXSCAN"):
        check(op in ops, "collective %s recorded: %s" % (op, sorted(ops)))
    for (comm, op), per_rank in counts.items():
        check(len(per_rank) == 4 and len(set(per_rank.values())) == 1,
              "every member records %s on %s the same number of times: %s" % (op, comm, per_rank))
    nb = [e for _, e in trace.of_type(otf2.events.NonBlockingCollectiveComplete)]
    check(len(nb) == 4 * 17, "17 nonblocking collectives per rank completed: %d" % len(nb))
    visits = region_visits_by_rank(trace)
    for name in ("MPI_Ibcast", "MPI_Ialltoallw", "MPI_Neighbor_allgather", "MPI_Waitall"):
        check(visits.get(name) == {0: 1, 1: 1, 2: 1, 3: 1}, "%s once per rank: %s" % (name, visits.get(name)))


def test_nonblocking():
    # Waitany on MPI_ANY_SOURCE, Waitall, Testsome
    out, trace = job("nonblocking")
    check(check_messages(trace, 4) == 3 + 4, "nonblocking: 7 matched messages")


def test_persistent():
    # persistent requests started 5 times
    out, trace = job("persistent")
    check(check_messages(trace, 4) == 4 * 5, "persistent: 20 matched messages")
    visits = region_visits_by_rank(trace)
    check(visits.get("MPI_Startall") == {0: 5, 1: 5, 2: 5, 3: 5}, "5 Startall per rank")


def test_comms():
    # split and dup unify to one definition each
    out, trace = job("comms")
    check(check_messages(trace, 4) == 2, "comms: 2 matched messages in the halves")
    splits = [c for c in trace.definitions.comms if "split" in c.name.lower()]
    check(sorted(comm_world_ranks(c) for c in splits) == [[0, 2], [1, 3]],
          "two split communicators, the even and the odd ranks: %s"
          % [(c.name, comm_world_ranks(c)) for c in splits])
    dups = [c for c in trace.definitions.comms if "dup" in c.name.lower()]
    check(len(dups) == 1 and len(dups[0].group.members) == 4, "one dup of 4 members: %s" % [c.name for c in dups])
    mpi = sorted((c.name, str(comm_world_ranks(c))) for c in trace.definitions.comms
                 if c.group.paradigm == otf2.Paradigm.MPI)
    check(mpi == [("MPI_COMM_SELF", "None"), ("MPI_COMM_WORLD", "[0, 1, 2, 3]"),
                  ("MPI_Comm_dup of MPI_COMM_WORLD", "[0, 1, 2, 3]"),
                  ("MPI_Comm_split of MPI_COMM_WORLD", "[0, 2]"),
                  ("MPI_Comm_split of MPI_COMM_WORLD", "[1, 3]")],
          "each MPI communicator of the 4 ranks defined once: %s" % mpi)
    counts = collective_counts(trace)
    for (comm, op), per_rank in counts.items():
        if op == "ALLREDUCE" and "split" in comm.lower():
            check(len(per_rank) == 2, "an allreduce on a half is recorded by its 2 members: %s" % per_rank)


def test_imbalance():
    # planted imbalance: rank r sleeps (r+1)*20 ms in "imbalanced"
    out, trace = job("imbalance")
    profile = load_json(out, "profile.json")
    cp = [c for c in profile["callpaths"] if c["path"] == ["imbalanced"]]
    if check(len(cp) == 1, "the imbalanced region in the profile"):
        across = cp[0]["across_ranks"]["inclusive"]
        per_rank = cp[0]["per_rank"]
        check([p["visits"] for p in per_rank] == [1, 1, 1, 1], "one visit per rank")
        # Each rank's time is its planted sleep plus what the machine adds
        # (a loaded machine oversleeps: up to 10 ms allowed here); the
        # statistics across ranks must be exactly those of the ranks' values.
        ms = [20e6 * (r + 1) for r in range(4)]
        got = [p["inclusive"] for p in per_rank]
        for r in range(4):
            check(ms[r] <= got[r] < ms[r] + 10e6, "rank %d: %d ns ~ %d planted" % (r, got[r], ms[r]))
        mean = sum(got) / 4
        sd = math.sqrt(sum((x - mean) ** 2 for x in got) / 4)
        check(abs(across["mean"] - mean) <= 1, "mean across ranks %.0f == %.0f" % (across["mean"], mean))
        check(across["min_rank"] == 0 and across["max_rank"] == 3, "min rank 0, max rank 3: %s" % across)
        check(across["min"] == min(got) and across["max"] == max(got), "min and max: %s" % across)
        check(abs(across["stddev"] - sd) < 1e-6 * sd, "stddev %.0f == %.0f" % (across["stddev"], sd))
    text = open(os.path.join(out, "profile.txt")).read()
    check("ACROSS RANKS" in text and "MPI FUNCTIONS" in text, "profile.txt has the rank and MPI sections")


def test_io_rma():
    # MPI-IO and one-sided bytes: counter metrics in the trace, bytes in the profile
    out, proc = mpi_measure(4, [prog(), "io_rma", workdir("io")], "mpi-io_rma")
    trace = Trace(out)
    check_trace_consistent(trace)
    last = {}
    for loc, e in trace.of_type(otf2.events.Metric):
        name = e.metric.members[0].name
        last[(location_rank(loc), name)] = e.values[0]
    for r in range(4):
        check(last.get((r, "MPI-IO bytes written")) == 4096, "rank %d wrote 4096 bytes: %s" % (r, last))
        check(last.get((r, "MPI-IO bytes read")) == 4096, "rank %d read 4096 bytes" % r)
        check(last.get((r, "RMA bytes put")) == 64, "rank %d put 64 bytes" % r)
        check(last.get((r, "RMA bytes got")) == 32, "rank %d got 32 bytes" % r)
    profile = load_json(out, "profile.json")
    mpi = {m["function"]: m for m in profile.get("mpi", [])}
    check(mpi.get("MPI_File_write_at", {}).get("bytes_sent") == 4 * 4096, "write_at bytes in the MPI section: %s"
          % mpi.get("MPI_File_write_at"))
    check(mpi.get("MPI_Put", {}).get("bytes_sent") == 4 * 64, "put bytes in the MPI section")


def test_threads():
    # MPI_THREAD_MULTIPLE: two threads per rank exchange messages at once
    out, trace = job("threads")
    check(check_messages(trace, 4) == 4 * 2 * 20, "threads: 160 matched messages")
    senders = {l.name for l, evs in trace.events.items()
               if any(type(e).__name__ == "MpiSend" for e in evs)}
    check(len(senders) >= 2, "messages from more than one thread: %s" % senders)


if __name__ == "__main__":
    if os.environ.get("SM_HAVE_MPI", "yes") != "yes":
        print("built without MPI")
        sys.exit(77)
    smtest.run_cases(globals())
