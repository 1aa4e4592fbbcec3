/* Windows of a --dormant run (window.h). */
#define _GNU_SOURCE
#include "window.h"
#include "runtime_private.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buffer.h"
#include "clock.h"
#include "events.h"
#include "location.h"
#include "metrics.h"
#include "profile.h"
#include "stacks.h"
#include "../util/fs.h"
#include "../util/log.h"

/* A request file's last sequence number handled, per file. */
enum { SM_REQ_JOB, SM_REQ_OWN, SM_REQ_COUNT };

static struct {
    char dir[PATH_MAX + 16];  /* <output>/.control */
    char name[128];           /* <host>.<pid> */
    char base[PATH_MAX];      /* the output folder the run began with */
    char window[PATH_MAX + 64]; /* the open window's folder */
    pid_t pid;                /* the process that started it (not a forked child) */
    int dir_fd;               /* held open: sysmeasure-attach PID finds the folder by it */
    int wake[2];              /* a pipe: the end wakes the thread */
    pthread_t thread;
    int running;
    unsigned long long seq[SM_REQ_COUNT];
    uint64_t t0, t0_realtime; /* the open window's start */
    unsigned windows;         /* windows written */
    int open;
} sm_w = {.dir_fd = -1, .wake = {-1, -1}};

/* Open and cut happen on the control thread, or at the end on the thread
 * that ends the run: never both at once. */
static pthread_mutex_t sm_w_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---------------------------------------------------------------- files */

/* path's content replaced by text, through a new file renamed into place
 * (a reader on another node sees the old or the new, never half). */
static int sm_w_put(const char *name, const char *text)
{
    char path[PATH_MAX + 256], tmp[PATH_MAX + 300];
    snprintf(path, sizeof path, "%s/%s", sm_w.dir, name);
    snprintf(tmp, sizeof tmp, "%s/.%s.tmp", sm_w.dir, name);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return -1;
    size_t n = strlen(text);
    int ok = write(fd, text, n) == (ssize_t)n;
    ok &= close(fd) == 0;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

static void sm_w_answer(unsigned long long seq, const char *state, const char *text)
{
    char line[PATH_MAX + 128], name[160];
    snprintf(line, sizeof line, "%llu %s %s\n", seq, state, text ? text : "");
    snprintf(name, sizeof name, "%s.state", sm_w.name);
    if (sm_w_put(name, line) != 0)
        sm_warning("--dormant: cannot answer in %s: %s", sm_w.dir, strerror(errno));
}

/* A request: its sequence number and line, or 0 when there is none. */
static unsigned long long sm_w_read_request(int which, char *line, size_t len)
{
    char path[PATH_MAX + 256];
    if (which == SM_REQ_JOB)
        snprintf(path, sizeof path, "%s/request", sm_w.dir);
    else
        snprintf(path, sizeof path, "%s/%s.request", sm_w.dir, sm_w.name);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, line, len - 1);
    close(fd);
    if (n <= 0)
        return 0;
    line[n] = '\0';
    line[strcspn(line, "\n")] = '\0';
    char *end;
    unsigned long long seq = strtoull(line, &end, 10);
    if (end == line || *end != ' ')
        return 0;
    memmove(line, end + 1, strlen(end + 1) + 1);
    return seq;
}

/* ---------------------------------------------------------------- a window */

static int sm_w_open(const char *folder, char *why, size_t len)
{
    if (sm_w.open) {
        snprintf(why, len, "window %u is open already", sm_w.windows + 1);
        return -1;
    }
    if (folder[0] != '/') {
        snprintf(why, len, "the folder %s is not an absolute path", folder);
        return -1;
    }
    if (sm_runtime_set_output_dir(folder) != 0) {
        snprintf(why, len, "cannot create %s: %s", folder, strerror(errno));
        return -1;
    }
    snprintf(sm_w.window, sizeof sm_w.window, "%s", folder);
    uint64_t now = sm_clock_now();
    uint32_t n = sm_location_count();
    for (uint32_t i = 0; i < n; i++) {
        sm_location_t *loc = sm_location_get(i);
        if (loc->window_closed) {
            loc->window_closed = 0;
            loc->stack[0].start = now;
            __atomic_store_n(&loc->closed, 0, __ATOMIC_RELEASE);
        }
    }
    sm_w.t0 = now;
    sm_w.t0_realtime = sm_clock_realtime_at_init_ns() +
                       (sm_clock_monotonic_ns() - sm_clock_monotonic_at_init_ns());
    sm_w.open = 1;
    __atomic_store_n(&sm_dormant_idle, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&sm_measurement_on, 1, __ATOMIC_RELEASE);
    sm_info(1, "--dormant: window %u opened, into %s", sm_w.windows + 1, folder);
    return 0;
}

