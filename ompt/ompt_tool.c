/* The OMPT tool: the OpenMP runtime's callbacks become regions on the
 * location of the thread that reports them (see ompt_tool.h for the names).
 *
 * Per thread, a stack of the OpenMP scopes it is in (implicit task,
 * worksharing, sync region, task, mutex wait/hold) mirrors the frames it
 * entered: an end callback leaves what its begin entered, also where the
 * runtime gives no code pointer or another one at the end.
 *
 * The hot callbacks (implicit task, barrier) take no lock and allocate
 * nothing once a construct has been seen: a construct's regions come from
 * a lock-free table keyed by its code pointer, and a parallel region's
 * instance lives in a fixed ring. */
#define _GNU_SOURCE
#include "sm_build.h"
#include "ompt_tool.h"

#ifdef SM_HAVE_OMPT
#include SM_OMP_TOOLS_H

#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/config.h"
#include "core/definitions.h"
#include "core/events.h"
#include "core/location.h"
#include "core/runtime.h"
#include "util/log.h"
#include "util/srcloc.h"
#include "util/symbols.h"

SM_EXPORT ompt_start_tool_result_t *ompt_start_tool(unsigned int omp_version,
                                                    const char *runtime_version);

/* ---------------------------------------------------------------- constructs */

/* What a region stands for; with the code pointer, the key of its name. */
typedef enum {
    SM_SITE_PARALLEL = 1,
    SM_SITE_TEAMS,
    SM_SITE_LOOP,
    SM_SITE_SECTIONS,
    SM_SITE_SINGLE,
    SM_SITE_WORKSHARE,
    SM_SITE_DISTRIBUTE,
    SM_SITE_TASKLOOP,
    SM_SITE_SCOPE,
    SM_SITE_BARRIER,
    SM_SITE_BARRIER_IMPLICIT,
    SM_SITE_BARRIER_RUNTIME,
    SM_SITE_BARRIER_TEAMS,
    SM_SITE_TASKWAIT,
    SM_SITE_TASKGROUP,
    SM_SITE_REDUCTION,
    SM_SITE_MASKED,
    SM_SITE_TASK,
    SM_SITE_TARGET_TASK,
    SM_SITE_WAIT_LOCK,
    SM_SITE_WAIT_NEST_LOCK,
    SM_SITE_WAIT_CRITICAL,
    SM_SITE_WAIT_ATOMIC,
    SM_SITE_WAIT_ORDERED,
    SM_SITE_CRITICAL,
    SM_SITE_ATOMIC,
    SM_SITE_ORDERED,
    SM_SITE_COUNT
} sm_site_kind_t;

static const struct {
    const char *label;
    sm_region_role_t role;
} sm_site_kinds[SM_SITE_COUNT] = {
    [SM_SITE_PARALLEL] = {"omp parallel", SM_ROLE_PARALLEL},
    [SM_SITE_TEAMS] = {"omp teams", SM_ROLE_PARALLEL},
    [SM_SITE_LOOP] = {"omp for", SM_ROLE_LOOP},
    [SM_SITE_SECTIONS] = {"omp sections", SM_ROLE_CODE},
    [SM_SITE_SINGLE] = {"omp single", SM_ROLE_CODE},
    [SM_SITE_WORKSHARE] = {"omp workshare", SM_ROLE_CODE},
    [SM_SITE_DISTRIBUTE] = {"omp distribute", SM_ROLE_LOOP},
    [SM_SITE_TASKLOOP] = {"omp taskloop", SM_ROLE_LOOP},
    [SM_SITE_SCOPE] = {"omp scope", SM_ROLE_CODE},
    [SM_SITE_BARRIER] = {"omp barrier", SM_ROLE_BARRIER},
    [SM_SITE_BARRIER_IMPLICIT] = {"omp barrier (implicit)", SM_ROLE_BARRIER},
    [SM_SITE_BARRIER_RUNTIME] = {"omp barrier (runtime)", SM_ROLE_BARRIER},
    [SM_SITE_BARRIER_TEAMS] = {"omp barrier (teams)", SM_ROLE_BARRIER},
    [SM_SITE_TASKWAIT] = {"omp taskwait", SM_ROLE_BARRIER},
    [SM_SITE_TASKGROUP] = {"omp taskgroup", SM_ROLE_BARRIER},
    [SM_SITE_REDUCTION] = {"omp reduction", SM_ROLE_BARRIER},
    [SM_SITE_MASKED] = {"omp masked", SM_ROLE_CODE},
    [SM_SITE_TASK] = {"omp task", SM_ROLE_TASK},
    [SM_SITE_TARGET_TASK] = {"omp target task", SM_ROLE_TASK},
    [SM_SITE_WAIT_LOCK] = {"omp_set_lock (wait)", SM_ROLE_CODE},
    [SM_SITE_WAIT_NEST_LOCK] = {"omp_set_nest_lock (wait)", SM_ROLE_CODE},
    [SM_SITE_WAIT_CRITICAL] = {"omp critical (wait)", SM_ROLE_CODE},
    [SM_SITE_WAIT_ATOMIC] = {"omp atomic (wait)", SM_ROLE_CODE},
    [SM_SITE_WAIT_ORDERED] = {"omp ordered (wait)", SM_ROLE_CODE},
    [SM_SITE_CRITICAL] = {"omp critical", SM_ROLE_CODE},
    [SM_SITE_ATOMIC] = {"omp atomic", SM_ROLE_CODE},
    [SM_SITE_ORDERED] = {"omp ordered", SM_ROLE_CODE},
};

/* One construct at one code pointer. */
typedef struct sm_ompt_site {
    uint64_t key; /* code pointer | kind << 56; 0: free slot.  Written last. */
    sm_region_id_t region;
    uint32_t kind;
    struct sm_ompt_site *barrier; /* a parallel's implicit barrier at its end */
    const char *function;         /* where the construct is, as named */
} sm_ompt_site_t;

#ifndef SM_SITE_BITS /* (tests build with a small table to fill it) */
#define SM_SITE_BITS 12
#endif
#define SM_SITE_SLOTS (1u << SM_SITE_BITS)
static sm_ompt_site_t sm_sites[SM_SITE_SLOTS];
static sm_ompt_site_t sm_sites_generic[SM_SITE_COUNT]; /* when the table is full */
static pthread_mutex_t sm_sites_lock = PTHREAD_MUTEX_INITIALIZER;

static inline uint64_t sm_site_key(sm_site_kind_t kind, const void *codeptr)
{
    return (uint64_t)(uintptr_t)codeptr | (uint64_t)kind << 56;
}

static inline uint32_t sm_site_hash(uint64_t key)
{
    return (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> (64 - SM_SITE_BITS));
}

/* The body the compiler outlined from a construct has a name of its own
 * (".omp_outlined..4"): name it after the construct instead. */
