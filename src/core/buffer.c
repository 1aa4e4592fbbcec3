/* Chunked event buffers under one memory budget, spilled to disk by a
 * background writer thread (see buffer.h). */
#define _GNU_SOURCE
#include "buffer.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <unistd.h>

#include "clock.h"
#include "cpus.h"
#include "job.h"
#include "journal.h"
#include "location.h"
#include "pages.h"
#include "trace_space.h"
#include "sig_hold.h"
#include "../util/fs.h"
#include "../util/log.h"
#include "../util/grow.h"

/* ---------------------------------------------------------------- file format */

#define SM_SPILL_MAGIC "SMSPILL2"
#define SM_SPILL_VERSION 4u       /* 4: the header names host and rank */
#define SM_SPILL_VERSION_SLOTS 5u /* --crash-safe: fixed-size slots (below); 5: slot checks */
#define SM_FRAME_MAGIC 0x46434d53u /* "SMCF" */
#define SM_SLOT_MAGIC 0x544f4c53534d5343ull /* "CSMSSLOT" */
#define SM_SLOTS_START 4096u /* first slot of a crash-safe file */

/* The spill file starts with this header: whose file it is (job, host,
 * pid and, once the process knows it, rank), so that a file found under
 * another process's name is recognised (sysmeasure-merge). */
typedef struct sm_spill_fhdr {
    char magic[8];
    uint32_t version;
    uint32_t size; /* of this header */
    int64_t pid;
    char job[SM_JOB_ID_MAX];
    char host[64];    /* gethostname(), as in the process file and the journal */
    uint32_t rank;    /* SM_SPILL_NO_RANK until the process knows it */
    uint32_t n_ranks;
    uint64_t check; /* of the bytes above */
} sm_spill_fhdr_t;

/* Then frames: this header, then `bytes` of records of one location. */
typedef struct sm_spill_frame {
    uint32_t magic;
    uint32_t location;
    uint32_t bytes;
    uint32_t records;
    uint64_t data_check;
    uint64_t head_check; /* of the 24 bytes above */
} sm_spill_frame_t;

_Static_assert(sizeof(sm_spill_frame_t) == 32, "a frame header is 32 bytes");

/* A crash-safe spill file: the header above (version 3), this right after
 * it, then from SM_SLOTS_START slots of slot_bytes, each one chunk as it
 * is in memory (struct sm_chunk below: the slot fields, the frame header,
 * the records).  A sealed slot's frame is intact like any frame; a slot
 * whose frame is not sealed was being written when the process died: its
 * records up to its fill word (live_end - slot_base) are complete. */
/* A slot's own fields (its location, its place, where it was mapped) are
 * checked too: slot_pad holds sm_slot_check() over them and the frame's
 * head check (0 while the slot is being written), so that a slot whose
 * place or owner was damaged is refused, not put elsewhere. */
typedef struct sm_slots_hdr {
    uint64_t slot_bytes;
    uint64_t first_slot;
    uint64_t check;
} sm_slots_hdr_t;
_Static_assert(SM_JOB_ID_MAX == sizeof(((sm_spill_report_t *)0)->job), "job id size");

/* A 64-bit checksum, four words at a time (the writer thread checksums every
 * byte it writes: it must run at several GB/s). */
static uint64_t sm_sum64(const void *p, size_t n)
{
    const uint8_t *b = p;
    const uint64_t k = 0x9e3779b97f4a7c15ull;
    uint64_t h[4] = {k ^ n, k, ~k, n};
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        uint64_t w[4];
        memcpy(w, b + i, 32);
        for (int j = 0; j < 4; j++) {
            h[j] = (h[j] ^ w[j]) * 0xff51afd7ed558ccdull;
            h[j] ^= h[j] >> 31;
        }
    }
    for (; i < n; i++)
        h[0] = (h[0] ^ b[i]) * 0x100000001b3ull;
    uint64_t r = h[0] ^ (h[1] * 3) ^ (h[2] * 5) ^ (h[3] * 7);
    r = (r ^ (r >> 33)) * 0xc4ceb9fe1a85ec53ull;
    return r ^ (r >> 29);
}

/* ---------------------------------------------------------------- chunks */

struct sm_chunk {
    sm_chunk_t *next;          /* in its location's memory or in-flight list */
    sm_chunk_t *qnext;         /* in the writer's queue */
    struct sm_location *owner; /* while in flight */
    uint32_t capacity;
    uint32_t used;             /* valid for chunks before the current one */
    /* --crash-safe (the chunk is a slot of the spill file, these fields are
     * in the file): */
    uint64_t slot_magic;       /* SM_SLOT_MAGIC once the slot is a location's */
    uint64_t slot_base;        /* address of data in the process */
    uint8_t *live_end;         /* end of its complete records (SM_BUFFER_COMMIT) */
    uint64_t slot_offset;      /* in the spill file; 0: not mapped from it */
    uint32_t slot_location;
    uint32_t slot_seq;         /* its place among the location's chunks */
    uint64_t slot_pad;
    sm_spill_frame_t frame;    /* written right before data: one iovec per chunk */
    uint8_t data[];
};

_Static_assert(sizeof(sm_chunk_t) % 16 == 0, "chunk data aligned");

/* The check of a crash-safe slot's own fields (see sm_slots_hdr_t). */
static uint64_t sm_slot_check(const sm_chunk_t *c, uint64_t head_check)
{
    uint64_t w[4] = {c->slot_location, c->slot_seq, c->slot_base, head_check};
    return sm_sum64(w, sizeof w) | 1; /* never 0: a slot never checked is not one */
}

static uint64_t sm_budget = 64u << 20;
static uint64_t sm_chunk_bytes = 256u << 10;
static uint64_t sm_mark = 48u << 20; /* hand over above this */
static int sm_crash;                 /* --crash-safe */
static uint64_t sm_slot_bytes;       /* crash-safe slot size (page multiple) */
static uint64_t sm_in_use;           /* atomic */
static uint64_t sm_peak;             /* atomic */
static int sm_discard;               /* forked child: records are not kept */
static char *sm_spill_dir;
static const char *(*sm_spill_provider)(void);
static pthread_mutex_t sm_spill_dir_lock = PTHREAD_MUTEX_INITIALIZER;

#define SM_CHUNK_TOTAL(cap) (sizeof(sm_chunk_t) + (uint64_t)(cap))

void sm_buffers_configure(uint64_t budget_bytes, uint64_t chunk_bytes)
{
    sm_budget = budget_bytes;
    sm_chunk_bytes = chunk_bytes;
    /* Hand over early enough that the application goes on in the headroom
     * while the writer writes: a quarter of the budget, at least 2 chunks. */
    uint64_t room = budget_bytes / 4;
    if (room < 2 * SM_CHUNK_TOTAL(chunk_bytes))
        room = 2 * SM_CHUNK_TOTAL(chunk_bytes);
    sm_mark = budget_bytes > room ? budget_bytes - room : 0;
}

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

uint64_t sm_buffers_in_use(void)
{
    return __atomic_load_n(&sm_in_use, __ATOMIC_RELAXED);
}

uint64_t sm_buffers_peak(void)
{
    return __atomic_load_n(&sm_peak, __ATOMIC_RELAXED);
}

uint64_t sm_buffers_budget(void)
{
    return sm_budget;
}

uint64_t sm_buffers_chunk_size(void)
{
    return sm_chunk_bytes;
}

void sm_buffer_init(sm_location_t *loc)
{
    memset(&loc->buffer, 0, sizeof loc->buffer);
    loc->pos = loc->end = NULL;
    loc->live_end = NULL;
}

/* loc's write position, published (and in the chunk's fill word when the
 * chunk is a mapped slot). */
static void sm_set_pos(sm_location_t *loc, uint8_t *pos)
{
    __atomic_store_n(&loc->pos, pos, __ATOMIC_RELEASE);
    if (loc->live_end)
        __atomic_store_n(loc->live_end, pos, __ATOMIC_RELEASE);
}

/* c becomes loc's current chunk. */
static void sm_chunk_bind(sm_location_t *loc, sm_chunk_t *c)
{
    c->slot_location = loc->id;
    c->slot_seq = loc->buffer.n_chunks++;
    c->live_end = c->data;
    loc->end = c->data + c->capacity;
    loc->live_end = c->slot_offset ? &c->live_end : NULL;
    if (c->slot_offset) {
        c->slot_pad = sm_slot_check(c, 0);
        __atomic_store_n(&c->slot_magic, SM_SLOT_MAGIC, __ATOMIC_RELEASE);
    }
}

/* Chunks a location gave back (after a spill, or when it is freed) are kept
 * for the next one: the memory stays mapped and touched, so refilling a
 * buffer costs no page faults.  The list never holds more than the budget
 * (plus one chunk per thread) ever allocated. */
static sm_chunk_t *sm_free_chunks;
static pthread_mutex_t sm_free_lock = PTHREAD_MUTEX_INITIALIZER;

static sm_chunk_t *sm_crash_chunk_map(void);
static void sm_crash_chunk_unmap(sm_chunk_t *c);

static void sm_chunk_account(sm_chunk_t *c)
{
    uint64_t now = __atomic_add_fetch(&sm_in_use, SM_CHUNK_TOTAL(c->capacity), __ATOMIC_RELAXED);
    uint64_t peak = __atomic_load_n(&sm_peak, __ATOMIC_RELAXED);
    while (now > peak && !__atomic_compare_exchange_n(&sm_peak, &peak, now, 1, __ATOMIC_RELAXED,
                                                      __ATOMIC_RELAXED))
        ;
}

static sm_chunk_t *sm_chunk_alloc(void)
{
    if (__atomic_load_n(&sm_crash, __ATOMIC_ACQUIRE)) {
        sm_chunk_t *m = sm_crash_chunk_map();
        if (m) {
            sm_chunk_account(m);
            return m;
        }
    }
    pthread_mutex_lock(&sm_free_lock);
    sm_chunk_t *c = sm_free_chunks;
    if (c)
        sm_free_chunks = c->next;
    pthread_mutex_unlock(&sm_free_lock);
    if (c && c->capacity != sm_chunk_bytes) { /* chunk size changed (tests) */
        sm_pages_put(c, SM_CHUNK_TOTAL(c->capacity));
        c = NULL;
    }
    if (!c) {
        /* Populated memory (huge pages where offered, pages.h): faulting a
         * fresh chunk in page by page from the hot path costs several times more. */
        void *p = sm_pages_get(SM_CHUNK_TOTAL(sm_chunk_bytes));
        if (!p)
            return NULL;
        c = p;
        c->capacity = (uint32_t)sm_chunk_bytes;
    }
    c->next = c->qnext = NULL;
    c->owner = NULL;
    c->used = 0;
    c->slot_magic = c->slot_base = c->slot_offset = 0;
    c->live_end = NULL;
    sm_chunk_account(c);
    return c;
}

static void sm_chunk_free(sm_chunk_t *c)
{
    __atomic_sub_fetch(&sm_in_use, SM_CHUNK_TOTAL(c->capacity), __ATOMIC_RELAXED);
    if (c->slot_offset) { /* its records are in the file: the memory goes */
        sm_crash_chunk_unmap(c);
        return;
    }
    pthread_mutex_lock(&sm_free_lock);
    c->next = sm_free_chunks;
    sm_free_chunks = c;
    pthread_mutex_unlock(&sm_free_lock);
}

void sm_buffers_release(void)
{
    pthread_mutex_lock(&sm_free_lock);
    sm_chunk_t *c = sm_free_chunks;
    sm_free_chunks = NULL;
    pthread_mutex_unlock(&sm_free_lock);
    while (c) {
        sm_chunk_t *next = c->next;
        sm_pages_put(c, SM_CHUNK_TOTAL(c->capacity));
        c = next;
    }
}

uint64_t sm_buffer_memory(const sm_location_t *loc)
{
    uint64_t bytes = 0;
    for (const sm_chunk_t *c = loc->buffer.first; c; c = c->next)
        bytes += SM_CHUNK_TOTAL(c->capacity);
    return bytes;
}

/* Bytes used in chunk c of loc (the current chunk's end is loc->pos). */
static uint32_t sm_chunk_used(const sm_location_t *loc, const sm_chunk_t *c)
{
    if (c == loc->buffer.current && loc->pos && loc->buffer.stop_state != SM_STOP_UNTRACED)
        return (uint32_t)(__atomic_load_n(&loc->pos, __ATOMIC_ACQUIRE) - c->data);
    return c->used;
}

static uint32_t sm_count_records(const uint8_t *p, const uint8_t *end)
{
    uint32_t n = 0;
    while (p + sizeof(sm_record_t) <= end) {
        p += sm_record_size((const sm_record_t *)p);
        n++;
    }
    return n;
}

/* ---------------------------------------------------------------- the spill file */

/* One file per process; IO on it under sm_file_lock (the writer thread, or
 * the thread that spills or saves once the writer is stopped). */
