#!/bin/sh
# Compiler instrumentation costs, in one run: bench/bench_instrument.c built
# plain and with sysmeasure-cc, the instrumented one run under the launcher
# traced (no throttling), with the function filtered out, throttled, and
# profile only; baselines (empty loop, two TSC reads, two clock_gettime, a
# user-API region pair) measured in the same processes.  Then recursive
# fibonacci: plain, instrumented (default throttling), instrumented with the
# filter sysmeasure-score -g proposes, and with no throttling.
# Usage: bench/bench_instrument.sh BUILDDIR [PAIRS] [FIB_N]
set -eu
build=${1:?usage: bench_instrument.sh BUILDDIR [PAIRS] [FIB_N]}
pairs=${2:-2000000}
fibn=${3:-32}
src=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -I"$src/include" -o "$work/plain" "$src/bench/bench_instrument.c" \
    -L"$build/.libs" -Wl,-rpath,"$build/.libs" -lsysmeasure
"$build/sysmeasure-cc" -O2 -I"$src/include" -o "$work/instr" "$src/bench/bench_instrument.c"
printf 'SCOREP_REGION_NAMES_BEGIN\n  EXCLUDE empty\nSCOREP_REGION_NAMES_END\n' >"$work/empty.filter"

val() { grep "^$1 " "$2" | awk '{print $2}'; }
run() { # name, launcher options...
    name=$1; shift
    "$build/sysmeasure" --output "$work/out-$name" "$@" -- "$work/instr" pairs "$pairs" >"$work/$name" 2>/dev/null
    rm -rf "$work/out-$name"
}
"$work/plain" pairs "$pairs" >"$work/plain.txt"
"$work/instr" pairs "$pairs" >"$work/nolauncher.txt"
run traced --no-throttle
run profile --no-throttle --trace=no
run filtered --filter "$work/empty.filter"
run throttled
base=$(val call_ns "$work/plain.txt")
echo "bench-instrument: $pairs calls of an empty function, best of 7 (ns per call)"
printf '%-34s %9s %9s\n' case "ns/call" "added"
printf '%-34s %9s\n' "plain build (no instrumentation)" "$base"
line() { printf '%-34s %9s %9s\n' "$1" "$2" "$(echo "$2 $base" | awk '{printf "%+.2f", $1 - $2}')"; }
line "instrumented, no launcher" "$(val call_ns "$work/nolauncher.txt")"
line "instrumented, traced+profiled" "$(val call_ns "$work/traced")"
line "instrumented, profile only" "$(val call_ns "$work/profile")"
line "instrumented, filtered out" "$(val call_ns "$work/filtered")"
line "instrumented, throttled" "$(val call_ns "$work/throttled")"
echo "baselines in the traced run (ns): empty loop $(val loop_ns "$work/traced"), two TSC reads $(val tsc2_ns "$work/traced"), two clock_gettime $(val gettime2_ns "$work/traced"), user-API region pair $(val user_pair_ns "$work/traced")"
echo "instrumented pair / user-API pair (traced): $(echo "$(val call_ns "$work/traced") $base $(val user_pair_ns "$work/traced") $(val loop_ns "$work/traced")" | awk '{printf "%.2f", ($1 - $2) / ($3 - $4)}')"

# fibonacci
"$work/plain" fib "$fibn" >"$work/fib-plain"
"$build/sysmeasure" --output "$work/fib-default" -- "$work/instr" fib "$fibn" >"$work/fib-default.txt" 2>/dev/null
"$build/sysmeasure" --output "$work/fib-full" --no-throttle -- "$work/instr" fib "$fibn" >"$work/fib-full.txt" 2>/dev/null
"$build/sysmeasure-score" "$work/fib-full" -g "$work/fib.filter" >/dev/null
"$build/sysmeasure" --output "$work/fib-filtered" --filter "$work/fib.filter" -- "$work/instr" fib "$fibn" >"$work/fib-filtered.txt" 2>/dev/null
size() { du -sb "$1/traces" | awk '{print $1}'; }
fp=$(val fib_ms "$work/fib-plain")
echo "fib($fibn): $(val fib_calls "$work/fib-plain") calls"
printf '%-40s %10s %9s %12s\n' case ms overhead "trace bytes"
printf '%-40s %10s\n' "plain build" "$fp"
for c in full default filtered; do
    case $c in
        full) label="instrumented, no throttling" ;;
        default) label="instrumented, default throttling" ;;
        filtered) label="instrumented, sysmeasure-score -g filter" ;;
    esac
    ms=$(val fib_ms "$work/fib-$c.txt")
    printf '%-40s %10s %8sx %12s\n' "$label" "$ms" "$(echo "$ms $fp" | awk '{printf "%.1f", $1 / $2}')" "$(size "$work/fib-$c")"
done
echo "filter proposed by sysmeasure-score -g: $(grep -c EXCLUDE "$work/fib.filter") region(s): $(grep EXCLUDE "$work/fib.filter" | awk '{print $2}' | tr '\n' ' ')"
