/* The end of the measurement of one process: a call (MPI_Finalize, a
 * library's end), exit, a fatal signal, a job torn down; the output
 * written, or a rank's process file for sysmeasure-merge (see runtime.h). */
#define _GNU_SOURCE
#include "runtime_private.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "buffer.h"
#include "clock.h"
#include "ending.h"
#include "events.h"
#include "folder_claim.h"
#include "job.h"
#include "job_folder.h"
#include "journal.h"
#include "location.h"
#include "sampler.h"
#include "subsystem.h"
#include "trace_space.h"
#include "sig_hold.h"
#include "window.h"
#include "../util/fs.h"
#include "../util/log.h"

/* ---------------------------------------------------------------- the end */

static int sm_runtime_finalized;
static int sm_finalizing_job;          /* finalize runs collectively (MPI_Finalize) */
static char sm_end_reason[128];        /* why the process ends early, when it does */
static bool sm_runtime_data_saved;   /* this rank's process file is written */
static uint64_t sm_signal_arrival_ns; /* a fatal signal came (monotonic); 0: none */

int sm_runtime_finalize_job(void)
{
    sm_finalizing_job = 1;
    return sm_runtime_finalize_as(NULL, 0);
}

void sm_runtime_emergency_write(const char *reason)
{
    sm_runtime_finalize_as(reason ? reason : "abnormal end", 0);
}

/* ---------------------------------------------------------------- fatal signals */

void sm_runtime_signal_arrived(void)
{
    uint64_t none = 0;
    __atomic_compare_exchange_n(&sm_signal_arrival_ns, &none, sm_clock_monotonic_ns(), false,
                                __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

/* A signal ends the process (ending.c calls this on its ending thread, or
 * on the thread the signal landed on when that thread cannot return): the
 * output of a process on its own, or the process file of a rank.  0, or -1
 * when another thread writes already. */
int sm_runtime_finalize_for_signal(int sig)
{
    sm_runtime_signal_arrived();
    char reason[sizeof sm_end_reason];
    snprintf(reason, sizeof reason, "signal %d (%s)", sig, strsignal(sig));
    return sm_runtime_finalize_as(reason, 1) == -2 ? -1 : 0;
}

/* ---------------------------------------------------------------- a job torn down */

/* Open MPI tears a job down with SIGTERM to every rank and SIGKILL
 * odls_base_sigkill_timeout seconds later (1) -- but its daemon's sleep
 * between the two is cut short when one of its ranks exits: the first rank
 * of a node to end has every other rank of the node that is still writing
 * its data killed at once (on a loaded node, most ranks lost theirs).  So a rank
 * whose data is on disk, ending by such a signal, waits before it dies
 * until each rank of its node has saved its own, at most that timeout from
 * the signal's arrival (the SIGKILL comes then anyway).  A rank says that
 * its data is saved by a name in the node's abstract socket namespace,
 * which it holds until it dies: no file to leave behind, and the others
 * look only at their own node's names. */

static long sm_env_long(const char *name, long fallback);

static void sm_runtime_saved_name(struct sockaddr_un *a, socklen_t *len, long local_rank)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    /* Abstract (a leading NUL), per user, job and local rank. */
    int n = snprintf(a->sun_path + 1, sizeof a->sun_path - 1, "sysmeasure-saved-%u-%016llx-%ld",
                     (unsigned)getuid(), (unsigned long long)sm_job_hash(), local_rank);
    *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

/* Whether the rank of this node with local_rank has said it saved. */
static bool sm_runtime_saved_on_node(long local_rank)
{
    struct sockaddr_un a;
    socklen_t len;
    sm_runtime_saved_name(&a, &len, local_rank);
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    bool saved = fd >= 0 && connect(fd, (struct sockaddr *)&a, len) == 0;
    if (fd >= 0)
        close(fd);
    return saved;
}

/* This rank's data is on disk: said to the node (Open MPI, more than one
 * rank on the node), once. */
static void sm_runtime_say_saved(void)
{
    static bool said;
    sm_runtime_data_saved = true;
    long local = sm_env_long("OMPI_COMM_WORLD_LOCAL_SIZE", 0);
    long me = sm_env_long("OMPI_COMM_WORLD_LOCAL_RANK", -1);
    if (said || !sm_procs || local < 2 || me < 0 || me >= local)
        return;
    said = true;
    int saved_errno = errno;
    struct sockaddr_un a;
    socklen_t len;
    sm_runtime_saved_name(&a, &len, me);
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, len) != 0)
        close(fd);
    /* (else kept open until the process ends) */
    errno = saved_errno;
}

