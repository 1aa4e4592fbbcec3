/* How a measured process ends (see ending.h). */
#define _GNU_SOURCE
#include "ending.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#if defined(__has_include)
#if __has_include(<sys/single_threaded.h>)
#include <sys/single_threaded.h>
#define SM_LIBC_SINGLE_THREADED 1
#endif
#endif
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "location.h"
#include "runtime.h"
#include "sig_hold.h"
#include "../util/log.h"

/* ---------------------------------------------------------------- the real functions */

typedef int (*sm_sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef sighandler_t (*sm_signal_fn)(int, sighandler_t);
typedef void (*sm_exit_fn)(int) __attribute__((noreturn));

static sm_sigaction_fn sm_real_sigaction_p;
static sm_signal_fn sm_real_signal_p, sm_real_sysv_signal_p, sm_real_bsd_signal_p;
static sm_exit_fn sm_real__exit_p, sm_real__Exit_p, sm_real_quick_exit_p;

/* Resolved before any handler can need them (dlsym is not for handlers). */
static void sm_ending_resolve(void)
{
    if (!__atomic_load_n(&sm_real_sigaction_p, __ATOMIC_ACQUIRE)) {
        sm_real_signal_p = (sm_signal_fn)dlsym(RTLD_NEXT, "signal");
        sm_real_sysv_signal_p = (sm_signal_fn)dlsym(RTLD_NEXT, "sysv_signal");
        sm_real_bsd_signal_p = (sm_signal_fn)dlsym(RTLD_NEXT, "bsd_signal");
        sm_real__exit_p = (sm_exit_fn)dlsym(RTLD_NEXT, "_exit");
        sm_real__Exit_p = (sm_exit_fn)dlsym(RTLD_NEXT, "_Exit");
        sm_real_quick_exit_p = (sm_exit_fn)dlsym(RTLD_NEXT, "quick_exit");
        __atomic_store_n(&sm_real_sigaction_p, (sm_sigaction_fn)dlsym(RTLD_NEXT, "sigaction"),
                         __ATOMIC_RELEASE);
    }
}

static int sm_real_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    sm_ending_resolve();
    if (!sm_real_sigaction_p) {
        errno = ENOSYS;
        return -1;
    }
    return sm_real_sigaction_p(sig, act, old);
}

/* ---------------------------------------------------------------- state */

static volatile int sm_end_phase;       /* SM_END_* */
static volatile pid_t sm_end_writer;    /* the thread that writes */
static volatile int sm_end_pending;     /* a signal held during the write */
static volatile int sm_end_for_signal;  /* the write is a signal's: it ends by it */
static volatile pid_t sm_exit_owner;    /* the thread that ends the process */
static pid_t sm_end_pid;                /* the measured process (not a vfork child) */
static SM_TLS int sm_handler_sig;      /* the signal this thread writes the end for */

/* sm_exit_owner when a signal's end was handed to the ending thread: every
 * thread that calls exit then waits for the process to end by it. */
#define SM_EXIT_BY_SIGNAL ((pid_t)-1)
static pthread_mutex_t sm_end_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sm_end_cond = PTHREAD_COND_INITIALIZER;

int sm_ending_phase(void)
{
    return __atomic_load_n(&sm_end_phase, __ATOMIC_ACQUIRE);
}

bool sm_ending_writer_is_self(void)
{
    return __atomic_load_n(&sm_end_writer, __ATOMIC_ACQUIRE) == gettid();
}

/* ---------------------------------------------------------------- signals */

/* Whether sysmeasure's handler stands in for SIG_DFL, and what the
 * application set there (it sees that, not our handler). */
#define SM_NSIG 65
static volatile uint8_t sm_ours[SM_NSIG];
static struct sigaction sm_app_view[SM_NSIG];
static volatile int sm_signals_on;
static struct sigaction sm_our_action;

bool sm_ending_stands_for(int sig)
{
    return sig > 0 && sig < SM_NSIG && __atomic_load_n(&sm_ours[sig], __ATOMIC_ACQUIRE);
}

/* Every signal whose default action ends the process (not SIGKILL/SIGSTOP,
 * which cannot be caught, nor the ones that stop or are ignored). */
