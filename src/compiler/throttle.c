/* Throttling of tiny hot functions: see throttle.h. */
#define _GNU_SOURCE
#include "throttle.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/clock.h"
#include "../core/config.h"
#include "../core/runtime.h"
#include "../core/sig_hold.h"
#include "../util/filter.h"
#include "../util/log.h"

static pthread_once_t sm_throttle_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t sm_throttle_lock = PTHREAD_MUTEX_INITIALIZER;
static int sm_throttle_on;
static uint64_t sm_throttle_calls;
static double sm_throttle_ns;
/* A calibration point of our own: the clock's is only final at the end,
 * and throttling decides during the run. */
static uint64_t sm_throttle_t0_ticks, sm_throttle_t0_ns;
/* The throttled functions, in the order they were throttled (under the
 * lock; the slot of each is its index). */
static sm_throttle_fn_t **sm_throttled;
static uint32_t sm_throttled_n, sm_throttled_cap;

/* A fork child whose parent had another thread in the lock: a new lock. */
static void sm_throttle_after_fork_child(void)
{
    pthread_mutex_init(&sm_throttle_lock, NULL);
}

static void sm_throttle_configure(void)
{
    pthread_atfork(NULL, NULL, sm_throttle_after_fork_child);
    const sm_config_t *cfg = sm_runtime_config();
    sm_throttle_on = cfg && cfg->throttle;
    sm_throttle_calls = cfg ? (uint64_t)cfg->throttle_calls : 100000;
    sm_throttle_ns = (cfg ? (double)cfg->throttle_per_call : 10.0) * 1000.0;
    sm_throttle_t0_ticks = sm_clock_now();
    sm_throttle_t0_ns = sm_clock_monotonic_ns();
}

static double sm_throttle_ns_per_tick(void)
{
    uint64_t ticks = sm_clock_now() - sm_throttle_t0_ticks;
    uint64_t ns = sm_clock_monotonic_ns() - sm_throttle_t0_ns;
    if (ns < 1000000 || !ticks) /* under 1 ms: too short to tell */
        return sm_clock_ns_per_tick();
    return (double)ns / (double)ticks;
}

sm_fn_state_t sm_throttle_initial_state(sm_region_id_t region)
{
    pthread_once(&sm_throttle_once, sm_throttle_configure);
    if (region == SM_INVALID_ID || sm_region_filtered(region))
        return SM_FN_FILTERED;
    return sm_throttle_on ? SM_FN_COUNTING : SM_FN_TRACED;
}

/* Once per function: the clock can be read, the lock taken (the slot is
 * set before the state that makes it read). */
