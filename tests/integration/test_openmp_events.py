"""The OpenMP events of the OTF2 archive (tests/programs/omp_constructs.c on
clang/libomp), OTF2's Thread* records: ThreadFork/ThreadJoin on the
encountering thread around each parallel region, ThreadTeamBegin/End on
every thread of a team, balanced, naming a team communicator whose members
are the team's threads (nested teams with their parent), the join no
earlier than the other threads' team ends; ThreadAcquireLock/ReleaseLock
matched per lock in acquisition order; ThreadTaskCreate/Switch/Complete
named by (team, creating thread, generation).  One location per thread, no
Omp* record, and otf2-print reads the archives without a warning."""
import os
import shutil
import subprocess

import otf2
import smtest
from smtest import (CLANG, Trace, build_program, check, check_thread_teams, check_trace_consistent,
                    measure, need_openmp)

MAIN = "Thread 0 (main)"


@smtest.fixture
def prog():
    return build_program(CLANG, "omp_constructs.c", "omp-constructs", ["-fopenmp", "-O1", "-Wall"])


def run(name, *args):
    out, proc = measure([prog()] + [str(a) for a in args], "omp-events-" + name,
                        env={"OMP_NUM_THREADS": "2"})
    trace = Trace(out)
    check_trace_consistent(trace)
    teams = check_thread_teams(trace)
    names = [loc.name for loc in trace.locations]
    check(len(names) == len(set(names)), "one location per thread: %s" % names)
    old = [type(e).__name__ for evs in trace.events.values() for e in evs
           if type(e).__name__.startswith("Omp")]
    check(not old, "no Omp* records (not to be mixed with Thread*): %s" % old[:3])
    return out, trace, teams


def merged(trace, classes):
    """(time, location name, event) of these classes on all locations, by
    time; at one time a lock's release before another thread's acquire; on
    one location in the order written."""
    evs = [(e.time, not isinstance(e, otf2.events.ThreadReleaseLock), i, loc.name, e)
           for loc, events in trace.events.items()
           for i, e in enumerate(events) if isinstance(e, classes)]
    return [(x[0], x[3], x[4]) for x in sorted(evs, key=lambda x: x[:3])]


