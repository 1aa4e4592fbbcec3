/* Call-stack sampling (callstack.h). */
#define _GNU_SOURCE
#include "callstack.h"
#include "../core/sig_hold.h"

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "sm_build.h"
#include "../core/clock.h"
#include "../core/contexts.h"
#include "../core/events.h"
#include "../core/location.h"
#include "../core/runtime.h"
#include "../util/log.h"
#include "../util/srcloc.h"
#include "../util/symbols.h"

#ifdef SM_HAVE_LIBUNWIND
#define UNW_LOCAL_ONLY
#include <libunwind.h>

/* libunwind is loaded when sampling starts (sm_cs_load), not linked: every
 * measured program would otherwise load and relocate it at start-up,
 * sampling or not.  Each entry: our short name, libunwind.h's name (a macro
 * for the library's own symbol, _ULx86_64_step and the like). */
#define SM_UNW_FUNCTIONS(X)                                                             \
    X(backtrace, unw_backtrace) X(init_local2, unw_init_local2) X(get_reg, unw_get_reg)  \
    X(step, unw_step) X(set_caching_policy, unw_set_caching_policy)
#define SM_UNW_STR2(x) #x
#define SM_UNW_STR(x) SM_UNW_STR2(x) /* the symbol, after expansion */
static struct {
#define SM_UNW_POINTER(mine, theirs) __typeof__(theirs) *mine;
    SM_UNW_FUNCTIONS(SM_UNW_POINTER)
#undef SM_UNW_POINTER
    __typeof__(unw_local_addr_space) *local_addr_space;
} sm_unw;

/* 0, or -1 with one warning naming the problem. */
static int sm_cs_load(void)
{
    static const char *const names[] = {"libunwind.so.8", "libunwind.so"};
    void *lib = NULL;
    const char *why = "";
    for (size_t i = 0; i < sizeof names / sizeof *names && !lib; i++)
        if (!(lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL)))
            why = dlerror();
    if (!lib) {
        sm_warning("call-stack sampling is off: libunwind cannot be loaded (%s)", why ? why : "");
        return -1;
    }
#define SM_UNW_RESOLVE(mine, theirs)                                                    \
    if (!(*(void **)&sm_unw.mine = dlsym(lib, SM_UNW_STR(theirs)))) {                   \
        sm_warning("call-stack sampling is off: libunwind lacks %s", SM_UNW_STR(theirs)); \
        return -1;                                                                      \
    }
    SM_UNW_FUNCTIONS(SM_UNW_RESOLVE)
#undef SM_UNW_RESOLVE
    sm_unw.local_addr_space = dlsym(lib, SM_UNW_STR(unw_local_addr_space));
    if (!sm_unw.local_addr_space) {
        sm_warning("call-stack sampling is off: libunwind lacks %s",
                   SM_UNW_STR(unw_local_addr_space));
        return -1;
    }
    return 0;
}

#define SM_CS_MAX_DEPTH 128
#define SM_CS_NODES (1u << 15)     /* calling-context nodes per thread */
#define SM_CS_INDEX (SM_CS_NODES * 2)
#define SM_CS_TRACE (UINT64_C(1) << 22) /* trace samples per thread (64 MiB reserved) */

/* A node of a thread's calling-context tree: under parent 0, key is the
 * profile node active at the sample; below, a code address (inside the
 * call for return addresses). */
typedef struct sm_cs_node {
    uint64_t key;
    uint32_t parent;
    uint32_t samples; /* that ended here (exclusive) */
} sm_cs_node_t;

typedef struct sm_cs_sample {
    uint64_t time;
    uint32_t node;
    uint32_t pad;
} sm_cs_sample_t;

/* One thread's tables, reserved (not committed) with mmap when its timer
 * starts: pages are touched only as samples come. */
typedef struct sm_cs_thread {
    sm_location_t *loc;
    timer_t timer;
    int have_timer;
    volatile sig_atomic_t busy;
    uint32_t n_nodes;         /* node 0 is unused: 0 = no parent */
    uint64_t samples, lost, trace_lost, n_trace;
    uint32_t truncated;
    sm_cs_node_t *nodes;
    uint32_t *index;          /* node + 1; 0 empty */
    sm_cs_sample_t *trace;    /* NULL when not tracing */
    struct sm_cs_thread *next;
} sm_cs_thread_t;

