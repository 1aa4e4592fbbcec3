/* One writer per output folder.
 *
 * A process that will write an output folder the user named first claims
 * it: a small record, <folder>/.sysmeasure.lock, names the writer (job id,
 * host, pid and the pid's start time, so that a reused pid is not taken for
 * the writer).  Another process that finds a live writer there never touches
 * the folder's files; the caller gives it a sub-folder of its own.  A record
 * whose process is gone (same host, pid dead or started at another time) is
 * stale and taken over without a word.  The record goes when its writer has
 * written everything.
 *
 * The record is written whole under a private name and then hard-linked to
 * its place (link fails when the name exists, atomically, NFS included), so
 * a reader never sees half a record. */
#ifndef SM_FOLDER_CLAIM_H
#define SM_FOLDER_CLAIM_H

#include <stddef.h>
#include "compiler.h"

#define SM_CLAIM_FILE ".sysmeasure.lock"

typedef enum sm_claim {
    SM_CLAIM_OURS,      /* the record names this process: it writes the folder */
    SM_CLAIM_TAKEN,     /* another live writer holds it (described in `holder`) */
    SM_CLAIM_UNCHECKED, /* no record could be made (folder missing, unwritable, full):
                         * the writes that follow fail and say so themselves */
} sm_claim_t;

typedef enum sm_claim_mode {
    SM_CLAIM_PROCESS, /* for this process alone */
    SM_CLAIM_JOB,     /* for the job (rank 0 of an MPI job): a record left by
                       * another process of the same job id is the job's own */
    SM_CLAIM_JOIN,    /* as one of a job's processes without MPI (job_folder.h):
                       * a record of the same job id, left by whichever of them
                       * came first, is the job's and stays as it is */
} sm_claim_mode_t;

/* Claims folder dir (it must exist).  holder gets, for SM_CLAIM_TAKEN, words
 * naming the other writer ("pid 123 on node7, job ompi-..."). */
sm_claim_t sm_folder_claim(const char *dir, sm_claim_mode_t mode, char *holder, size_t len)
    SM_HIDDEN;

/* Removes dir's record when it names this process (after the last write). */
void sm_folder_release(const char *dir) SM_HIDDEN;
/* Removes dir's record when it names this process's job, whichever of its
 * processes placed it (the last of a job without MPI, job_folder.h). */
void sm_folder_release_job(const char *dir) SM_HIDDEN;

/* A process as records name it: host, pid and the pid's start time. */
#define SM_CLAIM_HOST 256
typedef struct sm_claim_who {
    char job[128];
    char host[SM_CLAIM_HOST];
    long pid;
    unsigned long long start; /* the pid's start time (clock ticks after boot); 0: unknown */
} sm_claim_who_t;

/* This process (job, host, pid, start time). */
void sm_claim_self(sm_claim_who_t *me) SM_HIDDEN;
/* Process pid of this host as records name it (this process's job): 0, or
 * -1 when there is no such live process. */
int sm_claim_of_pid(long pid, sm_claim_who_t *w) SM_HIDDEN;
/* Whether dir's record names this process's job (whichever of its
 * processes placed it, alive or not). */
int sm_folder_claimed_by_job(const char *dir) SM_HIDDEN;
/* Whether process w (host, pid, start) is gone for certain: on this host,
 * its pid dead, a zombie, or given to another process since.  A process of
 * another host cannot be checked: not gone. */
int sm_claim_gone(const sm_claim_who_t *w) SM_HIDDEN;

#endif