static pthread_mutex_t sm_file_lock = PTHREAD_MUTEX_INITIALIZER;
static int sm_spill_fd = -1;
static char *sm_spill_file;
static dev_t sm_spill_dev;
static ino_t sm_spill_ino;
static uint64_t sm_spill_end;  /* where the next frame (crash-safe: slot) goes */
static uint64_t sm_crash_size; /* crash-safe: the file's size (slots allocated) */
static int sm_spill_broken;    /* cannot be created or was replaced: give up */
static uint32_t sm_spill_users; /* locations with frames in it (writer lock) */

/* A spill that fails fails again at every chunk: say it once per process;
 * the exact number of lost events goes to the summary and metadata. */
static int sm_spill_error_said;

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

static int sm_pread_all(int fd, void *buf, size_t n, uint64_t off)
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
static int sm_spill_fd_checked(void)
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
static int sm_spill_open(void)
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
static uint64_t sm_crash_slot_take(int fd)
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
static sm_chunk_t *sm_crash_chunk_map_now(void)
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
    uint64_t point[2] = {sm_clock_now(), sm_clock_monotonic_ns()};
    sm_journal_add(SM_J_CLOCK_POINT, point, sizeof point, NULL, 0);
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

static void sm_crash_chunk_unmap(sm_chunk_t *c)
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

/* Fill in the frame header of chunk c (records of location loc_id).  A
 * crash-safe slot (mapped) is sealed in place once, when its thread moves
 * on from it: its check then covers the slot's fields too. */
static void sm_frame_seal(sm_chunk_t *c, uint32_t loc_id, uint32_t used)
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
static int sm_spill_write_frames(sm_chunk_t **c, uint32_t n, uint64_t *offsets)
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

/* ---------------------------------------------------------------- the writer thread */

static pthread_mutex_t sm_w_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sm_w_work = PTHREAD_COND_INITIALIZER;  /* queue not empty, or stop */
static pthread_cond_t sm_w_room = PTHREAD_COND_INITIALIZER;  /* chunks written, or stopped */
static sm_chunk_t *sm_q_head, *sm_q_tail;
static pthread_t sm_w_thread;
static int sm_w_started, sm_w_stop, sm_w_joined, sm_w_claimed;
static int sm_w_sync; /* no writer thread (stopped, or could not start): spill in place */

/* Background encoding (buffer.h): the encoder, a wish for the writer to
 * look for full chunks, and a lock the writer holds while it encodes (a
 * thread that spills its own chunks takes it: they must not go while being
 * read).  Lock order: sm_enc_lock, then sm_w_lock. */
static const sm_buffer_encoder_t *sm_encoder;
static int sm_enc_stopped; /* sm_buffers_staging_stop (atomic) */
static int sm_enc_wanted; /* writer lock */
static uint32_t sm_room_waiters; /* threads waiting for the disk (writer lock) */
static pthread_mutex_t sm_enc_lock = PTHREAD_MUTEX_INITIALIZER;
/* Locations whose thread ended, oldest first, for the encoder (writer lock). */
static sm_location_t *sm_enc_ended_head, *sm_enc_ended_tail;
static void sm_enc_wake(void);
static void sm_enc_ahead(void);
static void sm_enc_before_write(sm_chunk_t **c, uint32_t n);

/* A location's frame on disk (writer lock held). */
static void sm_note_extent(sm_location_t *loc, uint64_t offset, const sm_spill_frame_t *f,
                           uint32_t seq)
{
    sm_buffer_t *b = &loc->buffer;
    if (b->n_spilled == b->cap_spilled) {
        uint32_t cap = b->cap_spilled ? 2 * b->cap_spilled : 8;
        sm_spill_extent_t *grown = realloc(b->spilled, cap * sizeof *grown);
        if (!grown) { /* cannot find them again: count them as lost */
            b->dropped_records += f->records;
            return;
        }
        b->spilled = grown;
        b->cap_spilled = cap;
    }
    if (b->n_spilled == 0)
        sm_spill_users++;
    b->spilled[b->n_spilled++] = (sm_spill_extent_t){offset, f->bytes, f->records, SM_EXTENT_SEALED, seq, 0};
    b->spilled_bytes += f->bytes;
}

/* The chunks c[0..n) were written (ok) or not: record them on their owners,
 * take them off the owners' in-flight lists (each is the oldest there), and
 * give their memory back.  Writer lock held. */
static void sm_chunks_done(sm_chunk_t **c, uint32_t n, const uint64_t *offsets, int ok)
{
    for (uint32_t i = 0; i < n; i++) {
        sm_location_t *loc = c[i]->owner;
        sm_buffer_t *b = &loc->buffer;
        if (ok)
            sm_note_extent(loc, offsets[i], &c[i]->frame, c[i]->slot_seq);
        else
            b->dropped_records += c[i]->frame.records;
        b->flying_first = c[i]->next;
        if (!b->flying_first)
            b->flying_last = NULL;
        sm_chunk_free(c[i]);
    }
}

static void sm_report_write_error(int err)
{
    sm_sig_own_write_failed(err);
    if (sm_spill_first_error())
        sm_error("spilling events to %s failed: %s; events that do not fit in "
                 "SYSMEASURE_BUFFER_SIZE are dropped and counted",
                 sm_spill_file ? sm_spill_file : "the spill folder", sm_fs_why(err));
}

#define SM_W_BATCH 64
/* The writer thread takes about 2 MiB of chunks at a time (8 of the default
 * size; up to SM_W_BATCH small ones) and looks for a stop between them: at
 * the end of the run it must not finish a large batch that would only be
 * read back from disk again (quiesce waits for it); what it leaves is read
 * from memory. */
#define SM_W_TAKE_BYTES (2u << 20)

/* --crash-safe: slots mapped and made writable ahead of need by the writer
 * thread (mapping a slot costs a system call and a page-table fill per
 * page, which would otherwise land on the application's thread at each new
 * chunk).  Under the writer lock; taken in file order. */
#define SM_READY_MAX 4
static sm_chunk_t *sm_ready[SM_READY_MAX];
static uint32_t sm_n_ready;
static int sm_ready_wanted;

static int sm_writer_usable_locked(void);

static sm_chunk_t *sm_crash_chunk_map(void)
{
    sm_chunk_t *c = NULL;
    pthread_mutex_lock(&sm_w_lock);
    if (sm_n_ready) {
        c = sm_ready[0];
        memmove(sm_ready, sm_ready + 1, --sm_n_ready * sizeof *sm_ready);
    }
    if (sm_n_ready < SM_READY_MAX / 2 && sm_writer_usable_locked()) {
        sm_ready_wanted = 1;
        pthread_cond_signal(&sm_w_work);
    }
    pthread_mutex_unlock(&sm_w_lock);
    return c ? c : sm_crash_chunk_map_now();
}

/* The writer's part: fill the ready slots (writer lock held, dropped while
 * mapping). */
static void sm_ready_refill_locked(void)
{
    sm_ready_wanted = 0;
    while (sm_n_ready < SM_READY_MAX && !sm_w_stop && __atomic_load_n(&sm_crash, __ATOMIC_ACQUIRE)) {
        pthread_mutex_unlock(&sm_w_lock);
        sm_chunk_t *c = sm_crash_chunk_map_now();
        pthread_mutex_lock(&sm_w_lock);
        if (!c)
            break;
        sm_ready[sm_n_ready++] = c;
    }
}

static void *sm_writer_main(void *arg)
{
    (void)arg;
    sm_cpus_bind_writer();
    sm_chunk_t *batch[SM_W_BATCH];
    uint64_t offsets[SM_W_BATCH];
    pthread_mutex_lock(&sm_w_lock);
    for (;;) {
        while (!sm_q_head && !sm_w_stop && !sm_ready_wanted && !sm_enc_wanted)
            pthread_cond_wait(&sm_w_work, &sm_w_lock);
        if (sm_w_stop)
            break;
        if (sm_ready_wanted) {
            sm_ready_refill_locked(); /* (crash-safe: the file grew) */
            pthread_mutex_unlock(&sm_w_lock);
            sm_space_check();
            pthread_mutex_lock(&sm_w_lock);
            if (!sm_q_head && !sm_enc_wanted)
                continue;
        }
        if (!sm_q_head) { /* only full chunks to encode */
            sm_enc_wanted = 0;
            pthread_mutex_unlock(&sm_w_lock);
            sm_enc_ahead();
            sm_space_check(); /* (the staged files grew) */
            pthread_mutex_lock(&sm_w_lock);
            continue;
        }
        uint32_t n = 0;
        uint64_t taken = 0;
        while (sm_q_head && n < SM_W_BATCH && taken < SM_W_TAKE_BYTES) {
            taken += sm_q_head->used;
            batch[n++] = sm_q_head;
            sm_q_head = sm_q_head->qnext;
        }
        if (!sm_q_head)
            sm_q_tail = NULL;
        pthread_mutex_unlock(&sm_w_lock);

        if (sm_encoder)
            sm_enc_before_write(batch, n); /* what goes to disk is encoded first */
        for (uint32_t i = 0; i < n; i++)
            sm_frame_seal(batch[i], batch[i]->owner->id, batch[i]->used);
        pthread_mutex_lock(&sm_file_lock);
        int ok = sm_spill_write_frames(batch, n, offsets) == 0;
        int err = errno;
        pthread_mutex_unlock(&sm_file_lock);
        if (!ok && !sm_spill_broken)
            sm_report_write_error(err);
        sm_space_check(); /* where the trace grows on disk (trace_space.h) */

        pthread_mutex_lock(&sm_w_lock);
        sm_chunks_done(batch, n, offsets, ok);
        pthread_cond_broadcast(&sm_w_room);
    }
    pthread_cond_broadcast(&sm_w_room);
    pthread_mutex_unlock(&sm_w_lock);
    return NULL;
}

/* The writer thread is not measured, and no signal is delivered to it (a
 * fatal signal's handler writes the output and waits for this thread). */
static int sm_writer_start(void)
{
    return sm_internal_thread_create(&sm_w_thread, 256u << 10, sm_writer_main, NULL);
}

void sm_buffers_quiesce(void)
{
    pthread_mutex_lock(&sm_w_lock);
    sm_w_sync = 1;
    if (sm_w_started && !sm_w_claimed) {
        sm_w_claimed = 1;
        sm_w_stop = 1;
        pthread_cond_signal(&sm_w_work);
        pthread_mutex_unlock(&sm_w_lock);
        pthread_join(sm_w_thread, NULL);
        pthread_mutex_lock(&sm_w_lock);
        sm_w_joined = 1;
        pthread_cond_broadcast(&sm_w_room);
    } else {
        while (sm_w_started && !sm_w_joined)
            pthread_cond_wait(&sm_w_room, &sm_w_lock);
    }
    pthread_mutex_unlock(&sm_w_lock);
}

/* Whether the writer thread was in use before sm_buffers_pause. */
static int sm_w_sync_before_pause;

void sm_buffers_pause(void)
{
    pthread_mutex_lock(&sm_w_lock);
    sm_w_sync_before_pause = sm_w_sync;
    pthread_mutex_unlock(&sm_w_lock);
    sm_buffers_quiesce();
}

/* In a forked child only the calling thread is left: a lock another
 * thread held at the fork would stay taken.  Every lock and condition of
 * the writer and the spill files, new. */
static void sm_buffers_fresh_locks(void)
{
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
    sm_w_lock = m;
    sm_file_lock = m;
    sm_free_lock = m;
    sm_spill_dir_lock = m;
    sm_enc_lock = m;
    sm_w_work = cv;
    sm_w_room = cv;
}

void sm_buffers_resume(int child)
{
    if (child) {
        sm_buffers_fresh_locks();
        sm_room_waiters = 0;
    }
    pthread_mutex_lock(&sm_w_lock);
    sm_w_started = sm_w_stop = sm_w_claimed = sm_w_joined = 0;
    sm_w_sync = sm_w_sync_before_pause;
    pthread_mutex_unlock(&sm_w_lock);
}

void sm_buffers_after_fork_child(void)
{
    sm_buffers_fresh_locks();
    sm_q_head = sm_q_tail = NULL;
    sm_enc_ended_head = sm_enc_ended_tail = NULL;
    sm_w_started = sm_w_stop = sm_w_claimed = sm_w_joined = 0;
    sm_w_sync = 1;
    sm_n_ready = 0; /* the parent's slots: never written from here */
    sm_ready_wanted = 0;
    /* Crash-safe chunks are the parent's file, shared: the child gets
     * private copies at the same addresses, so its writes never reach it. */
    sm_crash = 0;
    uint32_t n = sm_location_count();
    for (uint32_t i = 0; i < n; i++) {
        sm_location_t *loc = sm_location_get(i);
        if (!loc)
            continue;
        sm_chunk_t *lists[2] = {loc->buffer.first, loc->buffer.flying_first};
        for (int k = 0; k < 2; k++)
            for (sm_chunk_t *c = lists[k], *next; c; c = next) {
                next = c->next;
                if (c->slot_offset &&
                    mmap(c, sm_slot_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED,
                         sm_spill_fd, (off_t)c->slot_offset) == MAP_FAILED) {
                    void *copy = malloc(sm_slot_bytes);
                    if (copy)
                        memcpy(copy, c, sm_slot_bytes);
                    mmap(c, sm_slot_bytes, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_FIXED | MAP_ANONYMOUS, -1, 0);
                    if (copy)
                        memcpy(c, copy, sm_slot_bytes);
                    free(copy);
                }
            }
    }
    /* The descriptor is the parent's file: never written from here. */
    sm_spill_fd = -1;
    sm_spill_broken = 1;
    sm_discard = 1;
}

