"""sysmeasure's user API for Python programs.

    import sysmeasure

    with sysmeasure.region("solve"):      # a region around a block
        solve()

    @sysmeasure.region("setup")           # ... or around every call of a function
    def setup(): ...

    sysmeasure.stop()                     # measurement off (Python functions, MPI, GPU, ...)
    sysmeasure.start()                    # and on again

The calls go to the sysmeasure library that the launcher (``sysmeasure
python3 app.py``) loaded into the process, through ctypes.  Without it,
every call does nothing and returns at once: a program that uses this
module runs unchanged without sysmeasure.  This module's own functions are
never recorded as Python regions.
"""

import ctypes as _ctypes
import functools as _functools
import _thread

__all__ = ["region", "start", "stop", "start_thread", "stop_thread", "is_active"]


def _library():
    """The user API of the sysmeasure library loaded in this process, or
    None (not launched by sysmeasure)."""
    try:
        lib = _ctypes.CDLL(None)
        lib.sysmeasure_is_active  # noqa: B018 (raises AttributeError when absent)
    except (OSError, AttributeError):
        return None
    lib.sysmeasure_is_active.restype = _ctypes.c_int
    lib.sysmeasure_is_active.argtypes = []
    if not lib.sysmeasure_is_active():
        return None
    lib.sysmeasure_region_define.restype = _ctypes.c_uint32
    lib.sysmeasure_region_define.argtypes = [_ctypes.c_char_p, _ctypes.c_char_p, _ctypes.c_int]
    for name in ("sysmeasure_region_enter", "sysmeasure_region_leave"):
        getattr(lib, name).restype = _ctypes.c_int
        getattr(lib, name).argtypes = [_ctypes.c_uint32]
    for name in ("sysmeasure_start", "sysmeasure_stop", "sysmeasure_start_thread",
                 "sysmeasure_stop_thread"):
        getattr(lib, name).restype = _ctypes.c_int
        getattr(lib, name).argtypes = []
    return lib


_lib = _library()
_handles = {}  # region name -> the library's handle (0: not measured)
_handles_lock = _thread.allocate_lock()


def is_active():
    """True when this process is measured by sysmeasure."""
    return _lib is not None


def _handle(name):
    h = _handles.get(name)
    if h is None:
        with _handles_lock:
            h = _handles.get(name)
            if h is None:
                h = _lib.sysmeasure_region_define(name.encode("utf-8", "surrogateescape"),
                                                  None, 0) if _lib else 0
                _handles[name] = h
    return h


class region:
    """A region named `name`: a context manager (``with region("solve"):``)
    and a decorator (``@region("solve")``).  The same name is the same
    region as sysmeasure_push_region(name) in C.  It must end in the
    function it began in, as it does with ``with``."""

    __slots__ = ("name", "_h")

    def __init__(self, name):
        if not isinstance(name, str):
            raise TypeError("sysmeasure.region: the name must be a str, not %s"
                            % type(name).__name__)
        self.name = name
        self._h = _handle(name) if _lib else 0

    def __enter__(self):
        if self._h:
            _lib.sysmeasure_region_enter(self._h)
        return self

    def __exit__(self, *exc):
        if self._h:
            _lib.sysmeasure_region_leave(self._h)
        return False

    def __call__(self, fn):
        @_functools.wraps(fn)
        def measured(*args, **kwargs):
            h = self._h
            if h:
                _lib.sysmeasure_region_enter(h)
            try:
                return fn(*args, **kwargs)
            finally:
                if h:
                    _lib.sysmeasure_region_leave(h)
        return measured

    def __repr__(self):
        return "sysmeasure.region(%r)" % self.name


def start():
    """Measurement on, for the whole process."""
    return _lib.sysmeasure_start() == 0 if _lib else False


def stop():
    """Measurement off, for the whole process: Python functions, MPI calls,
    GPU work and the other automatic regions are not recorded until
    start(); regions of this module still are."""
    return _lib.sysmeasure_stop() == 0 if _lib else False


def start_thread():
    """Measurement on, for the calling thread."""
    return _lib.sysmeasure_start_thread() == 0 if _lib else False


def stop_thread():
    """Measurement off, for the calling thread."""
    return _lib.sysmeasure_stop_thread() == 0 if _lib else False
