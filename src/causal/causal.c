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

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../core/clock.h"
#include "../core/job.h"
#include "../core/location.h"
#include "../core/runtime.h"
#include "../util/log.h"
#include "../util/srcloc.h"

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
static int sm_ca_job;        /* one of the processes of a job (sm_job_launch) */
static int sm_ca_e2e;        /* end-to-end: one experiment, the whole run */
static int sm_ca_line_mode;  /* experiments choose a source line of a function */

/* Line mode: the next experiment's line and its addresses. */
static sm_causal_range_t sm_ca_stage[SM_CAUSAL_MAX_RANGES];
static uint32_t sm_ca_stage_n;

/* Line mode: the line holding fn's address at offset, and that line's
 * addresses inside fn (from the DWARF line table, address by address: a
 * function of a few KiB takes milliseconds, on this thread).  0 when no
 * line is known there: the experiment takes the whole function. */
static uint32_t sm_ca_stage_line(int32_t fn, uint64_t offset)
{
    const sm_causal_fn_t *f = sm_causal_scope_fn((uint32_t)fn);
    sm_ca_stage_n = 0;
    if (!f || offset >= f->hi - f->lo)
        return 0;
    sm_srcloc_t want, at;
    if (sm_srcloc_lookup((const void *)(f->lo + offset), &want) != 0 || !want.line)
        return 0;
    int open = 0;
    for (uintptr_t a = f->lo; a < f->hi; a++) {
        int same = sm_srcloc_lookup((const void *)a, &at) == 0 && at.line == want.line &&
                   !strcmp(at.file, want.file);
        if (same && !open) {
            if (sm_ca_stage_n == SM_CAUSAL_MAX_RANGES)
                break;
            sm_ca_stage[sm_ca_stage_n].lo = a;
            open = 1;
        } else if (!same && open) {
            sm_ca_stage[sm_ca_stage_n++].hi = a;
            open = 0;
        }
    }
    if (open)
        sm_ca_stage[sm_ca_stage_n++].hi = f->hi;
    return sm_ca_stage_n ? want.line : 0;
}

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

/* 0 % for sm_ca_zero_share of the experiments (the baseline every other
 * point is measured against), else 5 to 100 % in steps of 5.  The share is
 * kept, not only expected: the next is at 0 % while fewer than the share
 * so far were, at random when exactly the share were (a coin alone left a
 * run of 16 experiments with 3 baselines now and then). */
