/* One writer per output folder: see folder_claim.h. */
#define _GNU_SOURCE
#include "folder_claim.h"
#include "job.h"
#include "../util/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SM_CLAIM_HEADER "sysmeasure output folder writer\n"
#define SM_CLAIM_MAX 1024 /* a record is about 200 bytes; more is not ours */
_Static_assert(sizeof ((sm_claim_who_t *)0)->job == SM_JOB_ID_MAX, "a job id fits a record");

/* A process's start time and state from /proc/<pid>/stat: 0, or -1 when
 * there is no such process (or no /proc). */
static int sm_claim_proc_stat(long pid, unsigned long long *start, char *state)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    /* "pid (comm) S ppid ...": comm may hold anything, so count from its
     * last ')'.  The state is the 1st field after it, the start time the 20th. */
    char *p = strrchr(buf, ')');
    if (!p)
        return -1;
    p++;
    for (int field = 1; field <= 20; field++) {
        while (*p == ' ')
            p++;
        if (!*p)
            return -1;
        if (field == 1)
            *state = *p;
        if (field == 20) {
            *start = strtoull(p, NULL, 10);
            return 0;
        }
        p += strcspn(p, " ");
    }
    return -1;
}

void sm_claim_self(sm_claim_who_t *me)
{
    memset(me, 0, sizeof *me);
    snprintf(me->job, sizeof me->job, "%s", sm_job_id());
    if (gethostname(me->host, sizeof me->host - 1) != 0 || !me->host[0])
        snprintf(me->host, sizeof me->host, "localhost");
    for (char *c = me->host; *c; c++)
        if (*c <= ' ' || *c == '/' || *c > '~')
            *c = '_';
    me->pid = (long)getpid();
    char state;
    if (sm_claim_proc_stat(me->pid, &me->start, &state) != 0)
        me->start = 0;
}

int sm_claim_of_pid(long pid, sm_claim_who_t *w)
{
    sm_claim_self(w); /* job and host */
    char state = '?';
    w->pid = pid;
    if (sm_claim_proc_stat(pid, &w->start, &state) != 0 || state == 'Z' || state == 'X')
        return -1;
    return 0;
}

static int sm_claim_format(const sm_claim_who_t *w, char *buf, size_t len)
{
    int n = snprintf(buf, len, SM_CLAIM_HEADER "job %s\nhost %s\npid %ld\nstart %llu\n", w->job,
                     w->host, w->pid, w->start);
    return n > 0 && (size_t)n < len ? n : -1;
}

static int sm_claim_parse(const char *text, size_t n, sm_claim_who_t *w)
{
    memset(w, 0, sizeof *w);
    size_t h = sizeof SM_CLAIM_HEADER - 1;
    if (n < h || memcmp(text, SM_CLAIM_HEADER, h) != 0 || memchr(text, '\0', n))
        return -1;
    int have = 0;
    for (const char *p = text + h; p < text + n;) {
        const char *end = memchr(p, '\n', (size_t)(text + n - p));
        if (!end)
            return -1; /* a record ends with a newline: this one is cut */
        size_t k = (size_t)(end - p);
        char line[SM_CLAIM_MAX];
        memcpy(line, p, k);
        line[k] = '\0';
        char *v = strchr(line, ' ');
        if (v) {
            *v++ = '\0';
            if (!strcmp(line, "job") && strlen(v) < sizeof w->job)
                have |= 1, snprintf(w->job, sizeof w->job, "%s", v);
            else if (!strcmp(line, "host") && strlen(v) < sizeof w->host)
                have |= 2, snprintf(w->host, sizeof w->host, "%s", v);
            else if (!strcmp(line, "pid"))
                have |= 4, w->pid = strtol(v, NULL, 10);
            else if (!strcmp(line, "start"))
                w->start = strtoull(v, NULL, 10);
        }
        p = end + 1;
    }
    return have == 7 && w->pid > 0 ? 0 : -1;
}

static int sm_claim_same_process(const sm_claim_who_t *a, const sm_claim_who_t *b)
{
    /* exec keeps the pid and its start time: a program started through a
     * script that ran `exec` is the writer the script's process was. */
    return a->pid == b->pid && !strcmp(a->host, b->host) &&
           (!a->start || !b->start || a->start == b->start);
}

