/* The OMPT tool, in parts (ompt/): the OpenMP runtime's callbacks become regions on the
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
 * instance lives in a fixed ring.
 *
 *   ompt_tool.c      ompt_start_tool, initialize (the callbacks
 *                    registered), finalize, the end of the run
 *   ompt_state.c     the constructs' names and table, the teams, the
 *                    threads' state, the slow paths of the scopes
 *   ompt_parallel.c  thread begin, parallel regions, implicit tasks,
 *                    worksharing, sync regions, masked
 *   ompt_tasks.c     explicit tasks: created, scheduled
 *   ompt_mutex.c     lock ids, mutex wait/acquired/released, nest locks
 *
 * This header is what they share; the rest of the tree uses ompt_tool.h.
 * What the hot callbacks need of another part is static inline here. */
#ifndef SM_OMPT_PRIVATE_H
#define SM_OMPT_PRIVATE_H

#include "sm_build.h"
#include "ompt_tool.h"

#include SM_OMP_TOOLS_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/clock.h"
#include "core/definitions.h"
#include "core/events.h"
#include "core/location.h"

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
extern sm_ompt_site_t sm_sites[SM_SITE_SLOTS] SM_HIDDEN;
extern sm_ompt_site_t sm_sites_generic[SM_SITE_COUNT] SM_HIDDEN;
extern pthread_mutex_t sm_sites_lock SM_HIDDEN;

static inline uint64_t sm_site_key(sm_site_kind_t kind, const void *codeptr)
{
    return (uint64_t)(uintptr_t)codeptr | (uint64_t)kind << 56;
}

static inline uint32_t sm_site_hash(uint64_t key)
{
    return (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> (64 - SM_SITE_BITS));
}

struct sm_ompt_thread;
sm_ompt_site_t *sm_site_slow(sm_site_kind_t kind, const void *codeptr,
                             struct sm_ompt_thread *th) SM_HIDDEN;

/* The construct at codeptr; lock-free once it has been seen. */
static inline sm_ompt_site_t *sm_site(sm_site_kind_t kind, const void *codeptr,
                                      struct sm_ompt_thread *th)
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
    return sm_site_slow(kind, codeptr, th);
}

/* ---------------------------------------------------------------- parallel instances */

/* A running parallel region: the team size asked for, who forked it (the
 * team's key, with the size), and the time it ended, which its worker
 * threads learn only later (see sm_ompt_end_time).  Slots are reused after
 * SM_RING regions; a reader checks seq before and after. */
typedef struct sm_ompt_instance {
    uint64_t seq;
    uint64_t end; /* ticks; 0 while it runs */
    uint32_t requested;
    uint32_t forker;      /* location id of the encountering thread */
    sm_comm_id_t parent;  /* its team then, or SM_COMM_NONE */
} __attribute__((aligned(64))) sm_ompt_instance_t;

#define SM_RING 4096
extern sm_ompt_instance_t sm_ring[SM_RING] SM_HIDDEN;

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

/* ... and the team it will likely have (see sm_ompt_team_t): its slot + 1
 * (13 bits), 0 when not known yet.  The instance's seq takes the rest. */
#define SM_PARALLEL_SEQ_SHIFT 29

static inline uint64_t sm_parallel_value(uint64_t seq, uint32_t team_slot,
                                         const sm_ompt_site_t *site)
{
    return seq << SM_PARALLEL_SEQ_SHIFT | (uint64_t)team_slot << 16 | sm_site_index(site);
}

static inline uint64_t sm_parallel_seq(uint64_t value)
{
    return value >> SM_PARALLEL_SEQ_SHIFT;
}

static inline const sm_ompt_site_t *sm_parallel_site(uint64_t value)
{
    uint64_t index = value & 0xffff;
    if (!sm_parallel_seq(value) || index >= SM_SITE_SLOTS + SM_SITE_COUNT)
        return sm_site(SM_SITE_PARALLEL, NULL, NULL); /* not a region we saw begin */
    return sm_site_at(index);
}

/* An implicit task's task data: its instance (even); an explicit task's:
 * 1 (odd), its construct's index (13 bits), then what names it in the
 * trace with its team: its creating thread's number in the team (18 bits)
 * and that thread's count of tasks created (32 bits). */