void sm_runtime_before_signal_death(int sig)
{
    if (!sm_procs || !sm_runtime_data_saved || (sig != SIGTERM && sig != SIGINT && sig != SIGHUP))
        return;
    long local = sm_env_long("OMPI_COMM_WORLD_LOCAL_SIZE", 0);
    long me = sm_env_long("OMPI_COMM_WORLD_LOCAL_RANK", -1);
    if (local < 2 || me < 0 || me >= local)
        return; /* not Open MPI, or alone on the node */
    int saved_errno = errno;
    uint64_t start = sm_signal_arrival_ns ? sm_signal_arrival_ns : sm_clock_monotonic_ns();
    uint64_t limit = (uint64_t)sm_env_long("OMPI_MCA_odls_base_sigkill_timeout", 1) * 1000000000u;
    long next = 0; /* the ranks below it said so */
    while (sm_clock_monotonic_ns() - start < limit) {
        while (next < local && (next == me || sm_runtime_saved_on_node(next)))
            next++;
        if (next == local)
            break;
        struct timespec ms = {0, 10000000};
        nanosleep(&ms, NULL);
    }
    errno = saved_errno;
}

/* A rank whose data is on disk ends by a signal inside MPI_Finalize (the
 * job is being torn down): rank 0 says where the data is. */
void sm_runtime_note_signal_in_finalize(int sig)
{
    if (sm_run.rank != 0)
        return;
    char line[PATH_MAX * 2 + 256];
    int n = snprintf(line, sizeof line,
                     "sysmeasure: rank 0 ended by signal %d inside MPI_Finalize; each rank's data "
                     "is in %s; after the job, run: sysmeasure-merge %s\n",
                     sig, sm_outdir, sm_outdir);
    if (n > 0 && write(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1) < 0)
        return;
}

/* ---------------------------------------------------------------- finalize */

/* An integer (0 or more) from the environment, or fallback. */
static long sm_env_long(const char *name, long fallback)
{
    const char *v = getenv(name);
    char *end;
    long n = v ? strtol(v, &end, 10) : 0;
    return v && end != v && *end == '\0' && n >= 0 ? n : fallback;
}

/* The first step of every end: claim the write, close every thread's open
 * regions at the end time.  0: this thread writes; 1: nothing to write (not
 * measured, or a forked child); 2: another thread writes. */
