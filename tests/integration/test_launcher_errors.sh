#!/bin/sh
# The launcher's errors: each bad input gives the right exit status, exactly
# one line on stderr naming the problem, and the program does not run.  Also
# --help/--version, sysmeasure-avail against config_vars.def and
# doc/configuration.md, and (with the runtime library built) that the program
# runs with its own exit status.
# Environment: SM_BUILDDIR, SM_SRCDIR (absolute); run from a scratch folder.
set -u
: "${SM_BUILDDIR:?SM_BUILDDIR must name the build folder}"
: "${SM_SRCDIR:?SM_SRCDIR must name the source folder}"
SM=$SM_BUILDDIR/sysmeasure
AVAIL=$SM_BUILDDIR/sysmeasure-avail
DEF=$SM_SRCDIR/src/core/config_vars.def

# The caller's SYSMEASURE_* variables would change every answer.
for v in $(env | sed -n 's/^\(SYSMEASURE_[A-Za-z0-9_]*\)=.*/\1/p'); do
    unset "$v"
done

work=$(pwd)/launcher-errors.$$
rm -rf "$work"
mkdir -p "$work" || exit 1
cd "$work" || exit 1

failures=0
fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

# The program of the error cases: it leaves a marker when it runs.
printf '#!/bin/sh\ntouch "%s/RAN"\n' "$work" >marker
chmod 755 marker

# expect_error STATUS PATTERN... -- COMMAND...
# PATTERNs are fixed strings that must all be on the one stderr line.
expect_error() {
    status=$1
    shift
    patterns=""
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do
        patterns="$patterns$1
"
        shift
    done
    shift
    what="$*"
    rm -f RAN out.txt err.txt
    "$@" >out.txt 2>err.txt
    rc=$?
    echo "  [$rc] $what"
    sed 's/^/        /' err.txt
    [ $rc -eq "$status" ] || fail "$what: exit status $rc, expected $status"
    lines=$(wc -l <err.txt)
    [ "$lines" -eq 1 ] || fail "$what: $lines lines on stderr, expected exactly 1"
    # Each tool names itself: "sysmeasure: error: ", "sysmeasure-avail: error: ".
    tool=$1
    [ "$tool" = env ] && for a in "$@"; do case $a in env|*=*) ;; *) tool=$a; break ;; esac; done
    tool=$(basename "$tool")
    grep -q "^$tool: error: " err.txt || fail "$what: stderr is not '$tool: error: ...'"
    printf '%s' "$patterns" | while IFS= read -r p; do
        grep -q -F -e "$p" err.txt || { echo "FAIL: $what: stderr does not say '$p'"; exit 1; }
    done || failures=$((failures + 1))
    [ ! -s out.txt ] || fail "$what: wrote on stdout"
    [ ! -e RAN ] || fail "$what: the program ran"
}

