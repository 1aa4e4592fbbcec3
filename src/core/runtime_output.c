/* The output folder of the run: its name, the claim on a folder the user
 * named (one writer at a time), the folder made, and where it moves to
 * (see runtime.h). */
#define _GNU_SOURCE
#include "runtime_private.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buffer.h"
#include "clock.h"
#include "folder_claim.h"
#include "job.h"
#include "job_folder.h"
#include "journal.h"
#include "../util/fs.h"
#include "../util/log.h"

/* ---------------------------------------------------------------- output folder */

/* Where this process stands with the folder the user named: see
 * sm_outdir_claim_t (runtime_private.h). */
static int sm_outdir_made;
sm_outdir_claim_t sm_outdir_claim;
char sm_outbase[PATH_MAX];             /* the folder the user named, absolute */
static char sm_outdir_moved_why[3 * PATH_MAX]; /* the line for SM_OUTDIR_MOVED */
static int sm_outdir_said;
long sm_member = -1;      /* this process's number in its program's family */
long sm_fork_member = -1; /* taken for the child being forked (atfork) */

/* <output>/<program>-<pid>: a sub-folder no other live process can have. */
static void sm_output_subfolder(char *dir, size_t len)
{
    snprintf(dir, len, "%.*s/%s-%d", PATH_MAX - 300, sm_outbase, sm_program, (int)getpid());
}

/* why: "is ...; so ..." up to the subject of "writes into". */
static void sm_output_move_out(const char *why)
{
    sm_output_subfolder(sm_outdir, sizeof sm_outdir);
    sm_outdir_made = 0;
    sm_outdir_claim = SM_OUTDIR_MOVED;
    snprintf(sm_outdir_moved_why, sizeof sm_outdir_moved_why, "output folder %s %s writes into %s",
             sm_outbase, why, sm_outdir);
}

/* Claims the folder the user named (made if needed), for this process or,
 * at rank 0 of an MPI job, for the job. */
static void sm_output_claim(sm_claim_mode_t mode)
{
    char holder[512], why[1024];
    snprintf(sm_outdir, sizeof sm_outdir, "%s", sm_outbase);
    sm_outdir_made = 0;
    sm_outdir_claim = SM_OUTDIR_UNCLAIMED;
    if (sm_mkdir_p(sm_outbase) != 0)
        return; /* the first write says why */
    switch (sm_folder_claim(sm_outbase, mode, holder, sizeof holder)) {
    case SM_CLAIM_OURS:
        sm_outdir_claim = mode == SM_CLAIM_JOIN ? SM_OUTDIR_SHARED : SM_OUTDIR_HELD;
        break;
    case SM_CLAIM_TAKEN:
        snprintf(why, sizeof why, "is being written by another process (%s, says its %s), so "
                 "this %s (%s%s, pid %d)", holder, SM_CLAIM_FILE,
                 mode == SM_CLAIM_JOB ? "MPI job" : "process",
                 mode == SM_CLAIM_JOB ? "rank 0: " : "", sm_program, (int)getpid());
        if (mode == SM_CLAIM_JOIN) /* ... writes on its own */
            snprintf(why, sizeof why, "is being written by another job (%s, says its %s), so "
                     "rank %ld of this %s job (%s, pid %d)", holder, SM_CLAIM_FILE,
                     sm_job_launcher_rank(), sm_job_launch()->name, sm_program, (int)getpid());
        sm_output_move_out(why);
        break;
    case SM_CLAIM_UNCHECKED:
        break;
    }
}

/* One of the processes of a job that a launcher started (its rank and the
 * job's size, job.h), and no MPI program: MPI_Init would make the job one
 * at MPI_Finalize (an MPI program gets the wrappers, which define MPI_Init,
 * before its start; a program that loads MPI later, as Python's mpi4py
 * does, leaves this way when it calls MPI_Init). */
static bool sm_runtime_job_without_mpi(void)
{
    const sm_job_launch_t *l = sm_job_launch();
    return l->size > 1 && l->rank >= 0 && l->rank < l->size &&
           dlsym(RTLD_DEFAULT, "MPI_Init") == NULL;
}

/* Whether this process is of a family (job_folder.h): the program the
 * launcher started or a process it started, with the folder the user named,
 * and no launcher numbered it in a job of several processes (the processes
 * a rank of torchrun or srun starts are not of that job: each writes on its
 * own; a rank whose job's size is not known keeps the job's identity).  A
 * Slurm batch script (SLURM_PROCID 0, no step) is one program. */
bool sm_runtime_in_family(void)
{
    const sm_job_launch_t *l = sm_job_launch();
    return sm_cfg.output && sm_cfg.output[0] && sm_cfg.launched_pid > 0 &&
           (l->rank < 0 || l->size == 1 || (l->launcher == SM_LAUNCHER_SLURM && l->size == 0));
}

