#!/bin/sh
# sysmeasure-fortran ARGS...: sysmeasure-instrument with the Fortran compiler ($SYSMEASURE_FC, else gfortran).
exec "$(dirname "$0")/sysmeasure-instrument" --as=sysmeasure-fortran "${SYSMEASURE_FC:-gfortran}" "$@"