echo "error paths:"
expect_error 2 "'--foo'" "sysmeasure --help" -- "$SM" --foo ./marker
expect_error 2 "'--foo'" -- "$SM" --foo=1 -- ./marker
expect_error 2 "'-x'" -- "$SM" -x ./marker
expect_error 2 "'--no-buffer-size'" -- "$SM" --no-buffer-size ./marker
expect_error 2 "--buffer-size" "needs a value" -- "$SM" --buffer-size
expect_error 2 "no program" -- "$SM" --no-trace
expect_error 2 "no program" -- "$SM" -v --
expect_error 2 "SYSMEASURE_FOO" "unknown variable" -- env SYSMEASURE_FOO=1 "$SM" ./marker
expect_error 2 "SYSMEASURE_BUFFER_SIZE" "'12Q'" -- env SYSMEASURE_BUFFER_SIZE=12Q "$SM" ./marker
expect_error 2 "--buffer-size" "'12Q'" -- "$SM" --buffer-size=12Q ./marker
expect_error 2 "--buffer-size" "'12Q'" -- "$SM" --buffer-size 12Q ./marker
expect_error 2 "--gpu-sampling-interval" "'5xs'" "50us to 1s" -- "$SM" --gpu-sampling-interval 5xs ./marker
expect_error 2 "--gpu-sampling-interval" "'1us'" "50us to 1s" -- "$SM" --gpu-sampling-interval=1us ./marker
expect_error 2 "SYSMEASURE_GPU_SAMPLING_INTERVAL" "'2s'" -- env SYSMEASURE_GPU_SAMPLING_INTERVAL=2s "$SM" ./marker
expect_error 2 "--gpu-sampling" "not groups" -- "$SM" --gpu-sampling "a__b.sum;c__d.avg" ./marker
expect_error 2 "--gpu-sampling" -- "$SM" --gpu-sampling "a__b.sum,b@d" ./marker
expect_error 2 "--trace" "'maybe'" -- "$SM" --trace=maybe ./marker
expect_error 2 "--clock" "'sundial'" -- "$SM" --clock sundial ./marker
expect_error 2 "--verbose" "'-1'" -- "$SM" --verbose=-1 ./marker
# The budget must hold one chunk (256K by default).
expect_error 2 "SYSMEASURE_BUFFER_SIZE=128K" "buffer_chunk_size" -- "$SM" --buffer-size=128K ./marker

# Tests run as root, for whom a read-only folder is writable: use a path
# below a regular file, and /proc.
touch afile
expect_error 2 "output folder 'afile/sub' is not writable" -- "$SM" -o afile/sub ./marker
expect_error 2 "output folder '/proc/sm-no-such-dir/sub' is not writable" -- \
    "$SM" --output=/proc/sm-no-such-dir/sub ./marker
expect_error 2 "output folder 'afile/sub' is not writable" -- \
    env SYSMEASURE_OUTPUT=afile/sub "$SM" ./marker

printf '# settings\ntrace = yes\n\nthis line has no equals sign\n' >malformed.conf
expect_error 2 "malformed.conf:4:" "missing '='" -- "$SM" -c malformed.conf ./marker
printf 'trace = yes\nfoo = 1\n' >unknown.conf
expect_error 2 "unknown.conf:2:" "'foo'" -- "$SM" --config unknown.conf ./marker
printf 'buffer_size = 12Q\n' >badvalue.conf
expect_error 2 "badvalue.conf:1:" "buffer_size" "'12Q'" -- "$SM" --config=badvalue.conf ./marker
expect_error 2 "badvalue.conf:1:" -- env SYSMEASURE_CONFIG_FILE="$work/badvalue.conf" "$SM" ./marker
expect_error 2 "cannot read config file" "$work/no-such.conf" -- "$SM" -c no-such.conf ./marker

# PAPI events: checked before the program starts.  Presets name hardware
# counters; where the machine shows none (a VM), PAPI_TOT_CYC is one it
# cannot count.
if [ "${SM_HAVE_PAPI:-no}" = yes ]; then
    expect_error 2 "--papi" "unknown PAPI event PAPI_NO_SUCH" "available here" "sysmeasure-avail --papi" -- \
        "$SM" --papi PAPI_NO_SUCH ./marker
    expect_error 2 "--papi" "unknown PAPI events PAPI_NO_SUCH, nosuch::EVENT" -- \
        "$SM" --papi=PAPI_NO_SUCH,nosuch::EVENT ./marker
    expect_error 2 "SYSMEASURE_PAPI_EVENTS" "empty event name" -- env SYSMEASURE_PAPI_EVENTS=a,,b "$SM" ./marker
    expect_error 2 "--papi" "PAPI_TOT_INS" "named twice" -- "$SM" --papi PAPI_TOT_INS,PAPI_TOT_INS ./marker
    if ! "$AVAIL" --papi | grep -q '^  PAPI_TOT_CYC '; then
        expect_error 2 "--papi" "PAPI event PAPI_TOT_CYC cannot be counted on this machine" \
            "available here: no presets" -- "$SM" --papi PAPI_TOT_CYC ./marker
        expect_error 2 "unknown PAPI event PAPI_NO_SUCH; PAPI event PAPI_TOT_CYC cannot be counted" -- \
            "$SM" --papi PAPI_NO_SUCH,PAPI_TOT_CYC ./marker
    fi
    "$AVAIL" --papi >papi.txt || fail "sysmeasure-avail --papi: exit status $?"
    grep -q '^component ' papi.txt || fail "sysmeasure-avail --papi lists no component"
