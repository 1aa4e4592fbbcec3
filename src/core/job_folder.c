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

void sm_job_folder_unregister(const char *folder, uint32_t rank)
{
    char name[32], path[4200];
    int dir = sm_jf_open(folder, sm_job_hash(), 0);
    if (dir < 0)
        return;
    snprintf(name, sizeof name, "start-%u", (unsigned)rank);
    unlinkat(dir, name, 0);
    close(dir);
    snprintf(path, sizeof path, "%s/" SM_JF_RANKS "/%016llx.job", folder,
             (unsigned long long)sm_job_hash());
    sm_fs_rmdir_own(path); /* the last of the job to get here */
    snprintf(path, sizeof path, "%s/" SM_JF_RANKS, folder);
    sm_fs_rmdir_own(path);
}

/* Rank r's record start-<r>: 0, or -1 when there is none (or it is not one). */
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