void sm_buffers_fork_child(sm_location_t *self)
{
    sm_buffers_after_fork_child();
    /* Records of its own from now on: in memory, beyond the budget in a
     * spill file of its own, without a writer thread or the encoding during
     * the run (that state is the parent's) and not crash-safe. */
    sm_discard = 0;
    sm_encoder = NULL;
    sm_spill_file = NULL;
    sm_spill_end = sm_crash_size = 0;
    sm_spill_users = 0;
    sm_spill_broken = 0;
    sm_spill_error_said = 0;
    __atomic_store_n(&sm_in_use, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&sm_peak, 0, __ATOMIC_RELAXED);
    if (self) /* (the parent's chunks stay in its copy of the memory, never touched) */
        sm_buffer_init(self);
}

/* Moves all of loc's chunks to the writer's queue (writer lock held). */
static void sm_hand_over_locked(sm_location_t *loc)
{
    sm_buffer_t *b = &loc->buffer;
    for (sm_chunk_t *c = b->first, *next; c; c = next) {
        next = c->next;
        c->next = NULL;
        if (!c->used) { /* nothing in it: straight back to the pool */
            sm_chunk_free(c);
            continue;
        }
        c->owner = loc;
        c->qnext = NULL;
        if (b->flying_last)
            b->flying_last->next = c;
        else
            b->flying_first = c;
        b->flying_last = c;
        if (sm_q_tail)
            sm_q_tail->qnext = c;
        else
            sm_q_head = c;
        sm_q_tail = c;
    }
    b->first = b->current = NULL;
    loc->live_end = NULL; /* the writer seals and unmaps those slots */
    b->spills++;
    pthread_cond_signal(&sm_w_work);
}

/* Writer lock held: whether the writer thread runs (started now if need be). */
static int sm_writer_usable_locked(void)
{
    if (sm_w_sync || sm_discard)
        return 0;
    if (!sm_w_started) {
        if (sm_writer_start() != 0) {
            sm_w_sync = 1;
            return 0;
        }
        sm_w_started = 1;
    }
    return 1;
}

/* ---------------------------------------------------------------- spilling */

/* The BufferFlush record at the start of chunk c: start time, payload word =
 * stop time. */
static uint8_t *sm_put_flush(sm_chunk_t *c, uint64_t t0, uint64_t t1)
{
    sm_record_t *r = (sm_record_t *)c->data;
    r->time = t0;
    r->kind = SM_REC_BUFFER_FLUSH;
    r->words = 1;
    r->aux = 0;
    r->ref = 0;
    memcpy(r + 1, &t1, sizeof t1);
    return c->data + sizeof *r + 8;
}

/* Writes loc's in-flight chunks, then its memory chunks, on the calling
 * thread (the writer thread is stopped).  In-flight chunks are freed; of the
 * memory chunks, the first is kept (empty) when keep is set and all are kept
 * (emptied) otherwise.  0, or -1 when they could not be written (their
 * records are then dropped and counted). */
/* sm_spill_in_place, under sm_enc_lock. */
static int sm_spill_in_place_locked(sm_location_t *loc, int keep_all)
{
    sm_buffer_t *b = &loc->buffer;
    int rc = 0;
    pthread_mutex_lock(&sm_w_lock);
    /* In-flight ones first: they are older. */
    while (b->flying_first) {
        sm_chunk_t *batch[SM_W_BATCH];
        uint64_t offsets[SM_W_BATCH];
        uint32_t n = 0;
        for (sm_chunk_t *c = b->flying_first; c && n < SM_W_BATCH; c = c->next) {
            sm_frame_seal(c, loc->id, c->used);
            batch[n++] = c;
        }
        pthread_mutex_lock(&sm_file_lock);
        int ok = sm_spill_write_frames(batch, n, offsets) == 0;
        int err = errno;
        pthread_mutex_unlock(&sm_file_lock);
        if (!ok) {
            if (!sm_spill_broken)
                sm_report_write_error(err);
            rc = -1;
        }
        sm_chunks_done(batch, n, offsets, ok);
    }
    for (sm_chunk_t *c = b->first; c;) {
        sm_chunk_t *batch[SM_W_BATCH];
        uint64_t offsets[SM_W_BATCH];
        uint32_t n = 0;
        for (; c && n < SM_W_BATCH; c = c->next) {
            uint32_t used = sm_chunk_used(loc, c);
            if (!used)
                continue;
            sm_frame_seal(c, loc->id, used);
            batch[n++] = c;
        }
        pthread_mutex_lock(&sm_file_lock);
        int ok = n == 0 || sm_spill_write_frames(batch, n, offsets) == 0;
        int err = errno;
        pthread_mutex_unlock(&sm_file_lock);
        for (uint32_t i = 0; i < n; i++) {
            if (ok)
                sm_note_extent(loc, offsets[i], &batch[i]->frame, batch[i]->slot_seq);
            else
                b->dropped_records += batch[i]->frame.records;
        }
        if (!ok) {
            if (!sm_spill_broken)
                sm_report_write_error(err);
            rc = -1;
        }
    }
    pthread_mutex_unlock(&sm_w_lock);
    if (!b->first)
        return rc;
    int mapped = 0;
    for (sm_chunk_t *c = b->first; c; c = c->next)
        mapped |= c->slot_offset != 0;
    if (mapped || sm_crash_size) {
        /* Crash-safe slots hold their records now: they cannot be written
         * again.  The memory goes; a fresh chunk (a new slot) when one is
         * kept. */
        loc->live_end = NULL;
        for (sm_chunk_t *c = b->first, *next; c; c = next) {
            next = c->next;
            sm_chunk_free(c);
        }
        b->first = b->current = NULL;
        sm_chunk_t *c = keep_all ? NULL : sm_chunk_alloc();
        if (!c) {
            loc->pos = loc->end = NULL;
            return rc;
        }
        b->first = b->current = c;
        sm_chunk_bind(loc, c);
        sm_set_pos(loc, c->data);
        return rc;
    }
    if (keep_all) {
        /* Emptied chunks take new places in the sequence: what is written
         * into them now comes after everything (the encoder's prefix). */
        for (sm_chunk_t *c = b->first; c; c = c->next) {
            c->used = 0;
            c->slot_seq = b->n_chunks++;
        }
        sm_set_pos(loc, b->current->data);
        return rc;
    }
    sm_chunk_t *keep = b->first;
    for (sm_chunk_t *c = keep->next, *next; c; c = next) {
        next = c->next;
        sm_chunk_free(c);
    }
    keep->next = NULL;
    keep->used = 0;
    keep->slot_seq = b->n_chunks++;
    b->current = keep;
    sm_chunk_bind(loc, keep);
    sm_set_pos(loc, keep->data);
    return rc;
}

/* With the encoder kept off the location's chunks meanwhile. */
static int sm_spill_in_place(sm_location_t *loc, int keep_all)
{
    /* Chunks written here are not encoded first: the encoder takes no more
     * of this location (what it took stays a prefix; the rest is read back
     * at the end), and it is not reading them now. */
    sm_buffer_t *b = &loc->buffer;
    pthread_mutex_lock(&sm_enc_lock);
    if (b->enc_status == SM_ENC_NONE)
        b->enc_status = SM_ENC_OFF;
    b->enc_frozen = 1;
    int rc = sm_spill_in_place_locked(loc, keep_all);
    pthread_mutex_unlock(&sm_enc_lock);
    return rc;
}

int sm_buffer_spill(sm_location_t *loc)
{
    sm_buffer_t *b = &loc->buffer;
    if (!b->first)
        return 0;
    int saved_errno = errno;
    uint64_t t0 = sm_clock_now();
    int rc = sm_spill_in_place(loc, 0);
    if (rc == 0) {
        b->spills++;
        b->spill_waits++;
        if (b->current)
            sm_set_pos(loc, sm_put_flush(b->current, t0, sm_clock_now()));
    }
    sm_space_check(); /* no writer thread: the spilling thread looks */
    errno = saved_errno;
    return rc;
}

/* The budget is tight: loc's chunks go to the writer, and loc gets a chunk
 * back, waiting for the disk only while its own chunks are in flight and the
 * budget is spent. */
static uint8_t *sm_buffer_hand_over(sm_location_t *loc)
{
    sm_buffer_t *b = &loc->buffer;
    uint64_t need = SM_CHUNK_TOTAL(sm_chunk_bytes);
    pthread_mutex_lock(&sm_w_lock);
    if (!sm_writer_usable_locked()) {
        pthread_mutex_unlock(&sm_w_lock);
        sm_buffer_spill(loc);
        return loc->pos;
    }
    int saved_errno = errno;
    sm_hand_over_locked(loc);
    uint64_t t0 = 0;
    int waited = 0;
    while (__atomic_load_n(&sm_in_use, __ATOMIC_RELAXED) + need > sm_budget && b->flying_first &&
           !sm_w_stop) {
        if (!waited)
            t0 = sm_clock_now();
        waited = 1;
        sm_room_waiters++;
        pthread_cond_wait(&sm_w_room, &sm_w_lock);
        sm_room_waiters--;
    }
    pthread_mutex_unlock(&sm_w_lock);
    sm_chunk_t *c = sm_chunk_alloc();
    if (!c)
        abort(); /* out of memory for one chunk: nowhere to record this event */
    b->current = c;
    __atomic_store_n(&b->first, c, __ATOMIC_RELEASE);
    sm_chunk_bind(loc, c);
    uint8_t *pos = c->data;
    if (waited) {
        b->spill_waits++;
        pos = sm_put_flush(c, t0, sm_clock_now());
    }
    sm_set_pos(loc, pos);
    errno = saved_errno;
    return pos;
}

/* A new chunk for loc, as while the trace records. */
static uint8_t *sm_buffer_next_chunk_now(sm_location_t *loc)
{
    sm_buffer_t *b = &loc->buffer;
    if (b->current) {
        b->current->used = (uint32_t)(loc->pos - b->current->data);
        if (sm_discard) { /* forked child: nothing of it is written */
            sm_set_pos(loc, b->current->data);
            return loc->pos;
        }
        /* --crash-safe: the full slot is sealed now, on this thread (one
         * checksum per chunk, 2.5-5 GB/s: 6-12 ns per region pair's 32
         * bytes, against the ~330 ns the shared mapping costs), so that
         * only the chunk being written at a kill lacks a checksum. */
        if (b->current->slot_offset)
            sm_frame_seal(b->current, loc->id, b->current->used);
        uint64_t need = SM_CHUNK_TOTAL(sm_chunk_bytes);
        if (__atomic_load_n(&sm_in_use, __ATOMIC_RELAXED) + need > sm_mark)
            return sm_buffer_hand_over(loc);
    }
    /* The first chunk of a location is granted even beyond the budget: every
     * thread needs somewhere to write. */
    sm_chunk_t *c = sm_chunk_alloc();
    if (!c) {
        if (b->current) {
            sm_buffer_spill(loc);
            return loc->pos;
        }
        abort();
    }
    /* Published for the writer thread, which encodes full chunks (their
     * `next` set) while they are still in memory. */
    if (b->current)
        __atomic_store_n(&b->current->next, c, __ATOMIC_RELEASE);
    else
        __atomic_store_n(&b->first, c, __ATOMIC_RELEASE);
    int full = b->current != NULL;
    b->current = c;
    sm_chunk_bind(loc, c);
    sm_set_pos(loc, c->data);
    if (full && sm_encoder && loc->buffer.enc_status != SM_ENC_OFF &&
        !__atomic_load_n(&sm_enc_stopped, __ATOMIC_RELAXED))
        sm_enc_wake();
    return loc->pos;
}

/* ---------------------------------------------------------------- the trace stopped */

/* After the trace stopped (trace_space.h), each location ends its trace at
 * its next chunk, on the thread that writes it, in three steps, so that the
 * trace stays balanced without a look at the records:
 *
 * 1. armed, at that chunk's end: the record being made gets its room in a
 *    new chunk, as before, and the regions open now are noted.  Enter and
 *    leave change the stack before they ask for room, so these are exactly
 *    the regions open in the trace once that record is in.  The chunk's end
 *    is set right after that record: the next record comes back here.
 * 2. closing, at the next record: a leave of each noted region (innermost
 *    first) and a MeasurementOnOff (off) at the current time.
 * 3. untraced: every later record goes to a chunk of its own that is used
 *    again and again, never written to disk nor read; its records are
 *    counted when it is reused and at the end.
 *
 * So the disk takes at most one more chunk per location, and a thread
 * whose chunk does not fill goes on recording into it (memory it has
 * already) until it ends. */

