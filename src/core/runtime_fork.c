/* A fork: the child of a fork writes nothing; the child that daemon()
 * leaves goes on measuring (see runtime.h, sm_runtime_daemon). */
#define _GNU_SOURCE
#include "runtime_private.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <unistd.h>

#include "buffer.h"
#include "clock.h"
#include "definitions.h"
#include "ending.h"
#include "gpu_memory.h"
#include "job_folder.h"
#include "journal.h"
#include "location.h"
#include "sampler.h"
#include "sig_hold.h"
#include "subsystem.h"
#include "window.h"
#include "../util/log.h"

/* ---------------------------------------------------------------- fork and daemon() */

/* daemon() forks; the parent then ends inside the C library (its _exit is
 * not ours to see) and the child goes on as the program.  So the child
 * goes on measuring, with everything recorded before (it has the parent's
 * memory), and writes the output at its end: the parent writes nothing.
 * Set on the thread that calls daemon(), for the atfork handlers. */
static __thread bool sm_daemon_forking;
static uint64_t sm_daemon_time; /* when the fork was (ticks) */
static pid_t sm_daemon_parent;

bool sm_runtime_forking_daemon(void)
{
    return sm_daemon_forking;
}

/* Before a fork: a process of a family (job_folder.h) takes the child's
 * number now, so that the family knows of the child before either goes on
 * (the record names the parent until the child names itself). */
void sm_runtime_before_fork(void)
{
    sm_fork_member = -1;
    if (!sm_runtime_active || sm_runtime_discard || sm_daemon_forking ||
        sm_ending_phase() != SM_END_RUNNING || sm_procs || !sm_runtime_in_family() ||
        (sm_outdir_claim != SM_OUTDIR_HELD && sm_outdir_claim != SM_OUTDIR_FAMILY))
        return;
    int saved_errno = errno;
    sm_sig_hold(SM_SIG_LOCKS_IO);
    sm_fork_member = sm_job_folder_join(sm_outbase, sm_cfg.launched_pid, 1);
    sm_sig_release();
    errno = saved_errno;
}

void sm_runtime_after_fork_parent(void)
{
    sm_fork_member = -1;
}

/* A forked child of a family measures on as a process of its own, member
 * sm_fork_member: the forking thread with the regions open at the fork,
 * nothing the parent recorded, no crash-safe files, no samplers. */
static void sm_runtime_fork_child_measures(void)
{
    pthread_mutex_t r = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    sm_runtime_lock = r;
    sm_meta_lock = m;
    sm_definitions_after_daemon_child();
    sm_journal_after_fork_child();
    uint64_t now = sm_clock_now();
    sm_location_t *self = sm_tls_location && sm_tls_location->stack ? sm_tls_location : NULL;
    sm_buffers_fork_child(self);
    sm_locations_fork_child(self, now);
    sm_member = sm_fork_member;
    sm_fork_member = -1;
    sm_outdir_claim = SM_OUTDIR_FAMILY;
    snprintf(sm_outdir, sizeof sm_outdir, "%s", sm_outbase);
    sm_job_folder_claim_number(sm_outbase, sm_member);
    sm_run.pid = getpid();
    sm_run.start_time = now;
    sm_run.start_realtime_ns = sm_clock_realtime_at_init_ns() +
                               (sm_clock_monotonic_ns() - sm_clock_monotonic_at_init_ns());
    sm_runtime_set_rank((uint32_t)sm_member, (uint32_t)sm_member + 1);
    sm_ending_child_measures(); /* a signal's end: written off the thread it lands on */
}

/* In a forked child the parent's data is not ours to write again, unless
 * the child goes on after daemon(), or is of a family (above). */
void sm_runtime_after_fork_child(void)
{
    sm_ending_after_fork_child();
    if (sm_fork_member > 0 && !sm_daemon_forking) {
        sm_runtime_fork_child_measures();
        return;
    }
    sm_fork_member = -1;
    if (sm_daemon_forking) {
        /* The locks a thread of the parent may have held, made new. */
        pthread_mutex_t r = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
        pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
        sm_runtime_lock = r;
        sm_meta_lock = m;
        sm_definitions_after_daemon_child();
        sm_locations_after_daemon_child();
        sm_journal_after_daemon_child();
        sm_gpu_memory_after_daemon_child();
        sm_buffers_resume(1);
        /* Said now, while stderr is still the parent's (daemon() points it
         * at /dev/null next). */
        sm_info(0, "daemon(): the program goes on in process %d, which measures on (the "
                "events before daemon() included) and writes the output to %s at its end",
                (int)getpid(), sm_outdir);
        return;
    }
    sm_runtime_discard = 1;
    sm_runtime_active = 0;
    sm_window_after_fork_child();
    sm_journal_after_fork_child();
    sm_buffers_after_fork_child();
}

/* The child that goes on after daemon(), out of the fork: the process's
 * identity, the threads the fork left behind, the background threads. */
static void sm_runtime_after_daemon(void)
{
    pid_t pid = getpid();
    sm_run.pid = pid;
    sm_cfg.launched_pid = pid; /* the program itself, not a process it started */
    /* The parent's other threads are not in the child: their locations end
     * at the fork, what they left open closed there. */
    sm_location_t *me = sm_tls_location;
    uint32_t n = sm_location_count(), ended = 0;
    for (uint32_t i = 0; i < n; i++) {
        sm_location_t *loc = sm_location_get(i);
        if (loc && loc != me && loc->type == SM_LOCATION_CPU_THREAD && loc->tid != 0 &&
            !__atomic_load_n(&loc->closed, __ATOMIC_ACQUIRE)) {
            sm_location_close(loc, sm_daemon_time);
            ended++;
        }
    }
    if (me)
        me->tid = gettid();
    sm_ending_child_measures(); /* a signal's end: written off the thread it lands on */
    sm_samplers_after_daemon();
    sm_subsystems_after_daemon();
    char note[200];
    snprintf(note, sizeof note, "the program called daemon(): measured in process %d up to it, "
             "then in process %d%s", (int)sm_daemon_parent, (int)pid,
             ended ? "; the threads of the first process ended there" : "");
    sm_runtime_add_note(note);
}

int sm_runtime_daemon(sm_daemon_fn fn, int nochdir, int noclose)
{
    pid_t parent = getpid();
    if (!sm_runtime_active || sm_runtime_discard || sm_ending_phase() != SM_END_RUNNING ||
        sm_procs) /* (an MPI rank: the job's end is MPI_Finalize's) */
        return fn(nochdir, noclose);
    /* No write of the writer thread under way at the fork. */
    sm_buffers_pause();
    sm_daemon_parent = parent;
    sm_daemon_time = sm_clock_now();
    sm_daemon_forking = true;
    int rc = fn(nochdir, noclose); /* the parent ends in there, unless the fork failed */
    int saved_errno = errno;
    sm_daemon_forking = false;
    bool child = getpid() != parent;
    if (!child)
        sm_buffers_resume(0);
    else
        sm_runtime_after_daemon();
    errno = saved_errno;
    return rc;
}