static bool sm_terminating(int sig)
{
    switch (sig) {
    case SIGHUP: case SIGINT: case SIGQUIT: case SIGILL: case SIGTRAP: case SIGABRT:
    case SIGBUS: case SIGFPE: case SIGUSR1: case SIGSEGV: case SIGUSR2: case SIGPIPE:
    case SIGALRM: case SIGTERM: case SIGSTKFLT: case SIGXCPU: case SIGXFSZ:
    case SIGVTALRM: case SIGPROF: case SIGIO: case SIGPWR: case SIGSYS:
        return true;
    default:
        return sig >= SIGRTMIN && sig <= SIGRTMAX && sig < SM_NSIG;
    }
}

/* A fault of the thread itself (not sent): returning would repeat it. */
static bool sm_is_fault(int sig, const siginfo_t *info)
{
    return (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL ||
            sig == SIGTRAP || sig == SIGSYS) && info && info->si_code > 0;
}

static void sm_say(const char *a, const char *b, const char *c)
{
    /* write(2) only: this runs in signal handlers. */
    const char *parts[] = {"sysmeasure: ", a, b, c, "\n"};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (parts[i] && write(2, parts[i], strlen(parts[i])) < 0)
            return;
}

/* Ends the process at once, as _exit does, without our own _exit (which
 * writes the output first). */
static void __attribute__((noreturn)) sm_exit_now(int status)
{
    for (;;)
        syscall(SYS_exit_group, status);
}

