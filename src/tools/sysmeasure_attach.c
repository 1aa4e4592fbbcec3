/* sysmeasure-attach: a window of measurement in a program (or every process
 * of a job) started with `sysmeasure --dormant`.  It asks the processes'
 * control endpoints (src/core/window.h) to switch measurement on, waits
 * the window's duration, asks them to switch it off and write their files
 * into the window's folder, then merges those files into the window's
 * archive and summaries with the same pipeline as sysmeasure-merge. */
#include "sm_build.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../core/runtime.h"
#include "../core/window.h"
#include "control_client.h"
#include "inject.h"
#include "../merge/merge.h"
#include "../util/fs.h"
#include "../util/log.h"

enum { SM_ATTACH_OK = 0, SM_ATTACH_FAILED = 1, SM_ATTACH_USAGE = 2 };

static void sm_attach_usage(FILE *f)
{
    fprintf(f,
        "Usage: sysmeasure-attach [--duration TIME] [-o DIR] [--timeout TIME] [-v] PID\n"
        "       sysmeasure-attach [--duration TIME] [-o DIR] [--timeout TIME] [-v] --job FOLDER\n"
        "\n"
        "Measures a window of time in a program or job started with sysmeasure --dormant.\n"
        "The window is written as an output folder of its own (one OTF2 archive for\n"
        "the job, profile across ranks, metadata.json, report.html).  Regions open at\n"
        "the window's end are closed there; regions already open at its start are\n"
        "not in it.  A program not started under sysmeasure gets the core loaded\n"
        "through ptrace where the kernel allows it (process sampling only; one line\n"
        "says why when it is refused).\n"
        "\n"
        "Options:\n"
        "  --duration TIME  The window's length (default 10s; ms, s, m, h); Ctrl-C\n"
        "                 ends it early.\n"
        "  --job FOLDER   Every process of the job whose output folder (the\n"
        "                 launcher's -o) is FOLDER, on other nodes too when FOLDER\n"
        "                 is on a file system they share.\n"
        "  -o, --output DIR  Where the window is written (default FOLDER/window-1,\n"
        "                 window-2, ...).\n"
        "  --timeout TIME  How long to wait for the processes' answers (default 30s).\n"
        "  -v, --verbose  More messages on stderr.\n"
        "  -h, --help     Show this help and exit.\n"
        "  --version      Show the version and exit.\n"
        "\n"
        "Examples:\n"
        "  mpirun -np 64 sysmeasure --dormant -o run1 ./app &\n"
        "      A job measured only when asked.\n"
        "  sysmeasure-attach --job run1 --duration 30s\n"
        "      Thirty seconds of every rank, into run1/window-1.\n");
}

/* "30s", "500ms", "2m", "1h", "10" (seconds) -> ms; -1 when malformed. */
static long sm_attach_time(const char *text)
{
    char *end;
    double v = strtod(text, &end);
    if (end == text || v < 0)
        return -1;
    double ms = !strcmp(end, "ms") ? v : !strcmp(end, "s") || !*end ? v * 1e3
                : !strcmp(end, "m")                              ? v * 60e3
                : !strcmp(end, "h")                              ? v * 3600e3
                                                                 : -1;
    return ms < 0 || ms > 1e12 ? -1 : (long)ms;
}

static volatile sig_atomic_t sm_attach_interrupted;
static void sm_attach_on_signal(int sig)
{
    (void)sig;
    sm_attach_interrupted = 1;
}

/* The processes of eps that ended during the window opened by seq_on (and
 * wrote it): marked answered; how many of eps are. */
static size_t sm_attach_ended(const char *dir, sm_ctl_ep_t *eps, size_t n,
                              unsigned long long seq_on)
{
    size_t ended = 0;
    for (size_t i = 0; i < n; i++) {
        if (!eps[i].answered) {
            char path[PATH_MAX + 256], rest[PATH_MAX + 64];
            snprintf(path, sizeof path, "%s/%s.state", dir, eps[i].name);
            if (sm_ctl_file_seq(path, rest, sizeof rest) >= seq_on && !strncmp(rest, "ended ", 6)) {
                eps[i].answered = 1;
                snprintf(eps[i].state, sizeof eps[i].state, "ended");
                snprintf(eps[i].text, sizeof eps[i].text, "%.*s", PATH_MAX - 1, rest + 6);
            }
        }
        ended += eps[i].answered;
    }
    return ended;
}

/* A process not started under sysmeasure: the core loaded into it
 * (inject.h), its output folder ./sysmeasure-<program>-<pid>; then its
 * control folder into dir.  0, or -1 after one line. */