static bool sm_site_outlined(const char *function)
{
    return !strncmp(function, ".omp_", 5) || !strncmp(function, "__omp_outlined", 14);
}

/* How a name tells its construct apart from another of the same kind on the
 * same source line (two constructs in one macro, code the compiler
 * duplicated): not at all, by the column, by the offset into the function. */
typedef enum { SM_NAME_PLAIN, SM_NAME_COLUMN, SM_NAME_OFFSET } sm_site_naming_t;

/* Under sm_sites_lock. parent: the construct whose body we are in (a
 * parallel region or a task), or NULL.  src: the construct's source line,
 * line 0 when unknown; named "function (file:line)" when known, else
 * "function+offset". */
static void sm_site_name(sm_site_kind_t kind, const void *codeptr, const sm_ompt_site_t *parent,
                         const sm_srcloc_t *src, sm_site_naming_t how, char *name, size_t len,
                         char *function, size_t flen)
{
    const char *label = sm_site_kinds[kind].label;
    sm_symbol_t sym;
    function[0] = '\0';
    if (!codeptr) {
        snprintf(name, len, "%s", label);
        return;
    }
    if (sm_symbol_lookup(codeptr, &sym) != 0) {
        snprintf(name, len, "%s @ %p", label, codeptr);
        return;
    }
    if (sym.function[0] && sm_site_outlined(sym.function) && parent && parent->function &&
        parent->function[0])
        snprintf(function, flen, "%s.%s", parent->function,
                 parent->kind == SM_SITE_TASK || parent->kind == SM_SITE_TARGET_TASK
                     ? "omp_task" : "omp_outlined");
    else
        snprintf(function, flen, "%s", sym.function[0] ? sym.function : sym.object);
    const char *file = sm_srcloc_basename(src->file);
    if (!src->line)
        snprintf(name, len, "%s @ %s+0x%lx", label, function, (unsigned long)sym.offset);
    else if (how == SM_NAME_PLAIN)
        snprintf(name, len, "%s @ %s (%s:%u)", label, function, file, (unsigned)src->line);
    else if (how == SM_NAME_COLUMN && src->column)
        snprintf(name, len, "%s @ %s (%s:%u:%u)", label, function, file, (unsigned)src->line,
                 (unsigned)src->column);
    else
        snprintf(name, len, "%s @ %s+0x%lx (%s:%u)", label, function, (unsigned long)sym.offset,
                 file, (unsigned)src->line);
}

/* Whether a construct already seen has this region. */
static bool sm_site_region_taken_locked(sm_region_id_t region)
{
    for (uint32_t i = 0; i < SM_SITE_SLOTS; i++)
        if (sm_sites[i].key && sm_sites[i].region == region)
            return true;
    return false;
}

static sm_ompt_site_t *sm_site_find_locked(uint64_t key, uint32_t *free_slot)
{
    uint32_t h = sm_site_hash(key);
    *free_slot = UINT32_MAX;
    for (uint32_t i = 0; i < SM_SITE_SLOTS; i++) {
        sm_ompt_site_t *s = &sm_sites[(h + i) & (SM_SITE_SLOTS - 1)];
        if (s->key == key)
            return s;
        if (!s->key) {
            *free_slot = (h + i) & (SM_SITE_SLOTS - 1);
            return NULL;
        }
    }
    return NULL;
}

static sm_ompt_site_t *sm_site_make_locked(sm_site_kind_t kind, const void *codeptr,
                                           const sm_ompt_site_t *parent)
{
    uint64_t key = sm_site_key(kind, codeptr);
    uint32_t slot;
    sm_ompt_site_t *s = sm_site_find_locked(key, &slot);
    if (s)
        return s;
    /* A parallel region's closing barrier carries its code pointer on the
     * encountering thread, none on the others: both get this one.  Made
     * first, since it takes a slot too. */
    sm_ompt_site_t *barrier = NULL;
    if (kind == SM_SITE_PARALLEL || kind == SM_SITE_TEAMS) {
        barrier = sm_site_make_locked(SM_SITE_BARRIER_IMPLICIT, codeptr, parent);
        sm_site_find_locked(key, &slot);
    }
    if (slot == UINT32_MAX) { /* table full: one region per kind from now on */
        s = &sm_sites_generic[kind];
        if (!s->key) {
            s->kind = kind;
            s->region = sm_region_define(sm_site_kinds[kind].label, NULL, 0, SM_PARADIGM_OPENMP,
                                         sm_site_kinds[kind].role);
            s->function = "";
            s->key = sm_site_key(kind, NULL);
        }
        return s;
    }
    s = &sm_sites[slot];
    s->kind = kind;
    /* The code pointer is the return address of the call into the runtime:
     * the byte before it is in the call, on the construct's line. */
    sm_srcloc_t src;
    if (!codeptr || sm_srcloc_lookup((const char *)codeptr - 1, &src) != 0)
        src.line = 0;
    char name[320], function[192];
    for (sm_site_naming_t how = SM_NAME_PLAIN;; how++) {
        sm_site_name(kind, codeptr, parent, &src, how, name, sizeof name, function,
                     sizeof function);
        s->region = sm_region_define(name, src.line ? src.file : NULL, src.line,
                                     SM_PARADIGM_OPENMP, sm_site_kinds[kind].role);
        /* function+offset names differ by site; a source line may not */
        if (!src.line || how == SM_NAME_OFFSET || !sm_site_region_taken_locked(s->region))
            break;
    }
    s->function = strdup(function);
    if (!s->function)
        s->function = "";
    s->barrier = barrier;
    __atomic_store_n(&s->key, key, __ATOMIC_RELEASE);
    return s;
}

static SM_NOINLINE sm_ompt_site_t *sm_site_slow(sm_site_kind_t kind, const void *codeptr,
                                                const sm_ompt_site_t *parent)
{
    int saved_errno = errno; /* naming reads files: the program's errno stays */
    pthread_mutex_lock(&sm_sites_lock);
    sm_ompt_site_t *s = sm_site_make_locked(kind, codeptr, parent);
    pthread_mutex_unlock(&sm_sites_lock);
    errno = saved_errno;
    return s;
}

/* The construct at codeptr; lock-free once it has been seen. */
static inline sm_ompt_site_t *sm_site(sm_site_kind_t kind, const void *codeptr,
                                      const sm_ompt_site_t *parent)
{
    uint64_t key = sm_site_key(kind, codeptr);
    uint32_t h = sm_site_hash(key);
    for (uint32_t i = 0; i < 8; i++) {
        sm_ompt_site_t *s = &sm_sites[(h + i) & (SM_SITE_SLOTS - 1)];
        uint64_t k = __atomic_load_n(&s->key, __ATOMIC_ACQUIRE);
        if (k == key)
            return s;
        if (!k)
            break;
    }
    return sm_site_slow(kind, codeptr, parent);
}

/* ---------------------------------------------------------------- parallel instances */

