/* The spill file of a process: where it goes, its header, the frames
 * written into it, and its end (see buffer.h). */
#define _GNU_SOURCE
#include "buffer_private.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <unistd.h>

#include "job.h"
#include "sig_hold.h"
#include "../util/fs.h"
#include "../util/log.h"

/* ---------------------------------------------------------------- the spill file */

/* One file per process; IO on it under sm_file_lock (the writer thread, or
 * the thread that spills or saves once the writer is stopped). */
pthread_mutex_t sm_file_lock = PTHREAD_MUTEX_INITIALIZER;
int sm_spill_fd = -1;
char *sm_spill_file;
static dev_t sm_spill_dev;
static ino_t sm_spill_ino;
uint64_t sm_spill_end;    /* where the next frame (crash-safe: slot) goes */
uint64_t sm_crash_size;   /* crash-safe: the file's size (slots allocated) */
int sm_spill_broken;      /* cannot be created or was replaced: give up */
uint32_t sm_spill_users;  /* locations with frames in it (writer lock) */

/* Where it goes: a folder, or a function that names one (the runtime). */
static char *sm_spill_dir;
static const char *(*sm_spill_provider)(void);
pthread_mutex_t sm_spill_dir_lock = PTHREAD_MUTEX_INITIALIZER;

void sm_buffers_set_spill_dir(const char *dir)
{
    pthread_mutex_lock(&sm_spill_dir_lock);
    free(sm_spill_dir);
    sm_spill_dir = dir ? strdup(dir) : NULL;
    pthread_mutex_unlock(&sm_spill_dir_lock);
}

void sm_buffers_set_spill_provider(const char *(*provider)(void))
{
    pthread_mutex_lock(&sm_spill_dir_lock);
    sm_spill_provider = provider;
    pthread_mutex_unlock(&sm_spill_dir_lock);
}

int sm_buffers_spill_dir(char *out, size_t len)
{
    pthread_mutex_lock(&sm_spill_dir_lock);
    const char *dir = sm_spill_provider ? sm_spill_provider() : sm_spill_dir;
    int ok = dir && sm_mkdir_p(dir) == 0 && snprintf(out, len, "%s", dir) < (int)len;
    pthread_mutex_unlock(&sm_spill_dir_lock);
    return ok ? 0 : -1;
}

/* A spill that fails fails again at every chunk: say it once per process;
 * the exact number of lost events goes to the summary and metadata. */
int sm_spill_error_said;

static int sm_spill_first_error(void)
{
    return __atomic_exchange_n(&sm_spill_error_said, 1, __ATOMIC_RELAXED) == 0;
}

const char *sm_buffers_spill_path(void)
{
    return sm_spill_file;
}

static int sm_pwrite_all(int fd, const void *buf, size_t n, uint64_t off)
{
    const uint8_t *p = buf;
    while (n) {
        ssize_t w = pwrite(fd, p, n, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = ENOSPC;
            return -1;
        }
        p += w;
        n -= (size_t)w;
        off += (uint64_t)w;
    }
    return 0;
}

