/* Bring-up and shutdown of the measurement of one process. */
#define _GNU_SOURCE
#include "runtime.h"
#include "job.h"
#include "journal.h"
#include "folder_claim.h"
#include "job_folder.h"
#include "adapter_load.h"

#include <sched.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "buffer.h"
#include "clock.h"
#include "cpus.h"
#include "definitions.h"
#include "ending.h"
#include "events.h"
#include "location.h"
#include "metrics.h"
#include "region_filter.h"
#include "sampler.h"
#include "subsystem.h"
#include "trace_space.h"
#include "sig_hold.h"
#include "../util/fs.h"
#include "../util/log.h"
#include "../util/grow.h"

extern char **environ;

volatile int sm_runtime_active;

/* Recursive: a signal handler that ends the process may interrupt a thread
 * holding it (creating the output folder) and take it again. */
static int sm_otf2_background_wanted(void);
static pthread_mutex_t sm_runtime_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static int sm_runtime_initialized, sm_runtime_finalized, sm_runtime_discard;
static sm_config_t sm_cfg;
static char sm_outdir[PATH_MAX];
static int sm_outdir_made;
static char sm_program[256];
static sm_run_info_t sm_run;
static int sm_saved_argc;
static const sm_procs_t *sm_procs;     /* the job's processes; NULL: on our own */
static int sm_finalizing_job;          /* finalize runs collectively (MPI_Finalize) */
static char sm_end_reason[128];        /* why the process ends early, when it does */
static char **sm_saved_argv;
static bool sm_runtime_data_saved;   /* this rank's process file is written */
static uint64_t sm_signal_arrival_ns; /* a fatal signal came (monotonic); 0: none */
static pthread_mutex_t sm_meta_lock;  /* (declared metadata, at the end) */

const sm_config_t *sm_runtime_config(void)
{
    return &sm_cfg;
}

const char *sm_runtime_output_dir(void)
{
    return sm_outdir;
}

void sm_runtime_discard_output(void)
{
    sm_runtime_discard = 1;
}

void sm_runtime_add_note(const char *text)
{
    /* Called from finalize hooks (the runtime lock is not held then). */
    if (!text || sm_run.n_notes >= SM_RUN_MAX_NOTES)
        return;
    char *copy = strdup(text);
    if (copy)
        sm_run.notes[sm_run.n_notes++] = copy;
}

/* ---------------------------------------------------------------- output folder */

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

static sm_outdir_claim_t sm_outdir_claim;
static char sm_outbase[PATH_MAX];      /* the folder the user named, absolute */
static char sm_outdir_moved_why[3 * PATH_MAX]; /* the line for SM_OUTDIR_MOVED */
static int sm_outdir_said;
static long sm_member = -1;      /* this process's number in its program's family */
static long sm_fork_member = -1; /* taken for the child being forked (atfork) */

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
static bool sm_runtime_in_family(void)
{
    const sm_job_launch_t *l = sm_job_launch();
    return sm_cfg.output && sm_cfg.output[0] && sm_cfg.launched_pid > 0 &&
           (l->rank < 0 || l->size == 1 || (l->launcher == SM_LAUNCHER_SLURM && l->size == 0));
}

/* sysmeasure-<program>-<date>-<time>-<pid>, in the working directory; or
 * the folder the user named, claimed now (a run that overlaps another's in
 * that folder must know before either writes). */
static void sm_choose_output_dir(void)
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
static void sm_output_settle_alone(void)
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
static void sm_output_claim_for_job(const sm_procs_t *procs)
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
static void sm_output_release(void)
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
static const char *sm_runtime_spill_dir(void)
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

/* ---------------------------------------------------------------- the job */

/* --crash-safe: the clock as it stands, to the journal. */
static void sm_runtime_journal_clock(void)
{
    if (!sm_journal_on())
        return;
    sm_clock_params_t clock;
    sm_clock_export(&clock);
    sm_journal_add(SM_J_CLOCK, &clock, sizeof clock, NULL, 0);
}

/* This process's rank among n: for the run, the spill file's header and
 * the crash-safe journal (a killed process's files say which rank it was). */
static void sm_runtime_set_rank(uint32_t rank, uint32_t n)
{
    sm_run.rank = rank;
    sm_run.n_ranks = n;
    sm_space_set_rank(sm_run.rank);
    sm_buffers_set_rank(sm_run.rank, sm_run.n_ranks); /* the spill file's header */
    if (sm_journal_on()) {
        uint32_t r[2] = {sm_run.rank, sm_run.n_ranks};
        sm_journal_add(SM_J_RANK, r, sizeof r, NULL, 0);
    }
}

