/* The location registry and the binding of locations to threads. */
#include "location.h"
#include "journal.h"

#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"
#include "events.h"
#include "ending.h"
#include "runtime.h"
#include "counters.h"
#include "subsystem.h"
#include "sig_hold.h"

SM_TLS sm_location_t *sm_tls_location;

#define SM_LOC_BLOCK_BITS 10
#define SM_LOC_BLOCK (1u << SM_LOC_BLOCK_BITS)
#define SM_LOC_MAX_BLOCKS 1024

static sm_location_t **sm_loc_blocks[SM_LOC_MAX_BLOCKS];
static uint32_t sm_loc_count; /* published with release */
static pthread_mutex_t sm_loc_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t sm_loc_key;
static int sm_loc_key_ok;
static int sm_mode_tracing = 1, sm_mode_profiling = 1, sm_mode_enabled = 1;

void sm_locations_set_modes(int tracing, int profiling, int enabled)
{
    sm_mode_tracing = tracing;
    sm_mode_profiling = profiling;
    sm_mode_enabled = enabled;
}

/* The thread is exiting: close what it left open and mark its end. */
static void sm_location_thread_exit(void *arg)
{
    sm_location_t *loc = arg;
    if (loc && !loc->closed) {
        sm_sig_hold(SM_SIG_LOCKS_IO);
        sm_location_close(loc, sm_clock_now());
        /* Thousands of short threads must not hold the budget's memory. */
        sm_buffer_thread_ended(loc);
        sm_sig_release();
    }
}

void sm_locations_after_daemon_child(void)
{
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    sm_loc_lock = m; /* a thread of the parent may have held it */
}

int sm_locations_init(void)
{
    if (!sm_loc_key_ok && pthread_key_create(&sm_loc_key, sm_location_thread_exit) == 0)
        sm_loc_key_ok = 1;
    return sm_loc_key_ok ? 0 : -1;
}

uint32_t sm_location_count(void)
{
    return __atomic_load_n(&sm_loc_count, __ATOMIC_ACQUIRE);
}

sm_location_t *sm_location_get(uint32_t id)
{
    if (id >= sm_location_count())
        return NULL;
    return sm_loc_blocks[id >> SM_LOC_BLOCK_BITS][id & (SM_LOC_BLOCK - 1)];
}

static sm_location_t *sm_location_alloc_held(sm_location_type_t type);

/* On the application's threads (a thread's first event, a new thread, a
 * GPU stream): malloc and the registry's lock, which no signal handler may
 * jump out of (sig_hold.h). */
static sm_location_t *sm_location_alloc(sm_location_type_t type)
{
    sm_sig_hold(SM_SIG_LOCKS);
    sm_location_t *loc = sm_location_alloc_held(type);
    sm_sig_release();
    return loc;
}

static sm_location_t *sm_location_alloc_held(sm_location_type_t type)
{
    sm_location_t *loc = aligned_alloc(64, (sizeof *loc + 63) & ~(size_t)63);
    if (!loc)
        return NULL;
    memset(loc, 0, sizeof *loc);
    loc->type = type;
    loc->creator = SM_INVALID_ID;
    loc->tracing = (uint8_t)sm_mode_tracing;
    loc->profiling = (uint8_t)sm_mode_profiling;
    loc->thread_enabled = (uint8_t)sm_mode_enabled;
    loc->stack_capacity = 64;
    loc->stack = calloc(loc->stack_capacity, sizeof *loc->stack);
    if (!loc->stack) {
        free(loc);
        return NULL;
    }
    loc->stack_limit = loc->stack + loc->stack_capacity - 1;
    if (sm_trace_max_depth + 2 <= loc->stack_capacity) /* a small depth limit */
        loc->stack_limit = loc->stack + sm_trace_max_depth;
    loc->sp = loc->stack;
    pthread_mutex_init(&loc->lock, NULL);
    sm_buffer_init(loc);
    sm_profile_init(&loc->profile);
    loc->stack[0].node = &loc->profile.root;
    loc->stack[0].region = SM_INVALID_ID;
    loc->begin_time = sm_clock_now();
    loc->stack[0].start = loc->begin_time;

    pthread_mutex_lock(&sm_loc_lock);
    uint32_t id = sm_loc_count;
    uint32_t b = id >> SM_LOC_BLOCK_BITS;
    if (b >= SM_LOC_MAX_BLOCKS ||
        (!sm_loc_blocks[b] && !(sm_loc_blocks[b] = calloc(SM_LOC_BLOCK, sizeof(sm_location_t *))))) {
        pthread_mutex_unlock(&sm_loc_lock);
        free(loc->stack);
        free(loc);
        return NULL;
    }
    loc->id = id;
    sm_loc_blocks[b][id & (SM_LOC_BLOCK - 1)] = loc;
    __atomic_store_n(&sm_loc_count, id + 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&sm_loc_lock);
    return loc;
}