static int sm_runtime_begin_end(const char *reason)
{
    if (!sm_runtime_active)
        return 1;
    if (sm_ending_begin_write() != 0)
        return 2;
    pthread_mutex_lock(&sm_runtime_lock);
    sm_runtime_finalized = 1;
    if (reason)
        snprintf(sm_end_reason, sizeof sm_end_reason, "%s", reason);
    uint64_t end = sm_clock_now();
    sm_run.end_time = end;
    sm_run.end_realtime_ns = sm_clock_realtime_at_init_ns() +
                             (sm_clock_monotonic_ns() - sm_clock_monotonic_at_init_ns());
    sm_runtime_active = 0; /* threads that appear from now on are not measured */
    pthread_mutex_unlock(&sm_runtime_lock);
    /* No sample of our own finalize; the samplers' last values now. */
    sm_subsystems_stop();
    sm_samplers_stop();
    uint64_t sampler_cpu = sm_samplers_cpu_ns();
    if (sampler_cpu) { /* the sampler thread's own cost, for bench/ */
        char text[32];
        snprintf(text, sizeof text, "%llu", (unsigned long long)sampler_cpu);
        sm_runtime_metadata_set("sampler_thread_cpu_ns", text);
    }

    if (!sm_runtime_discard)
        sm_subsystems_flush(&sm_run);

    /* Threads still running see `closed` and record nothing more. */
    uint32_t n = sm_location_count();
    for (uint32_t i = 0; i < n; i++) {
        sm_location_t *loc = sm_location_get(i);
        sm_location_close(loc, end);
        sm_run.spills += loc->buffer.spills;
        sm_run.spilled_bytes += loc->buffer.spilled_bytes;
        sm_run.dropped_records += loc->buffer.dropped_records;
        sm_run.unmatched_leaves += loc->unmatched_leaves;
        sm_run.folded_enters += loc->profile.folded_enters;
        for (int k = 0; k < SM_REC_KIND_COUNT; k++) {
            sm_run.record_count[k] += loc->record_count[k];
            sm_run.record_words[k] += loc->record_words[k];
        }
        sm_run.trace_folded_enters += loc->deep_enters;
        sm_run.trace_untraced += sm_buffer_untraced(loc);
    }
    if (sm_run.trace_folded_enters && !sm_runtime_discard) {
        char note[300];
        snprintf(note, sizeof note, "trace depth limit: %llu region enters deeper than %u "
                 "levels (SYSMEASURE_TRACE_DEPTH) counted, not recorded; as many leaves were "
                 "matched to them by that count", (unsigned long long)sm_run.trace_folded_enters,
                 sm_trace_max_depth);
        sm_runtime_add_note(note);
        sm_warning("%s", note);
    }
    sm_run.record_bytes_max = sm_record_count_bytes(sm_run.record_count, sm_run.record_words);
    if (sm_run.folded_enters && !sm_runtime_discard) {
        char note[256];
        snprintf(note, sizeof note, "profile depth limit: %llu region enters deeper than %u "
                 "levels (SYSMEASURE_PROFILE_DEPTH) folded into their ancestor at that depth",
                 (unsigned long long)sm_run.folded_enters, sm_profile_max_depth);
        sm_runtime_add_note(note);
        sm_warning("%s", note);
    }
    if (!sm_runtime_discard)
        sm_clock_finish();
    return 0;
}

/* This rank's process file (and its events in the spill files), written
 * without waiting for any other process.  0, or 1 (message printed). */
static char sm_job_summary_line[320]; /* the closing line's MPI share */

static int sm_runtime_write_rank_file(const char *reason)
{
    char err[PATH_MAX + 256];
    int rc = sm_runtime_make_output_dir(err, sizeof err);
    if (rc != 0) {
        sm_error("%s; rank %u wrote nothing", err, (unsigned)sm_run.rank);
        return 1;
    }
    sm_log_step(NULL);
    if (sm_signal_arrival_ns) {
        /* The job is torn down: a SIGKILL may come before the events are
         * saved (Open MPI's comes 1 s after its SIGTERM).  The cheap part
         * first (definitions, threads, profile, counts: milliseconds), so
         * that the profile stays whatever happens to the events. */
        char first[sizeof sm_end_reason + sizeof SM_END_EVENTS_CUT];
        snprintf(first, sizeof first, "%s" SM_END_EVENTS_CUT, reason);
        (void)sm_end_layer.save_process_first(&sm_run, first);
        sm_log_step("this rank's profile and definitions");
    }
    rc = sm_end_layer.save_process(&sm_run, reason);
    sm_log_step("this rank's events and process file");
    return rc != 0;
}

/* A trace stopped before a disk limit (trace_space.h): the process file has
 * no notes; its declared metadata, which sysmeasure-merge puts in
 * metadata.json, says it. */
static void sm_runtime_trace_stop_for_file(void)
{
    if (!sm_space_stopped())
        return;
    char reason[300], note[1200];
    sm_space_reason_words(sm_space_reason(), reason, sizeof reason);
    sm_space_note(note, sizeof note, (double)sm_space_stop_ns() / 1e9, reason,
                  sm_run.trace_untraced, 1, 1);
    sm_runtime_metadata_set("trace_stopped", note);
}

/* The end of a process that shares the folder with the other processes of
 * its job without MPI (SM_OUTDIR_SHARED: rank sm_run.rank of a launcher's
 * job) or of its program's family (member `member`, the program 0): its
 * process file, like a rank that leaves MPI without MPI_Finalize; then the
 * bookkeeping (job_folder.h) says whether it is the last of them to end.
 * The last merges the folder into the job's outputs as sysmeasure-merge
 * would, or, when a process ended without its files (killed), leaves the
 * files with one line that says how to merge them.  The failures. */
