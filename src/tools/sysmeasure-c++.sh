#!/bin/sh
# sysmeasure-c++ ARGS...: sysmeasure-instrument with the C++ compiler ($SYSMEASURE_CXX, else c++).
self=$(readlink -f "$0" 2>/dev/null) || self=$0   # (through a symbolic link too)
exec "$(dirname "$self")/sysmeasure-instrument" --as=sysmeasure-c++ "${SYSMEASURE_CXX:-c++}" "$@"