void sm_runtime_set_process_group(const sm_procs_t *procs)
{
    sm_procs = procs;
    sm_runtime_set_rank(procs ? procs->rank : 0, procs ? procs->size : 1);
    if (procs)
        sm_output_claim_for_job(procs);
    /* Rank 0 claims its folder now, so that the name it hands to the other
     * ranks is the one it got (a clash adds a suffix). */
    char err[PATH_MAX + 256];
    if (procs && procs->rank == 0 && !(sm_cfg.output && sm_cfg.output[0]) &&
        sm_runtime_make_output_dir(err, sizeof err) != 0)
        sm_error("%s", err);
}

uint32_t sm_runtime_process_count(void)
{
    return sm_procs ? sm_procs->size : 1;
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

void sm_runtime_clock_offset(int which, uint64_t local_ns, int64_t offset_ns)
{
    sm_clock_set_offset(which, local_ns, offset_ns);
    sm_runtime_journal_clock();
}

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

/* A signal ends the process (ending.c calls this on the thread it landed
 * on): the output of a process on its own, or the process file of a rank.
 * 0, or -1 when another thread writes already. */
int sm_runtime_finalize_for_signal(int sig)
{
    if (!sm_signal_arrival_ns)
        sm_signal_arrival_ns = sm_clock_monotonic_ns();
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

/* ---------------------------------------------------------------- start/stop detection */

/* A program that calls sysmeasure_start/stop references them by name in the
 * dynamic string table of its executable or of one of its libraries. */
static int sm_uses_start_stop_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    Dl_info self;
    if (dladdr((void *)sm_uses_start_stop_cb, &self) && self.dli_fbase &&
        (ElfW(Addr))self.dli_fbase == info->dlpi_addr && info->dlpi_name && info->dlpi_name[0])
        return 0; /* our own library defines them */
    if (info->dlpi_name && strstr(info->dlpi_name, "linux-vdso"))
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        if (info->dlpi_phdr[i].p_type != PT_DYNAMIC)
            continue;
        const ElfW(Dyn) *dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
        const char *strtab = NULL;
        size_t strsz = 0;
        for (; dyn->d_tag != DT_NULL; dyn++) {
            if (dyn->d_tag == DT_STRTAB)
                strtab = (const char *)dyn->d_un.d_ptr;
            else if (dyn->d_tag == DT_STRSZ)
                strsz = dyn->d_un.d_val;
        }
        if (!strtab || !strsz)
            continue;
        if ((ElfW(Addr))strtab < info->dlpi_addr)
            strtab += info->dlpi_addr; /* not relocated in place */
        static const char *const names[] = {"sysmeasure_start", "sysmeasure_stop",
                                            "sysmeasure_start_thread", "sysmeasure_stop_thread"};
        for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
            size_t len = strlen(names[k]) + 1;
            for (const char *p = strtab; p + len <= strtab + strsz; p += strlen(p) + 1)
                if (memcmp(p, names[k], len) == 0) {
                    *(int *)arg = 1;
                    return 1;
                }
        }
    }
    return 0;
}

static int sm_program_uses_start_stop(void)
{
    int found = 0;
    dl_iterate_phdr(sm_uses_start_stop_cb, &found);
    return found;
}

/* ---------------------------------------------------------------- init */

static void sm_read_cmdline(void)
{
    if (sm_saved_argv)
        return;
    FILE *f = fopen("/proc/self/cmdline", "r");
    if (!f)
        return;
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    int argc = 0;
    for (size_t i = 0; i < n; i++)
        if (buf[i] == '\0')
            argc++;
    char **argv = calloc((size_t)argc + 1, sizeof *argv);
    if (!argv)
        return;
    char *p = buf;
    for (int i = 0; i < argc; i++) {
        argv[i] = p;
        p += strlen(p) + 1;
    }
    sm_saved_argc = argc;
    sm_saved_argv = argv;
}

static void sm_runtime_atexit(void)
{
    sm_runtime_finalize_as(NULL, 2);
}

/* quick_exit: no stdio flush, as quick_exit leaves it. */
static void sm_runtime_at_quick_exit(void)
{
    sm_runtime_finalize_as(NULL, 0);
}

/* ---------------------------------------------------------------- fork and daemon() */

