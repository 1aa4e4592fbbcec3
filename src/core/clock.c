/* Clock source selection and the two-point calibration of ticks to ns. */
#include "clock.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "config.h"

bool sm_clock_use_tsc;

static struct {
    uint64_t tick0, mono0, real0; /* first point */
    uint64_t tick1, mono1;        /* second point */
    double ns_per_tick;
    bool finished;
} sm_cal;

/* Read ticks and CLOCK_MONOTONIC as close together as we can: keep the pair
 * with the shortest bracket out of a few tries. */
static void sm_clock_pair(uint64_t *ticks, uint64_t *mono)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 8; i++) {
        uint64_t a = sm_clock_now();
        uint64_t m = sm_clock_monotonic_ns();
        uint64_t b = sm_clock_now();
        if (b - a < best) {
            best = b - a;
            *ticks = a + (b - a) / 2;
            *mono = m;
        }
    }
}

bool sm_clock_tsc_invariant(void)
{
#ifdef SM_CLOCK_HAVE_TSC
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return false;
    char line[4096];
    bool constant = false, nonstop = false;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5) != 0)
            continue;
        constant = strstr(line, " constant_tsc") != NULL;
        nonstop = strstr(line, " nonstop_tsc") != NULL;
        break;
    }
    fclose(f);
    return constant && nonstop;
#else
    return false;
#endif
}

int sm_clock_init(int requested)
{
    if (requested == SM_CLOCK_TSC)
        sm_clock_use_tsc = true;
    else if (requested == SM_CLOCK_MONOTONIC)
        sm_clock_use_tsc = false;
    else
        sm_clock_use_tsc = sm_clock_tsc_invariant();
#ifndef SM_CLOCK_HAVE_TSC
    sm_clock_use_tsc = false;
#endif
    struct timespec rt;
    sm_clock_pair(&sm_cal.tick0, &sm_cal.mono0);
    clock_gettime(CLOCK_REALTIME, &rt);
    sm_cal.real0 = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec -
                   (sm_clock_monotonic_ns() - sm_cal.mono0);
    sm_cal.ns_per_tick = 1.0;
    sm_cal.finished = false;
    return sm_clock_use_tsc ? SM_CLOCK_TSC : SM_CLOCK_MONOTONIC;
}

/* The TSC rate the CPU states, in Hz, or 0: CPUID leaf 0x15 (crystal clock
 * times the TSC/crystal ratio, Intel), else the hypervisor's timing leaf
 * 0x40000010 (TSC kHz; VMware, and KVM where it is offered). */
static double sm_clock_stated_tsc_hz(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    if (__get_cpuid_max(0, NULL) >= 0x15) {
        __cpuid_count(0x15, 0, a, b, c, d);
        if (a && b && c)
            return (double)c * (double)b / (double)a;
    }
    __cpuid(1, a, b, c, d);
    if (c & (1u << 31)) { /* running under a hypervisor */
        __cpuid(0x40000000, a, b, c, d);
        if (a >= 0x40000010) {
            __cpuid(0x40000010, a, b, c, d);
            if (a)
                return (double)a * 1e3;
        }
    }
#endif
    return 0;
}

/* The rate from the two points: exact over the run, whatever its length;
 * converted times are off by about the points' own uncertainty (tens of ns),
 * durations by that over the interval.  A run shorter than 10 ms takes the
 * rate the CPU states when it states one; one shorter than 1 ms that states
 * none waits for 1 ms to pass (no fixed wait otherwise). */
void sm_clock_finish(void)
{
    if (sm_cal.finished)
        return;
    if (!sm_clock_use_tsc) {
        sm_cal.ns_per_tick = 1.0;
        sm_cal.finished = true;
        return;
    }
    uint64_t elapsed = sm_clock_monotonic_ns() - sm_cal.mono0;
    double stated = elapsed < 10000000u ? sm_clock_stated_tsc_hz() : 0;
    if (!stated) {
        uint64_t until = sm_cal.mono0 + 1000000u;
        while (sm_clock_monotonic_ns() < until) {
            struct timespec pause = {0, 200000};
            nanosleep(&pause, NULL);
        }
    }
    sm_clock_pair(&sm_cal.tick1, &sm_cal.mono1);
    sm_cal.ns_per_tick =
        stated ? 1e9 / stated
               : (double)(sm_cal.mono1 - sm_cal.mono0) / (double)(sm_cal.tick1 - sm_cal.tick0);
    sm_cal.finished = true;
}

uint64_t sm_clock_to_ns(uint64_t ticks)
{
    double delta = ((double)(int64_t)(ticks - sm_cal.tick0)) * sm_cal.ns_per_tick;
    return (uint64_t)((int64_t)sm_cal.mono0 + (int64_t)(delta < 0 ? delta - 0.5 : delta + 0.5));
}

double sm_clock_ns_per_tick(void)
{
    return sm_cal.ns_per_tick;
}

double sm_clock_ticks_per_second(void)
{
    return 1e9 / sm_cal.ns_per_tick;
}

const char *sm_clock_source_name(void)
{
    return sm_clock_use_tsc ? "tsc" : "monotonic";
}

uint64_t sm_clock_realtime_at_init_ns(void)
{
    return sm_cal.real0;
}

uint64_t sm_clock_monotonic_at_init_ns(void)
{
    return sm_cal.mono0;
}

/* ---------------------------------------------------------------- job timeline */

/* Offsets to rank 0's clock, measured at MPI_Init (0) and MPI_Finalize (1). */
static sm_clock_params_t sm_job_clock;

void sm_clock_set_offset(int which, uint64_t local_ns, int64_t offset_ns)
{
    if (which < 0 || which > 1)
        return;
    sm_job_clock.have_offset[which] = 1;
    sm_job_clock.offset_local_ns[which] = local_ns;
    sm_job_clock.offset_ns[which] = offset_ns;
}

void sm_clock_export(sm_clock_params_t *p)
{
    *p = sm_job_clock;
    p->tick0 = sm_cal.tick0;
    p->mono0 = sm_cal.mono0;
    p->ns_per_tick = sm_cal.ns_per_tick;
}

void sm_clock_job_of(const sm_clock_params_t *p, sm_clock_job_t *c)
{
    int a = p->have_offset[0], b = p->have_offset[1];
    memset(c, 0, sizeof *c);
    c->tick0 = p->tick0;
    c->mono0 = (int64_t)p->mono0;
    c->ns_per_tick = p->ns_per_tick;
    c->sloped = a && b && p->offset_local_ns[1] > p->offset_local_ns[0];
    if (c->sloped) {
        c->slope = (double)(p->offset_ns[1] - p->offset_ns[0]) /
                   (double)(p->offset_local_ns[1] - p->offset_local_ns[0]);
        c->offset = p->offset_ns[0];
        c->local0 = p->offset_local_ns[0];
    } else if (a || b) {
        c->offset = p->offset_ns[b ? 1 : 0];
    }
}

void sm_clock_job_get(sm_clock_job_t *c)
{
    sm_clock_params_t p;
    sm_clock_export(&p);
    sm_clock_job_of(&p, c);
}

uint64_t sm_clock_to_job_ns(uint64_t ticks)
{
    sm_clock_job_t c;
    sm_clock_job_get(&c);
    return sm_clock_job_ns(&c, ticks);
}