/* A running parallel region: the team size asked for, and the time it
 * ended, which its worker threads learn only later (see sm_ompt_end_time).
 * Slots are reused after SM_RING regions; a reader checks seq before and
 * after. */
typedef struct sm_ompt_instance {
    uint64_t seq;
    uint64_t end; /* ticks; 0 while it runs */
    uint32_t requested;
} __attribute__((aligned(64))) sm_ompt_instance_t;

#define SM_RING 4096
static sm_ompt_instance_t sm_ring[SM_RING];
/* The last instance handed out, on a cache line of its own: the forking
 * thread writes it at every parallel region. */
static struct {
    uint64_t seq;
    char pad[56];
} sm_ring_last __attribute__((aligned(64)));

static inline sm_ompt_instance_t *sm_instance(uint64_t seq)
{
    sm_ompt_instance_t *in = &sm_ring[seq & (SM_RING - 1)];
    return __atomic_load_n(&in->seq, __ATOMIC_ACQUIRE) == seq ? in : NULL;
}

/* A parallel region's data: its instance and its construct, so that the
 * team's threads need not read the instance (written by another thread
 * just now) to learn the construct. */
_Static_assert(SM_SITE_SLOTS + SM_SITE_COUNT <= 0xffff, "a construct's index takes 16 bits");

static inline uint64_t sm_site_index(const sm_ompt_site_t *site)
{
    return site >= sm_sites && site < sm_sites + SM_SITE_SLOTS ? (uint64_t)(site - sm_sites)
                                                               : SM_SITE_SLOTS + site->kind;
}

static inline const sm_ompt_site_t *sm_site_at(uint64_t index)
{
    return index < SM_SITE_SLOTS ? &sm_sites[index] : &sm_sites_generic[index - SM_SITE_SLOTS];
}

static inline uint64_t sm_parallel_value(uint64_t seq, const sm_ompt_site_t *site)
{
    return seq << 16 | sm_site_index(site);
}

static inline const sm_ompt_site_t *sm_parallel_site(uint64_t value)
{
    uint64_t index = value & 0xffff;
    if (!(value >> 16) || index >= SM_SITE_SLOTS + SM_SITE_COUNT)
        return sm_site(SM_SITE_PARALLEL, NULL, NULL); /* not a region we saw begin */
    return sm_site_at(index);
}

/* An implicit task's task data: its instance (even); an explicit task's:
 * its id, its construct's index, 1 (odd).  The id (47 bits) is the task's
 * in the trace, unique in the process. */
static inline uint64_t sm_implicit_value(uint64_t seq)
{
    return seq << 1;
}

static inline bool sm_is_explicit(const ompt_data_t *task)
{
    return task && (task->value & 1);
}

static inline uint64_t sm_explicit_value(uint64_t id, const sm_ompt_site_t *site)
{
    return id << 17 | sm_site_index(site) << 1 | 1;
}

static inline const sm_ompt_site_t *sm_explicit_site(const ompt_data_t *task)
{
    uint64_t index = task->value >> 1 & 0xffff;
    return sm_site_at(index < SM_SITE_SLOTS + SM_SITE_COUNT ? index : SM_SITE_SLOTS + SM_SITE_TASK);
}

static inline uint64_t sm_explicit_id(const ompt_data_t *task)
{
    return task->value >> 17;
}

/* ---------------------------------------------------------------- threads */

typedef enum {
    SM_SCOPE_IMPLICIT = 1, /* aux: the instance's seq */
    SM_SCOPE_WORK,
    SM_SCOPE_SYNC,
    SM_SCOPE_MASKED,
    SM_SCOPE_TASK,         /* aux: the task's ompt_data_t */
    SM_SCOPE_WAIT,         /* aux: wait id */
    SM_SCOPE_HELD          /* aux: wait id */
} sm_scope_kind_t;

typedef struct sm_ompt_scope {
    const sm_ompt_site_t *site;
    uint64_t aux;
    sm_region_id_t region; /* as entered; SM_INVALID_ID when not recorded */
    uint16_t kind;
    uint16_t forked;       /* an implicit task whose OmpFork was recorded: join it */
} sm_ompt_scope_t;

/* A lock the thread holds: its release carries the acquisition's order
 * (read after the runtime unlocked it, the lock's counter may have moved). */
typedef struct sm_ompt_held {
    ompt_wait_id_t wait_id;
    uint32_t lock;
    uint32_t order;
} sm_ompt_held_t;

#define SM_MAX_SCOPES 128
#define SM_MAX_HELD 32
/* Task ids come from a process counter in blocks, so that creating a task
 * touches no shared cache line. */
#define SM_TASK_ID_BLOCK 1024
typedef struct sm_ompt_thread {
    sm_location_t *loc;
    uint64_t last;  /* ticks of this adapter's last event on the thread */
    uint32_t depth; /* scopes open; those beyond SM_MAX_SCOPES are only counted */
    uint32_t held;  /* locks held; those beyond SM_MAX_HELD are only counted */
    uint64_t task_id, task_id_end; /* the thread's block of task ids */
    struct sm_ompt_thread *next;
    sm_ompt_scope_t scope[SM_MAX_SCOPES];
    sm_ompt_held_t locks[SM_MAX_HELD];
} sm_ompt_thread_t;

static SM_TLS sm_ompt_thread_t *sm_ompt_me;
static sm_ompt_thread_t *sm_ompt_threads; /* all of them, for finalize */
static pthread_mutex_t sm_ompt_threads_lock = PTHREAD_MUTEX_INITIALIZER;
/* Threads whose state could not be allocated share one that keeps nothing. */
static sm_ompt_thread_t sm_ompt_nomem = {.depth = 1u << 30};
static uint32_t sm_ompt_workers;
static int sm_ompt_initialized;
static sm_attribute_id_t sm_attr_requested = SM_INVALID_ID, sm_attr_team = SM_INVALID_ID;

static SM_COLD sm_ompt_thread_t *sm_ompt_thread_new(void)
{
    int saved_errno = errno;
    sm_ompt_thread_t *th = calloc(1, sizeof *th);
    if (!th)
        th = &sm_ompt_nomem;
    else {
        th->loc = sm_location_current();
        pthread_mutex_lock(&sm_ompt_threads_lock);
        th->next = sm_ompt_threads;
        sm_ompt_threads = th;
        pthread_mutex_unlock(&sm_ompt_threads_lock);
    }
    sm_ompt_me = th;
    errno = saved_errno;
    return th;
}

static inline sm_ompt_thread_t *sm_ompt_thread(void)
{
    sm_ompt_thread_t *th = sm_ompt_me;
    return SM_LIKELY(th != NULL) ? th : sm_ompt_thread_new();
}