static int sm_runtime_end_shared(bool family, long member)
{
    const sm_job_launch_t *l = sm_job_launch();
    char why[sizeof sm_end_reason + 600], whose[400];
    if (family) {
        sm_runtime_set_rank((uint32_t)member, (uint32_t)member + 1);
        snprintf(whose, sizeof whose, "the program (pid %d) and the processes it started",
                 (int)sm_cfg.launched_pid);
    } else {
        snprintf(whose, sizeof whose, "the %s job", l->name);
    }
    snprintf(why, sizeof why, "%s; process %u of %s", sm_end_reason[0] ? sm_end_reason : "exit",
             (unsigned)sm_run.rank, whose);
    sm_runtime_trace_stop_for_file();
    if (sm_runtime_write_rank_file(why) != 0)
        return 1; /* said; the others find this process gone without its files */
    uint32_t n = sm_run.n_ranks, n_missing = 0;
    char missing[1024];
    sm_job_folder_end_t end =
        family ? sm_job_folder_family_end(sm_outdir, member, sm_cfg.launched_pid, &n, &n_missing,
                                          missing, sizeof missing)
               : sm_job_folder_arrive(sm_outdir, sm_run.rank, sm_run.n_ranks, &n_missing, missing,
                                      sizeof missing);
    if (end == SM_JOB_FOLDER_NOT_LAST && !family && sm_job_folder_alone(sm_outdir, sm_run.rank)) {
        /* A folder of its own: its outputs now, from its process file,
         * which stays (with the bookkeeping) for a late arrival's merge. */
        sm_log_step(NULL);
        int failures = sm_end_layer.merge_job(sm_outdir, sm_job_id(), true);
        sm_log_step("the process's outputs from its files");
        if (!failures) /* (a failed merge said why) */
            sm_info(0, "process %u of %s (%u processes) is the only one in %s: output for "
                    "it alone there; its files for sysmeasure-merge stay in %s/.ranks",
                    (unsigned)sm_run.rank, whose, (unsigned)n, sm_outdir, sm_outdir);
        sm_folder_release_job(sm_outbase);
        return failures;
    }
    if (end == SM_JOB_FOLDER_NOT_LAST) {
        sm_info(1, "process %u of %s: its data is in %s; the last of them to end writes the "
                "outputs", (unsigned)sm_run.rank, whose, sm_outdir);
        return 0;
    }
    if (end == SM_JOB_FOLDER_FAILED) {
        sm_warning("process %u of %s cannot tell whether it ends last (%s/.ranks: %s): its data "
                   "is in %s; after the job, run `sysmeasure-merge %s` to make one archive",
                   (unsigned)sm_run.rank, whose, sm_outdir, sm_fs_why(errno), sm_outdir,
                   sm_outdir);
        return 1;
    }
    if (n_missing) {
        uint32_t wrote = n - n_missing;
        sm_warning("%u process%s wrote %s; run `sysmeasure-merge %s` to make one archive "
                   "(%u of the %u processes of %s ended without writing their files: %s)",
                   (unsigned)wrote, wrote == 1 ? "" : "es", sm_outdir, sm_outdir,
                   (unsigned)n_missing, (unsigned)n, whose, missing);
        sm_folder_release_job(sm_outbase);
        return 0;
    }
    /* Every process's files are in place and none of them writes any more. */
    sm_job_folder_remove(sm_outdir, sm_job_hash());
    sm_log_step(NULL);
    int failures = sm_end_layer.merge_job(sm_outdir, sm_job_id(), sm_cfg.keep_process_files);
    sm_log_step("the job's outputs from its processes' files");
    if (!failures && family)
        sm_info(0, "%u processes measured (%s); output in %s", (unsigned)n, whose, sm_outdir);
    else if (!failures)
        sm_info(0, "%u processes of %s measured; output in %s", (unsigned)n, whose, sm_outdir);
    sm_folder_release_job(sm_outbase);
    return failures;
}