/* Ends the process by sig with its default action. */
static void __attribute__((noreturn)) sm_die_by(int sig)
{
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sm_real_sigaction(sig, &dfl, NULL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    raise(sig); /* pending while blocked (inside our handler) ... */
    pthread_sigmask(SIG_UNBLOCK, &set, NULL); /* ... delivered here */
    sm_exit_now(128 + sig);
}

static void __attribute__((noreturn)) sm_wait_forever(void)
{
    for (;;)
        pause();
}

/* ---------------------------------------------------------------- the ending thread */

/* A terminating signal sent to the process (kill, Slurm's scancel, mpirun's
 * teardown, a timeout) lands on whichever thread of the program does not
 * block it, wherever that thread is: inside malloc, holding stdio's lock or
 * a lock of the program's.  The end of the run allocates, prints and takes
 * locks; written on that thread, inside its handler, it waited for ever for
 * the lock that the very thread it interrupted held.  So the end of an
 * asynchronous signal is written by a thread of our own (started with the
 * process's second thread, see sm_single_threaded), which sleeps on a
 * semaphore: the handler stops its thread's recording, posts (sem_post is
 * async-signal-safe) and returns, so the interrupted thread leaves malloc
 * (or whatever lock it held); the ending thread then writes the end and
 * ends the process by the signal (the faults and the other signals a
 * thread cannot return from stay on it: sm_cannot_return).  Until
 * then the program's threads run on, as its other threads always did while
 * one thread wrote in its handler: their locations are closed by the write
 * and record nothing more, and exit() waits for the end (the exit gate
 * below).  All signals are blocked on the ending thread, so the program's
 * signals never land on it; it is no measured location (created through the
 * C library's pthread_create) and sleeps unless a signal comes. */
static sem_t sm_ender_sem;
static volatile int sm_ender_on;     /* the ending thread runs in this process */
static volatile int sm_ender_wanted; /* this process measures: it wants one */
static volatile int sm_end_request;  /* the signal handed to it (the first) */
static pthread_mutex_t sm_ender_lock = PTHREAD_MUTEX_INITIALIZER;
static SM_TLS bool sm_ender_creating;

/* Whether the process has only ever had one thread.  The C library then
 * takes no lock in malloc, free or stdio (and the first thread created
 * turns those fast paths off for good: putc costs 7 times as much): a
 * signal's end written on that one thread cannot wait for them.  So the
 * ending thread starts with the process's second thread (the program's
 * first pthread_create, or one of sysmeasure's own threads), not before. */
static bool sm_single_threaded(void)
{
#ifdef SM_LIBC_SINGLE_THREADED
    return __libc_single_threaded;
#else
    return false;
#endif
}

/* The end's deepest stack measured: 170 KB (call-stack sampling's
 * symbols), 30-65 KB otherwise (traces, profiles, Perfetto, 100,000
 * nested regions); the rest is margin, mapped and never touched. */
#define SM_ENDER_STACK (512u << 10)

static void __attribute__((noreturn)) sm_ending_for(int sig);

static void *sm_ender_main(void *arg)
{
    (void)arg;
    for (;;) {
        if (sem_wait(&sm_ender_sem) != 0)
            continue;
        int sig = __atomic_load_n(&sm_end_request, __ATOMIC_SEQ_CST);
        if (sig)
            sm_ending_for(sig);
    }
    return NULL;
}

static void sm_ending_start_thread(void)
{
    __atomic_store_n(&sm_ender_on, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&sm_end_request, 0, __ATOMIC_RELEASE);
    if (sem_init(&sm_ender_sem, 0, 0) != 0)
        return;
    pthread_t thread;
    sm_ender_creating = true; /* (sm_ending_before_thread: not for this one) */
    int rc = sm_internal_thread_create(&thread, SM_ENDER_STACK, sm_ender_main, NULL);
    sm_ender_creating = false;
    if (rc != 0) {
        __atomic_store_n(&sm_ender_wanted, 0, __ATOMIC_RELEASE); /* (said once) */
        sm_warning("the thread that writes the end of the run at a signal cannot start (%s): "
                   "a signal's end is written on the thread it lands on", strerror(rc));
        return;
    }
    pthread_setname_np(thread, "sysmeasure-end");
    pthread_detach(thread);
    __atomic_store_n(&sm_ender_on, 1, __ATOMIC_RELEASE);
}

/* sysmeasure's own code, where a thread may be in the middle of recording
 * an event: the core library's text, the vDSO and the C library's
 * clock_gettime (the clock a record reads when the TSC is not used).
 * Fixed at install, read by the handler. */
typedef struct sm_code_range {
    uintptr_t lo, hi;
} sm_code_range_t;
#define SM_CODE_RANGES 8
static sm_code_range_t sm_own_code[SM_CODE_RANGES];
static int sm_own_code_n;

static void sm_own_code_add(uintptr_t lo, uintptr_t hi)
{
    if (sm_own_code_n < SM_CODE_RANGES && lo < hi)
        sm_own_code[sm_own_code_n++] = (sm_code_range_t){lo, hi};
}

static void sm_ending_signal(int sig, siginfo_t *info, void *uc);

static int sm_own_code_find(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    uintptr_t self = (uintptr_t)&sm_ending_signal, vdso = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
    bool wanted = false;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (ph->p_type == PT_LOAD && ((self >= lo && self < hi) || (vdso && vdso >= lo && vdso < hi)))
            wanted = true;
    }
    for (int i = 0; wanted && i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X))
            sm_own_code_add(info->dlpi_addr + ph->p_vaddr,
                            info->dlpi_addr + ph->p_vaddr + ph->p_memsz);
    }
    return 0;
}

static void sm_own_code_init(void)
{
    sm_own_code_n = 0;
    dl_iterate_phdr(sm_own_code_find, NULL);
    Dl_info di;
    const ElfW(Sym) *sym = NULL;
    if (dladdr1((void *)clock_gettime, &di, (void **)&sym, RTLD_DL_SYMENT) && sym)
        sm_own_code_add((uintptr_t)di.dli_saddr, (uintptr_t)di.dli_saddr + sym->st_size);
}

/* Whether the signal interrupted sysmeasure's own code (true too where the
 * architecture's context is not known here).  A thread there may be half way
 * through an event: returning would let it finish that event into a buffer
 * being written.  Our code holds no lock where a signal can reach it (its
 * locked sections hold signals: sig_hold.h), so the end is written on the
 * thread itself there, as it always was. */
