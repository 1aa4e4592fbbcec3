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

struct sm_ompt_thread;
static const sm_ompt_site_t *sm_scope_parent(struct sm_ompt_thread *th);

/* A construct not seen yet: named after the construct whose body the
 * thread runs (found only here, not on every lookup). */
static SM_NOINLINE sm_ompt_site_t *sm_site_slow(sm_site_kind_t kind, const void *codeptr,
                                                struct sm_ompt_thread *th)
{
    int saved_errno = errno; /* naming reads files: the program's errno stays */
    const sm_ompt_site_t *parent = th ? sm_scope_parent(th) : NULL;
    pthread_mutex_lock(&sm_sites_lock);
    sm_ompt_site_t *s = sm_site_make_locked(kind, codeptr, parent);
    pthread_mutex_unlock(&sm_sites_lock);
    errno = saved_errno;
    return s;
}

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
static sm_ompt_team_t sm_teams[SM_TEAM_SLOTS];
static uint32_t sm_team_count;
static uint64_t sm_team_strangers; /* thread joined a team under another's number */
static uint64_t sm_team_unrecorded; /* team joins not traced: too many teams */
static pthread_mutex_t sm_teams_lock = PTHREAD_MUTEX_INITIALIZER;

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

static SM_NOINLINE sm_ompt_team_t *sm_team_slow(sm_comm_id_t parent, uint32_t forker,
                                                uint32_t size)
{
    int saved_errno = errno;
    sm_ompt_team_t *found = NULL;
    uint32_t h = sm_team_hash(parent, forker, size);
    pthread_mutex_lock(&sm_teams_lock);
    for (uint32_t i = 0; i < SM_TEAM_SLOTS; i++) {
        sm_ompt_team_t *t = &sm_teams[(h + i) & (SM_TEAM_SLOTS - 1)];
        if (t->state && sm_team_is(t, parent, forker, size)) {
            found = t;
            break;
        }
        if (t->state)
            continue;
        /* Kept at most 3/4 full, so that the lock-free probes find a team. */
        if (sm_team_count >= SM_TEAM_SLOTS / 4 * 3) {
            __atomic_add_fetch(&sm_team_unrecorded, 1, __ATOMIC_RELAXED);
            break;
        }
        /* New: its definition now, its members as threads join. */
        uint32_t *members = calloc(size, sizeof *members);
        if (!members)
            break;
        uint32_t seq = sm_team_count++;
        sm_comm_key_t key = {SM_COMM_LEADER_PROCESS, SM_COMM_SEQ_TEAM | seq};
        sm_comm_id_t comm = sm_comm_define(key, "OpenMP thread team", size, NULL, parent);
        if (comm == SM_INVALID_ID) {
            free(members);
            break;
        }
        t->forker = forker;
        t->parent = parent;
        t->size = size;
        t->comm = comm;
        t->seq = seq;
        t->members = members;
        __atomic_store_n(&t->state, 1, __ATOMIC_RELEASE);
        found = t;
        break;
    }
    pthread_mutex_unlock(&sm_teams_lock);
    errno = saved_errno;
    return found; /* NULL: table full or no memory; the team goes unrecorded */
}

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

/* Hands t's members to its definition, once every thread number was seen
 * (or, with force, at the end of the run: those not seen are left out). */
