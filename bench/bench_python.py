"""Python function calls under sysmeasure (bench_python.sh): a loop that
calls a small function N times, timed inside the program (start-up and the
end of the run are not in it); prints call_ns, the best of R rounds, and
loop_ns, the same loop with the call's work inlined."""
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


def best(fn, n, rounds):
    t = []
    for _ in range(rounds):
        t0 = time.perf_counter_ns()
        fn(n)
        t.append(time.perf_counter_ns() - t0)
    return min(t) / n


n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000000
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
print("call_ns %.2f" % best(calls, n, rounds))
print("loop_ns %.2f" % best(inline, n, rounds))
