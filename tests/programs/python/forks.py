"""fork and multiprocessing under measurement (test_python.py): a thread
runs Python code while the main thread forks 3 children (each computes and
leaves by os._exit), then a fork pool and a spawn pool map a function."""
import multiprocessing
import os
import threading


def square(x):
    return x * x


def spin(stop):
    n = 0
    while not stop.is_set():
        n += square(n % 7)


def child_work():
    return sum(square(i) for i in range(100))


def main():
    stop = threading.Event()
    t = threading.Thread(target=spin, args=(stop,))
    t.start()
    for _ in range(3):
        pid = os.fork()
        if pid == 0:
            os._exit(0 if child_work() == 328350 else 5)
        _, status = os.waitpid(pid, 0)
        print("child", os.waitstatus_to_exitcode(status))
    with multiprocessing.get_context("fork").Pool(2) as pool:
        print("fork pool", sum(pool.map(square, range(20))))
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        print("spawn pool", sum(pool.map(square, range(10))))
    stop.set()
    t.join()


if __name__ == "__main__":
    main()
