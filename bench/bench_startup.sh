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

now_ns() { date +%s%N; }
i=0
while [ $i -lt "$rounds" ]; do
    t0=$(now_ns); "$prog" >/dev/null; t1=$(now_ns)
    echo $(((t1 - t0) / 1000)) >>"$work/plain"
    for t in yes no; do
        t0=$(now_ns)
        "$build/sysmeasure" --trace=$t --output "$work/out" -- "$prog" >/dev/null 2>&1
        t1=$(now_ns)
        echo $(((t1 - t0) / 1000)) >>"$work/trace-$t"
        rm -rf "$work/out"
    done
    i=$((i + 1))
done
stat() { sort -g "$1" | awk '{v[NR]=$1} END {printf "%8.2f %8.2f", v[int((NR+1)/2)] / 1000, v[1] / 1000}'; }
echo "start-up of $prog: $rounds rounds, wall-clock ms (median, min)"
printf '%-34s %s\n' "plain" "$(stat "$work/plain")"
printf '%-34s %s\n' "sysmeasure (trace and profile)" "$(stat "$work/trace-yes")"
printf '%-34s %s\n' "sysmeasure --trace=no" "$(stat "$work/trace-no")"
p=$(sort -g "$work/plain" | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
m=$(sort -g "$work/trace-yes" | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
echo "added by sysmeasure (medians): $(echo "$m $p" | awk '{printf "%+.2f", ($1 - $2) / 1000}') ms"
