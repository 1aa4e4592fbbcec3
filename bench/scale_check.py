"""Checks an archive of bench-scale-mpi (bench/bench_scale_real.sh): every
rank is there, enters and leaves balanced on every location, every
point-to-point send matched by one receive (same communicator, ends and
tag, same size), and "compute" visited STEPS times per rank.
Usage: python3 scale_check.py ARCHIVE_DIR RANKS STEPS
Prints one line "archive ok: ..." or the problems, exit 1."""
import collections
import os
import sys

import otf2


def main(folder, ranks, steps):
    problems = []
    sends, recvs = collections.Counter(), collections.Counter()
    compute = collections.Counter()
    ranks_seen = set()
    with otf2.reader.open(os.path.join(folder, "traces.otf2")) as trace:
        depth = collections.Counter()
        for loc, e in trace.events:
            rank = int(loc.group.name.split()[-1])  # "MPI Rank N"
            ranks_seen.add(rank)
            if isinstance(e, otf2.events.Enter):
                depth[loc] += 1
                if e.region.name == "compute":
                    compute[rank] += 1
            elif isinstance(e, otf2.events.Leave):
                depth[loc] -= 1
                if depth[loc] < 0:
                    problems.append("leave without enter on %s" % loc.name)
            elif isinstance(e, otf2.events.MpiSend):
                sends[(rank, e.receiver, e.msg_tag, e.msg_length)] += 1
            elif isinstance(e, otf2.events.MpiRecv):
                recvs[(e.sender, rank, e.msg_tag, e.msg_length)] += 1
        problems += ["regions left open on %s" % l.name for l, d in depth.items() if d]
    if len(ranks_seen) != ranks:
        problems.append("%d ranks in the archive, not %d" % (len(ranks_seen), ranks))
    bad = [r for r in ranks_seen if compute[r] != steps]
    if bad:
        problems.append("%d ranks without %d compute visits" % (len(bad), steps))
    # (the ring is on MPI_COMM_WORLD: its ranks are the processes')
    n_send, n_recv = sum(sends.values()), sum(recvs.values())
    unmatched = sum(((sends - recvs) + (recvs - sends)).values())
    if unmatched or n_send != ranks * steps:
        problems.append("%d sends, %d receives (%d unmatched), expected %d each"
                        % (n_send, n_recv, unmatched, ranks * steps))
    if problems:
        print("archive NOT ok: " + "; ".join(problems[:10]))
        return 1
    print("archive ok: %d ranks, balanced, %d messages matched, compute x%d per rank"
          % (ranks, n_send, steps))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
