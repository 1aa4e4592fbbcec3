/* What the files of the runtime share (runtime.c and runtime_*.c; the rest
 * of the core includes runtime.h): the state of the run, set up at its
 * start, and each file's functions the others use. */
#ifndef SM_RUNTIME_PRIVATE_H
#define SM_RUNTIME_PRIVATE_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "runtime.h"

/* runtime.c: the run. */
extern pthread_mutex_t sm_runtime_lock SM_HIDDEN; /* recursive (runtime.c says why) */
extern int sm_runtime_discard SM_HIDDEN;  /* a forked child: nothing is written */
extern sm_config_t sm_cfg SM_HIDDEN;
extern char sm_outdir[PATH_MAX] SM_HIDDEN;
extern char sm_program[256] SM_HIDDEN;
extern sm_run_info_t sm_run SM_HIDDEN;
extern const sm_procs_t *sm_procs SM_HIDDEN; /* the job's processes; NULL: on our own */
extern pthread_mutex_t sm_meta_lock SM_HIDDEN; /* declared metadata */

/* runtime.c: this process's rank among n (the run, the spill file, the journal). */
void sm_runtime_set_rank(uint32_t rank, uint32_t n) SM_HIDDEN;

/* runtime_output.c: the output folder. */

/* A folder has one writer at a time (folder_claim.h).  Where this process
 * stands with the folder the user named: */
typedef enum sm_outdir_claim {
    SM_OUTDIR_UNCLAIMED, /* no folder named (ours is new), a launched program's
                          * child (<output>/<program>-<pid>), or no record could be made */
    SM_OUTDIR_HELD,      /* our record is in it: we write it */
    SM_OUTDIR_DEFERRED,  /* rank > 0 of a launch: rank 0 claims it for the MPI job,
                          * which this process joins at MPI_Init, or else at its end
                          * this process takes a sub-folder */
    SM_OUTDIR_MOVED,     /* another writer has it: a sub-folder of our own, said once */
    SM_OUTDIR_JOB,       /* the MPI job's folder, which rank 0 claimed */
    SM_OUTDIR_SHARED,    /* one of a job's processes without MPI (a launcher's rank
                          * and size): the job's processes share the folder, and
                          * the last to end merges it (job_folder.h) */
    SM_OUTDIR_FAMILY,    /* a process the launched program started (fork, exec):
                          * member sm_member of the program's family, in its folder
                          * (job_folder.h) */
} sm_outdir_claim_t;

extern sm_outdir_claim_t sm_outdir_claim SM_HIDDEN;
extern char sm_outbase[PATH_MAX] SM_HIDDEN; /* the folder the user named, absolute */
extern long sm_member SM_HIDDEN;      /* this process's number in its program's family */
extern long sm_fork_member SM_HIDDEN; /* taken for the child being forked (atfork) */
bool sm_runtime_in_family(void) SM_HIDDEN;
void sm_choose_output_dir(void) SM_HIDDEN;
void sm_output_settle_alone(void) SM_HIDDEN;
void sm_output_claim_for_job(const sm_procs_t *procs) SM_HIDDEN;
void sm_output_release(void) SM_HIDDEN;
const char *sm_runtime_spill_dir(void) SM_HIDDEN;

/* runtime_fork.c: fork and daemon(). */
void sm_runtime_before_fork(void) SM_HIDDEN;
void sm_runtime_after_fork_parent(void) SM_HIDDEN;
void sm_runtime_after_fork_child(void) SM_HIDDEN;

#endif
