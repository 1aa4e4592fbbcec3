"""How a Python program ends (test_python.py): `exit` leaves by
sys.exit(3) inside a function, `raise` by an uncaught exception."""
import sys


def finish(how):
    print("before the end")
    sys.stdout.flush()
    if how == "exit":
        sys.exit(3)
    raise RuntimeError("planted uncaught")


finish(sys.argv[1])