static SM_NOINLINE void sm_throttle_judge(sm_throttle_fn_t *f, uint64_t ticks, uint64_t calls)
{
    double per_call_ns = (double)ticks * sm_throttle_ns_per_tick() / (double)calls;
    sm_fn_state_t verdict = per_call_ns < sm_throttle_ns ? SM_FN_THROTTLED : SM_FN_TRACED;
    int saved_errno = errno;
    sm_sig_hold(SM_SIG_LOCKS); /* no handler may jump out of the lock (sig_hold.h) */
    pthread_mutex_lock(&sm_throttle_lock);
    if (f->state == SM_FN_COUNTING) {
        if (verdict == SM_FN_THROTTLED) {
            if (sm_throttled_n == sm_throttled_cap) {
                uint32_t cap = sm_throttled_cap ? 2 * sm_throttled_cap : 64;
                sm_throttle_fn_t **t = realloc(sm_throttled, cap * sizeof *t);
                if (t) {
                    sm_throttled = t;
                    sm_throttled_cap = cap;
                }
            }
            if (sm_throttled_n < sm_throttled_cap) {
                f->slot = sm_throttled_n;
                sm_throttled[sm_throttled_n++] = f;
            } else {
                verdict = SM_FN_TRACED; /* out of memory: it stays traced */
            }
        }
        __atomic_store_n(&f->state, verdict, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&sm_throttle_lock);
    sm_sig_release();
    errno = saved_errno;
}

void sm_throttle_counted_leave(sm_throttle_fn_t *f, uint64_t incl)
{
    uint64_t ticks = __atomic_add_fetch(&f->ticks, incl, __ATOMIC_RELAXED);
    uint64_t calls = __atomic_load_n(&f->calls, __ATOMIC_RELAXED);
    if (calls >= sm_throttle_calls)
        sm_throttle_judge(f, ticks, calls);
}

void sm_throttle_count_slow(sm_location_t *loc, sm_throttle_fn_t *f)
{
    if (!loc->throttled_calls && f->slot < SM_THROTTLE_SLOTS) {
        int saved_errno = errno;
        loc->throttled_calls = calloc(SM_THROTTLE_SLOTS, sizeof *loc->throttled_calls);
        errno = saved_errno;
    }
    if (loc->throttled_calls && f->slot < SM_THROTTLE_SLOTS)
        loc->throttled_calls[f->slot]++;
    else
        __atomic_fetch_add(&f->calls, 1, __ATOMIC_RELAXED);
}

/* ---------------------------------------------------------------- summary */

/* The throttled functions: notes for the summary (the first few, each with
 * its filter line) and throttled.filter in the output folder (all). */
static void sm_throttle_report(const sm_run_info_t *run)
{
    pthread_mutex_lock(&sm_throttle_lock);
    FILE *fp = NULL;
    char path[4200], note[8400], pattern[8200];
    double ns_per_tick = sm_throttled_n ? sm_throttle_ns_per_tick() : 0.0;
    for (uint32_t n = 0; n < sm_throttled_n; n++) {
        const sm_throttle_fn_t *f = sm_throttled[n];
        const char *name = sm_region_name(f->region);
        sm_filter_escape(name, pattern, sizeof pattern);
        uint64_t calls = __atomic_load_n(&f->calls, __ATOMIC_RELAXED);
        for (uint32_t l = 0, nl = sm_location_count(); l < nl && f->slot < SM_THROTTLE_SLOTS;
             l++) {
            const uint64_t *c = sm_location_get(l)->throttled_calls;
            calls += c ? c[f->slot] : 0;
        }
        double us = sm_throttle_calls
                        ? (double)f->ticks * ns_per_tick / 1000.0 / (double)sm_throttle_calls
                        : 0.0;
        if (n < 4) {
            snprintf(note, sizeof note, "throttled: %s (%" PRIu64 " calls, %.3g us per call; "
                     "traced for its first %" PRIu64 "); filter line: EXCLUDE %s", name, calls,
                     us, sm_throttle_calls, pattern);
            sm_runtime_add_note(note);
        }
        if (!fp && run->output_dir) {
            char err[256];
            if (sm_runtime_make_output_dir(err, sizeof err) == 0) {
                if (run->n_ranks > 1 || run->rank)
                    snprintf(path, sizeof path, "%s/throttled.%u.filter", run->output_dir,
                             (unsigned)run->rank);
                else
                    snprintf(path, sizeof path, "%s/throttled.filter", run->output_dir);
                fp = fopen(path, "w");
                if (fp)
                    fprintf(fp, "# functions sysmeasure throttled (more than %" PRIu64
                            " calls at less than %.3g us per call); use with --filter\n"
                            "SCOREP_REGION_NAMES_BEGIN\n",
                            sm_throttle_calls, sm_throttle_ns / 1000.0);
                else
                    sm_warning("cannot write %s: %s", path, strerror(errno));
            }
        }
        if (fp)
            fprintf(fp, "  EXCLUDE %s\n", pattern);
    }
    if (fp) {
        fprintf(fp, "SCOREP_REGION_NAMES_END\n");
        fclose(fp);
    }
    if (sm_throttled_n > 4) {
        snprintf(note, sizeof note, "throttled: %u more functions (all in throttled.filter)",
                 sm_throttled_n - 4);
        sm_runtime_add_note(note);
    }
    pthread_mutex_unlock(&sm_throttle_lock);
}

const sm_subsystem_t sm_throttle_subsystem = {
    .name = "throttling",
    .flush = sm_throttle_report,
};
