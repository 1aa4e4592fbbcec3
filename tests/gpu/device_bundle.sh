#!/bin/sh
# Prepares a folder to carry to a GPU host that has CUDA, Open MPI and
# python3 but none of OTF2, PAPI, libdw, libunwind or LLVM libomp (the H100
# host: Ubuntu 24.04), so that `make check-gpu` and `make bench-cuda` run
# there without building anything (and so do `make bench-region`,
# bench-mpi, bench-omp, bench-spill and bench-exit, for their figures there):
#   tests/gpu/device_bundle.sh DEST        (run inside a sysmeasure checkout)
# It copies the checkout's files (tracked and untracked, not ignored) to the
# fixed path /tmp/smdev-NAME (NAME: DEST's last part without ".device-"),
# builds there (the benchmarks of bench/ too), and packs that tree into
# DEST/tree.tar.gz: every absolute path the build wrote stays true once the
# host unpacks it to the same path.
# The Debian packages of the libraries the build needs that are neither the C
# runtime, nor Open MPI's, nor CUDA's are downloaded and packed as
# DEST/debroot.tar.gz (dpkg -x), with the OTF2 Python reader (pure ctypes:
# it loads with any python3).  DEST/env.sh unpacks both (once) and sets
# LD_LIBRARY_PATH, PYTHONPATH, PATH and Open MPI's run-as-root variables;
# it leaves SM_TREE naming the build tree.  On the host:
#   . .device-NAME/env.sh && cd "$SM_TREE" && make check-gpu
# Extra packages to carry: DEVICE_BUNDLE_DEBS="pkg1 pkg2".
set -e
[ $# -eq 1 ] || { echo "usage: $0 DEST" >&2; exit 2; }
mkdir -p "$1"
dest=$(cd "$1" && pwd)
name=$(basename "$dest" | sed 's/^\.device-//; s/^\.//')
tree=/tmp/smdev-$name
src=$(git rev-parse --show-toplevel)
jobs=${JOBS:-2}

if [ -f "$tree/config.status" ] && [ -z "${DEVICE_BUNDLE_FRESH:-}" ]; then
    # A tree from an earlier call: copy only the files whose content changed
    # (they get the time of the copy), and let make rebuild what depends on
    # them.  DEVICE_BUNDLE_FRESH=1: start over.
    echo "== updating $tree from $src"
    (cd "$src" && git ls-files -co --exclude-standard | while IFS= read -r f; do
        [ -f "$f" ] && ! cmp -s "$f" "$tree/$f" && cp --parents "$f" "$tree/" && echo "   $f"; done) || true
else
    echo "== copying $src to $tree"
    rm -rf "$tree"
    mkdir -p "$tree"
    (cd "$src" && git ls-files -z -co --exclude-standard |
        tar --null -T - --ignore-failed-read -cf - 2>/dev/null) | tar -C "$tree" -xf -
    (cd "$tree" && autoreconf -fi >/dev/null 2>&1 && ./configure -q ${DEVICE_BUNDLE_CONFIGURE:-} >configure.out 2>&1) ||
        { echo "device_bundle: configure in $tree failed (see $tree/configure.out)" >&2; exit 1; }
fi
echo "== building in $tree"
# config.status leaves an unchanged sm_build.h older than its stamp: make
# would then rebuild its dependants on every run, on the GPU host too
# (which lacks papi.h).  Build them here once.
(cd "$tree" && if [ -f sm_build.h ] && [ stamp-h1 -nt sm_build.h ]; then touch sm_build.h; fi)
(cd "$tree" && make -s -j"$jobs" all >/dev/null &&
    make -s -j"$jobs" tests/gpu/gpu_app tests/gpu/other_tool.so tests/gpu/counters_app tests/gpu/mt_counters \
        tests/gpu/gpu_memory_app bench/bench-region \
        $(grep -q '^am__append_[0-9]* = tests/gpu/gpu_app_mpi' "$tree/Makefile" && echo tests/gpu/gpu_app_mpi) >/dev/null) ||
    { echo "device_bundle: the build in $tree failed (rerun make there)" >&2; exit 1; }
# The benchmarks of bench/ (make bench-region, bench-mpi, bench-omp,
# bench-spill, bench-exit run on the host without a compiler of ours; those
# this configuration cannot build are left out).
(cd "$tree" && make -s -k -j"$jobs" bench/bench-spill bench/bench-mpi bench/bench-pingpong \
    bench/bench-exit-mpi bench/bench-scale-mpi bench/bench-omp bench/bench-omp-tool.so >/dev/null 2>&1) ||
    echo "device_bundle: warning: some benchmarks were not built in $tree" >&2
# The dependency files name system headers (/usr/include/papi.h, otf2/...)
# that the host lacks: make would rebuild every object that includes one.
# Only the tree's own files stay prerequisites.
find "$tree" -path '*/.deps/*' -type f -name '*.P*o' -exec sed -i -e 's@ /usr/[^ ]*@@g' -e '\@^/usr/.*:$@d' {} +
(cd "$tree" && make -q all) ||
    echo "device_bundle: warning: make still finds work in $tree; the host may try to rebuild" >&2
[ -x "$tree/tests/gpu/gpu_app" ] ||
    { echo "device_bundle: no tests/gpu/gpu_app: configure found no CUDA toolkit with nvcc" >&2; exit 1; }

echo "== finding the libraries to carry"
# Every shared object the build made or links, resolved here; keep the
# packages that own them, minus those the host has (C runtime, compilers'
# runtimes, Open MPI and what it needs, compression libraries).
elfs=$( (find "$tree" -maxdepth 1 -type f -perm -u+x; find "$tree/.libs" "$tree/tests" "$tree/bench" \
    -type f \( -name '*.so' -o -name '*.so.*' -o -perm -u+x \)) |
    while IFS= read -r f; do [ "$(head -c4 "$f" | tail -c3)" = ELF ] && echo "$f"; done)
# and what sysmeasure opens only when asked (PAPI counters, LLVM's OpenMP)
libs_dlopen=$(ls /usr/lib/x86_64-linux-gnu/libpapi.so.[0-9]* /usr/lib/x86_64-linux-gnu/libpfm.so.[0-9]* \
    /usr/lib/x86_64-linux-gnu/libomp.so.5 2>/dev/null || true)
libs=$(for f in $elfs; do ldd "$f" 2>/dev/null; done | awk '/=> \//{print $3}' | sort -u)
owners() { for l in "$@"; do dpkg -S "$(readlink -f "$l")" 2>/dev/null || dpkg -S "$l" 2>/dev/null || true; done |
    cut -d: -f1 | sort -u; }
have_host=$(owners $(for m in /usr/lib/x86_64-linux-gnu/libmpi.so.40 /usr/lib/x86_64-linux-gnu/libmpi_cxx.so.40; do
    [ -e "$m" ] && ldd "$m" | awk '/=> \//{print $3}'; done))
base="libc6 libstdc++6 libgcc-s1 zlib1g liblzma5 libzstd1 libbz2-1.0 libcap2 libselinux1 libpcre2-8-0
      libcrypt1 libtinfo6 libssl3 libgomp1 libgfortran5 libquadmath0 libudev1 libsystemd0 libgcrypt20
      libgpg-error0 liblz4-1 libffi8 libexpat1"
pkgs=
for p in $(owners $libs $libs_dlopen) python3-otf2 ${DEVICE_BUNDLE_DEBS:-}; do
    case " $(echo $base $have_host) " in *" $p "*) continue;; esac
    pkgs="$pkgs $p"
