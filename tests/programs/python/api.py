"""The sysmeasure module (test_python.py): a with-region 3 times, a
decorated function 2 times, a function called while measurement is off.
Prints whether it is measured on stderr, its result on stdout."""
import sys

import sysmeasure


def solve_step(i):
    return i + 1


@sysmeasure.region("setup")
def configure():
    return 10


def hidden():
    return 100


def main():
    total = 0
    for i in range(3):
        with sysmeasure.region("solve"):
            total += solve_step(i)
    total += configure() + configure()
    sysmeasure.stop()
    total += hidden()
    sysmeasure.start()
    print("result", total)
    print("active", sysmeasure.is_active(), file=sys.stderr)


main()
