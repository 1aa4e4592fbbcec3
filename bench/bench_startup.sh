#!/bin/sh
# Start-up and exit of a small program under the launcher, against the
# program alone, in one run: /bin/true (or PROGRAM) plain, under the launcher
# with trace and profile, and with the profile only, in turn, ROUNDS times;
# the medians and minima of the wall-clock times (ms) are compared.
# Usage: bench/bench_startup.sh BUILDDIR [ROUNDS] [PROGRAM]
set -eu
build=${1:?usage: bench_startup.sh BUILDDIR [ROUNDS] [PROGRAM]}
rounds=${2:-30}
prog=${3:-/bin/true}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

. "$(dirname "$0")/bench_lib.sh"
now_ns() { date +%s%N; }
one_run() { # KIND ROUND: plain, or under the launcher (trace: yes/no)
    t0=$(now_ns)
    if [ "$1" = plain ]; then
        "$prog" >/dev/null
    else
        "$build/sysmeasure" --trace="$1" --output "$work/out" -- "$prog" >/dev/null 2>&1
    fi
    t1=$(now_ns)
    echo $(((t1 - t0) / 1000)) >>"$work/$1"
    rm -rf "$work/out"
}
bench_rounds "$rounds" one_run plain yes no
stat() { sort -g "$1" | awk '{v[NR]=$1} END {printf "%8.2f %8.2f", v[int((NR+1)/2)] / 1000, v[1] / 1000}'; }
echo "start-up of $prog: $rounds rounds, wall-clock ms (median, min); $(bench_load)"
printf '%-34s %s\n' "plain" "$(stat "$work/plain")"
printf '%-34s %s\n' "sysmeasure (trace and profile)" "$(stat "$work/yes")"
printf '%-34s %s\n' "sysmeasure --trace=no" "$(stat "$work/no")"
p=$(bench_mid <"$work/plain")
m=$(bench_mid <"$work/yes")
echo "added by sysmeasure (medians): $(echo "$m $p" | awk '{printf "%+.2f", ($1 - $2) / 1000}') ms"