static int sm_attach_inject(long pid, char *dir)
{
    char comm[64] = "program", path[64], base[PATH_MAX], why[PATH_MAX + 256];
    snprintf(path, sizeof path, "/proc/%ld/comm", pid);
    FILE *f = fopen(path, "r");
    if (!f) {
        sm_error("no process %ld", pid);
        return -1;
    }
    if (fgets(comm, sizeof comm, f))
        comm[strcspn(comm, "\n")] = '\0';
    fclose(f);
    for (char *p = comm; *p; p++)
        if (*p == '/' || *p == ' ')
            *p = '_';
    char cwd[PATH_MAX / 2];
    if (!getcwd(cwd, sizeof cwd))
        snprintf(cwd, sizeof cwd, "/tmp");
    snprintf(base, sizeof base, "%s/sysmeasure-%s-%ld", cwd, comm, pid);
    if (sm_inject_core(pid, base, 1, why, sizeof why) != 0) {
        sm_error("%s", why);
        return -1;
    }
    for (int i = 0; i < 100; i++) { /* its control thread makes the endpoint */
        if (sm_ctl_find_pid(pid, dir, PATH_MAX, 0) == 0) {
            sm_info(0, "process %ld (%s) was not started under sysmeasure: sysmeasure is loaded "
                    "into it now; a window measures its process sampling only (its calls into "
                    "MPI and other libraries are bound already and are not seen)", pid, comm);
            return 0;
        }
        sm_ctl_sleep_ms(20);
    }
    sm_error("sysmeasure was loaded into process %ld, but its control endpoint did not appear in "
             "%s/.control", pid, base);
    return -1;
}

/* ---------------------------------------------------------------- main */

