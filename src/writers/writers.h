/* Output writers.  Each reads the event layer (locations, buffers), the job's
 * unified definitions and the job's profile summary, and writes one format
 * into the job's output folder.  Each returns 0, or -1 after printing one
 * line naming the file and the problem (for example a full disk).
 *
 * The OTF2 writer runs on every process (collectively: one archive, each
 * process writes its own locations); the summary writers run on rank 0 only. */
#ifndef SM_WRITERS_H
#define SM_WRITERS_H

#include "../core/compiler.h"
#include "../core/runtime.h"
#include "../core/procs.h"
#include "../merge/profile_summary.h"
#include "../merge/unify.h"
#include "../util/fs.h"
#include "../util/json.h"

/* One process of the job as rank 0 reports it (metadata, system tree). */
typedef struct sm_job_process {
    uint32_t rank;
    int64_t pid;
    char hostname[64];
} sm_job_process_t;

/* One sender-receiver pair of the point-to-point communication matrix
 * (world ranks) with what it moved. */
typedef struct sm_comm_pair {
    uint32_t sender, receiver;
    uint64_t messages, bytes;
} sm_comm_pair_t;

/* What every writer needs to know about the job beyond this process. */
typedef struct sm_job {
    const sm_procs_t *procs;   /* rank, size and the transport */
    uint32_t n_ranks;          /* ranks of the job: procs->size, or the processes
                                * sysmeasure-merge reads (0: procs->size) */
    const sm_defset_t *defs;   /* unified definitions */
    const sm_id_maps_t *maps;  /* this process's ids -> defs */
    /* Rank 0 only: every process, in rank order (n = procs->size). */
    const sm_job_process_t *processes;
    /* sysmeasure-merge: per rank, why it has no data (NULL: it has; the
     * array NULL: every rank has).  Such a rank is listed as missing, with
     * the reason, never as a process. */
    const char *const *missing;
    /* Rank 0 only: the point-to-point communication matrix as its pairs
     * that moved something, ordered by sender then receiver (world ranks):
     * its size is that of the pairs that talk, never P x P (issue 29).
     * NULL and 0 without messages. */
    const sm_comm_pair_t *matrix_pairs;
    uint64_t matrix_pairs_n;
    /* Rank 0 only: every process's named metrics (sm_metrics_serialize),
     * gathered as sm_tree_gather gives them; NULL: this process's alone. */
    const void *metrics;
    uint64_t metrics_len;
    /* Rank 0's locations for metadata.json: NULL for this process's own
     * (a live end), else rank 0's image (sysmeasure-merge). */
    const struct sm_image *rank0_image;
} sm_job_t;

/* traces.otf2, traces.def, traces/ : one archive, one event file per location.
 * sm_otf2_write writes this process's part; sm_otf2_write_images the parts
 * of several processes from one (sysmeasure-merge). */
int sm_otf2_write(const sm_run_info_t *run, const sm_job_t *job) SM_HIDDEN;
/* Encode the OTF2 event files during the run (otf2/background.c, issue 13):
 * mode 1; 2 also writes the archive wholly at the end into
 * <output>/otf2-at-end (tests); 0 off.  Before the first event. */
void sm_otf2_background(int mode) SM_HIDDEN;
struct sm_image;
int sm_otf2_write_images(const sm_run_info_t *run, const sm_job_t *job,
                         const struct sm_image *imgs, uint32_t n_imgs) SM_HIDDEN;

/* profile.txt: per-thread call-path table, then the same paths across
 * threads and across ranks; the MPI section and the communication matrix. */
int sm_profile_write_text(const sm_run_info_t *run, const sm_job_t *job,
                          const sm_profile_summary_t *summary) SM_HIDDEN;

/* profile.json (and profile.csv): the same numbers, machine-readable. */
int sm_profile_write_json(const sm_run_info_t *run, const sm_job_t *job,
                          const sm_profile_summary_t *summary) SM_HIDDEN;
int sm_profile_write_csv(const sm_run_info_t *run, const sm_job_t *job,
                         const sm_profile_summary_t *summary) SM_HIDDEN;

/* comm_matrix.csv / .json: the communication matrix of job (nothing when it
 * has none). */
int sm_comm_matrix_write(const sm_run_info_t *run, const sm_job_t *job) SM_HIDDEN;

/* metadata.json: command line, configuration, hosts, ranks, pids, version,
 * dates, threads. */
int sm_metadata_write_json(const sm_run_info_t *run, const sm_job_t *job) SM_HIDDEN;

/* report.html in dir, from the folder's metadata.json, profile.json and
 * timeline.json (so that sysmeasure-report can rebuild it from any output
 * folder), read as how allows: SM_FS_INPUT_OWN at the end of a run and in
 * sysmeasure-merge (only the files this process wrote: a writer never
 * reads back what it did not write), SM_FS_INPUT_FOUND in
 * sysmeasure-report.  Every number that sizes or indexes the page is
 * checked first.  0; -1 after one line naming the problem (a full disk);
 * SM_REPORT_NOT_OUTPUT with the problem in err, not printed, when dir holds
 * no sysmeasure output or its files are damaged or refused. */
#define SM_REPORT_NOT_OUTPUT (-2)
int sm_report_write_html(const char *dir, sm_fs_input_t how, char *err, size_t errlen) SM_HIDDEN;
/* The same, comparing dir's run (B) with the run in other (A): the page
 * gets a section of what changed, and the comparison goes to text as
 * text (NULL: not).  Also SM_REPORT_NOT_OUTPUT (err naming the folder)
 * when other holds no profile.json of sysmeasure. */
int sm_report_write_compare(const char *dir, const char *other, FILE *text, char *err,
                            size_t errlen) SM_HIDDEN;

/* The "buffers" object (budget, chunk size, spills, dropped events) and
 * "unmatched_leaves", shared by profile.json and metadata.json. */
void sm_json_run_totals(sm_json_t *j, const sm_run_info_t *run) SM_HIDDEN;

#endif