static SM_TLS sm_cs_thread_t *sm_cs_tls;
static sm_cs_thread_t *sm_cs_threads; /* pushed with a CAS */
static volatile sig_atomic_t sm_cs_on;
static int sm_cs_signal;
static int sm_cs_clock_cpu;
static int sm_cs_tracing;
static long sm_cs_period_ns;
static uint32_t sm_cs_timer_failures;
static int sm_cs_failure_said;
static struct sigaction sm_cs_installed;

static inline uint32_t sm_cs_hash(uint64_t key, uint32_t parent)
{
    uint64_t h = (key ^ ((uint64_t)parent << 40 | parent)) * 0x9e3779b97f4a7c15ull;
    return (uint32_t)(h >> 40);
}

/* The child of parent for key, made if new; 0 when the table is full.
 * Runs in the signal handler: plain loads and stores on this thread's own
 * tables. */
static inline uint32_t sm_cs_child(sm_cs_thread_t *t, uint32_t parent, uint64_t key)
{
    uint32_t i = sm_cs_hash(key, parent) & (SM_CS_INDEX - 1);
    for (uint32_t probes = 0; probes < SM_CS_INDEX; probes++, i = (i + 1) & (SM_CS_INDEX - 1)) {
        uint32_t id = t->index[i];
        if (!id) {
            if (t->n_nodes >= SM_CS_NODES)
                return 0;
            uint32_t n = t->n_nodes++;
            t->nodes[n].key = key;
            t->nodes[n].parent = parent;
            t->nodes[n].samples = 0;
            t->index[i] = n + 1;
            return n;
        }
        const sm_cs_node_t *e = &t->nodes[id - 1];
        if (e->key == key && e->parent == parent)
            return id - 1;
    }
    return 0;
}

/* The interrupted stack, innermost first, into ips; returns the depth.
 * unw_backtrace is libunwind's fast path (a per-thread cache of frame
 * layouts by address, about 10 ns a frame once warm, no system call): it
 * starts in this handler, so the frames up to the interrupted address
 * (known from the signal context) are skipped.  Where that address is not
 * found, the general unwinder from the signal context does it (slower:
 * microseconds a frame). */