/* The innermost open scope of this kind (with this aux when match_aux). */
static inline sm_ompt_scope_t *sm_scope_find(sm_ompt_thread_t *th, uint32_t kind, uint64_t aux,
                                             bool match_aux)
{
    uint32_t d = th->depth < SM_MAX_SCOPES ? th->depth : SM_MAX_SCOPES;
    while (d--) {
        sm_ompt_scope_t *s = &th->scope[d];
        if (s->kind == kind && (!match_aux || s->aux == aux))
            return s;
    }
    return NULL;
}

/* The construct whose body the thread runs: its innermost task. */
static inline const sm_ompt_site_t *sm_scope_parent(sm_ompt_thread_t *th)
{
    uint32_t d = th->depth < SM_MAX_SCOPES ? th->depth : SM_MAX_SCOPES;
    while (d--)
        if (th->scope[d].kind == SM_SCOPE_IMPLICIT || th->scope[d].kind == SM_SCOPE_TASK)
            return th->scope[d].site;
    return NULL;
}

static inline void sm_scope_push(sm_ompt_thread_t *th, sm_location_t *loc, uint32_t kind,
                                 const sm_ompt_site_t *site, uint64_t aux, uint64_t t)
{
    if (SM_UNLIKELY(th->depth >= SM_MAX_SCOPES)) {
        th->depth++;
        return;
    }
    sm_ompt_scope_t *s = &th->scope[th->depth++];
    s->site = site;
    s->aux = aux;
    s->kind = (uint16_t)kind;
    s->forked = 0;
    s->region = SM_INVALID_ID;
    if (SM_LIKELY(sm_measuring(loc)) && !loc->closed && site->region != SM_INVALID_ID) {
        s->region = site->region;
        sm_event_enter(loc, site->region, t);
        th->last = t;
    }
}

/* Leave region where it is open on loc (closing what is above it). */
static inline void sm_ompt_leave(sm_location_t *loc, sm_region_id_t region, uint64_t t)
{
    if (loc->closed)
        return;
    if (SM_LIKELY(loc->sp != loc->stack && loc->sp->region == region)) {
        sm_event_leave_top(loc, t);
        return;
    }
    for (sm_frame_t *f = loc->sp; f > loc->stack; f--)
        if (f->region == region) {
            while (loc->sp >= f)
                sm_event_leave_top(loc, t);
            return;
        }
}

/* End scope s and the scopes opened after it. */
static inline void sm_scope_pop(sm_ompt_thread_t *th, sm_location_t *loc, sm_ompt_scope_t *s,
                                uint64_t t)
{
    for (sm_ompt_scope_t *p = &th->scope[th->depth - 1]; p >= s; p--)
        if (p->region != SM_INVALID_ID) {
            sm_ompt_leave(loc, p->region, t);
            th->last = t;
        }
    th->depth = (uint32_t)(s - th->scope);
}

/* Ends the innermost scope of a kind; returns false when none is open. */
static inline bool sm_scope_end(sm_ompt_thread_t *th, sm_location_t *loc, uint32_t kind,
                                uint64_t aux, bool match_aux, uint64_t t)
{
    if (SM_UNLIKELY(th->depth > SM_MAX_SCOPES)) {
        th->depth--;
        return true;
    }
    sm_ompt_scope_t *s = sm_scope_find(th, kind, aux, match_aux);
    if (!s)
        return false;
    sm_scope_pop(th, loc, s, t);
    return true;
}

/* The time at which an implicit task's closing barrier and the task itself
 * end.  LLVM's runtime reports both for a worker thread only when the thread
 * is woken for its next parallel region (or shuts down), so the region would
 * take in all the serial time until then.  The region really ended when its
 * encountering thread saw it end: take that time when it is known, never
 * earlier than what the thread recorded already. */
static inline uint64_t sm_ompt_end_time(const sm_ompt_thread_t *th, const sm_location_t *loc,
                                        const sm_ompt_scope_t *implicit)
{
    uint64_t t = 0;
    if (implicit) {
        const sm_ompt_instance_t *in = sm_instance(implicit->aux);
        if (in) {
            t = __atomic_load_n(&in->end, __ATOMIC_ACQUIRE);
            if (__atomic_load_n(&in->seq, __ATOMIC_ACQUIRE) != implicit->aux)
                t = 0;
        }
    }
    if (!t)
        return sm_clock_now();
    if (t < th->last)
        t = th->last;
    if (t < loc->sp->start)
        t = loc->sp->start;
    return t;
}

/* ---------------------------------------------------------------- task and lock ids */

static uint64_t sm_task_ids; /* handed out so far, in blocks */

/* A task's id in the trace: unique in the process, from 1. */
static inline uint64_t sm_task_id_next(sm_ompt_thread_t *th)
{
    if (SM_UNLIKELY(th == &sm_ompt_nomem)) /* shared: no block of its own */
        return __atomic_add_fetch(&sm_task_ids, 1, __ATOMIC_RELAXED);
    if (SM_UNLIKELY(th->task_id == th->task_id_end)) {
        th->task_id = __atomic_fetch_add(&sm_task_ids, SM_TASK_ID_BLOCK, __ATOMIC_RELAXED) + 1;
        th->task_id_end = th->task_id + SM_TASK_ID_BLOCK;
    }
    return th->task_id++;
}

/* A lock (any mutex: lock, nest lock, critical, atomic, ordered), keyed by
 * its OMPT wait id, with the small id the trace gives it and the count of
 * its acquisitions.  Open addressing, claimed by CAS: no lock taken, and a
 * lock seen before costs one lookup. */
typedef struct sm_ompt_lock {
    uint64_t key;   /* wait id; 0: free */
    uint32_t id;    /* trace id + 1; 0 until the claiming thread set it */
    uint32_t order; /* acquisitions recorded so far */
    /* The times of the last two acquisitions (tag: order + 1; 0 while being
     * written).  The runtime reports a release after the unlock, so the
     * next holder may have its acquire stamped first: the release is
     * stamped no later than that. */
    struct {
        uint64_t tag, time;
    } acquired[2];
} sm_ompt_lock_t;

#ifndef SM_LOCK_BITS
#define SM_LOCK_BITS 15
#endif
#define SM_LOCK_SLOTS (1u << SM_LOCK_BITS)
#define SM_LOCK_PROBES 64 /* beyond: the table is too full here, not recorded */
static sm_ompt_lock_t sm_locks[SM_LOCK_SLOTS];
static uint32_t sm_lock_ids;
static uint64_t sm_locks_unrecorded;