/* sysmeasure-<program>-<date>-<time>-<pid>, in the working directory; or
 * the folder the user named, claimed now (a run that overlaps another's in
 * that folder must know before either writes). */
void sm_choose_output_dir(void)
{
    if (sm_cfg.output && sm_cfg.output[0]) {
        if (sm_cfg.output[0] == '/' || !getcwd(sm_outbase, sizeof sm_outbase))
            snprintf(sm_outbase, sizeof sm_outbase, "%s", sm_cfg.output);
        else {
            size_t n = strlen(sm_outbase);
            snprintf(sm_outbase + n, sizeof sm_outbase - n, "/%s", sm_cfg.output);
        }
        snprintf(sm_outdir, sizeof sm_outdir, "%s", sm_outbase);
        /* A process the launched program started: of its family, in its
         * folder; else (another job writes there, the program has ended on
         * its own) a folder of its own inside. */
        if (sm_cfg.launched_pid > 0 && sm_cfg.launched_pid != getpid()) {
            if (sm_runtime_in_family() && sm_folder_claimed_by_job(sm_outbase) &&
                (sm_member = sm_job_folder_join(sm_outbase, sm_cfg.launched_pid, 0)) > 0)
                sm_outdir_claim = SM_OUTDIR_FAMILY;
            else
                sm_output_subfolder(sm_outdir, sizeof sm_outdir);
        } else if (sm_runtime_job_without_mpi())
            sm_output_claim(SM_CLAIM_JOIN); /* the job's processes share it */
        else if (sm_job_launcher_rank() > 0)
            sm_outdir_claim = SM_OUTDIR_DEFERRED; /* rank 0 claims it (one claim per job) */
        else
            sm_output_claim(SM_CLAIM_PROCESS);
        return;
    }
    char cwd[PATH_MAX - 512];
    if (!getcwd(cwd, sizeof cwd))
        snprintf(cwd, sizeof cwd, ".");
    time_t now = (time_t)(sm_clock_realtime_at_init_ns() / 1000000000u);
    struct tm tm;
    localtime_r(&now, &tm);
    char date[32];
    strftime(date, sizeof date, "%Y%m%d-%H%M%S", &tm);
    snprintf(sm_outdir, sizeof sm_outdir, "%s/sysmeasure-%s-%s-%d", cwd, sm_program, date,
             (int)getpid());
}

/* A process that writes alone: a rank > 0 of a launch that formed no MPI
 * job with rank 0 (a program without MPI under mpirun or srun) leaves the
 * folder to rank 0, which claimed it. */
void sm_output_settle_alone(void)
{
    if (sm_outdir_claim != SM_OUTDIR_DEFERRED)
        return;
    char why[512];
    snprintf(why, sizeof why, "belongs to rank 0 of this launch (job %s); rank %ld (%s, pid %d) "
             "is in no MPI job with it, so it", sm_job_id(), sm_job_launcher_rank(), sm_program,
             (int)getpid());
    pthread_mutex_lock(&sm_runtime_lock);
    char old[PATH_MAX];
    int made = sm_outdir_made;
    snprintf(old, sizeof old, "%s", sm_outdir);
    sm_output_move_out(why);
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", sm_outdir);
    snprintf(sm_outdir, sizeof sm_outdir, "%s", old);
    sm_outdir_made = made;
    pthread_mutex_unlock(&sm_runtime_lock);
    sm_runtime_set_output_dir(dir); /* (crash-safe files follow) */
}

/* The job's folder is settled by rank 0 after every rank dropped what it
 * claimed on its own (a rank that started as rank 0 of nothing, under a
 * launcher whose rank variable is unknown, or the process the program was
 * started through).  Collective over procs. */
void sm_output_claim_for_job(const sm_procs_t *procs)
{
    if (sm_outdir_claim == SM_OUTDIR_HELD || sm_outdir_claim == SM_OUTDIR_SHARED)
        sm_folder_release(sm_outbase);
    /* Taken for a job without MPI (by this process, or by the script it
     * was started through, which exec'd it): the MPI job ends together. */
    if (sm_outbase[0] && sm_job_launcher_rank() >= 0)
        sm_job_folder_unregister(sm_outbase, (uint32_t)sm_job_launcher_rank());
    (void)procs->barrier(procs->ctx);
    if (!sm_outbase[0] || (sm_cfg.launched_pid > 0 && sm_cfg.launched_pid != getpid()))
        return; /* no folder named, or the folder of a launched program's child */
    if (procs->rank == 0) {
        sm_output_claim(SM_CLAIM_JOB);
        if (sm_outdir_claim == SM_OUTDIR_HELD)
            sm_outdir_claim = SM_OUTDIR_JOB;
    } else {
        sm_outdir_claim = SM_OUTDIR_JOB; /* rank 0's folder, which it hands on */
    }
}

