/* pthread adapter: wraps pthread_create so that a new thread's location knows
 * which thread created it and from which call path, and so that both sides
 * appear in the trace (ThreadCreate on the creator, ThreadBegin on the new
 * thread).  Interposed through LD_PRELOAD or by linking libsysmeasure. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "core/clock.h"
#include "core/compiler.h"
#include "core/ending.h"
#include "core/events.h"
#include "core/location.h"
#include "core/runtime.h"

typedef int (*sm_pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
                                    void *);

typedef struct sm_thread_start {
    void *(*start)(void *);
    void *arg;
    sm_location_t *loc;
} sm_thread_start_t;

static sm_pthread_create_fn sm_real_pthread_create(void)
{
    static sm_pthread_create_fn real;
    sm_pthread_create_fn fn = __atomic_load_n(&real, __ATOMIC_ACQUIRE);
    if (!fn) {
        fn = (sm_pthread_create_fn)dlsym(RTLD_NEXT, "pthread_create");
        __atomic_store_n(&real, fn, __ATOMIC_RELEASE);
    }
    return fn;
}

static void *sm_thread_trampoline(void *p)
{
    sm_thread_start_t s = *(sm_thread_start_t *)p;
    free(p);
    sm_location_bind_current(s.loc);
    if (s.loc->tracing && !sm_dormant_idle)
        sm_trace_record(s.loc, SM_REC_THREAD_BEGIN, s.loc->creator, sm_clock_now());
    return s.start(s.arg);
}

SM_EXPORT int pthread_create(pthread_t *thread, const pthread_attr_t *attr,
                             void *(*start)(void *), void *arg)
{
    sm_pthread_create_fn real = sm_real_pthread_create();
    if (!real)
        return EAGAIN;
    if (!sm_runtime_active)
        return real(thread, attr, start, arg);
    sm_ending_before_thread(); /* the process's second thread: ending.c's comes first */
    sm_location_t *creator = sm_location_current();
    sm_thread_start_t *s = malloc(sizeof *s);
    sm_location_t *loc = (s && !creator->closed) ? sm_location_new_thread(creator) : NULL;
    if (!loc) {
        free(s);
        return real(thread, attr, start, arg);
    }
    s->start = start;
    s->arg = arg;
    s->loc = loc;
    loc->start_routine = (void *)start; /* (sampling tells runtimes' threads by it) */
    sm_event_thread_create(creator, loc->id, sm_clock_now());
    int rc = real(thread, attr, sm_thread_trampoline, s);
    if (rc != 0) {
        free(s);
        sm_location_close(loc, sm_clock_now()); /* never ran: stays empty */
    }
    return rc;
}
