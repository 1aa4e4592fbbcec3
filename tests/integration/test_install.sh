#!/bin/sh
# make install (staged with DESTDIR) installs the programs, the library, the
# header, the pkg-config file and the man page; the installed launcher finds
# its own library; a program built against the installed header and library
# is measured; the library exports only the public API.
set -u
fail=0
no() { echo "FAIL: $*"; fail=1; }
stage="$(pwd)/install-stage"
rm -rf "$stage"
make -s -C "$SM_BUILDDIR" install DESTDIR="$stage" >install.log 2>&1 || { cat install.log; no "make install"; exit 1; }
prefix=$(sed -n 's/^prefix = //p' "$SM_BUILDDIR/Makefile")
libdir=$(sed -n 's/^libdir = //p' "$SM_BUILDDIR/Makefile" | sed "s|\${exec_prefix}|$prefix|")
root="$stage$prefix"
for f in bin/sysmeasure bin/sysmeasure-avail bin/sysmeasure-report bin/sysmeasure-instrument bin/sysmeasure-cc \
         bin/sysmeasure-c++ bin/sysmeasure-fortran bin/sysmeasure-score bin/sysmeasure-attach bin/sysmeasure-stacks \
         include/sysmeasure.h share/man/man1/sysmeasure.1 \
         bin/sysmeasure-causal share/doc/sysmeasure/manual.md share/doc/sysmeasure/configuration.md; do
    [ -e "$root/$f" ] || no "$f not installed"
done
for f in libsysmeasure.so libsysmeasure-causal.so pkgconfig/sysmeasure.pc; do
    [ -e "$stage$libdir/$f" ] || no "$libdir/$f not installed"
done
grep -q 'SYSMEASURE_BUFFER_SIZE' "$root/share/man/man1/sysmeasure.1" || no "man page lacks the variables"
# Every installed tool has its man page, which man renders.
for t in "$root"/bin/*; do
    page="$root/share/man/man1/$(basename "$t").1"
    if [ ! -s "$page" ]; then
        no "$(basename "$t") has no man page in share/man/man1"
    elif command -v groff >/dev/null 2>&1; then
        w=$(groff -man -Tutf8 -ww -z "$page" 2>&1)
        [ -z "$w" ] || no "groff warns on $(basename "$page"): $w"
    fi
done
grep -q -- '-lsysmeasure' "$stage$libdir/pkgconfig/sysmeasure.pc" || no "pkg-config file"

# Only the public API (and the pthread_create wrapper, the OMPT tool's
# entry point, the compiler instrumentation's hooks, the wrappers that see
# how the process ends: exit, _exit, _Exit, quick_exit, the return from
# main, daemon(), whose child carries the measurement on, the program's
# signal dispositions, and the waits that call-stack sampling keeps from
# EINTR) is exported.
guarded='nanosleep|clock_nanosleep|sleep|usleep|poll|ppoll|select|pselect|epoll_wait|epoll_pwait'
extra=$(nm -D --defined-only "$stage$libdir/libsysmeasure.so" | awk '{print $3}' |
        grep -v -E "^(sysmeasure_|pthread_create\$|ompt_start_tool\$|__cyg_profile_func_(enter|exit)\$|_init\$|_fini\$|($guarded)\$)" |
        grep -v -E '^(exit|_exit|_Exit|quick_exit|daemon|__libc_start_main|sigaction|signal|sysv_signal|bsd_signal)$' || true)
grep -q "^    libdir='$libdir'" "$root/bin/sysmeasure-instrument" || no "sysmeasure-instrument does not name the installed libdir"
[ -z "$extra" ] || no "unexpected exported symbols: $extra"

# Build against the installed header and library, run under the installed launcher.
cat > app.c <<'EOC'
#include <sysmeasure.h>
int main(void) { sysmeasure_push_region("installed"); sysmeasure_pop_region("installed"); return 0; }
EOC
cc -I"$root/include" app.c -L"$stage$libdir" -lsysmeasure -o app || no "compile against installed header"
LD_LIBRARY_PATH="$stage$libdir" "$root/bin/sysmeasure" --output out ./app 2>run.err || { cat run.err; no "installed launcher run"; }
grep -q 'installed' out/profile.txt 2>/dev/null || no "region missing from profile.txt"
env LD_PRELOAD= "$root/bin/sysmeasure-avail" | grep -q SYSMEASURE_TRACE || no "installed sysmeasure-avail"
# --causal: the installed launcher finds and preloads libsysmeasure-causal.so.
LD_LIBRARY_PATH="$stage$libdir" "$root/bin/sysmeasure" --causal --no-trace --output out-causal \
    ./app 2>causal.err || { cat causal.err; no "installed launcher, --causal"; }
grep -q 'libsysmeasure-causal.so not found' causal.err && no "--causal: $(cat causal.err)"
# The Python module, which the installed launcher puts on PYTHONPATH.
pkglibdir=$(sed -n 's/^pkglibdir = //p' "$SM_BUILDDIR/Makefile" | sed -e "s|\\\$(libdir)|$libdir|" -e "s|\\\${libdir}|$libdir|")
[ -e "$stage$pkglibdir/python/sysmeasure/__init__.py" ] || no "$pkglibdir/python/sysmeasure not installed"
if [ -x /usr/bin/python3 ] && [ "$pkglibdir" = "$prefix/lib/sysmeasure" ]; then
    LD_LIBRARY_PATH="$stage$libdir" "$root/bin/sysmeasure" --output out-py /usr/bin/python3 -c \
        'import sysmeasure; print(sysmeasure.__file__, sysmeasure.is_active())' >py.out 2>py.err ||
        { cat py.err; no "installed launcher, python3"; }
    grep -q "^$stage$pkglibdir/python/sysmeasure/__init__.py True" py.out ||
        no "import sysmeasure under the installed launcher: $(cat py.out)"
fi
rm -rf "$stage"
exit $fail
