/* Causal profiling's lifecycle and its experiments (causal.h).
 *
 * A controller thread of sysmeasure's own (not a measured thread, every
 * signal blocked) runs the experiments one after another until the end of
 * the run: it waits for a sample to land in a function in scope, chooses
 * that function and a speedup, publishes them to the sample handlers,
 * sleeps the experiment's length, takes them back, records the progress
 * made and the delay inserted meanwhile, and cools off before the next
 * (so that the delays of one are paid before the next starts).  An
 * experiment that saw fewer than causal_min_visits passes of the least
 * visited progress point makes the next ones twice as long (up to 16
 * times the configured length). */
#define _GNU_SOURCE
#include "causal.h"
#include "causal_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../core/location.h"
#include "../core/runtime.h"
#include "../util/log.h"

volatile int sm_causal_running;

#define SM_CAUSAL_MAX_EXPERIMENTS 8192

static sm_causal_exp_t *sm_ca_exps;
static uint32_t sm_ca_n_exps;
static uint64_t sm_ca_startup, sm_ca_end;
static uint64_t sm_ca_length_ns, sm_ca_cooloff_ns;
static uint32_t sm_ca_min_visits;
static uint64_t sm_ca_rng;
static int sm_ca_zero_share; /* percent of experiments at 0 % */
static int sm_ca_fixed;      /* the speedup of the others, or -1: at random */

static pthread_t sm_ca_thread;
static int sm_ca_have_thread;
static pthread_mutex_t sm_ca_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sm_ca_cond;
static int sm_ca_stopping;

static uint64_t sm_ca_random(void)
{
    /* xorshift64*: experiments need no more. */
    sm_ca_rng ^= sm_ca_rng >> 12;
    sm_ca_rng ^= sm_ca_rng << 25;
    sm_ca_rng ^= sm_ca_rng >> 27;
    return sm_ca_rng * 0x2545F4914F6CDD1Dull;
}

/* 0 % about half of the time (the baseline every other point is measured
 * against), else 5 to 100 % in steps of 5. */
static uint32_t sm_ca_choose_speedup(void)
{
    if ((int)(sm_ca_random() % 100) < sm_ca_zero_share)
        return 0;
    if (sm_ca_fixed >= 0)
        return (uint32_t)sm_ca_fixed;
    return 5u * (uint32_t)(1 + sm_ca_random() % 20);
}

/* Sleeps up to ns or until the run stops: 1 when stopping. */
static int sm_ca_wait(uint64_t ns)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    uint64_t t = (uint64_t)until.tv_nsec + ns;
    until.tv_sec += (time_t)(t / 1000000000u);
    until.tv_nsec = (long)(t % 1000000000u);
    pthread_mutex_lock(&sm_ca_lock);
    while (!sm_ca_stopping && pthread_cond_timedwait(&sm_ca_cond, &sm_ca_lock, &until) == 0)
        ;
    int stopping = sm_ca_stopping;
    pthread_mutex_unlock(&sm_ca_lock);
    return stopping;
}

/* The fewest passes of a throughput point (latency ends count too). */
static uint64_t sm_ca_min_delta(const sm_causal_counts_t *d)
{
    uint32_t n = sm_causal_points();
    uint64_t min = UINT64_MAX;
    for (uint32_t i = 0; i < n; i++)
        if (d->visits[i] < min)
            min = d->visits[i];
    return n ? min : 0;
}

static void *sm_ca_controller(void *arg)
{
    (void)arg;
    uint64_t length = sm_ca_length_ns;
    while (sm_ca_n_exps < SM_CAUSAL_MAX_EXPERIMENTS) {
        /* A function that samples hit (the handler offers one). */
        __atomic_store_n(&sm_causal_candidate, -1, __ATOMIC_RELEASE);
        int32_t fn;
        while ((fn = __atomic_load_n(&sm_causal_candidate, __ATOMIC_ACQUIRE)) < 0)
            if (sm_ca_wait(2000000))
                return NULL;
        uint32_t speedup = sm_ca_choose_speedup();
        sm_causal_exp_t *e = &sm_ca_exps[sm_ca_n_exps];
        memset(e, 0, sizeof *e);
        e->fn = fn;
        e->speedup = speedup;
        sm_causal_counts_t before, after;
        sm_causal_counts_now(&before);
        uint64_t delay_before = sm_causal_global_delay();
        uint64_t samples_before = sm_causal_selected_samples();
        e->start_ns = sm_causal_now_ns();
        __atomic_store_n(&sm_causal_delay_ns, sm_causal_period_ns() * speedup / 100,
                         __ATOMIC_RELEASE);
        __atomic_store_n(&sm_causal_selected, fn, __ATOMIC_RELEASE);
        int stopped = sm_ca_wait(length);
        __atomic_store_n(&sm_causal_selected, -1, __ATOMIC_RELEASE);
        e->end_ns = sm_causal_now_ns();
        sm_causal_counts_now(&after);
        e->before = before;
        e->delay_ns = sm_causal_global_delay() - delay_before;
        e->selected_samples = sm_causal_selected_samples() - samples_before;
        for (uint32_t i = 0; i < SM_CAUSAL_MAX_POINTS; i++) {
            e->delta.visits[i] = after.visits[i] - before.visits[i];
            e->delta.arrivals[i] = after.arrivals[i] - before.arrivals[i];
        }
        /* One cut short by the end counts when it ran half its length. */
        if (!stopped || e->end_ns - e->start_ns >= length / 2)
            sm_ca_n_exps++;
        if (stopped)
            return NULL;
        if (sm_ca_min_delta(&e->delta) < sm_ca_min_visits && length < 16 * sm_ca_length_ns)
            length *= 2;
        if (sm_ca_wait(sm_ca_cooloff_ns))
            return NULL;
    }
    return NULL;
}

