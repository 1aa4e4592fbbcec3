#!/bin/sh
# The cost sysmeasure adds per MPI call, and the time of MPI_Finalize with
# sysmeasure writing the job's output, in one run: bench-mpi plain, under the
# launcher with trace and profile, under the launcher with the profile only
# (--trace=no), and under the launcher --dormant (everything loaded,
# measurement off: the stopped path), in turn, ROUNDS times; the medians of
# each are compared.
# Usage: bench/bench_mpi.sh BUILDDIR [NP] [ITERS] [ROUNDS]
#   NP ranks (default 2), ITERS calls per kernel (default 200000).
# Environment: MPIRUN (default mpirun); SM_BENCH_TRACE=yes, no or dormant
# (or a list of them) measures only those modes; BEFORE=DIR (another build of sysmeasure) adds that build's
# launcher in the same modes to the same rounds.
set -eu
build=${1:?usage: bench_mpi.sh BUILDDIR [NP] [ITERS] [ROUNDS]}
np=${2:-2}
iters=${3:-200000}
rounds=${4:-5}
mpirun=${MPIRUN:-mpirun}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
modes=${SM_BENCH_TRACE:-yes no dormant}
before=${BEFORE:-}
[ -n "$before" ] && modes="$modes $(for t in $modes; do printf 'b%s ' "$t"; done)"

. "$(dirname "$0")/bench_lib.sh"
# one_run KIND ROUND: plain, or under the launcher (trace: yes/no)
one_run() {
    if [ "$1" = plain ]; then
        "$mpirun" -np "$np" --oversubscribe "$build/bench/bench-mpi" "$iters" >>"$work/plain"
        return
    fi
    t=$1 sm="$build/sysmeasure"
    case $t in b*) t=${t#b} sm="$before/sysmeasure" ;; esac
    case $t in dormant) how=--dormant ;; *) how=--trace="$t" ;; esac
    "$mpirun" -np "$np" --oversubscribe "$sm" "$how" \
        --output "$work/out$2" -- "$build/bench/bench-mpi" "$iters" >>"$work/trace-$1" 2>"$work/err" ||
        { echo "a run ($1) failed ($?): $(tail -3 "$work/err")" >&2; }
    { du -sk "$work/out$2" 2>/dev/null || echo 0; } | cut -f1 >>"$work/size_kb-$1"
    rm -rf "$work/out$2"
}
# shellcheck disable=SC2086
bench_rounds "$rounds" one_run plain $modes

echo "bench-mpi: $np ranks, $iters calls per kernel, $rounds rounds (medians; ns, finalize in ms); $(bench_load)"
printf '%-16s %10s' kernel plain
for t in $modes; do
    case $t in
    yes) printf ' %10s %10s' traced added ;;
    no) printf ' %10s %10s' profile added ;;
    dormant) printf ' %10s %10s' dormant added ;;
    bdormant) printf ' %10s %10s' bef.dorm added ;;
    byes) printf ' %10s %10s' bef.traced added ;;
    *) printf ' %10s %10s' bef.prof added ;;
    esac
done
echo
for k in comm_rank_ns pingpong_ns allreduce8_ns finalize_ms; do
    p=$(bench_median "$k" "$work/plain")
    printf '%-16s %10s' "$k" "$p"
    for t in $modes; do
        m=$(bench_median "$k" "$work/trace-$t")
        printf ' %10s %10s' "$m" "$(bench_added "$m" "$p" %+.2f)"
    done
    echo
done
for t in $modes; do
    echo "output folder ($t): $(bench_mid <"$work/size_kb-$t") KiB"
done
