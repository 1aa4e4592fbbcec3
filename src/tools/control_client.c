/* Control endpoints, the client side (control_client.h). */
#include "control_client.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../core/window.h"
#include "../util/log.h"

void sm_ctl_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

double sm_ctl_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---------------------------------------------------------------- the endpoints */



/* PID's control folder: the one it holds open (window.c).  0, or -1 after
 * one line. */
int sm_ctl_find_pid(long pid, char *dir, size_t len, int say)
{
    char path[64], comm[256] = "?";
    snprintf(path, sizeof path, "/proc/%ld/comm", pid);
    FILE *f = fopen(path, "r");
    if (!f) {
        if (say)
            sm_error("no process %ld%s", pid, errno == ENOENT ? "" : ": /proc cannot say");
        return -1;
    }
    if (fgets(comm, sizeof comm, f))
        comm[strcspn(comm, "\n")] = '\0';
    fclose(f);
    snprintf(path, sizeof path, "/proc/%ld/fd", pid);
    DIR *d = opendir(path);
    if (!d) {
        if (say)
            sm_error("cannot look into process %ld (%s): %s (another user's process?)", pid, comm,
                 strerror(errno));
        return -1;
    }
    struct dirent *e;
    int found = 0;
    while (!found && (e = readdir(d)) != NULL) {
        char link[PATH_MAX + 64], target[PATH_MAX];
        snprintf(link, sizeof link, "%s/%s", path, e->d_name);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n <= 0)
            continue;
        target[n] = '\0';
        size_t k = strlen("/" SM_WINDOW_CONTROL_DIR);
        if ((size_t)n > k && !strcmp(target + n - k, "/" SM_WINDOW_CONTROL_DIR)) {
            snprintf(dir, len, "%s", target);
            found = 1;
        }
    }
    closedir(d);
    if (!found && say)
        sm_error("process %ld (%s) has no sysmeasure control endpoint: start it with "
                 "`sysmeasure --dormant` to attach to it later", pid, comm);
    return found ? 0 : -1;
}

static int sm_ctl_is_endpoint(const char *name)
{
    size_t n = strlen(name);
    if (name[0] == '.' || !strcmp(name, "request"))
        return 0;
    const char *const tails[] = {".state", ".request", ".tmp"};
    for (size_t i = 0; i < sizeof tails / sizeof *tails; i++) {
        size_t k = strlen(tails[i]);
        if (n > k && !strcmp(name + n - k, tails[i]))
            return 0;
    }
    return 1;
}

/* A process of this node that is gone: its endpoint is left over. */
static int sm_ctl_gone(const char *name)
{
    char host[64] = "";
    gethostname(host, sizeof host - 1);
    const char *dot = strrchr(name, '.');
    if (!dot || (size_t)(dot - name) != strlen(host) || strncmp(name, host, strlen(host)))
        return 0; /* another node's: it answers or not */
    char path[64];
    snprintf(path, sizeof path, "/proc/%s", dot + 1);
    return access(path, F_OK) != 0;
}

/* Every endpoint of the folder (the job). */
sm_ctl_ep_t *sm_ctl_job_endpoints(const char *dir, size_t *count)
{
    DIR *d = opendir(dir);
    *count = 0;
    if (!d)
        return NULL;
    size_t cap = 0;
    sm_ctl_ep_t *eps = NULL;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!sm_ctl_is_endpoint(e->d_name) || sm_ctl_gone(e->d_name))
            continue;
        if (*count == cap) {
            cap = cap ? 2 * cap : 64;
            sm_ctl_ep_t *grown = realloc(eps, cap * sizeof *eps);
            if (!grown)
                break;
            eps = grown;
        }
        memset(&eps[*count], 0, sizeof *eps);
        snprintf(eps[*count].name, sizeof eps->name, "%s", e->d_name);
        (*count)++;
    }
    closedir(d);
    return eps;
}

