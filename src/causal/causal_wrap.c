/* libsysmeasure-causal.so: the calls that wake or block threads, seen for
 * causal profiling's delays (causal_delay.c says why).  The launcher
 * preloads it only with --causal, so no other run pays for these wrappers.
 * Each wrapper asks libsysmeasure.so for the table of causal_api.h (NULL
 * while causal profiling is off, at start-up and after the end) and calls
 * the C library's function; errno and the return value are the C
 * library's own.
 *
 *   wakes another thread: pay what is owed first (catch_up)
 *       pthread_mutex_unlock, pthread_cond_signal, pthread_cond_broadcast,
 *       sem_post, pthread_barrier_wait (the last one in wakes the others)
 *   may block: delays inserted meanwhile are forgiven (block_begin/end)
 *       pthread_mutex_lock, pthread_cond_wait, pthread_cond_timedwait,
 *       pthread_barrier_wait, pthread_join, sem_wait, sem_timedwait,
 *       nanosleep, clock_nanosleep, usleep, sleep */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <semaphore.h>
#include <stddef.h>
#include <time.h>
#include <unistd.h>

#include "causal_api.h"

#define SM_CW_EXPORT __attribute__((visibility("default")))

/* The table, once libsysmeasure.so runs causal profiling. */
static const sm_causal_api_t *sm_cw_api(void)
{
    static const sm_causal_api_t *api;
    static sm_causal_api_fn get;
    static int looked;
    const sm_causal_api_t *a = __atomic_load_n(&api, __ATOMIC_ACQUIRE);
    if (a)
        return a;
    if (!__atomic_load_n(&looked, __ATOMIC_ACQUIRE)) {
        sm_causal_api_fn fn;
        *(void **)&fn = dlsym(RTLD_DEFAULT, "sysmeasure_causal_api");
        __atomic_store_n(&get, fn, __ATOMIC_RELEASE);
        __atomic_store_n(&looked, 1, __ATOMIC_RELEASE);
    }
    sm_causal_api_fn fn = __atomic_load_n(&get, __ATOMIC_ACQUIRE);
    a = fn ? fn() : NULL;
    if (a && a->version == SM_CAUSAL_API_VERSION) {
        __atomic_store_n(&api, a, __ATOMIC_RELEASE);
        return a;
    }
    return NULL;
}

