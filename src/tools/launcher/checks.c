/* What the launcher checks before the program runs, so that a mistake
 * costs one line and not a job: the output folder (made and written to),
 * the PAPI events, the GPU metrics (and, for several passes, the hand-over
 * to sysmeasure-passes). */
#include "launcher.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../core/job.h"
#include "../../util/fs.h"
#include "../../util/gpu_metrics.h"
#include "../../util/log.h"
#ifdef SM_HAVE_PAPI
#include "../../sources/papi/papi_events.h"
#endif

/* ------------------------------------------------------------------ paths */

/* path made absolute against the working directory; malloc'd. */
char *sm_absolute(const char *path)
{
    char cwd[PATH_MAX], *out;
    if (path[0] == '/')
        return strdup(path);
    if (!getcwd(cwd, sizeof cwd))
        sm_die(SM_EXIT_USAGE, "cannot get the working directory: %s", strerror(errno));
    size_t n = strlen(cwd) + strlen(path) + 2;
    out = malloc(n);
    if (out)
        snprintf(out, n, "%s/%s", cwd, path);
    return out;
}


/* Writable, tried by creating a file: access() does not see every reason
 * (read-only or full file systems, quotas, ACLs). 0 or -1 with errno. */
static int sm_probe_writable(const char *dir)
{
    char host[64] = "host", probe[PATH_MAX];
    gethostname(host, sizeof host - 1);
    host[sizeof host - 1] = '\0';
    /* Ranks on several hosts share the folder: make the name unique to us. */
    for (int n = 0; n < 100; n++) {
        snprintf(probe, sizeof probe, "%s/.sysmeasure-probe-%s-%ld-%d", dir, host, (long)getpid(),
                 n);
        int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd >= 0) {
            close(fd);
            unlink(probe);
            return 0;
        }
        if (errno != EEXIST)
            return -1;
    }
    return -1;
}

/* The output folder, created and checked; malloc'd absolute path or NULL
 * when the runtime picks one in the working directory (checked too). */
char *sm_prepare_output(const char *output)
{
    if (!output || !*output) {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd))
            sm_die(SM_EXIT_USAGE, "cannot get the working directory: %s", strerror(errno));
        if (sm_probe_writable(cwd) != 0)
            sm_die(SM_EXIT_USAGE, "output folder '%s' is not writable: %s", cwd, strerror(errno));
        return NULL;
    }
    char *abs = sm_absolute(output), resolved[PATH_MAX];
    if (!abs)
        sm_die(SM_EXIT_USAGE, "out of memory");
    int rc = sm_mkdir_p_created(abs, sm_made_top, sizeof sm_made_top);
    if (rc == 0 && sm_made_top[0])
        snprintf(sm_made_dir, sizeof sm_made_dir, "%s", abs);
    if (rc != 0 || !realpath(abs, resolved) || sm_probe_writable(resolved) != 0)
        sm_die(SM_EXIT_USAGE, "output folder '%s' is not writable: %s", output, strerror(errno));
    free(abs);
    return strdup(resolved);
}

/* ------------------------------------------------------------------ PAPI */

/* The events named by --papi, checked here so that a name the machine cannot
 * count costs one line and not a job.  With --papi-optional the run goes on;
 * the runtime drops the same events and its summary names them. */
