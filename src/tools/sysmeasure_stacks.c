/* sysmeasure-stacks: where every thread of a job (or of some processes)
 * started under `sysmeasure --dormant` is now.  Each process's control
 * thread takes its threads' stacks (src/core/stacks.h) and the MPI call
 * each waits in; this tool merges them: threads on the same path share one
 * line with their ranks, as text (stdout) and JSON (--json FILE). */
#include "sm_build.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/runtime.h"
#include "../core/window.h"
#include "../util/json.h"
#include "../util/log.h"
#include "control_client.h"
#include "ptrace_stacks.h"

enum { SM_STACKS_OK = 0, SM_STACKS_FAILED = 1, SM_STACKS_USAGE = 2 };

static void sm_stacks_usage(FILE *f)
{
    fprintf(f,
        "Usage: sysmeasure-stacks [--json FILE] [--timeout TIME] --job FOLDER\n"
        "       sysmeasure-stacks [--json FILE] [--timeout TIME] PID...\n"
        "\n"
        "Where every thread of a job or of some processes is now.\n"
        "The call stacks of every thread of every process of a job started with\n"
        "sysmeasure --dormant or --control, or of the processes PID..., merged:\n"
        "threads on the same path share one line with their ranks, innermost call\n"
        "first; a thread inside MPI shows the call, its peer (source, dest or root),\n"
        "tag and communicator.  A process not started under sysmeasure is read\n"
        "through ptrace (libunwind-ptrace), stopped for the moment its stacks are\n"
        "read (no MPI call details then); one line says why when the kernel does\n"
        "not allow it (another tracer, another user, kernel.yama.ptrace_scope).\n"
        "\n"
        "Options:\n"
        "  --job FOLDER   Every process of the job whose output folder is FOLDER\n"
        "                 (other nodes too when FOLDER is on a file system they\n"
        "                 share).\n"
        "  --json FILE    Also write the merged stacks as JSON.\n"
        "  --timeout TIME  How long to wait for the processes (default 10s); those\n"
        "                 that do not answer are named.\n"
        "  -h, --help     Show this help and exit.\n"
        "  --version      Show the version and exit.\n"
        "\n"
        "Examples:\n"
        "  sysmeasure-stacks --job run1\n"
        "      For example: ranks 0-2: MPI_Allreduce(comm MPI_COMM_WORLD) < solve < main\n"
        "      and rank 3: MPI_Recv(source 0, tag 7, comm MPI_COMM_WORLD) < solve < main\n");
}

/* ---------------------------------------------------------------- threads read back */

typedef struct sm_thread {
    long pid;
    long rank;            /* -1: not of an MPI job */
    char name[64];
    char call[256];       /* "MPI_Recv(source 0, tag 7, ...)", or "" */
    char **frames;        /* innermost first, after the call */
    size_t n_frames;
    char *key;            /* call + frames: threads with the same key merge */
    int silent;
} sm_thread_t;

static sm_thread_t *sm_threads;
static size_t sm_n_threads, sm_cap_threads;

static sm_thread_t *sm_thread_new(void)
{
    if (sm_n_threads == sm_cap_threads) {
        size_t cap = sm_cap_threads ? 2 * sm_cap_threads : 256;
        sm_thread_t *grown = realloc(sm_threads, cap * sizeof *grown);
        if (!grown)
            return NULL;
        sm_threads = grown;
        sm_cap_threads = cap;
    }
    sm_thread_t *t = &sm_threads[sm_n_threads++];
    memset(t, 0, sizeof *t);
    return t;
}

/* The frames worth showing: those outside the MPI call the thread is in
 * (the library's inside is noise), up to main. */
static void sm_thread_finish(sm_thread_t *t, const char *call_fn)
{
    size_t first = 0;
    if (call_fn[0]) /* (the last: the MPI library's own may share the name) */
        for (size_t i = 0; i < t->n_frames; i++)
            if (!strcmp(t->frames[i], call_fn))
                first = i + 1;
    size_t last = t->n_frames;
    for (size_t i = first; i < t->n_frames; i++)
        if (!strcmp(t->frames[i], "main")) {
            last = i + 1;
            break;
        }
    size_t m = 0;
    for (size_t i = 0; i < t->n_frames; i++) {
        if (i >= first && i < last)
            t->frames[m++] = t->frames[i];
        else
            free(t->frames[i]);
    }
    t->n_frames = m;
    size_t len = strlen(t->call) + 2;
    for (size_t i = 0; i < m; i++)
        len += strlen(t->frames[i]) + 3;
    t->key = malloc(len);
    if (!t->key)
        return;
    snprintf(t->key, len, "%s", t->call);
    for (size_t i = 0; i < m; i++) {
        strcat(t->key, t->key[0] ? " < " : "");
        strcat(t->key, t->frames[i]);
    }
    if (!t->key[0])
        strcat(t->key, "(no frames)");
}