/* Whether the writer a record names may still be writing.  On another host
 * its pid cannot be checked: it counts as alive. */
static int sm_claim_alive(const sm_claim_who_t *w, const sm_claim_who_t *me)
{
    if (strcmp(w->host, me->host) != 0)
        return 1;
    if (kill((pid_t)w->pid, 0) != 0 && errno == ESRCH)
        return 0;
    unsigned long long start;
    char state = '?';
    if (sm_claim_proc_stat(w->pid, &start, &state) != 0)
        return 1; /* no /proc: kill() said it exists */
    if (state == 'Z' || state == 'X')
        return 0; /* ended, not reaped yet */
    return !w->start || start == w->start; /* else the pid was given to another process */
}

/* The bytes of file `name` in dirfd when it is a small regular file of this
 * user (or of the folder's owner); -1 with errno otherwise (ENOENT: gone). */
static int sm_claim_read(int dirfd, const char *name, char *buf, size_t len)
{
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st, folder;
    int ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size < (off_t)len &&
             (st.st_uid == geteuid() || (fstat(dirfd, &folder) == 0 && folder.st_uid == st.st_uid));
    ssize_t n = ok ? read(fd, buf, len - 1) : -1;
    close(fd);
    if (!ok) {
        errno = SM_FS_NOT_PLAIN;
        return -1;
    }
    if (n < 0)
        return -1;
    buf[n] = '\0';
    return (int)n;
}

/* Puts this process's record in place: 0 placed, 1 there is one already,
 * -1 it cannot be made here. */
static int sm_claim_place(int dirfd, const sm_claim_who_t *me, const char *rec, size_t n)
{
    char tmp[SM_CLAIM_HOST + 64];
    snprintf(tmp, sizeof tmp, SM_CLAIM_FILE ".%s.%ld", me->host, me->pid);
    int fd = sm_fs_create_at(dirfd, tmp, O_WRONLY, 0644);
    if (fd < 0 && errno == EEXIST) {
        /* Left by an earlier process with this pid on this host: ours by name. */
        unlinkat(dirfd, tmp, 0);
        fd = sm_fs_create_at(dirfd, tmp, O_WRONLY, 0644);
    }
    if (fd < 0)
        return -1;
    int written = write(fd, rec, n) == (ssize_t)n;
    close(fd);
    int rc = written ? linkat(dirfd, tmp, dirfd, SM_CLAIM_FILE, 0) : -1;
    int err = errno;
    unlinkat(dirfd, tmp, 0);
    if (rc == 0)
        return 0;
    if (!written)
        return -1;
    if (err == EEXIST)
        return 1;
    if (err != EPERM && err != EOPNOTSUPP && err != ENOSYS && err != EMLINK)
        return -1;
    /* A file system without hard links: created in place (a reader may see
     * it empty for a moment, and waits for the rest). */
    fd = sm_fs_create_at(dirfd, SM_CLAIM_FILE, O_WRONLY, 0644);
    if (fd < 0)
        return errno == EEXIST ? 1 : -1;
    written = write(fd, rec, n) == (ssize_t)n;
    close(fd);
    if (!written)
        unlinkat(dirfd, SM_CLAIM_FILE, 0);
    return written ? 0 : -1;
}

/* Removes the stale record `seen`: moved aside under a private name (an
 * atomic step, which only one of several processes doing the same wins),
 * then checked to be the very record judged stale.  Should another writer
 * have put a fresh record in place between the read and the move, that one
 * is put back.  The caller then tries to place its own again. */
static void sm_claim_take_over(int dirfd, const sm_claim_who_t *me, const char *seen, int n)
{
    char aside[SM_CLAIM_HOST + 64], now[SM_CLAIM_MAX];
    snprintf(aside, sizeof aside, SM_CLAIM_FILE ".stale.%s.%ld", me->host, me->pid);
    if (renameat(dirfd, SM_CLAIM_FILE, dirfd, aside) != 0)
        return; /* gone already (another process took it over) */
    int m = sm_claim_read(dirfd, aside, now, sizeof now);
    if (m != n || memcmp(now, seen, (size_t)n) != 0)
        (void)linkat(dirfd, aside, dirfd, SM_CLAIM_FILE, 0); /* not the stale one: back */
    unlinkat(dirfd, aside, 0);
}