static uint32_t sm_ca_choose_speedup(void)
{
    static uint64_t chosen, zeros;
    if (sm_ca_e2e && sm_ca_fixed >= 0) /* the one experiment of the run: as asked */
        return (uint32_t)sm_ca_fixed;
    uint64_t want = (uint64_t)sm_ca_zero_share * (chosen + 1), have = 100 * zeros;
    chosen++;
    if (have + 100 <= want || (have < want && (int)(sm_ca_random() % 100) < sm_ca_zero_share)) {
        zeros++;
        return 0;
    }
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

/* An end-to-end experiment's length: until the run stops. */
#define SM_CA_FOREVER (UINT64_C(1) << 62)

/* Runs one experiment: function fn (-1: none of this process's, it only
 * counts progress), from now until the local CLOCK_MONOTONIC time `until`.
 * Recorded unless cut short by the end before half its length.  1 when
 * the run stops. */
static int sm_ca_run(uint32_t no, int32_t fn, uint64_t hash, uint32_t speedup, uint64_t until,
                     uint64_t length, uint64_t offset)
{
    /* Line mode: the line's addresses first, then the function. */
    uint32_t line = sm_ca_line_mode && fn >= 0 ? sm_ca_stage_line(fn, offset) : 0;
    for (uint32_t k = 0; k < sm_ca_stage_n && line; k++)
        sm_causal_line_ranges[k] = sm_ca_stage[k];
    __atomic_store_n(&sm_causal_line_n, line ? sm_ca_stage_n : 0, __ATOMIC_RELEASE);
    if (sm_ca_n_exps >= SM_CAUSAL_MAX_EXPERIMENTS)
        return sm_ca_wait(until > sm_causal_now_ns() ? until - sm_causal_now_ns() : 0);
    sm_causal_exp_t *e = &sm_ca_exps[sm_ca_n_exps];
    memset(e, 0, sizeof *e);
    e->no = no;
    e->fn = fn;
    e->hash = hash;
    e->speedup = speedup;
    e->line = line;
    e->offset = offset;
    sm_causal_counts_t after;
    sm_causal_counts_now(&e->before);
    uint64_t delay_before = sm_causal_global_delay();
    uint64_t samples_before = sm_causal_selected_samples();
    e->start_ns = sm_causal_now_ns();
    __atomic_store_n(&sm_causal_delay_ns, sm_causal_period_ns() * speedup / 100,
                     __ATOMIC_RELEASE);
    __atomic_store_n(&sm_causal_selected, fn, __ATOMIC_RELEASE);
    int stopped = sm_ca_wait(until > e->start_ns ? until - e->start_ns : 0);
    __atomic_store_n(&sm_causal_selected, -1, __ATOMIC_RELEASE);
    __atomic_store_n(&sm_causal_line_n, 0, __ATOMIC_RELEASE);
    e->end_ns = sm_causal_now_ns();
    sm_causal_counts_now(&after);
    e->delay_ns = sm_causal_global_delay() - delay_before;
    e->selected_samples = sm_causal_selected_samples() - samples_before;
    for (uint32_t i = 0; i < SM_CAUSAL_MAX_POINTS; i++) {
        e->delta.visits[i] = after.visits[i] - e->before.visits[i];
        e->delta.arrivals[i] = after.arrivals[i] - e->before.arrivals[i];
    }
    /* One cut short by the end counts when it ran half its length (an
     * end-to-end one always: the end is its end). */
    if (!stopped || e->end_ns - e->start_ns >= length / 2 || sm_ca_e2e)
        sm_ca_n_exps++;
    return stopped;
}

/* The next experiment's function: one that samples hit (the handlers offer
 * one, in a job any rank of the node).  -1 when the run stops. */
static int32_t sm_ca_choose_function(uint64_t *hash, uint64_t *offset)
{
    sm_causal_candidate_clear();
    for (;;) {
        uint64_t h = sm_causal_candidate(offset);
        int32_t fn = h ? sm_causal_scope_by_hash(h) : -1;
        if (fn >= 0) {
            *hash = h;
            return fn;
        }
        if (h)
            sm_causal_candidate_clear(); /* a function this binary lacks */
        if (sm_ca_wait(2000000))
            return -1;
    }
}

/* Experiments of a process on its own. */
static void sm_ca_alone(void)
{
    uint64_t length = sm_ca_e2e ? SM_CA_FOREVER : sm_ca_length_ns;
    for (uint32_t no = 0;; no++) {
        uint64_t hash, offset;
        int32_t fn = sm_ca_choose_function(&hash, &offset);
        if (fn < 0)
            return;
        uint32_t n_before = sm_ca_n_exps;
        if (sm_ca_run(no, fn, hash, sm_ca_choose_speedup(), sm_causal_now_ns() + length, length,
                      offset))
            return;
        if (sm_ca_n_exps > n_before &&
            sm_ca_min_delta(&sm_ca_exps[n_before].delta) < sm_ca_min_visits &&
            length < 16 * sm_ca_length_ns)
            length *= 2;
        if (sm_ca_wait(sm_ca_cooloff_ns))
            return;
    }
}

/* ---------------------------------------------------------------- a job's experiments
 *
 * Every rank runs the same experiment at the same time.  Rank 0 chooses
 * (function by name, speedup) and appends the plan, one line per
 * experiment, to .causal-plan in the output folder, with its start and
 * end on the job's clock (rank 0's CLOCK_MONOTONIC, the offsets taken at
 * MPI_Init) a little ahead; every other rank reads new lines from its own
 * controller thread (a sleep between looks, never a spin) and runs them.
 * Nothing goes through MPI: the program may be MPI_THREAD_SINGLE. */

#define SM_CA_LEAD_NS 60000000u /* a plan is written this far ahead */

/* Now on the job's clock: CLOCK_MONOTONIC with the offset to rank 0's
 * taken at MPI_Init (not the tick conversion, whose calibration is refined
 * during the run). */
static uint64_t sm_ca_job_now(void)
{
    sm_clock_params_t p;
    sm_clock_export(&p);
    return sm_causal_now_ns() + (uint64_t)(p.have_offset[0] ? p.offset_ns[0] : 0);
}

/* The local CLOCK_MONOTONIC time of job time t. */
static uint64_t sm_ca_local_of(uint64_t t)
{
    uint64_t job = sm_ca_job_now(), now = sm_causal_now_ns();
    return t > job ? now + (t - job) : now;
}

static void sm_ca_plan_path(char *buf, size_t len)
{
    const char *dir = sm_runtime_output_dir();
    /* Named by the job: a plan left by another job is never read. */
    snprintf(buf, len, "%s/.causal-plan-%016llx", dir ? dir : ".",
             (unsigned long long)sm_job_hash());
}

static void sm_ca_leader(void)
{
    uint64_t length = sm_ca_e2e ? SM_CA_FOREVER : sm_ca_length_ns;
    char path[4200];
    sm_ca_plan_path(path, sizeof path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
        sm_warning("causal profiling: %s: %s; no experiments in this job", path,
                   strerror(errno));
        return;
    }
    for (uint32_t no = 0;; no++) {
        uint64_t hash, offset;
        int32_t fn = sm_ca_choose_function(&hash, &offset);
        if (fn < 0)
            break;
        uint32_t speedup = sm_ca_choose_speedup();
        uint64_t start = sm_ca_job_now() + SM_CA_LEAD_NS, end = start + length;
        char line[600];
        int n = snprintf(line, sizeof line, "%u %016llx %u %llu %llu %llu %s\n", no,
                         (unsigned long long)hash, speedup, (unsigned long long)start,
                         (unsigned long long)end, (unsigned long long)offset,
                         sm_causal_scope_fn((uint32_t)fn)->name);
        if (n <= 0 || (size_t)n >= sizeof line || write(fd, line, (size_t)n) != n) {
            sm_warning("causal profiling: writing %s failed; no more experiments", path);
            break;
        }
        uint64_t local_start = sm_ca_local_of(start);
        uint64_t now = sm_causal_now_ns();
        if (local_start > now && sm_ca_wait(local_start - now))
            break;
        uint32_t n_before = sm_ca_n_exps;
        if (sm_ca_run(no, fn, hash, speedup, sm_ca_local_of(end), length, offset))
            break;
        if (sm_ca_n_exps > n_before &&
            sm_ca_min_delta(&sm_ca_exps[n_before].delta) < sm_ca_min_visits &&
            length < 16 * sm_ca_length_ns)
            length *= 2;
        if (sm_ca_wait(sm_ca_cooloff_ns))
            break;
    }
    close(fd);
    unlink(path); /* the run ends: nobody reads it any more */
}

static void sm_ca_follower(void)
{
    char path[4200], buf[8192];
    size_t have = 0;
    off_t offset = 0;
    for (;;) {
        sm_ca_plan_path(path, sizeof path); /* the folder may be settled late */
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t got = 0;
        if (fd >= 0) {
            struct stat st;
            if (fstat(fd, &st) == 0 && st.st_size < offset)
                offset = 0, have = 0; /* written anew */
            got = pread(fd, buf + have, sizeof buf - 1 - have, offset);
            close(fd);
        }
        if (got > 0) {
            offset += got;
            have += (size_t)got;
        }
        buf[have] = '\0';
        char *nl;
        int ran = 0;
        while ((nl = memchr(buf, '\n', have)) != NULL) {
            *nl = '\0';
            unsigned no, speedup;
            unsigned long long hash, start, end, offset;
            if (sscanf(buf, "%u %llx %u %llu %llu %llu", &no, &hash, &speedup, &start, &end,
                       &offset) == 6 &&
                speedup <= 100 && end > sm_ca_job_now()) {
                uint64_t local_start = sm_ca_local_of(start);
                uint64_t now = sm_causal_now_ns();
                if (local_start > now && sm_ca_wait(local_start - now))
                    return;
                if (sm_ca_run(no, sm_causal_scope_by_hash(hash), hash, speedup,
                              sm_ca_local_of(end), end - start, offset))
                    return;
                ran = 1;
            }
            size_t used = (size_t)(nl + 1 - buf);
            memmove(buf, nl + 1, have - used);
            have -= used;
        }
        if (have == sizeof buf - 1)
            have = 0; /* a line longer than any plan's: dropped */
        if (!ran && sm_ca_wait(20000000))
            return;
    }
}

static void *sm_ca_controller(void *arg)
{
    (void)arg;
    if (!sm_ca_job) {
        sm_ca_alone();
        return NULL;
    }
    /* MPI_Init first: the folder, the clock offsets and the ranks. */
    while (sm_runtime_process_count() < 2)
        if (sm_ca_wait(10000000))
            return NULL;
    if (sm_job_launcher_rank() == 0)
        sm_ca_leader();
    else
        sm_ca_follower();
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
    sm_ca_e2e = cfg->causal_end_to_end;
    sm_ca_line_mode = cfg->causal_mode == SM_CAUSAL_MODE_LINE;
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
    const sm_job_launch_t *launch = sm_job_launch();
    sm_ca_job = launch->size > 1 && launch->rank >= 0;
    sm_causal_running = 1;
    if (sm_causal_delay_init(cfg, sm_ca_job) != 0) {
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
    sm_srcloc_t probe;
    if (sm_ca_line_mode && sm_causal_scope_count() &&
        sm_srcloc_lookup((const void *)sm_causal_scope_fn(0)->lo, &probe) != 0)
        sm_warning("causal profiling: --causal-mode line: no source lines for %s (built "
                   "without -g, or sysmeasure without libdw); experiments take whole functions",
                   sm_causal_scope_fn(0)->name);
    sm_info(1, "causal profiling: %u functions of %u binaries in scope, experiments of %lld ms",
            sm_causal_scope_count(), sm_causal_scope_objects(), (long long)cfg->causal_experiment);
    return 0;
}

static void sm_causal_stop(void)
{
    if (!sm_causal_running)
        return;
    if (sm_ca_e2e) /* the run is its one pass */
        sm_causal_progress("end-to-end", SM_PROGRESS_THROUGHPUT);
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
    if (sm_ca_job && sm_runtime_process_count() < 2) {
        sm_runtime_add_note("causal profiling: started as one process of a job, but MPI_Init "
                            "never came: no experiments (they wait for it)");
        sm_warning("causal profiling: started as one process of a job, but MPI_Init never "
                   "came: no experiments ran");
    } else if (!sm_causal_points() && !sm_ca_e2e) {
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

uint32_t sm_causal_experiments_mut(sm_causal_exp_t **out)
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
