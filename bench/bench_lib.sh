# Shared by the bench scripts (sourced, POSIX sh): the alternating rounds
# that put each kind of run under the same machine load, and the medians.
#   . "$(dirname "$0")/bench_lib.sh"

# bench_rounds ROUNDS FN KIND...: ROUNDS rounds; each calls FN KIND ROUND
# for every KIND in turn, in the given order in even rounds and in the
# reverse order in odd ones (no kind always runs first or last, right
# after the same neighbour).
bench_rounds() {
    _bench_n=$1 _bench_fn=$2
    shift 2
    _bench_rev=
    for _bench_k in "$@"; do _bench_rev="$_bench_k $_bench_rev"; done
    _bench_r=0
    while [ "$_bench_r" -lt "$_bench_n" ]; do
        if [ $((_bench_r % 2)) -eq 0 ]; then _bench_ks="$*"; else _bench_ks=$_bench_rev; fi
        for _bench_k in $_bench_ks; do
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

# bench_pin: a command prefix that keeps a one-thread benchmark on one CPU
# (SM_BENCH_CPU, default the third; nothing without taskset or with fewer
# than 4 CPUs): on a shared host the scheduler moving it costs more than
# the differences measured.  Only for programs that run one thread.
bench_pin() {
    _bench_cpu=${SM_BENCH_CPU:-2}
    [ "$(getconf _NPROCESSORS_ONLN)" -ge 4 ] || [ -n "${SM_BENCH_CPU:-}" ] || return 0
    taskset -c "$_bench_cpu" true 2>/dev/null && echo "taskset -c $_bench_cpu"
    return 0
}

# bench_now_ns: the wall clock in ns.
bench_now_ns() {
    date +%s%N
}

# bench_get FILE KEY: the median of FILE's "KEY value" lines ("-" when none).
bench_get() {
    _bench_v=$(awk -v k="$2" '$1 == k {print $2}' "$1" 2>/dev/null | bench_mid)
    echo "${_bench_v:--}"
}

# bench_exit_run FILE OUT CMD...: runs CMD, a program that prints
# "last_event_ns N" among its "key value" lines (bench-spill, bench-exit-mpi)
# with its output folder at OUT; appends those lines to FILE, then exit_ms
# (from its last event to the end of the process) and, when OUT/traces
# exists, trace_mb.  OUT is removed before and after.
bench_exit_run() {
    _bench_file=$1 _bench_out=$2
    shift 2
    rm -rf "$_bench_out"
    "$@" >"$_bench_file.stdout" 2>/dev/null
    _bench_end=$(bench_now_ns)
    cat "$_bench_file.stdout" >>"$_bench_file"
    _bench_last=$(awk '$1 == "last_event_ns" {print $2}' "$_bench_file.stdout")
    [ -n "$_bench_last" ] && echo "exit_ms $(( (_bench_end - _bench_last) / 1000000 ))" >>"$_bench_file"
    if [ -d "$_bench_out/traces" ]; then
        echo "trace_mb $(du -sm "$_bench_out/traces" | cut -f1)" >>"$_bench_file"
    fi
    rm -rf "$_bench_out" "$_bench_file.stdout"
}

# With the script's scratch folder in $work (results in $work/NAME, the
# program's output folder in $work/out):
# bench_run NAME CMD...: bench_exit_run into $work/NAME.
bench_run() {
    _bench_name=$1
    shift
    bench_exit_run "$work/$_bench_name" "$work/out" "$@"
}
# bench_value NAME KEY: the median of KEY in $work/NAME ("-" when none).
bench_value() {
    bench_get "$work/$1" "$2"
}