static bool sm_in_own_code(const void *uc)
{
    if (!uc || sm_sig_switching_mask())
        return true; /* (a signal a section held, delivered at its end: mid-event) */
    uintptr_t pc = 0;
#if defined(__x86_64__)
    pc = (uintptr_t)((const ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    pc = (uintptr_t)((const ucontext_t *)uc)->uc_mcontext.pc;
#endif
    if (!pc)
        return true;
    for (int i = 0; i < sm_own_code_n; i++)
        if (pc >= sm_own_code[i].lo && pc < sm_own_code[i].hi)
            return true;
    return false;
}

/* A signal the thread cannot return from: a fault of its own (it would
 * come again), and a signal the process raised at one of its threads
 * (raise, abort, pthread_kill: abort would raise it again with SIG_DFL,
 * losing the output, and code after raise() expects never to run), or the
 * SIGPIPE and SIGXFSZ its write raised.  These are written on the thread
 * itself, as before: a thread that holds a lock there holds it for ever
 * anyway (a fault inside malloc), so the ending thread would wait for it
 * just the same. */
static bool sm_cannot_return(int sig, const siginfo_t *info)
{
    if (sm_is_fault(sig, info))
        return true;
    if (!info || info->si_pid != getpid())
        return false;
    return info->si_code == SI_TKILL ||
           (info->si_code == SI_USER && (sig == SIGPIPE || sig == SIGXFSZ));
}

/* In the handler: the end goes to the ending thread, and the thread
 * returns.  Its own location records nothing more from now on (it was not
 * inside our code: no event half done), and exit() from any thread waits
 * for the end. */
static void sm_ending_hand_over(int sig)
{
    sm_location_t *loc = sm_tls_location;
    uint8_t open = SM_LOC_OPEN;
    if (loc)
        __atomic_compare_exchange_n(&loc->closed, &open, SM_LOC_STOPPED, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE);
    sm_runtime_signal_arrived();
    pid_t none = 0;
    __atomic_compare_exchange_n(&sm_exit_owner, &none, SM_EXIT_BY_SIGNAL, false, __ATOMIC_ACQ_REL,
                                __ATOMIC_ACQUIRE);
    int no_request = 0;
    __atomic_compare_exchange_n(&sm_end_request, &no_request, sig, false, __ATOMIC_SEQ_CST,
                                __ATOMIC_SEQ_CST);
    sem_post(&sm_ender_sem);
}

/* On the ending thread: the end of the run by sig, whatever stage it is
 * at; the process ends by sig. */
static void __attribute__((noreturn)) sm_ending_for(int sig)
{
    for (;;) {
        int phase = sm_ending_phase();
        if (phase == SM_END_RUNNING && sm_runtime_active) {
            sm_handler_sig = sig; /* for sm_ending_begin_write */
            int rc = sm_runtime_finalize_for_signal(sig);
            sm_handler_sig = 0;
            if (rc == 0)
                sm_die_by(sig); /* (the write ended the process; here if it wrote nothing) */
            continue;           /* another thread began writing first */
        }
        if (phase == SM_END_WRITING) {
            /* Another thread writes (exit, MPI_Finalize, a fault): it ends
             * the process by the signal when done.  The phase is read again
             * after the signal is set: the writer reads the signal after
             * each change of phase (sequentially consistent, both). */
            int none = 0;
            __atomic_compare_exchange_n(&sm_end_pending, &none, sig, false, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST);
            if (sm_ending_phase() == SM_END_WRITING)
                sm_wait_forever();
            continue;
        }
        if (phase == SM_END_SAVED) {
            sm_runtime_note_signal_in_finalize(sig);
            sm_runtime_before_signal_death(sig);
        }
        sm_die_by(sig);
    }
}

static void sm_ending_signal(int sig, siginfo_t *info, void *uc)
{
    int saved_errno = errno;
    if (sm_end_pid != 0 && getpid() != sm_end_pid)
        sm_die_by(sig); /* a vfork child, or a fork child before its atfork handler: nothing ours */
    pid_t self = gettid();
    int phase = sm_ending_phase();
    if (phase == SM_END_WRITING && __atomic_load_n(&sm_end_writer, __ATOMIC_ACQUIRE) == self) {
        if (sm_is_fault(sig, info)) {
            char num[16];
            snprintf(num, sizeof num, "%d", sig);
            sm_say("signal ", num, " (a fault) during the end-of-run write: the output is "
                   "incomplete");
            sm_die_by(sig);
        }
        /* Held: the write goes on, and ends the process by it. */
        int none = 0;
        __atomic_compare_exchange_n(&sm_end_pending, &none, sig, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST);
        errno = saved_errno;
        return;
    }
    /* An asynchronous signal that landed outside our code: the ending
     * thread writes the end, this thread returns (see above).  Faults and
     * the rest are written here, as below. */
    if ((phase == SM_END_WRITING || phase == SM_END_SAVED ||
         (phase == SM_END_RUNNING && sm_runtime_active)) &&
        __atomic_load_n(&sm_ender_on, __ATOMIC_ACQUIRE) && !sm_cannot_return(sig, info) &&
        !sm_in_own_code(uc)) {
        sm_ending_hand_over(sig);
        errno = saved_errno;
        return;
    }
    if (phase == SM_END_WRITING) {
        /* Another thread writes: it ends the process by this signal when
         * done; this thread (which cannot return, or is inside our code)
         * waits for that. */
        int none = 0;
        __atomic_compare_exchange_n(&sm_end_pending, &none, sig, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST);
        sm_wait_forever();
    }
    if (phase == SM_END_SAVED) {
        /* The data is on disk; what is left waits on other processes, which
         * may never come: end now. */
        sm_runtime_note_signal_in_finalize(sig);
        sm_runtime_before_signal_death(sig);
        sm_die_by(sig);
    }
    if (phase == SM_END_RUNNING && sm_runtime_active) {
        sm_handler_sig = sig; /* for sm_ending_begin_write, should this thread win */
        int rc = sm_runtime_finalize_for_signal(sig);
        sm_handler_sig = 0;
        if (rc != 0) {
            /* Another thread began writing first. */
            errno = saved_errno;
            sm_ending_signal(sig, info, uc);
            return;
        }
        /* (sm_ending_end_write ended the process by the signal.) */
    }
    sm_die_by(sig);
}

/* Called with the signal's state fixed: install ours where SIG_DFL is. */
static void sm_take_default(int sig, const struct sigaction *view)
{
    struct sigaction old;
    if (sm_real_sigaction(sig, &sm_our_action, &old) != 0)
        return;
    sm_app_view[sig] = view ? *view : old;
    __atomic_store_n(&sm_ours[sig], 1, __ATOMIC_RELEASE);
}

void sm_ending_install(void)
{
    sm_end_pid = getpid();
    sm_ending_resolve();
    sm_own_code_init();
    __atomic_store_n(&sm_ender_wanted, 1, __ATOMIC_RELEASE);
    if (!sm_single_threaded())
        sm_ending_start_thread(); /* before the handler: there for any signal */
    memset(&sm_our_action, 0, sizeof sm_our_action);
    sm_our_action.sa_sigaction = sm_ending_signal;
    sm_our_action.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
    sigemptyset(&sm_our_action.sa_mask);
    /* No other terminating signal interrupts the handler's own write: it
     * goes to another thread, or waits for the end. */
    for (int sig = 1; sig < SM_NSIG; sig++)
        if (sm_terminating(sig) && sig != SIGSEGV && sig != SIGBUS && sig != SIGFPE &&
            sig != SIGILL)
            sigaddset(&sm_our_action.sa_mask, sig);
    for (int sig = 1; sig < SM_NSIG; sig++) {
        struct sigaction old;
        if (!sm_terminating(sig) || sm_real_sigaction(sig, NULL, &old) != 0)
            continue;
        /* Leave alone what the program (or its launcher) ignores or handles. */
        if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL)
            continue;
        sm_take_default(sig, &old);
    }
    __atomic_store_n(&sm_signals_on, 1, __ATOMIC_RELEASE);
}

/* Whether our handler still stands for sig: the C library itself (profil,
 * system) may have changed the disposition without these wrappers. */
static bool sm_still_ours(int sig)
{
    if (!__atomic_load_n(&sm_ours[sig], __ATOMIC_ACQUIRE))
        return false;
    struct sigaction k;
    if (sm_real_sigaction(sig, NULL, &k) == 0 &&
        (!(k.sa_flags & SA_SIGINFO) || k.sa_sigaction != sm_ending_signal)) {
        __atomic_store_n(&sm_ours[sig], 0, __ATOMIC_RELEASE);
        return false;
    }
    return true;
}

/* The application's sigaction: its own handlers and SIG_IGN go to the
 * kernel; SIG_DFL keeps (or brings back) ours, which does the default
 * action after the write. */
SM_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old);
int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (!__atomic_load_n(&sm_signals_on, __ATOMIC_ACQUIRE) || sig <= 0 || sig >= SM_NSIG ||
        !sm_terminating(sig))
        return sm_real_sigaction(sig, act, old);
    bool ours = sm_still_ours(sig);
    struct sigaction was = sm_app_view[sig];
    if (!act) {
        if (!ours)
            return sm_real_sigaction(sig, NULL, old);
        if (old)
            *old = was;
        return 0;
    }
    bool dfl = !(act->sa_flags & SA_SIGINFO) && act->sa_handler == SIG_DFL;
    if (dfl) {
        if (ours) {
            sm_app_view[sig] = *act;
        } else {
            struct sigaction kernel;
            if (sm_real_sigaction(sig, NULL, &kernel) != 0)
                return -1;
            sm_take_default(sig, act);
            was = kernel;
        }
        if (old)
            *old = was;
        return 0;
    }
    struct sigaction kernel;
    if (sm_real_sigaction(sig, act, &kernel) != 0)
        return -1;
    __atomic_store_n(&sm_ours[sig], 0, __ATOMIC_RELEASE);
    if (old)
        *old = ours ? was : kernel;
    return 0;
}

