#!/bin/sh
# Time added per CUDA kernel launch and per 4-byte cudaMemcpy by sysmeasure
# (make bench-cuda; needs an NVIDIA GPU).  The test program launches an empty
# kernel N times then synchronizes, then copies 4 bytes N times; it prints
# microseconds per launch and per copy.  Plain and measured runs alternate in
# the same invocation, 3 rounds each; nsys is compared where installed.  Then
# bench-region with and without libsysmeasure-cuda.so loaded.
#   bench_cuda.sh BUILDDIR GPU_APP [N]
set -e
build=${1:?builddir}
app=${2:?gpu_app}
n=${3:-200000}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
nsys=$(command -v nsys || true)
for round in 1 2 3 4 5; do
    printf 'plain      '; "$app" bench "$n"
    printf 'sysmeasure '; "$build/sysmeasure" -o "$out/sm$round" -- "$app" bench "$n" 2>/dev/null
    printf 'sm-notrace '; "$build/sysmeasure" --no-trace -o "$out/np$round" -- "$app" bench "$n" 2>/dev/null
    if [ -n "$nsys" ]; then
        printf 'nsys       '; "$nsys" profile -t cuda -o "$out/nsys$round" "$app" bench "$n" 2>/dev/null | grep '^{'
    fi
done
if [ -x "$build/bench/bench-region" ]; then
    echo "bench-region, plain:"
    "$build/bench/bench-region" 1000000 | grep -E "clock|trace|profile|baseline" | head -12
    echo "bench-region, libsysmeasure-cuda.so loaded (LD_PRELOAD):"
    LD_PRELOAD="$build/.libs/libsysmeasure-cuda.so" "$build/bench/bench-region" 1000000 \
        | grep -E "clock|trace|profile|baseline" | head -12
fi
