/* sysmeasure-passes: GPU counters in application mode, one run per pass.
 *
 *     sysmeasure-passes [--passes N] -- COMMAND...
 *     sysmeasure-passes --merge DIR
 *
 * COMMAND is the whole job (`sysmeasure --gpu-counter-mode=application
 * --gpu-metrics-file f.txt ./app`, or `mpirun -np 4 sysmeasure ... ./app`).
 * It runs once per metric group (a pass) with SYSMEASURE_GPU_PASS=k and its
 * output in DIR/pass<k>, DIR being the command's --output (rewritten per
 * pass), else SYSMEASURE_OUTPUT, else sysmeasure-passes-PROGRAM-DATE-PID.
 * The number of passes is what pass 0 reports (metadata.json: gpu_passes)
 * unless --passes says it.  (Across nodes, have mpirun forward the two
 * variables: -x SYSMEASURE_GPU_PASS -x SYSMEASURE_OUTPUT.)  Then the passes
 * are merged into DIR (gpu_passes.h); --merge DIR merges pass folders
 * already there.
 *
 * Exit status: the first failing pass's (128 + the signal that ended it),
 * else 0; 2 for bad arguments or nothing to merge; 1 when a merged file
 * could not be written. */
#include "sm_build.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../core/runtime.h"
#include "../merge/gpu_passes.h"
#include "../util/fs.h"
#include "../util/json_read.h"
#include "../util/log.h"

enum { SM_PASSES_USAGE = 2 };

static void sm_passes_usage(FILE *f)
{
    fprintf(f, "Usage: sysmeasure-passes [--passes N] -- COMMAND...\n"
               "       sysmeasure-passes --merge DIR\n"
               "\n"
               "Collects GPU metrics that need several passes, one run per pass.\n"
               "Runs COMMAND (a sysmeasure run in --gpu-counter-mode=application, or an MPI\n"
               "launcher around one) once per GPU metric group, with SYSMEASURE_GPU_PASS=k\n"
               "and its output in DIR/pass<k>, then merges the passes into DIR by rank,\n"
               "call path, kernel and n-th launch (sysmeasure-merge --gpu-passes DIR).\n");
}

/* The command's --output value (NULL: none before "--") and where it is:
 * *at the argument holding it, *joined when it is "--output=DIR". */
static const char *sm_passes_output(char **cmd, int n, int *at, int *joined)
{
    for (int i = 0; i < n; i++) {
        if (!strcmp(cmd[i], "--"))
            break;
        if (!strcmp(cmd[i], "--output") && i + 1 < n) {
            *at = i + 1;
            *joined = 0;
            return cmd[i + 1];
        }
        if (!strncmp(cmd[i], "--output=", 9)) {
            *at = i;
            *joined = 1;
            return cmd[i] + 9;
        }
    }
    return NULL;
}

/* Runs argv with the pass's two variables; its exit status (128 + signal
 * when a signal ended it), or -1 when it could not start (said). */
