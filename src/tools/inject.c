/* The core loaded into a running program through ptrace (inject.h). */
#define _GNU_SOURCE
#include "inject.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ptrace_stacks.h"
#include "../util/fs.h"

#if defined(__x86_64__)

/* The start of the object whose file is `path` (same inode) in pid's
 * memory (pid 0: ours); 0 when not mapped. */
static uint64_t sm_inj_base(long pid, const char *path)
{
    struct stat want;
    if (stat(path, &want) != 0)
        return 0;
    char maps[64], line[PATH_MAX + 256];
    if (pid)
        snprintf(maps, sizeof maps, "/proc/%ld/maps", pid);
    else
        snprintf(maps, sizeof maps, "/proc/self/maps");
    FILE *f = fopen(maps, "r");
    if (!f)
        return 0;
    uint64_t base = 0;
    while (!base && fgets(line, sizeof line, f)) {
        unsigned long long start, off, inode;
        char file[PATH_MAX];
        unsigned long long end;
        char perms[8], dev[16];
        if (sscanf(line, "%llx-%llx %7s %llx %15s %llu %4095s", &start, &end, perms, &off, dev,
                   &inode, file) != 7)
            continue;
        if (inode == (unsigned long long)want.st_ino && off == 0)
            base = start;
    }
    fclose(f);
    return base;
}

/* The file of our own object holding addr. */
static int sm_inj_object_of(const void *addr, char *path, size_t len)
{
    Dl_info info;
    if (!dladdr(addr, &info) || !info.dli_fname)
        return -1;
    if (!realpath(info.dli_fname, path))
        snprintf(path, len, "%s", info.dli_fname);
    return 0;
}

static int sm_inj_poke(pid_t tid, uint64_t at, const void *data, size_t n)
{
    for (size_t i = 0; i < n; i += 8) {
        uint64_t word = 0;
        size_t k = n - i < 8 ? n - i : 8;
        if (k < 8) {
            errno = 0;
            long old = ptrace(PTRACE_PEEKDATA, tid, (void *)(at + i), NULL);
            if (errno)
                return -1;
            word = (uint64_t)old;
        }
        memcpy(&word, (const char *)data + i, k);
        if (ptrace(PTRACE_POKEDATA, tid, (void *)(at + i), (void *)word) != 0)
            return -1;
    }
    return 0;
}

/* fn(a0, a1) on the stopped thread tid, with data copied below its stack
 * (a0 == UINT64_MAX: a0 is that copy's address); its return value.  The
 * call returns to address 0: the fault stops the thread for us again. */
static int sm_inj_call(pid_t tid, const struct user_regs_struct *saved, uint64_t fn, uint64_t a0,
                       uint64_t a1, const void *data, size_t dlen, uint64_t *ret, int *pending)
{
    struct user_regs_struct r = *saved;
    uint64_t at = ((saved->rsp - 4096) & ~(uint64_t)15) - ((dlen + 15) & ~(size_t)15);
    uint64_t zero = 0, sp = at - 8; /* (16-aligned at the call, as the ABI wants) */
    if ((dlen && sm_inj_poke(tid, at, data, dlen) != 0) || sm_inj_poke(tid, sp, &zero, 8) != 0)
        return -1;
    r.rsp = sp;
    r.rip = fn;
    r.rdi = a0 == UINT64_MAX ? at : a0;
    r.rsi = a1;
    r.rax = 0;
    r.orig_rax = (uint64_t)-1; /* no system call to restart on the way */
    if (ptrace(PTRACE_SETREGS, tid, NULL, &r) != 0)
        return -1;
    for (;;) {
        if (ptrace(PTRACE_CONT, tid, NULL, NULL) != 0)
            return -1;
        int status;
        if (waitpid(tid, &status, __WALL) != tid || !WIFSTOPPED(status))
            return -1;
        int sig = WSTOPSIG(status);
        if (sig == SIGSEGV) {
            if (ptrace(PTRACE_GETREGS, tid, NULL, &r) != 0 || r.rip != 0)
                return -1; /* a real fault inside the call */
            *ret = r.rax;
            return 0;
        }
        if (sig != SIGTRAP && (status >> 16) == 0)
            *pending = sig; /* the program's: delivered after the detach */
    }
}

