#!/bin/sh
# Issue 29's real runs: bench-scale-mpi (a ring exchange and an Allreduce per
# step; ranks NP/3 and NP-2 sleep 4x longer in "compute") at several numbers
# of ranks, plain, under sysmeasure with the profile only, and traced: rank
# 0's MPI_Finalize time against plain, mpirun's wall time, the output folder
# (files, MB, profile.json and report.html sizes), the archive checked
# (scale_check.py: every rank, balanced, messages matched), and whether
# profile.txt names the slow ranks.  One run per mode and size (runs of
# 1,024 ranks take a minute to start); with BEFORE=DIR another build's
# launcher runs the same modes in the same rounds.
# Usage: bench/bench_scale_real.sh BUILDDIR [NPS] [STEPS]
#   NPS: default "64 256 1024"; STEPS: default 20.
# Environment: MPIRUN (default mpirun), SM_SCALE_MODES (default
# "plain profile trace"), PYTHON (default /usr/bin/python3, with the OTF2
# reader; the check is skipped when it cannot import otf2).
set -u
build=${1:?usage: bench_scale_real.sh BUILDDIR [NPS] [STEPS]}
nps=${2:-64 256 1024}
steps=${3:-20}
mpirun=${MPIRUN:-mpirun}
py=${PYTHON:-/usr/bin/python3}
modes=${SM_SCALE_MODES:-plain profile trace}
before=${BEFORE:-}
work=${SM_SCALE_WORK:-$(mktemp -d)}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
here=$(cd "$(dirname "$0")" && pwd)
. "$here/bench_lib.sh"
check=yes
"$py" -c 'import otf2' 2>/dev/null || check=no

echo "bench-scale-real: $steps steps, $(bench_load); work in $work"
printf '%-6s %-9s %10s %8s %7s %8s %10s %10s  %s\n' ranks mode finalize_ms wall_s files MB \
    json_KB html_KB checks
for np in $nps; do
    slow="$((np / 3)),$((np - 2))"
    for mode in $modes ${before:+bprofile btrace}; do
        sm="$build/sysmeasure" t=$mode
        case $mode in b*) sm="$before/sysmeasure" t=${mode#b} ;; esac
        out="$work/out-$np-$mode"
        rm -rf "$out"
        start=$(bench_now_ns)
        if [ "$t" = plain ]; then
            SM_BENCH_SLOW=$slow "$mpirun" -np "$np" --oversubscribe -x SM_BENCH_SLOW \
                "$build/bench/bench-scale-mpi" "$steps" >"$work/stdout" 2>"$work/stderr"
        else
            tr=yes; [ "$t" = profile ] && tr=no
            SM_BENCH_SLOW=$slow "$mpirun" -np "$np" --oversubscribe -x SM_BENCH_SLOW "$sm" \
                --trace=$tr -o "$out" -- "$build/bench/bench-scale-mpi" "$steps" \
                >"$work/stdout" 2>"$work/stderr"
        fi
        rc=$?
        wall=$(echo "$start $(bench_now_ns)" | awk '{printf "%.1f", ($2 - $1) / 1e9}')
        fin=$(awk '$1 == "finalize_ms" {print $2}' "$work/stdout")
        files=- mb=- json=- html=- notes=
        [ $rc -eq 0 ] || notes="exit $rc: $(tail -2 "$work/stderr" | tr '\n' ' ')"
        if [ -d "$out" ]; then
            files=$(find "$out" -type f | wc -l)
            mb=$(du -sk "$out" | awk '{printf "%.1f", $1 / 1024}')
            json=$( [ -f "$out/profile.json" ] && du -k "$out/profile.json" | cut -f1 || echo -)
            html=$( [ -f "$out/report.html" ] && du -k "$out/report.html" | cut -f1 || echo -)
            if [ "$t" = trace ] && [ $check = yes ]; then
                notes="$notes $("$py" "$here/scale_check.py" "$out" "$np" "$steps" 2>&1 | tail -1)"
            fi
            # the two slowest ranks of "compute" in profile.txt's table of the
            # ranks that stand out: the planted ones?
            named=$(awk '/RANKS THAT STAND OUT/ {t = 1} t && $2 == "compute" {
                        split($0, f, "|"); n = split(f[8], r, ",");
                        for (i = 1; i <= 2 && i <= n; i++) { sub(/:.*/, "", r[i]); gsub(/ /, "", r[i]); printf "%s ", r[i] }
                        exit }' "$out/profile.txt" 2>/dev/null)
            want=$(echo "$slow" | tr ',' '\n' | sort -n | tr '\n' ' ')
            got=$(echo "$named" | tr ' ' '\n' | grep . | sort -n | tr '\n' ' ')
            if [ "$got" = "$want" ]; then notes="$notes slow ranks named: $got;"
            else notes="$notes SLOW RANKS NOT NAMED (profile.txt: $named; planted: $slow);"; fi
            [ -n "${SM_SCALE_KEEP:-}" ] || rm -rf "$out"
        fi
        printf '%-6s %-9s %10s %8s %7s %8s %10s %10s  %s\n' "$np" "$mode" "${fin:--}" "$wall" \
            "$files" "$mb" "$json" "$html" "$notes"
    done
done
[ -n "${SM_SCALE_WORK:-}" ] || rm -rf "$work"
