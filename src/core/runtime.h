/* The measurement runtime of one process: brings the event layer up (when
 * SYSMEASURE_ENABLE is set, or when an adapter such as the Kokkos library asks),
 * and at the end (exit from any thread) closes what is open and hands the data
 * to the writers. */
#ifndef SM_RUNTIME_H
#define SM_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "compiler.h"
#include "config.h"
#include "event_record.h"
#include "procs.h"

/* 1 while this process is measured (after init, before finalize). */
extern volatile int sm_runtime_active SM_HIDDEN;

#define SM_RUN_MAX_NOTES 8

/* What the writers need to know about the run. */
typedef struct sm_run_info {
    const sm_config_t *config;
    const char *output_dir;   /* absolute path */
    const char *program;      /* basename of the executable */
    int argc;
    char **argv;              /* the program's command line */
    pid_t pid;
    char hostname[256];
    uint64_t start_realtime_ns; /* wall-clock dates of the run */
    uint64_t end_realtime_ns;
    uint64_t start_time;        /* ticks */
    uint64_t end_time;          /* ticks */
    const char *clock_source;   /* "tsc" or "monotonic" */
    /* Buffer totals over all locations. */
    uint64_t spills;
    uint64_t spilled_bytes;
    uint64_t dropped_records;
    uint64_t unmatched_leaves;
    uint64_t folded_enters;     /* beyond the profile's depth limit */
    /* Events beside enter/leave by record kind (sm_location_t.record_count,
     * .record_words), summed over the job, and the most memory their
     * records take in one process (bytes): for sysmeasure-score. */
    uint64_t record_count[SM_REC_KIND_COUNT];
    uint64_t record_words[SM_REC_KIND_COUNT];
    uint64_t record_bytes_max;
    uint64_t trace_folded_enters; /* beyond the trace's depth limit (counted only) */
    /* The trace stopped before a disk limit (trace_space.h): in how many
     * processes, the first time (s since its process began), why (one
     * line, the reasons of all), and the events counted, not recorded. */
    uint32_t trace_stopped;
    double trace_stop_s;
    uint64_t trace_untraced;
    char trace_stop_reason[640];
    /* The job: this process's rank among n_ranks (0 of 1 without MPI). */
    uint32_t rank;
    uint32_t n_ranks;
    /* Things the user should know about this run's measurement (an adapter
     * could not see part of the program, say): one line each, for the
     * summary's header and metadata.json. */
    const char *notes[SM_RUN_MAX_NOTES];
    uint32_t n_notes;
} sm_run_info_t;

/* The layer that writes what the core measured (src/finalize/live.c, with
 * the merge and the writers): the core reaches it through this one table
 * and includes none of its headers. */
typedef struct sm_end_layer {
    /* Encode the trace during the run: mode 1; 2 also writes it wholly at
     * the end into <output>/otf2-at-end (a check).  Before the first event. */
    void (*trace_during_run)(int mode);
    /* Everything the job writes, collectively over procs; run's totals are
     * summed over the job.  The closing line's MPI share into
     * summary_line.  Returns this process's failures. */
    int (*write_job)(const sm_procs_t *procs, sm_run_info_t *run, char *summary_line,
                     size_t summary_len);
    /* This process's data for sysmeasure-merge (it ends alone, or before
     * waiting in MPI_Finalize): 0, or -1 after one line. */
    int (*save_process)(const sm_run_info_t *run, const char *reason);
    /* ... its cheap part first (definitions, threads, profile, counts:
     * milliseconds), for a job being torn down; the events follow with
     * save_process.  0, or -1 after one line. */
    int (*save_process_first)(const sm_run_info_t *run, const char *reason);
    /* ... removed again: the job wrote its output together after all. */
    void (*remove_process)(const sm_run_info_t *run);
    /* A group of one process (the end of a process on its own). */
    const sm_procs_t *(*single_process)(void);
    /* The last process of a job without MPI (job_folder.h): the job's
     * outputs in folder from the process files its processes left there, as
     * sysmeasure-merge makes them; keep leaves those files.  Its problems are
     * said in one line each; the number of failures. */
    int (*merge_job)(const char *folder, const char *job, bool keep);
} sm_end_layer_t;
extern const sm_end_layer_t sm_end_layer SM_HIDDEN;
/* Appended to the reason of a process file whose events may be cut short
 * (save_process_first, then a kill): sysmeasure-merge says so. */
#define SM_END_EVENTS_CUT "; killed while it saved its events (those in memory then are missing)"


/* Idempotent.  0 when measuring, -1 when the configuration is unusable
 * (message printed). */
