/* The sampler thread (sampler.h). */
#define _GNU_SOURCE
#include "sampler.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "events.h"
#include "location.h"
#include "runtime.h"
#include "../util/log.h"

#define SM_SAMPLERS_MAX 16

typedef struct sm_sampler_slot {
    sm_sampler_t s;
    int state;         /* 0 registered, 1 running, -1 dropped, 2 ended early
                        * (sm_sampler_finish_now) or at the end of the run */
    int busy;          /* a thread is in its start, read or stop now */
    pid_t busy_tid;    /* which one, when finish_now's caller */
    int abandoned;     /* that caller died inside it (fatal signal) */
    uint64_t next_ns;  /* CLOCK_MONOTONIC */
    sm_location_t *loc;
} sm_sampler_slot_t;

struct sm_sample_sink {
    sm_sampler_slot_t *slot;
    uint64_t time; /* ticks */
    int last;      /* the read at the end of the run */
};

static sm_sampler_slot_t sm_samplers[SM_SAMPLERS_MAX];
static uint32_t sm_samplers_n;
static pthread_mutex_t sm_samplers_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sm_samplers_cond;
static pthread_t sm_samplers_thread;
static int sm_samplers_started, sm_samplers_stopping, sm_samplers_joined, sm_samplers_done;
static pthread_cond_t sm_samplers_done_cond = PTHREAD_COND_INITIALIZER;
static uint64_t sm_samplers_default_ns = 100000000u;
static clockid_t sm_samplers_cpu_clock;
static int sm_samplers_have_cpu_clock;
static uint64_t sm_samplers_cpu_at_stop;
static uint64_t sm_samplers_started_ns;
/* Signalled when a slot's busy drops (sm_sampler_finish_now waits on it). */
static pthread_cond_t sm_samplers_idle_cond = PTHREAD_COND_INITIALIZER;

static uint64_t sm_samplers_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void sm_samplers_set_default_period(uint64_t period_ns)
{
    if (period_ns)
        sm_samplers_default_ns = period_ns;
}

void sm_sample_put_at(sm_sample_sink_t *sink, sm_metric_id_t id, uint64_t value, uint64_t time)
{
    sm_metric_def_t m;
    if (sm_metric_get(id, &m) != 0)
        return;
    sm_metric_sample(id, value);
    if (sink->slot->loc) {
        uint64_t w[2] = {value, m.unit};
        sm_event_record(sink->slot->loc, SM_REC_METRIC_NAMED, m.name, 0, time, w, 2);
    }
}

void sm_sample_put(sm_sample_sink_t *sink, sm_metric_id_t id, uint64_t value)
{
    sm_sample_put_at(sink, id, value, sink->time);
}

int sm_sample_last(const sm_sample_sink_t *sink)
{
    return sink->last;
}

static void sm_sampler_read(sm_sampler_slot_t *slot, int last)
{
    if (sm_dormant_idle)
        return; /* --dormant: samples belong to windows only (window.h) */
    sm_sample_sink_t sink = {slot, sm_clock_now(), last};
    slot->s.read(slot->s.ctx, &sink);
}

static uint64_t sm_sampler_period(const sm_sampler_slot_t *slot)
{
    return slot->s.period_ns ? slot->s.period_ns : sm_samplers_default_ns;
}

/* Under the lock: the last read and the stop of a running sampler, on
 * the calling thread, with the lock released meanwhile and other threads
 * kept off the slot (busy); the slot is ended afterwards. */
static void sm_sampler_end(sm_sampler_slot_t *slot)
{
    while (slot->busy && !slot->abandoned)
        pthread_cond_wait(&sm_samplers_idle_cond, &sm_samplers_lock);
    if (slot->abandoned)
        return;
    if (slot->state == 0) /* never started: nothing to read or stop */
        slot->state = 2;
    if (slot->state != 1)
        return;
    slot->busy = 1;
    slot->busy_tid = gettid();
    pthread_mutex_unlock(&sm_samplers_lock);
    sm_sampler_read(slot, 1);
    if (slot->s.stop)
        slot->s.stop(slot->s.ctx);
    pthread_mutex_lock(&sm_samplers_lock);
    slot->busy = 0;
    slot->busy_tid = 0;
    slot->state = 2;
    pthread_cond_broadcast(&sm_samplers_idle_cond);
}

