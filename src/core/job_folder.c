/* The last of a job's processes without MPI: see job_folder.h. */
#define _GNU_SOURCE
#include "job_folder.h"
#include "folder_claim.h"
#include "job.h"
#include "../util/fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SM_JF_RANKS ".ranks"
#define SM_JF_HEADER "sysmeasure job process\n"
#define SM_JF_RECORD_MAX 1024

/* FOLDER/.ranks/<hash>.job, opened (made when make).  -1 with errno. */
static int sm_jf_open(const char *folder, uint64_t hash, int make)
{
    char name[32];
    snprintf(name, sizeof name, "%016llx.job", (unsigned long long)hash);
    int out = sm_fs_open_dir(folder);
    if (out < 0)
        return -1;
    int ranks = make ? sm_fs_mkdir_at(out, SM_JF_RANKS, 0755)
                     : openat(out, SM_JF_RANKS, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int e = errno;
    close(out);
    if (ranks < 0) {
        errno = e;
        return -1;
    }
    int dir = make ? sm_fs_mkdir_at(ranks, name, 0755)
                   : openat(ranks, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    e = errno;
    close(ranks);
    errno = e;
    return dir;
}

/* Makes file name in dir, new: 0 made, 1 there already, -1 (errno) not made. */
static int sm_jf_make(int dir, const char *name)
{
    int fd = sm_fs_create_at(dir, name, O_WRONLY, 0644);
    if (fd >= 0) {
        close(fd);
        return 0;
    }
    return errno == EEXIST ? 1 : -1;
}

static int sm_jf_exists(int dir, const char *name)
{
    struct stat st;
    return fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

int sm_job_folder_register(const char *folder, uint32_t rank)
{
    sm_claim_who_t me;
    sm_claim_self(&me);
    char text[SM_JF_RECORD_MAX], name[32], tmp[64];
    int n = snprintf(text, sizeof text, SM_JF_HEADER "host %s\npid %ld\nstart %llu\n", me.host,
                     me.pid, me.start);
    if (n <= 0 || (size_t)n >= sizeof text) {
        errno = ENAMETOOLONG;
        return -1;
    }
    if (sm_mkdir_p(folder) != 0)
        return -1;
    int dir = sm_jf_open(folder, sm_job_hash(), 1);
    if (dir < 0)
        return -1;
    /* Written whole under a name of this process, then renamed into place:
     * a reader never sees half a record, and one an earlier run of the same
     * job left is replaced. */
    snprintf(name, sizeof name, "start-%u", (unsigned)rank);
    snprintf(tmp, sizeof tmp, ".start-%u.%ld", (unsigned)rank, me.pid);
    unlinkat(dir, tmp, 0);
    int fd = sm_fs_create_at(dir, tmp, O_WRONLY, 0644);
    int ok = fd >= 0 && write(fd, text, (size_t)n) == n;
    int e = errno;
    if (fd >= 0 && close(fd) != 0)
        ok = 0;
    if (ok && renameat(dir, tmp, dir, name) != 0) {
        e = errno;
        ok = 0;
    }
    if (!ok)
        unlinkat(dir, tmp, 0);
    close(dir);
    errno = e;
    return ok ? 0 : -1;
}

static int sm_jf_read_start(int dir, uint32_t r, sm_claim_who_t *w);

void sm_job_folder_unregister(const char *folder, uint32_t rank)
{
    char name[32], path[4200];
    int dir = sm_jf_open(folder, sm_job_hash(), 0);
    if (dir < 0)
        return;
    /* Only this process's record (or the one of the script it exec'd from:
     * same pid and start time); a process it started, which inherited its
     * rank, leaves it alone. */
    sm_claim_who_t me, w;
    sm_claim_self(&me);
    snprintf(name, sizeof name, "start-%u", (unsigned)rank);
    if (sm_jf_read_start(dir, rank, &w) == 0 && w.pid == me.pid && !strcmp(w.host, me.host) &&
        (!w.start || !me.start || w.start == me.start))
        unlinkat(dir, name, 0);
    close(dir);
    snprintf(path, sizeof path, "%s/" SM_JF_RANKS "/%016llx.job", folder,
             (unsigned long long)sm_job_hash());
    sm_fs_rmdir_own(path); /* the last of the job to get here */
    snprintf(path, sizeof path, "%s/" SM_JF_RANKS, folder);
    sm_fs_rmdir_own(path);
}

/* Rank r's record start-<r>: 0, or -1 when there is none (or it is not one).
 * A record made for a child about to be forked names its parent and says
 * "forking" (w->job "forking"; else empty) until the child names itself. */
static int sm_jf_read_start(int dir, uint32_t r, sm_claim_who_t *w)
{
    char name[32], text[SM_JF_RECORD_MAX];
    snprintf(name, sizeof name, "start-%u", (unsigned)r);
    memset(w, 0, sizeof *w);
    int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    ssize_t n = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? read(fd, text, sizeof text - 1) : -1;
    close(fd);
    if (n <= 0)
        return -1;
    text[n] = '\0';
    size_t h = sizeof SM_JF_HEADER - 1;
    if ((size_t)n < h || memcmp(text, SM_JF_HEADER, h) != 0)
        return -1;
    int have = 0;
    for (char *line = text + h, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (!next)
            return -1; /* a record ends with a newline */
        *next++ = '\0';
        if (!strcmp(line, "forking"))
            snprintf(w->job, sizeof w->job, "forking");
        char *v = strchr(line, ' ');
        if (!v)
            continue;
        *v++ = '\0';
        if (!strcmp(line, "host") && strlen(v) < sizeof w->host)
            have |= 1, snprintf(w->host, sizeof w->host, "%s", v);
        else if (!strcmp(line, "pid"))
            have |= 2, w->pid = strtol(v, NULL, 10);
        else if (!strcmp(line, "start"))
            w->start = strtoull(v, NULL, 10);
    }
    return have == 3 && w->pid > 0 ? 0 : -1;
}

/* Whether every rank in [lo, hi) arrived (done-<r>) or is gone for certain. */
static int sm_jf_all_over(int dir, uint64_t lo, uint64_t hi)
{
    char name[32];
    for (uint64_t r = lo; r < hi; r++) {
        snprintf(name, sizeof name, "done-%llu", (unsigned long long)r);
        if (sm_jf_exists(dir, name))
            continue;
        sm_claim_who_t w;
        if (sm_jf_read_start(dir, (uint32_t)r, &w) != 0 || !sm_claim_gone(&w))
            return 0; /* running, or not started yet as far as we know */
    }
    return 1;
}

/* The ranks without done-<r>, named into missing. */
static uint32_t sm_jf_missing(int dir, uint32_t size, char *missing, size_t len)
{
    uint32_t n = 0;
    size_t o = 0;
    char name[32];
    if (len)
        missing[0] = '\0';
    for (uint32_t r = 0; r < size; r++) {
        snprintf(name, sizeof name, "done-%u", (unsigned)r);
        if (sm_jf_exists(dir, name))
            continue;
        n++;
        if (o + 64 >= len) {
            if (o + 5 < len && o && strcmp(missing + o - 3, "...") != 0)
                o += (size_t)snprintf(missing + o, len - o, ", ...");
            continue;
        }
        sm_claim_who_t w;
        if (sm_jf_read_start(dir, r, &w) == 0)
            o += (size_t)snprintf(missing + o, len - o, "%srank %u (pid %ld on %s)", o ? ", " : "",
                                  (unsigned)r, w.pid, w.host);
        else
            o += (size_t)snprintf(missing + o, len - o, "%srank %u (never started here)",
                                  o ? ", " : "", (unsigned)r);
    }
    return n;
}

sm_job_folder_end_t sm_job_folder_arrive(const char *folder, uint32_t rank, uint32_t size,
                                         uint32_t *n_missing, char *missing, size_t len)
{
    *n_missing = 0;
    if (len)
        missing[0] = '\0';
    int dir = sm_jf_open(folder, sm_job_hash(), 1);
    if (dir < 0)
        return SM_JOB_FOLDER_FAILED;
    char name[48], second[52];
    snprintf(name, sizeof name, "done-%u", (unsigned)rank);
    if (sm_jf_make(dir, name) < 0) {
        int e = errno;
        close(dir);
        errno = e;
        return SM_JOB_FOLDER_FAILED;
    }
    sm_job_folder_end_t end = SM_JOB_FOLDER_LAST;
    for (uint32_t level = 1; level < 64 && (1ull << (level - 1)) < size; level++) {
        uint64_t width = 1ull << (level - 1);
        uint64_t lo = ((rank >> (level - 1)) ^ 1u) * width; /* the other half of the node */
        if (lo >= size)
            continue; /* no other half: up at once */
        uint64_t hi = lo + width < size ? lo + width : size;
        snprintf(name, sizeof name, "t%u-%llu", (unsigned)level,
                 (unsigned long long)(rank >> level));
        snprintf(second, sizeof second, "%s.2", name);
        int first = sm_jf_make(dir, name);
        if (first < 0) {
            /* ENOENT: the last has removed the bookkeeping already, having
             * gone up for this rank. */
            end = errno == ENOENT ? SM_JOB_FOLDER_NOT_LAST : SM_JOB_FOLDER_FAILED;
            break;
        }
        if (first == 0 && !sm_jf_all_over(dir, lo, hi)) {
            end = SM_JOB_FOLDER_NOT_LAST; /* the other half goes on */
            break;
        }
        int won = sm_jf_make(dir, second);
        if (won != 0) {
            /* Taken: the first at this node went up for this half; or gone
             * (ENOENT: as above). */
            end = won > 0 || errno == ENOENT ? SM_JOB_FOLDER_NOT_LAST : SM_JOB_FOLDER_FAILED;
            break;
        }
    }
    int e = errno;
    if (end == SM_JOB_FOLDER_LAST)
        *n_missing = sm_jf_missing(dir, size, missing, len);
    close(dir);
    errno = e;
    return end;
}

/* ---------------------------------------------------------------- a family */

/* Writes w as the record `name` of dir (whole, then renamed into place). */
static int sm_jf_put_record(int dir, const char *name, const sm_claim_who_t *w)
{
    char text[SM_JF_RECORD_MAX], tmp[96];
    int n = snprintf(text, sizeof text, SM_JF_HEADER "host %s\npid %ld\nstart %llu\n", w->host,
                     w->pid, w->start);
    if (n <= 0 || (size_t)n >= sizeof text)
        return -1;
    snprintf(tmp, sizeof tmp, ".%s.%ld", name, (long)getpid());
    unlinkat(dir, tmp, 0);
    int fd = sm_fs_create_at(dir, tmp, O_WRONLY, 0644);
    int ok = fd >= 0 && write(fd, text, (size_t)n) == n;
    if (fd >= 0 && close(fd) != 0)
        ok = 0;
    if (ok && renameat(dir, tmp, dir, name) != 0)
        ok = 0;
    if (!ok)
        unlinkat(dir, tmp, 0);
    return ok ? 0 : -1;
}

/* Makes `name` new (O_EXCL) holding w's record (forking: for a child w is
 * about to fork): 0 made, 1 taken, -1 error.  Made first and filled after:
 * a reader that finds it empty counts its member as running. */
static int sm_jf_take(int dir, const char *name, const sm_claim_who_t *w, int forking)
{
    int fd = sm_fs_create_at(dir, name, O_WRONLY, 0644);
    if (fd < 0)
        return errno == EEXIST ? 1 : -1;
    char text[SM_JF_RECORD_MAX];
    int n = snprintf(text, sizeof text, SM_JF_HEADER "%shost %s\npid %ld\nstart %llu\n",
                     forking ? "forking\n" : "", w->host, w->pid, w->start);
    int ok = n > 0 && (size_t)n < sizeof text && write(fd, text, (size_t)n) == n;
    close(fd);
    return ok ? 0 : -1;
}

long sm_job_folder_join(const char *folder, long root_pid, int forking)
{
    if (sm_mkdir_p(folder) != 0)
        return -1;
    int dir = sm_jf_open(folder, sm_job_hash(), 1);
    if (dir < 0)
        return -1;
    sm_claim_who_t me, root, w;
    sm_claim_self(&me);
    long k = -1;
    int e = 0;
    /* The program's record first: its presence says it has a family. */
    if (!sm_jf_exists(dir, "start-0")) {
        if (sm_claim_of_pid(root_pid, &root) != 0) {
            close(dir);
            errno = ESRCH; /* it has ended on its own */
            return -1;
        }
        if (sm_jf_take(dir, "start-0", &root, 0) < 0) {
            e = errno;
            close(dir);
            errno = e;
            return -1;
        }
    }
    /* A process that exec'd keeps the number of its forked self. */
    char name[32];
    for (long i = 1; !forking && i < (1L << 20); i++) {
        snprintf(name, sizeof name, "start-%ld", i);
        if (!sm_jf_exists(dir, name))
            break;
        if (sm_jf_read_start(dir, (uint32_t)i, &w) == 0 && w.pid == me.pid && !w.job[0] &&
            !strcmp(w.host, me.host) && (!w.start || w.start == me.start)) {
            snprintf(name, sizeof name, "done-%ld", i);
            if (!sm_jf_exists(dir, name)) {
                close(dir);
                return i;
            }
        }
    }
    for (long i = 1; i < (1L << 20) && k < 0; i++) {
        snprintf(name, sizeof name, "start-%ld", i);
        int got = sm_jf_take(dir, name, &me, forking);
        if (got == 0)
            k = i;
        else if (got < 0) {
            e = errno;
            break;
        }
    }
    if (k > 0 && sm_jf_exists(dir, "last")) {
        /* Too late: the last of the family is writing its outputs.  Done
         * as far as the family goes; the caller writes on its own. */
        snprintf(name, sizeof name, "done-%ld", k);
        (void)sm_jf_make(dir, name);
        k = -1;
        e = ESRCH;
    }
    close(dir);
    errno = e;
    return k;
}

void sm_job_folder_claim_number(const char *folder, long k)
{
    int dir = sm_jf_open(folder, sm_job_hash(), 0);
    if (dir < 0)
        return;
    sm_claim_who_t me;
    sm_claim_self(&me);
    char name[32];
    snprintf(name, sizeof name, "start-%ld", k);
    (void)sm_jf_put_record(dir, name, &me);
    close(dir);
}

int sm_job_folder_has_family(const char *folder)
{
    int dir = sm_jf_open(folder, sm_job_hash(), 0);
    if (dir < 0)
        return 0;
    int yes = sm_jf_exists(dir, "start-0");
    close(dir);
    return yes;
}

/* Every member of the family in dir: *n_members, those gone without their
 * files (named into missing, counted in *n_missing) and those still running
 * (*running; a record still empty counts so).  root_pid: the program, when
 * it has no record of its own yet. */
static void sm_jf_family_scan(int dir, long root_pid, uint32_t *n_members, uint32_t *n_missing,
                              uint32_t *running, char *missing, size_t len)
{
    char name[32];
    sm_claim_who_t me, w;
    sm_claim_self(&me);
    size_t o = 0;
    long i = 0;
    *n_missing = *running = 0;
    if (len)
        missing[0] = '\0';
    for (; i < (1L << 20); i++) {
        snprintf(name, sizeof name, "start-%ld", i);
        int registered = sm_jf_exists(dir, name);
        if (!registered && i > 0)
            break; /* numbers are taken in order: no member beyond */
        snprintf(name, sizeof name, "done-%ld", i);
        if (sm_jf_exists(dir, name))
            continue;
        /* Not done: running, or gone without its files. */
        int got = registered ? sm_jf_read_start(dir, (uint32_t)i, &w)
                             : sm_claim_of_pid(root_pid, &w) == 0 ? 0 : -2;
        if (got == -1 || (got == 0 && !sm_claim_gone(&w))) {
            ++*running;
            continue;
        }
        ++*n_missing;
        if (o + 64 < len)
            o += (size_t)snprintf(missing + o, len - o, "%sprocess %ld (pid %ld on %s%s)",
                                  o ? ", " : "", i, got == 0 ? w.pid : root_pid,
                                  got == 0 ? w.host : me.host, i ? "" : ", the program");
    }
    *n_members = (uint32_t)i;
}

/* How long the last waits for processes that joined the family while it
 * found itself the last (an exec'd process in its first moments). */
#define SM_JF_LATE_WAIT_NS (5ull * 1000 * 1000 * 1000)

sm_job_folder_end_t sm_job_folder_family_end(const char *folder, long k, long root_pid,
                                             uint32_t *n_members, uint32_t *n_missing,
                                             char *missing, size_t len)
{
    *n_members = *n_missing = 0;
    if (len)
        missing[0] = '\0';
    int dir = sm_jf_open(folder, sm_job_hash(), 1);
    if (dir < 0)
        return SM_JOB_FOLDER_FAILED;
    char name[32];
    sm_claim_who_t me;
    sm_claim_self(&me);
    if (k == 0) /* the program: its own record, whoever made it */
        (void)sm_jf_put_record(dir, "start-0", &me);
    snprintf(name, sizeof name, "done-%ld", k);
    if (sm_jf_make(dir, name) < 0) {
        int e = errno;
        close(dir);
        errno = e;
        return SM_JOB_FOLDER_FAILED;
    }
    uint32_t running;
    sm_jf_family_scan(dir, root_pid, n_members, n_missing, &running, missing, len);
    if (running) {
        close(dir);
        return SM_JOB_FOLDER_NOT_LAST; /* the last of them finds this one done */
    }
    /* Two members may find every other over at once: one is the last. */
    int got = sm_jf_make(dir, "last");
    if (got != 0) {
        int e = errno;
        close(dir);
        errno = e;
        return got > 0 ? SM_JOB_FOLDER_NOT_LAST : SM_JOB_FOLDER_FAILED;
    }
    /* A process that joined before `last` was made is seen now (it looks
     * for `last` after taking its number, and leaves the family when it
     * finds it): it is waited for, a little, with sleeps. */
    struct timespec nap = {0, 10 * 1000 * 1000};
    for (uint64_t waited = 0;;) {
        sm_jf_family_scan(dir, root_pid, n_members, n_missing, &running, missing, len);
        if (!running || waited >= SM_JF_LATE_WAIT_NS)
            break;
        nanosleep(&nap, NULL);
        waited += (uint64_t)nap.tv_nsec;
        if (nap.tv_nsec < 200 * 1000 * 1000)
            nap.tv_nsec *= 2;
    }
    if (running) {
        size_t o = strlen(missing);
        if (o + 40 < len)
            snprintf(missing + o, len - o, "%s%u still running", o ? "; " : "", (unsigned)running);
        *n_missing += running;
    }
    close(dir);
    return SM_JOB_FOLDER_LAST;
}

int sm_job_folder_alone(const char *folder, uint32_t rank)
{
    int dir = sm_jf_open(folder, sm_job_hash(), 0);
    if (dir < 0)
        return 0; /* cannot tell: not alone */
    int copy = dup(dir);
    DIR *d = copy >= 0 ? fdopendir(copy) : NULL;
    int alone = d != NULL;
    char mine[32];
    snprintf(mine, sizeof mine, "start-%u", (unsigned)rank);
    struct dirent *e;
    /* In a shared folder another's record is among the first entries. */
    while (alone && (e = readdir(d)) != NULL)
        if (!strncmp(e->d_name, "start-", 6) && strcmp(e->d_name, mine) != 0)
            alone = 0;
    if (d)
        closedir(d);
    else if (copy >= 0)
        close(copy);
    close(dir);
    return alone;
}

void sm_job_folder_remove(const char *folder, uint64_t job_hash)
{
    int dir = sm_jf_open(folder, job_hash, 0);
    if (dir < 0)
        return;
    int copy = dup(dir);
    DIR *d = copy >= 0 ? fdopendir(copy) : NULL;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        struct stat st;
        if (fstatat(dir, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
            unlinkat(dir, e->d_name, 0);
    }
    if (d)
        closedir(d);
    else if (copy >= 0)
        close(copy);
    close(dir);
    char path[4200];
    snprintf(path, sizeof path, "%s/" SM_JF_RANKS "/%016llx.job", folder,
             (unsigned long long)job_hash);
    sm_fs_rmdir_own(path);
}
