#!/bin/sh
# Runs the whole suite: the unit tests, then every tests/integration/test_*.sh
# and test_*.py.  One line per test, logs in tests/logs/, and last the line
# "N passed, N failed" (", N skipped" when some were skipped: exit 77).
# Environment: SM_BUILDDIR, SM_SRCDIR (absolute), OTF2_PYTHON; SM_TESTS, a
# space-separated list of names (test_spill, test-gpu, ...), runs only those;
# SM_CASES, names of cases (CASE or FILE:CASE, e.g. test_openmp:nested), runs
# only those cases of a test file written as named cases (smtest.run_cases).
set -u
: "${SM_BUILDDIR:=$(pwd)}"
: "${SM_SRCDIR:=$SM_BUILDDIR}"
: "${OTF2_PYTHON:=/usr/bin/python3}"
export SM_BUILDDIR SM_SRCDIR OTF2_PYTHON
export PYTHONPATH="$SM_SRCDIR/tests/lib${PYTHONPATH:+:$PYTHONPATH}"
logs="$SM_BUILDDIR/tests/logs"
rm -rf "$logs"; mkdir -p "$logs"
work="$SM_BUILDDIR/tests/work"
rm -rf "$work"; mkdir -p "$work"
export SM_TEST_WORK="$work"
passed=0; failed=0; skipped=0; failed_names=""

selected() { # name: is it in SM_TESTS (or is SM_TESTS unset)?
    [ -z "${SM_TESTS:-}" ] && return 0
    base=$(basename "$1"); base=${base%.py}; base=${base%.sh}
    for want in $SM_TESTS; do [ "$want" = "$base" ] && return 0; done
    return 1
}

run_one() { # name, command...
    name=$1; shift
    selected "$name" || return 0
    log="$logs/$(echo "$name" | tr '/' '_').log"
    ( cd "$work" && timeout 600 "$@" ) >"$log" 2>&1
    rc=$?
    if [ $rc -eq 0 ]; then
        passed=$((passed + 1)); echo "PASS: $name"
    elif [ $rc -eq 77 ]; then
        skipped=$((skipped + 1)); echo "SKIP: $name ($(tail -n 1 "$log"))"
    else
        failed=$((failed + 1)); failed_names="$failed_names $name"
        echo "FAIL: $name (exit $rc, log: $log)"
        tail -n 15 "$log" | sed 's/^/    | /'
    fi
}

for t in "$SM_BUILDDIR"/tests/unit/test-*; do
    [ -x "$t" ] || continue
    case "$t" in *.o|*.c) continue ;; esac
    run_one "unit/$(basename "$t")" "$t"
done
for t in "$SM_SRCDIR"/tests/integration/test_*.sh "$SM_SRCDIR"/tests/integration/test_*.py; do
    [ -f "$t" ] || continue
    case "$t" in
        *.py) run_one "integration/$(basename "$t")" "$OTF2_PYTHON" "$t" ;;
        *) run_one "integration/$(basename "$t")" /bin/sh "$t" ;;
    esac
done

if [ $skipped -gt 0 ]; then
    echo "$passed passed, $failed failed, $skipped skipped"
else
    echo "$passed passed, $failed failed"
fi
[ $failed -eq 0 ]
