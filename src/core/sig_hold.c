/* Signals held during sysmeasure's locked sections (see sig_hold.h). */
#define _GNU_SOURCE
#include "sig_hold.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "ending.h"

/* Every signal but the faults a thread raises itself (blocked, a fault
 * kills the process at once instead of reaching its handler). */
static sigset_t sm_sig_async;
static pthread_once_t sm_sig_once = PTHREAD_ONCE_INIT;

static void sm_sig_init(void)
{
    sigfillset(&sm_sig_async);
    static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS};
    for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++)
        sigdelset(&sm_sig_async, faults[i]);
}

/* Per thread, the sections it is in: for each level that changed the mask,
 * the mask before it; whether a section of them writes files.  (The
 * default TLS model: these are used on rare paths only, and take no static
 * TLS from a library loaded with dlopen.) */
#define SM_SIG_LEVELS 8
typedef struct sm_sig_level {
    sigset_t before;
    bool changed;
} sm_sig_level_t;
static __thread sm_sig_level_t sm_sig_levels[SM_SIG_LEVELS];
static __thread unsigned sm_sig_depth;
static __thread bool sm_sig_io;      /* an end-of-run write: look for SIGXFSZ */
static __thread bool sm_sig_efbig;   /* a write of ours failed with EFBIG */
static __thread sigset_t sm_sig_now; /* the thread's mask inside the sections */
/* Set while a section changes the mask: a signal the section held is
 * delivered right there, in the middle of what the section is part of (an
 * event's new chunk).  Read by signal handlers (ending.c): initial-exec. */
static SM_TLS volatile uint8_t sm_sig_switching;

bool sm_sig_switching_mask(void)
{
    return sm_sig_switching;
}

/* A SIGXFSZ pending for the calling thread that our own write raised while
 * it was blocked, discarded; kept where the program's mask blocks it (it
 * may be the program's own).  The kernel raises it as sent by the process
 * itself: one sent by another process (kill -XFSZ) is sent again, to be
 * delivered as it would have been. */
static void sm_sig_drop_own_xfsz(const sigset_t *program_mask)
{
    if (sigismember(program_mask, SIGXFSZ))
        return;
    sigset_t pending;
    if (sigpending(&pending) != 0 || !sigismember(&pending, SIGXFSZ))
        return;
    sigset_t xfsz;
    sigemptyset(&xfsz);
    sigaddset(&xfsz, SIGXFSZ);
    const struct timespec now = {0, 0};
    siginfo_t info;
    int got;
    while ((got = sigtimedwait(&xfsz, &info, &now)) < 0 && errno == EINTR)
        ;
    if (got == SIGXFSZ && !(info.si_code == SI_USER && info.si_pid == getpid()))
        kill(getpid(), SIGXFSZ);
}

static int sm_sig_through; /* sm_sig_let_through's, or 0 */

void sm_sig_let_through(int sig)
{
    __atomic_store_n(&sm_sig_through, sig, __ATOMIC_RELEASE);
}

void sm_sig_hold(sm_sig_section_t section)
{
    int saved_errno = errno;
    pthread_once(&sm_sig_once, sm_sig_init);
    unsigned level = sm_sig_depth;
    sigset_t want = sm_sig_async;
    int through = __atomic_load_n(&sm_sig_through, __ATOMIC_ACQUIRE);
    if (through > 0)
        sigdelset(&want, through);
    if (section == SM_SIG_END_WRITE)
        for (int sig = 1; sig < _NSIG; sig++)
            if (sig != SIGXFSZ && sigismember(&want, sig) == 1 && sm_ending_stands_for(sig))
                sigdelset(&want, sig);
    /* Inside a section: only where this one blocks more than the mask now. */
    bool more = level == 0;
    for (int sig = 1; sig < _NSIG && !more; sig++)
        more = sigismember(&want, sig) == 1 && sigismember(&sm_sig_now, sig) != 1;
    /* The mask first: a handler that jumps away before it leaves no trace
     * of the section, and none runs after it. */
    sigset_t before;
    sm_sig_switching = 1;
    bool changed = more && pthread_sigmask(SIG_BLOCK, &want, &before) == 0;
    sm_sig_switching = 0;
    if (changed)
        sigorset(&sm_sig_now, &before, &want);
    if (level < SM_SIG_LEVELS) {
        sm_sig_levels[level].changed = changed;
        if (changed)
            sm_sig_levels[level].before = before;
    }
    if (level == 0)
        sm_sig_io = sm_sig_efbig = false;
    if (section == SM_SIG_END_WRITE)
        sm_sig_io = true;
    sm_sig_depth = level + 1;
    errno = saved_errno;
}

void sm_sig_own_write_failed(int err)
{
    if (err == EFBIG)
        sm_sig_efbig = true;
}

void sm_sig_release(void)
{
    if (sm_sig_depth == 0)
        return;
    unsigned level = --sm_sig_depth;
    if (level >= SM_SIG_LEVELS || !sm_sig_levels[level].changed)
        return; /* (an outer level restores the mask) */
    int saved_errno = errno;
    if (sm_sig_io || sm_sig_efbig)
        sm_sig_drop_own_xfsz(&sm_sig_levels[level].before);
    sm_sig_now = sm_sig_levels[level].before;
    sm_sig_switching = 1;
    pthread_sigmask(SIG_SETMASK, &sm_sig_now, NULL);
    sm_sig_switching = 0;
    errno = saved_errno;
}
