/* sysmeasure, the launcher's steps (launcher.h): the options, the
 * configuration with the environment and config file, the checks, the
 * output folder, the program, the environment it gets, then exec. */
#include "launcher.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../util/filter.h"
#include "../../util/fs.h"
#include "../../python/module_rules.h"
#include "../../util/log.h"

extern char **environ;

char sm_made_top[PATH_MAX], sm_made_dir[PATH_MAX];

void sm_die(int status, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    sm_error("%s", msg);
    if (sm_made_top[0])
        sm_fs_remove_empty(sm_made_dir, sm_made_top);
    exit(status);
}

/* ------------------------------------------------------------------ main */

int main(int argc, char **argv)
{
    sm_options_t opts;
    sm_config_t cfg;
    char err[1024];

    memset(&opts, 0, sizeof opts);
    int prog = sm_parse_options(argc, argv, &opts);

    /* b. The config file (absolute: the program may change directory), the
     * environment, then the options on top. */
    const char *config_file = opts.given[SM_CONFIG_CONFIG_FILE];
    char *config_abs = NULL;
    if (config_file && *config_file) {
        config_abs = sm_absolute(config_file);
        if (!config_abs)
            sm_die(SM_EXIT_USAGE, "out of memory");
        opts.given[SM_CONFIG_CONFIG_FILE] = config_abs;
    }
    if (config_file)
        sm_setenv(sm_config_vars[SM_CONFIG_CONFIG_FILE].env, config_abs ? config_abs : "");
    /* The filter file and the GPU metrics file too: the program may change
     * directory. */
    const char *metrics_file = opts.given[SM_CONFIG_GPU_METRICS_FILE];
    if (metrics_file && *metrics_file &&
        !(opts.given[SM_CONFIG_GPU_METRICS_FILE] = sm_absolute(metrics_file)))
        sm_die(SM_EXIT_USAGE, "out of memory");
    const char *filter_file = opts.given[SM_CONFIG_FILTER];
    if (filter_file && *filter_file && !(opts.given[SM_CONFIG_FILTER] = sm_absolute(filter_file)))
        sm_die(SM_EXIT_USAGE, "out of memory");
    if (sm_config_load(&cfg, environ, err, sizeof err) != 0)
        sm_die(SM_EXIT_USAGE, "%s", err);
    if (cfg.warning[0])
        sm_warning("%s", cfg.warning);
    for (size_t i = 0; i < SM_CONFIG_COUNT; i++) {
        const sm_config_var_t *v = &sm_config_vars[i];
        if (opts.given[i] && sm_config_set(&cfg, v, opts.given[i], SM_CONFIG_FROM_ENV, err,
                                           sizeof err) != 0)
            sm_option_value_error(v, err);
    }
    if (opts.verbose_increments) {
        char text[32];
        snprintf(text, sizeof text, "%lld", (long long)cfg.verbose + opts.verbose_increments);
        if (sm_config_set(&cfg, sm_verbose_var, text, SM_CONFIG_FROM_ENV, err, sizeof err) != 0)
            sm_option_value_error(sm_verbose_var, err);
    }
    sm_log_set_verbosity((int)cfg.verbose);
    sm_check_papi(&cfg, opts.given[SM_CONFIG_PAPI_EVENTS] != NULL);
    /* A filter file that does not parse costs one line, not a job. */
    if (cfg.filter && cfg.filter[0]) {
        sm_filter_t *filter = sm_filter_read(cfg.filter, err, sizeof err);
        if (!filter)
            sm_die(SM_EXIT_USAGE, "%s", err);
        sm_filter_free(filter);
    }
    sm_check_gpu_metrics(&cfg, argc, argv);
    /* Python module rules that do not parse: one line, not a job. */
    if (cfg.python_modules && cfg.python_modules[0]) {
        sm_py_rules_t *rules = sm_py_rules_parse(cfg.python_modules, err, sizeof err);
        if (!rules)
            sm_die(SM_EXIT_USAGE, "%s", err);
        sm_py_rules_free(rules);
    }
#ifndef SM_HAVE_LIBUNWIND
    /* Call-stack sampling was not built: one line, and the program runs. */
    if (cfg.sampling) {
        sm_warning("--sampling: this sysmeasure was built without libunwind (apt-get install "
                   "libunwind-dev, then configure again); running without call-stack sampling");
        cfg.sampling = false;
        opts.given[SM_CONFIG_SAMPLING] = "no";
    }
#endif
#ifndef SM_HAVE_PERFETTO
    /* The Perfetto writer was not built: one line, and the program runs. */
    if (cfg.perfetto) {
        sm_warning("--perfetto: this sysmeasure was built without protobuf-c (apt-get install "
                   "libprotobuf-c-dev protobuf-c-compiler, then configure again); running "
                   "without trace.pftrace");
        cfg.perfetto = false;
        opts.given[SM_CONFIG_PERFETTO] = "no";
    }
#else
    if (cfg.perfetto && !cfg.trace)
        sm_warning("--perfetto: trace.pftrace is made from the trace, which --no-trace turns off; "
                   "none will be written");
#endif

    /* c. Output folder. */
    char *output = sm_prepare_output(cfg.output);

    /* d. Program. */
    const char *name = argv[prog];
    char path[PATH_MAX];
    int rc = sm_resolve_program(name, path, sizeof path);
    if (rc == SM_EXIT_NOTFOUND)
        sm_die(rc, "program '%s' not found", name);
    if (rc && strcmp(name, path) != 0)
        sm_die(rc, "program '%s' is not executable (%s)", name, path);
    if (rc)
        sm_die(rc, "program '%s' is not executable", name);

    /* A statically linked program loads no library: LD_PRELOAD cannot
     * reach it.  It still runs, unmeasured, and the user is told. */
    char interp[PATH_MAX];
    if (sm_program_interp(path, interp, sizeof interp) == 0)
        sm_warning("%s is statically linked: sysmeasure cannot load into it, so it runs "
                   "unmeasured (link it dynamically to measure it)", name);
    if (sm_program_interp(path, interp, sizeof interp) == 0 && sm_made_top[0])
        sm_fs_remove_empty(sm_made_dir, sm_made_top); /* nothing will be written */

    /* e. Environment for the runtime. */
    for (size_t i = 0; i < SM_CONFIG_COUNT; i++) {
        const sm_config_var_t *v = &sm_config_vars[i];
        char value[PATH_MAX];
        bool from_options = opts.given[i] || (v == sm_verbose_var && opts.verbose_increments);
        if (i == SM_CONFIG_OUTPUT && output && cfg.source[i] == SM_CONFIG_FROM_ENV)
            sm_setenv(v->env, output);
        else if (i == SM_CONFIG_CONFIG_FILE)
            continue; /* set above */
        else if (from_options) {
            sm_config_format(&cfg, v, value, sizeof value);
            sm_setenv(v->env, value);
        }
    }
    sm_setenv(sm_config_vars[SM_CONFIG_ENABLE].env, "yes");
    /* exec keeps our pid: it is the program's. */
    char pid[32];
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    sm_setenv(sm_config_vars[SM_CONFIG_LAUNCHED_PID].env, pid);

    /* The program's runtime will read exactly this environment: check the
     * whole of it now (e.g. --buffer-size against the chunk size). */
    sm_config_t check;
    if (sm_config_load(&check, environ, err, sizeof err) != 0)
        sm_die(SM_EXIT_USAGE, "%s", err);
    sm_config_free(&check);

    char lib[PATH_MAX], tried[3 * PATH_MAX + 16];
    if (sm_find_library("libsysmeasure.so", lib, sizeof lib, tried, sizeof tried) != 0) {
        sm_error("cannot find the runtime library libsysmeasure.so (looked for %s)", tried);
        exit(SM_EXIT_USAGE);
    }
    /* The MPI wrappers go first, so they come before libmpi in the lookup. */
    sm_program_libs_t libs;
    memset(&libs, 0, sizeof libs);
    if (cfg.mpi == SM_MPI_AUTO || cfg.gpu == SM_GPU_AUTO)
        sm_program_libraries(path, &libs);
    bool mpi = cfg.mpi == SM_MPI_YES || (cfg.mpi == SM_MPI_AUTO && libs.mpi);
    /* A Python program among the ranks of an MPI job loads MPI later
     * (mpi4py, by dlopen), where no look at its libraries can see it: it
     * gets the MPI wrappers (and so libmpi) from the start. */
    bool python_rank = cfg.mpi == SM_MPI_AUTO && !mpi && sm_under_mpi_launcher() &&
                       sm_program_is_python(path);
    char mpilib[PATH_MAX];
    if (python_rank) {
        mpi = sm_find_library("libsysmeasure-mpi.so", mpilib, sizeof mpilib, tried,
                              sizeof tried) == 0;
        if (mpi)
            sm_info(1, "%s: a Python program among the ranks of an MPI job: the MPI wrappers "
                    "are loaded (mpi4py)", name);
    } else if (mpi && sm_find_library("libsysmeasure-mpi.so", mpilib, sizeof mpilib, tried,
                                      sizeof tried) != 0) {
        if (cfg.mpi == SM_MPI_YES)
            sm_die(SM_EXIT_USAGE, "--mpi: this sysmeasure was built without MPI support "
                   "(libsysmeasure-mpi.so not found; looked for %s)", tried);
        sm_warning("%s uses MPI, but this sysmeasure was built without MPI support: its MPI "
                   "calls are not measured", name);
        mpi = false;
    }
    /* LLVM's OpenMP runtime after ours: the program's GOMP_* and omp_* calls
     * find it before libgomp, and it finds our ompt_start_tool. */
    char omplib[PATH_MAX];
    if (cfg.openmp_runtime == SM_OPENMP_RUNTIME_LLVM) {
        if (sm_find_libomp(omplib, sizeof omplib, tried, sizeof tried) != 0)
            sm_die(SM_EXIT_USAGE, "--openmp-runtime=llvm: LLVM's OpenMP runtime (libomp.so.5) not "
                   "found (looked for %s); install it (Debian: apt-get install libomp5) or put "
                   "its folder in LD_LIBRARY_PATH", tried);
#ifndef SM_BUILT_OMPT
        sm_warning("--openmp-runtime=llvm: this sysmeasure was built without the OpenMP adapter "
                   "(no omp-tools.h at build time): the program runs on libomp, but its OpenMP "
                   "constructs are not measured");
#endif
        sm_info(1, "OpenMP runtime: %s (preloaded)", omplib);
        sm_set_preload(omplib);
    }
    sm_set_preload(lib);
    if (mpi)
        sm_set_preload(mpilib);
    if (cfg.kokkos)
        sm_set_kokkos_tools(tried, sizeof tried);
    if (cfg.nccl)
        sm_set_nccl(tried, sizeof tried);
    if (cfg.causal)
        sm_set_causal(&cfg, tried, sizeof tried);
    sm_set_python_path(); /* the user API, with or without --python */
    if (cfg.gpu != SM_GPU_NO) {
        bool asked = cfg.gpu == SM_GPU_YES;
        sm_set_cuda_injection(name, asked,
                              asked || libs.cuda || sm_program_has_cuda_runtime(path), tried,
                              sizeof tried);
        sm_set_amd(asked, &libs, tried, sizeof tried);
    }

    if (sm_log_verbosity() >= 1) {
        char cwd[PATH_MAX] = ".";
        const char *base = strrchr(path, '/');
        if (!getcwd(cwd, sizeof cwd))
            snprintf(cwd, sizeof cwd, ".");
        char where[2 * PATH_MAX + 64];
        if (output)
            snprintf(where, sizeof where, "%s", output);
        else
            snprintf(where, sizeof where, "%s/sysmeasure-%s-<date>-<time>-<pid>", cwd,
                     base ? base + 1 : path);
        sm_info(1, "running %s (trace: %s, profile: %s, output: %s)", path,
                cfg.trace ? "yes" : "no", cfg.profile ? "yes" : "no", where);
        sm_info(2, "LD_PRELOAD=%s", getenv("LD_PRELOAD"));
    }
    sm_config_free(&cfg);

    execv(path, argv + prog);
    if (errno == ENOEXEC) {
        /* execvp runs a script without "#!" with the shell; so do we. */
        int n = argc - prog;
        char **sh = calloc((size_t)n + 2, sizeof *sh);
        if (sh) {
            sh[0] = "/bin/sh";
            sh[1] = path;
            for (int k = 1; k < n; k++)
                sh[k + 1] = argv[prog + k];
            execv("/bin/sh", sh);
            errno = ENOEXEC;
        }
    }
    sm_die(SM_EXIT_NOEXEC, "cannot run program '%s': %s", name, strerror(errno));
}