/* signal(), sysv_signal(), bsd_signal(): SIG_DFL goes through our
 * sigaction; a handler or SIG_IGN through the real function (its exact
 * semantics), and the application gets back what it had set. */
static sighandler_t sm_signal_common(sm_signal_fn real, int sig, sighandler_t handler)
{
    if (!__atomic_load_n(&sm_signals_on, __ATOMIC_ACQUIRE) || sig <= 0 || sig >= SM_NSIG ||
        !sm_terminating(sig) || !real)
        return real ? real(sig, handler) : SIG_ERR;
    if (handler == SIG_DFL) {
        struct sigaction act, old;
        memset(&act, 0, sizeof act);
        act.sa_handler = SIG_DFL;
        sigemptyset(&act.sa_mask);
        act.sa_flags = SA_RESTART;
        if (sigaction(sig, &act, &old) != 0)
            return SIG_ERR;
        return (old.sa_flags & SA_SIGINFO) ? (sighandler_t)(void *)old.sa_sigaction
                                           : old.sa_handler;
    }
    bool ours = sm_still_ours(sig);
    sighandler_t prev = real(sig, handler);
    if (prev == SIG_ERR)
        return SIG_ERR;
    __atomic_store_n(&sm_ours[sig], 0, __ATOMIC_RELEASE);
    return ours ? sm_app_view[sig].sa_handler : prev;
}

