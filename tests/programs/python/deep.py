"""Recursion 5000 deep, 3 times (test_python.py): deeper than the trace
keeps (4096) and the profile (256)."""
import sys

sys.setrecursionlimit(20000)


def deep(n):
    return 0 if n == 0 else deep(n - 1) + 1


def main():
    for _ in range(3):
        print(deep(5000))


main()
