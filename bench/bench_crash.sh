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

median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
now_ns() { date +%s%N; }
run() { # NAME ARGS...: appends the program's "key value" lines and exit_ms to $work/NAME
    name=$1
    shift
    rm -rf "$work/out"
    "$@" >"$work/stdout" 2>/dev/null
    end=$(now_ns)
    cat "$work/stdout" >>"$work/$name"
    last=$(awk '$1 == "last_event_ns" {print $2}' "$work/stdout")
    [ -n "$last" ] && echo "exit_ms $(( (end - last) / 1000000 ))" >>"$work/$name"
    rm -rf "$work/out"
}
get() { awk -v k="$2" '$1 == k {print $2}' "$work/$1" | median; }

i=0
while [ "$i" -lt "$rounds" ]; do
    for budget in 2G 16M; do
        run "plain_$budget" "$sm" -o "$work/out" --no-profile --buffer-size "$budget" "$b" pairs 300000 5
        run "crash_$budget" "$sm" -o "$work/out" --no-profile --buffer-size "$budget" --crash-safe \
            "$b" pairs 300000 5
    done
    i=$((i + 1))
done

echo "bench-crash: medians of $rounds rounds; region pair (ns): fastest repetition / mean of all; exit (ms)"
for budget in 2G 16M; do
    for k in plain crash; do
        printf '   %-28s %8s %8s %8s\n' "$k (budget $budget)" "$(get "${k}_$budget" pair_ns)" \
            "$(get "${k}_$budget" pair_ns_all)" "$(get "${k}_$budget" exit_ms)"
    done
    echo "   crash-safe / default, means (budget $budget): $(echo "$(get "crash_$budget" pair_ns_all) $(get "plain_$budget" pair_ns_all)" | awk '{printf "%.2f", $1 / $2}')"
done
