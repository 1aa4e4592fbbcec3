/* Virtual speedups (causal.h): a CPU-time timer per thread, and the delays
 * that make the chosen function look faster.
 *
 * Time is counted in ns.  The global count is the delay inserted so far;
 * each thread's own count is the delay it has accounted for, by inserting
 * it or by paying it.  A sample inside the chosen function adds speedup x
 * period to its thread's count (the time that thread saves); when a
 * thread's count passes the global one, the global count is raised to it
 * (every other thread now owes that much); a thread behind the global
 * count sleeps the difference (pays) at its next sample, and before it
 * wakes another thread (the interposed unlock, signal, post: catch_up).
 * Two threads in the chosen function at once raise the global count only
 * once, as the speedup of both would.  A thread that was blocked (a lock,
 * a wait, a sleep, MPI) is forgiven what was inserted while it waited
 * (block_begin/block_end): it would have waited anyway.
 *
 * The handler takes no lock, allocates nothing, keeps errno; it sleeps
 * with the clock_nanosleep system call (a signal-safe wait, never a spin).
 * A thread's oversleep (the kernel wakes it late) is credited to its next
 * payment. */
#define _GNU_SOURCE
#include "causal_internal.h"
#include "causal_api.h"
#include "causal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "../core/job.h"
#include "../core/sig_hold.h"
#include "../util/log.h"

volatile int32_t sm_causal_selected = -1;
sm_causal_range_t sm_causal_line_ranges[SM_CAUSAL_MAX_RANGES];
volatile uint32_t sm_causal_line_n;
volatile uint64_t sm_causal_delay_ns;

typedef struct sm_cd_thread {
    sm_location_t *loc;
    timer_t timer;
    int have_timer;
    int fd;                     /* its perf event, or -1 (a POSIX timer) */
    volatile sig_atomic_t busy; /* in the handler's work or a wrapper's */
    uint32_t blocked;           /* nesting of blocking calls */
    uint64_t local;             /* delay accounted for (ns) */
    uint64_t pending;           /* saved by samples, not yet added to local (atomic) */
    uint64_t block_mark;        /* the global count when it blocked */
    uint64_t excess;            /* overslept, credited to the next payment */
    uint64_t samples;
    uint64_t paid;              /* ns slept */
    struct sm_cd_thread *next;
} sm_cd_thread_t;

static SM_TLS sm_cd_thread_t *sm_cd_tls;
static sm_cd_thread_t *sm_cd_threads; /* pushed with a CAS */
/* What the threads of a process share, and in a job the processes of a
 * node (shared memory named by the job: a delay inserted in one rank is
 * paid by the threads of every rank of the node). */
typedef struct sm_cd_shared {
    uint64_t global;    /* the delay count, ns (atomic) */
    uint64_t mpi_wake;  /* the global count at the latest MPI call's catch-up */
    uint64_t candidate; /* hash of a function a sample hit lately, 0: none */
    uint64_t candidate_offset; /* that sample's address from the function's start */
} sm_cd_shared_t;
static sm_cd_shared_t sm_cd_private;
static sm_cd_shared_t *sm_cd_sh = &sm_cd_private;
static char sm_cd_shm_name[64];
static uint64_t sm_cd_selected_samples;
static uint64_t *sm_cd_fn_samples;    /* per function of the scope, atomic */
static uint64_t sm_cd_period;
static int sm_cd_signal;
static volatile sig_atomic_t sm_cd_on;
static uint32_t sm_cd_failures;
/* The sample source: a perf task-clock event per thread where the kernel
 * allows it (its overflow comes from a high-resolution timer, so 1 ms is 1
 * ms), else a POSIX CPU-time timer (checked at the scheduler's tick, often
 * every 4 ms: samples come in bunches, each with the periods it stands
 * for).  Chosen at the first thread. */
typedef enum { SM_CD_SOURCE_UNKNOWN, SM_CD_SOURCE_PERF, SM_CD_SOURCE_TIMER } sm_cd_source_t;
static sm_cd_source_t sm_cd_source;

uint64_t sm_causal_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Sleeps ns (the system call: signal-safe, and not the interposed
 * nanosleep, which would count it as a block).  Returns the time slept. */
static uint64_t sm_cd_sleep(uint64_t ns)
{
    uint64_t start = sm_causal_now_ns();
    uint64_t until = start + ns;
    struct timespec ts = {(time_t)(until / 1000000000u), (long)(until % 1000000000u)};
    while (syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0 &&
           errno == EINTR)
        ;
    return sm_causal_now_ns() - start;
}