int sm_sampler_finish_now(const void *ctx)
{
    if (!ctx)
        return -1;
    pthread_mutex_lock(&sm_samplers_lock);
    int rc = -1;
    for (uint32_t i = 0; i < sm_samplers_n; i++)
        if (sm_samplers[i].s.ctx == ctx) {
            sm_sampler_end(&sm_samplers[i]);
            rc = 0;
            break;
        }
    pthread_mutex_unlock(&sm_samplers_lock);
    return rc;
}

/* Sleeps until the earliest sampler is due or stop is asked; samples the
 * due ones with the lock released (a read may take a while). */
static void *sm_samplers_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&sm_samplers_lock);
    while (!sm_samplers_stopping) {
        uint64_t now = sm_samplers_now_ns(), next = UINT64_MAX;
        for (uint32_t i = 0; i < sm_samplers_n && !sm_samplers_stopping; i++) {
            sm_sampler_slot_t *slot = &sm_samplers[i];
            /* Busy here means another thread is ending it (finish_now, its
             * last read under way with the lock released): no read of ours
             * meanwhile.  Two at once of one PM sampler decoded one GPU
             * counter image twice and crashed the program at exit. */
            if (slot->busy)
                continue;
            if (slot->state == 0) {
                slot->busy = 1;
                pthread_mutex_unlock(&sm_samplers_lock);
                char name[80];
                snprintf(name, sizeof name, "%s metrics", slot->s.name ? slot->s.name : "sampler");
                slot->loc = sm_location_create(SM_LOCATION_METRIC, name);
                int ok = slot->loc && (!slot->s.start || slot->s.start(slot->s.ctx) == 0);
                pthread_mutex_lock(&sm_samplers_lock);
                slot->busy = 0;
                if (slot->state == 0) /* else ended meanwhile (finish_now) */
                    slot->state = ok ? 1 : -1;
                slot->next_ns = now;
                pthread_cond_broadcast(&sm_samplers_idle_cond);
            }
            if (slot->state != 1)
                continue;
            if (slot->next_ns <= now) {
                slot->busy = 1;
                pthread_mutex_unlock(&sm_samplers_lock);
                sm_sampler_read(slot, 0);
                pthread_mutex_lock(&sm_samplers_lock);
                slot->busy = 0;
                pthread_cond_broadcast(&sm_samplers_idle_cond);
                if (slot->state != 1)
                    continue;
                slot->next_ns += sm_sampler_period(slot);
                if (slot->next_ns <= now) /* fell behind: skip, never catch up in a burst */
                    slot->next_ns = now + sm_sampler_period(slot);
            }
            if (slot->next_ns < next)
                next = slot->next_ns;
        }
        if (sm_samplers_stopping)
            break;
        if (next == UINT64_MAX) {
            pthread_cond_wait(&sm_samplers_cond, &sm_samplers_lock);
        } else {
            struct timespec ts = {(time_t)(next / 1000000000u), (long)(next % 1000000000u)};
            pthread_cond_timedwait(&sm_samplers_cond, &sm_samplers_lock, &ts);
        }
    }
    /* A last value of each, at the end of the run, and the samplers' end
     * (those ended early by sm_sampler_finish_now are skipped). */
    for (uint32_t i = 0; i < sm_samplers_n; i++)
        sm_sampler_end(&sm_samplers[i]);
    pthread_mutex_unlock(&sm_samplers_lock);
    struct timespec cpu;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)
        sm_samplers_cpu_at_stop = (uint64_t)cpu.tv_sec * 1000000000u + (uint64_t)cpu.tv_nsec;
    /* Done; the thread does not return.  A sampler's library may have
     * left per-thread state on it (CUPTI, for GPU PM sampling), and at the
     * end of the process, after that library's own teardown, a thread exit
     * that releases it crashed (H100).  So the thread sleeps until the
     * process ends: stop waits for `done`, not for the thread's end. */
    pthread_mutex_lock(&sm_samplers_lock);
    sm_samplers_done = 1;
    pthread_cond_broadcast(&sm_samplers_done_cond);
    for (;;)
        pthread_cond_wait(&sm_samplers_done_cond, &sm_samplers_lock);
    return NULL;
}

static void sm_samplers_after_fork_child(void)
{
    /* The thread is not in the child; the child is not measured either,
     * unless it goes on after daemon(): then its samplers stay, idle, for
     * sm_samplers_after_daemon. */
    sm_samplers_started = 0;
    if (!sm_runtime_forking_daemon())
        sm_samplers_n = 0;
    for (uint32_t i = 0; i < sm_samplers_n; i++) /* (a read the fork cut short) */
        sm_samplers[i].busy = sm_samplers[i].busy_tid = 0;
    sm_samplers_done = 0;
    pthread_mutex_init(&sm_samplers_lock, NULL);
    pthread_cond_init(&sm_samplers_done_cond, NULL);
    pthread_cond_init(&sm_samplers_idle_cond, NULL);
}

