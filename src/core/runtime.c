/* Bring-up and shutdown of the measurement of one process.  This file:
 * the run's state and its start (configuration, the output's name, the
 * writer thread's place); declared metadata.  The others (their shared
 * parts in runtime_private.h):
 *   runtime_output.c  the output folder: its name, its claim, made
 *   runtime_fork.c    fork and daemon()
 *   runtime_end.c     the end: a call, exit, a signal, a torn-down job */
#define _GNU_SOURCE
#include "runtime_private.h"

#include <sched.h>
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adapter_load.h"
#include "buffer.h"
#include "clock.h"
#include "counters.h"
#include "cpus.h"
#include "definitions.h"
#include "ending.h"
#include "events.h"
#include "job.h"
#include "job_folder.h"
#include "kokkos_env.h"
#include "journal.h"
#include "location.h"
#include "region_filter.h"
#include "subsystem.h"
#include "trace_space.h"
#include "sig_hold.h"
#include "window.h"
#include "../util/log.h"
#include "../util/grow.h"

extern char **environ;

volatile int sm_runtime_active;

static int sm_otf2_background_wanted(void);
/* Recursive: a signal handler that ends the process may interrupt a thread
 * holding it (creating the output folder) and take it again. */
pthread_mutex_t sm_runtime_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static int sm_runtime_initialized;
int sm_runtime_discard;
sm_config_t sm_cfg;
char sm_outdir[PATH_MAX];
char sm_program[256];
sm_run_info_t sm_run;
static int sm_saved_argc;
const sm_procs_t *sm_procs; /* the job's processes; NULL: on our own */
static char **sm_saved_argv;

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
void sm_runtime_set_rank(uint32_t rank, uint32_t n)
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

void sm_runtime_clock_offset(int which, uint64_t local_ns, int64_t offset_ns)
{
    sm_clock_set_offset(which, local_ns, offset_ns);
    sm_runtime_journal_clock();
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
    if (sm_cfg.dormant && sm_cfg.crash_safe) {
        /* Its files are made at the start, in the run's folder; a window
         * writes its own folder at its end (window.h). */
        if (sm_job_launcher_rank() <= 0) /* (once for a job) */
            sm_warning("--crash-safe is left out with --dormant: each window is written when "
                       "it ends");
        sm_cfg.crash_safe = 0;
    }
    if (sm_cfg.dormant && sm_cfg.sampling) {
        /* Call-stack samples go into the profile at the end of the run, not
         * into a window's files (callstack.c): none are taken. */
        if (sm_job_launcher_rank() <= 0)
            sm_warning("--sampling is left out with --dormant: a window holds events, the "
                       "profile and process sampling, not call-stack samples");
        sm_cfg.sampling = 0;
    }
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
    /* (--dormant: the windows' archives are made by sysmeasure-attach) */
    if (sm_cfg.trace && sm_otf2_background_wanted() && !sm_cfg.dormant)
        sm_end_layer.trace_during_run(sm_cfg.otf2_background == SM_OTF2_BACKGROUND_CHECK ? 2 : 1);
    sm_counters_init(&sm_cfg); /* before the first thread is bound */

    int enabled = !sm_cfg.dormant && (sm_cfg.init_enabled == SM_INIT_ENABLED_YES ||
                                      (sm_cfg.init_enabled == SM_INIT_ENABLED_AUTO &&
                                       !sm_program_uses_start_stop()));
    sm_measurement_on = (uint8_t)enabled;
    /* --dormant: off, and the end writes nothing (the windows write theirs). */
    sm_dormant_idle = (uint8_t)sm_cfg.dormant;
    if (sm_cfg.dormant)
        sm_runtime_discard = 1;
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
    if (!enabled && !sm_cfg.dormant)
        sm_event_measurement(main_loc, false, sm_run.start_time);
    if (sm_cfg.dormant || sm_cfg.control)
        (void)sm_window_start(); /* (a failure is said; the program runs on) */
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
        !(argc > 0 && argv && sm_is_launcher_daemon(argv[0]))) {
        sm_kokkos_env_settle(); /* before the program's Kokkos reads it */
        sm_runtime_init_as(argc, argv);
    }
}

/* ---------------------------------------------------------------- where the writer thread runs */

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

/* ---------------------------------------------------------------- declared metadata */

/* Few pairs, set rarely: an array under a lock.  Replaced values are not
 * freed, so that a pointer handed to the writer stays valid: they are kept
 * in sm_meta_old (still reachable, not leaked; sysmeasure-merge sets the
 * pairs of every job it merges). */
typedef struct sm_meta_pair {
    char *key;
    char *value;
} sm_meta_pair_t;

pthread_mutex_t sm_meta_lock = PTHREAD_MUTEX_INITIALIZER;
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
