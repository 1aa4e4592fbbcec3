"""A busy Python function for call-stack sampling (test_python.py): hot
computes for about 0.3 s of CPU time below main."""


def hot():
    s = 0
    for i in range(3000000):
        s += i * i
    return s


def main():
    print(hot() > 0)


main()