int sm_inject_core(long pid, const char *dir, int process_sampling, char *why, size_t len)
{
    if (sm_ptrace_refusal(pid, why, len) != 0)
        return -1;
    char lib[PATH_MAX], tried[PATH_MAX * 2], libc[PATH_MAX];
    if (sm_fs_find_library("libsysmeasure.so", lib, sizeof lib, tried, sizeof tried) != 0) {
        snprintf(why, len, "cannot find libsysmeasure.so (looked for %.*s)", (int)(len / 2),
                 tried);
        return -1;
    }
    char real[PATH_MAX];
    if (realpath(lib, real))
        snprintf(lib, sizeof lib, "%s", real);
    /* dlopen in the program: where it is in our C library, moved to where
     * the program has the same C library. */
    void *our_dlopen = dlsym(RTLD_DEFAULT, "dlopen");
    if (!our_dlopen || sm_inj_object_of(our_dlopen, libc, sizeof libc) != 0) {
        snprintf(why, len, "cannot find dlopen in this tool's C library");
        return -1;
    }
    uint64_t our_libc = sm_inj_base(0, libc), their_libc = sm_inj_base(pid, libc);
    if (!our_libc || !their_libc) {
        snprintf(why, len, "process %ld does not use this tool's C library (%s): a library "
                 "cannot be loaded into it from here", pid, libc);
        return -1;
    }
    uint64_t their_dlopen = their_libc + ((uint64_t)(uintptr_t)our_dlopen - our_libc);
    /* sysmeasure_injected_start: its offset in the library, from our own
     * loading of the same file. */
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    void *our_start = h ? dlsym(h, "sysmeasure_injected_start") : NULL;
    uint64_t our_lib = our_start ? sm_inj_base(0, lib) : 0;
    if (!our_lib) {
        snprintf(why, len, "%s has no sysmeasure_injected_start: %s", lib, dlerror());
        return -1;
    }
    uint64_t start_off = (uint64_t)(uintptr_t)our_start - our_lib;

    pid_t tid = (pid_t)pid; /* the main thread */
    if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) != 0) {
        snprintf(why, len, "cannot trace process %ld: %s", pid, strerror(errno));
        return -1;
    }
    int status = 0, pending = 0, rc = -1;
    struct user_regs_struct saved;
    if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) != 0 || waitpid(tid, &status, __WALL) != tid ||
        !WIFSTOPPED(status) || ptrace(PTRACE_GETREGS, tid, NULL, &saved) != 0) {
        snprintf(why, len, "cannot stop process %ld: %s", pid, strerror(errno));
        ptrace(PTRACE_DETACH, tid, NULL, NULL);
        return -1;
    }
    if ((status >> 16) != PTRACE_EVENT_STOP)
        pending = WSTOPSIG(status);
    uint64_t handle = 0, ok = (uint64_t)-1;
    if (sm_inj_call(tid, &saved, their_dlopen, UINT64_MAX, RTLD_NOW | RTLD_LOCAL, lib,
                    strlen(lib) + 1, &handle, &pending) != 0 || !handle) {
        snprintf(why, len, "loading %s into process %ld failed (dlopen in it returned %s)", lib,
                 pid, handle ? "an error" : "NULL");
    } else {
        uint64_t their_lib = sm_inj_base(pid, lib);
        if (!their_lib)
            snprintf(why, len, "%s is not mapped in process %ld after its dlopen", lib, pid);
        else if (sm_inj_call(tid, &saved, their_lib + start_off, UINT64_MAX,
                             (uint64_t)(process_sampling != 0), dir, strlen(dir) + 1, &ok,
                             &pending) != 0 || (int)ok != 0)
            snprintf(why, len, "sysmeasure could not start in process %ld (measured already? "
                     "its stderr says why)", pid);
        else
            rc = 0;
    }
    /* Back to where it was, as if nothing happened. */
    ptrace(PTRACE_SETREGS, tid, NULL, &saved);
    ptrace(PTRACE_DETACH, tid, NULL, (void *)(long)pending);
    return rc;
}

#else

int sm_inject_core(long pid, const char *dir, int process_sampling, char *why, size_t len)
{
    (void)dir;
    (void)process_sampling;
    snprintf(why, len, "process %ld was not started under sysmeasure, and loading sysmeasure "
             "into a running program is done for x86_64 only", pid);
    return -1;
}

#endif