/* loc's state after its events were written: empty, as a new thread's. */
static void sm_w_reset(sm_location_t *loc, uint64_t now)
{
    sm_buffer_forget(loc);
    sm_profile_free(&loc->profile);
    sm_profile_init(&loc->profile);
    loc->sp = loc->stack;
    loc->stack[0].node = &loc->profile.root;
    loc->stack[0].start = now;
    loc->stack[0].child = 0;
    loc->deep_open = 0;
    loc->deep_enters = 0;
    loc->unmatched_leaves = 0;
    loc->stamp_frame = NULL;
    loc->pass_frame = NULL;
    memset(loc->record_count, 0, sizeof loc->record_count);
    memset(loc->record_words, 0, sizeof loc->record_words);
    memset(loc->transfer_total, 0, sizeof loc->transfer_total);
    if (loc->msg_matrix)
        memset(loc->msg_matrix, 0, 2 * sizeof *loc->msg_matrix * loc->msg_matrix_n);
}

/* The open window ends now: measurement off, the threads' open regions
 * closed at this time, this process's files written into the window's
 * folder, its buffers and profiles emptied for the next window.  0 or -1. */
static int sm_w_cut(const char *reason, char *why, size_t len)
{
    if (!sm_w.open) {
        snprintf(why, len, "no window is open");
        return -1;
    }
    __atomic_store_n(&sm_measurement_on, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&sm_dormant_idle, 1, __ATOMIC_RELEASE);
    uint64_t end = sm_clock_now();
    uint32_t n = sm_location_count();
    for (uint32_t i = 0; i < n; i++) {
        sm_location_t *loc = sm_location_get(i);
        if (!__atomic_load_n(&loc->closed, __ATOMIC_ACQUIRE)) {
            loc->window_closed = 1;
            __atomic_store_n(&loc->closed, 1, __ATOMIC_RELEASE);
        }
    }
    /* An event that had begun before the switch finishes its few stores;
     * the end of the run closes other threads' regions the same way. */
    struct timespec pause = {0, 2000000};
    nanosleep(&pause, NULL);
    sm_clock_finish();

    sm_run_info_t w = sm_run;
    w.output_dir = sm_w.window;
    w.start_time = sm_w.t0;
    w.start_realtime_ns = sm_w.t0_realtime;
    w.end_time = end;
    w.end_realtime_ns = sm_clock_realtime_at_init_ns() +
                        (sm_clock_monotonic_ns() - sm_clock_monotonic_at_init_ns());
    w.spills = w.spilled_bytes = w.dropped_records = w.unmatched_leaves = 0;
    w.folded_enters = w.trace_folded_enters = 0;
    memset(w.record_count, 0, sizeof w.record_count);
    memset(w.record_words, 0, sizeof w.record_words);
    for (uint32_t i = 0; i < n; i++) {
        sm_location_t *loc = sm_location_get(i);
        if (loc->window_closed) /* (a thread that ended closed its own) */
            while (loc->sp != loc->stack)
                sm_event_leave_top(loc, end);
        w.spills += loc->buffer.spills;
        w.spilled_bytes += loc->buffer.spilled_bytes;
        w.dropped_records += loc->buffer.dropped_records;
        w.unmatched_leaves += loc->unmatched_leaves;
        w.folded_enters += loc->profile.folded_enters;
        w.trace_folded_enters += loc->deep_enters;
        for (int k = 0; k < SM_REC_KIND_COUNT; k++) {
            w.record_count[k] += loc->record_count[k];
            w.record_words[k] += loc->record_words[k];
        }
    }
    int rc = sm_end_layer.save_process(&w, reason);
    for (uint32_t i = 0; i < n; i++)
        sm_w_reset(sm_location_get(i), end);
    sm_metrics_restart();
    sm_w.open = 0;
    sm_w.windows++;
    (void)sm_runtime_set_output_dir(sm_w.base);
    if (rc != 0)
        snprintf(why, len, "this process's files could not be written (said on its stderr)");
    else
        sm_info(1, "--dormant: window %u written into %s", sm_w.windows, sm_w.window);
    return rc;
}

/* ---------------------------------------------------------------- the control thread */

