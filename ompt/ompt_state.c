/* The OMPT tool's state: the constructs (their names, made once per code
 * pointer, and their table), the teams, the threads, and the slow paths of
 * the scopes that ompt_private.h keeps inline. */
#define _GNU_SOURCE
#include "sm_build.h"

#ifdef SM_HAVE_OMPT
#include "ompt_private.h"

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

sm_ompt_site_t sm_sites[SM_SITE_SLOTS];
sm_ompt_site_t sm_sites_generic[SM_SITE_COUNT]; /* when the table is full */
pthread_mutex_t sm_sites_lock = PTHREAD_MUTEX_INITIALIZER;
sm_ompt_instance_t sm_ring[SM_RING];
sm_ompt_team_t sm_teams[SM_TEAM_SLOTS];
uint32_t sm_team_count;
uint64_t sm_team_strangers; /* thread joined a team under another's number */
uint64_t sm_team_unrecorded; /* team joins not traced: too many teams */
pthread_mutex_t sm_teams_lock = PTHREAD_MUTEX_INITIALIZER;
SM_TLS sm_ompt_thread_t *sm_ompt_me;
sm_ompt_thread_t *sm_ompt_threads; /* all of them, for finalize */
pthread_mutex_t sm_ompt_threads_lock = PTHREAD_MUTEX_INITIALIZER;
sm_ompt_thread_t sm_ompt_nomem = {.depth = 1u << 30};
uint32_t sm_ompt_workers;
int sm_ompt_initialized;
sm_attribute_id_t sm_attr_requested = SM_INVALID_ID, sm_attr_team = SM_INVALID_ID;

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

/* A construct not seen yet: named after the construct whose body the
 * thread runs (found only here, not on every lookup). */
SM_NOINLINE sm_ompt_site_t *sm_site_slow(sm_site_kind_t kind, const void *codeptr,
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

SM_NOINLINE sm_ompt_team_t *sm_team_slow(sm_comm_id_t parent, uint32_t forker,
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

/* Hands t's members to its definition, once every thread number was seen
 * (or, with force, at the end of the run: those not seen are left out). */
SM_NOINLINE void sm_team_define_members(sm_ompt_team_t *t, bool force)
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

SM_COLD sm_ompt_thread_t *sm_ompt_thread_new(void)
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

/* The construct whose body the thread runs: its innermost task. */
const sm_ompt_site_t *sm_scope_parent(sm_ompt_thread_t *th)
{
    uint32_t d = th->depth < SM_MAX_SCOPES ? th->depth : SM_MAX_SCOPES;
    while (d--)
        if (th->scope[d].kind == SM_SCOPE_IMPLICIT || th->scope[d].kind == SM_SCOPE_TASK)
            return th->scope[d].site;
    return NULL;
}

/* sm_ompt_leave when region is not on top (or the location is closed). */
SM_NOINLINE void sm_ompt_leave_below(sm_location_t *loc, sm_region_id_t region, uint64_t t)
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

/* Something else happens on the thread between its closing barrier's end
 * and its implicit task's (not seen with LLVM's runtime, which ends the
 * task next): the barrier ends now, before it. */
SM_NOINLINE void sm_scope_settle(sm_ompt_thread_t *th, sm_location_t *loc, uint64_t t)
{
    sm_ompt_scope_t *s = th->closing;
    th->closing = NULL;
    if (s < &th->scope[th->depth] && s->kind == SM_SCOPE_SYNC) {
        if (t < th->last)
            t = th->last;
        sm_scope_pop(th, loc, s, t);
    }
}

#endif
