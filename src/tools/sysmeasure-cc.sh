#!/bin/sh
# sysmeasure-cc ARGS...: sysmeasure-instrument with the C compiler ($SYSMEASURE_CC, else cc).
self=$(readlink -f "$0" 2>/dev/null) || self=$0   # (through a symbolic link too)
exec "$(dirname "$self")/sysmeasure-instrument" --as=sysmeasure-cc "${SYSMEASURE_CC:-cc}" "$@"
