/* Every thread's call stack now (stacks.h). */
#define _GNU_SOURCE
#include "stacks.h"

#include <dirent.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../util/symbols.h"

#define SM_ST_DEPTH 64
#define SM_ST_THREADS 1024

typedef struct sm_st_slot {
    pid_t tid;
    int n;
    void *ip[SM_ST_DEPTH];
    int has_note;
    sm_call_note_t note;
} sm_st_slot_t;

static sm_call_note_fn sm_st_note;
static sm_st_slot_t *sm_st_slots;
static int sm_st_next;
static sem_t sm_st_done;
/* One snapshot at a time (the control thread's; the lock is for safety). */
static pthread_mutex_t sm_st_lock = PTHREAD_MUTEX_INITIALIZER;

void sm_stacks_set_call_note(sm_call_note_fn fn)
{
    __atomic_store_n(&sm_st_note, fn, __ATOMIC_RELEASE);
}

/* On the thread whose stack is taken: stores only (backtrace was made
 * ready on the control thread first, so it neither loads nor allocates). */
static void sm_st_handler(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)si;
    (void)uc;
    int saved = errno;
    int i = __atomic_fetch_add(&sm_st_next, 1, __ATOMIC_ACQ_REL);
    if (i < SM_ST_THREADS && sm_st_slots) {
        sm_st_slot_t *s = &sm_st_slots[i];
        s->tid = (pid_t)syscall(SYS_gettid);
        s->n = backtrace(s->ip, SM_ST_DEPTH);
        sm_call_note_fn note = __atomic_load_n(&sm_st_note, __ATOMIC_ACQUIRE);
        memset(&s->note, 0, sizeof s->note);
        s->has_note = note && note(&s->note);
    }
    sem_post(&sm_st_done);
    errno = saved;
}

static int sm_st_free_signal(void)
{
    for (int s = SIGRTMAX - 3; s >= SIGRTMIN + 4; s--) {
        struct sigaction old;
        if (sigaction(s, NULL, &old) == 0 && !(old.sa_flags & SA_SIGINFO) &&
            old.sa_handler == SIG_DFL)
            return s;
    }
    return 0;
}

/* Whether thread tid blocks sig (then it is one of ours, or the program
 * keeps signals off it: it cannot answer). */
static int sm_st_blocks(pid_t tid, int sig)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/status", (int)tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 1;
    unsigned long long mask = 0;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "SigBlk:", 7))
            mask = strtoull(line + 7, NULL, 16);
    fclose(f);
    return (mask >> (sig - 1)) & 1;
}

static void sm_st_comm(pid_t tid, char *name, size_t len)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/comm", (int)tid);
    snprintf(name, len, "?");
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    if (fgets(name, (int)len, f))
        name[strcspn(name, "\n")] = '\0';
    fclose(f);
    for (char *p = name; *p; p++)
        if (*p == ' ' || *p < 32)
            *p = '_';
}

static void sm_st_put_frame(FILE *f, void *ip, int exact)
{
    sm_symbol_t sym;
    /* A return address is after its call: look up the call itself. */
    const char *addr = (const char *)ip - (exact ? 0 : 1);
    if (sm_symbol_lookup(addr, &sym) == 0 && sym.function[0]) {
        for (char *p = sym.function; *p; p++)
            if (*p == ' ')
                *p = '_';
        fprintf(f, "frame %s %s\n", sym.function, sym.object[0] ? sym.object : "?");
    } else {
        /* The offset in its object: the same in every process of the job
         * (the address is not, with address space randomisation). */
        if (sym.object[0])
            fprintf(f, "frame %s+0x%llx %s\n", sym.object, (unsigned long long)sym.offset,
                    sym.object);
        else
            fprintf(f, "frame 0x%llx ?\n", (unsigned long long)(uintptr_t)ip);
    }
}

