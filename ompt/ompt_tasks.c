/* The OMPT tool's callbacks of explicit tasks: created, and scheduled on
 * the thread that runs them. */
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

void sm_cb_task_create(ompt_data_t *encountering_task, const ompt_frame_t *frame,
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
void sm_cb_task_schedule(ompt_data_t *prior, ompt_task_status_t status, ompt_data_t *next)
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

#endif
