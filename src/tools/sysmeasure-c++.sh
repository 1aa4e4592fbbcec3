#!/bin/sh
# sysmeasure-c++ ARGS...: sysmeasure-instrument with the C++ compiler ($SYSMEASURE_CXX, else c++).
exec "$(dirname "$0")/sysmeasure-instrument" --as=sysmeasure-c++ "${SYSMEASURE_CXX:-c++}" "$@"
