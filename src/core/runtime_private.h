/* What the files of the runtime share (runtime.c and runtime_*.c; the rest
 * of the core includes runtime.h): the state of the run, set up at its
 * start, and each file's functions the others use. */
#ifndef SM_RUNTIME_PRIVATE_H
#define SM_RUNTIME_PRIVATE_H

#include <limits.h>
#include <pthread.h>

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

/* runtime_output.c: the output folder. */
void sm_choose_output_dir(void) SM_HIDDEN;
void sm_output_settle_alone(void) SM_HIDDEN;
void sm_output_claim_for_job(const sm_procs_t *procs) SM_HIDDEN;
void sm_output_release(void) SM_HIDDEN;
const char *sm_runtime_spill_dir(void) SM_HIDDEN;

/* runtime_fork.c: fork and daemon(). */
void sm_runtime_after_fork_child(void) SM_HIDDEN;

#endif
