#!/bin/sh
# sysmeasure-cc ARGS...: sysmeasure-instrument with the C compiler ($SYSMEASURE_CC, else cc).
exec "$(dirname "$0")/sysmeasure-instrument" --as=sysmeasure-cc "${SYSMEASURE_CC:-cc}" "$@"