static int sm_samplers_start_thread(void);

void sm_samplers_after_daemon(void)
{
    pthread_mutex_lock(&sm_samplers_lock);
    if (sm_samplers_n && !sm_samplers_started && !sm_samplers_stopping)
        (void)sm_samplers_start_thread(); /* (says so when it cannot) */
    pthread_mutex_unlock(&sm_samplers_lock);
}

/* Under the lock.  An internal thread: not measured, no signals. */
static int sm_samplers_start_thread(void)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&sm_samplers_cond, &ca);
    pthread_condattr_destroy(&ca);
    int rc = sm_internal_thread_create(&sm_samplers_thread, 0, sm_samplers_main, NULL);
    if (rc != 0) {
        sm_warning("the sampler thread cannot start (%s); process sampling is off",
                   strerror(rc));
        return -1;
    }
    pthread_setname_np(sm_samplers_thread, "sysmeasure-smp");
    sm_samplers_have_cpu_clock =
        pthread_getcpuclockid(sm_samplers_thread, &sm_samplers_cpu_clock) == 0;
    sm_samplers_started = 1;
    sm_samplers_started_ns = sm_samplers_now_ns();
    static int atfork_done;
    if (!atfork_done++)
        pthread_atfork(NULL, NULL, sm_samplers_after_fork_child);
    return 0;
}

int sm_sampler_register(const sm_sampler_t *s)
{
    if (!s || !s->read || !sm_runtime_active)
        return -1;
    pthread_mutex_lock(&sm_samplers_lock);
    int rc = -1;
    if (sm_samplers_n < SM_SAMPLERS_MAX && !sm_samplers_stopping &&
        (sm_samplers_started || sm_samplers_start_thread() == 0)) {
        memset(&sm_samplers[sm_samplers_n], 0, sizeof sm_samplers[0]);
        sm_samplers[sm_samplers_n].s = *s;
        sm_samplers_n++;
        pthread_cond_signal(&sm_samplers_cond);
        rc = 0;
    } else if (sm_samplers_n >= SM_SAMPLERS_MAX) {
        sm_warning("sampler '%s' not started: at most %d samplers", s->name ? s->name : "?",
                   SM_SAMPLERS_MAX);
    }
    pthread_mutex_unlock(&sm_samplers_lock);
    return rc;
}

void sm_samplers_stop(void)
{
    pthread_mutex_lock(&sm_samplers_lock);
    int join = sm_samplers_started && !sm_samplers_joined;
    /* A fatal signal on a thread inside sm_sampler_finish_now's read (this
     * very thread, in its handler): that sampler is left as it is, or the
     * sampler thread's last round would wait for it forever. */
    pid_t self = gettid();
    for (uint32_t i = 0; i < sm_samplers_n; i++)
        if (sm_samplers[i].busy && sm_samplers[i].busy_tid == self)
            sm_samplers[i].abandoned = 1;
    sm_samplers_stopping = 1;
    sm_samplers_joined = 1;
    if (join)
        pthread_cond_signal(&sm_samplers_cond);
    pthread_mutex_unlock(&sm_samplers_lock);
    if (join) {
        pthread_mutex_lock(&sm_samplers_lock);
        while (!sm_samplers_done)
            pthread_cond_wait(&sm_samplers_done_cond, &sm_samplers_lock);
        pthread_mutex_unlock(&sm_samplers_lock);
        /* What the thread cost, for the summary (it must stay small). */
        char note[200];
        double s = (double)(sm_samplers_now_ns() - sm_samplers_started_ns) * 1e-9;
        snprintf(note, sizeof note,
                 "process sampling: the sampler thread used %.1f ms of CPU in %.1f s (%.3f%% "
                 "of a core), %u sampler(s), every %.0f ms",
                 (double)sm_samplers_cpu_at_stop * 1e-6, s,
                 s > 0 ? 100.0 * (double)sm_samplers_cpu_at_stop * 1e-9 / s : 0.0,
                 (unsigned)sm_samplers_n, (double)sm_samplers_default_ns * 1e-6);
        sm_runtime_add_note(note);
    }
}

uint64_t sm_samplers_cpu_ns(void)
{
    if (sm_samplers_joined)
        return sm_samplers_cpu_at_stop;
    struct timespec ts;
    if (!sm_samplers_started || !sm_samplers_have_cpu_clock ||
        clock_gettime(sm_samplers_cpu_clock, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