static SM_NOINLINE void sm_team_define_members(sm_ompt_team_t *t, bool force)
{
    int saved_errno = errno;
    pthread_mutex_lock(&sm_teams_lock);
    uint32_t *ids = t->defined ? NULL : malloc(sizeof *ids * t->size);
    bool all = ids != NULL;
    for (uint32_t i = 0; ids && i < t->size; i++) {
        uint32_t m = __atomic_load_n(&t->members[i], __ATOMIC_RELAXED);
        ids[i] = m ? m - 1 : SM_INVALID_ID;
        all &= m != 0;
    }
    if (ids && (all || force)) {
        sm_comm_key_t key = {SM_COMM_LEADER_PROCESS, SM_COMM_SEQ_TEAM | t->seq};
        sm_comm_define(key, NULL, t->size, ids, t->parent);
        __atomic_store_n(&t->defined, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&sm_teams_lock);
    free(ids);
    errno = saved_errno;
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
static const sm_ompt_site_t *sm_scope_parent(sm_ompt_thread_t *th)
{
    uint32_t d = th->depth < SM_MAX_SCOPES ? th->depth : SM_MAX_SCOPES;
    while (d--)
        if (th->scope[d].kind == SM_SCOPE_IMPLICIT || th->scope[d].kind == SM_SCOPE_TASK)
            return th->scope[d].site;
    return NULL;
}

static void sm_scope_settle(sm_ompt_thread_t *th, sm_location_t *loc, uint64_t t);

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

/* sm_ompt_leave when region is not on top (or the location is closed). */
static SM_NOINLINE void sm_ompt_leave_below(sm_location_t *loc, sm_region_id_t region, uint64_t t)
{
    if (loc->closed)
        return;
    for (sm_frame_t *f = loc->sp; f > loc->stack; f--)
        if (f->region == region) {
            while (loc->sp >= f)
                sm_event_leave_top(loc, t);
            return;
        }
}

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

/* Something else happens on the thread between its closing barrier's end
 * and its implicit task's (not seen with LLVM's runtime, which ends the
 * task next): the barrier ends now, before it. */
static SM_NOINLINE void sm_scope_settle(sm_ompt_thread_t *th, sm_location_t *loc, uint64_t t)
{
    sm_ompt_scope_t *s = th->closing;
    th->closing = NULL;
    if (s < &th->scope[th->depth] && s->kind == SM_SCOPE_SYNC) {
        if (t < th->last)
            t = th->last;
        sm_scope_pop(th, loc, s, t);
    }
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

/* ---------------------------------------------------------------- lock ids */

/* A lock (any mutex: lock, nest lock, critical, atomic, ordered), keyed by
 * its OMPT wait id, with the small id the trace gives it and the count of
 * its acquisitions.  Open addressing, claimed by CAS: no lock taken, and a
 * lock seen before costs one lookup. */
#define SM_LOCK_HISTORY 4 /* a power of two */
typedef struct sm_ompt_lock {
    uint64_t key;   /* wait id; 0: free */
    uint32_t id;    /* trace id + 1; 0 until the claiming thread set it */
    uint32_t order; /* acquisitions recorded so far */
    /* The times of the last SM_LOCK_HISTORY acquisitions (tag: order + 1;
     * 0 while being written).  The runtime reports a release after the
     * unlock, so the next holder may have its acquire stamped first: the
     * release is stamped no later than that.  More than two: a releasing
     * thread descheduled after its unlock (an oversubscribed machine) may
     * find other threads acquired the lock twice more meanwhile. */
    struct {
        uint64_t tag, time;
    } acquired[SM_LOCK_HISTORY];
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

/* The thread acquired a lock: ThreadAcquireLock, and remember it for the
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
    if (!sm_measuring(loc) || loc->closed)
        return;
    if (!loc->tracing) { /* only counted, the release with it (sysmeasure-score) */
        sm_event_count(loc, SM_REC_THREAD_ACQUIRE_LOCK, 1);
        sm_event_count(loc, SM_REC_THREAD_RELEASE_LOCK, 1);
        return;
    }
    sm_ompt_lock_t *l = sm_lock(wait_id);
    if (!l)
        return;
    sm_ompt_held_t *h = &th->locks[th->held++];
    h->wait_id = wait_id;
    h->lock = __atomic_load_n(&l->id, __ATOMIC_ACQUIRE) - 1;
    h->order = __atomic_fetch_add(&l->order, 1, __ATOMIC_RELAXED);
    /* Written under the lock: one writer at a time; readers check the tag
     * before and after (a seqlock). */
    __typeof__(l->acquired[0]) *at = &l->acquired[h->order & (SM_LOCK_HISTORY - 1)];
    __atomic_store_n(&at->tag, 0, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    __atomic_store_n(&at->time, t, __ATOMIC_RELAXED);
    __atomic_store_n(&at->tag, (uint64_t)h->order + 1, __ATOMIC_RELEASE);
    uint64_t order = h->order;
    sm_event_record(loc, SM_REC_THREAD_ACQUIRE_LOCK, h->lock, SM_PARADIGM_OPENMP, t, &order, 1);
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
    const __typeof__(l->acquired[0]) *at = &l->acquired[next & (SM_LOCK_HISTORY - 1)];
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
    sm_event_record(loc, SM_REC_THREAD_RELEASE_LOCK, h->lock, SM_PARADIGM_OPENMP, t, &order, 1);
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
    const sm_ompt_site_t *site = th->last_parallel;
    if (SM_UNLIKELY(!site || site->key != sm_site_key(kind, codeptr)))
        th->last_parallel = site = sm_site(kind, codeptr, th);
    const sm_ompt_scope_t *outer = sm_scope_find(th, SM_SCOPE_IMPLICIT, 0, false);
    uint64_t seq = __atomic_add_fetch(&sm_ring_last.seq, 1, __ATOMIC_RELAXED);
    sm_ompt_instance_t *in = &sm_ring[seq & (SM_RING - 1)];
    __atomic_store_n(&in->seq, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&in->end, 0, __ATOMIC_RELEASE);
    uint32_t forker = sm_location_current()->id;
    sm_comm_id_t parent = outer && outer->team ? outer->team->comm : SM_COMM_NONE;
    in->requested = requested;
    in->forker = forker;
    in->parent = parent;
    __atomic_store_n(&in->seq, seq, __ATOMIC_RELEASE);
    sm_ompt_team_t *team = th->last_team;
    if (SM_UNLIKELY(!team || !sm_team_is(team, parent, forker, requested)))
        th->last_team = team = sm_team_known(parent, forker, requested);
    parallel->value = sm_parallel_value(seq, sm_team_slot(team), site);
}

static void sm_cb_parallel_end(ompt_data_t *parallel, ompt_data_t *encountering_task, int flags,
                               const void *codeptr)
{
    (void)encountering_task;
    (void)flags;
    (void)codeptr;
    /* The encountering thread's implicit task end set it already (see
     * sm_implicit_end), unless it went unseen. */
    sm_ompt_instance_t *in = sm_instance(sm_parallel_seq(parallel->value));
    uint64_t none = 0;
    if (in && !__atomic_load_n(&in->end, __ATOMIC_RELAXED))
        __atomic_compare_exchange_n(&in->end, &none, sm_clock_now(), false, __ATOMIC_RELEASE,
                                    __ATOMIC_RELAXED);
}

/* A fork/join record without payload (sm_event_record, inlined: there are
 * four at every parallel region). */
static inline void sm_ompt_mark(sm_location_t *loc, sm_record_kind_t kind, uint32_t ref,
                                uint64_t t)
{
    if (loc->closed)
        return;
    sm_event_count(loc, kind, 0); /* traced or not: for sysmeasure-score */
    if (!loc->tracing)
        return;
    sm_record_t *r = (sm_record_t *)SM_BUFFER_RESERVE(loc, sizeof(sm_record_t));
    r->time = t;
    r->kind = (uint8_t)kind;
    r->words = 0;
    r->aux = SM_PARADIGM_OPENMP;
    r->ref = ref;
    SM_BUFFER_COMMIT(loc, r + 1);
}

/* An implicit task ends at t: what is still open inside it, its region,
 * then the team and (on the encountering thread) the join. */
static void sm_implicit_close(sm_ompt_thread_t *th, sm_location_t *loc, sm_ompt_scope_t *s,
                              uint64_t t)
{
    uint16_t flags = s->flags;
    const sm_ompt_team_t *team = s->team;
    sm_scope_pop(th, loc, s, t);
    if ((flags & SM_IMPLICIT_TEAMED) && team)
        sm_ompt_mark(loc, SM_REC_THREAD_TEAM_END, team->comm, t);
    if (flags & SM_IMPLICIT_FORKED)
        sm_ompt_mark(loc, SM_REC_THREAD_JOIN, 0, t);
}

static void sm_implicit_begin(sm_ompt_thread_t *th, sm_location_t *loc, ompt_data_t *parallel,
                              ompt_data_t *task, unsigned int actual, unsigned int index)
{
    /* The clock first: its latency overlaps the load of the region's data,
     * which the encountering thread has just written. */
    uint64_t t = sm_clock_now();
    uint64_t value = parallel ? parallel->value : 0, seq = sm_parallel_seq(value);
    const sm_ompt_site_t *site = sm_parallel_site(value);
    task->value = sm_implicit_value(seq);
    if (SM_UNLIKELY(th->depth >= SM_MAX_SCOPES)) {
        th->depth++;
        return;
    }
    /* The team: as guessed, or by its key, as the encountering thread left
     * it in the instance (which that thread reads anyway: it wrote it). */
    sm_ompt_team_t *team = sm_parallel_team(value);
    bool guessed = team && team->size == actual;
    sm_ompt_instance_t *in = NULL;
    uint32_t requested = 0, forker = 0;
    sm_comm_id_t parent = SM_COMM_NONE;
    if (index == 0 || !guessed) {
        in = sm_instance(seq);
        if (in) {
            requested = in->requested;
            forker = in->forker;
            parent = in->parent;
            if (__atomic_load_n(&in->seq, __ATOMIC_ACQUIRE) != seq)
                in = NULL;
        }
        if (!guessed)
            team = in ? sm_team(parent, forker, actual) : NULL;
    }
    if (team)
        sm_team_join(team, index, loc->id);
    sm_ompt_scope_t *s = &th->scope[th->depth++];
    s->site = site;
    s->aux = seq;
    s->kind = SM_SCOPE_IMPLICIT;
    s->flags = index == 0 ? SM_IMPLICIT_PRIMARY : 0;
    s->team = team;
    s->thread = index;
    s->region = SM_INVALID_ID;
    if (!sm_measuring(loc) || loc->closed)
        return;
    /* Fork and team begin just before the region's enter (the team's part
     * of the region is inside the team). */
    if (index == 0 && in) {
        sm_ompt_mark(loc, SM_REC_THREAD_FORK, requested, t);
        s->flags |= SM_IMPLICIT_FORKED;
    }
    if (team) {
        sm_ompt_mark(loc, SM_REC_THREAD_TEAM_BEGIN, team->comm, t);
        s->flags |= SM_IMPLICIT_TEAMED;
    }
    th->last = t;
    if (site->region == SM_INVALID_ID)
        return;
    s->region = site->region;
    if (index == 0 && in && sm_attr_team != SM_INVALID_ID) { /* (untraced: counted) */
        /* The team sizes go on the encountering thread's enter. */
        sm_attr_value_t attrs[2] = {{sm_attr_requested, requested}, {sm_attr_team, actual}};
        sm_event_enter_attrs(loc, site->region, t, attrs, 2);
    } else {
        sm_event_enter(loc, site->region, t);
    }
}

/* The encountering thread ends its implicit task after the team's closing
 * barrier: every thread of the team has arrived there.  Its time is the
 * end of the region for the whole team (sm_ompt_end_time): the workers'
 * team ends are then no later than the join. */
static void sm_implicit_end(sm_ompt_thread_t *th, sm_location_t *loc, ompt_data_t *task)
{
    if (SM_UNLIKELY(th->depth > SM_MAX_SCOPES)) {
        th->depth--;
        return;
    }
    sm_ompt_scope_t *s = sm_scope_find(th, SM_SCOPE_IMPLICIT, task->value >> 1, true);
    if (!s)
        return;
    uint64_t t;
    if (s->flags & SM_IMPLICIT_PRIMARY) {
        t = sm_clock_now();
        if (t < th->last)
            t = th->last;
        if (t < loc->sp->start)
            t = loc->sp->start;
        sm_ompt_instance_t *in = sm_instance(s->aux);
        if (in)
            __atomic_store_n(&in->end, t, __ATOMIC_RELEASE);
        sm_ompt_team_t *team = s->team;
        if (team && !__atomic_load_n(&team->defined, __ATOMIC_ACQUIRE))
            sm_team_define_members(team, false);
    } else {
        t = sm_ompt_end_time(th, loc, s);
    }
    sm_implicit_close(th, loc, s, t);
}

static void sm_cb_implicit_task(ompt_scope_endpoint_t endpoint, ompt_data_t *parallel,
                                ompt_data_t *task, unsigned int actual, unsigned int index,
                                int flags)
{
    if (flags & ompt_task_initial)
        return; /* the program's own initial task: no region */
    sm_ompt_thread_t *th = sm_ompt_thread();
    sm_location_t *loc = sm_location_current();
    if (endpoint == ompt_scope_begin)
        sm_implicit_begin(th, loc, parallel, task, actual, index);
    else
        sm_implicit_end(th, loc, task);
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
        sm_scope_push(th, loc, SM_SCOPE_WORK, sm_site(kind, codeptr, th), 0, t);
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
        if (kind == SM_SITE_BARRIER_IMPLICIT) {
            /* A parallel region's closing barrier: the region's (a worker's
             * has no code pointer, the encountering thread's the region's),
             * found without hashing. */
            sm_ompt_scope_t *implicit = sm_scope_find(th, SM_SCOPE_IMPLICIT, 0, false);
            if (implicit && implicit->site->barrier &&
                (!codeptr || implicit->site->key == sm_site_key(implicit->site->kind, codeptr)))
                site = implicit->site->barrier;
        }
        if (!site)
            site = sm_site(kind, codeptr, th);
        uint64_t t = sm_clock_now();
        if (kind == SM_SITE_BARRIER || kind == SM_SITE_BARRIER_IMPLICIT ||
            kind == SM_SITE_BARRIER_RUNTIME)
            sm_end_open_single(th, loc, t);
        sm_scope_push(th, loc, SM_SCOPE_SYNC, site, 0, t);
    } else {
        uint64_t t;
        if (kind == SM_SITE_BARRIER_IMPLICIT) {
            sm_ompt_scope_t *implicit = sm_scope_find(th, SM_SCOPE_IMPLICIT, 0, false);
            /* A parallel region's closing barrier, right inside the
             * thread's implicit task: left open, it ends with the task
             * (which the runtime ends next), at the task's end, the time
             * that every thread of the team takes for both (the encountering
             * thread's, see sm_ompt_end_time): one clock read (encountering
             * thread) or instance read (the others) less, and one pop. */
            if (implicit && th->depth == (uint32_t)(implicit - th->scope) + 2 &&
                implicit[1].kind == SM_SCOPE_SYNC && implicit[1].site == implicit->site->barrier) {
                th->closing = &implicit[1];
                return;
            }
            t = sm_ompt_end_time(th, loc, implicit);
        } else
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
                      sm_site(SM_SITE_MASKED, codeptr, th), 0, sm_clock_now());
    else
        sm_scope_end(th, loc, SM_SCOPE_MASKED, 0, false, sm_clock_now());
}

/* The team the thread works in: its innermost implicit task's; outside any
 * parallel region, the team of one that it would fork with one thread. */
static inline const sm_ompt_team_t *sm_task_team(sm_ompt_thread_t *th, sm_location_t *loc)
{
    const sm_ompt_scope_t *implicit = sm_scope_find(th, SM_SCOPE_IMPLICIT, 0, false);
    if (implicit)
        return implicit->team;
    sm_ompt_team_t *team = sm_team(SM_COMM_NONE, loc->id, 1);
    if (team) {
        sm_team_join(team, 0, loc->id);
        if (!__atomic_load_n(&team->defined, __ATOMIC_ACQUIRE))
            sm_team_define_members(team, false);
    }
    return team;
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
        sm_site((flags & ompt_task_target) ? SM_SITE_TARGET_TASK : SM_SITE_TASK, codeptr, th);
    sm_location_t *loc = sm_location_current();
    const sm_ompt_team_t *team = sm_task_team(th, loc);
    const sm_ompt_scope_t *implicit = sm_scope_find(th, SM_SCOPE_IMPLICIT, 0, false);
    uint32_t thread = implicit ? implicit->thread : 0;
    if (thread > SM_TASK_MAX_THREAD)
        thread = SM_TASK_MAX_THREAD;
    new_task->value = sm_explicit_value(thread, th->generation++, site);
    uint64_t name = sm_explicit_name(new_task);
    if (team && sm_measuring(loc)) /* (no clock read for the profile: only counted) */
        sm_event_record(loc, SM_REC_THREAD_TASK_CREATE, team->comm, SM_PARADIGM_OPENMP,
                        loc->tracing ? sm_clock_now() : 0, &name, 1);
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
    /* Tasks run in the team that created them: the thread's own. */
    const sm_ompt_team_t *team = sm_measuring(loc) ? sm_task_team(th, loc) : NULL;
    /* ThreadTaskComplete after the task's leave, ThreadTaskSwitch (also on
     * a resume) before its enter. */
    if (sm_is_explicit(prior) &&
        (status == ompt_task_complete || status == ompt_task_cancel || status == ompt_task_detach)) {
        sm_scope_end(th, loc, SM_SCOPE_TASK, (uint64_t)(uintptr_t)prior, true, t);
        uint64_t name = sm_explicit_name(prior);
        if (team)
            sm_event_record(loc, SM_REC_THREAD_TASK_COMPLETE, team->comm, SM_PARADIGM_OPENMP, t,
                            &name, 1);
    }
    if (sm_is_explicit(next)) {
        uint64_t name = sm_explicit_name(next);
        if (team)
            sm_event_record(loc, SM_REC_THREAD_TASK_SWITCH, team->comm, SM_PARADIGM_OPENMP, t,
                            &name, 1);
        if (!sm_scope_find(th, SM_SCOPE_TASK, (uint64_t)(uintptr_t)next, true))
            sm_scope_push_task(th, loc, sm_explicit_site(next), (uint64_t)(uintptr_t)next, t);
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
                  sm_site(wait, codeptr, th), wait_id, sm_clock_now());
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
        sm_scope_push(th, loc, SM_SCOPE_HELD, sm_site(held, codeptr, th),
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
            sm_implicit_close(th, loc, implicit, sm_ompt_end_time(th, loc, implicit));
    }
    pthread_mutex_unlock(&sm_ompt_threads_lock);
}

static void sm_ompt_at_finalize(const sm_run_info_t *run)
{
    if (sm_ompt_in_use()) {
        sm_ompt_close_idle_workers();
        for (uint32_t i = 0; i < SM_TEAM_SLOTS; i++)
            if (__atomic_load_n(&sm_teams[i].state, __ATOMIC_ACQUIRE) && !sm_teams[i].defined)
                sm_team_define_members(&sm_teams[i], true);
        uint64_t unrecorded = __atomic_load_n(&sm_locks_unrecorded, __ATOMIC_RELAXED);
        if (unrecorded)
            sm_info(1, "OpenMP: %llu lock acquisitions not traced (too many locks)",
                    (unsigned long long)unrecorded);
        uint64_t no_team = __atomic_load_n(&sm_team_unrecorded, __ATOMIC_RELAXED);
        if (no_team)
            sm_info(1, "OpenMP: %llu times a thread's team was not traced (more than %u "
                    "distinct teams)", (unsigned long long)no_team, SM_TEAM_SLOTS / 4 * 3);
        uint64_t strangers = __atomic_load_n(&sm_team_strangers, __ATOMIC_RELAXED);
        if (strangers)
            sm_info(1, "OpenMP: %llu times a thread joined a team under a thread number that "
                    "another thread had in an earlier run of that team; the team's members "
                    "are the first ones", (unsigned long long)strangers);
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

const sm_subsystem_t sm_ompt_subsystem = {
    .name = "OpenMP (OMPT)",
    .flush = sm_ompt_at_finalize,
};

#else /* no omp-tools.h at build time: no tool */

const sm_subsystem_t sm_ompt_subsystem = {.name = "OpenMP (OMPT)"};

bool sm_ompt_in_use(void)
{
    return false;
}

#endif