done
echo "   packages:$pkgs"
debs=$(mktemp -d)
(cd "$debs" && apt-get download $pkgs >/dev/null) ||
    { echo "device_bundle: apt-get download failed for:$pkgs" >&2; exit 1; }
rm -rf "$debs/root"
for d in "$debs"/*.deb; do dpkg -x "$d" "$debs/root"; done
rm -rf "$debs/root/usr/share/doc" "$debs/root/usr/share/man" "$debs/root/usr/share/lintian"
tar -C "$debs/root" -czf "$dest/debroot.tar.gz" .
rm -rf "$debs"
tar -C /tmp -czf "$dest/tree.tar.gz" --exclude=autom4te.cache --exclude=tests/gpu/work "smdev-$name"

cat >"$dest/env.sh" <<EOF
# . THIS_FILE: unpacks the sysmeasure build (to $tree) and the carried
# Debian libraries once, then sets the environment to use them.
_b=\$(cd "\$(dirname "\${BASH_SOURCE:-\$0}")" 2>/dev/null && pwd)
[ -f "\$_b/tree.tar.gz" ] || _b=\$(pwd)/.device-$name
if [ ! -d "$tree" ]; then tar -C /tmp -xzf "\$_b/tree.tar.gz"; fi
if [ ! -d "\$_b/root" ]; then mkdir -p "\$_b/root" && tar -C "\$_b/root" -xzf "\$_b/debroot.tar.gz"; fi
export SM_TREE=$tree
export LD_LIBRARY_PATH="\$_b/root/usr/lib/x86_64-linux-gnu:\$_b/root/lib/x86_64-linux-gnu\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
export PYTHONPATH="\$_b/root/usr/lib/python3/dist-packages\${PYTHONPATH:+:\$PYTHONPATH}"
export PATH="\$_b/root/usr/bin:/usr/local/cuda/bin:\$PATH"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# configure may have found a python3 of this machine only (pyenv): make uses the host's.
export MAKEFLAGS="\${MAKEFLAGS:+\$MAKEFLAGS }PYTHON3=\$(command -v python3)"
EOF
du -sh "$dest"/*.tar.gz
echo "== $dest ready: carry it, then: . $(basename "$dest")/env.sh && cd \$SM_TREE && make check-gpu"
