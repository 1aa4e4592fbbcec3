#!/bin/sh
# Spilling and the end of the run, each against its baseline in the same run
# (medians of ROUNDS alternating runs):
#  1. a region pair (user API) with a budget small enough to spill many
#     times (16M) against one that holds the whole trace (2G);
#  2. a 0-byte ping-pong round trip between 2 ranks: plain, traced with the
#     default budget (64M, spills), traced with --buffer-size 512M;
#  3. the time from the last event to the end of the process against the
#     size of the trace (about 50, 100, 200 MB), against profile only;
#  4. 4,000 short threads (200 alive at once): run and exit time, resident
#     memory, against profile only; the trace written to tmpfs (/dev/shm,
#     when present) and to the disk of $TMPDIR.  Their 8,000 trace files are
#     not deleted right after each run: on an ext4 without a journal,
#     creating files within about 30 s of deleting many others is several
#     times slower (the kernel's scan of recently deleted inodes), which the
#     exit time would otherwise measure (1.4 s became 6.8 s).  Each run
#     writes into a folder of its own, all removed when the rounds end.
# Usage: bench/bench_spill.sh BUILDDIR [ROUNDS]
# Environment: MPIRUN; SM_BENCH_SKIP_THREADS=1 leaves out 4 (minutes per run
# before the OTF2 writer pooled its chunks); BEFORE=DIR (another build of
# sysmeasure) adds that build's launcher to 1, 2 and 4 in the same rounds.
set -eu
build=${1:?usage: bench_spill.sh BUILDDIR [ROUNDS]}
rounds=${2:-3}
mpirun=${MPIRUN:-mpirun}
work=$(mktemp -d)
shm=
[ -d /dev/shm ] && [ -w /dev/shm ] && shm=$(mktemp -d /dev/shm/bench-spill.XXXXXX)
trap 'rm -rf "$work" ${shm:+"$shm"}' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
sm="$build/sysmeasure"
b="$build/bench/bench-spill"
before=${BEFORE:-}

. "$(dirname "$0")/bench_lib.sh"
now_ns() { date +%s%N; }
# run NAME ARGS...: runs the command, appends "key value" lines to
# $work/NAME, with exit_ms (last event to process end), rss_kb and trace_mb.
# With keep=DIR set, the command writes its output to DIR (not $work/out),
# which is left in place (removed with $work or $shm at the end).
run() {
    name=$1
    shift
    rm -rf "$work/out"
    /usr/bin/time -f "rss_kb %M" -o "$work/time" "$@" >"$work/stdout" 2>/dev/null
    end=$(now_ns)
    cat "$work/stdout" "$work/time" >>"$work/$name"
    last=$(awk '$1 == "last_event_ns" {print $2}' "$work/stdout")
    [ -n "$last" ] && echo "exit_ms $(( (end - last) / 1000000 ))" >>"$work/$name"
    if [ -d "${keep:-$work/out}/traces" ]; then
        echo "trace_mb $(du -sm "${keep:-$work/out}/traces" | cut -f1)" >>"$work/$name"
    fi
    rm -rf "$work/out"
}
# keep_dir BASE ROUND NAME: a new folder for a kept output.
keep_dir() {
    mkdir -p "$1/kept"
    echo "$1/kept/$3.$2"
}
# threads_traced BASE ROUND NAME LAUNCHER: part 4 traced, its output kept
# under BASE.
threads_traced() {
    keep=$(keep_dir "$1" "$2" "$3")
    run "$3" "$4" -o "$keep" "$b" threads 4000 200 2000
}
get() { bench_median "$2" "$work/$1"; }