/* One process's file (stacks.h): its threads appended.  0 or -1. */
static int sm_read_stacks(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[1024], host[64] = "";
    long pid = 0, rank = -1;
    unsigned r = 0, n = 0;
    sm_thread_t *t = NULL;
    char call_fn[128] = "";
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (!strncmp(line, "process ", 8)) {
            if (sscanf(line + 8, "%ld %63s rank %u of %u", &pid, host, &r, &n) == 4)
                rank = n > 1 ? (long)r : -1;
        } else if (!strncmp(line, "thread ", 7) || !strncmp(line, "silent ", 7)) {
            if (t)
                sm_thread_finish(t, call_fn);
            if (!(t = sm_thread_new()))
                break;
            t->pid = pid;
            t->rank = rank;
            t->silent = line[0] == 's';
            const char *sp = strchr(line + 7, ' ');
            snprintf(t->name, sizeof t->name, "%s", sp ? sp + 1 : "?");
            call_fn[0] = '\0';
            if (t->silent)
                snprintf(t->call, sizeof t->call, "(did not answer: stopped, or signals blocked)");
        } else if (t && !strncmp(line, "call ", 5)) {
            char fn[128], kind[16], comm[64];
            int peer = 0, tag = -1;
            if (sscanf(line + 5, "%127s %15s %d tag %d comm %63s", fn, kind, &peer, &tag, comm) < 1)
                continue;
            snprintf(call_fn, sizeof call_fn, "%s", fn);
            char args[192] = "";
            size_t at = 0;
            if (strcmp(kind, "none") != 0)
                at += (size_t)snprintf(args + at, sizeof args - at, "%s %d", kind, peer);
            if (tag >= 0)
                at += (size_t)snprintf(args + at, sizeof args - at, "%stag %d", at ? ", " : "",
                                       tag);
            if (strchr(line, ' ') && strstr(line, " comm "))
                at += (size_t)snprintf(args + at, sizeof args - at, "%scomm %s", at ? ", " : "",
                                       comm);
            snprintf(t->call, sizeof t->call, "%s(%s)", fn, args);
        } else if (t && !strncmp(line, "frame ", 6)) {
            char fn[512];
            if (sscanf(line + 6, "%511s", fn) != 1)
                continue;
            char **grown = realloc(t->frames, (t->n_frames + 1) * sizeof *grown);
            if (!grown)
                break;
            t->frames = grown;
            t->frames[t->n_frames++] = strdup(fn);
        }
    }
    if (t)
        sm_thread_finish(t, call_fn);
    fclose(f);
    return 0;
}

/* ---------------------------------------------------------------- merged */

/* "0-2,5" from sorted, distinct values. */
static void sm_ranges(const long *v, size_t n, char *out, size_t len)
{
    size_t at = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n && at < len - 24;) {
        size_t j = i;
        while (j + 1 < n && v[j + 1] == v[j] + 1)
            j++;
        if (j > i)
            at += (size_t)snprintf(out + at, len - at, "%s%ld-%ld", at ? "," : "", v[i], v[j]);
        else
            at += (size_t)snprintf(out + at, len - at, "%s%ld", at ? "," : "", v[i]);
        i = j + 1;
    }
}

static int sm_cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

static int sm_cmp_thread(const void *a, const void *b)
{
    const sm_thread_t *x = a, *y = b;
    int k = strcmp(x->key ? x->key : "", y->key ? y->key : "");
    if (k)
        return k;
    long rx = x->rank >= 0 ? x->rank : x->pid, ry = y->rank >= 0 ? y->rank : y->pid;
    return (rx > ry) - (rx < ry);
}

typedef struct sm_group {
    size_t first, n;   /* threads [first, first + n) of the sorted array */
    long *who;         /* distinct ranks (or pids) */
    size_t n_who;
    long order;        /* its smallest rank or pid */
} sm_group_t;

static int sm_cmp_group(const void *a, const void *b)
{
    const sm_group_t *x = a, *y = b;
    return (x->order > y->order) - (x->order < y->order);
}

