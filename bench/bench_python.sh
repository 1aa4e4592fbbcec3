#!/bin/sh
# The cost of a Python function call under sysmeasure: bench/bench_python.py
# calls a small function 10^6 times (best of 5 loops, timed in the program,
# in the calling thread's CPU time; the wall time of the traced run too)
# plain, then under the launcher traced (no throttling), profile only,
# throttled (the default: after 100000 calls only counted), left out by a
# module rule, and with --python=no; for each interpreter given (default
# /usr/bin/python3).
# Usage: bench/bench_python.sh BUILDDIR [CALLS] [PYTHON...]
set -eu
build=${1:?usage: bench_python.sh BUILDDIR [CALLS] [PYTHON...]}
calls=${2:-1000000}
shift $(($# < 2 ? $# : 2))
[ $# -gt 0 ] || set -- /usr/bin/python3
src=$(cd "$(dirname "$0")/.." && pwd)
prog="$src/bench/bench_python.py"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
val() { grep "^$1 " "$2" | awk '{print $2}'; }
for py in "$@"; do
    ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    "$py" "$prog" "$calls" >"$work/plain"
    run() { # name, launcher options...
        name=$1; shift
        "$build/sysmeasure" --output "$work/out-$name" "$@" -- "$py" "$prog" "$calls" \
            >"$work/$name" 2>/dev/null
        rm -rf "$work/out-$name"
    }
    run traced --no-throttle
    run profile --no-throttle --trace=no
    run throttled
    run filtered --python-modules=-__main__
    run off --python=no
    base=$(val call_ns "$work/plain")
    echo "bench-python: Python $ver ($py), $calls calls of a small function, best of 5 (ns of thread CPU time per call)"
    printf '%-36s %9s %9s\n' case "ns/call" "added"
    printf '%-36s %9s\n' "plain (no sysmeasure)" "$base"
    for c in traced profile throttled filtered off; do
        case $c in
            traced) label="traced+profiled (--no-throttle)" ;;
            profile) label="profile only (--no-throttle)" ;;
            throttled) label="throttled (the default)" ;;
            filtered) label="left out (--python-modules)" ;;
            off) label="--python=no" ;;
        esac
        printf '%-36s %9s %9s\n' "$label" "$(val call_ns "$work/$c")" \
            "$(echo "$(val call_ns "$work/$c") $base" | awk '{printf "%+.1f", $1 - $2}')"
    done
    echo "the loop without the call: $(val loop_ns "$work/plain") ns per iteration;" \
        "wall time per call: plain $(val call_wall_ns "$work/plain"), traced $(val call_wall_ns "$work/traced")"
done
