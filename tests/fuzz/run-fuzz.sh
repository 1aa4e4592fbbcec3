#!/bin/sh
# make check-fuzz: runs each fuzz harness (built by the Makefile with
# libFuzzer, ASan and UBSan) for SECONDS over its corpus and its regress
# files, and says per harness how many inputs it ran and whether it stayed
# clean.  New inputs libFuzzer finds go to BUILD/work/NAME, not into the
# source tree; an input that crashes, hangs (-timeout) or grows past
# -rss_limit_mb is kept as SRC/regress/NAME/crash-... (timeout-..., oom-...)
# and fails the target: make check replays it from then on.
#   run-fuzz.sh BUILD SRC SECONDS NAME...
set -u
build=$1 src=$2 seconds=$3
shift 3
failed=0
for name in "$@"; do
    work="$build/work/$name"
    regress="$src/regress/$name"
    mkdir -p "$work" "$regress"
    log="$build/fuzz_$name.log"
    # -timeout: one input longer than 10 s is a hang; -rss_limit_mb: a
    # reader whose memory grows past 2 GB is a failure; -close_fd_mask=2:
    # the readers' one-line refusals are not printed (libFuzzer's own
    # report of a failure still is).
    "$build/fuzz_$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -close_fd_mask=2 -artifact_prefix="$regress/" \
        "$work" "$src/corpus/$name" "$regress" >"$log" 2>&1
    rc=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    secs=$(sed -n 's/^stat::slowest_unit_time_sec: *//p' "$log" | tail -n 1)
    if [ $rc -eq 0 ]; then
        echo "fuzz $name: ${runs:-?} inputs in $seconds s, clean (slowest input ${secs:-?} s)"
    else
        failed=$((failed + 1))
        echo "fuzz $name: FAILED after ${runs:-?} inputs (exit $rc); the input is kept in $regress/, log: $log"
        grep -E "^(==[0-9]+==ERROR|SUMMARY|.*runtime error|fuzz harness:|artifact_prefix|Test unit written)" "$log" | head -n 8 | sed 's/^/    | /'
    fi
done
[ $failed -eq 0 ]
