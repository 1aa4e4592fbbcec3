# Shared by the bench scripts (sourced, POSIX sh): the alternating rounds
# that put each kind of run under the same machine load, and the medians.
#   . "$(dirname "$0")/bench_lib.sh"

# bench_rounds ROUNDS FN KIND...: ROUNDS rounds; each calls FN KIND ROUND
# for every KIND in turn.
bench_rounds() {
    _bench_n=$1 _bench_fn=$2
    shift 2
    _bench_r=0
    while [ "$_bench_r" -lt "$_bench_n" ]; do
        for _bench_k in "$@"; do
            "$_bench_fn" "$_bench_k" "$_bench_r"
        done
        _bench_r=$((_bench_r + 1))
    done
}

# bench_mid: the median of the numbers on stdin, one a line.
bench_mid() {
    sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'
}

# bench_median KEY FILE: the median of the values of FILE's "KEY value" lines.
bench_median() {
    awk -v k="$1" '$1 == k {print $2}' "$2" | bench_mid
}

# bench_added A B [FORMAT]: A - B, signed (default %+.1f).
bench_added() {
    echo "$1 $2" | awk -v f="${3:-%+.1f}" '{printf f, $1 - $2}'
}

# bench_load: the machine's load averages (1, 5, 15 min) and its CPUs, for
# the report (figures from a loaded machine say so).
bench_load() {
    echo "load $(cut -d' ' -f1-3 /proc/loadavg) on $(getconf _NPROCESSORS_ONLN) CPUs"
}