_Static_assert(SM_SITE_SLOTS + SM_SITE_COUNT <= 1u << 13, "a task's construct takes 13 bits");
#define SM_TASK_MAX_THREAD ((1u << 18) - 1)

static inline uint64_t sm_implicit_value(uint64_t seq)
{
    return seq << 1;
}

static inline bool sm_is_explicit(const ompt_data_t *task)
{
    return task && (task->value & 1);
}

static inline uint64_t sm_explicit_value(uint32_t thread, uint32_t generation,
                                         const sm_ompt_site_t *site)
{
    return (uint64_t)generation << 32 | (uint64_t)thread << 14 | sm_site_index(site) << 1 | 1;
}

static inline const sm_ompt_site_t *sm_explicit_site(const ompt_data_t *task)
{
    uint64_t index = task->value >> 1 & 0x1fff;
    return sm_site_at(index < SM_SITE_SLOTS + SM_SITE_COUNT ? index : SM_SITE_SLOTS + SM_SITE_TASK);
}

/* The trace's name of a task within its team: thread << 32 | generation. */
static inline uint64_t sm_explicit_name(const ompt_data_t *task)
{
    return (task->value >> 14 & SM_TASK_MAX_THREAD) << 32 | task->value >> 32;
}

/* ---------------------------------------------------------------- thread teams */

/* A thread team in the trace is a communicator.  One per distinct team, not
 * per parallel region run, so that the definitions stay bounded: a team is
 * keyed by its parent team, the thread that forks it and its size, which
 * every thread of it knows when it joins (from the instance).  Its members
 * are the threads that played each thread number first; each thread checks
 * its number on joining (a read of a line that no one writes once the team
 * is known).  The runtime may give a later run of a nested team other
 * threads (libomp takes them from its pool): those are counted, and their
 * ThreadTeamBegin names a team they are not members of. */
typedef struct sm_ompt_team {
    uint32_t state;        /* 0 free, 1 ready (published with release) */
    uint32_t forker;       /* location id */
    sm_comm_id_t parent;   /* or SM_COMM_NONE */
    uint32_t size;
    sm_comm_id_t comm;
    uint32_t seq;          /* the key's number (SM_COMM_SEQ_TEAM | seq) */
    uint32_t defined;      /* members handed to the definition */
    uint32_t *members;     /* location id + 1 by thread number; 0: not seen yet */
} sm_ompt_team_t;

#ifndef SM_TEAM_BITS
#define SM_TEAM_BITS 12
#endif
#define SM_TEAM_SLOTS (1u << SM_TEAM_BITS)
_Static_assert(SM_TEAM_SLOTS < 1u << 13, "a team's slot takes 13 bits of a parallel's value");
extern sm_ompt_team_t sm_teams[SM_TEAM_SLOTS] SM_HIDDEN;
extern uint32_t sm_team_count SM_HIDDEN;
extern uint64_t sm_team_strangers SM_HIDDEN;
extern uint64_t sm_team_unrecorded SM_HIDDEN;
extern pthread_mutex_t sm_teams_lock SM_HIDDEN;

static inline uint32_t sm_team_hash(sm_comm_id_t parent, uint32_t forker, uint32_t size)
{
    uint64_t k = ((uint64_t)parent << 32 | forker) * 0x9E3779B97F4A7C15ull ^ size;
    return (uint32_t)((k * 0x9E3779B97F4A7C15ull) >> (64 - SM_TEAM_BITS));
}

static inline bool sm_team_is(const sm_ompt_team_t *t, sm_comm_id_t parent, uint32_t forker,
                              uint32_t size)
{
    return t->forker == forker && t->parent == parent && t->size == size;
}

sm_ompt_team_t *sm_team_slow(sm_comm_id_t parent, uint32_t forker,
                             uint32_t size) SM_HIDDEN;

/* The team of this key if it is known already; lock-free. */
static inline sm_ompt_team_t *sm_team_known(sm_comm_id_t parent, uint32_t forker, uint32_t size)
{
    uint32_t h = sm_team_hash(parent, forker, size);
    for (uint32_t i = 0; i < 8; i++) {
        sm_ompt_team_t *t = &sm_teams[(h + i) & (SM_TEAM_SLOTS - 1)];
        if (!__atomic_load_n(&t->state, __ATOMIC_ACQUIRE))
            break;
        if (sm_team_is(t, parent, forker, size))
            return t;
    }
    return NULL;
}