/* Brings t level with the global count: adds what its samples saved,
 * raises the global count to it, or pays what it owes.  With t->busy set
 * (the handler does not come in between). */
static void sm_cd_sync(sm_cd_thread_t *t, int may_pay)
{
    t->local += __atomic_exchange_n(&t->pending, 0, __ATOMIC_RELAXED);
    uint64_t g = __atomic_load_n(&sm_cd_sh->global, __ATOMIC_ACQUIRE);
    while (t->local > g) {
        if (__atomic_compare_exchange_n(&sm_cd_sh->global, &g, t->local, true, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE))
            return;
    }
    if (!may_pay || t->local >= g)
        return;
    uint64_t owed = g - t->local;
    t->local = g;
    if (owed <= t->excess) {
        t->excess -= owed;
        return;
    }
    owed -= t->excess;
    t->excess = 0;
    uint64_t slept = sm_cd_sleep(owed);
    t->paid += slept;
    if (slept > owed)
        t->excess = slept - owed;
}

static uintptr_t sm_cd_pc(void *uc)
{
#if defined(__x86_64__)
    return (uintptr_t)((ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    return (uintptr_t)((ucontext_t *)uc)->uc_mcontext.pc;
#elif defined(__powerpc64__)
    return (uintptr_t)((ucontext_t *)uc)->uc_mcontext.gp_regs[32];
#else
    (void)uc;
    return 0;
#endif
}

static void sm_cd_handler(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    int saved_errno = errno;
    sm_cd_thread_t *t = sm_cd_tls;
    uint64_t weight = 1;
    if (!t || !sm_cd_on) {
        errno = saved_errno;
        return;
    }
    if (t->fd >= 0) {
        if (si->si_code != POLL_HUP || si->si_fd != t->fd) {
            errno = saved_errno;
            return;
        }
        /* One overflow, then the event stops: armed again for the next. */
        ioctl(t->fd, PERF_EVENT_IOC_REFRESH, 1);
    } else {
        if (si->si_code != SI_TIMER) {
            errno = saved_errno;
            return;
        }
        /* A tick that came late stands for every period that passed. */
        int over = timer_getoverrun(t->timer);
        weight += over > 0 ? (uint64_t)over : 0u;
    }
    t->samples += weight;
    uintptr_t pc = sm_cd_pc(uc);
    int32_t f = sm_causal_scope_find(pc);
    if (f >= 0) {
        __atomic_add_fetch(&sm_cd_fn_samples[f], weight, __ATOMIC_RELAXED);
        uint64_t none = 0;
        const sm_causal_fn_t *fn = sm_causal_scope_fn((uint32_t)f);
        if (sm_causal_selected < 0 && !sm_cd_sh->candidate &&
            __atomic_compare_exchange_n(&sm_cd_sh->candidate, &none, fn->hash, false,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            __atomic_store_n(&sm_cd_sh->candidate_offset, pc - fn->lo, __ATOMIC_RELEASE);
        int hit = f == __atomic_load_n(&sm_causal_selected, __ATOMIC_ACQUIRE);
        uint32_t nr = hit ? sm_causal_line_n : 0;
        if (nr) { /* line mode: the line's own addresses */
            hit = 0;
            for (uint32_t k = 0; k < nr && !hit; k++)
                hit = pc >= sm_causal_line_ranges[k].lo && pc < sm_causal_line_ranges[k].hi;
        }
        if (hit) {
            __atomic_add_fetch(&t->pending, weight * sm_causal_delay_ns, __ATOMIC_RELAXED);
            __atomic_add_fetch(&sm_cd_selected_samples, weight, __ATOMIC_RELAXED);
        }
    }
    if (!t->busy) {
        t->busy = 1;
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        sm_cd_sync(t, !t->blocked);
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        t->busy = 0;
    }
    errno = saved_errno;
}

/* ---------------------------------------------------------------- the wrappers' table */

/* Per synchronisation object (hashed by address): the global count when a
 * thread last woke others through it.  A collision only makes a woken
 * thread forgive up to the present (as for a sleep). */
#define SM_CD_WAKES 4096
static struct {
    uintptr_t obj;
    uint64_t global;
} sm_cd_wakes[SM_CD_WAKES];

static inline uint32_t sm_cd_wake_slot(const void *obj)
{
    uint64_t h = (uint64_t)(uintptr_t)obj * 0x9e3779b97f4a7c15ull;
    return (uint32_t)(h >> 52) & (SM_CD_WAKES - 1);
}

static void sm_cd_catch_up(const void *obj)
{
    sm_cd_thread_t *t = sm_cd_tls;
    if (!t || !sm_cd_on || t->busy || t->blocked)
        return;
    int saved_errno = errno;
    t->busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    sm_cd_sync(t, 1);
    if (obj == SM_CAUSAL_MPI) {
        __atomic_store_n(&sm_cd_sh->mpi_wake, t->local, __ATOMIC_RELEASE);
    } else if (obj) {
        uint32_t k = sm_cd_wake_slot(obj);
        __atomic_store_n(&sm_cd_wakes[k].global, t->local, __ATOMIC_RELAXED);
        __atomic_store_n(&sm_cd_wakes[k].obj, (uintptr_t)obj, __ATOMIC_RELEASE);
    }
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->busy = 0;
    errno = saved_errno;
}

static void sm_cd_block_begin(void)
{
    sm_cd_thread_t *t = sm_cd_tls;
    if (!t || !sm_cd_on)
        return;
    t->busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (t->blocked++ == 0) {
        sm_cd_sync(t, 0); /* what it saved counts; what it owes stays owed */
        t->block_mark = __atomic_load_n(&sm_cd_sh->global, __ATOMIC_ACQUIRE);
    }
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->busy = 0;
}

static void sm_cd_block_end(const void *obj)
{
    sm_cd_thread_t *t = sm_cd_tls;
    if (!t || !t->blocked)
        return;
    int saved_errno = errno;
    t->busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (--t->blocked == 0) {
        /* Forgiven: what was inserted while it waited, up to where its
         * waker had come (what the waker inserted after waking it, while
         * it sat in the run queue, is owed), never beyond the global
         * count (what it paid while spinning in a wait counts). */
        uint64_t g = __atomic_load_n(&sm_cd_sh->global, __ATOMIC_ACQUIRE);
        uint64_t until = g;
        if (obj == SM_CAUSAL_MPI) {
            uint64_t w = __atomic_load_n(&sm_cd_sh->mpi_wake, __ATOMIC_ACQUIRE);
            until = w < g ? w : g;
        } else if (obj) {
            uint32_t k = sm_cd_wake_slot(obj);
            if (__atomic_load_n(&sm_cd_wakes[k].obj, __ATOMIC_ACQUIRE) == (uintptr_t)obj) {
                uint64_t w = __atomic_load_n(&sm_cd_wakes[k].global, __ATOMIC_RELAXED);
                until = w < g ? w : g;
            }
        }
        uint64_t forgiven = until > t->block_mark ? until - t->block_mark : 0;
        if (t->local < g)
            t->local = t->local + forgiven < g ? t->local + forgiven : g;
    }
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->busy = 0;
    errno = saved_errno;
}

static const sm_causal_api_t sm_cd_api = {
    .version = SM_CAUSAL_API_VERSION,
    .catch_up = sm_cd_catch_up,
    .block_begin = sm_cd_block_begin,
    .block_end = sm_cd_block_end,
    .region_end = sm_causal_region_end,
};

/* libsysmeasure-causal.so's way in (causal_api.h). */
SM_EXPORT const sm_causal_api_t *sysmeasure_causal_api(void);
SM_EXPORT const sm_causal_api_t *sysmeasure_causal_api(void)
{
    return sm_cd_on ? &sm_cd_api : NULL;
}

/* ---------------------------------------------------------------- timers */

static void sm_cd_failed(const char *what, int err)
{
    if (__atomic_fetch_add(&sm_cd_failures, 1, __ATOMIC_RELAXED) == 0)
        sm_warning("causal profiling: %s failed (%s); a thread without a timer is not "
                   "sampled, the program runs on", what, strerror(err));
}

/* t becomes the calling thread's, in the list. */
static void sm_cd_push(sm_cd_thread_t *t)
{
    sm_cd_tls = t;
    sm_cd_thread_t *head = __atomic_load_n(&sm_cd_threads, __ATOMIC_RELAXED);
    do
        t->next = head;
    while (!__atomic_compare_exchange_n(&sm_cd_threads, &head, t, true, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED));
}

/* The calling thread's task-clock event, its overflow signalled to this
 * thread alone (F_SETOWN_EX): 0, or -1 (the kernel does not allow it). */
static int sm_cd_perf_open(sm_cd_thread_t *t)
{
    struct perf_event_attr pe;
    memset(&pe, 0, sizeof pe);
    pe.type = PERF_TYPE_SOFTWARE;
    pe.size = sizeof pe;
    pe.config = PERF_COUNT_SW_TASK_CLOCK;
    pe.sample_period = sm_cd_period;
    pe.disabled = 1;
    pe.exclude_kernel = 1;
    pe.exclude_hv = 1;
    int fd = (int)syscall(SYS_perf_event_open, &pe, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0)
        return -1;
    struct f_owner_ex owner = {F_OWNER_TID, (pid_t)syscall(SYS_gettid)};
    if (fcntl(fd, F_SETFL, O_ASYNC) != 0 || fcntl(fd, F_SETSIG, sm_cd_signal) != 0 ||
        fcntl(fd, F_SETOWN_EX, &owner) != 0) {
        close(fd);
        return -1;
    }
    t->fd = fd;
    t->have_timer = 1;
    return 0;
}

void sm_causal_delay_thread_begin(sm_location_t *loc)
{
    if (!sm_cd_on || sm_cd_tls || loc->type != SM_LOCATION_CPU_THREAD)
        return;
    sm_cd_thread_t *t = calloc(1, sizeof *t);
    if (!t) {
        sm_cd_failed("allocating a thread's state", ENOMEM);
        return;
    }
    t->loc = loc;
    t->fd = -1;
    /* A new thread owes nothing inserted before it began. */
    t->local = __atomic_load_n(&sm_cd_sh->global, __ATOMIC_ACQUIRE);
    if (sm_cd_source != SM_CD_SOURCE_TIMER && sm_cd_perf_open(t) == 0) {
        sm_cd_source = SM_CD_SOURCE_PERF;
        sm_cd_push(t);
        ioctl(t->fd, PERF_EVENT_IOC_REFRESH, 1);
        return;
    }
    if (sm_cd_source == SM_CD_SOURCE_UNKNOWN)
        sm_cd_source = SM_CD_SOURCE_TIMER;
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = sm_cd_signal;
    sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
    if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &t->timer) != 0) {
        sm_cd_failed("timer_create", errno);
        free(t);
        return;
    }
    t->have_timer = 1;
    sm_cd_push(t);
    struct itimerspec its;
    its.it_interval.tv_sec = (time_t)(sm_cd_period / 1000000000u);
    its.it_interval.tv_nsec = (long)(sm_cd_period % 1000000000u);
    its.it_value = its.it_interval;
    if (timer_settime(t->timer, 0, &its, NULL) != 0)
        sm_cd_failed("timer_settime", errno);
}

static void sm_cd_source_close(sm_cd_thread_t *t)
{
    if (t->fd >= 0) {
        ioctl(t->fd, PERF_EVENT_IOC_DISABLE, 0);
        close(t->fd); /* t->fd stays: a signal still queued is recognised */
    } else {
        timer_delete(t->timer);
    }
}

void sm_causal_delay_thread_end(sm_location_t *loc)
{
    for (sm_cd_thread_t *t = __atomic_load_n(&sm_cd_threads, __ATOMIC_ACQUIRE); t; t = t->next)
        if (t->loc == loc && __atomic_exchange_n(&t->have_timer, 0, __ATOMIC_ACQ_REL))
            sm_cd_source_close(t);
}

static void sm_cd_after_fork_child(void)
{
    /* Timers are not inherited, and the child's experiments are not ours. */
    sm_cd_on = 0;
    for (sm_cd_thread_t *t = sm_cd_threads; t; t = t->next) {
        if (t->have_timer && t->fd >= 0)
            close(t->fd); /* the parent's thread's event */
        t->have_timer = 0;
    }
}

/* A real-time signal with no handler and not ignored (after the call-stack
 * sampler took its own). */
static int sm_cd_choose_signal(void)
{
    for (int s = SIGRTMIN + 5; s <= SIGRTMAX - 3; s++) {
        struct sigaction old;
        if (sigaction(s, NULL, &old) == 0 && !(old.sa_flags & SA_SIGINFO) &&
            old.sa_handler == SIG_DFL)
            return s;
    }
    return 0;
}

/* The job's shared state on this node: 0, or -1 (said; the process then
 * keeps its own). */
static int sm_cd_share(void)
{
    snprintf(sm_cd_shm_name, sizeof sm_cd_shm_name, "/sysmeasure-causal-%016llx",
             (unsigned long long)sm_job_hash());
    int fd = shm_open(sm_cd_shm_name, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        sm_warning("causal profiling: shared memory %s: %s; the delays of this rank are not "
                   "paid by the others of its node", sm_cd_shm_name, strerror(errno));
        sm_cd_shm_name[0] = '\0';
        return -1;
    }
    void *p = MAP_FAILED;
    if (ftruncate(fd, sizeof(sm_cd_shared_t)) == 0)
        p = mmap(NULL, sizeof(sm_cd_shared_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        sm_warning("causal profiling: shared memory %s cannot be mapped; the delays of this "
                   "rank are not paid by the others of its node", sm_cd_shm_name);
        sm_cd_shm_name[0] = '\0';
        return -1;
    }
    sm_cd_sh = p;
    return 0;
}

uint64_t sm_causal_candidate(uint64_t *offset)
{
    uint64_t h = __atomic_load_n(&sm_cd_sh->candidate, __ATOMIC_ACQUIRE);
    *offset = __atomic_load_n(&sm_cd_sh->candidate_offset, __ATOMIC_ACQUIRE);
    return h;
}

void sm_causal_candidate_clear(void)
{
    __atomic_store_n(&sm_cd_sh->candidate_offset, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&sm_cd_sh->candidate, 0, __ATOMIC_RELEASE);
}

int sm_causal_delay_init(const sm_config_t *cfg, int job)
{
    sm_cd_period = (uint64_t)cfg->causal_period * 1000u;
    if (job)
        sm_cd_share();
    sm_cd_fn_samples = calloc(sm_causal_scope_count() + 1, sizeof *sm_cd_fn_samples);
    if (!sm_cd_fn_samples) {
        sm_error("causal profiling is off: out of memory");
        return -1;
    }
    sm_cd_signal = sm_cd_choose_signal();
    if (!sm_cd_signal) {
        sm_error("causal profiling is off: no free real-time signal for its timers");
        return -1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = sm_cd_handler;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigfillset(&sa.sa_mask);
    if (sigaction(sm_cd_signal, &sa, NULL) != 0) {
        sm_error("causal profiling is off: signal %d cannot be caught (%s)", sm_cd_signal,
                 strerror(errno));
        return -1;
    }
    sm_sig_let_through(sm_cd_signal); /* its handler takes no lock */
    pthread_atfork(NULL, NULL, sm_cd_after_fork_child);
    sm_cd_on = 1;
    if (sm_tls_location)
        sm_causal_delay_thread_begin(sm_tls_location);
    return 0;
}

void sm_causal_delay_stop(void)
{
    if (!sm_cd_on)
        return;
    sm_causal_selected = -1;
    sm_cd_on = 0;
    for (sm_cd_thread_t *t = __atomic_load_n(&sm_cd_threads, __ATOMIC_ACQUIRE); t; t = t->next)
        if (__atomic_exchange_n(&t->have_timer, 0, __ATOMIC_ACQ_REL))
            sm_cd_source_close(t);
    /* The handler stays: a tick already queued must not end the process.
     * The shared memory stays mapped (late readers); its name goes. */
    if (sm_cd_shm_name[0])
        shm_unlink(sm_cd_shm_name);
}

uint64_t sm_causal_global_delay(void)
{
    return __atomic_load_n(&sm_cd_sh->global, __ATOMIC_ACQUIRE);
}

uint64_t sm_causal_selected_samples(void)
{
    return __atomic_load_n(&sm_cd_selected_samples, __ATOMIC_RELAXED);
}

uint64_t sm_causal_function_samples(uint32_t fn)
{
    return sm_cd_fn_samples && fn < sm_causal_scope_count()
               ? __atomic_load_n(&sm_cd_fn_samples[fn], __ATOMIC_RELAXED)
               : 0;
}

uint64_t sm_causal_total_samples(void)
{
    uint64_t n = 0;
    for (sm_cd_thread_t *t = __atomic_load_n(&sm_cd_threads, __ATOMIC_ACQUIRE); t; t = t->next)
        n += t->samples;
    return n;
}

uint64_t sm_causal_paid_ns(void)
{
    uint64_t n = 0;
    for (sm_cd_thread_t *t = __atomic_load_n(&sm_cd_threads, __ATOMIC_ACQUIRE); t; t = t->next)
        n += t->paid;
    return n;
}

const char *sm_causal_sample_source(void)
{
    return sm_cd_source == SM_CD_SOURCE_PERF ? "perf task-clock events" : "CPU-time timers";
}

uint64_t sm_causal_period_ns(void)
{
    return sm_cd_period;
}

uint32_t sm_causal_threads(void)
{
    uint32_t n = 0;
    for (sm_cd_thread_t *t = __atomic_load_n(&sm_cd_threads, __ATOMIC_ACQUIRE); t; t = t->next)
        n++;
    return n;
}