static int sm_causal_init(const sm_config_t *cfg)
{
    if (!cfg->causal)
        return 0;
    /* (The ranges are checked with the configuration: config.c.) */
    sm_ca_length_ns = (uint64_t)cfg->causal_experiment * 1000000u;
    sm_ca_cooloff_ns = (uint64_t)(cfg->causal_cooloff > 0 ? cfg->causal_cooloff : 0) * 1000000u;
    sm_ca_min_visits = cfg->causal_min_visits > 0 ? (uint32_t)cfg->causal_min_visits : 0;
    sm_ca_zero_share = 50;
    sm_ca_fixed = (int)cfg->causal_speedup;
    sm_ca_rng = cfg->causal_seed ? (uint64_t)cfg->causal_seed
                                 : (sm_causal_now_ns() ^ ((uint64_t)getpid() << 32));
    if (!sm_ca_rng)
        sm_ca_rng = 88172645463325252ull;
    sm_ca_exps = calloc(SM_CAUSAL_MAX_EXPERIMENTS, sizeof *sm_ca_exps);
    if (!sm_ca_exps) {
        sm_error("causal profiling is off: out of memory");
        return -1;
    }
    if (sm_causal_progress_init(cfg) != 0 || sm_causal_scope_load(cfg) != 0)
        return -1;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&sm_ca_cond, &ca);
    pthread_condattr_destroy(&ca);
    sm_ca_startup = sm_causal_now_ns();
    sm_causal_running = 1;
    if (sm_causal_delay_init(cfg) != 0) {
        sm_causal_running = 0;
        return -1;
    }
    if (sm_internal_thread_create(&sm_ca_thread, 0, sm_ca_controller, NULL) != 0) {
        sm_error("causal profiling is off: its controller thread cannot start");
        sm_causal_delay_stop();
        sm_causal_running = 0;
        return -1;
    }
    sm_ca_have_thread = 1;
    sm_info(1, "causal profiling: %u functions of %u binaries in scope, experiments of %lld ms",
            sm_causal_scope_count(), sm_causal_scope_objects(), (long long)cfg->causal_experiment);
    return 0;
}

static void sm_causal_stop(void)
{
    if (!sm_causal_running)
        return;
    pthread_mutex_lock(&sm_ca_lock);
    sm_ca_stopping = 1;
    pthread_cond_broadcast(&sm_ca_cond);
    pthread_mutex_unlock(&sm_ca_lock);
    if (sm_ca_have_thread)
        pthread_join(sm_ca_thread, NULL);
    sm_ca_have_thread = 0;
    sm_causal_delay_stop();
    sm_ca_end = sm_causal_now_ns();
    sm_causal_running = 0;
}

static void sm_causal_flush(const sm_run_info_t *run)
{
    (void)run;
    if (!sm_ca_exps)
        return;
    sm_causal_stop();
    uint64_t delay = sm_causal_global_delay(), paid = sm_causal_paid_ns();
    char note[400];
    snprintf(note, sizeof note,
             "causal profiling: %u experiments, %u progress points, %llu samples on %u threads "
             "(%s, %u functions in scope); delays inserted %.3f s, pauses added %.3f s of "
             "thread time over %.3f s",
             sm_ca_n_exps, sm_causal_points(), (unsigned long long)sm_causal_total_samples(),
             sm_causal_threads(), sm_causal_sample_source(), sm_causal_scope_count(), (double)delay / 1e9,
             (double)paid / 1e9, (double)(sm_ca_end - sm_ca_startup) / 1e9);
    sm_runtime_add_note(note);
    if (!sm_causal_points()) {
        sm_runtime_add_note("causal profiling: no progress point was passed (call "
                            "sysmeasure_progress, or name a region with --causal-progress)");
        sm_warning("causal profiling: no progress point was passed; the experiments predict "
                   "nothing (call sysmeasure_progress, or --causal-progress REGION)");
    }
}

uint32_t sm_causal_experiments(const sm_causal_exp_t **out)
{
    *out = sm_ca_exps;
    return sm_ca_exps ? sm_ca_n_exps : 0;
}

uint64_t sm_causal_startup_ns(void)
{
    return sm_ca_startup;
}

uint64_t sm_causal_end_ns(void)
{
    return sm_ca_end;
}

const sm_subsystem_t sm_causal_subsystem = {
    .name = "causal profiling",
    .init = sm_causal_init,
    .thread_begin = sm_causal_delay_thread_begin,
    .thread_end = sm_causal_delay_thread_end,
    .stop = sm_causal_stop,
    .flush = sm_causal_flush,
};