static void sm_w_handle(int which)
{
    char line[PATH_MAX + 64], why[PATH_MAX + 128] = "";
    unsigned long long seq = sm_w_read_request(which, line, sizeof line);
    if (!seq || seq <= sm_w.seq[which])
        return;
    sm_w.seq[which] = seq;
    pthread_mutex_lock(&sm_w_lock);
    if ((!strncmp(line, "on ", 3) || !strcmp(line, "off")) && !sm_runtime_config()->dormant) {
        sm_w_answer(seq, "failed", "measured from its start (not --dormant): no windows");
    } else if (!strncmp(line, "on ", 3)) {
        if (sm_w_open(line + 3, why, sizeof why) == 0)
            sm_w_answer(seq, "on", sm_w.window);
        else
            sm_w_answer(seq, sm_w.open ? "busy" : "failed", why);
    } else if (!strcmp(line, "stacks")) {
        char path[PATH_MAX + 256];
        snprintf(path, sizeof path, "%s/%s.stacks", sm_w.dir, sm_w.name);
        if (sm_stacks_write(path, sm_run.rank, sm_run.n_ranks, why, sizeof why) == 0)
            sm_w_answer(seq, "stacks", path);
        else
            sm_w_answer(seq, "failed", why);
    } else if (!strcmp(line, "off")) {
        char reason[64];
        snprintf(reason, sizeof reason, "window %u (sysmeasure-attach)", sm_w.windows + 1);
        if (!sm_w.open)
            sm_w_answer(seq, "failed", "no window is open");
        else if (sm_w_cut(reason, why, sizeof why) == 0)
            sm_w_answer(seq, "written", sm_w.window);
        else
            sm_w_answer(seq, "failed", why);
    } else {
        sm_w_answer(seq, "failed", "unknown request");
    }
    pthread_mutex_unlock(&sm_w_lock);
}

static void *sm_w_thread(void *arg)
{
    (void)arg;
    int in = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (in >= 0 && inotify_add_watch(in, sm_w.dir, IN_CLOSE_WRITE | IN_MOVED_TO) < 0) {
        close(in);
        in = -1; /* the once-a-second look alone */
    }
    for (;;) {
        struct pollfd p[2] = {{.fd = sm_w.wake[0], .events = POLLIN},
                              {.fd = in, .events = POLLIN}};
        int r = poll(p, in >= 0 ? 2 : 1, 1000);
        if (r < 0 && errno != EINTR)
            break;
        if (p[0].revents)
            break; /* the end */
        if (in >= 0 && p[1].revents) {
            char events[4096];
            while (read(in, events, sizeof events) > 0)
                ;
        }
        sm_w_handle(SM_REQ_JOB);
        sm_w_handle(SM_REQ_OWN);
    }
    if (in >= 0)
        close(in);
    return NULL;
}

int sm_window_start(void)
{
    char err[PATH_MAX + 256];
    if (sm_runtime_make_output_dir(err, sizeof err) != 0) {
        sm_error("--dormant: %s; sysmeasure-attach cannot reach this process", err);
        return -1;
    }
    snprintf(sm_w.base, sizeof sm_w.base, "%s", sm_outdir);
    snprintf(sm_w.dir, sizeof sm_w.dir, "%s/%s", sm_outdir, SM_WINDOW_CONTROL_DIR);
    char host[64] = "";
    gethostname(host, sizeof host - 1);
    sm_w.pid = getpid();
    snprintf(sm_w.name, sizeof sm_w.name, "%s.%d", host, (int)sm_w.pid);
    if (mkdir(sm_w.dir, 0755) != 0 && errno != EEXIST) {
        sm_error("--dormant: cannot create %s: %s; sysmeasure-attach cannot reach this process",
                 sm_w.dir, strerror(errno));
        return -1;
    }
    sm_w.dir_fd = open(sm_w.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    /* Requests made before this process began are not for it. */
    char line[PATH_MAX + 64];
    for (int i = 0; i < SM_REQ_COUNT; i++)
        sm_w.seq[i] = sm_w_read_request(i, line, sizeof line);
    char text[512];
    snprintf(text, sizeof text, "pid %d\nhost %s\nprogram %s\n", (int)sm_w.pid, host, sm_program);
    if (sm_w.dir_fd < 0 || sm_w_put(sm_w.name, text) != 0 || pipe2(sm_w.wake, O_CLOEXEC) != 0) {
        sm_error("--dormant: cannot make the control endpoint in %s: %s", sm_w.dir,
                 strerror(errno));
        return -1;
    }
    int e = sm_internal_thread_create(&sm_w.thread, 64 * 1024, sm_w_thread, NULL);
    if (e != 0) {
        sm_error("--dormant: cannot start the control thread: %s", strerror(e));
        return -1;
    }
    sm_w.running = 1;
    sm_info(1, "--dormant: control endpoint %s/%s", sm_w.dir, sm_w.name);
    return 0;
}

/* The last process of the folder to end removes the requests and the
 * answers, and the folder. */
static void sm_w_remove_control(void)
{
    DIR *d = opendir(sm_w.dir);
    if (!d)
        return;
    struct dirent *e;
    int others = 0;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        others += e->d_name[0] != '.' && strcmp(e->d_name, "request") != 0 &&
                  !(n > 6 && !strcmp(e->d_name + n - 6, ".state")) &&
                  !(n > 8 && !strcmp(e->d_name + n - 8, ".request"));
    }
    if (!others) {
        rewinddir(d);
        while ((e = readdir(d)) != NULL)
            if (e->d_name[0] != '.')
                (void)unlinkat(dirfd(d), e->d_name, 0);
    }
    closedir(d);
    rmdir(sm_w.dir); /* (only when empty) */
}

