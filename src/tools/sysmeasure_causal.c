/* sysmeasure-causal: causal profiling end to end, over several runs.
 *
 *     sysmeasure-causal -n RUNS [-o DIR] [SYSMEASURE OPTIONS] -- PROGRAM [ARGS]
 *
 * Runs `sysmeasure --causal --causal-end-to-end --causal-speedup S
 * --output DIR/run<k> [options] -- PROGRAM ARGS` RUNS times, S being 0 %
 * for every other run (the baseline) and 10, 20, ... 100 % in turn for
 * the others, then combines the runs: the run time less the delays
 * inserted, against the baseline's, is the program speedup each run
 * predicts for the function it sped up.  Writes DIR/causal/experiments.coz
 * (one experiment per run: Coz's viewer opens it) and
 * DIR/causal/experiments.json, and prints a table.  The options go to
 * sysmeasure (--causal-scope-function REGEX chooses the function).
 *
 * Exit status: the first failing run's (128 + its signal), else 0; 2 for
 * bad arguments; 1 when the combined files could not be written. */
#include "sm_build.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../util/fs.h"
#include "../util/json.h"
#include "../util/json_read.h"
#include "../util/log.h"

enum { SM_CAUSAL_USAGE = 2 };

static void sm_cz_usage(FILE *f)
{
    fprintf(f,
        "Usage: sysmeasure-causal -n RUNS [-o DIR] [SYSMEASURE OPTIONS] -- PROGRAM [ARGS]\n"
        "\n"
        "Causal profiling end to end, for a program with no progress point.\n"
        "Runs PROGRAM RUNS times under sysmeasure --causal --causal-end-to-end,\n"
        "every other run at 0 %% code speedup (the baseline), the others at 10,\n"
        "20, ... 100 %%, and combines the runs' times into DIR/causal/experiments.coz\n"
        "and DIR/causal/experiments.json.\n"
        "\n"
        "Options:\n"
        "  -n RUNS        How many runs (2 to 10000); half of them are baselines.\n"
        "  -o, --output DIR\n"
        "                 The folder of the combined profile and of every run\n"
        "                 (default sysmeasure-causal-PROGRAM-DATE-PID).\n"
        "  --causal-scope-function REGEX\n"
        "                 The function sped up; any other option of sysmeasure\n"
        "                 before -- is given to every run.\n"
        "  -h, --help     Show this help and exit.\n"
        "  --version      Show the version and exit.\n"
        "\n"
        "Examples:\n"
        "  sysmeasure-causal -n 10 --causal-scope-function '^kernel$' -- ./app\n"
        "      Ten runs: five baselines and five with kernel sped up.\n");
}

typedef struct sm_cz_run {
    char function[256];
    double speedup, effective_ns;
    int ok;
} sm_cz_run_t;

/* The one experiment of run k's folder. */
static int sm_cz_read(const char *dir, sm_cz_run_t *r)
{
    char path[PATH_MAX + 64], err[256];
    snprintf(path, sizeof path, "%s/causal/experiments.json", dir);
    sm_jv_t *doc = sm_jv_parse_file(path, SM_FS_INPUT_FOUND, NULL, err, sizeof err, NULL);
    const sm_jv_t *e = sm_jv_at(sm_jv_get(doc, "experiments"), 0);
    if (!e || !sm_jv_str(e, "function")) {
        sm_warning("%s: %s; that run is left out", path, doc ? "no experiment" : err);
        sm_jv_free(doc);
        return -1;
    }
    snprintf(r->function, sizeof r->function, "%s", sm_jv_str(e, "function"));
    r->speedup = sm_jv_num(e, "speedup", 0);
    r->effective_ns = sm_jv_num(e, "duration_ns", 0) - sm_jv_num(e, "delay_ns", 0);
    r->ok = r->effective_ns > 0;
    sm_jv_free(doc);
    return r->ok ? 0 : -1;
}