static sm_ompt_lock_t *sm_lock(ompt_wait_id_t wait_id)
{
    if (!wait_id)
        return NULL;
    uint32_t h = (uint32_t)((wait_id * 0x9E3779B97F4A7C15ull) >> (64 - SM_LOCK_BITS));
    for (uint32_t i = 0; i < SM_LOCK_PROBES; i++) {
        sm_ompt_lock_t *l = &sm_locks[(h + i) & (SM_LOCK_SLOTS - 1)];
        uint64_t k = __atomic_load_n(&l->key, __ATOMIC_ACQUIRE);
        if (!k) {
            if (__atomic_compare_exchange_n(&l->key, &k, wait_id, false, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE)) {
                __atomic_store_n(&l->id, __atomic_add_fetch(&sm_lock_ids, 1, __ATOMIC_RELAXED),
                                 __ATOMIC_RELEASE);
                return l;
            }
            /* another thread claimed it: k is its key */
        }
        if (k == wait_id) {
            /* Claimed just now by another thread, which sets the id next. */
            while (!__atomic_load_n(&l->id, __ATOMIC_ACQUIRE))
                sched_yield();
            return l;
        }
    }
    __atomic_add_fetch(&sm_locks_unrecorded, 1, __ATOMIC_RELAXED);
    return NULL;
}

/* The thread acquired a lock: OmpAcquireLock, and remember it for the
 * release.  The counter moves only under the lock, so the orders of one
 * lock follow its acquisitions, with no gap. */
static void sm_lock_acquired(sm_ompt_thread_t *th, sm_location_t *loc, ompt_wait_id_t wait_id,
                             uint64_t t)
{
    if (th == &sm_ompt_nomem)
        return;
    if (th->held >= SM_MAX_HELD) {
        th->held++;
        return;
    }
    if (!sm_measuring(loc) || !loc->tracing || loc->closed)
        return;
    sm_ompt_lock_t *l = sm_lock(wait_id);
    if (!l)
        return;
    sm_ompt_held_t *h = &th->locks[th->held++];
    h->wait_id = wait_id;
    h->lock = __atomic_load_n(&l->id, __ATOMIC_ACQUIRE) - 1;
    h->order = __atomic_fetch_add(&l->order, 1, __ATOMIC_RELAXED);
    /* Written under the lock: one writer at a time; readers check the tag
     * before and after (a seqlock). */
    __typeof__(l->acquired[0]) *at = &l->acquired[h->order & 1];
    __atomic_store_n(&at->tag, 0, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    __atomic_store_n(&at->time, t, __ATOMIC_RELAXED);
    __atomic_store_n(&at->tag, (uint64_t)h->order + 1, __ATOMIC_RELEASE);
    uint64_t order = h->order;
    sm_event_record(loc, SM_REC_OMP_ACQUIRE_LOCK, h->lock, 0, t, &order, 1);
}

/* The lock the thread releases among those it holds, or NULL. */
static sm_ompt_held_t *sm_lock_held(sm_ompt_thread_t *th, ompt_wait_id_t wait_id)
{
    if (th == &sm_ompt_nomem)
        return NULL;
    uint32_t n = th->held < SM_MAX_HELD ? th->held : SM_MAX_HELD;
    for (uint32_t i = n; i--;)
        if (th->locks[i].wait_id == wait_id)
            return &th->locks[i];
    return NULL;
}

/* The release time of h, taken at t after the unlock: no later than the
 * next acquisition's, never before what the thread recorded already. */
static uint64_t sm_lock_release_time(const sm_ompt_thread_t *th, const sm_location_t *loc,
                                     const sm_ompt_held_t *h, uint64_t t)
{
    sm_ompt_lock_t *l = sm_lock(h->wait_id);
    if (!l)
        return t;
    uint32_t next = h->order + 1;
    const __typeof__(l->acquired[0]) *at = &l->acquired[next & 1];
    uint64_t tag = __atomic_load_n(&at->tag, __ATOMIC_ACQUIRE);
    if (tag != (uint64_t)next + 1)
        return t; /* not acquired again yet (or twice since: then unknown) */
    uint64_t next_time = __atomic_load_n(&at->time, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&at->tag, __ATOMIC_RELAXED) != tag || next_time >= t)
        return t;
    t = next_time;
    if (t < th->last)
        t = th->last;
    if (t < loc->sp->start)
        t = loc->sp->start;
    return t;
}

static void sm_lock_released(sm_ompt_thread_t *th, sm_location_t *loc, sm_ompt_held_t *h,
                             uint64_t t)
{
    if (!h) {
        if (th->held > SM_MAX_HELD)
            th->held--; /* one of those only counted */
        return;
    }
    uint64_t order = h->order;
    sm_event_record(loc, SM_REC_OMP_RELEASE_LOCK, h->lock, 0, t, &order, 1);
    uint32_t n = th->held < SM_MAX_HELD ? th->held : SM_MAX_HELD;
    memmove(h, h + 1, (size_t)(&th->locks[n] - (h + 1)) * sizeof *h);
    th->held--;
}

/* ---------------------------------------------------------------- callbacks */

static void sm_cb_thread_begin(ompt_thread_t type, ompt_data_t *thread_data)
{
    sm_ompt_thread_t *th = sm_ompt_thread();
    thread_data->ptr = th;
    sm_location_t *loc = th->loc;
    /* The pthread wrapper made the location when the runtime created the
     * thread ("Thread N"); say what it is. */
    if (type == ompt_thread_worker && loc && !loc->closed)
        snprintf(loc->name, sizeof loc->name, "OpenMP thread %u",
                 __atomic_add_fetch(&sm_ompt_workers, 1, __ATOMIC_RELAXED));
}

static void sm_cb_parallel_begin(ompt_data_t *encountering_task, const ompt_frame_t *frame,
                                 ompt_data_t *parallel, unsigned int requested, int flags,
                                 const void *codeptr)
{
    (void)encountering_task;
    (void)frame;
    sm_ompt_thread_t *th = sm_ompt_thread();
    sm_site_kind_t kind = (flags & ompt_parallel_league) ? SM_SITE_TEAMS : SM_SITE_PARALLEL;
    const sm_ompt_site_t *site = sm_site(kind, codeptr, sm_scope_parent(th));
    uint64_t seq = __atomic_add_fetch(&sm_ring_last.seq, 1, __ATOMIC_RELAXED);
    sm_ompt_instance_t *in = &sm_ring[seq & (SM_RING - 1)];
    __atomic_store_n(&in->seq, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&in->end, 0, __ATOMIC_RELEASE);
    in->requested = requested;
    __atomic_store_n(&in->seq, seq, __ATOMIC_RELEASE);
    parallel->value = sm_parallel_value(seq, site);
}

static void sm_cb_parallel_end(ompt_data_t *parallel, ompt_data_t *encountering_task, int flags,
                               const void *codeptr)
{
    (void)encountering_task;
    (void)flags;
    (void)codeptr;
    sm_ompt_instance_t *in = sm_instance(parallel->value >> 16);
    if (in)
        __atomic_store_n(&in->end, sm_clock_now(), __ATOMIC_RELEASE);
}