/* daemon() forks; the parent then ends inside the C library (its _exit is
 * not ours to see) and the child goes on as the program.  So the child
 * goes on measuring, with everything recorded before (it has the parent's
 * memory), and writes the output at its end: the parent writes nothing.
 * Set on the thread that calls daemon(), for the atfork handlers. */
static __thread bool sm_daemon_forking;
static uint64_t sm_daemon_time; /* when the fork was (ticks) */
static pid_t sm_daemon_parent;

bool sm_runtime_forking_daemon(void)
{
    return sm_daemon_forking;
}

/* Before a fork: a process of a family (job_folder.h) takes the child's
 * number now, so that the family knows of the child before either goes on
 * (the record names the parent until the child names itself). */
static void sm_runtime_before_fork(void)
{
    sm_fork_member = -1;
    if (!sm_runtime_active || sm_runtime_discard || sm_daemon_forking ||
        sm_ending_phase() != SM_END_RUNNING || sm_procs || !sm_runtime_in_family() ||
        (sm_outdir_claim != SM_OUTDIR_HELD && sm_outdir_claim != SM_OUTDIR_FAMILY))
        return;
    int saved_errno = errno;
    sm_sig_hold(SM_SIG_LOCKS_IO);
    sm_fork_member = sm_job_folder_join(sm_outbase, sm_cfg.launched_pid, 1);
    sm_sig_release();
    errno = saved_errno;
}

static void sm_runtime_after_fork_parent(void)
{
    sm_fork_member = -1;
}

/* A forked child of a family measures on as a process of its own, member
 * sm_fork_member: the forking thread with the regions open at the fork,
 * nothing the parent recorded, no crash-safe files, no samplers. */
static void sm_runtime_fork_child_measures(void)
{
    pthread_mutex_t r = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    sm_runtime_lock = r;
    sm_meta_lock = m;
    sm_definitions_after_daemon_child();
    sm_journal_after_fork_child();
    uint64_t now = sm_clock_now();
    sm_location_t *self = sm_tls_location && sm_tls_location->stack ? sm_tls_location : NULL;
    sm_buffers_fork_child(self);
    sm_locations_fork_child(self, now);
    sm_member = sm_fork_member;
    sm_fork_member = -1;
    sm_outdir_claim = SM_OUTDIR_FAMILY;
    snprintf(sm_outdir, sizeof sm_outdir, "%s", sm_outbase);
    sm_job_folder_claim_number(sm_outbase, sm_member);
    sm_run.pid = getpid();
    sm_run.start_time = now;
    sm_run.start_realtime_ns = sm_clock_realtime_at_init_ns() +
                               (sm_clock_monotonic_ns() - sm_clock_monotonic_at_init_ns());
    sm_runtime_set_rank((uint32_t)sm_member, (uint32_t)sm_member + 1);
}

/* In a forked child the parent's data is not ours to write again, unless
 * the child goes on after daemon(), or is of a family (above). */
static void sm_runtime_after_fork_child(void)
{
    sm_ending_after_fork_child();
    if (sm_fork_member > 0 && !sm_daemon_forking) {
        sm_runtime_fork_child_measures();
        return;
    }
    sm_fork_member = -1;
    if (sm_daemon_forking) {
        /* The locks a thread of the parent may have held, made new. */
        pthread_mutex_t r = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
        pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
        sm_runtime_lock = r;
        sm_meta_lock = m;
        sm_definitions_after_daemon_child();
        sm_locations_after_daemon_child();
        sm_journal_after_daemon_child();
        sm_buffers_resume(1);
        /* Said now, while stderr is still the parent's (daemon() points it
         * at /dev/null next). */
        sm_info(0, "daemon(): the program goes on in process %d, which measures on (the "
                "events before daemon() included) and writes the output to %s at its end",
                (int)getpid(), sm_outdir);
        return;
    }
    sm_runtime_discard = 1;
    sm_runtime_active = 0;
    sm_journal_after_fork_child();
    sm_buffers_after_fork_child();
}

/* The child that goes on after daemon(), out of the fork: the process's
 * identity, the threads the fork left behind, the background threads. */