else
    expect_error 2 "--papi" "built without PAPI" -- "$SM" --papi PAPI_TOT_CYC ./marker
fi

expect_error 127 "program 'sm-no-such-program' not found" -- "$SM" sm-no-such-program
expect_error 127 "program './sm-no-such-program' not found" -- "$SM" -- ./sm-no-such-program
printf '#!/bin/sh\ntouch "%s/RAN"\n' "$work" >not-executable
chmod 644 not-executable
expect_error 126 "program './not-executable' is not executable" -- "$SM" ./not-executable
expect_error 126 "'/tmp'" -- "$SM" /tmp

echo "help and version:"
"$SM" --help >help.txt 2>help.err
rc=$?
[ $rc -eq 0 ] || fail "--help: exit status $rc"
[ ! -s help.err ] || fail "--help wrote on stderr"
options=$(sed -n 's/^SM_CONFIG_VAR([^,]*, *[A-Z0-9_]*, *[A-Z]*, *"[^"]*", *"\([^"]*\)".*/\1/p' "$DEF")
[ -n "$options" ] || fail "no launcher option found in $DEF"
for o in $options; do
    if grep -q -F -e "--$o" help.txt; then
        echo "  --help lists --$o"
    else
        fail "--help does not list --$o"
    fi
done
for o in -h -V -v -o -c; do
    grep -q -e "$o, --" help.txt || fail "--help does not list $o"
done
version=$(sed -n 's/^AC_INIT(\[sysmeasure\], *\[\([^]]*\)\].*/\1/p' "$SM_SRCDIR/configure.ac")
out=$("$SM" --version)
rc=$?
echo "  --version: $out"
[ $rc -eq 0 ] || fail "--version: exit status $rc"
case "$out" in
"sysmeasure $version (OTF2 "*")") ;;
*) fail "--version says '$out', expected 'sysmeasure $version (OTF2 ...)'" ;;
esac
[ "$("$SM" -V)" = "$out" ] || fail "-V differs from --version"

echo "sysmeasure-avail:"
names=$(sed -n 's/^SM_CONFIG_VAR([^,]*, *\([A-Z0-9_]*\),.*/\1/p' "$DEF")
[ -n "$names" ] || fail "no variable found in $DEF"
"$AVAIL" >avail.txt 2>avail.err || fail "sysmeasure-avail: exit status $?"
[ ! -s avail.err ] || fail "sysmeasure-avail wrote on stderr: $(cat avail.err)"
for n in $names; do
    if grep -q -e "^SYSMEASURE_$n\$" avail.txt; then
        echo "  lists SYSMEASURE_$n"
    else
        fail "sysmeasure-avail does not list SYSMEASURE_$n"
    fi
done
grep -q '^This build' avail.txt || fail "sysmeasure-avail has no 'This build' section"
# The current value and its source.
SYSMEASURE_BUFFER_SIZE=1g "$AVAIL" | grep -q -F 'value:    1G (environment)' ||
    fail "sysmeasure-avail does not show SYSMEASURE_BUFFER_SIZE=1g as '1G (environment)'"
# A bad environment: a warning, then the defaults.
SYSMEASURE_FOO=1 "$AVAIL" >avail.txt 2>avail.err || fail "sysmeasure-avail failed on a bad environment"
grep -q 'warning: unknown variable SYSMEASURE_FOO' avail.err ||
    fail "sysmeasure-avail does not warn about SYSMEASURE_FOO"
