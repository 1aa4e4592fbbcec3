#!/bin/sh
# Call-stack and process sampling, in one run: bench-sampling's 10-frame
# compute loop without sysmeasure, under sysmeasure without sampling, and
# with --sampling at 100 Hz and 1000 Hz of CPU time, in turn, ROUNDS times
# (medians); the cost of one sample from a run at 10000 Hz of wall-clock
# time (extra CPU time / samples in its archive); the sampler thread's CPU
# time at --sampling-interval 100 during an idle run of IDLE seconds.
# Usage: bench/bench_sampling.sh BUILDDIR [MILLIONS] [ROUNDS] [IDLE]
set -eu
build=${1:?usage: bench_sampling.sh BUILDDIR [MILLIONS] [ROUNDS] [IDLE]}
iters=${2:-300}
rounds=${3:-5}
idle=${4:-10}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prog=$build/bench/bench-sampling
kinds="alone nosampling hz100 hz1000"
. "$(dirname "$0")/bench_lib.sh"
one_run() { # KIND ROUND
    case $1 in
    alone) "$prog" "$iters" >>"$work/$1" ;;
    nosampling) "$build/sysmeasure" -o "$work/out" -- "$prog" "$iters" >>"$work/$1" 2>/dev/null ;;
    hz100) "$build/sysmeasure" -o "$work/out" --sampling --sampling-freq 100 -- \
               "$prog" "$iters" >>"$work/$1" 2>/dev/null ;;
    hz1000) "$build/sysmeasure" -o "$work/out" --sampling --sampling-freq 1000 -- \
                "$prog" "$iters" >>"$work/$1" 2>/dev/null ;;
    esac
    rm -rf "$work/out"
}
# shellcheck disable=SC2086
bench_rounds "$rounds" one_run $kinds
base=$(bench_median cpu_ns_per_iter "$work/nosampling")
echo "bench-sampling: CPU ns per iteration of a compute loop under 10 frames, $iters M iterations, $rounds rounds (medians); $(bench_load)"
printf '%-34s %12s %10s\n' run cpu_ns/iter overhead
for k in $kinds; do
    m=$(bench_median cpu_ns_per_iter "$work/$k")
    printf '%-34s %12s %10s\n' "$k" "$m" "$(echo "$m $base" | awk '{printf "%+.2f%%", 100 * ($1 - $2) / $2}')"
done

# One sample: 10000 Hz of wall-clock time (a timer signal each 100 us, as
# many as the kernel delivers), against the same loop without sampling;
# and a bare timer signal (the program's own timer, empty handler) at the
# same rate: the difference is sysmeasure's handler (unwind, record).
"$build/sysmeasure" -o "$work/s" --sampling --sampling-freq 10000 --sampling-clock real -- \
    "$prog" "$iters" >"$work/fast" 2>/dev/null
"$build/sysmeasure" -o "$work/n" -- "$prog" "$iters" >"$work/slow" 2>/dev/null
"$prog" bare 10000 "$iters" >"$work/bare" 2>/dev/null
"$prog" "$iters" >"$work/plain" 2>/dev/null
samples=$(otf2-print "$work/s/traces.otf2" | grep -c CALLING_CONTEXT_SAMPLE || true)
val() { grep "^$1 " "$2" | awk '{print $2}'; }
per_sample=$(awk -v a="$(val cpu_s "$work/fast")" -v b="$(val cpu_s "$work/slow")" -v s="$samples" \
    'BEGIN {if (s > 0) printf "%.0f", (a - b) * 1e9 / s; else print "?"}')
bare=$(val signals "$work/bare")
per_signal=$(awk -v a="$(val cpu_s "$work/bare")" -v b="$(val cpu_s "$work/plain")" -v s="$bare" \
    'BEGIN {if (s > 0) printf "%.0f", (a - b) * 1e9 / s; else print "?"}')
echo "one sample (timer signal, unwind of 12 frames, record): $samples samples at 10000 Hz wall: $per_sample ns of CPU each"
echo "one bare timer signal (empty handler), same rate: $bare signals: $per_signal ns of CPU each"
echo "sysmeasure's handler alone (difference): $(awk -v a="$per_sample" -v b="$per_signal" 'BEGIN {printf "%.0f", a - b}') ns"

# The sampler thread at 100 ms: its CPU time, from the run's note.
"$build/sysmeasure" -o "$work/p" --process-sampling --sampling-interval 100 -- \
    "$prog" idle "$idle" >/dev/null 2>&1
grep -o 'process sampling:[^"]*' "$work/p/metadata.json" | head -n 1