/* Counts the records in loc's scratch chunk and empties it. */
static void sm_scratch_settle(sm_location_t *loc)
{
    sm_buffer_t *b = &loc->buffer;
    sm_chunk_t *s = b->scratch;
    uint8_t *pos = loc->pos;
    if (!s || b->stop_state != SM_STOP_UNTRACED || !pos || pos < s->data ||
        pos > s->data + s->capacity)
        return;
    b->untraced += sm_count_records(s->data, pos);
    sm_set_pos(loc, s->data);
}

/* Step 3: room in the scratch chunk (made at the first time). */
static uint8_t *sm_buffer_untraced_room(sm_location_t *loc)
{
    sm_buffer_t *b = &loc->buffer;
    if (b->stop_state != SM_STOP_UNTRACED) {
        /* The chunk being filled ends here, as at any chunk's end. */
        if (b->current && loc->pos)
            b->current->used = (uint32_t)(loc->pos - b->current->data);
        loc->live_end = NULL; /* a crash-safe slot is complete here */
        b->stop_state = SM_STOP_UNTRACED;
    }
    sm_chunk_t *s = b->scratch;
    if (!s) {
        s = sm_pages_get(SM_CHUNK_TOTAL(sm_chunk_bytes));
        if (!s)
            abort(); /* out of memory for one chunk, as in sm_buffer_hand_over */
        memset(s, 0, sizeof *s);
        s->capacity = (uint32_t)sm_chunk_bytes;
        b->scratch = s;
        sm_set_pos(loc, s->data);
    } else {
        sm_scratch_settle(loc);
    }
    loc->end = s->data + s->capacity;
    return loc->pos;
}

/* Step 1. */
static uint8_t *sm_buffer_stop_arm(sm_location_t *loc, size_t bytes)
{
    sm_buffer_t *b = &loc->buffer;
    if (!b->current) /* nothing recorded: nothing to close */
        return sm_buffer_untraced_room(loc);
    uint32_t n = (uint32_t)(loc->sp - loc->stack), depth = 0;
    uint32_t *open = n ? malloc(n * sizeof *open) : NULL;
    if (n && !open) /* cannot note them: the regions stay open in the trace */
        return sm_buffer_untraced_room(loc);
    for (uint32_t i = 1; i <= n; i++)
        if (loc->stack[i].region != SM_DEEP_REGION)
            open[depth++] = loc->stack[i].region;
    b->stop_open = open;
    b->stop_depth = depth;
    b->stop_state = SM_STOP_CLOSING; /* a chunk as before */
    uint8_t *pos = sm_buffer_next_chunk_now(loc);
    b->stop_end = loc->end;
    loc->end = pos + bytes;
    b->stop_state = SM_STOP_ARMED;
    return pos;
}

/* Step 2. */
static uint8_t *sm_buffer_stop_close(sm_location_t *loc)
{
    sm_buffer_t *b = &loc->buffer;
    b->stop_state = SM_STOP_CLOSING;
    loc->end = b->stop_end;
    uint64_t t = sm_clock_now();
    for (uint32_t i = b->stop_depth; i-- > 0;) {
        sm_record_t *r = (sm_record_t *)SM_BUFFER_RESERVE(loc, sizeof *r);
        *r = (sm_record_t){.time = t, .kind = SM_REC_LEAVE, .ref = b->stop_open[i]};
        SM_BUFFER_COMMIT(loc, r + 1);
    }
    /* Where a thread's trace ends, for the viewers (GPU streams and metric
     * locations carry times of their own: none there). */
    if (loc->type == SM_LOCATION_CPU_THREAD) {
        sm_record_t *r = (sm_record_t *)SM_BUFFER_RESERVE(loc, sizeof *r);
        *r = (sm_record_t){.time = t, .kind = SM_REC_MEASUREMENT, .aux = 0};
        SM_BUFFER_COMMIT(loc, r + 1);
    }
    free(b->stop_open);
    b->stop_open = NULL;
    b->stop_depth = 0;
    return sm_buffer_untraced_room(loc);
}

static uint8_t *sm_buffer_next_chunk_held(sm_location_t *loc, size_t bytes)
{
    sm_buffer_t *b = &loc->buffer;
    if (bytes + sizeof(sm_record_t) + 8 > sm_chunk_bytes)
        abort(); /* records are small; a chunk is at least 4 KiB */
    /* Once per chunk: whether the trace stopped (a forked child's records
     * are discarded anyway). */
    if (SM_UNLIKELY(b->stop_state != SM_STOP_NONE || (sm_space_stopped() && !sm_discard))) {
        switch ((sm_buffer_stop_t)b->stop_state) {
        case SM_STOP_NONE:
            return sm_buffer_stop_arm(loc, bytes);
        case SM_STOP_ARMED:
            return sm_buffer_stop_close(loc);
        case SM_STOP_UNTRACED:
            return sm_buffer_untraced_room(loc);
        case SM_STOP_CLOSING:
            break;
        }
    }
    return sm_buffer_next_chunk_now(loc);
}

uint64_t sm_buffer_untraced(sm_location_t *loc)
{
    /* Counted where they are (a thread still running may be writing there
     * after its location closed: nothing is moved). */
    const sm_buffer_t *b = &loc->buffer;
    const sm_chunk_t *s = b->scratch;
    const uint8_t *pos = __atomic_load_n(&loc->pos, __ATOMIC_ACQUIRE);
    uint64_t n = b->untraced;
    if (s && b->stop_state == SM_STOP_UNTRACED && pos && pos >= s->data &&
        pos <= s->data + s->capacity)
        n += sm_count_records(s->data, pos);
    return n;
}
/* On the application's thread, with locks taken: no signal handler may jump
 * out of it (sig_hold.h); a spill written here may meet a file size limit. */
uint8_t *sm_buffer_next_chunk(sm_location_t *loc, size_t bytes)
{
    sm_sig_hold(SM_SIG_LOCKS_IO);
    uint8_t *pos = sm_buffer_next_chunk_held(loc, bytes);
    sm_sig_release();
    return pos;
}

static void sm_buffer_thread_ended_held(sm_location_t *loc);

void sm_buffer_thread_ended(sm_location_t *loc)
{
    sm_sig_hold(SM_SIG_LOCKS);
    sm_buffer_thread_ended_held(loc);
    sm_sig_release();
}

static void sm_buffer_thread_ended_held(sm_location_t *loc)
{
    sm_buffer_t *b = &loc->buffer;
    if (!b->current || sm_discard)
        return;
    int tight = __atomic_load_n(&sm_in_use, __ATOMIC_RELAXED) > sm_mark;
    /* No more records: the encoder takes its last chunk too, and then
     * closes it (sm_enc_finish_locked), so that it is not left to the end
     * of the run. */
    int encode = sm_encoder && sm_encoder->close &&
                 __atomic_load_n(&b->enc_status, __ATOMIC_RELAXED) != SM_ENC_OFF &&
                 !__atomic_load_n(&b->enc_frozen, __ATOMIC_RELAXED) &&
                 !__atomic_load_n(&sm_enc_stopped, __ATOMIC_ACQUIRE);
    if (!tight && !encode)
        return;
    if (b->stop_state == SM_STOP_UNTRACED)
        sm_scratch_settle(loc); /* its last chunk's end was noted then */
    else
        b->current->used = (uint32_t)(loc->pos - b->current->data);
    pthread_mutex_lock(&sm_w_lock);
    if (sm_writer_usable_locked()) {
        if (encode) {
            __atomic_store_n(&b->enc_ended, 1, __ATOMIC_RELEASE);
            b->enc_next_ended = NULL;
            if (sm_enc_ended_tail)
                sm_enc_ended_tail->buffer.enc_next_ended = loc;
            else
                sm_enc_ended_head = loc;
            sm_enc_ended_tail = loc;
            sm_enc_wanted = 1;
            pthread_cond_signal(&sm_w_work);
        }
        if (tight) {
            loc->pos = loc->end = NULL;
            loc->live_end = NULL;
            sm_hand_over_locked(loc);
        }
    }
    pthread_mutex_unlock(&sm_w_lock);
}

void sm_buffer_remove_spill(sm_location_t *loc)
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
        unlink(sm_spill_file);
    }
    sm_spill_fd = -1;
    sm_spill_broken = 0;
    free(sm_spill_file);
    sm_spill_file = NULL;
    pthread_mutex_unlock(&sm_file_lock);
}

