/* --crash-safe: every chunk a slot of the spill file, mapped shared (see
 * buffer.h, sm_buffers_set_crash_safe). */
#define _GNU_SOURCE
#include "buffer_private.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "clock.h"
#include "journal.h"
#include "sig_hold.h"
#include "../util/fs.h"
#include "../util/log.h"

/* ---------------------------------------------------------------- crash-safe slots */

/* A crash-safe slot that cannot be had is said once; its chunk stays in
 * memory and goes to a slot when it spills. */
static int sm_crash_said;

static void sm_crash_warn(const char *what, int err)
{
    sm_sig_own_write_failed(err);
    if (!__atomic_exchange_n(&sm_crash_said, 1, __ATOMIC_RELAXED))
        sm_warning("--crash-safe: %s (%s); events go to memory until they spill, and those a "
                   "kill catches there are lost", what, sm_fs_why(err));
}

/* The offset of a new slot in the spill file, its blocks allocated (so that
 * writing through the mapping never meets a full disk); 0 when there is
 * none.  Under sm_file_lock; fd is the spill file. */
uint64_t sm_crash_slot_take(int fd)
{
    uint64_t off = sm_spill_end;
    if (off + sm_slot_bytes > sm_crash_size) {
        /* Sixteen slots at a time: one system call per sixteen chunks. */
        uint64_t grow = 16 * sm_slot_bytes;
        int rc;
        do
            rc = fallocate(fd, 0, (off_t)off, (off_t)grow);
        while (rc != 0 && errno == EINTR);
        if (rc != 0 && errno == EOPNOTSUPP) /* no fallocate here: the size at least */
            rc = ftruncate(fd, (off_t)(off + grow));
        if (rc != 0) {
            sm_crash_warn("cannot grow the spill file", errno);
            return 0;
        }
        sm_crash_size = off + grow;
    }
    sm_spill_end = off + sm_slot_bytes;
    return off;
}

/* A new slot, mapped and made writable, by the calling thread. */
sm_chunk_t *sm_crash_chunk_map_now(void)
{
    pthread_mutex_lock(&sm_file_lock);
    int fd = __atomic_load_n(&sm_crash, __ATOMIC_ACQUIRE) ? sm_spill_open() : -1;
    uint64_t off = fd >= 0 ? sm_crash_slot_take(fd) : 0;
    void *p = off ? mmap(NULL, sm_slot_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)off)
                  : MAP_FAILED;
    int err = errno;
    pthread_mutex_unlock(&sm_file_lock);
    if (p == MAP_FAILED) {
        if (off)
            sm_crash_warn("cannot map a chunk of the spill file", err);
        else if (fd < 0 && __atomic_load_n(&sm_crash, __ATOMIC_ACQUIRE))
            sm_crash_warn("no spill file", err);
        return NULL;
    }
    /* Every page made writable now, in one call where the kernel can
     * (each first write to a page of a shared file mapping faults once):
     * the hot path then writes into mapped pages. */
    int populated = 0;
#ifdef MADV_POPULATE_WRITE
    populated = madvise(p, sm_slot_bytes, MADV_POPULATE_WRITE) == 0;
#endif
    volatile uint8_t *b = p;
    for (uint64_t i = 0; !populated && i < sm_slot_bytes; i += 4096)
        b[i] = 0;
    /* A calibration point for the clock of a process that may never get
     * to its end (the journal, journal.h). */
    sm_journal_add_clock_point();
    sm_chunk_t *c = p;
    c->capacity = (uint32_t)(sm_slot_bytes - sizeof(sm_chunk_t));
    c->used = 0;
    c->next = c->qnext = NULL;
    c->owner = NULL;
    c->slot_base = (uint64_t)(uintptr_t)c->data;
    c->live_end = c->data;
    c->slot_offset = off;
    c->slot_location = UINT32_MAX;
    return c;
}

void sm_crash_chunk_unmap(sm_chunk_t *c)
{
    munmap(c, sm_slot_bytes);
}

void sm_buffers_set_crash_safe(int on)
{
    long page = sysconf(_SC_PAGESIZE);
    uint64_t pg = page > 0 ? (uint64_t)page : 4096u;
    sm_slot_bytes = (sizeof(sm_chunk_t) + sm_chunk_bytes + pg - 1) / pg * pg;
    __atomic_store_n(&sm_crash, on ? 1 : 0, __ATOMIC_RELEASE);
}

int sm_buffers_crash_safe(void)
{
    return __atomic_load_n(&sm_crash, __ATOMIC_ACQUIRE);
}

int sm_buffers_crash_safe_move(const char *dir)
{
    pthread_mutex_lock(&sm_file_lock);
    int rc = 0;
    if (sm_crash_size && sm_spill_file) {
        const char *base = strrchr(sm_spill_file, '/');
        char path[4096];
        if (snprintf(path, sizeof path, "%s/%s", dir, base ? base + 1 : sm_spill_file) >=
                (int)sizeof path ||
            rename(sm_spill_file, path) != 0) {
            rc = -1;
        } else {
            free(sm_spill_file);
            sm_spill_file = strdup(path);
        }
    }
    pthread_mutex_unlock(&sm_file_lock);
    return rc;
}

void sm_buffers_crash_safe_done(void)
{
    __atomic_store_n(&sm_crash, 0, __ATOMIC_RELEASE);
    pthread_mutex_lock(&sm_file_lock);
    if (sm_crash_size && sm_spill_fd_checked() >= 0) {
        /* Chunks still mapped stay valid: the pages outlive the name. */
        close(sm_spill_fd);
        unlink(sm_spill_file);
        sm_spill_fd = -1;
        free(sm_spill_file);
        sm_spill_file = NULL;
        sm_spill_broken = 1; /* later spills (threads still running) are dropped */
    }
    pthread_mutex_unlock(&sm_file_lock);
}
