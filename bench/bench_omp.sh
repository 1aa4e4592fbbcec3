#!/bin/sh
# The cost sysmeasure adds to an empty OpenMP parallel region and to a
# barrier, on 2 threads, in one run: bench-omp plain, with a do-nothing OMPT
# tool (what LLVM's runtime itself spends on reporting the events), and
# under the launcher (trace and profile on), in turn, ROUNDS times; the
# medians of each are compared.
# Usage: bench/bench_omp.sh BUILDDIR [ITERS] [ROUNDS]
#   ITERS regions and barriers per repetition (default 20000).
# Environment: SM_BENCH_TRACE=no for profile only; OMP_PROC_BIND (default true).
set -eu
build=${1:?usage: bench_omp.sh BUILDDIR [ITERS] [ROUNDS]}
iters=${2:-20000}
rounds=${3:-7}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
trace=${SM_BENCH_TRACE:-yes}
export OMP_NUM_THREADS=2 OMP_PROC_BIND=${OMP_PROC_BIND:-true} # pinned: steadier

i=0
while [ $i -lt "$rounds" ]; do
    "$build/bench/bench-omp" "$iters" >>"$work/plain"
    OMP_TOOL_LIBRARIES="$build/bench/bench-omp-tool.so" "$build/bench/bench-omp" "$iters" >>"$work/tool"
    "$build/sysmeasure" --trace="$trace" --output "$work/out$i" -- \
        "$build/bench/bench-omp" "$iters" >>"$work/measured" 2>/dev/null
    rm -rf "$work/out$i"
    i=$((i + 1))
done

median() { # key file
    grep "^$1 " "$2" | awk '{print $2}' | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'
}
echo "bench-omp: $(median threads "$work/plain") threads, $iters per kernel, $rounds rounds (medians, ns), trace: $trace"
printf '%-12s %10s %10s %11s %12s %12s\n' kernel plain "no-op tool" sysmeasure "added (all)" "added by us"
for k in parallel_ns barrier_ns; do
    p=$(median "$k" "$work/plain")
    t=$(median "$k" "$work/tool")
    m=$(median "$k" "$work/measured")
    printf '%-12s %10s %10s %11s %12s %12s\n' "$k" "$p" "$t" "$m" \
        "$(echo "$m $p" | awk '{printf "%+.1f", $1 - $2}')" "$(echo "$m $t" | awk '{printf "%+.1f", $1 - $2}')"
done