/* --crash-safe: the location as it is now, to the journal (a later entry
 * of the same id replaces it). */
static void sm_location_journal(const sm_location_t *loc)
{
    if (!sm_journal_on())
        return;
    sm_journal_location_t e;
    memset(&e, 0, sizeof e);
    e.id = loc->id;
    e.type = loc->type;
    e.creator = loc->creator;
    memcpy(e.name, loc->name, sizeof e.name);
    sm_journal_add(SM_J_LOCATION, &e, sizeof e, NULL, 0);
}

static void sm_location_name_thread(sm_location_t *loc)
{
    if (loc->tid == getpid())
        snprintf(loc->name, sizeof loc->name, "Thread %u (main)", loc->id);
    else
        snprintf(loc->name, sizeof loc->name, "Thread %u", loc->id);
    sm_location_journal(loc);
}

void sm_location_bind_current(sm_location_t *loc)
{
    loc->tid = (pid_t)syscall(SYS_gettid);
    sm_location_name_thread(loc);
    sm_tls_location = loc;
    if (sm_loc_key_ok)
        pthread_setspecific(sm_loc_key, loc);
    sm_counters_thread_start(loc);
    sm_subsystems_thread_begin(loc);
}

/* Where a thread lands when it has no location: one that never touched the
 * API before, or any thread while the process is not measured (a shared,
 * closed location swallows its events). */
static sm_location_t sm_inactive_location = {.closed = SM_LOC_CLOSED};

static sm_location_t *sm_location_for_thread_held(void);

/* A thread's first event: the location is made and bound (the registry's
 * lock, malloc, the sampling timer) with signals held (sig_hold.h). */
sm_location_t *sm_location_for_thread_slow(void)
{
    sm_sig_hold(SM_SIG_LOCKS);
    sm_location_t *loc = sm_location_for_thread_held();
    sm_sig_release();
    return loc;
}

static sm_location_t *sm_location_for_thread_held(void)
{
    if (!sm_runtime_active) {
        if (!sm_inactive_location.stack) {
            static sm_frame_t root = {.region = SM_INVALID_ID};
            sm_inactive_location.stack = sm_inactive_location.sp = &root;
            sm_inactive_location.stack_limit = &root;
        }
        return &sm_inactive_location;
    }
    sm_location_t *loc = sm_location_alloc(SM_LOCATION_CPU_THREAD);
    if (!loc)
        return &sm_inactive_location;
    sm_location_bind_current(loc);
    if (loc->tracing && !sm_dormant_idle)
        sm_trace_record(loc, SM_REC_THREAD_BEGIN, SM_INVALID_ID, loc->begin_time);
    return loc;
}

sm_location_t *sm_location_new_thread(sm_location_t *creator)
{
    sm_location_t *loc = sm_location_alloc(SM_LOCATION_CPU_THREAD);
    if (!loc)
        return NULL;
    snprintf(loc->name, sizeof loc->name, "Thread %u", loc->id);
    loc->creator = creator->id;
    uint32_t depth = (uint32_t)(creator->sp - creator->stack);
    if (depth) {
        loc->creator_path = malloc(depth * sizeof *loc->creator_path);
        if (loc->creator_path) {
            for (uint32_t i = 0; i < depth; i++)
                loc->creator_path[i] = creator->stack[i + 1].region;
            loc->creator_depth = depth;
        }
    }
    /* Start and stop of the whole process follow new threads; the thread-only
     * switch does not. */
    loc->thread_enabled = 1;
    sm_location_journal(loc);
    return loc;
}

sm_location_t *sm_location_create(sm_location_type_t type, const char *name)
{
    sm_location_t *loc = sm_location_alloc(type);
    if (loc && name)
        snprintf(loc->name, sizeof loc->name, "%s", name);
    if (loc)
        sm_location_journal(loc);
    return loc;
}

uint32_t sm_trace_max_depth = 4096;