int main(int argc, char **argv)
{
    sm_log_set_program("sysmeasure-attach");
    sm_runtime_discard_output(); /* never measure ourselves */
    const char *job = NULL, *out = NULL;
    long pid = -1, duration_ms = 10000, timeout_ms = 30000;
    int verbose = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            sm_attach_usage(stdout);
            return SM_ATTACH_OK;
        } else if (!strcmp(a, "--version")) {
            printf("sysmeasure-attach %s\n", PACKAGE_VERSION);
            return SM_ATTACH_OK;
        } else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
            verbose++;
        } else if (!strcmp(a, "--job") || !strcmp(a, "-o") || !strcmp(a, "--output") ||
                   !strcmp(a, "--duration") || !strcmp(a, "--timeout")) {
            if (!v || !*v) {
                sm_error("%s needs a value (sysmeasure-attach --help)", a);
                return SM_ATTACH_USAGE;
            }
            i++;
            if (!strcmp(a, "--job"))
                job = v;
            else if (!strcmp(a, "-o") || !strcmp(a, "--output"))
                out = v;
            else {
                long ms = sm_attach_time(v);
                if (ms < 0) {
                    sm_error("%s %s: not a time (30s, 500ms, 2m, 1h)", a, v);
                    return SM_ATTACH_USAGE;
                }
                *(!strcmp(a, "--duration") ? &duration_ms : &timeout_ms) = ms;
            }
        } else if (a[0] == '-') {
            sm_error("unknown option '%s' (sysmeasure-attach --help)", a);
            return SM_ATTACH_USAGE;
        } else if (pid < 0) {
            char *end;
            pid = strtol(a, &end, 10);
            if (*end || pid <= 0) {
                sm_error("'%s' is not a process id (sysmeasure-attach --help)", a);
                return SM_ATTACH_USAGE;
            }
        } else {
            sm_error("one process id only; a job's processes: --job FOLDER");
            return SM_ATTACH_USAGE;
        }
    }
    if ((pid > 0) == (job != NULL)) {
        sm_error(job ? "a process id or --job FOLDER, not both"
                     : "no process given (usage: sysmeasure-attach PID, or --job FOLDER)");
        return SM_ATTACH_USAGE;
    }
    sm_log_set_verbosity(verbose);

    /* The control folder and its endpoints. */
    char dir[PATH_MAX], base[PATH_MAX];
    sm_ctl_ep_t *eps = NULL;
    size_t n = 0;
    if (pid > 0) {
        if (sm_ctl_find_pid(pid, dir, sizeof dir, 0) != 0 && sm_attach_inject(pid, dir) != 0)
            return SM_ATTACH_FAILED;
        char host[64] = "";
        gethostname(host, sizeof host - 1);
        eps = calloc(1, sizeof *eps);
        if (!eps)
            return SM_ATTACH_FAILED;
        snprintf(eps->name, sizeof eps->name, "%s.%ld", host, pid);
        n = 1;
    } else {
        int bad_usage;
        eps = sm_ctl_job_open(job, dir, sizeof dir, &n, &bad_usage);
        if (!eps)
            return bad_usage ? SM_ATTACH_USAGE : SM_ATTACH_FAILED;
    }
    snprintf(base, sizeof base, "%.*s", (int)(strlen(dir) - strlen("/" SM_WINDOW_CONTROL_DIR)),
             dir);

    /* The window's folder: new, so that no other window's files mix in. */
    char window[PATH_MAX];
    if (out) {
        char cwd[PATH_MAX / 2] = ".";
        if (out[0] != '/' && !getcwd(cwd, sizeof cwd))
            snprintf(cwd, sizeof cwd, ".");
        snprintf(window, sizeof window, "%s%s%.*s", out[0] == '/' ? "" : cwd,
                 out[0] == '/' ? "" : "/", PATH_MAX / 2 - 2, out);
        if (sm_mkdir_p(window) != 0) {
            sm_error("cannot create %s: %s", window, strerror(errno));
            free(eps);
            return SM_ATTACH_FAILED;
        }
    } else {
        int k = 1;
        for (; k < 100000; k++) {
            snprintf(window, sizeof window, "%.*s/window-%d", PATH_MAX - 32, base, k);
            if (mkdir(window, 0755) == 0)
                break;
            if (errno != EEXIST) {
                sm_error("cannot create %s: %s", window, strerror(errno));
                free(eps);
                return SM_ATTACH_FAILED;
            }
        }
    }

    /* The request's number: above every number used in this folder. */
    const char *req = "request";
    char own_req[160];
    if (pid > 0) {
        snprintf(own_req, sizeof own_req, "%s.request", eps->name);
        req = own_req;
    }
    unsigned long long seq = sm_ctl_next_seq(dir, req, eps, n);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = sm_attach_on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    char text[PATH_MAX + 64];
    snprintf(text, sizeof text, "%llu on %s\n", seq, window);
    if (sm_ctl_put(dir, req, text) != 0) {
        sm_error("cannot write the request into %s: %s", dir, strerror(errno));
        free(eps);
        return SM_ATTACH_FAILED;
    }
    size_t on = sm_ctl_wait(dir, eps, n, seq, timeout_ms);
    sm_ctl_say_silent(eps, n, "the window's start");
    size_t started = 0;
    for (size_t i = 0; i < n; i++) {
        if (eps[i].answered && !strcmp(eps[i].state, "on"))
            started++;
        else if (eps[i].answered)
            sm_warning("process %s: %s (%s)", eps[i].name, eps[i].text, eps[i].state);
    }
    if (!started) {
        sm_error("no process started the window (%zu of %zu answered)", on, n);
        rmdir(window);
        free(eps);
        return SM_ATTACH_FAILED;
    }
    sm_info(0, "window open in %zu process%s for %.1f s (Ctrl-C ends it now)", started,
            started == 1 ? "" : "es", (double)duration_ms / 1e3);
    /* From now on, the processes that started it. */
    unsigned long long seq_on = seq;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (eps[i].answered && !strcmp(eps[i].state, "on")) {
            eps[m] = eps[i];
            eps[m].answered = 0;
            m++;
        }
    /* A process that ends during the window writes it at its end and says
     * "ended": looked for once a second. */
    double end = sm_ctl_now_s() + (double)duration_ms / 1e3, look = sm_ctl_now_s() + 1;
    size_t ended = 0;
    while (!sm_attach_interrupted && sm_ctl_now_s() < end && ended < m) {
        double left = end - sm_ctl_now_s();
        sm_ctl_sleep_ms(left > 0.1 ? 100 : (long)(left * 1e3) + 1);
        if (sm_ctl_now_s() >= look) {
            ended = sm_attach_ended(dir, eps, m, seq_on);
            look = sm_ctl_now_s() + 1;
        }
    }
    ended = sm_attach_ended(dir, eps, m, seq_on);

    /* Off: those still running write their files (another request, a
     * snapshot of stacks, may have come meanwhile). */
    if (ended < m) {
        seq = sm_ctl_next_seq(dir, req, eps, m);
        snprintf(text, sizeof text, "%llu off\n", seq);
        if (sm_ctl_put(dir, req, text) != 0) {
            sm_error("cannot write the request into %s: %s; the window stays open", dir,
                     strerror(errno));
            free(eps);
            return SM_ATTACH_FAILED;
        }
        /* Writing takes longer than switching: the timeout counts from here. */
        sm_ctl_wait(dir, eps, m, seq, timeout_ms);
        sm_ctl_say_silent(eps, m, "the window's end");
    }
    size_t written = 0;
    for (size_t i = 0; i < m; i++) {
        if (eps[i].answered && (!strcmp(eps[i].state, "written") || !strcmp(eps[i].state, "ended")))
            written++;
        else if (eps[i].answered)
            sm_warning("process %s: %s (%s)", eps[i].name, eps[i].text, eps[i].state);
    }
    free(eps);
    if (!written) {
        sm_error("no process wrote the window into %s", window);
        return SM_ATTACH_FAILED;
    }
    sm_merge_options_t opt = {.job = NULL};
    int rc = (int)sm_merge_folder(window, &opt);
    return rc == SM_MERGE_OK ? SM_ATTACH_OK : SM_ATTACH_FAILED;
}