static int sm_cs_unwind(void *uc, unw_word_t *ips)
{
    int n = 0;
#if defined(__x86_64__)
    void *raw[SM_CS_MAX_DEPTH + 8];
    unw_word_t pc = (unw_word_t)((ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP];
    int k = sm_unw.backtrace(raw, SM_CS_MAX_DEPTH + 8);
    for (int i = 0; i < k && i < 8; i++) {
        if ((unw_word_t)raw[i] != pc)
            continue;
        for (int j = i; j < k && n < SM_CS_MAX_DEPTH; j++) {
            unw_word_t ip = (unw_word_t)raw[j];
            if (!ip)
                break;
            /* A return address points after its call: inside the call. */
            ips[n++] = j == i ? ip : ip - 1;
        }
        return n;
    }
#endif
    unw_cursor_t c;
    if (sm_unw.init_local2(&c, (unw_context_t *)uc, UNW_INIT_SIGNAL_FRAME) == 0) {
        do {
            unw_word_t ip;
            if (sm_unw.get_reg(&c, UNW_REG_IP, &ip) < 0 || ip == 0)
                break;
            ips[n] = n ? ip - 1 : ip;
            n++;
        } while (n < SM_CS_MAX_DEPTH && sm_unw.step(&c) > 0);
    }
    return n;
}

static void sm_cs_handler(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    int saved_errno = errno;
    sm_cs_thread_t *t = sm_cs_tls;
    if (!t || !sm_cs_on || t->busy || si->si_code != SI_TIMER) {
        errno = saved_errno;
        return;
    }
    t->busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    uint64_t now = sm_clock_now();
    /* The instrumented path: the profile node of the top frame.  It may be
     * stale if the thread was pushing a frame; finish checks it. */
    const sm_location_t *loc = t->loc;
    uint64_t node_key = loc && loc->sp ? (uint64_t)(uintptr_t)loc->sp->node : 0;

    unw_word_t ips[SM_CS_MAX_DEPTH];
    int n = sm_cs_unwind(uc, ips);
    uint32_t ctx = 0;
    if (n > 0) {
        if (n == SM_CS_MAX_DEPTH)
            t->truncated++;
        ctx = sm_cs_child(t, 0, node_key);
        for (int i = n - 1; i >= 0 && ctx; i--)
            ctx = sm_cs_child(t, ctx, ips[i]);
    }
    /* A tick that came late stands for every period that passed: CPU-time
     * timers are checked at the scheduler's tick (often 250 Hz), so at
     * higher rates the kernel reports the periods it skipped as overruns. */
    int over = timer_getoverrun(t->timer);
    uint32_t weight = 1u + (over > 0 ? (uint32_t)over : 0u);
    if (ctx) {
        t->nodes[ctx].samples += weight;
        t->samples += weight;
        if (t->trace) {
            if (t->n_trace < SM_CS_TRACE) {
                t->trace[t->n_trace].time = now;
                t->trace[t->n_trace].node = ctx;
                t->n_trace++;
            } else {
                t->trace_lost++;
            }
        }
    } else {
        t->lost += weight;
    }
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->busy = 0;
    errno = saved_errno;
}

static void *sm_cs_reserve(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void sm_cs_timer_failed(const char *what, int err)
{
    __atomic_add_fetch(&sm_cs_timer_failures, 1, __ATOMIC_RELAXED);
    if (!__atomic_exchange_n(&sm_cs_failure_said, 1, __ATOMIC_RELAXED))
        sm_warning("call-stack sampling: %s failed (%s); a thread without a timer is not "
                   "sampled, the program runs on", what, strerror(err));
}

/* Libraries whose own threads (progress, events) are not the program's:
 * sampled only with sampling_runtime_threads. */
static const char *const sm_cs_runtime_libs[] = {
    "libmpi", "libopen-pal", "libopen-rte", "libpmix", "libevent", "libucp", "libucs",
    "libuct", "libfabric", "libpsm2", "libcuda", "libcupti", "libnvidia-ml",
    "libhsa-runtime64", "libamdhip64", "libnccl", "librccl"};
static int sm_cs_runtime_threads;

static int sm_cs_is_runtime_thread(const sm_location_t *loc)
{
    Dl_info info;
    if (sm_cs_runtime_threads || !loc->start_routine ||
        !dladdr(loc->start_routine, &info) || !info.dli_fname)
        return 0;
    const char *base = strrchr(info.dli_fname, '/');
    base = base ? base + 1 : info.dli_fname;
    for (size_t i = 0; i < sizeof sm_cs_runtime_libs / sizeof sm_cs_runtime_libs[0]; i++)
        if (strncmp(base, sm_cs_runtime_libs[i], strlen(sm_cs_runtime_libs[i])) == 0)
            return 1;
    return 0;
}

/* The calling thread's timer for t (not started yet): 0, or -1 (said). */
static int sm_cs_timer_make(sm_cs_thread_t *t)
{
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = sm_cs_signal;
    sev.sigev_value.sival_ptr = t;
    sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
    clockid_t clock = sm_cs_clock_cpu ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC;
    if (timer_create(clock, &sev, &t->timer) != 0) {
        sm_cs_timer_failed("timer_create", errno);
        return -1;
    }
    t->have_timer = 1;
    return 0;
}

/* t's timer ticking at the sampling period. */
static void sm_cs_timer_arm(sm_cs_thread_t *t)
{
    struct itimerspec its;
    its.it_interval.tv_sec = sm_cs_period_ns / 1000000000L;
    its.it_interval.tv_nsec = sm_cs_period_ns % 1000000000L;
    its.it_value = its.it_interval;
    if (timer_settime(t->timer, 0, &its, NULL) != 0)
        sm_cs_timer_failed("timer_settime", errno);
}

/* On the thread, right after it is bound to loc. */
static void sm_cs_thread_start(sm_location_t *loc)
{
    if (!sm_cs_on || sm_cs_tls || loc->type != SM_LOCATION_CPU_THREAD ||
        sm_cs_is_runtime_thread(loc))
        return;
    sm_cs_thread_t *t = calloc(1, sizeof *t);
    if (!t) {
        sm_cs_timer_failed("allocating the thread's tables", ENOMEM);
        return;
    }
    t->loc = loc;
    t->n_nodes = 1;
    t->nodes = sm_cs_reserve(sizeof *t->nodes * SM_CS_NODES);
    t->index = sm_cs_reserve(sizeof *t->index * SM_CS_INDEX);
    t->trace = sm_cs_tracing ? sm_cs_reserve(sizeof *t->trace * SM_CS_TRACE) : NULL;
    if (!t->nodes || !t->index || (sm_cs_tracing && !t->trace)) {
        sm_cs_timer_failed("reserving the thread's tables", ENOMEM);
        return; /* what was mapped stays: the process is small enough to ignore it */
    }
    if (sm_cs_timer_make(t) != 0)
        return;
    /* The thread's unwind cache is made now, not in the first tick. */
    void *warm[8];
    (void)sm_unw.backtrace(warm, 8);
    sm_cs_tls = t;
    sm_cs_thread_t *head = __atomic_load_n(&sm_cs_threads, __ATOMIC_RELAXED);
    do
        t->next = head;
    while (!__atomic_compare_exchange_n(&sm_cs_threads, &head, t, true, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED));
    sm_cs_timer_arm(t);
}

void sm_callstack_after_daemon(void)
{
    /* The calling thread's timer is not inherited: a new one. */
    sm_cs_thread_t *t = sm_cs_tls;
    if (sm_cs_on && t && !t->have_timer && sm_cs_timer_make(t) == 0)
        sm_cs_timer_arm(t);
}

/* The thread's location closes (it ends, or the run does): no more ticks. */
static void sm_cs_thread_stop(sm_location_t *loc)
{
    for (sm_cs_thread_t *t = __atomic_load_n(&sm_cs_threads, __ATOMIC_ACQUIRE); t; t = t->next)
        if (t->loc == loc && __atomic_exchange_n(&t->have_timer, 0, __ATOMIC_ACQ_REL))
            timer_delete(t->timer);
}

/* A real-time signal with no handler and not ignored: one nobody uses. */
static int sm_cs_choose_signal(void)
{
    for (int s = SIGRTMIN + 4; s <= SIGRTMAX - 4; s++) {
        struct sigaction old;
        if (sigaction(s, NULL, &old) != 0)
            continue;
        if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_DFL)
            return s;
    }
    return 0;
}

static void sm_cs_after_fork_child(void)
{
    /* Timers are not inherited: the child's thread has none (and a child
     * that calls exec starts its own, with its own measurement). */
    for (sm_cs_thread_t *t = sm_cs_threads; t; t = t->next)
        t->have_timer = 0;
}

int sm_callstack_init(const sm_config_t *cfg)
{
    if (!cfg->sampling)
        return 0;
    sm_cs_signal = sm_cs_choose_signal();
    if (!sm_cs_signal) {
        sm_warning("call-stack sampling is off: no free real-time signal for its timers");
        return -1;
    }
    sm_cs_clock_cpu = cfg->sampling_clock == SM_SAMPLING_CLOCK_CPU;
    sm_cs_tracing = cfg->trace;
    sm_cs_runtime_threads = cfg->sampling_runtime_threads;
    sm_cs_period_ns = 1000000000L / (long)(cfg->sampling_freq > 0 ? cfg->sampling_freq : 100);
    if (sm_cs_load() != 0)
        return -1;
    sm_unw.set_caching_policy(*sm_unw.local_addr_space, UNW_CACHE_PER_THREAD);
    /* Warm libunwind up outside a handler (its first use sets up state;
     * a miss in the fast path's cache takes the general unwinder). */
    void *warm[SM_CS_MAX_DEPTH];
    (void)sm_unw.backtrace(warm, SM_CS_MAX_DEPTH);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = sm_cs_handler;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigfillset(&sa.sa_mask); /* nothing else runs inside a sample */
    if (sigaction(sm_cs_signal, &sa, NULL) != 0) {
        sm_warning("call-stack sampling is off: signal %d cannot be caught (%s)", sm_cs_signal,
                   strerror(errno));
        return -1;
    }
    sm_cs_installed = sa;
    sm_sig_let_through(sm_cs_signal); /* its handler takes no lock (sig_hold.h) */
    pthread_atfork(NULL, NULL, sm_cs_after_fork_child);
    sm_cs_on = 1;
    if (sm_tls_location) /* bound before us */
        sm_cs_thread_start(sm_tls_location);
    return 0;
}

void sm_callstack_stop(void)
{
    if (!sm_cs_on)
        return;
    sm_cs_on = 0;
    for (sm_cs_thread_t *t = __atomic_load_n(&sm_cs_threads, __ATOMIC_ACQUIRE); t; t = t->next)
        if (__atomic_exchange_n(&t->have_timer, 0, __ATOMIC_ACQ_REL))
            timer_delete(t->timer);
    /* The handler stays installed: a tick already queued must not meet the
     * default action (which would end the process). */
}

/* ---------------------------------------------------------------- the end: symbols */

/* Code address -> the region of its function and its module, once each. */
typedef struct sm_cs_sym {
    uint64_t ip;
    sm_region_id_t region;
    sm_string_id_t module;
} sm_cs_sym_t;

static sm_cs_sym_t *sm_cs_syms;
static uint32_t sm_cs_syms_n, sm_cs_syms_size;

static sm_cs_sym_t *sm_cs_sym_slot(uint64_t ip)
{
    if ((sm_cs_syms_n + 1) * 2 >= sm_cs_syms_size) {
        uint32_t size = sm_cs_syms_size ? sm_cs_syms_size * 2 : 4096;
        sm_cs_sym_t *tab = calloc(size, sizeof *tab);
        if (!tab)
            return NULL;
        for (uint32_t i = 0; i < sm_cs_syms_size; i++) {
            if (!sm_cs_syms[i].ip)
                continue;
            uint32_t k = sm_cs_hash(sm_cs_syms[i].ip, 7) & (size - 1);
            while (tab[k].ip)
                k = (k + 1) & (size - 1);
            tab[k] = sm_cs_syms[i];
        }
        free(sm_cs_syms);
        sm_cs_syms = tab;
        sm_cs_syms_size = size;
    }
    uint32_t k = sm_cs_hash(ip, 7) & (sm_cs_syms_size - 1);
    while (sm_cs_syms[k].ip && sm_cs_syms[k].ip != ip)
        k = (k + 1) & (sm_cs_syms_size - 1);
    return &sm_cs_syms[k];
}

static const sm_cs_sym_t *sm_cs_symbol(uint64_t ip)
{
    static sm_cs_sym_t none = {0, SM_INVALID_ID, SM_INVALID_ID};
    sm_cs_sym_t *s = sm_cs_sym_slot(ip);
    if (!s)
        return &none;
    if (s->ip)
        return s;
    sm_symbol_t sym;
    char name[256];
    char file[600] = "";
    uint32_t line = 0;
    int found = sm_symbol_lookup((const void *)(uintptr_t)ip, &sym) == 0;
    if (found && sym.function[0]) {
        snprintf(name, sizeof name, "%s", sym.function);
        /* The function's own line: the source of its first instruction. */
        sm_srcloc_t where;
        if (sm_srcloc_lookup((const void *)(uintptr_t)(ip - sym.offset), &where) == 0) {
            snprintf(file, sizeof file, "%s", where.file);
            line = where.line;
        }
    } else {
        /* No symbol: all such code of one object is one "function". */
        snprintf(name, sizeof name, "[%s]", found && sym.object[0] ? sym.object : "unknown");
    }
    s->ip = ip;
    s->region = sm_region_define(name, file[0] ? file : NULL, line, SM_PARADIGM_SAMPLING,
                                 SM_ROLE_FUNCTION);
    s->module = sm_string_intern(found && sym.object[0] ? sym.object : "unknown");
    sm_cs_syms_n++;
    return s;
}

/* ---------------------------------------------------------------- the end: profile and trace */

typedef struct sm_cs_nodeset {
    const sm_profile_node_t **slots;
    uint32_t size;
} sm_cs_nodeset_t;

static void sm_cs_nodeset_add(const sm_profile_node_t *n, void *arg)
{
    sm_cs_nodeset_t *set = arg;
    uint32_t k = sm_cs_hash((uint64_t)(uintptr_t)n, 3) & (set->size - 1);
    while (set->slots[k])
        k = (k + 1) & (set->size - 1);
    set->slots[k] = n;
}

static int sm_cs_nodeset_has(const sm_cs_nodeset_t *set, uint64_t key)
{
    if (!set->slots || !key)
        return 0;
    uint32_t k = sm_cs_hash(key, 3) & (set->size - 1);
    for (; set->slots[k]; k = (k + 1) & (set->size - 1))
        if ((uint64_t)(uintptr_t)set->slots[k] == key)
            return 1;
    return 0;
}

/* The context of an instrumented path: one per region, outermost first. */
static sm_context_id_t sm_cs_path_context(const sm_profile_node_t *n)
{
    if (!n || !n->parent || n->region == SM_INVALID_ID)
        return SM_INVALID_ID;
    return sm_context_define(n->region, sm_cs_path_context(n->parent), SM_INVALID_ID);
}

/* k samples of `period` ticks each. */
static void sm_cs_stat_add(sm_stat_t *s, uint64_t k, uint64_t period)
{
    if (!k)
        return;
    s->sum += k * period;
    s->sumsq += (unsigned __int128)k * period * period;
    if (period < s->min)
        s->min = period;
    if (period > s->max)
        s->max = period;
}

static void sm_cs_finish_thread(sm_cs_thread_t *t, uint64_t period_ticks)
{
    sm_location_t *loc = t->loc;
    uint32_t n = t->n_nodes;
    if (n <= 1)
        return;
    sm_profile_node_t **prof = calloc(n, sizeof *prof);
    sm_context_id_t *ctx = calloc(n, sizeof *ctx);
    uint64_t *incl = calloc(n, sizeof *incl);
    uint16_t *depth = calloc(n, sizeof *depth);
    sm_cs_nodeset_t set = {NULL, 0};
    if (loc->profiling) {
        set.size = 1024;
        while (set.size < loc->profile.node_count * 2 + 2)
            set.size *= 2;
        set.slots = calloc(set.size, sizeof *set.slots);
        if (set.slots)
            sm_profile_walk(&loc->profile, sm_cs_nodeset_add, &set);
    }
    if (!prof || !ctx || !incl || !depth) {
        sm_error("call-stack sampling: out of memory at the end; the samples of %s are lost",
                 loc->name);
        goto out;
    }
    /* Children come after their parents: inclusive counts bottom-up. */
    for (uint32_t c = n - 1; c >= 1; c--) {
        incl[c] += t->nodes[c].samples;
        if (t->nodes[c].parent)
            incl[t->nodes[c].parent] += incl[c];
    }
    for (uint32_t c = 1; c < n; c++) {
        const sm_cs_node_t *e = &t->nodes[c];
        if (!e->parent) {
            /* The instrumented path, if the key is a node of this thread. */
            sm_profile_node_t *p = sm_cs_nodeset_has(&set, e->key)
                                       ? (sm_profile_node_t *)(uintptr_t)e->key
                                       : &loc->profile.root;
            prof[c] = loc->profiling ? p : NULL;
            ctx[c] = loc->profiling ? sm_cs_path_context(p) : SM_INVALID_ID;
            depth[c] = 0;
            continue;
        }
        const sm_cs_sym_t *s = sm_cs_symbol(e->key);
        depth[c] = (uint16_t)(depth[e->parent] + 1);
        ctx[c] = s->region == SM_INVALID_ID
                     ? ctx[e->parent]
                     : sm_context_define(s->region, ctx[e->parent], s->module);
        if (prof[e->parent] && s->region != SM_INVALID_ID) {
            sm_profile_node_t *node = sm_profile_child(&loc->profile, prof[e->parent], s->region);
            prof[c] = node;
            node->visits += incl[c];
            sm_cs_stat_add(&node->incl, incl[c], period_ticks);
            sm_cs_stat_add(&node->excl, e->samples, period_ticks);
        } else {
            prof[c] = prof[e->parent];
        }
    }
    /* The trace: one record per sample, placed by time by the readers. */
    for (uint64_t i = 0; loc->tracing && t->trace && i < t->n_trace; i++) {
        uint32_t c = t->trace[i].node;
        if (c >= n || ctx[c] == SM_INVALID_ID)
            continue;
        sm_record_t *r = (sm_record_t *)SM_BUFFER_RESERVE(loc, sizeof(sm_record_t));
        r->time = t->trace[i].time;
        r->kind = SM_REC_CALLING_CONTEXT_SAMPLE;
        r->words = 0;
        r->aux = depth[c];
        r->ref = ctx[c];
        SM_BUFFER_COMMIT(loc, r + 1);
    }
out:
    free(prof);
    free(ctx);
    free(incl);
    free(depth);
    free(set.slots);
}

void sm_callstack_finish(void)
{
    if (!sm_cs_signal)
        return;
    sm_callstack_stop();
    /* The handler must have left every table (a tick delivered right
     * before the timers went). */
    for (sm_cs_thread_t *t = __atomic_load_n(&sm_cs_threads, __ATOMIC_ACQUIRE); t; t = t->next)
        for (int i = 0; i < 1000 && t->busy; i++) {
            struct timespec ms = {0, 1000000};
            nanosleep(&ms, NULL);
        }
    double ns_per_tick = sm_clock_ns_per_tick();
    uint64_t period_ticks =
        ns_per_tick > 0 ? (uint64_t)((double)sm_cs_period_ns / ns_per_tick + 0.5) : 1;
    sm_callstack_stats_t st;
    sm_callstack_stats(&st);
    for (sm_cs_thread_t *t = __atomic_load_n(&sm_cs_threads, __ATOMIC_ACQUIRE); t; t = t->next)
        sm_cs_finish_thread(t, period_ticks ? period_ticks : 1);

    char note[300];
    snprintf(note, sizeof note,
             "call-stack sampling: %llu samples at %ld Hz of %s time on %u threads (signal %d)",
             (unsigned long long)st.samples, 1000000000L / sm_cs_period_ns,
             sm_cs_clock_cpu ? "CPU" : "wall-clock", st.threads, st.signal);
    sm_runtime_add_note(note);
    if (st.lost || st.trace_lost || st.timer_failures) {
        snprintf(note, sizeof note,
                 "call-stack sampling lost %llu samples (tables full or no stack), %llu kept "
                 "only in the profile (trace table full); %u threads without a timer",
                 (unsigned long long)st.lost, (unsigned long long)st.trace_lost,
                 st.timer_failures);
        sm_runtime_add_note(note);
        sm_warning("%s", note);
    }
    struct sigaction now;
    if (sigaction(sm_cs_signal, NULL, &now) == 0 && now.sa_sigaction != sm_cs_handler) {
        snprintf(note, sizeof note,
                 "call-stack sampling: the program took over signal %d; samples after that "
                 "were lost", sm_cs_signal);
        sm_runtime_add_note(note);
        sm_warning("%s", note);
    }
}

int sm_callstack_active_signal(void)
{
    return sm_cs_on ? sm_cs_signal : 0;
}

void sm_callstack_stats(sm_callstack_stats_t *out)
{
    memset(out, 0, sizeof *out);
    out->signal = sm_cs_signal;
    out->timer_failures = sm_cs_timer_failures;
    for (sm_cs_thread_t *t = __atomic_load_n(&sm_cs_threads, __ATOMIC_ACQUIRE); t; t = t->next) {
        out->samples += t->samples;
        out->lost += t->lost;
        out->trace_lost += t->trace_lost;
        out->threads++;
    }
}

#else /* no libunwind */

int sm_callstack_init(const sm_config_t *cfg)
{
    if (cfg->sampling)
        sm_warning("call-stack sampling is off: this sysmeasure was built without libunwind "
                   "(apt-get install libunwind-dev, then configure again)");
    return cfg->sampling ? -1 : 0;
}

void sm_callstack_stop(void)
{
}

void sm_callstack_finish(void)
{
}

int sm_callstack_active_signal(void)
{
    return 0;
}

void sm_callstack_stats(sm_callstack_stats_t *out)
{
    memset(out, 0, sizeof *out);
}

#endif

const sm_subsystem_t sm_callstack_subsystem = {
    .name = "call-stack sampling",
    .init = sm_callstack_init,
#ifdef SM_HAVE_LIBUNWIND
    .thread_begin = sm_cs_thread_start, /* a timer per thread */
    .thread_end = sm_cs_thread_stop,
    .after_daemon = sm_callstack_after_daemon, /* the calling thread's timer */
#endif
    .stop = sm_callstack_stop,
    .end = sm_callstack_finish, /* samples into profile nodes and records */
};