sm_frame_t *sm_location_grow_stack(sm_location_t *loc)
{
    uint32_t depth = (uint32_t)(loc->sp - loc->stack);
    if (loc->deep_open || depth >= sm_trace_max_depth) {
        /* Beyond the limit: a sentinel on top (the slot kept for it), so
         * that every leave takes the slow way and closes a counted enter. */
        if (!loc->deep_open) {
            sm_frame_t *s = loc->sp + 1;
            s->region = SM_DEEP_REGION;
            s->start = 0;
            s->child = 0;
            s->node = loc->profiling ? loc->sp->node : NULL;
            loc->sp = s;
        }
        loc->deep_open++;
        loc->deep_enters++;
        return NULL;
    }
    uint32_t cap = loc->stack_capacity * 2;
    /* Up to the limit, with room for the sentinel: [0] root, [1..limit]
     * regions, [limit + 1] the sentinel. */
    if (cap > sm_trace_max_depth + 2)
        cap = sm_trace_max_depth + 2;
    if (cap <= loc->stack_capacity)
        cap = loc->stack_capacity + 2;
    /* No signal handler may jump out of malloc's lock, nor leave the stack
     * pointing at freed memory (sig_hold.h). */
    sm_sig_hold(SM_SIG_LOCKS);
    sm_frame_t *s = realloc(loc->stack, cap * sizeof *s);
    if (!s)
        abort(); /* cannot record this enter, and the leave would unbalance */
    loc->stack = s;
    loc->stack_capacity = cap;
    loc->sp = s + depth;
    loc->stack_limit = s + (cap == sm_trace_max_depth + 2 ? cap - 2 : cap - 1);
    sm_sig_release();
    return loc->sp + 1;
}

void sm_location_leave_deep(sm_location_t *loc)
{
    if (--loc->deep_open == 0)
        loc->sp--; /* the sentinel */
}

void sm_location_close(sm_location_t *loc, uint64_t time)
{
    if (__atomic_load_n(&loc->closed, __ATOMIC_ACQUIRE) == SM_LOC_CLOSED)
        return;
    while (loc->sp != loc->stack)
        sm_event_leave_top(loc, time);
    loc->stack[0].child = 0;
    if (loc->tracing && !sm_dormant_idle)
        sm_trace_record(loc, SM_REC_THREAD_END, 0, time);
    sm_counters_thread_stop(loc);
    sm_subsystems_thread_end(loc);
    loc->end_time = time;
    __atomic_store_n(&loc->closed, SM_LOC_CLOSED, __ATOMIC_RELEASE);
}

typedef int (*sm_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

int sm_internal_thread_create(pthread_t *thread, size_t stack, void *(*start)(void *), void *arg)
{
    sm_ending_before_thread();
    sm_create_fn create = (sm_create_fn)dlsym(RTLD_NEXT, "pthread_create");
    if (!create)
        create = pthread_create;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    if (stack)
        pthread_attr_setstacksize(&attr, stack);
    int rc = create(thread, &attr, start, arg);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

void sm_locations_fork_child(sm_location_t *self, uint64_t now)
{
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    sm_loc_lock = m; /* a thread of the parent may have held it */
    /* The other threads are not in the child: their locations (and the
     * parent's GPU and metric ones) stay the parent's, out of the registry. */
    if (!self || !sm_loc_blocks[0]) {
        __atomic_store_n(&sm_loc_count, 0, __ATOMIC_RELEASE);
        return;
    }
    sm_loc_blocks[0][0] = self;
    self->id = 0;
    __atomic_store_n(&sm_loc_count, 1, __ATOMIC_RELEASE);
    /* What it counted belongs to the parent; it begins now. */
    self->tid = (pid_t)syscall(SYS_gettid);
    sm_location_name_thread(self);
    self->begin_time = now;
    self->end_time = 0;
    self->creator = SM_INVALID_ID;
    self->creator_depth = 0;
    self->creator_path = NULL;
    self->start_routine = NULL;
    self->unmatched_leaves = 0;
    self->deep_enters = 0;
    self->msg_matrix = NULL;
    self->msg_matrix_n = 0;
    self->throttled_calls = NULL;
    self->counters = NULL; /* the parent's counter set is not the child's to read */
    self->stamp_frame = NULL;
    self->pass_frame = NULL;
    self->pass_start = 0;
    memset(self->record_count, 0, sizeof self->record_count);
    memset(self->record_words, 0, sizeof self->record_words);
    memset(self->transfer_total, 0, sizeof self->transfer_total);
    /* The regions open at the fork are entered again now. */
    uint32_t depth = (uint32_t)(self->sp - self->stack);
    sm_profile_node_t *open[256];
    uint32_t n_open = 0;
    for (sm_frame_t *f = self->stack; f <= self->sp; f++) {
        f->start = now;
        f->child = 0;
        if (f > self->stack && n_open < sizeof open / sizeof *open)
            open[n_open++] = f->node;
    }
    if (self->profiling)
        sm_profile_restart(&self->profile, open, n_open);
    if (self->tracing) {
        sm_trace_record(self, SM_REC_THREAD_BEGIN, SM_INVALID_ID, now);
        for (uint32_t i = 1; i <= depth; i++)
            if (self->stack[i].region != SM_DEEP_REGION)
                sm_trace_record(self, SM_REC_ENTER, self->stack[i].region, now);
    }
}
