/* Stacks of a process not under sysmeasure (ptrace_stacks.h). */
#define _GNU_SOURCE
#include "ptrace_stacks.h"
#include "sm_build.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef SM_HAVE_UNWIND_PTRACE
#include <libunwind-ptrace.h>
#endif

/* A field of /proc/PID/status as a number; -1 when absent. */
static long sm_pt_status(long pid, const char *field)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%ld/status", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long v = -1;
    size_t n = strlen(field);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, field, n) && line[n] == ':') {
            v = strtol(line + n + 1, NULL, 10);
            break;
        }
    fclose(f);
    return v;
}

static void sm_pt_comm(long pid, char *out, size_t len)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/comm", pid);
    snprintf(out, len, "?");
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    if (fgets(out, (int)len, f))
        out[strcspn(out, "\n")] = '\0';
    fclose(f);
}

int sm_ptrace_refusal(long pid, char *why, size_t len)
{
    char comm[64];
    why[0] = '\0';
    if (sm_pt_status(pid, "Pid") < 0) {
        snprintf(why, len, "no process %ld", pid);
        return -1;
    }
    sm_pt_comm(pid, comm, sizeof comm);
    long tracer = sm_pt_status(pid, "TracerPid");
    if (tracer > 0) {
        char tcomm[64];
        sm_pt_comm(tracer, tcomm, sizeof tcomm);
        snprintf(why, len, "process %ld (%s) is traced by process %ld (%s) already, and a "
                 "process has one tracer at a time", pid, comm, tracer, tcomm);
        return -1;
    }
    /* Uid: real, effective, saved, fs: another user's process is not ours
     * to trace unless we are root. */
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%ld/status", pid);
    FILE *f = fopen(path, "r");
    long uid = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "Uid:", 4))
            uid = strtol(line + 4, NULL, 10);
    if (f)
        fclose(f);
    if (geteuid() != 0 && uid >= 0 && uid != (long)geteuid()) {
        snprintf(why, len, "process %ld (%s) belongs to user %ld: only its owner or root may "
                 "trace it", pid, comm, uid);
        return -1;
    }
    f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
    int scope = 0;
    if (f) {
        if (fscanf(f, "%d", &scope) != 1)
            scope = 0;
        fclose(f);
    }
    if (scope >= 3 || (scope == 2 && geteuid() != 0) || (scope == 1 && geteuid() != 0)) {
        snprintf(why, len, "kernel.yama.ptrace_scope is %d: %s", scope,
                 scope >= 3 ? "no process may be traced (until the next boot)"
                 : scope == 2 ? "only root may trace a process"
                              : "only a process's ancestors may trace it (run as root, or set "
                                "kernel.yama.ptrace_scope=0)");
        return -1;
    }
    return 0;
}

#ifdef SM_HAVE_UNWIND_PTRACE
/* One thread's frames, innermost first, into f. */
static void sm_pt_unwind(FILE *f, unw_addr_space_t as, pid_t tid)
{
    void *ui = _UPT_create(tid);
    unw_cursor_t c;
    if (!ui || unw_init_remote(&c, as, ui) != 0) {
        if (ui)
            _UPT_destroy(ui);
        return;
    }
    for (int depth = 0; depth < 128; depth++) {
        unw_word_t ip = 0, off = 0;
        if (unw_get_reg(&c, UNW_REG_IP, &ip) != 0 || !ip)
            break;
        char name[256];
        if (unw_get_proc_name(&c, name, sizeof name, &off) == 0 && name[0]) {
            for (char *p = name; *p; p++)
                if (*p == ' ')
                    *p = '_';
            fprintf(f, "frame %s ?\n", name);
        } else {
            fprintf(f, "frame 0x%llx ?\n", (unsigned long long)ip);
        }
        if (unw_step(&c) <= 0)
            break;
    }
    _UPT_destroy(ui);
}
#endif

int sm_ptrace_stacks(long pid, const char *path, char *why, size_t len)
{
    if (sm_ptrace_refusal(pid, why, len) != 0)
        return -1;
#ifndef SM_HAVE_UNWIND_PTRACE
    (void)path;
    snprintf(why, len, "process %ld is not under sysmeasure, and this sysmeasure was built "
             "without libunwind-ptrace (apt-get install libunwind-dev) to read its stacks", pid);
    return -1;
#else
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%ld/task", pid);
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(why, len, "cannot list the threads of process %ld: %s", pid, strerror(errno));
        return -1;
    }
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(why, len, "cannot write %s: %s", path, strerror(errno));
        closedir(d);
        return -1;
    }
    char host[64] = "";
    gethostname(host, sizeof host - 1);
    fprintf(f, "process %ld %s rank 0 of 1\n", pid, host);
    unw_addr_space_t as = unw_create_addr_space(&_UPT_accessors, 0);
    struct dirent *e;
    int traced = 0, rc = 0;
    while ((e = readdir(d)) != NULL) {
        pid_t tid = (pid_t)atoi(e->d_name);
        if (tid <= 0)
            continue;
        char tcomm[64] = "?", tpath[96];
        snprintf(tpath, sizeof tpath, "%ld/task/%d", pid, (int)tid);
        {
            char p[128];
            snprintf(p, sizeof p, "/proc/%s/comm", tpath);
            FILE *cf = fopen(p, "r");
            if (cf) {
                if (fgets(tcomm, sizeof tcomm, cf))
                    tcomm[strcspn(tcomm, "\n")] = '\0';
                fclose(cf);
            }
            for (char *q = tcomm; *q; q++)
                if (*q == ' ')
                    *q = '_';
        }
        /* Stopped only while its stack is read. */
        if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) != 0) {
            if (!traced) {
                snprintf(why, len, "cannot trace process %ld: %s", pid, strerror(errno));
                rc = -1;
                break;
            }
            fprintf(f, "silent %d %s\n", (int)tid, tcomm);
            continue;
        }
        traced++;
        int status = 0, pass = 0;
        if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) == 0 &&
            waitpid(tid, &status, __WALL) == tid && WIFSTOPPED(status)) {
            /* A signal that arrived meanwhile stops it first: handed on at
             * the detach, so the program still gets it. */
            if ((status >> 16) != PTRACE_EVENT_STOP)
                pass = WSTOPSIG(status);
            fprintf(f, "thread %d %s\n", (int)tid, tcomm);
            if (as)
                sm_pt_unwind(f, as, tid);
        } else {
            fprintf(f, "silent %d %s\n", (int)tid, tcomm);
        }
        ptrace(PTRACE_DETACH, tid, NULL, (void *)(long)pass);
    }
    closedir(d);
    if (as)
        unw_destroy_addr_space(as);
    if (fclose(f) != 0 && rc == 0) {
        snprintf(why, len, "cannot write %s: %s", path, strerror(errno));
        rc = -1;
    }
    return rc;
#endif
}