/* The C library's function of that name, resolved once. */
#define SM_CW_REAL(type, name)                                                               \
    static type sm_real_##name;                                                              \
    type real_fn = __atomic_load_n(&sm_real_##name, __ATOMIC_ACQUIRE);                        \
    if (!real_fn) {                                                                          \
        *(void **)&real_fn = dlsym(RTLD_NEXT, #name);                                        \
        __atomic_store_n(&sm_real_##name, real_fn, __ATOMIC_RELEASE);                        \
    }

#define SM_CW_WAKE(obj, call)                                                                \
    const sm_causal_api_t *api = sm_cw_api();                                                \
    if (api)                                                                                 \
        api->catch_up(obj);                                                                  \
    return call;

#define SM_CW_BLOCK(rtype, obj, call)                                                        \
    const sm_causal_api_t *api = sm_cw_api();                                                \
    if (!api)                                                                                \
        return call;                                                                         \
    api->block_begin();                                                                      \
    rtype rc = call;                                                                         \
    api->block_end(obj);                                                                     \
    return rc;

typedef int (*sm_mutex_fn)(pthread_mutex_t *);
SM_CW_EXPORT int pthread_mutex_unlock(pthread_mutex_t *m)
{
    SM_CW_REAL(sm_mutex_fn, pthread_mutex_unlock)
    SM_CW_WAKE(m, real_fn(m))
}

SM_CW_EXPORT int pthread_mutex_lock(pthread_mutex_t *m)
{
    SM_CW_REAL(sm_mutex_fn, pthread_mutex_lock)
    SM_CW_BLOCK(int, m, real_fn(m))
}

typedef int (*sm_cond_fn)(pthread_cond_t *);
SM_CW_EXPORT int pthread_cond_signal(pthread_cond_t *c)
{
    SM_CW_REAL(sm_cond_fn, pthread_cond_signal)
    SM_CW_WAKE(c, real_fn(c))
}

SM_CW_EXPORT int pthread_cond_broadcast(pthread_cond_t *c)
{
    SM_CW_REAL(sm_cond_fn, pthread_cond_broadcast)
    SM_CW_WAKE(c, real_fn(c))
}

typedef int (*sm_cond_wait_fn)(pthread_cond_t *, pthread_mutex_t *);
SM_CW_EXPORT int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
    SM_CW_REAL(sm_cond_wait_fn, pthread_cond_wait)
    const sm_causal_api_t *api = sm_cw_api();
    if (!api)
        return real_fn(c, m);
    api->catch_up(m); /* it unlocks m: a waiter on m may wake */
    api->block_begin();
    int rc = real_fn(c, m);
    api->block_end(c);
    return rc;
}

typedef int (*sm_cond_timedwait_fn)(pthread_cond_t *, pthread_mutex_t *,
                                    const struct timespec *);
SM_CW_EXPORT int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
                                        const struct timespec *abstime)
{
    SM_CW_REAL(sm_cond_timedwait_fn, pthread_cond_timedwait)
    const sm_causal_api_t *api = sm_cw_api();
    if (!api)
        return real_fn(c, m, abstime);
    api->catch_up(m);
    api->block_begin();
    int rc = real_fn(c, m, abstime);
    api->block_end(c);
    return rc;
}

typedef int (*sm_barrier_fn)(pthread_barrier_t *);
SM_CW_EXPORT int pthread_barrier_wait(pthread_barrier_t *b)
{
    SM_CW_REAL(sm_barrier_fn, pthread_barrier_wait)
    const sm_causal_api_t *api = sm_cw_api();
    if (!api)
        return real_fn(b);
    api->catch_up(b); /* the last one in wakes the others */
    api->block_begin();
    int rc = real_fn(b);
    api->block_end(b);
    return rc;
}

typedef int (*sm_join_fn)(pthread_t, void **);
SM_CW_EXPORT int pthread_join(pthread_t t, void **ret)
{
    SM_CW_REAL(sm_join_fn, pthread_join)
    SM_CW_BLOCK(int, NULL, real_fn(t, ret))
}

typedef int (*sm_sem_fn)(sem_t *);
SM_CW_EXPORT int sem_post(sem_t *s)
{
    SM_CW_REAL(sm_sem_fn, sem_post)
    SM_CW_WAKE(s, real_fn(s))
}

SM_CW_EXPORT int sem_wait(sem_t *s)
{
    SM_CW_REAL(sm_sem_fn, sem_wait)
    SM_CW_BLOCK(int, s, real_fn(s))
}

typedef int (*sm_sem_timedwait_fn)(sem_t *, const struct timespec *);
SM_CW_EXPORT int sem_timedwait(sem_t *s, const struct timespec *abstime)
{
    SM_CW_REAL(sm_sem_timedwait_fn, sem_timedwait)
    SM_CW_BLOCK(int, s, real_fn(s, abstime))
}

typedef int (*sm_nanosleep_fn)(const struct timespec *, struct timespec *);
SM_CW_EXPORT int nanosleep(const struct timespec *req, struct timespec *rem)
{
    SM_CW_REAL(sm_nanosleep_fn, nanosleep)
    SM_CW_BLOCK(int, NULL, real_fn(req, rem))
}

typedef int (*sm_clock_nanosleep_fn)(clockid_t, int, const struct timespec *, struct timespec *);
SM_CW_EXPORT int clock_nanosleep(clockid_t clock, int flags, const struct timespec *req,
                                 struct timespec *rem)
{
    SM_CW_REAL(sm_clock_nanosleep_fn, clock_nanosleep)
    SM_CW_BLOCK(int, NULL, real_fn(clock, flags, req, rem))
}

typedef int (*sm_usleep_fn)(useconds_t);
SM_CW_EXPORT int usleep(useconds_t us)
{
    SM_CW_REAL(sm_usleep_fn, usleep)
    SM_CW_BLOCK(int, NULL, real_fn(us))
}

typedef unsigned (*sm_sleep_fn)(unsigned);
SM_CW_EXPORT unsigned sleep(unsigned s)
{
    SM_CW_REAL(sm_sleep_fn, sleep)
    SM_CW_BLOCK(unsigned, NULL, real_fn(s))
}