static void sm_cb_implicit_task(ompt_scope_endpoint_t endpoint, ompt_data_t *parallel,
                                ompt_data_t *task, unsigned int actual, unsigned int index,
                                int flags)
{
    if (flags & ompt_task_initial)
        return; /* the program's own initial task: no region */
    sm_ompt_thread_t *th = sm_ompt_thread();
    sm_location_t *loc = sm_location_current();
    if (endpoint == ompt_scope_begin) {
        uint64_t value = parallel ? parallel->value : 0, seq = value >> 16;
        const sm_ompt_site_t *site = sm_parallel_site(value);
        task->value = sm_implicit_value(seq);
        uint64_t t = sm_clock_now();
        const sm_ompt_instance_t *in;
        if (index == 0 && loc->tracing && sm_attr_team != SM_INVALID_ID &&
            th->depth < SM_MAX_SCOPES && sm_measuring(loc) && !loc->closed &&
            site->region != SM_INVALID_ID && (in = sm_instance(seq)) != NULL) {
            /* The team sizes go on the encountering thread's enter (it wrote
             * the instance itself). */
            sm_attr_value_t attrs[2] = {{sm_attr_requested, in->requested},
                                        {sm_attr_team, actual}};
            sm_ompt_scope_t *s = &th->scope[th->depth++];
            s->site = site;
            s->aux = seq;
            s->kind = SM_SCOPE_IMPLICIT;
            s->forked = 1;
            s->region = site->region;
            sm_event_enter_attrs(loc, site->region, t, attrs, 2);
            /* The fork inside the region's enter, the join before its leave:
             * the encountering thread's own part of the team is in between. */
            sm_event_record(loc, SM_REC_OMP_FORK, in->requested, 0, t, NULL, 0);
            th->last = t;
        } else {
            sm_scope_push(th, loc, SM_SCOPE_IMPLICIT, site, seq, t);
        }
    } else if (SM_UNLIKELY(th->depth > SM_MAX_SCOPES)) {
        th->depth--;
    } else {
        sm_ompt_scope_t *s = sm_scope_find(th, SM_SCOPE_IMPLICIT, task->value >> 1, true);
        if (!s)
            return;
        uint64_t t = sm_ompt_end_time(th, loc, s);
        if (s->forked) {
            if (s + 1 < &th->scope[th->depth]) /* what is still open inside ends first */
                sm_scope_pop(th, loc, s + 1, t);
            sm_event_record(loc, SM_REC_OMP_JOIN, 0, 0, t, NULL, 0);
        }
        sm_scope_pop(th, loc, s, t);
    }
}

static sm_site_kind_t sm_work_kind(ompt_work_t type)
{
    switch (type) {
    case ompt_work_loop: return SM_SITE_LOOP;
    case ompt_work_sections: return SM_SITE_SECTIONS;
    case ompt_work_single_executor: return SM_SITE_SINGLE;
    case ompt_work_workshare: return SM_SITE_WORKSHARE;
    case ompt_work_distribute: return SM_SITE_DISTRIBUTE;
    case ompt_work_taskloop: return SM_SITE_TASKLOOP;
    case ompt_work_scope: return SM_SITE_SCOPE;
    default: return 0; /* single_other: the threads that skip it, nothing to show */
    }
}

/* GCC's single construct has no end call (the barrier after it ends it), so
 * LLVM's runtime reports no end for it.  No barrier and no other
 * worksharing construct can be inside a single: when one starts, a single
 * still open on top has ended. */
static inline void sm_end_open_single(sm_ompt_thread_t *th, sm_location_t *loc, uint64_t t)
{
    if (th->depth && th->depth <= SM_MAX_SCOPES) {
        sm_ompt_scope_t *top = &th->scope[th->depth - 1];
        if (top->kind == SM_SCOPE_WORK && top->site->kind == SM_SITE_SINGLE)
            sm_scope_pop(th, loc, top, t);
    }
}

static void sm_cb_work(ompt_work_t type, ompt_scope_endpoint_t endpoint, ompt_data_t *parallel,
                       ompt_data_t *task, uint64_t count, const void *codeptr)
{
    (void)parallel;
    (void)task;
    (void)count;
    sm_site_kind_t kind = sm_work_kind(type);
    if (!kind)
        return;
    sm_ompt_thread_t *th = sm_ompt_thread();
    sm_location_t *loc = sm_location_current();
    if (endpoint == ompt_scope_begin) {
        uint64_t t = sm_clock_now();
        sm_end_open_single(th, loc, t);
        sm_scope_push(th, loc, SM_SCOPE_WORK, sm_site(kind, codeptr, sm_scope_parent(th)), 0, t);
    } else /* the end may carry another code pointer: leave what the begin entered */
        sm_scope_end(th, loc, SM_SCOPE_WORK, 0, false, sm_clock_now());
}

static sm_site_kind_t sm_sync_kind(ompt_sync_region_t kind)
{
    switch ((int)kind) {
    case ompt_sync_region_barrier_explicit:
    case 1: /* ompt_sync_region_barrier (deprecated) */
        return SM_SITE_BARRIER;
    case 2: /* ompt_sync_region_barrier_implicit (deprecated; LLVM 14 reports it) */
    case ompt_sync_region_barrier_implicit_workshare:
    case ompt_sync_region_barrier_implicit_parallel:
        return SM_SITE_BARRIER_IMPLICIT;
    case ompt_sync_region_barrier_implementation: return SM_SITE_BARRIER_RUNTIME;
    case ompt_sync_region_barrier_teams: return SM_SITE_BARRIER_TEAMS;
    case ompt_sync_region_taskwait: return SM_SITE_TASKWAIT;
    case ompt_sync_region_taskgroup: return SM_SITE_TASKGROUP;
    case ompt_sync_region_reduction: return SM_SITE_REDUCTION;
    default: return SM_SITE_BARRIER;
    }
}

static void sm_cb_sync_region(ompt_sync_region_t type, ompt_scope_endpoint_t endpoint,
                              ompt_data_t *parallel, ompt_data_t *task, const void *codeptr)
{
    (void)parallel;
    (void)task;
    sm_site_kind_t kind = sm_sync_kind(type);
    sm_ompt_thread_t *th = sm_ompt_thread();
    sm_location_t *loc = sm_location_current();
    if (endpoint == ompt_scope_begin) {
        const sm_ompt_site_t *site = NULL;
        if (kind == SM_SITE_BARRIER_IMPLICIT && !codeptr) {
            /* A worker's closing barrier has no code pointer: its region's. */
            sm_ompt_scope_t *implicit = sm_scope_find(th, SM_SCOPE_IMPLICIT, 0, false);
            if (implicit && implicit->site->barrier)
                site = implicit->site->barrier;
        }
        if (!site)
            site = sm_site(kind, codeptr, sm_scope_parent(th));
        uint64_t t = sm_clock_now();
        if (kind == SM_SITE_BARRIER || kind == SM_SITE_BARRIER_IMPLICIT ||
            kind == SM_SITE_BARRIER_RUNTIME)
            sm_end_open_single(th, loc, t);
        sm_scope_push(th, loc, SM_SCOPE_SYNC, site, 0, t);
    } else {
        uint64_t t;
        if (kind == SM_SITE_BARRIER_IMPLICIT)
            t = sm_ompt_end_time(th, loc, sm_scope_find(th, SM_SCOPE_IMPLICIT, 0, false));
        else
            t = sm_clock_now();
        sm_scope_end(th, loc, SM_SCOPE_SYNC, 0, false, t);
    }
}