static int sm_runtime_rank_file_saved; /* written at the start of MPI_Finalize */
static int sm_runtime_presaved;        /* the end began there */

/* The end of the write: signals held since its start are delivered now
 * (one that ends the process is held by ending.c until the write is over,
 * then ends it). */
static void sm_runtime_end_write(bool at_exit)
{
    sm_sig_release();
    sm_ending_end_write(at_exit);
}

/* The end of a --dormant run, which writes nothing itself: the folder is
 * given back, and removed when no window wrote into it. */
static void sm_runtime_dormant_end(void)
{
    if (!sm_cfg.dormant)
        return;
    sm_output_release();
    (void)rmdir(sm_outdir); /* (only when empty: the last process's) */
}

int sm_runtime_save_before_finalize(void)
{
    if (!sm_procs)
        return 0;
    if (sm_cfg.dormant || sm_cfg.control)
        sm_window_at_end();
    /* No handler of the program may jump out of the write, and a file
     * size limit fails our writes, not the program (sig_hold.h). */
    sm_sig_hold(SM_SIG_END_WRITE);
    int began = sm_runtime_begin_end(NULL);
    if (began != 0) {
        sm_sig_release();
        return 0;
    }
    sm_finalizing_job = 1;
    sm_runtime_presaved = 1;
    if (sm_runtime_discard) {
        sm_runtime_dormant_end();
        sm_runtime_end_write(false);
        return 0;
    }
    /* Should the job be torn down while this rank waits for the others,
     * its data is on disk already, for sysmeasure-merge. */
    int rc = sm_runtime_write_rank_file("ended inside MPI_Finalize (the job was torn down)");
    sm_runtime_rank_file_saved = rc == 0;
    if (rc == 0)
        sm_runtime_say_saved();
    sm_sig_release();
    sm_ending_saved();
    return rc;
}

/* The rank file written at the start of MPI_Finalize is not needed once the
 * job wrote everything together. */
static void sm_runtime_remove_rank_file(void)
{
    sm_end_layer.remove_process(&sm_run);
}

int sm_runtime_finalize(void)
{
    return sm_runtime_finalize_as(NULL, 0);
}

/* how: 0 a call (MPI_Finalize, MPI_Abort, a library's end), 1 a signal
 * handler, 2 exit.  Returns the failures, or -2 when another thread writes
 * (a signal handler then waits for it). */