static void sm_runtime_after_daemon(void)
{
    pid_t pid = getpid();
    sm_run.pid = pid;
    sm_cfg.launched_pid = pid; /* the program itself, not a process it started */
    /* The parent's other threads are not in the child: their locations end
     * at the fork, what they left open closed there. */
    sm_location_t *me = sm_tls_location;
    uint32_t n = sm_location_count(), ended = 0;
    for (uint32_t i = 0; i < n; i++) {
        sm_location_t *loc = sm_location_get(i);
        if (loc && loc != me && loc->type == SM_LOCATION_CPU_THREAD && loc->tid != 0 &&
            !__atomic_load_n(&loc->closed, __ATOMIC_ACQUIRE)) {
            sm_location_close(loc, sm_daemon_time);
            ended++;
        }
    }
    if (me)
        me->tid = gettid();
    sm_samplers_after_daemon();
    sm_subsystems_after_daemon();
    char note[200];
    snprintf(note, sizeof note, "the program called daemon(): measured in process %d up to it, "
             "then in process %d%s", (int)sm_daemon_parent, (int)pid,
             ended ? "; the threads of the first process ended there" : "");
    sm_runtime_add_note(note);
}

int sm_runtime_daemon(sm_daemon_fn fn, int nochdir, int noclose)
{
    pid_t parent = getpid();
    if (!sm_runtime_active || sm_runtime_discard || sm_ending_phase() != SM_END_RUNNING ||
        sm_procs) /* (an MPI rank: the job's end is MPI_Finalize's) */
        return fn(nochdir, noclose);
    /* No write of the writer thread under way at the fork. */
    sm_buffers_pause();
    sm_daemon_parent = parent;
    sm_daemon_time = sm_clock_now();
    sm_daemon_forking = true;
    int rc = fn(nochdir, noclose); /* the parent ends in there, unless the fork failed */
    int saved_errno = errno;
    sm_daemon_forking = false;
    bool child = getpid() != parent;
    if (!child)
        sm_buffers_resume(0);
    else
        sm_runtime_after_daemon();
    errno = saved_errno;
    return rc;
}


static int sm_runtime_init_as_held(int argc, char **argv);

/* argv: from the library's constructor (the launcher's environment), which
 * may start the program again with the MPI wrappers (adapter_load.h).  The
 * start creates files (the crash-safe journal, the first chunk's slot): a
 * file size limit fails them, not the program (sig_hold.h). */
static int sm_runtime_init_as(int argc, char **argv)
{
    sm_sig_hold(SM_SIG_LOCKS_IO);
    int rc = sm_runtime_init_as_held(argc, argv);
    sm_sig_release();
    return rc;
}

