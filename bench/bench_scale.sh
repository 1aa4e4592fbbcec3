#!/bin/sh
# bench-scale: the end of a run of P = 1,024, 2,048, ... 65,536 simulated
# ranks in one process (bench/bench-scale; the harness is tests/sim/): the
# real unification of the definitions (sm_unify_set) and the real profile
# step on synthetic per-rank data (tests/sim/sim_job.h), every rank a
# coroutine on one core talking through sm_procs_t.
#
#   sh bench/bench_scale.sh BUILDDIR
#   environment: SM_SCALE_MAX (65536), SM_SCALE_STOP_S (60: no larger P
#   after a step whose process took longer), SM_SCALE_MEM_GB (12),
#   SM_SCALE_LIVE_MAX (4096: up to there, a last table replays live.c's other
#   collectives), SM_SCALE_SEED, SM_SCALE_TABLES ("every root bounded")
#
# Columns (times in s, CPU time of the one core unless said):
#   wall_s   the whole simulation, wall clock (on a loaded machine, > proc_s)
#   proc_s   its CPU time (user + system): every rank's work, one after the other
#   crit_s   critical path at the end: the longest chain of dependent work and
#            messages, each rank's own CPU time on it, network free; what the
#            real job would wait for with one core per rank
#   net_s    the same with 2 us per message and 10 GB/s per link
#   u_*      the unification: u_crit critical path at its end; u_root, u_leaf
#            (rank P-1), u_max (at: which rank) one rank's own CPU time in it;
#            u_rxMiB the bytes rank 0 received in it
#   p_*      the profile step (sm_tree_gather + sm_profile_summary_from_blobs
#            today): p_crit critical path at its end, p_root rank 0's CPU
#            time, p_rxMiB the bytes rank 0 received
#   u_pkMiB  rank 0's peak of live allocated bytes during the unification;
#   pk_MiB   over the whole exchange (malloc'd bytes attributed to the rank
#            running, messages to their receiver)
#   rss_MiB  the simulation's own peak (all ranks' data at once)
#   union    definitions in the union (strings, regions, communicators,
#            metrics); paths: call paths of the job's summary
# Then the time per doubling of P: the increase of crit_s (and of u_crit,
# p_crit) from P/2 to P, and the ratio.  Two tables: the union broadcast to
# every rank (sm_unify, as live.c does), and the union at rank 0 only with
# the maps coming down the tree (SM_UNIFY_ROOT_ONLY, --root-only); then the
# unification alone on definitions that do not grow with P (--bounded
# --unify-only: what the tree itself costs).  A table
# stops after a P whose simulation took more than SM_SCALE_STOP_S (60) s of
# CPU, or before one whose memory would pass SM_SCALE_MEM_GB (12) GiB.
set -u
b=${1:-.}/bench/bench-scale
max=${SM_SCALE_MAX:-65536}
stop=${SM_SCALE_STOP_S:-60}
mem_gb=${SM_SCALE_MEM_GB:-12}
live_max=${SM_SCALE_LIVE_MAX:-4096}
seed=${SM_SCALE_SEED:-29}
out=$(mktemp)
trap 'rm -f "$out"' EXIT

# The line of the run with the shortest critical path of $runs runs (each
# its own process: its memory figures its own).
best() {
    k=0 bestline=
    while [ "$k" -lt "$runs" ]; do
        l=$(timeout 900 "$b" "$@") || return 1
        if [ -z "$bestline" ] || awk -v a="$l" -v b="$bestline" \
            'BEGIN { split(a, x); split(b, y); exit !(x[4] < y[4]) }'; then
            bestline=$l
        fi
        k=$((k + 1))
    done
    echo "$bestline"
}

# One table: P = 1,024 ... max, the best of $1 runs each, with the options
# that follow.
table() {
    runs=$1
    shift
    : >"$out"
    "$b" --header
    p=1024
    while [ "$p" -le "$max" ]; do
        if ! line=$(best "$p" --seed "$seed" "$@"); then
            echo "P = $p: failed or ran past 900 s; no larger P"
            break
        fi
        echo "$line" | tee -a "$out"
        proc=$(echo "$line" | awk '{print $3}')
        if awk -v t="$proc" -v s="$stop" 'BEGIN { exit !(t > s) }'; then
            echo "P = $p took $proc s of CPU (> $stop s): no larger P"
            break
        fi
        # The simulation's memory at 2P, from its growth over the last
        # doubling: not started beyond SM_SCALE_MEM_GB.
        next=$(awk -v gb="$mem_gb" 'NR > 1 { g = $20 / prev } { prev = $20; last = $20 }
            END { if (NR < 2) g = 2; n = last * g; if (n > gb * 1024) printf "%.0f", n }' "$out")
        if [ -n "$next" ]; then
            echo "P = $((p * 2)) would hold about $next MiB (> $mem_gb GiB, SM_SCALE_MEM_GB): no larger P"
            break
        fi
        p=$((p * 2))
    done
    echo
    echo "per doubling of P: increase (and ratio) of the critical path at the end, of the"
    echo "unification's and of the profile step's, and of the simulation's CPU time"
    awk 'BEGIN { printf "%6s %17s %17s %17s %17s\n", "ranks", "crit_s", "u_crit", "p_crit-u_crit", "proc_s" }
         { c = $4; u = $7; pp = $14 - $7; t = $3
           if (NR > 1)
               printf "%6d %+8.4f (x%4.2f) %+8.4f (x%4.2f) %+8.4f (x%4.2f) %+8.2f (x%4.2f)\n",
                      $1, c - pc, c / pc, u - pu, u / pu, pp - ppp, pp / ppp, t - pt, t / pt
           pc = c; pu = u; ppp = pp; pt = t }' "$out"
}

tables=${SM_SCALE_TABLES:-every root bounded}
echo "bench-scale: $(uname -n), $(nproc) cores, $(date -u +%Y-%m-%d), seed $seed"
for t in $tables; do
    echo
    case $t in
    every)
        echo "== the union to every rank (sm_unify, what live.c does today)"
        table 1 ;;
    root)
        echo "== the union at rank 0 only, maps down the tree (--root-only; best of 2 runs)"
        table 2 --root-only ;;
    bounded)
        echo "== the unification alone, rank 0 only, definitions that do not grow with P"
        echo "   (no pairwise communicators, teams or regions of one rank: --bounded --unify-only;"
        echo "   each line the best of 3 runs, as ms of the VM's stolen time land on some rank)"
        table 3 --root-only --bounded --unify-only ;;
    esac
done

if [ "$live_max" -ge 1024 ]; then
    echo
    echo "live.c's other collectives (job info, communication matrix, totals, metrics),"
    echo "replayed with its message sizes after the profile step:"
    p=1024
    while [ "$p" -le "$live_max" ] && [ "$p" -le "$max" ]; do
        timeout 900 "$b" "$p" --seed "$seed" --root-only --live | grep '^live' || break
        p=$((p * 2))
    done
fi