int sm_stacks_write(const char *path, uint32_t rank, uint32_t n_ranks, char *why, size_t len)
{
    pthread_mutex_lock(&sm_st_lock);
    int rc = -1, sig = sm_st_free_signal();
    pid_t self = (pid_t)syscall(SYS_gettid);
    pid_t *sent = NULL;
    size_t n_sent = 0, cap = 0;
    if (!sig) {
        snprintf(why, len, "no free real-time signal to take the stacks with");
        goto out;
    }
    if (!sm_st_slots && !(sm_st_slots = calloc(SM_ST_THREADS, sizeof *sm_st_slots))) {
        snprintf(why, len, "out of memory");
        goto out;
    }
    void *warm[4];
    (void)backtrace(warm, 4); /* loads the unwinder here, not in a handler */
    sem_init(&sm_st_done, 0, 0);
    __atomic_store_n(&sm_st_next, 0, __ATOMIC_RELEASE);
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = sm_st_handler;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigfillset(&sa.sa_mask);
    if (sigaction(sig, &sa, &old) != 0) {
        snprintf(why, len, "cannot install the signal handler: %s", strerror(errno));
        goto out;
    }
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        pid_t tid = (pid_t)atoi(e->d_name);
        if (tid <= 0 || tid == self || sm_st_blocks(tid, sig))
            continue;
        if (n_sent == cap) {
            pid_t *grown = realloc(sent, (cap = cap ? 2 * cap : 64) * sizeof *sent);
            if (!grown)
                break;
            sent = grown;
        }
        if (syscall(SYS_tgkill, getpid(), tid, sig) == 0)
            sent[n_sent++] = tid;
    }
    if (d)
        closedir(d);
    /* Each answers within microseconds unless stopped: one second for all. */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 1;
    size_t answered = 0;
    while (answered < n_sent && answered < SM_ST_THREADS) {
        if (sem_timedwait(&sm_st_done, &until) == 0)
            answered++;
        else if (errno != EINTR)
            break;
    }
    int got = __atomic_load_n(&sm_st_next, __ATOMIC_ACQUIRE);
    if (got > SM_ST_THREADS)
        got = SM_ST_THREADS;

    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        snprintf(why, len, "cannot write %s: %s", tmp, strerror(errno));
    } else {
        char host[64] = "";
        gethostname(host, sizeof host - 1);
        fprintf(f, "process %d %s rank %u of %u\n", (int)getpid(), host, (unsigned)rank,
                (unsigned)n_ranks);
        for (int i = 0; i < got && (size_t)i < answered; i++) {
            sm_st_slot_t *s = &sm_st_slots[i];
            char name[64];
            sm_st_comm(s->tid, name, sizeof name);
            fprintf(f, "thread %d %s\n", (int)s->tid, name);
            if (s->has_note && s->note.function) {
                static const char *const kinds[] = {"none", "source", "dest", "root"};
                fprintf(f, "call %s %s %d tag %d", s->note.function,
                        kinds[s->note.peer_kind <= SM_CALL_PEER_ROOT ? s->note.peer_kind : 0],
                        (int)s->note.peer, s->note.has_tag ? (int)s->note.tag : -1);
                if (s->note.comm)
                    fprintf(f, " comm %s\n", s->note.comm);
                else
                    fprintf(f, " comm 0x%llx\n", (unsigned long long)s->note.comm_handle);
            }
            /* Frame 0 is the handler, 1 the signal's return; 2 the
             * interrupted place itself (exact), the rest return addresses. */
            for (int k = 2; k < s->n; k++)
                sm_st_put_frame(f, s->ip[k], k == 2);
        }
        for (size_t j = 0; j < n_sent; j++) {
            int seen = 0;
            for (int i = 0; i < got && (size_t)i < answered && !seen; i++)
                seen = sm_st_slots[i].tid == sent[j];
            if (!seen) {
                char name[64];
                sm_st_comm(sent[j], name, sizeof name);
                fprintf(f, "silent %d %s\n", (int)sent[j], name);
            }
        }
        if (fclose(f) != 0 || rename(tmp, path) != 0)
            snprintf(why, len, "cannot write %s: %s", path, strerror(errno));
        else
            rc = 0;
    }
    /* A late answer after this would find the default action: keep ours
     * until every thread sent answered, else leave it installed (harmless:
     * it only stores into the slots). */
    if (answered == n_sent)
        sigaction(sig, &old, NULL);
out:
    free(sent);
    pthread_mutex_unlock(&sm_st_lock);
    return rc;
}