const char *sm_buffer_spill_path(const sm_location_t *loc)
{
    return loc->buffer.n_spilled ? sm_spill_file : NULL;
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

void sm_buffer_free(sm_location_t *loc)
{
    sm_buffer_t *b = &loc->buffer;
    sm_buffers_quiesce();
    if (b->scratch)
        sm_pages_put(b->scratch, SM_CHUNK_TOTAL(b->scratch->capacity));
    b->scratch = NULL;
    free(b->stop_open);
    b->stop_open = NULL;
    for (sm_chunk_t *c = b->first, *next; c; c = next) {
        next = c->next;
        sm_chunk_free(c);
    }
    pthread_mutex_lock(&sm_w_lock);
    for (sm_chunk_t *c = b->flying_first, *next; c; c = next) {
        next = c->next;
        /* Still in the (stopped) writer's queue: take it out. */
        sm_chunk_t **p = &sm_q_head, *prev = NULL;
        while (*p && *p != c) {
            prev = *p;
            p = &(*p)->qnext;
        }
        if (*p) {
            *p = c->qnext;
            if (sm_q_tail == c)
                sm_q_tail = prev;
        }
        sm_chunk_free(c);
    }
    b->flying_first = b->flying_last = NULL;
    pthread_mutex_unlock(&sm_w_lock);
    b->first = b->current = NULL;
    loc->pos = loc->end = NULL;
    loc->live_end = NULL;
    sm_buffer_remove_spill(loc);
}

/* ---------------------------------------------------------------- reading back */

/* Delivers records in order.  A record written right after a wait for the
 * disk carries a time taken before the wait began (it waited while reserving
 * its room), so it is delivered before the BufferFlush record that precedes
 * it. */
typedef struct sm_replay {
    sm_record_fn fn;
    void *arg;
    uint8_t flush[sizeof(sm_record_t) + 8];
    int have_flush;
} sm_replay_t;

static int sm_replay_record(sm_replay_t *rp, const sm_record_t *r)
{
    int rc;
    if (rp->have_flush) {
        const sm_record_t *f = (const sm_record_t *)rp->flush;
        if (r->time < f->time && r->kind != SM_REC_BUFFER_FLUSH) {
            if ((rc = rp->fn(r, rp->arg)) != 0)
                return rc;
            rp->have_flush = 0;
            return rp->fn(f, rp->arg);
        }
        rp->have_flush = 0;
        if ((rc = rp->fn(f, rp->arg)) != 0)
            return rc;
    }
    if (r->kind == SM_REC_BUFFER_FLUSH && sm_record_size(r) <= sizeof rp->flush) {
        memcpy(rp->flush, r, sm_record_size(r));
        rp->have_flush = 1;
        return 0;
    }
    return rp->fn(r, rp->arg);
}

static int sm_replay_bytes(sm_replay_t *rp, const uint8_t *p, const uint8_t *end)
{
    while (p + sizeof(sm_record_t) <= end) {
        const sm_record_t *r = (const sm_record_t *)p;
        if (p + sm_record_size(r) > end)
            break;
        int rc = sm_replay_record(rp, r);
        if (rc != 0)
            return rc;
        p += sm_record_size(r);
    }
    return 0;
}

static int sm_replay_end(sm_replay_t *rp, int rc)
{
    if (rc == 0 && rp->have_flush)
        rc = rp->fn((const sm_record_t *)rp->flush, rp->arg);
    return rc;
}

/* Whether the frame at p (header, then its bytes) is intact. */
static int sm_frame_intact(const sm_spill_frame_t *f)
{
    return f->magic == SM_FRAME_MAGIC &&
           f->head_check == sm_sum64(f, offsetof(sm_spill_frame_t, head_check));
}

/* One run of adjacent frames, read at once and checked: the frames
 * e[i..i+k) of the extents, their bytes in buf, whether each is intact. */
typedef struct sm_run {
    uint32_t i, k;
    int unreadable;  /* the read failed: all k frames are lost */
    uint8_t *buf;
    size_t cap;
    uint8_t *good;   /* per frame: 1 intact (or a live chunk's records) */
    size_t good_cap;
} sm_run_t;

/* Runs of 1 MiB: large enough that the read calls cost nothing, small
 * enough that the buffer stays in cache while its frames are checked and
 * replayed (8 MiB runs left every pass missing). */
#define SM_RUN_MAX (1u << 20)

/* *p holds at least need bytes (its contents are not kept).  0, or -1. */
static int sm_run_room(uint8_t **p, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    free(*p);
    *cap = 0;
    if (!(*p = malloc(need)))
        return -1;
    *cap = need;
    return 0;
}

/* Reads and checks the run of frames that starts at extent i. -1: out of
 * memory (the run's frames are then lost too, r->unreadable). */
static int sm_run_load(sm_run_t *r, int fd, uint32_t loc_id, const sm_spill_extent_t *e,
                       uint32_t n, uint32_t i)
{
    uint32_t k = 1;
    size_t len = sizeof(sm_spill_frame_t) + e[i].bytes;
    while (i + k < n && e[i + k].offset == e[i].offset + len &&
           len + sizeof(sm_spill_frame_t) + e[i + k].bytes <= SM_RUN_MAX) {
        len += sizeof(sm_spill_frame_t) + e[i + k].bytes;
        k++;
    }
    r->i = i;
    r->k = k;
    r->unreadable = 1;
    if (sm_run_room(&r->buf, &r->cap, len) != 0 || sm_run_room(&r->good, &r->good_cap, k) != 0)
        return -1;
    if (sm_pread_all(fd, r->buf, len, e[i].offset) != 0)
        return 0;
    r->unreadable = 0;
    const uint8_t *p = r->buf;
    for (uint32_t j = 0; j < k; j++) {
        const sm_spill_frame_t *f = (const sm_spill_frame_t *)p;
        /* (a killed process's chunk: its whole records, checked when found) */
        r->good[j] = e[i + j].live == SM_EXTENT_LIVE ||
                     (e[i + j].live == SM_EXTENT_SEALED && sm_frame_intact(f) &&
                      f->location == loc_id && f->bytes == e[i + j].bytes &&
                      f->data_check == sm_sum64(p + sizeof *f, f->bytes));
        p += sizeof *f + e[i + j].bytes;
    }
    return 0;
}

/* Replays a loaded run's intact frames; counts the others in *lost. */
static int sm_run_replay(sm_replay_t *rp, const sm_run_t *r, const sm_spill_extent_t *e,
                         uint64_t *lost, uint64_t *lost_frames)
{
    int rc = 0;
    const uint8_t *p = r->buf;
    for (uint32_t j = 0; j < r->k && rc == 0; j++) {
        const sm_spill_extent_t *x = &e[r->i + j];
        if (r->unreadable || !r->good[j]) {
            *lost += x->records;
            ++*lost_frames;
        } else {
            rc = sm_replay_bytes(rp, p + sizeof(sm_spill_frame_t), p + sizeof(sm_spill_frame_t) +
                                                                       x->bytes);
        }
        if (!r->unreadable)
            p += sizeof(sm_spill_frame_t) + x->bytes;
    }
    return rc;
}

/* Reading ahead: a thread of sysmeasure's own reads and checks the next
 * runs while the caller replays (encodes) the current one, so that the end
 * of the run encodes at the speed of the encoder alone where a second CPU
 * is free (the reads and checksums were a quarter of a spilled trace's
 * end).  A ring of SM_AHEAD runs; the caller and the reader wait on a
 * condition variable, never spin. */
#define SM_AHEAD 3
typedef struct sm_ahead {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int fd;
    uint32_t loc_id, n;
    const sm_spill_extent_t *e;
    sm_run_t run[SM_AHEAD];
    uint32_t loaded, replayed; /* runs, counted from the first */
    uint32_t next_i;           /* the extent the reader loads next */
    int stop, failed;
} sm_ahead_t;

static void *sm_ahead_main(void *arg)
{
    sm_ahead_t *a = arg;
    sm_cpus_bind_writer(); /* where the writer thread may run, if anywhere */
    pthread_mutex_lock(&a->lock);
    while (!a->stop && a->next_i < a->n) {
        if (a->loaded - a->replayed == SM_AHEAD) {
            pthread_cond_wait(&a->cond, &a->lock);
            continue;
        }
        sm_run_t *r = &a->run[a->loaded % SM_AHEAD];
        uint32_t i = a->next_i;
        pthread_mutex_unlock(&a->lock);
        int rc = sm_run_load(r, a->fd, a->loc_id, a->e, a->n, i);
        pthread_mutex_lock(&a->lock);
        pthread_cond_broadcast(&a->cond);
        if (rc != 0) { /* out of memory: the caller ends there, as on one thread */
            a->failed = 1;
            break;
        }
        a->next_i = i + r->k;
        a->loaded++;
    }
    pthread_mutex_unlock(&a->lock);
    return NULL;
}

/* sm_replay_extents with the reader thread ahead.  *started: whether the
 * thread started (if not, nothing was replayed).  Returns 0, fn's value, or
 * -1 (out of memory: the runs before it were replayed). */
static int sm_replay_ahead(sm_replay_t *rp, int fd, uint32_t loc_id, const sm_spill_extent_t *e,
                           uint32_t n, uint64_t *lost, uint64_t *lost_frames, bool *started)
{
    sm_ahead_t *a = calloc(1, sizeof *a);
    pthread_t reader;
    int rc = 0;
    *started = false;
    if (!a)
        return 0;
    pthread_mutex_init(&a->lock, NULL);
    pthread_cond_init(&a->cond, NULL);
    a->fd = fd;
    a->loc_id = loc_id;
    a->e = e;
    a->n = n;
    if (sm_internal_thread_create(&reader, 256u << 10, sm_ahead_main, a) == 0) {
        *started = true;
        uint32_t done = 0;
        pthread_mutex_lock(&a->lock);
        while (rc == 0 && done < n) {
            if (a->loaded == a->replayed) {
                if (a->failed)
                    rc = -1;
                else
                    pthread_cond_wait(&a->cond, &a->lock);
                continue;
            }
            sm_run_t *r = &a->run[a->replayed % SM_AHEAD];
            pthread_mutex_unlock(&a->lock);
            rc = sm_run_replay(rp, r, e, lost, lost_frames);
            done = r->i + r->k;
            pthread_mutex_lock(&a->lock);
            a->replayed++;
            pthread_cond_broadcast(&a->cond);
        }
        a->stop = 1;
        pthread_cond_broadcast(&a->cond);
        pthread_mutex_unlock(&a->lock);
        pthread_join(reader, NULL);
        for (int j = 0; j < SM_AHEAD; j++) {
            free(a->run[j].buf);
            free(a->run[j].good);
        }
    }
    pthread_cond_destroy(&a->cond);
    pthread_mutex_destroy(&a->lock);
    free(a);
    return rc;
}

/* Replays extents e[0..n) of location loc_id from fd, reading runs of
 * adjacent frames at once (ahead, on a thread of its own, when they hold
 * more than two runs).  *lost counts the records of damaged frames.
 * Returns 0, fn's value, or -1 (cannot read). */
static int sm_replay_extents(sm_replay_t *rp, int fd, uint32_t loc_id,
                             const sm_spill_extent_t *e, uint32_t n, uint64_t *lost,
                             uint64_t *lost_frames)
{
    uint64_t total = 0;
    for (uint32_t i = 0; i < n && total <= 2ull * SM_RUN_MAX; i++)
        total += sizeof(sm_spill_frame_t) + e[i].bytes;
    if (total > 2ull * SM_RUN_MAX) {
        bool started;
        int rc = sm_replay_ahead(rp, fd, loc_id, e, n, lost, lost_frames, &started);
        if (started)
            return rc;
    }
    /* One run at a time, on this thread. */
    int rc = 0;
    sm_run_t r = {0};
    for (uint32_t i = 0; i < n && rc == 0; i = r.i + r.k) {
        if (sm_run_load(&r, fd, loc_id, e, n, i) != 0) {
            rc = -1;
            break;
        }
        rc = sm_run_replay(rp, &r, e, lost, lost_frames);
    }
    free(r.buf);
    free(r.good);
    return rc;
}

/* ---------------------------------------------------------------- background encoding */

_Static_assert(sizeof(((sm_buffer_t *)0)->enc_flush) >= sizeof(sm_record_t) + 8,
               "room for a held-back BufferFlush");

void sm_buffers_set_encoder(const sm_buffer_encoder_t *enc)
{
    sm_encoder = enc;
}

void sm_buffers_account(int64_t delta)
{
    if (delta >= 0) {
        uint64_t now = __atomic_add_fetch(&sm_in_use, (uint64_t)delta, __ATOMIC_RELAXED);
        uint64_t peak = __atomic_load_n(&sm_peak, __ATOMIC_RELAXED);
        while (now > peak && !__atomic_compare_exchange_n(&sm_peak, &peak, now, 1,
                                                          __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            ;
    } else {
        __atomic_sub_fetch(&sm_in_use, (uint64_t)-delta, __ATOMIC_RELAXED);
    }
}

/* A chunk was filled: the writer (started now if need be) looks for work. */
static void sm_enc_wake(void)
{
    pthread_mutex_lock(&sm_w_lock);
    if (!sm_enc_wanted && sm_writer_usable_locked()) {
        sm_enc_wanted = 1;
        pthread_cond_signal(&sm_w_work);
    }
    pthread_mutex_unlock(&sm_w_lock);
}

/* Replays used bytes of chunk c into the encoder (sm_enc_lock held, the
 * location encoding).  The chunk counts as taken either way. */
static void sm_enc_bytes(sm_location_t *loc, const uint8_t *data, uint32_t used, uint32_t seq)
{
    sm_buffer_t *b = &loc->buffer;
    sm_replay_t rp = {.fn = sm_encoder->record, .arg = b->enc};
    memcpy(rp.flush, b->enc_flush, sizeof rp.flush);
    rp.have_flush = (int)b->enc_have_flush;
    int rc = sm_replay_bytes(&rp, data, data + used);
    memcpy(b->enc_flush, rp.flush, sizeof rp.flush);
    b->enc_have_flush = (uint32_t)rp.have_flush;
    b->enc_chunks = seq + 1;
    if (rc != 0)
        b->enc_status = SM_ENC_OFF;
}

static void sm_enc_chunk(sm_location_t *loc, sm_chunk_t *c, uint32_t used)
{
    sm_enc_bytes(loc, c->data, used, c->slot_seq);
}

static sm_chunk_t *sm_enc_next_locked(sm_location_t *loc, uint32_t *used);

/* A frozen location's next chunk, spilled unencoded, read back and encoded
 * (sm_enc_lock held; *x copied under the writer's lock).  It is loaded and
 * checked as at the end of the run (a run of one frame); a frame that fails
 * stops this (the end reads it again and says what was lost).  0, or -1. */
static sm_run_t sm_enc_back_run; /* sm_enc_lock */
static uint64_t sm_enc_back_n;   /* chunks taken back (sm_enc_lock) */

static int sm_enc_from_disk(sm_location_t *loc, const sm_spill_extent_t *x)
{
    sm_run_t *r = &sm_enc_back_run;
    pthread_mutex_lock(&sm_file_lock);
    int fd = sm_spill_fd_checked();
    pthread_mutex_unlock(&sm_file_lock);
    if (fd < 0 || sm_run_load(r, fd, loc->id, x, 1, 0) != 0 || r->unreadable || !r->good[0])
        return -1;
    sm_enc_bytes(loc, r->buf + sizeof(sm_spill_frame_t), x->bytes, x->seq);
    sm_enc_back_n++;
    return 0;
}

void sm_buffers_staging_stop(void)
{
    __atomic_store_n(&sm_enc_stopped, 1, __ATOMIC_RELEASE);
}

uint64_t sm_buffers_taken_back(void)
{
    pthread_mutex_lock(&sm_enc_lock);
    uint64_t n = sm_enc_back_n;
    pthread_mutex_unlock(&sm_enc_lock);
    return n;
}

/* The writer, idle, on a frozen location (sm_enc_lock and the writer's lock
 * held): its next chunk to encode, in order.  *x and 1 when that chunk is on
 * disk; else the chunk in memory or in flight that follows the encoded ones
 * (the location thaws: it goes on as before), or NULL and 0. */
static int sm_enc_catch_up_locked(sm_location_t *loc, sm_spill_extent_t *x, sm_chunk_t **c,
                                  uint32_t *used)
{
    sm_buffer_t *b = &loc->buffer;
    *c = NULL;
    if (b->enc_status != SM_ENC_ON || b->enc_no_back || sm_crash)
        return 0;
    while (b->enc_spill_i < b->n_spilled && b->spilled[b->enc_spill_i].seq < b->enc_chunks)
        b->enc_spill_i++;
    if (b->enc_spill_i < b->n_spilled && b->spilled[b->enc_spill_i].seq == b->enc_chunks) {
        *x = b->spilled[b->enc_spill_i];
        return 1;
    }
    sm_chunk_t *next = sm_enc_next_locked(loc, used);
    if (next && next->slot_seq == b->enc_chunks) {
        b->enc_frozen = 0;
        *c = next;
    }
    return 0;
}

/* sm_enc_lock held: whether loc is (now) encoding; asks the encoder at its
 * first chunk.  A location whose first chunk is on disk already is not. */
#define SM_ENC_MAX 64
static sm_location_t *sm_enc_opened[SM_ENC_MAX]; /* sm_enc_lock */
static uint32_t sm_enc_n_opened;

static void sm_enc_finish_locked(sm_location_t *loc);

static int sm_enc_start(sm_location_t *loc)
{
    sm_buffer_t *b = &loc->buffer;
    if (b->enc_status == SM_ENC_NONE) {
        b->enc = b->n_spilled || b->enc_chunks || sm_enc_n_opened == SM_ENC_MAX ||
                         __atomic_load_n(&sm_enc_stopped, __ATOMIC_ACQUIRE)
                     ? NULL : sm_encoder->open(loc);
        b->enc_status = b->enc ? SM_ENC_ON : SM_ENC_OFF;
        if (b->enc)
            sm_enc_opened[sm_enc_n_opened++] = loc;
    }
    return b->enc_status == SM_ENC_ON;
}

/* The writer, before it writes chunks c[0..n) to disk: encode those not
 * encoded yet, in order.  A chunk that is not its location's next one (an
 * earlier chunk was skipped) stops that location's encoding. */
static void sm_enc_before_write(sm_chunk_t **c, uint32_t n)
{
    pthread_mutex_lock(&sm_enc_lock);
    for (uint32_t i = 0; i < n; i++) {
        sm_location_t *loc = c[i]->owner;
        sm_buffer_t *b = &loc->buffer;
        /* A thread waits for the disk: encoding first would make it wait
         * longer.  This chunk and the rest of its location are left to the
         * end of the run (the encoded part stays a prefix). */
        pthread_mutex_lock(&sm_w_lock);
        int waiting = sm_room_waiters != 0;
        pthread_mutex_unlock(&sm_w_lock);
        /* The same for a thread that ended while memory is over the budget
         * (new threads' first chunks are granted beyond it): encoding it
         * first would keep its chunks, and make new threads take fresh
         * memory, until the writer caught up. */
        waiting |= __atomic_load_n(&b->enc_ended, __ATOMIC_ACQUIRE) &&
                   __atomic_load_n(&sm_in_use, __ATOMIC_RELAXED) > sm_budget;
        /* And once the copy on disk reached its bound (trace_space.h). */
        waiting |= __atomic_load_n(&sm_enc_stopped, __ATOMIC_ACQUIRE);
        if (waiting && !b->enc_frozen && b->enc_status == SM_ENC_ON &&
            c[i]->slot_seq >= b->enc_chunks)
            b->enc_frozen = 1;
        if (waiting && b->enc_status == SM_ENC_NONE)
            b->enc_status = SM_ENC_OFF;
        if (b->enc_status == SM_ENC_OFF || b->enc_frozen ||
            (b->enc_status == SM_ENC_ON && c[i]->slot_seq < b->enc_chunks))
            continue;
        if (b->enc_status == SM_ENC_NONE && c[i] != b->flying_first) {
            b->enc_status = SM_ENC_OFF; /* its first chunks are not here */
            continue;
        }
        if (!sm_enc_start(loc))
            continue;
        /* Every chunk before it in flight must be encoded already. */
        pthread_mutex_lock(&sm_w_lock);
        int next = 1;
        for (sm_chunk_t *x = b->flying_first; x && x != c[i]; x = x->next)
            next &= x->slot_seq < b->enc_chunks;
        pthread_mutex_unlock(&sm_w_lock);
        if (!next) {
            b->enc_status = SM_ENC_OFF;
            continue;
        }
        sm_enc_chunk(loc, c[i], c[i]->used);
        sm_enc_finish_locked(loc); /* its last chunk: the slot goes on */
    }
    pthread_mutex_unlock(&sm_enc_lock);
}

/* The next full chunk of loc to encode (writer lock held): in flight, or in
 * memory with a successor (so no longer written to); NULL when none. */
static sm_chunk_t *sm_enc_next_locked(sm_location_t *loc, uint32_t *used)
{
    sm_buffer_t *b = &loc->buffer;
    for (sm_chunk_t *c = b->flying_first; c; c = c->next)
        if (b->enc_status == SM_ENC_NONE || c->slot_seq >= b->enc_chunks) {
            *used = c->used;
            return c;
        }
    for (sm_chunk_t *c = __atomic_load_n(&b->first, __ATOMIC_ACQUIRE); c;) {
        sm_chunk_t *next = __atomic_load_n(&c->next, __ATOMIC_ACQUIRE);
        if (!next && !__atomic_load_n(&b->enc_ended, __ATOMIC_ACQUIRE))
            return NULL; /* the one being filled */
        if (b->enc_status == SM_ENC_NONE || c->slot_seq >= b->enc_chunks) {
            *used = c->used;
            return c;
        }
        c = next;
    }
    return NULL;
}

/* sm_enc_lock held: an ended location whose records are all encoded is
 * closed in the encoder, and its slot goes to the next one. */
static void sm_enc_finish_locked(sm_location_t *loc)
{
    sm_buffer_t *b = &loc->buffer;
    if (!__atomic_load_n(&b->enc_ended, __ATOMIC_ACQUIRE) || b->enc_closed || !b->enc)
        return;
    int complete = b->enc_status == SM_ENC_ON && !b->enc_frozen;
    if (complete) {
        uint32_t used;
        pthread_mutex_lock(&sm_w_lock);
        sm_chunk_t *c = sm_enc_next_locked(loc, &used);
        pthread_mutex_unlock(&sm_w_lock);
        if (c)
            return; /* more to encode first */
        if (b->enc_have_flush) /* held back across chunks: none follows now */
            complete = sm_encoder->record((const sm_record_t *)b->enc_flush, b->enc) == 0;
        b->enc_have_flush = 0;
    }
    /* Complete, or dropped (left to the end of the run, from its first
     * record); either way its slot goes to the next location. */
    if (sm_encoder->close(loc, b->enc, complete) != 0 || !complete)
        b->enc_status = SM_ENC_OFF;
    b->enc_closed = 1;
    for (uint32_t i = 0; i < sm_enc_n_opened; i++)
        if (sm_enc_opened[i] == loc) {
            sm_enc_opened[i] = sm_enc_opened[--sm_enc_n_opened];
            break;
        }
}

/* The writer: the locations whose thread ended, in the order they ended,
 * each encoded to its end and closed.  0, or -1 when told to stop (the
 * disk first, or the end of the run). */
static int sm_enc_ended_all(void)
{
    for (;;) {
        pthread_mutex_lock(&sm_enc_lock);
        pthread_mutex_lock(&sm_w_lock);
        sm_location_t *loc = sm_enc_ended_head;
        int stop = sm_w_stop || sm_q_head != NULL;
        uint32_t used = 0;
        sm_chunk_t *c = NULL;
        if (loc && !stop) {
            sm_buffer_t *b = &loc->buffer;
            if (b->enc_status != SM_ENC_OFF && !b->enc_frozen)
                c = sm_enc_next_locked(loc, &used);
            if (c && b->enc_status == SM_ENC_NONE && b->n_spilled)
                c = NULL, b->enc_status = SM_ENC_OFF; /* its first chunks are on disk */
            if (!c) { /* done with it */
                sm_enc_ended_head = b->enc_next_ended;
                if (!sm_enc_ended_head)
                    sm_enc_ended_tail = NULL;
                b->enc_next_ended = NULL;
            }
        }
        pthread_mutex_unlock(&sm_w_lock);
        if (c && sm_enc_start(loc))
            sm_enc_chunk(loc, c, used);
        else if (loc && !stop && !c)
            sm_enc_finish_locked(loc);
        pthread_mutex_unlock(&sm_enc_lock);
        if (stop)
            return -1;
        if (!loc)
            return 0;
    }
}

/* The writer, with no chunks to write: encode the full chunks of every
 * location, oldest first, until told to stop. */
static void sm_enc_ahead(void)
{
    if (__atomic_load_n(&sm_enc_stopped, __ATOMIC_ACQUIRE)) {
        /* No more: ended threads keep what was encoded of them (their
         * writer stays open; the end encodes the rest, as for a thread
         * still running). */
        pthread_mutex_lock(&sm_w_lock);
        for (sm_location_t *loc = sm_enc_ended_head, *next; loc; loc = next) {
            next = loc->buffer.enc_next_ended;
            loc->buffer.enc_next_ended = NULL;
        }
        sm_enc_ended_head = sm_enc_ended_tail = NULL;
        pthread_mutex_unlock(&sm_w_lock);
        return;
    }
    if (sm_enc_ended_all() != 0) {
        pthread_mutex_lock(&sm_w_lock);
        sm_enc_wanted = 1; /* come back after the disk */
        pthread_mutex_unlock(&sm_w_lock);
        return;
    }
    /* Once the encoder has all the locations it takes, only those are
     * looked at (thousands of threads must not cost a scan per chunk). */
    pthread_mutex_lock(&sm_enc_lock);
    uint32_t max = sm_encoder->max_locations < SM_ENC_MAX ? sm_encoder->max_locations : SM_ENC_MAX;
    int all_opened = sm_enc_n_opened >= max;
    pthread_mutex_unlock(&sm_enc_lock);
    uint32_t n = all_opened ? sm_enc_n_opened : sm_location_count();
    for (uint32_t i = 0; i < n; i++) {
        sm_location_t *loc = all_opened ? sm_enc_opened[i] : sm_location_get(i);
        if (!loc || loc->buffer.enc_status == SM_ENC_OFF || loc->buffer.enc_closed ||
            __atomic_load_n(&loc->buffer.enc_ended, __ATOMIC_ACQUIRE))
            continue; /* ended ones: sm_enc_ended_all */
        for (;;) {
            pthread_mutex_lock(&sm_enc_lock);
            pthread_mutex_lock(&sm_w_lock);
            int stop = sm_w_stop || sm_q_head != NULL; /* disk first */
            uint32_t used = 0;
            sm_chunk_t *c = NULL;
            sm_spill_extent_t back;
            int from_disk = 0;
            if (!stop && loc->buffer.enc_frozen)
                from_disk = sm_enc_catch_up_locked(loc, &back, &c, &used);
            else if (!stop)
                c = sm_enc_next_locked(loc, &used);
            if (c && loc->buffer.enc_status == SM_ENC_NONE && loc->buffer.n_spilled)
                c = NULL, loc->buffer.enc_status = SM_ENC_OFF;
            pthread_mutex_unlock(&sm_w_lock);
            int took = 0;
            if (from_disk) {
                took = sm_enc_from_disk(loc, &back) == 0;
                loc->buffer.enc_no_back = !took;
            } else if (c && sm_enc_start(loc)) {
                sm_enc_chunk(loc, c, used);
                took = 1;
            }
            pthread_mutex_unlock(&sm_enc_lock);
            if (stop) {
                pthread_mutex_lock(&sm_w_lock);
                sm_enc_wanted = 1; /* come back after the disk */
                pthread_mutex_unlock(&sm_w_lock);
                return;
            }
            if (!took)
                break;
        }
    }
}

void *sm_buffer_encoded(sm_location_t *loc)
{
    sm_buffers_quiesce();
    return loc->buffer.enc_status == SM_ENC_ON ? loc->buffer.enc : NULL;
}

int sm_buffer_for_each_rest(sm_location_t *loc, sm_record_fn fn, void *arg)
{
    sm_buffer_t *b = &loc->buffer;
    sm_buffers_quiesce();
    if (b->enc_status != SM_ENC_ON)
        return -2;
    sm_replay_t rp = {.fn = fn, .arg = arg};
    memcpy(rp.flush, b->enc_flush, sizeof rp.flush);
    rp.have_flush = (int)b->enc_have_flush;
    int rc = 0;
    /* Frames the writer spilled were encoded first; those the thread
     * spilled itself (sm_buffer_save at MPI_Finalize) may not be. */
    uint32_t first = 0;
    while (first < b->n_spilled && b->spilled[first].seq < b->enc_chunks)
        first++;
    for (uint32_t i = first; i < b->n_spilled; i++)
        if (b->spilled[i].seq < b->enc_chunks)
            return -2; /* not a prefix */
    if (first < b->n_spilled) {
        uint64_t lost = 0, lost_frames = 0;
        pthread_mutex_lock(&sm_file_lock);
        int fd = sm_spill_fd_checked();
        pthread_mutex_unlock(&sm_file_lock);
        rc = fd < 0 ? -1
                    : sm_replay_extents(&rp, fd, loc->id, b->spilled + first, b->n_spilled - first,
                                        &lost, &lost_frames);
        if (rc != 0 || lost_frames)
            return rc > 0 ? rc : -1; /* the end-of-run path says what was lost */
    }
    for (sm_chunk_t *c = b->flying_first; c && rc == 0; c = c->next)
        if (c->slot_seq >= b->enc_chunks)
            rc = sm_replay_bytes(&rp, c->data, c->data + c->used);
    for (sm_chunk_t *c = b->first; c && rc == 0; c = c->next)
        if (c->slot_seq >= b->enc_chunks)
            rc = sm_replay_bytes(&rp, c->data, c->data + sm_chunk_used(loc, c));
    return sm_replay_end(&rp, rc);
}

int sm_buffer_for_each(sm_location_t *loc, sm_record_fn fn, void *arg)
{
    sm_buffer_t *b = &loc->buffer;
    sm_replay_t rp = {.fn = fn, .arg = arg};
    int rc = 0;
    sm_buffers_quiesce();
    if (b->n_spilled) {
        uint64_t lost = 0, lost_frames = 0;
        pthread_mutex_lock(&sm_file_lock);
        int fd = sm_spill_fd_checked();
        pthread_mutex_unlock(&sm_file_lock);
        if (fd < 0) {
            for (uint32_t i = 0; i < b->n_spilled; i++)
                lost += b->spilled[i].records;
            lost_frames = b->n_spilled;
        } else {
            rc = sm_replay_extents(&rp, fd, loc->id, b->spilled, b->n_spilled, &lost,
                                   &lost_frames);
        }
        if (lost_frames) {
            sm_error("spill file %s: %llu chunk%s of location %u damaged or unreadable; "
                     "%llu events lost", sm_spill_file ? sm_spill_file : "(gone)",
                     (unsigned long long)lost_frames, lost_frames == 1 ? "" : "s", loc->id,
                     (unsigned long long)lost);
            if (rc == 0)
                rc = -1;
        }
        if (rc > 0)
            return rc;
    }
    int result = rc;
    rc = rc < 0 ? 0 : rc;
    for (sm_chunk_t *c = b->flying_first; c && rc == 0; c = c->next)
        rc = sm_replay_bytes(&rp, c->data, c->data + c->used);
    for (sm_chunk_t *c = b->first; c && rc == 0; c = c->next)
        rc = sm_replay_bytes(&rp, c->data, c->data + sm_chunk_used(loc, c));
    rc = sm_replay_end(&rp, rc);
    return rc != 0 ? rc : result;
}

/* ---------------------------------------------------------------- files left behind */

/* The frames of one spill file, read once for all its locations (the merge
 * tool asks for them location by location). */
typedef struct sm_spill_index_entry {
    uint32_t location;
    sm_spill_extent_t e;
} sm_spill_index_entry_t;

static struct {
    char *path;
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
    sm_spill_index_entry_t *entries;
    uint64_t n;
    sm_spill_report_t report;
    int status;        /* as sm_spill_file_check */
    int tail_bad;      /* the end of the file is cut or overwritten */
    uint64_t tail_lost; /* records of a frame cut short there */
} sm_index;
static pthread_mutex_t sm_index_lock = PTHREAD_MUTEX_INITIALIZER;

static int sm_index_add(uint64_t *cap, uint32_t location, sm_spill_extent_t e)
{
    if (sm_index.n == *cap && SM_GROW(sm_index.entries, *cap, 256) != 0)
        return -1;
    sm_index.entries[sm_index.n++] = (sm_spill_index_entry_t){location, e};
    return 0;
}

static int sm_index_order(const void *a, const void *b)
{
    const sm_spill_index_entry_t *x = a, *y = b;
    if (x->location != y->location)
        return x->location < y->location ? -1 : 1;
    return x->e.seq < y->e.seq ? -1 : x->e.seq > y->e.seq;
}

/* The whole records at [p, end) of a chunk a killed process was writing,
 * in order: the end of that prefix, their number in *n.  Such a chunk has
 * no checksum (it is sealed when its thread leaves it), but every record
 * below its fill word is whole (the word is stored after the record), and
 * a thread records its enters and leaves in time order: a record of no
 * known kind, or an enter or leave earlier than the one before, is damage,
 * and the prefix ends before both of the two (either may be the damaged
 * one). */
static const uint8_t *sm_live_prefix(const uint8_t *p, const uint8_t *end, uint32_t *n,
                                     uint64_t *last_time)
{
    uint64_t last = 0, last_all = *last_time;
    const uint8_t *prev = NULL; /* the last enter or leave taken */
    uint32_t prev_n = 0;
    uint64_t prev_all = last_all;
    *n = 0;
    while (p + sizeof(sm_record_t) <= end) {
        const sm_record_t *rec = (const sm_record_t *)p;
        if (rec->kind == 0 || rec->kind >= SM_REC_KIND_COUNT || p + sm_record_size(rec) > end)
            break;
        if (rec->kind == SM_REC_ENTER || rec->kind == SM_REC_LEAVE) {
            if (rec->time < last) {
                if (prev) {
                    p = prev;
                    *n = prev_n;
                    last_all = prev_all;
                }
                break;
            }
            last = rec->time;
            prev = p;
            prev_n = *n;
            prev_all = last_all;
        }
        if (rec->time > last_all && rec->kind != SM_REC_CALLING_CONTEXT_SAMPLE)
            last_all = rec->time;
        p += sm_record_size(rec);
        ++*n;
    }
    *last_time = last_all;
    return p;
}

/* The slots of a crash-safe spill file: sealed ones are frames like any
 * (their data and the slot's own fields checked); a slot whose frame is not
 * sealed was being written when the process died: its whole records up to
 * its fill word, in order, are taken.  A sealed slot that fails a check is
 * kept in the index as damaged (its events are counted lost where its
 * location is read); a slot whose header is damaged beyond telling its
 * owner is counted in the report. */
static int sm_index_build_slots(int fd, const char *path, uint64_t size, uint64_t first_ok)
{
    sm_spill_report_t *r = &sm_index.report;
    sm_slots_hdr_t sh;
    r->crash_safe = 1;
    if (sm_pread_all(fd, &sh, sizeof sh, sizeof(sm_spill_fhdr_t)) != 0 ||
        sh.check != sm_sum64(&sh, offsetof(sm_slots_hdr_t, check)) ||
        sh.slot_bytes < sizeof(sm_chunk_t) + 64 || sh.slot_bytes > (1ull << 31) ||
        sh.first_slot < first_ok) {
        sm_error("%s: the crash-safe header is damaged: its events cannot be found", path);
        r->header_ok = 0;
        r->unreadable_bytes = size;
        sm_index.tail_bad = 1;
        return 0;
    }
    uint8_t *buf = malloc(sh.slot_bytes);
    if (!buf)
        return -1;
    uint64_t cap = 0;
    uint64_t cap_bytes = sh.slot_bytes - sizeof(sm_chunk_t);
    for (uint64_t off = sh.first_slot; off <= size && size - off >= sizeof(sm_chunk_t);
         off += sh.slot_bytes) {
        uint64_t len = size - off < sh.slot_bytes ? size - off : sh.slot_bytes;
        if (sm_pread_all(fd, buf, len, off) != 0)
            break;
        const sm_chunk_t *c = (const sm_chunk_t *)buf;
        if (c->slot_magic == 0)
            continue; /* never used */
        const sm_spill_frame_t *f = &c->frame;
        uint64_t at = off + offsetof(sm_chunk_t, frame);
        int sealed = sm_frame_intact(f);
        int slot_ok = c->slot_magic == SM_SLOT_MAGIC &&
                      (c->slot_pad == sm_slot_check(c, 0) ||
                       (sealed && c->slot_pad == sm_slot_check(c, f->head_check)));
        if (sealed) {
            /* Its location is the frame's (checked); its place the slot's. */
            int ok = slot_ok && f->location == c->slot_location && f->bytes <= cap_bytes &&
                     sizeof(sm_chunk_t) + f->bytes <= len &&
                     f->data_check == sm_sum64(c->data, f->bytes);
            if (ok) {
                r->frames++;
                r->records += f->records;
            } else {
                r->damaged_frames++;
                r->lost_records += f->records;
            }
            /* A damaged one stays in the index (without its bytes), so that
             * its location's reader counts its events as lost; its place is
             * its slot's, or after the location's others when that is
             * damaged too. */
            sm_spill_extent_t e = {at, ok ? f->bytes : 0, f->records,
                                   ok ? SM_EXTENT_SEALED : SM_EXTENT_DAMAGED,
                                   slot_ok ? c->slot_seq : UINT32_MAX, 0};
            if (sm_index_add(&cap, f->location, e) != 0)
                break;
            continue;
        }
        if (!slot_ok) {
            /* Neither sealed nor a slot being written (its check fails):
             * its owner is unknown.  (A frame written in part by a kill
             * while it was sealed leaves the slot's check as it was.) */
            r->damaged_frames++;
            r->damaged_unowned++;
            continue;
        }
        /* Being written at the end: its whole records, in order. */
        uint64_t fill = (uint64_t)(uintptr_t)c->live_end - c->slot_base;
        if ((uint64_t)(uintptr_t)c->live_end < c->slot_base || fill > cap_bytes)
            fill = 0;
        if (sizeof(sm_chunk_t) + fill > len)
            fill = len - sizeof(sm_chunk_t);
        uint32_t n = 0;
        const uint8_t *p = sm_live_prefix(c->data, c->data + fill, &n, &r->last_time);
        uint32_t cut = (uint32_t)(c->data + fill - p);
        r->live_cut_bytes += cut;
        if (!n && !cut)
            continue;
        r->frames++;
        r->records += n;
        r->live_chunks++;
        r->live_records += n;
        sm_spill_extent_t e = {at, (uint32_t)(p - c->data), n, SM_EXTENT_LIVE, c->slot_seq, cut};
        if (sm_index_add(&cap, c->slot_location, e) != 0)
            break;
    }
    free(buf);
    if (sm_index.n > 1)
        qsort(sm_index.entries, sm_index.n, sizeof *sm_index.entries, sm_index_order);
    return 0;
}

void sm_spill_image_fix_checks(uint8_t *data, size_t len, int slots)
{
    sm_spill_fhdr_t h;
    if (len < sizeof h)
        return;
    memcpy(&h, data, sizeof h);
    if (slots)
        h.version = SM_SPILL_VERSION_SLOTS;
    h.size = sizeof h;
    h.check = sm_sum64(&h, offsetof(sm_spill_fhdr_t, check));
    memcpy(data, &h, sizeof h);
    if (h.version != SM_SPILL_VERSION_SLOTS) {
        for (uint64_t off = sizeof h; off + sizeof(sm_spill_frame_t) <= len;) {
            sm_spill_frame_t f;
            memcpy(&f, data + off, sizeof f);
            if (off + sizeof f + f.bytes <= len)
                f.data_check = sm_sum64(data + off + sizeof f, f.bytes);
            f.head_check = sm_sum64(&f, offsetof(sm_spill_frame_t, head_check));
            memcpy(data + off, &f, sizeof f);
            off += sizeof f + f.bytes;
        }
        return;
    }
    sm_slots_hdr_t sh;
    if (len < sizeof h + sizeof sh)
        return;
    memcpy(&sh, data + sizeof h, sizeof sh);
    sh.check = sm_sum64(&sh, offsetof(sm_slots_hdr_t, check));
    memcpy(data + sizeof h, &sh, sizeof sh);
    if (sh.slot_bytes < sizeof(sm_chunk_t) + 64 || sh.slot_bytes > (1ull << 31) ||
        sh.first_slot < sizeof h + sizeof sh)
        return;
    for (uint64_t off = sh.first_slot; off <= len && len - off >= sizeof(sm_chunk_t);
         off += sh.slot_bytes) {
        sm_chunk_t c;
        memcpy(&c, data + off, sizeof c);
        sm_spill_frame_t *f = &c.frame;
        uint64_t head = 0;
        if (f->magic == SM_FRAME_MAGIC) {
            if (off + sizeof c + f->bytes <= len)
                f->data_check = sm_sum64(data + off + sizeof c, f->bytes);
            f->head_check = sm_sum64(f, offsetof(sm_spill_frame_t, head_check));
            head = f->head_check;
        }
        c.slot_pad = sm_slot_check(&c, head);
        memcpy(data + off, &c, sizeof c);
    }
}

/* What the header h says into r (header_ok, identity). */
static void sm_spill_header_read(sm_spill_fhdr_t *h, sm_spill_report_t *r)
{
    r->header_ok = h->size == sizeof *h && h->check == sm_sum64(h, offsetof(sm_spill_fhdr_t, check));
    r->rank = SM_SPILL_NO_RANK;
    if (!r->header_ok)
        return;
    memcpy(r->job, h->job, sizeof r->job);
    r->job[sizeof r->job - 1] = '\0';
    memcpy(r->host, h->host, sizeof r->host);
    r->host[sizeof r->host - 1] = '\0';
    r->pid = h->pid;
    r->rank = h->rank;
    r->n_ranks = h->n_ranks;
    r->crash_safe = h->version == SM_SPILL_VERSION_SLOTS;
}

int sm_spill_file_identity(const char *path, sm_spill_report_t *id)
{
    memset(id, 0, sizeof *id);
    id->rank = SM_SPILL_NO_RANK;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    struct stat st;
    sm_spill_fhdr_t h;
    int ok = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
             sm_pread_all(fd, &h, sizeof h, 0) == 0 && memcmp(h.magic, SM_SPILL_MAGIC, 8) == 0 &&
             (h.version == SM_SPILL_VERSION || h.version == SM_SPILL_VERSION_SLOTS);
    if (fd >= 0)
        close(fd);
    if (!ok)
        return -1;
    sm_spill_header_read(&h, id);
    return id->header_ok ? 0 : -1;
}

/* Reads the frame headers of fd into sm_index. */
static int sm_index_build(int fd, const char *path, const struct stat *st, int say)
{
    sm_spill_report_t *r = &sm_index.report;
    memset(r, 0, sizeof *r);
    free(sm_index.entries);
    sm_index.entries = NULL;
    sm_index.n = 0;
    sm_spill_fhdr_t h;
    if (sm_pread_all(fd, &h, sizeof h, 0) != 0 || memcmp(h.magic, SM_SPILL_MAGIC, 8) != 0) {
        if (say)
            sm_error("%s is not a sysmeasure spill file (or it is truncated)", path);
        return -1;
    }
    if (h.version != SM_SPILL_VERSION && h.version != SM_SPILL_VERSION_SLOTS) {
        if (say)
            sm_error("%s is a spill file of another sysmeasure version, or its header is damaged "
                 "(format %u; this one reads %u and %u): its events cannot be read", path,
                 (unsigned)h.version, (unsigned)SM_SPILL_VERSION,
                 (unsigned)SM_SPILL_VERSION_SLOTS);
        return -1;
    }
    uint64_t cap = 0;
    uint64_t off = sizeof h;
    /* A damaged header leaves the file's owner unknown; its frames, each
     * checked, are still read. */
    sm_spill_header_read(&h, r);
    uint64_t size = (uint64_t)st->st_size;
    sm_index.tail_bad = 0;
    sm_index.tail_lost = 0;
    if (h.version == SM_SPILL_VERSION_SLOTS)
        return sm_index_build_slots(fd, path, size, sizeof h + sizeof(sm_slots_hdr_t));
    while (off < size) {
        sm_spill_frame_t f;
        if (off + sizeof f > size || sm_pread_all(fd, &f, sizeof f, off) != 0 ||
            !sm_frame_intact(&f)) {
            r->unreadable_bytes = size - off;
            sm_index.tail_bad = 1;
            break;
        }
        if (off + sizeof f + f.bytes > size) { /* cut short */
            r->damaged_frames++;
            r->lost_records += f.records;
            sm_index.tail_bad = 1;
            sm_index.tail_lost = f.records;
            r->unreadable_bytes = size - off;
            break;
        }
        if (sm_index.n == cap && SM_GROW(sm_index.entries, cap, 256) != 0)
            return -1;
        sm_index.entries[sm_index.n++] =
            (sm_spill_index_entry_t){f.location, {off, f.bytes, f.records, SM_EXTENT_SEALED, 0, 0}};
        off += sizeof f + f.bytes;
    }
    return 0;
}

/* sm_index for path (index lock held): built unless it is that file, unchanged. */
/* The last file that could not be read: said once, however often its
 * locations are asked for (index lock held). */
static char *sm_index_failed;

static int sm_index_get(const char *path, int *fd_out)
{
    int say = !sm_index_failed || strcmp(sm_index_failed, path) != 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    struct stat st;
    int plain = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    if (!plain) {
        if (say)
            sm_error("cannot open spill file %s: %s", path,
                     fd < 0 ? strerror(errno) : "not a regular file");
        if (fd >= 0)
            close(fd);
        free(sm_index_failed);
        sm_index_failed = strdup(path);
        return -1;
    }
    if (!(sm_index.path && !strcmp(sm_index.path, path) && sm_index.dev == st.st_dev &&
          sm_index.ino == st.st_ino && sm_index.size == st.st_size &&
          sm_index.mtime.tv_sec == st.st_mtim.tv_sec &&
          sm_index.mtime.tv_nsec == st.st_mtim.tv_nsec)) {
        free(sm_index.path);
        sm_index.path = NULL;
        if (sm_index_build(fd, path, &st, say) != 0) {
            close(fd);
            free(sm_index_failed);
            sm_index_failed = strdup(path);
            return -1;
        }
        sm_index.path = strdup(path);
        sm_index.dev = st.st_dev;
        sm_index.ino = st.st_ino;
        sm_index.size = st.st_size;
        sm_index.mtime = st.st_mtim;
        sm_index.status = -2; /* data not checked yet */
    }
    *fd_out = fd;
    return 0;
}

int sm_spill_file_check(const char *path, sm_spill_report_t *report)
{
    pthread_mutex_lock(&sm_index_lock);
    int fd, rc = -1;
    if (sm_index_get(path, &fd) == 0) {
        if (sm_index.status == -2 && sm_index.report.crash_safe) { /* checked when read */
            const sm_spill_report_t *r = &sm_index.report;
            sm_index.status = r->header_ok && !r->damaged_frames && !r->unreadable_bytes ? 0 : 1;
        }
        if (sm_index.status == -2) {
            /* Check every frame's data once. */
            sm_spill_report_t *r = &sm_index.report;
            uint8_t *buf = NULL;
            size_t cap = 0;
            for (uint64_t i = 0; i < sm_index.n; i++) {
                const sm_spill_extent_t *e = &sm_index.entries[i].e;
                size_t len = sizeof(sm_spill_frame_t) + e->bytes;
                if (len > cap) {
                    free(buf);
                    buf = malloc(cap = len);
                }
                const sm_spill_frame_t *f = (const sm_spill_frame_t *)buf;
                if (buf && sm_pread_all(fd, buf, len, e->offset) == 0 &&
                    f->data_check == sm_sum64(buf + sizeof *f, e->bytes)) {
                    r->frames++;
                    r->records += e->records;
                } else {
                    r->damaged_frames++;
                    r->lost_records += e->records;
                }
            }
            free(buf);
            sm_index.status = r->header_ok && !r->damaged_frames && !r->unreadable_bytes ? 0 : 1;
        }
        if (report)
            *report = sm_index.report;
        rc = sm_index.status;
        close(fd);
    }
    pthread_mutex_unlock(&sm_index_lock);
    return rc;
}

/* What was said about the files read (index lock held): each loss once,
 * however often a location is read (the merge reads a recovered rank's
 * twice). */
typedef struct sm_said {
    dev_t dev;
    ino_t ino;
    uint32_t location; /* UINT32_MAX: the file as a whole */
} sm_said_t;
static sm_said_t *sm_said;
static uint64_t sm_n_said, sm_cap_said;

/* Whether this is the first time (and then it is noted). */
static int sm_say_once(uint32_t location)
{
    for (uint64_t i = 0; i < sm_n_said; i++)
        if (sm_said[i].dev == sm_index.dev && sm_said[i].ino == sm_index.ino &&
            sm_said[i].location == location)
            return 0;
    if (sm_n_said == sm_cap_said && SM_GROW(sm_said, sm_cap_said, 16) != 0)
        return 1;
    sm_said[sm_n_said++] = (sm_said_t){sm_index.dev, sm_index.ino, location};
    return 1;
}

/* " (rank R, pid P)": the rank the file's header names, or owner. */
static void sm_spill_whose(const sm_spill_report_t *r, const char *owner, char *buf, size_t len)
{
    if (r->header_ok && r->rank != SM_SPILL_NO_RANK)
        snprintf(buf, len, " (rank %u, pid %lld)", (unsigned)r->rank, (long long)r->pid);
    else if (r->header_ok)
        snprintf(buf, len, " (%s%spid %lld)", owner ? owner : "", owner ? ", " : "",
                 (long long)r->pid);
    else if (owner)
        snprintf(buf, len, " (%s)", owner);
    else
        buf[0] = '\0';
}

int sm_spill_file_for_each(const char *path, uint32_t location, sm_record_fn fn, void *arg)
{
    return sm_spill_file_for_each_of(path, location, NULL, fn, arg);
}

int sm_spill_file_for_each_of(const char *path, uint32_t location, const char *owner,
                              sm_record_fn fn, void *arg)
{
    sm_replay_t rp = {.fn = fn, .arg = arg};
    pthread_mutex_lock(&sm_index_lock);
    int fd;
    if (sm_index_get(path, &fd) != 0) {
        pthread_mutex_unlock(&sm_index_lock);
        return -1;
    }
    uint64_t n = 0;
    for (uint64_t i = 0; i < sm_index.n; i++)
        n += sm_index.entries[i].location == location;
    sm_spill_extent_t *e = malloc((n ? n : 1) * sizeof *e);
    uint32_t *e_cut = calloc(n ? n : 1, sizeof *e_cut);
    n = 0;
    for (uint64_t i = 0; e && e_cut && i < sm_index.n; i++)
        if (sm_index.entries[i].location == location) {
            e_cut[n] = sm_index.entries[i].e.cut;
            e[n++] = sm_index.entries[i].e;
        }
    int tail_damaged = sm_index.tail_bad;
    uint64_t tail_lost = sm_index.tail_lost, tail_bytes = sm_index.report.unreadable_bytes;
    const sm_spill_report_t rep = sm_index.report;
    int say_file = sm_say_once(UINT32_MAX);
    pthread_mutex_unlock(&sm_index_lock);
    if (!e || !e_cut) {
        free(e);
        free(e_cut);
        close(fd);
        return -1;
    }
    uint64_t lost = 0, lost_frames = 0;
    int rc = sm_replay_extents(&rp, fd, location, e, (uint32_t)n, &lost, &lost_frames);
    close(fd);
    free(e);
    rc = sm_replay_end(&rp, rc);
    char whose[160];
    sm_spill_whose(&rep, owner, whose, sizeof whose);
    /* The chunk a killed process was writing, damaged after its first
     * whole records (see sm_live_prefix). */
    uint64_t cut = 0, cut_events = 0;
    for (uint64_t i = 0; i < n; i++)
        if (e_cut[i]) {
            cut += e_cut[i];
            cut_events += (e_cut[i] + sizeof(sm_record_t) - 1) / sizeof(sm_record_t);
        }
    free(e_cut);
    if (cut) {
        pthread_mutex_lock(&sm_index_lock);
        int say = sm_index.path && !strcmp(sm_index.path, path) ? sm_say_once(location) : 1;
        pthread_mutex_unlock(&sm_index_lock);
        if (say)
            sm_error("crash-safe file %s%s: the chunk of location %u being written at the "
                     "kill is damaged after its whole events: %llu bytes of records (up to "
                     "%llu events) lost", path, whose, location, (unsigned long long)cut,
                     (unsigned long long)cut_events);
        if (rc == 0)
            rc = -1;
    }
    if (lost_frames) {
        pthread_mutex_lock(&sm_index_lock);
        int say = sm_index.path && !strcmp(sm_index.path, path) ? sm_say_once(location) : 1;
        pthread_mutex_unlock(&sm_index_lock);
        if (say && rep.crash_safe)
            sm_error("crash-safe file %s%s: %llu sealed chunk%s of location %u damaged (%s); "
                     "%llu events lost", path, whose, (unsigned long long)lost_frames,
                     lost_frames == 1 ? "" : "s", location,
                     lost_frames == 1 ? "it fails its checksum" : "they fail their checksums",
                     (unsigned long long)lost);
        else if (say)
            sm_error("spill file %s%s: %llu chunk%s of location %u damaged; %llu events lost",
                     path, whose, (unsigned long long)lost_frames, lost_frames == 1 ? "" : "s",
                     location, (unsigned long long)lost);
        if (rc == 0)
            rc = -1;
    }
    /* Chunks whose own header is damaged: their location, and so which
     * thread lost what, cannot be told.  Said once per file. */
    if (rep.damaged_unowned) {
        if (say_file)
            sm_error("crash-safe file %s%s: %llu chunk%s damaged beyond telling whose %s "
                     "(%s header fails its check); %s events lost", path, whose,
                     (unsigned long long)rep.damaged_unowned, rep.damaged_unowned == 1 ? "" : "s",
                     rep.damaged_unowned == 1 ? "it is" : "they are",
                     rep.damaged_unowned == 1 ? "its" : "their",
                     rep.damaged_unowned == 1 ? "its" : "their");
        if (rc == 0)
            rc = -1;
    }
    /* The end of the file is cut or overwritten: which location lost what
     * is unknown beyond the frame headers still readable; said once per
     * file. */
    if (tail_damaged) {
        if (say_file)
            sm_error("spill file %s%s is truncated or damaged at its end: %llu bytes unreadable "
                     "(%llu events of a cut chunk, and whatever followed it, lost)", path, whose,
                     (unsigned long long)tail_bytes, (unsigned long long)tail_lost);
        if (rc == 0)
            rc = -1;
    }
    return rc;
}

int sm_buffer_save(sm_location_t *loc)
{
    sm_buffers_quiesce();
    sm_scratch_settle(loc); /* (counted before its position is moved) */
    if (!loc->buffer.first && !loc->buffer.flying_first)
        return 0;
    if (sm_spill_in_place(loc, 1) != 0) {
        sm_error("saving the events of location %u to %s failed", loc->id,
                 sm_spill_file ? sm_spill_file : "the spill folder");
        return -1;
    }
    return 0;
}

static int sm_count_one(const sm_record_t *r, void *arg)
{
    (void)r;
    ++*(uint64_t *)arg;
    return 0;
}

uint64_t sm_buffer_record_count(sm_location_t *loc)
{
    uint64_t n = 0;
    sm_buffer_for_each(loc, sm_count_one, &n);
    return n;
}
