#!/bin/sh
# sysmeasure-c++ ARGS...: sysmeasure-instrument with the C++ compiler ($SYSMEASURE_CXX, else c++).
exec "$(dirname "$0")/sysmeasure-instrument" "${SYSMEASURE_CXX:-c++}" "$@"
