#!/bin/sh
# The Perfetto trace of a 10-million-event job against the OTF2 archive of
# the same job, each the median of ROUNDS runs:
#  - otf2: the time from the job's last event to the end of its process
#    (writing traces.otf2; --no-profile --no-report, so little else), and
#    the process's peak resident memory;
#  - perfetto: sysmeasure-convert --perfetto on that folder (the module that
#    --perfetto runs at finalize): wall time, CPU time (user + system) and
#    peak resident memory;
#  - sizes of the archive's event files and of trace.pftrace.
# Two shapes of 10 million region events: one thread (5M region pairs), and
# 8 threads of 625,000 pairs each.
# Usage: bench/bench_perfetto.sh BUILDDIR [ROUNDS]
set -eu
build=${1:?usage: bench_perfetto.sh BUILDDIR [ROUNDS]}
rounds=${2:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sm="$build/sysmeasure"
b="$build/bench/bench-spill"
conv="$build/sysmeasure-convert"

. "$(dirname "$0")/bench_lib.sh"

# shape NAME ARGS...: one round of the job and its conversion.
shape() {
    name=$1
    shift
    rm -rf "$work/out"
    /usr/bin/time -f "otf2_rss_kb %M" -o "$work/time" \
        "$sm" -o "$work/out" --no-profile --no-report "$b" "$@" >"$work/stdout" 2>/dev/null
    end=$(bench_now_ns)
    last=$(awk '$1 == "last_event_ns" {print $2}' "$work/stdout")
    cat "$work/time" >>"$work/$name"
    echo "otf2_ms $(( (end - last) / 1000000 ))" >>"$work/$name"
    echo "otf2_mb $(du -sm "$work/out/traces" | cut -f1)" >>"$work/$name"
    /usr/bin/time -f "pf_s %e
pf_cpu_s %U %S
pf_rss_kb %M" -o "$work/time" "$conv" --perfetto "$work/out" 2>"$work/conv"
    awk '$1 == "pf_cpu_s" {print "pf_cpu_ms", int(($2 + $3) * 1000); next} {print}' \
        "$work/time" >>"$work/$name"
    echo "pf_mb $(du -sm "$work/out/trace.pftrace" | cut -f1)" >>"$work/$name"
    sed -n 's/.*(\([0-9.]* MB: .*\));.*/\1/p' "$work/conv" | head -1 >"$work/$name.what"
    rm -rf "$work/out"
}

one_round() { # SHAPE ROUND
    case $1 in
        one_thread) shape one_thread pairs 5000000 1 ;;
        eight_threads) shape eight_threads threads 8 8 625000 ;;
    esac
}
bench_rounds "$rounds" one_round one_thread eight_threads

echo "bench-perfetto: 10 million region events, medians of $rounds rounds"
printf '%-14s %12s %12s %10s | %12s %12s %12s %10s\n' shape "OTF2 write" "OTF2 rss" "OTF2 size" \
    "Perfetto" "(its CPU)" "Perfetto rss" "pftrace"
for s in one_thread eight_threads; do
    pf_ms=$(bench_value $s pf_s | awk '{printf "%d", $1 * 1000}')
    printf '%-14s %9s ms %9s MB %7s MB | %9s ms %9s ms %9s MB %7s MB\n' "$s" "$(bench_value $s otf2_ms)" \
        "$(( $(bench_value $s otf2_rss_kb) / 1024 ))" "$(bench_value $s otf2_mb)" "$pf_ms" "$(bench_value $s pf_cpu_ms)" \
        "$(( $(bench_value $s pf_rss_kb) / 1024 ))" "$(bench_value $s pf_mb)"
    echo "  ($(cat $work/$s.what))"
done