static int sm_passes_run(char **argv, uint32_t pass, const char *folder)
{
    pid_t pid = fork();
    if (pid < 0) {
        sm_error("cannot start pass %u: %s", pass, strerror(errno));
        return -1;
    }
    if (pid == 0) {
        char k[16];
        snprintf(k, sizeof k, "%u", pass);
        setenv("SYSMEASURE_GPU_PASS", k, 1);
        setenv("SYSMEASURE_OUTPUT", folder, 1);
        execvp(argv[0], argv);
        sm_error("cannot run %s: %s", argv[0], strerror(errno));
        _exit(127);
    }
    /* The passes' own signals reach them (one process group): we wait. */
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

/* gpu_passes of pass 0's metadata.json: the number of passes; 0 when pass
 * 0 collected no GPU counters. */
static uint32_t sm_passes_count(const char *out)
{
    char path[PATH_MAX + 32], err[256];
    snprintf(path, sizeof path, "%s/pass0/metadata.json", out);
    sm_jv_t *doc = sm_jv_parse_file(path, SM_FS_INPUT_FOUND, NULL, err, sizeof err, NULL);
    const char *v = doc ? sm_jv_str(sm_jv_get(doc, "metadata"), "gpu_passes") : NULL;
    char *end = NULL;
    unsigned long n = v ? strtoul(v, &end, 10) : 0;
    if (!v || end == v || *end || n > 1000)
        n = 0;
    sm_jv_free(doc);
    return (uint32_t)n;
}

static int sm_passes_drive(char **cmd, int n, uint32_t passes)
{
    int at = -1, joined = 0;
    const char *given = sm_passes_output(cmd, n, &at, &joined);
    if (!given || !*given)
        given = getenv("SYSMEASURE_OUTPUT");
    char out[PATH_MAX];
    if (given && *given) {
        snprintf(out, sizeof out, "%s", given);
    } else {
        const char *prog = strrchr(cmd[n - 1], '/');
        prog = prog ? prog + 1 : cmd[n - 1];
        char date[32];
        time_t now = time(NULL);
        struct tm tm;
        strftime(date, sizeof date, "%Y%m%d-%H%M%S", localtime_r(&now, &tm));
        snprintf(out, sizeof out, "sysmeasure-passes-%s-%s-%ld", prog, date, (long)getpid());
    }
    if (sm_mkdir_p(out) != 0) {
        sm_error("cannot create the output folder %s: %s", out, strerror(errno));
        return SM_PASSES_USAGE;
    }
    char abs[PATH_MAX];
    if (realpath(out, abs))
        snprintf(out, sizeof out, "%s", abs);
    char **argv = calloc((size_t)n + 1, sizeof *argv);
    if (!argv) {
        sm_error("out of memory");
        return SM_PASSES_USAGE;
    }
    memcpy(argv, cmd, (size_t)n * sizeof *argv);
    for (uint32_t k = 0; !passes || k < passes; k++) {
        char folder[PATH_MAX + 32], arg[PATH_MAX + 48];
        snprintf(folder, sizeof folder, "%s/pass%u", out, k);
        if (at >= 0) {
            snprintf(arg, sizeof arg, "%s%s", joined ? "--output=" : "", folder);
            argv[at] = arg;
        }
        int rc = sm_passes_run(argv, k, folder);
        if (rc != 0) {
            if (rc > 0)
                sm_error("pass %u ended with exit code %d: the passes stop there", k, rc);
            free(argv);
            return rc > 0 ? rc : SM_PASSES_USAGE;
        }
        if (!passes && !(passes = sm_passes_count(out))) {
            sm_warning("pass 0 collected no GPU counters (see %s/pass0/metadata.json): no "
                       "further passes",
                       out);
            free(argv);
            return 0;
        }
    }
    free(argv);
    return sm_gpu_passes_merge(out);
}

int main(int argc, char **argv)
{
    sm_log_set_program("sysmeasure-passes");
    sm_runtime_discard_output(); /* never measure ourselves */
    uint32_t passes = 0;
    int i = 1;
    if (argc == 3 && !strcmp(argv[1], "--merge")) {
        char dir[PATH_MAX];
        if (!realpath(argv[2], dir))
            snprintf(dir, sizeof dir, "%s", argv[2]);
        return sm_gpu_passes_merge(dir);
    }
    for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (!strcmp(argv[i], "--passes") && i + 1 < argc) {
            char *end = NULL;
            long n = strtol(argv[++i], &end, 10);
            if (end == argv[i] || *end || n < 1 || n > 1000) {
                sm_error("--passes needs a number from 1 to 1000, not '%s'", argv[i]);
                return SM_PASSES_USAGE;
            }
            passes = (uint32_t)n;
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            sm_passes_usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--version")) {
            printf("sysmeasure-passes %s\n", PACKAGE_VERSION);
            return 0;
        } else {
            sm_error("unknown argument '%s' (usage: sysmeasure-passes [--passes N] -- "
                     "COMMAND..., or --merge DIR)",
                     argv[i]);
            return SM_PASSES_USAGE;
        }
    }
    if (i + 1 >= argc) {
        sm_error("no command after '--' (usage: sysmeasure-passes [--passes N] -- COMMAND...)");
        return SM_PASSES_USAGE;
    }
    return sm_passes_drive(argv + i + 1, argc - i - 1, passes);
}
