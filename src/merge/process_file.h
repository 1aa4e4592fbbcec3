/* What one process leaves behind when the job cannot finish collectively (a
 * rank that calls MPI_Abort, is killed, or never calls MPI_Finalize): its
 * events in its spill files (<output>/.spill), and a process file
 * <output>/.ranks/rank-<r>.<job>.smp with everything else (<job>: a hash of the
 * job's identity, job.h): definitions, locations,
 * profile, message counts, clock.  sysmeasure-merge turns the files of all
 * ranks into the job's archive and summaries. */
#ifndef SM_PROCESS_FILE_H
#define SM_PROCESS_FILE_H

#include <stdint.h>
#include "../core/clock.h"
#include "../core/config.h"
#include "../core/job.h"
#include "../core/compiler.h"
#include "../core/runtime.h"
#include "image.h"

#define SM_PROCESS_FILE_DIR ".ranks"
/* The most ranks a job's files may claim (2^21: beyond the largest MPI
 * jobs run; a larger count is damage, and the merge sizes tables by it). */
#define SM_PF_MAX_RANKS (1u << 21)

typedef struct sm_process_file {
    char *path;
    uint32_t rank, n_ranks;
    char job[SM_JOB_ID_MAX];    /* the job's identity (job.h) */
    int64_t pid;
    char hostname[64];
    char program[256];
    char reason[256];           /* why the process wrote it */
    int argc;
    char **argv;                /* the program's command line */
    sm_config_t config;         /* the configuration the process ran with */
    char **metadata;            /* declared metadata: key, value, key, value... */
    uint32_t n_metadata2;       /* strings in metadata (twice the pairs) */
    int have_config;
    uint64_t start_realtime_ns, end_realtime_ns;
    uint64_t start_ticks, end_ticks;
    sm_clock_params_t clock;
    uint64_t spills, spilled_bytes, dropped_records, unmatched_leaves;
    uint64_t record_count[SM_REC_KIND_COUNT], record_words[SM_REC_KIND_COUNT];
    void *defs;                 /* serialized definition set */
    uint64_t defs_len;
    void *profile;              /* serialized profile summary (its own ids) */
    uint64_t profile_len;
    void *metrics;              /* sm_metrics_serialize (sampled metrics); NULL: none */
    uint64_t metrics_len;
    uint64_t *matrix_row;       /* n_ranks pairs: messages, bytes sent to each */
    uint32_t n_locations;
    sm_image_location_t *locations;
    char **events;              /* per location: spill file path, or NULL (no events) */
    sm_id_maps_t maps;          /* filled by the merge */
    /* Filled while it is read and merged: */
    uint32_t damaged;           /* damaged parts found (each said in one line) */
    uint64_t live_chunks, live_records, live_cut_bytes; /* recovered: its chunks being
                                                          * written at the kill (sm_spill_report_t) */
} sm_process_file_t;

/* In the ending process, after its locations are closed.  0 or -1 (message
 * printed). */
int sm_process_file_write(const sm_run_info_t *run, const char *reason) SM_HIDDEN;
/* The same without saving the events still in memory first (those spilled
 * during the run are named): the cheap part, written first by a rank that a
 * SIGKILL may cut short while it saves its events; the full file replaces
 * it.  reason says so. */
int sm_process_file_write_first(const sm_run_info_t *run, const char *reason) SM_HIDDEN;
/* The end of such a first file's reason (the merge says so). */
#define SM_PF_EVENTS_CUT SM_END_EVENTS_CUT

/* What the head of a process file says, even when the rest is damaged. */
typedef struct sm_process_file_head {
    int have_head;
    uint32_t rank, n_ranks;
    char job[SM_JOB_ID_MAX];
} sm_process_file_head_t;

/* Removes this process's file again (and .ranks once empty): the job
 * wrote its output together after all. */
void sm_process_file_remove(const sm_run_info_t *run) SM_HIDDEN;

/* The merge tool's side.  NULL with err (one line: the file, what is wrong
 * with it, what is lost); head is filled as far as the file allows. */
sm_process_file_t *sm_process_file_read(const char *path, sm_process_file_head_t *head,
                                        char *err, size_t errlen) SM_HIDDEN;
void sm_process_file_free(sm_process_file_t *f) SM_HIDDEN;
/* Recomputes the length and checksum of a process file held in memory
 * (the fuzz harnesses: crafted files whose checks hold). */
void sm_process_file_fix_checks(uint8_t *data, size_t len) SM_HIDDEN;
/* The file as an image for the OTF2 writer (maps must be filled). */
void sm_process_file_image(sm_process_file_t *f, sm_image_t *img) SM_HIDDEN;

#endif
