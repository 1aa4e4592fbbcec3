/* sysmeasure-merge's work on one output folder: the archive and summaries of
 * a job that could not finish them itself, from the process files its ranks
 * left in FOLDER/.ranks and, for ranks killed without a word (--crash-safe),
 * their crash-safe files in FOLDER/.spill.
 *
 * Every file is placed by the identity in its header (job, host, pid, rank),
 * not by its name: a file found under another process's name is read as
 * its writer's, with one line saying so, or refused when no file holds the
 * events a process file asks for.  Ranks that left nothing are named, with
 * the reason, on stderr, in metadata.json (missing_ranks) and in
 * profile.txt.  After a merge that lost nothing the files it read are
 * removed (opt->keep leaves them). */
#ifndef SM_MERGE_H
#define SM_MERGE_H

#include "../core/compiler.h"

typedef enum { SM_MERGE_OK = 0, SM_MERGE_FAILED = 1, SM_MERGE_USAGE = 2 } sm_merge_status_t;

typedef struct sm_merge_options {
    const char *job; /* --job ID: the job to merge (NULL: the only one) */
    int perfetto;    /* --perfetto: trace.pftrace too */
    int keep;        /* --keep: leave the merged files in .ranks and .spill */
    int live;        /* run by the last process of a job without MPI, at its
                      * end: no closing line of the merge's own (the process
                      * says its own) */
} sm_merge_options_t;

/* Merges the job in folder (an absolute path); every problem is said in
 * one line on stderr.  SM_MERGE_OK when every file read was whole (then the
 * files merged are removed unless opt->keep), SM_MERGE_FAILED otherwise
 * (what could be merged is written). */
sm_merge_status_t sm_merge_folder(const char *folder, const sm_merge_options_t *opt) SM_HIDDEN;

#endif