int sm_runtime_finalize_as(const char *reason, int how)
{
    int saved_errno = errno;
    if ((sm_cfg.dormant || sm_cfg.control) && how != 1 && sm_runtime_active)
        sm_window_at_end(); /* (a window still open is written first) */
    /* No handler of the program may jump out of the write, and a file size
     * limit fails our writes, not the program (sig_hold.h). */
    sm_sig_hold(SM_SIG_END_WRITE);
    if (!(sm_finalizing_job && sm_runtime_presaved && sm_ending_phase() == SM_END_SAVED &&
          sm_ending_writer_is_self())) {
        int began = sm_runtime_begin_end(reason);
        if (began != 0)
            sm_sig_release();
        if (began == 1) {
            errno = saved_errno;
            return 0;
        }
        if (began == 2) {
            errno = saved_errno;
            if (how == 1)
                return -2;
            /* Another thread writes (exit from two threads, MPI_Finalize on
             * another thread): the end waits for it, unless it is this very
             * thread (an exit from inside the write). */
            if (!sm_ending_writer_is_self())
                sm_ending_wait_done();
            return 0;
        }
    }
    bool at_exit = how == 2;
    if (sm_runtime_discard) {
        sm_runtime_dormant_end();
        sm_runtime_end_write(at_exit);
        errno = saved_errno;
        return 0;
    }
    sm_clock_finish();
    sm_subsystems_end(); /* (call-stack samples' times need the calibrated clock) */

    /* Collective only from MPI_Finalize.  A rank that ends otherwise (exit
     * without it, MPI_Abort, a signal) is not in step with the others: it
     * leaves a process file for sysmeasure-merge. */
    if (sm_procs && !sm_finalizing_job) {
        const char *why = sm_end_reason[0] ? sm_end_reason : "exit without MPI_Finalize";
        sm_runtime_trace_stop_for_file();
        int rc = sm_runtime_write_rank_file(why);
        if (rc == 0)
            sm_runtime_say_saved();
        if (rc == 0 && sm_run.rank == 0)
            sm_warning("rank 0 ended without MPI_Finalize (%s): each rank left its data in %s; "
                       "after the job, run: sysmeasure-merge %s", why, sm_outdir, sm_outdir);
        sm_runtime_end_write(at_exit);
        errno = saved_errno;
        return rc;
    }
    bool family = sm_outdir_claim == SM_OUTDIR_FAMILY ||
                  (sm_outdir_claim == SM_OUTDIR_HELD && sm_runtime_in_family() &&
                   sm_cfg.launched_pid == getpid() && sm_job_folder_has_family(sm_outbase));
    if (!sm_procs && (sm_outdir_claim == SM_OUTDIR_SHARED || family)) {
        int rc = sm_runtime_end_shared(family, family ? (sm_member > 0 ? sm_member : 0) : 0);
        sm_runtime_end_write(at_exit);
        errno = saved_errno;
        return rc;
    }
    const sm_procs_t *procs = sm_procs && sm_finalizing_job ? sm_procs : sm_end_layer.single_process();
    sm_run.rank = procs->rank;
    sm_run.n_ranks = procs->size;
    uint32_t n = sm_location_count();

    int failures = 0;
    char err[PATH_MAX + 256];
    if (!sm_procs)
        sm_output_settle_alone();
    if (sm_runtime_make_output_dir(err, sizeof err) != 0) {
        sm_error("%s; no output written", err);
        if (procs->size == 1) {
            sm_output_release();
            sm_runtime_end_write(at_exit);
            errno = saved_errno;
            return 1;
        }
        failures++; /* still take part: the other processes wait for this one */
    }
    failures += sm_end_layer.write_job(procs, &sm_run, sm_job_summary_line, sizeof sm_job_summary_line);

    /* Spill files go only when every process wrote everything. */
    uint64_t job_failures = (uint64_t)failures;
    if (procs->allreduce_sum_u64(procs->ctx, &job_failures, 1) != 0) {
        sm_error("rank %u could not learn whether the other ranks wrote their part; spill "
                 "files, if any, are kept in %s/.spill", (unsigned)procs->rank, sm_outdir);
        job_failures = 1;
    }
    if (job_failures == 0) {
        if (sm_runtime_rank_file_saved)
            sm_runtime_remove_rank_file();
        /* Buffer memory stays: a thread that is still running may be
         * finishing an append, and the process is ending anyway. */
        for (uint32_t i = 0; i < n; i++)
            sm_buffer_remove_spill(sm_location_get(i));
        sm_buffers_crash_safe_done();
        sm_journal_done();
        char spill[PATH_MAX + 8];
        snprintf(spill, sizeof spill, "%s/.spill", sm_outdir);
        sm_fs_rmdir_own(spill); /* only our own, empty */
        if (procs->rank == 0) {
            if (sm_run.dropped_records)
                sm_warning("%llu events were lost (spill failed); see metadata.json",
                           (unsigned long long)sm_run.dropped_records);
            if (procs->size > 1) {
                sm_info(0, "%u ranks measured%s; output in %s", (unsigned)procs->size,
                        sm_job_summary_line, sm_outdir);
            } else {
                uint32_t threads = 0; /* CPU threads: not metric locations (samplers) */
                for (uint32_t i = 0; i < n; i++)
                    threads += sm_location_get(i)->type == SM_LOCATION_CPU_THREAD;
                sm_info(0, "%u thread%s measured, output in %s", threads, threads == 1 ? "" : "s",
                        sm_outdir);
            }
        }
    } else if (failures) {
        sm_error("%d of the outputs in %s could not be written (see above); spill files, if "
                 "any, are kept in %s/.spill%s", failures, sm_outdir, sm_outdir,
                 sm_runtime_rank_file_saved ? ", and the rank files in .ranks for "
                                              "sysmeasure-merge" : "");
    }
    /* Every process of the job has written its part (the sum above): the
     * folder is free for the next writer. */
    sm_output_release();
    sm_runtime_end_write(at_exit);
    errno = saved_errno;
    return failures;
}
