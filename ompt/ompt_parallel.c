/* The OMPT tool's callbacks of teams: a thread begun, parallel regions,
 * implicit tasks, worksharing, sync regions (barriers, taskwait,
 * taskgroup), masked. */
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

#include "causal/causal.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/definitions.h"
#include "core/events.h"
#include "core/location.h"
#include "core/runtime.h"
#include "util/log.h"
#include "util/srcloc.h"
#include "util/symbols.h"

/* ---------------------------------------------------------------- callbacks */

/* The last instance handed out, on a cache line of its own: the forking
 * thread writes it at every parallel region. */
static struct {
    uint64_t seq;
    char pad[56];
} sm_ring_last __attribute__((aligned(64)));

void sm_cb_thread_begin(ompt_thread_t type, ompt_data_t *thread_data)
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

void sm_cb_parallel_begin(ompt_data_t *encountering_task, const ompt_frame_t *frame,
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

void sm_cb_parallel_end(ompt_data_t *parallel, ompt_data_t *encountering_task, int flags,
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
    if (SM_UNLIKELY(sm_causal_running)) /* --causal-progress openmp */
        sm_causal_openmp_end();
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
void sm_implicit_close(sm_ompt_thread_t *th, sm_location_t *loc, sm_ompt_scope_t *s,
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

void sm_cb_implicit_task(ompt_scope_endpoint_t endpoint, ompt_data_t *parallel,
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

void sm_cb_work(ompt_work_t type, ompt_scope_endpoint_t endpoint, ompt_data_t *parallel,
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

void sm_cb_sync_region(ompt_sync_region_t type, ompt_scope_endpoint_t endpoint,
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

void sm_cb_masked(ompt_scope_endpoint_t endpoint, ompt_data_t *parallel, ompt_data_t *task,
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

#endif