int sm_runtime_init(void) SM_HIDDEN;
/* Idempotent.  Writes the output; returns the number of outputs that failed. */
int sm_runtime_finalize(void) SM_HIDDEN;

const sm_config_t *sm_runtime_config(void) SM_HIDDEN;
/* The output folder chosen at init (not created yet perhaps). */
const char *sm_runtime_output_dir(void) SM_HIDDEN;
/* Create the output folder if needed: 0, or -1 with a message in err. */
int sm_runtime_make_output_dir(char *err, size_t errlen) SM_HIDDEN;

/* The processes of the job (set at MPI_Init): finalize becomes collective
 * over them.  NULL: a process on its own. */
void sm_runtime_set_process_group(const sm_procs_t *procs) SM_HIDDEN;
uint32_t sm_runtime_process_count(void) SM_HIDDEN;
/* The job's folder, agreed at MPI_Init; created if needed.  0 or -1. */
int sm_runtime_set_output_dir(const char *dir) SM_HIDDEN;
void sm_runtime_clock_offset(int which, uint64_t local_ns, int64_t offset_ns) SM_HIDDEN;
/* Finalize collectively over the process group (from MPI_Finalize). */
int sm_runtime_finalize_job(void) SM_HIDDEN;
/* Called by MPI_Finalize before any step that waits on other processes:
 * ends the measurement and puts this rank's data on disk (process file and
 * spill files, as for a rank that ends alone), so that a job torn down
 * meanwhile loses nothing; finalize_job then continues.  0 or 1. */
int sm_runtime_save_before_finalize(void) SM_HIDDEN;
/* The end of the run.  reason: why it ends early (NULL: a normal end).
 * how: 0 a call, 1 a signal handler, 2 exit.  The failures, or -2 for a
 * signal handler when another thread writes already. */
int sm_runtime_finalize_as(const char *reason, int how) SM_HIDDEN;
/* For ending.c: the end by signal sig on the calling thread (0), or -1 when
 * another thread writes; a line at rank 0 when a rank ends by a signal
 * inside MPI_Finalize, its data on disk. */
int sm_runtime_finalize_for_signal(int sig) SM_HIDDEN;
/* A terminating signal came (async-signal-safe: from its handler, which
 * hands the end to ending.c's thread): the time a SIGKILL that follows
 * counts from. */
void sm_runtime_signal_arrived(void) SM_HIDDEN;
/* A rank ending by signal sig, its data on disk: in a job that Open MPI
 * tears down, it first waits (bounded) until the other ranks of its node
 * have saved theirs too (runtime_end.c says why). */
void sm_runtime_before_signal_death(int sig) SM_HIDDEN;
void sm_runtime_note_signal_in_finalize(int sig) SM_HIDDEN;
/* The process is about to end abnormally: put what was measured on disk. */
void sm_runtime_emergency_write(const char *reason) SM_HIDDEN;

/* A note for the run's summary (see sm_run_info_t.notes); the text is
 * copied.  Nothing is printed: the caller says it on stderr itself. */
void sm_runtime_add_note(const char *text) SM_HIDDEN;

/* Inside the fork of daemon() (on the forking thread, in its atfork
 * handlers): the child goes on as the measured process, the parent ends. */
bool sm_runtime_forking_daemon(void) SM_HIDDEN;

/* daemon() (the wrapper is ending.c's): the C library's fn, called with
 * the writer thread paused; in the child that goes on, the measurement is
 * carried on (the parent ends inside fn). */
typedef int (*sm_daemon_fn)(int, int);
int sm_runtime_daemon(sm_daemon_fn fn, int nochdir, int noclose) SM_HIDDEN;

/* Suppress the output for a process (fork child, tests of the core). */
void sm_runtime_discard_output(void) SM_HIDDEN;

/* sm_runtime_init without SYSMEASURE_ENABLE: for a tool library that the
 * program loads itself (KokkosP), with no launcher.  An explicit
 * SYSMEASURE_ENABLE=no still keeps the process unmeasured (-1). */
int sm_runtime_init_forced(void) SM_HIDDEN;

/* Key/value pairs the program declared (Kokkos metadata), for
 * metadata.json; a key set again keeps its place and takes the new value. */
void sm_runtime_metadata_set(const char *key, const char *value) SM_HIDDEN;
uint32_t sm_runtime_metadata_count(void) SM_HIDDEN;
/* Pair i; the strings stay valid until the process ends.  0 or -1. */
int sm_runtime_metadata_get(uint32_t i, const char **key, const char **value) SM_HIDDEN;

#endif
