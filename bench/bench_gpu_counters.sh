#!/bin/sh
# GPU counters (make bench-gpu-counters; needs an NVIDIA GPU):
#   - the cost of kernel mode per kernel launch with 1, 4 and 8 metrics,
#     against tracing alone and the plain program in the same run;
#   - the wall time of an application-mode run (2 passes) against a plain
#     measured run;
#   - the sampler thread's CPU time (NVML) at 100 ms and 10 ms.
# Usage: bench_gpu_counters.sh BUILDDIR COUNTERS_APP [LAUNCHES] [ROUNDS]
set -e
build=$1
app=$2
n=${3:-2000}
rounds=${4:-2}
work=$(mktemp -d)
launcher="$build/sysmeasure"
now() { date +%s%N; }
# best wall time in ms of ROUNDS runs of "$@"
best() {
    b=
    r=0
    while [ $r -lt "$rounds" ]; do
        t0=$(now)
        "$@" >/dev/null 2>"$work/err" || { echo "failed: $* ($(tail -1 "$work/err"))" >&2; }
        t1=$(now)
        ms=$(( (t1 - t0) / 1000000 ))
        [ -z "$b" ] || [ "$ms" -lt "$b" ] && b=$ms
        r=$((r + 1))
    done
    echo "$b"
}
m1=smsp__inst_executed.sum
m4=$m1,sm__cycles_elapsed.avg,gpu__time_duration.sum,dram__bytes_read.sum
m8=$m1,sm__throughput.avg.pct_of_peak_sustained_elapsed,gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed,l1tex__throughput.avg.pct_of_peak_sustained_active,lts__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum

echo "== kernel mode: $n launches of a tiny kernel, best of $rounds (ms)"
plain=$(best "$app" bench "$n")
trace=$(best "$launcher" --output "$work/t" --gpu-power=no -- "$app" bench "$n")
k1=$(best "$launcher" --output "$work/k1" --gpu-power=no --gpu-metrics $m1 -- "$app" bench "$n")
k4=$(best "$launcher" --output "$work/k4" --gpu-power=no --gpu-metrics $m4 -- "$app" bench "$n")
k8=$(best "$launcher" --output "$work/k8" --gpu-power=no --gpu-metrics $m8 -- "$app" bench "$n")
printf "%-28s %10s %16s\n" "run" "wall ms" "us per launch vs tracing"
printf "%-28s %10s %16s\n" "plain (no sysmeasure)" "$plain" "-"
printf "%-28s %10s %16s\n" "tracing only" "$trace" "-"
for x in "1 $k1" "4 $k4" "8 $k8"; do
    set -- $x
    printf "%-28s %10s %16s\n" "kernel mode, $1 metric(s)" "$2" \
        "$(awk -v a="$2" -v b="$trace" -v n="$n" 'BEGIN { printf "%.1f", (a - b) * 1000 / n }')"
done
for k in k1 k4 k8; do
    rows=$(cat "$work/$k"/counter_collection*.csv 2>/dev/null | wc -l)
    echo "   $k: $rows rows in counter_collection.csv; $(grep -o '"gpu_counter_passes": "[0-9]*"' "$work/$k/metadata.json" || echo 'no pass count')"
done

echo "== application mode (2 passes) vs one measured run, counters_app 200 launches (ms)"
printf 'pmc: %s\npmc: sm__cycles_elapsed.avg\n' $m1 >"$work/passes.txt"
one=$(best "$launcher" --output "$work/one" --gpu-power=no -- "$app" 200)
appl=$(best "$build/sysmeasure-passes" -- "$launcher" --output "$work/app" --gpu-power=no \
    --gpu-counter-mode=application --gpu-metrics-file "$work/passes.txt" -- "$app" 200)
printf "%-28s %10s\n" "measured, no counters" "$one" "application mode, 2 passes" "$appl"

echo "== sampler thread CPU (NVML), 2 s of GPU work"
for ms in 100 10; do
    "$launcher" --output "$work/s$ms" --sampling-interval $ms -- "$app" spin 100 20 >/dev/null 2>&1 || true
    cpu=$(grep -o '"sampler_thread_cpu_ns": "[0-9]*' "$work/s$ms/metadata.json" | grep -o '[0-9]*$' || echo 0)
    wall=$(grep -o '"duration_ns": [0-9]*' "$work/s$ms/metadata.json" | grep -o '[0-9]*$' || echo 0)
    echo "   interval $ms ms: sampler thread CPU $cpu ns over a run of $wall ns" \
        "($(awk -v c="$cpu" -v w="$wall" 'BEGIN { if (w > 0) printf "%.3f%%", 100 * c / w }') of one core)"
done
rm -rf "$work"
