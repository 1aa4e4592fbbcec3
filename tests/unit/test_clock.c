/* Clock: source choice, monotonicity, calibration against CLOCK_MONOTONIC. */
#include <stdint.h>
#include <time.h>

#include "core/clock.h"
#include "core/config.h"
#include "unit.h"

static void sleep_ms(long ms)
{
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

static void check_source(int requested)
{
    int used = sm_clock_init(requested);
    if (requested == SM_CLOCK_MONOTONIC)
        CHECK(used == SM_CLOCK_MONOTONIC);
    if (requested == SM_CLOCK_AUTO)
        CHECK(used == (sm_clock_tsc_invariant() ? SM_CLOCK_TSC : SM_CLOCK_MONOTONIC));
    CHECK_STR(sm_clock_source_name(), used == SM_CLOCK_TSC ? "tsc" : "monotonic");

    /* Never decreases on one thread. */
    uint64_t prev = sm_clock_now(), backwards = 0;
    for (int i = 0; i < 1000000; i++) {
        uint64_t t = sm_clock_now();
        backwards += t < prev;
        prev = t;
    }
    CHECK_EQ_U(backwards, 0);

    /* A 50 ms interval measured in ticks agrees with CLOCK_MONOTONIC. */
    uint64_t a = sm_clock_now(), ma = sm_clock_monotonic_ns();
    sleep_ms(50);
    uint64_t b = sm_clock_now(), mb = sm_clock_monotonic_ns();
    sm_clock_finish();
    double ticks_ns = (double)(b - a) * sm_clock_ns_per_tick();
    CHECK_NEAR(ticks_ns, (double)(mb - ma), 0.005 * (double)(mb - ma) + 20000);
    /* Converted timestamps land on CLOCK_MONOTONIC (within 50 us). */
    uint64_t t = sm_clock_now(), m = sm_clock_monotonic_ns();
    CHECK_NEAR((double)sm_clock_to_ns(t), (double)m, 50000);
    CHECK(sm_clock_ticks_per_second() > 1e8);
    if (used == SM_CLOCK_MONOTONIC)
        CHECK_NEAR(sm_clock_ns_per_tick(), 1.0, 0);
    /* Init is at most a few ms in the past; the wall clock agrees. */
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    uint64_t real_now = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
    uint64_t real_at_t = sm_clock_realtime_at_init_ns() + (sm_clock_to_ns(t) - sm_clock_monotonic_at_init_ns());
    CHECK_NEAR((double)real_at_t, (double)real_now, 5e6);
}

/* A run too short for a measured rate (finish right after init): the
 * rate, stated or measured over the short interval, still converts a
 * later interval to CLOCK_MONOTONIC's length. */
static void check_short_run(void)
{
    sm_clock_init(SM_CLOCK_AUTO);
    sm_clock_finish();
    CHECK(sm_clock_ticks_per_second() > 1e8);
    uint64_t a = sm_clock_now(), ma = sm_clock_monotonic_ns();
    sleep_ms(30);
    uint64_t b = sm_clock_now(), mb = sm_clock_monotonic_ns();
    double ticks_ns = (double)(b - a) * sm_clock_ns_per_tick();
    CHECK_NEAR(ticks_ns, (double)(mb - ma), 0.005 * (double)(mb - ma) + 20000);
}

int main(void)
{
    check_short_run();
    check_source(SM_CLOCK_AUTO);
    check_source(SM_CLOCK_MONOTONIC);
#ifdef SM_CLOCK_HAVE_TSC
    if (sm_clock_tsc_invariant())
        check_source(SM_CLOCK_TSC);
#endif
    return UNIT_RESULT();
}
