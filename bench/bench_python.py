"""Python function calls under sysmeasure (bench_python.sh): a loop that
calls a small function N times, timed inside the program (start-up and the
end of the run are not in it); prints call_ns, the best of R rounds, and
loop_ns, the same loop with the call's work inlined, in the calling
thread's CPU time (a loaded machine's preemptions left out; the spill
writer's work on its own thread too), and call_wall_ns, the calls in wall
time."""
import sys
import time


def small(x):
    return x + 1


def calls(n):
    s = 0
    for i in range(n):
        s = small(s)
    return s


def inline(n):
    s = 0
    for i in range(n):
        s = s + 1
    return s


def best(fn, n, rounds, clock=time.thread_time_ns):
    t = []
    for _ in range(rounds):
        t0 = clock()
        fn(n)
        t.append(clock() - t0)
    return min(t) / n


n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000000
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
print("call_ns %.2f" % best(calls, n, rounds))
print("loop_ns %.2f" % best(inline, n, rounds))
print("call_wall_ns %.2f" % best(calls, n, rounds, time.perf_counter_ns))
