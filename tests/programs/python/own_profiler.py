"""A program with its own profiler (test_python.py): cProfile around 3
calls of f; prints whether cProfile saw f."""
import cProfile
import io
import pstats


def f():
    return sum(range(100))


def main():
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(3):
        f()
    profiler.disable()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).print_stats()
    print("cProfile saw f:", "(f)" in text.getvalue())


main()
