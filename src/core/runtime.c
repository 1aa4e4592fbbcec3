/* Bring-up and shutdown of the measurement of one process. */
#define _GNU_SOURCE
#include "runtime.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buffer.h"
#include "clock.h"
#include "definitions.h"
#include "events.h"
#include "location.h"
#include "../merge/profile_summary.h"
#include "../util/fs.h"
#include "../util/log.h"
#include "../writers/writers.h"

extern char **environ;

volatile int sm_runtime_active;

static pthread_mutex_t sm_runtime_lock = PTHREAD_MUTEX_INITIALIZER;
static int sm_runtime_initialized, sm_runtime_finalized, sm_runtime_discard;
static sm_config_t sm_cfg;
static char sm_outdir[PATH_MAX];
static int sm_outdir_made;
static char sm_program[256];
static sm_run_info_t sm_run;
static int sm_saved_argc;
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

/* ---------------------------------------------------------------- output folder */


/* sysmeasure-<program>-<date>-<time>-<pid>, in the working directory. */
static void sm_choose_output_dir(void)
{
    if (sm_cfg.output && sm_cfg.output[0]) {
        if (sm_cfg.output[0] == '/' || !getcwd(sm_outdir, sizeof sm_outdir))
            snprintf(sm_outdir, sizeof sm_outdir, "%s", sm_cfg.output);
        else {
            size_t n = strlen(sm_outdir);
            snprintf(sm_outdir + n, sizeof sm_outdir - n, "/%s", sm_cfg.output);
        }
        /* A process the launched program started: a folder of its own inside. */
        if (sm_cfg.launched_pid > 0 && sm_cfg.launched_pid != getpid()) {
            size_t n = strlen(sm_outdir);
            snprintf(sm_outdir + n, sizeof sm_outdir - n, "/%s-%d", sm_program, (int)getpid());
        }
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

int sm_runtime_make_output_dir(char *err, size_t errlen)
{
    pthread_mutex_lock(&sm_runtime_lock);
    int rc = 0;
    if (!sm_outdir_made) {
        int explicit_dir = sm_cfg.output && sm_cfg.output[0];
        if (explicit_dir) {
            rc = sm_mkdir_p(sm_outdir);
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
            snprintf(err, errlen, "cannot create output folder %s: %s", sm_outdir, strerror(errno));
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
    return dir;
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
    sm_runtime_finalize();
}

/* In a forked child the parent's data is not ours to write again. */
static void sm_runtime_after_fork_child(void)
{
    sm_runtime_discard = 1;
    sm_runtime_active = 0;
}

int sm_runtime_init(void)
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
    sm_clock_init(sm_cfg.clock);
    sm_buffers_configure(sm_cfg.buffer_size, sm_cfg.buffer_chunk_size);
    sm_definitions_init();
    sm_locations_init();

    sm_read_cmdline();
    const char *prog = sm_saved_argc > 0 ? sm_saved_argv[0] : "program";
    const char *slash = strrchr(prog, '/');
    snprintf(sm_program, sizeof sm_program, "%s", slash ? slash + 1 : prog);
    sm_choose_output_dir();
    sm_buffers_set_spill_provider(sm_runtime_spill_dir);

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

    atexit(sm_runtime_atexit);
    pthread_atfork(NULL, NULL, sm_runtime_after_fork_child);
    sm_runtime_active = 1;
    pthread_mutex_unlock(&sm_runtime_lock);

    sm_location_t *main_loc = sm_location_current(); /* the thread that loads us */
    if (!enabled)
        sm_event_measurement(main_loc, false, sm_run.start_time);
    sm_info(1, "measuring %s (trace: %s, profile: %s, clock: %s), output in %s", sm_program,
            sm_cfg.trace ? "yes" : "no", sm_cfg.profile ? "yes" : "no", sm_run.clock_source,
            sm_outdir);
    return 0;
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
    if (enable && sm_config_parse_bool(enable, &on) == 0 && on)
        sm_runtime_init();
}

/* ---------------------------------------------------------------- finalize */

int sm_runtime_finalize(void)
{
    pthread_mutex_lock(&sm_runtime_lock);
    if (!sm_runtime_active || sm_runtime_finalized) {
        pthread_mutex_unlock(&sm_runtime_lock);
        return 0;
    }
    sm_runtime_finalized = 1;
    int saved_errno = errno;
    uint64_t end = sm_clock_now();
    sm_run.end_time = end;
    sm_run.end_realtime_ns = sm_clock_realtime_at_init_ns() +
                             (sm_clock_monotonic_ns() - sm_clock_monotonic_at_init_ns());
    sm_runtime_active = 0; /* threads that appear from now on are not measured */
    pthread_mutex_unlock(&sm_runtime_lock);

    /* Close every thread's open regions at the end time.  Threads still
     * running see `closed` and record nothing more. */
    uint32_t n = sm_location_count();
    for (uint32_t i = 0; i < n; i++) {
        sm_location_t *loc = sm_location_get(i);
        sm_location_close(loc, end);
        sm_run.spills += loc->buffer.spills;
        sm_run.spilled_bytes += loc->buffer.spilled_bytes;
        sm_run.dropped_records += loc->buffer.dropped_records;
        sm_run.unmatched_leaves += loc->unmatched_leaves;
    }
    if (sm_runtime_discard) {
        errno = saved_errno;
        return 0;
    }
    sm_clock_finish();

    int failures = 0;
    char err[PATH_MAX + 256];
    if (sm_runtime_make_output_dir(err, sizeof err) != 0) {
        sm_error("%s; no output written", err);
        errno = saved_errno;
        return 1;
    }
    if (sm_cfg.trace && sm_otf2_write(&sm_run) != 0)
        failures++;
    if (sm_cfg.profile) {
        sm_profile_summary_t *summary = sm_profile_summarize();
        if (!summary) {
            sm_error("building the profile summary failed: out of memory");
            failures++;
        } else {
            failures += sm_profile_write_text(&sm_run, summary) != 0;
            failures += sm_profile_write_json(&sm_run, summary) != 0;
            sm_profile_summary_free(summary);
        }
    }
    failures += sm_metadata_write_json(&sm_run) != 0;

    if (failures == 0) {
        /* Everything is in the archive: the spill files can go.  Buffer
         * memory stays: a thread that is still running may be finishing an
         * append, and the process is ending anyway. */
        for (uint32_t i = 0; i < n; i++)
            sm_buffer_remove_spill(sm_location_get(i));
        char spill[PATH_MAX + 8];
        snprintf(spill, sizeof spill, "%s/.spill", sm_outdir);
        rmdir(spill);
        if (sm_run.dropped_records)
            sm_warning("%llu events were lost (spill failed); see metadata.json",
                       (unsigned long long)sm_run.dropped_records);
        sm_info(0, "%u thread%s measured, output in %s", n, n == 1 ? "" : "s", sm_outdir);
    } else {
        sm_error("%d of the outputs in %s could not be written (see above); spill files, if "
                 "any, are kept in %s/.spill", failures, sm_outdir, sm_outdir);
    }
    errno = saved_errno;
    return failures;
}