"$AVAIL" --format=man | head -n 1 | grep -q '^\.SH CONFIGURATION VARIABLES$' ||
    fail "sysmeasure-avail --format=man does not start with .SH CONFIGURATION VARIABLES"
n_json=$("$AVAIL" --format=json | grep -c '"env": "SYSMEASURE_')
[ "$n_json" -eq "$(echo "$names" | wc -l)" ] || fail "sysmeasure-avail --format=json has $n_json variables"
expect_error 2 "'xml'" -- "$AVAIL" --format=xml
if "$AVAIL" --format=markdown | diff -u "$SM_SRCDIR/doc/configuration.md" - >md.diff; then
    echo "  doc/configuration.md is current"
else
    cat md.diff
    fail "doc/configuration.md is not current: run sysmeasure-avail --format=markdown > doc/configuration.md"
fi

echo "running programs:"
if [ -e "$SM_BUILDDIR/.libs/libsysmeasure.so" ]; then
    "$SM" -o "$work/out-true" -- /bin/true
    rc=$?
    [ $rc -eq 0 ] || fail "sysmeasure -- /bin/true: exit status $rc"
    "$SM" -o "$work/out-exit3" /bin/sh -c 'exit 3'
    rc=$?
    [ $rc -eq 3 ] || fail "sysmeasure /bin/sh -c 'exit 3': exit status $rc, expected 3"
    "$SM" -o "$work/out-marker" ./marker
    [ -e RAN ] || fail "sysmeasure ./marker: the program did not run"
    # What the program sees; options after the program are its own.
    # shellcheck disable=SC2016
    got=$("$SM" -o out-env --no-profile --buffer-size=128m /bin/sh -c \
        'echo "$SYSMEASURE_ENABLE $SYSMEASURE_PROFILE $SYSMEASURE_BUFFER_SIZE $SYSMEASURE_OUTPUT $1"' \
        sh --foo)
    [ "$got" = "yes no 128M $work/out-env --foo" ] ||
        fail "the program saw '$got', expected 'yes no 128M $work/out-env --foo'"
    # shellcheck disable=SC2016
    got=$(LD_PRELOAD=/nonexistent/other.so "$SM" -o out-env /bin/sh -c 'echo "$LD_PRELOAD"' 2>/dev/null)
    case "$got" in
    /*/libsysmeasure.so:/nonexistent/other.so) ;;
    *) fail "LD_PRELOAD is '$got', expected our library then /nonexistent/other.so" ;;
    esac
    "$SM" -v -o "$work/out-v" /bin/true 2>err.txt
    grep -q -F "sysmeasure: running /bin/true (trace: yes, profile: yes, output: $work/out-v)" err.txt ||
        fail "sysmeasure -v does not say what it runs: $(cat err.txt)"
    # --papi-optional: the program runs, one warning names what is dropped.
    rm -f RAN
    "$SM" --papi-optional --papi PAPI_NO_SUCH -o "$work/out-papi" ./marker 2>err.txt ||
        fail "sysmeasure --papi-optional: exit status $?"
    [ -e RAN ] || fail "sysmeasure --papi-optional: the program did not run"
    grep -q "warning: --papi: .*PAPI_NO_SUCH.*running without them" err.txt ||
        fail "sysmeasure --papi-optional does not name the dropped event: $(cat err.txt)"
else
    echo "  note: $SM_BUILDDIR/.libs/libsysmeasure.so is not built: only the missing library is checked"
    expect_error 2 "libsysmeasure.so" -- "$SM" -o "$work/out-true" -- /bin/true
fi

if [ $failures -ne 0 ]; then
    echo "$failures failure(s); files in $work"
    exit 1
fi
cd .. && rm -rf "$work"
echo "all launcher checks passed"
exit 0
