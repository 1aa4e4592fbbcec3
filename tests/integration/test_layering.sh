#!/bin/sh
# The core names nothing outside itself (DESIGN.md, "Interfaces that keep
# the core small"): each case prints PASS/FAIL with its name.
#  - includes: every #include "..." in src/core is a file of src/core or
#    src/util (or the configure header sm_build.h);
#  - no_optional_dependency: no SM_HAVE_* test of an optional library in
#    src/core (a part that needs one is a plug-in of src/plugins.def);
#  - merge_no_optional_dependency: nor in src/merge, which reads counters
#    through the core's counter sources (an #ifdef SM_HAVE_PAPI there broke
#    the build without PAPI);
#  - symbols: the core's objects use nothing defined outside src/core and
#    src/util but the three plug-in tables (sm_counter_sources,
#    sm_subsystems, sm_end_layer).
# Environment: SM_BUILDDIR, SM_SRCDIR (absolute).
set -u
: "${SM_BUILDDIR:?SM_BUILDDIR must name the build folder}"
: "${SM_SRCDIR:?SM_SRCDIR must name the source folder}"
failures=0
result() { # case, failed-lines
    if [ -z "$2" ]; then
        echo "PASS: $1"
    else
        echo "FAIL: $1"
        echo "$2" | sed 's/^/    /'
        failures=$((failures + 1))
    fi
}

case_includes() {
    bad=$(cd "$SM_SRCDIR/src/core" && grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' ./*.c ./*.h ./*.def |
        sed -n 's/^\([^:]*:[0-9]*\):.*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1 \2/p' |
        while read -r where file; do
            case "$file" in
            ../util/*|../core/*|util/*|core/*|sm_build.h) ;;
            */*) echo "$where includes $file" ;;
            *) [ -f "$SM_SRCDIR/src/core/$file" ] || echo "$where includes $file (not in src/core)" ;;
            esac
        done)
    result includes "$bad"
}

case_no_optional_dependency() {
    bad=$(grep -n 'SM_HAVE_' "$SM_SRCDIR"/src/core/*.c "$SM_SRCDIR"/src/core/*.h "$SM_SRCDIR"/src/core/*.def)
    result no_optional_dependency "$bad"
}

case_merge_no_optional_dependency() {
    bad=$(grep -n 'SM_HAVE_' "$SM_SRCDIR"/src/merge/*.c "$SM_SRCDIR"/src/merge/*.h)
    result merge_no_optional_dependency "$bad"
}

case_symbols() {
    core=$(ls "$SM_BUILDDIR"/src/core/.libs/*.o 2>/dev/null)
    util=$(ls "$SM_BUILDDIR"/src/util/.libs/*.o "$SM_BUILDDIR"/src/util/*.o 2>/dev/null)
    if [ -z "$core" ]; then
        result symbols "no objects of src/core in $SM_BUILDDIR (build first)"
        return
    fi
    nm -u $core | awk '$1 == "U" && $2 ~ /^sm_/ {print $2}' | sort -u >layering.undef
    nm --defined-only $core $util 2>/dev/null | awk 'NF == 3 && $3 ~ /^sm_/ {print $3}' |
        sort -u >layering.def
    bad=$(comm -23 layering.undef layering.def |
        grep -v -x -e sm_counter_sources -e sm_subsystems -e sm_end_layer |
        sed 's/$/ (used by src\/core, defined outside it)/')
    result symbols "$bad"
}

case_includes
case_no_optional_dependency
case_merge_no_optional_dependency
case_symbols
[ "$failures" -eq 0 ]
