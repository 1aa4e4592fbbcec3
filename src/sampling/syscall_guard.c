/* Waits the kernel never restarts after a signal handler, whatever
 * SA_RESTART says (signal(7)): nanosleep, clock_nanosleep, sleep, usleep,
 * poll, ppoll, select, pselect, epoll_wait, epoll_pwait.  While call-stack
 * sampling runs, these wrappers block the sampling signal for the length
 * of the call, so that a tick never cuts the program's wait short with
 * EINTR.  The tick stays pending and is taken right after the call (its
 * overrun count says how many periods passed): with wall-clock sampling the
 * wait is attributed to its caller.  Without sampling they are the C
 * library's calls and nothing more. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

#include "../core/compiler.h"
#include "callstack.h"

#define SM_EXPORT __attribute__((visibility("default")))

/* The C library's function of that name (resolved once). */
#define SM_REAL(type, name)                                                                  \
    static type sm_real_##name;                                                              \
    type real_fn = __atomic_load_n(&sm_real_##name, __ATOMIC_ACQUIRE);                       \
    if (!real_fn) {                                                                          \
        real_fn = (type)dlsym(RTLD_NEXT, #name);                                             \
        __atomic_store_n(&sm_real_##name, real_fn, __ATOMIC_RELEASE);                        \
    }

/* Block the sampling signal (when sampling runs) around `call`. */
#define SM_GUARDED(rtype, call)                                                              \
    int sig = sm_callstack_active_signal();                                                  \
    if (!sig)                                                                                \
        return call;                                                                         \
    sigset_t block, old;                                                                     \
    sigemptyset(&block);                                                                     \
    sigaddset(&block, sig);                                                                  \
    pthread_sigmask(SIG_BLOCK, &block, &old);                                                \
    rtype rc = call;                                                                         \
    int saved_errno = errno;                                                                 \
    pthread_sigmask(SIG_SETMASK, &old, NULL);                                                \
    errno = saved_errno;                                                                     \
    return rc;

/* A copy of a call's own signal mask with the sampling signal added. */
static const sigset_t *sm_guard_mask(const sigset_t *mask, sigset_t *copy)
{
    int sig = sm_callstack_active_signal();
    if (!sig || !mask)
        return mask;
    *copy = *mask;
    sigaddset(copy, sig);
    return copy;
}

typedef int (*sm_nanosleep_fn)(const struct timespec *, struct timespec *);
SM_EXPORT int nanosleep(const struct timespec *req, struct timespec *rem)
{
    SM_REAL(sm_nanosleep_fn, nanosleep)
    SM_GUARDED(int, real_fn(req, rem))
}

typedef int (*sm_clock_nanosleep_fn)(clockid_t, int, const struct timespec *, struct timespec *);
SM_EXPORT int clock_nanosleep(clockid_t clock, int flags, const struct timespec *req,
                              struct timespec *rem)
{
    SM_REAL(sm_clock_nanosleep_fn, clock_nanosleep)
    SM_GUARDED(int, real_fn(clock, flags, req, rem))
}

typedef unsigned (*sm_sleep_fn)(unsigned);
SM_EXPORT unsigned sleep(unsigned seconds)
{
    SM_REAL(sm_sleep_fn, sleep)
    SM_GUARDED(unsigned, real_fn(seconds))
}

typedef int (*sm_usleep_fn)(useconds_t);
SM_EXPORT int usleep(useconds_t us)
{
    SM_REAL(sm_usleep_fn, usleep)
    SM_GUARDED(int, real_fn(us))
}

typedef int (*sm_poll_fn)(struct pollfd *, nfds_t, int);
SM_EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout)
{
    SM_REAL(sm_poll_fn, poll)
    SM_GUARDED(int, real_fn(fds, n, timeout))
}

typedef int (*sm_ppoll_fn)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
SM_EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *timeout,
                    const sigset_t *mask)
{
    SM_REAL(sm_ppoll_fn, ppoll)
    sigset_t copy;
    const sigset_t *m = sm_guard_mask(mask, &copy);
    SM_GUARDED(int, real_fn(fds, n, timeout, m))
}

typedef int (*sm_select_fn)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
SM_EXPORT int select(int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *timeout)
{
    SM_REAL(sm_select_fn, select)
    SM_GUARDED(int, real_fn(n, r, w, e, timeout))
}

typedef int (*sm_pselect_fn)(int, fd_set *, fd_set *, fd_set *, const struct timespec *,
                             const sigset_t *);
SM_EXPORT int pselect(int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *timeout,
                      const sigset_t *mask)
{
    SM_REAL(sm_pselect_fn, pselect)
    sigset_t copy;
    const sigset_t *m = sm_guard_mask(mask, &copy);
    SM_GUARDED(int, real_fn(n, r, w, e, timeout, m))
}

typedef int (*sm_epoll_wait_fn)(int, struct epoll_event *, int, int);
SM_EXPORT int epoll_wait(int fd, struct epoll_event *ev, int max, int timeout)
{
    SM_REAL(sm_epoll_wait_fn, epoll_wait)
    SM_GUARDED(int, real_fn(fd, ev, max, timeout))
}

typedef int (*sm_epoll_pwait_fn)(int, struct epoll_event *, int, int, const sigset_t *);
SM_EXPORT int epoll_pwait(int fd, struct epoll_event *ev, int max, int timeout,
                          const sigset_t *mask)
{
    SM_REAL(sm_epoll_pwait_fn, epoll_pwait)
    sigset_t copy;
    const sigset_t *m = sm_guard_mask(mask, &copy);
    SM_GUARDED(int, real_fn(fd, ev, max, timeout, m))
}