int sm_pread_all(int fd, void *buf, size_t n, uint64_t off)
{
    uint8_t *p = buf;
    while (n) {
        ssize_t r = pread(fd, p, n, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            if (r == 0)
                errno = EIO; /* shorter than its frames say */
            return -1;
        }
        p += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

/* The spill descriptor, checked: the application may have closed it and
 * reused the number for a file of its own (closefrom, a loop over close).
 * Then the file is opened again by its path, and the number, no longer
 * ours, is left alone.  Under sm_file_lock; -1 when the file is gone. */
int sm_spill_fd_checked(void)
{
    if (sm_spill_fd < 0)
        return -1;
    struct stat st;
    if (fstat(sm_spill_fd, &st) == 0 && st.st_dev == sm_spill_dev && st.st_ino == sm_spill_ino)
        return sm_spill_fd;
    int fd = open(sm_spill_file, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == sm_spill_dev && st.st_ino == sm_spill_ino) {
        sm_info(1, "the spill descriptor was closed by the program; %s opened again",
                sm_spill_file);
        sm_spill_fd = fd;
        return fd;
    }
    if (fd >= 0)
        close(fd);
    sm_spill_fd = -1;
    sm_spill_broken = 1;
    if (sm_spill_first_error())
        sm_error("spill file %s was removed or replaced while in use; the events spilled so far "
                 "and those that do not fit in SYSMEASURE_BUFFER_SIZE are lost and counted",
                 sm_spill_file);
    return -1;
}

/* This host's name for the spill file's name: ranks of one job on two hosts
 * may have the same pid and share one output folder. */
static const char *sm_spill_host(void)
{
    static char host[64];
    if (!host[0] && (gethostname(host, sizeof host - 1) != 0 || !host[0]))
        snprintf(host, sizeof host, "host");
    for (char *c = host; *c; c++)
        if (*c == '/' || *c == '.')
            *c = '_';
    return host;
}

/* The rank of this process, for the spill file's header (sm_buffers_set_rank). */
static uint32_t sm_spill_rank = SM_SPILL_NO_RANK, sm_spill_n_ranks;

/* The header of this process's spill file. */
static void sm_spill_header(sm_spill_fhdr_t *h)
{
    memset(h, 0, sizeof *h);
    memcpy(h->magic, SM_SPILL_MAGIC, sizeof h->magic);
    h->version = sm_crash ? SM_SPILL_VERSION_SLOTS : SM_SPILL_VERSION;
    h->size = sizeof *h;
    h->pid = getpid();
    snprintf(h->job, sizeof h->job, "%s", sm_job_id());
    if (gethostname(h->host, sizeof h->host - 1) != 0)
        h->host[0] = '\0';
    h->rank = __atomic_load_n(&sm_spill_rank, __ATOMIC_RELAXED);
    h->n_ranks = __atomic_load_n(&sm_spill_n_ranks, __ATOMIC_RELAXED);
    h->check = sm_sum64(h, offsetof(sm_spill_fhdr_t, check));
}

void sm_buffers_set_rank(uint32_t rank, uint32_t n_ranks)
{
    pthread_mutex_lock(&sm_file_lock);
    __atomic_store_n(&sm_spill_rank, rank, __ATOMIC_RELAXED);
    __atomic_store_n(&sm_spill_n_ranks, n_ranks, __ATOMIC_RELAXED);
    /* A file made before the rank was known gets it now (a failure leaves
     * the rank unknown there: the merge then goes by job, host and pid). */
    if (sm_spill_fd >= 0 && !sm_discard && sm_spill_fd_checked() >= 0) {
        sm_spill_fhdr_t h;
        sm_spill_header(&h);
        (void)sm_pwrite_all(sm_spill_fd, &h, sizeof h, 0);
    }
    pthread_mutex_unlock(&sm_file_lock);
}

/* The spill file, created at the first spill.  Under sm_file_lock. */
int sm_spill_open(void)
{
    if (sm_spill_fd >= 0)
        return sm_spill_fd_checked();
    if (sm_spill_broken)
        return -1;
    pthread_mutex_lock(&sm_spill_dir_lock);
    char path[4096];
    const char *dir = sm_spill_provider ? sm_spill_provider() : sm_spill_dir;
    int ok = dir && sm_mkdir_p(dir) == 0 &&
             snprintf(path, sizeof path, "%s/%016llx.%s.%d.events", dir,
                      (unsigned long long)sm_job_hash(), sm_spill_host(), (int)getpid()) <
                 (int)sizeof path;
    int saved = errno;
    char shown[4096];
    snprintf(shown, sizeof shown, "%s", dir ? dir : "(none)");
    pthread_mutex_unlock(&sm_spill_dir_lock);
    sm_spill_broken = 1;
    if (!ok) {
        if (sm_spill_first_error())
            sm_error("cannot create spill folder %s: %s; events that do not fit in "
                     "SYSMEASURE_BUFFER_SIZE are dropped and counted",
                     shown, strerror(dir ? saved : ENOENT));
        return -1;
    }
    int fd = sm_fs_create(path, O_RDWR, 0644); /* new, in a folder of ours (fs.h) */
    struct stat st;
    sm_spill_fhdr_t h;
    sm_spill_header(&h);
    sm_slots_hdr_t sh = {sm_slot_bytes, SM_SLOTS_START, 0};
    sh.check = sm_sum64(&sh, offsetof(sm_slots_hdr_t, check));
    if (fd < 0 || fstat(fd, &st) != 0 || sm_pwrite_all(fd, &h, sizeof h, 0) != 0 ||
        (sm_crash && sm_pwrite_all(fd, &sh, sizeof sh, sizeof h) != 0)) {
        sm_sig_own_write_failed(errno);
        if (sm_spill_first_error())
            sm_error("cannot create spill file %s: %s; events that do not fit in "
                     "SYSMEASURE_BUFFER_SIZE are dropped and counted", path, sm_fs_why(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    sm_spill_file = strdup(path);
    if (!sm_spill_file) {
        close(fd);
        return -1;
    }
    sm_spill_fd = fd;
    sm_spill_dev = st.st_dev;
    sm_spill_ino = st.st_ino;
    sm_spill_end = sm_crash ? SM_SLOTS_START : sizeof h;
    sm_crash_size = sm_crash ? SM_SLOTS_START : 0;
    sm_spill_broken = 0;
    return fd;
}

uint64_t sm_buffers_disk_bytes(void)
{
    uint64_t crash = __atomic_load_n(&sm_crash_size, __ATOMIC_RELAXED);
    return crash ? crash : __atomic_load_n(&sm_spill_end, __ATOMIC_RELAXED);
}

int sm_buffers_fs_space(uint64_t *avail, uint64_t *total, char *where, size_t len)
{
    struct statvfs st;
    int rc = -1;
    pthread_mutex_lock(&sm_file_lock);
    if (sm_spill_fd >= 0) {
        int fd = sm_spill_fd_checked();
        if (fd >= 0 && fstatvfs(fd, &st) == 0) {
            const char *slash = strrchr(sm_spill_file, '/');
            snprintf(where, len, "%.*s", slash ? (int)(slash - sm_spill_file) : 1,
                     slash ? sm_spill_file : ".");
            rc = 0;
        }
    }
    pthread_mutex_unlock(&sm_file_lock);
    /* No spill file yet (staged OTF2 files only): the folder. */
    if (rc != 0 && sm_buffers_spill_dir(where, len) == 0 && statvfs(where, &st) == 0)
        rc = 0;
    if (rc == 0) {
        *avail = (uint64_t)st.f_bavail * st.f_frsize;
        *total = (uint64_t)st.f_blocks * st.f_frsize;
    }
    return rc;
}

/* Fill in the frame header of chunk c (records of location loc_id).  A
 * crash-safe slot (mapped) is sealed in place once, when its thread moves
 * on from it: its check then covers the slot's fields too. */
void sm_frame_seal(sm_chunk_t *c, uint32_t loc_id, uint32_t used)
{
    sm_spill_frame_t *f = &c->frame;
    if (c->slot_offset && f->magic == SM_FRAME_MAGIC && f->bytes == used &&
        f->location == loc_id)
        return; /* sealed when it was left (slots are never refilled) */
    f->magic = SM_FRAME_MAGIC;
    f->location = loc_id;
    f->bytes = used;
    f->records = sm_count_records(c->data, c->data + used);
    f->data_check = sm_sum64(c->data, used);
    f->head_check = sm_sum64(f, offsetof(sm_spill_frame_t, head_check));
    if (c->slot_offset)
        c->slot_pad = sm_slot_check(c, f->head_check);
}

/* Writes the frames of chunks c[0..n) (sealed) in as few system calls as
 * possible; offsets[i] gets each frame's place.  0, or -1 (nothing of them
 * counts as written).  Under sm_file_lock. */
int sm_spill_write_frames(sm_chunk_t **c, uint32_t n, uint64_t *offsets)
{
    int fd = sm_spill_open();
    if (fd < 0)
        return -1;
    if (sm_crash_size) {
        /* Crash-safe file: a mapped chunk is in its slot already (sealed in
         * place); one in memory is written whole into a new slot. */
        for (uint32_t i = 0; i < n; i++) {
            if (!c[i]->slot_offset) {
                uint64_t off = sm_crash_slot_take(fd);
                if (!off)
                    return -1;
                c[i]->slot_base = (uint64_t)(uintptr_t)c[i]->data;
                c[i]->live_end = c[i]->data + c[i]->frame.bytes;
                c[i]->slot_location = c[i]->frame.location;
                c[i]->slot_pad = sm_slot_check(c[i], c[i]->frame.head_check);
                c[i]->slot_magic = SM_SLOT_MAGIC;
                if (sm_pwrite_all(fd, c[i], sizeof(sm_chunk_t) + c[i]->frame.bytes, off) != 0)
                    return -1;
                offsets[i] = off + offsetof(sm_chunk_t, frame);
                c[i]->slot_magic = 0;
            } else {
                offsets[i] = c[i]->slot_offset + offsetof(sm_chunk_t, frame);
            }
        }
        return 0;
    }
    struct iovec iov[64];
    uint64_t off = sm_spill_end;
    for (uint32_t i = 0; i < n;) {
        uint32_t k = 0;
        uint64_t total = 0, start = off;
        while (i + k < n && k < sizeof iov / sizeof iov[0]) {
            iov[k].iov_base = &c[i + k]->frame;
            iov[k].iov_len = sizeof c[i + k]->frame + c[i + k]->frame.bytes;
            offsets[i + k] = start + total;
            total += iov[k].iov_len;
            k++;
        }
        ssize_t w;
        do
            w = pwritev(fd, iov, (int)k, (off_t)start);
        while (w < 0 && errno == EINTR);
        if (w >= 0 && (uint64_t)w < total) { /* short: the rest one by one */
            uint64_t done = (uint64_t)w, at = 0;
            for (uint32_t j = 0; j < k; j++) {
                uint64_t len = iov[j].iov_len;
                if (done < at + len) {
                    uint64_t skip = done > at ? done - at : 0;
                    if (sm_pwrite_all(fd, (uint8_t *)iov[j].iov_base + skip, len - skip,
                                      start + at + skip) != 0)
                        return -1;
                }
                at += len;
            }
        } else if (w < 0) {
            return -1;
        }
        off = start + total;
        i += k;
    }
    sm_spill_end = off;
    return 0;
}

void sm_report_write_error(int err)
{
    sm_sig_own_write_failed(err);
    if (sm_spill_first_error())
        sm_error("spilling events to %s failed: %s; events that do not fit in "
                 "SYSMEASURE_BUFFER_SIZE are dropped and counted",
                 sm_spill_file ? sm_spill_file : "the spill folder", sm_fs_why(err));
}

/* remove: the file goes with its last user; else it stays on disk, closed,
 * and the next spill opens a new one (sm_buffer_forget). */
static void sm_spill_release(sm_location_t *loc, int remove)
{
    sm_buffer_t *b = &loc->buffer;
    pthread_mutex_lock(&sm_w_lock);
    int last = 0;
    if (b->n_spilled) {
        b->n_spilled = 0;
        last = --sm_spill_users == 0;
    }
    free(b->spilled);
    b->spilled = NULL;
    b->cap_spilled = 0;
    pthread_mutex_unlock(&sm_w_lock);
    if (!last || sm_crash_size) /* a crash-safe file goes in sm_buffers_crash_safe_done */
        return;
    pthread_mutex_lock(&sm_file_lock);
    if (sm_spill_fd_checked() >= 0) {
        close(sm_spill_fd);
        if (remove)
            unlink(sm_spill_file);
    }
    sm_spill_fd = -1;
    sm_spill_broken = 0;
    free(sm_spill_file);
    sm_spill_file = NULL;
    pthread_mutex_unlock(&sm_file_lock);
}

void sm_buffer_remove_spill(sm_location_t *loc)
{
    sm_spill_release(loc, 1);
}

void sm_buffer_spill_forget(sm_location_t *loc)
{
    sm_spill_release(loc, 0);
}

const char *sm_buffer_spill_path(const sm_location_t *loc)
{
    return loc->buffer.n_spilled ? sm_spill_file : NULL;
}