static void sm_cb_masked(ompt_scope_endpoint_t endpoint, ompt_data_t *parallel, ompt_data_t *task,
                         const void *codeptr)
{
    (void)parallel;
    (void)task;
    sm_ompt_thread_t *th = sm_ompt_thread();
    sm_location_t *loc = sm_location_current();
    if (endpoint == ompt_scope_begin)
        sm_scope_push(th, loc, SM_SCOPE_MASKED,
                      sm_site(SM_SITE_MASKED, codeptr, sm_scope_parent(th)), 0, sm_clock_now());
    else
        sm_scope_end(th, loc, SM_SCOPE_MASKED, 0, false, sm_clock_now());
}

static void sm_cb_task_create(ompt_data_t *encountering_task, const ompt_frame_t *frame,
                              ompt_data_t *new_task, int flags, int has_dependences,
                              const void *codeptr)
{
    (void)encountering_task;
    (void)frame;
    (void)has_dependences;
    if (!(flags & (ompt_task_explicit | ompt_task_target)))
        return;
    sm_ompt_thread_t *th = sm_ompt_thread();
    const sm_ompt_site_t *site =
        sm_site((flags & ompt_task_target) ? SM_SITE_TARGET_TASK : SM_SITE_TASK, codeptr,
                sm_scope_parent(th));
    uint64_t id = sm_task_id_next(th);
    new_task->value = sm_explicit_value(id, site);
    sm_location_t *loc = sm_location_current();
    if (sm_measuring(loc))
        sm_event_record(loc, SM_REC_OMP_TASK_CREATE, 0, 0, sm_clock_now(), &id, 1);
}

/* A task is a region on the thread that runs it, from each start or resume
 * to its completion; a task that another one interrupts (at a task
 * scheduling point) stays open below it, as the call path says. */
static void sm_cb_task_schedule(ompt_data_t *prior, ompt_task_status_t status, ompt_data_t *next)
{
    if (!sm_is_explicit(prior) && !sm_is_explicit(next))
        return;
    sm_ompt_thread_t *th = sm_ompt_thread();
    sm_location_t *loc = sm_location_current();
    uint64_t t = sm_clock_now();
    bool measuring = sm_measuring(loc);
    /* OmpTaskComplete after the task's leave, OmpTaskSwitch (also on a
     * resume) before its enter. */
    if (sm_is_explicit(prior) &&
        (status == ompt_task_complete || status == ompt_task_cancel || status == ompt_task_detach)) {
        sm_scope_end(th, loc, SM_SCOPE_TASK, (uint64_t)(uintptr_t)prior, true, t);
        uint64_t id = sm_explicit_id(prior);
        if (measuring)
            sm_event_record(loc, SM_REC_OMP_TASK_COMPLETE, 0, 0, t, &id, 1);
    }
    if (sm_is_explicit(next)) {
        uint64_t id = sm_explicit_id(next);
        if (measuring)
            sm_event_record(loc, SM_REC_OMP_TASK_SWITCH, 0, 0, t, &id, 1);
        if (!sm_scope_find(th, SM_SCOPE_TASK, (uint64_t)(uintptr_t)next, true))
            sm_scope_push(th, loc, SM_SCOPE_TASK, sm_explicit_site(next),
                          (uint64_t)(uintptr_t)next, t);
    }
}

static sm_site_kind_t sm_wait_kind(ompt_mutex_t kind)
{
    switch (kind) {
    case ompt_mutex_lock: return SM_SITE_WAIT_LOCK;
    case ompt_mutex_nest_lock: return SM_SITE_WAIT_NEST_LOCK;
    case ompt_mutex_critical: return SM_SITE_WAIT_CRITICAL;
    case ompt_mutex_atomic: return SM_SITE_WAIT_ATOMIC;
    case ompt_mutex_ordered: return SM_SITE_WAIT_ORDERED;
    default: return 0; /* test_lock, test_nest_lock: they do not wait */
    }
}

/* The structured ones (critical, atomic, ordered) are also regions while
 * held; locks are not, since a program may release them in any order. */
static sm_site_kind_t sm_held_kind(ompt_mutex_t kind)
{
    switch (kind) {
    case ompt_mutex_critical: return SM_SITE_CRITICAL;
    case ompt_mutex_atomic: return SM_SITE_ATOMIC;
    case ompt_mutex_ordered: return SM_SITE_ORDERED;
    default: return 0;
    }
}

static void sm_cb_mutex_acquire(ompt_mutex_t kind, unsigned int hint, unsigned int impl,
                                ompt_wait_id_t wait_id, const void *codeptr)
{
    (void)hint;
    (void)impl;
    sm_site_kind_t wait = sm_wait_kind(kind);
    if (!wait)
        return;
    sm_ompt_thread_t *th = sm_ompt_thread();
    sm_scope_push(th, sm_location_current(), SM_SCOPE_WAIT,
                  sm_site(wait, codeptr, sm_scope_parent(th)), wait_id, sm_clock_now());
}

static void sm_cb_mutex_acquired(ompt_mutex_t kind, ompt_wait_id_t wait_id, const void *codeptr)
{
    sm_ompt_thread_t *th = sm_ompt_thread();
    sm_location_t *loc = sm_location_current();
    uint64_t t = sm_clock_now();
    if (!sm_wait_kind(kind)) { /* a test_lock that got it: no wait, no region */
        if (kind == ompt_mutex_test_lock || kind == ompt_mutex_test_nest_lock)
            sm_lock_acquired(th, loc, wait_id, t);
        return;
    }
    sm_scope_end(th, loc, SM_SCOPE_WAIT, wait_id, true, t);
    sm_lock_acquired(th, loc, wait_id, t);
    sm_site_kind_t held = sm_held_kind(kind);
    if (held)
        sm_scope_push(th, loc, SM_SCOPE_HELD, sm_site(held, codeptr, sm_scope_parent(th)),
                      wait_id, t);
}

static void sm_cb_mutex_released(ompt_mutex_t kind, ompt_wait_id_t wait_id, const void *codeptr)
{
    (void)codeptr; /* LLVM gives none on some threads */
    sm_ompt_thread_t *th = sm_ompt_thread();
    sm_location_t *loc = sm_location_current();
    uint64_t t = sm_clock_now();
    sm_ompt_held_t *h = sm_lock_held(th, wait_id);
    if (h)
        t = sm_lock_release_time(th, loc, h, t);
    if (sm_held_kind(kind))
        sm_scope_end(th, loc, SM_SCOPE_HELD, wait_id, true, t);
    sm_lock_released(th, loc, h, t);
}