int sm_claim_gone(const sm_claim_who_t *w)
{
    sm_claim_who_t me;
    sm_claim_self(&me);
    return !sm_claim_alive(w, &me);
}

sm_claim_t sm_folder_claim(const char *dir, sm_claim_mode_t mode, char *holder, size_t len)
{
    sm_claim_who_t me, w;
    char mine[SM_CLAIM_MAX], seen[SM_CLAIM_MAX];
    if (holder && len)
        holder[0] = '\0';
    sm_claim_self(&me);
    int n = sm_claim_format(&me, mine, sizeof mine);
    int dirfd = n > 0 ? sm_fs_open_dir(dir) : -1;
    if (dirfd < 0)
        return SM_CLAIM_UNCHECKED;
    sm_claim_t result = SM_CLAIM_UNCHECKED;
    /* Each round either ends or saw a record go (released, or taken over
     * by us or another process); a few rounds settle any race. */
    for (int round = 0; round < 16; round++) {
        int placed = sm_claim_place(dirfd, &me, mine, (size_t)n);
        if (placed != 1) {
            result = placed == 0 ? SM_CLAIM_OURS : SM_CLAIM_UNCHECKED;
            break;
        }
        int got = sm_claim_read(dirfd, SM_CLAIM_FILE, seen, sizeof seen);
        if (got < 0 && errno == ENOENT)
            continue; /* released meanwhile */
        if (got < 0) {
            /* A link, a folder, a big file, another user's: not a record of
             * ours, and nothing of ours to remove. */
            if (holder && len)
                snprintf(holder, len, "a file %s that is not a sysmeasure record", SM_CLAIM_FILE);
            result = SM_CLAIM_TAKEN;
            break;
        }
        if (sm_claim_parse(seen, (size_t)got, &w) != 0) {
            /* Being written in place (no hard links here), or damaged: a
             * moment for the writer, then it counts as stale. */
            if (round < 5) {
                struct timespec ts = {0, 20 * 1000 * 1000};
                nanosleep(&ts, NULL);
                continue;
            }
        } else if (sm_claim_same_process(&w, &me) ||
                   (mode == SM_CLAIM_JOIN && !strcmp(w.job, me.job))) {
            result = SM_CLAIM_OURS;
            break;
        } else if (!(mode == SM_CLAIM_JOB && !strcmp(w.job, me.job)) && sm_claim_alive(&w, &me)) {
            if (holder && len)
                snprintf(holder, len, "pid %ld on %s%s, job %s", w.pid, w.host,
                         strcmp(w.host, me.host) ? " (another host: remove the file if that run "
                                                   "is over)" : "", w.job);
            result = SM_CLAIM_TAKEN;
            break;
        }
        sm_claim_take_over(dirfd, &me, seen, got);
    }
    close(dirfd);
    return result;
}

static void sm_folder_release_as(const char *dir, int whole_job)
{
    sm_claim_who_t me, w;
    char seen[SM_CLAIM_MAX];
    int dirfd = sm_fs_open_dir(dir);
    if (dirfd < 0)
        return;
    int got = sm_claim_read(dirfd, SM_CLAIM_FILE, seen, sizeof seen);
    sm_claim_self(&me);
    /* Only our own record (or our job's): a live writer's is never removed
     * by another. */
    if (got > 0 && sm_claim_parse(seen, (size_t)got, &w) == 0 &&
        (sm_claim_same_process(&w, &me) || (whole_job && !strcmp(w.job, me.job))))
        unlinkat(dirfd, SM_CLAIM_FILE, 0);
    close(dirfd);
}

void sm_folder_release(const char *dir)
{
    sm_folder_release_as(dir, 0);
}

void sm_folder_release_job(const char *dir)
{
    sm_folder_release_as(dir, 1);
}

int sm_folder_claimed_by_job(const char *dir)
{
    sm_claim_who_t me, w;
    char seen[SM_CLAIM_MAX];
    int dirfd = sm_fs_open_dir(dir);
    if (dirfd < 0)
        return 0;
    int got = sm_claim_read(dirfd, SM_CLAIM_FILE, seen, sizeof seen);
    close(dirfd);
    sm_claim_self(&me);
    return got > 0 && sm_claim_parse(seen, (size_t)got, &w) == 0 && !strcmp(w.job, me.job);
}
