#!/bin/sh
# sysmeasure-cc ARGS...: sysmeasure-instrument with the C compiler ($SYSMEASURE_CC, else cc).
exec "$(dirname "$0")/sysmeasure-instrument" "${SYSMEASURE_CC:-cc}" "$@"