void sm_window_at_end(void)
{
    if (!sm_w.running || sm_w.pid != getpid())
        return;
    int ended_in_window = 0;
    sm_w.running = 0;
    char c = 0;
    if (write(sm_w.wake[1], &c, 1) == 1)
        pthread_join(sm_w.thread, NULL);
    pthread_mutex_lock(&sm_w_lock);
    if (sm_w.open) {
        char reason[96], why[PATH_MAX + 128];
        snprintf(reason, sizeof reason, "window %u (sysmeasure-attach), ended by the program's end",
                 sm_w.windows + 1);
        int rc = sm_w_cut(reason, why, sizeof why);
        ended_in_window = 1; /* (its answer stays for sysmeasure-attach to read) */
        /* The request's number is the tool's: the answer names the window. */
        sm_w_answer(sm_w.seq[SM_REQ_JOB] > sm_w.seq[SM_REQ_OWN] ? sm_w.seq[SM_REQ_JOB]
                                                                : sm_w.seq[SM_REQ_OWN],
                    rc == 0 ? "ended" : "failed", rc == 0 ? sm_w.window : why);
    }
    pthread_mutex_unlock(&sm_w_lock);
    char path[PATH_MAX + 256];
    snprintf(path, sizeof path, "%s/%s", sm_w.dir, sm_w.name);
    unlink(path);
    snprintf(path, sizeof path, "%s/%s.request", sm_w.dir, sm_w.name);
    unlink(path);
    if (sm_w.dir_fd >= 0)
        close(sm_w.dir_fd);
    sm_w.dir_fd = -1;
    if (!ended_in_window)
        sm_w_remove_control();
    /* The folder made for the endpoint at the start, when the job's folder
     * turned out to be another (a rank's own name before MPI_Init): gone
     * when empty. */
    if (strcmp(sm_w.base, sm_outdir) != 0)
        rmdir(sm_w.base);
}

void sm_window_after_fork_child(void)
{
    sm_w.running = 0;
}

/* ---------------------------------------------------------------- started from outside */

/* sysmeasure-attach PID of a program not started under sysmeasure: the
 * tool loads this library into it (a remote dlopen through ptrace) and
 * calls this on one of its threads.  The process becomes a --dormant one
 * with its endpoint in <dir>/.control; process sampling (its own thread)
 * is what it can measure, as nothing calls the wrappers (the program's
 * calls are bound to their libraries already).  0, or -1 (measured already,
 * or the configuration failed: said on the program's stderr). */
SM_EXPORT int sysmeasure_injected_start(const char *dir, int process_sampling);

int sysmeasure_injected_start(const char *dir, int process_sampling)
{
    if (sm_runtime_active || !dir || dir[0] != '/')
        return -1;
    /* The configuration comes from the environment: set for the start
     * only, and taken out again, so that what the program starts later
     * does not inherit it. */
    static const char *const names[] = {"SYSMEASURE_ENABLE", "SYSMEASURE_DORMANT",
                                        "SYSMEASURE_OUTPUT", "SYSMEASURE_MPI",
                                        "SYSMEASURE_PROCESS_SAMPLING"};
    const char *values[] = {"yes", "yes", dir, "no", process_sampling ? "yes" : "no"};
    char *old[sizeof names / sizeof *names];
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const char *v = getenv(names[i]);
        old[i] = v ? strdup(v) : NULL;
        setenv(names[i], values[i], 1);
    }
    int rc = sm_runtime_init();
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        if (old[i])
            setenv(names[i], old[i], 1);
        else
            unsetenv(names[i]);
        free(old[i]);
    }
    return rc == 0 && sm_w.running ? 0 : -1;
}