def otf2_print_clean(out):
    tool = shutil.which("otf2-print")
    if not tool:
        return
    anchor = os.path.join(out, "traces.otf2")
    proc = subprocess.run([tool, anchor], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
    check(proc.returncode == 0 and "warning" not in proc.stderr.lower() and
          "error" not in proc.stderr.lower(),
          "otf2-print reads %s cleanly: %d %s" % (out, proc.returncode, proc.stderr[-500:]))
    return proc.stdout


T = otf2.events


# ---- a parallel region 100 times on 2 threads
def test_repeat():
    out, trace, teams = run("repeat", "repeat", "100")
    check(len(trace.locations) == 2, "2 locations for 2 threads: %s"
          % [loc.name for loc in trace.locations])
    comms = {c for inst in teams.values() for _, _, c in inst}
    check(len(comms) == 1, "one team communicator for the 100 runs of one team: %s"
          % [c.name for c in comms])
    for c in comms:
        check([m.name for m in c.group.members] == [MAIN, "OpenMP thread 1"] and c.parent is None,
              "the team's members are its 2 threads by thread number, no parent: %s"
              % [m.name for m in c.group.members])
    for loc, events in trace.events.items():
        check(len(teams[loc]) == 100, "100 team begin/end pairs on %s: %d" % (loc.name, len(teams[loc])))
        kinds = [type(e).__name__ for e in events if isinstance(e, (T.ThreadFork, T.ThreadJoin))]
        if loc.name == MAIN:
            check(kinds == ["ThreadFork", "ThreadJoin"] * 100,
                  "100 fork/join pairs on the main thread, each fork before its join: %d forks, "
                  "%d joins" % (kinds.count("ThreadFork"), kinds.count("ThreadJoin")))
            req = {e.number_of_requested_threads for e in events if isinstance(e, T.ThreadFork)}
            check(req == {2}, "2 requested threads at each fork: %s" % req)
            # Fork, team begin, the region's enter; its leave, team end, join.
            seq = [e for e in events if isinstance(e, (T.Enter, T.Leave, T.ThreadFork, T.ThreadJoin,
                                                       T.ThreadTeamBegin, T.ThreadTeamEnd))]
            ok = all(i + 2 < len(seq) and isinstance(seq[i + 1], T.ThreadTeamBegin) and
                     isinstance(seq[i + 2], T.Enter) and
                     seq[i + 2].region.name.startswith("omp parallel @")
                     for i, e in enumerate(seq) if isinstance(e, T.ThreadFork))
            ok = ok and all(i >= 2 and isinstance(seq[i - 1], T.ThreadTeamEnd) and
                            isinstance(seq[i - 2], T.Leave) and
                            seq[i - 2].region.name.startswith("omp parallel @")
                            for i, e in enumerate(seq) if isinstance(e, T.ThreadJoin))
            check(ok, "fork, team begin, enter of the region; its leave, team end, join")
        else:
            check(kinds == [], "no fork/join on the worker %s: %d" % (loc.name, len(kinds)))
    otf2_print_clean(out)


# ---- nested: the outer region forks on the main thread, each inner one on
# its encountering thread (the outer team's 2 threads)
def test_nested():
    out, trace, teams = run("nested", "nested")
    forks = {loc.name: [e.number_of_requested_threads for e in evs if isinstance(e, T.ThreadFork)]
             for loc, evs in trace.events.items()}
    joins = {loc.name: sum(isinstance(e, T.ThreadJoin) for e in evs)
             for loc, evs in trace.events.items()}
    check(sorted(len(f) for f in forks.values()) == [0, 0, 1, 2] and forks.get(MAIN) == [2, 2],
          "nested: 2 forks on the main thread, 1 on the outer team's other thread: %s" % forks)
    check(all(joins[n] == len(forks[n]) for n in forks), "a join for every fork: %s" % joins)
    check(len(trace.locations) == 4, "4 locations for 4 threads: %d" % len(trace.locations))
    comms = {c for inst in teams.values() for _, _, c in inst}
    outer = [c for c in comms if c.parent is None]
    inner = [c for c in comms if c.parent is not None]
    check(len(outer) == 1 and len(inner) == 2 and all(c.parent is outer[0] for c in inner),
          "one outer team, two inner teams with it as parent: %s" % [(c.name, c.parent) for c in comms])
    if outer and len(inner) == 2:
        check({c.group.members[0] for c in inner} == set(outer[0].group.members),
              "each inner team's thread 0 is a thread of the outer team")
        check(len({m for c in inner for m in c.group.members}) == 4 and
              all(len(c.group.members) == 2 for c in inner), "the inner teams: 2 threads each, 4 in all")
    check(sorted(len(i) for i in teams.values()) == [1, 1, 2, 2],
          "2 teams on each outer thread, 1 on each inner worker: %s"
          % {loc.name: len(i) for loc, i in teams.items()})
    otf2_print_clean(out)


# ---- locks: 50 x per thread on 2 threads: a lock, a critical, a nest lock (twice)
def check_locks(name, threads):
    """The lock events of omp-constructs locks with `threads` threads."""
    out, trace, teams = run(name, "locks", threads)
    evs = merged(trace, (T.ThreadAcquireLock, T.ThreadReleaseLock))
    per_lock = {}
    holder = {}
    problems = []
    for t, where, e in evs:
        lid, order = e.lock_id, e.acquisition_order
        if e.model != otf2.Paradigm.OPENMP:
            problems.append("lock event of model %s" % e.model)
        if isinstance(e, T.ThreadAcquireLock):
            if lid in holder:
                problems.append("lock %d acquired by %s while %s holds it" % (lid, where, holder[lid]))
            holder[lid] = (where, order)
            per_lock.setdefault(lid, []).append(order)
        else:
            if holder.get(lid) != (where, order):
                problems.append("lock %d released by %s (order %d), held by %s"
                                % (lid, where, order, holder.get(lid)))
            holder.pop(lid, None)
    # OMPT reports a release after the unlock, so the next holder's acquire
    # may be read from the clock before it; the tool pairs each hand-over
    # (ompt_mutex.c) so that a release is stamped no later than the next
    # acquire of the lock: consecutive holders never overlap, even on a
    # loaded machine.
    real = []
    by_order = {}
    for t, where, e in evs:
        by_order.setdefault((e.lock_id, e.acquisition_order), {})[
            "acq" if isinstance(e, T.ThreadAcquireLock) else "rel"] = (t, where)
    for (lid, order), ev in by_order.items():
        nxt = by_order.get((lid, order + 1), {}).get("acq")
        if "rel" in ev and "acq" in ev and ev["rel"][1] != ev["acq"][1]:
            real.append("lock %d order %d released by %s, acquired by %s"
                        % (lid, order, ev["rel"][1], ev["acq"][1]))
        if nxt and "rel" in ev and nxt[0] < ev["rel"][0]:
            real.append("lock %d acquired (order %d) %d ns before its release (order %d)"
                        % (lid, order + 1, ev["rel"][0] - nxt[0], order))
    check(not real, "never two holders, each release by the holder with its order: %s"
          % (real[:5] or problems[:5]))
    check(not holder, "every acquired lock released: %s" % holder)
    check(len(per_lock) == 3, "3 locks (lock, critical, nest lock): %s" % sorted(per_lock))
    for lid, orders in per_lock.items():
        check(orders == list(range(len(orders))) and len(orders) == 50 * threads,
              "lock %d: acquisition orders 0..%d in time order: %d acquisitions"
              % (lid, 50 * threads - 1, len(orders)))
    otf2_print_clean(out)


def test_locks():
    check_locks("locks", 2)


# ---- 8 threads on the machine's fewer cores: a thread is often descheduled
# between the runtime's unlock and its release callback while the next
# holders go on (the overlap a single stamp after the unlock gave).
def test_locks_oversubscribed():
    check_locks("locks-over", 8)


# ---- tasks: 18 tasks (10 + taskwait, 5 in a taskgroup, undeferred, final + included)
def test_tasks():
    out, trace, teams = run("tasks", "tasks")
    evs = merged(trace, (T.ThreadTaskCreate, T.ThreadTaskSwitch, T.ThreadTaskComplete))
    created, switched, completed, problems = {}, {}, {}, []
    for t, where, e in evs:
        team = e.thread_team
        tid = (team, e.creating_thread, e.generation_number)
        members = [m.name for m in team.group.members]
        if where not in members:
            problems.append("task event on %s, not a thread of team %s" % (where, members))
        if isinstance(e, T.ThreadTaskCreate):
            if tid in created:
                problems.append("task %s created twice" % (tid[1:],))
            if e.creating_thread >= len(members) or members[e.creating_thread] != where:
                problems.append("task created on %s as thread %d of %s" % (where, e.creating_thread,
                                                                          members))
            created[tid] = where
        elif isinstance(e, T.ThreadTaskSwitch):
            if tid not in created or tid in completed:
                problems.append("switch to task %s outside its life" % (tid[1:],))
            switched[tid] = switched.get(tid, 0) + 1
        else:
            if tid not in switched or tid in completed:
                problems.append("task %s completed before it ran, or twice" % (tid[1:],))
            completed[tid] = completed.get(tid, 0) + 1
    check(len(created) == 18, "18 tasks created: %d" % len(created))
    check(not problems, "create, switch, complete in order, by the team's threads: %s" % problems[:5])
    check(set(switched) == set(created), "every created task switched to: %d of %d"
          % (len(switched), len(created)))
    check(set(completed) == set(created) and set(completed.values()) == {1},
          "every created task completed exactly once: %s" % sorted(completed.values()))
    gens = {}
    for (team, thread, gen), where in created.items():
        gens.setdefault(where, []).append(gen)
    check(all(sorted(g) == list(range(len(g))) for g in gens.values()),
          "generation numbers count each creating thread's tasks from 0: %s" % gens)
    # Each (first) switch opens the task's region on the same thread.
    ok = True
    for loc, events in trace.events.items():
        for i, e in enumerate(events):
            if isinstance(e, T.ThreadTaskSwitch) and i + 1 < len(events):
                nxt = events[i + 1]
                if isinstance(nxt, T.Enter) and not nxt.region.name.startswith("omp task"):
                    ok = False
    check(ok, "a switch is followed by the task's region where one is entered")
    otf2_print_clean(out)


if __name__ == "__main__":
    need_openmp()
    smtest.run_cases(globals())