/* At the end, after the last write of this process (or of the job, at rank 0). */
void sm_output_release(void)
{
    if (sm_outdir_claim == SM_OUTDIR_HELD || (sm_outdir_claim == SM_OUTDIR_JOB && sm_run.rank == 0))
        sm_folder_release(sm_outbase);
}

int sm_runtime_make_output_dir(char *err, size_t errlen)
{
    pthread_mutex_lock(&sm_runtime_lock);
    int rc = 0;
    if (!sm_outdir_made) {
        int explicit_dir = sm_cfg.output && sm_cfg.output[0];
        if (explicit_dir && sm_outdir_claim == SM_OUTDIR_MOVED) {
            rc = sm_mkdir_p(sm_outbase);
            if (rc == 0)
                rc = sm_fs_mkdir_own(sm_outdir); /* <output>/<program>-<pid>: ours */
            if (rc == 0 && !sm_outdir_said++)
                sm_warning("%s", sm_outdir_moved_why);
        } else if (explicit_dir && sm_cfg.launched_pid > 0 && sm_cfg.launched_pid != getpid()) {
            rc = sm_fs_mkdir_own(sm_outdir); /* <output>/<program>-<pid>: ours */
        } else if (explicit_dir) {
            rc = sm_mkdir_p(sm_outdir); /* the user's folder */
        } else {
            /* Our own name: it must be new.  Should another job have taken
             * it (same pid and second on another host sharing the folder),
             * add a suffix. */
            char base[PATH_MAX];
            snprintf(base, sizeof base, "%s", sm_outdir);
            for (int i = 1; (rc = mkdir(sm_outdir, 0755)) != 0 && errno == EEXIST && i < 1000; i++)
                snprintf(sm_outdir, sizeof sm_outdir, "%.*s-%d", PATH_MAX - 16, base, i);
        }
        if (rc != 0)
            snprintf(err, errlen, "cannot create output folder %s: %s", sm_outdir, sm_fs_why(errno));
        else
            sm_outdir_made = 1;
    }
    pthread_mutex_unlock(&sm_runtime_lock);
    return rc;
}

/* Spills go to <output>/.spill: the output folder is created at the first
 * spill, under the name this process claims (see above). */
const char *sm_runtime_spill_dir(void)
{
    static char dir[PATH_MAX + 8];
    static int said;
    char err[PATH_MAX + 256];
    if (sm_runtime_make_output_dir(err, sizeof err) != 0) {
        if (!said++)
            sm_error("%s", err);
        return NULL;
    }
    snprintf(dir, sizeof dir, "%s/.spill", sm_outdir);
    /* Made by us, or ours already (another rank's); a link or someone
     * else's folder in its place is left alone, and the spill file's own
     * open (sm_fs_create) then fails and says so. */
    (void)sm_fs_mkdir_own(dir);
    return dir;
}

int sm_runtime_set_output_dir(const char *dir)
{
    if (!dir || !dir[0])
        return -1;
    pthread_mutex_lock(&sm_runtime_lock);
    int same = strcmp(dir, sm_outdir) == 0;
    char old[PATH_MAX + 8];
    snprintf(old, sizeof old, "%s", sm_outdir);
    if (!same) {
        snprintf(sm_outdir, sizeof sm_outdir, "%s", dir);
        sm_outdir_made = 0;
    }
    pthread_mutex_unlock(&sm_runtime_lock);
    if (same && sm_outdir_made)
        return 0;
    int rc;
    if (same || sm_outdir_claim == SM_OUTDIR_MOVED) {
        /* Rank 0's own folder, or a sub-folder of ours: made as chosen (the
         * sub-folder says so once). */
        char err[PATH_MAX + 256];
        rc = sm_runtime_make_output_dir(err, sizeof err);
        if (rc != 0)
            sm_error("%s", err);
    } else {
        rc = sm_mkdir_p(sm_outdir);
        if (rc != 0)
            sm_error("cannot create output folder %s: %s", sm_outdir, strerror(errno));
        else
            sm_outdir_made = 1;
    }
    if (rc == 0 && !same && sm_buffers_crash_safe()) {
        /* The crash-safe files were made in the folder this process chose
         * at its start: they follow the job's folder. */
        char spill[PATH_MAX + 8];
        snprintf(spill, sizeof spill, "%s/.spill", sm_outdir);
        if (sm_fs_mkdir_own(spill) != 0 || sm_buffers_crash_safe_move(spill) != 0 ||
            sm_journal_move(spill) != 0)
            sm_warning("--crash-safe: cannot move the crash-safe files into %s: %s", spill,
                       strerror(errno));
        /* The folder chosen at the start, empty now, goes. */
        size_t n = strlen(old);
        snprintf(old + n, sizeof old - n, "/.spill");
        sm_fs_rmdir_own(old);
        old[n] = '\0';
        rmdir(old);
    }
    return rc;
}