void sm_check_papi(const sm_config_t *cfg, bool from_option)
{
    const sm_config_var_t *var = &sm_config_vars[SM_CONFIG_PAPI_EVENTS];
    if (!cfg->papi_events || !*cfg->papi_events)
        return;
    /* Named as the user set it. */
    char what[64];
    if (from_option)
        snprintf(what, sizeof what, "--%s", var->option);
    else if (cfg->source[SM_CONFIG_PAPI_EVENTS] == SM_CONFIG_FROM_FILE)
        snprintf(what, sizeof what, "%s (config file)", var->key);
    else
        snprintf(what, sizeof what, "%s", var->env);
#ifdef SM_HAVE_PAPI
    char err[2048];
    sm_papi_names_t names, dropped;
    bool multiplex;
    if (sm_papi_names_parse(cfg->papi_events, &names, err, sizeof err) != 0)
        sm_die(SM_EXIT_USAGE, "%s: %s", what, err);
    int rc = sm_papi_check(&names, &dropped, &multiplex, err, sizeof err);
    if (rc != 0 && !cfg->papi_optional)
        sm_die(SM_EXIT_USAGE, "%s: %s", what, err);
    if (rc != 0)
        sm_warning("%s: %s; running without them (papi_optional)", what, err);
    else if (multiplex)
        sm_info(1, "PAPI events %s: multiplexed (more than the counters count at once)",
                cfg->papi_events);
#else
    if (!cfg->papi_optional)
        sm_die(SM_EXIT_USAGE, "%s: this sysmeasure was built without PAPI (libpapi-dev not "
               "found at build time), so it cannot count %s", what, cfg->papi_events);
    sm_warning("%s: this sysmeasure was built without PAPI; running without %s "
               "(papi_optional)", what, cfg->papi_events);
#endif
}

/* GPU metrics: a list or file that does not parse costs one line before the
 * program runs (names are checked against the GPU at its first context).
 * Application mode needs one run per metric group: sysmeasure-passes drives
 * them (it sets SYSMEASURE_GPU_PASS for each); a launcher not started by it
 * hands the whole command to it, or, under an MPI launcher, says how. */
void sm_check_gpu_metrics(const sm_config_t *cfg, int argc, char **argv)
{
    if ((!cfg->gpu_metrics || !*cfg->gpu_metrics) &&
        (!cfg->gpu_metrics_file || !*cfg->gpu_metrics_file))
        return;
    static sm_gpu_spec_t spec;
    char err[1024];
    sm_gpu_spec_init(&spec);
    if (sm_gpu_spec_load(cfg->gpu_metrics, cfg->gpu_metrics_file, &spec, err, sizeof err) != 0)
        sm_die(SM_EXIT_USAGE, "%s", err);
    uint32_t groups = spec.n_groups;
    sm_gpu_spec_free(&spec);
    if (cfg->gpu_counter_mode != 1 /* application */ || getenv("SYSMEASURE_GPU_PASS"))
        return;
    if (groups < 2)
        return; /* one pass: this run is all of it */
    static const char *const ranks[] = {SM_JOB_RANK_VARS};
    for (size_t i = 0; i < sizeof ranks / sizeof ranks[0]; i++)
        if (getenv(ranks[i]))
            sm_die(SM_EXIT_USAGE,
                   "--gpu-counter-mode=application needs %u runs of the whole job: start it as "
                   "'sysmeasure-passes -- mpirun ... sysmeasure ... PROGRAM'",
                   groups);
    char driver[PATH_MAX + 32];
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        sm_die(SM_EXIT_USAGE, "cannot find this launcher's folder for sysmeasure-passes");
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    snprintf(driver, sizeof driver, "%s/sysmeasure-passes", exe);
    if (access(driver, X_OK) != 0)
        sm_die(SM_EXIT_USAGE, "--gpu-counter-mode=application: the pass driver %s is missing",
               driver);
    /* sysmeasure-passes -- <this very command line> */
    char **args = calloc((size_t)argc + 3, sizeof *args);
    if (!args)
        sm_die(SM_EXIT_USAGE, "out of memory");
    args[0] = driver;
    args[1] = (char *)"--";
    args[2] = (char *)"/proc/self/exe";
    char self[PATH_MAX];
    n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        args[2] = self;
    }
    for (int i = 1; i < argc; i++)
        args[2 + i] = argv[i];
    execv(driver, args);
    sm_die(SM_EXIT_NOEXEC, "cannot run %s: %s", driver, strerror(errno));
}
