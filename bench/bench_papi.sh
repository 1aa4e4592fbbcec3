#!/bin/sh
# The cost of PAPI counters per region enter+leave pair, in one run:
# bench-papi under sysmeasure (trace and profile on) with no event, 1 and 4
# software-defined events, and 1 and 4 perf software events where PAPI can
# count them, in turn, ROUNDS times; medians compared with no event.
# Usage: bench/bench_papi.sh BUILDDIR [PAIRS] [ROUNDS]
set -eu
build=${1:?usage: bench_papi.sh BUILDDIR [PAIRS] [ROUNDS]}
pairs=${2:-200000}
rounds=${3:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sde1=sde:::BENCH::A
sde4=sde:::BENCH::A,sde:::BENCH::B,sde:::BENCH::C,sde:::BENCH::D
perf1=perf::TASK-CLOCK
perf4=perf::TASK-CLOCK,perf::PAGE-FAULTS,perf::CONTEXT-SWITCHES,perf::CPU-MIGRATIONS
kinds="none sde1 sde4"
"$build/sysmeasure" --papi "$perf4" --output "$work/probe" -- true >/dev/null 2>&1 &&
    kinds="$kinds perf1 perf4"
. "$(dirname "$0")/bench_lib.sh"
one_run() { # KIND ROUND
    case $1 in
    none) ev= ;;
    sde1) ev=$sde1 ;;
    sde4) ev=$sde4 ;;
    perf1) ev=$perf1 ;;
    perf4) ev=$perf4 ;;
    esac
    SYSMEASURE_PAPI_EVENTS=$ev "$build/sysmeasure" --output "$work/out" -- \
        "$build/bench/bench-papi" "$pairs" >>"$work/$1" 2>/dev/null
    rm -rf "$work/out"
}
# shellcheck disable=SC2086
bench_rounds "$rounds" one_run $kinds
base=$(bench_median pair_ns "$work/none")
echo "bench-papi: ns per region enter+leave pair, trace+profile, $pairs pairs, $rounds rounds (medians); $(bench_load)"
echo "baseline in the same runs: two TSC reads $(bench_median tsc2_ns "$work/none") ns"
printf '%-28s %10s %10s\n' events pair_ns added
for k in $kinds; do
    m=$(bench_median pair_ns "$work/$k")
    printf '%-28s %10s %10s\n' "$k" "$m" "$(bench_added "$m" "$base")"
done
