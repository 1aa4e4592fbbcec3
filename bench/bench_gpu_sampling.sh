#!/bin/sh
# The sampler thread's CPU use (make bench-gpu-sampling; needs an NVIDIA GPU):
# NVML power sampling at 100 ms and 10 ms, and device-level PM sampling
# (--gpu-sampling) at 1 ms, 100 us and 50 us, whose decodes run on the same
# thread every 100 ms (50 ms for 50 us), over 2 s of GPU work
# (counters_app spin 100 20), against tracing alone in the same run.  The
# thread's CPU time is its CPU clock (pthread_getcpuclockid) read at its end
# (metadata.json sampler_thread_cpu_ns); the process CPU (user + system,
# getrusage of the child) of every run is given beside it.
# Usage: bench_gpu_sampling.sh BUILDDIR COUNTERS_APP [ROUNDS]
set -e
build=$1
app=$2
rounds=${3:-1}
work=$(mktemp -d)
launcher="$build/sysmeasure"
metrics=sm__cycles_active.avg,gr__cycles_active.avg,dram__throughput.avg.pct_of_peak_sustained_elapsed

# run NAME ARGS...: one measured run; prints wall ms, the process's CPU ms
# (user + system of the child, getrusage), the sampler thread's CPU ms and
# share of the wall time, PM samples and lost samples.
run() {
    name=$1
    shift
    cpuwall=$(${PYTHON3:-python3} -c '
import resource, subprocess, sys, time
t = time.monotonic()
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
w = time.monotonic() - t
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print("%d %d" % (w * 1000, (r.ru_utime + r.ru_stime) * 1000))
' "$launcher" --output "$work/$name" "$@" -- "$app" spin 100 20)
    wall=${cpuwall% *}
    pcpu=${cpuwall#* }
    md="$work/$name/metadata.json"
    cpu=$(grep -o '"sampler_thread_cpu_ns": "[0-9]*' "$md" 2>/dev/null | head -1 | grep -o '[0-9]*$' || echo 0)
    samples=$(grep -o '"gpu0_sampling_samples": "[0-9]*' "$md" 2>/dev/null | head -1 | grep -o '[0-9]*$' || echo -)
    lost=$(grep -o '"gpu0_sampling_lost": "[0-9]*' "$md" 2>/dev/null | head -1 | grep -o '[0-9]*$' || echo -)
    printf "%-34s %8s %12s %22s %10s %6s\n" "$name" "$wall" "$pcpu" \
        "$(awk -v c="$cpu" -v w="$wall" 'BEGIN { printf "%.1f (%.2f%%)", c / 1e6, w > 0 ? 100 * c / 1e6 / w : 0 }')" \
        "$samples" "$lost"
}

echo "== sampler thread CPU, 2 s of GPU work (counters_app spin 100 20), $rounds round(s)"
printf "%-34s %8s %12s %22s %10s %6s\n" "run" "wall ms" "process CPU" "sampler ms (% of wall)" "PM samples" "lost"
r=0
while [ $r -lt "$rounds" ]; do
    run "tracing only" --gpu-power=no
    run "NVML 100 ms" --sampling-interval 100
    run "NVML 10 ms" --sampling-interval 10
    run "PM sampling 1 ms" --gpu-power=no --gpu-sampling $metrics --gpu-sampling-interval 1ms
    run "PM sampling 100 us" --gpu-power=no --gpu-sampling $metrics --gpu-sampling-interval 100us
    run "PM sampling 50 us (decode 50 ms)" --gpu-power=no --gpu-sampling $metrics --gpu-sampling-interval 50us
    run "NVML 10 ms + PM sampling 100 us" --sampling-interval 10 --gpu-sampling $metrics --gpu-sampling-interval 100us
    r=$((r + 1))
done
rm -rf "$work"
