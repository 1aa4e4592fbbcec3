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
    # close() and join(), not the with-statement's terminate(): the SIGTERM
    # of terminate() can land in a worker's malloc, where the end of a
    # measured process's run, which runs in the signal handler, waits for
    # ever on malloc's lock (a limit of sysmeasure's core, not of the
    # Python hooks).
    for method, n in (("fork", 20), ("spawn", 10)):
        pool = multiprocessing.get_context(method).Pool(2)
        print(method, "pool", sum(pool.map(square, range(n))))
        pool.close()
        pool.join()
    stop.set()
    t.join()


if __name__ == "__main__":
    main()
