/* The timeline's binning alone, as the OTF2 writer feeds it (one enter or
 * leave per event), for bench/bench_report.sh: N events on one location of
 * nested regions (user > MPI) spread over SPAN_S seconds, then the part
 * serialised and reduced to timeline.json.  Prints "bin_ns_per_event X"
 * (the fastest of REPS), "base_ns_per_event B" (the same loop calling a
 * function that does nothing, same run: the loop's own cost) and
 * "timeline_json_ms Y".
 *
 *   bench-timeline N REPS DIR */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "core/location.h"
#include "writers/timeline.h"

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* The baseline's call: not inlined, so the loop stays a loop of calls. */
__attribute__((noinline)) static void sm_bench_nothing(sm_timeline_t *t, uint64_t ns, int kind)
{
    __asm__ volatile("" : : "r"(t), "r"(ns), "r"(kind) : "memory");
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: bench-timeline N REPS DIR\n");
        return 2;
    }
    long n = atol(argv[1]), reps = atol(argv[2]);
    const uint64_t t0 = 1000000000ull, span = 10000000000ull; /* 10 s of run */
    uint64_t step = span / (uint64_t)(n > 0 ? n : 1);
    double best = 0, base = 0, json_ms = 0;
    for (long r = 0; r < reps; r++) {
        sm_timeline_t *t = sm_timeline_new();
        if (!t)
            return 1;
        double a = now_ns();
        sm_timeline_begin(t, 0, SM_LOCATION_CPU_THREAD, "Thread 0 (main)");
        uint64_t ns = t0;
        for (long i = 0; i < n; i += 4) { /* enter user, enter MPI, leave, leave */
            sm_timeline_enter(t, ns, SM_TL_USER);
            sm_timeline_enter(t, ns += step, SM_TL_MPI);
            sm_timeline_leave(t, ns += step);
            sm_timeline_leave(t, ns += step);
            ns += step;
        }
        sm_timeline_end(t);
        sm_timeline_end_process(t);
        double per = (now_ns() - a) / (double)n;
        if (r == 0 || per < best)
            best = per;
        a = now_ns();
        ns = t0;
        for (long i = 0; i < n; i += 4) {
            sm_bench_nothing(t, ns, SM_TL_USER);
            sm_bench_nothing(t, ns += step, SM_TL_MPI);
            sm_bench_nothing(t, ns += step, 0);
            sm_bench_nothing(t, ns += step, 0);
            ns += step;
        }
        per = (now_ns() - a) / (double)n;
        if (r == 0 || per < base)
            base = per;
        const uint8_t *blob = t->out.p;
        uint64_t len = t->out.len;
        a = now_ns();
        if (sm_timeline_write_json(argv[3], NULL, 1, &blob, &len, t0, t0 + span) != 0)
            return 1;
        json_ms = (now_ns() - a) / 1e6;
        sm_timeline_free(t);
    }
    printf("bin_ns_per_event %.2f\nbase_ns_per_event %.2f\ntimeline_json_ms %.2f\n", best, base,
           json_ms);
    return 0;
}
