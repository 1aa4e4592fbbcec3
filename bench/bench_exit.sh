#!/bin/sh
# The end of the run against the size of the trace (issue 13: it should be
# proportional to what is still unwritten, not to the whole trace).
# Medians of ROUNDS alternating runs of the same workloads:
#  1. one process doing N region pairs (user API) with the default budget,
#     N chosen for about 25, 50, 100 and 200 MB of trace: the time from its
#     last event to the end of the process, traced, profile only, and the
#     same program without the launcher (plain) in the same round;
#  2. a 2-rank MPI job with about 100 MB of trace in all: MPI_Finalize and
#     the time from the last event to the end of mpirun, plain and traced;
#  3. one process of T threads (the machine's CPUs, at least 4) with about
#     100 MB of trace in all, everything encoded at the end
#     (SYSMEASURE_OTF2_BACKGROUND=no): by one encoder
#     (SYSMEASURE_OTF2_END_THREADS=1) and by the default number (the
#     process's CPUs), in the same rounds.
# With BEFORE=DIR (another build of sysmeasure) every traced run is also made
# with that build's launcher in the same round, for before/after figures.
# Usage: bench/bench_exit.sh BUILDDIR [ROUNDS]
# Environment: MPIRUN, BEFORE, SM_BENCH_SIZES (pairs per run, default
# "1200000 2400000 4800000 9600000"), SM_BENCH_THREADS (T of part 3).
set -eu
build=${1:?usage: bench_exit.sh BUILDDIR [ROUNDS]}
rounds=${2:-3}
mpirun=${MPIRUN:-mpirun}
before=${BEFORE:-}
sizes=${SM_BENCH_SIZES:-1200000 2400000 4800000 9600000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
b="$build/bench/bench-spill"
bm="$build/bench/bench-exit-mpi"
threads=${SM_BENCH_THREADS:-$(nproc)}
[ "$threads" -ge 4 ] || threads=4
per_thread=$((4800000 / threads))

. "$(dirname "$0")/bench_lib.sh"

one_round() { # ROUND
    for n in $sizes; do
        bench_run "plain_$n" "$b" pairs "$n" 1
        bench_run "trace_$n" "$build/sysmeasure" -o "$work/out" "$b" pairs "$n" 1
        [ -n "$before" ] && bench_run "before_$n" "$before/sysmeasure" -o "$work/out" "$b" pairs "$n" 1
        bench_run "profile_$n" "$build/sysmeasure" -o "$work/out" --no-trace "$b" pairs "$n" 1
    done
    if [ -x "$bm" ]; then
        m=2400000
        bench_run mpi_plain "$mpirun" -np 2 "$bm" "$m"
        bench_run mpi_trace "$mpirun" -np 2 "$build/sysmeasure" -o "$work/out" "$bm" "$m"
        [ -n "$before" ] && bench_run mpi_before "$mpirun" -np 2 "$before/sysmeasure" -o "$work/out" "$bm" "$m"
    fi
    for enc in one default; do
        e=; [ "$enc" = one ] && e=1
        bench_run "threads_$enc" env SYSMEASURE_OTF2_BACKGROUND=no SYSMEASURE_OTF2_END_THREADS=${e:-0} \
            "$build/sysmeasure" -o "$work/out" "$b" threads "$threads" "$threads" "$per_thread"
    done
    bench_run threads_plain "$b" threads "$threads" "$threads" "$per_thread"
    return 0
}
bench_rounds "$rounds" one_round all

echo "bench-exit: medians of $rounds rounds; ms from the last event to the end of the process"
printf '   %-9s %9s %7s %7s %9s %7s' pairs trace_MB plain profile traced ms/100MB
[ -n "$before" ] && printf ' %9s %7s' before ms/100MB
echo
per100() { echo "$1 $2" | awk '{ if ($2 > 0 && $1 != "-") printf "%.0f", $1 * 100 / $2; else print "-" }'; }
for n in $sizes; do
    mb=$(bench_value "trace_$n" trace_mb)
    t=$(bench_value "trace_$n" exit_ms)
    printf '   %-9s %9s %7s %7s %9s %7s' "$n" "$mb" "$(bench_value "plain_$n" exit_ms)" \
        "$(bench_value "profile_$n" exit_ms)" "$t" "$(per100 "$t" "$mb")"
    if [ -n "$before" ]; then
        tb=$(bench_value "before_$n" exit_ms)
        printf ' %9s %7s' "$tb" "$(per100 "$tb" "$(bench_value "before_$n" trace_mb)")"
    fi
    echo
done
if [ -x "$bm" ]; then
    echo "2 ranks x $m pairs: MPI_Finalize (ms), last event to the end of mpirun (ms), trace MB"
    for k in mpi_plain mpi_trace ${before:+mpi_before}; do
        printf '   %-11s %9s %9s %9s\n' "$k" "$(bench_value $k finalize_ms)" "$(bench_value $k exit_ms)" \
            "$(bench_value $k trace_mb)"
    done
fi
echo "$threads threads x $per_thread pairs, all encoded at the end: last event to the end of the process (ms), trace MB"
for k in threads_plain threads_one threads_default; do
    printf '   %-15s %9s %9s\n' "$k" "$(bench_value $k exit_ms)" "$(bench_value $k trace_mb)"
done