static int sm_runtime_init_as_held(int argc, char **argv)
{
    pthread_mutex_lock(&sm_runtime_lock);
    if (sm_runtime_initialized) {
        pthread_mutex_unlock(&sm_runtime_lock);
        return sm_runtime_active ? 0 : -1;
    }
    sm_runtime_initialized = 1;
    char err[1024];
    if (sm_config_load(&sm_cfg, environ, err, sizeof err) != 0) {
        sm_error("%s; this process is not measured", err);
        pthread_mutex_unlock(&sm_runtime_lock);
        return -1;
    }
    sm_log_set_verbosity((int)sm_cfg.verbose);
    if (argv && sm_cfg.mpi != SM_MPI_NO)
        sm_adapter_load_restart(argc, argv); /* returns when it does not restart */
    if (sm_cfg.warning[0] && sm_cfg.launched_pid <= 0)
        sm_warning("%s", sm_cfg.warning); /* the launcher said it already */
    /* The program the launcher started on its own: the processes it starts
     * are of its family (job_folder.h) and learn its identity from the
     * environment they inherit (a forked child has it in memory).  Its own,
     * not a batch job's that other programs of the job script share. */
    if (sm_cfg.launched_pid == getpid() && sm_runtime_in_family() && !getenv("SYSMEASURE_JOB_ID")) {
        char id[SM_JOB_ID_MAX];
        sm_job_process_id(id, sizeof id);
        setenv("SYSMEASURE_JOB_ID", id, 1);
    }
    (void)sm_job_id(); /* fixed now: later calls may come from a signal handler */
    sm_clock_init(sm_cfg.clock);
    sm_buffers_configure(sm_cfg.buffer_size, sm_cfg.buffer_chunk_size);
    if (sm_cfg.trace) { /* (the value was checked when it was read) */
        uint64_t floor_bytes = 0;
        double floor_share = 0.0;
        char why[256];
        if (sm_config_parse_free_space(sm_cfg.min_free_space, &floor_bytes, &floor_share, why,
                                       sizeof why) != 0)
            floor_bytes = 0, floor_share = 0.0;
        sm_space_configure(sm_cfg.max_trace_size, floor_bytes, floor_share);
    }
    sm_profile_max_depth = (uint32_t)sm_cfg.profile_depth;
    sm_trace_max_depth = sm_cfg.trace_depth > 0 ? (uint32_t)sm_cfg.trace_depth : 1;

    sm_read_cmdline();
    const char *prog = sm_saved_argc > 0 ? sm_saved_argv[0] : "program";
    const char *slash = strrchr(prog, '/');
    snprintf(sm_program, sizeof sm_program, "%s", slash ? slash + 1 : prog);
    sm_choose_output_dir();
    sm_buffers_set_spill_provider(sm_runtime_spill_dir);
    if (sm_cfg.crash_safe) {
        /* Before anything is defined: the journal holds every definition. */
        const char *spill = sm_runtime_spill_dir();
        if (spill && sm_journal_open(spill, sm_program, sm_clock_realtime_at_init_ns(),
                                     sm_clock_now()) == 0) {
            sm_buffers_set_crash_safe(1);
            sm_runtime_journal_clock();
        }
    }

    sm_definitions_init();
    sm_locations_init();
    if (sm_cfg.trace && sm_otf2_background_wanted())
        sm_end_layer.trace_during_run(sm_cfg.otf2_background == SM_OTF2_BACKGROUND_CHECK ? 2 : 1);
    sm_counters_init(&sm_cfg); /* before the first thread is bound */

    int enabled = sm_cfg.init_enabled == SM_INIT_ENABLED_YES ||
                  (sm_cfg.init_enabled == SM_INIT_ENABLED_AUTO && !sm_program_uses_start_stop());
    sm_measurement_on = (uint8_t)enabled;
    sm_locations_set_modes(sm_cfg.trace, sm_cfg.profile, 1);

    memset(&sm_run, 0, sizeof sm_run);
    sm_run.config = &sm_cfg;
    sm_run.output_dir = sm_outdir;
    sm_run.program = sm_program;
    sm_run.argc = sm_saved_argc;
    sm_run.argv = sm_saved_argv;
    sm_run.pid = getpid();
    gethostname(sm_run.hostname, sizeof sm_run.hostname - 1);
    sm_run.start_realtime_ns = sm_clock_realtime_at_init_ns();
    sm_run.start_time = sm_clock_now();
    sm_run.clock_source = sm_clock_source_name();
    sm_run.n_ranks = 1;
    if (sm_outdir_claim == SM_OUTDIR_SHARED) {
        /* One of a job's processes without MPI: its launcher's rank from
         * the start, and a record that says it runs (job_folder.h). */
        const sm_job_launch_t *l = sm_job_launch();
        sm_runtime_set_rank((uint32_t)l->rank, (uint32_t)l->size);
        (void)sm_job_folder_register(sm_outbase, (uint32_t)l->rank); /* (a later write says why) */
    } else if (sm_outdir_claim == SM_OUTDIR_FAMILY) {
        sm_runtime_set_rank((uint32_t)sm_member, (uint32_t)sm_member + 1);
    }
    sm_counters_notes(sm_runtime_add_note);
    sm_region_filter_init(&sm_cfg);

    atexit(sm_runtime_atexit);
    at_quick_exit(sm_runtime_at_quick_exit);
    pthread_atfork(sm_runtime_before_fork, sm_runtime_after_fork_parent,
                   sm_runtime_after_fork_child);
    sm_runtime_active = 1;
    sm_ending_install();
    pthread_mutex_unlock(&sm_runtime_lock);

    sm_location_t *main_loc = sm_location_current(); /* the thread that loads us */
    /* After: the main thread is location 0, and a subsystem's thread_begin
     * is not called for it (each init takes the bound thread itself). */
    sm_subsystems_init(&sm_cfg);
    if (!enabled)
        sm_event_measurement(main_loc, false, sm_run.start_time);
    sm_info(1, "measuring %s (trace: %s, profile: %s, clock: %s), output in %s", sm_program,
            sm_cfg.trace ? "yes" : "no", sm_cfg.profile ? "yes" : "no", sm_run.clock_source,
            sm_outdir);
    return 0;
}

int sm_runtime_init(void)
{
    return sm_runtime_init_as(0, NULL);
}

