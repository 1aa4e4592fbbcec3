#!/bin/sh
# The cost sysmeasure adds per MPI call, and the time of MPI_Finalize with
# sysmeasure writing the job's output, in one run: bench-mpi plain and under
# the launcher, alternately ROUNDS times; the medians of each are compared.
# Usage: bench/bench_mpi.sh BUILDDIR [NP] [ITERS] [ROUNDS]
#   NP ranks (default 2), ITERS calls per kernel (default 200000).
# Environment: MPIRUN (default mpirun), SM_BENCH_TRACE=no for profile only.
set -eu
build=${1:?usage: bench_mpi.sh BUILDDIR [NP] [ITERS] [ROUNDS]}
np=${2:-2}
iters=${3:-200000}
rounds=${4:-5}
mpirun=${MPIRUN:-mpirun}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
trace=${SM_BENCH_TRACE:-yes}

i=0
while [ $i -lt "$rounds" ]; do
    "$mpirun" -np "$np" --oversubscribe "$build/bench/bench-mpi" "$iters" >>"$work/plain"
    "$mpirun" -np "$np" --oversubscribe "$build/sysmeasure" --trace="$trace" \
        --output "$work/out$i" -- "$build/bench/bench-mpi" "$iters" >>"$work/measured" 2>/dev/null
    du -sk "$work/out$i" | cut -f1 >>"$work/size_kb"
    rm -rf "$work/out$i"
    i=$((i + 1))
done

median() { # key file
    grep "^$1 " "$2" | awk '{print $2}' | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'
}
echo "bench-mpi: $np ranks, $iters calls per kernel, $rounds rounds (medians), trace: $trace"
printf '%-16s %12s %12s %12s\n' kernel plain sysmeasure added
for k in comm_rank_ns pingpong_ns allreduce8_ns finalize_ms; do
    p=$(median "$k" "$work/plain")
    m=$(median "$k" "$work/measured")
    printf '%-16s %12s %12s %12s\n' "$k" "$p" "$m" "$(echo "$m $p" | awk '{printf "%.2f", $1 - $2}')"
done
echo "output folder: $(sort -g "$work/size_kb" | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}') KiB"
