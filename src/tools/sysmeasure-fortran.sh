#!/bin/sh
# sysmeasure-fortran ARGS...: sysmeasure-instrument with the Fortran compiler ($SYSMEASURE_FC, else gfortran).
self=$(readlink -f "$0" 2>/dev/null) || self=$0   # (through a symbolic link too)
exec "$(dirname "$self")/sysmeasure-instrument" --as=sysmeasure-fortran "${SYSMEASURE_FC:-gfortran}" "$@"