int sm_runtime_init_forced(void)
{
    const char *enable = getenv(SM_ENV_PREFIX "ENABLE");
    bool on = true;
    if (enable && enable[0] && sm_config_parse_bool(enable, &on) == 0 && !on)
        return -1;
    int rc = sm_runtime_init();
    /* No launcher: an MPI program's ranks join one job here, once. */
    static int joined;
    if (rc == 0 && sm_cfg.mpi != SM_MPI_NO && !__atomic_exchange_n(&joined, 1, __ATOMIC_ACQ_REL))
        sm_adapter_load_join();
    return rc;
}

/* The daemons of MPI launchers (Open MPI starts orted even for a program
 * run without mpirun) inherit our environment: they are not the program. */
static bool sm_is_launcher_daemon(const char *argv0)
{
    static const char *const daemons[] = {"orted", "prted", "orterun", "mpirun", "mpiexec",
                                          "prterun", "hydra_pmi_proxy", "srun", "slurmstepd"};
    const char *slash = argv0 ? strrchr(argv0, '/') : NULL;
    const char *base = slash ? slash + 1 : argv0;
    for (size_t i = 0; base && i < sizeof daemons / sizeof daemons[0]; i++)
        if (!strcmp(base, daemons[i]))
            return true;
    return false;
}

/* glibc passes argc/argv to constructors of shared objects. */
__attribute__((constructor)) static void sm_runtime_constructor(int argc, char **argv, char **envp)
{
    (void)envp;
    if (argc > 0 && argv) {
        sm_saved_argc = argc;
        sm_saved_argv = argv;
    }
    const char *enable = getenv(SM_ENV_PREFIX "ENABLE");
    bool on = false;
    if (enable && sm_config_parse_bool(enable, &on) == 0 && on &&
        !(argc > 0 && argv && sm_is_launcher_daemon(argv[0])))
        sm_runtime_init_as(argc, argv);
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

/* A positive integer from the environment, or fallback. */
static long sm_env_count(const char *name, long fallback)
{
    const char *v = getenv(name);
    char *end;
    long n = v ? strtol(v, &end, 10) : 0;
    return v && end != v && n > 0 ? n : fallback;
}

/* The job's processes on this node, from the launcher's environment (Open
 * MPI, MPICH and Intel MPI, MVAPICH, Slurm's srun); *known 0 and 1 without. */
static long sm_local_processes(int *known)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
                                       "MV2_COMM_WORLD_LOCAL_SIZE"};
    *known = 1;
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        long n = sm_env_count(vars[i], 0);
        if (n > 0)
            return n;
    }
    const char *per_node = getenv("SLURM_STEP_TASKS_PER_NODE"), *id = getenv("SLURM_NODEID");
    long n = per_node && id ? sm_cpus_slurm_tasks(per_node, strtol(id, NULL, 10)) : 0;
    if (n > 0)
        return n;
    *known = 0;
    return 1;
}

/* Whether to encode OTF2 during the run (SYSMEASURE_OTF2_BACKGROUND).
 * auto: only where the writer thread has a CPU of its own, so the
 * encoding's processor time is not taken from the program.  The program
 * needs the job's processes on this node times their OpenMP threads
 * (OMP_NUM_THREADS; unset: 1, or every CPU of the process's mask where an
 * OpenMP runtime is loaded, its default).  Spare CPUs in the process's own
 * mask: the writer runs there.  Else, spare CPUs of the node (those the
 * cpuset cgroup allows, online): the writer runs on the node's CPUs outside
 * the process's mask, so ranks bound one per core keep their core.  The
 * same facts give the end of the run its encoders (sm_cpus_end_share). */
