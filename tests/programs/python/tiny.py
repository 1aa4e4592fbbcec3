"""Throttling (test_python.py): tiny called 100,000 times, slow (a sleep
of 20 us and more) 1,001 times."""
import time


def tiny(x):
    return x


def slow():
    time.sleep(0.00002)


def main():
    s = 0
    for i in range(100000):
        s += tiny(i)
    for _ in range(1001):
        slow()
    print(s)


main()
