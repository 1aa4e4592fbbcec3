"""Planted Python program (test_python.py): work 7 times from main,
Solver.step 5 times, a generator that yields 3 times, one closed after its
first item, a function that raises (caught), fib(5) (15 calls, recursive),
and a thread (threading) that runs worker 4 times.  Prints its total."""
import threading


def work(i):
    return i * 2


class Solver:
    def step(self, k):
        return k + 1


def gen():
    for i in range(3):
        yield i


def early():
    try:  # so that close() runs the frame again (GeneratorExit), in every version
        yield 1
        yield 2
    finally:
        pass


def raiser():
    raise ValueError("planted")


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def worker():
    return sum(range(10))


def run_worker():
    for _ in range(4):
        worker()


def main():
    total = 0
    for i in range(7):
        total += work(i)
    solver = Solver()
    for k in range(5):
        total += solver.step(k)
    for v in gen():
        total += v
    g = early()
    total += next(g)
    g.close()
    try:
        raiser()
    except ValueError:
        total += 1
    total += fib(5)
    t = threading.Thread(target=run_worker)
    t.start()
    t.join()
    print("total", total)


main()