static int sm_otf2_background_wanted(void)
{
    cpu_set_t own, node, writer, end;
    if (sched_getaffinity(0, sizeof own, &own) != 0)
        return sm_cfg.otf2_background == SM_OTF2_BACKGROUND_YES ||
               sm_cfg.otf2_background == SM_OTF2_BACKGROUND_CHECK;
    const char *source = "";
    if (sm_cpus_node(&node, &source) != 0)
        node = own;
    int known;
    long local = sm_local_processes(&known);
    /* The end of the run's encoders: this process's share of the CPUs. */
    int share = sm_cpus_end_share(&own, &node, local, known, &end);
    long want = sm_cfg.otf2_end_threads;
    sm_cpus_set_end(&end, want > 0 ? (int)want : share); /* 0..64 (config range) */
    if (sm_cfg.otf2_background != SM_OTF2_BACKGROUND_AUTO)
        return sm_cfg.otf2_background != SM_OTF2_BACKGROUND_NO;
    int openmp = dlsym(RTLD_DEFAULT, "omp_get_max_threads") != NULL;
    long threads = sm_env_count("OMP_NUM_THREADS", openmp ? CPU_COUNT(&own) : 1);
    int place = sm_cpus_writer_place(&own, &node, local * threads, &writer);
    /* Bound to fewer CPUs than the node has, by a launcher that did not say
     * how many processes it started here: the node's other CPUs may be
     * theirs. */
    int unknown = place == 2 && !known;
    if (unknown)
        place = 0;
    char node_list[256], writer_list[256];
    sm_cpus_format(&node, node_list, sizeof node_list);
    sm_cpus_format(&writer, writer_list, sizeof writer_list);
    const char *where = place == 2 ? "; writer thread on the node's other CPUs "
                        : unknown  ? "; not on the node's other CPUs: the processes on the node "
                                     "are unknown"
                                   : "";
    sm_info(2, "OTF2 during the run: %s (%d CPUs, %ld processes on the node x %ld threads%s; "
            "node: %d CPUs %s, %s)%s%s", place ? "yes" : "no", CPU_COUNT(&own), local, threads,
            getenv("OMP_NUM_THREADS") ? "" : openmp ? " (OpenMP's default)" : " (no OpenMP)",
            CPU_COUNT(&node), node_list, source, where, place == 2 ? writer_list : "");
    if (place == 2)
        sm_cpus_set_writer(&writer);
    return place != 0;
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

int sm_runtime_save_before_finalize(void)
{
    if (!sm_procs)
        return 0;
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

/* ---------------------------------------------------------------- declared metadata */

/* Few pairs, set rarely: an array under a lock.  Replaced values are not
 * freed, so that a pointer handed to the writer stays valid: they are kept
 * in sm_meta_old (still reachable, not leaked; sysmeasure-merge sets the
 * pairs of every job it merges). */
typedef struct sm_meta_pair {
    char *key;
    char *value;
} sm_meta_pair_t;

static pthread_mutex_t sm_meta_lock = PTHREAD_MUTEX_INITIALIZER;
static sm_meta_pair_t *sm_meta;
static uint32_t sm_meta_n, sm_meta_cap;
static char **sm_meta_old;
static uint32_t sm_meta_n_old, sm_meta_cap_old;

void sm_runtime_metadata_set(const char *key, const char *value)
{
    if (!key || !key[0])
        return;
    char *v = strdup(value ? value : "");
    if (!v)
        return;
    pthread_mutex_lock(&sm_meta_lock);
    uint32_t i = 0;
    while (i < sm_meta_n && strcmp(sm_meta[i].key, key) != 0)
        i++;
    if (i == sm_meta_n) {
        char *k = strdup(key);
        if (sm_meta_n == sm_meta_cap)
            (void)SM_GROW(sm_meta, sm_meta_cap, 32); /* checked below */
        if (!k || sm_meta_n == sm_meta_cap) {
            pthread_mutex_unlock(&sm_meta_lock);
            free(k);
            free(v);
            return;
        }
        sm_meta[i].key = k;
        sm_meta[i].value = NULL;
        sm_meta_n++;
    }
    if (sm_meta[i].value && !strcmp(sm_meta[i].value, v)) { /* the same again */
        pthread_mutex_unlock(&sm_meta_lock);
        free(v);
        return;
    }
    if (sm_meta[i].value && (sm_meta_n_old < sm_meta_cap_old ||
                             SM_GROW(sm_meta_old, sm_meta_cap_old, 8) == 0))
        sm_meta_old[sm_meta_n_old++] = sm_meta[i].value;
    sm_meta[i].value = v;
    pthread_mutex_unlock(&sm_meta_lock);
}

uint32_t sm_runtime_metadata_count(void)
{
    pthread_mutex_lock(&sm_meta_lock);
    uint32_t n = sm_meta_n;
    pthread_mutex_unlock(&sm_meta_lock);
    return n;
}

int sm_runtime_metadata_get(uint32_t i, const char **key, const char **value)
{
    pthread_mutex_lock(&sm_meta_lock);
    int rc = -1;
    if (i < sm_meta_n) {
        *key = sm_meta[i].key;
        *value = sm_meta[i].value;
        rc = 0;
    }
    pthread_mutex_unlock(&sm_meta_lock);
    return rc;
}