sm_ctl_ep_t *sm_ctl_job_open(const char *job, char *dir, size_t len, size_t *count,
                             int *bad_usage)
{
    char real[PATH_MAX];
    *count = 0;
    *bad_usage = 0;
    if (!realpath(job, real)) {
        sm_error("--job %s: %s", job, strerror(errno));
        *bad_usage = 1;
        return NULL;
    }
    snprintf(dir, len, "%.*s/%s", PATH_MAX - 16, real, SM_WINDOW_CONTROL_DIR);
    sm_ctl_ep_t *eps = sm_ctl_job_endpoints(dir, count);
    if (!*count) {
        sm_error("--job %s: no process of a job started with `sysmeasure --dormant "
                 "--output %s` runs (%s has no endpoint)", job, job, dir);
        free(eps);
        return NULL;
    }
    return eps;
}

/* The sequence number at the head of a file, 0 when none. */
unsigned long long sm_ctl_file_seq(const char *path, char *rest, size_t len)
{
    char line[PATH_MAX + 128];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, line, sizeof line - 1);
    close(fd);
    if (n <= 0)
        return 0;
    line[n] = '\0';
    line[strcspn(line, "\n")] = '\0';
    char *end;
    unsigned long long seq = strtoull(line, &end, 10);
    if (rest)
        snprintf(rest, len, "%s", *end == ' ' ? end + 1 : "");
    return end == line ? 0 : seq;
}

int sm_ctl_put(const char *dir, const char *name, const char *text)
{
    char path[PATH_MAX + 256], tmp[PATH_MAX + 300];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s/.%s.%d.tmp", dir, name, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -1;
    int ok = fputs(text, f) >= 0;
    ok &= fclose(f) == 0;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* Waits until each endpoint answered seq (or the timeout); the number that
 * answered. */
size_t sm_ctl_wait(const char *dir, sm_ctl_ep_t *eps, size_t n,
                             unsigned long long seq, long timeout_ms)
{
    double until = sm_ctl_now_s() + (double)timeout_ms / 1e3;
    size_t answered = 0;
    long pause_ms = 20; /* growing to 500: a job's many files on a shared file system */
    for (;;) {
        answered = 0;
        for (size_t i = 0; i < n; i++) {
            if (!eps[i].answered) {
                char path[PATH_MAX + 256], rest[PATH_MAX + 64];
                snprintf(path, sizeof path, "%s/%s.state", dir, eps[i].name);
                if (sm_ctl_file_seq(path, rest, sizeof rest) >= seq) {
                    eps[i].answered = 1;
                    char *sp = strchr(rest, ' ');
                    snprintf(eps[i].state, sizeof eps[i].state, "%.*s",
                             sp ? (int)(sp - rest) : (int)strlen(rest), rest);
                    snprintf(eps[i].text, sizeof eps[i].text, "%s", sp ? sp + 1 : "");
                }
            }
            answered += eps[i].answered;
        }
        if (answered == n || sm_ctl_now_s() >= until)
            return answered;
        sm_ctl_sleep_ms(pause_ms);
        if (pause_ms < 500)
            pause_ms += pause_ms / 2;
    }
}

/* The processes that did not answer, named in one line. */
void sm_ctl_say_silent(const sm_ctl_ep_t *eps, size_t n, const char *what)
{
    char list[1024] = "";
    size_t silent = 0, at = 0;
    for (size_t i = 0; i < n; i++)
        if (!eps[i].answered) {
            silent++;
            if (at < sizeof list - 140)
                at += (size_t)snprintf(list + at, sizeof list - at, "%s%s", at ? ", " : "",
                                       eps[i].name);
        }
    if (silent)
        sm_warning("%zu of %zu processes did not answer %s in time: %s%s", silent, n, what, list,
                   at >= sizeof list - 140 ? ", ..." : "");
}

unsigned long long sm_ctl_next_seq(const char *dir, const char *req, const sm_ctl_ep_t *eps,
                                   size_t n)
{
    char path[PATH_MAX + 256];
    snprintf(path, sizeof path, "%s/%s", dir, req);
    unsigned long long seq = sm_ctl_file_seq(path, NULL, 0);
    for (size_t i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%s.state", dir, eps[i].name);
        unsigned long long s = sm_ctl_file_seq(path, NULL, 0);
        if (s > seq)
            seq = s;
    }
    return seq + 1;
}