SM_EXPORT sighandler_t signal(int sig, sighandler_t handler);
sighandler_t signal(int sig, sighandler_t handler)
{
    sm_ending_resolve();
    return sm_signal_common(sm_real_signal_p, sig, handler);
}

SM_EXPORT sighandler_t sysv_signal(int sig, sighandler_t handler);
sighandler_t sysv_signal(int sig, sighandler_t handler)
{
    sm_ending_resolve();
    return sm_signal_common(sm_real_sysv_signal_p, sig, handler);
}

SM_EXPORT sighandler_t bsd_signal(int sig, sighandler_t handler);
sighandler_t bsd_signal(int sig, sighandler_t handler)
{
    sm_ending_resolve();
    return sm_signal_common(sm_real_bsd_signal_p, sig, handler);
}

/* ---------------------------------------------------------------- the write */

int sm_ending_begin_write(void)
{
    int running = SM_END_RUNNING;
    if (!__atomic_compare_exchange_n(&sm_end_phase, &running, SM_END_WRITING, false,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return -1;
    __atomic_store_n(&sm_end_writer, gettid(), __ATOMIC_RELEASE);
    if (sm_handler_sig) {
        /* Writing for this signal (in its handler, or on the ending
         * thread): the process ends by it, whatever comes meanwhile. */
        __atomic_store_n(&sm_end_for_signal, 1, __ATOMIC_RELEASE);
        __atomic_store_n(&sm_end_pending, sm_handler_sig, __ATOMIC_SEQ_CST);
    }
    return 0;
}

void sm_ending_saved(void)
{
    __atomic_store_n(&sm_end_phase, SM_END_SAVED, __ATOMIC_SEQ_CST);
    /* A signal held until now finds the data on disk: it ends the process. */
    int sig = __atomic_load_n(&sm_end_pending, __ATOMIC_SEQ_CST);
    if (sig) {
        sm_runtime_note_signal_in_finalize(sig);
        sm_runtime_before_signal_death(sig);
        sm_die_by(sig);
    }
}

void sm_ending_end_write(bool at_exit)
{
    __atomic_store_n(&sm_end_phase, SM_END_DONE, __ATOMIC_SEQ_CST);
    /* (A signal's write does not wake the threads that wait for it: they
     * would go on to exit with their own code.) */
    if (!__atomic_load_n(&sm_end_for_signal, __ATOMIC_ACQUIRE)) {
        pthread_mutex_lock(&sm_end_lock);
        pthread_cond_broadcast(&sm_end_cond);
        pthread_mutex_unlock(&sm_end_lock);
    }
    int sig = __atomic_load_n(&sm_end_pending, __ATOMIC_SEQ_CST);
    if (!sig)
        return;
    /* exit() was under way: it would have flushed the application's
     * streams before the signal came. */
    if (at_exit)
        fflush(NULL);
    sm_runtime_before_signal_death(sig);
    sm_die_by(sig);
}

void sm_ending_wait_done(void)
{
    pthread_mutex_lock(&sm_end_lock);
    while (sm_ending_phase() == SM_END_WRITING || sm_ending_phase() == SM_END_SAVED)
        pthread_cond_wait(&sm_end_cond, &sm_end_lock);
    pthread_mutex_unlock(&sm_end_lock);
}

/* ---------------------------------------------------------------- exit */

void sm_ending_exit_gate(void)
{
    if (!sm_runtime_active && sm_ending_phase() == SM_END_RUNNING)
        return; /* not measured (or a forked child): exit as it is */
    pid_t self = gettid(), none = 0;
    if (__atomic_compare_exchange_n(&sm_exit_owner, &none, self, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE) ||
        none == self)
        return;
    /* Another thread is ending the process: it writes the output and exits
     * with its code; this thread waits for that, as with a thread-safe exit.
     * (Or a signal's end is under way on the ending thread: the process
     * ends by the signal, the program's atexit handlers unrun, as without
     * sysmeasure.) */
    sm_wait_forever();
}

void sm_ending_after_fork_child(void)
{
    sm_end_pid = getpid();
    sm_end_phase = SM_END_RUNNING;
    sm_end_writer = 0;
    sm_end_pending = 0;
    sm_end_for_signal = 0;
    sm_exit_owner = 0;
    /* The ending thread is not in the child.  A child of fork that writes
     * nothing ends at once at a signal; one that measures on (after
     * daemon(), or of a program's family) starts its own
     * (sm_ending_child_measures). */
    sm_ender_on = 0;
    sm_ender_wanted = 0;
    sm_end_request = 0;
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    sm_ender_lock = m; /* (a thread of the parent may have held it) */
}

void sm_ending_child_measures(void)
{
    __atomic_store_n(&sm_ender_wanted, 1, __ATOMIC_RELEASE);
    /* A child of a parent with threads has one thread, but the C library
     * takes its locks there as in the parent: the thread is needed now. */
    if (!sm_single_threaded())
        sm_ending_start_thread();
}

void sm_ending_before_thread(void)
{
    if (!__atomic_load_n(&sm_ender_wanted, __ATOMIC_ACQUIRE) ||
        __atomic_load_n(&sm_ender_on, __ATOMIC_ACQUIRE) || sm_ender_creating ||
        sm_ending_phase() != SM_END_RUNNING)
        return;
    sm_sig_hold(SM_SIG_LOCKS); /* (an end written meanwhile starts threads too) */
    pthread_mutex_lock(&sm_ender_lock);
    if (!__atomic_load_n(&sm_ender_on, __ATOMIC_ACQUIRE) &&
        __atomic_load_n(&sm_ender_wanted, __ATOMIC_ACQUIRE))
        sm_ending_start_thread();
    pthread_mutex_unlock(&sm_ender_lock);
    sm_sig_release();
}

SM_EXPORT void exit(int status) __attribute__((noreturn));
void exit(int status)
{
    static sm_exit_fn real;
    sm_exit_fn fn = __atomic_load_n(&real, __ATOMIC_ACQUIRE);
    if (!fn) {
        fn = (sm_exit_fn)dlsym(RTLD_NEXT, "exit");
        __atomic_store_n(&real, fn, __ATOMIC_RELEASE);
    }
    sm_ending_exit_gate();
    if (fn)
        fn(status);
    sm_exit_now(status); /* no exit() to be found: cannot happen in a linked process */
}

/* _exit, _Exit and quick_exit end the process without atexit handlers:
 * the output is written here first (the application's stdio is left
 * unflushed, as they leave it).  A vfork child shares our memory and must
 * not write anything: it is told by its pid. */
static bool sm_exit_is_ours(void)
{
    return sm_end_pid != 0 && getpid() == sm_end_pid;
}

static void __attribute__((noreturn)) sm_fast_exit(sm_exit_fn *real, int status)
{
    sm_ending_resolve(); /* done at install: no dlsym here, _exit is for handlers too */
    sm_exit_fn fn = *real;
    if (sm_exit_is_ours()) {
        sm_ending_exit_gate();
        sm_runtime_finalize_as(NULL, 0);
    }
    if (fn)
        fn(status);
    sm_exit_now(status);
}

SM_EXPORT void _exit(int status) __attribute__((noreturn));
void _exit(int status)
{
    sm_fast_exit(&sm_real__exit_p, status);
}

SM_EXPORT void _Exit(int status) __attribute__((noreturn));
void _Exit(int status)
{
    sm_fast_exit(&sm_real__Exit_p, status);
}

/* quick_exit runs the at_quick_exit handlers, then ends the process: the
 * runtime registers its own handler there (first, so it runs last, after
 * the application's); here only the gate. */
SM_EXPORT void quick_exit(int status) __attribute__((noreturn));
void quick_exit(int status)
{
    sm_ending_resolve();
    sm_exit_fn fn = sm_real_quick_exit_p;
    if (sm_exit_is_ours())
        sm_ending_exit_gate();
    if (fn)
        fn(status);
    sm_exit_now(status);
}

/* A return from main ends the process with exit() inside the C library,
 * which no wrapper sees: main is wrapped so that the return goes through the
 * gate above too. */
typedef int (*sm_main_fn)(int, char **, char **);
typedef int (*sm_start_main_fn)(sm_main_fn, int, char **, void (*)(void), void (*)(void),
                                void (*)(void), void *);
static sm_main_fn sm_real_main;

static int sm_main_wrapper(int argc, char **argv, char **envp)
{
    exit(sm_real_main(argc, argv, envp));
}

SM_EXPORT int __libc_start_main(sm_main_fn main_fn, int argc, char **argv, void (*init)(void),
                                void (*fini)(void), void (*rtld_fini)(void), void *stack_end);
int __libc_start_main(sm_main_fn main_fn, int argc, char **argv, void (*init)(void),
                      void (*fini)(void), void (*rtld_fini)(void), void *stack_end)
{
    sm_start_main_fn real = (sm_start_main_fn)dlsym(RTLD_NEXT, "__libc_start_main");
    if (!real)
        abort();
    sm_real_main = main_fn;
    return real(sm_main_wrapper, argc, argv, init, fini, rtld_fini, stack_end);
}

/* daemon(): its parent ends inside the C library, past the _exit above, and
 * its child carries the measurement on (runtime_fork.c). */
SM_EXPORT int daemon(int nochdir, int noclose);
int daemon(int nochdir, int noclose)
{
    static sm_daemon_fn real;
    sm_daemon_fn fn = __atomic_load_n(&real, __ATOMIC_ACQUIRE);
    if (!fn) {
        fn = (sm_daemon_fn)dlsym(RTLD_NEXT, "daemon");
        __atomic_store_n(&real, fn, __ATOMIC_RELEASE);
    }
    if (!fn) {
        errno = ENOSYS;
        return -1;
    }
    return sm_runtime_daemon(fn, nochdir, noclose);
}