/* A nest lock the thread owns already: acquire, then this, no acquired. */
static void sm_cb_nest_lock(ompt_scope_endpoint_t endpoint, ompt_wait_id_t wait_id,
                            const void *codeptr)
{
    (void)codeptr;
    if (endpoint != ompt_scope_begin)
        return;
    sm_ompt_thread_t *th = sm_ompt_thread();
    sm_scope_end(th, sm_location_current(), SM_SCOPE_WAIT, wait_id, true, sm_clock_now());
}

/* ---------------------------------------------------------------- tool */

bool sm_ompt_in_use(void)
{
    return __atomic_load_n(&sm_ompt_initialized, __ATOMIC_ACQUIRE) != 0;
}

static int sm_ompt_initialize(ompt_function_lookup_t lookup, int initial_device,
                              ompt_data_t *tool_data)
{
    (void)initial_device;
    (void)tool_data;
    ompt_set_callback_t set = (ompt_set_callback_t)lookup("ompt_set_callback");
    if (!set || !sm_runtime_active)
        return 0;
    sm_attr_requested = sm_attribute_define("omp requested threads", SM_ATTR_INT64);
    sm_attr_team = sm_attribute_define("omp team size", SM_ATTR_INT64);
    static const struct {
        ompt_callbacks_t event;
        ompt_callback_t fn;
        const char *name;
    } callbacks[] = {
#define SM_CB(event, fn) {ompt_callback_##event, (ompt_callback_t)fn, #event}
        SM_CB(thread_begin, sm_cb_thread_begin),
        SM_CB(parallel_begin, sm_cb_parallel_begin),
        SM_CB(parallel_end, sm_cb_parallel_end),
        SM_CB(implicit_task, sm_cb_implicit_task),
        SM_CB(work, sm_cb_work),
        SM_CB(sync_region, sm_cb_sync_region),
        SM_CB(masked, sm_cb_masked),
        SM_CB(task_create, sm_cb_task_create),
        SM_CB(task_schedule, sm_cb_task_schedule),
        SM_CB(mutex_acquire, sm_cb_mutex_acquire),
        SM_CB(mutex_acquired, sm_cb_mutex_acquired),
        SM_CB(mutex_released, sm_cb_mutex_released),
        SM_CB(nest_lock, sm_cb_nest_lock),
#undef SM_CB
    };
    char missing[256] = "";
    for (size_t i = 0; i < sizeof callbacks / sizeof callbacks[0]; i++) {
        ompt_set_result_t rc = set(callbacks[i].event, callbacks[i].fn);
        if (rc == ompt_set_error || rc == ompt_set_never) {
            size_t n = strlen(missing);
            snprintf(missing + n, sizeof missing - n, "%s%s", n ? ", " : "", callbacks[i].name);
        }
    }
    if (missing[0])
        sm_info(1, "OpenMP: the runtime does not report %s", missing);
    __atomic_store_n(&sm_ompt_initialized, 1, __ATOMIC_RELEASE);
    return 1; /* keep the tool */
}

static void sm_ompt_finalize(ompt_data_t *tool_data)
{
    (void)tool_data;
}

ompt_start_tool_result_t *ompt_start_tool(unsigned int omp_version, const char *runtime_version)
{
    (void)omp_version;
    int saved_errno = errno;
    /* The OpenMP runtime may start before our constructor ran. */
    if (!sm_runtime_active) {
        const char *enable = getenv(SM_ENV_PREFIX "ENABLE");
        bool on = false;
        if (enable && sm_config_parse_bool(enable, &on) == 0 && on)
            sm_runtime_init();
    }
    if (!sm_runtime_active) {
        errno = saved_errno;
        return NULL; /* not measured: no tool, the runtime looks further */
    }
    sm_info(1, "OpenMP: measuring through OMPT (%s)", runtime_version ? runtime_version : "?");
    errno = saved_errno;
    static ompt_start_tool_result_t result = {sm_ompt_initialize, sm_ompt_finalize, {0}};
    return &result;
}

/* ---------------------------------------------------------------- end of the run */

static int sm_ompt_find_runtimes(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    int *found = arg;
    const char *name = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
    name = name ? name + 1 : info->dlpi_name;
    if (!name)
        return 0;
    if (!strncmp(name, "libgomp.so", 10))
        found[0] = 1;
    else if (!strncmp(name, "libomp.so", 9) || !strncmp(name, "libiomp5.so", 11))
        found[1] = 1;
    return 0;
}

/* Workers idle since their last parallel region have not been told that it
 * ended (see sm_ompt_end_time): close it at its end, not at the process's.
 * Those threads are parked in the runtime, not recording. */
static void sm_ompt_close_idle_workers(void)
{
    pthread_mutex_lock(&sm_ompt_threads_lock);
    for (sm_ompt_thread_t *th = sm_ompt_threads; th; th = th->next) {
        sm_location_t *loc = th->loc;
        if (!loc || loc->closed || th->depth > SM_MAX_SCOPES)
            continue;
        sm_ompt_scope_t *implicit = sm_scope_find(th, SM_SCOPE_IMPLICIT, 0, false);
        const sm_ompt_instance_t *in = implicit ? sm_instance(implicit->aux) : NULL;
        uint64_t end = in ? __atomic_load_n(&in->end, __ATOMIC_ACQUIRE) : 0;
        if (end)
            sm_scope_pop(th, loc, implicit, sm_ompt_end_time(th, loc, implicit));
    }
    pthread_mutex_unlock(&sm_ompt_threads_lock);
}

static void sm_ompt_at_finalize(const sm_run_info_t *run)
{
    if (sm_ompt_in_use()) {
        sm_ompt_close_idle_workers();
        uint64_t unrecorded = __atomic_load_n(&sm_locks_unrecorded, __ATOMIC_RELAXED);
        if (unrecorded)
            sm_info(1, "OpenMP: %llu lock acquisitions not traced (too many locks)",
                    (unsigned long long)unrecorded);
        return;
    }
    int found[2] = {0, 0}; /* libgomp, libomp */
    dl_iterate_phdr(sm_ompt_find_runtimes, found);
    if (!found[0] || found[1])
        return;
    static const char note[] =
        "OpenMP: this program runs on GCC's libgomp, which has no OMPT interface, so its "
        "OpenMP constructs are not measured (everything else is); to measure them, run it on "
        "LLVM's libomp: sysmeasure --openmp-runtime=llvm";
    sm_runtime_add_note(note);
    if (run->rank == 0)
        sm_warning("%s", note);
}

__attribute__((constructor)) static void sm_ompt_register(void)
{
    sm_runtime_on_finalize(sm_ompt_at_finalize);
}

#else /* no omp-tools.h at build time: no tool */

bool sm_ompt_in_use(void)
{
    return false;
}

#endif
