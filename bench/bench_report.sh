#!/bin/sh
# Writing the views of a trace of 10 million events, against writing the
# OTF2 archive of the same run (medians of ROUNDS rounds):
#  1. the job: bench-spill, 5 million region pairs (10 million events),
#     traced, with a budget that holds them (no spill); the end of its run
#     (last event to process end) with the trace against --no-trace: the
#     difference is the OTF2 archive's writing (the timeline's binning
#     included: it runs in the same pass);
#  2. each writer of WRITERS on the finished folder, as its own process:
#     wall time and peak resident memory (/usr/bin/time);
#  3. the timeline's binning alone (bench-timeline): ns per event.
# A writer is a command cmd_NAME that, given the folder, writes its file
# file_NAME into it; add one by setting both and naming it in WRITERS (for
# example cmd_perfetto="$build/sysmeasure-convert --perfetto",
# file_perfetto=trace.pftrace).
# Usage: bench/bench_report.sh BUILDDIR [ROUNDS]
set -eu
build=${1:?usage: bench_report.sh BUILDDIR [ROUNDS]}
rounds=${2:-3}
events=10000000
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sm="$build/sysmeasure"

# ---- the writers measured on the finished folder
WRITERS="report"
cmd_report="$build/sysmeasure-report"
file_report=report.html

. "$(dirname "$0")/bench_lib.sh"

one_round() { # ROUND
    bench_run trace \
        "$sm" -o "$work/out" --buffer-size 2G "$build/bench/bench-spill" pairs $((events / 2)) 1
    bench_run notrace \
        "$sm" -o "$work/out" --buffer-size 2G --no-trace "$build/bench/bench-spill" pairs $((events / 2)) 1
    # a traced folder for the writers
    rm -rf "$work/out"
    "$sm" -o "$work/out" --buffer-size 2G "$build/bench/bench-spill" pairs $((events / 2)) 1 \
        >/dev/null 2>/dev/null
    for w in $WRITERS; do
        eval "f=\$file_$w cmd=\$cmd_$w"
        rm -f "$work/out/$f"
        start=$(bench_now_ns)
        /usr/bin/time -f "${w}_rss_kb %M" -o "$work/time" $cmd "$work/out" >/dev/null 2>&1
        end=$(bench_now_ns)
        cat "$work/time" >>"$work/writers"
        echo "${w}_ms $(( (end - start) / 1000000 ))" >>"$work/writers"
        echo "${w}_kb $(( $(stat -c %s "$work/out/$f") / 1024 ))" >>"$work/writers"
    done
    "$build/bench/bench-timeline" "$events" 3 "$work" >>"$work/binning"
}
bench_rounds "$rounds" one_round all

trace=$(bench_value trace exit_ms)
notrace=$(bench_value notrace exit_ms)
otf2=$((trace - notrace))
echo "bench-report: $events events (bench-spill, region pairs), medians of $rounds rounds"
printf '  %-44s %8s ms   (%s MB of events)\n' "end of run, traced" "$trace" "$(bench_value trace trace_mb)"
printf '  %-44s %8s ms\n' "end of run, --no-trace" "$notrace"
printf '  %-44s %8s ms   (baseline)\n' "OTF2 archive (the difference)" "$otf2"
for w in $WRITERS; do
    eval "f=\$file_$w"
    ms=$(bench_value writers "${w}_ms")
    printf '  %-44s %8s ms   %s x the archive, peak RSS %s MB, %s KiB\n' \
        "$f (its own process, on the folder)" "$ms" \
        "$(awk -v a="$ms" -v b="$otf2" 'BEGIN {printf("%.2f", (b > 0) ? a / b : 0)}')" \
        "$(( $(bench_value writers "${w}_rss_kb") / 1024 ))" "$(bench_value writers "${w}_kb")"
done
printf '  %-44s %8s ns per event   (%s ms for %s events)\n' "timeline binning (inside the OTF2 pass)" \
    "$(bench_value binning bin_ns_per_event)" \
    "$(awk -v p="$(bench_value binning bin_ns_per_event)" -v n="$events" 'BEGIN {printf("%.0f", p * n / 1e6)}')" \
    "$events"
printf '  %-44s %8s ns per event   (same run)\n' "  baseline: the loop calling an empty function" \
    "$(bench_value binning base_ns_per_event)"
printf '  %-44s %8s ms\n' "timeline.json from the bins" "$(bench_value binning timeline_json_ms)"
