#!/bin/sh
# --crash-safe against the default, in the same run (medians of ROUNDS
# alternating runs): the cost of a region pair (user API, 5 repetitions of
# 300,000 pairs: the fastest repetition and the mean of all), with a budget
# that holds the whole trace (2G) and with one small enough to spill (16M),
# and the time from the last event to the end of the process.
# Usage: bench/bench_crash.sh BUILDDIR [ROUNDS]
set -eu
build=${1:?usage: bench_crash.sh BUILDDIR [ROUNDS]}
rounds=${2:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sm="$build/sysmeasure"
b="$build/bench/bench-spill"

. "$(dirname "$0")/bench_lib.sh"

one_round() { # BUDGET ROUND
    bench_run "plain_$1" "$sm" -o "$work/out" --no-profile --buffer-size "$1" "$b" pairs 300000 5
    bench_run "crash_$1" "$sm" -o "$work/out" --no-profile --buffer-size "$1" --crash-safe \
        "$b" pairs 300000 5
}
bench_rounds "$rounds" one_round 2G 16M

echo "bench-crash: medians of $rounds rounds; region pair (ns): fastest repetition / mean of all; exit (ms)"
for budget in 2G 16M; do
    for k in plain crash; do
        printf '   %-28s %8s %8s %8s\n' "$k (budget $budget)" "$(bench_value "${k}_$budget" pair_ns)" \
            "$(bench_value "${k}_$budget" pair_ns_all)" "$(bench_value "${k}_$budget" exit_ms)"
    done
    echo "   crash-safe / default, means (budget $budget): $(echo "$(bench_value "crash_$budget" pair_ns_all) $(bench_value "plain_$budget" pair_ns_all)" | awk '{printf "%.2f", $1 / $2}')"
done
