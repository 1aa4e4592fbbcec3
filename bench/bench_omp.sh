#!/bin/sh
# The cost sysmeasure adds to an empty OpenMP parallel region, to a barrier
# and to a task-recursive fibonacci (one task per call), on 2 threads, in
# one run: bench-omp plain, with a do-nothing OMPT tool (what LLVM's runtime
# itself spends on reporting the events), under the launcher with trace and
# profile, and with the profile only (--trace=no), in turn, ROUNDS times;
# the medians of each are compared.  Also the size of the profile files and
# of the trace that sysmeasure wrote.
# Usage: bench/bench_omp.sh BUILDDIR [ITERS] [ROUNDS] [FIB] [REPS]
#   ITERS regions and barriers per repetition (default 20000); fib(FIB)
#   (default 20); REPS repetitions per run, the fastest counts (default 5;
#   on a machine shared with other work, more and shorter ones find its
#   quiet moments: 2000 regions x 60 repetitions).
# Environment: SM_BENCH_TRACE=yes or no measures only that mode;
# OMP_PROC_BIND (default true); BEFORE=DIR (another build of sysmeasure)
# adds that build's launcher in the same modes to the same rounds.
set -eu
build=${1:?usage: bench_omp.sh BUILDDIR [ITERS] [ROUNDS] [FIB] [REPS]}
iters=${2:-20000}
rounds=${3:-7}
fib=${4:-20}
reps=${5:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
modes=${SM_BENCH_TRACE:-yes no}
before=${BEFORE:-}
[ -n "$before" ] && modes="$modes $(for t in $modes; do printf 'b%s ' "$t"; done)"
export OMP_NUM_THREADS=2 OMP_PROC_BIND=${OMP_PROC_BIND:-true} # pinned: steadier

. "$(dirname "$0")/bench_lib.sh"
# one_run KIND ROUND: plain, the no-op tool, or under the launcher (trace: yes/no)
one_run() {
    case $1 in
    plain) "$build/bench/bench-omp" "$iters" "$reps" "$fib" >>"$work/plain" ;;
    tool) OMP_TOOL_LIBRARIES="$build/bench/bench-omp-tool.so" \
              "$build/bench/bench-omp" "$iters" "$reps" "$fib" >>"$work/tool" ;;
    *)
        t=$1 sm="$build/sysmeasure"
        case $t in b*) t=${t#b} sm="$before/sysmeasure" ;; esac
        "$sm" --trace="$t" --output "$work/out$2" -- \
            "$build/bench/bench-omp" "$iters" "$reps" "$fib" >>"$work/trace-$1" 2>"$work/err" ||
            { echo "a run ($1) failed ($?): $(tail -3 "$work/err")" >&2; }
        cat "$work/out$2"/profile.* | wc -c >>"$work/profile_bytes-$1"
        { du -sk "$work/out$2/traces" 2>/dev/null || echo 0; } | cut -f1 >>"$work/trace_kb-$1"
        rm -rf "$work/out$2"
        ;;
    esac
}
# shellcheck disable=SC2086
bench_rounds "$rounds" one_run plain tool $modes
echo "bench-omp: $(bench_median threads "$work/plain") threads, $iters per kernel x $reps, fib($fib), $rounds rounds (medians; ns, fib in ms); $(bench_load)"
printf '%-12s %10s %10s' kernel plain "no-op tool"
for t in $modes; do
    case $t in
    yes) printf ' %10s %9s' traced added ;;
    no) printf ' %10s %9s' profile added ;;
    byes) printf ' %10s %9s' bef.traced added ;;
    *) printf ' %10s %9s' bef.prof added ;;
    esac
done
echo
for k in parallel_ns barrier_ns fib_ms fib_task_ns; do
    p=$(bench_median "$k" "$work/plain")
    printf '%-12s %10s %10s' "$k" "$p" "$(bench_median "$k" "$work/tool")"
    for t in $modes; do
        m=$(bench_median "$k" "$work/trace-$t")
        printf ' %10s %9s' "$m" "$(bench_added "$m" "$p")"
    done
    echo
done
p=$(bench_median fib_ms "$work/plain")
for t in $modes; do
    m=$(bench_median fib_ms "$work/trace-$t")
    echo "fib($fib), trace: $t: $(echo "$m $p" | awk '{printf "%.2f", $1 / $2}')x plain;" \
        "profile files $(bench_mid <"$work/profile_bytes-$t") bytes, trace $(bench_mid <"$work/trace_kb-$t") KiB"
done