int main(int argc, char **argv)
{
    sm_log_set_program("sysmeasure-causal");
    long runs = 0;
    const char *out = NULL;
    int i = 1;
    for (; i < argc && strcmp(argv[i], "--"); i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc) {
            char *end;
            runs = strtol(argv[++i], &end, 10);
            if (*end || runs < 2 || runs > 10000) {
                sm_error("-n %s: expected a number of runs from 2 to 10000", argv[i]);
                return SM_CAUSAL_USAGE;
            }
        } else if ((!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) && i + 1 < argc) {
            out = argv[++i];
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            sm_cz_usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--version")) {
            printf("sysmeasure-causal %s\n", PACKAGE_VERSION);
            return 0;
        }
        /* anything else is sysmeasure's */
    }
    if (i >= argc - 1 || runs < 2) {
        sm_cz_usage(stderr);
        return SM_CAUSAL_USAGE;
    }
    int prog = i + 1;
    char launcher[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", launcher, sizeof launcher - 16);
    if (n <= 0) {
        sm_error("cannot find sysmeasure beside this program");
        return SM_CAUSAL_USAGE;
    }
    launcher[n] = '\0';
    char *slash = strrchr(launcher, '/');
    snprintf(slash ? slash + 1 : launcher, 16, "sysmeasure");
    char dir[PATH_MAX];
    if (out) {
        snprintf(dir, sizeof dir, "%s", out);
    } else {
        const char *base = strrchr(argv[prog], '/');
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        snprintf(dir, sizeof dir, "sysmeasure-causal-%s-%04d%02d%02d-%02d%02d%02d-%d",
                 base ? base + 1 : argv[prog], tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                 tm.tm_hour, tm.tm_min, tm.tm_sec, (int)getpid());
    }
    if (sm_mkdir_p(dir) != 0) {
        sm_error("cannot create %s: %s", dir, strerror(errno));
        return SM_CAUSAL_USAGE;
    }
    sm_cz_run_t *r = calloc((size_t)runs, sizeof *r);
    char **cmd = calloc((size_t)argc + 16, sizeof *cmd);
    if (!r || !cmd) {
        sm_error("out of memory");
        return 1;
    }
    int status = 0;
    for (long k = 0; k < runs; k++) {
        char run_dir[PATH_MAX + 32], speed[16];
        snprintf(run_dir, sizeof run_dir, "%s/run%ld", dir, k);
        snprintf(speed, sizeof speed, "%ld", k % 2 == 0 ? 0 : ((k / 2) % 10 + 1) * 10);
        int c = 0;
        cmd[c++] = launcher;
        cmd[c++] = "--causal";
        cmd[c++] = "--causal-end-to-end";
        cmd[c++] = "--causal-speedup";
        cmd[c++] = speed;
        cmd[c++] = "--output";
        cmd[c++] = run_dir;
        for (int a = 1; a < prog - 1; a++) {
            if (!strcmp(argv[a], "-n") || !strcmp(argv[a], "-o") || !strcmp(argv[a], "--output")) {
                a++;
                continue;
            }
            cmd[c++] = argv[a];
        }
        cmd[c++] = "--";
        for (int a = prog; a < argc; a++)
            cmd[c++] = argv[a];
        cmd[c] = NULL;
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            execv(launcher, cmd);
            sm_error("cannot run %s: %s", launcher, strerror(errno));
            _exit(127);
        }
        int st = 0;
        if (pid < 0 || waitpid(pid, &st, 0) < 0) {
            sm_error("cannot run %s: %s", launcher, strerror(errno));
            return 1;
        }
        int rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        if (rc && !status)
            status = rc;
        sm_cz_read(run_dir, &r[k]);
    }
    /* The baseline: the mean of the 0 % runs. */
    double base = 0;
    int nbase = 0;
    for (long k = 0; k < runs; k++)
        if (r[k].ok && r[k].speedup == 0) {
            base += r[k].effective_ns;
            nbase++;
        }
    if (!nbase) {
        sm_error("no run at 0 %% completed: nothing to compare with");
        return status ? status : 1;
    }
    base /= nbase;
    char cdir[PATH_MAX + 16];
    snprintf(cdir, sizeof cdir, "%s/causal", dir);
    if (sm_mkdir_p(cdir) != 0) {
        sm_error("cannot create %s: %s", cdir, strerror(errno));
        return 1;
    }
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/experiments.coz", cdir);
    FILE *coz = fopen(path, "w");
    sm_json_t j;
    int failed = !coz || sm_json_open(&j, cdir, "experiments.json") != 0;
    if (failed) {
        if (coz)
            fclose(coz);
        sm_error("writing %s failed", coz ? "experiments.json" : path);
        return 1;
    }
    fprintf(coz, "startup\ttime=0\n");
    sm_json_object_begin(&j);
    sm_json_field_int(&j, "version", 1);
    sm_json_field_string(&j, "mode", "end-to-end");
    sm_json_field_int(&j, "runs", runs);
    sm_json_field_double(&j, "baseline_ns", base);
    sm_json_key(&j, "experiments");
    sm_json_array_begin(&j);
    printf("sysmeasure-causal: %ld runs, baseline %.3f s (%d runs at 0 %%)\n", runs, base / 1e9,
           nbase);
    printf("  %-32s %8s %10s %10s\n", "FUNCTION", "CODE", "RUN (s)", "PROGRAM");
    for (long k = 0; k < runs; k++) {
        if (!r[k].ok)
            continue;
        double predicted = 1 - r[k].effective_ns / base;
        fprintf(coz, "experiment\tselected=%s\tspeedup=%.2f\tduration=%.0f\tselected-samples=0\n"
                     "throughput-point\tname=end-to-end\tdelta=1\n",
                r[k].function, r[k].speedup, r[k].effective_ns);
        sm_json_object_begin_inline(&j);
        sm_json_field_int(&j, "run", k);
        sm_json_field_string(&j, "function", r[k].function);
        sm_json_field_double(&j, "speedup", r[k].speedup);
        sm_json_field_double(&j, "effective_ns", r[k].effective_ns);
        sm_json_field_double(&j, "program_speedup", predicted);
        sm_json_object_end(&j);
        printf("  %-32.32s %7.0f%% %10.3f %+9.1f%%\n", r[k].function, 100 * r[k].speedup,
               r[k].effective_ns / 1e9, 100 * predicted);
    }
    sm_json_array_end(&j);
    sm_json_object_end(&j);
    fprintf(coz, "runtime\ttime=0\n");
    failed = fclose(coz) != 0;
    failed |= sm_json_close(&j) != 0;
    printf("sysmeasure-causal: output in %s\n", dir);
    free(r);
    free(cmd);
    return status ? status : failed;
}
