#!/bin/sh
# The region pair (bench-region's one-thread figures) as medians over
# ROUNDS runs, and with BEFORE=DIR (another build) that build's
# bench-region alternating with this one in the same rounds, side by side.
# Usage: bench/bench_region.sh BUILDDIR [ROUNDS] [PAIRS]
set -eu
build=${1:?usage: bench_region.sh BUILDDIR [ROUNDS] [PAIRS]}
rounds=${2:-5}
pairs=${3:-2000000}
before=${BEFORE:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

. "$(dirname "$0")/bench_lib.sh"
# one_run KIND ROUND: this build's bench-region (now) or BEFORE's (before);
# keeps "label<TAB>ns" of the one-thread section.
one_run() {
    dir=$build
    [ "$1" = before ] && dir=$before
    # shellcheck disable=SC2086
    $pin "$dir/bench/bench-region" "$pairs" 1 | awk -v run="$1.$2" '
        /^1 thread:/ { on = 1; next }
        on && /^$/ { on = 0 }
        on && match($0, / +[0-9.]+ ns/) {
            label = substr($0, 3, RSTART - 3)
            v = substr($0, RSTART, RLENGTH); sub(/ ns/, "", v); gsub(/ /, "", v)
            print label "\t" v "\t" run
        }' >>"$work/$1"
}
# Pinned only where every build's bench-region takes the one-thread
# argument: an older one runs its all-cores section too, which on one CPU
# takes many times as long (and both kinds must run alike).
pin=$(bench_pin)
for dir in "$build" ${before:+"$before"}; do
    "$dir/bench/bench-region" 1 1 | grep -q 'threads (all cores' && pin=
done
kinds=now
[ -n "$before" ] && kinds="now before"
# shellcheck disable=SC2086
bench_rounds "$rounds" one_run $kinds
echo "bench-region: 1 thread, ns per pair, medians of $rounds runs of 7 x $pairs; $(bench_load)${pin:+; $pin}"
printf '%-46s %9s' "" now
[ -n "$before" ] && printf ' %9s' before
echo
cut -f1 "$work/now" | awk '!seen[$0]++' | while IFS= read -r label; do
    printf '%-46s %9s' "$label" "$(awk -F'\t' -v l="$label" '$1 == l {print $2}' "$work/now" | bench_mid)"
    [ -n "$before" ] &&
        printf ' %9s' "$(awk -F'\t' -v l="$label" '$1 == l {print $2}' "$work/before" | bench_mid)"
    echo
done
# The goal's ratio: the median of each run's own ratio (a run's two lines
# share its moment's machine load), and the ratio of the medians.
ratio() {
    awk -F'\t' '$1 == "baseline: two TSC reads" {t[$3] = $2}
        $1 == "trace+profile, by handle" {p[$3] = $2}
        END {for (r in p) if (t[r] > 0) print p[r] / t[r]}' "$work/$1" | bench_mid
}
median_of() {
    awk -F'\t' -v l="$2" '$1 == l {print $2}' "$work/$1" | bench_mid
}
# goal_ratios KIND: both ratios of that build's runs.
goal_ratios() {
    echo "$(ratio "$1" | awk '{printf "%.2f", $1}')x per run (median), $(echo "$(median_of "$1" "trace+profile, by handle") $(median_of "$1" "baseline: two TSC reads")" | awk '{printf "%.2f", $1 / $2}')x of the medians"
}
echo "trace+profile by handle / two TSC reads: $(goal_ratios now) (goal <= 1.3x)"
if [ -n "$before" ]; then
    echo "before: $(goal_ratios before)"
fi
