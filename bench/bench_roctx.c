/* Cost of a ROCTx range: roctxRangePushA + roctxRangePop against a user-API
 * region pair (sysmeasure_push_region/pop_region by name, and enter/leave by
 * handle), in one run, timed in-process; plus a mark and a start/stop range
 * that crosses no thread.  Linked with -lroctx64 (sysmeasure's) as an
 * application would; run under the launcher the calls are measured, run
 * alone they only pass through.
 *
 *   bench-roctx [pairs]     prints "name ns_per_pair" lines */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "sysmeasure.h"

int roctxRangePushA(const char *message);
int roctxRangePop(void);
void roctxMarkA(const char *message);
uint64_t roctxRangeStartA(const char *message);
void roctxRangeStop(uint64_t id);

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

enum { ROCTX, USER_NAME, USER_HANDLE, MARK, STARTSTOP, N };
static const char *const names[N] = {"roctx_push_pop", "user_push_pop", "user_enter_leave",
                                     "roctx_mark", "roctx_start_stop"};

int main(int argc, char **argv)
{
    long pairs = argc > 1 ? atol(argv[1]) : 200000;
    sysmeasure_region_t r = sysmeasure_region_define("bench user handle", __FILE__, __LINE__);
    double best[N];
    for (int k = 0; k < N; k++)
        best[k] = 1e30;
    /* Interleaved rounds, best of each: the same machine state for all. */
    for (int rep = 0; rep < 5; rep++) {
        for (int k = 0; k < N; k++) {
            long n = k == STARTSTOP ? pairs / 10 : pairs; /* each range is a trace lane entry */
            double t0 = now_ns();
            for (long i = 0; i < n; i++) {
                switch (k) {
                case ROCTX:
                    roctxRangePushA("bench roctx");
                    roctxRangePop();
                    break;
                case USER_NAME:
                    sysmeasure_push_region("bench user");
                    sysmeasure_pop_region("bench user");
                    break;
                case USER_HANDLE:
                    sysmeasure_region_enter(r);
                    sysmeasure_region_leave(r);
                    break;
                case MARK: roctxMarkA("bench mark"); break;
                case STARTSTOP: roctxRangeStop(roctxRangeStartA("bench range")); break;
                }
            }
            double t = (now_ns() - t0) / (double)n;
            best[k] = t < best[k] ? t : best[k];
        }
    }
    for (int k = 0; k < N; k++)
        printf("%s %.2f\n", names[k], best[k]);
    return 0;
}