int main(int argc, char **argv)
{
    sm_log_set_program("sysmeasure-stacks");
    sm_runtime_discard_output(); /* never measure ourselves */
    const char *job = NULL, *json = NULL;
    long timeout_ms = 10000;
    long *pids = calloc((size_t)argc, sizeof *pids);
    size_t n_pids = 0;
    if (!pids)
        return SM_STACKS_FAILED;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            sm_stacks_usage(stdout);
            return SM_STACKS_OK;
        } else if (!strcmp(a, "--version")) {
            printf("sysmeasure-stacks %s\n", PACKAGE_VERSION);
            return SM_STACKS_OK;
        } else if (!strcmp(a, "--job") || !strcmp(a, "--json") || !strcmp(a, "--timeout")) {
            if (!v || !*v) {
                sm_error("%s needs a value (sysmeasure-stacks --help)", a);
                return SM_STACKS_USAGE;
            }
            i++;
            if (!strcmp(a, "--job"))
                job = v;
            else if (!strcmp(a, "--json"))
                json = v;
            else {
                char *end;
                double s = strtod(v, &end);
                timeout_ms = (long)(s * (!strcmp(end, "ms") ? 1 : !strcmp(end, "s") || !*end ? 1e3 : -1));
                if (end == v || timeout_ms <= 0) {
                    sm_error("--timeout %s: not a time (10s, 500ms)", v);
                    return SM_STACKS_USAGE;
                }
            }
        } else if (a[0] == '-') {
            sm_error("unknown option '%s' (sysmeasure-stacks --help)", a);
            return SM_STACKS_USAGE;
        } else {
            char *end;
            long pid = strtol(a, &end, 10);
            if (*end || pid <= 0) {
                sm_error("'%s' is not a process id (sysmeasure-stacks --help)", a);
                return SM_STACKS_USAGE;
            }
            pids[n_pids++] = pid;
        }
    }
    if (!job == !n_pids) {
        sm_error(job ? "process ids or --job FOLDER, not both"
                     : "no process given (usage: sysmeasure-stacks --job FOLDER, or PID...)");
        return SM_STACKS_USAGE;
    }

    /* Ask: one request per control folder (the job's), or per process. */
    size_t n_asked = 0, n_answered = 0;
    int failures = 0;
    for (size_t p = 0; p < (job ? 1 : n_pids); p++) {
        char dir[PATH_MAX];
        sm_ctl_ep_t *eps = NULL;
        size_t n = 0;
        const char *req = "request";
        char own[160];
        if (job) {
            int bad_usage;
            eps = sm_ctl_job_open(job, dir, sizeof dir, &n, &bad_usage);
            if (!eps)
                return bad_usage ? SM_STACKS_USAGE : SM_STACKS_FAILED;
        } else {
            if (sm_ctl_find_pid(pids[p], dir, sizeof dir, 0) != 0) {
                /* Not under sysmeasure: through ptrace, where allowed. */
                char path[64], why[PATH_MAX];
                snprintf(path, sizeof path, "/tmp/sysmeasure-stacks.%d.%ld", (int)getpid(),
                         pids[p]);
                n_asked++;
                if (sm_ptrace_stacks(pids[p], path, why, sizeof why) != 0 ||
                    sm_read_stacks(path) != 0) {
                    sm_error("%s", why);
                    failures++;
                } else {
                    n_answered++;
                }
                unlink(path);
                continue;
            }
            char host[64] = "";
            gethostname(host, sizeof host - 1);
            if (!(eps = calloc(1, sizeof *eps)))
                return SM_STACKS_FAILED;
            snprintf(eps->name, sizeof eps->name, "%s.%ld", host, pids[p]);
            snprintf(own, sizeof own, "%s.request", eps->name);
            req = own;
            n = 1;
        }
        unsigned long long seq = sm_ctl_next_seq(dir, req, eps, n);
        char text[64];
        snprintf(text, sizeof text, "%llu stacks\n", seq);
        if (sm_ctl_put(dir, req, text) != 0) {
            sm_error("cannot write the request into %s: %s", dir, strerror(errno));
            free(eps);
            failures++;
            continue;
        }
        n_asked += n;
        sm_ctl_wait(dir, eps, n, seq, timeout_ms);
        sm_ctl_say_silent(eps, n, "for their stacks");
        for (size_t i = 0; i < n; i++) {
            if (!eps[i].answered)
                continue;
            if (strcmp(eps[i].state, "stacks") != 0 || sm_read_stacks(eps[i].text) != 0) {
                sm_warning("process %s: no stacks (%s)", eps[i].name, eps[i].text);
                continue;
            }
            n_answered++;
            unlink(eps[i].text);
        }
        free(eps);
    }
    if (!n_answered) {
        if (n_asked > (size_t)failures)
            sm_error("no process gave its stacks (%zu asked)", n_asked);
        return SM_STACKS_FAILED;
    }

    /* Merge: threads on the same path, then the paths by their first rank. */
    qsort(sm_threads, sm_n_threads, sizeof *sm_threads, sm_cmp_thread);
    sm_group_t *groups = calloc(sm_n_threads, sizeof *groups);
    size_t n_groups = 0;
    for (size_t i = 0; groups && i < sm_n_threads;) {
        size_t j = i;
        while (j < sm_n_threads && !strcmp(sm_threads[j].key ? sm_threads[j].key : "",
                                           sm_threads[i].key ? sm_threads[i].key : ""))
            j++;
        sm_group_t *g = &groups[n_groups++];
        g->first = i;
        g->n = j - i;
        g->who = malloc(g->n * sizeof *g->who);
        for (size_t k = i; g->who && k < j; k++) {
            long w = sm_threads[k].rank >= 0 ? sm_threads[k].rank : sm_threads[k].pid;
            if (!g->n_who || g->who[g->n_who - 1] != w)
                g->who[g->n_who++] = w;
        }
        if (g->who)
            qsort(g->who, g->n_who, sizeof *g->who, sm_cmp_long);
        g->order = g->n_who ? g->who[0] : 0;
        i = j;
    }
    qsort(groups, n_groups, sizeof *groups, sm_cmp_group);
    int ranked = sm_n_threads && sm_threads[0].rank >= 0;
    printf("%zu process%s, %zu thread%s, %zu distinct stack%s\n", n_answered,
           n_answered == 1 ? "" : "es", sm_n_threads, sm_n_threads == 1 ? "" : "s", n_groups,
           n_groups == 1 ? "" : "s");
    for (size_t g = 0; g < n_groups; g++) {
        char list[4096];
        sm_ranges(groups[g].who, groups[g].n_who, list, sizeof list);
        const char *what = ranked ? (groups[g].n_who == 1 ? "rank" : "ranks")
                                  : (groups[g].n_who == 1 ? "pid" : "pids");
        char threads[48] = "";
        if (groups[g].n != groups[g].n_who)
            snprintf(threads, sizeof threads, " (%zu threads)", groups[g].n);
        printf("%s %s%s: %s\n", what, list, threads, sm_threads[groups[g].first].key);
    }
    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) {
            sm_error("cannot write %s: %s", json, strerror(errno));
            return SM_STACKS_FAILED;
        }
        sm_json_t j;
        sm_json_init(&j, f, 1);
        sm_json_object_begin(&j);
        sm_json_field_uint(&j, "processes", n_answered);
        sm_json_field_uint(&j, "threads", sm_n_threads);
        sm_json_key(&j, "stacks");
        sm_json_array_begin(&j);
        for (size_t g = 0; g < n_groups; g++) {
            const sm_thread_t *t = &sm_threads[groups[g].first];
            sm_json_object_begin(&j);
            sm_json_key(&j, ranked ? "ranks" : "pids");
            sm_json_array_begin_inline(&j);
            for (size_t k = 0; k < groups[g].n_who; k++)
                sm_json_int(&j, groups[g].who[k]);
            sm_json_array_end(&j);
            sm_json_field_uint(&j, "threads", groups[g].n);
            sm_json_field_string(&j, "call", t->call[0] ? t->call : NULL);
            sm_json_key(&j, "frames");
            sm_json_array_begin_inline(&j);
            for (size_t k = 0; k < t->n_frames; k++)
                sm_json_string(&j, t->frames[k]);
            sm_json_array_end(&j);
            sm_json_object_end(&j);
        }
        sm_json_array_end(&j);
        sm_json_object_end(&j);
        if (sm_json_finish(&j) != 0 || fclose(f) != 0) {
            sm_error("cannot write %s: %s", json, strerror(errno));
            return SM_STACKS_FAILED;
        }
    }
    return failures ? SM_STACKS_FAILED : SM_STACKS_OK;
}