one_round() { # (all) ROUND
    round=$2
    run pair_spill "$sm" -o "$work/out" --no-profile --buffer-size 16M "$b" pairs 1000000 5
    run pair_nospill "$sm" -o "$work/out" --no-profile --buffer-size 2G "$b" pairs 1000000 5
    if [ -n "$before" ]; then
        run pair_spill_before "$before/sysmeasure" -o "$work/out" --no-profile --buffer-size 16M "$b" pairs 1000000 5
        run pair_nospill_before "$before/sysmeasure" -o "$work/out" --no-profile --buffer-size 2G "$b" pairs 1000000 5
    fi
    for n in 2300000 4600000 9200000; do
        run "exit_trace_$n" "$sm" -o "$work/out" "$b" pairs "$n" 1
        run "exit_profile_$n" "$sm" -o "$work/out" --no-trace "$b" pairs "$n" 1
    done
    if [ -z "${SM_BENCH_SKIP_THREADS:-}" ]; then
        if [ -n "$shm" ]; then
            threads_traced "$shm" "$round" threads_trace "$sm"
            [ -z "$before" ] || threads_traced "$shm" "$round" threads_trace_before "$before/sysmeasure"
        fi
        threads_traced "$work" "$round" threads_trace_disk "$sm"
        [ -z "$before" ] || threads_traced "$work" "$round" threads_trace_disk_before "$before/sysmeasure"
        keep=
        run threads_profile "$sm" -o "$work/out" --no-trace "$b" threads 4000 200 2000
    fi
    if [ -x "$build/bench/bench-pingpong" ]; then
        pp="$build/bench/bench-pingpong"
        run pp_plain "$mpirun" -np 2 "$pp" 150000 8
        run pp_64m "$mpirun" -np 2 "$sm" -o "$work/out" "$pp" 150000 8
        run pp_512m "$mpirun" -np 2 "$sm" -o "$work/out" --buffer-size 512M "$pp" 150000 8
        if [ -n "$before" ]; then
            run pp_64m_before "$mpirun" -np 2 "$before/sysmeasure" -o "$work/out" "$pp" 150000 8
            run pp_512m_before "$mpirun" -np 2 "$before/sysmeasure" -o "$work/out" --buffer-size 512M "$pp" 150000 8
        fi
    fi
}
bench_rounds "$rounds" one_round all

echo "bench-spill: medians of $rounds rounds; $(bench_load)"
echo "1. region pair (ns), 5 x 1M pairs: fastest repetition / mean of all"
printf '   %-24s %8s %8s\n' "no spill (2G budget)" "$(get pair_nospill pair_ns)" "$(get pair_nospill pair_ns_all)"
printf '   %-24s %8s %8s\n' "spilling (16M budget)" "$(get pair_spill pair_ns)" "$(get pair_spill pair_ns_all)"
echo "   ratio of the means: $(echo "$(get pair_spill pair_ns_all) $(get pair_nospill pair_ns_all)" | awk '{printf "%.2f", $1 / $2}')"
if [ -n "$before" ]; then
    printf '   %-24s %8s %8s\n' "before: no spill" "$(get pair_nospill_before pair_ns)" "$(get pair_nospill_before pair_ns_all)"
    printf '   %-24s %8s %8s\n' "before: spilling" "$(get pair_spill_before pair_ns)" "$(get pair_spill_before pair_ns_all)"
fi
if [ -f "$work/pp_plain" ]; then
    echo "2. ping-pong round trip (us), 2 ranks, 8 x 150000: fastest / mean / slowest repetition; MPI_Finalize (ms)"
    pps="pp_plain pp_64m pp_512m"
    [ -n "$before" ] && pps="$pps pp_64m_before pp_512m_before"
    for k in $pps; do
        printf '   %-24s %8s %8s %8s %8s\n' "$k" "$(get $k rt_us_best)" "$(get $k rt_us_mean)" \
            "$(get $k rt_us_worst)" "$(get $k finalize_ms)"
    done
fi
echo "3. end of the run (ms from the last event to the end of the process)"
printf '   %-12s %10s %10s %14s\n' pairs trace_MB traced profile_only
for n in 2300000 4600000 9200000; do
    printf '   %-12s %10s %10s %14s\n' "$n" "$(get exit_trace_$n trace_mb)" \
        "$(get exit_trace_$n exit_ms)" "$(get exit_profile_$n exit_ms)"
done
echo "4. 4000 threads, 200 alive, 2000 pairs each (default 64M budget); trace on tmpfs ($shm) and on disk ($work)"
printf '   %-26s %10s %10s %10s %10s\n' "" run_s exit_ms rss_kb trace_MB
for k in threads_trace threads_trace_before threads_trace_disk threads_trace_disk_before threads_profile; do
    [ -f "$work/$k" ] || continue
    printf '   %-26s %10s %10s %10s %10s\n' "$k" "$(get $k threads_s)" "$(get $k exit_ms)" \
        "$(get $k rss_kb)" "$(get $k trace_mb)"
done