/* The team of this key, made if new; lock-free once known. */
static inline sm_ompt_team_t *sm_team(sm_comm_id_t parent, uint32_t forker, uint32_t size)
{
    sm_ompt_team_t *t = sm_team_known(parent, forker, size);
    return SM_LIKELY(t != NULL) ? t : sm_team_slow(parent, forker, size);
}

/* A parallel region's likely team, as its encountering thread guessed it
 * (the size it asked for): the team's threads take it from the region's
 * data, without reading the instance, when the size is right. */
static inline uint32_t sm_team_slot(const sm_ompt_team_t *t)
{
    return t ? (uint32_t)(t - sm_teams) + 1 : 0;
}

static inline sm_ompt_team_t *sm_parallel_team(uint64_t value)
{
    uint32_t slot = (uint32_t)(value >> 16) & ((1u << 13) - 1);
    return slot && slot <= SM_TEAM_SLOTS ? &sm_teams[slot - 1] : NULL;
}

/* The calling thread (location id) joins t as thread number index. */
static inline void sm_team_join(sm_ompt_team_t *t, uint32_t index, uint32_t loc_id)
{
    if (SM_UNLIKELY(index >= t->size))
        return;
    uint32_t m = __atomic_load_n(&t->members[index], __ATOMIC_RELAXED);
    if (SM_LIKELY(m == loc_id + 1))
        return;
    if (m || !__atomic_compare_exchange_n(&t->members[index], &m, loc_id + 1, false,
                                          __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        if (m != loc_id + 1)
            __atomic_add_fetch(&sm_team_strangers, 1, __ATOMIC_RELAXED);
}

void sm_team_define_members(sm_ompt_team_t *t, bool force) SM_HIDDEN;

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

/* An implicit task's flags: what its end must record. */
enum {
    SM_IMPLICIT_FORKED = 1, /* ThreadFork recorded: ThreadJoin at the end */
    SM_IMPLICIT_TEAMED = 2, /* ThreadTeamBegin recorded: ThreadTeamEnd */
    SM_IMPLICIT_PRIMARY = 4 /* thread 0 of its team (the encountering thread) */
};

typedef struct sm_ompt_scope {
    const sm_ompt_site_t *site;
    uint64_t aux;
    sm_region_id_t region; /* as entered; SM_INVALID_ID when not recorded */
    uint16_t kind;
    uint16_t flags;        /* an implicit task's SM_IMPLICIT_* */
    sm_ompt_team_t *team;  /* an implicit task's team, NULL when unknown */
    uint32_t thread;       /* and the thread's number in it */
    uint32_t frame;        /* a recorded task's frame on the location (index) */
} sm_ompt_scope_t;

/* A lock the thread holds: its release carries the acquisition's order
 * (read after the runtime unlocked it, the lock's counter may have moved). */
typedef struct sm_ompt_held {
    ompt_wait_id_t wait_id;
    uint64_t time;  /* the acquisition as recorded */
    uint32_t lock;
    uint32_t order;
} sm_ompt_held_t;

#define SM_MAX_SCOPES 128
#define SM_MAX_HELD 32
typedef struct sm_ompt_thread {
    sm_location_t *loc;
    uint64_t last;  /* ticks of this adapter's last event on the thread */
    uint32_t depth; /* scopes open; those beyond SM_MAX_SCOPES are only counted */
    uint32_t held;  /* locks held; those beyond SM_MAX_HELD are only counted */
    uint32_t generation; /* explicit tasks created so far (names them) */
    /* The closing barrier of the thread's parallel region, reported ended
     * but left open: it ends with the implicit task (see
     * sm_cb_sync_region).  NULL when none. */
    struct sm_ompt_scope *closing;
    /* The construct and team of the last parallel region this thread
     * forked: a loop of parallel regions finds them without hashing. */
    const sm_ompt_site_t *last_parallel;
    sm_ompt_team_t *last_team;
    struct sm_ompt_thread *next;
    sm_ompt_scope_t scope[SM_MAX_SCOPES];
    sm_ompt_held_t locks[SM_MAX_HELD];
} sm_ompt_thread_t;

extern SM_TLS sm_ompt_thread_t *sm_ompt_me SM_HIDDEN;
extern sm_ompt_thread_t *sm_ompt_threads SM_HIDDEN;
extern pthread_mutex_t sm_ompt_threads_lock SM_HIDDEN;
/* Threads whose state could not be allocated share one that keeps nothing. */
extern sm_ompt_thread_t sm_ompt_nomem SM_HIDDEN;
extern uint32_t sm_ompt_workers SM_HIDDEN;
extern int sm_ompt_initialized SM_HIDDEN;
extern sm_attribute_id_t sm_attr_requested SM_HIDDEN;
extern sm_attribute_id_t sm_attr_team SM_HIDDEN;

sm_ompt_thread_t *sm_ompt_thread_new(void) SM_HIDDEN;

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

const sm_ompt_site_t *sm_scope_parent(sm_ompt_thread_t *th) SM_HIDDEN;
void sm_scope_settle(sm_ompt_thread_t *th, sm_location_t *loc, uint64_t t) SM_HIDDEN;

static inline void sm_scope_push(sm_ompt_thread_t *th, sm_location_t *loc, uint32_t kind,
                                 const sm_ompt_site_t *site, uint64_t aux, uint64_t t)
{
    if (SM_UNLIKELY(th->closing != NULL))
        sm_scope_settle(th, loc, t);
    if (SM_UNLIKELY(th->depth >= SM_MAX_SCOPES)) {
        th->depth++;
        return;
    }
    sm_ompt_scope_t *s = &th->scope[th->depth++];
    s->site = site;
    s->aux = aux;
    s->kind = (uint16_t)kind;
    s->flags = 0;
    s->team = NULL;
    s->thread = 0;
    s->region = SM_INVALID_ID;
    if (SM_LIKELY(sm_measuring(loc)) && !loc->closed && site->region != SM_INVALID_ID) {
        s->region = site->region;
        sm_event_enter(loc, site->region, t);
        th->last = t;
    }
}

/* A task starts (or resumes) on the thread.  Recursion folds: when a task of
 * the same construct is open below it (a task that waits for the tasks it
 * created runs them inside its taskwait), this one takes that task's profile
 * node, and what it creates and waits for lands on the nodes that task made.
 * The call tree then has a path per chain of distinct constructs, not one
 * per recursion level.  The trace keeps every task's enter and leave. */
static inline void sm_scope_push_task(sm_ompt_thread_t *th, sm_location_t *loc,
                                      const sm_ompt_site_t *site, uint64_t aux, uint64_t t)
{
    if (SM_UNLIKELY(th->closing != NULL))
        sm_scope_settle(th, loc, t);
    const sm_ompt_scope_t *outer = NULL;
    uint32_t d = th->depth < SM_MAX_SCOPES ? th->depth : SM_MAX_SCOPES;
    while (d--)
        if (th->scope[d].kind == SM_SCOPE_TASK && th->scope[d].site == site &&
            th->scope[d].region != SM_INVALID_ID) {
            outer = &th->scope[d];
            break;
        }
    if (!outer || !loc->profiling || outer->frame > (uint32_t)(loc->sp - loc->stack) ||
        loc->stack[outer->frame].region != site->region) {
        sm_scope_push(th, loc, SM_SCOPE_TASK, site, aux, t);
        if (th->depth <= SM_MAX_SCOPES)
            th->scope[th->depth - 1].frame = (uint32_t)(loc->sp - loc->stack);
        return;
    }
    if (SM_UNLIKELY(th->depth >= SM_MAX_SCOPES)) {
        th->depth++;
        return;
    }
    sm_profile_node_t *node = loc->stack[outer->frame].node;
    sm_ompt_scope_t *s = &th->scope[th->depth++];
    s->site = site;
    s->aux = aux;
    s->kind = SM_SCOPE_TASK;
    s->flags = 0;
    s->team = NULL;
    s->thread = 0;
    s->region = SM_INVALID_ID;
    if (SM_LIKELY(sm_measuring(loc)) && !loc->closed) {
        s->region = site->region;
        sm_event_enter_at(loc, site->region, t, node);
        s->frame = (uint32_t)(loc->sp - loc->stack);
        th->last = t;
    }
}

void sm_ompt_leave_below(sm_location_t *loc, sm_region_id_t region, uint64_t t) SM_HIDDEN;

/* Leave region where it is open on loc (closing what is above it); inline
 * where it is on top: the fork/join path pops two regions on each thread. */
static SM_ALWAYS_INLINE void sm_ompt_leave(sm_location_t *loc, sm_region_id_t region, uint64_t t)
{
    if (SM_LIKELY(!loc->closed && loc->sp != loc->stack && loc->sp->region == region))
        sm_event_leave_top(loc, t);
    else
        sm_ompt_leave_below(loc, region, t);
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
    if (SM_UNLIKELY(th->closing != NULL) && th->closing >= s)
        th->closing = NULL;
}

/* Ends the innermost scope of a kind; returns false when none is open. */
static inline bool sm_scope_end(sm_ompt_thread_t *th, sm_location_t *loc, uint32_t kind,
                                uint64_t aux, bool match_aux, uint64_t t)
{
    if (SM_UNLIKELY(th->depth > SM_MAX_SCOPES)) {
        th->depth--;
        return true;
    }
    if (SM_UNLIKELY(th->closing != NULL))
        sm_scope_settle(th, loc, t);
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

/* ompt_parallel.c */
void sm_cb_thread_begin(ompt_thread_t type, ompt_data_t *thread_data) SM_HIDDEN;
void sm_cb_parallel_begin(ompt_data_t *encountering_task, const ompt_frame_t *frame,
                          ompt_data_t *parallel, unsigned int requested, int flags,
                          const void *codeptr) SM_HIDDEN;
void sm_cb_parallel_end(ompt_data_t *parallel, ompt_data_t *encountering_task, int flags,
                        const void *codeptr) SM_HIDDEN;
void sm_implicit_close(sm_ompt_thread_t *th, sm_location_t *loc, sm_ompt_scope_t *s,
                       uint64_t t) SM_HIDDEN;
void sm_cb_implicit_task(ompt_scope_endpoint_t endpoint, ompt_data_t *parallel,
                         ompt_data_t *task, unsigned int actual, unsigned int index,
                         int flags) SM_HIDDEN;
void sm_cb_work(ompt_work_t type, ompt_scope_endpoint_t endpoint, ompt_data_t *parallel,
                ompt_data_t *task, uint64_t count, const void *codeptr) SM_HIDDEN;
void sm_cb_sync_region(ompt_sync_region_t type, ompt_scope_endpoint_t endpoint,
                       ompt_data_t *parallel, ompt_data_t *task, const void *codeptr) SM_HIDDEN;
void sm_cb_masked(ompt_scope_endpoint_t endpoint, ompt_data_t *parallel, ompt_data_t *task,
                  const void *codeptr) SM_HIDDEN;

/* ompt_tasks.c */
void sm_cb_task_create(ompt_data_t *encountering_task, const ompt_frame_t *frame,
                       ompt_data_t *new_task, int flags, int has_dependences,
                       const void *codeptr) SM_HIDDEN;
void sm_cb_task_schedule(ompt_data_t *prior, ompt_task_status_t status, ompt_data_t *next) SM_HIDDEN;

/* ompt_mutex.c */
void sm_cb_mutex_acquire(ompt_mutex_t kind, unsigned int hint, unsigned int impl,
                         ompt_wait_id_t wait_id, const void *codeptr) SM_HIDDEN;
void sm_cb_mutex_acquired(ompt_mutex_t kind, ompt_wait_id_t wait_id, const void *codeptr) SM_HIDDEN;
void sm_cb_mutex_released(ompt_mutex_t kind, ompt_wait_id_t wait_id, const void *codeptr) SM_HIDDEN;
void sm_cb_nest_lock(ompt_scope_endpoint_t endpoint, ompt_wait_id_t wait_id,
                     const void *codeptr) SM_HIDDEN;
extern uint64_t sm_locks_unrecorded SM_HIDDEN;

#endif
