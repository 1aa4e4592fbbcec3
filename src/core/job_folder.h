/* The processes of one job without MPI that share an output folder (a
 * launcher's rank and size, job.h: torchrun, srun, mpirun of a program that
 * does not call MPI) end one by one, each on its own, and none may wait for
 * another.  Each leaves its process file for the merge (process_file.h); the
 * last of them to end merges the folder into the job's one archive and
 * profile.  They find the last without talking to each other, through small
 * files in FOLDER/.ranks/<job hash>.job/:
 *
 * - start-<rank>: host, pid and start time of the rank, written at its start,
 *   so that another can tell whether it still runs;
 * - done-<rank>: made after the rank's process file is in place;
 * - a combining tree over the ranks, of files made with O_EXCL (the one
 *   atomic test-and-set that NFS keeps): at each level the two halves of a
 *   node meet at t<level>-<node>; the first to make it stops there, the
 *   second goes up (winning t<level>-<node>.2 first: the first may have gone
 *   up for it already, see below).  Whoever goes past the top level is the
 *   last: every other rank arrived before it.  A rank does O(log P) creates
 *   and reads nothing of the others on that way: no scan, no counter, no
 *   lock, no sleep.
 * - A rank that never arrives (killed) would stop the tree below it for
 *   ever: the first to reach a node checks the other half's ranks that have
 *   no done-<rank> against their start-<rank>.  When every one of them is
 *   gone for certain (same host: pid dead or reused), it goes up for them,
 *   by winning t<level>-<node>.2, which a rank of that half arriving late
 *   then finds taken.  A rank on another host, or one that has not written
 *   its start-<rank> yet, counts as running.
 *
 * The last then knows which ranks have no done-<rank>: those ended without
 * their files (killed), and the folder is left for sysmeasure-merge. */
#ifndef SM_JOB_FOLDER_H
#define SM_JOB_FOLDER_H

#include <stddef.h>
#include <stdint.h>
#include "compiler.h"

/* This process's record start-<rank> in folder (made, with .ranks, if
 * needed).  0, or -1 with errno. */
int sm_job_folder_register(const char *folder, uint32_t rank) SM_HIDDEN;

/* The record goes again (the process joined an MPI job after all, which
 * ends together at MPI_Finalize); the bookkeeping folder and .ranks go when
 * empty. */
void sm_job_folder_unregister(const char *folder, uint32_t rank) SM_HIDDEN;

typedef enum sm_job_folder_end {
    SM_JOB_FOLDER_NOT_LAST, /* another rank goes on: nothing more to do */
    SM_JOB_FOLDER_LAST,     /* every other rank arrived or is gone: see missing */
    SM_JOB_FOLDER_FAILED,   /* the files could not be made (errno): cannot tell */
} sm_job_folder_end_t;

/* After this rank's process file is in place: arrives (above).  For
 * SM_JOB_FOLDER_LAST, *n_missing is the ranks that ended without their
 * files and missing names them ("rank 1 (pid 123 on node7)", ...). */
sm_job_folder_end_t sm_job_folder_arrive(const char *folder, uint32_t rank, uint32_t size,
                                         uint32_t *n_missing, char *missing, size_t len)
    SM_HIDDEN;

/* Whether no other rank of the job has ever started in folder (only this
 * rank's start-<rank> is there): the processes write to folders of their
 * own (`-o out.$RANK`).  At the end of a rank that is not the last (its
 * job's others have not arrived), such a rank writes the folder's outputs
 * for itself (runtime_end.c); should another rank of the job arrive later
 * after all, the tree above makes it the last and its merge, of both,
 * replaces them. */
int sm_job_folder_alone(const char *folder, uint32_t rank) SM_HIDDEN;

/* A family: a program and the processes it starts (fork, exec, Python's
 * multiprocessing), which no launcher numbers.  They share the program's
 * identity (the launcher hands it on, job.h) and its folder, and are
 * numbered here: the program 0, the others 1, 2, ... as they come, each
 * taking the first start-<k> it can make with O_EXCL.  Their number is not
 * known in advance, so at its end each member looks at every member's
 * start-<k> and done-<k>: when all are over (done, or gone for certain),
 * it is the last, confirmed by making `last` with O_EXCL (two that end at
 * once).  O(members) at each end: families are small. */

/* A member other than the program takes the next number, with a record
 * naming the calling process; first the program's own start-0 (named by
 * root_pid) when there is none yet and the program still runs.  The
 * number (1, 2, ...), or -1 with errno: ESRCH when the program has ended
 * without a family (the caller then writes on its own).  An exec'd
 * process finds the record of its forked self (same pid and start time)
 * and keeps that number.  forking: the number is taken by a parent for
 * the child it is about to fork (its record says so until the child names
 * itself, sm_job_folder_claim_number). */
long sm_job_folder_join(const char *folder, long root_pid, int forking) SM_HIDDEN;

/* Member k's record names the calling process now (a forked child, whose
 * number its parent took before the fork). */
void sm_job_folder_claim_number(const char *folder, long k) SM_HIDDEN;

/* Whether the program (member 0) has a family in folder: some process
 * joined it (start-0 is made by the first to join). */
int sm_job_folder_has_family(const char *folder) SM_HIDDEN;

/* At member k's end, after its process file is in place: done-<k>, then
 * whether it is the last of the family (root_pid: the program's pid, for a
 * program that never joined).  For SM_JOB_FOLDER_LAST, *n_members counts
 * the members and missing names those gone without their files. */
sm_job_folder_end_t sm_job_folder_family_end(const char *folder, long k, long root_pid,
                                             uint32_t *n_members, uint32_t *n_missing,
                                             char *missing, size_t len) SM_HIDDEN;

/* Removes the bookkeeping of the job whose identity hashes to job_hash
 * (job.h) from folder: by the last rank before it merges, and by
 * sysmeasure-merge after a merge of the job. */
void sm_job_folder_remove(const char *folder, uint64_t job_hash) SM_HIDDEN;

#endif
